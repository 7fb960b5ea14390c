"""Listing from the catalog while other writers append and other readers update it at once."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from jsonl_store import OsFileSystem, SessionStore, UserMessage
from jsonl_store._session import catalog as _catalog
from jsonl_store.search import search_ranked

APPENDS = 150


def test_listings_during_appends_see_every_acknowledged_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each listing's count lies between what was acknowledged before it began and after it ended; none misses a session."""
    monkeypatch.setattr(_catalog, "BUILD_AT", 0)  # these few sessions are listed from a catalog too
    root = tmp_path / "store"
    with SessionStore(root) as store:
        for number in range(20):
            store.append(f"quiet-{number:02d}", UserMessage(content="still here"))
    acknowledged = [0]
    done = threading.Event()

    def write() -> None:
        with SessionStore(root) as writer:
            for number in range(APPENDS):
                writer.append("busy", UserMessage(content=f"append {number}"))
                acknowledged[0] = number + 1
        done.set()

    def rank() -> None:
        with SessionStore(root) as ranker:
            while not done.is_set():
                search_ranked(ranker, "append")

    threads = [threading.Thread(target=write), threading.Thread(target=rank)]
    for thread in threads:
        thread.start()
    listings = 0
    with SessionStore(root) as reader:
        while not done.is_set() or listings < 3:
            before = acknowledged[0]
            summaries = {s.session_id: s for s in reader.list_sessions()}
            after = acknowledged[0]
            listings += 1
            assert {f"quiet-{number:02d}" for number in range(20)} <= set(summaries)
            count = summaries["busy"].message_count if "busy" in summaries else 0
            assert before <= count <= after + 1, (before, count, after, "busy" in summaries)
    for thread in threads:
        thread.join()
    with SessionStore(root) as reader:
        assert reader.list_sessions() == SessionStore(root, fs=OsFileSystem()).list_sessions()
        hits = search_ranked(reader, "append", limit=1000)
    assert sorted(hit.sequence for hit in hits if hit.session_id == "busy") == list(range(1, APPENDS + 1))
