"""Crash safety of deleting a session, making a fork and rewriting a checkpoint (issue 20).

Each operation runs on the simulated disk and is crashed after every file-system call
(process crash and power loss); a fresh store then reads the state. Every state must read
as the session before the operation or as the session after it, the same for every
reader (`load`, `records`, `get_session`, `list_sessions`, `usage`, a delete of the
source), and a session made anew under a deleted id must hold nothing of the old one.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from jsonl_store import (
    AssistantMessage,
    CompactedMessage,
    ModelUsage,
    SessionHasForks,
    SessionNotFound,
    SessionStore,
    UserMessage,
)
from jsonl_store._format.names import is_deleted_name
from jsonl_store.testing import CrashState, SimulatedFileSystem, crash_states

ROOT = "/store"
#: A blob threshold small enough that one message of the workload spills into a blob file.
SMALL_BLOBS = 64


def _store(fs: SimulatedFileSystem) -> SessionStore:
    return SessionStore(ROOT, fs=fs, blob_threshold=SMALL_BLOBS, on_problem=lambda _: None)


def _states(fs: SimulatedFileSystem, start: int) -> Iterator[CrashState]:
    return crash_states(fs, start=start, max_states_per_prefix=6)


def _seen(store: SessionStore, sid: str) -> tuple[Any, ...]:
    """Everything a reader can tell about a session, in a form two states compare by."""
    view = store.load(sid)
    summary = store.get_session(sid)
    listed = sid in [s.session_id for s in store.list_sessions()]
    return (
        summary is not None,
        listed,
        summary.fork if summary is not None else None,
        [r.id for r in store.records(sid)],
        view.snapshot.version if view.snapshot is not None else 0,
        [r.id for r in view.raw_tail],
        store.usage_totals(sid),
        [p.kind for p in view.problems],
    )


def _full_session(store: SessionStore, sid: str) -> None:
    """A session with every kind of file: log, blob, snapshot, usage log, metadata."""
    store.append(sid, UserMessage(id="u1", content="hello"), title="t")
    store.append(sid, AssistantMessage(id="a1", content="x" * 200), usage=ModelUsage(input_tokens=3))
    store.append(sid, UserMessage(id="u2", content="more"))
    store.snapshot(sid, CompactedMessage(content="summary"), 2, 0)
    store.record_usage(sid, ModelUsage(input_tokens=5))
    store.append(sid, AssistantMessage(id="a2", content="done"))


def _check_made_anew(store: SessionStore, sid: str) -> None:
    """A session made under the id afterwards holds its own record only."""
    store.append(sid, UserMessage(id="new", content="a new life"))
    view = store.load(sid)
    assert [r.message.id for r in view.raw_tail] == ["new"]  # type: ignore[union-attr]
    assert view.snapshot is None and view.problems == []
    assert store.usage_totals(sid) == ModelUsage()
    summary = store.get_session(sid)
    assert summary is not None and summary.fork is None and summary.message_count == 1


def test_every_crash_point_of_deleting_a_session_leaves_all_of_it_or_none() -> None:
    """A crash inside delete_session leaves the whole session or nothing, and a new one under its id starts empty."""
    fs = SimulatedFileSystem()
    fs.makedirs(ROOT)
    store = _store(fs)
    _full_session(store, "s")
    whole = _seen(store, "s")
    none = _seen(_store(SimulatedFileSystem()), "s")
    start = len(fs.trace)
    assert store.delete_session("s") is True
    checked = 0
    for state in _states(fs, start):
        disk = state.filesystem()
        fresh = _store(disk)
        seen = _seen(fresh, "s")
        assert seen in (whole, none), state.report()
        if seen == none:
            _check_made_anew(fresh, "s")
            # What the cut-short delete left is gone with the new session's first write.
            assert not [name for name in disk.listdir(ROOT) if is_deleted_name(name)], state.report()
            checked += 1
    assert checked > 3


def test_every_crash_point_of_deleting_a_fork_leaves_the_fork_or_nothing() -> None:
    """A crash inside deleting a fork never leaves its own records read as a plain session."""
    fs = SimulatedFileSystem()
    fs.makedirs(ROOT)
    store = _store(fs)
    _full_session(store, "s")
    store.fork("s", 2, "f")
    store.append("f", UserMessage(id="f1", content="the fork's own"))
    store.record_usage("f", ModelUsage(output_tokens=2))
    whole = _seen(store, "f")
    none = _seen(_store(SimulatedFileSystem()), "f")
    start = len(fs.trace)
    assert store.delete_session("f") is True
    for state in _states(fs, start):
        fresh = _store(state.filesystem())
        seen = _seen(fresh, "f")
        assert seen in (whole, none), state.report()
        if seen == none:
            _check_made_anew(fresh, "f")


def test_every_crash_point_of_making_a_fork_reads_the_same_to_every_reader() -> None:
    """After a crash inside fork(), load, get_session, list_sessions and a delete of the source agree whether the fork exists."""
    fs = SimulatedFileSystem()
    fs.makedirs(ROOT)
    store = _store(fs)
    _full_session(store, "s")
    start = len(fs.trace)
    store.fork("s", 3, "f")
    outcomes = set()
    for state in _states(fs, start):
        fresh = _store(state.filesystem())
        loaded = fresh.load("f").exists
        got = fresh.get_session("f") is not None
        listed = "f" in [s.session_id for s in fresh.list_sessions()]
        try:
            fresh.delete_session("s")
            counted = False
        except SessionHasForks:
            counted = True
        assert loaded == got == listed == counted, (state.report(), loaded, got, listed, counted)
        outcomes.add(loaded)
    assert outcomes == {False, True}


def _fork_crash_states() -> Iterator[SessionStore]:
    """A fresh store on every crash state of making fork "f" of session "s" at 3."""
    fs = SimulatedFileSystem()
    fs.makedirs(ROOT)
    store = _store(fs)
    _full_session(store, "s")
    start = len(fs.trace)
    store.fork("s", 3, "f")
    for state in _states(fs, start):
        yield _store(state.filesystem())


def test_every_crash_point_of_making_a_fork_lets_update_session_finish_it() -> None:
    """After a crash inside fork(), update_session finds the fork exactly when get_session does, and gives it its metadata."""
    outcomes = set()
    for fresh in _fork_crash_states():
        before = fresh.get_session("f")
        outcomes.add(before is not None)
        if before is None:
            with pytest.raises(SessionNotFound):
                fresh.update_session("f", title="y")
            assert fresh.get_session("f") is None
            continue
        updated = fresh.update_session("f", title="y")
        assert (updated.title, updated.message_count, updated.fork) == ("y", 3, before.fork)
        assert updated.updated_at == before.updated_at
        assert [r.id for r in fresh.records("f")] == [r.id for r in fresh.records("s")][:3]
    assert outcomes == {False, True}


def test_a_fork_finished_after_a_crash_keeps_its_place_in_the_list() -> None:
    """Metadata a later write gives a fork whose making a crash cut short keeps the fork's time: it does not move up the list."""
    for fresh in _fork_crash_states():
        if fresh.get_session("f") is None:
            continue
        fresh.append("b", UserMessage(id="b1", content="later"))
        fresh.record_usage("f", ModelUsage(input_tokens=1))
        assert [s.session_id for s in fresh.list_sessions()] == ["b", "f", "s"]
        fresh.update_session("f", pinned=True)
        assert [s.session_id for s in fresh.list_sessions()] == ["b", "f", "s"]


