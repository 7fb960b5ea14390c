"""Runs openai-agents' own session tests against ``JsonlSession`` (copied to the sdist's root).

``.ci/foreign-tests`` downloads the SDK's sdist at CI time (never vendored here), copies
this file to its root as ``conftest.py`` and runs the session test files it names. pytest
loads a root conftest before the SDK's ``tests/`` package, so the test modules'
``from agents import SQLiteSession`` gets this file's ``SQLiteSession``: our
``JsonlSession`` with SQLiteSession's constructor. Nothing else of the SDK or its tests changes.

Tests that read or damage SQLite itself (its tables, connections, file locks) cannot apply
to a store that has none: ``not_applicable.txt`` beside this file lists each by name with
its reason, and they are reported as skipped with that reason. The same file lists, as
strict xfails, the applicable tests that fail today (open work, named there). Every other
test must pass.

The stand-in class is named ``SQLiteSession``, as the tests call it: the SDK's messages
name the session's class (``SQLiteSession is closed``), and so do ours (`SessionClosed`
says ``<class> is closed``), so a test matching that text checks the same behaviour.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import agents
import agents.memory
import pytest

from jsonl_store.adapters.openai_agents import JsonlSession

HERE = Path(os.environ.get("JSONL_STORE_FOREIGN_DIR", Path(__file__).parent))
NOT_APPLICABLE = HERE / "not_applicable.txt"
#: How many sessions the tests built: a run that built none proved nothing.
_BUILT = [0]


class SQLiteSession(JsonlSession):
    """``JsonlSession`` built from ``SQLiteSession``'s arguments.

    ``:memory:`` is a database of its own per instance, so it gets a fresh store root; a
    file path ``P`` gets the store root ``P.jsonl-store`` (two sessions on one database
    file share one root, as they share one file). The table names name nothing here.
    """

    def __init__(
        self,
        session_id: str,
        db_path: str | os.PathLike[str] = ":memory:",
        sessions_table: str = "agent_sessions",
        messages_table: str = "agent_messages",
        session_settings: Any = None,
    ) -> None:
        _BUILT[0] += 1
        if str(db_path) == ":memory:":
            root = tempfile.mkdtemp(prefix="jsonl-store-sdk-")
        else:
            root = f"{db_path}.jsonl-store"
        super().__init__(session_id, root, session_settings=session_settings)


agents.SQLiteSession = SQLiteSession  # type: ignore[assignment,misc]
agents.memory.SQLiteSession = SQLiteSession  # type: ignore[assignment,misc]


def _listed() -> dict[str, tuple[str, str]]:
    """``node id -> (kind, reason)`` from ``not_applicable.txt`` (``kind id  # reason`` lines)."""
    listed = {}
    for line in NOT_APPLICABLE.read_text(encoding="utf-8").splitlines():
        entry, _, reason = line.partition("#")
        kind, _, node = entry.strip().partition(" ")
        if kind in ("skip", "xfail") and node.strip():
            listed[node.strip()] = (kind, reason.strip())
    return listed


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    listed = _listed()
    seen = set()
    for item in items:
        # An entry names one parametrized case, or all of a test's cases without brackets.
        node = item.nodeid if item.nodeid in listed else item.nodeid.split("[")[0]
        if node not in listed:
            continue
        seen.add(node)
        kind, reason = listed[node]
        if kind == "skip":
            item.add_marker(pytest.mark.skip(reason=f"not applicable: {reason}"))
        else:
            item.add_marker(pytest.mark.xfail(reason=f"open: {reason}", strict=True))
    config.stash[_UNUSED] = sorted(set(listed) - seen)


_UNUSED = pytest.StashKey[list[str]]()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # A run that never built our session proved nothing; a listed test that no longer
    # exists means the list went stale with a new SDK release.
    if _BUILT[0] == 0 and session.testscollected:
        sys.stderr.write("\nfailed: no test built a JsonlSession\n")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    unused = session.config.stash.get(_UNUSED, [])
    if unused and session.testscollected:
        sys.stderr.write(
            "\nnot_applicable.txt names tests that were not collected:\n  " + "\n  ".join(unused) + "\n"
        )
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
