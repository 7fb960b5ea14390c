"""Random programs of zett's storage calls give the same answers on zett's SQLite storage and ours.

Each example is a list of calls (create, append, snapshot, update, delete, get, count,
list a page of sessions or of the raw log) on a few session ids; it runs on
``SQLiteSessionStorage`` and on `JsonlSessionStorage`, and every answer (or error type
and text) must be the same, the times and ids each storage makes up left out. zett's own
storage decides what is right: the program is not judged against our reading of it.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

import pytest
from helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st

zett_agent = pytest.importorskip("zett_agent")

from zett_agent.extensions.compaction import CompactedMessage  # noqa: E402
from zett_agent.extensions.persistence import ContextSnapshot, RawMessageRecord, SessionSummary, SessionView  # noqa: E402
from zett_agent.messages import UserMessage  # noqa: E402
from zett_agent.storage import SQLiteSessionStorage  # noqa: E402

from jsonl_store.adapters.zett import JsonlSessionStorage, ZettCompatError  # noqa: E402

IDS = st.sampled_from(["a", "b:1", "c/x y"])
#: Mostly valid values, so that most calls change something; a few bad ones, for the errors.
PARENTS = st.sampled_from([None, None, None, None, "a", "p"])
TITLES = st.sampled_from([None, None, None, "Title", "  padded  ", " ", "t" * 201])
AGENTS = st.sampled_from([None, None, None, "planner", "a" * 65])
TYPES = st.sampled_from([0, 0, 1, 2, -1])
APPEND = st.tuples(st.just("append"), IDS, PARENTS, TITLES, AGENTS, st.text(max_size=3))

CALLS = st.one_of(
    st.tuples(st.just("create"), IDS, PARENTS, TITLES, AGENTS, TYPES),
    APPEND,
    APPEND,
    st.tuples(
        st.just("snapshot"), IDS, st.integers(1, 2) | st.integers(-1, 7), st.sampled_from([0, 0, 1, -1, 3])
    ),
    st.tuples(st.just("update"), IDS, TITLES, AGENTS),
    st.tuples(st.just("delete"), IDS),
    st.tuples(st.just("get"), IDS),
    st.tuples(st.just("count"), IDS),
    st.tuples(
        st.just("sessions"),
        st.sampled_from([None, [], [0], [1, 2], [-1]]),
        st.integers(0, 4),
        st.integers(-1, 4),
    ),
    st.tuples(
        st.just("raw"),
        IDS,
        st.integers(-1, 5),
        st.one_of(st.none(), st.integers(0, 7)),
        st.integers(0, 4),
        st.integers(-1, 3),
    ),
    st.tuples(st.just("load"), IDS),
)


def comparable(value: object) -> object:
    """An answer without what each storage makes up: record and snapshot ids, all times."""
    if isinstance(value, list):
        return [comparable(item) for item in value]
    if isinstance(value, SessionSummary):
        return value.model_dump(exclude={"created_at", "updated_at"})
    if isinstance(value, RawMessageRecord):
        return (value.session_id, value.sequence, value.message, value.metadata, value.tags)
    if isinstance(value, ContextSnapshot):
        return (value.session_id, value.version, value.compacted_message, value.compacted_through_sequence)
    if isinstance(value, SessionView):
        parts = (value.parent_session_id, value.session_type, value.title, value.agent_name)
        return (*parts, comparable(value.snapshot), comparable(value.raw_tail))
    return value


async def call(storage: Any, step: tuple[Any, ...], renamed: set[str]) -> object:
    name, *args = step
    if name == "create":
        session_id, parent, title, agent_name, kind = args
        return await storage.create_session(
            session_id=session_id,
            parent_session_id=parent,
            title=title,
            agent_name=agent_name,
            session_type=kind,
        )
    if name == "append":
        session_id, parent, title, agent_name, text = args
        # Where ours differs on purpose (docs/guides/adapters.md, zett-agent), both get the same other call:
        # a title a user set with update_session outlasts a later append's, which SQL writes
        # over it; and a session cannot be its own parent, which SQL's append lets it be.
        if session_id in renamed:
            title = agent_name = None
        if parent == session_id:
            parent = None
        message = UserMessage(content=text)
        return await storage.append(
            session_id, "req", message, parent_session_id=parent, title=title, agent_name=agent_name
        )
    if name == "snapshot":
        session_id, through, version = args
        return await storage.snapshot(session_id, CompactedMessage(content="Summary."), through, version)
    if name == "update":
        session_id, title, agent_name = args
        renamed.add(session_id)
        return await storage.update_session(session_id, title=title, agent_name=agent_name)
    if name == "delete":
        renamed.discard(args[0])
        return await storage.delete_session(args[0])
    if name == "sessions":
        session_types, limit, offset = args
        return await storage.list_sessions(session_types=session_types, limit=limit, offset=offset)
    if name == "raw":
        session_id, after, through, limit, offset = args
        return await storage.list_raw_messages(
            session_id, after_sequence=after, through_sequence=through, limit=limit, offset=offset
        )
    lookup = {"get": storage.get_session, "count": storage.count_messages, "load": storage.load}[name]
    return await lookup(args[0])


def error_name(storage: Any, error: Exception) -> str:
    """The class zett's callers catch: where zett's storage raises ValueError, ours raises
    `ZettCompatError` (a ValueError with the same text, and a JsonlStoreError); a bare
    ValueError from ours is named apart, so it never matches."""
    if isinstance(storage, JsonlSessionStorage) and type(error) in (ZettCompatError, ValueError):
        return "ValueError" if type(error) is ZettCompatError else "ValueError, not a ZettCompatError"
    return type(error).__name__


def answers(storage: Any, program: list[tuple[Any, ...]]) -> list[object]:
    """Each call's answer, or its error's type and text."""

    async def run() -> list[object]:
        found: list[object] = []
        renamed: set[str] = set()
        try:
            for step in program:
                try:
                    found.append(comparable(await call(storage, step, renamed)))
                except Exception as error:  # noqa: BLE001 - the error is the answer compared
                    found.append((error_name(storage, error), str(error)))
        finally:
            await storage.close()
        return found

    return asyncio.run(run())


@settings(max_examples=examples(60))
@given(program=st.lists(CALLS, max_size=25))
def test_a_program_of_storage_calls_answers_as_zetts_sqlite_storage_does(
    program: list[tuple[Any, ...]],
) -> None:
    """Any sequence of zett's storage calls gives the same answers and errors on both storages."""
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        theirs = answers(SQLiteSessionStorage(root / "sessions.sqlite3"), program)
        ours = answers(JsonlSessionStorage(root / "jsonl", durability="none"), program)
    assert ours == theirs
