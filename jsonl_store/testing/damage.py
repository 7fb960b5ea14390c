"""Damage bytes the way crashes, bit rot and text tools do, to test what a reader makes of it.

Each function is pure, bytes in and bytes out, so one helper serves a simulated disk
image, a test vector being built and a file on a real disk alike; `damage_file` applies
one to a file in place. Offsets may be negative and then count from the end, as in
slicing; an offset outside the data raises `ValueError` instead of silently damaging
nothing. Example::

    from jsonl_store.testing.damage import damage_file, flip, tear_last_line

    damage_file("store/s/messages.jsonl", tear_last_line)  # the writer died mid-record
    damage_file("store/s/messages.jsonl", flip, 40)         # one bit rotted

What each one stands for (spec/FORMAT.md §8 says how a reader treats it):

- `tear`, `tear_last_line`: a write torn part-way, the bytes after it never written.
- `zero_fill`: blocks whose size reached the disk but whose data did not.
- `garbage`, `noise`: bytes that are no record, over a region or after the end.
- `flip`: a bit rot only the checksum can catch.
- `crlf`, `add_bom`: what git's ``core.autocrlf`` and some editors do to a text file.
"""

from __future__ import annotations

import codecs
import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Concatenate, Final, ParamSpec

_P = ParamSpec("_P")

#: Bytes that are no record: invalid UTF-8, no newline, a stray brace.
GARBAGE: Final = b"\xff\xfe}{garbage\x8f"

#: The UTF-8 byte-order mark some editors put in front of a text file.
BOM: Final = codecs.BOM_UTF8


def _index(data: bytes, offset: int) -> int:
    """Turn a possibly negative offset into an index in ``[0, len(data)]``.

    Raises `ValueError` when ``offset`` lies outside the data.
    """
    index = offset + len(data) if offset < 0 else offset
    if not 0 <= index <= len(data):
        raise ValueError(f"offset {offset} is outside {len(data)} bytes")
    return index


def tear(data: bytes, at: int) -> bytes:
    """Keep ``data[:at]``: a write torn at ``at`` (negative: that many bytes lost at the end).

    Raises `ValueError` when ``at`` lies outside the data.
    """
    return data[: _index(data, at)]


def tear_last_line(data: bytes) -> bytes:
    """Tear the last line in half, as a writer that died mid-record leaves it.

    The last line is what follows the last ``\\n`` before the final byte (the whole data
    when it holds one line). Raises `ValueError` when ``data`` is empty.
    """
    if not data:
        raise ValueError("no line to tear in empty data")
    start = data.rfind(b"\n", 0, len(data) - 1) + 1
    return data[: start + (len(data) - start) // 2]


def flip(data: bytes, offset: int, mask: int = 0x01) -> bytes:
    """XOR the byte at ``offset`` with ``mask``: a bit rot the checksum must catch.

    Raises `ValueError` when ``offset`` is not the index of a byte of ``data`` or when
    ``mask`` flips no bit of a byte (it must be 1 to 255).
    """
    if not 0 < mask <= 0xFF:
        raise ValueError(f"mask {mask!r} flips no bit of a byte")
    index = _index(data, offset)
    if index == len(data):
        raise ValueError(f"no byte at offset {offset} of {len(data)} bytes")
    return data[:index] + bytes([data[index] ^ mask]) + data[index + 1 :]


def zero_fill(data: bytes, offset: int, length: int) -> bytes:
    """Overwrite ``length`` bytes at ``offset`` with NULs, growing the data if it ends sooner.

    The state a file system that extended the size before the data landed leaves behind;
    ``zero_fill(data, len(data), n)`` is a run of ``n`` NULs after the end. Raises
    `ValueError` when ``offset`` lies outside the data or ``length`` is negative.
    """
    if length < 0:
        raise ValueError(f"negative length {length}")
    index = _index(data, offset)
    return data[:index] + b"\x00" * length + data[index + length :]


def garbage(data: bytes, offset: int | None = None, junk: bytes = GARBAGE) -> bytes:
    """Write ``junk`` over the bytes at ``offset``, growing the data if it ends sooner.

    With ``offset=None``, append ``junk`` after the end instead. Raises `ValueError` when
    ``offset`` lies outside the data.
    """
    if offset is None:
        return data + junk
    index = _index(data, offset)
    return data[:index] + junk + data[index + len(junk) :]


def noise(length: int, seed: str) -> bytes:
    """``length`` pseudo-random bytes, the same for the same ``seed`` on every machine.

    SHA-256 in counter mode: test vectors built from it are byte-for-byte reproducible,
    which `random` does not promise across Python versions.
    """
    out = bytearray()
    counter = 0
    while len(out) < length:
        out += hashlib.sha256(f"{seed}:{counter}".encode()).digest()
        counter += 1
    return bytes(out[:length])


def crlf(data: bytes) -> bytes:
    """Every ``\\n`` turned into ``\\r\\n``, as a checkout with git's ``core.autocrlf=true`` does.

    Applied twice it gives ``\\r\\r\\n``, what a naive ``unix2dos`` run twice leaves.
    """
    return data.replace(b"\n", b"\r\n")


def add_bom(data: bytes) -> bytes:
    """`BOM` in front of ``data``, as an editor that saves UTF-8 "with signature" writes it."""
    return BOM + data


def damage_file(
    path: str | os.PathLike[str],
    how: Callable[Concatenate[bytes, _P], bytes],
    *args: _P.args,
    **kwargs: _P.kwargs,
) -> bytes:
    """Replace the file at ``path`` with ``how(its bytes, *args, **kwargs)``; return the new bytes.

    Raises whatever ``how`` raises before the file is touched, and `OSError` when the
    file cannot be read or written.
    """
    target = Path(path)
    data = how(target.read_bytes(), *args, **kwargs)
    target.write_bytes(data)
    return data
