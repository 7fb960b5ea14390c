"""The one line reader of the append-only logs, and its three modes.

Every read of a raw log's or a token-usage log's lines outside `_log` goes through `read`
(or, where a caller needs speed, the fast ways below); two modules of `_log` itself
(`snapshots` finding a boundary, `writer` restoring converted lines) call its engine,
`scan`, directly. No module outside `_log` splits a log into lines (``tests/unit/test_line_splits.py``
checks the source). A read says what it wants done with a line that is not a record line
as a writer writes it (spec §8):

- `Mode.TOLERANT`, what `load`, `records` and `verify` read with: valid lines are yielded;
  damage a good line follows is reported to the `Reporter` and skipped, reading resuming at
  the next newline; damage after the last good line (a torn tail, the normal remains of a
  crash) is skipped silently; lines a text tool converted are read as written and
  reported once (§8.4). The line numbers, offsets and reasons are LevelDB's reporter's idea
  (https://github.com/google/leveldb/blob/main/db/log_reader.h).
- `Mode.STRICT`, for bytes about to be processed as they are (a git merge, spec §17):
  every line must be a record line exactly as written; the first that is not (damaged,
  converted, or bytes after the last newline) raises `DamagedLine`, a `CorruptSession`
  and a ``ValueError``, naming its line, offset and reason.
- `Mode.EVERY_BYTE`, for what must account for every byte (a secret scan, a redaction's
  rewrite, a conflict that keeps both sides): every line is yielded as a `Piece`, good or
  not, the last one even without its newline; the pieces joined are the bytes read.

What is read is a `Source`: an open file on a file system, or bytes in memory (a merge's
three versions, a file a rewrite holds whole). For speed a caller takes, instead of
splitting lines itself: ``wanted`` (tolerant mode checks only the lines holding given
bytes), `scan.backward` and `scan.last_good` (from the end), `scan.sealed_before` (the
tail a writer numbers on from), `mapped` (a log's bytes mapped read-only, for a
prefilter that looks for bytes and splits nothing) and `as_written` (the strict mode's
answer for a whole file as one yes or no, for a program that reads the file itself).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import mmap
import os
import re
import stat
from collections.abc import Callable, Iterator
from typing import Final, Literal, TypeVar, overload

import msgspec

from .._format import codec as _codec
from .._format.checksum import crc32 as _crc32
from . import blobs as _blobs
from .problems import DISCARD, Reporter
from .scan import CHUNK, DamagedLine, Line, Pread, scan

_T = TypeVar("_T")


class Mode(enum.Enum):
    """What a read does with a line that is not a record line as written (see the module doc)."""

    TOLERANT = "tolerant"
    STRICT = "strict"
    EVERY_BYTE = "every-byte"


class InMemory:
    """Bytes read as if they were a file: ``pread`` on any descriptor slices them."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data

    def pread(self, fd: int, length: int, offset: int) -> bytes:
        return self.data[offset : offset + length]


@dataclasses.dataclass(frozen=True, slots=True)
class Source:
    """What a read reads: ``size`` bytes through ``fs.pread(fd, ...)``; ``path`` names it in problems."""

    fs: Pread
    fd: int
    size: int
    path: str = ""

    @classmethod
    def of(cls, data: bytes, path: str = "") -> Source:
        """Bytes in memory (a merge's version of a file, a file read whole)."""
        return cls(InMemory(data), 0, len(data), path)


class Piece(msgspec.Struct, gc=False):
    """One line as `Mode.EVERY_BYTE` yields it: its bytes as they are, whatever they hold.

    ``raw`` is the line without its newline; ``terminated`` is False only for bytes after
    the last newline. ``number`` counts lines from the read's ``first_line``.
    """

    offset: int
    number: int
    raw: bytes
    terminated: bool

    @property
    def end(self) -> int:
        """Where the next line starts."""
        return self.offset + len(self.raw) + self.terminated

    @property
    def whole(self) -> bytes:
        """The line's bytes with its newline (when it has one)."""
        return self.raw + b"\n" if self.terminated else self.raw


@overload
def read(
    source: Source,
    mode: Literal[Mode.EVERY_BYTE],
    reporter: Reporter = ...,
    *,
    start: int = ...,
    end: int | None = ...,
    first_line: int = ...,
) -> Iterator[Piece]: ...


@overload
def read(
    source: Source,
    mode: Literal[Mode.TOLERANT, Mode.STRICT] = ...,
    reporter: Reporter = ...,
    *,
    start: int = ...,
    end: int | None = ...,
    first_line: int | None = ...,
    wanted: bytes | None = ...,
) -> Iterator[Line]: ...


