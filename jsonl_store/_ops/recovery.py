"""Verify and repair one session: find every problem on disk, and fix what can be fixed.

`check(..., fix=False)` changes nothing and says, for each problem, what repair would
do; `check(..., fix=True)` does it (the caller holds the session lock) and reports the
same problems. Damage in the middle of a log is never "fixed": readers skip it, and the
bytes stay where they are for a person to inspect.
"""

from __future__ import annotations

import dataclasses
import fcntl
import os
import stat
from collections.abc import Callable
from datetime import UTC, datetime

from .._errors import UnrecognizedRecords, UnsafePath, UnsupportedFormat
from .._format import lines as _lines
from .._format.lines import BOM
from .._format.names import (
    BLOBS_DIR,
    FORK_NAME,
    LOG_NAME,
    META_NAME,
    USAGE_NAME,
    FileKind,
    classify,
    cut_name,
    is_tmp_name,
    snapshot_name,
)
from .._io import atomic as _atomic
from .._io.fs import FileSystem, check_directory, describe_mode, open_regular
from .._io.session_dir import SessionDir
from .._log import blob_writes as _blob_writes
from .._log import blobs as _blobs
from .._log import snapshots as _snapshots
from .._log.modes import Mode, Source, read
from .._log.problems import (
    CHECK_SYSTEM,
    DELETE,
    LEAVE_UNRECOGNIZED,
    LEAVE_UNSAFE,
    LEFT_FOR_READERS,
    MOVE_ASIDE,
    NEEDS_NEWER,
    REANCHOR,
    RESTORE,
    SHOWN_AS_PLACEHOLDER,
    Problem,
    Reporter,
    cut_into,
)
from .._log.reader import LogReader, ends_batch
from .._log.scan import (
    FLAGS_READ,
    RECORD_LIKE_LIMIT,
    Line,
    conversion_problem,
    last_good,
    record_like_lines,
)
from .._log.writer import LogWriter, free_sidecar
from .._session import forks as _forks
from .._session import meta as _meta
from .._session import summary as _session
from .._session.meta import SessionMeta


def unsafe_problem(exc: UnsafePath) -> Problem:
    """The problem an `UnsafePath` is: repair never follows, opens or deletes the path."""
    return Problem(exc.path or "", "unsafe-path", exc.message, LEAVE_UNSAFE)


#: Names `unsafe_paths` leaves alone: neither read, written nor deleted by repair (cut
#: sidecars and damaged files are only ever made, never opened again).
_NOT_CHECKED = frozenset({FileKind.OTHER, FileKind.CUT, FileKind.DAMAGED})


def unsafe_paths(where: SessionDir) -> list[Problem]:
    """A problem for the session directory or each of its files that is not what it seems.

    ``lstat`` of each name the store reads, writes or deletes: a symlink, a directory, a
    FIFO, a socket or a device in place of a session file is never followed, opened or
    deleted.
    """
    fs, session_id, directory = where.fs, where.session_id, where.path
    try:
        if not check_directory(fs, directory, session_id=session_id):
            return []
        names = fs.listdir(directory)
    except UnsafePath as exc:
        return [unsafe_problem(exc)]
    problems: list[Problem] = []
    for name in names:
        if classify(name) in _NOT_CHECKED:  # repair deletes temporary files, so they are checked
            continue
        path = os.path.join(directory, name)
        try:
            mode = fs.lstat(path).st_mode
        except FileNotFoundError:
            continue
        if name == BLOBS_DIR:
            if not stat.S_ISDIR(mode):  # blob files are read below it, so it is never followed
                reason = f"{name} is {describe_mode(mode)}, not a directory"
                problems.append(Problem(path, "unsafe-path", reason, LEAVE_UNSAFE))
        elif not stat.S_ISREG(mode):
            reason = f"{name} is {describe_mode(mode)}, not a regular file"
            problems.append(Problem(path, "unsafe-path", reason, LEAVE_UNSAFE))
    return problems


