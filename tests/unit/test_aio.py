"""Tests for `AsyncSessionStore`: the same API as coroutines and async iterators, off the loop."""

from __future__ import annotations

import asyncio
import inspect
import threading
from pathlib import Path
from typing import Any

import pytest

from jsonl_store import (
    AssistantMessage,
    AsyncSessionStore,
    CompactedMessage,
    InvalidMessage,
    ModelUsage,
    SessionStore,
    SnapshotConflict,
    UserMessage,
)
from jsonl_store._io.fs import OsFileSystem

ITERATORS = {"records", "usage"}


def public_methods(cls: type) -> set[str]:
    """Names of the public callables a class defines."""
    return {name for name, value in inspect.getmembers(cls) if not name.startswith("_") and callable(value)}


def test_async_store_has_the_same_public_methods_as_the_sync_store() -> None:
    """Every public SessionStore method exists on AsyncSessionStore, and nothing else."""
    assert public_methods(AsyncSessionStore) == public_methods(SessionStore)


@pytest.mark.parametrize("name", sorted(public_methods(SessionStore)))
def test_async_methods_are_coroutines_and_iterators_are_async_generators(name: str) -> None:
    """Methods are coroutine functions; records and usage are async generator functions."""
    method = getattr(AsyncSessionStore, name)
    if name in ITERATORS:
        assert inspect.isasyncgenfunction(method)
    else:
        assert inspect.iscoroutinefunction(method)


@pytest.mark.parametrize("name", sorted(public_methods(SessionStore)))
def test_async_methods_accept_every_parameter_of_the_sync_method(name: str) -> None:
    """Each sync parameter is taken by the async method (by name, or through **options)."""
    sync = inspect.signature(getattr(SessionStore, name)).parameters
    asyn = inspect.signature(getattr(AsyncSessionStore, name)).parameters
    takes_any_keyword = any(p.kind is p.VAR_KEYWORD for p in asyn.values())
    for param in sync.values():
        if param.name in asyn:
            assert asyn[param.name].kind == param.kind, param.name
            assert asyn[param.name].default == param.default, param.name
        else:
            assert takes_any_keyword and param.kind in (param.KEYWORD_ONLY, param.VAR_KEYWORD), param.name


def test_async_store_works_end_to_end(tmp_path: Path) -> None:
    """Append, snapshot, load, iterate, update, usage, checkpoint, verify and delete under asyncio.run."""

    async def main() -> dict[str, Any]:
        async with AsyncSessionStore(tmp_path, durability="none") as store:
            out: dict[str, Any] = {}
            out["seq"] = await store.append("s", UserMessage(content="1"), title="async")
            out["many"] = await store.append_many(
                "s",
                [AssistantMessage(content="2"), UserMessage(content="3")],
                usage=ModelUsage(input_tokens=4),
            )
            out["snap"] = (await store.snapshot("s", CompactedMessage(content="1-2"), 2, 0)).version
            out["messages"] = (await store.load("s")).messages
            out["records"] = [r.sequence async for r in store.records("s")]
            out["after"] = [r.sequence async for r in store.records("s", after=2)]
            out["title"] = (await store.update_session("s", title="renamed", metadata={"k": 1})).title
            out["get"] = (await store.get_session("s")).metadata  # type: ignore[union-attr]
            out["list"] = [s.session_id for s in await store.list_sessions()]
            await store.record_usage("s", {"input_tokens": 7, "model": "m"})
            out["usage"] = [u["input_tokens"] async for u in store.usage("s")]
            out["totals"] = await store.usage_totals("s")
            out["checkpoint"] = await store.checkpoint("s", [UserMessage(content="4", id="fixed")])
            out["verify"] = await store.verify("s")
            out["repair"] = await store.repair("s")
            out["delete"] = await store.delete_session("s")
            out["gone"] = await store.get_session("s")
            return out

    out = asyncio.run(main())
    assert out["seq"] == 1 and out["many"] == [2, 3] and out["snap"] == 1
    assert [getattr(m, "content", None) for m in out["messages"]] == ["1-2", "3"]
    assert out["records"] == [1, 2, 3] and out["after"] == [3]
    assert out["title"] == "renamed" and out["get"] == {"k": 1} and out["list"] == ["s"]
    # The usage log's 7 and the 4 given with the assistant record: two model calls.
    assert out["usage"] == [7] and out["totals"] == ModelUsage(input_tokens=11)
    assert out["checkpoint"] == [4]
    assert out["verify"] == [] and out["repair"] == []
    assert out["delete"] is True and out["gone"] is None


