"""Sizes of each mode, and the run context every section receives."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass

from .scratch import disk_usage
from .timing import Results


@dataclass(frozen=True)
class Sizes:
    """How much work each measure does; the three presets are below."""

    name: str
    repeats: int
    #: Repeats of the interleaved head-to-head runs (cheap, and the targets hang on them).
    race_repeats: int
    #: Ops per repeat for operations that fsync (each costs a disk flush).
    sync_ops: int
    #: Ops per repeat for buffered operations.
    fast_ops: int
    #: Session lengths of the append-cost curve (0: the first append of a new session).
    append_lengths: tuple[int, ...]
    #: Event counts at which pydantic-ai-harness appends are measured (issue 5: 0, 100, 1,000).
    harness_lengths: tuple[int, ...]
    #: Log lengths of the resume curve; the first and last feed the load() target.
    resume_lengths: tuple[int, ...]
    #: Whole-file resume rereads and parses everything: stop the curve here.
    wholefile_resume_max: int
    #: Size of the log that records() scans (throughput and peak memory).
    scan_bytes: int
    #: Sessions list_sessions() walks, and records in each.
    sessions: int
    records_per_listed_session: int
    #: Appends per process in the contention runs, fsync'd and buffered.
    contention_sync: int
    contention_fast: int
    procs: tuple[int, ...]
    #: Records per append_many call when building big logs with durability="none".
    build_batch: int
    #: Log lengths (small, big) of the snapshot() rows: the cost of a boundary one record
    #: past the previous one must not follow the log's length (issue 9).
    snapshot_lengths: tuple[int, int] = (2_000, 40_000)
    #: Snapshot files of the load() row compared with one file (issue 9).
    snapshot_files: int = 1_000
    #: Sessions one store appends to in turn, against appends to one session (issue 9).
    round_robin_sessions: int = 200
    #: List lengths (short, long) of the checkpoint() rows: adding one message must cost
    #: the same at either length (issue 9).
    checkpoint_lengths: tuple[int, int] = (1_000, 100_000)
    #: Messages of the sessions whose whole context load().messages restores, raced with
    #: reading and parsing the log by hand: about what a 200k-token context
    #: window holds (1 MiB), and ten times that.
    context_lengths: tuple[int, ...] = (200, 2_000)


FULL = Sizes(
    name="full",
    repeats=7,
    race_repeats=21,
    sync_ops=50,
    fast_ops=2000,
    append_lengths=(0, 100, 1_000, 10_000, 100_000),
    harness_lengths=(0, 100, 1_000),
    resume_lengths=(1_000, 10_000, 100_000, 1_000_000),
    wholefile_resume_max=100_000,
    scan_bytes=1 << 30,
    sessions=10_000,
    records_per_listed_session=10,
    contention_sync=200,
    contention_fast=5_000,
    procs=(1, 2, 4),
    build_batch=4096,
)

QUICK = Sizes(
    name="quick",
    repeats=5,
    race_repeats=11,
    sync_ops=20,
    fast_ops=1000,
    append_lengths=(0, 100, 1_000, 10_000),
    harness_lengths=(0, 100, 1_000),
    resume_lengths=(1_000, 10_000, 100_000),
    wholefile_resume_max=100_000,
    scan_bytes=50 << 20,
    sessions=500,
    records_per_listed_session=10,
    contention_sync=50,
    contention_fast=1000,
    procs=(1, 2, 4),
    build_batch=4096,
)

# For a smoke test: every measure runs, each on a handful of records.
TINY = Sizes(
    name="tiny",
    repeats=3,
    race_repeats=3,
    sync_ops=3,
    fast_ops=50,
    append_lengths=(0, 20),
    harness_lengths=(0, 20),
    resume_lengths=(150, 300),
    wholefile_resume_max=300,
    scan_bytes=512 << 10,
    sessions=10,
    records_per_listed_session=2,
    contention_sync=3,
    contention_fast=30,
    procs=(1, 2),
    build_batch=256,
    snapshot_lengths=(200, 2_000),
    snapshot_files=50,
    checkpoint_lengths=(100, 2_000),
    context_lengths=(20, 200),
)


@dataclass
class Context:
    """What a section needs: the sizes, a scratch directory of its own, and the results."""

    sizes: Sizes
    workdir: str
    results: Results
    verbose: bool = True
    #: Keep every measure's files (--keep) instead of removing them when it ends.
    keep: bool = False

    def scratch(self, name: str) -> str:
        path = os.path.join(self.workdir, name)
        os.makedirs(path, exist_ok=True)
        return path

    def release(self, measure: str, name: str | None = None) -> None:
        """A measure is done: note what the scratch directory holds, then remove ``name``.

        ``name`` None removes everything (the end of a section). Files are removed as soon
        as their measure ends, so the run needs the disk of its biggest measure, not of all.
        """
        self.results.scratch[measure] = disk_usage(self.workdir)
        if self.keep:
            return
        for entry in [name] if name is not None else os.listdir(self.workdir):
            shutil.rmtree(os.path.join(self.workdir, entry), ignore_errors=True)

    def settle(self) -> None:
        """Flush everything set-up wrote before timing an fsync'd operation.

        A set-up that wrote a big log with durability="none" leaves dirty pages behind,
        and on ext4 (data=ordered) the next journal commit, which an unrelated fdatasync
        triggers, may have to write them first: that cost belongs to no measure.
        """
        os.sync()

    def log(self, message: str) -> None:
        if self.verbose:
            print(f"  .. {message}", flush=True)
