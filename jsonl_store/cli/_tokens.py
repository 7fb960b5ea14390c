"""``usage [ID]``: what the model calls of one session, or of every session, cost in tokens.

One session: each call once (`model_calls`) and their sum. The whole store: one row per
session, one per model, and the overall totals, with each row's cache hit rate -- cached
input over input, as `RawMessageRecord.cache_hit_rate` defines it (the store's input
counts include the cached part).

With ``--by`` (or ``--since``/``--until``): `jsonl_store.usage_report`'s rows, priced, as a
table with a total, or with ``--json`` as a list of row objects.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping
from datetime import date
from typing import Any

from .. import ModelUsage, SessionStore, UsageRow, usage_report
from .._usage_report import BY, By, total
from . import _format
from ._blocks import Block
from ._commands import emit, emit_json, existing, heading, open_store, over_sessions

_FIELDS = _format.USAGE_FIELDS
_HEADER = ("INPUT", "OUTPUT", "CACHE READ", "CACHE WRITE", "REASONING", "HIT RATE")
#: Where a call's model was not recorded (a usage given with a record carries none).
UNKNOWN_MODEL = "(unknown)"


def _sum(items: Iterable[Mapping[str, Any]]) -> ModelUsage:
    total = ModelUsage()
    for item in items:
        total += ModelUsage(**{field: int(item.get(field) or 0) for field in _FIELDS})
    return total


def _hit_rate(usage: ModelUsage) -> float | None:
    return usage.cache_read_tokens / usage.input_tokens if usage.input_tokens else None


def _counts(usage: ModelUsage) -> list[str]:
    return [
        *(_format.count(getattr(usage, field)) for field in _FIELDS),
        _format.rate(usage.cache_read_tokens, usage.input_tokens),
    ]


def _as_json(calls: int, usage: ModelUsage, **name: str) -> dict[str, Any]:
    return {
        **name,
        "calls": calls,
        **{field: getattr(usage, field) for field in _FIELDS},
        "total_tokens": usage.total_tokens,
        "cache_hit_rate": _hit_rate(usage),
    }


def _one(store: SessionStore, session_id: str, as_json: bool) -> int:
    existing(store, session_id)
    items = store.model_calls(session_id)
    totals = _sum(items)  # what usage_totals() sums, without reading the logs again
    if as_json:
        emit_json({"calls": items, "totals": totals})
    else:
        emit([_format.render_usage(items, totals)])
    return 0


def _store(store: SessionStore, as_json: bool) -> int:
    sessions = store.list_sessions()
    per_session: list[tuple[str, int, ModelUsage]] = []
    per_model: dict[str, list[dict[str, Any]]] = {}
    with over_sessions("usage", len(sessions)) as bar:
        for summary in sessions:
            bar.describe(summary.session_id)
            items = store.model_calls(summary.session_id)
            per_session.append((summary.session_id, len(items), _sum(items)))
            for item in items:
                per_model.setdefault(str(item.get("model") or UNKNOWN_MODEL), []).append(item)
            bar.advance()
    models = sorted(per_model.items(), key=lambda pair: (pair[0] == UNKNOWN_MODEL, pair[0]))
    overall = _sum(item for items in per_model.values() for item in items)
    calls = sum(n for _, n, _ in per_session)
    if as_json:
        emit_json(
            {
                "sessions": [_as_json(n, usage, session_id=sid) for sid, n, usage in per_session],
                "models": [_as_json(len(items), _sum(items), model=model) for model, items in models],
                "totals": _as_json(calls, overall),
            }
        )
        return 0
    right = range(1, 8)
    blocks: list[Block] = [
        heading("Per session"),
        _format.table(
            ("SESSION", "CALLS", *_HEADER),
            [
                *((sid, _format.count(n), *_counts(usage)) for sid, n, usage in per_session),
                ("total", _format.count(calls), *_counts(overall)),
            ],
            right=right,
            own_line=0,
        ),
        "",
        heading("Per model"),
        _format.table(
            ("MODEL", "CALLS", *_HEADER),
            [(model, _format.count(len(items)), *_counts(_sum(items))) for model, items in models],
            right=right,
            wrap=(0,),
        ),
    ]
    emit(blocks)
    return 0


def add_report_arguments(parser: argparse.ArgumentParser) -> None:
    """``--by``, ``--since`` and ``--until``: what turns ``usage`` into a report."""
    parser.add_argument(
        "--by", choices=BY, help="one row per session, UTC day, UTC month, model or project, priced"
    )
    parser.add_argument("--since", metavar="DATE", type=_day, help="calls from this UTC date on (YYYY-MM-DD)")
    parser.add_argument("--until", metavar="DATE", type=_day, help="calls up to this UTC date (YYYY-MM-DD)")


def _day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): {text!r}") from None


#: The first column's name for each ``--by``.
_KEY_HEADER = {"session": "SESSION", "day": "DAY (UTC)", "month": "MONTH (UTC)", "model": "MODEL",
               "project": "PROJECT"}  # fmt: skip


def _cost(row: UsageRow) -> str:
    return "-" if row.cost_usd is None else f"${row.cost_usd:,.2f}"


def _report_row(row: UsageRow) -> tuple[str, ...]:
    return (row.key, _format.count(row.calls), *(_format.count(getattr(row, f)) for f in _FIELDS),
            _format.count(row.total_tokens), _cost(row))  # fmt: skip


def _notes(whole: UsageRow) -> list[Block]:
    """What the table cannot say: which prices, and which calls have none."""
    if whole.prices_version is None:
        return ["cost unavailable: install the cost extra (pip install 'jsonl-store[cost]', genai-prices)"]
    notes: list[Block] = [f"prices: {whole.prices_version}; days and months are UTC"]
    if whole.unpriced_calls:
        models = ", ".join(whole.unpriced_models)
        notes.append(
            f"not priced: {_format.plural(whole.unpriced_calls, 'call')} of {models}"
            " (not in the price table, or no model recorded): their rows have no cost"
        )
    return notes


def _report(store: SessionStore, args: argparse.Namespace) -> int:
    by: By = args.by if args.by is not None else "session"
    if args.session_id is not None:
        existing(store, args.session_id)
    rows = usage_report(store, by=by, session_id=args.session_id, since=args.since, until=args.until)
    if args.json:
        emit_json([row.as_dict() for row in rows])
        return 0
    whole = total(rows)
    header = (_KEY_HEADER[by], "CALLS", *_HEADER[:-1], "TOTAL", "COST (USD)")
    table = _format.table(header, [*map(_report_row, rows), _report_row(whole)], right=range(1, 9))
    emit([table, "", *_notes(whole)])
    return 0


def usage(args: argparse.Namespace) -> int:
    store = open_store(args)
    if args.by is not None or args.since is not None or args.until is not None:
        return _report(store, args)
    if args.session_id is not None:
        return _one(store, args.session_id, args.json)
    return _store(store, args.json)


__all__ = ["UNKNOWN_MODEL", "add_report_arguments", "usage"]
