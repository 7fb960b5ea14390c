"""CRC-32, the checksum of every line (spec §3): zlib's, or zlib-ng's with the ``fast`` extra.

Both compute the one function spec §3 names (the zlib / IEEE 802.3 polynomial, reflected,
``crc32(b"123456789") == 0xcbf43926``), with the same running ``value`` argument, so a
line checks the same whichever is installed; ``tests/property/test_checksum.py`` holds
them equal. They differ in speed: CPython's ``zlib`` module is linked against the
system's zlib (1.2 or 1.3), whose CRC-32 handles a few bytes per step, while zlib-ng folds
16 to 64 bytes at a time with carry-less multiplication (``crc32_fold_pclmulqdq.c`` and
``crc32_fold_vpclmulqdq.c`` in https://github.com/zlib-ng/zlib-ng/tree/develop/arch/x86).
Every load checks the CRC-32 of every line it reads, and with zlib that was about a
sixth of restoring a context of 10 KB tool results (`benchmarks/load_parts.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

try:
    from zlib_ng.zlib_ng import crc32 as _crc32
except ImportError:  # the `fast` extra is not installed: the standard library's
    from zlib import crc32 as _crc32

#: ``crc32(data, value=0)``: the CRC-32 of ``data`` (any bytes-like object), continuing ``value``.
crc32: Final[Callable[..., int]] = _crc32

#: Which implementation `crc32` is: ``"zlib-ng"`` or ``"zlib"`` (for benchmarks and bug reports).
IMPLEMENTATION: Final = "zlib-ng" if _crc32.__module__ == "zlib_ng.zlib_ng" else "zlib"

__all__ = ["IMPLEMENTATION", "crc32"]
