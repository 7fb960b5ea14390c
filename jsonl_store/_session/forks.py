"""Forks: a session whose history begins with another session's, without a copy of it.

A fork's directory holds ``fork.json``, one checksummed line (spec §6.1) written once
when the fork is made: the source session, the sequence it branched at, and the id of
the source's record at that sequence. The fork's own log starts at the next sequence;
readers read the source's records up to the branch point (recursively, for a fork of a
fork) and then the fork's own (spec §8.10). Nothing of the source is copied, so a fork
costs a few hundred bytes in git, and the source's log is never touched.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator

import msgspec

from .. import _process
from .._errors import UnsafePath
from .._format import codec as _codec
from .._format import lines as _lines
from .._format.names import FORK_NAME, is_session_id
from .._format.records import ContextSnapshot, ForkPoint, RawMessageRecord
from .._io import atomic as _atomic
from .._io.fs import StatResult, check_directory
from .._io.session_dir import SessionDir
from .._log import snapshots as _snapshots
from .._log.problems import LEFT_FOR_READERS, Problem, Reporter
from .._log.reader import LogReader

#: The longest chain of forks a reader follows; beyond it (or around a cycle, which only
#: hand-edited files make) the fork is reported damaged instead of read forever.
MAX_DEPTH = 64

#: A fork file is one short line; anything much longer is not one.
MAX_FORK_BYTES = 4096


class DamagedFork(Exception):
    """A fork file that cannot be read (the message says why)."""


_decoder = msgspec.json.Decoder(ForkPoint)
_encoder = msgspec.json.Encoder()


class Absences:
    """Session directories seen holding no ``fork.json``, kept while the directory is unchanged.

    Most sessions are no fork, and finding so costs a failed ``open`` (about 5 µs from
    Python), once per session of every `SessionStore.list_sessions`. A ``fork.json`` is
    only ever made in a session's directory, which sets the directory's modification and
    change times, so absence stays true while the directory's ``lstat`` (which the
    listing makes anyway) gives the same times, device and inode; as for the snapshot
    listings (`_log.snapshots.Listings`, git's "racily clean" rule), a directory is trusted
    only once it has been unchanged for `_log.snapshots.SETTLED_NS`. Only absence is kept: a
    fork's file is read, and judged, every time.

    Shared by threads without a lock: each entry is one immutable tuple, replaced whole.
    """

    #: Directories remembered at most; then all are forgotten at once.
    KEPT = 1 << 16

    def __init__(self) -> None:
        self._keys: dict[str, tuple[object, object, int, int]] = {}

    def clear(self) -> None:
        """Forget every directory seen fork-less: the next look opens its ``fork.json``."""
        self._keys.clear()

    def read(self, where: SessionDir, st: StatResult, now: int) -> ForkPoint | None:
        """`read`, skipped for a directory known fork-less; ``st`` is its ``lstat`` taken after ``now``."""
        directory = where.path
        key = _snapshots.change_key(st)
        if key is not None and self._keys.get(directory) == key:
            return None
        point = read(where)
        if point is None and key is not None and max(key[2], key[3]) + _snapshots.SETTLED_NS <= now:
            if len(self._keys) >= self.KEPT:
                self._keys.clear()
            self._keys[directory] = key
        return point


#: The real file system's directories are the same for every store of this process.
SHARED_ABSENCES = Absences()
# Each entry is checked against the directory's times before use, so a child could keep
# them; registered so that `_process.reset` leaves no cache of the parent behind.
_process.register("fork-less directories", SHARED_ABSENCES.clear)


def encode(point: ForkPoint) -> bytes:
    return _codec.seal(_encoder.encode(point))


def read(where: SessionDir) -> ForkPoint | None:
    """The session's fork point, or None for a session that is not a fork.

    Raises `DamagedFork` for a file that is torn, fails its checksum or does not fit.
    """
    try:
        data = _atomic.read_whole(where.fs, where.file(FORK_NAME), MAX_FORK_BYTES)
    except _atomic.FileTooLarge as exc:
        raise DamagedFork(f"file is {exc}") from None
    if data is None:
        return None
    return parse(data)


def parse(data: bytes) -> ForkPoint:
    """The fork point a ``fork.json``'s bytes hold (the git merge driver reads them from a commit).

    Raises `DamagedFork` for a file that is torn, fails its checksum or does not fit.
    """
    if not data.endswith(b"\n"):
        raise DamagedFork(f"incomplete file ({len(data)} bytes, no final newline)")
    found = _lines.whole_line(data)
    if found is None:
        raise DamagedFork("checksum mismatch or not a fork line")
    line = found[0]
    try:
        point = _decoder.decode(line[: -_codec.SUFFIX_LENGTH] + b"}")
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise DamagedFork(f"does not fit the fork schema: {exc}") from None
    if point.sequence < 1:
        raise DamagedFork(f"branch sequence {point.sequence} is not positive")
    if not is_session_id(point.session_id):
        # A source is a session of the same root (spec §6.1): a name that is no session id
        # ("../x", an absolute path, "", ".") would have readers open files outside it.
        raise DamagedFork(f"the source {point.session_id!r} is not a session id")
    return point


def create(where: SessionDir, point: ForkPoint, *, durable: bool) -> bool:
    """Write the fork file once; False when the directory has one already."""
    return _atomic.create_exclusive(where.fs, where.path, FORK_NAME, encode(point), durable=durable)


@dataclasses.dataclass(frozen=True, slots=True)
class Link:
    """One session of a fork's history: its records above ``base`` and up to ``upto``.

    ``upto`` is None for the session being read (all of its records); ``base`` is 0 for
    the session the chain starts from, else its own fork point's sequence.
    ``point`` is the fork point the *next* link branched at, to be checked against this
    link's record at that sequence.
    """

    session_id: str
    base: int
    upto: int | None
    check: ForkPoint | None = None


def _walk(dir_of: Callable[[str], SessionDir], session_id: str) -> Iterator[tuple[str, ForkPoint | None]]:
    """Each session of the chain of forks from ``session_id`` on, with its fork point.

    Raises `DamagedFork` for an unreadable fork file, a source whose directory is a
    symlink or no directory (never followed: spec §2), a cycle, or a chain of more than
    `MAX_DEPTH` sessions.
    """
    current: str | None = session_id
    seen: set[str] = set()
    while current is not None:
        if current in seen or len(seen) >= MAX_DEPTH:
            raise DamagedFork(f"the chain of forks from {session_id!r} loops or is deeper than {MAX_DEPTH}")
        seen.add(current)
        where = dir_of(current)
        if current != session_id:
            try:
                check_directory(where.fs, where.path, session_id=current)
            except UnsafePath as exc:
                raise DamagedFork(f"the source {current!r} cannot be read: {exc}") from None
        try:
            point = read(where)
        except DamagedFork as exc:
            raise DamagedFork(f"{current}/{FORK_NAME}: {exc}") from None
        yield current, point
        current = point.session_id if point is not None else None


def depth(dir_of: Callable[[str], SessionDir], session_id: str) -> int:
    """How many sessions the chain from ``session_id`` holds (1: no fork); as `chain` raises."""
    return sum(1 for _ in _walk(dir_of, session_id))


def chain(dir_of: Callable[[str], SessionDir], session_id: str, first_own: int = 0) -> list[Link]:
    """The sessions a session's history is read from, oldest first, it last (spec §8.10).

    A fork that branched at or before a fork point of its own source skips that source:
    none of the source's own records are in its history. ``first_own`` is the sequence of
    the session's own first record (0: none). When it is at or before the branch (a
    ``fork.json`` naming a later branch than its records were numbered from), the sources
    are read only up to the record before it: the fork's own records are never skipped
    as if they were its source's. Raises `DamagedFork` as `_walk` does.
    """
    links: list[Link] = []
    upto: int | None = None
    check: ForkPoint | None = None
    for current, point in _walk(dir_of, session_id):
        base = point.sequence if point is not None else 0
        branch = point
        if current == session_id and 0 < first_own <= base:
            base, branch = first_own - 1, None  # no record of the source is the branch record
        if point is not None and upto is not None and upto <= base:
            continue  # this source's own records start after the branch
        links.append(Link(current, base, upto, check))
        if base == 0:
            break
        upto, check = base, branch
    links.reverse()
    return links


def early_records(first_own: int, point: ForkPoint) -> str:
    """Why a fork whose own records start at ``first_own``, at or before its branch, is damaged."""
    return (
        f"the fork's own records start at {first_own}, at or before its branch {point.sequence}: "
        f"its source is read up to {first_own - 1} only"
    )


def _mismatch(path: str, check: ForkPoint, found: RawMessageRecord | None) -> Problem:
    if found is None:
        reason = f"the source has no record {check.sequence} (the fork branched at {check.record_id})"
    else:
        reason = (
            f"record {check.sequence} of the source is {found.id}, the fork branched at {check.record_id}"
        )
    return Problem(path, "bad-fork", reason, LEFT_FOR_READERS)


def link_records(
    where: SessionDir,
    link: Link,
    reporter: Reporter,
    *,
    start: int = 0,
    after: int = 0,
    listings: bool = False,
) -> Iterator[RawMessageRecord]:
    """One link's records above ``max(after, base)`` and up to ``upto``, from offset ``start``.

    ``where`` is the link's session directory; ``listings`` reads its snapshot listing
    through the store's cache (needed only when ``start`` came from a snapshot). The record
    at the next fork's branch point is checked against the id that fork recorded; a missing
    or different one is reported as ``bad-fork``.
    """
    floor = max(after, link.base)
    check = link.check
    seen: RawMessageRecord | None = None
    with LogReader(where, reporter, listings=listings) as log:
        for _, record in log.records(start, floor):
            if link.upto is not None and record.sequence > link.upto:
                break
            if check is not None and record.sequence == check.sequence:
                seen = record
            yield record
    if check is not None and (seen is None or seen.id != check.record_id) and after < check.sequence:
        reporter.report(_mismatch(where.log_path, check, seen))


def latest_snapshot_upto(log: LogReader, upto: int | None) -> ContextSnapshot | None:
    """The newest snapshot of ``log`` that compacts no record beyond ``upto`` (None: any)."""
    return log.latest_snapshot(at_most=upto)


__all__ = [
    "MAX_DEPTH",
    "DamagedFork",
    "ForkPoint",
    "Link",
    "chain",
    "create",
    "depth",
    "early_records",
    "encode",
    "latest_snapshot_upto",
    "link_records",
    "parse",
    "read",
]
