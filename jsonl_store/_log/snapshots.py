"""Numbered snapshot files: immutable compaction checkpoints, created by compare-and-swap.

``snapshot-00000003.json`` holds one checksummed line: the compacted message and the
boundary (last sequence it replaces, and the byte offsets of the boundary record and of
the tail after it). A snapshot is trusted only while the log still holds that exact
boundary record at that offset, so a snapshot that outlived its log (power loss under
``durability="none"``) is skipped for an older one rather than hiding newer records.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from itertools import islice

import msgspec

from .._errors import InvalidArgument
from .._format import codec as _codec
from .._format import lines as _lines
from .._format.names import snapshot_name, snapshot_versions
from .._format.records import ContextSnapshot
from .._io import atomic as _atomic
from .._io.fs import FileSystem, StatResult
from .._io.session_dir import SessionDir
from . import scan as _log_reader
from .problems import DISCARD, SKIPPED_SNAPSHOT, Problem, Reporter

#: Spec §6: a snapshot file is read whole, so it is capped; a larger one is damaged.
MAX_SNAPSHOT_BYTES = 16 << 20


class DamagedSnapshot(Exception):
    """Internal: a snapshot file that cannot be used, with the reason."""


def versions(where: SessionDir) -> list[int]:
    """Every snapshot version present as a file in the session directory, ascending (damaged ones included)."""
    try:
        names = where.fs.listdir(where.path)
    except FileNotFoundError:
        return []
    return list(snapshot_versions(names))[::-1]


#: How long a directory must have gone unchanged before a listing of it is kept: longer
#: than the coarsest change times in use (FAT's 2 s; ext4 and others count in kernel ticks
#: of 1-10 ms), so any later change gives the directory change times of its own.
SETTLED_NS = 3 * 10**9
#: Versions kept per directory, newest first: enough to step past a damaged newest file
#: or two, and for `records(after=...)` to find a slightly older boundary.
KEPT_VERSIONS = 8
#: Directories kept; past this the cache starts over (one dict, no lock: see `Listings`).
KEPT_DIRECTORIES = 4096
#: The clock the file system's change times come from (tests set it forward).
clock = time.time_ns


def change_key(st: StatResult) -> tuple[object, object, int, int] | None:
    """What changes whenever an entry of the directory is made, removed or renamed."""
    mtime = getattr(st, "st_mtime_ns", None)
    if mtime is None:
        return None  # a file system without change times: every read lists
    return (
        getattr(st, "st_dev", None),
        getattr(st, "st_ino", None),
        mtime,
        getattr(st, "st_ctime_ns", mtime),
    )


class Listings:
    """The newest snapshot versions of session directories, kept while a directory is unchanged.

    Listing a directory of a thousand snapshot files costs more than the rest of a
    `load`. Every change to a directory's entries (a snapshot made by any process, a
    file moved aside by `repair`, one removed or copied in by hand) sets its
    modification and change times, and replacing the directory changes its inode: a
    listing stays true while one ``stat`` of the directory gives the same times, device
    and inode. A listing is kept only once the directory has been unchanged for
    `SETTLED_NS` by this machine's clock (git's "racily clean" rule,
    https://git-scm.com/docs/racy-git): a change in the same clock tick as the listing
    would otherwise leave the times as they were. File contents are not cached: the
    snapshot used is read, and judged, on every call (§10).

    Shared by threads without a lock: each entry is one immutable tuple, replaced whole,
    and the dict's own operations are atomic.
    """

    def __init__(self) -> None:
        self._entries: dict[str, tuple[tuple[object, object, int, int], tuple[int, ...], bool]] = {}

    def clear(self) -> None:
        """Forget every listing: the next read of each directory lists it."""
        self._entries.clear()

    def descending(self, where: SessionDir) -> Iterator[int]:
        """Every snapshot version present in the session directory, highest first, as a listing gives them."""
        fs, directory = where.fs, where.path
        now = clock()  # before the stat: a change after this point is after the listing too
        try:
            st = fs.stat(directory)
        except FileNotFoundError:
            return
        key = change_key(st)
        entry = self._entries.get(directory)
        if key is not None and entry is not None and entry[0] == key:
            kept, more = entry[1], entry[2]
            yield from kept
            if more:
                # Older than what is kept: list again (rare: the newest files are damaged).
                yield from (v for v in reversed(versions(where)) if v < kept[-1])
            return
        try:
            names = fs.listdir(directory)
        except FileNotFoundError:
            self._entries.pop(directory, None)
            return
        found = snapshot_versions(names)
        newest = tuple(islice(found, KEPT_VERSIONS + 1))
        # ``key`` was read before the listing, so a change made while listing shows as a
        # change next time; only a listing of a directory already settled is kept.
        if key is not None and max(key[2], key[3]) + SETTLED_NS <= now:
            if len(self._entries) >= KEPT_DIRECTORIES:
                self._entries.clear()
            self._entries[directory] = (key, newest[:KEPT_VERSIONS], len(newest) > KEPT_VERSIONS)
        else:
            self._entries.pop(directory, None)
        yield from newest
        yield from found


def read(where: SessionDir, version: int) -> ContextSnapshot:
    """Snapshot ``version`` of the session; `DamagedSnapshot` when its file cannot be used."""
    return read_file(where, version)[0]


def read_file(where: SessionDir, version: int) -> tuple[ContextSnapshot, bool]:
    """A snapshot file's snapshot, and whether a text conversion changed the file (§8.4)."""
    try:
        data = _atomic.read_whole(where.fs, where.file(snapshot_name(version)), MAX_SNAPSHOT_BYTES)
    except _atomic.FileTooLarge as exc:
        raise DamagedSnapshot(f"file is {exc}") from None
    if data is None:
        raise DamagedSnapshot("file vanished")
    if not data.endswith(b"\n"):
        raise DamagedSnapshot(f"incomplete file ({len(data)} bytes, no final newline)")
    found = _lines.whole_line(data)
    if found is None:
        raise DamagedSnapshot("checksum mismatch or not a snapshot line")
    line, converted = found
    body = line[: -_codec.SUFFIX_LENGTH] + b"}"
    try:
        snapshot = _codec.decode_snapshot(body, where.session_id)
    except _codec.DECODE_ERRORS as exc:
        raise DamagedSnapshot(f"does not fit the snapshot schema: {exc}") from None
    if snapshot.version != version:
        raise DamagedSnapshot(f"file name says version {version}, content says {snapshot.version}")
    return snapshot, converted


