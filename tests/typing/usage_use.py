"""Usage reports as user code writes them: it must pass ``mypy --strict``.

The last function holds the mistakes the types must catch, each asserted by a
``# type: ignore[code]`` that ``warn_unused_ignores`` fails once it is not needed.
"""

from __future__ import annotations

from datetime import date

from jsonl_store import SessionStore, UsageRow, usage_report


def june_cost(store: SessionStore) -> float:
    """What June cost, day by day, counting only the days every call of which was priced."""
    rows: list[UsageRow] = usage_report(store, by="day", since=date(2026, 6, 1), until=date(2026, 6, 30))
    return sum(row.cost_usd for row in rows if row.cost_usd is not None)


def unpriced_models(store: SessionStore, sid: str) -> set[str]:
    """The models of one session's calls that the price table could not price."""
    return {model for row in usage_report(store, by="model", session_id=sid) for model in row.unpriced_models}


def usage_mistakes(store: SessionStore) -> None:
    """A grouping that does not exist, a date as text, and a cost assumed always known."""
    usage_report(store, by="week")  # type: ignore[arg-type]
    usage_report(store, since="2026-06-01")  # type: ignore[arg-type]
    total: float = usage_report(store)[0].cost_usd  # type: ignore[assignment]
    del total
