"""After any mix of writes, hand edits, deletions and catalog losses, the catalog answers as a full scan does."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import time
from pathlib import Path
from unittest import mock

from helpers import examples
from hypothesis import example, given, settings
from hypothesis import strategies as st

from jsonl_store import OsFileSystem, SessionHasForks, SessionStore, SessionSummary, UserMessage
from jsonl_store._format import codec as _codec
from jsonl_store._format.names import CATALOG_DIR
from jsonl_store._session import catalog as _catalog
from jsonl_store.search import search_ranked, searchable

WORDS = ["date", "parsing", "week", "lunch", "zebra", "fix"]
SESSIONS = ["s1", "s2", "s3"]
SENTENCE = st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join)
OPERATION = st.one_of(
    st.tuples(st.just("append"), st.sampled_from(SESSIONS), SENTENCE),
    st.tuples(st.just("title"), st.sampled_from(SESSIONS), SENTENCE),
    st.tuples(st.just("edit-title-by-hand"), st.sampled_from(SESSIONS), SENTENCE),
    st.tuples(st.just("delete"), st.sampled_from(SESSIONS), st.just("")),
    st.tuples(st.just("cut-log-by-hand"), st.sampled_from(SESSIONS), st.just("")),
    st.tuples(st.just("edit-log-by-hand"), st.sampled_from(SESSIONS), st.just("")),
    st.tuples(st.just("fork"), st.sampled_from(SESSIONS), st.sampled_from(SESSIONS)),
    st.tuples(st.just("drop-catalog"), st.just(""), st.just("")),
    st.tuples(st.just("list"), st.just(""), st.just("")),
    st.tuples(st.just("rank"), st.just(""), st.sampled_from(WORDS)),
)
_TOKEN = re.compile(r"\w+")


def scanned(root: Path) -> list[SessionSummary]:
    """A listing that reads every session's files (no catalog on an explicit file system)."""
    with SessionStore(root, fs=OsFileSystem()) as store:
        return store.list_sessions()


def word_hits(root: Path, word: str) -> set[tuple[str, int]]:
    """Where ``word`` is, read from the files: each session's own records' parts, and titles."""
    found = set()
    with SessionStore(root, fs=OsFileSystem()) as store:
        for summary in store.list_sessions():
            if summary.title and word in _TOKEN.findall(summary.title.lower()):
                found.add((summary.session_id, 0))
            own = summary.fork.sequence if summary.fork is not None else 0
            for record in store.records(summary.session_id, after=own):
                for _, _, text in searchable(record.message, summary.dialect):
                    if word in _TOKEN.findall(text.lower()):
                        found.add((summary.session_id, record.sequence))
    return found


def edit_by_hand(root: Path, kind: str, sid: str, text: str) -> None:
    """Change a session's files as another program would, without the store."""
    meta, log = root / sid / "meta.json", root / sid / "messages.jsonl"
    if kind == "edit-title-by-hand" and meta.exists():
        data = meta.read_text()
        assert '"title"' in data
        with open(meta, "r+", encoding="utf-8") as out:  # in place: the directory's times stay
            out.write(re.sub(r'"title": ?("[^"]*"|null)', f'"title": "{text}"', data, count=1))
            out.truncate()
    elif kind == "cut-log-by-hand" and log.exists():
        lines = log.read_bytes().splitlines(keepends=True)
        log.write_bytes(b"".join(lines[: len(lines) // 2]))
    elif kind == "edit-log-by-hand" and log.exists():
        # A word changed for one as long in the first line holding it, its checksum made to
        # hold again, in place: the same inode and size, the end of the log untouched.
        lines = log.read_bytes().splitlines(keepends=True)
        for number, line in enumerate(lines):
            body = _codec.unseal(line.rstrip(b"\n"))
            if body is not None and b"date" in body:
                lines[number] = _codec.seal(body.replace(b"date", b"week", 1))
                with open(log, "r+b") as out:
                    out.write(b"".join(lines))
                break


def apply(store: SessionStore, root: Path, operation: tuple[str, str, str]) -> None:
    """Carry out one operation on the store or, by hand, on its files."""
    kind, sid, text = operation
    exists = (root / sid).is_dir() if sid else False
    if kind.endswith("-by-hand"):
        edit_by_hand(root, kind, sid, text)
    elif kind == "append":
        store.append(sid, UserMessage(content=text))
    elif kind == "title" and exists:
        store.update_session(sid, title=text)
    elif kind == "delete" and exists:
        # A session forks read their history from is not deleted: the refusal changes nothing.
        with contextlib.suppress(SessionHasForks):
            store.delete_session(sid)
    elif kind == "fork" and exists and text != sid and not (root / text).exists():
        summary = store.get_session(sid)
        if summary is not None and summary.message_count:
            store.fork(sid, summary.message_count, new_session_id=text)
    elif kind == "drop-catalog":
        shutil.rmtree(root / CATALOG_DIR, ignore_errors=True)
    elif kind == "list":
        store.list_sessions()
    elif kind == "rank":
        search_ranked(store, text, limit=1000)


@settings(max_examples=examples(40), deadline=None)
@example(operations=[("append", "s1", "date"), ("edit-title-by-hand", "s1", "week")], racy_ns=0)
@example(
    operations=[
        ("append", "s1", "date"),
        ("append", "s1", "fix"),
        ("rank", "", "fix"),
        ("cut-log-by-hand", "s1", ""),
    ],
    racy_ns=0,
)
@example(
    operations=[
        ("append", "s1", "date"),
        ("append", "s1", "fix"),
        ("rank", "", "fix"),
        ("edit-log-by-hand", "s1", ""),
        ("append", "s1", "lunch"),
    ],
    racy_ns=0,
)
@given(operations=st.lists(OPERATION, max_size=12), racy_ns=st.sampled_from([0, _catalog.RACY_NS]))
def test_catalog_answers_match_a_full_scan(operations: list[tuple[str, str, str]], racy_ns: int) -> None:
    """Listing and ranked candidates from the catalog equal what reading every file gives, after each step."""
    with (
        tempfile.TemporaryDirectory() as tmp,
        mock.patch.object(_catalog, "RACY_NS", racy_ns),
        mock.patch.object(_catalog, "BUILD_AT", 0),
    ):
        root = Path(tmp) / "store"
        with SessionStore(root) as store:
            for operation in operations:
                apply(store, root, operation)
                if racy_ns == 0:
                    # Past the kernel's timestamp tick, so a settled fingerprint tells every change.
                    time.sleep(0.02)
                assert store.list_sessions() == scanned(root)
            for word in WORDS:
                ranked = search_ranked(store, word, limit=1000)
                assert {(hit.session_id, hit.sequence) for hit in ranked} == word_hits(root, word), word
        assert not os.path.exists(root / CATALOG_DIR / "catalog.sqlite3-journal")
