"""Turning results into the printed tables, the issue-5 targets, a JSON dump and a plot."""

from __future__ import annotations

import json
import math
import platform
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from .config import Sizes
from .floor import GROUP
from .scratch import fmt_bytes
from .timing import Results, Row


def fmt_time(seconds: float) -> str:
    if math.isnan(seconds):
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return (
                f"{seconds / scale:,.3g} {unit}"
                if seconds < 1000 * scale
                else f"{seconds / scale:,.0f} {unit}"
            )
    return f"{seconds / 1e-9:,.3g} ns"


def _rate(seconds: float) -> str:
    if not seconds or math.isnan(seconds):
        return "-"
    rate = 1 / seconds
    return f"{rate:,.0f}/s" if rate >= 10 else f"{rate:,.2f}/s"


def ratio(results: Results, key: str | None, of: str | None) -> float | None:
    """median(key) / median(of), or None when either is missing."""
    if key is None or of is None:
        return None
    a, b = results.median(key), results.median(of)
    if a is None or b is None or b == 0:
        return None
    return a / b


def _fmt_ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:,.2f}×"


def table(results: Results) -> str:
    """The main table: absolute medians, ops per second, and cost ratios (lower is cheaper)."""
    header = ("group", "measure", "median", "spread", "rate", "÷ floor", "÷ SQLite", "n")
    lines = [header]
    for row in results.rows.values():
        if row.unit == "text":
            value, rate = row.text, ""
        elif row.unit == "MB":
            value, rate = f"{row.median:,.1f} MB", ""
        else:
            value, rate = fmt_time(row.median) + f"/{row.op}", _rate(row.median)
        lines.append(
            (
                row.group,
                row.label,
                value,
                _fmt_spread(row),
                rate,
                _fmt_ratio(ratio(results, row.key, row.floor)),
                _fmt_ratio(ratio(results, row.key, row.sqlite)),
                str(len(row.samples)) if row.samples else "",
            )
        )
    return _align(lines, right={2, 3, 4, 5, 6, 7})


def _fmt_spread(row: Row) -> str:
    """± half the range of the repeats, in percent of the median ("" for one repeat)."""
    spread = row.spread if row.unit == "s/op" else None
    return "" if spread is None else f"±{spread * 100:,.0f}%"


def curve_tables(results: Results) -> str:
    """One table per chart: a row per store, a column per session (or log) length."""
    titles = {"append": "append cost vs. session length", "resume": "resume time vs. log length"}
    out = []
    for chart, series in results.curves.items():
        lengths = sorted({length for points in series.values() for length, _ in points})
        lines: list[tuple[str, ...]] = [(titles.get(chart, chart), *(f"{n:,}" for n in lengths))]
        for name, points in series.items():
            by_length = dict(points)
            lines.append((name, *(fmt_time(by_length[n]) if n in by_length else "" for n in lengths)))
        out.append(_align(lines, right=set(range(1, len(lengths) + 1))))
    return "\n\n".join(out)


def _align(lines: Sequence[Sequence[str]], right: set[int]) -> str:
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    text = []
    for n, line in enumerate(lines):
        cells = [
            cell.rjust(w) if i in right else cell.ljust(w)
            for i, (cell, w) in enumerate(zip(line, widths, strict=True))
        ]
        text.append("  ".join(cells).rstrip())
        if n == 0:
            text.append("  ".join("-" * w for w in widths))
    return "\n".join(text)


# ---------------------------------------------------------------------------------------
# Targets of issue 5 (printed, never asserted: timings are not tests)
# ---------------------------------------------------------------------------------------


@dataclass
class Target:
    measure: str
    requirement: str
    measured: str
    #: None when a figure it needs was not measured (a skipped section).
    met: bool | None


def _check(
    measure: str, requirement: str, parts: list[tuple[str, float | None, Callable[[float], bool]]]
) -> Target:
    """A target made of one or more ratios, met when every ratio passes its test."""
    if any(value is None for _, value, _ in parts):
        return Target(measure, requirement, "not measured", None)
    measured = ", ".join(f"{name} {value:,.2f}" for name, value, _ in parts)
    return Target(
        measure, requirement, measured, all(test(value) for _, value, test in parts if value is not None)
    )


