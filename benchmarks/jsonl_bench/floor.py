"""The floor: the least work any store must do for the same records.

Each function is the bare operating-system sequence behind one store operation, with
nothing a real store adds (ids, clocks, locks, checksums, sequence bookkeeping). A store
can approach these figures, never beat them on the same work.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from typing import Any

import msgspec
import orjson

from . import workload
from .timing import Block, repeat

_APPEND_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_APPEND
GROUP = 64


def _encode(record: dict[str, Any]) -> bytes:
    return orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE)


def _open_append(path: str, stack: contextlib.ExitStack) -> int:
    """An append descriptor closed with ``stack``: a removed file's space comes back only then."""
    fd = os.open(path, _APPEND_FLAGS, 0o644)
    stack.callback(os.close, fd)
    return fd


def appender(path: str, kind: str, total: int, *, sync: bool, stack: contextlib.ExitStack) -> Block:
    """Append the next records to ``path``: encode, one write (and one fdatasync) each."""
    fd = _open_append(path, stack)
    records = iter(workload.record_dicts(kind, 0, total))

    def block(n: int) -> None:
        for _ in range(n):
            os.write(fd, _encode(next(records)))
            if sync:
                os.fdatasync(fd)

    return block


def locked_appender(path: str, kind: str, total: int, *, stack: contextlib.ExitStack) -> Block:
    """Encode, then flock + fstat + write + unlock: the least a multi-process-safe append does.

    Not a target's floor; it shows how much of an append's cost is the locking that lets
    several processes append to one session (issue 4).
    """
    fd = _open_append(path, stack)
    records = iter(workload.record_dicts(kind, 0, total))

    def block(n: int) -> None:
        for _ in range(n):
            line = _encode(next(records))
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.fstat(fd)  # a writer must learn what other processes appended meanwhile
            os.write(fd, line)
            fcntl.flock(fd, fcntl.LOCK_UN)

    return block


def group_appender(path: str, total_groups: int, *, stack: contextlib.ExitStack) -> Block:
    """Per op: 64 × (encode + write), then one fdatasync: the bare cost of a group commit."""
    fd = _open_append(path, stack)
    records = iter(workload.record_dicts(workload.ASSISTANT, 0, total_groups * GROUP))

    def block(groups: int) -> None:
        for _ in range(groups):
            for _ in range(GROUP):
                os.write(fd, _encode(next(records)))
            os.fdatasync(fd)

    return block


def fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def replace_file(path: str, data: bytes) -> None:
    """Temporary file + fsync + rename + directory fsync: a durable whole-file update."""
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(tmp, path)
    fsync_dir(os.path.dirname(path))


# A session's metadata file is a few hundred bytes: this is one of that size.
META_LIKE = orjson.dumps(
    {
        "format": 1,
        "session_id": "bench-session",
        "title": "Refactor the config parser and fix the failing tests",
        "agent_name": "coder",
        "pinned": False,
        "metadata": {"project": "jsonl_store", "branch": "main"},
        "version": 3,
        "title_version": 1,
        "metadata_version": 1,
        "created_at": "2025-01-01T00:00:00+00:00",
    }
)


def replacer(path: str) -> Block:
    """Per op: durably replace a metadata-sized file."""

    def block(n: int) -> None:
        for _ in range(n):
            replace_file(path, META_LIKE)

    return block


# ---------------------------------------------------------------------------------------
# Read floors, run on the files jsonl_store wrote (see jsonl.py)
# ---------------------------------------------------------------------------------------


def decode_lines(path: str) -> int:
    """msgspec-decode every line of ``path`` in constant memory; return the line count."""
    decode = msgspec.json.Decoder().decode
    count = 0
    with open(path, "rb") as f:
        for line in f:
            decode(line)
            count += 1
    return count


def read_heads_and_tails(root: str, meta_name: str, log_name: str) -> int:
    """Read each session's metadata file and the last 4 KiB of its log; return sessions seen."""
    count = 0
    for entry in os.scandir(root):
        if not entry.is_dir():
            continue
        try:
            with open(os.path.join(entry.path, meta_name), "rb") as f:
                f.read()
        except FileNotFoundError:
            pass
        fd = os.open(os.path.join(entry.path, log_name), os.O_RDONLY)
        try:
            size = os.fstat(fd).st_size
            os.pread(fd, 4096, max(0, size - 4096))
        finally:
            os.close(fd)
        count += 1
    return count


def decode_floor(path: str, repeats: int) -> list[float]:
    return repeat(lambda: decode_lines(path), repeats)
