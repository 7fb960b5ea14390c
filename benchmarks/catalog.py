"""What the catalog (spec §21) costs and saves: listing, its first build, ranked search.

    python benchmarks/catalog.py              # 10,000 sessions (about 100 MB of logs), built once
    python benchmarks/catalog.py --quick      # 1,000 sessions (CI)
    python benchmarks/catalog.py --keep DIR   # build the store into DIR once, reuse it next time
    python benchmarks/catalog.py --baseline OLD   # race the jsonl_store package in OLD (another checkout) too

A store of ``--sessions`` sessions of ``--messages`` messages each (about 1 KB of prose
and a tool call per message) is written once into a scratch directory. Then:

- **build**: the first ``list_sessions()`` on a store without a catalog, and the first
  full catalog build (summaries and the full-text index), as MB of logs per second;
- **list**, raced (`jsonl_bench.timing.race`: every repeat runs each contender once, in a
  rotating order): ``list_sessions()`` from the catalog, freshness check included; a
  SQLite query returning the same columns from a table built for it (the peer's floor);
  a listing without the catalog (every session's files read); reading and parsing every
  ``meta.json``;
- **ranked search**: ``search_ranked(store, query)`` (freshness check included) and the
  FTS5 query alone, for a rare and a common query.

The listing race also holds the freshness check's floor: three ``os.stat`` calls per
session (its directory, ``meta.json`` and raw log), nothing else. With ``--baseline``, the
``jsonl_store`` package below ``OLD`` is imported under another name and its listing and
ranked search race in the same rounds, on a copy of the store of their own (a catalog is
tied to the files' inodes, and two versions of it must not share one).

Every figure is the median of ``--repeats`` samples with its spread (10th to 90th
percentile), in wall time and in the process's CPU time (``time.process_time``: on a
shared machine the wall time is mostly waiting for a core); ratios are median over
median, printed, never asserted.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from types import ModuleType

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [p for p in (_HERE, os.path.dirname(_HERE)) if p not in sys.path]

import msgspec  # noqa: E402

from jsonl_store import OsFileSystem, SessionStore, SessionSummary  # noqa: E402
from jsonl_store._session.catalog_index import LogState, Row, index_log, insert  # noqa: E402
from jsonl_store._session.catalog_schema import discard, open_catalog  # noqa: E402
from jsonl_store.search import search_ranked  # noqa: E402

WORDS = [
    "date",
    "parsing",
    "importer",
    "week",
    "calendar",
    "fix",
    "test",
    "error",
    "retry",
    "branch",
    "merge",
    "commit",
    "review",
    "deploy",
    "queue",
    "worker",
    "cache",
    "index",
    "schema",
    "migration",
    "token",
    "budget",
    "prompt",
    "tool",
    "shell",
    "file",
    "read",
    "write",
    "patch",
    "diff",
    "line",
    "column",
    "offset",
    "buffer",
    "stream",
    "socket",
    "timeout",
    "lock",
    "thread",
]


def _message(rng: random.Random, number: int) -> dict[str, object]:
    words = " ".join(rng.choice(WORDS) for _ in range(140))
    if number % 3 == 2:
        return {"role": "tool", "tool_call_id": f"c{number}", "content": words}
    if number % 3 == 1:
        return {
            "role": "assistant",
            "content": words,
            "tool_calls": [
                {
                    "id": f"c{number + 1}",
                    "type": "function",
                    "function": {"name": "shell", "arguments": json.dumps({"cmd": words[:80]})},
                }
            ],
        }
    return {"role": "user", "content": words}


def build_store(root: str, sessions: int, messages: int) -> None:
    """Write ``sessions`` sessions of ``messages`` messages (no fsync: this is set-up)."""
    rng = random.Random(7)
    with SessionStore(root, durability="none") as store:
        for number in range(sessions):
            sid = f"session-{number:05d}"
            batch = [_message(rng, n) for n in range(messages)]
            if number % 97 == 0:
                batch[0] = {
                    "role": "user",
                    "content": "the rare aardvark appears " + str(batch[0]["content"]),
                }
            store.append_many(sid, batch, title=f"Session {number}", agent_name="bench")


def log_bytes(root: str) -> int:
    return sum(
        os.path.getsize(os.path.join(root, name, "messages.jsonl"))
        for name in os.listdir(root)
        if os.path.isfile(os.path.join(root, name, "messages.jsonl"))
    )


def sqlite_peer(path: str, summaries: list[SessionSummary]) -> Callable[[], object]:
    """A table with a listing's columns and a query returning them, newest first."""
    if os.path.exists(path):
        os.unlink(path)
    connection = sqlite3.connect(path)
    connection.execute(
        "CREATE TABLE sessions (session_id TEXT PRIMARY KEY, parent_session_id TEXT, session_type INTEGER, "
        "title TEXT, agent_name TEXT, message_count INTEGER, created_at TEXT, updated_at TEXT, pinned INTEGER, "
        "metadata TEXT, version INTEGER, title_version INTEGER, metadata_version INTEGER, fork TEXT)"
    )
    connection.executemany(
        "INSERT INTO sessions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (s.session_id, s.parent_session_id, s.session_type, s.title, s.agent_name, s.message_count,
             s.created_at.isoformat(), s.updated_at.isoformat(), s.pinned, json.dumps(s.metadata),
             s.version, s.title_version, s.metadata_version, None)
            for s in summaries
        ],
    )  # fmt: skip
    connection.execute("CREATE INDEX by_updated ON sessions (updated_at)")
    connection.commit()

    def query() -> object:
        return connection.execute(
            "SELECT * FROM sessions ORDER BY updated_at DESC, session_id DESC"
        ).fetchall()

    return query


