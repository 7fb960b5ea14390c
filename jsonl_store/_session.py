"""One session directory, read side: metadata, the raw log's complete records, summaries.

These functions read; they never lock and never write, except `move_aside`, which
`repair` and a writer replacing torn metadata call while holding the session lock.
`store.py` (the API) and `_recovery.py` (verify and repair) both read through them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime

import msgspec

from . import _codec, _meta
from ._fs import FileSystem, open_regular
from ._log import FLAGS_READ, Line, last_good, scan
from ._meta import SessionMeta
from ._paths import DAMAGED_SUFFIX, LOG_NAME, META_NAME
from ._records import ContextSnapshot, Problem, RawMessageRecord, SessionSummary

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def read_meta(fs: FileSystem, session_id: str, directory: str, problems: list[Problem]) -> SessionMeta | None:
    """The session's metadata; None when absent or damaged (then a `bad-meta` problem).

    Raises `UnsupportedFormat` for metadata that needs a newer reader.
    """
    try:
        meta = _meta.read(fs, directory)
    except _codec.DECODE_ERRORS as exc:
        problems.append(
            Problem(
                path=os.path.join(directory, META_NAME),
                kind="bad-meta",
                reason=f"unreadable metadata: {exc}",
                action="move aside",
            )
        )
        return None
    if meta is not None:
        _meta.check_readable(meta, session_id)
    return meta


def open_log(fs: FileSystem, directory: str) -> tuple[int | None, int]:
    """A read-only descriptor on the raw log and its size; ``(None, 0)`` when there is none.

    Raises `UnsafePath` when the log is a symlink or not a regular file.
    """
    try:
        fd = open_regular(fs, os.path.join(directory, LOG_NAME), FLAGS_READ)
    except FileNotFoundError:
        return None, 0
    return fd, fs.fstat(fd).st_size


def size_for(fs: FileSystem, fd: int, size: int, snapshot: ContextSnapshot | None) -> int:
    """The log size to read up to with ``snapshot``: it may be newer than ``size``.

    A snapshot made after the reader measured the log has its boundary beyond ``size``
    (spec §10); reading then goes on to the log's current end, so the view is the log as
    of that snapshot or later, never the snapshot without the records after its boundary.
    """
    if snapshot is not None and snapshot.tail_offset > size:
        return max(size, fs.fstat(fd).st_size)
    return size


def good_end(fs: FileSystem, fd: int, size: int, floor: int) -> int:
    """Where the complete records end: before a damaged tail or a batch torn short.

    Reading stops there, so a batch cut by a power loss (or still being written) is
    left out whole, and no reader has to hold records back to find that out.
    """
    return last_good(fs, fd, size, floor, ends_batch)[0]


def decode_lines(
    fs: FileSystem,
    session_id: str,
    directory: str,
    fd: int,
    start: int,
    end: int,
    after: int,
    problems: list[Problem],
) -> Iterator[tuple[Line, RawMessageRecord]]:
    """Decode the records in ``[start, end)`` with strictly increasing sequences.

    ``end`` should come from `good_end`. A batch interrupted by damage in the middle of
    the log keeps its surviving records (the damage itself is reported).
    """
    path = os.path.join(directory, LOG_NAME)
    previous = after
    expected_gap_free = start == 0 or after > 0
    decode = _codec.decode_record
    for line in scan(fs, fd, path, start, end, problems, first_line=1 if start == 0 else None):
        try:
            record = decode(line.body, session_id)
        except _codec.DECODE_ERRORS as exc:
            problems.append(
                Problem(path, "bad-record", f"checksum holds but record does not fit: {exc}", "skipped",
                        line.offset, line.number)
            )
            continue
        sequence = record.sequence
        if sequence != previous + 1:
            if sequence <= previous:
                if sequence <= after and previous == after:
                    continue  # before the boundary: `records(after=...)` skips these
                problems.append(
                    Problem(path, "out-of-order", f"sequence {sequence} after {previous}", "skipped",
                            line.offset, line.number)
                )
                continue
            if expected_gap_free:
                problems.append(
                    Problem(path, "gap", f"sequences {previous + 1}..{sequence - 1} are missing",
                            "reported; later records are kept", line.offset, line.number)
                )
        previous = sequence
        if record.started_at is None:
            # Instantaneous messages store no timing: it equals the append time.
            msgspec.structs.force_setattr(record, "started_at", record.created_at)
            msgspec.structs.force_setattr(record, "completed_at", record.created_at)
        yield line, record


def first_record_time(fs: FileSystem, directory: str) -> datetime | None:
    """When the raw log's first record was appended (None for no log or no record)."""
    fd, size = open_log(fs, directory)
    if fd is None:
        return None
    try:
        first = next(iter(scan(fs, fd, "", 0, min(size, 1 << 16), None)), None)
        return record_summary(first.body)[1] if first is not None else None
    finally:
        fs.close(fd)


def summary(fs: FileSystem, session_id: str, directory: str, meta: SessionMeta | None) -> SessionSummary | None:
    """The session's summary from its metadata and its last complete record (None: no session).

    Only the last complete record is read (about 4 KiB), and only its sequence and time
    are decoded, so listing stays cheap for long logs.
    """
    fd, size = open_log(fs, directory)
    last_sequence, last_time, first_time = 0, None, None
    try:
        if fd is not None and size:
            _, line = last_good(fs, fd, size, 0, ends_batch)
            if line is not None:
                last_sequence, last_time = record_summary(line.body)
            if meta is None:
                first_time = first_record_time(fs, directory)
    finally:
        if fd is not None:
            fs.close(fd)
    if meta is None and fd is None:
        return None
    created = meta.created_at if meta else (first_time or last_time or _EPOCH)
    meta = meta or SessionMeta(created_at=created)
    return SessionSummary(
        session_id=session_id,
        parent_session_id=meta.parent_session_id,
        session_type=meta.session_type,
        title=meta.title,
        agent_name=meta.agent_name,
        message_count=last_sequence,
        created_at=created,
        updated_at=last_time or created,
        pinned=meta.pinned,
        metadata=meta.metadata,
        version=meta.version,
        title_version=meta.title_version,
        metadata_version=meta.metadata_version,
    )


def move_aside(fs: FileSystem, directory: str, name: str) -> None:
    """Rename a damaged file to ``<name>.damaged`` (``.2.damaged``, ... if taken)."""
    target = name + DAMAGED_SUFFIX
    existing = set(fs.listdir(directory))
    counter = 1
    while target in existing:
        counter += 1
        target = f"{name}.{counter}{DAMAGED_SUFFIX}"
    fs.rename(os.path.join(directory, name), os.path.join(directory, target))
    fs.fsync_dir(directory)


def sequence_of(line: Line | None) -> int:
    """A line's sequence, decoded once and kept on the line (0 for no line)."""
    if line is None:
        return 0
    if line.sequence < 0:
        line.sequence = body_sequence(line.body)
    return line.sequence


def record_summary(body: bytes) -> tuple[int, datetime | None]:
    try:
        return _codec.record_summary(body)
    except _codec.DECODE_ERRORS:
        return 0, None


def body_sequence(body: bytes) -> int:
    """The sequence of a checksummed line (0 for one that is not a record)."""
    try:
        return _codec.record_position(body)[0]
    except _codec.DECODE_ERRORS:
        return 0


def ends_batch(line: Line) -> bool:
    """Whether the good part of a log may end after ``line`` (it is not mid-batch)."""
    try:
        sequence, batch_end, _ = _codec.record_position(line.body)
    except _codec.DECODE_ERRORS:
        return True
    return batch_end <= sequence
