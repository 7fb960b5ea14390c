"""What the OpenAI Agents SDK adapter costs per call beyond the store operation it wraps.

    python benchmarks/adapter_overhead.py            # about a minute
    python benchmarks/adapter_overhead.py --quick    # a few seconds (CI)
    python benchmarks/adapter_overhead.py --json overhead.json

Two pairs, each raced (`jsonl_bench.timing.race`: every repeat runs each contender once,
in a rotating order, so a disk's or a neighbour's drift falls on both alike):

- ``JsonlSession.add_items([item])``, one call per message, beside
  ``SessionStore.append(session, {"role": ..., "content": item})``, the record the
  adapter writes, under each durability;
- ``JsonlSession.get_items(limit=20)`` beside ``SessionStore.tail(session, 20)`` on a
  session of ``--items`` items.

The SDK's own ``SQLiteSession`` (a file database) runs in the same race for comparison.
The item is a Responses assistant message of about 0.7 KB. Every figure is the median of
``--repeats`` samples with its spread (half the range, as a share of the median); the
ratio is median over median. Issue 23 asks for at most 1.5x; figures are printed, never
asserted.

Each repeat's CPU time (``time.process_time``, every thread of the process) is kept
beside its wall time and its ratio printed too: on a machine shared with busier
neighbours, a repeat's wall time is mostly the time the scheduler gave other processes,
while its CPU time is the work done. The CPU ratio is the adapter's own work; only the
wall ratio shows the wait for a worker thread (a durable ``add_items`` hands its
``fdatasync`` to one, see ``jsonl_store/adapters/_in_thread.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [p for p in (_HERE, os.path.dirname(_HERE)) if p not in sys.path]

# These imports must come after the sys.path set-up above, hence E402.
from agents import SQLiteSession  # noqa: E402
from jsonl_bench.timing import Contender, Row, calibrate, race  # noqa: E402

from jsonl_store import SessionStore  # noqa: E402
from jsonl_store.adapters.openai_agents import JsonlSession  # noqa: E402
from jsonl_store.store import Durability  # noqa: E402

ITEM: Any = {
    "id": "msg_0193e4c27d1a7b3e9f2a3c4d5e6f7a8b",
    "type": "message",
    "role": "assistant",
    "status": "completed",
    "content": [{"type": "output_text", "text": "The tests pass. " * 40, "annotations": []}],
}
LIMIT = 20


def _looped(
    loop: asyncio.AbstractEventLoop, call: Callable[[], Coroutine[Any, Any, object]]
) -> Callable[[int], None]:
    """A block of ``n`` awaited calls on one event loop (as an agent's loop makes them)."""

    async def many(n: int) -> None:
        for _ in range(n):
            await call()

    return lambda n: loop.run_until_complete(many(n))


def _ratio(rows: dict[str, Row], key: str, base: str) -> float:
    return rows[key].median / rows[base].median


def _measure(root: str, durability: Durability, items: int, repeats: int, seconds: float) -> dict[str, Row]:
    loop = asyncio.new_event_loop()
    session = JsonlSession("adapter", root, durability=durability)
    sqlite = SQLiteSession("sqlite", os.path.join(root, "sqlite.db"))
    store = SessionStore(root, durability=durability)
    record = {"role": "assistant", "content": ITEM}
    rows = {
        "add_items": Row("add_items", "add", f"JsonlSession.add_items([item]) ({durability})", []),
        "append": Row("append", "add", f"SessionStore.append(record) ({durability})", []),
        "sqlite_add": Row("sqlite_add", "add", "SQLiteSession.add_items([item]) (file)", []),
    }
    adds: dict[str, Callable[[int], object]] = {
        "add_items": _looped(loop, lambda: session.add_items([ITEM])),
        "append": lambda n: [store.append("plain", record) for _ in range(n)],
        "sqlite_add": _looped(loop, lambda: sqlite.add_items([ITEM])),
    }
    _race(rows, adds, repeats, seconds)
    if durability == "none":
        # The reads: sessions of ``items`` items (the adds above wrote fewer or more).
        reader = JsonlSession("reads", root, durability="none")
        loop.run_until_complete(reader.add_items([ITEM] * items))
        loop.run_until_complete(sqlite.clear_session())
        loop.run_until_complete(sqlite.add_items([ITEM] * items))
        rows |= {
            "get_items": Row("get_items", "read", f"JsonlSession.get_items(limit={LIMIT})", []),
            "tail": Row("tail", "read", f"SessionStore.tail(session, {LIMIT})", []),
            "sqlite_get": Row("sqlite_get", "read", f"SQLiteSession.get_items(limit={LIMIT})", []),
        }
        reads: dict[str, Callable[[int], object]] = {
            "get_items": _looped(loop, lambda: reader.get_items(limit=LIMIT)),
            "tail": lambda n: [store.tail("reads", LIMIT) for _ in range(n)],
            "sqlite_get": _looped(loop, lambda: sqlite.get_items(limit=LIMIT)),
        }
        _race(rows, reads, repeats, seconds)
    session.close()
    sqlite.close()
    loop.close()
    return rows


def _cpu_timed(row: Row, block: Callable[[int], object]) -> Callable[[int], object]:
    """``block``, also keeping each call's CPU time per op in ``row.extra["cpu"]``."""
    samples: list[float] = row.extra.setdefault("cpu", [])

    def timed(n: int) -> object:
        start = time.process_time()
        result = block(n)
        samples.append((time.process_time() - start) / n)
        return result

    return timed


def _race(
    rows: dict[str, Row], blocks: dict[str, Callable[[int], object]], repeats: int, seconds: float
) -> None:
    contenders = [
        Contender(rows[key], _cpu_timed(rows[key], block), ops=calibrate(block, seconds, cap=20_000))
        for key, block in blocks.items()
    ]
    race(contenders, repeats)
    for contender in contenders:
        del contender.row.extra["cpu"][0]  # race's warm-up call, not a repeat


def _cpu(row: Row) -> float:
    samples: list[float] = row.extra["cpu"]
    return statistics.median(samples)


def _report(rows: dict[str, Row], pairs: list[tuple[str, str]]) -> list[str]:
    lines = []
    for row in rows.values():
        spread = f"±{row.spread:.0%}" if row.spread is not None else ""
        lines.append(
            f"  {row.label:<48} {row.median * 1e6:9.1f} µs {spread:>6}   CPU {_cpu(row) * 1e6:9.1f} µs"
        )
    for key, base in pairs:
        cpu = _cpu(rows[key]) / _cpu(rows[base])
        lines.append(
            f"  {key} ÷ {base}: {_ratio(rows, key, base):.2f}x (issue 23: at most 1.5x), CPU time {cpu:.2f}x"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats, shorter samples")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--items", type=int, default=1000, help="items in the session get_items reads")
    parser.add_argument("--json", metavar="PATH", help="write every sample there")
    args = parser.parse_args(argv)
    repeats = args.repeats or (5 if args.quick else 15)
    seconds = 0.05 if args.quick else 0.3
    out: dict[str, Any] = {}
    durabilities: tuple[Durability, ...] = ("none", "fsync")
    for durability in durabilities:
        root = tempfile.mkdtemp(prefix="jsonl-store-overhead-")
        try:
            rows = _measure(root, durability, args.items, repeats, seconds)
        finally:
            shutil.rmtree(root, ignore_errors=True)
        pairs = [("add_items", "append")] + ([("get_items", "tail")] if "tail" in rows else [])
        print(f"durability={durability!r}, {repeats} repeats, medians:")
        print("\n".join(_report(rows, pairs)))
        out[durability] = {
            key: {"label": row.label, "samples": row.samples, "cpu": row.extra["cpu"]}
            for key, row in rows.items()
        }
    if args.json:
        with open(args.json, "w", encoding="utf-8") as file:
            json.dump(out, file, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
