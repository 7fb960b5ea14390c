"""Making a fork, and deleting a session (which its forks would lose their history to).

A fork is a directory holding ``fork.json`` (written once) and then metadata; nothing of
its source is copied (spec §8.10). A session is deleted by renaming its directory away
and emptying it (spec §9.5), and refused while a fork still reads its history from it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .._errors import InvalidArgument, SessionHasForks
from .._format.names import validate_session_id
from .._format.records import ForkPoint, RawMessageRecord
from .._io import dirs as _dirs
from .._io.session_dir import SessionDir
from .._session import forks as _forks
from . import listing as _listing
from .store_state import StoreState, missing


def fork(
    state: StoreState,
    records: Callable[..., Iterable[RawMessageRecord]],
    session_id: str,
    at_sequence: int,
    new_session_id: str | None,
) -> str:
    """`SessionStore.fork`; ``records`` is `SessionStore.records`, which reads the source."""
    validate_session_id(session_id)
    if type(at_sequence) is not int or at_sequence < 1:
        raise InvalidArgument(f"at_sequence must be a positive int, got {at_sequence!r}")
    handles = state.handles
    target = handles.new_id() if new_session_id is None else new_session_id
    validate_session_id(target)
    if target == session_id:
        raise InvalidArgument(f"a session cannot be a fork of itself ({session_id!r})")
    source = state.summary(state.readable(session_id))
    if source is None:
        raise missing(session_id)
    _check_depth(state, session_id)
    target_where = state.where(target)
    # Under the source's lock: a delete of the source (which holds it too) either sees
    # this fork or has already removed what it would branch from.
    with handles.lock(session_id):
        record = next(iter(records(session_id, after=at_sequence - 1)), None)
        if record is None or record.sequence != at_sequence:
            raise InvalidArgument(
                f"sequence {at_sequence} is not a record of session {session_id!r}", session_id=session_id
            )
        point = ForkPoint(
            session_id=session_id, sequence=at_sequence, record_id=record.id, created_at=handles.clock()
        )
        # The fork's records are the source's shape: its readers (load's repair, show,
        # search, export) must read them in the source's dialect (spec §5.2).
        dialect = source.metadata.get("dialect")
        _make(state, target_where, point, {"dialect": dialect} if isinstance(dialect, str) else {})
    return target


def _check_depth(state: StoreState, session_id: str) -> None:
    """Refuse a fork of ``session_id`` that readers would not follow to its start.

    Readers follow at most `_session.forks.MAX_DEPTH` sessions and read a longer chain as the
    fork alone (spec §8.10): a fork one past it would silently lose its whole history.
    A source whose own chain cannot be followed would give the fork nothing of it.
    """
    try:
        sessions = _forks.depth(state.where, session_id)
    except _forks.DamagedFork as exc:
        raise InvalidArgument(
            f"session {session_id!r} cannot be forked: its history cannot be read ({exc})",
            session_id=session_id,
        ) from None
    if sessions >= _forks.MAX_DEPTH:
        raise InvalidArgument(
            f"session {session_id!r} ends a chain of forks of {sessions} sessions; a fork of it would be "
            f"session {sessions + 1} of the chain, and readers follow {_forks.MAX_DEPTH}",
            session_id=session_id,
        )


def _make(state: StoreState, where: SessionDir, point: ForkPoint, metadata: dict[str, Any]) -> None:
    """The fork's directory, its ``fork.json`` (once), then its metadata.

    A crash before ``fork.json`` leaves an empty directory, which is no session; one
    after it leaves a fork without metadata, which the next append gives it. Asking
    again for the same fork completes it; a different one is refused.
    """
    handles, target = state.handles, where.session_id
    made = state.exists(where)
    present = _forks.read(where) if made else None
    if present is not None:
        if (present.session_id, present.sequence) != (point.session_id, point.sequence):
            raise InvalidArgument(f"session {target!r} is another fork already", session_id=target)
        point = present  # the same fork, asked for again (or finished after a crash)
    elif made and state.summary(where) is not None:
        raise InvalidArgument(f"session {target!r} exists already; a fork needs a new id", session_id=target)
    handles.ensure_root()
    _dirs.makedirs(state.fs, where.path, durable=state.durable, session_id=target)
    if present is None and not _forks.create(where, point, durable=state.durable):
        raise InvalidArgument(
            f"session {target!r} was made a fork by someone else meanwhile", session_id=target
        )
    session = handles.session(target)
    # A fork's metadata starts with defaults (and its source's dialect), not with what an
    # earlier append of this store to a session of that id (since deleted) would have given it.
    session.init, session.init_metadata = None, metadata
    try:
        handles.prepared(session, again=True)
    finally:
        session.init_metadata = {}  # the fork's only: a later re-made session starts clean


def delete(state: StoreState, session_id: str) -> bool:
    """`SessionStore.delete_session`: False when there was nothing to delete."""
    where = state.where(session_id)
    if not state.exists(where):
        return False

    def no_forks() -> None:
        forks = _listing.forks_of(state, session_id)
        if forks:
            raise SessionHasForks(
                f"session {session_id!r} has forks that read their history from it ({', '.join(forks)}); "
                "delete them first",
                forks=forks,
                session_id=session_id,
            )

    return state.handles.delete(where, no_forks)


__all__ = ["delete", "fork"]
