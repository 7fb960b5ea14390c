"""Scenario tests for `SessionStore`: appending, loading, listing, deleting, file layout."""

from __future__ import annotations

import os
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest
from helpers import gitignored, json_lines, log_path, meta_path, read_tree

from jsonl_store import (
    AssistantMessage,
    CompactedMessage,
    InvalidArgument,
    JsonlStoreError,
    Message,
    MessageTiming,
    ModelUsage,
    ParentMismatch,
    Problem,
    RawMessageRecord,
    SessionStore,
    SessionSummary,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from jsonl_store._format.names import GITIGNORE_NAME, LOCK_NAME, LOG_NAME, META_NAME


def user(text: str = "hi", **kw: object) -> UserMessage:
    """A user turn."""
    return UserMessage(content=text, **kw)  # type: ignore[arg-type]


def sequences(store: SessionStore, session_id: str) -> list[int]:
    """The sequences of every record in the raw log."""
    return [r.sequence for r in store.records(session_id)]


# ---------------------------------------------------------------------------------------
# Sequences
# ---------------------------------------------------------------------------------------


def test_appends_return_one_two_three_without_gaps(store: SessionStore) -> None:
    """Each append returns the next sequence, starting at 1, with no gaps."""
    assert [store.append("s", user(str(i))) for i in range(5)] == [1, 2, 3, 4, 5]
    assert sequences(store, "s") == [1, 2, 3, 4, 5]


def test_sequences_continue_across_store_objects_and_reopen(root: Path) -> None:
    """Two store objects on one directory, and a reopened store, share one gap-free sequence."""
    a = SessionStore(root, durability="none")
    b = SessionStore(root, durability="none")
    assert a.append("s", user()) == 1
    assert b.append("s", user()) == 2
    assert a.append("s", user()) == 3
    a.close()
    assert a.append("s", user()) == 4
    c = SessionStore(root, durability="none")
    assert c.append_many("s", [user(), user()]) == [5, 6]
    assert b.append("s", user()) == 7
    assert sequences(c, "s") == list(range(1, 8))
    for s in (a, b, c):
        s.close()


def test_sessions_have_independent_sequences(store: SessionStore) -> None:
    """Each session counts its own sequences from 1."""
    assert store.append("a", user()) == 1
    assert store.append("b", user()) == 1
    assert store.append("a", user()) == 2


def test_fsync_durability_appends_the_same_records(root: Path) -> None:
    """durability='fsync' writes the same records as 'none'."""
    with SessionStore(root, durability="fsync") as store:
        assert store.append("s", user("a")) == 1
        assert store.append_many("s", [user("b"), user("c")]) == [2, 3]
        assert [r.message.content for r in store.records("s")] == ["a", "b", "c"]  # type: ignore[union-attr]


def test_store_rejects_unknown_durability_and_bad_lock_timeout(root: Path) -> None:
    """A store with an unknown durability or a non-positive lock timeout is refused up front."""
    with pytest.raises(InvalidArgument):
        SessionStore(root, durability="sometimes")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument):
        SessionStore(root, lock_timeout=0)
    assert not root.exists()


# ---------------------------------------------------------------------------------------
# Session metadata set by the first append
# ---------------------------------------------------------------------------------------


def test_first_append_initialises_title_agent_parent_and_type(store: SessionStore) -> None:
    """The first append's title, agent name, parent and type become the session's metadata."""
    store.append("p", user())
    store.append(
        "s", user(), title="Plan a trip", agent_name="planner", parent_session_id="p", session_type=7
    )
    summary = store.get_session("s")
    assert summary is not None
    assert (summary.title, summary.agent_name, summary.parent_session_id, summary.session_type) == (
        "Plan a trip",
        "planner",
        "p",
        7,
    )
    view = store.load("s")
    assert (view.title, view.agent_name, view.parent_session_id, view.session_type) == (
        "Plan a trip",
        "planner",
        "p",
        7,
    )


def test_later_appends_do_not_change_title_agent_or_type(store: SessionStore, root: Path) -> None:
    """Title, agent name and type given to later appends are ignored once the session exists."""
    store.append("s", user(), title="first", agent_name="a1", session_type=1)
    store.append("s", user(), title="second", agent_name="a2", session_type=2)
    SessionStore(root, durability="none").append("s", user(), title="third", agent_name="a3", session_type=3)
    summary = store.get_session("s")
    assert summary is not None
    assert (summary.title, summary.agent_name, summary.session_type) == ("first", "a1", 1)


def test_session_fields_are_not_copied_into_records(store: SessionStore, root: Path) -> None:
    """Title, agent name, parent and type live in the metadata file, not in every record."""
    store.append("p", user())
    store.append(
        "s", user(), title="TITLE-MARK", agent_name="AGENT-MARK", parent_session_id="p", session_type=5
    )
    log = log_path(root, "s").read_bytes()
    for mark in (b"TITLE-MARK", b"AGENT-MARK", b"parent", b"session_type"):
        assert mark not in log
    assert b"TITLE-MARK" in meta_path(root, "s").read_bytes()


