"""UUIDv7 identifiers (RFC 9562): time-ordered, so ids sort in the order they were made."""

from __future__ import annotations

import os
import random
import threading
import time

# A private generator: seeded from os.urandom, reseeded in a forked child so processes
# never share a sequence (ids need uniqueness, not secrecy), and independent of the
# global `random` state that applications and test tools seed for their own purposes.
_random = random.Random()
os.register_at_fork(after_in_child=_random.seed)
_lock = threading.Lock()
_last_ms = 0
_counter = 0


def new_uuid7() -> str:
    """Return a new UUIDv7 as a lowercase hyphenated string, monotonic within this process."""
    global _last_ms, _counter
    ms = time.time_ns() // 1_000_000
    rand = _random.getrandbits(62)
    with _lock:
        # Within one millisecond the 12-bit rand_a field counts up (RFC 9562, method 1),
        # so two ids made in the same millisecond still sort in creation order.
        if ms <= _last_ms:
            ms = _last_ms
            _counter += 1
            if _counter > 0xFFF:
                ms += 1
                _counter = 0
        else:
            _counter = 0
        _last_ms = ms
        counter = _counter
    value = (ms << 80) | (0x7 << 76) | (counter << 64) | (0b10 << 62) | rand
    text = f"{value:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"
