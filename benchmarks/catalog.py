"""What the catalog (spec §21) costs and saves: listing, its first build, ranked search.

    python benchmarks/catalog.py              # 10,000 sessions (about 100 MB of logs), built once
    python benchmarks/catalog.py --quick      # 1,000 sessions (CI)
    python benchmarks/catalog.py --keep DIR   # build the store into DIR once, reuse it next time

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

Every figure is the median of ``--repeats`` samples with its spread (10th to 90th
percentile); ratios are median over median, printed, never asserted.
"""

from __future__ import annotations

import argparse
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

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [p for p in (_HERE, os.path.dirname(_HERE)) if p not in sys.path]

import msgspec  # noqa: E402

from jsonl_store import OsFileSystem, SessionStore, SessionSummary  # noqa: E402
from jsonl_store._session.catalog_schema import discard  # noqa: E402
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


def race(contenders: dict[str, Callable[[], object]], repeats: int) -> dict[str, list[float]]:
    """Each contender once per repeat, in a rotating order; seconds per call."""
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    names = list(contenders)
    for name in names:
        contenders[name]()  # warm-up
    for r in range(repeats):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            start = time.perf_counter()
            contenders[name]()
            samples[name].append(time.perf_counter() - start)
    return samples


def describe(samples: list[float]) -> str:
    ordered = sorted(samples)
    low = ordered[int(0.1 * (len(ordered) - 1))]
    high = ordered[int(0.9 * (len(ordered) - 1))]
    return f"{statistics.median(samples) * 1000:9.2f} ms  (p10-p90 {low * 1000:.2f}-{high * 1000:.2f})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="1,000 sessions, fewer repeats (CI)")
    parser.add_argument("--sessions", type=int, default=None)
    parser.add_argument("--messages", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--keep", metavar="DIR", help="build the store here once and reuse it")
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
        report(root, size, repeats)
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)
    return 0


def report(root: str, size: int, repeats: int) -> None:
    discard(root)
    with SessionStore(root) as store:
        start = time.perf_counter()
        summaries = store.list_sessions()
        first_list = time.perf_counter() - start
        start = time.perf_counter()
        search_ranked(store, "aardvark")
        first_index = time.perf_counter() - start
    print(f"first list_sessions() without a catalog (builds the summaries): {first_list * 1000:.0f} ms")
    print(
        f"first full build (text index of every log): {first_index:.1f} s = {size / 1e6 / first_index:.1f} MB/s"
    )
    peer = sqlite_peer(os.path.join(os.path.dirname(root), "peer.sqlite3"), summaries)
    with SessionStore(root) as store, SessionStore(root, fs=OsFileSystem()) as scan:
        samples = race(
            {
                "list_sessions() from the catalog": store.list_sessions,
                "SQLite query, same columns": peer,
                "list_sessions() without the catalog": scan.list_sessions,
                "read and parse every meta.json": meta_files(root),
            },
            repeats,
        )
        catalog = store._catalog
        assert catalog is not None
        ranked = race(
            {
                "search_ranked('aardvark') (rare)": lambda: search_ranked(store, "aardvark"),
                "search_ranked('date parsing') (common)": lambda: search_ranked(store, "date parsing"),
                "FTS5 query alone, rare": lambda: catalog.ranked("aardvark", 10, None, None),
                "FTS5 query alone, common": lambda: catalog.ranked("date parsing", 10, None, None),
            },
            repeats,
        )
    base = statistics.median(samples["SQLite query, same columns"])
    print("\nlisting, raced:")
    for name, values in samples.items():
        print(f"  {name:40} {describe(values)}  {statistics.median(values) / base:6.1f}x SQLite")
    print("\nranked search, raced:")
    for name, values in ranked.items():
        print(f"  {name:40} {describe(values)}")


if __name__ == "__main__":
    sys.exit(main())
