"""`usage_report(by="day")` on each shared Claude Code and Codex transcript against ccusage's rules.

The expected figures are computed here from the source file with plain ``json``, as
ccusage's daily report documents them (https://ccusage.com/guide/daily-reports,
https://ccusage.com/guide/cost-modes), not through the importers or the report:

- a call is one Claude Code API message (``message.id`` + ``requestId``, the line with the
  largest counts: where ccusage keeps the first line, see tests/importers/test_source_totals.py
  and https://github.com/ccusage/ccusage/issues/901), or one Codex ``token_count`` event
  with a new total (its ``last_token_usage``, else the total's increase);
- its day is the UTC date of its first line (ccusage's ``--timezone UTC``);
- its cost is ccusage's ``--mode calculate``: each kind of token at the model's own price
  per token, read here from genai-prices' table for the provider the tool calls (ccusage
  reads LiteLLM's table; the rule is the same, the table is the one we ship with).

Token counts are the store's (spec §7): input includes the cached input, where ccusage's
``inputTokens`` is the uncached part; ``total_tokens`` is the same figure in both.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from source_usage import KINDS, Call, claude_code_calls, codex_calls

from jsonl_store import SessionStore, usage_report
from jsonl_store.importers import import_claude_code, import_codex

genai_prices = pytest.importorskip("genai_prices")
from genai_prices import data_snapshot  # noqa: E402

DATA = Path(__file__).parent / "data"


def per_token(value: Any, input_tokens: int) -> Decimal:
    """A price per token: a tiered price is the highest tier the call's input passed (a cliff)."""
    if value is None:
        return Decimal(0)
    if isinstance(value, Decimal):
        return value / 1_000_000
    rate = value.base
    for tier in value.tiers:
        if input_tokens > tier.start:
            rate = tier.price
    return Decimal(rate) / 1_000_000


def cost(model: str, provider: str, moment: datetime, c: dict[str, int]) -> Decimal:
    """What ccusage's calculate mode charges for one call, at genai-prices' per-token prices."""
    _, info = data_snapshot.get_snapshot().find_provider_model(model, None, provider, None)
    prices = info.get_prices(moment)
    total_in = c["input_tokens"]

    def rate(name: str, fallback: str | None = None) -> Decimal:
        value = getattr(prices, name, None)
        if value is None and fallback is not None:
            value = getattr(prices, fallback, None)
        return per_token(value, total_in)

    fresh = total_in - c["cache_read_tokens"] - c["cache_write_tokens"]
    plain_output = c["output_tokens"] - c["reasoning_tokens"]
    return (
        fresh * rate("input_mtok")
        + c["cache_read_tokens"] * rate("cache_read_mtok", "input_mtok")
        + c["cache_write_tokens"] * rate("cache_write_mtok", "input_mtok")
        + plain_output * rate("output_mtok")
        + c["reasoning_tokens"] * rate("output_reasoning_mtok", "output_mtok")
    )


def daily(calls: list[Call], provider: str) -> dict[str, dict[str, Any]]:
    days: dict[str, dict[str, Any]] = defaultdict(
        lambda: {"calls": 0, "cost": Decimal(0), **dict.fromkeys(KINDS, 0)}
    )
    for moment, model, counts in calls:
        day = days[moment.strftime("%Y-%m-%d")]
        day["calls"] += 1
        for k in KINDS:
            day[k] += counts[k]
        day["cost"] += cost(model, provider, moment, counts)
    return dict(days)


CASES = [
    *(pytest.param(p, import_claude_code, claude_code_calls, "anthropic", id=p.name)
      for p in sorted((DATA / "claude-code").glob("*.jsonl"))),
    *(pytest.param(p, import_codex, codex_calls, "openai", id=p.name) for p in sorted((DATA / "codex").glob("*.jsonl"))),
]  # fmt: skip


@pytest.mark.parametrize(("path", "importer", "read", "provider"), CASES)
def test_a_shared_transcripts_daily_tokens_and_cost_are_ccusages(
    tmp_path: Path, path: Path, importer: Any, read: Any, provider: str
) -> None:
    """Each UTC day's calls, tokens and USD cost over a transcript's sessions are what ccusage's rules give."""
    store = SessionStore(tmp_path / "s", durability="none")
    importer(store, path)
    expected = daily(read(path), provider)
    rows = usage_report(store, by="day")
    assert [row.key for row in rows] == sorted(expected)
    for row in rows:
        day = expected[row.key]
        assert (row.calls, *(getattr(row, k) for k in KINDS)) == (day["calls"], *(day[k] for k in KINDS))
        assert row.total_tokens == day["input_tokens"] + day["output_tokens"]
        assert row.unpriced_calls == 0
        assert row.cost_usd == pytest.approx(float(day["cost"]), rel=1e-12, abs=1e-12)
        assert row.prices_version == f"genai-prices {genai_prices.__version__}"