def _inverse(value: float | None) -> float | None:
    return None if value is None or value == 0 else 1 / value


def _race_ratio(results: Results, key: str, of: str) -> str:
    """The two medians behind a ratio and their spreads, for the targets table."""
    parts = []
    for name in (key, of):
        row = results.rows.get(name)
        if row is None or not row.samples:
            return ""
        parts.append(fmt_time(row.median) + ("" if row.spread is None else f" ±{row.spread * 100:,.0f}%"))
    return f" ({parts[0]} vs {parts[1]})"


@dataclass(frozen=True)
class Ratio:
    """One ratio a target hangs on, median(key) / median(of), and the bound it must keep."""

    label: str
    key: str
    of: str
    at_most: float | None = None
    at_least: float | None = None

    def passes(self, value: float) -> bool:
        return (self.at_most is None or value <= self.at_most) and (
            self.at_least is None or value >= self.at_least
        )


def _ratio_target(results: Results, name: str, requirement: str, ratios: list[Ratio]) -> Target:
    """A target met when every ratio keeps its bound; each shown with its two medians and spreads."""
    target = _check(name, requirement, [(r.label, ratio(results, r.key, r.of), r.passes) for r in ratios])
    if target.met is not None:
        target.measured = "; ".join(
            f"{r.label} {ratio(results, r.key, r.of):,.2f}{_race_ratio(results, r.key, r.of)}" for r in ratios
        )
    return target


def issue9_targets(results: Results, sizes: Sizes) -> list[Target]:
    """Issue 9's speed targets, in the issue's order, each a ratio of rows raced in one run.

    Each ratio is its first row's median over its second's, both shown after it. A target
    on speed puts the reference first ("SQLite NORMAL ÷ append" ≥ 3: three times faster).
    """
    small, big = sizes.snapshot_lengths
    files = sizes.snapshot_files
    sessions = sizes.round_robin_sessions
    few, many = sizes.checkpoint_lengths
    steps = [
        Ratio(
            where, f"jsonl.snapshot_step.{where}.{big}", f"jsonl.snapshot_step.{where}.{small}", at_most=1.5
        )
        for where in ("early", "late")
    ]
    loads = [
        Ratio(
            way.replace("_", " "),
            f"jsonl.load.snapshot_files.{way}.{files}",
            f"jsonl.load.snapshot_files.{way}.1",
            at_most=1.2,
        )
        for way in ("same_store", "new_store")
    ]
    round_robin = [
        Ratio(
            f"{what} ÷ one session",
            f"jsonl.round_robin.{durability}",
            f"jsonl.one_session.{durability}",
            at_most=1.3,
        )
        for durability, what in (("none", "buffered"), ("fsync", "durable"))
    ]
    return [
        _ratio_target(
            results,
            'buffered append (durability="none"), 0.8 KB',
            "cost ≤ 4× encode+write floor; ≥ 3× faster than SQLite WAL NORMAL",
            [
                Ratio("cost ÷ floor", "jsonl.append.none", "floor.write", at_most=4),
                Ratio("SQLite NORMAL ÷ append", "sqlite.normal", "jsonl.append.none", at_least=3),
            ],
        ),
        _ratio_target(
            results,
            "durable append, 0.8 KB",
            "cost ≤ 1.1× write+fdatasync floor",
            [Ratio("cost ÷ floor", "jsonl.append.fsync", "floor.fdatasync", at_most=1.1)],
        ),
        _ratio_target(
            results,
            f"append_many({GROUP}), durable, per record",
            f"cost ≤ 1.5× ({GROUP} × encode+write, 1 fdatasync) / {GROUP}",
            [Ratio("cost ÷ floor", "jsonl.append_many64.fsync", "floor.group64", at_most=1.5)],
        ),
        _ratio_target(
            results,
            f"round-robin appends over {sessions:,} sessions, one store",
            "cost ≤ 1.3× appends to one session (buffered and durable)",
            round_robin,
        ),
        _ratio_target(
            results,
            f"checkpoint() adding 1 message, {many:,}- vs {few:,}-message list",
            'ratio ≤ 1.5 (durability="none": CPU, not the disk)',
            [Ratio("ratio", f"jsonl.checkpoint.{many}", f"jsonl.checkpoint.{few}", at_most=1.5)],
        ),
        _ratio_target(
            results,
            "records() full scan",
            "throughput ≥ 0.65× msgspec decoding the same lines",
            [Ratio("msgspec ÷ records()", "floor.decode", "jsonl.records", at_least=0.65)],
        ),
        _ratio_target(
            results,
            "update_session",
            "cost ≤ 1.2× tmp + fsync + rename + dir fsync floor",
            [Ratio("cost ÷ floor", "jsonl.update_session", "floor.replace", at_most=1.2)],
        ),
        _ratio_target(
            results,
            f"load() with {files:,} snapshot files vs 1",
            "ratio ≤ 1.2 (one store; a new store object each)",
            loads,
        ),
        _ratio_target(
            results,
            f"snapshot() one record past the previous boundary, {big:,} vs {small:,} records",
            "ratio ≤ 1.5, early and late boundary",
            steps,
        ),
    ]