def _context_ids(store: SessionStore, sid: str) -> list[Any]:
    return [m.get("id") if isinstance(m, dict) else m.id for m in store.load(sid).context]


def test_every_crash_point_of_a_rewriting_checkpoint_reads_as_the_old_or_the_new_context() -> None:
    """A crash inside a checkpoint that rewrites the context leaves the old context or the new one, never a mix."""
    fs = SimulatedFileSystem()
    fs.makedirs(ROOT)
    store = _store(fs)
    first = [
        UserMessage(id="u1", content="hello"),
        AssistantMessage(id="a1", content="hi"),
        UserMessage(id="u2", content="more"),
        AssistantMessage(id="a2", content="sure"),
    ]
    store.checkpoint("s", first)
    old = _context_ids(store, "s")
    start = len(fs.trace)
    # The caller compacted its list: a summary, then the last turn kept and a new message.
    rewritten = [
        CompactedMessage(id="c1", content="they said hello"),
        first[2],
        first[3],
        UserMessage(id="u3", content="next"),
    ]
    store.checkpoint("s", rewritten)
    new = _context_ids(store, "s")
    assert new == ["c1", "u2", "a2", "u3"] and old == ["u1", "a1", "u2", "a2"]
    seen = set()
    for state in _states(fs, start):
        found = _context_ids(_store(state.filesystem()), "s")
        assert found in (old, new), (state.report(), found)
        seen.add(tuple(found))
    assert seen == {tuple(old), tuple(new)}
