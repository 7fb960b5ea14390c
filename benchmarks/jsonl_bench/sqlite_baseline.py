"""SQLite as agent frameworks ship it: WAL, one row per record holding its JSON, autocommit.

Every append is its own transaction (what an agent loop that saves each message gets);
``synchronous=FULL`` syncs the WAL on every commit, ``NORMAL`` only at checkpoints.
"""

from __future__ import annotations

import os
import sqlite3
import statistics
from collections.abc import Iterator

import orjson

from . import workload
from .config import Context
from .timing import Row, first_ops, per_op, repeat

_SCHEMA = """
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL,
    sequence INTEGER NOT NULL,
    data BLOB NOT NULL,
    UNIQUE (session_id, sequence)
)
"""
MODES = ("FULL", "NORMAL")


def connect(path: str, synchronous: str) -> sqlite3.Connection:
    # isolation_level=None: the sqlite3 module opens no implicit transaction, so each
    # INSERT commits on its own, as an autocommit ORM session would.
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute(f"PRAGMA synchronous={synchronous}")
    con.execute(_SCHEMA)
    return con


def _encoded(kind: str, start: int, count: int) -> Iterator[tuple[int, bytes]]:
    for i in range(start, start + count):
        yield i + 1, orjson.dumps(workload.record_dict(workload.turn(kind, i), i + 1))


def extend(
    con: sqlite3.Connection, session_id: str, start: int, count: int, kind: str = workload.ASSISTANT
) -> None:
    """Add records ``start+1 .. start+count`` in one transaction (fast set-up, not measured)."""
    con.execute("BEGIN")
    con.executemany(
        "INSERT INTO messages (session_id, sequence, data) VALUES (?, ?, ?)",
        ((session_id, seq, data) for seq, data in _encoded(kind, start, count)),
    )
    con.execute("COMMIT")


class Appender:
    """Appends the next records of one session, one autocommitted INSERT each."""

    def __init__(self, con: sqlite3.Connection, session_id: str, start: int, kind: str, total: int) -> None:
        self.con = con
        self.session_id = session_id
        self.records = iter(workload.record_dicts(kind, start, total))

    def __call__(self, n: int) -> None:
        insert = self.con.execute
        for _ in range(n):
            record = next(self.records)
            insert(
                "INSERT INTO messages (session_id, sequence, data) VALUES (?, ?, ?)",
                (self.session_id, record["sequence"], orjson.dumps(record)),
            )


def tail(path: str, session_id: str, n: int) -> list[object]:
    """Resume: the last ``n`` records of a session, decoded, oldest first."""
    con = sqlite3.connect(path, isolation_level=None)
    try:
        rows = con.execute(
            "SELECT data FROM messages WHERE session_id = ? ORDER BY sequence DESC LIMIT ?", (session_id, n)
        ).fetchall()
    finally:
        con.close()
    return [orjson.loads(data) for (data,) in reversed(rows)]


def _curve_point(
    con: sqlite3.Connection, session_id: str, length: int, ops: int, repeats: int
) -> list[float]:
    """Seconds per append to a session of ``length`` records (0: its first record)."""
    if length == 0:
        return first_ops(lambda r: Appender(con, f"{session_id}-{r}", 0, workload.ASSISTANT, 1), repeats)
    # Keep the point's own appends from growing the session by more than half its length.
    ops = max(1, min(ops, length // (2 * repeats)))
    return per_op(Appender(con, session_id, length, workload.ASSISTANT, ops * (repeats + 1)), ops, repeats)


def run(ctx: Context) -> None:
    s, res, d = ctx.sizes, ctx.results, ctx.scratch("sqlite")
    for mode in MODES:
        ops = s.sync_ops if mode == "FULL" else s.fast_ops
        con = connect(os.path.join(d, f"{mode.lower()}.db"), mode)
        ctx.log(f"sqlite {mode}: append cost vs session length")
        for length in s.append_lengths:
            sid = f"len-{length}"
            extend(con, sid, 0, length)
            ctx.settle()
            samples = _curve_point(con, sid, length, ops, s.repeats)
            res.point("append", f"SQLite synchronous={mode}", length, statistics.median(samples))
        con.close()
    _resume_curve(ctx, os.path.join(d, "resume.db"))


def _resume_curve(ctx: Context, path: str) -> None:
    """Time fetching the last 100 records as the session grows through resume_lengths."""
    s, res = ctx.sizes, ctx.results
    con = connect(path, "NORMAL")
    have = 0
    for length in s.resume_lengths:
        ctx.log(f"sqlite: resume at {length:,} records")
        while have < length:
            step = min(s.build_batch * 16, length - have)
            extend(con, "resume", have, step)
            have += step
        # A resuming process meets a checkpointed database, not one whose latest rows
        # still sit in a large WAL (which made this figure jump between runs).
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        samples = repeat(lambda: tail(path, "resume", 100), s.repeats)
        res.add(
            Row(
                f"sqlite.resume.{length}",
                "SQLite",
                f"last 100 of {length:,} records (new connection)",
                samples,
                op="load",
            )
        )
        res.point("resume", "SQLite: last 100 rows", length, statistics.median(samples))
    con.close()