def test_different_parent_later_raises_parent_mismatch_and_writes_nothing(
    store: SessionStore, root: Path
) -> None:
    """A session's parent never changes: a different one raises ParentMismatch and writes nothing."""
    store.append("s", user(), parent_session_id="p1")
    before = read_tree(root)
    with pytest.raises(ParentMismatch) as info:
        store.append("s", user(), parent_session_id="p2")
    assert isinstance(info.value, InvalidArgument) and isinstance(info.value, ValueError)
    with pytest.raises(ParentMismatch):
        SessionStore(root, durability="none").append("s", user(), parent_session_id="p2")
    assert read_tree(root) == before
    # The same parent again, or none at all, is fine.
    assert store.append("s", user(), parent_session_id="p1") == 2
    assert store.append("s", user()) == 3


def test_adding_a_parent_to_a_session_without_one_raises_parent_mismatch(store: SessionStore) -> None:
    """A session created without a parent cannot get one later."""
    store.append("s", user())
    with pytest.raises(ParentMismatch):
        store.append("s", user(), parent_session_id="p")


def test_session_cannot_be_its_own_parent(store: SessionStore, root: Path) -> None:
    """A parent equal to the session id is refused before anything is created."""
    with pytest.raises(InvalidArgument):
        store.append("s", user(), parent_session_id="s")
    assert not root.exists()


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("title", ""),
        ("title", "x" * 201),
        ("agent_name", ""),
        ("agent_name", "x" * 65),
        ("session_type", "1"),
        ("session_type", True),
        ("request_id", 5),
        ("metadata", ["not", "a", "mapping"]),
        ("tags", "text"),
        ("timing", "now"),
    ],
)
def test_bad_append_options_raise_invalid_argument_and_create_nothing(
    store: SessionStore, root: Path, option: str, value: object
) -> None:
    """Out-of-range options of the first append are refused before the session is created."""
    with pytest.raises(InvalidArgument):
        store.append("s", user(), **{option: value})  # type: ignore[arg-type]
    assert not (root / "s" / LOG_NAME).exists()
    assert store.get_session("s") is None


# ---------------------------------------------------------------------------------------
# Usage and timing on records
# ---------------------------------------------------------------------------------------


def test_usage_on_an_assistant_message_is_stored_on_its_record(store: SessionStore) -> None:
    """Usage given with an assistant message lands on its record, with the derived properties."""
    usage = ModelUsage(
        input_tokens=100, output_tokens=20, cache_read_tokens=40, cache_write_tokens=3, reasoning_tokens=7
    )
    store.append("s", AssistantMessage(content="ok"), usage=usage)
    (record,) = store.records("s")
    assert (record.input_tokens, record.output_tokens, record.cache_read_tokens) == (100, 20, 40)
    assert (record.cache_write_tokens, record.reasoning_tokens) == (3, 7)
    assert record.total_tokens == 120
    assert record.cache_hit_rate == 0.4
    assert record.usage == usage


@pytest.mark.parametrize(
    "message",
    [
        UserMessage(content="hi"),
        SystemMessage(content="be brief"),
        ToolMessage(tool_call_id="c1", content="ok"),
        CompactedMessage(content="summary"),
        {"role": "user", "content": "hi"},
    ],
    ids=["user", "system", "tool", "compacted", "dict-user"],
)
def test_usage_on_a_non_assistant_message_raises_and_writes_nothing(
    store: SessionStore, root: Path, message: object
) -> None:
    """Usage belongs only to assistant messages; on any other role it is an error."""
    store.append("s", user())
    before = read_tree(root)
    with pytest.raises(InvalidArgument):
        store.append("s", message, usage=ModelUsage(input_tokens=1))  # type: ignore[arg-type]
    assert read_tree(root) == before


def test_usage_on_a_dict_assistant_message_is_accepted(store: SessionStore) -> None:
    """A plain-dict assistant message takes usage like the class does."""
    store.append(
        "s", {"role": "assistant", "content": "x"}, usage=ModelUsage(input_tokens=2, output_tokens=3)
    )
    (record,) = store.records("s")
    assert record.total_tokens == 5


def test_record_without_usage_has_no_token_counts(store: SessionStore) -> None:
    """A record appended without usage reports None, not zero, for its tokens."""
    store.append("s", user())
    (record,) = store.records("s")
    assert record.input_tokens is None and record.total_tokens is None and record.cache_hit_rate is None
    assert record.usage is None


