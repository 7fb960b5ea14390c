"""Real I/O faults: a full disk, failing C calls and a read-only store give typed errors, lose nothing.

- ENOSPC: a 256 KiB tmpfs mounted for the test and filled to the last page.
- EIO: a child process under libfiu (``fiu-run -x``) whose write, fdatasync, pread or
  unlink fails for the duration of one store call.
- Read-only: the store made unwritable with ``chmod -R a-w`` and used by a child that
  dropped root (``os.setuid``, root ignores file modes), and a tmpfs remounted ``ro``.

Each facility is checked first; a test skips with the reason when the machine lacks it
(no root, mounting refused, libfiu not installed). In every case the call raises a
`StorageError` (an ``OSError``) that keeps the errno and the cause, and the files are
byte for byte what they were, unless the failure came after the data was written.
"""

from __future__ import annotations

import asyncio
import concurrent.futures.thread  # noqa: F401 - imported before a child drops root (see below)
import errno
import functools
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import traceback
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import read_tree

from jsonl_store import (
    AsyncSessionStore,
    CompactedMessage,
    DurabilityError,
    JsonlStoreError,
    ModelUsage,
    SessionStore,
    StorageError,
    StoragePermissionError,
    UserMessage,
)
from jsonl_store.testing.damage import crlf, damage_file

FIU_CHILD = Path(__file__).with_name("_child_fiu.py")
#: A message big enough to need pages the full disk no longer has (a small one may fit
#: in the free part of the log's last page).
BIG = "x" * 20_000
NOBODY = 65534


# ---------------------------------------------------------------------------------------
# Facilities
# ---------------------------------------------------------------------------------------


def _mount_tmpfs(target: Path, options: str) -> str | None:
    """Mount a tmpfs on ``target``; None on success, else why it cannot be done here."""
    if os.geteuid() != 0:
        return "mounting a tmpfs needs root"
    if shutil.which("mount") is None:
        return "no mount command"
    target.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(target)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        return f"mount -t tmpfs refused: {done.stderr.strip()}"
    return None


def _umount(target: Path) -> None:
    subprocess.run(["umount", "-l", str(target)], check=False, capture_output=True)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 256 KiB tmpfs, unmounted after the test."""
    target = tmp_path / "disk"
    why = _mount_tmpfs(target, "size=256k,mode=0755")
    if why is not None:
        pytest.skip(why)
    try:
        yield target
    finally:
        _umount(target)


def _fill(disk: Path) -> Path:
    """Write a file that takes every free byte of ``disk``; delete it to free the space."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (1 << 16, 1 << 12, 1 << 9, 1):
            while True:
                try:
                    os.write(fd, b"\0" * size)
                except OSError as exc:
                    assert exc.errno == errno.ENOSPC
                    break
    finally:
        os.close(fd)
    return filler


def _tree(root: Path) -> dict[str, bytes | None]:
    """The store's files (the filler is not the store's)."""
    return {k: v for k, v in read_tree(root).items() if not k.startswith("filler")}


def _assert_storage_error(error: BaseException, code: int) -> None:
    """The error a caller sees: a StorageError and an OSError, with the errno and the cause."""
    assert (
        isinstance(error, StorageError) and isinstance(error, OSError) and isinstance(error, JsonlStoreError)
    )
    assert error.errno == code, error
    assert error.strerror and error.filename, error
    assert isinstance(error.__cause__, OSError) and error.__cause__.errno == code


def _session(root: Path, **options: Any) -> SessionStore:
    """A store on ``root`` holding session ``s``: two records, usage, a title."""
    store = SessionStore(root, **options)
    store.append("s", UserMessage(content="hello"), title="greeting")
    store.append("s", UserMessage(content="more"))
    store.record_usage("s", ModelUsage(input_tokens=3))
    return store


# ---------------------------------------------------------------------------------------
# ENOSPC: a full disk
# ---------------------------------------------------------------------------------------

FULL_DISK_CALLS: dict[str, tuple[Callable[[SessionStore], object], type[StorageError]]] = {
    "append": (lambda s: s.append("s", UserMessage(content=BIG)), DurabilityError),
    "append_many": (lambda s: s.append_many("s", [UserMessage(content=BIG), UserMessage(content="y")]),
                    DurabilityError),
    "update_session": (lambda s: s.update_session("s", title="renamed", metadata={"k": BIG}), StorageError),
    "snapshot": (lambda s: s.snapshot("s", CompactedMessage(content=BIG), 2, 0), StorageError),
    "checkpoint": (lambda s: s.checkpoint("s", [UserMessage(content=BIG)]), DurabilityError),
    "record_usage": (lambda s: s.record_usage("s", {"input_tokens": 1, "note": BIG}), DurabilityError),
}  # fmt: skip


