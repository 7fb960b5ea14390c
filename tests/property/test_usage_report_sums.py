"""A usage report's rows partition the calls, and its costs are each call's own price summed."""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from jsonl_store import ModelUsage, SessionStore, usage_report
from jsonl_store._prices import Pricer

genai_prices = pytest.importorskip("genai_prices")

#: Flat-priced models, one whose prices are tiered (a cliff at a call's input), one unknown.
MODELS = ["claude-sonnet-4-20250514", "gpt-5", "gpt-5.5", "not-a-model-anyone-sells", None]
START = datetime(2025, 6, 1, tzinfo=UTC)


@st.composite
def call(draw: st.DrawFn) -> dict[str, Any]:
    """One call's counts, usually as a provider reports them, sometimes with more cached than input."""
    input_tokens = draw(st.integers(0, 400_000))
    output_tokens = draw(st.integers(0, 50_000))
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cache_read_tokens": draw(st.integers(0, input_tokens + draw(st.sampled_from([0, 0, 0, 10])))),
        "cache_write_tokens": draw(st.integers(0, 1_000)),
        "reasoning_tokens": draw(st.integers(0, output_tokens)),
        "model": draw(st.sampled_from(MODELS)),
        "hours": draw(st.integers(0, 24 * 60)),
        "session": draw(st.sampled_from(["a", "b", "c"])),
    }


def alone(c: dict[str, Any]) -> Decimal | None:
    """One call's price straight from genai-prices, or None where it has none."""
    if not any(c[k] for k in ModelUsage.__struct_fields__):
        return Decimal(0)
    usage = genai_prices.Usage(
        input_tokens=c["input_tokens"], output_tokens=c["output_tokens"], cache_read_tokens=c["cache_read_tokens"],
        cache_write_tokens=c["cache_write_tokens"], output_reasoning_tokens=c["reasoning_tokens"],
    )  # fmt: skip
    try:
        price: Decimal = genai_prices.calc_price(
            usage, c["model"], genai_request_timestamp=START + timedelta(hours=c["hours"])
        ).total_price
    except (LookupError, ValueError, AttributeError):
        return None
    return price


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(call(), max_size=40), st.integers(1, 4))
def test_a_groups_price_is_its_calls_prices_summed(calls: list[dict[str, Any]], groups: int) -> None:
    """Pricer sums a group's calls of one flat price before pricing them: the total is each call's price summed."""
    pricer = Pricer()
    expected: dict[str, Decimal] = {}
    for n, c in enumerate(calls):
        group = str(n % groups)
        when = START + timedelta(hours=c["hours"])
        price = alone(c) if c["model"] is not None else None
        assert pricer.add(group, c, c["model"], None, when) == (price is not None)
        if price is not None:
            expected[group] = expected.get(group, Decimal(0)) + price
    found = pricer.totals()
    for group in set(found) | set(expected):
        assert found.get(group, Decimal(0)) == pytest.approx(
            expected.get(group, Decimal(0)), rel=Decimal("1e-12")
        )


@settings(max_examples=examples(25), deadline=None)
@given(st.lists(call(), min_size=1, max_size=12))
def test_every_grouping_counts_each_call_once(calls: list[dict[str, Any]]) -> None:
    """By session, day, month, model or project, the rows' calls and tokens add up to the same totals."""
    with tempfile.TemporaryDirectory() as root:
        store = SessionStore(root, durability="none")
        for c in calls:
            counts = {k: c[k] for k in ModelUsage.__struct_fields__}
            store.record_usage(c["session"], {**counts, **({"model": c["model"]} if c["model"] else {})})
        sums = set()
        for by in ("session", "day", "month", "model", "project"):
            rows = usage_report(store, by=by)
            assert len({r.key for r in rows}) == len(rows)
            sums.add(
                (
                    sum(r.calls for r in rows),
                    sum(r.input_tokens for r in rows),
                    sum(r.total_tokens for r in rows),
                )
            )
        assert sums == {(len(calls), sum(c["input_tokens"] for c in calls),
                         sum(c["input_tokens"] + c["output_tokens"] for c in calls))}  # fmt: skip
