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

import json
from collections import defaultdict
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from jsonl_store import SessionStore, usage_report
from jsonl_store.importers import import_claude_code, import_codex

genai_prices = pytest.importorskip("genai_prices")
from genai_prices import data_snapshot  # noqa: E402

DATA = Path(__file__).parent / "data"
KINDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")
#: A call as this test reads it: (its first line's time, model, counts in the store's terms).
Call = tuple[datetime, str, dict[str, int]]


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def when(d: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(d["timestamp"]).astimezone(UTC)


def claude_code_calls(path: Path) -> list[Call]:
    """One call per message id and request id: the largest counts, the first line's time."""
    keys = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    first: dict[str, tuple[datetime, str]] = {}
    best: dict[str, dict[str, int]] = {}
    for n, d in enumerate(lines(path)):
        message = d.get("message")
        if d.get("type") != "assistant" or not isinstance(message, dict):
            continue
        usage = message.get("usage")
        if not isinstance(usage, dict) or not any(usage.get(k) for k in keys):
            continue
        counts = {k: usage.get(k) or 0 for k in keys}
        mid, rid = message.get("id"), d.get("requestId")
        key = f"{mid}:{rid}" if mid and rid else mid or f"line {n}"
        first.setdefault(key, (when(d), message["model"]))
        if key not in best or sum(counts.values()) >= sum(best[key].values()):
            best[key] = counts
    found = []
    for key, c in best.items():
        fresh, read, write = c["input_tokens"], c["cache_read_input_tokens"], c["cache_creation_input_tokens"]
        counts = {"input_tokens": fresh + read + write, "output_tokens": c["output_tokens"],
                  "cache_read_tokens": read, "cache_write_tokens": write, "reasoning_tokens": 0}  # fmt: skip
        found.append((*first[key], counts))
    return found


def codex_calls(path: Path) -> list[Call]:
    """Each token_count event with a new total, under the model of the turn_context before it."""
    keys = ("input_tokens", "output_tokens", "cached_input_tokens", "reasoning_output_tokens")
    found: list[Call] = []
    model, previous = "", None
    for d in lines(path):
        payload = d.get("payload") or {}
        if d.get("type") == "turn_context" and isinstance(payload.get("model"), str):
            model = payload["model"]
        info = payload.get("info") if payload.get("type") == "token_count" else None
        if d.get("type") != "event_msg" or not isinstance(info, dict):
            continue
        total, last = info.get("total_token_usage"), info.get("last_token_usage")
        if total is not None and (total == previous or not any(total.get(k) for k in keys)):
            previous = total
            continue
        if last is not None:
            call = {k: last.get(k, 0) for k in keys}
        else:
            call = {k: (total or {}).get(k, 0) - (previous or {}).get(k, 0) for k in keys}
        previous = total if total is not None else previous
        if any(call.values()):
            counts = {"input_tokens": call["input_tokens"], "output_tokens": call["output_tokens"],
                      "cache_read_tokens": call["cached_input_tokens"], "cache_write_tokens": 0,
                      "reasoning_tokens": call["reasoning_output_tokens"]}  # fmt: skip
            found.append((when(d), model, counts))
    return found


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
