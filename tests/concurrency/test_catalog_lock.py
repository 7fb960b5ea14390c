"""Opening the catalog while another process holds its database locked: waited out, never taken for damage."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from jsonl_store import CatalogUnavailable, OsFileSystem, SessionStore, UserMessage
from jsonl_store._format.names import CATALOG_DIR, CATALOG_NAME
from jsonl_store._session import catalog as _catalog
from jsonl_store._session import catalog_schema as _catalog_schema
from jsonl_store.search import search_ranked

# A process holding a write transaction on the database it is given: ``new`` leaves a new
# file in SQLite's default rollback-journal mode (what a catalog is for a moment while its
# maker switches it to WAL), ``wal`` commits the switch to WAL first, with no table yet (a
# catalog whose maker is inside its first transaction). It says "held" once the lock is
# taken and lets go when its standard input closes.
_HOLDER = """
import sqlite3, sys
connection = sqlite3.connect(sys.argv[1], isolation_level=None)
if sys.argv[2] == "wal":
    connection.execute("PRAGMA journal_mode = WAL")
    connection.execute("CREATE TABLE scratch (x)")
    connection.execute("DROP TABLE scratch")
connection.execute("BEGIN IMMEDIATE")
connection.execute("CREATE TABLE pending (x)")
print("held", flush=True)
sys.stdin.read()
connection.execute("ROLLBACK")
connection.close()
"""


@contextmanager
def held(database: Path, mode: str) -> Iterator[subprocess.Popen[str]]:
    """Another process holding ``database``'s write lock until the block ends."""
    database.parent.mkdir(parents=True, exist_ok=True)
    with subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(database), mode],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as holder:
        assert holder.stdin is not None and holder.stdout is not None
        try:
            assert holder.stdout.readline().strip() == "held"
            yield holder
        finally:
            holder.stdin.close()
            holder.wait(timeout=60)


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A store of two sessions and no catalog yet."""
    monkeypatch.setattr(_catalog, "BUILD_AT", 0)  # a catalog even for these few sessions
    root = tmp_path / "store"
    with SessionStore(root) as store:
        store.append("alpha", UserMessage(content="fix the date parsing"))
        store.append("beta", UserMessage(content="lunch on friday"))
    return root


def test_ranked_search_waits_out_a_lock_held_while_the_catalog_is_made(root: Path) -> None:
    """A new catalog file write-locked by another process in rollback mode: SQLite refuses the
    switch to WAL at once, without its busy handler; the opening store waits for the lock
    and answers, rather than raising `CatalogUnavailable`."""
    database = root / CATALOG_DIR / CATALOG_NAME
    with SessionStore(root) as store, held(database, "new") as holder:
        assert holder.stdin is not None
        answer: list[object] = []

        def release_soon() -> None:
            # The lock goes only once the search has had time to meet it: a search that
            # does not wait fails at once, well within this.
            time.sleep(1.0)
            assert holder.stdin is not None
            holder.stdin.close()

        releaser = threading.Thread(target=release_soon)
        releaser.start()
        try:
            answer.extend((hit.session_id, hit.sequence) for hit in search_ranked(store, "parsing"))
        finally:
            releaser.join()
    assert answer == [("alpha", 1)]


def test_a_catalog_locked_past_the_busy_timeout_is_never_discarded(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A catalog another process keeps write-locked for longer than the wait: the listing reads
    the files, ranked search says the catalog is unavailable, and the database is left alone."""
    monkeypatch.setattr(_catalog_schema, "BUSY_TIMEOUT_MS", 300)
    database = root / CATALOG_DIR / CATALOG_NAME
    with held(database, "wal"):
        inode = database.stat().st_ino
        with SessionStore(root) as store, SessionStore(root, fs=OsFileSystem()) as scan:
            assert store.list_sessions() == scan.list_sessions()
            with pytest.raises(CatalogUnavailable, match="locked"):
                search_ranked(store, "parsing")
        assert database.stat().st_ino == inode  # the same file: not deleted and made again
    with SessionStore(root) as store:  # once the lock is gone, the same file becomes the catalog
        assert [(hit.session_id, hit.sequence) for hit in search_ranked(store, "lunch")] == [("beta", 1)]
    assert database.stat().st_ino == inode
