"""Scenario tests for the simulated file system and the crash states it yields."""

from __future__ import annotations

import errno
import fcntl
import os
import textwrap
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from jsonl_store._io.fs import OS_FS, FileSystem
from jsonl_store.testing import CrashState, SimulatedFileSystem, crash_points, crash_states, load_directory

RW_CREATE = os.O_RDWR | os.O_CREAT
APPEND = os.O_WRONLY | os.O_CREAT | os.O_APPEND


# ---------------------------------------------------------------------------------------
# The simulator behaves like os: a differential check against the real file system
# ---------------------------------------------------------------------------------------

Step = tuple[Any, ...]

SCENARIOS: dict[str, list[Step]] = {
    "open_missing_without_creat": [("open", "a", os.O_RDONLY)],
    "open_excl_on_existing": [("open", "a", RW_CREATE), ("open", "a", RW_CREATE | os.O_EXCL)],
    "open_in_missing_directory": [("open", "d/a", RW_CREATE)],
    "open_below_a_file": [("open", "a", RW_CREATE), ("open", "a/b", RW_CREATE)],
    "open_directory_for_writing": [("mkdir", "d"), ("open", "d", os.O_WRONLY)],
    "open_directory_flag_on_file": [("open", "a", RW_CREATE), ("open", "a", os.O_RDONLY | os.O_DIRECTORY)],
    "write_to_read_only_fd": [("open", "a", RW_CREATE), ("open", "a", os.O_RDONLY), ("write", 1, b"x")],
    "read_from_write_only_fd": [("open", "a", os.O_WRONLY | os.O_CREAT), ("pread", 0, 4, 0)],
    "pread_past_end": [
        ("open", "a", RW_CREATE),
        ("write", 0, b"abc"),
        ("pread", 0, 10, 1),
        ("pread", 0, 5, 9),
    ],
    "append_goes_to_end": [
        ("open", "a", RW_CREATE),
        ("write", 0, b"hello"),
        ("open", "a", APPEND),
        ("write", 1, b"!"),
        ("write", 0, b"J"),
        ("pread", 0, 100, 0),
    ],
    "truncate_on_open": [
        ("open", "a", RW_CREATE),
        ("write", 0, b"hello"),
        ("open", "a", os.O_WRONLY | os.O_TRUNC),
        ("size", "a"),
    ],
    "ftruncate_extends_with_zeros": [
        ("open", "a", RW_CREATE),
        ("write", 0, b"ab"),
        ("ftruncate", 0, 5),
        ("pread", 0, 10, 0),
        ("ftruncate", 0, 1),
        ("pread", 0, 10, 0),
    ],
    "ftruncate_read_only": [("open", "a", RW_CREATE), ("open", "a", os.O_RDONLY), ("ftruncate", 1, 0)],
    "rename_missing": [("rename", "a", "b")],
    "rename_replaces_file": [
        ("open", "a", RW_CREATE),
        ("write", 0, b"new"),
        ("open", "b", RW_CREATE),
        ("write", 1, b"old"),
        ("rename", "a", "b"),
        ("listdir", ""),
        ("read", "b"),
    ],
    "rename_file_onto_directory": [("open", "a", RW_CREATE), ("mkdir", "d"), ("rename", "a", "d")],
    "rename_directory_onto_file": [("open", "a", RW_CREATE), ("mkdir", "d"), ("rename", "d", "a")],
    "rename_directory_onto_nonempty_directory": [
        ("mkdir", "d"),
        ("mkdir", "e"),
        ("open", "e/x", RW_CREATE),
        ("rename", "d", "e"),
    ],
    "rename_directory_into_itself": [("mkdir", "d"), ("rename", "d", "d/e")],
    "rename_onto_own_hard_link": [
        ("open", "a", RW_CREATE),
        ("link", "a", "b"),
        ("rename", "a", "b"),
        ("listdir", ""),
    ],
    "link_onto_existing": [("open", "a", RW_CREATE), ("open", "b", RW_CREATE), ("link", "a", "b")],
    "link_missing": [("link", "a", "b")],
    "link_shares_data": [
        ("open", "a", RW_CREATE),
        ("link", "a", "b"),
        ("write", 0, b"shared"),
        ("read", "b"),
        ("nlink", "a"),
        ("unlink", "a"),
        ("nlink", "b"),
    ],
    "unlink_missing": [("unlink", "a")],
    "unlink_directory": [("mkdir", "d"), ("unlink", "d")],
    "unlinked_file_stays_readable_through_fd": [
        ("open", "a", RW_CREATE),
        ("write", 0, b"kept"),
        ("unlink", "a"),
        ("pread", 0, 10, 0),
        ("listdir", ""),
    ],
    "mkdir_existing": [("mkdir", "d"), ("mkdir", "d")],
    "mkdir_missing_parent": [("mkdir", "d/e")],
    "rmdir_nonempty": [("mkdir", "d"), ("open", "d/a", RW_CREATE), ("rmdir", "d")],
    "rmdir_file": [("open", "a", RW_CREATE), ("rmdir", "a")],
    "rmdir_missing": [("rmdir", "d")],
    "listdir_file": [("open", "a", RW_CREATE), ("listdir", "a")],
    "listdir_missing": [("listdir", "d")],
    "stat_missing": [("size", "a")],
    "close_twice": [("open", "a", RW_CREATE), ("close", 0), ("close", 0)],
    "fsync_dir_of_file": [("open", "a", RW_CREATE), ("fsync_dir", "a")],
    "fsync_dir_missing": [("fsync_dir", "d")],
    "flock_conflict_nonblocking": [
        ("open", "a", RW_CREATE),
        ("open", "a", os.O_RDONLY),
        ("flock", 0, fcntl.LOCK_EX),
        ("flock", 1, fcntl.LOCK_EX | fcntl.LOCK_NB),
        ("flock", 1, fcntl.LOCK_SH | fcntl.LOCK_NB),
        ("flock", 0, fcntl.LOCK_UN),
        ("flock", 1, fcntl.LOCK_SH | fcntl.LOCK_NB),
        ("flock", 0, fcntl.LOCK_SH | fcntl.LOCK_NB),
    ],
    "flock_released_by_close": [
        ("open", "a", RW_CREATE),
        ("open", "a", os.O_RDONLY),
        ("flock", 0, fcntl.LOCK_EX),
        ("close", 0),
        ("flock", 1, fcntl.LOCK_EX | fcntl.LOCK_NB),
    ],
}