def plain_targets(results: Results, sizes: Sizes) -> list[Target]:
    """Where a plain JSONL file handled by hand was the faster way: each raced with it (`plain`)."""
    return [
        _ratio_target(
            results,
            "whole context, load().messages",
            "cost ≤ 1.05× reading + orjson-parsing the log by hand",
            [
                Ratio(
                    f"{count:,} messages",
                    f"jsonl.load_messages.{count}",
                    f"plain.load_messages.{count}",
                    at_most=1.05,
                )
                for count in sizes.context_lengths
            ],
        ),
        _ratio_target(
            results,
            f"append_many({GROUP}), durable, per record",
            f"cost ≤ 1.05× {GROUP} encoded by hand + 1 write + 1 fdatasync",
            [Ratio("cost ÷ by hand", "jsonl.append_many64.durable", "plain.group64", at_most=1.05)],
        ),
    ]


def first_load_note(results: Results, sizes: Sizes) -> str | None:
    """What a process's first load() pays for many snapshot files: one listing, no target."""
    key, of = f"jsonl.load.snapshot_files.first.{sizes.snapshot_files}", "jsonl.load.snapshot_files.first.1"
    value = ratio(results, key, of)
    if value is None:
        return None
    return (
        f"load() with {sizes.snapshot_files:,} snapshot files vs 1, a process's first (its one listing "
        f"of the directory): {value:,.2f}{_race_ratio(results, key, of)}"
    )


def targets(results: Results, sizes: Sizes) -> list[Target]:
    r = results
    small, big = sizes.resume_lengths[0], sizes.resume_lengths[-1]
    memory = r.median("jsonl.scan_memory")
    scan = r.rows.get("jsonl.records")
    scanned = f"a {scan.extra['bytes'] / 2**20:,.0f} MiB" if scan else "a"
    return [
        _check(
            "durable append (fsync per record)",
            "throughput ≥ 0.9× write+fdatasync floor and ≥ 1.2× SQLite FULL",
            [
                ("× floor", _inverse(ratio(r, "jsonl.append.fsync", "floor.fdatasync")), lambda x: x >= 0.9),
                (
                    "× SQLite FULL",
                    _inverse(ratio(r, "jsonl.append.fsync", "sqlite.full")),
                    lambda x: x >= 1.2,
                ),
            ],
        ),
        _check(
            "group commit, 64 records per fsync",
            "per-record cost ≤ 2× (64 × encode+write, 1 fdatasync) / 64",
            [("cost ÷ floor", ratio(r, "jsonl.append_many64.fsync", "floor.group64"), lambda x: x <= 2)],
        ),
        _check(
            'buffered append (durability="none")',
            "cost ≤ 4× encode+write floor and ≥ 4× faster than SQLite NORMAL",
            [
                ("cost ÷ floor", ratio(r, "jsonl.append.none", "floor.write"), lambda x: x <= 4),
                (
                    "× SQLite NORMAL speed",
                    _inverse(ratio(r, "jsonl.append.none", "sqlite.normal")),
                    lambda x: x >= 4,
                ),
            ],
        ),
        _check(
            f"load() at {big:,} vs {small:,} records, 100-record tail",
            "ratio ≤ 1.5",
            # Against the reference load raced with it (same length as the small point).
            [("ratio", ratio(r, f"jsonl.load.{big}", "jsonl.load.reference"), lambda x: x <= 1.5)],
        ),
        _check(
            "records() full scan",
            "throughput ≥ 0.6× msgspec decoding the same lines",
            [("× msgspec", _inverse(ratio(r, "jsonl.records", "floor.decode")), lambda x: x >= 0.6)],
        ),
        _check(
            f"list_sessions() over {sizes.sessions:,} sessions",
            "≤ 2× reading each meta file + last 4 KiB of log",
            [("cost ÷ floor", ratio(r, "jsonl.list_sessions", "floor.list"), lambda x: x <= 2)],
        ),
        _check(
            f"peak memory scanning {scanned} log",
            "RSS grows by ≤ 50 MB",
            [("MB", memory, lambda x: x <= 50)],
        ),
        _check(
            "update_session",
            "≤ 1.5× tmp + fsync + rename + dir fsync floor",
            [("cost ÷ floor", ratio(r, "jsonl.update_session", "floor.replace"), lambda x: x <= 1.5)],
        ),
    ]


