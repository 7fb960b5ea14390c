"""Scenario tests for finding a snapshot's boundary record: the rules of §10, and what it reads.

What `snapshot()` reads is counted in bytes through a wrapping file system, never timed:
its cost must follow the records between the boundary and the previous one (or the end
of the log), not the log's length.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from jsonl_store import CompactedMessage, InvalidArgument, Problem, SessionStore, UserMessage
from jsonl_store._format import codec as _codec
from jsonl_store._format.names import LOG_NAME
from jsonl_store._io.fs import OS_FS
from jsonl_store._io.session_dir import SessionDir
from jsonl_store._log import snapshots as _snapshots
from jsonl_store._log.problems import DISCARD
from jsonl_store._log.scan import scan
from jsonl_store.testing import SimulatedFileSystem
from jsonl_store.testing.damage import crlf

SID = "s"


class CountingFileSystem:
    """Another file system, counting the bytes ``pread`` returns."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.read = 0

    def pread(self, fd: int, length: int, offset: int) -> bytes:
        data: bytes = self.inner.pread(fd, length, offset)
        self.read += len(data)
        return data

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _summary(through: int) -> CompactedMessage:
    return CompactedMessage(content=f"everything through {through}")


def _filled(store: SessionStore, count: int, session_id: str = SID, batch: int = 1000) -> None:
    """Append ``count`` user messages, ``batch`` per append_many call."""
    for first in range(0, count, batch):
        store.append_many(
            session_id,
            [
                UserMessage(content=f"message {n} " + "x" * 200)
                for n in range(first, min(count, first + batch))
            ],
        )


def _offsets(fs: Any, directory: str) -> dict[int, tuple[int, int]]:
    """Each record's (offset, end) in the log, as a reader from byte 0 finds them."""
    fd = fs.open(os.path.join(directory, LOG_NAME), os.O_RDONLY)
    try:
        size = fs.fstat(fd).st_size
        return {
            _codec.record_position(line.body)[0]: (line.offset, line.end)
            for line in scan(fs, fd, "", 0, size, DISCARD)
        }
    finally:
        fs.close(fd)


# ---------------------------------------------------------------------------------------
# The cost: records near the boundary, not the log's length
# ---------------------------------------------------------------------------------------


def _bytes_read(length: int, previous: int, through: int) -> tuple[int, int]:
    """Bytes snapshot(through) reads after a snapshot at ``previous`` in a ``length``-record log; and the log size."""
    fs = CountingFileSystem(SimulatedFileSystem())
    store = SessionStore("/store", fs=fs, durability="none")
    _filled(store, length)
    version = 0
    if previous:
        version = store.snapshot(SID, _summary(previous), previous, 0).version
    fs.read = 0
    made = store.snapshot(SID, _summary(through), through, version)
    assert made.compacted_through_sequence == through
    return fs.read, len(fs.inner.read_bytes(f"/store/{SID}/{LOG_NAME}"))


@pytest.mark.parametrize(
    ("where", "previous", "step"),
    [("early", 100, 1), ("late", -100, 1), ("first, near the end", 0, -50)],
)
def test_snapshot_reads_as_much_in_a_long_log_as_in_a_short_one(where: str, previous: int, step: int) -> None:
    """A boundary one record past the previous one (early or late), or a first one near the end, reads O(1) of the log."""
    reads = []
    for length in (2_000, 40_000):
        before = previous if previous >= 0 else length + previous
        through = before + step if step > 0 else length + step
        read, size = _bytes_read(length, before, through)
        reads.append(read)
        assert read < 64 << 10 < size / 10, where
    assert abs(reads[1] - reads[0]) < 1_000, reads  # longer sequence numbers, nothing more


def test_a_first_snapshot_deep_in_the_log_reads_from_the_nearer_end() -> None:
    """With no previous snapshot, a boundary early in the log is found reading forward from byte 0."""
    read, size = _bytes_read(40_000, 0, 30)
    assert read < 64 << 10 < size / 100


# ---------------------------------------------------------------------------------------
# Which record may be a boundary (spec §10)
# ---------------------------------------------------------------------------------------


def test_every_sequence_after_the_previous_boundary_is_found_at_its_offsets(tmp_path: Path) -> None:
    """Searched forward or backward, each boundary gets the offsets a reader finds for that record."""
    with SessionStore(tmp_path, durability="none") as store:
        _filled(store, 30, batch=7)
        store.snapshot(SID, _summary(4), 4, 0)
        offsets = _offsets(OS_FS, str(tmp_path / SID))
        for through in range(5, 31):
            fd = os.open(tmp_path / SID / LOG_NAME, os.O_RDONLY)
            try:
                where = SessionDir(OS_FS, SID, str(tmp_path / SID))
                snapshot = _snapshots.latest(where, fd, os.fstat(fd).st_size, DISCARD)
                assert snapshot is not None
                line = _snapshots.find_boundary(
                    where, fd, snapshot.tail_offset, os.fstat(fd).st_size, 4, through, 30
                )
            finally:
                os.close(fd)
            assert line is not None and (line.offset, line.end) == offsets[through], through
        made = store.snapshot(SID, _summary(17), 17, 1)
        assert (made.boundary_offset, made.tail_offset) == offsets[17]


