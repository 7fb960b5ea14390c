"""After ``os.fork()``, the child uses the store it inherited, locks included.

The child gets descriptors of its own (sharing the parent's would share its flocks), and
a lock its parent held at the fork is not the child's: it waits for it like any other
process. Children always leave with ``os._exit``, reporting through a pipe.
"""

from __future__ import annotations

import os
import signal
import threading
import traceback
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from helpers import classes, fails_after

from jsonl_store import LockTimeout, SessionStore, UserMessage

SID = "forked"
EACH = 40


@pytest.fixture(autouse=True)
def no_hang() -> Iterator[None]:
    """Turns a child that never reports (a deadlock in the child) into a failure after 60 s."""
    with fails_after(60, "a forked child did not report in time"):
        yield


def _fork(child: Callable[[], str]) -> tuple[int, int]:
    """Run ``child`` in a forked process; return its pid and the read end of its report pipe."""
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
    return pid, read


def _report(pid: int, read: int) -> str:
    chunks = []
    try:
        while chunk := os.read(read, 65536):
            chunks.append(chunk)
    except BaseException:
        os.kill(pid, signal.SIGKILL)  # a hung child must not outlive the test
        os.waitpid(pid, 0)
        raise
    finally:
        os.close(read)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    return b"".join(chunks).decode()


def test_forked_child_appends_and_updates_metadata_through_the_inherited_store(tmp_path: Path) -> None:
    """Parent and child append and rename through one inherited store at once; every record is there once."""
    store = SessionStore(tmp_path, durability="none")
    store.append(SID, UserMessage(content="before the fork"))
    store.update_session(SID, metadata={"warm": True})  # the lock object exists before the fork

    def child() -> str:
        for i in range(EACH):
            store.append(SID, UserMessage(content=f"child {i}"))
            store.update_session(SID, metadata={f"child-{i}": i})
        return "ok"

    pid, read = _fork(child)
    for i in range(EACH):
        store.append(SID, UserMessage(content=f"parent {i}"))
        store.update_session(SID, metadata={f"parent-{i}": i})
    assert _report(pid, read) == "ok"

    fresh = SessionStore(tmp_path)
    records = list(fresh.records(SID))
    assert [r.sequence for r in records] == list(range(1, 2 * EACH + 2))
    # Every record is a user turn (the comparison below counts them): its content is text.
    contents = sorted(m.content for m in classes(r.message for r in records) if isinstance(m, UserMessage))
    expected = sorted(
        ["before the fork"] + [f"{who} {i}" for who in ("child", "parent") for i in range(EACH)]
    )
    assert contents == expected
    metadata = fresh.get_session(SID).metadata  # type: ignore[union-attr]
    assert {f"{who}-{i}" for who in ("child", "parent") for i in range(EACH)} <= set(metadata)
    assert fresh.verify(SID) == []


def test_child_forked_while_the_parent_holds_the_lock_does_not_hold_it(tmp_path: Path) -> None:
    """A child forked inside the parent's session lock waits for it (LockTimeout), then takes it once released."""
    store = SessionStore(tmp_path, durability="none", lock_timeout=0.2)
    store.append(SID, UserMessage(content="x"))
    tried_read, tried_write = os.pipe()  # child -> parent: the first attempt is over
    go_read, go_write = os.pipe()  # parent -> child: the lock is released

    def child() -> str:
        outcome = []
        try:
            store.update_session(SID, title="while the parent holds it")
            outcome.append("entered")
        except LockTimeout:
            outcome.append("timed out")
        os.write(tried_write, b"t")
        os.read(go_read, 1)
        outcome.append(store.update_session(SID, title="after").title or "")
        return ",".join(outcome)

    with store._handles.lock(SID):
        pid, read = _fork(child)
        assert os.read(tried_read, 1) == b"t"
    os.write(go_write, b"g")
    assert _report(pid, read) == "timed out,after"
    assert store.get_session(SID).title == "after"  # type: ignore[union-attr]
    for fd in (tried_read, tried_write, go_read, go_write):
        os.close(fd)


def test_child_forked_while_another_thread_is_inside_the_store_can_use_it(tmp_path: Path) -> None:
    """A fork while another thread holds the store's mutexes (mid-call, here held by hand) leaves the child a working store."""
    store = SessionStore(tmp_path, durability="none")
    store.append(SID, UserMessage(content="before"))
    session = store._handles._sessions[SID]
    assert session.log is not None
    held, release = threading.Event(), threading.Event()

    def inside_a_call() -> None:
        with store._handles._mutex, session.mutex, session.log.mutex:  # type: ignore[union-attr]
            held.set()
            release.wait(30)

    thread = threading.Thread(target=inside_a_call)
    thread.start()
    assert held.wait(30)

    def child() -> str:
        first = store.append(SID, UserMessage(content="from the child"))
        other = store.append("other", UserMessage(content="a new session in the child"))
        return f"{first},{other}"

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # Python 3.12+ warns of fork with threads
            pid, read = _fork(child)
        assert _report(pid, read) == "2,1"
    finally:
        release.set()
        thread.join()
    assert store.append(SID, UserMessage(content="parent again")) == 3
