"""``search`` over a store of real transcripts, raced with ripgrep and with reading every byte.

    python benchmarks/search.py                 # about 290 MiB of logs, 3,200 sessions: a few minutes
    python benchmarks/search.py --quick         # about 15 MiB: under a minute (CI)
    python benchmarks/search.py --baseline DIR  # also the command from another checkout's package
    python benchmarks/search.py --store ROOT    # search an existing store (nothing is built)

The store is built from the real Claude Code, Codex and pi transcripts in
``tests/importers/data`` (the importers write one session per conversation, with its
sub-agents, tool calls, tool output and blob files), each session directory then copied
``--copies`` times under new names (a session directory holds everything of its session,
and no record names its directory, so a copy is a session of its own). One user message
holding `RARE` is appended to one session. Two needles: `RARE` (one hit) and `COMMON`
(thousands: it is in tool calls, their output and the Codex items' types).

For each needle these race, interleaved (`jsonl_bench.timing.race`: every repeat runs each
once, in a rotating order, so a neighbour's burst falls on all of them alike):

- ``rg -F -c NEEDLE ROOT`` and ``rg -F NEEDLE ROOT`` (lines printed, read through a pipe);
  skipped with a note when ``rg`` is not installed;
- the floor: every file of the store read once into one buffer (what ``rg`` reads);
- ``list(jsonl_store.search(store, NEEDLE))`` in this process, on an open store;
- ``jsonl-store search NEEDLE`` as a process, its output read through a pipe (Python's
  start-up and imports included), and with ``--baseline DIR`` the same command run with
  the ``jsonl_store`` package found in ``DIR`` (another checkout's, for a before and after:
  ``git archive main jsonl_store | tar -x -C DIR``), and ``search()`` of that package in
  a worker process started once, on a store it keeps open (its CPU time is the one the
  worker measures around each search).

Each figure is the median of ``--repeats`` runs with its spread (half the range, as a share
of the median), in wall time and in CPU time (this process's and its children's, user and
system: what a search costs whatever else the machine runs); a ratio is median over
median. Printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [p for p in (_HERE, os.path.dirname(_HERE)) if p not in sys.path]

# These imports must come after the sys.path set-up above, hence E402.
from jsonl_bench.timing import Contender, Row, race  # noqa: E402

from jsonl_store import SessionStore, UserMessage  # noqa: E402
from jsonl_store.importers import import_claude_code, import_codex, import_pi  # noqa: E402
from jsonl_store.search import search  # noqa: E402

DATA = os.path.join(os.path.dirname(_HERE), "tests", "importers", "data")
RARE = "KeyError: 'week 53' in parse_week"
COMMON = "function"
COPIES, QUICK_COPIES = 200, 10


def build(root: str, copies: int) -> None:
    """The store at ``root``: the real transcripts imported once, each session copied ``copies`` times."""
    seed = root + ".seed"
    with SessionStore(seed) as store:
        import_claude_code(store, os.path.join(DATA, "claude-code"))
        import_codex(store, os.path.join(DATA, "codex"))
        import_pi(store, os.path.join(DATA, "pi"))
        sessions = [summary.session_id for summary in store.list_sessions()]
    SessionStore(root).close()  # the root's own files (.gitignore, .gitattributes)
    for copy in range(copies):
        for sid in sessions:
            shutil.copytree(os.path.join(seed, sid), os.path.join(root, f"{sid}-c{copy:03d}"))
    shutil.rmtree(seed)
    with SessionStore(root) as store:
        store.append(f"{sessions[0]}-c{copies // 2:03d}", UserMessage(content=f"The test fails with {RARE}."))


def _files(root: str) -> list[str]:
    return [os.path.join(top, name) for top, _, names in os.walk(root) for name in names]


def _read_all(paths: list[str], buffer: bytearray) -> int:
    """Every byte of ``paths`` read into ``buffer`` (large enough for the largest file)."""
    total = 0
    view = memoryview(buffer)
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            while count := os.readv(fd, [view]):
                total += count
        finally:
            os.close(fd)
    return total


def _run(argv: list[str], env: dict[str, str] | None = None) -> int:
    done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=False, env=env)
    return done.stdout.count(b"\n")


#: Runs ``jsonl_store.cli`` from the directory in argv[1]: an editable install's finder
#: (setuptools' ``__editable__`` module on ``sys.meta_path``) would otherwise answer first.
_FROM = (
    "import runpy, sys; "
    "sys.meta_path[:] = [f for f in sys.meta_path if not getattr(f, '__module__', '').startswith('__editable__')]; "
    "sys.path.insert(0, sys.argv.pop(1)); "
    "runpy.run_module('jsonl_store.cli', run_name='__main__', alter_sys=True)"
)


def _command(root: str, needle: str, package: str | None = None) -> list[str]:
    """The search command; with ``package``, the jsonl_store found in that directory."""
    start = (
        [sys.executable, "-m", "jsonl_store.cli"]
        if package is None
        else [sys.executable, "-c", _FROM, package]
    )
    return [*start, "--root", root, "search", "--", needle]


def _env() -> dict[str, str]:
    # As an installed command runs, with its bytecode cached (CI images set
    # PYTHONDONTWRITEBYTECODE, which would make every run compile the package).
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


#: A worker that answers each needle (a JSON line) with its hit count and the CPU seconds of
#: ``search()`` of the ``jsonl_store`` found in argv[1], on the store at argv[2] kept open.
_WORKER = (
    "import json, sys, time; "
    "sys.meta_path[:] = [f for f in sys.meta_path if not getattr(f, '__module__', '').startswith('__editable__')]; "
    "sys.path.insert(0, sys.argv[1]); "
    "from jsonl_store import SessionStore; from jsonl_store.search import search; "
    "store = SessionStore(sys.argv[2])\n"
    "for line in sys.stdin:\n"
    "    start = time.process_time(); hits = sum(1 for _ in search(store, json.loads(line)))\n"
    "    print(json.dumps([hits, time.process_time() - start]), flush=True)"
)


class Worker:
    """``search()`` of another package, in a process of its own: `_WORKER`."""

    def __init__(self, package: str, root: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", _WORKER, package, root],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=_env(),
        )
        self.cpu = 0.0

    def search(self, needle: str) -> int:
        """The hit count; `cpu` becomes the CPU seconds the worker spent searching."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(needle) + "\n")
        self.process.stdin.flush()
        hits, self.cpu = json.loads(self.process.stdout.readline())
        return int(hits)

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait()


