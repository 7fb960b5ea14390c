"""The catalog (spec §21): session summaries and a ranked text index, derived from the files.

The files stay the only truth: every answer is preceded by a freshness check against
them, and whatever the check finds changed is read again before the answer is given.

**Who updates it.** Readers, lazily: `SessionStore.list_sessions` and ranked search bring
the catalog up to date before they answer, and writers never touch it. A durable append
costs what an append plus fsync costs and nothing more; keeping a database in step on
every write would add a transaction to each one, and would still miss what other tools
do to the files (a ``git checkout``, an edit by hand), which a reader has to check for
anyway.

**The freshness check.** One listing of the root, then per session an ``lstat`` of its
directory and a ``stat`` of its ``meta.json`` and raw log (and of ``fork.json`` for a
fork): inode, size, mtime_ns and ctime_ns. The directory's times change when a file in
it is created, renamed or removed (a whole-file write of ``meta.json``, a checkout);
the files' own when they are written in place. A fingerprint is compared for equality,
never for "newer", so a clock set back is a change like any other, and one taken while
the file may still change within the timestamp granularity is marked racy and read
again next time (git's "racily clean" rule, https://git-scm.com/docs/racy-git). A session the check finds changed has its
summary read from its files, as a listing without the catalog does.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import sqlite3
import stat
import struct
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from .._context.view import SessionSummary
from .._errors import CatalogUnavailable, InvalidArgument, UnsafePath, UnsupportedFormat
from .._format.names import FORK_NAME, LOG_NAME, META_NAME, catalog_path
from .._io.fs import OS_FS
from .._io.session_dir import SessionDir
from . import catalog_index as _catalog_index
from . import catalog_schema as _catalog_schema
from .catalog_index import RACY, LogState

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

#: A fingerprint whose times are this close to the check's clock (or after it) is racy.
#: Wider than any file system's timestamp granularity in use (FAT's 2 s).
RACY_NS = 3_000_000_000
#: Below this many sessions, a listing of a store without a catalog reads the files and makes
#: none (they list in a few milliseconds); a ranked search makes one whatever the count.
BUILD_AT = 100
#: A batch of text indexing is committed after this many bytes of logs, so another
#: process updating the catalog waits for one batch, never for a whole build.
BATCH_BYTES = 16 << 20
_META_TAIL, _LOG_TAIL, _FORK_TAIL = (os.sep + name for name in (META_NAME, LOG_NAME, FORK_NAME))
_ENCODE = msgspec.json.Encoder().encode
_DECODE = msgspec.json.Decoder(list[SessionSummary]).decode
#: A word of a ranked query, as FTS5's unicode61 tokenizer splits text
#: (https://www.sqlite.org/fts5.html#unicode61_tokenizer): letters, digits and marks.
_WORD = re.compile(r"[^\W_]+|_+", re.UNICODE)
#: What marks a match in a snippet while SQLite builds it: noncharacters, which Unicode
#: keeps for a program's internal use (Unicode §23.7), so no text is expected to hold them.
_OPEN, _CLOSE = "\ufdd0", "\ufdd1"
Summarise = Callable[[str, str], SessionSummary | None]
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class RankedHit:
    """One part of a message that matches a ranked query, best first.

    ``snippet`` is a piece of the part's text with the matched words at ``marks``
    (``(start, end)`` offsets into ``snippet``); ``score`` is FTS5's bm25, lower is better.
    A title's hit has ``sequence`` 0, ``role`` ``""`` and ``kind`` ``"title"``.
    """

    session_id: str
    sequence: int
    role: str
    kind: str
    field: str
    snippet: str
    marks: tuple[tuple[int, int], ...]
    score: float

    def to_dict(self) -> dict[str, object]:
        """The hit as JSON-ready values (``marks`` as lists)."""
        return hit_fields(self)


def hit_fields(hit: DataclassInstance) -> dict[str, Any]:
    """A search hit's fields by name, in their order, as JSON-ready values (tuples as lists):
    the ``to_dict`` of `RankedHit` and of `jsonl_store.search.Hit`, which print as
    ``jsonl-store search --json`` and ``search --rank --json``."""
    return {field.name: _listed(getattr(hit, field.name)) for field in dataclasses.fields(hit)}


def _listed(value: object) -> object:
    return [_listed(item) for item in value] if isinstance(value, tuple) else value


_PACK = struct.Struct("<4q").pack
_ABSENT = bytes(32)
#: A stamp's length when it covers a fork's fork.json too (four files of four fields).
_FORK_STAMP = 4 * 32


def _key(st: os.stat_result | None) -> bytes:
    """Inode, size, mtime_ns and ctime_ns, packed (zeros for no file)."""
    if st is None:
        return _ABSENT
    return _PACK(st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _stat(path: str) -> os.stat_result | None:
    try:
        return os.stat(path, follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError):
        return None


def _racy(now: int, stats: Iterable[os.stat_result | None]) -> bool:
    floor = now - RACY_NS
    return any(st is not None and (st.st_mtime_ns > floor or st.st_ctime_ns > floor) for st in stats)


#: Each checked session's raw-log stat, by session id (None: no log).
_Logs = dict[str, os.stat_result | None]


@dataclass(slots=True)
class _Seen:
    """One session directory as the freshness check found it."""

    name: str
    directory: str
    #: The packed fingerprint; empty when racy, so the next check reads the session again.
    stamp: bytes
    #: The raw log's stat within it (None: no log), which the text index reuses.
    log: os.stat_result | None


def _fingerprint(name: str, directory: str, top: os.stat_result, now: int, fork: bool) -> _Seen:
    meta, log = _stat(directory + _META_TAIL), _stat(directory + _LOG_TAIL)
    stats = [top, meta, log]
    # fork.json is written once, when the fork is made (spec §8.10): its appearing or going
    # changes the directory's times, so only a known fork's own file needs a stat of its own.
    if fork and (point := _stat(directory + _FORK_TAIL)) is not None:
        stats.append(point)
    return _Seen(name, directory, b"" if _racy(now, stats) else b"".join(map(_key, stats)), log)


def _marked(snippet: str) -> tuple[str, tuple[tuple[int, int], ...]]:
    """A snippet from SQLite with `_OPEN`/`_CLOSE` taken out, and where they were."""
    text, marks, start = [], [], 0
    position = 0
    for piece in re.split(f"([{_OPEN}{_CLOSE}])", snippet):
        if piece == _OPEN:
            start = position
        elif piece == _CLOSE:
            marks.append((start, position))
        else:
            text.append(piece)
            position += len(piece)
    return "".join(text), tuple(marks)


def fts_query(query: str) -> str:
    """``query`` as an FTS5 query: each word a quoted string, all of them required."""
    if not isinstance(query, str):
        raise InvalidArgument(f"the query must be a str, got {type(query).__name__}")
    words = _WORD.findall(query)
    if not words:
        raise InvalidArgument(f"the query holds no word to look for: {query!r}")
    return " ".join('"' + word.replace('"', '""') + '"' for word in words)


class Catalog:
    """One store's connection to its catalog, opened on first use; safe to share between threads."""

    def __init__(self, root: str) -> None:
        self.root = root
        self._lock = threading.Lock()
        self._connection: sqlite3.Connection | None = None
        self._pid = 0

    def forked(self) -> None:
        """In a forked child: a fresh lock (a thread of the parent may have held it, and is
        gone), and no connection: the parent's stays the parent's (`_open`)."""
        self._lock = threading.Lock()
        self._connection = None

    def close(self) -> None:
        """Close the connection (it is opened again when needed)."""
        with self._lock:
            if self._connection is not None and self._pid == os.getpid():
                self._connection.close()
            self._connection = None

    def _open(self) -> sqlite3.Connection:
        # A connection is never used across fork(2) (https://www.sqlite.org/howtocorrupt.html,
        # §2.6): a child opens its own and leaves the parent's alone.
        if self._connection is None or self._pid != os.getpid():
            self._connection = _catalog_schema.open_catalog(self.root)
            self._pid = os.getpid()
        return self._connection

    def _retrying(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        """``work`` on the connection; a database found damaged on the way is built again once."""
        try:
            return work(self._open())
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                raise
            self._forget()
            _catalog_schema.discard(self.root)
            return work(self._open())

    def _forget(self) -> None:
        if self._connection is not None and self._pid == os.getpid():
            with contextlib.suppress(sqlite3.Error):
                self._connection.close()
        self._connection = None

    def listing(
        self, names: Iterable[str], summarise: Summarise
    ) -> tuple[list[SessionSummary], list[str]] | None:
        """The summaries of the sessions among ``names`` (root entries named as sessions), from
        the catalog once checked fresh; and the names the caller reads itself (an entry that
        is no directory, or whose files are unsafe: the caller reports them). None: no
        catalog here (a read-only root, a database that cannot be made), so the caller lists
        from the files."""
        names = list(names)
        if len(names) < BUILD_AT and not os.path.exists(catalog_path(self.root)):
            return None  # a few sessions list as fast from their files: no catalog is made for them
        with self._lock:
            try:
                return self._retrying(lambda connection: _refresh(connection, self.root, names, summarise))
            except (OSError, sqlite3.Error):
                return None

    def index_text(
        self, names: Iterable[str], summarise: Summarise, progress: Callable[[int, int], None] | None = None
    ) -> list[SessionSummary]:
        """Bring the summaries and the text index up to date; the sessions listed.

        ``progress(done, total)`` is called with the bytes of logs indexed so far and the
        bytes to index. Raises `CatalogUnavailable` when there is no catalog or no FTS5.
        """
        if not _catalog_schema.has_fts5():
            raise CatalogUnavailable(
                f"this Python's SQLite {sqlite3.sqlite_version} has no FTS5: ranked search is unavailable "
                "(substring and --regex search read the files and work without it)"
            )
        names = list(names)
        with self._lock:
            try:
                return self._retrying(
                    lambda connection: _index_all(connection, self.root, names, summarise, progress)
                )
            except (OSError, sqlite3.Error) as exc:
                raise CatalogUnavailable(f"the catalog below {self.root!r} cannot be used: {exc}") from exc

    def ranked(self, query: str, limit: int, session_id: str | None, role: str | None) -> list[RankedHit]:
        """The best ``limit`` hits of ``query`` (after `index_text`), best first."""
        match = fts_query(query)
        with self._lock:
            try:
                return self._retrying(lambda connection: _ranked(connection, match, limit, session_id, role))
            except (OSError, sqlite3.Error) as exc:
                raise CatalogUnavailable(f"the catalog below {self.root!r} cannot be used: {exc}") from exc


def _check(
    root: str, names: list[str], known: dict[str, tuple[bytes, bytes | None]], now: int, logs: _Logs | None
) -> tuple[list[bytes], list[_Seen], list[str]]:
    """The freshness check: the summaries still good, the sessions to read again, and the
    entries the caller reads itself; each checked session's log stat goes into ``logs``."""
    good: list[bytes] = []
    changed: list[_Seen] = []
    odd: list[str] = []
    for name in names:
        directory = root + os.sep + name
        try:
            top = os.lstat(directory)
        except FileNotFoundError:
            continue  # deleted since the listing
        if not stat.S_ISDIR(top.st_mode):
            if not stat.S_ISREG(top.st_mode):  # a file named like a session is none
                odd.append(name)
            continue
        row = known.get(name)
        if row is not None and row[0]:
            seen = _fingerprint(name, directory, top, now, fork=len(row[0]) == _FORK_STAMP)
            if logs is not None:
                logs[name] = seen.log
            if row[0] == seen.stamp:
                if row[1] is not None:
                    good.append(row[1])
                continue
        seen = _fingerprint(name, directory, top, now, fork=True)
        if logs is not None:
            logs[name] = seen.log
        changed.append(seen)
    return good, changed, odd


def _refresh(
    connection: sqlite3.Connection,
    root: str,
    names: list[str],
    summarise: Summarise,
    logs: _Logs | None = None,
) -> tuple[list[SessionSummary], list[str]]:
    known = {
        sid: (stamp, blob)
        for sid, stamp, blob in connection.execute("SELECT session_id, stamp, summary FROM sessions")
    }
    good, changed, odd = _check(root, names, known, time.time_ns(), logs)
    fresh: list[tuple[str, bytes, bytes | None, str | None]] = []
    summaries: list[SessionSummary] = []
    for seen in changed:
        try:
            # Checked again right before the read, as a listing without the catalog does: a
            # directory swapped for a symlink since the check is never read through.
            if not stat.S_ISDIR(os.lstat(seen.directory).st_mode):
                odd.append(seen.name)
                continue
            summary = summarise(seen.name, seen.directory)
        except FileNotFoundError:
            continue  # deleted since the check
        except UnsafePath:
            odd.append(seen.name)  # reported by the caller's own read, every time it lists
            continue
        except (NotADirectoryError, UnsupportedFormat):
            summary = None  # not listed, as without the catalog, until its files change
        if summary is not None:
            summaries.append(summary)
        fresh.append(
            (
                seen.name,
                seen.stamp,
                _ENCODE(summary) if summary is not None else None,
                summary.title if summary is not None else None,
            )
        )
    present = set(names)
    gone = [sid for sid in known if sid not in present]
    if fresh or gone:
        _write_summaries(connection, fresh, gone)
    if good:
        summaries.extend(_DECODE(b"[" + b",".join(good) + b"]"))
    return summaries, odd


def _write_summaries(
    connection: sqlite3.Connection, fresh: list[tuple[str, bytes, bytes | None, str | None]], gone: list[str]
) -> None:
    text = _catalog_schema.has_fts5()
    connection.execute("BEGIN IMMEDIATE")
    try:
        connection.executemany(
            "INSERT INTO sessions (session_id, stamp, summary) VALUES (?, ?, ?) "
            "ON CONFLICT (session_id) DO UPDATE SET stamp = excluded.stamp, summary = excluded.summary",
            [row[:3] for row in fresh],
        )
        if text:
            for sid, _, _, title in fresh:
                _catalog_index.index_title(connection, sid, title)
        for sid in gone:
            connection.execute("DELETE FROM sessions WHERE session_id = ?", (sid,))
            if text:
                _catalog_index.delete_parts(connection, sid)
        connection.execute("COMMIT")
    except BaseException:
        connection.execute("ROLLBACK")
        raise


def _index_all(
    connection: sqlite3.Connection,
    root: str,
    names: list[str],
    summarise: Summarise,
    progress: Callable[[int, int], None] | None,
) -> list[SessionSummary]:
    logs: _Logs = {}  # the freshness check's log stats: one stat per log, not two
    summaries, _ = _refresh(connection, root, names, summarise, logs)
    states = {
        row[0]: LogState(*row[1:])
        for row in connection.execute(
            "SELECT session_id, log_stamp, log_offset, log_sequence, log_anchor, log_dialect FROM sessions"
        )
    }
    now = time.time_ns()
    work: list[tuple[SessionSummary, str, int]] = []
    for summary in summaries:
        sid = summary.session_id
        log = logs[sid] if sid in logs else _stat(os.path.join(root, sid, LOG_NAME))
        stamp = _catalog_index.log_stamp(log)
        if _racy(now, [log]):
            stamp = RACY + stamp
        state = states.get(summary.session_id, LogState())
        if state.stamp != stamp or stamp.startswith(RACY) or state.dialect != summary.dialect:
            work.append((summary, stamp, max(0, (log.st_size if log else 0) - state.offset)))
    total, done = sum(size for _, _, size in work), 0
    if progress is not None:
        progress(0, total)
    batch, rows = 0, list[_catalog_index.Row]()
    connection.execute("BEGIN IMMEDIATE")
    try:
        for summary, stamp, _ in work:
            done_now = _index_one(connection, root, summary, stamp, rows)
            done, batch = done + done_now, batch + done_now
            if progress is not None:
                progress(done, total)
            if batch >= BATCH_BYTES:
                _catalog_index.insert(connection, rows)
                connection.execute("COMMIT")
                connection.execute("BEGIN IMMEDIATE")
                batch, rows = 0, []
        _catalog_index.insert(connection, rows)
        connection.execute("COMMIT")
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    return summaries


def _index_one(
    connection: sqlite3.Connection,
    root: str,
    summary: SessionSummary,
    stamp: str,
    rows: list[_catalog_index.Row],
) -> int:
    """Read one session's new records into ``rows`` inside the caller's transaction; the bytes read."""
    sid = summary.session_id
    # Read again under the write lock: another process may have indexed it meanwhile.
    row = connection.execute(
        "SELECT log_stamp, log_offset, log_sequence, log_anchor, log_dialect FROM sessions WHERE session_id = ?",
        (sid,),
    ).fetchone()
    if row is None:
        return 0  # deleted since the listing: its rows went with it
    state = LogState(*row)
    if state.stamp == stamp and not stamp.startswith(RACY) and state.dialect == summary.dialect:
        return 0
    new, read = _catalog_index.index_log(
        connection, SessionDir(OS_FS, sid, os.path.join(root, sid)), summary.dialect, state, stamp, rows
    )
    connection.execute(
        "UPDATE sessions SET log_stamp = ?, log_offset = ?, log_sequence = ?, log_anchor = ?, log_dialect = ? "
        "WHERE session_id = ?",
        (new.stamp, new.offset, new.sequence, new.anchor, new.dialect, sid),
    )
    return read


def _ranked(
    connection: sqlite3.Connection, match: str, limit: int, session_id: str | None, role: str | None
) -> list[RankedHit]:
    where, arguments = ["parts_fts MATCH ?"], [match]
    if session_id is not None:
        where.append("parts.session_id = ?")
        arguments.append(session_id)
    if role is not None:
        where.append("parts.role = ?")
        arguments.append(role)
    # The best rows first, by rowid only; snippets are made for those alone (a snippet for
    # every matching row would cost as much as reading them all).
    best = connection.execute(
        "SELECT parts.id, parts.session_id, parts.sequence, parts.role, parts.kind, parts.field, "
        "bm25(parts_fts) AS score FROM parts_fts JOIN parts ON parts.id = parts_fts.rowid "
        f"WHERE {' AND '.join(where)} ORDER BY score LIMIT ?",
        (*arguments, limit),
    ).fetchall()
    hits = []
    for rowid, sid, sequence, part_role, kind, field, score in best:
        (snippet, unmarkable) = connection.execute(
            f"SELECT snippet(parts_fts, 0, '{_OPEN}', '{_CLOSE}', '…', 24), "
            f"instr(parts.text, '{_OPEN}') + instr(parts.text, '{_CLOSE}') "
            "FROM parts_fts JOIN parts ON parts.id = parts_fts.rowid WHERE parts_fts MATCH ? AND parts_fts.rowid = ?",
            (match, rowid),
        ).fetchone()
        text, marks = _marked(snippet)
        if unmarkable:
            # The stored text holds the markers itself: its snippet is shown unmarked
            # rather than with a highlight in the wrong place.
            (text,) = connection.execute(
                "SELECT snippet(parts_fts, 0, '', '', '…', 24) FROM parts_fts WHERE parts_fts MATCH ? AND rowid = ?",
                (match, rowid),
            ).fetchone()
            marks = ()
        hits.append(RankedHit(sid, sequence, part_role, kind, field, text, marks, score))
    return hits


__all__ = ["BATCH_BYTES", "BUILD_AT", "RACY_NS", "Catalog", "RankedHit", "fts_query", "hit_fields"]
