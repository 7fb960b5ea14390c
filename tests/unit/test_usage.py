"""Scenario tests for the token-usage log: record_usage, usage, usage_totals."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import json_lines, read_tree, usage_path

from jsonl_store import (
    AssistantMessage,
    InvalidArgument,
    InvalidMessage,
    ModelUsage,
    SessionStore,
    UserMessage,
)


def test_record_usage_appends_one_line_per_call_and_usage_gives_them_back(
    store: SessionStore, root: Path
) -> None:
    """Each record_usage is one checksummed line; usage() yields them oldest first as dicts."""
    store.record_usage("s", ModelUsage(input_tokens=3, output_tokens=2, cache_read_tokens=1))
    store.record_usage(
        "s", {"input_tokens": 5, "model": "m-1", "request_id": "r1", "latency_ms": 12, "x": {"a": [1]}}
    )
    items = list(store.usage("s"))
    assert [(i["input_tokens"], i.get("output_tokens", 0), i.get("model")) for i in items] == [
        (3, 2, None),
        (5, 0, "m-1"),
    ]
    assert items[1]["request_id"] == "r1"
    assert items[1]["extra"] == {"latency_ms": 12, "x": {"a": [1]}}
    assert all("recorded_at" in i and "crc" not in i for i in items)
    assert len(json_lines(usage_path(root, "s").read_bytes())) == 2


def test_usage_totals_sums_every_call(store: SessionStore) -> None:
    """usage_totals is the field-wise sum of the usage log."""
    store.record_usage(
        "s",
        ModelUsage(
            input_tokens=1, output_tokens=2, cache_read_tokens=3, cache_write_tokens=4, reasoning_tokens=5
        ),
    )
    store.record_usage(
        "s",
        ModelUsage(
            input_tokens=10,
            output_tokens=20,
            cache_read_tokens=30,
            cache_write_tokens=40,
            reasoning_tokens=50,
        ),
    )
    store.record_usage("s", {"output_tokens": 100})
    assert store.usage_totals("s") == ModelUsage(
        input_tokens=11, output_tokens=122, cache_read_tokens=33, cache_write_tokens=44, reasoning_tokens=55
    )
    assert store.usage_totals("s").total_tokens == 133


def test_usage_of_an_unknown_session_is_empty(store: SessionStore, root: Path) -> None:
    """usage() and usage_totals() of a session never written are empty and create nothing."""
    assert list(store.usage("nobody")) == []
    assert store.usage_totals("nobody") == ModelUsage()
    assert not root.exists()


def test_usage_log_is_separate_from_the_raw_log(store: SessionStore) -> None:
    """Recording usage adds no record to the raw log, and usage on records is not in the usage log."""
    store.append("s", UserMessage(content="x"))
    store.record_usage("s", ModelUsage(input_tokens=7))
    assert [r.sequence for r in store.records("s")] == [1]
    assert store.append("s", UserMessage(content="y")) == 2
    assert store.usage_totals("s") == ModelUsage(input_tokens=7)


def test_record_usage_on_a_new_session_creates_it_empty(store: SessionStore) -> None:
    """Usage recorded before any message makes a session with no records."""
    store.record_usage("s", ModelUsage(input_tokens=1))
    summary = store.get_session("s")
    assert summary is not None and summary.message_count == 0
    assert store.append("s", UserMessage(content="x")) == 1


def test_two_stores_record_usage_into_one_log(root: Path) -> None:
    """Usage recorded through two store objects lands in one log, nothing lost."""
    a = SessionStore(root, durability="none")
    b = SessionStore(root, durability="none")
    for i in range(5):
        (a if i % 2 else b).record_usage("s", ModelUsage(input_tokens=1))
    assert a.usage_totals("s") == ModelUsage(input_tokens=5)


@pytest.mark.parametrize(
    ("record", "error"),
    [
        ({"input_tokens": "x"}, InvalidArgument),
        ({"input_tokens": 1.5}, InvalidArgument),
        ({"input_tokens": True}, InvalidArgument),
        ({"model": 5}, InvalidArgument),
        ({"extra_value": float("nan")}, InvalidMessage),
        ({"extra_value": (1, 2)}, TypeError),
        (5, InvalidArgument),
        ("input_tokens=1", InvalidArgument),
    ],
)
def test_bad_usage_record_raises_and_writes_nothing(
    store: SessionStore, root: Path, record: object, error: type[Exception]
) -> None:
    """A usage record that does not fit is refused with a typed error; the log is unchanged."""
    store.record_usage("s", ModelUsage(input_tokens=1))
    before = read_tree(root)
    with pytest.raises(error):
        store.record_usage("s", record)  # type: ignore[arg-type]
    assert read_tree(root) == before


def test_damaged_line_in_the_usage_log_is_skipped(store: SessionStore, root: Path) -> None:
    """A damaged usage line in the middle is skipped; the totals count the rest."""
    for n in (1, 2, 4):
        store.record_usage("s", ModelUsage(input_tokens=n))
    data = usage_path(root, "s").read_bytes()
    first_end = data.index(b"\n") + 1
    usage_path(root, "s").write_bytes(data[:first_end] + b"junk" + data[first_end + 4 :])
    assert store.usage_totals("s") == ModelUsage(input_tokens=5)


def test_usage_given_with_records_counts_in_the_totals(store: SessionStore) -> None:
    """Tokens passed as append(usage=...) are counted by usage_totals, as the usage log's are."""
    store.append("s", AssistantMessage(content="a"), usage=ModelUsage(input_tokens=10, output_tokens=2))
    store.record_usage("s", ModelUsage(input_tokens=1, output_tokens=1))
    assert store.usage_totals("s") == ModelUsage(input_tokens=11, output_tokens=3)
    assert [c["source"] for c in store.model_calls("s")] == ["usage log", "record 1"]


def test_a_call_recorded_both_ways_counts_once(store: SessionStore) -> None:
    """A record and a usage-log line with the same request_id are one model call: the log's line counts."""
    store.append("s", AssistantMessage(content="a"), usage=ModelUsage(input_tokens=10), request_id="req-1")
    store.record_usage("s", {"input_tokens": 10, "request_id": "req-1", "model": "m"})
    store.append("s", AssistantMessage(content="b"), usage=ModelUsage(input_tokens=7), request_id="req-2")
    assert store.usage_totals("s").input_tokens == 17
    calls = store.model_calls("s")
    assert [(c["source"], c["model"], c["request_id"]) for c in calls] == [
        ("usage log", "m", "req-1"),
        ("record 2", None, "req-2"),
    ]


def test_a_records_model_comes_from_its_metadata(store: SessionStore) -> None:
    """model_calls names a record's model from metadata["model"], and None where it has none."""
    store.append(
        "m", AssistantMessage(content="a"), usage=ModelUsage(input_tokens=3), metadata={"model": "m-1"}
    )
    store.append("m", AssistantMessage(content="b"), usage=ModelUsage(input_tokens=4), metadata={"model": 7})
    assert [c["model"] for c in store.model_calls("m")] == ["m-1", None]
