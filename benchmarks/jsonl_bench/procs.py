"""Measures that need other processes: peak memory of a scan, and writers in contention.

Processes are started with ``spawn`` so each begins clean (no memory inherited from the
parent to blur an RSS figure, no store state copied by ``fork``). The workers live in this
importable module because a spawned child finds its function by module name.
"""

from __future__ import annotations

import multiprocessing
import resource
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing.connection import Connection
from typing import Any

from . import workload
from .config import Context
from .timing import Row

_SPAWN = multiprocessing.get_context("spawn")


def _status_bytes(field: str) -> int | None:
    """A ``/proc/self/status`` size field (VmRSS, VmHWM) in bytes; None off Linux."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _reset_peak() -> bool:
    """Reset the peak RSS to the current RSS (Linux); True when that worked.

    Spawning and importing leave a transient peak behind; without the reset it would be
    counted as growth of the scan.
    """
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    return True


def _ru_maxrss_bytes() -> int:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # ru_maxrss is in KiB on Linux and in bytes on macOS.
    return peak if sys.platform == "darwin" else peak * 1024


def _scan_worker(root: str, session_id: str) -> dict[str, Any]:
    from jsonl_store import SessionStore

    store = SessionStore(root, durability="none")
    exact = _reset_peak()
    before = _status_bytes("VmRSS") if exact else _ru_maxrss_bytes()
    began = time.perf_counter()
    count = 0
    for _ in store.records(session_id):
        count += 1
    seconds = time.perf_counter() - began
    peak = _status_bytes("VmHWM") if exact else _ru_maxrss_bytes()
    store.close()
    assert before is not None and peak is not None
    return {
        "rss_before_bytes": before,
        "peak_rss_bytes": peak,
        "growth_bytes": max(0, peak - before),
        "method": "VmHWM after clear_refs" if exact else "ru_maxrss (upper bound)",
        "records": count,
        "seconds": seconds,
    }


def scan_memory(root: str, session_id: str) -> dict[str, Any]:
    """Peak RSS growth of one records() scan, in a fresh process (RSS, not tracemalloc:
    tracemalloc would slow a 1 GB scan several-fold and miss memory outside Python's heap)."""
    with ProcessPoolExecutor(1, mp_context=_SPAWN) as pool:
        return pool.submit(_scan_worker, root, session_id).result()


# ---------------------------------------------------------------------------------------
# Contention: N processes appending at once (issue 4)
# ---------------------------------------------------------------------------------------


def _contention_worker(conn: Connection) -> None:
    """Serve append jobs until told to stop: (root, durability, session_id, count), then a start time."""
    from jsonl_store import SessionStore

    conn.send("ready")  # imports done
    while True:
        job = conn.recv()
        if job is None:
            return
        root, durability, session_id, count = job
        items = workload.store_messages(workload.ASSISTANT, 0, count)
        with SessionStore(root, durability=durability) as store:
            conn.send("armed")  # messages made, store open: only the appends remain
            # Every worker starts at the same monotonic instant (CLOCK_MONOTONIC is
            # system-wide on Linux), so no worker's set-up overlaps another's appends.
            start_at = conn.recv()
            while time.monotonic() < start_at:
                pass
            began = time.monotonic()
            for message, usage in items:
                store.append(session_id, message, usage=usage)
            ended = time.monotonic()
        conn.send((began, ended))


class WorkerPool:
    """Long-lived spawned workers, so each contention run pays no process start-up."""

    def __init__(self, size: int) -> None:
        self.conns: list[Connection] = []
        self.procs: list[Any] = []
        for _ in range(size):
            parent, child = _SPAWN.Pipe()
            proc = _SPAWN.Process(target=_contention_worker, args=(child,), daemon=True)
            proc.start()
            self.conns.append(parent)
            self.procs.append(proc)
        for conn in self.conns:
            assert conn.recv() == "ready"

    def run(self, root: str, durability: str, session_ids: list[str], count: int) -> float:
        """Start one job per session id at once; return total appends per second."""
        conns = self.conns[: len(session_ids)]
        for conn, sid in zip(conns, session_ids, strict=True):
            conn.send((root, durability, sid, count))
        for conn in conns:
            assert conn.recv() == "armed"
        start_at = time.monotonic() + 0.002
        for conn in conns:
            conn.send(start_at)
        spans: list[tuple[float, float]] = [conn.recv() for conn in conns]
        elapsed = max(end for _, end in spans) - min(begin for begin, _ in spans)
        return count * len(session_ids) / elapsed

    def close(self) -> None:
        for conn in self.conns:
            conn.send(None)
        for proc in self.procs:
            proc.join(timeout=10)


def contention(ctx: Context) -> None:
    """Appends/s of 1, 2, 4 processes on one session and on separate sessions, both modes.

    Every figure is the median of ``repeats`` runs, and the runs of all set-ups take
    turns (round r runs each set-up once, in a rotating order): one set-up's runs back to
    back meet one state of a shared disk and agree with each other, not with the next
    run's (issue 9 could not reproduce these rows within 1.5-8×). Spread is half the range.
    """
    from .jsonl import open_store  # here, not above: jsonl imports this module

    s, res, root = ctx.sizes, ctx.results, ctx.scratch("contention")
    setups = [
        (durability, layout, n)
        for durability in ("fsync", "none")
        for layout in ("same", "separate")
        for n in s.procs
    ]
    rates: dict[tuple[str, str, int], list[float]] = {setup: [] for setup in setups}
    pool = WorkerPool(max(s.procs))
    try:
        for r in range(s.repeats):
            ctx.log(f"contention: round {r + 1} of {s.repeats}, {len(setups)} set-ups")
            for setup in setups[r % len(setups) :] + setups[: r % len(setups)]:
                durability, layout, n = setup
                ctx.settle()  # a buffered run's dirty pages are no fsync'd run's cost
                rates[setup].append(pool.run(root, durability, _sessions(setup), _count(s, durability)))
    finally:
        pool.close()
    with open_store(root, "none") as store:
        for setup in setups:
            durability, layout, n = setup
            sids = _sessions(setup)
            expected = _count(s, durability) * s.repeats * n // len(set(sids))
            check = _check_exactly_once(store, sorted(set(sids)), expected)
            res.add(
                Row(
                    f"contention.{durability}.{layout}.{n}",
                    "contention",
                    f"{n} process(es), {'one session' if layout == 'same' else 'own sessions'}, "
                    f'durability="{durability}"',
                    [1 / rate for rate in rates[setup]],
                    op="append",
                    extra={"check": check, "appends_per_s": rates[setup]},
                )
            )
            if check != "ok":
                res.notes.append(f"contention {durability}/{layout}/{n}: {check}")


def _sessions(setup: tuple[str, str, int]) -> list[str]:
    """The session each process of a set-up appends to."""
    durability, layout, n = setup
    if layout == "same":
        return [f"{durability}-{n}-shared"] * n
    return [f"{durability}-{n}-own-{i}" for i in range(n)]


def _count(sizes: Any, durability: str) -> int:
    """Appends per process in one run."""
    return int(sizes.contention_sync if durability == "fsync" else sizes.contention_fast)


def _check_exactly_once(store: Any, session_ids: list[str], expected: int) -> str:
    """'ok' when each session holds ``expected`` records numbered 1..expected in file order."""
    for sid in session_ids:
        sequences = [record.sequence for record in store.records(sid)]
        if sequences != list(range(1, expected + 1)):
            return f"{sid}: {len(sequences)} records, expected {expected} gap-free"
    return "ok"
