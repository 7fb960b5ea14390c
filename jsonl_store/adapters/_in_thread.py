"""A blocking store call awaited from a coroutine: run in a worker thread, seen through.

`run_to_completion` is how the adapters' writes leave the event loop. Two things matter:

- **A write that started is not abandoned.** When the awaiting task is cancelled, the
  call still runs to its end and the cancellation is raised once its outcome is known,
  so a caller never sees "cancelled" for a write that then lands (the Agents SDK's
  ``_await_mutation`` in ``agents/memory/sqlite_session.py`` does the same for
  ``SQLiteSession``).
- **The hand-off costs as little as a thread hop can.** ``asyncio.to_thread`` (and
  ``run_in_executor``'s own future) report the outcome through a
  ``concurrent.futures.Future`` chained to an asyncio one: the worker settles the
  first, takes its condition lock, runs its callbacks, and only then wakes the loop, and
  the loop steps through the chained future and a wrapping task before the caller
  resumes. Here the worker wakes the loop with the outcome itself, as soon as the call
  returns. On a durable append, whose own cost is one ``fdatasync``, that hop is what
  the adapter adds (``benchmarks/adapter_overhead.py`` races the two).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


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
    """``call()`` in the event loop's default executor; its result, or its error raised here.

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
    loop.run_in_executor(None, work)
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
