"""``search`` against its floor, ``grep -rF`` over the same files (issue 12: within 2x).

A store of mixed sessions (0.8 KB assistant records with a tool call, 10 KB tool
results), ``scan_bytes`` in all. Two needles: a rare one (a line in one session of ten)
and a common one (a tool-call path in about 2% of the records of every session). Each
is raced, interleaved, against ``grep -rF NEEDLE ROOT`` whose output is read through a
pipe (GNU grep stops at the first match when its stdout is /dev/null). The library
function runs in this process; the command's row adds a Python start-up to every search.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from typing import Any

from .config import Context
from .jsonl import build, open_store
from .timing import Block, Contender, Row, race

RARE = "KeyError: 'week 53'"
COMMON = "src/pkg/module_7.py"
SESSIONS = 40


def _grep(root: str, needle: str) -> int:
    done = subprocess.run(["grep", "-rF", "--", needle, root], capture_output=True, check=False)
    return done.stdout.count(b"\n")


def _command(root: str, needle: str) -> int:
    script = os.path.join(os.path.dirname(sys.executable), "jsonl-store")
    argv = [script] if os.path.exists(script) else [sys.executable, "-m", "jsonl_store.cli"]
    # As an installed command runs: with its bytecode cached. A PYTHONDONTWRITEBYTECODE in
    # the benchmark's environment (CI images set it) would make every run compile the
    # package from source, about 0.1 s that no user's command pays.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run(
        [*argv, "--root", root, "search", "--", needle], capture_output=True, check=False, env=env
    )
    return done.stdout.count(b"\n")


def _searcher(store: Any, needle: str) -> Block:
    from jsonl_store.search import search

    def block(n: int) -> None:
        for _ in range(n):
            sum(1 for _ in search(store, needle))

    return block


def _grepper(root: str, needle: str) -> Block:
    def block(n: int) -> None:
        for _ in range(n):
            _grep(root, needle)

    return block


def _commander(root: str, needle: str) -> Block:
    def block(n: int) -> None:
        for _ in range(n):
            _command(root, needle)

    return block


def _build(ctx: Context, root: str) -> int:
    """The store: SESSIONS sessions of scan_bytes / SESSIONS each; RARE in every tenth."""
    from jsonl_store import UserMessage

    per_session = ctx.sizes.scan_bytes // SESSIONS
    records = 0
    with open_store(root, "none") as store:
        for i in range(SESSIONS):
            sid = f"search-{i:03d}"
            count = 0
            path = os.path.join(root, sid, "messages.jsonl")
            while not os.path.exists(path) or os.path.getsize(path) < per_session:
                build(store, sid, count, 256, 256, mixed=True)
                count += 256
            if i % 10 == 3:
                store.append(sid, UserMessage(content=f"The test fails with {RARE} in parse_week."))
                count += 1
            records += count
    return records


def run(ctx: Context) -> None:
    if shutil.which("grep") is None:
        ctx.results.skipped["search"] = "skipped: no grep on this machine"
        return
    from jsonl_store.search import search

    s, res, root = ctx.sizes, ctx.results, ctx.scratch("search")
    ctx.log(f"jsonl_store: build {SESSIONS} sessions, {s.scan_bytes / 2**20:,.0f} MiB")
    records = _build(ctx, root)
    size = sum(
        os.path.getsize(os.path.join(root, d, "messages.jsonl"))
        for d in os.listdir(root)
        if os.path.isfile(os.path.join(root, d, "messages.jsonl"))
    )
    label = f"{size / 2**20:,.0f} MiB, {records:,} records"
    store: Any = open_store(root, "none")
    try:
        for name, needle in (("rare", RARE), ("common", COMMON)):
            ctx.log(f"jsonl_store: search() for a {name} needle, raced with grep -rF")
            hits = sum(1 for _ in search(store, needle))
            lines = _grep(root, needle)
            ours = Row(f"search.{name}", "jsonl_store", f"search() {name} needle, {label}", [],
                       floor=f"floor.grep.{name}", op="search")  # fmt: skip
            grep = Row(f"floor.grep.{name}", "floor", f"grep -rF {name} needle, same files", [], op="search")
            contenders = [
                Contender(ours, _searcher(store, needle), 1),
                Contender(grep, _grepper(root, needle), 1),
            ]
            if name == "rare":
                command = Row("search.command.rare", "jsonl_store", "jsonl-store search rare needle (with start-up)",
                              [], floor="floor.grep.rare", op="search")  # fmt: skip
                contenders.append(Contender(command, _commander(root, RARE), 1))
            race(contenders, s.repeats)
            ours.extra = {"hits": hits, "grep_lines": lines, "bytes": size}
            for contender in contenders:
                res.add(contender.row)
    finally:
        store.close()
