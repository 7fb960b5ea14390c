"""`snapshot()` of a fork: the version a caller passes is the one `load` gave it."""

from __future__ import annotations

from pathlib import Path

import pytest

from jsonl_store import CompactedMessage, SessionStore, SessionView, SnapshotConflict, UserMessage


def test_a_fork_compacts_with_the_version_load_gave_it(store: SessionStore) -> None:
    """A fork whose context starts at its source's snapshot takes that snapshot's version, as the store guide says."""
    store.append_many("src", [UserMessage(content=str(i)) for i in range(4)])
    store.snapshot("src", CompactedMessage(content="0 and 1"), 2, 0)
    store.fork("src", 4, "f")
    store.append("f", UserMessage(content="own"))
    latest = store.load("f")
    assert latest.snapshot is not None and latest.snapshot.version == 1
    made = store.snapshot("f", CompactedMessage(content="all"), latest.last_sequence, latest.snapshot.version)
    assert made.version == latest.snapshot.version + 1
    after = store.load("f").snapshot
    assert after is not None and (after.session_id, after.version, after.id) == ("f", made.version, made.id)


def test_the_documented_retry_loop_on_a_fork_ends(store: SessionStore, root: Path) -> None:
    """Load, compact, and on `SnapshotConflict` load again: on a fork of a compacted source the loop ends."""
    store.append_many("src", [UserMessage(content=str(i)) for i in range(4)])
    store.snapshot("src", CompactedMessage(content="0"), 1, 0)
    store.fork("src", 4, "f")
    store.append("f", UserMessage(content="own"))
    stale: SessionView | None = store.load("f")
    SessionStore(root, durability="none").snapshot("src", CompactedMessage(content="0 to 2"), 3, 1)
    summary = CompactedMessage(content="all")
    for _ in range(3):
        latest = store.load("f") if stale is None else stale
        stale = None
        version = latest.snapshot.version if latest.snapshot else 0
        try:
            made = store.snapshot("f", summary, latest.last_sequence, version)
        except SnapshotConflict:
            continue
        break
    else:
        pytest.fail("snapshot() of the fork kept refusing the version load gave")
    assert made.version == 3
    assert store.load("f").messages == [summary]


def test_a_fork_refuses_a_version_older_than_its_context(store: SessionStore) -> None:
    """A caller whose context predates the fork's source compaction gets `SnapshotConflict`."""
    store.append_many("src", [UserMessage(content=str(i)) for i in range(4)])
    store.fork("src", 4, "f")
    store.append("f", UserMessage(content="own"))
    store.snapshot("src", CompactedMessage(content="0 and 1"), 2, 0)
    with pytest.raises(SnapshotConflict):
        store.snapshot("f", CompactedMessage(content="all"), 5, 0)
