"""`usage_report`: model calls summed by session, UTC day, UTC month, model or project, and priced."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from jsonl_store import (
    AssistantMessage,
    InvalidArgument,
    ModelUsage,
    SessionNotFound,
    SessionStore,
    UsageRow,
    UserMessage,
    _prices,
    usage_report,
)
from jsonl_store._format import codec as _codec

JUNE_1 = datetime(2025, 6, 1, 23, 30, tzinfo=UTC)
JUNE_2 = datetime(2025, 6, 2, 0, 30, tzinfo=UTC)
JULY_1 = datetime(2025, 7, 1, 12, 0, tzinfo=UTC)


def reply(store: SessionStore, sid: str, when: datetime, model: str | None, usage: ModelUsage) -> None:
    """An assistant record with its call's usage, as importers and adapters write it."""
    store.append(sid, UserMessage(content="q"), created_at=when)
    metadata = {"model": model} if model else None
    store.append(sid, AssistantMessage(content="a"), usage=usage, metadata=metadata, created_at=when)


def three_calls(tmp_path: Path) -> SessionStore:
    """Two sessions: a, with calls on June 1 and June 2 (UTC); b, with one on July 1."""
    store = SessionStore(tmp_path / "s", durability="none")
    reply(store, "a", JUNE_1, "claude-sonnet-4-20250514", ModelUsage(input_tokens=100, output_tokens=10,
          cache_read_tokens=60, cache_write_tokens=20))  # fmt: skip
    reply(store, "a", JUNE_2, "gpt-5", ModelUsage(input_tokens=50, output_tokens=30, reasoning_tokens=20))
    reply(store, "b", JULY_1, "gpt-5", ModelUsage(input_tokens=7, output_tokens=3))
    return store


def counts(row: UsageRow) -> tuple[object, ...]:
    return (row.key, row.calls, row.input_tokens, row.output_tokens, row.cache_read_tokens,
            row.cache_write_tokens, row.reasoning_tokens, row.total_tokens)  # fmt: skip


def test_usage_by_session_sums_each_sessions_calls(tmp_path: Path) -> None:
    """by="session" gives one row per session with calls, its tokens summed."""
    rows = usage_report(three_calls(tmp_path), by="session")
    assert [counts(r) for r in rows] == [("a", 2, 150, 40, 60, 20, 20, 190), ("b", 1, 7, 3, 0, 0, 0, 10)]


def test_usage_by_day_splits_at_utc_midnight(tmp_path: Path) -> None:
    """by="day" keys each call by its UTC date: calls an hour apart across midnight are two days."""
    rows = usage_report(three_calls(tmp_path), by="day")
    assert [(r.key, r.calls) for r in rows] == [("2025-06-01", 1), ("2025-06-02", 1), ("2025-07-01", 1)]


def test_usage_by_month_sums_the_months_days(tmp_path: Path) -> None:
    """by="month" keys calls by their UTC YYYY-MM."""
    rows = usage_report(three_calls(tmp_path), by="month")
    assert [counts(r) for r in rows] == [
        ("2025-06", 2, 150, 40, 60, 20, 20, 190),
        ("2025-07", 1, 7, 3, 0, 0, 0, 10),
    ]


def test_usage_by_model_puts_calls_without_a_model_last(tmp_path: Path) -> None:
    """by="model" gives a row per recorded model, and "(unknown)" for calls that recorded none."""
    store = three_calls(tmp_path)
    store.record_usage("b", {"input_tokens": 5, "output_tokens": 1})
    rows = usage_report(store, by="model")
    assert [(r.key, r.calls) for r in rows] == [
        ("claude-sonnet-4-20250514", 1),
        ("gpt-5", 2),
        ("(unknown)", 1),
    ]


def test_usage_by_project_is_the_recorded_cwd_else_the_store_root(tmp_path: Path) -> None:
    """by="project" keys a session by the cwd its metadata records, else by the store's root."""
    store = three_calls(tmp_path)
    store.update_session("b", metadata={"cwd": "/work/app"})
    rows = usage_report(store, by="project")
    assert sorted((r.key, r.calls) for r in rows) == sorted([("/work/app", 1), (str(store.root), 2)])


def test_usage_of_one_session_leaves_the_others_out(tmp_path: Path) -> None:
    """session_id= reports that session's calls only; an unknown one raises SessionNotFound."""
    store = three_calls(tmp_path)
    assert [(r.key, r.calls) for r in usage_report(store, by="day", session_id="b")] == [("2025-07-01", 1)]
    with pytest.raises(SessionNotFound):
        usage_report(store, session_id="nobody")


def test_usage_since_and_until_keep_the_calls_of_those_utc_dates(tmp_path: Path) -> None:
    """since/until are inclusive UTC dates."""
    store = three_calls(tmp_path)
    rows = usage_report(store, by="day", since=date(2025, 6, 2), until=date(2025, 6, 30))
    assert [r.key for r in rows] == ["2025-06-02"]