def _run(fs: FileSystem, root: str, steps: list[Step]) -> list[object]:
    """Run ``steps`` on ``fs`` below ``root``; return each result or (exception class, errno)."""
    fds: list[int] = []
    out: list[object] = []

    def path(name: str) -> str:
        return os.path.join(root, name) if name else root

    actions: dict[str, Callable[..., object]] = {
        "open": lambda name, flags: fds.append(fs.open(path(name), flags, 0o644)),
        "close": lambda i: fs.close(fds[i]),
        "write": lambda i, data: fs.write(fds[i], data),
        "pread": lambda i, n, off: fs.pread(fds[i], n, off),
        "ftruncate": lambda i, n: fs.ftruncate(fds[i], n),
        "flock": lambda i, op: fs.flock(fds[i], op),
        "size": lambda name: fs.stat(path(name)).st_size,
        "nlink": lambda name: fs.stat(path(name)).st_nlink,
        "read": lambda name: _read_all(fs, path(name)),
        "rename": lambda a, b: fs.rename(path(a), path(b)),
        "link": lambda a, b: fs.link(path(a), path(b)),
        "unlink": lambda name: fs.unlink(path(name)),
        "mkdir": lambda name: fs.mkdir(path(name)),
        "rmdir": lambda name: fs.rmdir(path(name)),
        "listdir": lambda name: sorted(fs.listdir(path(name))),
        "fsync_dir": lambda name: fs.fsync_dir(path(name)),
    }
    try:
        for op, *args in steps:
            try:
                out.append(actions[op](*args))
            except OSError as exc:
                out.append((type(exc).__name__, exc.errno))
    finally:
        for fd in fds:
            try:
                fs.close(fd)
            except OSError:
                pass
    return out


