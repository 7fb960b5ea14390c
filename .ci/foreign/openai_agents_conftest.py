"""Runs openai-agents' own session tests against ``JsonlSession`` (copied to the sdist's root).

``.ci/foreign-tests`` downloads the SDK's sdist at CI time (never vendored here), copies
this file to its root as ``conftest.py`` and runs the session test files it names. pytest
loads a root conftest before the SDK's ``tests/`` package, so the test modules'
``from agents import SQLiteSession`` gets ``StoreBackedSession``: our session with
SQLiteSession's constructor. Nothing else of the SDK or its tests changes.

Tests that read or damage SQLite itself (its tables, connections, file locks) cannot apply
to a store that has none: ``not_applicable.txt`` beside this file lists each by name with
its reason, and they are reported as skipped with that reason. Every other test must pass.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import agents
import agents.memory
import pytest

from jsonl_store.adapters.openai_agents import JsonlSession

HERE = Path(os.environ.get("JSONL_STORE_FOREIGN_DIR", Path(__file__).parent))
NOT_APPLICABLE = HERE / "not_applicable.txt"
_built = 0


class StoreBackedSession(JsonlSession):
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
        global _built
        _built += 1
        if str(db_path) == ":memory:":
            root = tempfile.mkdtemp(prefix="jsonl-store-sdk-")
        else:
            root = f"{db_path}.jsonl-store"
        super().__init__(session_id, root, session_settings=session_settings)


agents.SQLiteSession = StoreBackedSession  # type: ignore[misc]
agents.memory.SQLiteSession = StoreBackedSession  # type: ignore[misc]


def _not_applicable() -> dict[str, str]:
    """``node id -> reason`` from ``not_applicable.txt`` (``id  # reason`` lines)."""
    reasons = {}
    for line in NOT_APPLICABLE.read_text(encoding="utf-8").splitlines():
        node, sep, reason = line.partition("#")
        if node.strip() and sep:
            reasons[node.strip()] = reason.strip()
    return reasons


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reasons = _not_applicable()
    seen = set()
    for item in items:
        reason = reasons.get(item.nodeid) or reasons.get(item.nodeid.split("[")[0])
        if reason:
            seen.add(item.nodeid if item.nodeid in reasons else item.nodeid.split("[")[0])
            item.add_marker(pytest.mark.skip(reason=f"not applicable: {reason}"))
    config.stash[_UNUSED] = sorted(set(reasons) - seen)


_UNUSED = pytest.StashKey[list[str]]()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # A run that never built our session proved nothing; a listed test that no longer
    # exists means the list went stale with a new SDK release.
    if _built == 0 and session.testscollected:
        print("\nfailed: no test built a StoreBackedSession")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    unused = session.config.stash.get(_UNUSED, [])
    if unused and session.testscollected:
        print("\nnot_applicable.txt names tests that were not collected:\n  " + "\n  ".join(unused))
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