def test_a_boundary_in_a_batch_cut_short_is_refused(tmp_path: Path) -> None:
    """A record of a batch whose last line is torn off is not given back, so it cannot be a boundary."""
    with SessionStore(tmp_path, durability="none") as store:
        _filled(store, 5)
        store.append_many(SID, [UserMessage(content=f"batch {n}") for n in range(3)])
    log = tmp_path / SID / LOG_NAME
    log.write_bytes(log.read_bytes()[:-1])  # the batch's last record loses its newline
    with SessionStore(tmp_path, durability="none") as store:
        with pytest.raises(InvalidArgument):
            store.snapshot(SID, _summary(6), 6, 0)
        assert store.snapshot(SID, _summary(5), 5, 0).compacted_through_sequence == 5


def test_a_boundary_inside_a_whole_batch_is_accepted(tmp_path: Path) -> None:
    """A record of a batch a reader gives back whole may be a boundary."""
    with SessionStore(tmp_path, durability="none") as store:
        store.append_many(SID, [UserMessage(content=f"batch {n}") for n in range(3)])
        made = store.snapshot(SID, _summary(2), 2, 0)
        assert [r.sequence for r in store.load(SID).raw_tail] == [3]
    assert made.compacted_through_sequence == 2


def test_a_line_that_holds_no_record_does_not_hide_an_earlier_boundary(tmp_path: Path) -> None:
    """A sealed line that is no record, between the boundary and the end, is skipped as a reader skips it."""
    with SessionStore(tmp_path, durability="none") as store:
        _filled(store, 10)
        with open(tmp_path / SID / LOG_NAME, "ab") as log:
            log.write(_codec.seal(b'{"not":"a record"}'))
        _filled(store, 2)
        made = store.snapshot(SID, _summary(9), 9, 0)  # nearer the end: searched backward
        assert made.compacted_through_sequence == 9
        assert [r.sequence for r in store.load(SID).raw_tail] == [10, 11, 12]


def test_a_boundary_past_the_last_record_reads_nothing_but_the_end(tmp_path: Path) -> None:
    """A sequence past the last record is refused after reading only the log's last lines."""
    fs = CountingFileSystem(SimulatedFileSystem())
    store = SessionStore("/store", fs=fs, durability="none")
    _filled(store, 5_000)
    fs.read = 0
    with pytest.raises(InvalidArgument):
        store.snapshot(SID, _summary(5_001), 5_001, 0)
    assert fs.read < 64 << 10


# ---------------------------------------------------------------------------------------
# The log holds its bytes as written before offsets are taken (§9.3, §10)
# ---------------------------------------------------------------------------------------


def test_snapshot_restores_a_converted_log_before_taking_offsets(tmp_path: Path) -> None:
    """After a CRLF conversion, snapshot() gives the log its bytes back, so the new offsets hold."""
    with SessionStore(tmp_path, durability="none") as store:
        _filled(store, 6)
    log = tmp_path / SID / LOG_NAME
    written = log.read_bytes()
    log.write_bytes(crlf(written))
    problems: list[Problem] = []
    with SessionStore(tmp_path, durability="none", on_problem=problems.append) as store:
        made = store.snapshot(SID, _summary(4), 4, 0)
        assert log.read_bytes() == written
        assert "text-conversion" in [p.kind for p in problems]
        fd = os.open(log, os.O_RDONLY)
        try:
            assert _snapshots.boundary_problem(OS_FS, fd, os.fstat(fd).st_size, made) is None
        finally:
            os.close(fd)
        view = store.load(SID)
        assert view.snapshot is not None and view.snapshot.version == 1
        assert [r.sequence for r in view.raw_tail] == [5, 6]


def test_snapshot_of_a_log_as_written_does_not_rewrite_it(tmp_path: Path) -> None:
    """A log without a text conversion is never replaced by snapshot()."""
    with SessionStore(tmp_path, durability="none") as store:
        _filled(store, 6)
        inode = os.stat(tmp_path / SID / LOG_NAME).st_ino
        store.snapshot(SID, _summary(4), 4, 0)
    assert os.stat(tmp_path / SID / LOG_NAME).st_ino == inode
