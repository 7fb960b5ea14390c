"""Real processes for the concurrency tests: start `_child.py` roles and talk to them.

Each child is a fresh interpreter (never a fork of the test process), so it shares
nothing with the parent but the files. Every wait has a generous deadline that only
turns a hang into a failure; no test asserts on timing.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

CHILD = Path(__file__).with_name("_child.py")
#: Safety net for any single wait on a child; far above what a healthy run needs.
DEADLINE = 60.0


class Child:
    """One `_child.py` process: line-based talk over its stdin and stdout."""

    def __init__(self, role: str, args: dict[str, Any]) -> None:
        self.role = role
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed in close())
        self.proc = subprocess.Popen(
            [sys.executable, str(CHILD), role, json.dumps(args)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
        )
        self._buffer = b""

    def _fail(self, why: str) -> NoReturn:
        self.kill()
        self.stderr.seek(0)
        error = self.stderr.read().decode(errors="replace")
        pytest.fail(f"child {self.role!r} {why} (exit {self.proc.returncode}):\n{error}")

    def readline(self) -> str:
        """The next line the child prints; fails the test if it dies or hangs instead."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + DEADLINE
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                self._fail("printed nothing before the safety deadline")
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                self.proc.wait()
                self._fail("ended early")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.decode()

    def expect(self, word: str) -> str:
        """Read one line, which must start with ``word``; return the rest of it."""
        line = self.readline()
        head, _, rest = line.partition(" ")
        assert head == word, f"child {self.role!r} said {line!r}, expected {word!r}"
        return rest

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def result(self) -> Any:
        """The child's final ``result`` line, decoded; the child must then exit cleanly."""
        value = json.loads(self.expect("result"))
        try:
            code = self.proc.wait(DEADLINE)
        except subprocess.TimeoutExpired:
            self._fail("did not exit after its result")
        if code != 0:
            self._fail("failed after its result")
        return value

    def finish(self) -> None:
        """Tell a round-driven child to stop and wait for its clean exit."""
        self.send("quit")
        try:
            code = self.proc.wait(DEADLINE)
        except subprocess.TimeoutExpired:
            self._fail("did not quit")
        if code != 0:
            self._fail("failed")

    def kill(self) -> None:
        """SIGKILL the child and reap it (nothing of it runs after this returns)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def close(self) -> None:
        self.kill()
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                pipe.close()
        self.stderr.close()


class Children:
    """Starts children and cleans up every one of them after the test."""

    def __init__(self) -> None:
        self.started: list[Child] = []

    def start(self, role: str, **args: Any) -> Child:
        """Start a child in ``role`` (it starts up while the caller goes on)."""
        child = Child(role, args)
        self.started.append(child)
        return child

    def ready(self, *children: Child) -> None:
        """Wait until each child has made its store and said ``ready``."""
        for child in children:
            child.expect("ready")

    def go(self, *children: Child) -> None:
        """Wait until all are ready, then release free-running children together."""
        self.ready(*children)
        for child in children:
            child.send("go")


@pytest.fixture
def children() -> Iterator[Children]:
    """A factory of `_child.py` processes, all killed and reaped when the test ends."""
    started = Children()
    try:
        yield started
    finally:
        for child in started.started:
            child.close()
