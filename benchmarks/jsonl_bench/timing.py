"""Timing primitives and the result model every section fills in.

Every figure is the median of several repeats: this runs on shared, noisy machines, and
a median shrugs off the one repeat that met a page-cache flush or a neighbour's burst.
"""

from __future__ import annotations

import functools
import gc
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

Unit = Literal["s/op", "MB", "text"]
#: Does ``n`` ops of one measure; a factory builds it with its data made in advance.
Block = Callable[[int], object]


@dataclass
class Row:
    """One measured figure: samples (one per repeat) and what to compare it with."""

    key: str
    group: str
    label: str
    samples: list[float]
    unit: Unit = "s/op"
    #: Key of the row this one is divided by in the "÷ floor" column.
    floor: str | None = None
    #: Key of the row this one is divided by in the "÷ SQLite" column.
    sqlite: str | None = None
    #: What one op is ("append", "record", "load", ...), for the table.
    op: str = "op"
    text: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def median(self) -> float:
        return statistics.median(self.samples) if self.samples else float("nan")

    @property
    def spread(self) -> float | None:
        """Half the range of the repeats, as a fraction of the median (None for one repeat)."""
        if len(self.samples) < 2 or not self.median:
            return None
        return (max(self.samples) - min(self.samples)) / 2 / self.median


@dataclass
class Results:
    """All rows of one run, in the order they were measured, plus the plot's curves."""

    rows: dict[str, Row] = field(default_factory=dict)
    #: curves[chart][series] = [(session or log length, seconds), ...]
    curves: dict[str, dict[str, list[tuple[int, float]]]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    #: Bytes on disk the scratch directory held as each measure ended, by measure.
    scratch: dict[str, int] = field(default_factory=dict)

    def add(self, row: Row) -> Row:
        assert row.key not in self.rows, f"row measured twice: {row.key}"
        self.rows[row.key] = row
        return row

    def point(self, chart: str, series: str, length: int, seconds: float) -> None:
        self.curves.setdefault(chart, {}).setdefault(series, []).append((length, seconds))

    def median(self, key: str) -> float | None:
        row = self.rows.get(key)
        return row.median if row is not None and row.samples else None


@contextmanager
def no_gc() -> Iterator[None]:
    """Keep the cyclic collector out of a timed block, as ``timeit`` does."""
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def time_once(fn: Callable[[], object]) -> float:
    """Seconds one call of ``fn`` takes."""
    with no_gc():
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start


def per_op(block: Callable[[int], object], ops: int, repeats: int, *, warmup: int = 1) -> list[float]:
    """Seconds per op of ``block(ops)``, one sample per repeat, after ``warmup`` untimed ops.

    The warm-up pays the one-time costs (opening a descriptor, a first page-cache miss) that
    a long-running agent pays once, not on every append.
    """
    if warmup:
        block(warmup)
    return [time_once(lambda: block(ops)) / ops for _ in range(repeats)]


def first_ops(make_block: Callable[[int], Block], repeats: int) -> list[float]:
    """Seconds of the very first op on a new subject, one per repeat.

    ``make_block(r)`` sets up subject ``r`` untimed (a new session, a new file); then its
    first op is timed alone: for an append, the one that creates the session.
    """
    return [time_once(functools.partial(make_block(r), 1)) for r in range(repeats)]


def repeat(fn: Callable[[], object], repeats: int, *, warmup: int = 1) -> list[float]:
    """Seconds per call of ``fn``, one sample per repeat."""
    for _ in range(warmup):
        fn()
    return [time_once(fn) for _ in range(repeats)]


def calibrate(block: Block, seconds: float, cap: int) -> int:
    """Ops per repeat (1 to ``cap``) for a repeat of ``block`` to take about ``seconds``.

    Times one op, so it also serves as a warm-up. For an op whose cost the library may
    cut a hundredfold: a fixed count would make today's run minutes long, or tomorrow's
    repeats too short to time.
    """
    one = time_once(functools.partial(block, 1))
    return cap if one <= 0 else max(1, min(cap, round(seconds / one)))


@dataclass
class Contender:
    """One measure taking part in a `race`: its row (samples get filled in) and its block."""

    row: Row
    block: Block
    #: Ops per repeat.
    ops: int
    #: Records per op (64 for a group commit), so samples are per record.
    per: int = 1


def race(contenders: list[Contender], repeats: int, *, warmup: int = 1) -> None:
    """Time the contenders interleaved: every repeat runs each once, in a rotating order.

    A disk's flush latency drifts by tens of percent over seconds on a shared machine.
    Measured one after another, a store and its floor would meet different disks; taking
    turns, the drift falls on all of them alike, and their ratio is what is left.
    """
    for contender in contenders:
        contender.block(warmup)
    n = len(contenders)
    for r in range(repeats):
        for contender in contenders[r % n :] + contenders[: r % n]:
            seconds = time_once(functools.partial(contender.block, contender.ops))
            contender.row.samples.append(seconds / (contender.ops * contender.per))
