"""Whole-file rewrite: one JSON file per session, rewritten on every save.

What simple file stores do (dump the full message list, then atomically replace the file):
each save costs O(history), so an append gets slower as the session grows.
"""

from __future__ import annotations

import os
import statistics
from typing import Any

import orjson

from . import workload
from .config import Context, Sizes
from .floor import replace_file
from .timing import Block, Row, first_ops, per_op, repeat


class WholeFileSession:
    """A session held in memory and saved as one JSON array, durably, after each append."""

    def __init__(self, path: str, records: list[dict[str, Any]]) -> None:
        self.path = path
        self.records = records

    def append(self, record: dict[str, Any]) -> None:
        self.records.append(record)
        replace_file(self.path, orjson.dumps(self.records))


def resume(path: str) -> list[Any]:
    """Load: read and parse the whole file, keep the last 100 records."""
    with open(path, "rb") as f:
        records: list[Any] = orjson.loads(f.read())
    return records[-100:]


def _save_cost(path: str, length: int, sizes: Sizes) -> list[float]:
    """Seconds per append + rewrite of a session already holding ``length`` records."""
    if length == 0:
        return first_ops(lambda r: _first_save(f"{path}.{r}"), sizes.repeats)
    session = WholeFileSession(path, workload.record_dicts(workload.ASSISTANT, 0, length))
    # Each save rewrites the whole history, so fewer ops per repeat as the session grows.
    ops = max(1, min(sizes.sync_ops, length // (2 * sizes.repeats), 200_000 // max(1, length)))
    fresh = iter(workload.record_dicts(workload.ASSISTANT, length, ops * (sizes.repeats + 1)))

    def block(n: int) -> None:
        for _ in range(n):
            session.append(next(fresh))

    return per_op(block, ops, sizes.repeats)


def _first_save(path: str) -> Block:
    session = WholeFileSession(path, [])
    record = workload.record_dict(workload.turn(workload.ASSISTANT, 0), 1)
    return lambda n: session.append(record)


def _resume_cost(path: str, length: int, repeats: int) -> list[float]:
    with open(path, "wb") as f:
        f.write(orjson.dumps(workload.record_dicts(workload.ASSISTANT, 0, length)))
    return repeat(lambda: resume(path), repeats)


def run(ctx: Context) -> None:
    s, res, d = ctx.sizes, ctx.results, ctx.scratch("wholefile")
    for length in s.append_lengths:
        ctx.log(f"whole-file: save at {length:,} records")
        samples = _save_cost(os.path.join(d, f"len-{length}.json"), length, s)
        res.add(
            Row(
                f"wholefile.save.{length}",
                "whole-file",
                f"append + rewrite at {length:,} records",
                samples,
                floor="floor.fdatasync",
                sqlite="sqlite.full",
                op="append",
            )
        )
        res.point("append", "whole-file rewrite", length, statistics.median(samples))
    for length in s.resume_lengths:
        if length > s.wholefile_resume_max:
            break
        ctx.log(f"whole-file: resume at {length:,} records")
        samples = _resume_cost(os.path.join(d, f"resume-{length}.json"), length, s.repeats)
        res.add(
            Row(
                f"wholefile.resume.{length}",
                "whole-file",
                f"read + parse {length:,} records",
                samples,
                op="load",
            )
        )
        res.point("resume", "whole-file: read + parse", length, statistics.median(samples))
