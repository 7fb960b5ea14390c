"""Readers racing a compacting writer never take a healthy snapshot for a damaged one (spec §10)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from helpers import classes, fails_after

from jsonl_store import CompactedMessage, FileSystem, Problem, SessionStore, UserMessage
from jsonl_store._io.fs import OS_FS
from jsonl_store.testing import SimulatedFileSystem

SID = "compacted"
SNAPSHOTS = 400


def test_readers_racing_a_compacting_writer_see_only_healthy_snapshots(tmp_path: Path, children: Any) -> None:
    """Two real reader processes load while a writer appends and snapshots: no bad-snapshot, no fallback."""
    stop = tmp_path / "stop"
    root = tmp_path / "store"
    # durability="none": many snapshots a second, so readers meet each step of a compaction.
    writer = children.start(
        "compacting_writer", root=str(root), sid=SID, stop=str(stop), every=2, durability="none"
    )
    readers = [children.start("snapshot_reader", root=str(root), sid=SID, stop=str(stop)) for _ in range(2)]
    children.go(writer, *readers)
    # Let them race until the writer has made a good number of snapshots.
    store = SessionStore(root)
    with fails_after(120, "the compacting writer stopped making snapshots"):
        while (snapshot := store.load(SID).snapshot) is None or snapshot.version < SNAPSHOTS:
            pass
    stop.touch()
    made = writer.result()["snapshots"]
    for reader in readers:
        seen = reader.result()
        assert seen["bad"] == [], seen["bad"]
        assert seen["views"] > 0
    assert made >= SNAPSHOTS
    assert SessionStore(root).verify(SID) == []


class _PausedAfterMeasuring:
    """A file system that runs ``meanwhile`` once, right after a reader measures the raw log."""

    def __init__(self, fs: FileSystem, meanwhile: Any) -> None:
        self._fs = fs
        self._meanwhile = meanwhile
        self._log_fds: set[int] = set()

    def open(self, path: str, flags: int, mode: int = 0o666) -> int:
        fd = self._fs.open(path, flags, mode)
        if path.endswith("/messages.jsonl"):
            self._log_fds.add(fd)
        return fd

    def fstat(self, fd: int) -> Any:
        result = self._fs.fstat(fd)
        if fd in self._log_fds and self._meanwhile is not None:
            meanwhile, self._meanwhile = self._meanwhile, None
            meanwhile()
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fs, name)


def _three_records_then_a_compaction(writer: SessionStore) -> Callable[[], None]:
    """Append three records now; the returned call appends two more and snapshots through the first."""
    for n in range(3):
        writer.append(SID, UserMessage(id=f"m{n}", content=f"before {n}"))

    def compact() -> None:
        through = writer.append(SID, UserMessage(id="m3", content="appended while the reader read"))
        writer.append(SID, UserMessage(id="m4", content="after the boundary"))
        writer.snapshot(SID, CompactedMessage(id="c1", content="through 4"), through, 0)

    return compact


def test_a_snapshot_made_between_a_readers_measure_and_its_listing_is_trusted() -> None:
    """Exact interleaving: the reader measures the log, a writer appends and snapshots, the reader goes on."""
    fs = SimulatedFileSystem()
    compact = _three_records_then_a_compaction(SessionStore("/store", fs=fs))
    reported: list[Problem] = []
    reader = SessionStore("/store", fs=_PausedAfterMeasuring(fs, compact), on_problem=reported.append)
    view = reader.load(SID)
    assert reported == [] and view.problems == []
    assert view.snapshot is not None and view.snapshot.version == 1
    # The view is the log as of the snapshot or later: the record after the boundary is in it.
    assert [m.id for m in classes(view.messages)] == ["c1", "m4"]


def test_records_after_a_boundary_written_during_the_read_are_not_lost(tmp_path: Path) -> None:
    """The same interleaving on real files: records(after=n) starts at the new snapshot and misses nothing."""
    root = tmp_path / "store"
    compact = _three_records_then_a_compaction(SessionStore(root))
    reported: list[Problem] = []
    paused = _PausedAfterMeasuring(OS_FS, compact)
    reader = SessionStore(root, fs=paused, on_problem=reported.append)
    assert [r.sequence for r in reader.records(SID, after=4)] == [5]
    assert reported == []