def meta_files(root: str) -> Callable[[], object]:
    decode = msgspec.json.decode

    def read_all() -> object:
        found = []
        for name in os.listdir(root):
            try:
                with open(os.path.join(root, name, "meta.json"), "rb") as file:
                    found.append(decode(file.read()))
            except (FileNotFoundError, NotADirectoryError):
                continue
        return found

    return read_all


def race(
    contenders: dict[str, Callable[[], object]], repeats: int
) -> dict[str, tuple[list[float], list[float]]]:
    """Each contender once per repeat, in a rotating order; (wall, CPU) seconds per call."""
    samples: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in contenders}
    names = list(contenders)
    for name in names:
        contenders[name]()  # warm-up
    for r in range(repeats):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            start, cpu = time.perf_counter(), time.process_time()
            contenders[name]()
            samples[name][0].append(time.perf_counter() - start)
            samples[name][1].append(time.process_time() - cpu)
    return samples


def describe(samples: list[float]) -> str:
    ordered = sorted(samples)
    low = ordered[int(0.1 * (len(ordered) - 1))]
    high = ordered[int(0.9 * (len(ordered) - 1))]
    return f"{statistics.median(samples) * 1000:9.2f} ms  (p10-p90 {low * 1000:.2f}-{high * 1000:.2f})"


def stat_floor(root: str) -> Callable[[], object]:
    """Three stats per session through one descriptor of the root, as the freshness check makes."""
    names = [name for name in os.listdir(root) if not name.startswith(".")]
    fd = os.open(root, os.O_RDONLY)

    def stats() -> object:
        for name in names:
            os.stat(name, dir_fd=fd, follow_symlinks=False)
            os.stat(name + "/meta.json", dir_fd=fd, follow_symlinks=False)
            os.stat(name + "/messages.jsonl", dir_fd=fd, follow_symlinks=False)
        return None

    return stats


def build_halves(root: str, size: int, scratch: str) -> str:
    """The first build's two halves, each alone, in CPU time: every record read as the index's
    rows (Python), and those rows inserted into a new catalog (SQLite: the table and FTS5)."""
    rows: list[Row] = []
    unused = sqlite3.connect(":memory:")  # index_log deletes the rows of a log read again: none here
    started = time.process_time()
    for name in sorted(os.listdir(root)):
        if not name.startswith("."):
            index_log(unused, name, os.path.join(root, name), "neutral", LogState(), b"-", rows)
    decoding = time.process_time() - started
    os.makedirs(scratch, exist_ok=True)
    discard(scratch)
    connection = open_catalog(scratch)
    started = time.process_time()
    connection.execute("BEGIN IMMEDIATE")
    insert(connection, rows)
    connection.execute("COMMIT")
    inserting = time.process_time() - started
    connection.close()
    discard(scratch)
    return (
        f"records read as rows {size / 1e6 / decoding:.1f} MB/s, rows inserted {size / 1e6 / inserting:.1f} MB/s, "
        f"one after the other {size / 1e6 / (decoding + inserting):.1f} MB/s (CPU time, MB of logs)"
    )


