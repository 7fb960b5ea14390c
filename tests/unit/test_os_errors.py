"""No bare OSError leaves the store: every file-system failure is a StorageError with its errno.

Each public method runs once per file-system call it makes, on the simulated disk, with
that one call failing (EIO, then ENOSPC); whatever the method does with the failure, what
reaches the caller is either success or one of this library's errors, and an ``OSError``
among them keeps the errno, the file name and the cause. Real disks, full and read-only,
are in ``tests/crash/test_io_faults.py``.
"""

from __future__ import annotations

import asyncio
import errno
import pickle
from collections.abc import Callable
from typing import Any

import pytest

from jsonl_store import (
    AssistantMessage,
    AsyncSessionStore,
    CompactedMessage,
    DurabilityError,
    JsonlStoreError,
    ModelUsage,
    SessionStore,
    StorageError,
    StorageFileNotFoundError,
    StoragePermissionError,
    UserMessage,
)
from jsonl_store._errors import storage_error
from jsonl_store.testing import SimulatedFileSystem

ROOT = "/store"
#: Every call of the file-system door the simulator can make fail.
OPS = ["open", "write", "ftruncate", "flock", "stat", "rename", "link", "unlink", "mkdir", "listdir",
       "fsync_dir", "fsync", "fdatasync"]  # fmt: skip
#: Enough to reach every call of each op one method makes (the loop stops earlier).
MAX_CALLS = 40
#: Methods that report a session the file system will not read as an ``unreadable``
#: problem instead of raising (README: "neither raises for damage").
REPORTS_INSTEAD = {"verify-one"}


def _session_with_everything(fs: SimulatedFileSystem) -> SessionStore:
    """A store holding session ``s``: records, a snapshot, usage, a title."""
    store = SessionStore(ROOT, fs=fs, lock_timeout=2)
    store.append("s", UserMessage(id="u1", content="hello"), title="greeting")
    store.append("s", AssistantMessage(id="a1", content="hi"), usage=ModelUsage(input_tokens=3))
    store.snapshot("s", CompactedMessage(id="c1", content="they greeted"), 2, 0)
    store.record_usage("s", {"input_tokens": 5, "model": "m"})
    store.append("s", UserMessage(id="u2", content="bye"))
    return store


SYNC_CALLS: dict[str, Callable[[SessionStore], object]] = {
    "append": lambda s: s.append("s", UserMessage(content="x")),
    "append-new-session": lambda s: s.append("t", UserMessage(content="x"), title="new"),
    "append_many": lambda s: s.append_many("s", [UserMessage(content="x"), UserMessage(content="y")]),
    "checkpoint": lambda s: s.checkpoint(
        "s", [UserMessage(id="u2", content="bye"), UserMessage(content="z")]
    ),
    "checkpoint-rewrite": lambda s: s.checkpoint("s", [CompactedMessage(id="c9", content="all of it")]),
    "load": lambda s: s.load("s"),
    "records": lambda s: list(s.records("s")),
    "records-after": lambda s: list(s.records("s", after=2)),
    "snapshot": lambda s: s.snapshot("s", CompactedMessage(content="later"), 3, 1),
    "list_sessions": lambda s: s.list_sessions(),
    "get_session": lambda s: s.get_session("s"),
    "update_session": lambda s: s.update_session("s", title="renamed", metadata={"k": 1}),
    "record_usage": lambda s: s.record_usage("s", ModelUsage(output_tokens=2)),
    "record_usage-new-session": lambda s: s.record_usage("t", ModelUsage(output_tokens=2)),
    "usage": lambda s: list(s.usage("s")),
    "usage_totals": lambda s: s.usage_totals("s"),
    "delete_session": lambda s: s.delete_session("s"),
    "verify": lambda s: s.verify(),
    "verify-one": lambda s: s.verify("s"),
    "repair": lambda s: s.repair("s"),
}


def _check_outcome(outcome: BaseException | None, code: int, where: str) -> None:
    """Success, or a library error; an OSError among those keeps errno, file name and cause."""
    if outcome is None:
        return
    assert isinstance(outcome, JsonlStoreError), f"{where}: bare {outcome!r}"
    if isinstance(outcome, StorageError):
        assert outcome.errno == code, where
        assert isinstance(outcome.__cause__, OSError) and outcome.__cause__.errno == code, where
        assert outcome.filename is not None and outcome.filename.startswith(ROOT), where
        assert outcome.strerror, where
        back = pickle.loads(pickle.dumps(outcome))
        assert (type(back), back.errno, back.filename, str(back)) == (
            type(outcome),
            outcome.errno,
            outcome.filename,
            str(outcome),
        ), where


