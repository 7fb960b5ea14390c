"""pydantic-ai-harness ``FileStepStore``: the closest file-backed store in the ecosystem.

Its events go to ``<run>/events.jsonl`` through its public async API. An event carries
our record as its metadata (the event type has no free-form payload), so each line holds
the same content as the other stores' lines. An append with an idempotency key first
rereads and validates the whole event file, which is why its cost grows with the run.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from typing import Any

import orjson

from jsonl_store.testing.damage import damage_file, tear_last_line

from . import workload
from .config import Context
from .timing import Row, no_gc

NOT_INSTALLED = "skipped: not installed"


def available() -> str | None:
    """None when FileStepStore imports, else why it is skipped."""
    try:
        from pydantic_ai_harness.step_persistence import FileStepStore, StepEvent  # noqa: F401
    except ImportError:
        return NOT_INSTALLED
    return None


def _event(run_id: str, i: int, key: bool) -> Any:
    from pydantic_ai_harness.step_persistence import StepEvent

    record = workload.record_dict(workload.turn(workload.ASSISTANT, i), i + 1)
    return StepEvent(
        run_id=run_id,
        kind="model_request_completed",
        step_index=i,
        metadata={"record": orjson.dumps(record).decode()},
        idempotency_key=f"{run_id}:{i}" if key else None,
    )


async def _append(store: Any, run_id: str, start: int, count: int, key: bool) -> float:
    events = [_event(run_id, i, key) for i in range(start, start + count)]
    with no_gc():
        began = time.perf_counter()
        for event in events:
            await store.append_event(event)
        return time.perf_counter() - began


async def _measure(store: Any, run_id: str, length: int, key: bool, ops: int, repeats: int) -> list[float]:
    """Seconds per append to a run holding ``length`` events (0: the run's first append)."""
    if length == 0:
        # The first append of a new run: a fresh run per repeat.
        return [await _append(store, f"{run_id}-{r}", 0, 1, key) for r in range(repeats)]
    samples = []
    await _append(store, run_id, 0, length, key=False)
    have = length
    for _ in range(repeats):
        samples.append(await _append(store, run_id, have, ops, key) / ops)
        have += ops
    return samples


async def _run(ctx: Context) -> None:
    from pydantic_ai_harness.step_persistence import FileStepStore

    s, res = ctx.sizes, ctx.results
    store = FileStepStore(ctx.scratch("harness"), media_store=None)
    for key in (False, True):
        name = "append_key" if key else "append"
        for length in s.harness_lengths:
            ctx.log(f"harness: {name} at {length:,} events")
            ops = max(1, min(s.sync_ops, length // (2 * s.repeats)))
            samples = await _measure(store, f"{name}-{length}", length, key, ops, s.repeats)
            res.add(
                Row(
                    f"harness.{name}.{length}",
                    "pydantic-ai-harness",
                    f"FileStepStore append_event{' + idempotency key' if key else ''} at {length:,} events",
                    samples,
                    floor="floor.write",
                    sqlite="sqlite.normal",
                    op="append",
                )
            )
            label = "harness FileStepStore" + (" + idempotency key" if key else "")
            res.point("append", label, length, statistics.median(samples))
    res.add(await _torn_tail(store, ctx.scratch("harness")))


async def _torn_tail(store: Any, root: str) -> Row:
    """Cut the last event line in half, as a crash mid-write leaves it; then list the events."""
    run_id = "torn"
    for i in range(5):
        await store.append_event(_event(run_id, i, key=False))
    damage_file(os.path.join(root, run_id, "events.jsonl"), tear_last_line)
    try:
        events = await store.list_events(run_id=run_id)
        outcome = f"no error: {len(events)} events"
    except Exception as exc:  # noqa: BLE001 - whatever it raises is the finding
        outcome = f"raises {type(exc).__name__}"
    return Row(
        "harness.torn_tail",
        "pydantic-ai-harness",
        "list_events after a torn last line",
        [],
        unit="text",
        text=outcome,
    )


def run(ctx: Context) -> None:
    reason = available()
    if reason is not None:
        ctx.results.skipped["pydantic-ai-harness FileStepStore"] = reason
        print(f"  pydantic-ai-harness FileStepStore: {reason}")
        return
    asyncio.run(_run(ctx))
