"""Scenario tests for `SessionStore.checkpoint`: saving a runner's whole message list."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import fails_after, log_path, read_tree

from jsonl_store import (
    AssistantMessage,
    CompactedMessage,
    InvalidArgument,
    InvalidMessage,
    InvalidSessionId,
    Message,
    ModelUsage,
    SessionStore,
    SnapshotConflict,
    UserMessage,
)
from jsonl_store._session import checkpoint as _checkpoint


def user(text: str, **kw: object) -> UserMessage:
    """A user turn."""
    return UserMessage(content=text, **kw)  # type: ignore[arg-type]


def stored(store: SessionStore, session_id: str) -> list[Message]:
    """Every message of the raw log, in order."""
    return [r.message for r in store.records(session_id)]


def test_first_checkpoint_appends_every_message(store: SessionStore) -> None:
    """A checkpoint of a new session appends the whole list."""
    messages = [user("a"), AssistantMessage(content="b"), user("c")]
    assert store.checkpoint("s", messages) == [1, 2, 3]
    assert stored(store, "s") == messages
    assert store.load("s").messages == messages


def test_checkpoint_appends_only_unknown_ids(store: SessionStore) -> None:
    """A checkpoint of a grown list appends only the messages not stored yet."""
    messages: list[Message] = [user("a"), user("b")]
    store.checkpoint("s", messages)
    messages += [AssistantMessage(content="c"), user("d")]
    assert store.checkpoint("s", messages) == [3, 4]
    assert stored(store, "s") == messages


def test_checkpoint_of_the_same_list_appends_nothing(store: SessionStore, root: Path) -> None:
    """Checkpointing an unchanged list is a no-op, even from another store object."""
    messages = [user("a"), user("b")]
    store.checkpoint("s", messages)
    before = log_path(root, "s").read_bytes()
    assert store.checkpoint("s", messages) == []
    assert SessionStore(root, durability="none").checkpoint("s", messages) == []
    assert log_path(root, "s").read_bytes() == before


def test_checkpoint_sees_messages_appended_directly(store: SessionStore) -> None:
    """Messages appended with append() count as stored for a later checkpoint."""
    a, b = user("a"), user("b")
    store.append("s", a)
    assert store.checkpoint("s", [a, b]) == [2]
    assert stored(store, "s") == [a, b]


def test_stale_list_never_removes_or_reorders_a_durable_message(store: SessionStore, root: Path) -> None:
    """Durable [1,2,3,X] and a runner's stale [1,2,3,4] give [1,2,3,X,4]: X stays where it is."""
    runner = [user("1"), user("2"), user("3")]
    store.checkpoint("s", runner)
    other_writer = SessionStore(root, durability="none")
    x = user("X from another writer")
    other_writer.append("s", x)
    four = user("4")
    assert store.checkpoint("s", [*runner, four]) == [5]
    assert stored(store, "s") == [*runner, x, four]
    view = store.load("s")
    assert view.snapshot is None
    assert view.messages == [*runner, x, four]


def test_stale_list_from_a_second_store_keeps_the_first_stores_messages(root: Path) -> None:
    """Two runners checkpointing their own lists interleave; neither removes the other's messages."""
    a = SessionStore(root, durability="none")
    b = SessionStore(root, durability="none")
    shared = [user("shared")]
    a.checkpoint("s", shared)
    a_msg, b_msg = user("from a"), user("from b")
    a.checkpoint("s", [*shared, a_msg])
    b.checkpoint("s", [*shared, b_msg])
    assert stored(a, "s") == [*shared, a_msg, b_msg]
    assert a.load("s").snapshot is None


def test_persist_false_messages_are_skipped(store: SessionStore) -> None:
    """Messages with persist=False are left out of a checkpoint."""
    a, hidden, b = user("a"), user("scratch", persist=False), user("b")
    assert store.checkpoint("s", [a, hidden, b]) == [1, 2]
    assert stored(store, "s") == [a, b]
    assert store.checkpoint("s", [a, hidden, b]) == []


