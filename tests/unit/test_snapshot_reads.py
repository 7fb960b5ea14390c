"""Scenario tests for how readers find the newest snapshot without listing its directory each time.

Counted, never timed: a wrapping file system counts the calls (and bytes) each read makes.
The simulated file system's change times come from a logical clock that every change
advances and that lies years in the past, so its directories are always settled; the
real file system is used where the settling rule itself is under test.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

import msgspec
import pytest

from jsonl_store import CompactedMessage, ContextSnapshot, SessionStore, UserMessage
from jsonl_store._format import codec as _codec
from jsonl_store._format.names import snapshot_name
from jsonl_store._io.fs import OS_FS
from jsonl_store._log import snapshots as _snapshots
from jsonl_store.testing import SimulatedFileSystem

ROOT = "/store"
SID = "s"
DIRECTORY = f"{ROOT}/{SID}"


class CountingFileSystem:
    """Another file system, counting the calls of each method and the bytes ``pread`` returns."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: Counter[str] = Counter()
        self.read = 0

    def pread(self, fd: int, length: int, offset: int) -> bytes:
        self.calls["pread"] += 1
        data: bytes = self.inner.pread(fd, length, offset)
        self.read += len(data)
        return data

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.inner, name)
        if not callable(method):
            return method

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            return method(*args, **kwargs)

        return counted

    def reset(self) -> None:
        self.calls.clear()
        self.read = 0


class WithoutChangeTimes:
    """A file system whose ``stat`` gives no change times (the protocol does not require them)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def stat(self, path: str) -> Any:
        st = self.inner.stat(path)
        return _PlainStat(st.st_mode, st.st_size, st.st_nlink)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class _PlainStat(msgspec.Struct):
    st_mode: int
    st_size: int
    st_nlink: int


def _session(fs: Any, records: int = 6, snapshots: int = 1, session_id: str = SID) -> SessionStore:
    """A store on ``fs`` whose session has ``records`` records and ``snapshots`` snapshots (one each)."""
    store = SessionStore(ROOT, fs=fs, durability="none")
    store.append_many(session_id, [UserMessage(content=str(n)) for n in range(records)])
    for version in range(snapshots):
        store.snapshot(session_id, CompactedMessage(content=f"through {version + 1}"), version + 1, version)
    return store


def _copies(fs: SimulatedFileSystem, up_to: int, session_id: str = SID) -> None:
    """Versions 2..``up_to`` as copies of version 1 (the same boundary, each its own number)."""
    directory = f"{ROOT}/{session_id}"
    for version in range(2, up_to + 1):
        fs.write_file(
            f"{directory}/{snapshot_name(version)}", _renumbered(fs, directory, version), durable=False
        )


def _renumbered(fs: SimulatedFileSystem, directory: str, version: int) -> bytes:
    """Snapshot 1's file as it would be written for ``version``."""
    line = fs.read_bytes(f"{directory}/{snapshot_name(1)}")[: -_codec.SUFFIX_LENGTH - 1] + b"}"
    first = msgspec.json.decode(line, type=ContextSnapshot)
    return _codec.encode_snapshot(msgspec.structs.replace(first, version=version))


def _version(store: SessionStore, session_id: str = SID) -> int:
    view = store.load(session_id)
    return view.snapshot.version if view.snapshot is not None else 0


# ---------------------------------------------------------------------------------------
# The common path: no listing
# ---------------------------------------------------------------------------------------


def test_a_settled_directory_is_listed_once_then_read_without_listing() -> None:
    """The first read lists the directory; later ones stat it and read the newest file only."""
    fs = CountingFileSystem(SimulatedFileSystem())
    store = _session(fs, snapshots=3)
    fs.reset()
    assert _version(store) == 3
    assert fs.calls["listdir"] == 1
    fs.reset()
    assert _version(store) == 3
    assert fs.calls["listdir"] == 0