def _read_all(fs: FileSystem, path: str) -> bytes:
    fd = fs.open(path, os.O_RDONLY)
    try:
        return fs.pread(fd, 1 << 20, 0)
    finally:
        fs.close(fd)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_simulator_matches_the_real_file_system(name: str, tmp_path: Path) -> None:
    """Each call returns what os returns, and fails with the same exception class and errno."""
    real = _run(OS_FS, str(tmp_path), SCENARIOS[name])
    fs = SimulatedFileSystem()
    fs.mkdir("/t")
    simulated = _run(fs, "/t", SCENARIOS[name])
    assert simulated == real


def test_simulator_satisfies_the_file_system_protocol() -> None:
    """A SimulatedFileSystem type-checks as the store's FileSystem."""
    fs: FileSystem = SimulatedFileSystem()
    assert fs.listdir("/") == []


def test_relative_paths_resolve_from_the_root() -> None:
    """The simulated process's working directory is '/'."""
    fs = SimulatedFileSystem()
    fs.mkdir("d")
    fs.write_file("d/../d/a", b"x")
    assert fs.read_bytes("/d/a") == b"x"
    assert fs.listdir(".") == ["d"]


# ---------------------------------------------------------------------------------------
# Trace and faults
# ---------------------------------------------------------------------------------------


def test_trace_records_mutations_and_not_reads() -> None:
    """Reads, stats, listings and locks leave the trace alone; every change is in it."""
    fs = SimulatedFileSystem()
    fd = fs.open("/a", RW_CREATE)
    fs.write(fd, b"abc")
    fs.pread(fd, 3, 0)
    fs.fstat(fd)
    fs.flock(fd, fcntl.LOCK_EX)
    fs.listdir("/")
    fs.fdatasync(fd)
    fs.close(fd)
    fs.rename("/a", "/b")
    assert [entry.op for entry in fs.trace] == ["open", "write", "fdatasync", "rename"]
    assert "'/a'" in str(fs.trace[0]) and "3 bytes @ 0" in str(fs.trace[1])


def test_injected_fsync_failure_raises_and_syncs_nothing() -> None:
    """fail_next makes the next fsync raise EIO, and the data stays volatile."""
    fs = SimulatedFileSystem()
    fs.makedirs("/d")
    fd = fs.open("/d/a", APPEND)
    fs.fsync_dir("/d")
    fs.write(fd, b"data")
    fs.fail_next("fsync", errno.EIO)
    with pytest.raises(OSError) as info:
        fs.fsync(fd)
    assert info.value.errno == errno.EIO
    fs.fsync(fd)  # the fault fired once
    assert fs.trace[-1].op == "fsync"
    assert sum(entry.op == "fsync" for entry in fs.trace) == 1


def test_injected_short_write_writes_a_prefix_and_reports_it() -> None:
    """A short write writes only the bytes it reports, as write(2) does on a full disk."""
    fs = SimulatedFileSystem()
    fd = fs.open("/a", APPEND)
    fs.fail_next("write", short_write=3)
    assert fs.write(fd, b"abcdef") == 3
    assert fs.read_bytes("/a") == b"abc"
    fs.fail_next("write", errno.ENOSPC)
    with pytest.raises(OSError) as info:
        fs.write(fd, b"def")
    assert info.value.errno == errno.ENOSPC
    assert fs.read_bytes("/a") == b"abc"


