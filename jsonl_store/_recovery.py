"""Verify and repair one session: find every problem on disk, and fix what can be fixed.

`check(..., fix=False)` changes nothing and says, for each problem, what repair would
do; `check(..., fix=True)` does it (the caller holds the session lock) and reports the
same problems. Damage in the middle of a log is never "fixed": readers skip it, and the
bytes stay where they are for a person to inspect.
"""

from __future__ import annotations

import dataclasses
import os
import stat
from datetime import UTC, datetime

from . import _meta, _session, _snapshots
from ._errors import UnsafePath, UnsupportedFormat
from ._fs import FileSystem, check_directory, describe_mode, open_regular
from ._log import FLAGS_READ, LogWriter, free_sidecar, last_good, scan
from ._meta import SessionMeta
from ._paths import (
    LOCK_NAME,
    LOG_NAME,
    META_NAME,
    TMP_SUFFIX,
    USAGE_NAME,
    cut_name,
    parse_snapshot_name,
    snapshot_name,
)
from ._records import Problem

#: Problems that make a session unusable (the CLI exits with 2 for them).
UNUSABLE_KINDS = frozenset({"unsupported-format", "unreadable", "unsafe-path"})

#: What a person must do about an `UnsafePath`; repair never follows, opens or deletes it.
UNSAFE_ACTION = "none: put a regular file (a directory for a session) in its place; repair never touches it"


def unsafe_problem(exc: UnsafePath) -> Problem:
    return Problem(exc.path or "", "unsafe-path", exc.message, UNSAFE_ACTION)


def unsafe_paths(fs: FileSystem, session_id: str, directory: str) -> list[Problem]:
    """A problem for the session directory or each of its files that is not what it seems.

    ``lstat`` of each name the store reads, writes or deletes: a symlink, a directory, a
    FIFO, a socket or a device in place of a session file is never followed, opened or
    deleted.
    """
    try:
        if not check_directory(fs, directory, session_id=session_id):
            return []
        names = fs.listdir(directory)
    except UnsafePath as exc:
        return [unsafe_problem(exc)]
    problems = []
    for name in names:
        known = name in (LOG_NAME, USAGE_NAME, META_NAME, LOCK_NAME) or parse_snapshot_name(name) is not None
        if not known and not name.endswith(TMP_SUFFIX):  # repair deletes temporary files
            continue
        path = os.path.join(directory, name)
        try:
            mode = fs.lstat(path).st_mode
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(mode):
            reason = f"{name} is {describe_mode(mode)}, not a regular file"
            problems.append(Problem(path, "unsafe-path", reason, UNSAFE_ACTION))
    return problems


def check(
    fs: FileSystem, session_id: str, directory: str, *, fix: bool, durable: bool, lock_timeout: float
) -> list[Problem]:
    """Every problem of one session; with ``fix``, after fixing what can be fixed.

    A session with an unsafe path gets only those problems: nothing else of it is read
    or changed until a person has put regular files in their place.
    """
    unsafe = unsafe_paths(fs, session_id, directory)
    if unsafe:
        return unsafe
    try:
        return _check_session(fs, session_id, directory, fix=fix, durable=durable, lock_timeout=lock_timeout)
    except UnsupportedFormat as exc:
        return [Problem(os.path.join(directory, META_NAME), "unsupported-format", str(exc), "none: needs a newer jsonl_store")]
    except UnsafePath as exc:  # swapped in after the look above
        return [unsafe_problem(exc)]
    except OSError as exc:
        if fix:
            raise
        return [Problem(directory, "unreadable", str(exc), "none: check permissions and the file system")]


def _check_session(
    fs: FileSystem, session_id: str, directory: str, *, fix: bool, durable: bool, lock_timeout: float
) -> list[Problem]:
    problems: list[Problem] = []
    try:
        names = fs.listdir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return []
    # Metadata.
    meta = _session.read_meta(fs, session_id, directory, problems)
    if fix and meta is not None:
        _meta.check_writable(meta, session_id)
    if meta is None and META_NAME in names and fix:
        _session.move_aside(fs, directory, META_NAME)
        created = _session.first_record_time(fs, directory) or datetime.now(UTC)
        _meta.write(fs, directory, SessionMeta(created_at=created), durable=durable)
    # Leftover temporary files: every writer that makes one holds the session lock,
    # and so does repair, so none of them is still being written.
    for name in names:
        if name.endswith(TMP_SUFFIX):
            problems.append(Problem(os.path.join(directory, name), "leftover-temp", "unfinished temporary file", "delete"))
            if fix:
                fs.unlink(os.path.join(directory, name))
    # Logs: mid-log damage is reported and left; a damaged tail is cut.
    for name in (LOG_NAME, USAGE_NAME):
        if name in names:
            problems.extend(_check_log(fs, session_id, directory, name, fix=fix, lock_timeout=lock_timeout))
    # Snapshots.
    fd, size = _session.open_log(fs, directory)
    try:
        for version in _snapshots.versions(fs, directory):
            path = os.path.join(directory, snapshot_name(version))
            try:
                snap = _snapshots.read(fs, directory, version, session_id)
                reason = "the raw log is missing" if fd is None else _snapshots.boundary_problem(fs, fd, size, snap)
            except _snapshots.DamagedSnapshot as exc:
                reason = str(exc)
            if reason is not None:
                problems.append(Problem(path, "bad-snapshot", reason, "move aside"))
                if fix:
                    _session.move_aside(fs, directory, snapshot_name(version))
    finally:
        if fd is not None:
            fs.close(fd)
    return problems


def _check_log(
    fs: FileSystem, session_id: str, directory: str, name: str, *, fix: bool, lock_timeout: float
) -> list[Problem]:
    path = os.path.join(directory, name)
    raw_log = name == LOG_NAME
    accept = _session.ends_batch if raw_log else None
    problems: list[Problem] = []
    fd = open_regular(fs, path, FLAGS_READ, session_id=session_id)
    try:
        size = fs.fstat(fd).st_size
        if raw_log:
            end = _session.good_end(fs, fd, size, 0)
            for _ in _session.decode_lines(fs, session_id, directory, fd, 0, end, 0, problems):
                pass
        else:
            for _ in scan(fs, fd, path, 0, size, problems, first_line=1):
                pass
        problems = [dataclasses.replace(p, action="none: readers skip it") for p in problems]
        good_end, _ = last_good(fs, fd, size, 0, accept)
    finally:
        fs.close(fd)
    if good_end < size:
        if fix:
            # The same writer an append uses: it cuts the tail into a sidecar on open.
            writer = LogWriter(
                fs, path, directory, durable=True, lock_timeout=lock_timeout, label=path,
                session_id=session_id, accept=accept,
            )
            try:
                writer.append_nothing()
                problems.extend(writer.cuts)
            finally:
                writer.close()
        else:
            sidecar = os.path.basename(free_sidecar(fs, directory, cut_name(name, good_end)))
            problems.append(
                Problem(path, "torn-tail", f"{size - good_end} bytes after the last good record",
                        f"cut into {sidecar}", good_end)
            )
    return problems