def test_timing_is_stored_and_untimed_records_use_their_append_time(store: SessionStore) -> None:
    """A record keeps its MessageTiming; one without gets started=completed=created_at."""
    started = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
    completed = datetime(2024, 5, 1, 12, 0, 3, tzinfo=UTC)
    timing = MessageTiming(
        started_at=started, completed_at=completed, duration_ns=3_000_000_000, reasoning_duration_ns=5
    )
    store.append("s", AssistantMessage(content="x"), timing=timing, request_id="req-1")
    store.append("s", user())
    timed, untimed = store.records("s")
    assert (timed.started_at, timed.completed_at, timed.duration_ns) == (started, completed, 3_000_000_000)
    assert timed.reasoning_duration_ns == 5
    assert timed.request_id == "req-1"
    assert untimed.started_at == untimed.completed_at == untimed.created_at
    assert untimed.updated_at == untimed.created_at
    assert untimed.session_id == "s"


def test_record_ids_are_uuid7_and_differ_from_message_ids(store: SessionStore) -> None:
    """Each record has its own UUIDv7 id, distinct from the message's id."""
    message = user()
    store.append("s", message)
    store.append("s", message)
    first, second = store.records("s")
    for record in (first, second):
        assert record.id[14] == "7" and record.id != message.id
    assert first.id < second.id


# ---------------------------------------------------------------------------------------
# Messages come back as they were appended
# ---------------------------------------------------------------------------------------


def test_dict_message_comes_back_as_an_equal_dict(store: SessionStore) -> None:
    """A plain dict comes back as an equal dict: unknown keys, big integers and all."""
    message = {
        "role": "assistant",
        "content": [{"type": "text", "text": "hé\u2028llo"}],
        "vendor_field": {"nested": [1, 2.5, None, True, "x"], "big": 2**100, "neg": -(2**70)},
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
    }
    store.append("s", message)
    (record,) = store.records("s")
    assert type(record.message) is dict
    assert record.message == message
    assert list(record.message) == list(message)
    assert store.load("s").messages == [message]


@pytest.mark.parametrize(
    "message",
    [
        SystemMessage(content="be brief"),
        UserMessage(content="hi"),
        UserMessage(content=[{"type": "text", "text": "hi"}, {"type": "image", "url": "u"}]),
        AssistantMessage(
            content="ok", reasoning="because", tool_calls=[ToolCall(id="c", name="f", arguments={"a": 1})]
        ),
        AssistantMessage(tool_calls=[ToolCall(id="c", name="f", arguments='{"raw": "json string"}')]),
        ToolMessage(tool_call_id="c", content={"result": [1, 2]}, name="f", is_error=True),
        CompactedMessage(content="summary"),
    ],
    ids=["system", "user", "user-parts", "assistant", "assistant-str-args", "tool", "compacted"],
)
def test_class_message_comes_back_as_an_equal_instance_of_its_class(
    store: SessionStore, message: object
) -> None:
    """A message class instance comes back as that class, equal field by field (id included)."""
    store.append("s", message)  # type: ignore[arg-type]
    (record,) = store.records("s")
    assert type(record.message) is type(message)
    assert record.message == message
    assert store.load("s").raw_tail[0].message == message


def test_record_message_survives_a_new_store_object(store: SessionStore, root: Path) -> None:
    """What one store wrote, another store reads back unchanged."""
    messages: list[Message] = [
        user("a"),
        {"role": "user", "content": "b", "x": 1},
        AssistantMessage(content="c"),
    ]
    store.append_many("s", messages)
    again = SessionStore(root, durability="none")
    assert [r.message for r in again.records("s")] == messages


def test_persist_false_is_not_written_and_returns_zero(store: SessionStore, root: Path) -> None:
    """A message with persist=False is never written; append returns 0 and creates nothing."""
    assert store.append("s", user(persist=False)) == 0
    assert store.append("s", {"role": "user", "content": "x", "persist": False}) == 0
    assert not root.exists()
    assert store.append("s", user("kept")) == 1
    before = read_tree(root)
    assert store.append("s", user(persist=False)) == 0
    assert read_tree(root) == before
    assert store.append_many("s", [user(persist=False), user("b"), user(persist=False), user("c")]) == [
        0,
        2,
        0,
        3,
    ]
    assert [r.message.content for r in store.records("s")] == ["kept", "b", "c"]  # type: ignore[union-attr]


def test_include_in_messages_false_is_stored_but_left_out_of_the_view(store: SessionStore) -> None:
    """include_in_messages=False: the record is in the raw log and tail, not in view.messages."""
    hidden = user("hidden", include_in_messages=False)
    hidden_dict = {"role": "user", "content": "hidden too", "include_in_messages": False}
    shown = user("shown")
    store.append_many("s", [hidden, shown, hidden_dict])
    assert [r.message for r in store.records("s")] == [hidden, shown, hidden_dict]
    view = store.load("s")
    assert [r.message for r in view.raw_tail] == [hidden, shown, hidden_dict]
    assert view.messages == [shown]
    assert view.context == [shown]


