"""Crash fuzzing: hypothesis workloads, every crash state of each, a fresh store on each.

    python fuzz/crash_fuzz.py            # a short run (200 workloads)
    python fuzz/crash_fuzz.py --long     # 10,000 workloads
    python fuzz/crash_fuzz.py --examples 500 --durability fsync --jobs 2 --seed 7
    python fuzz/crash_fuzz.py --faults   # also inject EIO / ENOSPC / short writes

Each workload (appends, tool batches one write or several, snapshots, metadata updates,
token usage, over one or two sessions) runs on a `SimulatedFileSystem`; then every prefix
of its file-system trace is crashed (process crash, and power losses under
``durability="fsync"``) and `jsonl_store.testing.oracle.check_crash_state` checks a fresh store
on each state, including crashes of the recovery itself. The run prints how many
workloads and crash states it checked; a failure prints the shrunk workload, the crash
state and its trace, and exits with status 1.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import time
from dataclasses import dataclass

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from jsonl_store.testing import Fault
from jsonl_store.testing.oracle import CheckCounts, Operation, check_workload
from jsonl_store.testing.strategies import faults, workloads

LONG_EXAMPLES = 10_000
SHORT_EXAMPLES = 200


@dataclass
class Options:
    examples: int
    durability: str
    seed: int
    max_states_per_prefix: int
    tear_points: int
    recovery_states: int
    atomic_batches: bool
    volatile_restart: bool
    faults: bool
    max_steps: int
    progress: bool


@dataclass
class Outcome:
    workloads: int
    counts: CheckCounts
    failure: str | None


def run(options: Options) -> Outcome:
    """Run ``options.examples`` workloads in this process; stop at the first failure."""
    counts = CheckCounts()
    done = 0
    started = time.monotonic()
    modes = ["fsync", "none"] if options.durability == "both" else [options.durability]

    @hypothesis_seed(options.seed)
    @settings(
        max_examples=options.examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.generate, Phase.shrink],
    )
    @given(
        workload=workloads(max_steps=options.max_steps),
        durability=st.sampled_from(modes),
        fault=faults() | st.none() if options.faults else st.none(),
    )
    def one(workload: list[Operation], durability: str, fault: Fault | None) -> None:
        nonlocal done, counts
        result = check_workload(
            workload,
            durability="fsync" if durability == "fsync" else "none",
            max_states_per_prefix=options.max_states_per_prefix,
            max_tear_points=options.tear_points,
            recovery_states=options.recovery_states,
            atomic_batches=options.atomic_batches,
            volatile_restart=options.volatile_restart,
            fault=fault,
            continue_after_fault=True,
            seed=options.seed,
        )
        counts += result
        done += 1
        if options.progress and done % 100 == 0:
            rate = done / (time.monotonic() - started)
            print(
                f"  seed {options.seed}: {done} workloads, {counts.total} states ({rate:.1f} workloads/s)",
                flush=True,
            )

    try:
        one()
    except Exception as exc:  # noqa: BLE001 -- a RecoveryFailure, or any store error: report, do not crash the pool
        notes = "\n".join(getattr(exc, "__notes__", []))  # hypothesis's falsifying example
        return Outcome(done, counts, f"{notes}\n{type(exc).__name__}: {exc}")
    return Outcome(done, counts, None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--long", action="store_true", help=f"run {LONG_EXAMPLES:,} workloads")
    parser.add_argument("--examples", type=int, help=f"workloads to run (default {SHORT_EXAMPLES})")
    parser.add_argument("--durability", choices=["fsync", "none", "both"], default="both")
    parser.add_argument("--seed", type=int, default=0, help="hypothesis seed (job i uses seed + i)")
    parser.add_argument("--jobs", type=int, default=multiprocessing.cpu_count(), help="worker processes")
    parser.add_argument("--max-states-per-prefix", type=int, default=8)
    parser.add_argument("--tear-points", type=int, default=3, help="tear positions per unsynced write")
    parser.add_argument("--recovery-states", type=int, default=2, help="crashes of each recovery checked")
    parser.add_argument("--max-steps", type=int, default=8, help="agent steps per workload")
    parser.add_argument(
        "--faults",
        action="store_true",
        help="also inject an I/O error (EIO, ENOSPC, short write) into workloads",
    )
    parser.add_argument(
        "--durable-restart",
        action="store_true",
        help="weaker model: after a process crash, treat everything written as durable at the restart",
    )
    parser.add_argument(
        "--allow-partial-batches",
        action="store_true",
        help="do not require append_many to be all or nothing after a power loss",
    )
    args = parser.parse_args(argv)
    total = args.examples if args.examples is not None else (LONG_EXAMPLES if args.long else SHORT_EXAMPLES)
    jobs = max(1, min(args.jobs, total))
    shares = [total // jobs + (1 if i < total % jobs else 0) for i in range(jobs)]
    plans = [
        Options(
            examples=share,
            durability=args.durability,
            seed=args.seed + i,
            max_states_per_prefix=args.max_states_per_prefix,
            tear_points=args.tear_points,
            recovery_states=args.recovery_states,
            atomic_batches=not args.allow_partial_batches,
            volatile_restart=not args.durable_restart,
            faults=args.faults,
            max_steps=args.max_steps,
            progress=args.long,
        )
        for i, share in enumerate(shares)
    ]
    print(f"crash fuzzing: {total:,} workloads ({args.durability}) in {jobs} process(es)", flush=True)
    started = time.monotonic()
    if jobs == 1:
        outcomes = [run(plans[0])]
    else:
        with multiprocessing.Pool(jobs) as pool:
            outcomes = pool.map(run, plans)
    elapsed = time.monotonic() - started
    counts = CheckCounts()
    for outcome in outcomes:
        counts += outcome.counts
    done = sum(o.workloads for o in outcomes)
    print(
        f"checked {done:,} workloads: {counts.total:,} crash states "
        f"({counts.states:,} of the workloads at {counts.prefixes:,} crash points, "
        f"{counts.recovery_states:,} of interrupted recoveries) in {elapsed:.0f} s"
    )
    failures = [o.failure for o in outcomes if o.failure is not None]
    for failure in failures:
        print("\nFAILED\n" + failure, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
