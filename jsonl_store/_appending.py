"""The store's writes to a session's logs: appends of records and of usage lines.

An append's records are encoded and checked by `_append` before any file is touched;
here the session is opened, the write made through its `LogWriter` (retried when
another process deleted the session under it, spec §9.5), and what the redactor replaced
reported (spec §18.1).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from . import _append, _usage
from ._handles import OpenSession
from ._log import Line, LogWriter
from ._records import Message, ModelUsage
from ._store_state import StoreState

#: How many times `write` tries a write whose session directory vanished.
WRITE_ATTEMPTS = 8

#: What `append_many` passes to the encoder when a keyword is not given (a checkpoint's
#: rewrite, and the check of a save that makes its session).
REWRITE_DEFAULTS: dict[str, Any] = {
    "request_id": None,
    "parent_session_id": None,
    "title": None,
    "agent_name": None,
    "session_type": 0,
    "metadata": None,
    "tags": None,
    "created_at": None,
}


def append_one(state: StoreState, session_id: str, message: Message, usage: ModelUsage | None) -> int:
    """`append` of a runner's plain ``append(session_id, message[, usage=...])``, flat."""
    handles = state.handles
    session = handles.session(session_id)
    tally = state.tally()
    one = _append.encode_one(session, message, usage, state.sizes, handles.clock, handles.new_id, tally)
    if one is None:
        return 0  # not to be persisted
    write(session, handles.writer, one.build)
    if tally is not None and tally.kinds:
        state.redacted(tally, session_id, "append", (one.sequence,))
    return one.sequence


def append(
    state: StoreState, session_id: str, operation: str, messages: Sequence[Message], **options: Any
) -> list[int]:
    """Append ``messages`` in one write with ``options`` (`append_many`'s keywords); their sequences."""
    handles = state.handles
    session = handles.session(session_id)
    tally = state.tally()
    # Everything that can fail on bad input is checked before any file is touched.
    batch = _append.encode(
        session,
        messages,
        state.sizes,
        **options,
        clock=handles.clock,
        new_id=handles.new_id,
        redactor=tally,
    )
    if batch is None:
        return [0] * len(messages)  # nothing to persist
    if batch.expected:
        expected = batch.expected
        _append.refuse_unstarted(session, expected)
        # Deleted between that look and the write: the retry must not make it again.
        write(session, handles.writer, batch.build, lambda: _append.refuse_unstarted(session, expected))
    else:
        write(session, handles.writer, batch.build)
    if tally is not None:
        made = take_made_redacted(session)
        if made:
            tally.add(made)
        if tally.kinds:
            state.redacted(tally, session_id, operation, batch.sequences)
    return batch.sequences


def write(
    session: OpenSession,
    writer_of: Callable[[OpenSession], LogWriter],
    build: Callable[[Line | None], tuple[bytes, Line]],
    before_retry: Callable[[], None] | None = None,
) -> None:
    """``writer_of(session).append(build)``; when the session directory vanished under
    us (another process deleted it), the session is made again and the write retried,
    unless ``before_retry`` raises first. A delete renames the whole directory away
    (spec §9.5), so a process deleting the session again and again can take it from
    under each retry: the write is tried `WRITE_ATTEMPTS` times in all."""
    for attempt in range(WRITE_ATTEMPTS):
        writer = writer_of(session)
        try:
            writer.append(build)
            return
        except FileNotFoundError:
            if attempt == WRITE_ATTEMPTS - 1:
                raise
            session.prepared = False
            writer.close()
            if before_retry is not None:
                before_retry()


def take_made_redacted(session: OpenSession) -> dict[str, int]:
    """What redaction replaced in the labels of a metadata file this store made, once."""
    with session.mutex:
        made, session.made_redacted = session.made_redacted, {}
    return made


def record_usage(state: StoreState, session_id: str, record: ModelUsage | Mapping[str, Any]) -> None:
    """`SessionStore.record_usage`: one line appended to the session's token-usage log."""
    handles = state.handles
    session = handles.session(session_id)
    line = _usage.encode(record, handles.clock)
    tally = state.tally()
    if tally is not None:
        line = _usage.redact(line, tally)
    build = _usage.builder(line)
    # If the session has to be made (anew) for this record, it starts with defaults,
    # not with what an earlier append of this store would have given it.
    session.init = None
    write(session, handles.usage_writer, build)
    state.redacted(tally, session_id, "record_usage")


__all__ = [
    "REWRITE_DEFAULTS",
    "WRITE_ATTEMPTS",
    "append",
    "append_one",
    "record_usage",
    "take_made_redacted",
    "write",
]
