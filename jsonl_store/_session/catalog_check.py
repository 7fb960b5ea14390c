"""The catalog's freshness check (spec §21): a stat fingerprint of each session's files.

One listing of the root (the caller's), then per session an ``lstat`` of its directory and
a ``stat`` of its ``meta.json`` and raw log (and of ``fork.json`` for a fork): inode, size,
mtime_ns and ctime_ns. The directory's times change when a file in it is created, renamed
or removed (a whole-file write of ``meta.json``, a checkout); the files' own when they are
written in place. A fingerprint is compared for equality, never for "newer", so a clock
set back is a change like any other, and one taken while the file may still change within
the timestamp granularity is marked racy and read again next time (git's "racily clean"
rule, https://git-scm.com/docs/racy-git).

The stats go through one descriptor of the root, opened for this check alone: the kernel
then resolves two path components per file instead of the whole root path. A descriptor
stays on the directory it was opened on, so once the stats are done the root's path is
looked up again; when it names another directory now (the root moved away or replaced
while it was checked), the check is worthless and `check` says so, and the caller checks
again, with the root listed anew through the new descriptor (the names it was given were
the old root's). No descriptor outlives a check, so a root replaced between two checks is simply the
one the next check opens.
"""

from __future__ import annotations

import os
import stat
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field

from .._format.names import FORK_NAME, LOG_NAME, META_NAME, is_session_id
from .catalog_index import KEY_SIZE, RACY, LogState

_META_TAIL, _LOG_TAIL, _FORK_TAIL = ("/" + name for name in (META_NAME, LOG_NAME, FORK_NAME))
_PACK = struct.Struct("<4q").pack
#: Three files' fingerprints (directory, meta.json, raw log): the same bytes as three `_PACK` calls joined.
_UNPACK3 = struct.Struct("<12q").unpack
_SETTLED_STAMP = 3 * 32
_ABSENT = bytes(32)
#: Where the raw log's fingerprint sits in a session's (after the directory's and meta.json's).
_LOG_AT = slice(64, 96)
#: A stamp's length when it covers a fork's fork.json too (four files of four fields).
FORK_STAMP = 4 * 32
_DIRECTORY_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)


@dataclass(slots=True)
class Entry:
    """One row of the catalog's ``sessions`` table, as this process last read or wrote it."""

    #: The packed fingerprint of the session's files when ``summary`` was read; empty: read again.
    stamp: bytes
    #: The `SessionSummary` as msgspec JSON; None for an entry the listing leaves out.
    summary: bytes | None
    #: The dialect the summary names (`SessionSummary.dialect`), which the text index reads in.
    dialect: str
    #: How far the raw log's text is indexed.
    log: LogState
    #: ``stamp`` unpacked, for a session that is no fork (three files' fingerprints): what
    #: the check compares a fresh stat's fields with, as ints, so that a session found
    #: unchanged costs its three stats and one tuple comparison. None: fingerprinted whole.
    fields: tuple[int, ...] | None = None
    #: The newest time among ``fields`` (see `_check_at` for why one number is enough).
    newest: int = 0

    def __post_init__(self) -> None:
        if len(self.stamp) == _SETTLED_STAMP:
            fields = self.fields = _UNPACK3(self.stamp)
            self.newest = max(fields[2], fields[3], fields[6], fields[7], fields[10], fields[11])


