"""The store's writes to a session's logs: appends of records and of usage lines.

An append's records are encoded and checked by `_ops.append` before any file is touched;
here the session is opened, the write made through its `LogWriter` (retried when
another process deleted the session under it, spec §9.5), and what the redactor replaced
reported (spec §18.1).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .._errors import JsonlStoreError
from .._format.records import Message, MessageTiming, ModelUsage
from .._log.scan import Line
from .._log.writer import LogWriter
from .._session import usage as _usage
from .._session.handles import OpenSession
from .._text.redactions import Tally
from . import append as _append
from .store_state import StoreState, failure

#: What a writer appends: the bytes and last line of a batch, given the log's last line.
Build = Callable[[Line | None], tuple[bytes, Line]]

#: How many times `write` tries a write whose session directory vanished.
WRITE_ATTEMPTS = 8


def append(
    state: StoreState,
    session_id: str,
    operation: str,
    messages: Sequence[Message],
    timings: Sequence[MessageTiming | None],
    usages: Sequence[ModelUsage | None],
    options: _append.Options,
    before_write: Callable[[Tally | None], Callable[[int, bytes], None]] | None = None,
) -> list[int]:
    """The one append path: ``messages`` encoded (`_ops.append`) and written in one write; their sequences.

    A plain ``append`` (one message, no option but a usage) takes `_ops.append.encode_one`,
    the same record encoder without the batch around it. ``operation`` names the call in
    redaction notices (spec §18.1). ``before_write(tally)`` gives what runs under the
    append lock right before the write, with the batch's offset and first line (a
    checkpoint's rewrite makes its snapshot there, spec §10). An ``OSError`` becomes the
    `StorageError` of the public method ``operation`` (`store_state.storage_errors`),
    here rather than by a wrapper around the facade's method: every append pays no call more.
    """
    try:
        handles = state.handles
        session = handles.session(session_id)
        tally = state.tally()
        o = options
        # No option given (a session_type of exactly the int 0 is none): `encode_one`'s append.
        # Written out, not a method of `Options`: every append runs it, and a call costs more.
        # Compared by identity, never with a caller's ``__eq__``.
        if (
            operation == "append"
            and before_write is None
            and timings[0] is None
            and o.request_id is None
            and o.parent_session_id is None
            and o.title is None
            and o.agent_name is None
            and type(o.session_type) is int
            and not o.session_type
            and o.metadata is None
            and o.tags is None
            and o.expected_last_sequence is None
            and o.created_at is None
        ):
            one = _append.encode_one(
                session, messages[0], usages[0], state.sizes, handles.clock, handles.new_id, tally
            )
            if one is None:
                return [0]  # not to be persisted
            write(session, handles.writer, one.build)
            _report(state, session, tally, operation, [one.sequence], made=False)
            return [one.sequence]
        # Everything that can fail on bad input is checked before any file is touched.
        batch = _append.encode(
            session, messages, state.sizes, options, timings, usages, handles.clock, handles.new_id, tally
        )
        if batch is None:
            return [0] * len(messages)  # nothing to persist
        build = batch.build if before_write is None else _made_before(batch.build, before_write(tally))
        if batch.expected:
            expected = batch.expected
            _append.refuse_unstarted(session, expected)
            # Deleted between that look and the write: the retry must not make it again.
            write(session, handles.writer, build, lambda: _append.refuse_unstarted(session, expected))
        else:
            write(session, handles.writer, build)
        # The labels of a metadata file this write made count too (a rewrite's session is made already).
        _report(state, session, tally, operation, batch.sequences, made=before_write is None)
        return batch.sequences
    except JsonlStoreError:
        raise
    except OSError as exc:
        raise failure(state.root, exc, operation, session_id) from exc


def _report(
    state: StoreState,
    session: OpenSession,
    tally: Tally | None,
    operation: str,
    sequences: list[int],
    *,
    made: bool,
) -> None:
    """Say what a write's redactor replaced (spec §18.1); with ``made``, in the metadata it made too."""
    if tally is None:
        return
    taken = take_made_redacted(session) if made else None
    if taken:
        tally.add(taken)
    if tally.kinds:
        state.redacted(tally, session.session_id, operation, sequences)


def _made_before(build: Build, make: Callable[[int, bytes], None]) -> Build:
    """``build``, calling ``make(offset, first line)`` first: under the append lock, right
    before the write, where the batch goes (the writer has cut any damaged tail)."""

    def wrapped(last: Line | None) -> tuple[bytes, Line]:
        data, line = build(last)
        make(last.end if last is not None else 0, data[: data.index(b"\n") + 1])
        return data, line

    return wrapped


def write(
    session: OpenSession,
    writer_of: Callable[[OpenSession], LogWriter],
    build: Build,
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
    "WRITE_ATTEMPTS",
    "Build",
    "append",
    "record_usage",
    "take_made_redacted",
    "write",
]
