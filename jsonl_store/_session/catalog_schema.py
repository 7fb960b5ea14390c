"""The catalog's SQLite database: where it is, its tables, and what happens when it is unusable.

The catalog (spec §21) is derived from the session files and holds nothing else, so any
database that cannot be trusted (garbage bytes, a truncated file, a schema version this
code did not write, FTS5 gone from the SQLite it was built with) is deleted and built
again, never repaired. The directory holds its own ``.gitignore`` (``*``), so git leaves
it out without a line in the user's files.

SQLite's transactions make concurrent readers that update it at once safe
(https://www.sqlite.org/lockingv3.html): every update runs in ``BEGIN IMMEDIATE``, and a
busy connection waits (`BUSY_TIMEOUT_MS`) rather than failing.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sqlite3
import time
import uuid

from .. import _process
from .._format.names import (
    CATALOG_DIR,
    CATALOG_GITIGNORE_TEXT,
    CATALOG_NAME,
    CATALOG_SIDECARS,
    GITIGNORE_NAME,
    tmp_name,
)

#: Bumped whenever a table or what a column means changes: a database of another version is
#: built again (SQLite's ``user_version`` header field, https://www.sqlite.org/pragma.html#pragma_user_version).
#: The high bit of the low byte tells a database built without FTS5 from one built with it.
SCHEMA_VERSION = 4
_NO_TEXT_FLAG = 0x80
#: How long a connection waits for another process's write transaction (milliseconds).
BUSY_TIMEOUT_MS = 30_000

# ``sessions``: one row per session directory. ``stamp`` is the stat fingerprint of the
# directory and its metadata, raw log and fork files (packed, `_session.catalog_check.key`) when
# ``summary`` (the SessionSummary as msgspec JSON; NULL for an entry the listing leaves
# out) was read from them; empty when it must be read again (racy); ``dialect`` is the one
# the summary names. The ``log_*`` columns are how far the raw log's text is indexed
# (`_session.catalog_index.LogState`: its fingerprint then, offset, sequence, CRC-32, dialect). ``parts``: one row per
# string of a message part (`_context.search_text.searchable`), or a title (sequence 0).
_TABLES = """
CREATE TABLE sessions (
    session_id TEXT PRIMARY KEY,
    stamp BLOB NOT NULL,
    summary BLOB,
    dialect TEXT NOT NULL DEFAULT '',
    log_stamp BLOB NOT NULL DEFAULT x'',
    log_offset INTEGER NOT NULL DEFAULT 0,
    log_sequence INTEGER NOT NULL DEFAULT 0,
    log_crc INTEGER NOT NULL DEFAULT 0,
    log_dialect TEXT NOT NULL DEFAULT ''
) WITHOUT ROWID;
CREATE TABLE parts (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL,
    sequence INTEGER NOT NULL,
    role TEXT NOT NULL,
    kind TEXT NOT NULL,
    field TEXT NOT NULL,
    text TEXT NOT NULL
);
CREATE INDEX parts_by_session ON parts (session_id);
"""
# External content (https://www.sqlite.org/fts5.html#external_content_tables): the text is
# kept once, in `parts`, which snippets read it from; a session's rows are removed from the
# index with FTS5's 'delete' command fed from `parts`, found by the index on session_id.
_FTS = """
CREATE VIRTUAL TABLE parts_fts USING fts5(
    text, content='parts', content_rowid='id', tokenize='unicode61 remove_diacritics 2'
);
"""


@functools.lru_cache(maxsize=1)
def has_fts5() -> bool:
    """Whether the standard library's SQLite was built with FTS5 (https://www.sqlite.org/fts5.html)."""
    probe = sqlite3.connect(":memory:")
    try:
        probe.execute("CREATE VIRTUAL TABLE probe USING fts5(text)")
    except sqlite3.OperationalError:
        return False
    finally:
        probe.close()
    return True


# A fact about the SQLite library loaded, the same after a fork; probed again after a reset.
_process.register("catalog FTS5 probe", has_fts5.cache_clear)


def _version() -> int:
    return SCHEMA_VERSION if has_fts5() else SCHEMA_VERSION | _NO_TEXT_FLAG


