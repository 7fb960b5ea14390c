"""After a real ``os.fork()``, every piece of process-wide state `_process` registers is fresh in the child.

The parent holds every registered lock and fills every registered cache at the fork, as a
thread of the parent might; the child, whose only thread is the forking one, must find
each lock free and each cache empty, and use the store it inherited. Children leave with
``os._exit``, reporting through a pipe, as in test_fork.py.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import traceback
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from helpers import fails_after

from jsonl_store import SessionStore, UserMessage, _process
from jsonl_store._format import depth as _depth
from jsonl_store._format import ids as _ids
from jsonl_store._format import lines as _lines
from jsonl_store._io.lock import FileLock
from jsonl_store._session.catalog_schema import has_fts5
from jsonl_store._session.forks import SHARED_ABSENCES
from jsonl_store._session.handles import SHARED_LISTINGS
from jsonl_store._text import find as _find
from jsonl_store.adapters import _in_thread
from jsonl_store.testing import _simfs

SID = "parent"
#: Every name `_process.registered()` may hold, each checked by the child below: a piece of
#: state registered later must be checked here too, or this test fails.
CHECKED = {
    "log writers",
    "file locks",
    "stores",
    "descriptor caches",
    "uuid7 clock and random tails",
    "deep-stack decode lock",
    "simulated path normalisation",
    "rarest byte of recent needles",
    "CRC-32 zero-byte operators",
    "catalog FTS5 probe",
    "snapshot listings",
    "fork-less directories",
    "adapters' worker threads",
}


@pytest.fixture(autouse=True)
def no_hang() -> Iterator[None]:
    """Turns a child that never reports (a lock left held in the child) into a failure after 60 s."""
    with fails_after(60, "a forked child did not report in time"):
        yield


def _in_child(child: Callable[[], str]) -> str:
    """Run ``child`` in a forked process and return what it reported."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        signal.alarm(0)
        os.close(read)
        try:
            report = child()
        except BaseException:  # noqa: BLE001 (a forked child must report and leave by os._exit, always)
            report = "error: " + traceback.format_exc()
        os.write(write, report.encode())
        os._exit(0)
    os.close(write)
    chunks = []
    try:
        while chunk := os.read(read, 65536):
            chunks.append(chunk)
    finally:
        os.close(read)
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    return b"".join(chunks).decode()


def _free(lock: threading.Lock) -> bool:
    if not lock.acquire(blocking=False):
        return False
    lock.release()
    return True


def _held(stack: ExitStack, lock: threading.Lock) -> None:
    lock.acquire()
    stack.callback(lock.release)


def _stale(store: SessionStore, file_lock: FileLock, parent: int) -> list[str]:
    """What the child finds not fresh: an empty list when every registered state was renewed."""
    stale = [f"unchecked registration {name!r}" for name in set(_process.registered()) - CHECKED]
    if _process.Current.pid in (parent, 0) or _process.Current.pid != os.getpid():
        stale.append("pid")
    stale += [f"writer mutex {w!r}" for w in _process.LOG_WRITERS if not _free(w.mutex)]  # type: ignore[attr-defined]
    if (file_lock._fd, file_lock._depth) != (-1, 0):
        stale.append("file lock still has the parent's descriptor")
    handles = store._handles
    if not _free(handles._mutex) or not all(_free(s.mutex) for s in handles._sessions.values()):
        stale.append("store mutexes")
    if store._handles not in set(_process.DESCRIPTOR_CACHES):
        stale.append("the store's descriptor cache is no longer registered")
    if not _free(_ids._clock.lock) or _ids._tails:
        stale.append("uuid7 clock or tails")
    if not _free(_depth._DeepStack.mutex):
        stale.append("deep-stack lock")
    if _simfs._normalized:
        stale.append("simulated path cache")
    if _find.rarest.cache_info().currsize or _lines._zeros_operators.cache_info().currsize:
        stale.append("rarest-byte or CRC-32 operator cache")
    if has_fts5.cache_info().currsize:
        stale.append("FTS5 probe cache")
    if SHARED_LISTINGS._entries or SHARED_ABSENCES._keys:
        stale.append("snapshot listings or fork-less directories")
    return stale + _stale_above_the_store(store)


def _stale_above_the_store(store: SessionStore) -> list[str]:
    """`_stale` for the catalog and the adapters' worker threads."""
    stale = []
    if store._catalog is None or not _free(store._catalog._lock):
        stale.append("catalog lock")
    if _in_thread._pool._executor is not None or not _free(_in_thread._pool._mutex):
        stale.append("adapters' worker threads")
    return stale


def test_a_forked_child_finds_every_registered_lock_free_and_every_cache_empty(tmp_path: Path) -> None:
    """The parent holds every registered lock and fills every cache at the fork; the child finds them fresh and appends."""
    store = SessionStore(tmp_path, durability="none")
    store.append(SID, UserMessage(content="before the fork"))  # a writer, a session lock, uuid7 tails
    _simfs._normalize("/a/../b")
    _find.rarest(b"needle")
    _lines._zeros_operators()
    has_fts5()
    asyncio.run(_in_thread.run_to_completion(lambda: None))  # the adapters' pool, with an idle thread
    # Entries as a directory unchanged for long leaves them (the parent's, to be forgotten).
    SHARED_LISTINGS._entries[str(tmp_path / SID)] = ((0, 0, 0, 0), (1,), False)
    SHARED_ABSENCES._keys[str(tmp_path / SID)] = (0, 0, 0, 0)
    file_lock = FileLock(
        str(tmp_path / "held.lock"), 0.05, lambda p: os.open(p, os.O_RDWR | os.O_CREAT, 0o600)
    )
    parent = os.getpid()

    def child() -> str:
        stale = _stale(store, file_lock, parent)
        try:
            with file_lock:
                stale.append("the child took a lock its parent holds")
        except TimeoutError:
            pass
        store.append(SID, UserMessage(content="from the child"))
        return "; ".join(stale) or "ok"

    with ExitStack() as stack:
        stack.enter_context(file_lock)
        for writer in _process.LOG_WRITERS:
            _held(stack, writer.mutex)  # type: ignore[attr-defined]
        _held(stack, store._handles._mutex)
        for session in store._handles._sessions.values():
            _held(stack, session.mutex)
        _held(stack, _ids._clock.lock)
        _held(stack, _depth._DeepStack.mutex)
        assert store._catalog is not None
        _held(stack, store._catalog._lock)
        _held(stack, _in_thread._pool._mutex)
        assert _ids._tails and _simfs._normalized
        report = _in_child(child)
    assert report == "ok"
    assert [r.message.content for r in store.records(SID)] == ["before the fork", "from the child"]  # type: ignore[union-attr]
