"""Real processes killed with SIGKILL while they build or update the catalog: the next answers are still the files'.

A child brings the catalog up to date (summaries and the text index, in several committed
batches) and is killed at a random moment once it has started; a fresh store then lists
and ranks, and its answers must equal what reading every file gives. SQLite's transactions
make a killed update leave the catalog as the last commit left it
(https://www.sqlite.org/atomiccommit.html); the freshness check does the rest.
"""

from __future__ import annotations

import random
import re
import subprocess
import sys
import time
from pathlib import Path
from unittest import mock

from jsonl_store import OsFileSystem, SessionStore, UserMessage
from jsonl_store._session import catalog as _catalog
from jsonl_store.search import search_ranked, searchable

CHILD = """
import sys
from jsonl_store import SessionStore, UserMessage
from jsonl_store._session import catalog as _catalog
from jsonl_store.search import search_ranked
_catalog.BATCH_BYTES = 4096  # many small commits, so a kill lands between and inside them
store = SessionStore(sys.argv[1])
print("started", flush=True)
for round in range(1000):
    store.append(f"s{round % 40:02d}", UserMessage(content=f"zebra number {round} runs"))
    search_ranked(store, "zebra")
    store.list_sessions()
"""
_TOKEN = re.compile(r"\w+")


def zebra_parts(root: Path) -> set[tuple[str, int]]:
    """Where "zebra" is, read from every session's files."""
    found = set()
    with SessionStore(root, fs=OsFileSystem()) as store:
        for summary in store.list_sessions():
            for record in store.records(summary.session_id):
                for _, _, text in searchable(record.message, summary.dialect):
                    if "zebra" in _TOKEN.findall(text.lower()):
                        found.add((summary.session_id, record.sequence))
    return found


def test_a_catalog_update_killed_at_any_moment_leaves_correct_answers(tmp_path: Path) -> None:
    """Ten kills mid-update: after each, listing and ranked search from the catalog equal a full scan."""
    root = tmp_path / "store"
    with SessionStore(root) as store:
        for number in range(40):
            store.append(f"s{number:02d}", UserMessage(content=f"zebra seed {number} " + "filler " * 200))
    rng = random.Random(20)
    for _ in range(10):
        with subprocess.Popen(
            [sys.executable, "-c", CHILD, str(root)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        ) as child:
            assert child.stdout is not None and child.stderr is not None
            try:
                started = child.stdout.readline()
                assert started == b"started\n", child.stderr.read().decode(errors="replace")
                time.sleep(rng.uniform(0.0, 0.5))  # where the kill lands; nothing asserts on time
            finally:
                child.kill()  # whatever failed above: no child left running into the next test
        with mock.patch.object(_catalog, "RACY_NS", 0), SessionStore(root) as store:
            assert store.list_sessions() == SessionStore(root, fs=OsFileSystem()).list_sessions()
            hits = search_ranked(store, "zebra", limit=100_000)
            assert {(hit.session_id, hit.sequence) for hit in hits} == zebra_parts(root)
