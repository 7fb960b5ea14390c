"""Damage a file the way a crash does, for the torn-tail rows."""

from __future__ import annotations

import os


def tear_last_line(path: str) -> None:
    """Cut the last line in half, as a writer that died mid-write leaves it."""
    with open(path, "rb") as f:
        data = f.read()
    last_start = data.rindex(b"\n", 0, len(data) - 1) + 1
    os.truncate(path, last_start + (len(data) - last_start) // 2)
