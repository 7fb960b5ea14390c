"""The catalog (spec §21): listings and ranked search answered from ``.catalog/``, always as the files say."""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from jsonl_store import (
    CatalogUnavailable,
    InvalidArgument,
    OsFileSystem,
    SessionStore,
    SessionSummary,
    UserMessage,
)
from jsonl_store._format import codec as _codec
from jsonl_store._format.names import CATALOG_DIR, CATALOG_NAME, FileKind, classify_root
from jsonl_store._session import catalog as _catalog
from jsonl_store._session import catalog_check as _catalog_check
from jsonl_store._session import catalog_index as _catalog_index
from jsonl_store._session import catalog_schema as _catalog_schema
from jsonl_store._session.catalog_schema import SCHEMA_VERSION
from jsonl_store.cli._main import main
from jsonl_store.search import search_ranked
from jsonl_store.testing import SimulatedFileSystem


@pytest.fixture(autouse=True)
def _no_racy_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fingerprints count as settled at once, so these tests prove the stat check itself, not the
    racy re-read every file written in the last seconds gets anyway."""
    monkeypatch.setattr(_catalog, "RACY_NS", 0)
    monkeypatch.setattr(_catalog, "BUILD_AT", 0)  # a catalog even for these few sessions


def scanned(root: Path) -> list[SessionSummary]:
    """What a listing without the catalog gives: every session's files read (a store on an explicit file system)."""
    with SessionStore(root, fs=OsFileSystem()) as store:
        return store.list_sessions()


def listed(root: Path) -> list[SessionSummary]:
    with SessionStore(root) as store:
        return store.list_sessions()


def db(root: Path) -> Path:
    return root / CATALOG_DIR / CATALOG_NAME


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A store of three sessions, one titled, one a fork, listed once so the catalog exists."""
    root = tmp_path / "store"
    with SessionStore(root) as store:
        store.append("alpha", UserMessage(content="fix the date parsing in the importer"), title="Dates")
        store.append("alpha", UserMessage(content="the parser now reads week 53"))
        store.append("beta", UserMessage(content="unrelated chat about lunch"))
        store.fork("alpha", 1, new_session_id="alpha-fork")
        store.list_sessions()
    return root


def test_the_catalog_answers_what_the_files_say(root: Path) -> None:
    """A listing from the catalog equals one read from every session's files, forks and titles included."""
    assert db(root).exists()
    assert listed(root) == scanned(root)
    assert [s.session_id for s in listed(root)] == [s.session_id for s in scanned(root)]


def test_the_catalog_directory_ignores_itself_and_is_no_session(root: Path) -> None:
    """``.catalog`` holds a ``.gitignore`` of ``*``, classifies as the catalog, and no listing or id list names it."""
    assert (root / CATALOG_DIR / ".gitignore").read_text().splitlines()[-1] == "*"
    assert classify_root(CATALOG_DIR) is FileKind.CATALOG
    with SessionStore(root) as store:
        assert CATALOG_DIR not in store.session_ids()
        assert store.verify() == []


def test_deleting_the_catalog_loses_nothing(root: Path) -> None:
    """With ``.catalog`` removed, the next listing builds it again and gives the same answer."""
    before = listed(root)
    for name in os.listdir(root / CATALOG_DIR):
        os.unlink(root / CATALOG_DIR / name)
    os.rmdir(root / CATALOG_DIR)
    assert listed(root) == before
    assert db(root).exists()


@pytest.mark.parametrize("damage", ["garbage", "truncated", "wrong-version", "table-gone"])
def test_a_corrupt_catalog_is_discarded_and_built_again(root: Path, damage: str) -> None:
    """Garbage bytes, a cut file, another schema version or a missing table: the answer is still the files'."""
    path = db(root)
    if damage == "garbage":
        for suffix in ("-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        path.write_bytes(b"not a database at all\n" * 200)
    elif damage == "truncated":
        connection = sqlite3.connect(path)
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        connection.close()
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 3])
    elif damage == "wrong-version":
        connection = sqlite3.connect(path)
        connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 100}")
        connection.close()
    else:
        connection = sqlite3.connect(path)
        connection.execute("DROP TABLE sessions")
        connection.close()
    assert listed(root) == scanned(root)
    hits = search_ranked(root, "parsing")
    assert {(hit.session_id, hit.sequence) for hit in hits} == {("alpha", 1)}


def test_an_append_by_another_store_is_seen(root: Path) -> None:
    """A session appended to by another store after the catalog was built is listed with its new count and time."""
    with SessionStore(root) as reader, SessionStore(root) as writer:
        reader.list_sessions()
        writer.append("beta", UserMessage(content="one more"))
        (beta,) = [s for s in reader.list_sessions() if s.session_id == "beta"]
    assert beta.message_count == 2
    assert listed(root) == scanned(root)


