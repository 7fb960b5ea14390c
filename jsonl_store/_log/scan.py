"""Reading the append-only logs (raw log and token-usage log) line by line: the one scanner.

Its modes (`_log.modes.Mode`: tolerant, strict, every-byte) are chosen through
`_log.modes.read`; this module is the engine of the first two, and the tail reads
(`backward`, `last_good`, `sealed_before`) that spare a writer a scan of the whole log.

Reading follows LevelDB's log reader in spirit (``db/log_reader.cc``): bytes after the
last good line are the normal remains of a crash (a torn line, NUL runs, garbage) and are
skipped silently; a bad line *followed by a good one* is real damage, reported with its
offset and reason, and reading resumes at the next newline (spec §8, rules 2 and 3).

Reading is linear in bytes whatever the file holds: a line longer than `LONG_LINE` is
never held whole, only read again in chunks to check it (`_format.lines.locate`), so a log that
ends in hundreds of megabytes of garbage costs one pass over them and flat memory.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import msgspec

from .._errors import CorruptSession, name_file
from .._format import codec as _codec
from .._format import lines as _lines
from .._format.checksum import crc32 as _crc32
from .._io.fs import FileSystem
from .._text import find as _find
from .problems import READ_AS_WRITTEN, SKIPPED_LINE, Problem, Reporter

CHUNK = 1 << 20  # forward reads: big enough to amortise syscalls, small enough for flat memory
BACK_CHUNK = 1 << 12  # backward reads: the last record of a log usually fits in 4 KiB
#: Lines longer than this are checked by reading them again in chunks instead of joining
#: their pieces: memory stays bounded by this plus a chunk, whatever a line's length.
LONG_LINE = 8 << 20
# Opened through `open_regular`, which adds O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC and checks
# the descriptor is a regular file: one fstat per open, nothing per append.
FLAGS_READ = os.O_RDONLY

# A record always starts with this key (it is the first field of every record and usage
# line), so a line whose head is damaged can still be searched for a record glued behind it.
RECORD_START = _lines.RECORD_START


class Pread(Protocol):
    """What a scan reads through: `_io.fs.FileSystem`'s ``pread``, or bytes in memory (`_log.modes.InMemory`)."""

    def pread(self, fd: int, length: int, offset: int) -> bytes: ...


class DamagedLine(CorruptSession, ValueError):
    """A strict read (`_log.modes.Mode.STRICT`) met a line that is not a record line as a writer writes it.

    ``reason`` says what the line is instead (damaged, converted by a text tool, the
    unterminated end of the file); ``line`` and ``offset`` say where it starts.
    """

    def __init__(self, message: str, *, reason: str = "", **where: Any) -> None:
        super().__init__(message, **where)
        self.reason = reason


class Line(msgspec.Struct, gc=False):
    """One checksum-valid line: its bytes (checksum key included, no newline) and place.

    A Struct rather than a dataclass: one is made per line read, and its constructor is C.
    """

    offset: int
    number: int | None
    body: bytes
    end: int
    #: The record's sequence when the writer already knows it (-1: decode ``body``).
    sequence: int = -1
    #: The line carries bytes a text conversion added (``\\r\\n``, a byte-order mark).
    converted: bool = False


def _describe(raw: bytes) -> str:
    if not raw.strip(b"\x00"):
        return f"{len(raw)} NUL bytes"
    if not raw.strip():
        return "blank line"
    # Only called for lines whose checksum failed: one with the suffix has a wrong sum.
    if raw.rstrip(_lines.TRAILING)[-_codec.SUFFIX_LENGTH : -10] == _codec.CRC_KEY:
        return "checksum mismatch"
    return f"not a record ({len(raw)} bytes)"


def _reader(fs: Pread, fd: int, base: int) -> _lines.Read:
    return lambda offset, length: fs.pread(fd, length, base + offset)