# ---------------------------------------------------------------------------------------
# append_many
# ---------------------------------------------------------------------------------------


def test_append_many_returns_consecutive_sequences(store: SessionStore) -> None:
    """A batch gets consecutive sequences that continue the log."""
    store.append("s", user())
    assert store.append_many("s", [user(), user(), user()]) == [2, 3, 4]
    assert store.append_many("s", [user()]) == [5]
    assert sequences(store, "s") == [1, 2, 3, 4, 5]


def test_append_many_of_nothing_returns_empty_and_creates_nothing(store: SessionStore, root: Path) -> None:
    """An empty batch returns [] and touches no file."""
    assert store.append_many("s", []) == []
    assert not root.exists()


def test_append_many_is_one_write_of_whole_lines(store: SessionStore, root: Path) -> None:
    """A batch's records land as whole lines, each a complete checksummed record."""
    store.append_many("s", [user(str(i)) for i in range(4)])
    lines = json_lines(log_path(root, "s").read_bytes())
    assert [line["sequence"] for line in lines] == [1, 2, 3, 4]
    assert all(list(line)[-1] == "crc" for line in lines)


@pytest.mark.parametrize("bad_index", [0, 1, 2])
def test_append_many_with_one_bad_message_writes_nothing(
    store: SessionStore, root: Path, bad_index: int
) -> None:
    """All or nothing: one unencodable message anywhere in a batch fails the whole batch."""
    store.append("s", user())
    batch: list[object] = [user("a"), user("b"), user("c")]
    batch[bad_index] = {"role": "user", "content": float("nan")}
    before = read_tree(root)
    with pytest.raises(JsonlStoreError) as info:
        store.append_many("s", batch)  # type: ignore[arg-type]
    assert isinstance(info.value, ValueError)
    assert read_tree(root) == before
    assert store.append("s", user()) == 2


def test_append_many_with_usage_on_a_user_message_writes_nothing(store: SessionStore, root: Path) -> None:
    """A per-message usage on a non-assistant message fails the whole batch."""
    store.append("s", user())
    before = read_tree(root)
    with pytest.raises(InvalidArgument):
        store.append_many(
            "s", [AssistantMessage(content="a"), user()], usage=[None, ModelUsage(input_tokens=1)]
        )
    assert read_tree(root) == before


def test_append_many_single_usage_goes_to_the_only_assistant_message(store: SessionStore) -> None:
    """One ModelUsage for a batch lands on its only assistant message."""
    store.append_many(
        "s",
        [user(), AssistantMessage(content="a"), ToolMessage(tool_call_id="x")],
        usage=ModelUsage(input_tokens=9),
    )
    records = list(store.records("s"))
    assert [r.input_tokens for r in records] == [None, 9, None]


def test_append_many_single_usage_needs_exactly_one_assistant(store: SessionStore) -> None:
    """A single usage with zero or two assistant messages in the batch is ambiguous: refused."""
    with pytest.raises(InvalidArgument):
        store.append_many("s", [user()], usage=ModelUsage(input_tokens=1))
    with pytest.raises(InvalidArgument):
        store.append_many(
            "s",
            [AssistantMessage(content="a"), AssistantMessage(content="b")],
            usage=ModelUsage(input_tokens=1),
        )


def test_append_many_per_message_lists_must_match_the_batch_length(store: SessionStore) -> None:
    """Per-message timing or usage lists of the wrong length are refused."""
    with pytest.raises(InvalidArgument):
        store.append_many("s", [user(), user()], usage=[None])
    with pytest.raises(InvalidArgument):
        store.append_many("s", [user()], timing=[None, None])


@pytest.mark.parametrize("messages", [{"role": "user", "content": "x"}, "text", b"bytes", 7])
def test_append_many_refuses_a_non_sequence(store: SessionStore, messages: object) -> None:
    """append_many takes a sequence of messages, not one message or a string."""
    with pytest.raises(InvalidArgument):
        store.append_many("s", messages)  # type: ignore[arg-type]


def test_metadata_and_tags_are_stored_on_every_record_of_a_batch(store: SessionStore) -> None:
    """Request-scoped metadata and tags are kept on each record as given."""
    store.append_many(
        "s", [user(), user()], metadata={"k": [1, {"n": 2**80}]}, tags={"kind": "probe"}, request_id="r"
    )
    for record in store.records("s"):
        assert record.metadata == {"k": [1, {"n": 2**80}]}
        assert record.tags == {"kind": "probe"}
        assert record.request_id == "r"


# ---------------------------------------------------------------------------------------
# load and records
# ---------------------------------------------------------------------------------------


