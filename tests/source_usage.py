"""Model calls read from a source transcript with plain ``json``, by the source tools' own
documented counting rules, never through the importers: what the importer and usage tests
compare the store's figures with.

- Claude Code, ccusage's rule (https://github.com/ryoppippi/ccusage, the Claude loader's
  ``createUniqueHash``): one call per ``message.id`` + ``requestId`` (``message.id`` alone
  when there is no ``requestId``), except that we take the line with the largest counts
  where ccusage keeps the first (https://github.com/ccusage/ccusage/issues/901).
- Codex, ccusage's Codex loader: ``last_token_usage`` per ``token_count`` event, the
  difference of ``total_token_usage`` only for an event without it, and an event whose
  total repeats the one before is no call (https://github.com/ccusage/ccusage/issues/884).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

KINDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")
#: A call as read here: (its first line's time, model, counts in the store's terms, spec §7).
Call = tuple[datetime, str, dict[str, int]]
#: (input with cache, output, cache read, cache write, reasoning, calls)
Totals = tuple[int, int, int, int, int, int]


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


def totals(calls: list[Call]) -> Totals:
    """The calls' counts summed, and how many there are."""
    sums = [sum(counts[kind] for _, _, counts in calls) for kind in KINDS]
    return sums[0], sums[1], sums[2], sums[3], sums[4], len(calls)