def _blocks(
    root: str, needle: str, store: SessionStore, baseline: str | None, worker: Worker | None = None
) -> dict[str, Callable[[], Any]]:
    paths = _files(root)
    buffer = bytearray(max(os.path.getsize(path) for path in paths))
    blocks: dict[str, Callable[[], Any]] = {}
    if shutil.which("rg") is not None:
        blocks["rg -F -c"] = lambda: _run(["rg", "-F", "-c", "--", needle, root])
        blocks["rg -F"] = lambda: _run(["rg", "-F", "--", needle, root])
    blocks["read every byte"] = lambda: _read_all(paths, buffer)
    blocks["search()"] = lambda: len(list(search(store, needle)))
    if worker is not None:
        blocks["search() (baseline)"] = lambda: worker.search(needle)
    blocks["jsonl-store search"] = lambda: _run(_command(root, needle), _env())
    if baseline is not None:
        blocks["jsonl-store search (baseline)"] = lambda: _run(_command(root, needle, baseline), _env())
    return blocks


def _cpu() -> float:
    """CPU seconds of this process and of its waited-for children (user and system)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def measure(
    root: str, needle: str, repeats: int, baseline: str | None
) -> tuple[dict[str, Row], dict[str, Row]]:
    """Each contender's wall seconds per search of ``needle``, raced, and its CPU seconds.

    CPU time is what a search costs whatever the machine's load: on a shared machine a
    multi-threaded ``rg`` gets more of the cores than a single-threaded Python process,
    which stretches the wall-time ratio.
    """
    worker = Worker(baseline, root) if baseline is not None else None
    with SessionStore(root) as store:
        blocks = _blocks(root, needle, store, baseline, worker)
        rows = {name: Row(name, "search", name, []) for name in blocks}
        cpu = {name: Row(name, "search", name, []) for name in blocks}

        def repeated(name: str, call: Callable[[], Any]) -> Callable[[int], None]:
            # The worker's search runs in a process this one does not wait for: its CPU
            # time is what the worker measured.
            measured = worker is not None and name == "search() (baseline)"

            def block(n: int) -> None:
                for _ in range(n):
                    start = _cpu()
                    call()
                    spent = _cpu() - start
                    cpu[name].samples.append(worker.cpu if measured and worker is not None else spent)

            return block

        try:
            race([Contender(rows[name], repeated(name, call), 1) for name, call in blocks.items()], repeats)
        finally:
            if worker is not None:
                worker.close()
    for row in cpu.values():
        del row.samples[0]  # the race's warm-up
    return rows, cpu


def _ratio(rows: dict[str, Row], key: str, base: str) -> str:
    if key not in rows or base not in rows:
        return "n/a"
    return f"{rows[key].median / rows[base].median:.2f}x"


def report(rows: dict[str, Row], cpu: dict[str, Row], hits: int, lines: int | None) -> list[str]:
    out = [f"  hits: {hits:,}; lines rg prints: {'n/a' if lines is None else f'{lines:,}'}"]
    out.append(f"  {'':<32} {'wall':>9}    {'spread':>6} {'CPU':>9}")
    for key, row in rows.items():
        spread = f"±{row.spread:.0%}" if row.spread is not None else ""
        out.append(
            f"  {row.label:<32} {row.median * 1e3:9.1f} ms {spread:>6} {cpu[key].median * 1e3:9.1f} ms"
        )
    pairs = [
        ("search()", "rg -F -c"),
        ("search()", "read every byte"),
        ("search()", "search() (baseline)"),
        ("jsonl-store search", "rg -F"),
        ("jsonl-store search", "jsonl-store search (baseline)"),
    ]
    for key, base in pairs:
        if key in rows and base in rows:
            out.append(f"  {key} ÷ {base}: {_ratio(rows, key, base)} wall, {_ratio(cpu, key, base)} CPU")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_COPIES} copies, 3 repeats")
    parser.add_argument("--copies", type=int, default=None, help=f"copies of each session ({COPIES})")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--store", metavar="ROOT", help="search this store instead of building one")
    parser.add_argument("--baseline", metavar="DIR", help="also run the command of the jsonl_store in DIR")
    parser.add_argument("--keep", action="store_true", help="keep the built store (its path is printed)")
    parser.add_argument("--json", metavar="PATH", help="write every sample there")
    args = parser.parse_args(argv)
    copies = args.copies or (QUICK_COPIES if args.quick else COPIES)
    repeats = args.repeats or (3 if args.quick else 7)
    workdir = None
    if args.store:
        root = args.store
    else:
        workdir = tempfile.mkdtemp(prefix="jsonl-store-search-")
        root = os.path.join(workdir, "store")
        build(root, copies)
    try:
        logs = [path for path in _files(root) if path.endswith("messages.jsonl")]
        size = sum(os.path.getsize(path) for path in _files(root))
        print(
            f"store {root}: {len(logs):,} sessions, {sum(map(os.path.getsize, logs)) / 2**20:,.0f} MiB "
            f"of logs, {size / 2**20:,.0f} MiB in all; {repeats} repeats, medians"
        )
        if shutil.which("rg") is None:
            print("  rg rows skipped: ripgrep is not installed (apt-get install ripgrep)")
        out: dict[str, Any] = {}
        for name, needle in (("rare", RARE), ("common", COMMON)):
            with SessionStore(root) as store:
                hits = sum(1 for _ in search(store, needle))
            lines = _run(["rg", "-F", "--", needle, root]) if shutil.which("rg") else None
            rows, cpu = measure(root, needle, repeats, args.baseline)
            print(f"{name} needle {needle!r}:")
            print("\n".join(report(rows, cpu, hits, lines)))
            out[name] = {
                "needle": needle,
                "hits": hits,
                "wall": {k: r.samples for k, r in rows.items()},
                "cpu": {k: r.samples for k, r in cpu.items()},
            }
        if args.json:
            with open(args.json, "w", encoding="utf-8") as file:
                json.dump(out, file, indent=2)
    finally:
        if workdir is not None:
            if args.keep:
                print(f"kept {root}")
            else:
                shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