@pytest.mark.parametrize(
    "bad",
    [
        {"by": "week"},
        {"since": "2025-06-01"},
        {"until": JULY_1},
        {"since": date(2025, 7, 2), "until": date(2025, 7, 1)},
    ],
)
def test_usage_report_refuses_bad_arguments(tmp_path: Path, bad: dict[str, object]) -> None:
    """An unknown grouping, a date that is no date, or since after until is InvalidArgument (a ValueError)."""
    with pytest.raises(InvalidArgument) as raised:
        usage_report(three_calls(tmp_path), **bad)  # type: ignore[arg-type]
    assert isinstance(raised.value, ValueError)


def test_a_forks_inherited_calls_count_once_in_its_source(tmp_path: Path) -> None:
    """A fork's history read from its source is the source's: the store's total counts each call once."""
    store = three_calls(tmp_path)
    fork = store.fork("a", 2, "a-fork")
    reply(store, fork, JULY_1, "gpt-5", ModelUsage(input_tokens=1, output_tokens=1))
    rows = {r.key: r.calls for r in usage_report(store)}
    assert rows == {"a": 2, "a-fork": 1, "b": 1}
    assert len(store.model_calls(fork)) == 2  # the inherited call stays in the session's own listing
    assert len(store.model_calls(fork, inherited=False)) == 1


def test_own_calls_are_the_calls_model_calls_gives_for_a_session_without_a_fork(tmp_path: Path) -> None:
    """model_calls(inherited=False), which skips messages, gives what model_calls gives, usage log first."""
    store = three_calls(tmp_path)
    store.record_usage("a", {"input_tokens": 9, "output_tokens": 9, "model": "gpt-5", "request_id": "r1"})
    store.append(
        "a", AssistantMessage(content="x"), usage=ModelUsage(input_tokens=9, output_tokens=9), request_id="r1"
    )
    assert store.model_calls("a", inherited=False) == store.model_calls("a")


def test_cost_is_the_price_tables_for_each_call(tmp_path: Path) -> None:
    """Each row's cost is the sum of its calls' genai-prices prices, input, cache and output at their own prices."""
    genai_prices = pytest.importorskip("genai_prices")
    rows = usage_report(three_calls(tmp_path), by="session")
    first = genai_prices.calc_price(
        genai_prices.Usage(input_tokens=100, output_tokens=10, cache_read_tokens=60, cache_write_tokens=20),
        "claude-sonnet-4-20250514", provider_id="anthropic", genai_request_timestamp=JUNE_1,
    ).total_price  # fmt: skip
    second = genai_prices.calc_price(
        genai_prices.Usage(input_tokens=50, output_tokens=30), "gpt-5", genai_request_timestamp=JUNE_2
    ).total_price
    assert rows[0].cost_usd == pytest.approx(float(first + second))
    assert rows[0].prices_version == f"genai-prices {genai_prices.__version__}"
    assert rows[0].unpriced_calls == 0


def test_an_unknown_model_is_not_priced_as_zero(tmp_path: Path) -> None:
    """A row with a call of a model the table does not know has no cost, and names the model."""
    pytest.importorskip("genai_prices")
    store = three_calls(tmp_path)
    reply(store, "b", JULY_1, "our-own-model-7", ModelUsage(input_tokens=5, output_tokens=5))
    store.record_usage("b", {"input_tokens": 5, "output_tokens": 1})
    [a, b] = usage_report(store)
    assert a.cost_usd is not None and a.cost_usd > 0
    assert (b.cost_usd, b.unpriced_calls, b.unpriced_models) == (None, 2, ("(unknown)", "our-own-model-7"))


def test_a_call_with_no_tokens_costs_nothing_whatever_its_model(tmp_path: Path) -> None:
    """A call that used no tokens (Claude Code's `<synthetic>` error replies) is priced 0, not unknown."""
    pytest.importorskip("genai_prices")
    store = SessionStore(tmp_path / "s", durability="none")
    store.record_usage("a", {"model": "<synthetic>"})
    [row] = usage_report(store)
    assert (row.cost_usd, row.unpriced_calls) == (0.0, 0)


def test_without_the_price_table_every_cost_is_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without genai-prices the tokens are reported and every cost is None, never 0."""
    monkeypatch.setattr(_prices, "_module", lambda: None)
    rows = usage_report(three_calls(tmp_path), by="session")
    assert [(r.calls, r.cost_usd, r.unpriced_calls, r.prices_version) for r in rows] == [
        (2, None, 2, None),
        (1, None, 1, None),
    ]


def test_a_report_decodes_no_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """usage_report reads the records' token fields only: with message decoding broken it still reports."""
    store = three_calls(tmp_path)
    expected = usage_report(store, by="day")

    def refuse(*args: object) -> object:
        raise AssertionError("a usage report decoded a message")

    monkeypatch.setattr(_codec, "decode_record", refuse)
    monkeypatch.setattr(_codec, "decode_message", refuse)
    assert usage_report(SessionStore(store.root), by="day") == expected
