"""Deletes racing writers in other processes: every call ends cleanly, and what is left is one whole session.

A delete renames the session directory away (lock file and all) and then empties it
(spec §9.5). Writers waiting for the session lock or the append lock meanwhile must
notice that what they wait on moved away, and make the session again where it belongs.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from jsonl_store import SessionStore

SID = "raced"


@pytest.mark.parametrize("durability", ["fsync", "none"])
def test_deletes_racing_appends_and_metadata_updates_leave_one_whole_session(
    tmp_path: Path, children: Any, durability: str
) -> None:
    """Two processes append and one updates metadata while another deletes again and again: no call fails, nothing half-deleted stays."""
    root = tmp_path / "root"
    common = {"root": str(root), "sid": SID, "durability": durability}
    count = 150 if durability == "fsync" else 3000  # without fsyncs, enough to overlap the deletes
    writers = [
        children.start(
            "append", **common, writers=[f"p{p}"], count=count, seed=p, batch_max=4, shared_store=False
        )
        for p in range(2)
    ]
    updater = children.start("update_rounds", **common, count=count)
    stop = tmp_path / "stop"
    deleter = children.start("delete_rounds", **common, stop=str(stop))
    children.go(*writers, updater, deleter)
    for writer in writers:
        writer.result()
    missing = updater.result()
    stop.touch()
    deleted = deleter.result()
    # Some deletes met a session and some updates met none: the calls really overlapped.
    assert deleted > 0 and missing > 0, (deleted, missing)
    assert sorted(os.listdir(root)) in (
        [".gitattributes", ".gitignore"],
        [".gitattributes", ".gitignore", SID],
    )
    store = SessionStore(root)
    view = store.load(SID)
    assert view.problems == []
    sequences = [record.sequence for record in store.records(SID)]
    assert sequences == list(range(1, len(sequences) + 1))
    if (root / SID).exists():
        assert store.verify(SID) == []