def key(st: os.stat_result | None) -> bytes:
    """Inode, size, mtime_ns and ctime_ns, packed (zeros for no file)."""
    if st is None:
        return _ABSENT
    return _PACK(st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def log_key(st: os.stat_result | None, floor: int) -> bytes:
    """The raw log's fingerprint as the text index keeps it: `key`, marked `RACY` when taken
    within the racy window (after ``floor``), so that it is checked again next time."""
    packed = key(st)
    if st is not None and (st.st_mtime_ns > floor or st.st_ctime_ns > floor):
        return RACY + packed
    return packed


def size_of(log: bytes) -> int:
    """The size a `log_key` fingerprint holds."""
    return int.from_bytes(log[-KEY_SIZE + 8 : -KEY_SIZE + 16], "little", signed=True)


def _stat_at(root: int, path: str) -> os.stat_result | None:
    try:
        return os.stat(path, dir_fd=root, follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError):
        return None


@dataclass(slots=True)
class Seen:
    """One session directory the check found changed."""

    name: str
    #: The packed fingerprint; empty when racy, so the next check reads the session again.
    stamp: bytes
    #: The raw log's stat within it (None: no log), which the text index reuses.
    log: os.stat_result | None


def _fingerprint(root: int, name: str, top: os.stat_result, floor: int, fork: bool) -> Seen:
    meta, log = _stat_at(root, name + _META_TAIL), _stat_at(root, name + _LOG_TAIL)
    stats = [top, meta, log]
    # fork.json is written once, when the fork is made (spec §8.10): its appearing or going
    # changes the directory's times, so only a known fork's own file needs a stat of its own.
    if fork and (point := _stat_at(root, name + _FORK_TAIL)) is not None:
        stats.append(point)
    racy = any(st is not None and (st.st_mtime_ns > floor or st.st_ctime_ns > floor) for st in stats)
    return Seen(name, b"" if racy else b"".join(map(key, stats)), log)


@dataclass(slots=True)
class Checked:
    """What a check found."""

    #: The summaries still good (msgspec JSON), in the order of the names.
    good: list[bytes] = field(default_factory=list)
    #: The sessions to read again (new, changed, racy).
    changed: list[Seen] = field(default_factory=list)
    #: The entries the caller reads itself: named as sessions, but neither a directory nor a file.
    odd: list[str] = field(default_factory=list)
    #: Each checked session's raw-log fingerprint (`log_key`), when asked for.
    logs: dict[str, bytes] = field(default_factory=dict)
    #: The root's entries named as sessions that were checked.
    names: list[str] = field(default_factory=list)


def check(
    root: str, names: list[str] | None, known: Mapping[str, Entry], floor: int, logs: bool
) -> Checked | None:
    """The freshness check of ``names`` below ``root`` against ``known`` (None: the root's
    entries named as sessions, listed through the same descriptor); None when the root's
    path named another directory by the end of it (check again, listing it anew).

    Fingerprints with a time after ``floor`` are racy. With ``logs``, each checked session's
    raw-log fingerprint is kept too.
    """
    fd = os.open(root, _DIRECTORY_FLAGS)
    try:
        if names is None:
            names = sorted(name for name in os.listdir(fd) if is_session_id(name))
        found = _check_at(fd, names, known, floor, logs)
        found.names = names
        here, there = os.stat(root), os.fstat(fd)
    finally:
        os.close(fd)
    return found if (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino) else None


def _check_at(
    root: int, names: list[str], known: Mapping[str, Entry], floor: int, want_logs: bool
) -> Checked:
    found = Checked()
    good, logs, others = found.good, found.logs, list[tuple[str, Entry | None]]()
    stat_at, get, is_dir = os.stat, known.get, stat.S_ISDIR
    # The common case first, kept to three stats and one comparison of ints: a session that
    # is no fork, saved settled. Its stamp was saved only when no time in it was after the
    # floor of its own check, so fresh fields equal to it have exactly its times, and the
    # racy rule for them is its `newest` against this check's floor (a clock set back below
    # a file's times makes it racy again, as a whole fingerprint would be).
    for name in names:
        entry = get(name)
        if entry is None or (fields := entry.fields) is None or entry.newest > floor:
            others.append((name, entry))
            continue
        try:
            top = stat_at(name, dir_fd=root, follow_symlinks=False)
            meta = stat_at(name + _META_TAIL, dir_fd=root, follow_symlinks=False)
            log = stat_at(name + _LOG_TAIL, dir_fd=root, follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            others.append((name, entry))  # gone, no directory, a file missing: looked at below
            continue
        if is_dir(top.st_mode) and fields == (
            top.st_ino, top.st_size, top.st_mtime_ns, top.st_ctime_ns,
            meta.st_ino, meta.st_size, meta.st_mtime_ns, meta.st_ctime_ns,
            log.st_ino, log.st_size, log.st_mtime_ns, log.st_ctime_ns,
        ):  # fmt: skip
            if entry.summary is not None:
                good.append(entry.summary)
            if want_logs:
                logs[name] = entry.stamp[_LOG_AT]
        else:
            others.append((name, entry))
    for name, entry in others:
        _check_one(root, name, entry, floor, found, want_logs)
    return found


def _check_one(
    root: int, name: str, entry: Entry | None, floor: int, found: Checked, want_logs: bool
) -> None:
    """A session the common case did not settle: a fork, new, changed, racy, a file missing,
    or no directory; its whole fingerprint taken (fork.json included: a session that became a
    fork has a new directory time, so it is here) and compared."""
    try:
        top = os.stat(name, dir_fd=root, follow_symlinks=False)
    except FileNotFoundError:
        return  # deleted since the listing
    if not stat.S_ISDIR(top.st_mode):
        if not stat.S_ISREG(top.st_mode):  # a file named like a session is none
            found.odd.append(name)
        return
    seen = _fingerprint(root, name, top, floor, fork=True)
    if entry is not None and entry.stamp and seen.stamp == entry.stamp:
        if entry.summary is not None:
            found.good.append(entry.summary)
    else:
        found.changed.append(seen)
    if want_logs:
        found.logs[name] = log_key(seen.log, floor)


__all__ = ["FORK_STAMP", "Checked", "Entry", "Seen", "check", "key", "log_key", "size_of"]