def test_o_sync_write_is_durable_without_fsync() -> None:
    """A write on an O_SYNC descriptor survives a power loss like write plus fsync."""
    fs = SimulatedFileSystem()
    fs.makedirs("/d")
    fd = fs.open("/d/a", APPEND | os.O_SYNC)
    fs.fsync_dir("/d")
    fs.write(fd, b"line\n")
    fs.close(fd)
    assert {_file(s, "/d/a") for s in crash_states(fs, start=len(fs.trace))} == {b"line\n"}


# ---------------------------------------------------------------------------------------
# Crash states
# ---------------------------------------------------------------------------------------


def _file(state: CrashState, path: str) -> bytes | None:
    return state.tree().get(path)


def _power(fs: SimulatedFileSystem, **kwargs: Any) -> list[CrashState]:
    return [s for s in crash_states(fs, **kwargs) if s.kind == "power"]


def test_fsynced_file_without_directory_fsync_can_vanish() -> None:
    """A new file's fsynced data is unreachable after power loss if its entry never was synced."""
    fs = SimulatedFileSystem()
    fs.makedirs("/d")
    start = len(fs.trace)
    fd = fs.open("/d/a", APPEND)
    fs.write(fd, b"data\n")
    fs.fsync(fd)
    fs.close(fd)
    final = _power(fs, start=len(fs.trace))
    assert {_file(s, "/d/a") for s in final} == {None, b"data\n"}
    fs.fsync_dir("/d")
    assert {_file(s, "/d/a") for s in _power(fs, start=len(fs.trace))} == {b"data\n"}
    # Before the fsync the file may also exist but be empty (entry durable, data not).
    seen = {_file(s, "/d/a") for s in _power(fs, start=start)}
    assert {None, b"", b"data\n"} <= seen


def test_unsynced_append_is_torn_zeroed_or_garbage_after_power_loss() -> None:
    """The states of an unsynced append include torn, zero-filled and garbage tails."""
    fs = SimulatedFileSystem()
    fs.makedirs("/d")
    fs.write_file("/d/log", b"one\n")
    fd = fs.open("/d/log", APPEND)
    fs.write(fd, b"two\n")
    states = _power(fs, start=len(fs.trace), max_states_per_prefix=50)
    contents = {_file(s, "/d/log") for s in states}
    assert {b"one\n", b"one\nt", b"one\ntw", b"one\ntwo", b"one\ntwo\n", b"one\n\0\0\0\0"} <= contents
    assert any(
        c is not None and c.startswith(b"one\n") and len(c) == 8 and c[4:] != b"two\n" and c[4:] != bytes(4)
        for c in contents
    )  # garbage
    assert all(c is not None and c.startswith(b"one\n") for c in contents)  # synced data never lost


def test_process_crash_keeps_everything_written() -> None:
    """The process-crash state at each prefix is what the process saw at that point."""
    fs = SimulatedFileSystem()
    fd = fs.open("/a", APPEND)
    seen = []
    for chunk in (b"x", b"yy", b"zzz"):
        fs.write(fd, chunk)
        seen.append(fs.read_bytes("/a"))
    states = [s for s in crash_states(fs) if s.kind == "process"]
    assert [_file(s, "/a") for s in states] == [None, b"", *seen]
    assert [s.prefix for s in states] == [0, 1, 2, 3, 4]


def test_atomic_replace_shows_old_or_new_never_a_mix() -> None:
    """write tmp, fsync, rename, fsync dir: every state holds the old or the new file whole."""
    fs = SimulatedFileSystem()
    fs.makedirs("/d")
    fs.write_file("/d/meta", b"old")
    start = len(fs.trace)
    fs.write_file("/d/meta.tmp", b"new", durable=False)
    fd = fs.open("/d/meta.tmp", os.O_RDONLY)
    fs.fsync(fd)
    fs.close(fd)
    fs.rename("/d/meta.tmp", "/d/meta")
    fs.fsync_dir("/d")
    states = list(crash_states(fs, start=start, max_states_per_prefix=100))
    assert {_file(s, "/d/meta") for s in states} == {b"old", b"new"}
    assert {_file(s, "/d/meta") for s in states if s.prefix == len(fs.trace)} == {b"new"}


