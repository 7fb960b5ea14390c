"""The store's reads of one session: `load`, `records`, `tail`, the usage log, model calls.

Each reads the session's `History` (the one place that knows forks) and reports the
damage it met to the store (`StoreState.report`); a generator turns an ``OSError`` met
while the caller iterates into a `StorageError` itself, since it runs after the public
method returned.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from .._context import resume as _resume
from .._context.dialect_neutral import Dialect
from .._context.dialects import stored_dialect
from .._context.view import SessionSummary, SessionView
from .._errors import CorruptSession, InvalidArgument, JsonlStoreError, SequenceConflict
from .._format.records import RawMessageRecord
from .._io.session_dir import SessionDir
from .._log.problems import CORRUPT_KINDS, Reporter
from .._session import summary as _session
from .._session import usage as _usage
from .store_state import StoreState, failure


def load(state: StoreState, session_id: str, *, strict: bool) -> SessionView:
    """`SessionStore.load`."""
    if type(strict) is not bool:
        raise InvalidArgument(f"strict must be a bool, got {strict!r}")
    where = state.where(session_id)
    state.exists(where)
    found = Reporter()
    meta = _session.read_meta(where, found)
    snapshot, tail = state.history(where, found).context()
    state.report(found.problems)
    if strict:
        corrupt = [p for p in found.problems if p.kind in CORRUPT_KINDS]
        if corrupt:
            raise CorruptSession(
                f"session {session_id!r} is damaged: {corrupt[0]}"
                + (f" (and {len(corrupt) - 1} more)" if len(corrupt) > 1 else ""),
                problems=corrupt,
                session_id=session_id,
            )
    view = SessionView(
        session_id=session_id,
        parent_session_id=meta.parent_session_id if meta else None,
        session_type=meta.session_type if meta else 0,
        title=meta.title if meta else None,
        agent_name=meta.agent_name if meta else None,
        snapshot=snapshot,
        raw_tail=tail,
        problems=found.problems,
        dialect=stored_dialect(meta.metadata) if meta else "neutral",
    )
    state.handles.saw(session_id, view.last_sequence, _last_record_id(view))
    return view


def _last_record_id(view: SessionView) -> str:
    """The id of the record at ``view.last_sequence`` ("" for an empty session)."""
    if view.raw_tail:
        return view.raw_tail[-1].id
    return view.snapshot.boundary_record_id if view.snapshot is not None else ""


def resume(
    load: Callable[[str], SessionView],
    append_many: Callable[..., list[int]],
    session_id: str,
    notice: str,
    dialect: str | Dialect | None,
) -> SessionView:
    """`SessionStore.resume` over the store's own ``load`` and ``append_many``.

    The closing results are appended only if the log still ends where it was loaded
    (``expected_last_sequence``), so concurrent resumes store them once.
    """
    if not isinstance(notice, str) or not notice:
        raise InvalidArgument(f"notice must be a non-empty str, got {notice!r}")
    while True:
        view = load(session_id)
        closing = _resume.closing_results(view.context, notice, view.dialect if dialect is None else dialect)
        if not closing:
            return view
        try:
            append_many(session_id, closing, expected_last_sequence=view.last_sequence)
        except SequenceConflict:
            continue  # another writer appended (maybe these very results): look again


def open_records(
    state: StoreState, session_id: str, after: int, containing: bytes | None
) -> Iterator[RawMessageRecord]:
    """`SessionStore.records`: the arguments and the session checked now, the records read lazily."""
    if type(after) is not int or after < 0:
        raise InvalidArgument(f"after must be a non-negative int, got {after!r}")
    if containing is not None and (not isinstance(containing, bytes) or not containing):
        raise InvalidArgument(f"containing must be non-empty bytes or None, got {containing!r}")
    # Checked now, not at the first next(): a session this version cannot read fails
    # where records() is called.
    return records(state, state.readable(session_id), after, containing)


def records(
    state: StoreState,
    where: SessionDir,
    after: int,
    containing: bytes | None = None,
    *,
    in_blobs: bool = True,
) -> Iterator[RawMessageRecord]:
    """`SessionStore.records`' stream, for a session already checked readable (``in_blobs``:
    `_log.reader.LogReader.records`)."""
    found = Reporter()
    try:
        yield from state.history(where, found).records(after, containing, in_blobs=in_blobs)
    except JsonlStoreError:
        raise
    except OSError as exc:
        raise failure(state.root, exc, "records", where.session_id) from exc
    finally:
        # Snapshots skipped on the way are `load`'s to report; the records' damage is ours.
        state.report(p for p in found.problems if p.kind != "bad-snapshot")


def get_session(state: StoreState, session_id: str) -> SessionSummary | None:
    """`SessionStore.get_session`: the session's summary, None when its directory is not there."""
    where = state.where(session_id)
    if not state.exists(where):
        return None
    return state.summary(where)


def tail(state: StoreState, session_id: str, n: int) -> list[RawMessageRecord]:
    """`SessionStore.tail`."""
    if type(n) is not int or n < 0:
        raise InvalidArgument(f"n must be a non-negative int, got {n!r}")
    where = state.readable(session_id)
    found = Reporter()
    last = state.history(where, found).last(n)
    state.report(found.problems)
    return last


def usage(state: StoreState, where: SessionDir) -> Iterator[dict[str, Any]]:
    """`SessionStore.usage`'s stream; as in `records`, OSErrors met while iterating become StorageErrors."""
    found = Reporter()
    try:
        yield from _usage.read(where, found)
    except JsonlStoreError:
        raise
    except OSError as exc:
        raise failure(state.root, exc, "usage", where.session_id) from exc
    finally:
        state.report(found.problems)


def own_record_calls(state: StoreState, session_id: str) -> list[dict[str, Any]]:
    """The model calls recorded with the session's own records (`_session.usage.record_calls`)."""
    where = state.readable(session_id)
    found = Reporter()
    try:
        return list(_usage.record_calls(where, found))
    finally:
        state.report(p for p in found.problems if p.kind != "bad-snapshot")


__all__ = ["get_session", "load", "open_records", "own_record_calls", "records", "resume", "tail", "usage"]
