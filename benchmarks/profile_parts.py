"""Where an append's and an update_session's time goes, part by part, beside their floors.

    python benchmarks/profile_parts.py             # about 20 seconds
    python benchmarks/profile_parts.py --json parts.json

The record is the benchmark's 0.8 KB assistant message with a tool call and usage
(`jsonl_bench.workload`). Each part is what one `SessionStore.append(session, message,
usage=...)` with ``durability="none"`` does once, run by `timeit` on its own: the best of
``--repeat`` runs of ``--number`` calls (the best, not the median, since a part alone has
no reason to be slower than its fastest run but a busy machine). The parts that no store
may skip are summed; the last rows are the whole append, with and without redaction, so
what the sum leaves out is the Python that joins the parts. Figures are printed, never
asserted.

The second table times the phases of real ``update_session(title=...)`` calls
(``durability="fsync"``), each phase measured inside the call by wrapping the function
that does it, as medians of ``--updates`` calls, beside the floor's durable file
replacement (`jsonl_bench.floor.replace_file`) timed in turn with them.

The third splits redaction of the benchmark's 1 MB code output (`workload.code_output`,
redaction's hardest common case) into its passes over the encoded value, beside the
one-byte ``bytes.find`` (memchr) and the regular-expression scan for one byte that no
pass of Python's engine can go below, and the decoding a pass over the text would need
first; then the one RE2 pass that replaces those passes with the ``regex`` extra, and
the whole of `Redactor.redact_json` with it and without it.
"""

from __future__ import annotations

import argparse
import collections
import fcntl
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
import timeit
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import orjson

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [p for p in (_HERE, os.path.dirname(_HERE)) if p not in sys.path]

from jsonl_bench import floor as floors  # noqa: E402
from jsonl_bench import workload  # noqa: E402

import jsonl_store._text.redact_prefilter as prefilter  # noqa: E402
from jsonl_store import SessionStore, UserMessage  # noqa: E402
from jsonl_store._format import codec as _codec  # noqa: E402
from jsonl_store._format.ids import new_uuid7  # noqa: E402
from jsonl_store._ops import append as _append  # noqa: E402
from jsonl_store._session import meta as _meta  # noqa: E402
from jsonl_store._session import summary as _session  # noqa: E402
from jsonl_store._session.handles import now  # noqa: E402
from jsonl_store._text import redact as _redact  # noqa: E402
from jsonl_store._text.redact import DEFAULT, Redactor  # noqa: E402


def _median(call: Callable[[], object], number: int, repeat: int) -> tuple[float, float]:
    """Microseconds per call, the median of ``repeat`` runs of ``number`` calls, and half their range (a fraction)."""
    runs = [seconds / number * 1e6 for seconds in timeit.repeat(call, number=number, repeat=repeat)]
    middle = statistics.median(runs)
    return middle, (max(runs) - min(runs)) / 2 / middle


def measure(number: int, repeat: int) -> list[tuple[str, float, float, bool]]:
    """(part, median µs per call, its spread, whether every store must pay it) per part, then the wholes."""
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

    pair = [UserMessage(content="look at this"), message]

    def batch(store: SessionStore) -> None:
        store.append_many("s", pair, usage=usage)

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
        # The general path (`_ops.append.encode`), which encodes each record with the same
        # encoder as the one-message path above: two records in one write.
        ("append_many() of 2 records, redact=False", lambda: batch(stores[1]), False),
    ]
    try:
        return [(name, *_median(call, number, repeat), needed) for name, call, needed in parts]
    finally:
        os.close(fd)
        for store in stores:
            store.close()
        shutil.rmtree(scratch, ignore_errors=True)


def measure_code(repeat: int) -> list[tuple[str, float, float]]:
    """(pass, median ms, spread) for redaction of the 1 MB code output, pass by pass, then whole."""
    data = _codec.encode_message(workload.code_output(0))[0]
    literal = re.compile(b"\x01")

    def gate(byte: bytes, before: frozenset[int] | None, pattern: re.Pattern[bytes]) -> Callable[[], object]:
        at = data.find(byte)
        return lambda: at >= 0 and prefilter._holds(data, at, byte, before, pattern)

    def scan(pattern: re.Pattern[bytes]) -> Callable[[], object]:
        return lambda: list(pattern.finditer(data))

    parts: list[tuple[str, Callable[[], object]]] = [
        ("floor: bytes.find of an absent byte (memchr)", lambda: data.find(b"\x01")),
        ("floor: regex scan for an absent byte", lambda: literal.search(data)),
        ("decoding the value (what a text search needs)", lambda: _redact._decode(data)),
        ("gates 'A', 'z', 'G' (one pass over a copy)", lambda: prefilter._letters_hold(data)),
        *(
            (f"gate {byte.decode()!r}", gate(byte, before, pattern))
            for byte, before, pattern in prefilter._LARGE_GATES
        ),
        (
            "separators '=' and ':' (one pass over a copy)",
            lambda: list(prefilter._NAMED_SCREEN.finditer(data.replace(b":", b"="))),
        ),
        (
            "URLs with user info (from each '@')",
            lambda: prefilter._urls_checked(data, lambda _: False, set(), 0),
        ),
        ("'-': tokens and curl -u (whole scan)", scan(prefilter._LARGE_DASH)),
        (
            "the separators' lines, judged (_line_checked)",
            lambda: prefilter._line_checked(data, _redact._line_holds),
        ),
    ]
    screen = prefilter.screen()
    gated = Redactor()
    gated._screens.append(None)  # as without the regex extra
    if screen is not None:
        parts += [
            ("the RE2 screen (one pass, regex extra)", lambda: list(screen.finditer(data))),
            (
                "its places' lines, judged (_screened)",
                lambda: prefilter._screened(data, screen, _redact._line_holds),
            ),
        ]
    parts += [
        ("Redactor.redact_json, whole, without the screen", lambda: gated.redact_json(data)),
        ("Redactor.redact_json, whole (the default)", lambda: DEFAULT.redact_json(data)),
    ]
    return [(name, us / 1000, spread) for name, call in parts for us, spread in [_median(call, 5, repeat)]]