def boundary_problem(fs: FileSystem, log_fd: int, log_size: int, snapshot: ContextSnapshot) -> str | None:
    """Why the log does not hold this snapshot's boundary record (None when it does)."""
    start, end = snapshot.boundary_offset, snapshot.tail_offset
    if end > log_size:
        # The reader measured the log before a writer appended the boundary record and
        # made this snapshot: the log has grown since, and the snapshot is not damaged.
        log_size = fs.fstat(log_fd).st_size
    if end > log_size:
        return f"boundary ends at byte {end}, past the end of the log ({log_size} bytes)"
    if not 0 <= start < end:
        return f"boundary offsets {start}..{end} are invalid"
    data = fs.pread(log_fd, end - start, start)
    if not (data.endswith(b"\n") and _codec.is_sealed(data[:-1])):
        return f"no valid record at byte {start}"
    try:
        sequence, batch_end, record_id = _codec.record_position(data[:-1])
    except _codec.DECODE_ERRORS:
        return f"no valid record at byte {start}"
    if sequence != snapshot.compacted_through_sequence or record_id != snapshot.boundary_record_id:
        return (
            f"the record at byte {start} is sequence {sequence}, not the boundary "
            f"sequence {snapshot.compacted_through_sequence} this snapshot was made for"
        )
    return _batch_cut_short(fs, log_fd, end, sequence, batch_end)


def _batch_cut_short(fs: FileSystem, log_fd: int, end: int, sequence: int, batch_end: int) -> str | None:
    """Why a boundary record that opens or sits in a batch is not one readers give back.

    A checkpoint's rewrite writes its snapshot right before the batch that begins with
    the boundary record (spec §10): until that batch is whole, the snapshot stands for a
    context that is not on disk, and readers keep the one before it. A batch is whole
    when a valid line at or after the boundary's end may end the good part (§8.7).
    """
    if batch_end <= sequence:
        return None
    size = fs.fstat(log_fd).st_size
    if _log_reader.last_good(fs, log_fd, size, end, _ends_batch)[1] is not None:
        return None
    return f"the boundary record's batch (through sequence {batch_end}) is cut short"


def _ends_batch(line: _log_reader.Line) -> bool:
    try:
        sequence, batch_end, _ = _codec.record_position(line.body)
    except _codec.DECODE_ERRORS:
        return True
    return batch_end <= sequence


def trusted(fs: FileSystem, log_fd: int, log_size: int, snapshot: ContextSnapshot) -> ContextSnapshot | str:
    """The snapshot, with the offsets its boundary record has in this log; or why it is not trusted.

    A log whose lines a text conversion changed (``\\r\\n`` from a git checkout, §8.4)
    holds the boundary record at another offset than the snapshot says (and so does a log
    converted in part, then restored); the record is then looked up by sequence and id,
    so the snapshot stays usable, and `repair` writes the offsets it has now.
    """
    reason = boundary_problem(fs, log_fd, log_size, snapshot)
    if reason is None:
        return snapshot
    # Offsets that do not hold: look the record up. This reads the log up to the boundary,
    # but only for a snapshot that would otherwise be skipped, which a healthy log never has.
    size = fs.fstat(log_fd).st_size
    for line in _log_reader.scan(fs, log_fd, "", 0, size, DISCARD):
        try:
            sequence, _, record_id = _codec.record_position(line.body)
        except _codec.DECODE_ERRORS:
            continue
        if sequence >= snapshot.compacted_through_sequence:
            if (
                sequence == snapshot.compacted_through_sequence
                and record_id == snapshot.boundary_record_id
                and _batch_cut_short(fs, log_fd, line.end, sequence, _codec.record_position(line.body)[1])
                is None
            ):
                return msgspec.structs.replace(snapshot, boundary_offset=line.offset, tail_offset=line.end)
            break
    return reason