@pytest.mark.parametrize("call", sorted(FULL_DISK_CALLS))
def test_full_disk_raises_a_storage_error_with_enospc_and_changes_nothing(
    small_disk: Path, call: str
) -> None:
    """On a full disk each writing call raises ENOSPC as a StorageError; after space is freed it works."""
    root = small_disk / "store"
    store = _session(root)
    before = _tree(small_disk)
    filler = _fill(small_disk)
    method, cls = FULL_DISK_CALLS[call]
    with pytest.raises(cls) as info:
        method(store)
    _assert_storage_error(info.value, errno.ENOSPC)
    assert _tree(small_disk) == before  # no partial record, no temporary file left
    assert [r.sequence for r in store.records("s")] == [1, 2]
    filler.unlink()
    method(store)  # once there is room the same call succeeds, without reopening the store
    assert store.load("s").last_sequence == {"append": 3, "append_many": 4, "checkpoint": 3}.get(call, 2)
    store.close()


def test_full_disk_first_append_of_a_new_session_raises_enospc_and_leaves_no_record(small_disk: Path) -> None:
    """A new session's first append on a full disk raises ENOSPC; once freed, the session starts at 1."""
    root = small_disk / "store"
    store = _session(root)
    filler = _fill(small_disk)
    with pytest.raises(StorageError) as info:
        store.append("new", UserMessage(content=BIG), title="new one")
    _assert_storage_error(info.value, errno.ENOSPC)
    assert not store.load("new").raw_tail
    assert (
        not [name for name in os.listdir(root / "new") if ".tmp" in name] if (root / "new").exists() else True
    )
    filler.unlink()
    assert store.append("new", UserMessage(content=BIG), title="new one") == 1
    summary = store.get_session("new")
    assert summary is not None and summary.title == "new one"
    store.close()


def test_full_disk_on_a_fresh_store_raises_enospc(small_disk: Path) -> None:
    """The very first write of a store (its root, .gitignore, session) on a full disk is ENOSPC."""
    filler = _fill(small_disk)
    store = SessionStore(small_disk / "store")
    with pytest.raises(StorageError) as info:
        store.append("s", UserMessage(content=BIG))
    _assert_storage_error(info.value, errno.ENOSPC)
    filler.unlink()
    assert store.append("s", UserMessage(content=BIG)) == 1
    store.close()


def test_full_disk_async_append_raises_the_same_error(small_disk: Path) -> None:
    """The async store raises the same DurabilityError with ENOSPC."""
    root = small_disk / "store"
    _session(root).close()
    filler = _fill(small_disk)

    async def append() -> int:
        async with AsyncSessionStore(root) as astore:
            return await astore.append("s", UserMessage(content=BIG))

    with pytest.raises(DurabilityError) as info:
        asyncio.run(append())
    _assert_storage_error(info.value, errno.ENOSPC)
    filler.unlink()
    assert asyncio.run(append()) == 3


# ---------------------------------------------------------------------------------------
# EIO: failing C calls, through libfiu
# ---------------------------------------------------------------------------------------

#: case -> (the error class expected, whether the files must stay as they were)
EIO_CASES: dict[str, tuple[str | None, bool]] = {
    "append-write": ("DurabilityError", True),
    "append-fdatasync": ("DurabilityError", False),  # the bytes were written; the fsync failed
    "append-new-session": ("StorageError", False),  # the new session's directory may stay
    "append_many": ("DurabilityError", True),
    "update_session": ("StorageError", True),
    "snapshot": ("StorageError", True),
    "checkpoint": ("DurabilityError", True),
    "record_usage": ("DurabilityError", True),
    "delete_session": ("StorageError", False),
    "load": ("StorageError", True),
    "get_session": ("StorageError", True),
    "list_sessions": ("StorageError", True),
    "records-while-iterating": ("StorageError", True),
    "usage-while-iterating": ("StorageError", True),
    "async-records": ("StorageError", True),
    "verify": (None, True),  # reports the session as unreadable instead of raising
}


@functools.cache
def _fiu_available() -> str | None:
    if shutil.which("fiu-run") is None:
        return "libfiu is not installed (apt-get install fiu-utils)"
    probe = subprocess.run(
        ["fiu-run", "-x", "-f", "", sys.executable, "-c", "import ctypes; ctypes.CDLL('libfiu.so.0')"],
        capture_output=True,
        text=True,
        check=False,
    )
    if probe.returncode != 0:
        return f"fiu-run cannot run Python here: {probe.stderr.strip()[-200:]}"
    return None


