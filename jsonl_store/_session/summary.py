"""One session directory, read side: metadata, first and last records, summaries.

These functions read; they never lock and never write, except `move_aside`, which
`repair` and a writer replacing torn metadata call while holding the session lock.
The raw log's records are read through `_log.reader.LogReader`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime

from .._context.view import SessionSummary
from .._format import codec as _codec
from .._format.names import META_NAME, damaged_name
from .._format.records import ForkPoint
from .._io.session_dir import SessionDir
from .._log.modes import Mode, Source, read
from .._log.problems import MOVE_ASIDE, Problem, Reporter
from .._log.reader import LogReader, record_summary
from .._log.scan import Line
from . import forks as _forks
from . import meta as _meta
from .meta import SessionMeta

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def read_meta(where: SessionDir, reporter: Reporter) -> SessionMeta | None:
    """The session's metadata; None when absent or damaged (then a `bad-meta` problem).

    Raises `UnsupportedFormat` for metadata that needs a newer reader.
    """
    try:
        meta = _meta.read(where)
    except _codec.DECODE_ERRORS as exc:
        reporter.report(
            Problem(
                path=where.file(META_NAME),
                kind="bad-meta",
                reason=f"unreadable metadata: {exc}",
                action=MOVE_ASIDE,
            )
        )
        return None
    if meta is not None:
        _meta.check_readable(meta, where.session_id)
    return meta


def _first_line(where: SessionDir, limit: int | None = None) -> Line | None:
    """The raw log's first complete record line, within ``limit`` bytes (None: no log or none).

    A tolerant read (`_log.modes.read`) reads in growing chunks, so a caller that takes the first line reads little.
    """
    with LogReader(where) as log:
        if log.fd is None:
            return None
        end = log.size if limit is None else min(log.size, limit)
        return next(iter(read(Source(where.fs, log.fd, end), Mode.TOLERANT, first_line=None)), None)


def first_record_time(where: SessionDir) -> datetime | None:
    """When the raw log's first record was appended (None for no log or no record)."""
    first = _first_line(where, 1 << 16)
    return record_summary(first.body)[1] if first is not None else None


def began_at(where: SessionDir) -> datetime | None:
    """When a session without metadata began: its first record's time, else its fork's.

    A fork whose making stopped before its metadata (spec §9.13) has no record yet, and
    its ``fork.json`` says when it was made: metadata written for it later keeps that
    time, so completing it does not move the fork up the list (which is ordered by last
    activity, docs/guides/store.md, `list_sessions`). None: no record and no readable fork file.
    """
    first = first_record_time(where)
    if first is not None:
        return first
    try:
        point = _forks.read(where)
    except _forks.DamagedFork:
        return None  # verify names it; the caller's time stands
    return point.created_at if point is not None else None


def first_sequence(where: SessionDir) -> int:
    """The sequence of the raw log's first complete record (0 for no log or no record)."""
    first = _first_line(where)
    return record_summary(first.body)[0] if first is not None else 0


def summary(
    where: SessionDir,
    meta: SessionMeta | None,
    read_fork: Callable[[], ForkPoint | None] | None = None,
    known_end: tuple[Line | None] | None = None,
) -> SessionSummary | None:
    """The session's summary from its metadata and its last complete record (None: no session).

    Only the last complete record is read (about 4 KiB), and only its sequence and time
    are decoded, so listing stays cheap for long logs. ``read_fork`` reads the fork point
    (default: `_session.forks.read` of ``where``; a listing passes its cached one).
    ``known_end`` is ``(line,)``, the line the log's good part ends with, when a writer
    knows the file at the log's path unchanged (`LogWriter.known_last`): then the log is
    not read. It is used only with ``meta``, since without it the first record's time is
    read from the log anyway.
    """
    last_sequence, last_time, first_time = 0, None, None
    if known_end is not None and meta is not None:
        exists, line = True, known_end[0]
    else:
        with LogReader(where) as log:
            exists, line = log.exists, log.last_good()[1] if log.size else None
            if log.size and meta is None:
                first_time = first_record_time(where)
    if line is not None:
        last_sequence, last_time = record_summary(line.body)
    try:
        fork = read_fork() if read_fork is not None else _forks.read(where)
    except _forks.DamagedFork:
        fork = None  # verify names it; the summary is the session's own
    if meta is None and not exists and fork is None:
        # A fork file alone is a session: a fork whose making stopped before its metadata
        # (spec §9.13) is one `load` reads and a delete of its source counts.
        return None
    if fork is not None and last_sequence == 0:
        last_sequence = fork.sequence  # a fork's history ends at its branch until it appends
    created = meta.created_at if meta else (first_time or last_time or (fork.created_at if fork else _EPOCH))
    meta = meta or SessionMeta(created_at=created)
    return SessionSummary(
        session_id=where.session_id,
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
        fork=fork,
    )


def move_aside(where: SessionDir, name: str) -> None:
    """Rename a damaged file to ``<name>.damaged`` (``.2.damaged``, ... if taken)."""
    fs, directory = where.fs, where.path
    existing = set(fs.listdir(directory))
    counter = 1
    while (target := damaged_name(name, counter)) in existing:
        counter += 1
    fs.rename(os.path.join(directory, name), os.path.join(directory, target))
    fs.fsync_dir(directory)
