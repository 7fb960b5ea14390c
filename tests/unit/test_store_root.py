"""A store root that cannot be made fails fast with a typed error, whatever the errno.

Making the root used to walk up and down its parents forever (100% CPU) when a parent
existed but was no directory (a dangling symlink) or refused new directories (``/proc``).
Each case runs under an alarm, so a loop fails the test instead of hanging the run.
"""

from __future__ import annotations

import errno
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import fails_after

from jsonl_store import SessionStore, StorageError, StoragePermissionError, UnsafePath, UserMessage
from jsonl_store.testing import SimulatedFileSystem


@pytest.fixture(autouse=True)
def no_loop() -> Iterator[None]:
    """Turns an endless loop into a failure after 20 s."""
    with fails_after(20, "making the store root did not return"):
        yield


def _append(root: Path | str) -> None:
    SessionStore(root).append("s", UserMessage(content="hello"))


def test_root_that_is_a_dangling_symlink_raises_unsafe_path(tmp_path: Path) -> None:
    """A root that is a symlink to nowhere raises UnsafePath naming it; nothing is created at the target."""
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    with pytest.raises(UnsafePath) as caught:
        _append(tmp_path / "dangling")
    assert caught.value.path == str(tmp_path / "dangling")
    assert not (tmp_path / "nowhere").exists()


def test_root_below_a_dangling_symlink_raises_unsafe_path(tmp_path: Path) -> None:
    """A root below a dangling symlink raises UnsafePath naming the link, at once."""
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    with pytest.raises(UnsafePath) as caught:
        _append(tmp_path / "dangling" / "a" / "sessions")
    assert caught.value.path == str(tmp_path / "dangling")


def test_root_below_a_regular_file_raises_unsafe_path(tmp_path: Path) -> None:
    """A root below a regular file raises UnsafePath (ENOTDIR), not a raw OSError."""
    (tmp_path / "file").write_text("x")
    with pytest.raises(UnsafePath):
        _append(tmp_path / "file" / "sessions")


def test_root_under_proc_raises_unsafe_path() -> None:
    """A root under /proc, which makes no new directories, raises UnsafePath instead of looping."""
    if not Path("/proc/self").exists():
        pytest.skip("no /proc on this system")
    with pytest.raises(UnsafePath):
        _append("/proc/jsonl-store-test/sessions")


@pytest.mark.parametrize("code", [errno.EACCES, errno.EROFS, errno.ENOSPC, errno.EIO])
def test_root_whose_mkdir_fails_raises_a_typed_error_keeping_errno(code: int) -> None:
    """mkdir refused with EACCES, EROFS, ENOSPC or EIO raises a StorageError carrying that errno, once."""
    fs = SimulatedFileSystem()
    fs.fail_next("mkdir", code, path="/data/sessions", count=1000)
    fs.mkdir("/data")
    with pytest.raises(StorageError) as caught:
        SessionStore("/data/sessions", fs=fs).append("s", UserMessage(content="x"))
    assert isinstance(caught.value, OSError) and not isinstance(caught.value, UnsafePath)
    assert isinstance(caught.value, StoragePermissionError) == (code in (errno.EACCES, errno.EROFS))
    assert caught.value.errno == code
    assert caught.value.filename == "/data/sessions"
    assert fs.faults_fired == 1


def test_session_directory_whose_mkdir_fails_is_tried_once() -> None:
    """A session directory mkdir keeps failing with ENOENT (its root vanished): a typed error, no retry loop."""
    fs = SimulatedFileSystem()
    fs.makedirs("/data/sessions")
    fs.fail_next("mkdir", errno.ENOENT, path="/data/sessions/s", count=1000)
    with pytest.raises(UnsafePath):
        SessionStore("/data/sessions", fs=fs).append("s", UserMessage(content="x"))
    assert fs.faults_fired < 5


def test_demo_command_under_proc_exits_instead_of_spinning() -> None:
    """`jsonl-store demo /proc/x` ends (the CLI's way of reporting it is the CLI's), never spins."""
    if not Path("/proc/self").exists():
        pytest.skip("no /proc on this system")
    done = subprocess.run(
        [sys.executable, "-m", "jsonl_store", "demo", "/proc/jsonl-store-demo"],
        capture_output=True,
        timeout=15,
        check=False,
    )
    assert done.returncode != 0