def latest(
    where: SessionDir,
    log_fd: int | None,
    log_size: int,
    reporter: Reporter,
    *,
    at_most: int | None = None,
    present: Sequence[int] | None = None,
) -> ContextSnapshot | None:
    """The newest snapshot that is intact and agrees with the log; report the ones skipped.

    With ``at_most``, only snapshots whose boundary is at or before that sequence count.
    The versions tried are ``present`` (ascending) when given, else those ``where.listings``
    knows or lists, else a listing of the directory.
    """
    fs = where.fs
    if present is not None:
        order: Iterator[int] = reversed(present)
    elif where.listings is not None:
        order = where.listings.descending(where)
    else:
        order = reversed(versions(where))
    for version in order:
        path = where.file(snapshot_name(version))
        try:
            snapshot = read_file(where, version)[0]
        except DamagedSnapshot as exc:
            reason = str(exc)
        else:
            if at_most is not None and snapshot.compacted_through_sequence > at_most:
                continue
            if log_fd is None:
                reason = "the raw log is missing"
            else:
                found = trusted(fs, log_fd, log_size, snapshot)
                if not isinstance(found, str):
                    return found
                reason = found
        reporter.report(Problem(path=path, kind="bad-snapshot", reason=reason, action=SKIPPED_SNAPSHOT))
    return None


def find_boundary(
    where: SessionDir,
    fd: int,
    start: int,
    end: int,
    after: int,
    through: int,
    last_sequence: int,
) -> _log_reader.Line | None:
    """The line of record ``through`` if a reader gives it back from ``[start, end)`` (§8, §10).

    ``start`` and ``after`` are the newest snapshot's tail offset and boundary sequence
    (0 and 0 for none); ``end`` is where the complete records end (`LogReader.last_good`:
    a batch cut short is not in the range) and ``last_sequence`` the sequence of the record
    that ends there. The search starts from whichever end is nearer in sequences, which
    counts records in a log its writers numbered: its cost is that of the records between
    the boundary and the previous one, or between it and the end, whichever are fewer.
    A line that holds no record is skipped, as a reader skips it.
    """
    fs, session_id = where.fs, where.session_id
    if through - after <= last_sequence - through:
        # Forward, as a reader goes (§8.6): a record not above the highest before it is
        # skipped. Small reads first: the boundary is near.
        highest = after
        for line in _log_reader.scan(fs, fd, "", start, end, DISCARD, first_read=_log_reader.BACK_CHUNK):
            sequence = _sequence(line)
            if sequence is None or sequence <= highest:
                continue
            if sequence == through:
                if _is_record(line, session_id):
                    return line
                continue  # a bad record: skipped by a reader, as it is here
            if sequence > through:
                return None
            highest = sequence
        return None
    # Backward from the end: sequences only grow along a log its writers made (§9.2), so
    # the first record at or below ``through`` is the one.
    for line in _log_reader.backward(fs, fd, end, start):
        sequence = _sequence(line)
        if sequence is None or sequence > through:
            continue
        if sequence == through:
            if _is_record(line, session_id):
                return line
            continue
        return None
    return None


def _sequence(line: _log_reader.Line) -> int | None:
    """The line's sequence; None for a line that is no record (sequences start at 1)."""
    try:
        sequence = _codec.record_position(line.body)[0]
    except _codec.DECODE_ERRORS:
        return None
    return sequence if sequence > 0 else None


def _is_record(line: _log_reader.Line, session_id: str) -> bool:
    """Whether the whole line fits the record schema (a reader skips one that does not, §8.5)."""
    try:
        _codec.decode_record(line.body, session_id)
    except _codec.DECODE_ERRORS:
        return False
    return True


def reanchored(line: bytes, boundary_offset: int, tail_offset: int) -> bytes:
    """A snapshot file's line (sealed, no newline) with its boundary at other offsets.

    Decoded with the message left as plain JSON, so every other byte is written again as
    it was: the message's keys in their order, unknown keys kept.
    """
    snapshot = msgspec.json.decode(line[: -_codec.SUFFIX_LENGTH] + b"}", type=ContextSnapshot)
    moved = msgspec.structs.replace(snapshot, boundary_offset=boundary_offset, tail_offset=tail_offset)
    return _codec.encode_snapshot(moved)


def check_size(payload: bytes) -> None:
    """Refuse a compacted message whose snapshot file would pass `MAX_SNAPSHOT_BYTES`."""
    # The other fields of a snapshot line take well under 1 KiB.
    if len(payload) + 1024 > MAX_SNAPSHOT_BYTES:
        raise InvalidArgument(
            f"the compacted message is {len(payload)} bytes; a snapshot is capped at "
            f"{MAX_SNAPSHOT_BYTES >> 20} MiB"
        )


def create(where: SessionDir, snapshot: ContextSnapshot, *, durable: bool) -> bool:
    """Write snapshot ``snapshot.version`` unless that version exists; False on conflict."""
    data = _codec.encode_snapshot(snapshot)
    return _atomic.create_exclusive(
        where.fs, where.path, snapshot_name(snapshot.version), data, durable=durable
    )
