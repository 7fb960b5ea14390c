"""Conditional appends: ``expected_last_sequence`` writes only onto the log's expected end."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import log_path

from jsonl_store import (
    InvalidArgument,
    JsonlStoreError,
    SequenceConflict,
    SessionStore,
    UserMessage,
)


def user(text: str) -> UserMessage:
    """A user turn."""
    return UserMessage(content=text)


def test_expected_zero_creates_a_session_and_writes_the_first_record(store: SessionStore) -> None:
    """expected_last_sequence=0 on a session with no record writes sequence 1."""
    assert store.append("s", user("first"), expected_last_sequence=0) == 1
    assert [r.sequence for r in store.records("s")] == [1]


def test_a_stale_expectation_raises_and_writes_nothing(store: SessionStore, root: Path) -> None:
    """A conflict is a SequenceConflict (a ValueError) naming both sequences, and the log keeps its bytes."""
    store.append_many("s", [user("a"), user("b")])
    before = log_path(root, "s").read_bytes()
    with pytest.raises(SequenceConflict) as caught:
        store.append("s", user("late"), expected_last_sequence=1)
    assert isinstance(caught.value, ValueError) and isinstance(caught.value, JsonlStoreError)
    assert (caught.value.expected, caught.value.actual, caught.value.session_id) == (1, 2, "s")
    assert log_path(root, "s").read_bytes() == before
    assert store.append("s", user("on time"), expected_last_sequence=2) == 3


def test_a_conditional_batch_is_written_whole_or_not_at_all(store: SessionStore, root: Path) -> None:
    """append_many with a stale expectation writes none of its records; with the right one, all."""
    store.append("s", user("a"))
    before = log_path(root, "s").read_bytes()
    with pytest.raises(SequenceConflict):
        store.append_many("s", [user("b"), user("c")], expected_last_sequence=0)
    assert log_path(root, "s").read_bytes() == before
    assert store.append_many("s", [user("b"), user("c")], expected_last_sequence=1) == [2, 3]


def test_another_stores_append_makes_the_expectation_stale(root: Path) -> None:
    """The check is made against the log under the lock, not against what this store cached."""
    first = SessionStore(root, durability="none")
    second = SessionStore(root, durability="none")
    first.append("s", user("a"))
    second.append("s", user("b"))
    with pytest.raises(SequenceConflict):
        first.append("s", user("c"), expected_last_sequence=1)


@pytest.mark.parametrize("bad", [-1, 1.0, "1", True])
def test_an_expectation_that_is_no_sequence_is_refused(store: SessionStore, bad: object) -> None:
    """expected_last_sequence must be a non-negative int; anything else is InvalidArgument before any write."""
    with pytest.raises(InvalidArgument):
        store.append("s", user("a"), expected_last_sequence=bad)  # type: ignore[arg-type]
    assert store.get_session("s") is None


def test_checkpoint_does_not_take_a_conditional_option(store: SessionStore) -> None:
    """checkpoint decides what it appends after, so expected_last_sequence is not one of its options."""
    with pytest.raises(InvalidArgument):
        store.checkpoint("s", [user("a")], expected_last_sequence=0)


@pytest.mark.parametrize("many", [False, True])
def test_a_conditional_append_refused_on_a_missing_session_creates_nothing(
    store: SessionStore, root: Path, many: bool
) -> None:
    """A SequenceConflict on a session that does not exist leaves it not existing: no directory, no metadata."""
    store.append("other", user("the root exists"))
    with pytest.raises(SequenceConflict) as caught:
        if many:
            store.append_many("s", [user("a"), user("b")], expected_last_sequence=3)
        else:
            store.append("s", user("late"), expected_last_sequence=3)
    assert (caught.value.expected, caught.value.actual) == (3, 0)
    assert store.get_session("s") is None
    assert "s" not in [s.session_id for s in store.list_sessions()]
    assert not (root / "s").exists()


def test_a_conditional_append_refused_after_another_store_deleted_the_session_leaves_it_deleted(
    root: Path,
) -> None:
    """A store whose open log was deleted by another store refuses a stale expectation without making the session again."""
    writer = SessionStore(root, durability="none")
    writer.append_many("s", [user("a"), user("b")])
    assert SessionStore(root).delete_session("s")
    with pytest.raises(SequenceConflict):
        writer.append("s", user("late"), expected_last_sequence=2)
    assert SessionStore(root).get_session("s") is None
    writer.close()


def test_a_conditional_append_whose_session_is_deleted_right_after_the_look_makes_nothing(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A delete by another store between the look for the log and the write still leaves the session deleted."""
    from jsonl_store._ops import append as _append
    from jsonl_store._session.handles import OpenSession

    writer = SessionStore(root, durability="none")
    writer.append_many("s", [user("a"), user("b")])
    real = _append.refuse_unstarted
    looks: list[int] = []

    def look_then_lose_the_race(session: OpenSession, expected: int) -> None:
        real(session, expected)
        looks.append(expected)
        if len(looks) == 1:
            assert SessionStore(root).delete_session("s")

    monkeypatch.setattr(_append, "refuse_unstarted", look_then_lose_the_race)
    with pytest.raises(SequenceConflict):
        writer.append("s", user("late"), expected_last_sequence=2)
    assert SessionStore(root).get_session("s") is None and not (root / "s").exists()
    writer.close()