def test_load_of_an_unknown_session_is_an_empty_view(store: SessionStore, root: Path) -> None:
    """load() of a session never written gives an empty view and creates nothing."""
    view = store.load("nobody")
    assert not view.exists
    assert (view.raw_tail, view.messages, view.snapshot, view.problems, view.last_sequence) == (
        [],
        [],
        None,
        [],
        0,
    )
    assert view.session_id == "nobody"
    store.append("other", user())
    assert store.load("nobody").raw_tail == []
    assert not (root / "nobody").exists()


def test_load_gives_every_record_as_the_tail_without_a_snapshot(store: SessionStore) -> None:
    """Without a snapshot the tail is the whole raw log."""
    messages = [SystemMessage(content="s"), user("u"), AssistantMessage(content="a")]
    store.append_many("s", messages)
    view = store.load("s")
    assert view.exists and view.last_sequence == 3
    assert [r.sequence for r in view.raw_tail] == [1, 2, 3]
    assert view.messages == messages


def test_records_after_streams_only_later_records(store: SessionStore) -> None:
    """records(after=n) yields exactly the records with a sequence above n."""
    store.append_many("s", [user(str(i)) for i in range(6)])
    assert sequences(store, "s") == [1, 2, 3, 4, 5, 6]
    assert [r.sequence for r in store.records("s", after=0)] == [1, 2, 3, 4, 5, 6]
    assert [r.sequence for r in store.records("s", after=4)] == [5, 6]
    assert [r.sequence for r in store.records("s", after=6)] == []
    assert [r.sequence for r in store.records("s", after=100)] == []


def test_records_after_a_snapshot_boundary_still_yields_everything_asked_for(store: SessionStore) -> None:
    """records(after=) is the same whether or not a snapshot covers part of the log."""
    store.append_many("s", [user(str(i)) for i in range(6)])
    store.snapshot("s", CompactedMessage(content="c"), 3, 0)
    assert sequences(store, "s") == [1, 2, 3, 4, 5, 6]
    for after in range(8):
        assert [r.sequence for r in store.records("s", after=after)] == list(range(after + 1, 7))


@pytest.mark.parametrize("after", [-1, 1.5, "2", None, True])
def test_records_with_a_bad_after_raises_invalid_argument(store: SessionStore, after: object) -> None:
    """after must be a non-negative int."""
    with pytest.raises(InvalidArgument):
        store.records("s", after=after)  # type: ignore[arg-type]


def test_records_of_an_unknown_session_is_empty(store: SessionStore) -> None:
    """records() of a session never written yields nothing."""
    assert list(store.records("nobody")) == []


def test_records_is_a_lazy_iterator_that_can_stop_early(store: SessionStore) -> None:
    """records() streams: taking the first record and closing the iterator is fine."""
    store.append_many("s", [user(str(i)) for i in range(50)])
    iterator = store.records("s")
    first = next(iterator)
    assert isinstance(first, RawMessageRecord) and first.sequence == 1
    iterator.close()  # type: ignore[attr-defined]
    assert store.append("s", user()) == 51


# ---------------------------------------------------------------------------------------
# list_sessions and get_session
# ---------------------------------------------------------------------------------------


def test_list_sessions_is_newest_activity_first(store: SessionStore) -> None:
    """Sessions are listed by their latest append, newest first."""
    store.append("a", user())
    store.append("b", user())
    store.append("c", user())
    store.append("a", user())
    assert [s.session_id for s in store.list_sessions()] == ["a", "c", "b"]


def test_list_sessions_filters_by_parent(store: SessionStore) -> None:
    """parent_session_id= lists only that session's children."""
    store.append("p", user())
    store.append("q", user())
    store.append("c1", user(), parent_session_id="p")
    store.append("c2", user(), parent_session_id="q")
    store.append("c3", user(), parent_session_id="p")
    assert [s.session_id for s in store.list_sessions(parent_session_id="p")] == ["c3", "c1"]
    assert [s.session_id for s in store.list_sessions(parent_session_id="q")] == ["c2"]
    assert store.list_sessions(parent_session_id="nobody") == []
    assert {s.session_id for s in store.list_sessions()} == {"p", "q", "c1", "c2", "c3"}


def test_list_sessions_of_a_missing_root_is_empty(store: SessionStore, root: Path) -> None:
    """A store whose root does not exist lists no sessions and creates nothing."""
    assert store.list_sessions() == []
    assert not root.exists()


def test_list_sessions_ignores_foreign_entries_below_the_root(store: SessionStore, root: Path) -> None:
    """Files, hidden entries and empty directories below the root are not sessions."""
    store.append("real", user())
    (root / "notes.txt").write_text("hello")
    (root / ".hidden").mkdir()
    (root / "empty").mkdir()
    assert [s.session_id for s in store.list_sessions()] == ["real"]


def test_get_session_of_an_unknown_session_is_none(store: SessionStore, root: Path) -> None:
    """get_session() of a session never written is None, and creates nothing."""
    assert store.get_session("nobody") is None
    store.append("other", user())
    assert store.get_session("nobody") is None
    assert not (root / "nobody").exists()


