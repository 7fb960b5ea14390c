"""Where a buffered append's time goes: each part of it timed alone, beside the floor.

    python benchmarks/append_profile.py            # about 20 seconds
    python benchmarks/append_profile.py --json parts.json

The record is the benchmark's 0.8 KB assistant message with a tool call and usage
(`jsonl_bench.workload`). Each part is what one `SessionStore.append(session, message,
usage=...)` with ``durability="none"`` does once, run by `timeit` on its own: the best of
``--repeat`` runs of ``--number`` calls (the best, not the median, since a part alone has
no reason to be slower than its fastest run but a busy machine). The parts that no store
may skip are summed; the last rows are the whole append, with and without redaction, so
what the sum leaves out is the Python that joins the parts. Figures are printed, never
asserted.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import sys
import tempfile
import timeit
from collections.abc import Callable, Sequence
from typing import Any

import orjson

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [p for p in (_HERE, os.path.dirname(_HERE)) if p not in sys.path]

from jsonl_bench import workload  # noqa: E402

from jsonl_store import SessionStore, _append, _codec  # noqa: E402
from jsonl_store._handles import now  # noqa: E402
from jsonl_store._ids import new_uuid7  # noqa: E402
from jsonl_store._redact import DEFAULT  # noqa: E402


def _best(call: Callable[[], object], number: int, repeat: int) -> float:
    """Microseconds per call: the best of ``repeat`` runs of ``number`` calls."""
    return min(timeit.repeat(call, number=number, repeat=repeat)) / number * 1e6


def measure(number: int, repeat: int) -> list[tuple[str, float, bool]]:
    """(part, µs per call, whether every store must pay it) for each part, then the wholes."""
    message, usage = workload.store_messages(workload.ASSISTANT, 0, 1)[0]
    record = workload.record_dicts(workload.ASSISTANT, 0, 1)[0]
    payload, plain = _codec.encode_message(message)
    created = _codec.encode_time(now())
    head = _codec.record_head(new_uuid7(), created, payload, plain)
    trailer = _codec.usage_trailer(usage)
    line, _ = _codec.record_line(1, 0, head, trailer)
    scratch = tempfile.mkdtemp(prefix="jsonl-append-profile-")
    fd = os.open(os.path.join(scratch, "floor.jsonl"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    stores = [SessionStore(os.path.join(scratch, name), durability="none", redact=redact)
              for name, redact in (("redacted", True), ("plain", False))]  # fmt: skip
    for store in stores:
        store.append("s", message, usage=usage)

    def floor() -> None:
        os.write(fd, orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE))

    def system_calls() -> None:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.fstat(fd)
        os.write(fd, line)
        fcntl.flock(fd, fcntl.LOCK_UN)

    def usage_part() -> None:
        _append.check_usage(usage, message)
        _codec.usage_trailer(usage)

    def appender(store: SessionStore) -> Callable[[], object]:
        return lambda: store.append("s", message, usage=usage)

    parts: list[tuple[str, Callable[[], Any], bool]] = [
        ("floor: orjson.dumps + os.write", floor, False),
        ("flock + fstat + write + flock (system calls)", system_calls, True),
        ("encode + decode-and-compare check", lambda: _codec.encode_message(message), True),
        ("redaction pre-filter (redact=True)", lambda: DEFAULT.redact_json(payload), True),
        ("record id (UUIDv7)", new_uuid7, True),
        ("clock and timestamp", lambda: _codec.encode_time(now()), True),
        ("record head (id, time, message)", lambda: _codec.record_head("id", created, payload, plain), True),
        ("usage checked and encoded", usage_part, True),
        ("sequence, line and CRC-32", lambda: _codec.record_line(2, 0, head, trailer), True),
        ("append(), redact=True", appender(stores[0]), False),
        ("append(), redact=False", appender(stores[1]), False),
    ]
    try:
        return [(name, _best(call, number, repeat), needed) for name, call, needed in parts]
    finally:
        os.close(fd)
        for store in stores:
            store.close()


def report(rows: list[tuple[str, float, bool]]) -> str:
    floor = rows[0][1]
    needed = sum(us for _, us, must in rows if must)
    lines = [f"{'part':48} {'us':>7} {'x floor':>8}"]
    for name, us, _ in rows:
        lines.append(f"{name:48} {us:7.2f} {us / floor:8.2f}")
        if name.startswith("sequence"):
            lines.append(f"{'sum of the parts every append pays':48} {needed:7.2f} {needed / floor:8.2f}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--number", type=int, default=20_000, help="calls per run (default: 20,000)")
    parser.add_argument("--repeat", type=int, default=7, help="runs per part (default: 7)")
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON")
    args = parser.parse_args(argv)
    rows = measure(args.number, args.repeat)
    print(report(rows))
    if args.json:
        with open(args.json, "wb") as out:
            out.write(orjson.dumps([{"part": n, "us": us, "every_append": m} for n, us, m in rows]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
