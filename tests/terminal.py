"""Running the real ``jsonl-store`` command on a pseudo-terminal of a set size, or piped.

A child process gets a pty sized with ``TIOCSWINSZ`` (output post-processing off, so the
bytes read are the bytes written); `visible` is what the terminal shows once the colours
are taken out, and fails on any other control character left.
"""

from __future__ import annotations

import fcntl
import os
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

from helpers import readable

#: Colour and bold (ECMA-48 SGR), the only escape sequence the command may write itself.
SGR = re.compile(r"\x1b\[[0-9;]*m")
#: Any other escape or control character but the newline.
OTHER_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f]")


def command() -> list[str]:
    """The installed ``jsonl-store`` next to this Python, else ``python -m jsonl_store.cli``."""
    script = Path(sys.executable).with_name("jsonl-store")
    return [str(script)] if script.exists() else [sys.executable, "-m", "jsonl_store.cli"]


def environment(**changes: str) -> dict[str, str]:
    """This environment without what would change the output, plus ``changes``."""
    drop = (
        "JSONL_STORE_ROOT",
        "PYTHONIOENCODING",
        "NO_COLOR",
        "FORCE_COLOR",
        "COLUMNS",
        "LINES",
        "PAGER",
        "LESS",
    )
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["TERM"] = "xterm-256color"
    env.update(changes)
    return env


def read_all(fd: int) -> bytes:
    """Every byte from ``fd`` until the writers close it (EIO on a pty's master, EOF on a pipe)."""
    chunks = []
    while True:
        assert readable(fd, 60), "no output for 60 s"
        try:
            data = os.read(fd, 1 << 16)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    return b"".join(chunks)


def on_pty(
    argv: list[str],
    *,
    rows: int = 40,
    cols: int = 100,
    env: dict[str, str] | None = None,
    program: list[str] | None = None,
    stderr: int | None = None,
) -> tuple[int, str]:
    """Run the command with stdin, stdout and stderr on a ``rows`` x ``cols`` terminal
    (stderr elsewhere when ``stderr`` is given, e.g. ``subprocess.DEVNULL``)."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    attributes = termios.tcgetattr(slave)
    attributes[1] &= ~termios.OPOST  # the bytes read are the bytes written ("\n", not "\r\n")
    termios.tcsetattr(slave, termios.TCSANOW, attributes)
    try:
        process = subprocess.Popen(
            (program or command()) + argv,
            stdin=slave,
            stdout=slave,
            stderr=slave if stderr is None else stderr,
            env=env or environment(),
        )
    finally:
        os.close(slave)
    try:
        output = read_all(master)
    finally:
        os.close(master)
    return process.wait(timeout=60), output.decode("utf-8")


def visible(text: str) -> str:
    """What the terminal shows: the text without its colours; no other control may be left."""
    shown = SGR.sub("", text)
    found = OTHER_CONTROL.search(shown)
    assert found is None, f"raw {found.group()!r} in {shown[max(0, found.start() - 40) :][:80]!r}"
    return shown
