"""The progress bar of long commands: drawn for a person on a terminal, never into a pipe."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from jsonl_store.cli import _progress

_DRAW = """
import time
from jsonl_store.cli._progress import progress
with progress("importing \\x1b[2J [bold]x[/bold]", 3) as bar:
    for _ in range(3):
        bar.advance()
        time.sleep(0.15)
print("done")
"""


def _run(stderr_is_tty: bool) -> tuple[bytes, bytes]:
    """Run a three-step bar in a child, stderr on a pseudo-terminal or a pipe; return (stdout, stderr)."""
    env = {**os.environ, "TERM": "xterm", "COLUMNS": "80"}
    env.pop("NO_COLOR", None)
    if not stderr_is_tty:
        done = subprocess.run([sys.executable, "-c", _DRAW], capture_output=True, env=env, check=True)
        return done.stdout, done.stderr
    leader, follower = os.openpty()
    try:
        child = subprocess.Popen(
            [sys.executable, "-c", _DRAW], stdout=subprocess.PIPE, stderr=follower, env=env
        )
        os.close(follower)
        follower = -1
        seen = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the child closed the terminal's last descriptor
                break
            if not chunk:
                break
            seen += chunk
        out = child.communicate()[0]
    finally:
        os.close(leader)
        if follower != -1:
            os.close(follower)
    return out, seen


def test_piped_stderr_gets_nothing() -> None:
    """With stderr piped the bar is silent: scripts see exactly the command's output."""
    out, err = _run(stderr_is_tty=False)
    assert out == b"done\n"
    assert err == b""


def test_terminal_gets_a_bar_with_the_label_escaped() -> None:
    """On a terminal the bar is drawn, and a stored ESC or rich markup in its label shows as text."""
    pytest.importorskip("rich")
    out, err = _run(stderr_is_tty=True)
    assert out == b"done\n"
    assert b"importing" in err
    assert b"\\x1b[2J" in err  # the label's ESC, escaped
    assert b"[bold]x[/bold]" in err  # markup shown, not obeyed
    assert b"\x1b[2J" not in err


def test_wanted_only_for_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """`wanted` is false for a pipe and for TERM=dumb, true for a pseudo-terminal."""
    read, write = os.pipe()
    leader, follower = os.openpty()
    try:
        with os.fdopen(os.dup(write), "w") as piped, os.fdopen(os.dup(follower), "w") as tty:
            monkeypatch.setenv("TERM", "xterm")
            assert not _progress.wanted(piped)
            assert _progress.wanted(tty)
            monkeypatch.setenv("TERM", "dumb")
            assert not _progress.wanted(tty)
    finally:
        for fd in (read, write, leader, follower):
            os.close(fd)
