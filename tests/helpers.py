"""Small helpers the test suites share: directory snapshots, log lines, file paths, timeouts.

`plain`, `as_class` and `classes` narrow what readers give back (`Message`, a union) to the kind a
test appended, checking it on the way, so that mypy checks the test's use of it.

The byte-damage helpers (tear, flip, zero-fill, garbage, CRLF, BOM) are public, in
`jsonl_store.testing.damage`, shared with the vector builder and the benchmarks.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import selectors
import signal
import subprocess
import sys
import termios
from collections.abc import Iterable, Iterator
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import settings

from jsonl_store import AnyMessage, Message
from jsonl_store._format.names import LOCK_NAME, LOG_NAME, META_NAME, USAGE_NAME, snapshot_name

#: For tests of what rich draws (colour, progress bars): they skip where the cli extra is
#: not installed (the lowest-versions CI environment), where the command prints plain text.
needs_rich = pytest.mark.skipif(
    importlib.util.find_spec("rich") is None, reason='needs rich: pip install -e ".[cli]"'
)
#: For tests of regular expression search: RE2 comes with the regex extra (google-re2);
#: without it (the lowest-versions CI environment) a regex search is refused, as tested.
needs_re2 = pytest.mark.skipif(
    importlib.util.find_spec("re2") is None, reason='needs google-re2: pip install -e ".[regex]"'
)


def readable(fd: int, timeout: float) -> bool:
    """Whether ``fd`` has something to read within ``timeout`` seconds.

    Through `selectors` (epoll here), not ``select.select``: a test process that has opened
    many files gets descriptor numbers past 1024, which ``select`` refuses
    ("filedescriptor out of range in select()").
    """
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        return bool(selector.select(timeout))


def run_on_pty(
    command: list[str], env: dict[str, str] | None = None, *, stderr_too: bool = True
) -> tuple[int, bytes]:
    """Run ``command`` with stdin and stdout (and stderr, unless not ``stderr_too``) on a
    pseudo-terminal; return its exit code and every byte it wrote there."""
    master, slave = os.openpty()
    # No output processing, so the bytes read are the bytes the command wrote (else the
    # terminal turns each "\n" into "\r\n").
    attributes = termios.tcgetattr(slave)
    attributes[1] &= ~termios.OPOST
    termios.tcsetattr(slave, termios.TCSANOW, attributes)
    try:
        process = subprocess.Popen(
            command, stdin=slave, stdout=slave, stderr=slave if stderr_too else subprocess.DEVNULL, env=env
        )
    finally:
        os.close(slave)
    chunks = []
    try:
        while True:
            assert readable(master, 60), f"no output for 60 s from {command}"
            try:
                data = os.read(master, 1 << 16)
            except OSError:  # EIO: the last writer closed the terminal
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(master)
    return process.wait(timeout=60), b"".join(chunks)


def cli(*argv: str, cwd: str | os.PathLike[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``python -m jsonl_store.cli argv`` as a child process, without ``$JSONL_STORE_ROOT``."""
    env = {k: v for k, v in os.environ.items() if k != "JSONL_STORE_ROOT"}
    return subprocess.run(
        [sys.executable, "-m", "jsonl_store.cli", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def plain(message: Message) -> dict[str, Any]:
    """``message`` as the plain dict it was appended as; fails if it came back as a class."""
    assert isinstance(message, dict), f"expected a plain dict, got {message!r}"
    return message


def as_class(message: Message) -> AnyMessage:
    """``message`` as the message class instance it was appended as; fails if it came back as a dict."""
    assert isinstance(message, AnyMessage), f"expected a message class, got {message!r}"
    return message


def classes(messages: Iterable[Message]) -> list[AnyMessage]:
    """`as_class` of each of ``messages``."""
    return [as_class(message) for message in messages]


def read_tree(root: str | os.PathLike[str]) -> dict[str, bytes | None]:
    """Every entry below ``root`` by relative path: file bytes, or None for a directory."""
    base = Path(root)
    tree: dict[str, bytes | None] = {}
    if not base.exists():
        return tree
    for directory, dirs, files in os.walk(base):
        for name in dirs:
            tree[os.path.relpath(os.path.join(directory, name), base)] = None
        for name in files:
            full = os.path.join(directory, name)
            tree[os.path.relpath(full, base)] = Path(full).read_bytes()
    return tree


def tree_without_locks(root: str | os.PathLike[str]) -> dict[str, bytes | None]:
    """`read_tree` without lock files: what a failed call may leave (locks are git-ignored state)."""
    return {path: data for path, data in read_tree(root).items() if os.path.basename(path) != LOCK_NAME}


def line_starts(data: bytes) -> list[int]:
    """Byte offset of the start of each ``\\n``-terminated line in ``data``."""
    starts = [0]
    for index, byte in enumerate(data):
        if byte == 0x0A and index + 1 < len(data):
            starts.append(index + 1)
    return starts if data else []


def json_lines(data: bytes) -> list[Any]:
    """Parse each ``\\n``-terminated line of a log as JSON (splitting on ``\\n`` only)."""
    assert data.endswith(b"\n") or not data
    return [orjson.loads(line) for line in data.split(b"\n")[:-1]]


def log_path(root: str | os.PathLike[str], session_id: str) -> Path:
    """The session's raw log."""
    return Path(root, session_id, LOG_NAME)


def meta_path(root: str | os.PathLike[str], session_id: str) -> Path:
    """The session's metadata file."""
    return Path(root, session_id, META_NAME)


def usage_path(root: str | os.PathLike[str], session_id: str) -> Path:
    """The session's token-usage log."""
    return Path(root, session_id, USAGE_NAME)


def snapshot_path(root: str | os.PathLike[str], session_id: str, version: int) -> Path:
    """The session's snapshot file of ``version``."""
    return Path(root, session_id, snapshot_name(version))


def gitignored(patterns: Iterable[str], path: str) -> bool:
    """Whether a ``.gitignore`` at the root ignores ``path`` (relative, '/'-separated).

    The subset of git's rules the store uses: comments, ``!`` negation, patterns with a
    '/' anchored at the root and matched segment by segment (``*`` never crosses '/'),
    patterns without one matched against every segment; a matched directory ignores
    everything below it. The last matching pattern wins.
    """
    parts = path.split("/")
    ignored = False
    for line in patterns:
        pattern = line.rstrip("\n")
        if not pattern.strip() or pattern.startswith("#"):
            continue
        negate = pattern.startswith("!")
        pattern = pattern[1:] if negate else pattern
        pattern = pattern.rstrip("/")
        if "/" in pattern:
            segments = pattern.lstrip("/").split("/")
            # Not strict: the pattern matches the path's first segments, and a matched
            # directory ignores everything below it.
            hit = len(segments) <= len(parts) and all(
                fnmatchcase(part, segment) for part, segment in zip(parts, segments, strict=False)
            )
        else:
            hit = any(fnmatchcase(part, pattern) for part in parts)
        if hit:
            ignored = not negate
    return ignored


def examples(n: int) -> int:
    """``n`` hypothesis examples, scaled up when the ``long`` profile is loaded (``--long``)."""
    profile = settings.default
    assert profile is not None  # conftest loads a profile before any test runs
    return max(1, n * profile.max_examples // 100)


@contextlib.contextmanager
def fails_after(seconds: int, what: str) -> Iterator[None]:
    """Turn a call that never returns (a blocked open, a deadlock, a loop) into a failure saying ``what``."""

    def expired(signum: int, frame: object) -> None:
        raise AssertionError(what)

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def nested_lists(levels: int, leaf: Any = "deep") -> Any:
    """``leaf`` inside ``levels`` lists."""
    value = leaf
    for _ in range(levels):
        value = [value]
    return value


def nested_objects(levels: int) -> Any:
    """A string inside ``levels`` objects (each ``{"k": ...}``)."""
    value: Any = "deep"
    for _ in range(levels):
        value = {"k": value}
    return value
