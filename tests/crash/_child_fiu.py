"""The process `test_io_faults.py` runs under libfiu: one store call with one C call failing.

Run as ``fiu-run -x python _child_fiu.py ROOT CASE``. It opens a store on ROOT (made by
the parent), makes the C function of CASE's failpoint fail with EIO (libfiu's POSIX
preload, driven through ``libfiu.so`` with ctypes), runs CASE's store call, turns the
failpoint off and prints one JSON line saying what the call raised. Nothing is printed
while the failpoint is on: the process's own writes would fail too.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import errno
import json
import sys
from collections.abc import Callable, Iterator
from typing import Any

from jsonl_store import AsyncSessionStore, CompactedMessage, JsonlStoreError, SessionStore, UserMessage

WRITE = b"posix/io/rw/write"
PREAD = b"posix/io/rw/pread"
FDATASYNC = b"posix/io/sync/fdatasync"
UNLINK = b"posix/io/dir/unlink"


def _records_while_iterating(store: SessionStore) -> list[Any]:
    iterator = store.records("s")  # opened (and its metadata read) before the fault
    with fault(PREAD):
        return list(iterator)


def _usage_while_iterating(store: SessionStore) -> list[Any]:
    iterator = store.usage("s")
    with fault(PREAD):
        return list(iterator)


async def _async_records(store: SessionStore) -> list[Any]:
    astore = AsyncSessionStore(store.root)
    with fault(PREAD):
        return [record async for record in astore.records("s")]


#: case -> (the failpoint on during the whole call, or None when the call sets its own; the call)
CASES: dict[str, tuple[bytes | None, Callable[[SessionStore], object]]] = {
    "append-write": (WRITE, lambda s: s.append("s", UserMessage(content="x"))),
    "append-fdatasync": (FDATASYNC, lambda s: s.append("s", UserMessage(content="x"))),
    "append-new-session": (WRITE, lambda s: s.append("new", UserMessage(content="x"), title="new")),
    "append_many": (
        WRITE,
        lambda s: s.append_many("s", [UserMessage(content="x"), UserMessage(content="y")]),
    ),
    "update_session": (WRITE, lambda s: s.update_session("s", title="renamed")),
    "snapshot": (WRITE, lambda s: s.snapshot("s", CompactedMessage(content="c"), 1, 0)),
    "checkpoint": (WRITE, lambda s: s.checkpoint("s", [UserMessage(content="new")])),
    "record_usage": (WRITE, lambda s: s.record_usage("s", {"input_tokens": 1})),
    "delete_session": (UNLINK, lambda s: s.delete_session("s")),
    "load": (PREAD, lambda s: s.load("s")),
    "get_session": (PREAD, lambda s: s.get_session("s")),
    "list_sessions": (PREAD, lambda s: s.list_sessions()),
    "records-while-iterating": (None, _records_while_iterating),
    "usage-while-iterating": (None, _usage_while_iterating),
    "async-records": (None, lambda s: asyncio.run(_async_records(s))),
    "verify": (PREAD, lambda s: s.verify("s")),
}

_fiu = ctypes.CDLL("libfiu.so.0")
_fiu.fiu_enable.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_uint]
_fiu.fiu_disable.argtypes = [ctypes.c_char_p]


@contextlib.contextmanager
def fault(name: bytes) -> Iterator[None]:
    """Make every call of one C function fail with EIO while the block runs."""
    # failnum 1 makes the call fail; failinfo is the errno the preload sets.
    if _fiu.fiu_enable(name, 1, ctypes.c_void_p(errno.EIO), 0) != 0:
        raise RuntimeError(f"fiu_enable({name!r}) failed")
    try:
        yield
    finally:
        _fiu.fiu_disable(name)


def describe(outcome: BaseException | None, result: object) -> dict[str, Any]:
    if outcome is None:
        kinds = (
            [p.kind for p in result]
            if isinstance(result, list) and result and hasattr(result[0], "kind")
            else None
        )
        return {"raised": None, "problem_kinds": kinds}
    return {
        "raised": type(outcome).__name__,
        "library_error": isinstance(outcome, JsonlStoreError),
        "oserror": isinstance(outcome, OSError),
        "errno": getattr(outcome, "errno", None),
        "filename": getattr(outcome, "filename", None),
        "cause_errno": getattr(outcome.__cause__, "errno", None),
        "message": str(outcome),
    }


def main() -> None:
    root, case = sys.argv[1], sys.argv[2]
    point, call = CASES[case]
    store = SessionStore(root, lock_timeout=5)
    result: object = None
    outcome: BaseException | None = None
    try:
        if point is None:
            result = call(store)
        else:
            with fault(point):
                result = call(store)
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which judges it
        outcome = exc
    print(json.dumps(describe(outcome, result)), flush=True)  # noqa: T201 - the parent reads stdout


if __name__ == "__main__":
    main()
