"""What a store remembers between checkpoints: renewed whenever what it was read from changes."""

from __future__ import annotations

from pathlib import Path

import pytest

from jsonl_store import (
    AssistantMessage,
    CompactedMessage,
    Message,
    SessionHasForks,
    SessionStore,
    UserMessage,
)


def user(text: str) -> UserMessage:
    """A user turn."""
    return UserMessage(content=text)


def test_a_compaction_after_close_drops_what_the_caller_saw_and_left_out(root: Path) -> None:
    """Closing the store keeps what the caller has seen: a later compaction drops the messages it left out."""
    store = SessionStore(root, durability="none")
    history = [user("1"), user("2"), user("3"), user("4")]
    store.checkpoint("s", history)
    store.close()
    runner: list[Message] = [CompactedMessage(content="1 to 4"), history[0], history[1]]
    store.checkpoint("s", runner)
    assert store.load("s").messages == runner


def test_a_session_made_again_counts_none_of_its_records_as_seen(root: Path) -> None:
    """After another store deletes and remakes a session, its new records are unseen, so a compaction keeps them."""
    store = SessionStore(root, durability="none")
    store.checkpoint("s", [user("1"), user("2"), user("3")])
    other = SessionStore(root, durability="none")
    other.delete_session("s")
    theirs = [user("a"), user("b"), user("c"), user("d")]
    other.append_many("s", theirs)
    runner: list[Message] = [CompactedMessage(content="what I had"), user("4")]
    store.checkpoint("s", runner)
    assert store.load("s").messages == [*runner, *theirs]


def test_a_fork_compacted_at_its_source_before_the_branch_extends_on_a_loaded_list(root: Path) -> None:
    """A fork whose shared part the source compacted extends a list loaded after it, with no rewrite."""
    store = SessionStore(root, durability="none")
    store.append_many("src", [user("1"), user("2"), user("3")])
    store.fork("src", 3, "f")
    store.checkpoint("f", [*store.load("f").messages, AssistantMessage(content="own")])
    summary = CompactedMessage(content="1 and 2")
    SessionStore(root, durability="none").snapshot("src", summary, 2, 0)
    loaded = store.load("f")
    assert loaded.snapshot is not None and loaded.snapshot.session_id == "src"
    new = user("next")
    assert store.checkpoint("f", [*loaded.messages, new]) == [5]
    assert store.load("f").messages == [*loaded.messages, new]
    assert [r.sequence for r in store.records("f")] == [1, 2, 3, 4, 5]


def test_a_fork_made_again_from_another_source_matches_the_new_sources_messages(root: Path) -> None:
    """A fork deleted and made again from another source is matched against the new source's history."""
    store = SessionStore(root, durability="none")
    first = [user("1"), user("2")]
    store.append_many("one", first)
    store.fork("one", 2, "f")
    store.checkpoint("f", first)  # nothing new: the store now knows f's history
    other = SessionStore(root, durability="none")
    second = [user("x"), user("y")]
    other.append_many("two", second)
    other.delete_session("f")
    other.fork("two", 2, "f")
    new = user("z")
    assert store.checkpoint("f", [*second, new]) == [3]
    assert store.load("f").messages == [*second, new]
    assert [r.message for r in store.records("f")] == [*second, new]


def test_a_refused_delete_keeps_what_the_caller_saw(root: Path) -> None:
    """A delete refused because of a fork forgets nothing the caller saw: a compaction drops what it left out."""
    store = SessionStore(root, durability="none")
    history = [user("1"), user("2"), user("3")]
    store.checkpoint("s", history)
    store.fork("s", 1, "f")
    with pytest.raises(SessionHasForks):
        store.delete_session("s")
    runner: list[Message] = [CompactedMessage(content="1 to 3"), history[0]]
    store.checkpoint("s", runner)
    assert store.load("s").messages == runner
