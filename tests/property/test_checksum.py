"""The lines' CRC-32 is spec §3's whichever implementation computes it: zlib-ng's (the ``fast``
extra) gives what the standard library's zlib gives, on any bytes, continuing any value,
through a memoryview as the readers pass it; without the extra, zlib itself is used."""

from __future__ import annotations

import subprocess
import sys
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jsonl_store._format import checksum
from jsonl_store._format.codec import is_sealed, seal

EXAMPLES = settings(max_examples=300, deadline=None)


def test_check_value_of_the_spec() -> None:
    """The CRC-32 of ``123456789`` is ``cbf43926`` (spec §3), whichever implementation is installed."""
    assert checksum.crc32(b"123456789") == 0xCBF43926


@EXAMPLES
@given(data=st.binary(max_size=4096), value=st.integers(0, 2**32 - 1), cut=st.integers(0, 4096))
def test_same_as_zlib_on_any_bytes(data: bytes, value: int, cut: int) -> None:
    """On any bytes, from any running value, through a memoryview slice, the CRC-32 is zlib's."""
    assert checksum.crc32(data) == zlib.crc32(data)
    assert checksum.crc32(data, value) == zlib.crc32(data, value)
    view = memoryview(data)[: min(cut, len(data))]
    assert checksum.crc32(view, value) == zlib.crc32(view, value)


@EXAMPLES
@given(head=st.binary(min_size=1, max_size=2048).map(lambda b: b"{" + b.replace(b"\n", b" ") + b"}"))
def test_sealed_lines_check_as_zlib_says(head: bytes) -> None:
    """A line sealed here carries zlib's CRC-32 of what it covers, and checks as sealed."""
    line = seal(head)[:-1]
    assert line[-10:-2] == b"%08x" % zlib.crc32(head[:-1])
    assert is_sealed(line)


def test_zlib_ng_is_used_when_installed() -> None:
    """With zlib-ng importable, the readers and writers use its CRC-32."""
    pytest.importorskip("zlib_ng.zlib_ng")
    assert checksum.IMPLEMENTATION == "zlib-ng"


def test_zlib_without_the_extra() -> None:
    """Without zlib-ng (an import that fails), the standard library's zlib computes the checksum."""
    code = (
        "import sys; sys.modules['zlib_ng'] = None; sys.modules['zlib_ng.zlib_ng'] = None\n"
        "import zlib\n"
        "from jsonl_store._format import checksum\n"
        "assert checksum.IMPLEMENTATION == 'zlib', checksum.IMPLEMENTATION\n"
        "assert checksum.crc32 is zlib.crc32\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
