"""Crash-test your own code against every state a crash can leave on disk.

`SimulatedFileSystem` stands in for the operating system and records each change
(`format_trace` prints the record); `crash_states` turns that record into the states a
process crash or a power loss can leave behind (each one a fresh file system, or a real
directory via ``materialize``). `damage` has the byte helpers (tear, flip, zero-fill,
garbage, CRLF line ends, a byte-order mark) for damage a crash does not make. None of
that needs ``hypothesis``; the strategies (`workloads`, `messages`, ...) in
`jsonl_store.testing.strategies` do, and are also reachable here by name, imported on
first use.

The store's own oracle (does a fresh store keep *its* promises in every state?
`check_workload`, `verify_recovery`, and the workloads and `run_workload` they drive) is
`jsonl_store.testing.oracle`. Its names are not re-exported here, so that this module
is the short list a test of your own code needs, and an import from ``oracle`` says
that a test checks the store itself (or drives it with generated workloads). Code
written against 0.1.0, which served them here, still finds them here, with a
`DeprecationWarning` naming their new home.

Example::

    from jsonl_store import SessionStore, UserMessage
    from jsonl_store.testing import SimulatedFileSystem, crash_states

    fs = SimulatedFileSystem()
    store = SessionStore("/store", fs=fs)
    store.append("s", UserMessage(content="hello"))
    for state in crash_states(fs):
        resumed = SessionStore("/store", fs=state.filesystem())
        my_resume_code(resumed)  # must cope with every state
"""

import importlib
import warnings
from typing import TYPE_CHECKING, Any, Final

from . import damage
from ._crash import CrashKind, CrashState, crash_points, crash_states
from ._simfs import Fault, SimStat, SimulatedFileSystem, load_directory
from ._trace import TraceEntry, format_trace

if TYPE_CHECKING:
    # The type checker sees the strategies' real signatures; at run time `__getattr__`
    # below imports them only when asked for, so this package needs no hypothesis.
    from .strategies import faults as faults
    from .strategies import json_values as json_values
    from .strategies import messages as messages
    from .strategies import session_ids as session_ids
    from .strategies import texts as texts
    from .strategies import tool_batches as tool_batches
    from .strategies import usages as usages
    from .strategies import workloads as workloads

# Names served by `strategies`, which imports hypothesis (the `test` extra). They stay out
# of `__all__` so that `from jsonl_store.testing import *` works without hypothesis too.
_STRATEGIES: Final = frozenset(
    {"faults", "json_values", "messages", "session_ids", "texts", "tool_batches", "usages", "workloads"}
)

__all__ = [
    "CrashKind",
    "CrashState",
    "Fault",
    "SimStat",
    "SimulatedFileSystem",
    "TraceEntry",
    "crash_points",
    "crash_states",
    "damage",
    "format_trace",
    "load_directory",
]


def __getattr__(name: str) -> Any:
    """Import a strategy from `strategies` the first time it is asked for (PEP 562).

    A name that moved to `oracle` is served from there with a `DeprecationWarning`, on
    every look-up (it is never cached here, so each old import site is reported).
    """
    if name not in _STRATEGIES:
        # Names this package served in 0.1.0 that now live in `oracle` (its `__all__`):
        # still reachable, with a warning, so a 0.1.0 test suite keeps running, and out
        # of `__all__` and `dir()` so that nothing new is written against them.
        # import_module, not `from . import oracle`: that looks `oracle` up as an attribute
        # first, which would come back here.
        oracle = importlib.import_module(f"{__name__}.oracle")
        if name not in oracle.__all__:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        warnings.warn(
            f"jsonl_store.testing.{name} moved to jsonl_store.testing.oracle.{name}",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(oracle, name)
    try:
        from . import strategies
    except ImportError as exc:
        # Only a missing hypothesis gets the friendlier message; any other import error
        # inside `strategies` is a bug and surfaces as it is.
        if exc.name is None or exc.name.partition(".")[0] != "hypothesis":
            raise
        raise ImportError(
            f"jsonl_store.testing.{name} is a hypothesis strategy and needs hypothesis; "
            "install the test extra: pip install 'jsonl_store[test]'",
            name="hypothesis",
        ) from exc
    value = getattr(strategies, name)
    globals()[name] = value  # later look-ups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | _STRATEGIES)
