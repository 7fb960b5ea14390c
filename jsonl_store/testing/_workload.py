"""Workloads: sequences of store operations, run against a store with every result kept.

A workload is a list of `Operation` values (`Append`, `AppendMany`, `Snapshot`,
`UpdateSession`, `RecordUsage`). `run_workload` runs them in order on one store and
returns a `WorkloadResult`: for each operation, what the store acknowledged (the
sequences and records it returned, the snapshot, the metadata version) and, when the
store runs on a `SimulatedFileSystem`, which stretch of the trace the call spans, so a
crash after any trace prefix knows what had been acknowledged by then.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TypeAlias

import msgspec

from .._context.view import SessionSummary
from .._format.records import CompactedMessage, ContextSnapshot, Message, ModelUsage
from ._simfs import SimulatedFileSystem

if TYPE_CHECKING:
    from ..store import SessionStore


@dataclasses.dataclass(frozen=True, slots=True)
class Append:
    """``store.append(session_id, message, ...)``."""

    session_id: str
    message: Message
    request_id: str | None = None
    usage: ModelUsage | None = None
    title: str | None = None
    metadata: dict[str, Any] | None = None
    tags: dict[str, Any] | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class AppendMany:
    """``store.append_many(session_id, messages, ...)``: all or nothing."""

    session_id: str
    messages: tuple[Message, ...]
    request_id: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class Snapshot:
    """``store.snapshot(...)`` compacting a share of the records after the last boundary.

    ``through`` in (0, 1] picks the boundary: the previous boundary plus that share
    (at least one record) of the records after it. Skipped when there are none.
    """

    session_id: str
    summary: str
    through: float = 1.0
    plain: bool = False


@dataclasses.dataclass(frozen=True, slots=True)
class UpdateSession:
    """``store.update_session(session_id, ...)`` with only the fields that are not None."""

    session_id: str
    title: str | None = None
    pinned: bool | None = None
    metadata: dict[str, Any] | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class RecordUsage:
    """``store.record_usage(session_id, ...)``: one model call's token counts (and model name)."""

    session_id: str
    usage: ModelUsage
    model: str | None = None


Operation: TypeAlias = Append | AppendMany | Snapshot | UpdateSession | RecordUsage


@dataclasses.dataclass(frozen=True, slots=True)
class Ack:
    """What one operation got back, and where in the file-system trace it ran.

    ``started``/``finished`` are trace lengths before and after the call (0 without a
    simulated file system). A crash after prefix ``p`` with ``finished <= p`` happened
    after the store acknowledged the operation; with ``started < p < finished``, during it.
    """

    index: int
    op: Operation
    started: int
    finished: int
    #: Sequences returned by append/append_many, with the messages they hold (for a
    #: failed append, the sequences it would have taken: its records may be on disk).
    records: tuple[tuple[int, Message], ...] = ()
    snapshot: ContextSnapshot | None = None
    summary: SessionSummary | None = None
    #: What record_usage was given (a ModelUsage, or a dict when a model is named), also
    #: when it failed (the record may be on disk).
    usage: ModelUsage | dict[str, Any] | None = None
    #: The operation was skipped (a snapshot with nothing to compact).
    skipped: bool = False
    error: BaseException | None = None

    @property
    def session_id(self) -> str:
        return self.op.session_id

    @property
    def ok(self) -> bool:
        """True when the store acknowledged the operation."""
        return self.error is None and not self.skipped


@dataclasses.dataclass(slots=True)
class WorkloadResult:
    """Every operation's `Ack`, in order; queries by session and trace prefix."""

    acks: list[Ack] = dataclasses.field(default_factory=list)

    @property
    def session_ids(self) -> list[str]:
        """Sessions the workload touched, in first-use order."""
        return list(dict.fromkeys(ack.session_id for ack in self.acks))

    def for_session(self, session_id: str) -> list[Ack]:
        return [ack for ack in self.acks if ack.session_id == session_id]

    def acknowledged(self, session_id: str, prefix: int) -> list[Ack]:
        """Operations of the session the store had acknowledged when the trace reached ``prefix``."""
        return [a for a in self.for_session(session_id) if a.ok and a.finished <= prefix]

    def started(self, session_id: str, prefix: int) -> list[Ack]:
        """Operations of the session that had begun changing the disk by ``prefix``."""
        return [a for a in self.for_session(session_id) if a.started < prefix]

    def written(self, session_id: str) -> list[tuple[int, Message]]:
        """Every (sequence, message) the store assigned or may have written, in order.

        A failed append's records count (they may be on disk); this is exact when the run
        stopped at the failure (``run_workload(stop_on_error=True)``).
        """
        return [record for a in self.for_session(session_id) for record in a.records]