@pytest.mark.parametrize("case", sorted(EIO_CASES))
def test_io_error_raises_a_storage_error_with_eio(root: Path, case: str) -> None:
    """A failing write, fsync, read or unlink (EIO) is a StorageError with errno EIO, never a bare OSError."""
    why = _fiu_available()
    if why is not None:
        pytest.skip(why)
    _session(root).close()
    before = read_tree(root)
    done = subprocess.run(
        ["fiu-run", "-x", "-f", "", sys.executable, str(FIU_CHILD), str(root), case],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout.splitlines()[-1])
    expected, unchanged = EIO_CASES[case]
    if expected is None:
        assert outcome["raised"] is None and outcome["problem_kinds"] == ["unreadable"], outcome
    else:
        assert outcome["raised"] == expected, outcome
        assert outcome["library_error"] and outcome["oserror"], outcome
        assert outcome["errno"] == errno.EIO and outcome["cause_errno"] == errno.EIO, outcome
        assert outcome["filename"] and outcome["filename"].startswith(str(root)), outcome
    if unchanged:
        assert read_tree(root) == before
    # A delete renames the session directory away before it unlinks anything (spec §9.5):
    # an unlink that fails comes after the session is gone, never with half of it left.
    kept = [] if case == "delete_session" else [1, 2]
    assert [r.sequence for r in SessionStore(root).records("s")][:2] == kept


# ---------------------------------------------------------------------------------------
# Read-only: chmod as a user that is not root, and a read-only mount
# ---------------------------------------------------------------------------------------

READ_CALLS: dict[str, Callable[[SessionStore], object]] = {
    "load": lambda s: len(s.load("s").raw_tail),
    "records": lambda s: [r.sequence for r in s.records("s")],
    "list_sessions": lambda s: [x.session_id for x in s.list_sessions()],
    "get_session": lambda s: s.get_session("s").title,  # type: ignore[union-attr]
    "usage_totals": lambda s: s.usage_totals("s").input_tokens,
    "verify": lambda s: [p.kind for p in s.verify()],
}
READ_RESULTS = {
    "load": 2, "records": [1, 2], "list_sessions": ["s"], "get_session": "greeting", "usage_totals": 3,
    "verify": [],
}  # fmt: skip
WRITE_CALLS: dict[str, Callable[[SessionStore], object]] = {
    "append": lambda s: s.append("s", UserMessage(content="x")),
    "append-new-session": lambda s: s.append("new", UserMessage(content="x")),
    "append_many": lambda s: s.append_many("s", [UserMessage(content="x")]),
    "update_session": lambda s: s.update_session("s", title="renamed"),
    "snapshot": lambda s: s.snapshot("s", CompactedMessage(content="c"), 2, 0),
    "checkpoint": lambda s: s.checkpoint("s", [UserMessage(content="x")]),
    "record_usage": lambda s: s.record_usage("s", ModelUsage(input_tokens=1)),
    "delete_session": lambda s: s.delete_session("s"),
    "async-append": lambda s: asyncio.run(_async_append(s.root)),
}


async def _async_append(root: str) -> int:
    async with AsyncSessionStore(root, lock_timeout=5) as astore:
        return await astore.append("s", UserMessage(content="x"))


def _outcome(call: Callable[[SessionStore], object], store: SessionStore) -> dict[str, Any]:
    try:
        return {"result": call(store)}
    except Exception as exc:  # noqa: BLE001 - judged by the test
        return {
            "raised": type(exc).__name__,
            "permission": isinstance(exc, PermissionError),
            "storage": isinstance(exc, StoragePermissionError),
            "errno": getattr(exc, "errno", None),
            "cause_errno": getattr(exc.__cause__, "errno", None),
            "filename": getattr(exc, "filename", None),
        }


def _run_all(root: Path) -> dict[str, dict[str, Any]]:
    store = SessionStore(root, lock_timeout=5)
    calls = {**READ_CALLS, **WRITE_CALLS}
    return {name: _outcome(call, store) for name, call in calls.items()}