def test_a_hand_edit_with_the_clock_set_back_is_seen(root: Path) -> None:
    """meta.json rewritten in place, same size, its mtime set back to the old one: the listing shows the edit."""
    meta = root / "alpha" / "meta.json"
    before = meta.stat()
    text = meta.read_text()
    assert '"Dates"' in text
    with open(meta, "r+", encoding="utf-8") as out:
        out.write(text.replace('"Dates"', '"Datum"'))
    os.utime(meta, ns=(before.st_atime_ns, before.st_mtime_ns))
    (alpha,) = [s for s in listed(root) if s.session_id == "alpha"]
    assert alpha.title == "Datum"
    assert listed(root) == scanned(root)


def test_a_removed_session_is_never_listed_and_a_new_one_always_is(root: Path) -> None:
    """No phantom and no missing session: a directory removed or copied in by hand is seen at once."""
    listed(root)
    for name in os.listdir(root / "beta"):
        os.unlink(root / "beta" / name)
    os.rmdir(root / "beta")
    os.mkdir(root / "gamma")
    (root / "gamma" / "messages.jsonl").write_bytes((root / "alpha" / "messages.jsonl").read_bytes())
    ids = [s.session_id for s in listed(root)]
    assert "beta" not in ids
    assert "gamma" in ids
    assert listed(root) == scanned(root)
    assert {hit.session_id for hit in search_ranked(root, "lunch")} == set()


def test_ranked_search_gives_the_best_match_first_with_marked_words(root: Path) -> None:
    """The part holding both words ranks above one holding one; the snippet marks each matched word."""
    with SessionStore(root) as store:
        store.append("beta", UserMessage(content="parsing parsing parsing of a date, the date parsing again"))
        store.append("beta", UserMessage(content="parsing only"))
    hits = search_ranked(root, "date parsing", limit=5)
    assert hits[0].session_id == "beta"
    assert all("parsing" in (hit.snippet.lower()) for hit in hits)
    first = hits[0]
    assert {first.snippet[a:b].lower() for a, b in first.marks} == {"date", "parsing"}
    assert [hit.score for hit in hits] == sorted(hit.score for hit in hits)
    assert ("beta", 3) not in {(hit.session_id, hit.sequence) for hit in hits}  # "date" is missing there


def test_ranked_search_filters_by_role_and_session_and_finds_titles(root: Path) -> None:
    """``role`` and ``session_id`` narrow the hits; a title is a hit of sequence 0."""
    (title,) = search_ranked(root, "dates")
    assert (title.session_id, title.sequence, title.kind) == ("alpha", 0, "title")
    assert search_ranked(root, "parsing", role="assistant") == []
    assert {hit.session_id for hit in search_ranked(root, "parsing", session_id="alpha")} == {"alpha"}


def test_ranked_search_reads_only_the_new_bytes_after_an_append(root: Path) -> None:
    """Once indexed, an append costs the index its own bytes only (O(new bytes)), not the log again."""
    search_ranked(root, "parsing")
    log = root / "alpha" / "messages.jsonl"
    size = log.stat().st_size
    with SessionStore(root) as store:
        store.append("alpha", UserMessage(content="zebra crossing"))
    totals: list[int] = []
    hits = search_ranked(root, "zebra", on_progress=lambda done, total: totals.append(total))
    assert [(hit.session_id, hit.sequence) for hit in hits] == [("alpha", 3)]
    assert totals[-1] == log.stat().st_size - size


def test_a_word_touching_a_terminal_colour_code_is_found_and_the_log_keeps_the_code(root: Path) -> None:
    """Tool output's ANSI sequences (ESC [ 1 m) are left out of the index only: "opusplan" is found, the record is unchanged."""
    text = "Kept model as \x1b[1mopusplan\x1b[22m for now"
    with SessionStore(root) as store:
        sequence = store.append("alpha", {"role": "tool", "tool_call_id": "c9", "content": text})
        assert store.tail("alpha", 1)[0].message["content"] == text  # type: ignore[index]
    hits = search_ranked(root, "opusplan")
    assert [(hit.session_id, hit.sequence) for hit in hits] == [("alpha", sequence)]
    assert "\x1b" not in hits[0].snippet and "opusplan" in hits[0].snippet


