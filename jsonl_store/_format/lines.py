"""Finding the valid record inside one line of a log, in time linear in the line's bytes.

A line is the bytes between two ``\\n``. The common case, a line that is exactly one sealed
record, is `_format.codec.is_sealed`. This module handles every other case (spec §8.4):

- a line whose record is followed by ``\\r`` (a git checkout with ``core.autocrlf``, an
  editor saving with Windows line endings; ``\\r\\r`` after two conversions) or blanks:
  the checksum covers the record's own bytes, before them;
- a UTF-8 byte-order mark in front of a file's first record;
- a record glued behind damage in the same line (a torn write, a NUL run): salvage.

It works on a ``read(offset, length)`` callable, so a line held in memory and a line many
megabytes long that is only ever read in chunks go through the same code. The cost is one
CRC pass over the line plus a constant per candidate position: each candidate's checksum is
derived from the running CRC with the CRC-32 combination identity (zlib's
``crc32_combine``: crc(A+B) = Z^len(B)(crc(A)) ^ crc(B), where Z shifts a CRC through one
zero byte), never by re-hashing the rest of the line from every ``{"``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Final, NamedTuple

from .. import _process
from .checksum import crc32
from .codec import CRC_KEY, SUFFIX_LENGTH, is_sealed

BOM: Final = b"\xef\xbb\xbf"
RECORD_START: Final = b'{"'
#: Salvage tries at most this many ``{"`` positions, the ones nearest the line's end: a
#: record glued behind damage sits at the end of its line, and the bound keeps a hostile
#: line full of ``{"`` from costing more than one pass over its bytes.
MAX_CANDIDATES: Final = 4096
_HEX: Final = frozenset(b"0123456789abcdef")
#: Bytes a text tool may leave after a record, before the ``\n``: carriage returns
#: (one per conversion to ``\r\n``), blanks and tabs. At most this many are read as one.
TRAILING: Final = b"\r \t"
MAX_TRAILING: Final = 64
_READ: Final = 1 << 20

Read = Callable[[int, int], bytes]


class Found(NamedTuple):
    """Where a line's record is: bytes ``[start, stop)`` of the line are a sealed record."""

    start: int
    stop: int
    #: The line carries bytes a text conversion added (``\\r`` before ``\\n``, a BOM):
    #: a writer restores them to what was written (§9.3).
    converted: bool


@functools.cache  # built on first use: 6-9 ms that every command's start-up would pay
def _zeros_operators() -> list[list[int]]:
    """``ops[i]`` is the GF(2) matrix that moves a CRC-32 through 2**i zero bytes."""
    one_bit = [0xEDB88320] + [1 << (n - 1) for n in range(1, 32)]
    ops = []
    current = one_bit
    for _ in range(3):  # 1 bit -> 2 -> 4 -> 8 bits: one zero byte
        current = _square(current)
    for _ in range(64):
        ops.append(current)
        current = _square(current)
    return ops


# Built from constants, the same in every process: registered so `_process.reset` leaves
# nothing cached.
_process.register("CRC-32 zero-byte operators", _zeros_operators.cache_clear)


def _times(matrix: list[int], vector: int) -> int:
    total = 0
    row = 0
    while vector:
        if vector & 1:
            total ^= matrix[row]
        vector >>= 1
        row += 1
    return total


def _square(matrix: list[int]) -> list[int]:
    return [_times(matrix, matrix[n]) for n in range(32)]


def crc_of_suffix(whole: int, prefix: int, suffix_length: int) -> int:
    """CRC-32 of B given crc(A+B) = ``whole``, crc(A) = ``prefix`` and len(B)."""
    shifted = prefix
    zeros = _zeros_operators()
    bit = 0
    while suffix_length:
        if suffix_length & 1:
            shifted = _times(zeros[bit], shifted)
        suffix_length >>= 1
        bit += 1
    return whole ^ shifted


def _crc(read: Read, start: int, stop: int, value: int) -> int:
    while start < stop:
        chunk = read(start, min(_READ, stop - start))
        if not chunk:
            break
        value = crc32(chunk, value)
        start += len(chunk)
    return value


