"""The line reader's three modes answer differently for the same damage (`jsonl_store._log.modes`, spec §8)."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest

from jsonl_store import CorruptSession, JsonlStoreError
from jsonl_store._format import codec as _codec
from jsonl_store._io.fs import OS_FS
from jsonl_store._log.modes import DamagedLine, Mode, Source, as_written, read
from jsonl_store._log.problems import Reporter
from jsonl_store._log.scan import sealed_before


def _record(sequence: int, text: str = "hi") -> bytes:
    """One record line as the writer writes it, newline included."""
    body = b'{"sequence":%d,"id":"r%d","message":{"role":"user","content":"%s"}}' % (
        sequence,
        sequence,
        text.encode(),
    )
    return _codec.seal(body)


ONE, TWO, THREE = _record(1), _record(2), _record(3)
#: A record whose checksum no longer holds: one byte of its text changed.
BAD_CRC = TWO.replace(b'"hi"', b'"ho"')
GARBAGE = b"\x00\x00garbage, no record\n"


def _tolerant(data: bytes) -> tuple[list[bytes], list[tuple[str, int | None, str]]]:
    found = Reporter()
    lines = [line.body for line in read(Source.of(data, "log"), Mode.TOLERANT, found)]
    return lines, [(p.kind, p.line, p.reason) for p in found.problems]


def _strict(data: bytes) -> list[bytes] | DamagedLine:
    try:
        return [line.body for line in read(Source.of(data, "log"), Mode.STRICT)]
    except DamagedLine as exc:
        return exc


def _every_byte(data: bytes) -> list[tuple[int, bytes, bool]]:
    return [(piece.number, piece.raw, piece.terminated) for piece in read(Source.of(data), Mode.EVERY_BYTE)]


def test_a_healthy_log_reads_the_same_in_every_mode() -> None:
    """Three whole records: every mode gives the three lines, and tolerant reports nothing."""
    data = ONE + TWO + THREE
    lines = [ONE[:-1], TWO[:-1], THREE[:-1]]
    assert _tolerant(data) == (lines, [])
    assert _strict(data) == lines
    assert _every_byte(data) == [(1, ONE[:-1], True), (2, TWO[:-1], True), (3, THREE[:-1], True)]


def test_a_torn_tail_is_skipped_silently_refused_strictly_and_kept_as_a_piece() -> None:
    """Half a record after the last newline: tolerant skips it unreported, strict raises, every-byte yields it."""
    data = ONE + TWO[:25]
    assert _tolerant(data) == ([ONE[:-1]], [])
    refused = _strict(data)
    assert isinstance(refused, DamagedLine)
    assert (refused.line, refused.offset) == (2, len(ONE))
    assert "no newline" in refused.reason
    assert _every_byte(data) == [(1, ONE[:-1], True), (2, TWO[:25], False)]


def test_a_bad_checksum_mid_file_is_reported_refused_and_kept() -> None:
    """A line whose checksum fails, good lines after it: tolerant reports and skips it, strict raises at it."""
    data = ONE + BAD_CRC + THREE
    lines, problems = _tolerant(data)
    assert lines == [ONE[:-1], THREE[:-1]]
    assert problems == [("damaged-line", 2, "checksum mismatch")]
    refused = _strict(data)
    assert isinstance(refused, DamagedLine)
    assert (refused.line, refused.offset, refused.reason) == (2, len(ONE), "checksum mismatch")
    assert _every_byte(data) == [(1, ONE[:-1], True), (2, BAD_CRC[:-1], True), (3, THREE[:-1], True)]


def test_garbage_between_lines_is_reported_refused_and_kept() -> None:
    """NULs and text between two records: reported by tolerant, the end of a strict read, a piece of its own."""
    data = ONE + GARBAGE + TWO
    lines, problems = _tolerant(data)
    assert lines == [ONE[:-1], TWO[:-1]]
    assert [(kind, line) for kind, line, _ in problems] == [("damaged-line", 2)]
    refused = _strict(data)
    assert isinstance(refused, DamagedLine) and refused.line == 2
    assert _every_byte(data) == [(1, ONE[:-1], True), (2, GARBAGE[:-1], True), (3, TWO[:-1], True)]


def test_damage_after_the_last_good_line_is_a_tail_only_to_the_tolerant_mode() -> None:
    """Garbage with no good line after it is the remains of a crash: tolerant reports nothing, strict still raises."""
    data = ONE + GARBAGE
    assert _tolerant(data) == ([ONE[:-1]], [])
    refused = _strict(data)
    assert isinstance(refused, DamagedLine) and refused.line == 2


def test_a_converted_line_is_read_as_written_by_tolerant_and_refused_by_strict() -> None:
    """A ``\\r\\n`` line end (a text tool's): tolerant reads its record and says so once, strict refuses it."""
    data = ONE + TWO[:-1] + b"\r\n" + THREE
    lines, problems = _tolerant(data)
    assert lines == [ONE[:-1], TWO[:-1], THREE[:-1]]
    assert [kind for kind, _, _ in problems] == ["text-conversion"]
    refused = _strict(data)
    assert isinstance(refused, DamagedLine) and refused.line == 2
    assert _every_byte(data)[1] == (2, TWO[:-1] + b"\r", True)


def test_a_strict_refusal_is_a_typed_error_that_pickles() -> None:
    """`DamagedLine` is a `CorruptSession`, a `JsonlStoreError` and a ``ValueError``, and keeps its fields when pickled."""
    refused = _strict(ONE + BAD_CRC)
    assert isinstance(refused, DamagedLine)
    assert isinstance(refused, CorruptSession) and isinstance(refused, JsonlStoreError)
    assert isinstance(refused, ValueError)
    again = pickle.loads(pickle.dumps(refused))
    assert (again.line, again.offset, again.reason, again.path) == (2, len(ONE), "checksum mismatch", "log")


@pytest.mark.parametrize(
    "data",
    [b"", b"\n", b"no newline", ONE + BAD_CRC + GARBAGE + TWO[:30], b"\n\n\r\n" + THREE],
    ids=["empty", "newline", "unterminated", "damaged", "blank-lines"],
)
def test_every_byte_pieces_joined_are_the_bytes_read(data: bytes) -> None:
    """Every-byte leaves nothing out: the pieces, each with its newline, are the file, offsets included."""
    pieces = list(read(Source.of(data), Mode.EVERY_BYTE))
    assert b"".join(piece.whole for piece in pieces) == data
    assert all(data[piece.offset : piece.end] == piece.whole for piece in pieces)


def test_a_file_and_its_bytes_in_memory_read_alike(tmp_path: Path) -> None:
    """The same bytes read from an open file and from memory give the same lines and pieces in each mode."""
    data = ONE + BAD_CRC + GARBAGE + THREE + TWO[:10]
    path = tmp_path / "messages.jsonl"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        on_disk = Source(OS_FS, fd, len(data), str(path))
        in_memory = Source.of(data, str(path))
        for source_lines in (on_disk, in_memory):
            assert [line.body for line in read(source_lines, Mode.TOLERANT)] == [ONE[:-1], THREE[:-1]]
        assert list(read(on_disk, Mode.EVERY_BYTE)) == list(read(in_memory, Mode.EVERY_BYTE))
        with pytest.raises(DamagedLine):
            list(read(on_disk, Mode.STRICT))
    finally:
        os.close(fd)


def test_a_read_from_an_offset_numbers_its_lines_from_the_first_line_given() -> None:
    """``start`` and ``first_line`` place a read in the middle of a log: numbers and offsets are the file's."""
    data = ONE + TWO + THREE
    pieces = list(read(Source.of(data), Mode.EVERY_BYTE, start=len(ONE), first_line=2))
    assert [(piece.number, piece.offset) for piece in pieces] == [(2, len(ONE)), (3, len(ONE + TWO))]
    lines = list(read(Source.of(data), Mode.STRICT, start=len(ONE), end=len(ONE + TWO), first_line=2))
    assert [(line.number, line.body) for line in lines] == [(2, TWO[:-1])]


def test_the_tail_read_gives_the_valid_lines_in_the_window_before_an_offset(tmp_path: Path) -> None:
    """`sealed_before` reads only its window: the line the window's start cuts and damaged lines are left out."""
    data = ONE + GARBAGE + TWO + BAD_CRC + THREE
    path = tmp_path / "messages.jsonl"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        end = len(data) - len(THREE)
        assert list(sealed_before(OS_FS, fd, end, len(data))) == [ONE[:-1], TWO[:-1]]
        # A window starting inside ONE: its remains are no whole line.
        window = end - 5
        assert list(sealed_before(OS_FS, fd, end, window)) == [TWO[:-1]]
        assert list(sealed_before(OS_FS, fd, 0, 100)) == []
    finally:
        os.close(fd)


@pytest.mark.parametrize(
    ("data", "base", "expected"),
    [
        (ONE + TWO + THREE, 0, True),
        (ONE + TWO + THREE, None, True),
        (TWO + THREE, 1, True),
        (ONE + THREE, 0, False),  # a gap in the numbering
        (ONE + TWO[:-1] + b"\r\n", 0, False),  # converted
        (ONE + BAD_CRC, 0, False),
        (ONE + TWO[:-1], 0, False),  # torn
        (b"", 0, False),
    ],
    ids=["log", "usage", "fork", "gap", "converted", "bad-crc", "torn", "empty"],
)
def test_as_written_is_the_strict_answer_for_a_whole_file(
    tmp_path: Path, data: bytes, base: int | None, expected: bool
) -> None:
    """`as_written` says yes only where a strict read would pass (and the numbering continues from ``base``)."""
    path = tmp_path / "messages.jsonl"
    path.write_bytes(data)
    assert as_written(str(path), base, 1 << 20) is expected
    if expected:
        assert not isinstance(_strict(data), DamagedLine)


def test_as_written_refuses_a_line_longer_than_the_reader_takes(tmp_path: Path) -> None:
    """A line at or over ``longest`` bytes makes the file no candidate for the direct read."""
    path = tmp_path / "messages.jsonl"
    path.write_bytes(ONE)
    assert as_written(str(path), 0, len(ONE)) is True
    assert as_written(str(path), 0, len(ONE) - 1) is False
    assert as_written(str(tmp_path / "missing"), 0, 1 << 20) is False