def test_checkpoint_needs_an_id_on_every_message(store: SessionStore, root: Path) -> None:
    """A dict without an id cannot be matched: refused, nothing written."""
    with pytest.raises(InvalidMessage):
        store.checkpoint("s", [user("a"), {"role": "user", "content": "no id"}])
    with pytest.raises(InvalidMessage):
        store.checkpoint("s", [{"role": "user", "content": "x", "id": ""}])
    assert store.get_session("s") is None
    assert not log_path(root, "s").exists()


def test_checkpoint_refuses_duplicate_ids(store: SessionStore) -> None:
    """Two messages with one id in a list are ambiguous: refused."""
    a = user("a")
    with pytest.raises(InvalidMessage):
        store.checkpoint("s", [a, a])


def test_dict_messages_with_ids_checkpoint_like_classes(store: SessionStore) -> None:
    """Plain-dict messages are matched by their 'id' key."""
    messages: list[Message] = [
        {"role": "user", "content": "a", "id": "m1"},
        {"role": "user", "content": "b", "id": "m2"},
    ]
    assert store.checkpoint("s", messages) == [1, 2]
    messages.append({"role": "assistant", "content": "c", "id": "m3"})
    assert store.checkpoint("s", messages) == [3]
    assert stored(store, "s") == messages


def _assert_rewritten(store: SessionStore, root: Path, before: bytes, runner: list[Message]) -> None:
    """The raw log only grew, a snapshot was made, and the context is the runner's list."""
    after = log_path(root, "s").read_bytes()
    assert after.startswith(before) and len(after) > len(before)
    view = store.load("s")
    assert view.snapshot is not None
    assert view.messages == runner


def test_caller_compaction_becomes_a_snapshot_and_a_new_tail(store: SessionStore, root: Path) -> None:
    """A list starting with a CompactedMessage is stored as a snapshot plus the messages after it."""
    history = [user("1"), AssistantMessage(content="2"), user("3"), AssistantMessage(content="4")]
    store.checkpoint("s", history)
    before = log_path(root, "s").read_bytes()
    summary = CompactedMessage(content="1 and 2 happened")
    runner: list[Message] = [summary, history[2], history[3], user("5")]
    store.checkpoint("s", runner)
    _assert_rewritten(store, root, before, runner)
    snapshot = store.load("s").snapshot
    assert snapshot is not None and snapshot.compacted_message == summary
    # The old records are all still in the raw log.
    assert stored(store, "s")[:4] == history


def test_checkpoint_after_a_rewrite_of_the_same_list_appends_nothing(store: SessionStore, root: Path) -> None:
    """Once a rewrite is stored, checkpointing the same list again is a no-op."""
    history = [user("1"), user("2")]
    store.checkpoint("s", history)
    runner: list[Message] = [CompactedMessage(content="c"), history[1], user("3")]
    store.checkpoint("s", runner)
    before = read_tree(root)
    assert store.checkpoint("s", runner) == []
    assert SessionStore(root, durability="none").checkpoint("s", runner) == []
    assert read_tree(root) == before
    runner.append(user("4"))
    assert len(store.checkpoint("s", runner)) == 1
    assert store.load("s").messages == runner


def test_edit_with_a_new_message_becomes_a_snapshot_and_a_new_tail(store: SessionStore, root: Path) -> None:
    """Replacing a middle message by a new one rewrites the context, never the raw log."""
    history = [user("1"), user("2"), user("3")]
    store.checkpoint("s", history)
    before = log_path(root, "s").read_bytes()
    runner: list[Message] = [history[0], user("2, edited"), history[2]]
    store.checkpoint("s", runner)
    _assert_rewritten(store, root, before, runner)


def test_reorder_becomes_a_snapshot_and_a_new_tail(store: SessionStore, root: Path) -> None:
    """A reordered list rewrites the context; the raw log keeps the original order."""
    history = [user("1"), user("2"), user("3")]
    store.checkpoint("s", history)
    before = log_path(root, "s").read_bytes()
    runner: list[Message] = [history[1], history[0], history[2], user("4")]
    store.checkpoint("s", runner)
    _assert_rewritten(store, root, before, runner)
    assert stored(store, "s")[:3] == history


