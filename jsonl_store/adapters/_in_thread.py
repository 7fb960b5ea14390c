"""A blocking store call awaited from a coroutine: run in a worker thread, seen through.

`run_to_completion` is how the adapters' writes leave the event loop. Two things matter:

- **A write that started is not abandoned.** When the awaiting task is cancelled, the
  call still runs to its end and the cancellation is raised once its outcome is known,
  so a caller never sees "cancelled" for a write that then lands (the Agents SDK's
  ``_await_mutation`` in ``agents/memory/sqlite_session.py`` does the same for
  ``SQLiteSession``).
- **The hand-off costs as little as a thread hop can.** ``asyncio.to_thread`` (and
  ``run_in_executor``) report the outcome through a ``concurrent.futures.Future``
  chained to an asyncio one: the worker settles the first, takes its condition lock,
  runs its callbacks, and wakes the loop once more to copy the outcome across, and the
  loop steps through the chained future and a wrapping task before the caller resumes.
  Here the call goes straight to a thread pool of this module's (`_pool`), whose own
  future nobody waits on, and the worker wakes the loop once, with the outcome itself,
  as soon as the call returns. On a durable append, whose own cost is one
  ``fdatasync``, that hop is what the adapter adds (``benchmarks/adapter_overhead.py``
  races the two).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from .. import _process

T = TypeVar("T")


class _Pool:
    """The worker threads `run_to_completion` hands calls to, made on first use.

    A pool of its own rather than the event loop's default executor: only the pool's
    ``submit`` is wanted, not ``run_in_executor``'s chained future and its second wake-up
    of the loop. It grows as `ThreadPoolExecutor` does (a thread per call waiting, up to
    its default limit), so the writes of several sessions still run side by side, and
    its threads are joined when the interpreter exits, as the default executor's are.
    """

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None

    def submit(self, work: Callable[[], None]) -> None:
        executor = self._executor
        if executor is None:
            with self._mutex:
                if self._executor is None:
                    self._executor = ThreadPoolExecutor(thread_name_prefix="jsonl-store-adapter")
                executor = self._executor
        executor.submit(work)

    def forget(self) -> None:
        """In a forked child: the parent's threads are not there, though the executor counts
        them idle and would queue work for them forever; start again with none."""
        self._mutex = threading.Lock()
        self._executor = None


_pool = _Pool()
_process.register("adapters' worker threads", _pool.forget)


def _settle(outcome: asyncio.Future[T], result: T | None, error: BaseException | None) -> None:
    """Give ``outcome`` the call's result or error (on the loop's thread)."""
    if outcome.done():
        return  # nothing else settles it; kept so a loop callback can never raise
    if error is None:
        outcome.set_result(result)  # type: ignore[arg-type]  # None only when error is set
    elif isinstance(error, StopIteration):
        # A future refuses a StopIteration (it would end the awaiting coroutine's frame
        # instead of raising: PEP 479); as a RuntimeError it reaches the caller.
        outcome.set_exception(RuntimeError(f"the call raised StopIteration: {error!r}"))
    else:
        outcome.set_exception(error)


async def run_to_completion(call: Callable[[], T]) -> T:
    """``call()`` in a worker thread (`_pool`); its result, or its error raised here.

    If the awaiting task is cancelled meanwhile, this waits for the call's outcome and
    then raises the cancellation (the call's result or error is dropped: the caller asked
    to stop, and the write it started is complete).
    """
    loop = asyncio.get_running_loop()
    outcome: asyncio.Future[T] = loop.create_future()

    def work() -> None:
        try:
            result = call()
        except BaseException as error:  # noqa: BLE001 (handed to the awaiting coroutine, raised there)
            loop.call_soon_threadsafe(_settle, outcome, None, error)
        else:
            loop.call_soon_threadsafe(_settle, outcome, result, None)

    # The executor's own future is not awaited: `work` reports through `outcome`.
    _pool.submit(work)
    cancelled: asyncio.CancelledError | None = None
    while not outcome.done():
        try:
            await asyncio.wait((outcome,))
        except asyncio.CancelledError as exc:
            cancelled = cancelled or exc
    if cancelled is not None:
        if not outcome.cancelled():
            outcome.exception()  # retrieved, so asyncio does not log it as never retrieved
        raise cancelled from None
    return outcome.result()