def check(where: SessionDir, *, fix: bool, durable: bool, lock_timeout: float) -> list[Problem]:
    """Every problem of one session; with ``fix``, after fixing what can be fixed.

    A session with an unsafe path gets only those problems: nothing else of it is read
    or changed until a person has put regular files in their place.
    """
    unsafe = unsafe_paths(where)
    if unsafe:
        return unsafe
    directory = where.path
    try:
        return _check_session(where, fix=fix, durable=durable, lock_timeout=lock_timeout)
    except UnsupportedFormat as exc:
        return [Problem(where.file(META_NAME), "unsupported-format", str(exc), NEEDS_NEWER)]
    except UnsafePath as exc:  # swapped in after the look above
        return [unsafe_problem(exc)]
    except OSError as exc:
        if fix:
            raise
        return [Problem(directory, "unreadable", str(exc), CHECK_SYSTEM)]


def _check_session(where: SessionDir, *, fix: bool, durable: bool, lock_timeout: float) -> list[Problem]:
    fs, directory = where.fs, where.path
    try:
        names = fs.listdir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return []
    check = _Check(where, fix=fix, durable=durable)
    # In spec §12's order: metadata, temporary files, the fork's history, raw log, usage log, snapshots.
    check.meta(META_NAME in names)
    check.temporary_files(names)
    base = check.fork() if FORK_NAME in names else 0
    # Which snapshots' offsets hold before repair restores the log: a restore moves those
    # records, and rewriting their offsets then is part of the restore, not a problem.
    held = _offsets_holding(where) if fix else set()
    # Logs: mid-log damage is reported and left; a damaged tail is cut.
    log_converted = False
    for name in (LOG_NAME, USAGE_NAME):
        if name in names:
            found_in_log = _check_log(where, name, fix=fix, lock_timeout=lock_timeout, base=base)
            if name == LOG_NAME:
                log_converted = any(p.kind == "text-conversion" for p in found_in_log)
            check.problems.extend(found_in_log)
    check.problems.extend(_check_blobs(where, fix=fix))
    with LogReader(where) as log:
        for version in _snapshots.versions(where):
            check.snapshot(log, version, held=version in held, log_converted=log_converted)
    return check.problems


