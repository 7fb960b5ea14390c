"""Substring search near memory speed: ``memchr`` on the needle's rarest byte first.

CPython's ``bytes.find`` runs at about 1-2 GB/s on JSON text (its skip table is a 64-bit
filter that common letters fill), a single-byte ``find`` at memory speed (``memchr``).
Both `jsonl_store.search`'s prefilter and `SessionStore.records(containing=)` look for a
needle in whole logs, so both use `find`.
"""

from __future__ import annotations

import functools
import mmap
from typing import Final

from .. import _process

#: Bytes of JSON-lines transcripts from most to least frequent, as counted over 3.7 MB of
#: Claude Code, Codex and pi transcripts and a ``jsonl-store demo`` store (digits and hex
#: are frequent: ids, checksums and timestamps are on every line); a byte later here, or
#: missing, is probably rarer in a log. ripgrep's literal search picks its `memchr` byte
#: the same way, from a frequency table (https://github.com/BurntSushi/memchr,
#: ``src/memmem/rarebytes.rs``).
_COMMON: Final = b' etn"sairo\\dpmlcfu:_,h10g.y-b2x354/kwv869A7=Tz()ICMPESDBURqZNOLjFHG+XWQY'
_RANK: Final = {byte: rank for rank, byte in enumerate(_COMMON)}
#: After this many false hits of the rare byte, `find` checks how frequent it is. Every
#: false hit is a turn of a Python loop (about a microsecond): `records(containing=...)`
#: calls `find` once per line it yields, so a byte that is not rare after all must be
#: given up on early, or each call pays the whole patience again.
_PATIENCE: Final = 8
#: A needle whose rarest byte is among this many most frequent ones (all of ``function``'s
#: letters are) has no rare byte: `find` leaves it to the substring search at once.
_FREQUENT: Final = 24
#: A rare byte seen more often than once per this many bytes is not rare: the rest of
#: the haystack is left to the substring search.
_SPACING: Final = 4096


@functools.lru_cache(maxsize=64)  # records(containing=) asks again for every line it finds
def rarest(needle: bytes) -> int:
    """The index in ``needle`` of its probably rarest byte."""
    return max(range(len(needle)), key=lambda i: _RANK.get(needle[i], len(_COMMON)))


# A pure cache (a needle's rarest byte never changes): registered so `_process.reset`
# leaves nothing cached.
_process.register("rarest byte of recent needles", rarest.cache_clear)


def find(data: bytes | mmap.mmap, needle: bytes, start: int = 0) -> int:
    """``data.find(needle, start)`` (``start`` ≥ 0), usually faster.

    The rarest byte is found first and the needle checked around it; when that byte is
    one of the most frequent in logs (`_FREQUENT`), or turns out to be frequent in
    ``data`` (more than one per 4 KiB after `_PATIENCE` false hits), the rest of ``data``
    is left to the substring search, so the worst case stays close to a plain ``find``.
    """
    length = len(needle)
    if length < 2:
        return data.find(needle, start)
    pick = rarest(needle)
    if _RANK.get(needle[pick], len(_COMMON)) < _FREQUENT:
        return data.find(needle, start)
    byte = needle[pick : pick + 1]
    at = data.find(byte, start + pick)
    tries = 0
    while at >= 0:
        begin = at - pick
        if data[begin : begin + length] == needle:
            return begin
        tries += 1
        if tries > _PATIENCE and tries * _SPACING > at - start:
            return data.find(needle, begin + 1)
        at = data.find(byte, at + 1)
    return -1