def test_threads_making_one_catalog_at_once_all_succeed(tmp_path: Path) -> None:
    """Eight threads of one process preparing the same new catalog directory at once: none fails, one .gitignore."""
    for attempt in range(30):
        root = tmp_path / f"r{attempt}"
        root.mkdir()
        gate = threading.Barrier(8)
        failures: list[BaseException] = []

        def prepare(
            where: Path = root, start: threading.Barrier = gate, out: list[BaseException] = failures
        ) -> None:
            start.wait()
            try:
                _catalog_schema._prepare_directory(str(where))
            except BaseException as exc:  # noqa: BLE001 (collected for the assertion)
                out.append(exc)

        threads = [threading.Thread(target=prepare) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert failures == []
        assert sorted(os.listdir(root / CATALOG_DIR)) == [".gitignore"]


def test_a_log_rewritten_shorter_is_indexed_again(root: Path) -> None:
    """A raw log replaced by a shorter one (a checkout, a restore): hits of the lost records go."""
    log = root / "alpha" / "messages.jsonl"
    assert search_ranked(root, "week")
    first = log.read_bytes().splitlines(keepends=True)[0]
    log.write_bytes(first)
    assert search_ranked(root, "week") == []
    assert [hit.sequence for hit in search_ranked(root, "importer")] == [1]


def rewrite_line(log: Path, index: int, old: bytes, new: bytes) -> None:
    """Replace ``old`` by ``new`` (as long) in line ``index`` of ``log``, in place, its checksum made to hold again."""
    assert len(old) == len(new)
    lines = log.read_bytes().splitlines(keepends=True)
    body = _codec.unseal(lines[index].rstrip(b"\n"))
    assert body is not None and old in body
    lines[index] = _codec.seal(body.replace(old, new))
    with open(log, "r+b") as out:  # in place: same inode, same size
        out.write(b"".join(lines))


def test_a_line_edited_in_the_middle_then_appended_to_leaves_no_phantom(root: Path) -> None:
    """A log edited in place before its indexed end, then grown by an append: the old words are
    never found again, the new ones are, and the append is found too."""
    log = root / "alpha" / "messages.jsonl"
    assert [hit.sequence for hit in search_ranked(root, "importer")] == [1]
    size = log.stat().st_size
    rewrite_line(log, 0, b"importer", b"exporter")  # the first of two lines: the indexed end's bytes stay
    assert log.stat().st_size == size
    with SessionStore(root) as store:
        store.append("alpha", UserMessage(content="zebra crossing"))
    assert search_ranked(root, "importer") == []
    assert [(hit.session_id, hit.sequence) for hit in search_ranked(root, "exporter")] == [("alpha", 1)]
    assert [(hit.session_id, hit.sequence) for hit in search_ranked(root, "zebra")] == [("alpha", 3)]


def test_a_log_rewritten_with_the_same_bytes_is_not_read_again(root: Path) -> None:
    """A log written again whole with what it held (a checkout, a copy back): nothing is indexed again."""
    log = root / "alpha" / "messages.jsonl"
    search_ranked(root, "parsing")
    data = log.read_bytes()
    log.unlink()
    log.write_bytes(data)  # a new inode, the same bytes
    totals: list[int] = []
    hits = search_ranked(root, "parsing", on_progress=lambda done, total: totals.append(done))
    assert [(hit.session_id, hit.sequence) for hit in hits] == [("alpha", 1)]
    assert totals[-1] == 0


def test_a_log_whose_inode_ends_in_the_racy_mark_is_not_read_again(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A settled log whose fingerprint's first byte (its inode's lowest) is ``~`` is indexed once,
    not taken for a racy one and read again by every ranked search."""
    log = root / "alpha" / "messages.jsonl"
    data = log.read_bytes()
    copies = []
    for number in range(20_000):  # inode numbers are handed out near each other: one in 256 or so
        copy = root / "alpha" / f"copy-{number}"
        copy.write_bytes(data)
        copies.append(copy)
        if copy.stat().st_ino & 0xFF == ord(_catalog_index.RACY):
            break
    else:
        pytest.skip("no inode number ending in the racy mark was handed out")
    os.replace(copies.pop(), log)
    for copy in copies:
        copy.unlink()
    search_ranked(root, "parsing")
    reads: list[str] = []
    index_log = _catalog_index.index_log

    def counted(*args: Any) -> tuple[_catalog_index.LogState, int]:
        reads.append(args[1])
        return index_log(*args)

    monkeypatch.setattr(_catalog_index, "index_log", counted)
    hits = search_ranked(root, "parsing")
    assert [(hit.session_id, hit.sequence) for hit in hits] == [("alpha", 1)]
    assert reads == []


def test_a_root_replaced_while_it_is_checked_is_checked_again(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check's stats go through a descriptor of the root: when the root's path names another
    directory once they are done, the stats are taken again, so the listing is the new root's."""
    other = tmp_path / "other"
    with SessionStore(other) as store:
        store.append("gamma", UserMessage(content="from the other store"))
    check_at = _catalog_check._check_at
    calls: list[int] = []

    def swapping(*args: Any) -> _catalog_check.Checked:
        found = check_at(*args)
        if not calls:  # the first check ran on the old root; now the path names the other one
            os.rename(root, tmp_path / "old")
            os.rename(other, root)
        calls.append(1)
        return found

    with SessionStore(root) as store:
        monkeypatch.setattr(_catalog_check, "_check_at", swapping)
        ids = [summary.session_id for summary in store.list_sessions()]
    assert len(calls) == 2
    assert ids == ["gamma"]
    assert listed(root) == scanned(root)


def test_rows_are_read_again_only_after_another_connection_wrote(root: Path) -> None:
    """A listing that follows this store's own reads no row of ``sessions`` again; one that follows
    another store's update of the catalog does, and shows that store's change."""
    with SessionStore(root) as store, SessionStore(root) as other:
        store.list_sessions()
        catalog = store._catalog
        assert catalog is not None
        statements: list[str] = []
        catalog._open().set_trace_callback(statements.append)
        store.list_sessions()
        assert not [sql for sql in statements if "FROM sessions" in sql]
        other.update_session("beta", title="Lunch")
        other.list_sessions()  # the other connection saves beta's new summary
        (beta,) = [s for s in store.list_sessions() if s.session_id == "beta"]
        assert beta.title == "Lunch"
        assert [sql for sql in statements if sql.startswith("SELECT session_id, stamp")]


def test_a_session_gone_unsafe_has_no_new_text_indexed(root: Path, tmp_path: Path) -> None:
    """A session whose meta.json became a symlink is left out of the listing; its log's new words
    are not indexed either, as nothing of an unsafe session is read."""
    assert search_ranked(root, "parsing")
    with SessionStore(root) as store:
        store.append("beta", UserMessage(content="walrus sighting"))
    meta = root / "beta" / "meta.json"
    outside = tmp_path / "elsewhere.json"
    outside.write_bytes(meta.read_bytes())
    meta.unlink()
    meta.symlink_to(outside)
    assert "beta" not in [summary.session_id for summary in listed(root)]
    assert search_ranked(root, "walrus") == []


def test_ranked_search_refuses_bad_queries_and_simulated_stores(tmp_path: Path) -> None:
    """A query without a word or a bad limit is an `InvalidArgument`; a simulated store has no catalog."""
    with pytest.raises(InvalidArgument):
        search_ranked(tmp_path, "  !! ")
    with pytest.raises(InvalidArgument):
        search_ranked(tmp_path, "word", limit=0)
    store = SessionStore("/store", fs=SimulatedFileSystem())
    store.append("s", UserMessage(content="word"))
    with pytest.raises(CatalogUnavailable) as raised:
        search_ranked(store, "word")
    assert isinstance(raised.value, RuntimeError)


def test_stored_markers_never_misplace_a_highlight(tmp_path: Path) -> None:
    """Text that holds the snippet's own marker characters is shown unmarked, never highlighted in the wrong place."""
    with SessionStore(tmp_path) as store:
        store.append("s", UserMessage(content="a \ufdd0 tricky \ufdd1 needle here"))
    (hit,) = search_ranked(tmp_path, "needle")
    assert hit.marks == ()
    assert "needle" in hit.snippet


def test_without_fts5_listing_still_uses_the_catalog_and_ranking_says_why_not(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A SQLite without FTS5: the catalog is made again without the text index, listings stay right,
    and ranked search raises `CatalogUnavailable` naming FTS5."""
    monkeypatch.setattr(_catalog_schema, "has_fts5", lambda: False)
    assert listed(root) == scanned(root)
    connection = sqlite3.connect(db(root))
    tables = {name for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    connection.close()
    assert "parts_fts" not in tables
    with pytest.raises(CatalogUnavailable, match="FTS5"):
        search_ranked(root, "parsing")


def test_the_ranked_command_escapes_stored_control_characters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``search --rank`` writes a stored escape sequence as visible text, never raw to the terminal."""
    with SessionStore(tmp_path) as store:
        store.append("s", UserMessage(content="evil \x1b[2J\x1b]0;title\x07 payload here"))
    assert main(["--root", str(tmp_path), "search", "--rank", "payload"]) == 0
    out = capsys.readouterr().out
    assert "payload" in out
    assert "\x1b" not in out and "\x07" not in out
    assert main(["--root", str(tmp_path), "search", "--rank", "absent"]) == 1
