"""Where restoring a whole context goes, part by part, beside reading and parsing the log by hand.

    python benchmarks/load_parts.py              # about 30 seconds
    python benchmarks/load_parts.py --messages 2000

The session is the `plain` section's (`jsonl_bench.plain.pairs`): 0.8 KB assistant messages
with one call, each answered by a 10 KB result, no snapshot. Each row is the best of
``--repeat`` runs of ``--number`` calls (`timeit`, the rows taking turns; the best, since a
part alone has no reason to be slower than its fastest run but a busy machine), per load
and as a fraction of the by-hand read + parse. The parts a reader that checks every line
cannot skip (the CRC-32 of each line, decoding it) are timed alone on the log's lines;
then the store's own steps. Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import timeit
import zlib
from collections.abc import Callable

import msgspec
import orjson

_HERE = os.path.dirname(os.path.abspath(__file__))
# The store under test is the checkout this script belongs to, as in bench.py.
sys.path[:0] = [p for p in (_HERE, os.path.dirname(_HERE)) if p not in sys.path]

from jsonl_bench import jsonl, plain  # noqa: E402

from jsonl_store import SessionStore  # noqa: E402
from jsonl_store._context.tool_batches import provider_safe  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--number", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    root = tempfile.mkdtemp(prefix="jsonl-store-load-parts-")
    with SessionStore(root, durability="none") as store:
        store.append_many("s", plain.pairs(args.messages))
    path = jsonl.log_path(root, "s")
    with open(path, "rb") as f:
        data = f.read()
    lines = data.splitlines()
    record: Callable[[bytes], object] = msgspec.json.Decoder(_record_type()).decode
    with SessionStore(root) as store:
        view = store.load("s")
    context = view.context

    def by_hand() -> object:
        with open(path, "rb") as f:
            return [orjson.loads(line)["message"] for line in f.read().splitlines()]

    def load() -> object:
        with SessionStore(root) as store:
            return store.load("s")

    def messages() -> object:
        with SessionStore(root) as store:
            return store.load("s").messages

    rows: list[tuple[str, Callable[[], object]]] = [
        ("by hand: read + splitlines + orjson.loads each", by_hand),
        ("  orjson.loads of each line alone", lambda: [orjson.loads(line) for line in lines]),
        ("CRC-32 of each line (zlib.crc32)", lambda: [zlib.crc32(line) for line in lines]),
        ("msgspec decoding each line into the record type", lambda: [record(line) for line in lines]),
        ("open + load()", load),
        ("open + load().messages", messages),
        ("  view.context", lambda: view.context),
        ("  provider_safe(view.context)", lambda: provider_safe(context)),
    ]
    try:
        print(
            f"{args.messages:,} messages, {len(data) / 2**20:,.2f} MiB; best of {args.repeat} × {args.number}"
        )
        # Interleaved: each repeat times every row once, so a busy spell hits them alike.
        samples: list[list[float]] = [[] for _ in rows]
        for _ in range(args.repeat):
            for (_, fn), times in zip(rows, samples, strict=True):
                times.append(timeit.timeit(fn, number=args.number) / args.number)
        measured = [(label, min(times)) for (label, _), times in zip(rows, samples, strict=True)]
        hand = measured[0][1]
        for label, seconds in measured:
            print(f"{label:52} {seconds * 1e6:10,.0f} µs  {seconds / hand:6.2f}× by hand")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _record_type() -> type:
    from jsonl_store._format import codec as _codec

    return _codec._TypedRecord


if __name__ == "__main__":
    main()
