"""`usage_report`: the store's model calls summed by session, day, month, model or project, priced.

Each call counts once, in the session whose files recorded it (`SessionStore.model_calls`
with ``inherited=False``: a fork's inherited history is its source's), read from the usage
log and the records' token fields without decoding a message. Days and months are UTC.
A cost comes from `_prices` (genai-prices, the ``cost`` extra); a row with a call that has
no price has no cost (``None``), and says which models were not priced.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any, Literal

from . import _prices
from ._context.view import SessionSummary
from ._errors import InvalidArgument, SessionNotFound
from ._format.records import ModelUsage
from .store import SessionStore

By = Literal["session", "day", "month", "model", "project"]
#: The groupings `usage_report` knows, in the order the command's help lists them.
BY: tuple[By, ...] = ("session", "day", "month", "model", "project")
#: The key of a call whose model, or time, was not recorded.
UNKNOWN = "(unknown)"
_FIELDS = ModelUsage.__struct_fields__


@dataclasses.dataclass(frozen=True, slots=True)
class UsageRow:
    """One row of a usage report: the calls of one session, day, month, model or project.

    ``input_tokens`` includes the cached input (``cache_read_tokens`` and
    ``cache_write_tokens``) and ``output_tokens`` the ``reasoning_tokens``, as the store
    counts them (spec §7); ``total_tokens`` is input plus output. ``cost_usd`` is None
    unless every call of the row was priced: ``unpriced_calls`` of them were not, for the
    models ``unpriced_models`` names (``"(unknown)"`` for calls that recorded none), or for
    all when the price table is not installed (``prices_version`` None).
    """

    key: str
    calls: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    reasoning_tokens: int
    total_tokens: int
    cost_usd: float | None
    unpriced_calls: int
    unpriced_models: tuple[str, ...]
    prices_version: str | None

    def as_dict(self) -> dict[str, Any]:
        """The row as JSON-ready values (``unpriced_models`` as a list)."""
        return {**dataclasses.asdict(self), "unpriced_models": list(self.unpriced_models)}


@dataclasses.dataclass(slots=True)
class _Sum:
    """A row being summed."""

    calls: int = 0
    counts: dict[str, int] = dataclasses.field(default_factory=lambda: dict.fromkeys(_FIELDS, 0))
    cost: Decimal = Decimal(0)
    unpriced: int = 0
    unpriced_models: set[str] = dataclasses.field(default_factory=set)

    def add(self, call: dict[str, Any], priced: bool) -> None:
        self.calls += 1
        for name in _FIELDS:
            self.counts[name] += call[name]
        if not priced:
            self.unpriced += 1
            self.unpriced_models.add(call["model"] or UNKNOWN)

    def row(self, key: str, prices_version: str | None) -> UsageRow:
        counts = self.counts
        return UsageRow(
            key=key,
            calls=self.calls,
            **counts,
            total_tokens=counts["input_tokens"] + counts["output_tokens"],
            cost_usd=None if self.unpriced else float(self.cost),
            unpriced_calls=self.unpriced,
            unpriced_models=tuple(sorted(self.unpriced_models)),
            prices_version=prices_version,
        )


def moment(value: object) -> datetime | None:
    """A call's ``recorded_at`` (a record's datetime, or a usage line's ISO text) in UTC."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return None
    if not isinstance(value, datetime):
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def project(summary: SessionSummary, root: str) -> str:
    """Where a session's work was done: the ``project`` or ``cwd`` its metadata records, else
    the store's root (the directory its sessions were committed in)."""
    for name in ("project", "cwd"):
        value = summary.metadata.get(name)
        if isinstance(value, str) and value:
            return value
    return root


def _provider(summary: SessionSummary) -> str | None:
    source = summary.metadata.get("imported_from")
    tool = source.get("tool") if isinstance(source, dict) else None
    return _prices.TOOL_PROVIDERS.get(tool) if isinstance(tool, str) else None


