"""`AsyncSessionStore`: the same store for asyncio code, never blocking the event loop.

Each call runs the synchronous store's method in a worker thread (file I/O has no
portable non-blocking form); the iterators fetch records in batches so a long scan
costs one thread hop per batch, not per record.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from ._meta import _UNSET, Origin
from ._records import (
    ContextSnapshot,
    Message,
    ModelUsage,
    Problem,
    RawMessageRecord,
    SessionSummary,
    SessionView,
)
from .store import Durability, SessionStore

T = TypeVar("T")
_BATCH = 256


class AsyncSessionStore:
    """`SessionStore` with coroutine methods and async iterators (same arguments, same errors)."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        durability: Durability = "fsync",
        lock_timeout: float = 30.0,
        on_problem: Callable[[Problem], None] | None = None,
    ) -> None:
        self.sync = SessionStore(root, durability=durability, lock_timeout=lock_timeout, on_problem=on_problem)

    async def __aenter__(self) -> AsyncSessionStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await asyncio.to_thread(self.sync.close)

    async def append(self, session_id: str, message: Message, **options: Any) -> int:
        return await asyncio.to_thread(self.sync.append, session_id, message, **options)

    async def append_many(self, session_id: str, messages: Sequence[Message], **options: Any) -> list[int]:
        return await asyncio.to_thread(self.sync.append_many, session_id, messages, **options)

    async def checkpoint(self, session_id: str, messages: Sequence[Message], **options: Any) -> list[int]:
        return await asyncio.to_thread(self.sync.checkpoint, session_id, messages, **options)

    async def load(self, session_id: str) -> SessionView:
        return await asyncio.to_thread(self.sync.load, session_id)

    async def snapshot(
        self,
        session_id: str,
        compacted_message: Message,
        compacted_through_sequence: int,
        expected_version: int,
    ) -> ContextSnapshot:
        return await asyncio.to_thread(
            self.sync.snapshot, session_id, compacted_message, compacted_through_sequence, expected_version
        )

    async def records(self, session_id: str, *, after: int = 0) -> AsyncIterator[RawMessageRecord]:
        iterator = await asyncio.to_thread(lambda: self.sync.records(session_id, after=after))
        async for record in _drain(iterator):
            yield record

    async def list_sessions(self, *, parent_session_id: str | None = None) -> list[SessionSummary]:
        return await asyncio.to_thread(self.sync.list_sessions, parent_session_id=parent_session_id)

    async def get_session(self, session_id: str) -> SessionSummary | None:
        return await asyncio.to_thread(self.sync.get_session, session_id)

    async def update_session(
        self,
        session_id: str,
        *,
        title: str | None = _UNSET,
        pinned: bool = _UNSET,
        metadata: Mapping[str, Any] | None = _UNSET,
        remove_metadata: Iterable[str] = (),
        expected_version: int | None = None,
        origin: Origin = "user",
    ) -> SessionSummary:
        return await asyncio.to_thread(
            lambda: self.sync.update_session(
                session_id,
                title=title,
                pinned=pinned,
                metadata=metadata,
                remove_metadata=remove_metadata,
                expected_version=expected_version,
                origin=origin,
            )
        )

    async def record_usage(self, session_id: str, record: ModelUsage | Mapping[str, Any]) -> None:
        await asyncio.to_thread(self.sync.record_usage, session_id, record)

    async def usage(self, session_id: str) -> AsyncIterator[dict[str, Any]]:
        iterator = await asyncio.to_thread(self.sync.usage, session_id)
        async for item in _drain(iterator):
            yield item

    async def usage_totals(self, session_id: str) -> ModelUsage:
        return await asyncio.to_thread(self.sync.usage_totals, session_id)

    async def delete_session(self, session_id: str) -> bool:
        return await asyncio.to_thread(self.sync.delete_session, session_id)

    async def verify(self, session_id: str | None = None) -> list[Problem]:
        return await asyncio.to_thread(self.sync.verify, session_id)

    async def repair(self, session_id: str) -> list[Problem]:
        return await asyncio.to_thread(self.sync.repair, session_id)


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
