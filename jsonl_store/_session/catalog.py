"""The catalog (spec §21): session summaries and a ranked text index, derived from the files.

The files stay the only truth: every answer is preceded by a freshness check against
them, and whatever the check finds changed is read again before the answer is given.

**Who updates it.** Readers, lazily: `SessionStore.list_sessions` and ranked search bring
the catalog up to date before they answer, and writers never touch it. A durable append
costs what an append plus fsync costs and nothing more; keeping a database in step on
every write would add a transaction to each one, and would still miss what other tools
do to the files (a ``git checkout``, an edit by hand), which a reader has to check for
anyway.

**The freshness check** (`catalog_check`): a stat fingerprint of each session's files,
compared with the one saved with its summary. A session the check finds changed has its
summary read from its files, as a listing without the catalog does.

**What this process remembers.** The ``sessions`` table's rows, as last read or written
by this connection, are kept in memory and read again only when another connection has
committed since (SQLite's ``PRAGMA data_version``,
https://www.sqlite.org/pragma.html#pragma_data_version). A row pairs a fingerprint with
what was read under it, so even a stale row can only make the check read a session again,
never answer with what the files no longer say.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import sqlite3
import stat
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from .._context.view import BY_ACTIVITY, SessionSummary
from .._errors import CatalogUnavailable, InvalidArgument, UnsafePath, UnsupportedFormat
from .._format.names import catalog_path, is_session_id
from . import catalog_check as _catalog_check
from . import catalog_index as _catalog_index
from . import catalog_schema as _catalog_schema
from .catalog_check import Checked, Entry, size_of
from .catalog_index import LogState, is_racy

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
        #: The ``sessions`` table as this connection last read or wrote it (None: read it), and
        #: the connection's ``data_version`` when it was read (`_load`).
        self.known: dict[str, Entry] | None = None
        self.version = 0
        #: The session ids of the last listing, in its order: the order the next check goes in.
        self.order: list[str] = []

    def forked(self) -> None:
        """In a forked child: a fresh lock (a thread of the parent may have held it, and is
        gone), and no connection: the parent's stays the parent's (`_open`)."""
        self._lock = threading.Lock()
        self._connection = None
        self.known = None

    def close(self) -> None:
        """Close the connection (it is opened again when needed)."""
        with self._lock:
            if self._connection is not None and self._pid == os.getpid():
                self._connection.close()
            self._connection = None
            self.known = None

    def _open(self) -> sqlite3.Connection:
        # A connection is never used across fork(2) (https://www.sqlite.org/howtocorrupt.html,
        # §2.6): a child opens its own and leaves the parent's alone.
        if self._connection is None or self._pid != os.getpid():
            self._connection = _catalog_schema.open_catalog(self.root)
            self._pid = os.getpid()
            self.known = None  # another connection's data_version counts from elsewhere
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
        self.known = None

    def listing(
        self, entries: Iterable[str], summarise: Summarise
    ) -> tuple[list[SessionSummary], list[str]] | None:
        """The summaries of the sessions among the root's ``entries`` (its names, any), from
        the catalog once checked fresh, newest activity first (`BY_ACTIVITY`); and the
        names the caller reads itself (an entry named as a session that is no directory, or
        whose files are unsafe: the caller reports them). None: no catalog here (a
        read-only root, a database that cannot be made), so the caller lists from the files."""
        names = list(entries)
        if not os.path.exists(catalog_path(self.root)) and sum(map(is_session_id, names)) < BUILD_AT:
            return None  # a few sessions list as fast from their files: no catalog is made for them
        with self._lock:
            try:
                found, summaries = self._retrying(
                    lambda connection: _refresh(self, connection, names, summarise, logs=False)
                )
            except (OSError, sqlite3.Error):
                return None
        if found.good:  # decoded outside the lock: the rows are bytes nobody changes
            summaries.extend(_DECODE(b"[" + b",".join(found.good) + b"]"))
        # The check went through the sessions in the last listing's order, so the rows come
        # nearly sorted, and a sort of nearly sorted items costs one comparison each.
        summaries.sort(key=BY_ACTIVITY, reverse=True)
        # Only the speed of the next check depends on this order, never what it answers: a
        # listing of another thread replacing it meanwhile is as good.
        self.order = [summary.session_id for summary in summaries]
        found.odd.sort()
        return summaries, found.odd

    def index_text(
        self, names: Iterable[str], summarise: Summarise, progress: Callable[[int, int], None] | None = None
    ) -> None:
        """Bring the summaries and the text index up to date.

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
                self._retrying(lambda connection: _index_all(self, connection, names, summarise, progress))
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