def _key(by: By, summary: SessionSummary, call: dict[str, Any], when: datetime | None, root: str) -> str:
    if by == "session":
        return summary.session_id
    if by == "model":
        return str(call["model"] or UNKNOWN)
    if by == "project":
        return project(summary, root)
    if when is None:
        return UNKNOWN
    day = when.date().isoformat()  # YYYY-MM-DD (a year after 9999 is no datetime)
    return day if by == "day" else day[:7]


def _check(by: object, since: object, until: object) -> None:
    if by not in BY:
        raise InvalidArgument(f"by must be one of {', '.join(BY)}, got {by!r}")
    for name, value in (("since", since), ("until", until)):
        if value is not None and (not isinstance(value, date) or isinstance(value, datetime)):
            raise InvalidArgument(f"{name} must be a datetime.date or None, got {value!r}")
    if isinstance(since, date) and isinstance(until, date) and since > until:
        raise InvalidArgument(f"since ({since}) is after until ({until})")


def _order(key: str) -> tuple[bool, str]:
    return key == UNKNOWN, key


def usage_report(
    store: SessionStore,
    *,
    by: By = "session",
    session_id: str | None = None,
    since: date | None = None,
    until: date | None = None,
) -> list[UsageRow]:
    """The model calls of the store (or of ``session_id``), summed by ``by`` and priced.

    ``by`` is ``"session"``, ``"day"`` (``YYYY-MM-DD``), ``"month"`` (``YYYY-MM``),
    ``"model"`` or ``"project"`` (the ``project`` or ``cwd`` a session's metadata records,
    else the store's root). ``since`` and ``until`` keep the calls made on those UTC dates
    and between them (a call with no time then counts nowhere). Rows are sorted by key,
    ``"(unknown)"`` last; a key without calls has no row. Each call is priced at its
    model's prices on its date from genai-prices' offline table (the ``cost`` extra), with
    the provider of the tool an importer read it from when known; see `UsageRow`.

    Raises `InvalidArgument` for an unknown ``by`` or a ``since``/``until`` that is not a
    `datetime.date` (or a ``since`` after ``until``), and `SessionNotFound` for an unknown ``session_id``.
    """
    _check(by, since, until)
    if session_id is None:
        sessions = store.list_sessions()
    else:
        summary = store.get_session(session_id)
        if summary is None:
            raise SessionNotFound(f"session {session_id!r} does not exist", session_id=session_id)
        sessions = [summary]
    root = os.fspath(store.root)
    sums: dict[str, _Sum] = {}
    pricer = _prices.Pricer()
    for summary in sessions:
        provider = _provider(summary)
        for call in store.model_calls(summary.session_id, inherited=False):
            when = moment(call["recorded_at"])
            if (since is not None or until is not None) and not _within(when, since, until):
                continue
            key = _key(by, summary, call, when, root)
            sums.setdefault(key, _Sum()).add(call, pricer.add(key, call, call["model"], provider, when))
    for key, cost in pricer.totals().items():
        sums[key].cost = cost
    version = _prices.version()
    return [sums[key].row(key, version) for key in sorted(sums, key=_order)]


def _within(when: datetime | None, since: date | None, until: date | None) -> bool:
    if when is None:
        return False
    day = when.date()
    return (since is None or day >= since) and (until is None or day <= until)


def total(rows: Iterable[UsageRow]) -> UsageRow:
    """The rows summed into one, keyed ``"total"``."""
    rows = list(rows)
    whole = _Sum(calls=sum(r.calls for r in rows))
    for name in _FIELDS:
        whole.counts[name] = sum(getattr(r, name) for r in rows)
    whole.unpriced = sum(r.unpriced_calls for r in rows)
    whole.unpriced_models = {m for r in rows for m in r.unpriced_models}
    whole.cost = sum((Decimal(str(r.cost_usd)) for r in rows if r.cost_usd is not None), Decimal(0))
    return whole.row("total", rows[0].prices_version if rows else _prices.version())
