"""`LogReader`: the one way the raw log is read, by load, records, checkpoint, snapshot and verify.

A read is always the same pipeline: open the log, find the newest snapshot that agrees
with it (spec §10), find where its complete records end (§8.3, §8.7), and decode the
records in between (§8.5, §8.6). Whatever damage is met goes to the reporter the reader
was given; the reader never decides what becomes of it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from types import TracebackType
from typing import Self

from .._format import codec as _codec
from .._format.records import ContextSnapshot, RawMessageRecord
from .._io.fs import open_regular_stat
from .._io.session_dir import SessionDir
from . import blobs as _blobs
from . import snapshots as _snapshots
from .modes import Mode, Source, read
from .problems import DISCARD, KEPT_AFTER_GAP, SKIPPED, Problem, Reporter
from .scan import FLAGS_READ, Line, backward, last_good


class LogReader:
    """A read-only descriptor on one session's raw log, and what was learnt reading it.

    Use it as a context manager: the descriptor is closed on exit. ``exists`` is False
    when the session has no log; every read then finds nothing. With ``listings`` the
    snapshot versions are read through ``where.listings`` (the store's cache), else the
    directory is listed when a snapshot is looked for.
    """

    __slots__ = ("fd", "fs", "path", "reporter", "session_id", "size", "where")

    def __init__(self, where: SessionDir, reporter: Reporter = DISCARD, *, listings: bool = False) -> None:
        if not listings and where.listings is not None:
            where = SessionDir(where.fs, where.session_id, where.path)
        self.where = where
        # Its parts as attributes of their own too: the read loops and callers use them.
        self.fs = where.fs
        self.session_id = where.session_id
        self.path = where.log_path
        self.reporter = reporter
        self.fd: int | None
        try:
            # Raises `UnsafePath` for a symlink or anything but a regular file.
            self.fd, st = open_regular_stat(
                self.fs, self.path, FLAGS_READ, session_id=self.session_id or None
            )
        except FileNotFoundError:
            self.fd, self.size = None, 0
        else:
            self.size = st.st_size

    @property
    def exists(self) -> bool:
        return self.fd is not None

    def close(self) -> None:
        if self.fd is not None:
            self.fs.close(self.fd)
            self.fd = None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    def latest_snapshot(
        self, *, at_most: int | None = None, present: Sequence[int] | None = None
    ) -> ContextSnapshot | None:
        """The newest snapshot that agrees with the log (at most ``at_most``); skipped ones are reported.

        A snapshot made after the log was measured has its boundary beyond the size
        measured (spec §10): the reader then reads on to the log's current end, so what
        it gives back is the log as of that snapshot or later, never the snapshot
        without the records after its boundary.
        """
        snapshot = _snapshots.latest(
            self.where, self.fd, self.size, self.reporter, at_most=at_most, present=present
        )
        if snapshot is not None and self.fd is not None and snapshot.tail_offset > self.size:
            self.size = max(self.size, self.fs.fstat(self.fd).st_size)
        return snapshot

    def last_good(self, start: int = 0) -> tuple[int, Line | None]:
        """Where the complete records after ``start`` end, and the last of them.

        Before a damaged tail or a batch torn short (§8.7): reading stops there, so a
        batch cut by a power loss (or still being written) is left out whole.
        """
        if self.fd is None:
            return start, None
        return last_good(self.fs, self.fd, self.size, start, ends_batch)

    def records(
        self, start: int = 0, after: int = 0, containing: bytes | None = None, *, in_blobs: bool = True
    ) -> Iterator[tuple[Line, RawMessageRecord]]:
        """The complete records from offset ``start`` on, with sequences above ``after``, in order.

        ``start`` is 0 or a snapshot's tail offset and ``after`` the sequence reading
        continues from. Records whose sequence does not increase are skipped; a gap is
        reported and reading goes on (§8.6). A batch interrupted by damage in the middle
        of the log keeps its surviving records (the damage itself is reported).
        With ``containing``, only the records whose line holds those bytes are read
        (`scan`'s ``wanted``): the order check applies among them, gaps (expected
        between them) are not reported, and problems carry no line number.
        ``in_blobs=False`` says no string in a blob file can hold ``containing`` (the
        caller looked, as `jsonl_store.search` does): a session with blob files then
        reads only the lines holding it too.
        """
        if self.fd is None:
            return
        end, _ = self.last_good(start)
        fs, fd, path, session_id, reporter = self.fs, self.fd, self.path, self.session_id, self.reporter
        previous = after
        expected_gap_free = (start == 0 or after > 0) and containing is None
        decode, blob_key, where = _codec.decode_record, _blobs.KEY_BYTES, self.where
        # A filtered read counts no lines (counting the ones it steps over would cost a
        # pass of its own): its problems name an offset only. In a session with blob
        # files the bytes looked for may be in a blob (§5.1): its lines are all read, and
        # filtered once their strings are back.
        wanted = None if containing is None or (in_blobs and _blobs.has_blobs(where)) else containing
        first_line = 1 if start == 0 and containing is None else None
        source = Source(fs, fd, self.size, path)
        for line in read(
            source, Mode.TOLERANT, reporter, start=start, end=end, first_line=first_line, wanted=wanted
        ):
            try:
                body = line.body
                # Large strings to put back from blob files (§8, rule 11); 36 is ord("$"), a
                # bare memchr (see `_ops.append.encode`).
                if 36 in body and blob_key in body:
                    body = _blobs.restore(where, body, reporter)
                if containing is not None and containing not in body:
                    continue  # the line a chunk began with, read whole whatever it holds
                record = decode(body, session_id)
            except _codec.DECODE_ERRORS as exc:
                reporter.report(
                    Problem(path, "bad-record", f"checksum holds but record does not fit: {exc}", SKIPPED,
                            line.offset, line.number)
                )  # fmt: skip
                continue
            sequence = record.sequence
            if sequence != previous + 1:
                if sequence <= previous:
                    if sequence <= after and previous == after:
                        continue  # before the boundary: `records(after=...)` skips these
                    reporter.report(
                        Problem(path, "out-of-order", f"sequence {sequence} after {previous}", SKIPPED,
                                line.offset, line.number)
                    )  # fmt: skip
                    continue
                if expected_gap_free:
                    reporter.report(
                        Problem(path, "gap", f"sequences {previous + 1}..{sequence - 1} are missing",
                                KEPT_AFTER_GAP, line.offset, line.number)
                    )  # fmt: skip
            previous = sequence
            yield line, record

    def last_records(self, count: int) -> list[RawMessageRecord]:
        """The last ``count`` complete records, oldest first, read backwards from the end.

        Costs O(count) whatever the log's length: only the lines given back (and the
        damaged ones between them, which are skipped) are read. A record whose sequence
        does not fall below the one after it is skipped and reported, as reading
        forwards would; damaged lines are skipped silently (`verify` names them).
        """
        if self.fd is None or count <= 0:
            return []
        end, _ = self.last_good()
        found: list[RawMessageRecord] = []
        after: int | None = None  # the sequence of the record after the one being read
        decode, path = _codec.decode_record, self.path
        for line in backward(self.fs, self.fd, end):
            try:
                body = line.body
                if 36 in body and _blobs.KEY_BYTES in body:  # as in `records`
                    body = _blobs.restore(self.where, body, self.reporter)
                record = decode(body, self.session_id)
            except _codec.DECODE_ERRORS as exc:
                self.reporter.report(
                    Problem(
                        path,
                        "bad-record",
                        f"checksum holds but record does not fit: {exc}",
                        SKIPPED,
                        line.offset,
                    )
                )
                continue
            if after is not None and record.sequence >= after:
                self.reporter.report(
                    Problem(
                        path,
                        "out-of-order",
                        f"sequence {record.sequence} before {after}",
                        SKIPPED,
                        line.offset,
                    )
                )
                continue
            found.append(record)
            after = record.sequence
            if len(found) == count:
                break
        found.reverse()
        return found


def sequence_of(line: Line | None) -> int:
    """A line's sequence, decoded once and kept on the line (0 for no line)."""
    if line is None:
        return 0
    if line.sequence < 0:
        line.sequence = body_sequence(line.body)
    return line.sequence


def record_summary(body: bytes) -> tuple[int, datetime | None]:
    """A record's sequence and append time, decoded alone ((0, None) for no record)."""
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
