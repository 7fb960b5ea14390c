"""Reading other tools' transcript files without trusting them.

A transcript may be anything: a line of hundreds of megabytes, binary bytes, a FIFO, a
symlink loop, a file the user may not read. Finding files never follows a symlinked
directory (`os.walk` with ``followlinks=False``, so a loop cannot make it walk forever)
and skips what is not a regular file; opening uses ``O_NONBLOCK`` so a FIFO cannot
block, then checks with ``fstat`` that it got a regular file. Lines are read in 1 MiB
chunks; a line longer than `MAX_LINE` is skipped without being held in memory and
reported as damaged.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import orjson

from ._report import ImportSourceError

#: The longest line an importer reads (an image pasted into Claude Code is a few MiB).
MAX_LINE = 64 * 1024 * 1024
_CHUNK = 1024 * 1024
#: The most bytes a side file (a sub-agent's ``.meta.json``) may have.
MAX_SIDE_FILE = 1024 * 1024


class NotRegular(OSError):
    """The path is a FIFO, a device, a socket or a directory: nothing to import."""


@dataclass(frozen=True, slots=True)
class SourceLine:
    """One line of a source file: its number (from 1), where it starts and ends, its bytes.

    ``data`` is None for a line longer than `MAX_LINE` (left unread). ``end`` is the offset
    after its newline (the file's end for a last line without one).
    """

    number: int
    offset: int
    end: int
    data: bytes | None
    #: False for a last line without a newline (complete, or a write still in progress).
    terminated: bool = True

    def parse(self) -> tuple[dict[str, object] | None, str | None]:
        """``(the JSON object, None)``, or ``(None, why not)`` for a damaged line."""
        if self.data is None:
            return None, f"line longer than {MAX_LINE} bytes, not read"
        try:
            value = orjson.loads(self.data)
        except orjson.JSONDecodeError as exc:
            return None, f"not JSON: {exc}"
        if not isinstance(value, dict):
            return None, f"not a JSON object but {type(value).__name__}"
        return value, None


def find(paths: Iterable[str], suffix: str = ".jsonl") -> tuple[list[str], list[tuple[str, str]]]:
    """The transcript files ``paths`` name, and ``(path, problem)`` for those that cannot be one.

    A file is taken as it is named; a directory gives every ``*suffix`` file below it,
    sorted, not following symlinks. Raises `ImportSourceError` for a path that does not
    exist.
    """
    files: list[str] = []
    problems: list[tuple[str, str]] = []
    for path in paths:
        if not os.path.lexists(path):
            raise ImportSourceError("nothing to import: no such file or directory", path=path)
        if os.path.isdir(path) and not os.path.islink(path):
            found, bad = _walk(path, suffix)
            files.extend(found)
            problems.extend(bad)
        else:
            files.append(path)  # a file named on purpose, or a symlink to one: opened as given
    return files, problems


def _walk(top: str, suffix: str) -> tuple[list[str], list[tuple[str, str]]]:
    found: list[str] = []
    problems: list[tuple[str, str]] = []

    def onerror(exc: OSError) -> None:
        problems.append((str(exc.filename), f"cannot list the folder: {exc.strerror}"))

    for folder, dirs, names in os.walk(top, onerror=onerror, followlinks=False):
        dirs.sort()
        for name in sorted(names):
            if not name.endswith(suffix):
                continue
            path = os.path.join(folder, name)
            if os.path.islink(path):
                problems.append((path, "a symlink inside the folder: not followed (name the file itself)"))
            else:
                found.append(path)
    return found, problems


def open_source(path: str) -> int:
    """A read descriptor on the regular file ``path``; raises `NotRegular` or the `OSError` met."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegular(f"not a regular file: {path!r}")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def size_of(fd: int) -> int:
    return os.fstat(fd).st_size


def lines(fd: int, offset: int, first_number: int, size: int) -> Iterator[SourceLine]:
    """Every line from ``offset`` to ``size`` (the file's size when reading began).

    A last line without a newline is given too (the tools end every line with one, so
    such a line is either complete or a write in progress: its JSON tells which).
    Stopping at ``size`` keeps an import consistent with a writer that appends meanwhile.
    """
    number = first_number
    start = offset
    pending = bytearray()
    too_long = False
    position = offset
    while position < size:
        chunk = os.pread(fd, min(_CHUNK, size - position), position)
        if not chunk:
            break  # the file shrank under us: stop where it ends now
        cut = 0
        while (newline := chunk.find(b"\n", cut)) >= 0:
            end = position + newline + 1
            if not too_long:
                pending += chunk[cut:newline]
            yield SourceLine(number, start, end, None if too_long else bytes(pending))
            number += 1
            start = end
            pending.clear()
            too_long = False
            cut = newline + 1
        if not too_long:
            pending += chunk[cut:]
            if len(pending) > MAX_LINE:
                too_long = True
                pending.clear()
        position += len(chunk)
    if position > start:
        yield SourceLine(number, start, position, None if too_long else bytes(pending), terminated=False)


def read_side_file(path: str) -> dict[str, object] | None:
    """A small JSON object file next to a transcript (a sub-agent's ``.meta.json``), or None."""
    try:
        fd = open_source(path)
    except OSError:
        return None
    try:
        data = os.pread(fd, MAX_SIDE_FILE + 1, 0)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) > MAX_SIDE_FILE:
        return None
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None
