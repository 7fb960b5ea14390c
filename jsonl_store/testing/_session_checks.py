"""What one session must show after a crash (the checks `_check` runs on every session of
every crash state): its raw log, its session context, its metadata and its token usage,
each against what the workload wrote and what it had acknowledged."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from .._context.tool_batches import provider_violation
from .._context.view import SessionSummary
from .._format.records import ModelUsage, RawMessageRecord
from ._workload import Ack, Append, AppendMany, RecordUsage, Snapshot, UpdateSession, WorkloadResult

if TYPE_CHECKING:
    from ..store import SessionStore

_USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
)
#: Problems load() may report when a state may lose acknowledged data (a power loss under
#: durability="none"): a snapshot that outlived its records, metadata that was never synced.
_CRASH_REMAINS = frozenset({"bad-snapshot", "bad-meta"})


class Failed(Exception):
    """Internal: one check failed; `_check` turns it into a RecoveryFailure with the state attached."""


@dataclasses.dataclass(frozen=True, slots=True)
class Seen:
    """What readers showed for one session (compared before and after repair)."""

    count: int
    snapshot_version: int
    meta_version: int | None
    usage_count: int


def fail(condition: bool, reason: str) -> None:
    if not condition:
        raise Failed(reason)


def _usage_row_matches(row: dict[str, Any], written: ModelUsage | dict[str, Any]) -> bool:
    fields = msgspec.structs.asdict(written) if isinstance(written, ModelUsage) else written
    return all(row.get(k, 0) == fields.get(k, 0) for k in _USAGE_FIELDS) and row.get("model") == fields.get(
        "model"
    )


def _summary_fields(summary: SessionSummary) -> tuple[Any, ...]:
    return (summary.title, summary.pinned, summary.metadata)


@dataclasses.dataclass(frozen=True, slots=True)
class Expect:
    """What one crash state must show: the workload, the crash point, which promises apply."""

    result: WorkloadResult
    prefix: int
    #: Acknowledged operations must be present (fsync durability, or a process crash).
    acked: bool
    #: An append_many batch must be present whole or not at all.
    atomic_batches: bool


def _check_records(
    store: SessionStore, sid: str, expect: Expect, started: Sequence[Ack], least: int, most: int
) -> list[RawMessageRecord]:
    # The raw log: a gap-free prefix of what was written, holding everything acknowledged.
    records = list(store.records(sid))
    n = len(records)
    written = expect.result.written(sid)
    sequences = [r.sequence for r in records]
    fail(sequences == list(range(1, n + 1)), f"{sid}: raw log sequences are {sequences}, not 1..{n}")
    fail(n >= least, f"{sid}: acknowledged records lost: {n} records read back, {least} were acknowledged")
    fail(n <= most, f"{sid}: {n} records read back, but only {most} had been written at this point")
    for record, (sequence, message) in zip(records, written, strict=False):
        fail(
            record.message == message,
            f"{sid}: record {sequence} reads back as {record.message!r}, was written as {message!r}",
        )
    for ack in started:
        if expect.atomic_batches and isinstance(ack.op, AppendMany) and len(ack.records) > 1:
            first, last = ack.records[0][0], ack.records[-1][0]
            fail(
                not first <= n < last,
                f"{sid}: append_many of sequences {first}..{last} is partly present (up to {n})",
            )
        if isinstance(ack.op, Append) and ack.records and ack.records[0][0] <= n:
            record = records[ack.records[0][0] - 1]
            fail(
                record.request_id == ack.op.request_id, f"{sid}: record {record.sequence} lost its request_id"
            )
    return records


def check_session(store: SessionStore, sid: str, expect: Expect) -> Seen:
    result, prefix, expect_acked = expect.result, expect.prefix, expect.acked
    started = result.started(sid, prefix)
    acked = result.acknowledged(sid, prefix) if expect_acked else []
    # A failed operation may have reached the disk anyway (a write whose fsync failed).
    failed = [a for a in started if a.error is not None]
    most = sum(len(a.records) for a in started)
    least = sum(len(a.records) for a in acked)

    records = _check_records(store, sid, expect, started, least, most)
    snapshot_version = _check_context(store, sid, expect, records, started, acked, failed)
    meta_version = _check_meta(store, sid, len(records), started, acked, failed)
    usage_rows = _check_usage(store, sid, result, started, acked)
    return Seen(len(records), snapshot_version, meta_version, usage_rows)


def _check_context(
    store: SessionStore,
    sid: str,
    expect: Expect,
    records: list[RawMessageRecord],
    started: Sequence[Ack],
    acked: Sequence[Ack],
    failed: Sequence[Ack],
) -> int:
    """The session context: one written snapshot (never older than acknowledged) plus the
    tail; the version of the snapshot it shows (0 for none)."""
    n = len(records)
    view = store.load(sid)
    unexpected = [p for p in view.problems if not (not expect.acked and p.kind in _CRASH_REMAINS)]
    fail(not unexpected, f"{sid}: load() reports crash remains as damage: {[str(p) for p in unexpected]}")
    snapshots = {a.snapshot.version: a.snapshot for a in started if a.ok and a.snapshot is not None}
    least_version = max((a.snapshot.version for a in acked if a.snapshot is not None), default=0)
    boundary = 0
    if view.snapshot is None:
        fail(least_version == 0, f"{sid}: acknowledged snapshot {least_version} lost (load() shows none)")
    else:
        got = view.snapshot
        made = snapshots.get(got.version)
        fail(
            got.version >= least_version,
            f"{sid}: snapshot {got.version} shown, {least_version} was acknowledged",
        )
        if made is None:
            tried = sum(isinstance(a.op, Snapshot) for a in failed)
            fail(
                got.version <= max(snapshots, default=0) + tried,
                f"{sid}: load() shows snapshot {got.version}, which was never written",
            )
        else:
            fail(
                (got.id, got.compacted_through_sequence, got.compacted_message)
                == (made.id, made.compacted_through_sequence, made.compacted_message),
                f"{sid}: snapshot {got.version} reads back as {got!r}, was written as {made!r}",
            )
        boundary = got.compacted_through_sequence
    tail = [r.sequence for r in view.raw_tail]
    fail(tail == list(range(boundary + 1, n + 1)), f"{sid}: load() tail is {tail}, records() has 1..{n}")
    fail(
        [r.message for r in view.raw_tail] == [r.message for r in records[boundary:]],
        f"{sid}: load() tail messages differ from records()",
    )
    for policy in ("drop", "close"):
        context = view.model_context(mid_history=policy, close_last=True)
        violation = provider_violation(context)
        fail(violation is None, f"{sid}: restored context (mid_history={policy!r}) is invalid: {violation}")
    return view.snapshot.version if view.snapshot else 0


def _check_meta(
    store: SessionStore, sid: str, n: int, started: Sequence[Ack], acked: Sequence[Ack], failed: Sequence[Ack]
) -> int | None:
    """Metadata: one version that was written, not older than the newest acknowledged; that
    version (None when the session has no metadata)."""
    summary = store.get_session(sid)
    if summary is None:
        fail(not acked, f"{sid}: get_session() is None after acknowledged operations")
        return None
    fail(summary.message_count == n, f"{sid}: message_count {summary.message_count}, {n} records read back")
    updates = [a.summary for a in started if a.ok and a.summary is not None]
    least_meta = max((a.summary.version for a in acked if a.summary is not None), default=0)
    fail(
        summary.version >= least_meta,
        f"{sid}: metadata version {summary.version}, {least_meta} was acknowledged",
    )
    versions = {u.version: _summary_fields(u) for u in updates}
    if summary.version in versions:
        fail(
            _summary_fields(summary) == versions[summary.version],
            f"{sid}: metadata version {summary.version} reads back as {_summary_fields(summary)}, "
            f"was written as {versions[summary.version]}",
        )
    else:
        tried = sum(isinstance(a.op, UpdateSession) for a in failed)
        fail(
            summary.version == 0 or summary.version <= max(versions, default=0) + tried,
            f"{sid}: metadata version {summary.version} was never written",
        )
    return summary.version


def _check_usage(
    store: SessionStore, sid: str, result: WorkloadResult, started: Sequence[Ack], acked: Sequence[Ack]
) -> int:
    """Token usage: a prefix of what was recorded, holding everything acknowledged; its length."""
    rows = list(store.usage(sid))
    recorded = [a.usage for a in result.for_session(sid) if isinstance(a.op, RecordUsage) and a.usage]
    most_usage = sum(isinstance(a.op, RecordUsage) for a in started)
    least_usage = sum(isinstance(a.op, RecordUsage) for a in acked)
    fail(
        least_usage <= len(rows) <= most_usage,
        f"{sid}: {len(rows)} usage records, {least_usage}..{most_usage} expected",
    )
    for index, (row, usage) in enumerate(zip(rows, recorded, strict=False)):
        fail(_usage_row_matches(row, usage), f"{sid}: usage record {index} reads back as {row}, was {usage}")
    return len(rows)
