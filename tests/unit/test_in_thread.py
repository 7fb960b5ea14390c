"""The adapters' hand-off to a worker thread: results and errors come back, a started write is seen through."""

from __future__ import annotations

import asyncio
import os
import signal
import threading

import pytest

from jsonl_store import LockTimeout
from jsonl_store.adapters._in_thread import run_to_completion


def test_the_result_comes_back_from_a_worker_thread() -> None:
    """The call runs off the event loop's thread and its result is what the coroutine returns."""
    loop_thread = threading.get_ident()

    async def main() -> tuple[int, int]:
        return await run_to_completion(lambda: (threading.get_ident(), 42))

    ran_in, result = asyncio.run(main())
    assert result == 42 and ran_in != loop_thread


def test_the_calls_error_is_raised_with_its_own_type_and_fields() -> None:
    """A `JsonlStoreError` raised in the thread reaches the awaiting coroutine as itself."""

    def fails() -> None:
        raise LockTimeout("busy", session_id="s")

    with pytest.raises(LockTimeout) as caught:
        asyncio.run(run_to_completion(fails))
    assert caught.value.session_id == "s" and isinstance(caught.value, TimeoutError)


def test_a_stop_iteration_reaches_the_caller_as_a_runtime_error() -> None:
    """A call raising StopIteration does not hang the caller: it gets a RuntimeError naming it."""

    def stops() -> None:
        raise StopIteration("done")

    with pytest.raises(RuntimeError, match="StopIteration"):
        asyncio.run(run_to_completion(stops))


def test_a_cancelled_caller_waits_for_the_started_call_then_raises_the_cancellation() -> None:
    """Cancelling the awaiting task leaves the call running; the task ends, cancelled, only after it."""
    started, release = threading.Event(), threading.Event()
    finished: list[str] = []

    def write() -> str:
        started.set()
        release.wait()
        finished.append("written")
        return "ok"

    async def main() -> None:
        task = asyncio.ensure_future(run_to_completion(write))
        await asyncio.to_thread(started.wait)
        task.cancel()
        for _ in range(20):  # the loop runs on; the task does not end while the write runs
            await asyncio.sleep(0)
        assert not task.done() and finished == []
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert finished == ["written"]

    asyncio.run(main())


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_gets_worker_threads_of_its_own() -> None:
    """After the parent used the hand-off, a forked child's call still runs (the parent's idle threads are not in the child)."""
    assert asyncio.run(run_to_completion(lambda: 1)) == 1  # the parent's pool now has an idle thread
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through its exit status only
        code = 1
        try:
            signal.alarm(10)  # a call queued for a thread that is not there would wait forever
            code = 0 if asyncio.run(run_to_completion(lambda: 42)) == 42 else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