@contextmanager
def _timed(owner: Any, name: str, label: str, into: dict[str, list[float]]) -> Iterator[None]:
    """Time every call of ``owner.name`` into ``into[label]`` while the block runs."""
    real = getattr(owner, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return real(*args, **kwargs)
        finally:
            into[label].append(time.perf_counter() - start)

    setattr(owner, name, timed)
    try:
        yield
    finally:
        setattr(owner, name, real)


def measure_update(updates: int) -> list[tuple[str, float]]:
    """(phase, median µs) of ``update_session(title=...)``, and the floor timed in turn."""
    scratch = tempfile.mkdtemp(prefix="jsonl-update-profile-")
    store = SessionStore(os.path.join(scratch, "store"))
    store.append("s", UserMessage(content="hello"))
    floor_path = os.path.join(scratch, "meta.json")
    times: dict[str, list[float]] = collections.defaultdict(list)
    handles = store._handles  # the store's own session lock, wrapped like the rest
    real_lock = handles.lock

    def lock(session_id: str) -> AbstractContextManager[Any]:
        inner = real_lock(session_id)

        @contextmanager
        def held() -> Iterator[None]:
            start = time.perf_counter()
            with inner:
                times["lock taken"].append(time.perf_counter() - start)
                yield
                released = time.perf_counter()
            times["lock released"].append(time.perf_counter() - released)

        return held()

    handles.lock = lock  # type: ignore[method-assign]
    try:
        with (
            _timed(store._state, "read_meta", "meta.json read (for the merge)", times),
            _timed(_meta, "write", "meta.json written (temp, fdatasync, rename, dir fsync)", times),
            _timed(_session, "summary", "the summary returned (last record, fork.json)", times),
        ):
            for index in range(updates):
                start = time.perf_counter()
                store.update_session("s", title=f"title {index}")
                times["update_session(), whole"].append(time.perf_counter() - start)
                start = time.perf_counter()
                floors.replace_file(floor_path, floors.META_LIKE)
                times["floor: temp file, fsync, rename, dir fsync"].append(time.perf_counter() - start)
    finally:
        handles.lock = real_lock  # type: ignore[method-assign]
        store.close()
        shutil.rmtree(scratch, ignore_errors=True)
    order = ["floor: temp file, fsync, rename, dir fsync", "lock taken", "meta.json read (for the merge)",
             "meta.json written (temp, fdatasync, rename, dir fsync)", "lock released",
             "the summary returned (last record, fork.json)", "update_session(), whole"]  # fmt: skip
    return [(name, statistics.median(times[name]) * 1e6) for name in order]


def report(rows: list[tuple[str, float, float, bool]]) -> str:
    floor = rows[0][1]
    needed = sum(us for _, us, _, must in rows if must)
    lines = [f"{'part (median)':48} {'us':>7} {'spread':>7} {'x floor':>8}"]
    for name, us, spread, _ in rows:
        lines.append(f"{name:48} {us:7.2f} {f'±{spread:.0%}':>7} {us / floor:8.2f}")
        if name.startswith("sequence"):
            lines.append(
                f"{'sum of the parts every append pays':48} {needed:7.2f} {'':>7} {needed / floor:8.2f}"
            )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--number", type=int, default=20_000, help="calls per run (default: 20,000)")
    parser.add_argument("--repeat", type=int, default=7, help="runs per part (default: 7)")
    parser.add_argument("--updates", type=int, default=300, help="update_session calls (default: 300)")
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON")
    args = parser.parse_args(argv)
    rows = measure(args.number, args.repeat)
    print(report(rows))
    phases = measure_update(args.updates)
    floor = phases[0][1]
    print(f"\n{'update_session phase (median)':56} {'us':>7} {'x floor':>8}")
    for name, us in phases:
        print(f"{name:56} {us:7.1f} {us / floor:8.2f}")
    code = measure_code(args.repeat)
    print(f"\n{'redaction of 1 MB of code output (median)':48} {'ms':>7} {'spread':>7}")
    for name, ms, spread in code:
        print(f"{name:48} {ms:7.3f} {f'±{spread:.0%}':>7}")
    if args.json:
        with open(args.json, "wb") as out:
            out.write(
                orjson.dumps(
                    {
                        "append": [
                            {"part": n, "us": us, "spread": sp, "every_append": m} for n, us, sp, m in rows
                        ],
                        "update_session": [{"phase": n, "us": us} for n, us in phases],
                        "code_output": [{"pass": n, "ms": ms, "spread": sp} for n, ms, sp in code],
                    }
                )
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