def test_replace_without_fsync_before_rename_can_leave_an_empty_file() -> None:
    """The classic bug: rename of an unsynced temp file can leave the new name empty."""
    fs = SimulatedFileSystem()
    fs.makedirs("/d")
    fs.write_file("/d/meta", b"old")
    start = len(fs.trace)
    fs.write_file("/d/meta.tmp", b"new", durable=False)
    fs.rename("/d/meta.tmp", "/d/meta")
    fs.fsync_dir("/d")
    assert b"" in {_file(s, "/d/meta") for s in _power(fs, start=start, max_states_per_prefix=100)}


def test_unsynced_rename_can_be_lost_alone() -> None:
    """Of two unsynced renames, either can reach the disk without the other."""
    fs = SimulatedFileSystem()
    fs.makedirs("/d")
    fs.write_file("/d/a", b"a")
    fs.write_file("/d/b", b"b")
    fs.rename("/d/a", "/d/a2")
    fs.rename("/d/b", "/d/b2")
    listings = {
        tuple(sorted(p for p in s.tree() if p.startswith("/d/")))
        for s in _power(fs, start=len(fs.trace), max_states_per_prefix=100)
    }
    assert ("/d/a", "/d/b2") in listings and ("/d/a2", "/d/b") in listings
    assert ("/d/a", "/d/b") in listings and ("/d/a2", "/d/b2") in listings


def test_hard_link_survives_as_one_inode() -> None:
    """A hard link made durable points at the same data after a crash."""
    fs = SimulatedFileSystem()
    fs.makedirs("/d")
    fs.write_file("/d/a", b"x")
    fs.link("/d/a", "/d/b")
    fs.fsync_dir("/d")
    (state,) = _power(fs, start=len(fs.trace))
    crashed = state.filesystem()
    assert crashed.stat("/d/a").st_ino == crashed.stat("/d/b").st_ino
    assert crashed.stat("/d/a").st_nlink == 2


def test_states_per_prefix_are_bounded_and_distinct() -> None:
    """max_states_per_prefix caps the power-loss states, and no state repeats within a prefix and kind."""
    fs = SimulatedFileSystem()
    fs.makedirs("/d")
    fd = fs.open("/d/log", APPEND)
    for i in range(20):
        fs.write(fd, b"record %d with some padding\n" % i)
    states = list(crash_states(fs, max_states_per_prefix=5))
    by_prefix: dict[int, list[CrashState]] = {}
    for state in states:
        by_prefix.setdefault(state.prefix, []).append(state)
    for prefix, group in by_prefix.items():
        assert sum(s.kind == "power" for s in group) <= 5, prefix
        trees = [(s.kind, tuple(sorted(s.tree().items(), key=lambda kv: kv[0]))) for s in group]
        assert len(trees) == len(set(trees)), prefix


def test_crash_states_are_repeatable_with_a_seed() -> None:
    """The same trace and seed give the same states, garbage bytes included."""
    fs = SimulatedFileSystem()
    fd = fs.open("/a", APPEND)
    fs.write(fd, b"a" * 100)
    fs.write(fd, b"b" * 100)
    first = [s.tree() for s in crash_states(fs, seed=7)]
    again = [s.tree() for s in crash_states(fs, seed=7)]
    assert first == again


def test_crash_of_a_crash_state_replays_from_that_state() -> None:
    """A state's file system starts durable, so crashing it again only loses its own new writes."""
    fs = SimulatedFileSystem()
    fs.makedirs("/d")
    fs.write_file("/d/log", b"one\n")
    state = _power(fs, start=len(fs.trace))[0]
    again = state.filesystem()
    assert again.trace == []
    fd = again.open("/d/log", APPEND)
    again.write(fd, b"two\n")
    contents = {_file(s, "/d/log") for s in _power(again)}
    assert b"one\n" in contents and all(c is not None and c.startswith(b"one\n") for c in contents)