def _line(raw: bytes, offset: int, number: int | None, end: int) -> tuple[Line | None, str | None]:
    """A line held in memory: the record it holds (if any), and the damage to report (if any)."""
    if _codec.is_sealed(raw):  # the common case, and the only one on a healthy log's hot path
        return Line(offset, number, raw, end), None
    found = _lines.locate(_lines.in_memory(raw), len(raw), file_start=offset == 0)
    if found is None:
        return None, _describe(raw)
    line = Line(offset + found.start, number, raw[found.start : found.stop], end, converted=found.converted)
    return line, None if _whole(found, offset) else _describe(raw[: found.start])


def _far_line(
    fs: Pread, fd: int, offset: int, length: int, number: int | None
) -> tuple[Line | None, str | None]:
    """`_line` for a line too long to hold: checked by reading it again in chunks."""
    found = _lines.locate(_reader(fs, fd, offset), length, file_start=offset == 0)
    if found is None:
        return None, f"not a record ({length} bytes)"
    body = fs.pread(fd, found.stop - found.start, offset + found.start)
    line = Line(offset + found.start, number, body, offset + length + 1, converted=found.converted)
    return line, None if _whole(found, offset) else f"not a record ({found.start} bytes)"


def _whole(found: _lines.Found, offset: int) -> bool:
    """The record is the whole line, only converted: a BOM before a file's first one is no damage."""
    return found.start == 0 or (found.converted and offset == 0 and found.start == len(_lines.BOM))


def _damage(path: str, offset: int, number: int | None, reason: str) -> Problem:
    return Problem(
        path=path,
        kind="damaged-line",
        reason=reason,
        action=SKIPPED_LINE,
        offset=offset,
        line=number,
    )


def conversion_problem(path: str, count: int, offset: int, action: str) -> Problem:
    """The one problem a file converted by a text tool gets, however many lines it touched."""
    return Problem(
        path=path,
        kind="text-conversion",
        reason=f"{count} line(s) carry bytes a text conversion added (\\r\\n line ends or a byte-order mark)",
        action=action,
        offset=offset,
    )


class _Pieces:
    """The part of a line read so far that began in an earlier chunk (`scan`'s carry).

    Past `LONG_LINE` bytes the pieces are dropped and only ``far`` is kept: such a line is
    checked by reading it again in chunks (`_far_line`), so memory stays bounded.
    """

    __slots__ = ("far", "parts", "size")

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.size = 0
        self.far = False

    def held(self) -> bool:
        return self.far or self.size > 0

    def add(self, chunk: bytes, begin: int) -> None:
        """Keep ``chunk[begin:]``, the start of a line whose end is in a later chunk."""
        if begin < len(chunk) and not self.far:
            self.parts.append(chunk[begin:])
            self.size += len(chunk) - begin
            if self.size > LONG_LINE:
                self.far = True
                self.parts.clear()
                self.size = 0

    def line(
        self, fs: Pread, fd: int, chunk: bytes, stop: int, offset: int, number: int | None, end: int
    ) -> tuple[Line | None, str | None]:
        """The line that began at ``offset`` and ends at ``chunk[stop]``, checked; the pieces are emptied."""
        if self.far or self.size + stop > LONG_LINE:
            found = _far_line(fs, fd, offset, end - 1 - offset, number)
        else:
            found = _line(b"".join((*self.parts, chunk[:stop])), offset, number, end)
        self.parts.clear()
        self.size = 0
        self.far = False
        return found


