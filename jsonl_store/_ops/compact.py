"""`snapshot()`: a compaction checkpoint made under the session lock (spec §9.6, §10)."""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from .._errors import InvalidArgument, SessionNotFound, SnapshotConflict
from .._format import codec as _codec
from .._format.names import LOG_NAME
from .._format.records import ContextSnapshot, Message
from .._io.session_dir import SessionDir
from .._log import snapshots as _snapshots
from .._log.reader import LogReader, sequence_of
from .._log.scan import first_line_converted, last_good
from .._session.checkpoint import is_compacted
from .._session.handles import Handles
from .._text.redact import Redactor
from .store_state import StoreState


def check_arguments(
    compacted_message: Message, compacted_through_sequence: int, expected_version: int
) -> bytes:
    """The compacted message's encoding, once the arguments are known to make a snapshot."""
    if not is_compacted(compacted_message):
        raise InvalidArgument(
            "a snapshot's message must be a CompactedMessage (or a dict with role 'compacted')"
        )
    payload, _ = _codec.encode_message(compacted_message)
    _snapshots.check_size(payload)
    for name, value in (
        ("compacted_through_sequence", compacted_through_sequence),
        ("expected_version", expected_version),
    ):
        if type(value) is not int or value < 0:
            raise InvalidArgument(f"{name} must be a non-negative int, got {value!r}")
    return payload


def create(
    handles: Handles,
    where: SessionDir,
    compacted_message: Message,
    compacted_through_sequence: int,
    versions: tuple[int, int],
    redactor: Redactor | None = None,
) -> ContextSnapshot:
    """Create snapshot ``expected_version + 1``; the caller has checked the arguments and holds the lock.

    ``versions`` is (``expected_version``, the version of the snapshot a fork's context
    starts at while it has none of its own, else 0).
    """
    expected_version, inherited = versions
    fs, session_id = where.fs, where.session_id
    payload, plain = _codec.encode_message(compacted_message)
    if redactor is not None:
        redacted = redactor.redact_json(payload)
        if redacted is not payload:
            # The caller gets back what is stored, as a later `load` would give it.
            payload = redacted
            compacted_message = _codec.decode_message(payload, plain)
    _restore_if_converted(handles, where)
    with LogReader(where, handles.reporter) as log:
        if log.fd is None:
            raise SessionNotFound(f"session {session_id!r} has no records to compact", session_id=session_id)
        if handles.durable:
            # The snapshot must never be on disk without its boundary record: records
            # written under durability="none", or before a failed fsync, may still be
            # only in the page cache.
            fs.fdatasync(log.fd)
        # One listing, under the lock, for both the newest snapshot and the next version:
        # only a snapshot() holding the lock makes a new one.
        present = _snapshots.versions(where)
        current = log.latest_snapshot(present=present)
        current_version = current.version if current else inherited
        _expect(session_id, expected_version, current_version)
        previous = current.compacted_through_sequence if current else 0
        if compacted_through_sequence <= previous:
            raise InvalidArgument(
                f"the boundary must advance past sequence {previous}, got {compacted_through_sequence}"
            )
        start = current.tail_offset if current else 0
        end, last = log.last_good(start)
        boundary = _snapshots.find_boundary(
            where, log.fd, start, end, previous, compacted_through_sequence,
            sequence_of(last) if last is not None else previous,
        )  # fmt: skip
        if boundary is None:
            raise InvalidArgument(
                f"sequence {compacted_through_sequence} is not in session {session_id!r}'s log"
            )
    # Damaged files keep their number, so the next version is above all of them.
    version = max([current_version, *present]) + 1
    snapshot = ContextSnapshot(
        version=version,
        id=handles.new_id(),
        created_at=handles.clock(),
        compacted_through_sequence=compacted_through_sequence,
        boundary_offset=boundary.offset,
        tail_offset=boundary.end,
        boundary_record_id=_codec.record_position(boundary.body)[2],
        plain=plain,
        compacted_message=msgspec.Raw(payload),
    )
    _write(handles, where, snapshot)
    return msgspec.structs.replace(snapshot, compacted_message=compacted_message, session_id=session_id)