def test_a_thousand_snapshot_files_cost_a_load_what_one_does() -> None:
    """With 1,000 snapshot files a load makes the same calls as with 1, and reads no more but the newest file."""
    sim = SimulatedFileSystem()
    fs = CountingFileSystem(sim)
    store = _session(fs, records=200)
    _session(fs, records=200, session_id="many")
    _copies(sim, 1000, "many")
    costs = []
    for session_id in (SID, "many"):
        store.load(session_id)  # the first read lists
        fs.reset()
        view = store.load(session_id)
        newest = len(sim.read_bytes(f"{ROOT}/{session_id}/{snapshot_name(view.snapshot.version)}"))  # type: ignore[union-attr]
        costs.append((dict(fs.calls), fs.read - newest, len(view.raw_tail)))
    assert costs[0] == costs[1]
    assert store.load("many").snapshot.version == 1000  # type: ignore[union-attr]


def test_stores_on_the_real_file_system_share_what_they_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new store object on the default file system reads a settled directory without listing it."""
    with SessionStore(tmp_path, durability="none") as store:
        store.append_many(SID, [UserMessage(content=str(n)) for n in range(4)])
        store.snapshot(SID, CompactedMessage(content="two"), 2, 0)
    monkeypatch.setattr(_snapshots, "clock", lambda: os.stat(tmp_path / SID).st_mtime_ns + 10**10)
    listed = []
    real = OS_FS.listdir

    def listdir(path: str) -> list[str]:
        listed.append(path)
        return real(path)

    monkeypatch.setattr(type(OS_FS), "listdir", staticmethod(listdir))
    for _ in range(3):
        with SessionStore(tmp_path, durability="none") as store:
            assert _version(store) == 1
    assert listed.count(str(tmp_path / SID)) == 1


# ---------------------------------------------------------------------------------------
# Changes the cache must see
# ---------------------------------------------------------------------------------------


def test_a_snapshot_made_by_another_store_after_this_one_listed_is_seen() -> None:
    """Another process's new snapshot changes the directory: the next read lists it again."""
    fs = SimulatedFileSystem()
    reader = _session(fs)
    assert _version(reader) == 1
    other = SessionStore(ROOT, fs=fs, durability="none")  # a cache of its own, as in another process
    other.snapshot(SID, CompactedMessage(content="three"), 3, 1)
    other.snapshot(SID, CompactedMessage(content="four"), 4, 2)
    assert _version(reader) == 3
    assert [r.sequence for r in reader.load(SID).raw_tail] == [5, 6]


def test_a_file_copied_in_above_a_gap_is_seen() -> None:
    """A snapshot file put in by hand with a number far above the newest is the newest."""
    fs = SimulatedFileSystem()
    store = _session(fs, snapshots=2)
    assert _version(store) == 2
    fs.write_file(f"{DIRECTORY}/{snapshot_name(9)}", _renumbered(fs, DIRECTORY, 9))
    assert _version(store) == 9


def test_gaps_left_by_files_moved_aside_are_stepped_over() -> None:
    """With versions 1, 2 and 5 (3 and 4 moved aside) the newest is 5; with 5 moved aside too, 2."""
    fs = SimulatedFileSystem()
    store = _session(fs)
    _copies(fs, 5)
    assert _version(store) == 5
    for version in (3, 4):
        fs.rename(f"{DIRECTORY}/{snapshot_name(version)}", f"{DIRECTORY}/{snapshot_name(version)}.damaged")
    assert _version(store) == 5
    fs.rename(f"{DIRECTORY}/{snapshot_name(5)}", f"{DIRECTORY}/{snapshot_name(5)}.damaged")
    assert _version(store) == 2
    assert store.snapshot(SID, CompactedMessage(content="next"), 2, 2).version == 3


def test_repair_in_another_store_moving_the_newest_aside_is_seen() -> None:
    """A damaged newest file that another store's repair moves aside leaves the older one in use."""
    fs = SimulatedFileSystem()
    store = _session(fs, snapshots=2)
    fs.write_file(f"{DIRECTORY}/{snapshot_name(2)}", b"garbage\n")
    view = store.load(SID)
    assert view.snapshot is not None and view.snapshot.version == 1
    assert [p.kind for p in view.problems] == ["bad-snapshot"]
    SessionStore(ROOT, fs=fs, durability="none").repair(SID)
    view = store.load(SID)
    assert view.snapshot is not None and view.snapshot.version == 1
    assert view.problems == []