def test_two_rewrites_in_a_row_each_make_a_snapshot(store: SessionStore, root: Path) -> None:
    """A rewrite right after another still advances the boundary and makes the next version."""
    history = [user("1"), user("2")]
    store.checkpoint("s", history)
    first: list[Message] = [history[1], history[0]]
    store.checkpoint("s", first)
    second: list[Message] = [CompactedMessage(content="all of it"), history[0], user("3")]
    store.checkpoint("s", second)
    view = store.load("s")
    assert view.snapshot is not None and view.snapshot.version == 2
    assert view.messages == second


def test_compaction_of_the_whole_history_becomes_a_snapshot(store: SessionStore, root: Path) -> None:
    """[CompactedMessage(all of it), new] after a stored history is a snapshot, not two more records."""
    history = [user("1"), AssistantMessage(content="2"), user("3")]
    store.checkpoint("s", history)
    before = log_path(root, "s").read_bytes()
    runner: list[Message] = [CompactedMessage(content="1, 2 and 3 happened"), user("4")]
    store.checkpoint("s", runner)
    _assert_rewritten(store, root, before, runner)


def test_rewrite_after_a_foreign_snapshot_uses_the_current_version(store: SessionStore, root: Path) -> None:
    """A rewrite builds on the latest snapshot even when another store made it."""
    history = [user("1"), user("2"), user("3"), user("4")]
    store.checkpoint("s", history)
    other = SessionStore(root, durability="none")
    other.snapshot("s", CompactedMessage(content="first one"), 1, 0)
    runner: list[Message] = [history[3], history[2]]
    store.checkpoint("s", runner)
    view = store.load("s")
    assert view.snapshot is not None and view.snapshot.version == 2
    assert view.messages == runner
    with pytest.raises(SnapshotConflict):
        other.snapshot("s", CompactedMessage(content="stale"), 3, 1)


def test_new_message_placed_before_stored_ones_is_a_rewrite(store: SessionStore, root: Path) -> None:
    """A list with a new message in front of stored ones rewrites the context to exactly that list."""
    history = [user("1"), user("2")]
    store.checkpoint("s", history)
    before = log_path(root, "s").read_bytes()
    runner: list[Message] = [user("new first"), *history]
    store.checkpoint("s", runner)
    _assert_rewritten(store, root, before, runner)


def test_list_lacking_a_stored_middle_message_never_removes_it(store: SessionStore, root: Path) -> None:
    """A save never removes a stored message: [1, 3] after stored [1, 2, 3] changes nothing."""
    history = [user("1"), user("2"), user("3")]
    store.checkpoint("s", history)
    before = read_tree(root)
    assert store.checkpoint("s", [history[0], history[2]]) == []
    assert read_tree(root) == before
    four = user("4")
    assert store.checkpoint("s", [history[0], history[2], four]) == [4]
    assert store.load("s").messages == [*history, four]


def test_rewrite_keeps_messages_another_writer_appended_after_the_list(
    store: SessionStore, root: Path
) -> None:
    """A reordering list that missed another writer's message keeps that message, after the list."""
    history = [user("1"), user("2"), user("3")]
    store.checkpoint("s", history)
    x = user("X from another writer")
    SessionStore(root, durability="none").append("s", x)
    runner: list[Message] = [history[1], history[0], history[2], user("4")]
    store.checkpoint("s", runner)
    assert store.load("s").messages == [*runner, x]


def test_compaction_keeps_messages_another_writer_appended_after_the_list(
    store: SessionStore, root: Path
) -> None:
    """A caller's compaction that missed another writer's message keeps it, after the new tail."""
    history = [user("1"), user("2"), user("3")]
    store.checkpoint("s", history)
    x = user("X from another writer")
    SessionStore(root, durability="none").append("s", x)
    runner: list[Message] = [CompactedMessage(content="1 and 2"), history[2], user("4")]
    store.checkpoint("s", runner)
    assert store.load("s").messages == [*runner, x]