def before_batch(
    handles: Handles,
    where: SessionDir,
    compacted_message: Message,
    versions: tuple[int, int],
    redactor: Redactor | None = None,
) -> Callable[[int, bytes], None]:
    """What makes the snapshot of a checkpoint's rewrite, once its boundary's place is known.

    The rewrite writes the marker record and the new tail as one batch; its snapshot
    (through the marker) is made right before that batch's write, under the append lock,
    by the returned ``make(offset, marker_line)``. Until the batch is whole on disk, the
    snapshot is not trusted (spec §10), so a crash leaves the old context or the new one.
    Checked now, under the session lock the caller holds: the expected version (else
    `SnapshotConflict`); the version is one above every snapshot file present. ``versions``
    is as `create` takes it.
    """
    expected_version, inherited = versions
    payload, plain = _codec.encode_message(compacted_message)
    if redactor is not None:
        payload = redactor.redact_json(payload)
    _restore_if_converted(handles, where)
    present = _snapshots.versions(where)
    with LogReader(where, handles.reporter) as log:
        current = log.latest_snapshot(present=present)
    current_version = current.version if current else inherited
    _expect(where.session_id, expected_version, current_version)
    version = max([current_version, *present]) + 1

    def make(offset: int, marker_line: bytes) -> None:
        sequence, _, record_id = _codec.record_position(marker_line[:-1])
        snapshot = ContextSnapshot(
            version=version,
            id=handles.new_id(),
            created_at=handles.clock(),
            compacted_through_sequence=sequence,
            boundary_offset=offset,
            tail_offset=offset + len(marker_line),
            boundary_record_id=record_id,
            plain=plain,
            compacted_message=msgspec.Raw(payload),
        )
        _write(handles, where, snapshot)

    return make


def _expect(session_id: str, expected_version: int, current_version: int) -> None:
    """`SnapshotConflict` unless the caller's context came from the newest snapshot."""
    if expected_version != current_version:
        raise SnapshotConflict(
            f"session {session_id!r} is at snapshot version {current_version}, not {expected_version}",
            session_id=session_id,
        )


def _write(handles: Handles, where: SessionDir, snapshot: ContextSnapshot) -> None:
    """Create the snapshot's file once (by link); `SnapshotConflict` when its number is taken."""
    if not _snapshots.create(where, snapshot, durable=handles.durable):
        raise SnapshotConflict(
            f"snapshot {snapshot.version} of session {where.session_id!r} was created by another writer",
            session_id=where.session_id,
        )


def _restore_if_converted(handles: Handles, where: SessionDir) -> None:
    """Give the raw log back its bytes as written when a text conversion is seen in it.

    A snapshot's offsets must be those of the restored log (§9.3, §10): made on lines a
    text conversion lengthened, they would stop holding as soon as a writer restored the
    log. So a conversion seen in the first or last line is undone first, as the next
    append would (and as `repair` does), under the append lock.
    """
    fs, session_id = where.fs, where.session_id
    with LogReader(where) as log:
        if log.fd is None:
            return
        _, last = last_good(fs, log.fd, log.size)
        converted = (last is not None and last.converted) or first_line_converted(fs, log.fd, log.size)
    if converted:
        writer = handles.new_writer(handles.session(session_id), LOG_NAME, f"session {session_id!r}")
        try:
            writer.restore()
        finally:
            writer.close()


def take(
    state: StoreState,
    session_id: str,
    compacted_message: Message,
    compacted_through_sequence: int,
    expected_version: int,
) -> ContextSnapshot:
    """`SessionStore.snapshot`: the arguments and the session checked (writable, a fork's
    boundary past its branch), then the snapshot made under its lock."""
    where = state.where(session_id)
    check_arguments(compacted_message, compacted_through_sequence, expected_version)
    state.require_writable(where)
    point = state.fork_point(where)
    if point is not None and compacted_through_sequence <= point.sequence:
        # A fork's boundary must be one of its own records (spec §8.10): the records
        # before its branch are its source's, and a snapshot never reaches into them.
        raise InvalidArgument(
            f"sequence {compacted_through_sequence} is before session {session_id!r}'s own records "
            f"(it is a fork of its source at #{point.sequence}); compact a later record",
            session_id=session_id,
        )
    tally = state.tally()
    inherited = state.inherited_version(where) if point is not None else 0
    with state.handles.lock(session_id):
        snapshot = create(
            state.handles,
            where,
            compacted_message,
            compacted_through_sequence,
            (expected_version, inherited),
            tally,
        )
    state.redacted(tally, session_id, "snapshot")
    return snapshot