def test_get_session_counts_messages_and_tracks_times(store: SessionStore) -> None:
    """A summary carries the message count, creation time and latest append time."""
    store.append("s", user(), title="t")
    first = store.get_session("s")
    store.append_many("s", [user(), user()])
    summary = store.get_session("s")
    assert isinstance(summary, SessionSummary) and first is not None
    assert summary.message_count == 3
    assert summary.created_at == first.created_at
    last = list(store.records("s"))[-1]
    assert summary.updated_at == last.created_at >= summary.created_at
    assert summary.title == "t" and summary.pinned is False and summary.metadata == {}


# ---------------------------------------------------------------------------------------
# delete_session
# ---------------------------------------------------------------------------------------


def test_delete_session_removes_it_everywhere(store: SessionStore, root: Path) -> None:
    """After delete_session the session is gone from load, records, get and list."""
    store.append_many("s", [user(), AssistantMessage(content="a")])
    store.snapshot("s", CompactedMessage(content="c"), 1, 0)
    store.record_usage("s", ModelUsage(input_tokens=3))
    store.update_session("s", title="renamed")
    store.append("keep", user())
    assert store.delete_session("s") is True
    assert not store.load("s").exists
    assert list(store.records("s")) == []
    assert store.get_session("s") is None
    assert [s.session_id for s in store.list_sessions()] == ["keep"]
    assert list(store.usage("s")) == []
    # The whole directory goes, lock file included (renamed away first: spec §9.5), and
    # nothing of it stays in the root.
    assert not (root / "s").exists()
    assert sorted(os.listdir(root)) == [".gitattributes", ".gitignore", "keep"]


def test_delete_session_clears_what_a_crashed_delete_of_the_same_id_left(
    store: SessionStore, root: Path
) -> None:
    """A delete cut short left `.s.deleted` holding files: the next delete of 's' clears it and renames its own there."""
    store.append("s", user())
    left = root / ".s.deleted"
    (left / "blobs").mkdir(parents=True)
    (left / "blobs" / ("a" * 64)).write_bytes(b"old blob")
    (left / LOG_NAME).write_bytes(b"old records\n")
    assert store.delete_session("s") is True
    assert sorted(os.listdir(root)) == [".gitattributes", ".gitignore"]


def test_first_write_to_a_session_clears_what_a_crashed_delete_of_it_left(
    store: SessionStore, root: Path
) -> None:
    """The leftover of a delete cut short goes with the first write to that id, and none of it is read."""
    left = root / ".s.deleted"
    left.mkdir(parents=True)
    (left / META_NAME).write_bytes(b"{}")
    assert store.append("s", user()) == 1
    assert not left.exists()
    assert [s.session_id for s in store.list_sessions()] == ["s"]


def test_delete_session_twice_or_of_an_unknown_session_returns_false(store: SessionStore, root: Path) -> None:
    """Deleting what is not there returns False and creates nothing."""
    assert store.delete_session("nobody") is False
    assert not root.exists()
    store.append("s", user())
    assert store.delete_session("s") is True
    assert store.delete_session("s") is False


def test_delete_leaves_a_directory_holding_only_the_lock_of_a_session_being_made(
    store: SessionStore, root: Path
) -> None:
    """A directory with nothing but .lock is a session another process is making: no session, left in place."""
    (root / "making").mkdir(parents=True)
    (root / "making" / ".lock").write_bytes(b"")
    assert store.delete_session("making") is False
    assert sorted(p.name for p in (root / "making").iterdir()) == [".lock"]
    store.append("making", user())
    assert [r.sequence for r in store.records("making")] == [1]


def test_session_recreated_after_delete_starts_at_sequence_one(store: SessionStore, root: Path) -> None:
    """A session appended to after its deletion starts afresh at sequence 1 with new metadata."""
    store.append_many("s", [user(), user()], title="old")
    store.delete_session("s")
    assert store.append("s", user("new"), title="new") == 1
    summary = store.get_session("s")
    assert summary is not None and summary.title == "new" and summary.message_count == 1


def test_session_recreated_by_another_store_after_delete_gets_fresh_metadata(root: Path) -> None:
    """A store that had a session open and appends after another store deleted it writes fresh metadata."""
    a = SessionStore(root, durability="none")
    b = SessionStore(root, durability="none")
    b.append("s", user(), title="old", parent_session_id="p")
    old = b.get_session("s")
    assert a.delete_session("s") is True
    assert b.append("s", user("new"), title="new") == 1
    summary = a.get_session("s")
    assert summary is not None and old is not None
    assert summary.title == "new"
    assert summary.parent_session_id is None
    assert summary.created_at > old.created_at


