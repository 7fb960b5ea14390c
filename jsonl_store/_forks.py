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
import os
from collections.abc import Callable, Iterator

import msgspec

from . import _atomic, _codec, _lines, _snapshots
from ._fs import FileSystem, StatResult
from ._paths import FORK_NAME
from ._problems import LEFT_FOR_READERS, Problem, Reporter
from ._reader import LogReader
from ._records import ContextSnapshot, ForkPoint, RawMessageRecord

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
    listings (`_snapshots.Listings`, git's "racily clean" rule), a directory is trusted
    only once it has been unchanged for `_snapshots.SETTLED_NS`. Only absence is kept: a
    fork's file is read, and judged, every time.

    Shared by threads without a lock: each entry is one immutable tuple, replaced whole.
    """

    #: Directories remembered at most; then all are forgotten at once.
    KEPT = 1 << 16

    def __init__(self) -> None:
        self._keys: dict[str, tuple[object, object, int, int]] = {}

    def read(self, fs: FileSystem, directory: str, st: StatResult, now: int) -> ForkPoint | None:
        """`read`, skipped for a directory known fork-less; ``st`` is its ``lstat`` taken after ``now``."""
        key = _snapshots.change_key(st)
        if key is not None and self._keys.get(directory) == key:
            return None
        point = read(fs, directory)
        if point is None and key is not None and max(key[2], key[3]) + _snapshots.SETTLED_NS <= now:
            if len(self._keys) >= self.KEPT:
                self._keys.clear()
            self._keys[directory] = key
        return point


#: The real file system's directories are the same for every store of this process.
SHARED_ABSENCES = Absences()


def encode(point: ForkPoint) -> bytes:
    return _codec.seal(_encoder.encode(point))


def read(fs: FileSystem, directory: str) -> ForkPoint | None:
    """The session's fork point, or None for a session that is not a fork.

    Raises `DamagedFork` for a file that is torn, fails its checksum or does not fit.
    """
    path = os.path.join(directory, FORK_NAME)
    try:
        data = _atomic.read_whole(fs, path, MAX_FORK_BYTES)
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
    return point


def create(fs: FileSystem, directory: str, point: ForkPoint, *, durable: bool) -> bool:
    """Write the fork file once; False when the directory has one already."""
    return _atomic.create_exclusive(fs, directory, FORK_NAME, encode(point), durable=durable)


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


def chain(fs: FileSystem, directory_of: Callable[[str], str], session_id: str) -> list[Link]:
    """The sessions a session's history is read from, oldest first, it last (spec §8.10).

    A fork that branched at or before a fork point of its own source skips that source:
    none of the source's own records are in its history. Raises `DamagedFork` for an
    unreadable fork file on the way, a cycle, or a chain deeper than `MAX_DEPTH`.
    """
    links: list[Link] = []
    upto: int | None = None
    check: ForkPoint | None = None
    current = session_id
    seen: set[str] = set()
    while True:
        if current in seen or len(seen) >= MAX_DEPTH:
            raise DamagedFork(f"the chain of forks from {session_id!r} loops or is deeper than {MAX_DEPTH}")
        seen.add(current)
        try:
            point = read(fs, directory_of(current))
        except DamagedFork as exc:
            raise DamagedFork(f"{current}/{FORK_NAME}: {exc}") from None
        base = point.sequence if point is not None else 0
        if point is not None and upto is not None and upto <= base:
            current = point.session_id  # this source's own records start after the branch
            continue
        links.append(Link(current, base, upto, check))
        if point is None:
            break
        upto, check, current = point.sequence, point, point.session_id
    links.reverse()
    return links


def _mismatch(path: str, check: ForkPoint, found: RawMessageRecord | None) -> Problem:
    if found is None:
        reason = f"the source has no record {check.sequence} (the fork branched at {check.record_id})"
    else:
        reason = (
            f"record {check.sequence} of the source is {found.id}, the fork branched at {check.record_id}"
        )
    return Problem(path, "bad-fork", reason, LEFT_FOR_READERS)


def link_records(
    fs: FileSystem,
    directory: str,
    link: Link,
    reporter: Reporter,
    *,
    start: int = 0,
    after: int = 0,
    listings: object | None = None,
) -> Iterator[RawMessageRecord]:
    """One link's records above ``max(after, base)`` and up to ``upto``, from offset ``start``.

    The record at the next fork's branch point is checked against the id that fork
    recorded; a missing or different one is reported as ``bad-fork``.
    """
    floor = max(after, link.base)
    check = link.check
    seen: RawMessageRecord | None = None
    with LogReader(fs, link.session_id, directory, reporter, listings=listings) as log:  # type: ignore[arg-type]
        for _, record in log.records(start, floor):
            if link.upto is not None and record.sequence > link.upto:
                break
            if check is not None and record.sequence == check.sequence:
                seen = record
            yield record
    if check is not None and (seen is None or seen.id != check.record_id) and after < check.sequence:
        reporter.report(_mismatch(os.path.join(directory, "messages.jsonl"), check, seen))


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
    "encode",
    "latest_snapshot_upto",
    "link_records",
    "parse",
    "read",
]