def run_workload(
    store: SessionStore,
    workload: Iterable[Operation],
    *,
    fs: SimulatedFileSystem | None = None,
    stop_on_error: bool = False,
    reopen_on_error: bool = False,
) -> WorkloadResult:
    """Run ``workload`` on ``store`` in order and return what each operation got back.

    ``fs`` (the store's simulated file system) lets each `Ack` say which trace prefix
    it spans. An operation that raises a `jsonl_store.JsonlStoreError` or ``OSError``
    is recorded with its error (and stops the run if ``stop_on_error``, which keeps the
    sequences a failed append would have taken exact); any other exception propagates.
    ``reopen_on_error`` instead closes the store after a failure (as an application
    recovering from an I/O error would), records which of a failed append's records
    the log holds now, and goes on.
    """
    from .._errors import JsonlStoreError

    runner = _Runner(store, reopen_on_error=reopen_on_error)
    result = WorkloadResult()
    for index, op in enumerate(workload):
        started = len(fs.trace) if fs is not None else 0
        try:
            fields = runner.run(op)
        except (JsonlStoreError, OSError) as exc:
            fields = runner.failed(op, exc)
        finished = len(fs.trace) if fs is not None else 0
        ack = Ack(index, op, started, finished, **fields)
        result.acks.append(ack)
        runner.acknowledged(ack)
        if stop_on_error and ack.error is not None:
            break
    return result


class _Runner:
    """Runs operations on a store, keeping what the next ones depend on (sequences, versions)."""

    def __init__(self, store: SessionStore, *, reopen_on_error: bool) -> None:
        self.store = store
        self.reopen_on_error = reopen_on_error
        self.last: dict[str, int] = {}
        self.boundary: dict[str, int] = {}
        self.version: dict[str, int] = {}
        self.usage_count: dict[str, int] = {}

    def run(self, op: Operation) -> dict[str, Any]:
        store, sid = self.store, op.session_id
        if isinstance(op, Append):
            seq = store.append(
                sid, op.message, request_id=op.request_id, usage=op.usage, title=op.title,
                metadata=op.metadata, tags=op.tags,
            )  # fmt: skip
            return {"records": ((seq, op.message),)}
        if isinstance(op, AppendMany):
            seqs = store.append_many(sid, list(op.messages), request_id=op.request_id)
            return {"records": tuple(zip(seqs, op.messages, strict=True))}
        if isinstance(op, Snapshot):
            low, high = self.boundary.get(sid, 0), self.last.get(sid, 0)
            if high <= low:
                return {"skipped": True}
            through = low + max(1, min(high - low, math.ceil(op.through * (high - low))))
            message: Message = (
                {"role": "compacted", "content": op.summary}
                if op.plain
                else CompactedMessage(content=op.summary)
            )
            return {"snapshot": store.snapshot(sid, message, through, self.version.get(sid, 0))}
        if isinstance(op, UpdateSession):
            changes: dict[str, Any] = {"title": op.title, "pinned": op.pinned, "metadata": op.metadata}
            return {
                "summary": store.update_session(sid, **{k: v for k, v in changes.items() if v is not None})
            }
        store.record_usage(sid, _usage_payload(op))
        return {"usage": _usage_payload(op)}

    def failed(self, op: Operation, exc: BaseException) -> dict[str, Any]:
        """What a failed operation may still have done, as the fields of its `Ack`."""
        store, sid = self.store, op.session_id
        fields: dict[str, Any] = {"error": exc}
        if isinstance(op, Append | AppendMany):
            # What a failed append may still have left in the log (a write whose fsync
            # failed is in the file): the sequences it would have taken.
            messages = (op.message,) if isinstance(op, Append) else op.messages
            first = self.last.get(sid, 0) + 1
            fields["records"] = tuple(enumerate(messages, start=first))
            if self.reopen_on_error:
                store.close()
                held = [r.sequence for r in store.records(sid) if r.sequence >= first]
                fields["records"] = tuple(zip(held, messages, strict=False))
                self.last[sid] = held[-1] if held else first - 1
        elif isinstance(op, RecordUsage):
            fields["usage"] = _usage_payload(op)
            if self.reopen_on_error:
                store.close()
                if sum(1 for _ in store.usage(sid)) == self.usage_count.get(sid, 0):
                    del fields["usage"]  # it did not land: later records take its place
        elif isinstance(op, Snapshot) and self.reopen_on_error:
            store.close()
            landed = store.load(sid).snapshot  # a failed snapshot may exist all the same
            if landed is not None:
                self.boundary[sid], self.version[sid] = landed.compacted_through_sequence, landed.version
        if self.reopen_on_error:
            store.close()
        return fields

    def acknowledged(self, ack: Ack) -> None:
        sid = ack.op.session_id
        if ack.ok:
            if ack.records:
                self.last[sid] = ack.records[-1][0]
            if ack.snapshot is not None:
                self.boundary[sid] = ack.snapshot.compacted_through_sequence
                self.version[sid] = ack.snapshot.version
        if ack.usage is not None:
            self.usage_count[sid] = self.usage_count.get(sid, 0) + 1


def _usage_payload(op: RecordUsage) -> ModelUsage | dict[str, Any]:
    if op.model is None:
        return op.usage
    return {**msgspec.structs.asdict(op.usage), "model": op.model}