def scratch_line(results: Results, kept: bool) -> str:
    """The most disk the scratch files took, and after which measure."""
    if not results.scratch:
        return "scratch on disk: not measured"
    where, peak = max(results.scratch.items(), key=lambda item: item[1])
    how = "nothing removed (--keep)" if kept else "each measure's files removed when it ends"
    return f"scratch on disk: peak {fmt_bytes(peak)}, after {where} (measured as each measure ends; {how})"


def targets_table(items: list[Target]) -> str:
    lines = [("target", "requirement", "measured", "verdict")]
    for t in items:
        verdict = "not measured" if t.met is None else ("MET" if t.met else "MISSED")
        lines.append((t.measure, t.requirement, t.measured, verdict))
    return _align(lines, right=set())


# ---------------------------------------------------------------------------------------
# JSON and plot
# ---------------------------------------------------------------------------------------


def _row_json(results: Results, row: Row) -> dict[str, Any]:
    data = asdict(row)
    data["median"] = row.median if row.samples else None
    data["ratio_to_floor"] = ratio(results, row.key, row.floor)
    data["ratio_to_sqlite"] = ratio(results, row.key, row.sqlite)
    return data


def dump_json(path: str, results: Results, sizes: Sizes, items: list[Target], seconds: float) -> None:
    data = {
        "mode": sizes.name,
        "sizes": asdict(sizes),
        "python": sys.version,
        "platform": platform.platform(),
        "elapsed_seconds": seconds,
        "rows": [_row_json(results, row) for row in results.rows.values()],
        "curves": {
            chart: {name: points for name, points in series.items()}
            for chart, series in results.curves.items()
        },
        "targets": [asdict(t) for t in items],
        "notes": results.notes,
        "skipped": results.skipped,
        "scratch_bytes_after": results.scratch,
    }
    with open(path, "w") as f:
        json.dump(data, f, indent=2, default=str)
        f.write("\n")


def plot(path: str, results: Results) -> str | None:
    """Write the PNG; return None, or a note when matplotlib (the ``bench`` extra) is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")  # no display needed, and none in CI
        import matplotlib.pyplot as plt
    except ImportError:
        return "plot skipped: matplotlib not installed (pip install 'jsonl_store[bench]')"
    fig, axes = plt.subplots(1, 2, figsize=(13, 6.5))
    titles = {
        "append": ("append cost vs. session length", "records already in the session"),
        "resume": ("resume time vs. log length", "records in the raw log"),
    }
    for ax, chart in zip(axes, ("append", "resume"), strict=True):
        for name, points in results.curves.get(chart, {}).items():
            xs, ys = zip(*sorted(points), strict=True)
            ax.plot(xs, [y * 1e3 for y in ys], marker="o", label=name)
        title, xlabel = titles[chart]
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("milliseconds (median)")
        ax.set_xscale("symlog", linthresh=10)
        ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
        # Below the axes: inside, the legend hides the curves it names.
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, frameon=False)
    if chart_floor := results.median("floor.fdatasync"):
        axes[0].axhline(chart_floor * 1e3, color="grey", linestyle="--", linewidth=1)
        axes[0].annotate("write + fdatasync floor", (0, chart_floor * 1e3), fontsize=7, color="grey")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None
