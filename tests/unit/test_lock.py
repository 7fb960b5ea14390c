"""The session lock (`jsonl_store._io.lock.FileLock`): flock on a lock file the store owns.

Re-entrant within a thread, exclusive between threads and processes, bounded by a
timeout, and careful with its file: never truncated, never deleted, 0600, and refused
when it is a symlink or not a regular file.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from pathlib import Path

import pytest

from jsonl_store import LockTimeout, SessionStore, UnsafePath, UserMessage
from jsonl_store._io.fs import OS_FS


def test_lock_is_reentrant_within_a_thread_and_excludes_other_threads(tmp_path: Path) -> None:
    """One thread may nest the lock; another thread waits for it and times out with TimeoutError."""
    lock = OS_FS.lock(str(tmp_path / ".lock"), 0.2)
    outcome: list[str] = []

    def other() -> None:
        try:
            with lock:
                outcome.append("entered")
        except TimeoutError:
            outcome.append("timed out")

    with lock, lock:
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
    assert outcome == ["timed out"]
    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    assert outcome == ["timed out", "entered"]


def test_lock_serialises_read_modify_write_across_threads_and_lock_objects(tmp_path: Path) -> None:
    """Eight threads, each with its own lock object on one file, lose none of 400 increments."""
    counter = tmp_path / "counter"
    counter.write_text("0")

    def work() -> None:
        lock = OS_FS.lock(str(tmp_path / ".lock"), 30.0)
        for _ in range(50):
            with lock:
                value = int(counter.read_text())
                time.sleep(0)
                counter.write_text(str(value + 1))

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert counter.read_text() == "400"


def test_lock_file_is_private_never_truncated_and_never_deleted(tmp_path: Path) -> None:
    """Taking the lock keeps the lock file's bytes, leaves the file behind, and creates it 0600."""
    path = tmp_path / ".lock"
    with OS_FS.lock(str(path), 1.0):
        pass
    assert path.exists() and stat.S_IMODE(path.stat().st_mode) == 0o600
    path.write_bytes(b"someone's bytes")
    with OS_FS.lock(str(path), 1.0):
        assert path.read_bytes() == b"someone's bytes"
    assert path.read_bytes() == b"someone's bytes"


def test_lock_refuses_a_symlink_and_a_fifo_without_blocking(tmp_path: Path) -> None:
    """A lock file that is a symlink or a FIFO raises UnsafePath at once; the symlink's target is untouched."""
    target = tmp_path / "outside"
    target.write_bytes(b"outside bytes")
    (tmp_path / "link.lock").symlink_to(target)
    os.mkfifo(tmp_path / "fifo.lock")
    for name in ("link.lock", "fifo.lock"):
        with pytest.raises(UnsafePath) as caught, OS_FS.lock(str(tmp_path / name), 1.0):
            pass
        assert caught.value.path == str(tmp_path / name)
    assert target.read_bytes() == b"outside bytes"


def test_store_turns_a_lock_timeout_into_lock_timeout_naming_the_session(tmp_path: Path) -> None:
    """While another lock object holds the session lock, update_session raises LockTimeout for that session."""
    store = SessionStore(tmp_path, lock_timeout=0.1)
    store.append("s", UserMessage(content="x"))
    with OS_FS.lock(str(tmp_path / "s" / ".lock"), 1.0):
        started = time.monotonic()
        with pytest.raises(LockTimeout) as caught:
            store.update_session("s", title="blocked")
        assert time.monotonic() - started < 5
    assert caught.value.session_id == "s"
    assert store.update_session("s", title="free").title == "free"


def test_lock_with_a_huge_timeout_still_works(tmp_path: Path) -> None:
    """A timeout beyond what threading accepts (1e12 s) is clamped, not an OverflowError."""
    with OS_FS.lock(str(tmp_path / ".lock"), 1e12):
        pass


def test_store_needs_no_filelock(tmp_path: Path) -> None:
    """A session is made and locked without importing filelock (no longer a dependency)."""
    import subprocess
    import sys

    script = (
        "import sys; from jsonl_store import SessionStore, UserMessage; "
        f"s = SessionStore({str(tmp_path)!r}); s.append('s', UserMessage(content='x')); "
        "s.update_session('s', title='t'); assert 'filelock' not in sys.modules, 'filelock was imported'"
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)


def test_a_waiter_whose_lock_file_was_renamed_away_does_not_hold_the_lock_of_a_moved_file(
    tmp_path: Path,
) -> None:
    """A lock taken on a file a delete renamed away meanwhile is let go: the waiter locks what is at the path now."""
    from jsonl_store._io.fs import _open_lock_file
    from jsonl_store._io.lock import FileLock

    session = tmp_path / "s"
    session.mkdir()
    path = str(session / ".lock")
    opened = threading.Event()

    def opener(name: str) -> int:
        fd = _open_lock_file(name)
        opened.set()
        return fd

    outcome: list[object] = []

    def waiter() -> None:
        try:
            with FileLock(path, 30.0, opener):
                outcome.append("entered")
        except OSError as exc:
            outcome.append(type(exc))

    with OS_FS.lock(path, 1.0):
        thread = threading.Thread(target=waiter)
        thread.start()
        assert opened.wait(30)
        session.rename(tmp_path / ".s.deleted")
    thread.join()
    assert outcome == [FileNotFoundError]  # the directory is gone: nothing at the path to lock
