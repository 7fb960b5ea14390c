"""Making a session and changing its metadata: `create_session` and `update_session`.

Metadata is merged under the session lock (spec §7): only the fields an update names
change, and what the redactor replaces in them is reported as the write's
(`StoreState.redacted`, spec §18.1).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from .._context.view import SessionSummary
from .._errors import InvalidArgument, ParentMismatch
from .._format import codec as _codec
from .._io import dirs as _dirs
from .._io.session_dir import SessionDir
from .._session import meta as _meta
from .._session import summary as _session
from .._session.meta import Origin, SessionMeta
from . import append as _append
from .store_state import StoreState, missing


def create(
    state: StoreState,
    session_id: str,
    *,
    title: str | None,
    agent_name: str | None,
    parent_session_id: str | None,
    session_type: int,
    metadata: Mapping[str, Any] | None,
    created_at: datetime | None,
) -> SessionSummary:
    """`SessionStore.create_session`: the arguments checked, then the session made, or found made."""
    handles = state.handles
    where = state.where(session_id)
    _append.check_session_options(session_id, None, parent_session_id, session_type)
    _meta.check_title(title)
    _meta.check_agent_name(agent_name)
    if metadata is not None and not isinstance(metadata, Mapping):
        raise InvalidArgument(f"metadata must be a mapping, got {type(metadata).__name__}")
    began = handles.clock() if created_at is None else _append.record_time(created_at)
    initial = dict(metadata or {})
    _codec.encode_json(initial, "metadata")
    redactor = state.tally()
    if redactor is not None:
        initial = redactor.redact_value(initial)
        title = redactor.redact(title) if title is not None else None
        agent_name = redactor.redact(agent_name) if agent_name is not None else None
    session = handles.session(session_id)
    session.init = (began, parent_session_id, session_type, agent_name, title)
    session.init_redacted = {}
    session.init_metadata = initial
    handles.prepared(session, again=True)
    state.redacted(redactor, session_id, "create_session")
    if parent_session_id is not None and session.parent != parent_session_id:
        raise ParentMismatch(
            f"session {session_id!r} has parent {session.parent!r}; a parent never changes "
            f"(got {parent_session_id!r})",
            session_id=session_id,
        )
    summary = state.summary(where)
    if summary is None:  # deleted again at once by another process
        raise missing(session_id)
    return summary


def update(
    state: StoreState,
    session_id: str,
    *,
    title: str | None,
    pinned: bool,
    metadata: Mapping[str, Any] | None,
    remove_metadata: Iterable[str],
    expected_version: int | None,
    origin: Origin,
    agent_name: str | None,
) -> SessionSummary:
    """`SessionStore.update_session`: the id and the fields checked (`_session.meta.Update.checked`:
    a field left at `UNSET` is not changed), then merged under the session lock."""
    where = state.where(session_id)
    update = _meta.Update.checked(
        title=title, pinned=pinned, metadata=metadata, remove_metadata=remove_metadata,
        expected_version=expected_version, origin=origin, agent_name=agent_name,
    )  # fmt: skip
    handles = state.handles
    tally = state.tally()
    if tally is not None:
        update.redact(tally)
    if not state.exists(where):
        raise missing(session_id)
    with handles.lock(session_id):
        meta = state.read_meta(where)
        if meta is None:
            meta = _unwritten_meta(state, where)
        _meta.check_writable(meta, session_id)
        if update.apply(meta, session_id):
            _meta.write(where, meta, durable=state.durable)
            state.redacted(tally, session_id, "update_session")
    # The log's end as this store's writer left it, when an fstat and an lstat show the
    # file at the log's path unchanged since (`LogWriter.known_last`): no reopening and
    # reading of it, which after a durable write's fsyncs cost more than the rest.
    summary = _session.summary(where, meta, known_end=handles.known_log_end(session_id))
    assert summary is not None
    return summary


def _unwritten_meta(state: StoreState, where: SessionDir) -> SessionMeta:
    """The metadata to give a session that has none (readable) yet, under its lock.

    Such a session exists if its log does, or its fork file: a fork whose making
    stopped before its metadata is one `load`, `get_session` and `list_sessions` show
    (spec §9.13), so an update gives it its metadata as its next append would.
    Raises `SessionNotFound` otherwise.
    """
    began = _session.began_at(where)
    if began is None and not _dirs.exists(state.fs, where.log_path):
        raise missing(where.session_id)
    return SessionMeta(created_at=began or state.handles.clock())


__all__ = ["create", "update"]