def _candidates(read: Read, low: int, high: int) -> list[int]:
    """Up to `MAX_CANDIDATES` positions of ``{"`` in ``[low, high)``, nearest ``high`` first."""
    found: list[int] = []
    end = high
    while end > low and len(found) < MAX_CANDIDATES:
        begin = max(low, end - _READ)
        # One byte of overlap, so a '{"' split across two reads is still seen.
        chunk = read(begin, min(end + 1, high) - begin)
        position = len(chunk)
        while len(found) < MAX_CANDIDATES:
            position = chunk.rfind(RECORD_START, 0, position)
            if position == -1:
                break
            if begin + position + len(RECORD_START) <= high:
                found.append(begin + position)
            position += len(RECORD_START) - 1
        end = begin
    return found


def locate(read: Read, length: int, *, file_start: bool) -> Found | None:
    """Find the sealed record in a line of ``length`` bytes (its ``\\n`` excluded).

    ``file_start``: the line starts at byte 0 of its file, where a BOM may stand. Returns
    None when the line holds no valid record; the first valid start wins.
    """
    if length < SUFFIX_LENGTH + 2:
        return None
    last = read(max(0, length - SUFFIX_LENGTH - MAX_TRAILING), min(length, SUFFIX_LENGTH + MAX_TRAILING))
    # Line-end conversions can add more than one byte: `unix2dos` run twice gives
    # "\r\r\n", an editor may leave trailing blanks. A record never ends in any of these.
    kept = last.rstrip(TRAILING)
    if len(last) - len(kept) >= MAX_TRAILING:
        return None  # more trailing bytes than any conversion adds: not a converted record
    stop = length - (len(last) - len(kept))
    last = kept
    suffix = last[-SUFFIX_LENGTH:]
    # Every candidate shares the line's end, so a line without a well-formed checksum
    # suffix holds no record at all: decided from its last 19 bytes, whatever its length.
    if (
        len(suffix) < SUFFIX_LENGTH
        or suffix[:-10] != CRC_KEY
        or suffix[-2:] != b'"}'
        or not _HEX.issuperset(suffix[-10:-2])
    ):
        return None
    expected = int(suffix[-10:-2], 16)
    covered = stop - SUFFIX_LENGTH  # the checksum covers [start, covered)
    starts = [0]
    if file_start and read(0, len(BOM)) == BOM:
        starts.append(len(BOM))
    starts.extend(_candidates(read, 1, covered))
    starts = sorted({s for s in starts if s < covered})
    prefixes = []
    value = 0
    previous = 0
    for start in starts:
        value = _crc(read, previous, start, value)
        prefixes.append(value)
        previous = start
    whole = _crc(read, previous, covered, value)
    for start, prefix in zip(starts, prefixes, strict=True):
        crc = whole if start == 0 else crc_of_suffix(whole, prefix, covered - start)
        if crc == expected:
            converted = stop != length or (start == len(BOM) and file_start and read(0, len(BOM)) == BOM)
            return Found(start, stop, converted)
    return None


def whole_line(data: bytes) -> tuple[bytes, bool] | None:
    """The record of a file that is one line (a snapshot), and whether it was converted.

    ``data`` is the whole file. Returns the sealed bytes (no ``\\r``, no ``\\n``) or None.
    """
    if not data.endswith(b"\n"):
        return None
    raw = data[:-1]
    if is_sealed(raw):
        return raw, False
    found = locate(in_memory(raw), len(raw), file_start=True)
    if (
        found is None
        or not found.converted
        or not (found.start == 0 or (found.start == len(BOM) and raw.startswith(BOM)))
    ):
        return None
    return raw[found.start : found.stop], True


def in_memory(raw: bytes) -> Read:
    """A ``read`` over bytes already held (a slice, no copy of the whole line)."""
    view = memoryview(raw)
    return lambda offset, length: bytes(view[offset : offset + length])