class _Notes:
    """What `scan` reports: damage once a good line follows it (§8.2), conversions at the end (§8.4)."""

    __slots__ = ("converted", "first_converted", "path", "pending", "reporter", "strict")

    def __init__(self, path: str, reporter: Reporter, strict: bool = False) -> None:
        self.path = path
        self.reporter = reporter
        self.strict = strict
        self.pending: list[Problem] = []
        self.converted = 0
        self.first_converted = -1

    def refuse(self, offset: int, number: int | None, reason: str) -> DamagedLine:
        """What a strict read raises for the line at ``offset``."""
        where = f"line {number}" if number is not None else f"offset {offset}"
        return DamagedLine(
            f"{self.path or 'log'}: {where} is no record line as written: {reason}",
            reason=reason, path=self.path or None, line=number, offset=offset,
        )  # fmt: skip

    def good(self) -> None:
        """A good line follows the damage pending: it is no tail, so it is reported."""
        for problem in self.pending:
            self.reporter.report(problem)
        self.pending.clear()

    def checked(
        self, outcome: tuple[Line | None, str | None], offset: int, number: int | None
    ) -> Line | None:
        """Note what checking the line at ``offset`` found; give back its record's line, if any."""
        found, reason = outcome
        if self.strict and (reason is not None or found is None or found.converted):
            raise self.refuse(offset, number, reason or "read as written only after a text conversion")
        if reason is not None:
            self.pending.append(_damage(self.path, offset, number, reason))
        if found is not None:
            self.good()
            if found.converted:
                self.converted += 1
                if self.first_converted < 0:
                    self.first_converted = offset
        return found

    def finish(self) -> None:
        # Whatever is still pending is damage after the last good line (the damaged tail): silent.
        if self.converted:
            self.reporter.report(
                conversion_problem(self.path, self.converted, self.first_converted, READ_AS_WRITTEN)
            )


def _read(fs: Pread, fd: int, path: str, length: int, position: int) -> bytes:
    try:
        return fs.pread(fd, length, position)
    except OSError as exc:
        name_file(exc, path)
        raise


def _step_to(
    wanted: bytes, chunk: bytes, begin: int, past: int, offset: int, number: int | None
) -> tuple[int, int, int, int | None]:
    """`scan`'s step over the lines of ``chunk`` from ``begin`` that do not hold ``wanted``.

    Returns where the next line holding it begins, where that line ends (-1: in a later
    chunk; also when no ``wanted`` is left and only the chunk's unfinished last line
    remains), and the offset and number of the line at that beginning. ``find`` and
    ``count`` do the work at C speed: a line stepped over costs no Python.
    """
    hit = _find.find(chunk, wanted, begin)  # memchr on a rare byte: faster than bytes.find
    if hit < 0:
        start = chunk.rfind(b"\n", begin) + 1  # after the chunk's last whole line
        stop = -1
    else:
        start = max(begin, chunk.rfind(b"\n", begin, hit) + 1)
        stop = chunk.find(b"\n", hit)
    if start > begin:
        offset = past + start - 1
        if number is not None:
            number += chunk.count(b"\n", begin, start)
    return start, stop, offset, number


