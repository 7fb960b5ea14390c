"""The catalog's text index: a session's records read as parts and written to FTS5, from where it stopped.

Each session's row remembers where its indexed records end in the raw log (the offset),
the last indexed sequence, the raw log's stat fingerprint then, and the CRC-32 of every
byte of the log before that offset. When the log's fingerprint changed, the bytes before
the offset are read again and checksummed (a pass at memory speed, no decoding):

- the checksum holds (an append, or a file written again with the same start: a
  checkout, a copy put back): only the bytes after the offset are decoded, O(new bytes);
- it fails (a line edited anywhere before the offset, the log cut short or replaced) or
  the log is shorter than the offset: the session's rows are dropped and its log indexed
  again from the start.

A stat fingerprint cannot tell an append from an edit in place made together with one
(the size grows either way, and the bytes next to the offset may be untouched): only the
bytes can, so the whole indexed prefix is checked, never a sample of it.

The bytes decoded are the bytes checksummed: the new part of the log is read once into
memory (`_PinnedLog`) and the reader decodes from that copy, so a write racing the read
can never leave rows that disagree with the checksum kept for them.

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
from .._format.checksum import crc32
from .._format.names import LOG_NAME
from .._io.fs import OsFileSystem
from .._io.session_dir import SessionDir
from .._log.reader import LogReader

#: The indexed prefix is checksummed in reads of this size (one buffer, reused by the kernel's page cache).
CHECK_CHUNK = 4 << 20
#: The kind and role of a title's row (``sequence`` 0), as `jsonl_store.search.Hit` names a title.
TITLE = "title"


@dataclass(frozen=True, slots=True)
class LogState:
    """How far a session's raw log is indexed (one row of the ``sessions`` table)."""

    #: The raw log's fingerprint when it was read (`catalog_check.log_key`); empty: never read.
    stamp: bytes = b""
    offset: int = 0
    sequence: int = 0
    #: CRC-32 (zlib's) of the raw log's bytes before ``offset``.
    crc: int = 0
    dialect: str = ""


#: Marks a fingerprint taken while the file could still change within the file system's
#: timestamp granularity (git's "racily clean" entries,
#: https://git-scm.com/docs/racy-git): it is checked again next time even when equal.
RACY = b"~"
#: The length of one file's fingerprint (`catalog_check.key`: four 64-bit ints).
KEY_SIZE = 32


def is_racy(stamp: bytes) -> bool:
    """Whether a raw log's fingerprint is marked `RACY`: told by its length, never by its first
    byte, which is the lowest byte of the log's inode number and is ``~`` for one log in 256."""
    return len(stamp) == len(RACY) + KEY_SIZE


def _prefix_crc(fd: int, length: int) -> int | None:
    """The CRC-32 of the first ``length`` bytes of the file at ``fd``; None when it is shorter."""
    crc, offset = 0, 0
    while offset < length:
        chunk = os.pread(fd, min(CHECK_CHUNK, length - offset), offset)
        if not chunk:
            return None
        crc = crc32(chunk, crc)
        offset += len(chunk)
    return crc


class _PinnedLog(OsFileSystem):
    """The real file system, except that the raw log's bytes from ``start`` on are read
    once (`pin`) and every later read of them is served from that copy.

    The reader looks at a range more than once (where complete records end, then the
    records): from one copy it sees one version of the file, the one `index_log`
    checksums, even while another process rewrites it. The copy costs memory the size of
    the bytes indexed, as the rows made from them do.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.fd = -1
        self.start = 0
        self.data = b""
        self.pinned = False

    def open(self, path: str, flags: int, mode: int = 0o777) -> int:
        fd = super().open(path, flags, mode)
        if path == self.path:
            self.fd = fd
        return fd

    def pin(self, start: int, size: int) -> None:
        """Read the log's bytes from ``start`` to ``size`` (or to its end, if shorter now)."""
        chunks, offset = [], start
        while self.fd >= 0 and offset < size:
            # One read returns at most about 2 GiB on Linux (read(2), NOTES): read on.
            chunk = os.pread(self.fd, size - offset, offset)
            if not chunk:
                break
            chunks.append(chunk)
            offset += len(chunk)
        self.start, self.data, self.pinned = start, b"".join(chunks), True

    def pread(self, fd: int, length: int, offset: int) -> bytes:
        if fd != self.fd or not self.pinned or offset + length <= self.start:
            return os.pread(fd, length, offset)
        if offset < self.start:  # the reader starts at `start`; a read across it is served whole all the same
            before = os.pread(fd, self.start - offset, offset)
            if len(before) < self.start - offset:
                return before  # the file ends before `start` now
            return before + self.pread(fd, length - len(before), self.start)
        at = offset - self.start
        return self.data[at : at + length]

    def crc(self, end: int, crc: int) -> int:
        """The CRC-32 ``crc`` of the bytes before ``start`` continued to ``end``, over the copy."""
        assert self.start <= end <= self.start + len(self.data), (self.start, end, len(self.data))
        return crc32(memoryview(self.data)[: end - self.start], crc)


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


def _resume(state: LogState, dialect: str, reader: LogReader) -> LogState | None:
    """Where reading continues (``state`` itself), or None: index the whole log again."""
    if state.dialect != dialect or not state.stamp or reader.fd is None or state.offset > reader.size:
        return None  # never indexed, read as another dialect, no log any more, or cut short
    if _prefix_crc(reader.fd, state.offset) != state.crc:
        return None  # a byte before the offset changed: not (only) an append
    return state


def index_log(
    connection: sqlite3.Connection,
    session_id: str,
    directory: str,
    dialect: str,
    state: LogState,
    stamp: bytes,
    rows: list[Row],
) -> tuple[LogState, int]:
    """Read what ``state`` has not seen of the session's raw log into ``rows`` (the caller
    `insert`s them before its transaction ends); the new state and the bytes read.

    ``stamp`` is the log's fingerprint taken before it was opened (`catalog_check.log_key`): the state
    keeps it, so a write after it is seen as a change next time. A log read again from
    the start has its earlier rows deleted first, inside the caller's transaction.
    """
    log = _PinnedLog(os.path.join(directory, LOG_NAME))
    # The session is read through the pinned file system, which serves the log's bytes.
    with LogReader(SessionDir(log, session_id, directory)) as reader:
        resumed = _resume(state, dialect, reader)
        if resumed is None:
            if state.stamp:  # a session never indexed has no record rows to delete
                delete_parts(connection, session_id, title=False)
            resumed = LogState()
        log.pin(resumed.offset, reader.size)
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
        crc = log.crc(offset, resumed.crc)
    return LogState(stamp, offset, sequence, crc, dialect), offset - resumed.offset


#: A terminal's control sequence (ECMA-48 CSI: colours, cursor moves), as tool output holds
#: them: ``\x1b[1mopusplan`` would otherwise be indexed as the word "1mopusplan".
_CSI = re.compile("\x1b\\[[0-?]*[ -/]*[@-~]")


def _without_escapes(text: str) -> str:
    """``text`` as the index holds it: without terminal control sequences (the log keeps them)."""
    return _CSI.sub("", text) if "\x1b" in text else text


__all__ = [
    "KEY_SIZE",
    "RACY",
    "TITLE",
    "LogState",
    "Row",
    "delete_parts",
    "index_log",
    "index_title",
    "insert",
    "is_racy",
]