def test_what_a_caller_has_seen_outlives_the_store_closing_its_descriptors(root: Path) -> None:
    """A compaction after the store evicted the session's open state still drops the summarised history."""
    store = SessionStore(root, durability="none")
    store.checkpoint("s", [user("1"), user("2"), user("3")])
    for i in range(80):  # more sessions than a store keeps open: "s" is evicted
        store.load(f"other-{i}")
    runner: list[Message] = [CompactedMessage(content="1, 2 and 3 happened"), user("4")]
    store.checkpoint("s", runner)
    assert store.load("s").messages == runner


def test_an_extending_save_looks_only_at_the_new_messages(
    store: SessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a save, saving the same list grown by one reads one message id, not the whole list's."""
    runner: list[Message] = [user(str(i)) for i in range(1_000)]
    store.checkpoint("s", runner)
    calls = 0
    real = _checkpoint.message_id

    def counting(message: Message) -> object:
        nonlocal calls
        calls += 1
        return real(message)

    monkeypatch.setattr(_checkpoint, "message_id", counting)
    runner.append(user("new"))
    assert store.checkpoint("s", runner) == [1_001]
    # The new message's id in the list, and the new record's id read back from the log.
    assert calls == 2
    assert stored(store, "s") == runner


def test_a_list_changed_in_place_after_a_save_is_still_seen_as_a_rewrite(
    store: SessionStore, root: Path
) -> None:
    """Replacing a saved message in the caller's own list object is noticed: the saved part is compared."""
    runner: list[Message] = [user("1"), user("2"), user("3")]
    store.checkpoint("s", runner)
    before = log_path(root, "s").read_bytes()
    runner[1] = user("2, edited")
    runner.append(user("4"))
    store.checkpoint("s", runner)
    _assert_rewritten(store, root, before, runner)


def test_a_list_changed_in_place_without_growing_is_still_seen(store: SessionStore, root: Path) -> None:
    """An edit of a saved message in a list of the same length is a rewrite too (no new message is needed to notice it)."""
    runner: list[Message] = [user("1"), user("2"), user("3")]
    store.checkpoint("s", runner)
    before = log_path(root, "s").read_bytes()
    runner[0] = user("1, edited")
    store.checkpoint("s", runner)
    _assert_rewritten(store, root, before, runner)


class _AlwaysEqual(list[Message]):
    """A list whose own == says yes to anything."""

    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = None


def test_a_list_subclass_cannot_hide_an_in_place_change(store: SessionStore, root: Path) -> None:
    """The saved part is compared as lists are, whatever __eq__ a list subclass defines."""
    runner = _AlwaysEqual([user("1"), user("2"), user("3")])
    store.checkpoint("s", runner)
    before = log_path(root, "s").read_bytes()
    runner[1] = user("2, edited")
    runner.append(user("4"))
    store.checkpoint("s", runner)
    _assert_rewritten(store, root, before, list(runner))


def test_a_failed_comparison_leaves_the_saved_list_as_it_was(store: SessionStore) -> None:
    """After a save whose list was changed in place, saving the original list's growth still extends it."""
    runner: list[Message] = [user("1"), user("2")]
    store.checkpoint("s", runner)
    edited = [runner[0], user("2, edited"), user("3")]
    cache = store._handles.session("s").checkpoint
    assert cache is not None
    from jsonl_store._session.checkpoint import saved_part

    assert saved_part(edited, cache) == 0
    assert cache.saved == runner  # grown for the comparison, and back to what was saved
    assert saved_part([*runner, user("3")], cache) == 2


def test_an_equal_list_rebuilt_from_a_load_extends(store: SessionStore) -> None:
    """A list made anew from load() (equal messages, other objects) plus one message appends one record."""
    store.checkpoint("s", [user("1"), user("2")])
    runner = [*store.load("s").messages, user("3")]
    assert store.checkpoint("s", runner) == [3]
    assert stored(store, "s") == runner


def test_a_save_after_another_writers_snapshot_matches_the_whole_list(root: Path) -> None:
    """A snapshot made by another store since the last save makes the next save match everything again."""
    first = SessionStore(root, durability="none")
    runner: list[Message] = [user("1"), user("2"), user("3")]
    first.checkpoint("s", runner)
    other = SessionStore(root, durability="none")
    other.snapshot("s", CompactedMessage(content="1 and 2"), 2, 0)
    runner.append(user("4"))
    first.checkpoint("s", runner)
    # The caller's list names messages the snapshot replaced: its history is the context again.
    assert [m.content for m in first.load("s").messages if isinstance(m, UserMessage)] == ["1", "2", "3", "4"]


def test_persist_false_messages_in_the_saved_part_stay_out(store: SessionStore) -> None:
    """Messages with persist=False in a list saved before are still never stored when the list grows."""
    runner: list[Message] = [user("1"), user("scratch", persist=False), user("2")]
    store.checkpoint("s", runner)
    runner.append(user("3"))
    assert store.checkpoint("s", runner) == [3]
    assert [m.content for m in stored(store, "s")] == ["1", "2", "3"]  # type: ignore[union-attr]


def test_a_duplicate_of_a_saved_id_in_the_new_part_is_refused(store: SessionStore) -> None:
    """A grown list whose new message reuses the id of a saved one is refused, and nothing is written."""
    first = user("1")
    runner: list[Message] = [first, user("2")]
    store.checkpoint("s", runner)
    runner.append(user("again", id=first.id))
    with pytest.raises(InvalidMessage):
        store.checkpoint("s", runner)
    assert len(stored(store, "s")) == 2


# ---------------------------------------------------------------------------------------
# The saved list under threads, re-entry and list subclasses (the comparison grows the
# store's copy for a moment, outside the session lock)
# ---------------------------------------------------------------------------------------


def _texts(messages: list[Message]) -> list[str]:
    """The texts of a context's messages (all user turns here)."""
    return [str(m.content) for m in messages]  # type: ignore[union-attr]


class _Slow(str):
    """Text whose == waits for ``release``, after setting ``entered``: a comparison held open."""

    entered = threading.Event()
    release = threading.Event()

    def __eq__(self, other: object) -> bool:
        type(self).entered.set()
        type(self).release.wait(10)
        return str.__eq__(self, other)

    __hash__ = str.__hash__


def test_a_comparison_in_another_thread_leaves_a_save_an_append(
    store: SessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A save made while another thread's comparison has the saved list grown appends its one message."""
    runner: list[UserMessage] = [user("1"), user("2")]
    store.checkpoint("s", runner)
    cache = store._handles.session("s").checkpoint
    _Slow.entered.clear()
    _Slow.release.clear()
    real_state, paused = _checkpoint.state, threading.Event()

    def state(*args: Any, **kwargs: Any) -> Any:
        found = real_state(*args, **kwargs)
        if threading.current_thread().name == "saver" and not paused.is_set():
            paused.set()
            _Slow.entered.wait(10)  # the other thread's comparison is under way now
        return found

    monkeypatch.setattr(_checkpoint, "state", state)
    rebuilt = [
        UserMessage(id=runner[0].id, content="1"),
        UserMessage(id=runner[1].id, content=_Slow("2")),
        user("x"),
    ]
    outcome: dict[str, object] = {}
    saver = threading.Thread(
        target=lambda: outcome.update(a=store.checkpoint("s", [*runner, user("3")])), name="saver"
    )
    comparer = threading.Thread(target=lambda: outcome.update(b=_checkpoint.saved_part(rebuilt, cache)))
    saver.start()
    assert paused.wait(10)
    comparer.start()
    assert _Slow.entered.wait(10)
    time.sleep(0.2)  # the saver goes on while the list is grown
    _Slow.release.set()
    saver.join(10)
    comparer.join(10)
    assert outcome == {"a": [3], "b": 2}
    view = store.load("s")
    assert view.snapshot is None and _texts(view.messages) == ["1", "2", "3"]


def test_a_message_whose_comparison_saves_the_same_session_does_not_wait_for_itself(
    store: SessionStore,
) -> None:
    """A message's __eq__ that checkpoints the session being compared finishes: nothing waits for its own thread."""
    runner: list[UserMessage] = [user("1"), user("2")]
    store.checkpoint("s", runner)

    class Auditing(str):
        def __eq__(self, other: object) -> bool:
            store.checkpoint("s", runner)  # the same session, from inside the comparison
            return str.__eq__(self, other)

        __hash__ = str.__hash__

    rebuilt = [runner[0], UserMessage(id=runner[1].id, content=Auditing("2")), user("3")]
    with fails_after(10, "checkpoint waited for itself"):
        assert store.checkpoint("s", rebuilt) == [3]
    assert _texts(store.load("s").messages) == ["1", "2", "3"]


class _OwnSlices(list[Message]):
    """A list whose slices are its own idea (and fail half-way): the comparison must not use them."""

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            raise AssertionError("the comparison used the subclass's own slicing")
        return list.__getitem__(self, index)


def test_a_list_subclass_with_its_own_slices_is_compared_as_a_list(store: SessionStore) -> None:
    """A list subclass's slicing has no say: the saved part is found, and the store's copy is left as saved."""
    runner: list[UserMessage] = [user("1"), user("2")]
    store.checkpoint("s", runner)
    cache = store._handles.session("s").checkpoint
    grown = _OwnSlices([*runner, user("3")])
    assert _checkpoint.saved_part(grown, cache) == 2
    assert cache is not None and cache.saved == runner and cache.saved_count == 2


def test_a_save_that_lost_its_saved_part_to_another_thread_still_appends(
    store: SessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When another thread saved between a save's comparison and its lock, the whole list is matched: an append, no snapshot."""
    runner: list[UserMessage] = [user("1"), user("2")]
    store.checkpoint("s", runner)
    real_check, paused, resume = _checkpoint.check_unique, threading.Event(), threading.Event()

    def check_unique(*args: Any) -> None:
        real_check(*args)
        if threading.current_thread().name == "late":
            paused.set()
            resume.wait(10)  # before the session lock: the other save happens here

    monkeypatch.setattr(_checkpoint, "check_unique", check_unique)
    outcome: dict[str, object] = {}
    late = threading.Thread(
        target=lambda: outcome.update(late=store.checkpoint("s", [*runner, user("a")])), name="late"
    )
    late.start()
    assert paused.wait(10)
    assert store.checkpoint("s", [*runner, user("b")]) == [3]
    resume.set()
    late.join(10)
    assert outcome == {"late": [4]}
    view = store.load("s")
    assert view.snapshot is None and _texts(view.messages) == ["1", "2", "b", "a"]


def test_first_checkpoint_of_a_session_gives_it_the_title_and_agent_name_it_names(tmp_path: Path) -> None:
    """checkpoint(title=..., agent_name=...) that makes a session writes them into its metadata, as the first append would."""
    store = SessionStore(tmp_path)
    store.checkpoint("s", [UserMessage(id="u1", content="hi")], title="Plan", agent_name="runner")
    made = SessionStore(tmp_path).get_session("s")
    assert made is not None and (made.title, made.agent_name) == ("Plan", "runner")


def test_checkpoint_with_a_title_it_cannot_store_makes_no_session(tmp_path: Path) -> None:
    """A checkpoint whose title update_session would refuse raises InvalidArgument and creates nothing."""
    store = SessionStore(tmp_path)
    with pytest.raises(InvalidArgument):
        store.checkpoint("s", [UserMessage(id="u1", content="hi")], title="x" * 100_000)
    assert store.get_session("s") is None and not (tmp_path / "s").exists()


@pytest.mark.parametrize(
    "case",
    [
        ({"session_type": "x"}, InvalidArgument),
        ({"parent_session_id": 5}, InvalidSessionId),
        ({"agent_name": 3}, InvalidArgument),
        ({"title": 4}, InvalidArgument),
        ({"timing": 5}, InvalidArgument),
        ({"usage": ModelUsage(input_tokens=1)}, InvalidArgument),  # the only message is a user's
    ],
    ids=lambda case: next(iter(case[0])),
)
def test_a_first_save_refused_for_its_options_makes_no_session(
    store: SessionStore, root: Path, case: tuple[dict[str, Any], type[Exception]]
) -> None:
    """A checkpoint that makes its session refuses bad append options before any file exists."""
    options, error = case
    with pytest.raises(error):
        store.checkpoint("s", [UserMessage(content="hi")], **options)
    assert not (root / "s").exists()
    assert store.list_sessions() == []
