"""Crash-test your own code against every state a crash can leave on disk.

`SimulatedFileSystem` stands in for the operating system and records each change;
`crash_states` turns that record into the states a process crash or a power loss can
leave behind (each one a fresh file system, or a real directory via ``materialize``);
`run_workload` runs a list of store operations and keeps what was acknowledged;
`check_crash_state`, `verify_recovery` and `check_workload` check that a fresh store
recovers from each state; `damage` has the byte helpers (tear, flip, zero-fill, garbage,
CRLF line ends, a byte-order mark) for damage a crash does not make. None of that needs
``hypothesis``; the strategies (`workloads`, `messages`, ...) in
`jsonl_store.testing.strategies` do, and are also reachable here by name, imported on
first use. Example::

    from jsonl_store import SessionStore, UserMessage
    from jsonl_store.testing import SimulatedFileSystem, crash_states

    fs = SimulatedFileSystem()
    store = SessionStore("/store", fs=fs)
    store.append("s", UserMessage(content="hello"))
    for state in crash_states(fs):
        resumed = SessionStore("/store", fs=state.filesystem())
        my_resume_code(resumed)  # must cope with every state
"""

from typing import TYPE_CHECKING, Any, Final

from . import damage
from ._check import CheckCounts, RecoveryFailure, check_crash_state, check_workload, verify_recovery
from ._crash import CrashKind, CrashState, crash_points, crash_states
from ._simfs import Fault, SimStat, SimulatedFileSystem, load_directory
from ._trace import TraceEntry, format_trace
from ._workload import (
    Ack,
    Append,
    AppendMany,
    Operation,
    RecordUsage,
    Snapshot,
    UpdateSession,
    WorkloadResult,
    run_workload,
)

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
    "Ack",
    "Append",
    "AppendMany",
    "CheckCounts",
    "CrashKind",
    "CrashState",
    "Fault",
    "Operation",
    "RecordUsage",
    "RecoveryFailure",
    "SimStat",
    "SimulatedFileSystem",
    "Snapshot",
    "TraceEntry",
    "UpdateSession",
    "WorkloadResult",
    "check_crash_state",
    "check_workload",
    "crash_points",
    "crash_states",
    "damage",
    "format_trace",
    "load_directory",
    "run_workload",
    "verify_recovery",
]


def __getattr__(name: str) -> Any:
    """Import a strategy from `strategies` the first time it is asked for (PEP 562)."""
    if name not in _STRATEGIES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
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