@pytest.mark.parametrize("code", [errno.EIO, errno.ENOSPC], ids=["EIO", "ENOSPC"])
@pytest.mark.parametrize("method", sorted(SYNC_CALLS))
def test_every_single_io_failure_surfaces_as_a_storage_error(method: str, code: int) -> None:
    """Failing each file-system call of a method in turn never lets a bare OSError out."""
    failures = 0
    for op in OPS:
        for nth in range(MAX_CALLS):
            fs = SimulatedFileSystem()
            store = _session_with_everything(fs)
            fs.fail_next(op, code, after=nth)
            try:
                SYNC_CALLS[method](store)
                outcome: BaseException | None = None
            except Exception as exc:  # noqa: BLE001 - the point is to see what escapes
                outcome = exc
            if not fs.faults_fired:
                break  # the method makes fewer than nth + 1 calls of this op
            _check_outcome(outcome, code, f"{method}: {op} #{nth + 1}")
            failures += isinstance(outcome, StorageError)
    assert failures or method in REPORTS_INSTEAD, f"{method} never met a failure it had to report"


def test_failed_fsync_is_a_durability_error_with_the_errno() -> None:
    """A failed fdatasync of an append is a DurabilityError whose errno says which failure it was."""
    fs = SimulatedFileSystem()
    store = _session_with_everything(fs)
    fs.fail_next("fdatasync", errno.EIO, path=ROOT + "/s/messages.jsonl")
    with pytest.raises(DurabilityError) as info:
        store.append("s", UserMessage(content="x"))
    assert info.value.errno == errno.EIO and info.value.filename == ROOT + "/s/messages.jsonl"
    assert isinstance(info.value.__cause__, OSError)
    with pytest.raises(DurabilityError) as again:  # refused until close(), with the same errno
        store.append("s", UserMessage(content="y"))
    assert again.value.errno == errno.EIO and again.value.__cause__ is info.value.__cause__


def test_short_write_is_a_durability_error_saying_the_disk_is_full() -> None:
    """A write the disk cut short (no errno of its own) reports ENOSPC."""
    fs = SimulatedFileSystem()
    store = _session_with_everything(fs)
    fs.fail_next("write", short_write=5, path=ROOT + "/s/messages.jsonl")
    with pytest.raises(DurabilityError) as info:
        store.append("s", UserMessage(content="x"))
    assert info.value.errno == errno.ENOSPC and "short write" in str(info.value)


ASYNC_CALLS: dict[str, Callable[[AsyncSessionStore], Any]] = {
    "append": lambda s: s.append("s", UserMessage(content="x")),
    "update_session": lambda s: s.update_session("s", title="renamed"),
    "snapshot": lambda s: s.snapshot("s", CompactedMessage(content="later"), 3, 1),
    "checkpoint": lambda s: s.checkpoint("s", [UserMessage(content="z")]),
    "delete_session": lambda s: s.delete_session("s"),
    "list_sessions": lambda s: s.list_sessions(),
    "records": lambda s: _collect(s.records("s")),
    "usage": lambda s: _collect(s.usage("s")),
}


async def _collect(iterator: Any) -> list[Any]:
    return [item async for item in iterator]


@pytest.mark.parametrize("method", sorted(ASYNC_CALLS))
def test_async_store_raises_the_same_storage_errors(method: str) -> None:
    """The async store (iterators included) lets the sync store's StorageError through unchanged."""
    fs = SimulatedFileSystem()
    astore = AsyncSessionStore(ROOT)
    astore.sync = _session_with_everything(fs)  # the async store runs this sync store's methods
    op = {"append": "write", "list_sessions": "listdir", "delete_session": "listdir"}.get(method, "open")
    fs.fail_next(op, errno.EIO, after=0)
    with pytest.raises(StorageError) as info:
        asyncio.run(ASYNC_CALLS[method](astore))
    assert info.value.errno == errno.EIO and isinstance(info.value.__cause__, OSError)


@pytest.mark.parametrize(
    ("raised", "cls", "builtin"),
    [
        (PermissionError(errno.EACCES, "Permission denied", "/x"), StoragePermissionError, PermissionError),
        (OSError(errno.EROFS, "Read-only file system", "/x"), StoragePermissionError, PermissionError),
        (
            FileNotFoundError(errno.ENOENT, "No such file or directory", "/x"),
            StorageFileNotFoundError,
            FileNotFoundError,
        ),
        (OSError(errno.ENOSPC, "No space left on device", "/x"), StorageError, OSError),
        (OSError(errno.EIO, "Input/output error", "/x"), StorageError, OSError),
    ],
    ids=["EACCES", "EROFS", "ENOENT", "ENOSPC", "EIO"],
)
def test_storage_error_keeps_the_builtin_a_caller_would_catch(
    raised: OSError, cls: type[StorageError], builtin: type[OSError]
) -> None:
    """Permission and missing-file failures stay catchable as PermissionError / FileNotFoundError."""
    error = storage_error(raised, "update_session('s')", session_id="s")
    assert type(error) is cls and isinstance(error, builtin) and isinstance(error, JsonlStoreError)
    assert (error.errno, error.strerror, error.filename, error.path) == (
        raised.errno,
        raised.strerror,
        "/x",
        "/x",
    )
    assert str(error) == f"update_session('s') failed: {raised.strerror} (/x)"
