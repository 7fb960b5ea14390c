"""Reading forward and backward finds the same lines, whatever the bytes (spec §8.1 to §8.4).

The forward scanner (readers) and the backward search (writers, summaries) are two
implementations of one rule; here they run over random mixes of records, converted line
ends, byte-order marks, glued records and garbage, with chunk sizes and the long-line
threshold shrunk to a few bytes so that every path through both (lines split across
chunks, lines too long to hold) is taken.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator

import pytest
from helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from jsonl_store._format import codec as _codec
from jsonl_store._format import lines as _lines
from jsonl_store._io.fs import OS_FS
from jsonl_store._log import modes as _modes
from jsonl_store._log import scan as _log_reader
from jsonl_store._log.modes import DamagedLine, Mode, Piece, Source, read
from jsonl_store._log.problems import DISCARD
from jsonl_store._log.scan import Line


def _record(n: int, text: str) -> bytes:
    body = b'{"sequence":%d,"id":"r%d","message":{"role":"user","content":%s}}' % (
        n,
        n,
        _codec._encoder.encode(text),
    )
    return _codec.seal(body)[:-1]


pieces = st.one_of(
    st.tuples(st.just("record"), st.text(max_size=30)),
    st.tuples(st.just("crlf"), st.text(max_size=30)),
    st.tuples(st.just("glued"), st.binary(max_size=30).map(lambda b: b.replace(b"\n", b""))),
    st.tuples(st.just("garbage"), st.binary(max_size=60).map(lambda b: b.replace(b"\n", b""))),
)


@st.composite
def logs(draw: st.DrawFn) -> bytes:
    lines = []
    for n, (kind, value) in enumerate(draw(st.lists(pieces, max_size=12)), start=1):
        if isinstance(value, str):  # "record" or "crlf": the text of a record
            lines.append(_record(n, value) + (b"\n" if kind == "record" else b"\r\n"))
        elif kind == "glued":
            lines.append(value + _record(n, "glued") + b"\n")
        else:
            lines.append(value + b"\n")
    data = b"".join(lines)
    if draw(st.booleans()):
        data = _lines.BOM + data
    return data + draw(st.binary(max_size=20))  # an unterminated remainder


@contextlib.contextmanager
def tiny_buffers() -> Iterator[None]:
    """Chunks of a few bytes and a long-line threshold of 64, for every code path."""
    patch = pytest.MonkeyPatch()
    try:
        patch.setattr(_log_reader, "CHUNK", 16)
        patch.setattr(_modes, "CHUNK", 16)
        patch.setattr(_log_reader, "BACK_CHUNK", 8)
        patch.setattr(_log_reader, "LONG_LINE", 64)
        patch.setattr(_lines, "_READ", 16)
        yield
    finally:
        patch.undo()


def _both(data: bytes) -> tuple[list[tuple[int, bytes, int, bool]], list[tuple[int, bytes, int, bool]]]:
    with tempfile.NamedTemporaryFile() as file:
        file.write(data)
        file.flush()
        fd = os.open(file.name, os.O_RDONLY)
        try:
            forward = [
                (line.offset, line.body, line.end, line.converted)
                for line in _log_reader.scan(OS_FS, fd, "", 0, len(data), DISCARD)
            ]
            back = [
                (line.offset, line.body, line.end, line.converted)
                for line in _log_reader.backward(OS_FS, fd, len(data))
            ]
        finally:
            os.close(fd)
    return forward, back[::-1]


@settings(max_examples=examples(300))
@given(logs())
def test_forward_and_backward_reading_agree_with_tiny_buffers(data: bytes) -> None:
    """scan() and backward() yield the same lines, bodies and offsets, through every buffer path."""
    with tiny_buffers():
        forward, back = _both(data)
    assert forward == back
    for offset, body, end, _ in forward:
        assert _codec.is_sealed(body)
        assert data[offset : offset + len(body)] == body and data[end - 1 : end] == b"\n"


@settings(max_examples=examples(100))
@given(logs())
def test_tiny_buffers_find_what_normal_buffers_find(data: bytes) -> None:
    """The same log read with the real buffer sizes gives the same lines as with tiny ones."""
    normal = _both(data)
    with tiny_buffers():
        tiny = _both(data)
    assert normal == tiny


def _lines_holding(data: bytes, wanted: bytes | None) -> list[tuple[int, int | None, bytes, int]]:
    with tempfile.NamedTemporaryFile() as file:
        file.write(data)
        file.flush()
        fd = os.open(file.name, os.O_RDONLY)
        try:
            lines = _log_reader.scan(OS_FS, fd, "", 0, len(data), DISCARD, first_line=1, wanted=wanted)
            return [(line.offset, line.number, line.body, line.end) for line in lines]
        finally:
            os.close(fd)


@settings(max_examples=examples(300))
@given(logs(), st.binary(min_size=1, max_size=3), st.integers(0, 1 << 16), st.integers(1, 8), st.booleans())
def test_a_filtered_scan_finds_every_line_holding_the_bytes(
    data: bytes, other: bytes, at: int, length: int, tiny: bool
) -> None:
    """scan(wanted=...) yields each valid line holding ``wanted``, with its offset and number, across chunks."""
    # Mostly a piece of the log itself (so it occurs, maybe across a chunk's end), else any bytes.
    piece = data[at % max(1, len(data)) :][:length].replace(b"\n", b"")
    wanted = piece or other
    with tiny_buffers() if tiny else contextlib.nullcontext():
        every = [line for line in _lines_holding(data, None) if wanted in line[2]]
        filtered = [line for line in _lines_holding(data, wanted) if wanted in line[2]]
    assert filtered == every


def _read_in_each_mode(data: bytes) -> tuple[list[Line], list[Line] | DamagedLine, list[Piece]]:
    """What each mode of `_log.modes.read` gives for ``data`` read from a real file."""
    with tempfile.NamedTemporaryFile() as file:
        file.write(data)
        file.flush()
        fd = os.open(file.name, os.O_RDONLY)
        try:
            source = Source(OS_FS, fd, len(data), file.name)
            tolerant = list(read(source, Mode.TOLERANT))
            try:
                strict: list[Line] | DamagedLine = list(read(source, Mode.STRICT))
            except DamagedLine as exc:
                strict = exc
            return tolerant, strict, list(read(source, Mode.EVERY_BYTE))
        finally:
            os.close(fd)


@settings(max_examples=examples(300))
@given(logs(), st.booleans())
def test_the_three_modes_agree_on_what_a_log_holds(data: bytes, tiny: bool) -> None:
    """Every-byte pieces are the file, strict passes only a file of record lines as written, tolerant's lines lie in the pieces."""
    with tiny_buffers() if tiny else contextlib.nullcontext():
        tolerant, strict, pieces = _read_in_each_mode(data)
    assert b"".join(piece.whole for piece in pieces) == data
    as_written = [piece.terminated and _codec.is_sealed(piece.raw) for piece in pieces]
    if all(as_written):
        assert not isinstance(strict, DamagedLine)
        assert [line.body for line in strict] == [piece.raw for piece in pieces]
        assert [line.body for line in tolerant] == [piece.raw for piece in pieces]
    else:
        assert isinstance(strict, DamagedLine)
        assert strict.line == as_written.index(False) + 1
        assert strict.offset == pieces[as_written.index(False)].offset
    starts = {piece.offset: piece for piece in pieces}
    for line in tolerant:
        piece = max((p for p in pieces if p.offset <= line.offset), key=lambda p: p.offset)
        assert line.end == piece.end and line.body in piece.raw
        assert starts.get(piece.offset) is piece