def baseline_package(directory: str, scratch: str) -> ModuleType:
    """The ``jsonl_store`` package below ``directory``, imported as ``jsonl_store_baseline``
    (it imports itself relatively, so a copy under another name is a package of its own)."""
    copy = os.path.join(scratch, "baseline-package")
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(os.path.join(directory, "jsonl_store"), os.path.join(copy, "jsonl_store_baseline"))
    sys.path.insert(0, copy)
    return importlib.import_module("jsonl_store_baseline")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="1,000 sessions, fewer repeats (CI)")
    parser.add_argument("--sessions", type=int, default=None)
    parser.add_argument("--messages", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--keep", metavar="DIR", help="build the store here once and reuse it")
    parser.add_argument("--baseline", metavar="OLD", help="also race the jsonl_store package below OLD")
    args = parser.parse_args(argv)
    sessions = args.sessions or (1_000 if args.quick else 10_000)
    repeats = args.repeats or (5 if args.quick else 15)
    scratch = args.keep or tempfile.mkdtemp(prefix="catalog-bench-")
    root = os.path.join(scratch, f"store-{sessions}x{args.messages}")
    try:
        if not os.path.isdir(root):
            start = time.perf_counter()
            build_store(root, sessions, args.messages)
            print(f"wrote {sessions:,} sessions in {time.perf_counter() - start:.1f} s")
        size = log_bytes(root)
        print(f"store: {sessions:,} sessions, {size / 1e6:.1f} MB of logs, SQLite {sqlite3.sqlite_version}")
        baseline = None
        if args.baseline:
            baseline = baseline_package(args.baseline, scratch)
            if not os.path.isdir(root + "-baseline"):
                shutil.copytree(root, root + "-baseline", symlinks=True)
        report(root, size, repeats, baseline)
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)
    return 0


def report(root: str, size: int, repeats: int, baseline: ModuleType | None) -> None:
    discard(root)
    with SessionStore(root) as store:
        start = time.perf_counter()
        summaries = store.list_sessions()
        first_list = time.perf_counter() - start
        start, started_cpu = time.perf_counter(), time.process_time()
        search_ranked(store, "aardvark")
        first_index, first_cpu = time.perf_counter() - start, time.process_time() - started_cpu
    print(f"first list_sessions() without a catalog (builds the summaries): {first_list * 1000:.0f} ms")
    print(
        f"first full build (text index of every log): {first_index:.1f} s = {size / 1e6 / first_index:.1f} MB/s"
        f" ({size / 1e6 / first_cpu:.1f} MB/s of CPU time)"
    )
    print(
        "the build's halves alone:", build_halves(root, size, os.path.join(os.path.dirname(root), "halves"))
    )
    peer = sqlite_peer(os.path.join(os.path.dirname(root), "peer.sqlite3"), summaries)
    with SessionStore(root) as store, SessionStore(root, fs=OsFileSystem()) as scan:
        listing: dict[str, Callable[[], object]] = {
            "list_sessions() from the catalog": store.list_sessions,
            "SQLite query, same columns": peer,
            "list_sessions() without the catalog": scan.list_sessions,
            "read and parse every meta.json": meta_files(root),
            "three stats per session (floor)": stat_floor(root),
        }
        catalog = store._catalog
        assert catalog is not None
        ranked: dict[str, Callable[[], object]] = {
            "search_ranked('aardvark') (rare)": lambda: search_ranked(store, "aardvark"),
            "search_ranked('date parsing') (common)": lambda: search_ranked(store, "date parsing"),
            "FTS5 query alone, rare": lambda: catalog.ranked("aardvark", 10, None, None),
            "FTS5 query alone, common": lambda: catalog.ranked("date parsing", 10, None, None),
        }
        if baseline is not None:
            old = baseline.SessionStore(root + "-baseline")
            old_ranked = importlib.import_module(baseline.__name__ + ".search").search_ranked
            listing["list_sessions() from the catalog, baseline"] = old.list_sessions
            ranked["search_ranked('aardvark'), baseline"] = lambda: old_ranked(old, "aardvark")
            ranked["search_ranked('date parsing'), baseline"] = lambda: old_ranked(old, "date parsing")
        listed, found = race(listing, repeats), race(ranked, repeats)
    walls, cpus = listed["SQLite query, same columns"]
    base, base_cpu = statistics.median(walls), statistics.median(cpus)
    print("\nlisting, raced (wall, then CPU time):")
    for name, (wall, cpu) in listed.items():
        print(f"  {name:44} {describe(wall)}  {statistics.median(wall) / base:5.1f}x SQLite")
        print(f"  {'':44} {describe(cpu)}  {statistics.median(cpu) / base_cpu:5.1f}x SQLite (CPU)")
    print("\nranked search, raced (wall, then CPU time):")
    for name, (wall, cpu) in found.items():
        print(f"  {name:44} {describe(wall)}")
        print(f"  {'':44} {describe(cpu)}")
    print("load average at the end: " + " ".join(f"{load:.2f}" for load in os.getloadavg()))


if __name__ == "__main__":
    sys.exit(main())
