"""Instructions of the plain-file races (`jsonl_bench.plain`), counted by callgrind: run with N = 0 and N.

    PYTHONHASHSEED=0 valgrind --tool=callgrind --callgrind-out-file=cg.0 python benchmarks/callgrind_plain.py load 0
    PYTHONHASHSEED=0 valgrind --tool=callgrind --callgrind-out-file=cg.20 python benchmarks/callgrind_plain.py load 20

(summary of cg.20 - summary of cg.0) / 20 is the cost of one op: set-up and start-up are
in both runs and cancel out. The ops, on the races' own data:

- ``load``: a new store, ``load(session).messages`` (``--messages``, default 200);
- ``load-by-hand``: the log opened, read, split, each line ``orjson.loads``'d, its message kept;
- ``batch``: ``append_many`` of 64 messages, ``durability="fsync"``;
- ``batch-by-hand``: 64 records encoded with orjson, one write, one ``fdatasync``.

The time a disk takes to flush is the kernel's, not counted: what is counted is the
Python and C work around it, the part a store adds to a plain file. Instruction counts
do not move with the machine's load, which the races' timings do.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections.abc import Callable

import orjson

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [p for p in (_HERE, os.path.dirname(_HERE)) if p not in sys.path]

from jsonl_bench import floor, jsonl, plain, workload  # noqa: E402

from jsonl_store import SessionStore  # noqa: E402


def _load(root: str, messages: int, by_hand: bool) -> Callable[[], object]:
    with SessionStore(root, durability="none") as store:
        store.append_many("s", plain.pairs(messages))
    path = jsonl.log_path(root, "s")

    def hand() -> object:
        with open(path, "rb") as f:
            data = f.read()
        return [orjson.loads(line)["message"] for line in data.splitlines()]

    def load() -> object:
        with SessionStore(root) as store:
            return store.load("s").messages

    return hand if by_hand else load


def _batch(root: str, count: int, by_hand: bool) -> Callable[[], object]:
    group = floor.GROUP
    if by_hand:
        fd = os.open(os.path.join(root, "plain.jsonl"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        records = iter(workload.record_dicts(workload.ASSISTANT, 0, (count + 1) * group))
        dumps, newline = orjson.dumps, orjson.OPT_APPEND_NEWLINE

        def hand() -> None:
            os.write(fd, b"".join([dumps(next(records), option=newline) for _ in range(group)]))
            os.fdatasync(fd)

        return hand
    store = jsonl.open_store(root, "fsync")
    batches = iter(
        [
            [m for m, _ in workload.store_messages(workload.ASSISTANT, g * group, group)]
            for g in range(count + 1)
        ]
    )
    return lambda: store.append_many("batch", next(batches))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("op", choices=["load", "load-by-hand", "batch", "batch-by-hand"])
    parser.add_argument("count", type=int, help="ops counted (0: set-up only)")
    parser.add_argument("--messages", type=int, default=200, help="messages of the loaded session")
    args = parser.parse_args()
    root = tempfile.mkdtemp(prefix="jsonl-store-callgrind-")
    by_hand = args.op.endswith("by-hand")
    if args.op.startswith("load"):
        op = _load(root, args.messages, by_hand)
    else:
        op = _batch(root, args.count, by_hand)
    try:
        op()  # the first op (a new session's, a cold page) is in both runs
        for _ in range(args.count):
            op()
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
