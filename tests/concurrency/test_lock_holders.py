"""A lock holder that dies never wedges a session; a live one makes others time out clearly (issue 4).

The holders are real processes killed with SIGKILL while they hold a lock: inside
`SessionStore._lock` (the session lock), or stalled halfway through a write to the raw
log or just before a metadata or snapshot rename (through a `FileSystem` that stops
there), so nothing of theirs runs afterwards.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jsonl_store import CompactedMessage, LockTimeout, SessionStore

SID = "locked-session"
#: Long enough never to expire by accident while a dead holder's lock is released.
SAFETY_TIMEOUT = 30.0
#: Short enough to keep the test quick while a live holder keeps the lock.
SHORT_TIMEOUT = 0.3


def test_session_lock_of_a_killed_holder_lets_the_next_process_proceed(tmp_path: Path, children: Any) -> None:
    """A live lock holder makes others raise LockTimeout naming the session; once killed, they proceed."""
    SessionStore(tmp_path).append(SID, {"role": "user", "content": "hello"})
    holder = children.start("hold_session_lock", root=str(tmp_path), sid=SID)
    holder.expect("locked")

    impatient = SessionStore(tmp_path, lock_timeout=SHORT_TIMEOUT)
    with pytest.raises(LockTimeout) as caught:
        impatient.update_session(SID, title="blocked")
    assert isinstance(caught.value, TimeoutError)
    assert caught.value.session_id == SID
    assert repr(SID) in str(caught.value)
    with pytest.raises(LockTimeout):
        impatient.snapshot(SID, CompactedMessage(content="blocked"), 1, 0)
    # Appends take only the raw log's own lock, so the held session lock does not stop them.
    assert impatient.append(SID, {"role": "user", "content": "still appending"}) == 2

    holder.kill()
    patient = SessionStore(tmp_path, lock_timeout=SAFETY_TIMEOUT)
    assert patient.update_session(SID, title="after the holder died").title == "after the holder died"
    assert patient.snapshot(SID, CompactedMessage(content="summary"), 2, 0).version == 1
    # The lock file stays: deleting it while someone waits on it would admit two holders.
    assert (tmp_path / SID / ".lock").exists()
    assert patient.verify(SID) == []


def test_writer_killed_mid_record_holding_the_log_lock_does_not_wedge_or_corrupt_the_log(
    tmp_path: Path, children: Any
) -> None:
    """A writer killed mid-record blocks appends only while alive; then its half record is cut."""
    writer = children.start("stall", root=str(tmp_path), sid=SID, operation="write", before=3)
    children.ready(writer)
    assert [writer.expect("ack") for _ in range(3)] == ["1", "2", "3"]
    writer.expect("stalled")
    half = (tmp_path / SID / "messages.jsonl").read_bytes().split(b"\n")[-1]
    assert half, "the stalled writer wrote no partial record"

    with pytest.raises(LockTimeout) as caught:
        SessionStore(tmp_path, lock_timeout=SHORT_TIMEOUT).append(SID, {"role": "user", "content": "blocked"})
    assert isinstance(caught.value, TimeoutError)
    assert caught.value.session_id == SID
    assert repr(SID) in str(caught.value)

    writer.kill()
    store = SessionStore(tmp_path, lock_timeout=SAFETY_TIMEOUT)
    assert store.load(SID).problems == []  # a torn tail is the normal remains of a crash
    assert store.append(SID, {"role": "user", "content": "next"}) == 4
    assert [r.sequence for r in store.records(SID)] == [1, 2, 3, 4]
    sidecars = list((tmp_path / SID).glob("messages.jsonl.cut-*"))
    assert [p.read_bytes() for p in sidecars] == [half]
    assert store.verify(SID) == []


def test_metadata_writer_killed_before_its_rename_leaves_the_old_metadata_and_frees_the_lock(
    tmp_path: Path, children: Any
) -> None:
    """A process killed in update_session before its rename leaves meta.json as it was."""
    store = SessionStore(tmp_path, lock_timeout=SAFETY_TIMEOUT)
    store.append(SID, {"role": "user", "content": "hello"})
    store.update_session(SID, title="old title")
    before = (tmp_path / SID / "meta.json").read_bytes()
    writer = children.start(
        "stall", root=str(tmp_path), sid=SID, operation="rename", target="meta.json", before=0
    )
    children.ready(writer)
    writer.expect("stalled")
    with pytest.raises(LockTimeout):
        SessionStore(tmp_path, lock_timeout=SHORT_TIMEOUT).update_session(SID, pinned=True)
    writer.kill()

    assert (tmp_path / SID / "meta.json").read_bytes() == before
    assert store.get_session(SID).title == "old title"  # type: ignore[union-attr]
    assert [p.kind for p in store.verify(SID)] == ["leftover-temp"]
    summary = store.update_session(SID, title="new title")
    assert (summary.title, summary.version) == ("new title", 2)
    assert json.loads((tmp_path / SID / "meta.json").read_bytes())["title"] == "new title"


def test_snapshot_writer_killed_before_its_link_leaves_no_snapshot_and_frees_the_lock(
    tmp_path: Path, children: Any
) -> None:
    """A process killed in snapshot() before the file appears leaves version 1 free for the next process."""
    writer = children.start(
        "stall", root=str(tmp_path), sid=SID, operation="link", target="snapshot-00000001.json", before=2
    )
    children.ready(writer)
    assert [writer.expect("ack") for _ in range(2)] == ["1", "2"]
    writer.expect("stalled")
    writer.kill()

    store = SessionStore(tmp_path, lock_timeout=SAFETY_TIMEOUT)
    view = store.load(SID)
    assert view.snapshot is None and [r.sequence for r in view.raw_tail] == [1, 2]
    snapshot = store.snapshot(SID, CompactedMessage(content="summary"), 2, 0)
    assert snapshot.version == 1
    assert store.load(SID).snapshot.version == 1  # type: ignore[union-attr]
    assert [p.kind for p in store.repair(SID)] == ["leftover-temp"]  # the killed writer's temporary file
    assert store.verify(SID) == []