class _Check:
    """Verify (and with ``fix``, repair) one session's files, collecting its problems."""

    def fork(self) -> int:
        """A fork's history before its own log: readable, and still the one it branched from.

        Returns the sequence the fork's own log continues from: the branch, 0 when
        ``fork.json`` cannot be read, the one before its first record when that record is
        at or before the branch. Nothing here is repaired: the source is another session,
        and a fork file is never rewritten.
        """
        where = self.where
        path = where.file(FORK_NAME)
        first = _session.first_sequence(where)
        try:
            point = _forks.read(where)
            links = _forks.chain(where.sibling, self.session_id, first)
        except _forks.DamagedFork as exc:
            self.problems.append(Problem(path, "bad-fork", str(exc), LEFT_FOR_READERS))
            return 0
        if point is not None and links[-1].base < point.sequence:
            self.problems.append(
                Problem(path, "bad-fork", _forks.early_records(first, point), LEFT_FOR_READERS)
            )
        found = Reporter()
        for link in links[:-1]:
            source = where.sibling(link.session_id)
            try:
                present = check_directory(self.fs, source.path, session_id=link.session_id)
            except UnsafePath:
                present = False
            if not present:
                reason = f"the fork's source session {link.session_id!r} does not exist"
                found.report(Problem(path, "bad-fork", reason, LEFT_FOR_READERS))
                continue
            for _ in _forks.link_records(source, link, found):
                pass
        # The sources' own damage is theirs to report; here only where the fork's history breaks.
        self.problems.extend(p for p in found.problems if p.kind == "bad-fork")
        return links[-1].base

    def __init__(self, where: SessionDir, *, fix: bool, durable: bool) -> None:
        self.where = where
        self.fs = where.fs
        self.session_id = where.session_id
        self.directory = where.path
        self.fix = fix
        self.durable = durable
        self.problems: list[Problem] = []

    def meta(self, present: bool) -> None:
        fs, directory = self.fs, self.directory
        met = Reporter()
        meta = _session.read_meta(self.where, met)
        self.problems.extend(met.problems)
        if meta is None:
            if present and self.fix:
                _session.move_aside(self.where, META_NAME)
                created = _session.first_record_time(self.where) or datetime.now(UTC)
                _meta.write(self.where, SessionMeta(created_at=created), durable=self.durable)
            return
        if self.fix:
            _meta.check_writable(meta, self.session_id)
        data = _atomic.read_whole(fs, os.path.join(directory, META_NAME), _meta.MAX_META_BYTES) or b""
        if b"\r\n" in data:
            # JSON strings hold no raw line break, so every \r\n is a converted line end.
            path = os.path.join(directory, META_NAME)
            self.problems.append(conversion_problem(path, data.count(b"\r\n"), 0, RESTORE))
            if self.fix:
                _atomic.replace(fs, directory, META_NAME, data.replace(b"\r\n", b"\n"), durable=True)

    def temporary_files(self, names: list[str]) -> None:
        # Every writer that makes a temporary file holds the session lock, and so does
        # repair, so none of them is still being written.
        for name in names:
            if is_tmp_name(name):
                path = os.path.join(self.directory, name)
                self.problems.append(Problem(path, "leftover-temp", "unfinished temporary file", DELETE))
                if self.fix:
                    self.fs.unlink(path)

    def snapshot(self, log: LogReader, version: int, *, held: bool, log_converted: bool) -> None:
        fs, directory = self.fs, self.directory
        path = os.path.join(directory, snapshot_name(version))
        try:
            snap, converted = _snapshots.read_file(self.where, version)
        except _snapshots.DamagedSnapshot as exc:
            self._bad_snapshot(path, version, str(exc))
            return
        if log.fd is None:
            self._bad_snapshot(path, version, "the raw log is missing")
            return
        found = _snapshots.trusted(fs, log.fd, log.size, snap)
        if isinstance(found, str):
            self._bad_snapshot(path, version, found)
            return
        if converted:
            self.problems.append(conversion_problem(path, 1, 0, RESTORE))
        moved = found.boundary_offset != snap.boundary_offset
        if self.fix:
            report = moved and not held
        elif log_converted:
            # Repair restores the log first: what counts is where the record will be.
            after = found.boundary_offset - _restored_bytes(fs, log.fd, found.boundary_offset)
            report = moved and after != snap.boundary_offset
        else:
            report = moved
        if report:
            self.problems.append(
                Problem(path, "moved-boundary",
                        f"the boundary record is at bytes {found.boundary_offset}..{found.tail_offset}, "
                        f"not {snap.boundary_offset}..{snap.tail_offset}", REANCHOR)
            )  # fmt: skip
        if self.fix and (converted or moved):
            # The file gets back the bytes it was created with (and, when restoring a log
            # that was converted only in part moved its boundary record, the offsets the
            # record has now): the same snapshot, so replacing it breaks no promise of
            # immutability (spec §12).
            line = _lines.whole_line(_atomic.read_whole(fs, path, _snapshots.MAX_SNAPSHOT_BYTES) or b"")
            if line is not None:
                data = line[0] + b"\n"
                if moved:
                    data = _snapshots.reanchored(line[0], found.boundary_offset, found.tail_offset)
                _atomic.replace(fs, directory, snapshot_name(version), data, durable=True)

    def _bad_snapshot(self, path: str, version: int, reason: str) -> None:
        self.problems.append(Problem(path, "bad-snapshot", reason, MOVE_ASIDE))
        if self.fix:
            _session.move_aside(self.where, snapshot_name(version))


def _check_log(
    where: SessionDir, name: str, *, fix: bool, lock_timeout: float, base: int = 0
) -> list[Problem]:
    fs, session_id = where.fs, where.session_id
    path = where.file(name)
    raw_log = name == LOG_NAME
    accept = ends_batch if raw_log else None
    found = Reporter()
    removed = 0  # bytes a restore of converted lines takes out before the good part's end
    # One descriptor and one size for the whole check: the raw log's is its reader's.
    log = LogReader(where, found) if raw_log else None
    fd = open_regular(fs, path, FLAGS_READ, session_id=session_id) if log is None else log.fd
    if fd is None:
        return []  # removed since the directory was listed
    try:
        if log is not None:
            size = log.size
            for _ in log.records(0, base):  # a fork's own log starts after its branch
                pass
        else:
            size = fs.fstat(fd).st_size
            for _ in read(Source(fs, fd, size, path), Mode.TOLERANT, found):
                pass
        converted = any(p.kind == "text-conversion" for p in found.problems)
        # What readers did becomes what repair does (spec §12).
        problems = [
            dataclasses.replace(p, action=RESTORE if p.kind == "text-conversion" else LEFT_FOR_READERS)
            for p in found.problems
            if p.kind != "bad-blob"  # once per blob file by `_check_blobs`, not once per record
        ]
        good_end, _ = last_good(fs, fd, size, 0, accept)
        if converted and not fix:
            removed = _restored_bytes(fs, fd, good_end)
        suspect = record_like_lines(fs, fd, good_end, size) if good_end < size else 0
    finally:
        if log is not None:
            log.close()
        else:
            fs.close(fd)
    if suspect >= RECORD_LIKE_LIMIT:
        # Never cut (spec §9.3): a person decides what these lines are.
        problems.append(
            Problem(
                path,
                "unrecognized-records",
                f"the {size - good_end} bytes after the last good record hold {suspect} or more whole lines "
                "that look like records but fail their checksums",
                LEAVE_UNRECOGNIZED,
                good_end,
            )
        )
        good_end = size  # nothing to cut
    if fix and (converted or good_end < size):
        problems.extend(_restore_and_cut(where, name, accept, converted=converted, lock_timeout=lock_timeout))
    elif good_end < size:
        # Named as repair will make it: after converted lines are restored, the good
        # part ends ``removed`` bytes earlier.
        offset = good_end - removed
        sidecar = os.path.basename(free_sidecar(where, cut_name(name, offset)))
        problems.append(
            Problem(
                path,
                "torn-tail",
                f"{size - good_end} bytes after the last good record",
                cut_into(sidecar),
                offset,
            )
        )
    return problems