def test_materialize_and_load_directory_round_trip(tmp_path: Path) -> None:
    """A crash state written to a real directory loads back as the same tree."""
    fs = SimulatedFileSystem()
    fs.makedirs("/s/sub")
    fs.write_file("/s/a", b"alpha")
    fs.write_file("/s/sub/b", b"")
    fs.link("/s/a", "/s/sub/a-link")
    fs.fsync_dir("/s/sub")
    (state,) = _power(fs, start=len(fs.trace))
    state.materialize(tmp_path / "out")
    assert (tmp_path / "out/s/a").read_bytes() == b"alpha"
    assert os.stat(tmp_path / "out/s/a").st_ino == os.stat(tmp_path / "out/s/sub/a-link").st_ino
    assert load_directory(tmp_path / "out").tree() == state.tree()
    with pytest.raises(FileExistsError):
        state.materialize(tmp_path / "out")


def test_crash_state_report_lists_the_trace() -> None:
    """A state's report names the crash and every call that led to it."""
    fs = SimulatedFileSystem()
    fd = fs.open("/a", APPEND)
    fs.write(fd, b"x")
    state = next(s for s in crash_states(fs) if s.prefix == 2)
    assert state.last_op is fs.trace[1]
    report = state.report()
    assert "crash after 2 of 2 calls" in report and "#0 open" in report and "#1 write" in report


# ---------------------------------------------------------------------------------------
# The session lock and crash points
# ---------------------------------------------------------------------------------------


def test_lock_is_reentrant_in_a_thread_and_exclusive_across_threads() -> None:
    """fs.lock behaves like the store's own lock: nested in one thread, a timeout for another."""
    fs = SimulatedFileSystem()
    fs.mkdir("/d")
    lock = fs.lock("/d/.lock", timeout=0.05)
    outcome: list[object] = []

    def contend() -> None:
        try:
            with fs.lock("/d/.lock", timeout=0.05):
                outcome.append("acquired")
        except TimeoutError as exc:
            outcome.append(exc)

    with lock, lock:
        thread = threading.Thread(target=contend)
        thread.start()
        thread.join()
    assert isinstance(outcome[0], TimeoutError)
    contend()
    assert outcome[1] == "acquired"
    assert fs.exists("/d/.lock") and fs.open_fds() == {}
    with pytest.raises(FileNotFoundError):
        fs.lock("/missing/.lock", timeout=0.05).__enter__()


def test_crash_points_are_the_calls_that_changed_the_disk() -> None:
    """crash_points lists the prefixes crash_states visits, and prefixes= narrows them."""
    fs = SimulatedFileSystem()
    fd = fs.open("/a", APPEND)
    fs.write(fd, b"")  # an empty write changes nothing and is not recorded
    fs.write(fd, b"x")
    fs.fsync(fd)
    assert crash_points(fs) == [0, 1, 2, 3]
    assert {s.prefix for s in crash_states(fs)} == {0, 1, 2, 3}
    assert {s.prefix for s in crash_states(fs, prefixes={2})} == {2}
    with pytest.raises(ValueError):
        list(crash_states(fs, start=5))


def test_testing_package_example_runs() -> None:
    """The example in jsonl_store.testing's docstring runs as written."""
    import jsonl_store.testing

    doc = jsonl_store.testing.__doc__
    assert doc is not None
    code = doc.split("Example::\n", 1)[1]
    resumed: list[object] = []
    namespace = {"my_resume_code": lambda store: resumed.append(store.load("s"))}
    exec(textwrap.dedent(code), namespace)  # running the documented example is the point
    assert len(resumed) > 10
