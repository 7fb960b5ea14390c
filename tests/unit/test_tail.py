"""`tail(session_id, n)`: the last n records, oldest first, read backwards in O(n)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import log_path

from jsonl_store import CompactedMessage, InvalidArgument, OsFileSystem, SessionStore, UserMessage
from jsonl_store.testing.damage import damage_file, flip, garbage


def fill(store: SessionStore, count: int, sid: str = "s") -> None:
    """``count`` user records with contents 0, 1, 2, ..."""
    for start in range(0, count, 1000):
        store.append_many(sid, [UserMessage(content=str(i)) for i in range(start, min(count, start + 1000))])


def test_the_last_records_come_oldest_first(store: SessionStore) -> None:
    """tail(n) is records()[-n:]."""
    fill(store, 10)
    assert store.tail("s", 3) == list(store.records("s"))[-3:]
    assert [r.sequence for r in store.tail("s", 3)] == [8, 9, 10]


def test_more_than_there_are_gives_them_all_and_none_gives_none(store: SessionStore) -> None:
    """tail(n) with n above the count gives every record; tail(0) and an unknown session give []."""
    fill(store, 4)
    assert [r.sequence for r in store.tail("s", 100)] == [1, 2, 3, 4]
    assert store.tail("s", 0) == []
    assert store.tail("nobody", 5) == []


def test_snapshots_do_not_hide_records(store: SessionStore) -> None:
    """tail reads records, not the context: records before a snapshot's boundary are given too."""
    fill(store, 5)
    store.snapshot("s", CompactedMessage(content="all"), 5, 0)
    assert [r.sequence for r in store.tail("s", 2)] == [4, 5]


def test_a_torn_last_line_and_mid_log_damage_are_skipped(store: SessionStore, root: Path) -> None:
    """The damaged tail is never a record, and a damaged line between records is passed over."""
    fill(store, 5)
    data = log_path(root, "s").read_bytes()
    fourth = data.split(b"\n")[3]
    damage_file(log_path(root, "s"), flip, data.index(fourth) + 5)
    damage_file(log_path(root, "s"), garbage)
    assert [r.sequence for r in store.tail("s", 3)] == [2, 3, 5]


def test_the_cost_follows_n_not_the_logs_length(tmp_path: Path) -> None:
    """Bytes read by tail(5) are the same for a 200-record and a 20,000-record log."""
    read: list[int] = []

    class Counting(OsFileSystem):
        def pread(self, fd: int, length: int, offset: int) -> bytes:
            data = super().pread(fd, length, offset)
            read.append(len(data))
            return data

    costs = []
    for count in (200, 20_000):
        fill(SessionStore(tmp_path, durability="none"), count, sid=f"s{count}")
        store = SessionStore(tmp_path, fs=Counting())
        read.clear()
        assert [int(r.message.content) for r in store.tail(f"s{count}", 5)] == list(range(count - 5, count))  # type: ignore[union-attr]
        costs.append(sum(read))
    assert costs[0] == costs[1]


@pytest.mark.parametrize("bad", [-1, 2.0, "3", None])
def test_n_must_be_a_count(store: SessionStore, bad: object) -> None:
    """n is a non-negative int."""
    with pytest.raises(InvalidArgument):
        store.tail("s", bad)  # type: ignore[arg-type]
