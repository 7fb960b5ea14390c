"""`create_session`: an empty session, visible everywhere, made once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from jsonl_store import InvalidArgument, JsonlStoreError, ParentMismatch, SessionStore, UserMessage
from jsonl_store._format.names import LOG_NAME


def test_an_empty_session_is_listed_found_and_loaded(store: SessionStore, root: Path) -> None:
    """A created session has metadata and no records: list_sessions, get_session and load all see it."""
    summary = store.create_session(
        "s", title="Plan", agent_name="planner", metadata={"team": "a"}, session_type=2
    )
    assert (summary.title, summary.agent_name, summary.metadata, summary.session_type) == (
        "Plan",
        "planner",
        {"team": "a"},
        2,
    )
    assert summary.message_count == 0
    assert [s.session_id for s in store.list_sessions()] == ["s"]
    assert store.get_session("s") == summary
    view = store.load("s")
    assert (view.title, view.agent_name, view.raw_tail, view.exists) == ("Plan", "planner", [], False)
    assert not (root / "s" / LOG_NAME).exists()  # nothing is written that holds no record


def test_creating_it_again_changes_nothing(store: SessionStore) -> None:
    """A second create_session returns the existing summary, whatever title it is given."""
    first = store.create_session("s", title="Plan")
    again = store.create_session("s", title="Other")
    assert again == first


def test_appends_go_into_the_created_session(store: SessionStore) -> None:
    """The first append after create_session is sequence 1 and keeps the session's title."""
    store.create_session("s", title="Plan")
    assert store.append("s", UserMessage(content="hi")) == 1
    summary = store.get_session("s")
    assert summary is not None and (summary.title, summary.message_count) == ("Plan", 1)


def test_a_different_parent_is_a_mismatch(store: SessionStore) -> None:
    """A parent never changes: creating an existing child under another parent raises ParentMismatch."""
    store.create_session("child", parent_session_id="parent")
    assert store.create_session("child", parent_session_id="parent").parent_session_id == "parent"
    with pytest.raises(ParentMismatch):
        store.create_session("child", parent_session_id="other")
    store.create_session("plain")  # made without one ...
    with pytest.raises(ParentMismatch):
        store.create_session("plain", parent_session_id="parent")  # ... so a parent now is another


@pytest.mark.parametrize(
    "options",
    [
        {"title": ""},
        {"agent_name": 3},
        {"metadata": ["x"]},
        {"metadata": {"x": float("nan")}},
        {"session_type": "a"},
    ],
)
def test_bad_fields_are_refused_before_anything_is_made(
    store: SessionStore, root: Path, options: dict[str, object]
) -> None:
    """An invalid field raises InvalidArgument (or the metadata's error) and makes no directory."""
    with pytest.raises(ValueError) as caught:
        store.create_session("s", **options)  # type: ignore[arg-type]
    assert not (root / "s").exists()
    assert isinstance(caught.value, JsonlStoreError)  # a typed error, not a stray ValueError


def test_a_session_made_elsewhere_keeps_the_time_it_was_made(store: SessionStore) -> None:
    """created_at= is the session's created_at (in UTC); a naive datetime is refused and makes nothing."""
    began = datetime(2025, 6, 8, 13, 0, tzinfo=timezone(timedelta(hours=2)))
    summary = store.create_session("imported", created_at=began)
    assert summary.created_at == began and summary.created_at.tzinfo == UTC
    assert store.get_session("imported") == summary
    with pytest.raises(InvalidArgument):
        store.create_session("naive", created_at=datetime(2025, 6, 8, 11, 0))
    assert store.get_session("naive") is None