def _check_read_only(outcomes: dict[str, dict[str, Any]], code: int, root: Path) -> None:
    for name in READ_CALLS:
        assert outcomes[name] == {"result": READ_RESULTS[name]}, (name, outcomes[name])
    for name in WRITE_CALLS:
        outcome = outcomes[name]
        assert outcome.get("raised") == "StoragePermissionError", (name, outcome)
        assert outcome["permission"] and outcome["storage"], (name, outcome)
        assert outcome["errno"] == code and outcome["cause_errno"] == code, (name, outcome)
        assert outcome["filename"] and outcome["filename"].startswith(str(root)), (name, outcome)


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory any user may enter (pytest's own tmp_path is private to root)."""
    path = Path(tempfile.mkdtemp(prefix="jsonl-store-ro-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        for dirpath, dirnames, _ in os.walk(path):
            for name in dirnames:
                os.chmod(os.path.join(dirpath, name), 0o755)
        shutil.rmtree(path, ignore_errors=True)


def _in_child_as(uid: int, action: Callable[[], object]) -> Any:
    """Run ``action`` in a forked child that dropped root; return what it returned (as JSON).

    A fork, not a new interpreter: the interpreter lives under /root, which the user the
    child becomes cannot read. Everything the action needs is imported before the fork.
    """
    read_end, write_end = os.pipe()
    with warnings.catch_warnings():
        # Python 3.12+ warns about fork() in a process with threads (a lock another thread
        # held stays held in the child). The child takes none of the parent's locks: it
        # only runs store calls, which make their own.
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        status = 1
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            data = json.dumps(action()).encode()
            while data:
                data = data[os.write(write_end, data) :]
            status = 0
        except BaseException:  # noqa: BLE001 - the child must reach os._exit whatever happens
            traceback.print_exc()  # the parent's failure shows it on captured stderr
        finally:
            os._exit(status)
    os.close(write_end)
    chunks = []
    while chunk := os.read(read_end, 1 << 16):
        chunks.append(chunk)
    os.close(read_end)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "the child failed"
    return json.loads(b"".join(chunks))


def test_chmod_read_only_store_reads_and_refuses_writes_with_permission_error(shared_dir: Path) -> None:
    """A store its user may not write (chmod -R a-w) still reads; every write raises PermissionError (EACCES)."""
    if os.geteuid() != 0:
        pytest.skip("dropping to another user needs root")
    root = shared_dir / "store"
    _session(root).close()
    asyncio.run(_warm_up_async(root))  # imports what asyncio loads lazily, before the fork
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames:
            path = os.path.join(dirpath, name)
            os.chmod(path, os.stat(path).st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) | 0o444)
        for name in dirnames:
            os.chmod(os.path.join(dirpath, name), 0o555)
    root.chmod(0o555)
    before = read_tree(root)
    outcomes = _in_child_as(NOBODY, lambda: _run_all(root))
    _check_read_only(outcomes, errno.EACCES, root)
    assert read_tree(root) == before


async def _warm_up_async(root: Path) -> None:
    async with AsyncSessionStore(root) as astore:
        await astore.get_session("s")


def test_read_only_mount_reads_and_refuses_writes_with_permission_error(tmp_path: Path) -> None:
    """A store on a file system mounted read-only still reads; every write raises PermissionError (EROFS)."""
    disk = tmp_path / "disk"
    why = _mount_tmpfs(disk, "size=1m")
    if why is not None:
        pytest.skip(why)
    try:
        root = disk / "store"
        _session(root).close()
        remount = subprocess.run(
            ["mount", "-o", "remount,ro", str(disk)], capture_output=True, text=True, check=False
        )
        if remount.returncode != 0:
            pytest.skip(f"remounting read-only refused: {remount.stderr.strip()}")
        before = read_tree(root)
        _check_read_only(_run_all(root), errno.EROFS, root)
        assert read_tree(root) == before
    finally:
        _umount(disk)


def test_restoring_a_converted_log_on_a_full_disk_says_what_it_needs_and_keeps_the_log(
    small_disk: Path,
) -> None:
    """An append that must first restore a \\r\\n log, with no room for the copy: ENOSPC, log intact."""
    root = small_disk / "store"
    store = _session(root)
    for n in range(40):
        store.append("s", UserMessage(content=f"record {n} " + "y" * 500))
    store.close()
    log = root / "s" / "messages.jsonl"
    damage_file(log, crlf)
    before = _tree(root)
    filler = _fill(small_disk)
    with pytest.raises(StorageError) as info:
        SessionStore(root, on_problem=lambda problem: None).append("s", UserMessage(content="after"))
    _assert_storage_error(info.value, errno.ENOSPC)
    assert "free space" in str(info.value)
    assert _tree(root) == before  # the converted log as it was, no temporary copy left
    filler.unlink()
    fresh = SessionStore(root, on_problem=lambda problem: None)
    assert fresh.append("s", UserMessage(content="after")) == 43
    assert b"\r" not in log.read_bytes()
