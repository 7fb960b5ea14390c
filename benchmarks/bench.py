"""Benchmarks of jsonl_store side by side with the floor and the stores users pick instead.

    python benchmarks/bench.py --quick                 # CI: well under 2 minutes
    python benchmarks/bench.py --plot bench.png --json bench.json   # full: about 4 minutes

Measures, in one run and on the same records (0.8 KB assistant messages with a tool call
and usage; 10 KB tool results): the floor (bare encode+write, +fdatasync, atomic file
replace, msgspec decoding), jsonl_store, SQLite (WAL, autocommit, synchronous FULL and
NORMAL), whole-file rewrite, pydantic-ai-harness FileStepStore when installed, appends
under contention, search against grep -rF, and whole-context loads and durable batches
against the same work written by hand on a plain JSONL file. Prints absolute medians,
ratios to the floor and to SQLite, and the append targets, the scaling targets and those
against a plain file with whether each is met (benchmarks/README.md lists them). Ratios are printed, never asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence

import orjson

_HERE = os.path.dirname(os.path.abspath(__file__))
# The helpers package sits beside this script, and the store under test is the checkout
# this script belongs to (not whatever version happens to be installed).
sys.path[:0] = [p for p in (_HERE, os.path.dirname(_HERE)) if p not in sys.path]

# These imports must come after the sys.path set-up above, hence E402.
from jsonl_bench import (  # noqa: E402
    appends,
    harness,
    jsonl,
    plain,
    procs,
    report,
    search,
    sqlite_baseline,
    wholefile,
    workload,
)
from jsonl_bench.config import FULL, QUICK, TINY, Context, Sizes  # noqa: E402
from jsonl_bench.timing import Results  # noqa: E402

SECTIONS: dict[str, Callable[[Context], None]] = {
    "appends": appends.run,
    "sqlite": sqlite_baseline.run,
    "wholefile": wholefile.run,
    "harness": harness.run,
    "jsonl": jsonl.run,
    "contention": procs.contention,
    "search": search.run,
    "plain": plain.run,
}
NEEDS_STORE = {"jsonl", "contention", "search", "plain"}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="CI sizes: well under 2 minutes")
    parser.add_argument("--tiny", action="store_true", help="smoke-test sizes: every measure in seconds")
    parser.add_argument("--plot", metavar="PATH", help="write a PNG (needs matplotlib, the 'bench' extra)")
    parser.add_argument("--json", metavar="PATH", help="write every number as JSON")
    parser.add_argument(
        "--only", metavar="SECTIONS", help=f"comma-separated subset of: {', '.join(SECTIONS)}"
    )
    parser.add_argument(
        "--workdir", metavar="DIR", help="where the scratch directory is made (default: the system's temp)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the scratch files")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    args = parser.parse_args(argv)
    if args.only:
        unknown = set(args.only.split(",")) - set(SECTIONS)
        if unknown:
            parser.error(f"unknown section(s): {', '.join(sorted(unknown))}")
    return args


def choose_sizes(args: argparse.Namespace) -> Sizes:
    return TINY if args.tiny else QUICK if args.quick else FULL


def record_sizes(results: Results) -> str:
    """The line sizes actually compared, so a reader can see the workloads match."""
    floor_sizes = [
        len(orjson.dumps(workload.record_dict(workload.turn(kind, 0), 1))) + 1
        for kind in (workload.ASSISTANT, workload.TOOL)
    ]
    text = f"record sizes: baselines {floor_sizes[0]:,} B and {floor_sizes[1]:,} B per line"
    store_sizes = [
        results.rows[key].extra.get("bytes_per_record")
        for key in ("jsonl.append.fsync", "jsonl.append.fsync.tool")
        if key in results.rows
    ]
    if all(store_sizes) and len(store_sizes) == 2:
        text += f"; jsonl_store {store_sizes[0]:,.0f} B and {store_sizes[1]:,.0f} B per line"
    return text


def crc_line() -> str:
    """Which CRC-32 the store under test computes: the `fast` extra's zlib-ng or zlib."""
    try:
        from jsonl_store._format import checksum
    except ImportError:  # a store from before the extra
        return "CRC-32: zlib"
    return f"CRC-32: {checksum.IMPLEMENTATION}"


def run_sections(ctx: Context, names: list[str]) -> None:
    missing = jsonl.missing()
    for name in names:
        print(f"== {name}", flush=True)
        if name in NEEDS_STORE and missing:
            ctx.results.skipped[name] = missing
            print(f"  {missing}")
            continue
        began = time.perf_counter()
        ctx.settle()
        SECTIONS[name](ctx)
        ctx.release(name)
        ctx.log(f"{name}: {time.perf_counter() - began:,.1f} s")


def print_report(ctx: Context, args: argparse.Namespace, elapsed: float) -> None:
    results = ctx.results
    print()
    print(
        f"jsonl_store benchmarks, {ctx.sizes.name} mode, {elapsed:,.0f} s; each figure the median of n repeats"
    )
    print(record_sizes(results))
    print(crc_line())
    print("÷ floor / ÷ SQLite: cost ratios (below 1: cheaper than the reference)")
    print()
    print(report.table(results))
    print()
    print(report.curve_tables(results))
    print()
    items = report.targets(results, ctx.sizes)
    issue9 = report.issue9_targets(results, ctx.sizes)
    sized = (
        f" ({ctx.sizes.name} sizes; the full run measures at the targets' sizes)"
        if ctx.sizes is not FULL
        else ""
    )
    print(f"the append targets{sized}:")
    print(report.targets_table(items))
    print()
    print(f"the scaling targets{sized}:")
    print(report.targets_table(issue9))
    print()
    by_hand = report.plain_targets(results, ctx.sizes)
    print(f"targets against a plain JSONL file by hand{sized}:")
    print(report.targets_table(by_hand))
    if note := report.first_load_note(results, ctx.sizes):
        print(note)
    for name, reason in results.skipped.items():
        print(f"{name}: {reason}")
    print(report.scratch_line(results, ctx.keep))
    for note in results.notes:
        print(f"note: {note}")
    if args.plot:
        problem = report.plot(args.plot, results)
        print(problem or f"plot written to {args.plot}")
    if args.json:
        report.dump_json(args.json, results, ctx.sizes, items + issue9 + by_hand, elapsed)
        print(f"numbers written to {args.json}")


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    sizes = choose_sizes(args)
    names = args.only.split(",") if args.only else list(SECTIONS)
    if args.workdir:
        os.makedirs(args.workdir, exist_ok=True)
    # Always a new directory of our own, even inside --workdir: only it is removed after.
    workdir = tempfile.mkdtemp(prefix="jsonl-store-bench-", dir=args.workdir)
    ctx = Context(sizes=sizes, workdir=workdir, results=Results(), verbose=not args.quiet, keep=args.keep)
    began = time.perf_counter()
    try:
        run_sections(ctx, names)
    finally:
        if not args.keep:
            # The big logs are gigabytes in the full run: never leave them behind.
            shutil.rmtree(workdir, ignore_errors=True)
    print_report(ctx, args, time.perf_counter() - began)
    return 0


if __name__ == "__main__":
    sys.exit(main())