def test_async_store_raises_the_same_errors(tmp_path: Path) -> None:
    """Errors from the worker thread reach the awaiting coroutine unchanged."""

    async def main() -> None:
        store = AsyncSessionStore(tmp_path, durability="none")
        await store.append_many("s", [UserMessage(content="1"), UserMessage(content="2")])
        await store.snapshot("s", CompactedMessage(content="c"), 1, 0)
        with pytest.raises(SnapshotConflict):
            await store.snapshot("s", CompactedMessage(content="c"), 2, 0)
        with pytest.raises(InvalidMessage):
            await store.append("s", {"role": "user", "content": float("nan")})
        await store.close()

    asyncio.run(main())


def test_async_iterators_stream_in_batches_and_can_stop_early(tmp_path: Path) -> None:
    """records() over more records than one batch yields them all; breaking early is clean."""
    sync = SessionStore(tmp_path, durability="none")
    sync.append_many("s", [UserMessage(content=str(i)) for i in range(600)])

    async def main() -> tuple[list[int], list[int]]:
        store = AsyncSessionStore(tmp_path, durability="none")
        everything = [r.sequence async for r in store.records("s")]
        first: list[int] = []
        async for record in store.records("s"):
            first.append(record.sequence)
            if len(first) == 3:
                break
        return everything, first

    everything, first = asyncio.run(main())
    assert everything == list(range(1, 601))
    assert first == [1, 2, 3]
    assert sync.append("s", UserMessage(content="more")) == 601


class RecordingFS(OsFileSystem):
    """The real file system, noting the thread of every call."""

    def __init__(self) -> None:
        self.threads: set[int] = set()
        for name in (
            "open",
            "close",
            "write",
            "pread",
            "fstat",
            "stat",
            "listdir",
            "mkdir",
            "link",
            "unlink",
            "rename",
            "flock",
        ):
            real = getattr(OsFileSystem, name)
            setattr(self, name, self._wrap(real))

    def _wrap(self, real: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            self.threads.add(threading.get_ident())
            return real(*args, **kwargs)

        return call


def test_async_methods_never_touch_files_on_the_event_loop_thread(tmp_path: Path) -> None:
    """Every file operation of a coroutine method runs in a worker thread, never on the loop."""
    fs = RecordingFS()

    async def main() -> int:
        store = AsyncSessionStore(tmp_path, durability="none")
        store.sync._fs = fs  # the async store takes no fs of its own; swap the sync store's door
        await store.append("s", UserMessage(content="1"))
        await store.append_many("s", [UserMessage(content="2")])
        await store.checkpoint("s", [UserMessage(content="3")])
        await store.load("s")
        await store.record_usage("s", ModelUsage(input_tokens=1))
        await store.usage_totals("s")
        await store.list_sessions()
        await store.get_session("s")
        await store.update_session("s", title="t")
        await store.snapshot("s", CompactedMessage(content="c"), 1, 0)
        await store.verify("s")
        await store.repair("s")
        await store.delete_session("s")
        await store.close()
        return threading.get_ident()

    loop_thread = asyncio.run(main())
    assert fs.threads and loop_thread not in fs.threads


@pytest.mark.parametrize("name", sorted(ITERATORS))
def test_async_iterators_never_touch_files_on_the_event_loop_thread(tmp_path: Path, name: str) -> None:
    """records() and usage() read in worker threads only, from the first step to the last."""
    sync = SessionStore(tmp_path, durability="none")
    sync.append("s", UserMessage(content="1"))
    sync.record_usage("s", ModelUsage(input_tokens=1))
    fs = RecordingFS()

    async def main() -> int:
        store = AsyncSessionStore(tmp_path, durability="none")
        store.sync._fs = fs
        assert len([item async for item in getattr(store, name)("s")]) == 1
        return threading.get_ident()

    loop_thread = asyncio.run(main())
    assert fs.threads and loop_thread not in fs.threads


def test_the_async_store_runs_on_a_file_system_it_is_given() -> None:
    """AsyncSessionStore(fs=...) writes through the given FileSystem, as SessionStore does."""
    from jsonl_store.testing import SimulatedFileSystem

    fs = SimulatedFileSystem()

    async def run() -> list[Any]:
        async with AsyncSessionStore("/store", fs=fs) as astore:
            await astore.append("s", UserMessage(content="on the simulated disk"))
            view = await astore.load("s")
        return [m.content for m in view.messages]  # type: ignore[union-attr]

    assert asyncio.run(run()) == ["on the simulated disk"]
    assert fs.exists("/store/s/messages.jsonl")