def _prepare_directory(root: str) -> str:
    """The catalog directory, made (mode 0700) with its ``.gitignore`` if missing."""
    directory = os.path.join(root, CATALOG_DIR)
    with contextlib.suppress(FileExistsError):
        os.mkdir(directory, 0o700)
    ignore = os.path.join(directory, GITIGNORE_NAME)
    if not os.path.exists(ignore):
        # Written whole under a temporary name, one of its own for each writer (two stores of
        # one process may make the catalog at once): a reader never sees half of it.
        temporary = tmp_name(ignore, uuid.uuid4().hex)
        with open(temporary, "w", encoding="utf-8") as out:
            out.write(CATALOG_GITIGNORE_TEXT)
        os.replace(temporary, ignore)
    return directory


def discard(root: str) -> None:
    """Delete the catalog's database and SQLite's files beside it (what ``catalog drop`` does)."""
    path = os.path.join(root, CATALOG_DIR, CATALOG_NAME)
    for name in (path, *(path + suffix for suffix in CATALOG_SIDECARS)):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name)


def _connect(path: str) -> sqlite3.Connection:
    # isolation_level=None: transactions are begun and ended explicitly (BEGIN IMMEDIATE);
    # check_same_thread=False: a store is used from many threads, `Catalog` serialises them.
    connection = sqlite3.connect(
        path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
    )
    connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    # WAL: readers never wait for the process updating it (https://www.sqlite.org/wal.html).
    # synchronous=NORMAL: a power loss may lose the last update, never corrupt the file;
    # a lost update is found stale and redone, since the files are the truth.
    _switch_to_wal(connection)
    connection.execute("PRAGMA synchronous = NORMAL")
    return connection


def _switch_to_wal(connection: sqlite3.Connection) -> None:
    """``PRAGMA journal_mode = WAL``, waiting up to the busy timeout: while another connection
    opens or makes the database, SQLite answers "database is locked" at once instead of
    calling the busy handler, and two stores opening one catalog would fail."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            connection.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.005)


def _usable(connection: sqlite3.Connection) -> bool:
    """Whether the database is one this code built: its version, and its tables readable."""
    (version,) = connection.execute("PRAGMA user_version").fetchone()
    if version != _version():
        return False
    connection.execute("SELECT count(*) FROM sessions WHERE session_id = ''").fetchone()
    if has_fts5():
        connection.execute("SELECT count(*) FROM parts_fts WHERE rowid = 0").fetchone()
    return True


def _create(connection: sqlite3.Connection) -> None:
    connection.execute("BEGIN IMMEDIATE")
    try:
        (version,) = connection.execute("PRAGMA user_version").fetchone()
        if version == 0:  # nobody created it while this connection waited for the lock
            # One statement at a time: executescript() would commit the transaction first.
            script = _TABLES + (_FTS if has_fts5() else "")
            for statement in script.split(";"):
                if statement.strip():
                    connection.execute(statement)
            connection.execute(f"PRAGMA user_version = {_version()}")
        connection.execute("COMMIT")
    except BaseException:
        connection.execute("ROLLBACK")
        raise


def open_catalog(root: str) -> sqlite3.Connection:
    """A connection to the catalog of the store at ``root``, made or made again as needed.

    Raises `OSError` when the directory cannot be made or written (a read-only root) and
    `sqlite3.Error` when even a new database cannot be opened; the caller then answers
    without a catalog.
    """
    path = os.path.join(_prepare_directory(root), CATALOG_NAME)
    for attempt in range(2):
        connection = _connect(path)
        try:
            (version,) = connection.execute("PRAGMA user_version").fetchone()
            if version == 0:
                _create(connection)
            if _usable(connection):
                return connection
        except sqlite3.DatabaseError as exc:
            # "file is not a database", "database disk image is malformed", a table missing:
            # what a torn copy, stray bytes or another program's file look like. A lock held
            # by another connection is none of these: the database is not discarded for it.
            if attempt or (isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc)):
                connection.close()
                raise
        connection.close()
        discard(root)
    raise sqlite3.DatabaseError(f"the catalog at {path!r} could not be made again")


__all__ = ["BUSY_TIMEOUT_MS", "SCHEMA_VERSION", "discard", "has_fts5", "open_catalog"]
