"""`jsonl_store.testing` without hypothesis: the simulator works, the strategies say what they need.

Each scenario runs in a child interpreter whose `sys.meta_path` refuses to find
hypothesis, as if it were not installed; a fresh virtual environment would show the same
but costs a pip install per run.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import jsonl_store.testing

# Put in front of every other finder, so `import hypothesis` fails the way it does when the
# package is absent: ModuleNotFoundError naming hypothesis.
_NO_HYPOTHESIS = """
import sys
from importlib.abc import MetaPathFinder

class NoHypothesis(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "hypothesis" or name.startswith("hypothesis."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoHypothesis())
for loaded in [name for name in sys.modules if name.partition(".")[0] == "hypothesis"]:
    del sys.modules[loaded]
"""


def _run_without_hypothesis(code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a child interpreter where hypothesis cannot be imported."""
    script = _NO_HYPOTHESIS + textwrap.dedent(code)
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )


def test_simulator_and_crash_states_work_without_hypothesis() -> None:
    """Importing jsonl_store.testing, a store on SimulatedFileSystem and crash_states need no hypothesis."""
    result = _run_without_hypothesis(
        """
        from jsonl_store import SessionStore, UserMessage
        import jsonl_store.testing
        from jsonl_store.testing import *  # every name in __all__ is hypothesis-free
        from jsonl_store.testing import SimulatedFileSystem, crash_states

        fs = SimulatedFileSystem()
        SessionStore("/store", fs=fs).append("s", UserMessage(content="hello"))
        states = list(crash_states(fs))
        assert states, "no crash states"
        for state in states:
            SessionStore("/store", fs=state.filesystem()).load("s")
        assert "hypothesis" not in sys.modules
        print(len(states))
        """
    )
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) > 0


def test_oracle_and_damage_helpers_work_without_hypothesis() -> None:
    """jsonl_store.testing.oracle checks a workload, and the damage helpers run, with no hypothesis."""
    result = _run_without_hypothesis(
        """
        from jsonl_store import UserMessage
        from jsonl_store.testing.damage import *
        from jsonl_store.testing.oracle import *  # every name in __all__ is hypothesis-free
        from jsonl_store.testing.damage import flip

        counts = check_workload([Append("s", UserMessage(content="hello"))])
        assert counts.states > 0 and flip(b"a", 0) == b"`"
        assert "hypothesis" not in sys.modules
        print("ok")
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_the_top_level_exports_the_simulator_not_the_oracle() -> None:
    """jsonl_store.testing's names are what a user's crash test needs; the store's checker is in oracle."""
    from jsonl_store.testing import oracle

    assert not set(jsonl_store.testing.__all__) & set(oracle.__all__)
    assert {"SimulatedFileSystem", "crash_states", "damage"} <= set(jsonl_store.testing.__all__)
    assert {"check_workload", "run_workload", "RecoveryFailure"} <= set(oracle.__all__)


def test_a_name_that_moved_to_the_oracle_still_resolves_with_a_deprecation_warning() -> None:
    """0.1.0 code importing check_workload from jsonl_store.testing gets the oracle's, and a warning saying where it went."""
    from jsonl_store.testing import oracle

    with pytest.warns(DeprecationWarning, match=r"jsonl_store\.testing\.oracle\.check_workload"):
        moved = jsonl_store.testing.check_workload
    assert moved is oracle.check_workload
    with pytest.warns(DeprecationWarning):
        from jsonl_store.testing import RecoveryFailure  # noqa: F401 -- the old import site
    assert "check_workload" not in dir(jsonl_store.testing)


def test_oracle_example_runs() -> None:
    """The example in jsonl_store.testing.oracle's docstring runs as written."""
    from jsonl_store.testing import oracle

    assert oracle.__doc__ is not None
    code = oracle.__doc__.split("Example::\n", 1)[1]
    exec(textwrap.dedent(code), {})  # running the documented example is the point


def test_strategy_without_hypothesis_raises_import_error_naming_the_test_extra() -> None:
    """Asking jsonl_store.testing for a strategy without hypothesis raises an ImportError that says how to fix it."""
    result = _run_without_hypothesis(
        """
        import jsonl_store.testing

        for attempt in range(2):  # a failed first use must not leave a half-imported module behind
            try:
                jsonl_store.testing.workloads
            except ImportError as exc:
                assert exc.name == "hypothesis", exc.name
                assert "jsonl_store[test]" in str(exc), str(exc)
                assert isinstance(exc.__cause__, ModuleNotFoundError), repr(exc.__cause__)
            else:
                raise AssertionError("workloads imported without hypothesis")
        try:
            from jsonl_store.testing import messages
        except ImportError as exc:
            assert "jsonl_store[test]" in str(exc), str(exc)
        else:
            raise AssertionError("messages imported without hypothesis")
        print("ok")
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_strategies_are_served_lazily_by_name_with_hypothesis() -> None:
    """With hypothesis installed the strategy names still come from jsonl_store.testing, the same objects."""
    from jsonl_store.testing import strategies

    for name in ("faults", "json_values", "messages", "session_ids", "texts", "tool_batches", "usages"):
        assert getattr(jsonl_store.testing, name) is getattr(strategies, name)
        assert name in dir(jsonl_store.testing)
    from jsonl_store.testing import workloads

    assert workloads is strategies.workloads


def test_unknown_name_is_an_attribute_error() -> None:
    """A name jsonl_store.testing does not have is an AttributeError, so hasattr and getattr defaults work."""
    assert not hasattr(jsonl_store.testing, "no_such_strategy")