def test_a_session_deleted_and_made_anew_is_read_afresh() -> None:
    """After another store deletes the session and makes it again, its old snapshots are gone."""
    fs = SimulatedFileSystem()
    store = _session(fs, snapshots=3)
    assert _version(store) == 3
    other = SessionStore(ROOT, fs=fs, durability="none")
    other.delete_session(SID)
    other.append_many(SID, [UserMessage(content=f"again {n}") for n in range(3)])
    other.snapshot(SID, CompactedMessage(content="one"), 1, 0)
    view = store.load(SID)
    assert view.snapshot is not None and view.snapshot.version == 1
    assert [r.sequence for r in view.raw_tail] == [2, 3]


# ---------------------------------------------------------------------------------------
# Damaged newest files and older boundaries: the versions kept below the newest
# ---------------------------------------------------------------------------------------


def test_a_damaged_newest_file_is_reported_on_every_read_without_a_listing() -> None:
    """A newest file damaged in place (no directory change) is skipped and reported each time."""
    sim = SimulatedFileSystem()
    fs = CountingFileSystem(sim)
    store = _session(fs, snapshots=3)
    store.load(SID)
    sim.write_file(f"{DIRECTORY}/{snapshot_name(3)}", b"x" * 40 + b"\n")
    for _ in range(2):
        fs.reset()
        view = store.load(SID)
        assert view.snapshot is not None and view.snapshot.version == 2
        assert [(p.kind, os.path.basename(p.path)) for p in view.problems] == [
            ("bad-snapshot", snapshot_name(3))
        ]
        assert fs.calls["listdir"] == 0


def test_more_damaged_files_than_are_kept_fall_back_to_a_listing() -> None:
    """When every kept version is damaged, the older ones come from a listing, as before."""
    sim = SimulatedFileSystem()
    fs = CountingFileSystem(sim)
    store = _session(fs)
    newest = _snapshots.KEPT_VERSIONS + 3
    _copies(sim, newest)
    store.load(SID)
    for version in range(2, newest + 1):
        sim.write_file(f"{DIRECTORY}/{snapshot_name(version)}", b"\x00" * 10, durable=False)
    fs.reset()
    view = store.load(SID)
    assert view.snapshot is not None and view.snapshot.version == 1
    assert len(view.problems) == newest - 1
    assert fs.calls["listdir"] == 1


def test_records_after_an_older_boundary_start_at_that_snapshot() -> None:
    """records(after=n) uses the newest snapshot at or below n, found among the kept versions."""
    fs = CountingFileSystem(SimulatedFileSystem())
    store = _session(fs, records=8, snapshots=4)
    store.load(SID)
    fs.reset()
    assert [r.sequence for r in store.records(SID, after=2)] == [3, 4, 5, 6, 7, 8]
    assert fs.calls["listdir"] == 0


# ---------------------------------------------------------------------------------------
# When a listing is not kept
# ---------------------------------------------------------------------------------------


def test_a_directory_changed_moments_ago_is_listed_on_every_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Within SETTLED_NS of a change a second change could keep the same times: no listing is kept."""
    monkeypatch.setattr(_snapshots, "clock", lambda: os.stat(tmp_path / SID).st_mtime_ns)
    fs = CountingFileSystem(OS_FS)
    store = SessionStore(tmp_path, fs=fs, durability="none")
    store.append_many(SID, [UserMessage(content=str(n)) for n in range(4)])
    store.snapshot(SID, CompactedMessage(content="two"), 2, 0)
    fs.reset()
    for _ in range(3):
        assert _version(store) == 1
    assert fs.calls["listdir"] == 3


def test_a_file_system_without_change_times_is_listed_on_every_read() -> None:
    """A FileSystem whose stat has no st_mtime_ns gets no cache: every read lists."""
    fs = CountingFileSystem(WithoutChangeTimes(SimulatedFileSystem()))
    store = _session(fs, snapshots=2)
    fs.reset()
    for _ in range(3):
        assert _version(store) == 2
    assert fs.calls["listdir"] == 3
