"""UUIDv7 identifiers (RFC 9562): time-ordered, so ids sort in the order they were made.

Every record gets one, under the append path's budget, so the text is assembled from
parts made ahead: the millisecond's hex once per millisecond, the counter's from tables,
and the random tails (``"8f3a-0c1d2e3f4a5b"``) 256 at a time from one ``os.urandom``.
"""

from __future__ import annotations

import os
import threading
import time

from .. import _process

#: Random tails made per `os.urandom` call (8 bytes each).
_BATCH = 256
# rand_b's first octet carries the variant 0b10 in its two high bits (RFC 9562 §5.7).
_VARIANT = bytes(0x80 | (octet & 0x3F) for octet in range(256))
_HEX1 = "0123456789abcdef"
_HEX2 = tuple(f"{octet:02x}" for octet in range(256))


class _Clock:
    """The last millisecond used, the counter within it, and the next unused tail."""

    __slots__ = ("counter", "lock", "ms", "next", "prefix")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.ms = 0
        self.counter = 0
        self.prefix = ""  # `_prefix` of ``ms``
        self.next = 0


_clock = _Clock()
_tails: list[str] = []


def _refill() -> None:
    """Make `_BATCH` tails ``vrrr-rrrrrrrrrrrr`` (62 random bits each) in a few C calls."""
    raw = bytearray(os.urandom(8 * _BATCH))
    high = raw[: 2 * _BATCH]
    high[0::2] = high[0::2].translate(_VARIANT)
    lows = raw[2 * _BATCH :].hex("-", 6).split("-")
    _tails[:] = map("-".join, zip(high.hex("-", 2).split("-"), lows, strict=True))


def _prefix(ms: int) -> str:
    """``"tttttttt-tttt-7"``: the 48-bit millisecond and the version digit."""
    return ms.to_bytes(6, "big").hex("-", -4) + "-7"


def _forked() -> None:
    # A child must never hand out its parent's tails (the two would make equal ids in
    # the same millisecond), nor wait on a lock another thread held at the fork.
    _clock.lock = threading.Lock()
    _tails.clear()


_process.register("uuid7 clock and random tails", _forked)


def new_uuid7() -> str:
    """Return a new UUIDv7 as a lowercase hyphenated string, monotonic within this process."""
    ms = time.time_ns() // 1_000_000
    clock = _clock
    lock = clock.lock
    lock.acquire()
    try:
        # Within one millisecond the 12-bit rand_a field counts up (RFC 9562 §6.2,
        # method 1), so two ids made in the same millisecond still sort in creation
        # order; a clock that steps back keeps counting in the last millisecond.
        if ms > clock.ms:
            clock.ms = ms
            counter = clock.counter = 0
            prefix = clock.prefix = _prefix(ms)
        else:
            counter = clock.counter = clock.counter + 1
            prefix = clock.prefix
            if counter > 0xFFF:
                ms = clock.ms = clock.ms + 1
                counter = clock.counter = 0
                prefix = clock.prefix = _prefix(ms)
        index = clock.next
        if index >= len(_tails):
            _refill()
            index = 0
        clock.next = index + 1
        tail = _tails[index]
    finally:
        lock.release()
    return f"{prefix}{_HEX1[counter >> 8]}{_HEX2[counter & 0xFF]}-{tail}"