def test_session_recreated_by_another_store_after_delete_may_take_a_new_parent(root: Path) -> None:
    """A deleted session is gone: re-creating it through a store that had it open takes any parent."""
    a = SessionStore(root, durability="none")
    b = SessionStore(root, durability="none")
    b.append("s", user(), parent_session_id="p1")
    a.delete_session("s")
    assert b.append("s", user(), parent_session_id="p2") == 1
    summary = a.get_session("s")
    assert summary is not None and summary.parent_session_id == "p2"


def test_record_usage_after_another_store_deleted_the_session_recreates_it(root: Path) -> None:
    """record_usage after a delete by another store makes a fresh, visible session."""
    a = SessionStore(root, durability="none")
    b = SessionStore(root, durability="none")
    b.append("s", user(), title="old", parent_session_id="p")
    b.record_usage("s", ModelUsage(input_tokens=1))
    old = a.get_session("s")
    a.delete_session("s")
    b.record_usage("s", ModelUsage(input_tokens=5))
    assert a.usage_totals("s") == ModelUsage(input_tokens=5)
    summary = a.get_session("s")
    assert summary is not None and old is not None
    assert (summary.title, summary.parent_session_id, summary.message_count) == (None, None, 0)
    assert summary.created_at > old.created_at


def test_another_store_appends_after_delete_start_at_sequence_one(root: Path) -> None:
    """A store holding the log open sees a delete by another store and starts at sequence 1."""
    a = SessionStore(root, durability="none")
    b = SessionStore(root, durability="none")
    b.append_many("s", [user(), user(), user()])
    a.delete_session("s")
    assert b.append("s", user("again")) == 1
    assert [r.message.content for r in a.records("s")] == ["again"]  # type: ignore[union-attr]


# ---------------------------------------------------------------------------------------
# Files: .gitignore, no absolute paths, newline-only lines
# ---------------------------------------------------------------------------------------


def _busy_session_with_local_state(store: SessionStore, root: Path) -> None:
    """A session with history files plus every kind of local-state file next to them."""
    store.append("s", user())
    store.append("s.tmp", user())  # a session whose id looks like a temporary file
    store.snapshot("s", CompactedMessage(content="c"), 1, 0)
    store.update_session("s", title="t")  # takes the session lock: .lock
    store.record_usage("s", ModelUsage(input_tokens=1))
    with log_path(root, "s").open("ab") as log:
        log.write(b'{"torn')
    store.append("s", user())  # cuts the torn tail into a .cut- sidecar
    (root / "s" / "meta.json.0193abcd.tmp").write_bytes(b"")
    (root / "s" / "snapshot-00000009.json.damaged").write_bytes(b"")


def test_gitignore_at_the_root_ignores_lock_temp_cut_and_damaged_files(
    store: SessionStore, root: Path
) -> None:
    """The root .gitignore covers every local-state file, and no history file or session directory."""
    _busy_session_with_local_state(store, root)
    patterns = (root / GITIGNORE_NAME).read_text().splitlines()
    ignored = {
        path for path, data in read_tree(root).items() if data is not None and gitignored(patterns, path)
    }
    names = {os.path.basename(p) for p in ignored}
    assert (
        LOCK_NAME in names and "meta.json.0193abcd.tmp" in names and "snapshot-00000009.json.damaged" in names
    )
    assert any(".cut-" in n for n in names)
    for path, data in read_tree(root).items():
        if data is not None and path not in ignored:
            assert os.path.basename(path) in {
                LOG_NAME,
                META_NAME,
                "usage.jsonl",
                GITIGNORE_NAME,
                ".gitattributes",
            } or (os.path.basename(path).startswith("snapshot-") and path.endswith(".json")), path


@pytest.mark.skipif(shutil.which("git") is None, reason="needs the git command")
def test_git_would_commit_exactly_the_history_files(store: SessionStore, root: Path) -> None:
    """git itself, honouring the store's .gitignore, sees history files only."""
    _busy_session_with_local_state(store, root)
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", "init", "-q", str(root)], check=True, env=env)
    listed = subprocess.run(
        ["git", "-C", str(root), "ls-files", "--others", "--exclude-standard"],
        check=True, env=env, capture_output=True, text=True,
    ).stdout.split()  # fmt: skip
    assert sorted(listed) == sorted(
        [
            GITIGNORE_NAME, ".gitattributes",
            "s/messages.jsonl", "s/meta.json", "s/snapshot-00000001.json", "s/usage.jsonl",
            "s.tmp/messages.jsonl", "s.tmp/meta.json",
        ]
    )  # fmt: skip


def test_gitignore_is_not_rewritten_once_it_exists(root: Path) -> None:
    """A .gitignore the user edited is left as it is."""
    root.mkdir()
    (root / GITIGNORE_NAME).write_text("mine\n")
    SessionStore(root, durability="none").append("s", user())
    assert (root / GITIGNORE_NAME).read_text() == "mine\n"