def scan(
    fs: Pread,
    fd: int,
    path: str,
    start: int,
    end: int,
    reporter: Reporter,
    *,
    first_line: int | None = None,
    first_read: int = CHUNK,
    wanted: bytes | None = None,
    strict: bool = False,
) -> Iterator[Line]:
    """Yield every valid line in ``[start, end)`` (``start`` a line's start); report damage
    followed by good lines. Damage after the last good line (the damaged tail) is not
    reported here: a writer cuts it, `verify` names it. Lines a text conversion changed
    (§8.4) are read as written and reported once, at the end, as one ``text-conversion``.

    With ``wanted``, only the lines that hold those bytes are checked and yielded (and a
    line begun in the chunk before): the others are stepped over with `_text.find.find`
    and never checked, so their damage goes unnoticed. Reads ``first_read`` bytes first,
    then twice as many each time up to `CHUNK`; memory stays bounded by `LONG_LINE` plus
    one chunk. ``strict`` (`_log.modes.Mode.STRICT`, not with ``wanted``) raises
    `DamagedLine` instead at the first line not exactly as a writer writes it: damaged,
    changed by a text conversion, or bytes after the last newline.
    """
    assert not (strict and wanted is not None), "a strict read checks every line"
    notes = _Notes(path, reporter, strict)
    pieces = _Pieces()
    number = first_line
    offset = position = start
    crc32 = _crc32
    suffix, suffix_length = _codec.SUFFIX, _codec.SUFFIX_LENGTH
    shortest = suffix_length + 2
    read_size = first_read
    while position < end:
        chunk = _read(fs, fd, path, min(read_size, end - position), position)
        if not chunk:
            break
        read_size = min(read_size * 2, CHUNK)
        past = position + 1  # a line ending at chunk[i] ends at past + i in the file
        position += len(chunk)
        view = memoryview(chunk)  # the CRC reads a line through it: no second copy
        # `find` (memchr), not `split`: its byte loop cost more per line than the CRC.
        find = chunk.find
        begin = 0
        stop = find(b"\n")
        while stop >= 0:
            if wanted is not None and not (begin == 0 and pieces.held()):
                begin, stop, offset, number = _step_to(wanted, chunk, begin, past, offset, number)
                if stop < 0:
                    break  # the line goes on in the next chunk: carried below
            line_end = past + stop
            if begin == 0 and (stop > LONG_LINE or pieces.held()):
                found = notes.checked(
                    pieces.line(fs, fd, chunk, stop, offset, number, line_end), offset, number
                )
            else:
                raw = chunk[begin:stop]
                # `_format.codec.is_sealed` inline, as one comparison of the suffix: the only step
                # a healthy log's lines take.
                if stop - begin >= shortest and raw.endswith(
                    suffix % crc32(view[begin : stop - suffix_length])
                ):
                    if notes.pending:
                        notes.good()
                    found = Line(offset, number, raw, line_end)
                else:
                    found = notes.checked(_line(raw, offset, number, line_end), offset, number)
            if found is not None:
                yield found
            offset = line_end
            if number is not None:
                number += 1
            begin = stop + 1
            stop = find(b"\n", begin)
        pieces.add(chunk, begin)
    if strict and pieces.held():
        raise notes.refuse(offset, number, "the file's last line has no newline (a torn write)")
    notes.finish()


def backward(fs: FileSystem, fd: int, size: int, floor: int = 0) -> Iterator[Line]:
    """Yield the valid lines in ``[floor, size)`` from the last to the first.

    ``floor`` must be the start of a line. Bytes after the last newline are not a line.
    Reads in growing chunks from the end, so finding the last record of a healthy log
    costs about 4 KiB of reading, whatever its length. A line longer than `LONG_LINE`
    is not held: only its newlines are searched for, then it is checked in chunks.
    """
    low = size  # data holds the file's bytes [low, low + len(data))
    data = b""
    step = BACK_CHUNK
    stop = -1  # position of the '\n' that ends the line being looked for (-1: none yet)
    search_end = size  # look for the next '\n' before this position
    while True:
        index = data.rfind(b"\n", 0, max(0, search_end - low))
        if index == -1 and low > floor:
            new_low = max(floor, low - step)
            chunk = fs.pread(fd, low - new_low, new_low)
            # Keep what was read only while the line is short; a long one is re-read.
            data = chunk if len(data) + len(chunk) > LONG_LINE else chunk + data
            low = new_low
            step = min(step * 2, CHUNK)
            continue
        newline = low + index if index != -1 else floor - 1
        if stop >= 0:
            begin = newline + 1
            if begin >= low and stop <= low + len(data):
                found, _ = _line(data[begin - low : stop - low], begin, None, stop + 1)
            else:
                found, _ = _far_line(fs, fd, begin, stop - begin, None)
            if found is not None:
                yield found
        if newline < floor:
            return
        stop = newline
        search_end = newline


