"""`AsyncSessionStore`: the same store for asyncio code, never blocking the event loop.

Each call runs the synchronous store's method in a worker thread (file I/O has no
portable non-blocking form); the iterators fetch records in batches so a long scan
costs one thread hop per batch, not per record.
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from datetime import datetime
from typing import Any, Concatenate, ParamSpec, Self, TypeVar

from ._format.records import RawMessageRecord
from ._io.fs import FileSystem
from ._log.blobs import DEFAULT_MAX_RECORD_BYTES, DEFAULT_THRESHOLD
from ._log.problems import Problem
from ._text.redactions import Redaction
from .store import Durability, RedactSetting, SessionStore

T = TypeVar("T")
R = TypeVar("R")
P = ParamSpec("P")
_BATCH = 256


def _in_thread(
    method: Callable[Concatenate[SessionStore, P], R],
) -> Callable[Concatenate[AsyncSessionStore, P], Coroutine[Any, Any, R]]:
    """The coroutine version of a `SessionStore` method: same signature, same errors.

    One wrapper instead of a hand-written copy per method, so the async store can never
    drift from the sync one (arguments, defaults, types and docstrings included).
    """

    @functools.wraps(method)
    async def run(self: AsyncSessionStore, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return await asyncio.to_thread(method, self.sync, *args, **kwargs)

    return run


class AsyncSessionStore:
    """`SessionStore` with coroutine methods and async iterators (same arguments, same errors)."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        durability: Durability = "fsync",
        lock_timeout: float = 30.0,
        on_problem: Callable[[Problem], None] | None = None,
        fs: FileSystem | None = None,
        clock: Callable[[], datetime] | None = None,
        ids: Callable[[], str] | None = None,
        redact: RedactSetting = True,
        blob_threshold: int = DEFAULT_THRESHOLD,
        max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
        on_redact: Callable[[Redaction], None] | None = None,
    ) -> None:
        self.sync = SessionStore(
            root,
            durability=durability,
            lock_timeout=lock_timeout,
            on_problem=on_problem,
            fs=fs,
            clock=clock,
            ids=ids,
            redact=redact,
            blob_threshold=blob_threshold,
            max_record_bytes=max_record_bytes,
            on_redact=on_redact,
        )

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    close = _in_thread(SessionStore.close)
    append = _in_thread(SessionStore.append)
    append_many = _in_thread(SessionStore.append_many)
    checkpoint = _in_thread(SessionStore.checkpoint)
    load = _in_thread(SessionStore.load)
    resume = _in_thread(SessionStore.resume)
    tail = _in_thread(SessionStore.tail)
    create_session = _in_thread(SessionStore.create_session)
    model_calls = _in_thread(SessionStore.model_calls)
    snapshot = _in_thread(SessionStore.snapshot)
    list_sessions = _in_thread(SessionStore.list_sessions)
    session_ids = _in_thread(SessionStore.session_ids)
    get_session = _in_thread(SessionStore.get_session)
    update_session = _in_thread(SessionStore.update_session)
    record_usage = _in_thread(SessionStore.record_usage)
    usage_totals = _in_thread(SessionStore.usage_totals)
    fork = _in_thread(SessionStore.fork)
    delete_session = _in_thread(SessionStore.delete_session)
    verify = _in_thread(SessionStore.verify)
    repair = _in_thread(SessionStore.repair)
    scan = _in_thread(SessionStore.scan)
    redact_session = _in_thread(SessionStore.redact_session)
    allow_findings = _in_thread(SessionStore.allow_findings)

    async def records(
        self, session_id: str, *, after: int = 0, containing: bytes | None = None
    ) -> AsyncIterator[RawMessageRecord]:
        """`SessionStore.records` as an async iterator, fetched in batches on a worker thread."""
        iterator = await asyncio.to_thread(
            lambda: self.sync.records(session_id, after=after, containing=containing)
        )
        async for record in _drain(iterator):
            yield record

    async def usage(self, session_id: str) -> AsyncIterator[dict[str, Any]]:
        """`SessionStore.usage` as an async iterator, fetched in batches on a worker thread."""
        iterator = await asyncio.to_thread(self.sync.usage, session_id)
        async for item in _drain(iterator):
            yield item


async def _drain(iterator: Iterator[T]) -> AsyncIterator[T]:
    """Pull ``iterator`` in batches on a worker thread; close it if the consumer stops early."""

    def batch() -> list[T]:
        out: list[T] = []
        for item in iterator:
            out.append(item)
            if len(out) >= _BATCH:
                break
        return out

    try:
        while True:
            items = await asyncio.to_thread(batch)
            if not items:
                return
            for item in items:
                yield item
    finally:
        close = getattr(iterator, "close", None)
        if close is not None:
            await asyncio.to_thread(close)
