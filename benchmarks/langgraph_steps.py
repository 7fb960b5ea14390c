"""JsonlCheckpointSaver beside LangGraph's SqliteSaver on a 200-step tool-calling thread.

    pip install -e '.[langgraph]' langgraph-checkpoint-sqlite
    python benchmarks/langgraph_steps.py              # 5 rounds, about a minute here
    python benchmarks/langgraph_steps.py --rounds 9 --json langgraph.json

The thread is the tests' agent loop (`tests/langgraph_agent.py`: a ``GenericFakeChatModel``
asking for a lookup 100 times, LangGraph's ``ToolNode`` answering, about 400 bytes per tool
result): 201 super-steps, 202 messages, no network. Each saver runs the same thread, in
turn within each round and in the other order the next round (interleaved, so a noisy
neighbour hits both), with ``durability="sync"``, so a step's time includes its
checkpoint write. Two pairings: the store's default ``durability="fsync"`` beside SQLite's
default ``synchronous=FULL``, and ``durability="none"`` beside ``synchronous=OFF``.

Printed per saver: bytes on disk at the end of the thread (every file of the session, or
the database with its journal), bytes a step adds on average near the start (steps 2-21)
and near the end (the last 20), and time per step: the median over all steps of all rounds with its
spread (10th-90th percentile), and the medians of the first and last 20 steps. Figures
are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph_agent import question, tool_loop

from jsonl_store.adapters.langgraph import JsonlCheckpointSaver

CALLS = 100  # tool calls: 2 super-steps each, plus the answer: 201 steps, 202 messages
#: A saver in a fresh directory, and what its files weigh on disk.
Opened = tuple[BaseCheckpointSaver[Any], Callable[[], int]]
Factory = Callable[[Path], AbstractContextManager[Opened]]


def files_bytes(directory: Path) -> int:
    """Bytes of every file below ``directory`` (lock files excepted: they hold nothing)."""
    return sum(p.stat().st_size for p in directory.rglob("*") if p.is_file() and p.name != ".lock")


def jsonl(durability: str) -> Factory:
    @contextmanager
    def make(where: Path) -> Iterator[Opened]:
        saver = JsonlCheckpointSaver(str(where), durability=durability)
        yield saver, lambda: files_bytes(where)
        saver.close()

    return make


def sqlite(synchronous: str) -> Factory:
    @contextmanager
    def make(where: Path) -> Iterator[Opened]:
        where.mkdir()
        conn = sqlite3.connect(where / "checkpoints.db", check_same_thread=False)
        conn.execute(f"PRAGMA synchronous={synchronous}")
        yield SqliteSaver(conn), lambda: files_bytes(where)
        conn.close()

    return make


def run_thread(make: Factory, where: Path) -> dict[str, Any]:
    """One 200-step thread: each step's seconds and the bytes on disk after it."""
    with make(where) as (saver, size):
        graph = tool_loop(saver, CALLS)
        config: Any = {"configurable": {"thread_id": "bench"}, "recursion_limit": 1000}
        seconds, sizes = [], []
        start = time.perf_counter()
        for _ in graph.stream(question(), config, stream_mode="updates", durability="sync"):
            now = time.perf_counter()
            seconds.append(now - start)
            sizes.append(size())
            start = time.perf_counter()
        assert len(graph.get_state(config).values["messages"]) == 2 * CALLS + 2
    return {"seconds": seconds, "sizes": sizes}


def percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def summary(runs: list[dict[str, Any]]) -> dict[str, float]:
    steps = [s for run in runs for s in run["seconds"]]
    sizes = runs[-1]["sizes"]
    # Averaged over 20 steps, not a median: SQLite grows its file by pages, several steps'
    # worth at a time, so most single steps add nothing and some add much.
    return {
        "steps": len(runs[-1]["seconds"]),
        "bytes_on_disk": sizes[-1],
        "bytes_per_step_start": (sizes[21] - sizes[1]) / 20,
        "bytes_per_step_end": (sizes[-1] - sizes[-21]) / 20,
        "ms_per_step_median": 1e3 * statistics.median(steps),
        "ms_per_step_p10": 1e3 * percentile(steps, 10),
        "ms_per_step_p90": 1e3 * percentile(steps, 90),
        "ms_first_20_steps": 1e3 * statistics.median([s for run in runs for s in run["seconds"][:20]]),
        "ms_last_20_steps": 1e3 * statistics.median([s for run in runs for s in run["seconds"][-20:]]),
    }


PAIRS: dict[str, list[tuple[str, Factory]]] = {
    "durable": [("jsonl_store fsync", jsonl("fsync")), ("SqliteSaver FULL", sqlite("FULL"))],
    "no flush": [("jsonl_store none", jsonl("none")), ("SqliteSaver OFF", sqlite("OFF"))],
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="threads per saver (default 5)")
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args(argv)
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for pairing, savers in PAIRS.items():
            runs: dict[str, list[dict[str, Any]]] = {name: [] for name, _ in savers}
            for round_ in range(args.rounds):
                order = savers if round_ % 2 == 0 else savers[::-1]
                for name, make in order:
                    where = Path(scratch) / f"{pairing}-{name}-{round_}".replace(" ", "_")
                    runs[name].append(run_thread(make, where))
            for name, _ in savers:
                results[name] = summary(runs[name])
    print_table(results, args.rounds)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


def print_table(results: dict[str, dict[str, float]], rounds: int) -> None:
    print(
        f"{CALLS * 2 + 1}-step tool-calling thread, {rounds} rounds per saver, interleaved ({os.cpu_count()} CPUs)"
    )
    head = f"{'saver':<20} {'on disk':>10} {'B/step 2-21':>12} {'B/step last 20':>15} {'ms/step (p10-p90)':>22} {'first 20':>9} {'last 20':>8}"
    print(head)
    for name, r in results.items():
        spread = f"{r['ms_per_step_median']:.2f} ({r['ms_per_step_p10']:.2f}-{r['ms_per_step_p90']:.2f})"
        print(
            f"{name:<20} {r['bytes_on_disk'] / 1024:>8.0f} K {r['bytes_per_step_start']:>12,.0f} "
            f"{r['bytes_per_step_end']:>15,.0f} {spread:>22} {r['ms_first_20_steps']:>9.2f} {r['ms_last_20_steps']:>8.2f}"
        )


if __name__ == "__main__":
    sys.exit(main())
