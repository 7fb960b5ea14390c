"""Unit tests for the record types: derived properties, ModelUsage sums, SessionView, UUIDv7 ids."""

from __future__ import annotations

import os
import time
import uuid
from datetime import UTC, datetime

import pytest

from jsonl_store import (
    AssistantMessage,
    CompactedMessage,
    ContextSnapshot,
    ModelUsage,
    RawMessageRecord,
    SessionView,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from jsonl_store._format.ids import new_uuid7

NOW = datetime(2024, 5, 1, tzinfo=UTC)


def raw(sequence: int, message: object, **fields: object) -> RawMessageRecord:
    """A record as the store gives it back."""
    return RawMessageRecord(sequence=sequence, id=f"r{sequence}", created_at=NOW, message=message, **fields)  # type: ignore[arg-type]


def test_total_tokens_and_cache_hit_rate() -> None:
    """total_tokens is input plus output; cache_hit_rate is cache reads over input."""
    record = raw(1, None, input_tokens=200, output_tokens=50, cache_read_tokens=150)
    assert record.total_tokens == 250
    assert record.cache_hit_rate == 0.75
    assert record.updated_at == record.created_at


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"input_tokens": 10},
        {"output_tokens": 10},
        {"input_tokens": 0, "output_tokens": 1, "cache_read_tokens": 0},
    ],
)
def test_derived_token_properties_are_none_without_the_counts(fields: dict[str, int]) -> None:
    """Without both counts there is no total; without input or cache reads there is no hit rate."""
    record = raw(1, None, **fields)
    if "input_tokens" not in fields or "output_tokens" not in fields:
        assert record.total_tokens is None
    if not fields.get("input_tokens") or "cache_read_tokens" not in fields:
        assert record.cache_hit_rate is None


def test_model_usage_adds_field_by_field() -> None:
    """ModelUsage + ModelUsage sums every count; total_tokens is input plus output."""
    a = ModelUsage(
        input_tokens=1, output_tokens=2, cache_read_tokens=3, cache_write_tokens=4, reasoning_tokens=5
    )
    b = ModelUsage(
        input_tokens=10, output_tokens=20, cache_read_tokens=30, cache_write_tokens=40, reasoning_tokens=50
    )
    assert a + b == ModelUsage(
        input_tokens=11, output_tokens=22, cache_read_tokens=33, cache_write_tokens=44, reasoning_tokens=55
    )
    assert (a + b).total_tokens == 33
    assert a + ModelUsage() == a
    with pytest.raises(TypeError):
        a + 1  # type: ignore[operator]


def test_empty_view_is_not_a_session() -> None:
    """A view with no snapshot and no tail does not exist and has sequence 0."""
    view = SessionView(session_id="s")
    assert not view.exists and view.last_sequence == 0 and view.messages == [] and view.context == []


def test_view_context_puts_the_compacted_message_first_and_drops_hidden_ones() -> None:
    """context is the compacted message then the tail, include_in_messages only."""
    summary = CompactedMessage(content="sum")
    shown, hidden = UserMessage(content="a"), UserMessage(content="b", include_in_messages=False)
    snapshot = ContextSnapshot(
        version=1, id="x", created_at=NOW, compacted_through_sequence=4, boundary_offset=0, tail_offset=10,
        boundary_record_id="r4", compacted_message=summary,
    )  # fmt: skip
    view = SessionView(session_id="s", snapshot=snapshot, raw_tail=[raw(5, shown), raw(6, hidden)])
    assert view.context == [summary, shown]
    assert view.messages == [summary, shown]
    assert view.last_sequence == 6 and view.exists
    assert SessionView(session_id="s", snapshot=snapshot).last_sequence == 4


def test_view_messages_repair_an_interrupted_tool_batch_mid_history() -> None:
    """messages drops an unanswered tool batch in the middle and keeps the last one as it is."""
    first = AssistantMessage(tool_calls=[ToolCall(id="c1", name="f")])
    later = UserMessage(content="next")
    last = AssistantMessage(tool_calls=[ToolCall(id="c2", name="f"), ToolCall(id="c3", name="g")])
    answer = ToolMessage(tool_call_id="c2", content="ok")
    view = SessionView(session_id="s", raw_tail=[raw(1, first), raw(2, later), raw(3, last), raw(4, answer)])
    assert view.messages == [later, last, answer]
    closed = view.model_context()
    assert closed[:3] == [later, last, answer] and len(closed) == 4
    assert isinstance(closed[3], ToolMessage) and closed[3].tool_call_id == "c3" and closed[3].is_error


def test_message_ids_are_unique_uuid7_by_default() -> None:
    """Each message gets its own UUIDv7 id unless one is given."""
    a, b = UserMessage(content="x"), UserMessage(content="x")
    assert a.id != b.id
    assert uuid.UUID(a.id).version == 7
    assert UserMessage(content="x", id="mine").id == "mine"


def test_uuid7_ids_sort_in_creation_order() -> None:
    """Ids made one after another sort in the order they were made (RFC 9562 method 1)."""
    ids = [new_uuid7() for _ in range(5000)]
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    parsed = uuid.UUID(ids[0])
    assert parsed.version == 7 and parsed.variant == uuid.RFC_4122


def test_uuid7_ids_sort_past_4096_in_one_millisecond(monkeypatch: pytest.MonkeyPatch) -> None:
    """More than 4,096 ids in one millisecond (or a clock that stands still) still sort and differ."""
    stopped = time.time_ns()
    monkeypatch.setattr(time, "time_ns", lambda: stopped)
    ids = [new_uuid7() for _ in range(3 * 4096)]
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    assert all(str(uuid.UUID(i)) == i and uuid.UUID(i).version == 7 for i in ids)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_uuid7_ids_of_a_forked_child_differ_from_its_parents() -> None:
    """A child made by fork draws its own random bits: no id of the child equals one of the parent."""
    new_uuid7()  # the parent has random tails in hand before the fork
    read_end, write_end = os.pipe()
    pid = os.fork()
    ids = [new_uuid7() for _ in range(600)]
    if pid == 0:  # pragma: no cover (the child)
        os.write(write_end, " ".join(ids).encode())
        os._exit(0)
    os.close(write_end)
    os.waitpid(pid, 0)
    with os.fdopen(read_end, "rb") as pipe:
        child = pipe.read().decode().split()
    assert len(child) == 600
    assert not set(child) & set(ids)