def test_no_written_file_holds_an_absolute_path(store: SessionStore, root: Path, tmp_path: Path) -> None:
    """No byte of any file the store writes names the directory it lives in."""
    store.append("p", user())
    store.append_many("s", [user(), AssistantMessage(content="a")], parent_session_id="p", title="t")
    store.snapshot("s", CompactedMessage(content="c"), 1, 0)
    store.update_session("s", title="t2", pinned=True, metadata={"k": 1})
    store.record_usage("s", {"input_tokens": 1, "model": "m"})
    store.checkpoint("s", [user("x")])
    with log_path(root, "s").open("ab") as log:
        log.write(b'{"torn')
    store.append("s", user())
    assert any(".cut-" in name for name in os.listdir(root / "s"))
    needles = {str(tmp_path).encode(), os.path.realpath(tmp_path).encode(), str(root).encode()}
    for name, data in read_tree(tmp_path).items():
        if data is not None:
            for needle in needles:
                assert needle not in data, name


def test_log_splits_on_newline_only(store: SessionStore, root: Path) -> None:
    """U+2028, U+2029, CR, NUL, NEL and form feeds inside a message do not split the line."""
    nasty = "a\u2028b\u2029c\rd\x00e\x85f\x0bg\x0ch\x1ci\x1dj\x1ek\r\nl\nm"
    messages: list[Message] = [user(nasty), {"role": "user", "content": nasty, nasty: nasty}, user("plain")]
    store.append_many("s", messages)
    data = log_path(root, "s").read_bytes()
    assert data.count(b"\n") == 3
    assert [r.message for r in store.records("s")] == messages
    assert [r.message for r in SessionStore(root, durability="none").load("s").raw_tail] == messages


def test_every_log_line_is_plain_json_with_sequence_first_and_crc_last(
    store: SessionStore, root: Path
) -> None:
    """Each line of the raw log parses as JSON on its own: sequence first, crc last."""
    store.append_many("s", [user("a"), {"role": "user", "content": "b"}, AssistantMessage(content="c")])
    for number, line in enumerate(json_lines(log_path(root, "s").read_bytes()), start=1):
        keys = list(line)
        assert keys[0] == "sequence" and keys[-1] == "crc"
        assert line["sequence"] == number
        assert "session_id" not in line


def test_meta_file_is_pretty_json_with_a_final_newline(store: SessionStore, root: Path) -> None:
    """meta.json is indented JSON ending in a newline (one field per line for git diffs)."""
    store.append("s", user(), title="t")
    data = meta_path(root, "s").read_bytes()
    assert data.endswith(b"}\n")
    assert b'\n  "title": "t",\n' in data
    assert orjson.loads(data)["format"] == 1


def test_problems_go_to_on_problem_not_exceptions(
    store: SessionStore, root: Path, problems: list[Problem]
) -> None:
    """Damage met while reading goes to on_problem; the read itself succeeds."""
    store.append_many("s", [user("a"), user("b"), user("c")])
    path = log_path(root, "s")
    data = path.read_bytes()
    second = data.index(b"\n") + 1
    path.write_bytes(data[:second] + b"junk line\n" + data[second:])
    assert [r.sequence for r in store.records("s")] == [1, 2, 3]
    assert [p.kind for p in problems] == ["damaged-line"]


def test_nested_root_made_while_another_process_makes_its_parent() -> None:
    """A store root whose parent another process creates at the same moment is still made whole."""
    from jsonl_store.testing import SimulatedFileSystem

    class RacingFileSystem(SimulatedFileSystem):
        raced = False

        def mkdir(self, path: str, mode: int = 0o777) -> None:
            if path == "/r/a" and not self.raced:
                self.raced = True
                super().mkdir(path, mode)  # the other process wins: ours gets EEXIST
            super().mkdir(path, mode)

    fs = RacingFileSystem()
    fs.makedirs("/r")
    store = SessionStore("/r/a/b", fs=fs)
    assert store.append("s", user()) == 1
    assert fs.raced and [r.sequence for r in store.records("s")] == [1]


def test_loading_many_sessions_never_closes_a_writer_the_store_holds(root: Path) -> None:
    """Reads open nothing for writing: 200 loads leave the writer of another session open."""
    store = SessionStore(root)
    for n in range(200):
        SessionStore(root).append(f"read-{n}", UserMessage(content="x"))
    store.append("writer", UserMessage(content="first"))
    writer = store._handles._sessions["writer"].log  # the descriptor cache under test
    assert writer is not None and writer.fd >= 0
    fd = writer.fd
    for n in range(200):
        store.load(f"read-{n}")
    assert list(store._handles._sessions) == ["writer"]
    assert writer.fd == fd  # still open: the next append reads nothing again
    assert store.append("writer", UserMessage(content="second")) == 2