def _load(catalog: Catalog, connection: sqlite3.Connection) -> dict[str, Entry]:
    """The ``sessions`` table as a dict: the one in memory while no other connection committed."""
    (version,) = connection.execute("PRAGMA data_version").fetchone()
    if catalog.known is None or version != catalog.version:
        # A row of a name no session can have (a database not this code's) is left out: a
        # name the check takes from here is a session's (`_in_order`).
        catalog.known = {
            row[0]: Entry(row[1], row[2], row[3], LogState(*row[4:]))
            for row in connection.execute(
                "SELECT session_id, stamp, summary, dialect, log_stamp, log_offset, log_sequence, log_crc, "
                "log_dialect FROM sessions"
            )
            if is_session_id(row[0])
        }
        catalog.version = version
    return catalog.known


def _in_order(entries: list[str], known: dict[str, Entry], order: list[str]) -> list[str]:
    """The root's ``entries`` named as sessions (a name the catalog holds was checked when it
    was saved), those of ``order`` first and in its order, then the others as listed."""
    names = {name: None for name in entries if name in known or is_session_id(name)}
    if not order:
        return list(names)
    ordered = [name for name in order if name in names]
    if len(ordered) < len(names):
        ordered.extend(names.keys() - ordered)
    return ordered


def _checked(root: str, names: list[str], known: dict[str, Entry], logs: bool) -> Checked:
    listed: list[str] | None = names
    for _ in range(3):
        found = _catalog_check.check(root, listed, known, time.time_ns() - RACY_NS, logs)
        if found is not None:
            return found
        listed = None  # the caller listed a root that is gone from its path: list the new one
    raise OSError(f"the store root {root!r} was replaced again and again while it was checked")


def _refresh(
    catalog: Catalog, connection: sqlite3.Connection, names: list[str], summarise: Summarise, logs: bool
) -> tuple[Checked, list[SessionSummary]]:
    """The freshness check, and the summaries of the sessions it found changed, read from their
    files and saved; the caller decodes ``good`` itself if it needs them."""
    root = catalog.root
    known = _load(catalog, connection)
    found = _checked(root, _in_order(names, known, catalog.order), known, logs)
    fresh: list[tuple[str, bytes, bytes | None, str, str | None]] = []
    summaries: list[SessionSummary] = []
    for seen in found.changed:
        directory = root + os.sep + seen.name
        try:
            # Checked again right before the read, as a listing without the catalog does: a
            # directory swapped for a symlink since the check is never read through.
            if not stat.S_ISDIR(os.lstat(directory).st_mode):
                found.odd.append(seen.name)
                continue
            summary = summarise(seen.name, directory)
        except FileNotFoundError:
            continue  # deleted since the check
        except UnsafePath:
            found.odd.append(seen.name)  # reported by the caller's own read, every time it lists
            continue
        except (NotADirectoryError, UnsupportedFormat):
            summary = None  # not listed, as without the catalog, until its files change
        if summary is not None:
            summaries.append(summary)
            fresh.append((seen.name, seen.stamp, _ENCODE(summary), summary.dialect, summary.title))
        else:
            fresh.append((seen.name, seen.stamp, None, "", None))
    present = set(found.names)
    gone = [sid for sid in known if sid not in present]
    if fresh or gone:
        _write_summaries(catalog, connection, fresh, gone)
    return found, summaries


def _write_summaries(
    catalog: Catalog,
    connection: sqlite3.Connection,
    fresh: list[tuple[str, bytes, bytes | None, str, str | None]],
    gone: list[str],
) -> None:
    text = _catalog_schema.has_fts5()
    connection.execute("BEGIN IMMEDIATE")
    try:
        connection.executemany(
            "INSERT INTO sessions (session_id, stamp, summary, dialect) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (session_id) DO UPDATE SET stamp = excluded.stamp, summary = excluded.summary, "
            "dialect = excluded.dialect",
            [row[:4] for row in fresh],
        )
        if text:
            for sid, _, _, _, title in fresh:
                _catalog_index.index_title(connection, sid, title)
        for sid in gone:
            connection.execute("DELETE FROM sessions WHERE session_id = ?", (sid,))
            if text:
                _catalog_index.delete_parts(connection, sid)
        connection.execute("COMMIT")
    except BaseException:
        catalog.known = None  # what was written is unknown: read the table again next time
        connection.execute("ROLLBACK")
        raise
    known = catalog.known
    if known is not None:  # what this connection wrote, as the table now holds it
        for sid, stamp, summary, dialect, _ in fresh:
            entry = known.get(sid)
            known[sid] = Entry(stamp, summary, dialect, entry.log if entry is not None else LogState())
        for sid in gone:
            known.pop(sid, None)


