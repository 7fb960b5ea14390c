"""`jsonl-store sql` against DuckDB's ``read_json`` over the same raw logs (issue 24).

    python benchmarks/sql_store.py make DIR --sessions 10000 --megabytes 250
    python benchmarks/sql_store.py time DIR

``make`` writes a store of ``--sessions`` sessions whose raw logs add up to about
``--megabytes`` MB (through `SessionStore`, ``durability="none"``). ``time`` prints the
seconds of one aggregate query through `jsonl_store.sql.connect` (checksums checked) and
of the same query by DuckDB's ``read_json`` on the raw logs alone (nothing checked).
Run each under ``/usr/bin/time -v`` for the peak memory.
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import time

import duckdb

from jsonl_store import AssistantMessage, ModelUsage, SessionStore, ToolCall, ToolMessage, UserMessage

_QUERY = "SELECT role, count(*) AS n, sum(length(text)) AS chars FROM records GROUP BY role ORDER BY role"


def make(root: str, sessions: int, megabytes: int) -> None:
    store = SessionStore(root, durability="none")
    per_session = megabytes * 1_000_000 // sessions
    filler = "the quick brown fox jumps over the lazy dog; " * 20  # ~900 bytes of text
    turn = 0
    for n in range(sessions):
        sid = f"s{n:06d}"
        written = 0
        while written < per_session:
            turn += 1
            batch = [
                UserMessage(content=f"question {turn}: {filler}"),
                AssistantMessage(
                    content=filler, tool_calls=[ToolCall(id=f"c{turn}", name="grep", arguments={"q": "x"})]
                ),
                ToolMessage(tool_call_id=f"c{turn}", content=filler),
            ]
            store.append_many(sid, batch, usage=[None, ModelUsage(input_tokens=100, output_tokens=20), None])
            written += 3 * 1200
    store.close()


def timed(root: str, which: str) -> None:
    start = time.perf_counter()
    if which == "sql":
        from jsonl_store import sql

        rows = sql.connect(root, parts=False).sql(_QUERY).fetchall()
    else:
        files = sorted(glob.glob(os.path.join(glob.escape(root), "*", "messages.jsonl")))
        con = duckdb.connect()
        source = f"read_json({files!r}, format='newline_delimited', columns={{'message': 'JSON'}})"
        query = (
            f"SELECT message->>'role' AS role, count(*) AS n, sum(length(message->>'content')) AS chars "
            f"FROM {source} GROUP BY role ORDER BY role"
        )
        rows = con.sql(query).fetchall()
    print(f"{which}: {time.perf_counter() - start:.2f} s {rows}")


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    m = sub.add_parser("make")
    m.add_argument("root")
    m.add_argument("--sessions", type=int, default=10_000)
    m.add_argument("--megabytes", type=int, default=250)
    t = sub.add_parser("time")
    t.add_argument("root")
    t.add_argument("which", choices=["sql", "read_json"])
    args = parser.parse_args()
    if args.command == "make":
        make(args.root, args.sessions, args.megabytes)
    else:
        timed(args.root, args.which)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