def _check_blobs(where: SessionDir, *, fix: bool) -> list[Problem]:
    """The blob files' problems (spec §12): each referenced one read back, each unreferenced one an orphan.

    To repair, the log's append lock is held throughout: a writer stores a record's blobs
    under it, right before the record (§9.14), so no blob seen here is waiting for its record.
    """
    fs = where.fs
    names = _blobs.listing(where)
    problems: list[Problem] = []
    with LogReader(where) as log:
        if log.fd is None:
            referenced: dict[str, int] = {}
        else:
            if fix:
                fs.flock(log.fd, fcntl.LOCK_EX)
                names = _blobs.listing(where)  # again, under the lock
            referenced = {}
            end, _ = log.last_good()
            for line in read(Source(fs, log.fd, end, log.path), Mode.TOLERANT):
                found, malformed = _blobs.references(line.body)
                for digest, size in found:
                    referenced.setdefault(digest, size)
                if malformed:
                    reason = f"{malformed} malformed blob marker(s) in the record"
                    problems.append(
                        Problem(log.path, "bad-blob", reason, SHOWN_AS_PLACEHOLDER, line.offset, line.number)
                    )
        if names is None and not referenced:
            return problems
        return problems + _blob_writes.check(where, names or [], referenced, fix=fix)


def _restore_and_cut(
    where: SessionDir,
    name: str,
    accept: Callable[[Line], bool] | None,
    *,
    converted: bool,
    lock_timeout: float,
) -> list[Problem]:
    """Restore converted lines and cut the damaged tail with the writer an append uses; its cuts."""
    cuts = Reporter()
    writer = LogWriter(
        where,
        name,
        durable=True,
        lock_timeout=lock_timeout,
        label=where.file(name),
        accept=accept,
        reporter=cuts,
    )
    try:
        try:
            if converted:
                writer.restore()
            else:
                writer.append_nothing()
        except UnrecognizedRecords:
            pass  # restored; the lines it will not cut are reported by the check
        return [p for p in cuts.problems if p.kind != "text-conversion"]
    finally:
        writer.close()


def _offsets_holding(where: SessionDir) -> set[int]:
    """The versions of the snapshots whose boundary record is where they say, right now."""
    holding: set[int] = set()
    with LogReader(where) as log:
        if log.fd is None:
            return holding
        for version in _snapshots.versions(where):
            try:
                snap = _snapshots.read(where, version)
            except _snapshots.DamagedSnapshot:
                continue
            if _snapshots.boundary_problem(where.fs, log.fd, log.size, snap) is None:
                holding.add(version)
    return holding


def _restored_bytes(fs: FileSystem, fd: int, end: int) -> int:
    """How many bytes restoring the converted lines in ``[0, end)`` removes (§9.3)."""
    removed = 0
    for line in read(Source(fs, fd, end), Mode.TOLERANT, first_line=None):
        if line.converted:
            removed += line.end - 1 - (line.offset + len(line.body))
            if line.offset == len(BOM) and fs.pread(fd, len(BOM), 0) == BOM:
                removed += len(BOM)
    return removed