def _index_all(
    catalog: Catalog,
    connection: sqlite3.Connection,
    names: list[str],
    summarise: Summarise,
    progress: Callable[[int, int], None] | None,
) -> None:
    found, summaries = _refresh(catalog, connection, names, summarise, logs=True)
    # A changed session whose summary was not read now (gone, unsafe, not a session) is not
    # listed, and nothing of it is read: its row may still hold an older summary.
    unread = {seen.name for seen in found.changed}.difference(summary.session_id for summary in summaries)
    known = _load(catalog, connection)
    work: list[tuple[str, str, bytes]] = []
    for sid, log in found.logs.items():
        entry = known.get(sid)
        if entry is None or entry.summary is None or sid in unread:
            continue  # not listed: no text either
        state = entry.log
        if state.stamp != log or is_racy(log) or state.dialect != entry.dialect:
            work.append((sid, entry.dialect, log))
    total = sum(max(0, size_of(log) - known[sid].log.offset) for sid, _, log in work)
    done = 0
    if progress is not None:
        progress(0, total)
    if not work:
        return  # nothing to index: no write transaction at all
    batch, rows, states = 0, list[_catalog_index.Row](), list[tuple[str, LogState]]()
    connection.execute("BEGIN IMMEDIATE")
    try:
        for sid, dialect, log in work:
            done_now = _index_one(connection, catalog.root, sid, dialect, log, rows, states)
            done, batch = done + done_now, batch + done_now
            if progress is not None:
                progress(done, total)
            if batch >= BATCH_BYTES:
                _commit(catalog, connection, rows, states)
                connection.execute("BEGIN IMMEDIATE")
                batch, rows, states = 0, [], []
        _commit(catalog, connection, rows, states)
    except BaseException:
        catalog.known = None
        connection.execute("ROLLBACK")
        raise


def _commit(
    catalog: Catalog,
    connection: sqlite3.Connection,
    rows: list[_catalog_index.Row],
    states: list[tuple[str, LogState]],
) -> None:
    """Insert ``rows``, commit, and remember the log states the transaction saved."""
    _catalog_index.insert(connection, rows)
    connection.execute("COMMIT")
    known = catalog.known
    if known is not None:
        for sid, state in states:
            entry = known.get(sid)
            if entry is not None:
                entry.log = state


def _index_one(
    connection: sqlite3.Connection,
    root: str,
    sid: str,
    dialect: str,
    log: bytes,
    rows: list[_catalog_index.Row],
    states: list[tuple[str, LogState]],
) -> int:
    """Read one session's new records into ``rows`` inside the caller's transaction; the bytes read."""
    # Read again under the write lock: another process may have indexed it meanwhile.
    row = connection.execute(
        "SELECT log_stamp, log_offset, log_sequence, log_crc, log_dialect FROM sessions WHERE session_id = ?",
        (sid,),
    ).fetchone()
    if row is None:
        return 0  # deleted since the listing: its rows went with it
    state = LogState(*row)
    if state.stamp == log and not is_racy(log) and state.dialect == dialect:
        states.append((sid, state))
        return 0
    new, read = _catalog_index.index_log(connection, sid, os.path.join(root, sid), dialect, state, log, rows)
    connection.execute(
        "UPDATE sessions SET log_stamp = ?, log_offset = ?, log_sequence = ?, log_crc = ?, log_dialect = ? "
        "WHERE session_id = ?",
        (new.stamp, new.offset, new.sequence, new.crc, new.dialect, sid),
    )
    states.append((sid, new))
    return read


def _ranked(
    connection: sqlite3.Connection, match: str, limit: int, session_id: str | None, role: str | None
) -> list[RankedHit]:
    columns = "parts.id, parts.session_id, parts.sequence, parts.role, parts.kind, parts.field"
    if session_id is None and role is None:
        # The best rows found inside FTS5 first, then only they looked up in `parts`: a join
        # first would look up every matching row (all of them, for a common word) before
        # sorting. Snippets are made for those rows alone too (a snippet for every matching
        # row would cost as much as reading them all).
        best = connection.execute(
            f"SELECT {columns}, best.score FROM (SELECT rowid, bm25(parts_fts) AS score FROM parts_fts "
            "WHERE parts_fts MATCH ? ORDER BY score, rowid LIMIT ?) AS best "
            "JOIN parts ON parts.id = best.rowid ORDER BY best.score, best.rowid",
            (match, limit),
        ).fetchall()
    else:
        where, arguments = ["parts_fts MATCH ?"], [match]
        if session_id is not None:
            where.append("parts.session_id = ?")
            arguments.append(session_id)
        if role is not None:
            where.append("parts.role = ?")
            arguments.append(role)
        best = connection.execute(
            f"SELECT {columns}, bm25(parts_fts) AS score FROM parts_fts JOIN parts ON parts.id = parts_fts.rowid "
            f"WHERE {' AND '.join(where)} ORDER BY score, parts.id LIMIT ?",
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