def last_good(
    fs: FileSystem, fd: int, size: int, floor: int = 0, accept: Callable[[Line], bool] | None = None
) -> tuple[int, Line | None]:
    """Find the last valid line in ``[floor, size)``: where the good part of the file ends.

    Returns the offset just past that line and the line; ``(floor, None)`` when there is
    none. A valid line that ``accept`` refuses (a record in the middle of a batch whose
    end was torn off) counts as part of the damaged tail.
    """
    for line in backward(fs, fd, size, floor):
        if accept is None or accept(line):
            return line.end, line
    return floor, None


def sealed_before(fs: FileSystem, fd: int, offset: int, window: int) -> Iterator[bytes]:
    """The checksum-valid whole lines among the ``window`` bytes before ``offset``, oldest first.

    ``offset`` must be the start of a line. A tail read: one ``pread`` of at most
    ``window`` bytes, whatever the log's length; the line the window's start cuts is left
    out, and so is every line that is not a record line exactly as written (no salvage,
    no text conversion), which is all a writer needs to continue a log's numbering.
    """
    start = max(0, offset - window)
    data = fs.pread(fd, offset - start, start)
    begin = 0
    if start > 0:
        begin = data.find(b"\n") + 1
        if begin == 0:
            return
    while begin < len(data):
        stop = data.find(b"\n", begin)
        if stop < 0:
            stop = len(data)
        raw = data[begin:stop]
        if _codec.is_sealed(raw):
            yield raw
        begin = stop + 1


def first_line_converted(fs: FileSystem, fd: int, size: int) -> bool:
    """Whether the file's first line shows a text conversion (a BOM, or ``\\r\\n``).

    Reads at most 64 KiB (4 KiB first: a first line is short): together with the last
    line, which every writer reads anyway, this tells a file converted as a whole (a git
    checkout) at the cost of one read.
    """
    head = fs.pread(fd, min(size, BACK_CHUNK), 0)
    newline = head.find(b"\n")
    if newline < 0 and size > len(head):
        head = fs.pread(fd, min(size, 1 << 16), 0)
        newline = head.find(b"\n")
    if newline <= 0 or not (head.startswith(_lines.BOM) or head[newline - 1] in _lines.TRAILING):
        return False
    found = _lines.locate(_lines.in_memory(head[:newline]), newline, file_start=True)
    return found is not None and found.converted


#: A damaged tail with this many whole lines that look like records is never cut. A line
#: looks like one when it names the checksum key at all: a tool that re-spaced or
#: re-encoded a record keeps the name, while a crash leaves torn, zeroed or garbage lines.
RECORD_LIKE_LIMIT = 2
RECORD_LIKE_KEY = b'"crc"'


class RecordLike:
    """Counts, chunk by chunk, the whole lines that name the checksum key yet are no valid line."""

    def __init__(self) -> None:
        self.count = 0
        self._carry = b""

    def feed(self, chunk: bytes) -> None:
        lines = (self._carry + chunk).split(b"\n")
        rest = lines.pop()
        for raw in lines:
            if RECORD_LIKE_KEY in raw and not _codec.is_sealed(raw.rstrip(_lines.TRAILING)):
                self.count += 1
        if len(rest) > LONG_LINE:
            # Too long to hold: keep only what tells whether it carries the key, and count
            # it if it does (erring towards not cutting).
            self._carry = RECORD_LIKE_KEY if RECORD_LIKE_KEY in rest else rest[-len(RECORD_LIKE_KEY) :]
        else:
            self._carry = rest


def record_like_lines(fs: FileSystem, fd: int, start: int, end: int) -> int:
    """How many whole lines in ``[start, end)`` name the checksum key yet are no valid line.

    Reads in chunks (memory stays flat) and stops counting at `RECORD_LIKE_LIMIT`.
    """
    counter = RecordLike()
    position = start
    while position < end and counter.count < RECORD_LIKE_LIMIT:
        chunk = fs.pread(fd, min(CHUNK, end - position), position)
        if not chunk:
            break
        position += len(chunk)
        counter.feed(chunk)
    return counter.count
