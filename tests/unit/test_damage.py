"""The byte-damage helpers of jsonl_store.testing.damage do exactly the damage they name."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from jsonl_store.testing import damage
from jsonl_store.testing.damage import (
    BOM,
    GARBAGE,
    add_bom,
    crlf,
    damage_file,
    flip,
    garbage,
    noise,
    tear,
    tear_last_line,
    zero_fill,
)

LOG = b'{"a":1}\n{"b":2}\n{"c":3}\n'


def test_tear_keeps_a_prefix_and_counts_negative_offsets_from_the_end() -> None:
    """tear keeps the bytes before the offset; a negative one loses that many at the end."""
    assert tear(LOG, 10) == LOG[:10]
    assert tear(LOG, -1) == LOG[:-1]
    assert tear(LOG, len(LOG)) == LOG
    assert tear(LOG, 0) == b""


def test_tear_last_line_halves_the_last_line_only() -> None:
    """tear_last_line leaves every line before the last whole and half of the last one."""
    assert tear_last_line(LOG) == b'{"a":1}\n{"b":2}\n{"c"'  # 4 of the last line's 8 bytes
    assert tear_last_line(LOG[:-1]) == b'{"a":1}\n{"b":2}\n{"c'  # no final newline: 3 of 7
    assert tear_last_line(b"0123456789\n") == b"01234"


def test_flip_changes_one_bit_of_one_byte() -> None:
    """flip XORs one byte with the mask and leaves the length and every other byte as they were."""
    flipped = flip(LOG, 3)
    assert len(flipped) == len(LOG)
    assert [i for i in range(len(LOG)) if flipped[i] != LOG[i]] == [3]
    assert flipped[3] == LOG[3] ^ 0x01
    assert flip(LOG, -1, 0x80)[-1] == LOG[-1] ^ 0x80


def test_zero_fill_overwrites_in_place_and_grows_past_the_end() -> None:
    """zero_fill writes NULs over a region, and after the end it extends the data."""
    assert zero_fill(LOG, 8, 8) == LOG[:8] + b"\x00" * 8 + LOG[16:]
    assert zero_fill(LOG, len(LOG), 4) == LOG + b"\x00" * 4
    assert zero_fill(LOG, 20, 10) == LOG[:20] + b"\x00" * 10


def test_garbage_appends_or_overwrites() -> None:
    """garbage appends its junk by default and writes it over the bytes at an offset otherwise."""
    assert garbage(LOG) == LOG + GARBAGE
    assert garbage(LOG, 2, b"xy") == LOG[:2] + b"xy" + LOG[4:]
    assert not GARBAGE.endswith(b"\n")


def test_noise_is_the_same_for_the_same_seed() -> None:
    """noise is deterministic per seed and differs between seeds, at any length."""
    assert noise(300, "a") == noise(300, "a")
    assert noise(300, "a") != noise(300, "b")
    assert len(noise(1000, "a")) == 1000
    assert noise(10, "a") == noise(300, "a")[:10]


def test_crlf_and_bom_are_the_text_conversions_git_and_editors_make() -> None:
    """crlf ends every line in \\r\\n (twice: \\r\\r\\n), add_bom puts the UTF-8 mark in front."""
    assert crlf(LOG) == b'{"a":1}\r\n{"b":2}\r\n{"c":3}\r\n'
    assert crlf(crlf(b"x\n")) == b"x\r\r\n"
    assert add_bom(LOG) == b"\xef\xbb\xbf" + LOG
    assert BOM.decode() == "\ufeff"


@pytest.mark.parametrize(
    "call",
    [
        lambda: tear(LOG, len(LOG) + 1),
        lambda: tear(LOG, -len(LOG) - 1),
        lambda: flip(LOG, len(LOG)),
        lambda: flip(LOG, 0, 0),
        lambda: flip(LOG, 0, 0x100),
        lambda: zero_fill(LOG, 0, -1),
        lambda: zero_fill(LOG, len(LOG) + 1, 1),
        lambda: garbage(LOG, len(LOG) + 1),
        lambda: tear_last_line(b""),
    ],
    ids=[
        "tear-past-end",
        "tear-before-start",
        "flip-at-end",
        "flip-no-bit",
        "flip-wide-mask",
        "zero-fill-negative",
        "zero-fill-past-end",
        "garbage-past-end",
        "tear-empty",
    ],
)
def test_an_offset_outside_the_data_is_a_value_error(call: Callable[[], bytes]) -> None:
    """Damage that would miss the data raises ValueError instead of silently doing nothing."""
    with pytest.raises(ValueError):
        call()


def test_damage_file_applies_one_helper_in_place(tmp_path: Path) -> None:
    """damage_file rewrites the file with the helper's result and returns the new bytes."""
    path = tmp_path / "log"
    path.write_bytes(LOG)
    assert damage_file(path, flip, 3, mask=0x02) == flip(LOG, 3, 0x02)
    assert path.read_bytes() == flip(LOG, 3, 0x02)
    with pytest.raises(ValueError):
        damage_file(path, tear, 1000)
    assert path.read_bytes() == flip(LOG, 3, 0x02)  # a failed helper leaves the file alone


def test_jsonl_store_testing_exports_the_damage_module() -> None:
    """The damage helpers are reachable from jsonl_store.testing, as the module `damage`."""
    import jsonl_store.testing

    assert jsonl_store.testing.damage is damage
    assert "damage" in jsonl_store.testing.__all__
