"""The catalog's text index: a session's records read as parts and written to FTS5, from where it stopped.

Each session's row remembers where its indexed records end in the raw log, the last
indexed sequence, the raw log's stat fingerprint then, and an anchor: the bytes just
before that offset, which end with the last indexed line's CRC-32 suffix (spec §4), so
they stand for that line. When the log's fingerprint changed:

- it grew, same inode, and the anchor is still where it was: only the bytes after the
  offset are read (O(new bytes)), as an append leaves the earlier lines as they were;
- anything else (it shrank, kept its size but changed, is a new file, the anchor moved):
  the session's rows are dropped and its log indexed again from the start.

Records are read by `LogReader`, the one read path of the raw log: checksums checked, a
batch torn by a crash left out until it is complete (spec §8.7), large strings restored
from blob files (§5.1). Their strings are what `jsonl_store.search` reads (`_context.search_text`).
"""

from __future__ import annotations

import os
import re
import sqlite3
from dataclasses import dataclass

from .._context.search_text import role_of, searchable
from .._io.fs import FileSystem
from .._io.session_dir import SessionDir
from .._log.reader import LogReader

#: How many bytes before the indexed offset the anchor holds: more than a line's checksum
#: suffix (spec §4), so it covers the last line's CRC-32 and the record's last bytes.
ANCHOR_BYTES = 64
#: The kind and role of a title's row (``sequence`` 0), as `jsonl_store.search.Hit` names a title.
TITLE = "title"


@dataclass(frozen=True, slots=True)
class LogState:
    """How far a session's raw log is indexed (one row of the ``sessions`` table)."""

    stamp: str = ""
    offset: int = 0
    sequence: int = 0
    anchor: bytes = b""
    dialect: str = ""


def log_stamp(st: os.stat_result | None) -> str:
    """The fingerprint of a raw log: inode, size, mtime_ns, ctime_ns (``-`` for no file)."""
    if st is None:
        return "-"
    return f"{st.st_ino}.{st.st_size}.{st.st_mtime_ns}.{st.st_ctime_ns}"


#: Marks a fingerprint taken while the file could still change within the file system's
#: timestamp granularity (git's "racily clean" entries,
#: https://git-scm.com/docs/racy-git): it is checked again next time even when equal.
RACY = "~"


def _size_and_inode(stamp: str) -> tuple[int, int] | None:
    stamp = stamp.removeprefix(RACY)
    if stamp in ("", "-"):
        return None
    inode, size, _ = stamp.split(".", 2)
    return int(size), int(inode)


def _anchor(fs: FileSystem, fd: int, offset: int) -> bytes:
    length = min(ANCHOR_BYTES, offset)
    return fs.pread(fd, length, offset - length) if length else b""


def delete_parts(connection: sqlite3.Connection, session_id: str, *, title: bool | None = None) -> None:
    """Remove a session's rows from the index (only its title's with ``title=True``, only its
    records' with ``title=False``), feeding FTS5's 'delete' from the content table."""
    where = "session_id = ?" + {None: "", True: " AND sequence = 0", False: " AND sequence > 0"}[title]
    connection.execute(
        f"INSERT INTO parts_fts (parts_fts, rowid, text) SELECT 'delete', id, text FROM parts WHERE {where}",
        (session_id,),
    )
    connection.execute(f"DELETE FROM parts WHERE {where}", (session_id,))


Row = tuple[str, int, str, str, str, str]


def insert(connection: sqlite3.Connection, rows: list[Row]) -> None:
    """Add ``rows`` (session, sequence, role, kind, field, text) to the table and the index."""
    if not rows:
        return
    (last,) = connection.execute("SELECT coalesce(max(id), 0) FROM parts").fetchone()
    connection.executemany(
        "INSERT INTO parts (session_id, sequence, role, kind, field, text) VALUES (?, ?, ?, ?, ?, ?)", rows
    )
    # One statement for the whole batch: FTS5 tokenizes the rows in one go.
    connection.execute("INSERT INTO parts_fts (rowid, text) SELECT id, text FROM parts WHERE id > ?", (last,))


def index_title(connection: sqlite3.Connection, session_id: str, title: str | None) -> None:
    """Replace the row of a session's title (none for an untitled session)."""
    delete_parts(connection, session_id, title=True)
    if title:
        insert(connection, [(session_id, 0, "", TITLE, TITLE, title)])


def _start(state: LogState, stamp: str, dialect: str, reader: LogReader) -> LogState | None:
    """Where reading continues (``state`` itself), or None: index the whole log again."""
    if state.dialect != dialect or not state.stamp:
        return None
    before, now = _size_and_inode(state.stamp), _size_and_inode(stamp)
    if now is None:
        return None  # no log any more: its rows go
    if before is None:
        return state if state.offset == 0 else None  # a first log: read from its start
    (old_size, old_inode), (size, inode) = before, now
    if inode != old_inode or size < old_size or state.offset > size or reader.fd is None:
        return None  # a new file, or one cut short
    if size == old_size and state.stamp.removeprefix(RACY) != stamp.removeprefix(RACY):
        return None  # the same size, written again: not an append
    if _anchor(reader.fs, reader.fd, state.offset) != state.anchor:
        return None
    return state


def index_log(
    connection: sqlite3.Connection,
    where: SessionDir,
    dialect: str,
    state: LogState,
    stamp: str,
    rows: list[Row],
) -> tuple[LogState, int]:
    """Read what ``state`` has not seen of the session's raw log into ``rows`` (the caller
    `insert`s them before its transaction ends); the new state and the bytes read.

    ``stamp`` is the log's fingerprint taken before it was opened (`log_stamp`): the state
    keeps it, so a write after it is seen as a change next time. A log read again from
    the start has its earlier rows deleted first, inside the caller's transaction.
    """
    fs, session_id = where.fs, where.session_id
    with LogReader(fs, session_id, where.path) as reader:
        resumed = _start(state, stamp, dialect, reader)
        if resumed is None:
            if state.stamp:  # a session never indexed has no record rows to delete
                delete_parts(connection, session_id, title=False)
            resumed = LogState()
        offset, sequence = resumed.offset, resumed.sequence
        for line, record in reader.records(resumed.offset, resumed.sequence):
            message = record.message
            role = role_of(message)
            rows.extend(
                (session_id, record.sequence, role, kind, field, indexed)
                for kind, field, text in searchable(message, dialect)
                if (indexed := _without_escapes(text))
            )
            offset, sequence = line.end, record.sequence
        anchor = _anchor(fs, reader.fd, offset) if reader.fd is not None else b""
    return LogState(stamp, offset, sequence, anchor, dialect), offset - resumed.offset


#: A terminal's control sequence (ECMA-48 CSI: colours, cursor moves), as tool output holds
#: them: ``\x1b[1mopusplan`` would otherwise be indexed as the word "1mopusplan".
_CSI = re.compile("\x1b\\[[0-?]*[ -/]*[@-~]")


def _without_escapes(text: str) -> str:
    """``text`` as the index holds it: without terminal control sequences (the log keeps them)."""
    return _CSI.sub("", text) if "\x1b" in text else text


__all__ = ["TITLE", "LogState", "Row", "delete_parts", "index_log", "index_title", "insert", "log_stamp"]
