"""An acknowledged durable ``JsonlSession.add_items`` survives every crash, as ``append`` does.

The Agents SDK adapter runs a durable ``add_items`` in a worker thread and reports its
outcome to the event loop itself (`jsonl_store.adapters._in_thread`); the write and its
``fdatasync`` are the store's. These tests run the adapter on the simulated disk, crash
it after every file-system call (process crash and power loss), and read the session
back with a new ``JsonlSession``: every item whose ``add_items`` returned is there, in
order, each call's items all or none.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("agents", reason='needs the extra: pip install -e ".[openai-agents]"')

from jsonl_store.adapters.openai_agents import JsonlSession
from jsonl_store.testing import SimulatedFileSystem, crash_states

ROOT = "/store"
#: Calls of ``add_items``, the first one making the session; one holds a tool batch.
CALLS: list[list[dict[str, Any]]] = [
    [{"role": "user", "content": "What is 1 + 2?"}],
    [
        {"type": "function_call", "call_id": "c1", "name": "add", "arguments": '{"a": 1, "b": 2}'},
        {"type": "function_call_output", "call_id": "c1", "output": "3"},
    ],
    [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "3"}]}],
]


def _add_all(session_id: str) -> tuple[SimulatedFileSystem, int, list[int]]:
    """Run `CALLS` durably on a new simulated disk; the trace length where each call returned."""
    fs = SimulatedFileSystem()
    fs.makedirs(ROOT)
    start = len(fs.trace)
    session = JsonlSession(session_id, ROOT, durability="fsync", fs=fs)
    acknowledged: list[int] = []

    async def run() -> None:
        for items in CALLS:
            await session.add_items(items)
            acknowledged.append(len(fs.trace))

    asyncio.run(run())
    session.close()
    return fs, start, acknowledged


def _read_back(session_id: str, fs: SimulatedFileSystem) -> list[Any]:
    session = JsonlSession(session_id, ROOT, durability="fsync", fs=fs)
    try:
        return asyncio.run(session.get_items())
    finally:
        session.close()


@pytest.mark.parametrize(
    "session_id",
    ["chat-1", "user:42/thread:" + "x" * 140],
    ids=["id-is-its-directory", "id-kept-in-metadata"],
)
def test_every_acknowledged_add_items_survives_every_crash_point(session_id: str) -> None:
    """After each crash, the items read back are whole calls, and every call acknowledged before it."""
    fs, start, acknowledged = _add_all(session_id)
    prefixes = [[item for items in CALLS[:n] for item in items] for n in range(len(CALLS) + 1)]
    states = 0
    for state in crash_states(fs, start=start, max_states_per_prefix=12):
        items = _read_back(session_id, state.filesystem())
        must_keep = sum(1 for at in acknowledged if at <= state.prefix)
        assert items in prefixes[must_keep:], (state.kind, state.description, items)
        states += 1
    assert states > 3 * len(CALLS)
    assert _read_back(session_id, fs) == prefixes[-1]