def read(
    source: Source,
    mode: Mode = Mode.TOLERANT,
    reporter: Reporter = DISCARD,
    *,
    start: int = 0,
    end: int | None = None,
    first_line: int | None = 1,
    wanted: bytes | None = None,
) -> Iterator[Line] | Iterator[Piece]:
    """The lines of ``source`` in ``[start, end)`` (``end``: its size), read in ``mode``.

    ``start`` must be the start of a line; lines are numbered from ``first_line`` (None:
    not counted, which a tolerant read that steps over lines needs). Tolerant and strict
    reads yield each valid line as a `scan.Line` (its record's bytes, checksum included,
    and its place); tolerant reads report damage to ``reporter``, strict ones raise
    `DamagedLine`. With ``wanted`` (tolerant only) just the lines holding those bytes
    are checked and yielded (`scan.scan`). Every-byte reads yield a `Piece` per line and
    report nothing: judging a piece is the caller's. Memory stays bounded by a line and
    a chunk, except for bytes in memory, which are read where they are.
    """
    stop = source.size if end is None else end
    if mode is Mode.EVERY_BYTE:
        assert wanted is None, "an every-byte read yields every line"
        return _every_byte(source, start, stop, 1 if first_line is None else first_line)
    return scan(
        source.fs, source.fd, source.path, start, stop, reporter,
        first_line=first_line, wanted=wanted, strict=mode is Mode.STRICT,
    )  # fmt: skip


def _every_byte(source: Source, start: int, end: int, number: int) -> Iterator[Piece]:
    fs, fd = source.fs, source.fd
    # Bytes in memory are read in one piece (slicing all of them copies nothing).
    size = end - start if isinstance(fs, InMemory) else CHUNK
    carry: list[bytes] = []  # the start of a line whose end is in a later chunk
    offset = position = start
    while position < end:
        chunk = fs.pread(fd, min(size, end - position), position)
        if not chunk:
            break
        position += len(chunk)
        begin = 0
        stop = chunk.find(b"\n")
        while stop >= 0:
            raw = chunk[begin:stop]
            if carry:
                raw = b"".join((*carry, raw))
                carry.clear()
            yield Piece(offset, number, raw, True)
            offset += len(raw) + 1
            number += 1
            begin = stop + 1
            stop = chunk.find(b"\n", begin)
        if begin < len(chunk):
            carry.append(chunk[begin:])
    if carry:
        yield Piece(offset, number, b"".join(carry), False)


def mapped(path: str, use: Callable[[bytes | mmap.mmap], _T]) -> _T | None:
    """``use(the file's bytes)`` through a read-only map, or None when ``path`` is no regular
    file that can be read: how a byte prefilter reads a log at ``memchr`` speed.

    Real files only (a simulated file system has none: the caller then reads through the
    store). Opened without following a symlink or blocking: a FIFO in a log's place must
    not hang a search (docs/guides/agent-loop.md, "Files that are not what they seem").
    The kernel pages the file in and nothing is copied; an empty file is read as ``b""``
    (a map cannot be empty).
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        if info.st_size == 0:
            return use(b"")
        with mmap.mmap(fd, info.st_size, access=mmap.ACCESS_READ) as data:
            return use(data)
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)


#: Spec §3: a record line begins with its sequence and ends in the checksum key.
_SEQUENCE_HEAD: Final = b'{"sequence":'
_SEQUENCE_DIGITS: Final = re.compile(rb"[1-9][0-9]{0,18}")
_SHORTEST: Final = _codec.SUFFIX_LENGTH + 2


def as_written(path: str, base: int | None, longest: int) -> bool:
    """`Mode.STRICT` as one yes or no over a whole file, at C speed, for a program that reads
    the file's bytes as they are (DuckDB's JSON reader, `jsonl_store.sql`).

    True when every line of the file at ``path`` is a record line exactly as written
    (§3: no line end but ``\\n``, the file ends in one), shorter than ``longest`` bytes,
    naming no blob (§5.1), and for a raw log (``base`` not None) numbered ``base + 1``,
    ``base + 2``, … Nothing is decoded or reported: False (also for an empty, missing or
    unreadable file) is always safe, the caller then reads the file through the store.
    """
    return mapped(path, functools.partial(_as_written, base, longest)) is True


def _as_written(base: int | None, longest: int, data: bytes | mmap.mmap) -> bool:
    size = len(data)
    if not size or data[size - 1 :] != b"\n" or data.find(b"\r") != -1 or data.find(_blobs.KEY_BYTES) != -1:
        return False
    crc32, suffix, position, expected = _crc32, _codec.SUFFIX_LENGTH, 0, (base or 0) + 1
    while position < size:
        end = data.find(b"\n", position)
        length = end - position
        if length < _SHORTEST or length >= longest or data[end - suffix : end - 10] != _codec.CRC_KEY:
            return False
        if (
            data[end - 2 : end] != b'"}'
            or b"%08x" % crc32(data[position : end - suffix]) != data[end - 10 : end - 2]
        ):
            return False
        if base is not None:
            if data[position : position + 12] != _SEQUENCE_HEAD:
                return False
            digits = _SEQUENCE_DIGITS.match(data, position + 12)
            if digits is None or int(digits[0]) != expected or data[digits.end() : digits.end() + 1] != b",":
                return False
            expected += 1
        position = end + 1
    return True


__all__ = ["DamagedLine", "InMemory", "Line", "Mode", "Piece", "Source", "as_written", "mapped", "read"]
