"""Scenario tests for the append-only logs: torn tails, mid-log damage, reading and writing."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from helpers import line_starts, log_path, usage_path

from jsonl_store import DurabilityError, ModelUsage, Problem, SessionStore, UserMessage
from jsonl_store._format import codec as _codec
from jsonl_store._format.names import cut_name
from jsonl_store._io.fs import OS_FS, OsFileSystem
from jsonl_store._log import scan as _log_reader
from jsonl_store._log.problems import Reporter
from jsonl_store.testing.damage import GARBAGE, damage_file, flip, garbage, tear, tear_last_line, zero_fill


def user(text: str) -> UserMessage:
    """A user turn."""
    return UserMessage(content=text)


def filled(store: SessionStore, count: int, session_id: str = "s") -> bytes:
    """Append ``count`` records one by one; return the log's bytes."""
    for i in range(1, count + 1):
        store.append(session_id, user(f"message {i}"))
    return log_path(store.root, session_id).read_bytes()


def sidecars(root: Path, session_id: str = "s") -> dict[str, bytes]:
    """Every cut-off tail kept beside the session's logs, by file name."""
    directory = root / session_id
    return {n: (directory / n).read_bytes() for n in os.listdir(directory) if ".cut-" in n}


def scan_bytes(tmp_path: Path, data: bytes, problems: list[Problem] | None = None) -> list[_log_reader.Line]:
    """Run the log scanner over ``data`` written to a file."""
    path = tmp_path / "log"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    reporter = Reporter()
    try:
        return list(_log_reader.scan(OS_FS, fd, str(path), 0, len(data), reporter, first_line=1))
    finally:
        os.close(fd)
        if problems is not None:
            problems.extend(reporter.problems)


def last_good_bytes(tmp_path: Path, data: bytes) -> tuple[int, _log_reader.Line | None]:
    """Run the backwards search for the last good line over ``data``."""
    path = tmp_path / "log"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        return _log_reader.last_good(OS_FS, fd, len(data))
    finally:
        os.close(fd)


def text_of(line: _log_reader.Line) -> str:
    """The ``"t"`` field of a scanned line made by `sealed`."""
    return str(orjson.loads(line.body)["t"])


def sealed(text: str) -> bytes:
    """One checksummed line holding a small JSON object."""
    return _codec.seal(b'{"t":"%s"}' % text.encode())


# ---------------------------------------------------------------------------------------
# A damaged tail: the normal remains of a crash
# ---------------------------------------------------------------------------------------

TAIL_DAMAGE: dict[str, Callable[[bytes, int], bytes]] = {
    # each takes the log and the start of its last line, and damages the tail
    "torn-last-line": lambda data, last: tear_last_line(data),
    "last-line-without-newline": lambda data, last: tear(data, -1),
    "flipped-bit-in-last-line": lambda data, last: flip(data, last + 20),
    "zero-filled-last-line": lambda data, last: zero_fill(data, last, len(data) - last),
    "nul-run-after-the-end": lambda data, last: zero_fill(data, len(data), 4096),
    "garbage-after-the-end": lambda data, last: garbage(data),
    "half-record-after-the-end": lambda data, last: data + data[last : last + 40],
}


#: Damage that keeps the file's size: only a new writer (after a restart) can see it, as a
#: live writer trusts its own last line while the size is what it wrote. A crash never
#: rewrites bytes in place while the process that wrote them is still running.
IN_PLACE = {"flipped-bit-in-last-line", "zero-filled-last-line"}


@pytest.mark.parametrize(
    ("kind", "same_store"),
    [(k, same) for k in sorted(TAIL_DAMAGE) for same in (False, True) if not (same and k in IN_PLACE)],
    ids=lambda v: v if isinstance(v, str) else ("same-store" if v else "new-store"),
)
def test_torn_last_line_is_cut_before_next_append(
    store: SessionStore, root: Path, kind: str, same_store: bool, problems: list[Problem]
) -> None:
    """A damaged tail is moved byte for byte into a sidecar, then the append continues the good log."""
    data = filled(store, 3)
    last = line_starts(data)[-1]
    damaged = damage_file(log_path(root, "s"), TAIL_DAMAGE[kind], last)
    good_end, _ = last_good_bytes(root, damaged)
    good_records = 3 if good_end == len(data) else 2
    writer = store if same_store else SessionStore(root, durability="none", on_problem=problems.append)
    assert writer.append("s", user("after the crash")) == good_records + 1
    assert sidecars(root) == {cut_name("messages.jsonl", good_end): damaged[good_end:]}
    assert log_path(root, "s").read_bytes().startswith(damaged[:good_end])
    assert [r.sequence for r in store.records("s")] == list(range(1, good_records + 2))
    assert store.verify("s") == []


@pytest.mark.parametrize("kind", sorted(TAIL_DAMAGE))
def test_damaged_tail_is_skipped_silently_by_readers(
    store: SessionStore, root: Path, kind: str, problems: list[Problem]
) -> None:
    """Reading a log with a torn tail yields the good records and reports nothing (it is not corruption)."""
    data = filled(store, 3)
    damaged = damage_file(log_path(root, "s"), TAIL_DAMAGE[kind], line_starts(data)[-1])
    expected = 3 if damaged.startswith(data) else 2
    assert [r.sequence for r in store.records("s")] == list(range(1, expected + 1))
    view = store.load("s")
    assert [r.sequence for r in view.raw_tail] == list(range(1, expected + 1))
    assert view.problems == [] and problems == []
    assert log_path(root, "s").read_bytes() == damaged  # readers never cut


def test_torn_tail_of_the_usage_log_is_cut_before_the_next_usage(store: SessionStore, root: Path) -> None:
    """The token-usage log recovers from a torn tail the same way as the raw log."""
    store.record_usage("s", ModelUsage(input_tokens=1))
    store.record_usage("s", ModelUsage(input_tokens=2))
    data = usage_path(root, "s").read_bytes()
    damage_file(usage_path(root, "s"), tear, -7)
    store.record_usage("s", ModelUsage(input_tokens=4))
    assert [u["input_tokens"] for u in store.usage("s")] == [1, 4]
    start = line_starts(data)[-1]
    assert sidecars(root) == {cut_name("usage.jsonl", start): data[start:-7]}


@pytest.mark.parametrize("keep_lines", [1, 2], ids=["first-of-three", "two-of-three"])
@pytest.mark.parametrize("torn", [False, True], ids=["at-a-line-end", "mid-line"])
def test_torn_batch_is_invisible_and_cut_before_next_append(
    store: SessionStore, root: Path, problems: list[Problem], keep_lines: int, torn: bool
) -> None:
    """append_many is all or nothing on disk too: a batch cut short shows none of its records."""
    store.append("s", user("before"))
    store.append_many("s", [user("b1"), user("b2"), user("b3")])
    data = log_path(root, "s").read_bytes()
    starts = line_starts(data)
    batch_start = starts[1]
    end = starts[1 + keep_lines] + (25 if torn else 0)
    damage_file(log_path(root, "s"), tear, end)
    assert [r.sequence for r in store.records("s")] == [1]
    assert [r.sequence for r in store.load("s").raw_tail] == [1]
    assert problems == []
    assert SessionStore(root, durability="none").append("s", user("after")) == 2
    assert sidecars(root) == {cut_name("messages.jsonl", batch_start): data[batch_start:end]}
    assert [r.message.content for r in store.records("s")] == ["before", "after"]  # type: ignore[union-attr]


def test_log_holding_only_a_torn_line_starts_at_sequence_one(store: SessionStore, root: Path) -> None:
    """A log whose only line is torn has no good record: the next append is sequence 1."""
    filled(store, 1)
    damage_file(log_path(root, "s"), tear, 25)
    assert list(store.records("s")) == []
    assert SessionStore(root, durability="none").append("s", user("x")) == 1
    assert [r.sequence for r in store.records("s")] == [1]


# ---------------------------------------------------------------------------------------
# Damage in the middle: reported with where it is, reading goes on
# ---------------------------------------------------------------------------------------

MID_DAMAGE: dict[str, Callable[[bytes, int, int], bytes]] = {
    # each takes the log and the start and end of line 2, and damages line 2
    "flipped-bit": lambda data, start, end: flip(data, start + 25),
    "zero-filled": lambda data, start, end: zero_fill(data, start, end - start - 1),
    "garbage-over-the-head": lambda data, start, end: garbage(data, start),
    "torn-then-glued": lambda data, start, end: data[: start + 30] + b"\n" + data[end:],
}


@pytest.mark.parametrize("kind", sorted(MID_DAMAGE))
def test_mid_log_damage_is_reported_with_its_offset_and_later_records_are_kept(
    store: SessionStore, root: Path, kind: str, problems: list[Problem]
) -> None:
    """A bad line followed by good ones is real damage: reported at its offset and line, then skipped."""
    data = filled(store, 4)
    starts = line_starts(data)
    damage_file(log_path(root, "s"), MID_DAMAGE[kind], starts[1], starts[2])
    assert [r.sequence for r in store.records("s")] == [1, 3, 4]
    damaged_lines = [p for p in problems if p.kind == "damaged-line"]
    assert len(damaged_lines) == 1
    assert (damaged_lines[0].offset, damaged_lines[0].line) == (starts[1], 2)
    assert damaged_lines[0].path.endswith("messages.jsonl")
    problems.clear()
    view = store.load("s")
    assert [r.sequence for r in view.raw_tail] == [1, 3, 4]
    assert {p.kind for p in view.problems} == {"damaged-line", "gap"}
    assert store.append("s", user("5")) == 5


def test_inserted_garbage_line_is_reported_without_a_gap(store: SessionStore, root: Path) -> None:
    """A whole foreign line between records is reported; the sequences around it stay gap-free."""
    data = filled(store, 3)
    second = line_starts(data)[1]
    log_path(root, "s").write_bytes(data[:second] + b"not a record at all\n" + data[second:])
    view = store.load("s")
    assert [r.sequence for r in view.raw_tail] == [1, 2, 3]
    assert [(p.kind, p.offset, p.line) for p in view.problems] == [("damaged-line", second, 2)]


def test_duplicated_record_is_reported_out_of_order_and_skipped(store: SessionStore, root: Path) -> None:
    """A valid record repeated later (a replayed write) is skipped, not given twice."""
    data = filled(store, 3)
    starts = line_starts(data)
    log_path(root, "s").write_bytes(data + data[starts[1] : starts[2]])
    view = store.load("s")
    assert [r.sequence for r in view.raw_tail] == [1, 2, 3]
    assert [p.kind for p in view.problems] == ["out-of-order"]


def test_record_with_a_valid_checksum_but_wrong_schema_is_reported(store: SessionStore, root: Path) -> None:
    """A checksummed line that does not fit the record schema is reported as bad-record and skipped."""
    data = filled(store, 2)
    bogus = _codec.seal(b'{"sequence":"two","id":5}')
    starts = line_starts(data)
    log_path(root, "s").write_bytes(data[: starts[1]] + bogus + data[starts[1] :])
    view = store.load("s")
    assert [r.sequence for r in view.raw_tail] == [1, 2]
    assert [p.kind for p in view.problems] == ["bad-record"]


# ---------------------------------------------------------------------------------------
# The scanner and the backwards search
# ---------------------------------------------------------------------------------------


def test_scan_splits_on_newline_only(tmp_path: Path) -> None:
    """U+2028, U+2029, CR and NUL inside a line do not end it."""
    body = '{"t":"a\u2028b\u2029c\\rd\\u0000e\x85f"}'.encode()
    data = _codec.seal(body) + sealed("next")
    lines = scan_bytes(tmp_path, data)
    assert [text_of(line) for line in lines] == ["a\u2028b\u2029c\rd\x00e\x85f", "next"]
    assert [line.number for line in lines] == [1, 2]


def test_scan_gives_offsets_and_ends_of_each_line(tmp_path: Path) -> None:
    """Each scanned line knows where it starts and ends in the file."""
    data = sealed("a") + sealed("bb") + sealed("ccc")
    lines = scan_bytes(tmp_path, data)
    assert [line.offset for line in lines] == line_starts(data)
    assert [line.end for line in lines] == [*line_starts(data)[1:], len(data)]


def test_scan_takes_sealed_lines_of_20_bytes_but_not_of_19_or_18(tmp_path: Path) -> None:
    """A line is valid from 20 bytes on (spec §3), even with a suffix that holds at 18 or 19."""
    twenty, nineteen, eighteen = _codec.seal(b'{"}'), _codec.seal(b"{}"), _codec.seal(b"}")
    assert [len(line) - 1 for line in (twenty, nineteen, eighteen)] == [20, 19, 18]
    problems: list[Problem] = []
    lines = scan_bytes(tmp_path, nineteen + eighteen + twenty + sealed("last"), problems)
    assert [line.body for line in lines] == [twenty[:-1], sealed("last")[:-1]]
    assert [(p.kind, p.offset) for p in problems] == [("damaged-line", 0), ("damaged-line", 20)]


def test_scan_handles_lines_across_chunk_boundaries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading in tiny chunks gives the same lines and problems as one big read."""
    data = sealed("a" * 50) + b"junk\n" + sealed("b") + sealed("c" * 300) + b"torn"
    expected_problems: list[Problem] = []
    expected = scan_bytes(tmp_path, data, expected_problems)
    monkeypatch.setattr(_log_reader, "CHUNK", 7)
    problems: list[Problem] = []
    assert scan_bytes(tmp_path, data, problems) == expected
    assert problems == expected_problems
    assert len(expected) == 3 and [p.kind for p in problems] == ["damaged-line"]


def test_scan_salvages_a_record_glued_behind_damage(tmp_path: Path) -> None:
    """A good record behind a NUL run on the same line is still found, and the damage reported."""
    good = sealed("kept")
    data = sealed("first") + b"\x00" * 64 + good + sealed("last")
    problems: list[Problem] = []
    lines = scan_bytes(tmp_path, data, problems)
    assert [text_of(line) for line in lines] == ["first", "kept", "last"]
    glued = data.index(good)
    assert lines[1].offset == glued
    assert [(p.kind, p.reason) for p in problems] == [("damaged-line", "64 NUL bytes")]


def test_scan_does_not_report_damage_after_the_last_good_line(tmp_path: Path) -> None:
    """Bad lines with no good line after them are the tail: not reported by the scanner."""
    problems: list[Problem] = []
    lines = scan_bytes(tmp_path, sealed("a") + b"bad\n" + b"\x00" * 10 + b"\n" + GARBAGE, problems)
    assert len(lines) == 1 and problems == []


@pytest.mark.parametrize(
    "tail",
    [b"", b"torn", b"\x00" * 5000, b"junk\n", b"junk\nmore junk\n\x00\x00", GARBAGE + b"\n" + GARBAGE],
    ids=["none", "torn", "nul-run", "junk-line", "junk-lines", "garbage"],
)
def test_last_good_finds_the_end_of_the_last_valid_line(tmp_path: Path, tail: bytes) -> None:
    """last_good reads backwards past any damaged tail to the last checksummed line."""
    good = sealed("a") + sealed("b" * 9000) + sealed("c")
    end, line = last_good_bytes(tmp_path, good + tail)
    assert end == len(good)
    assert line is not None and text_of(line) == "c" and line.end == len(good)
    assert line.offset == line_starts(good)[-1]


def test_last_good_of_a_file_without_a_good_line_is_zero(tmp_path: Path) -> None:
    """A file of only damage (or nothing) has no good line."""
    for data in (b"", b"torn", b"junk\n", b"\x00" * 9000 + b"\n"):
        assert last_good_bytes(tmp_path, data) == (0, None)


def test_last_good_finds_a_very_long_last_line(tmp_path: Path) -> None:
    """A last line many times the backwards chunk size is still found."""
    data = sealed("x") + sealed("y" * (5 * _log_reader.BACK_CHUNK + 17))
    end, line = last_good_bytes(tmp_path, data + b"torn")
    assert end == len(data) and line is not None and line.offset == line_starts(data)[1]


# ---------------------------------------------------------------------------------------
# Failed writes
# ---------------------------------------------------------------------------------------


class FailingFS(OsFileSystem):
    """The real file system, except that fdatasync or write can be made to fail."""

    def __init__(self) -> None:
        self.fail_sync = False
        self.short_write = False

    def fdatasync(self, fd: int) -> None:
        if self.fail_sync:
            raise OSError(5, "Input/output error")
        os.fdatasync(fd)

    def write(self, fd: int, data: bytes) -> int:  # type: ignore[override]
        if self.short_write:
            return os.write(fd, data[: len(data) // 2])
        return os.write(fd, data)


def test_failed_fsync_refuses_appends_until_the_store_is_reopened(root: Path) -> None:
    """After a failed fsync a writer never retries: appends raise DurabilityError until close()."""
    fs = FailingFS()
    store = SessionStore(root, durability="fsync", fs=fs)
    store.append("s", user("1"))
    fs.fail_sync = True
    with pytest.raises(DurabilityError) as info:
        store.append("s", user("2"))
    assert isinstance(info.value, OSError)
    fs.fail_sync = False
    with pytest.raises(DurabilityError):
        store.append("s", user("3"))
    store.close()
    assert store.append("s", user("4")) == 3


def test_short_write_is_taken_back(root: Path) -> None:
    """A short write (disk full) raises DurabilityError and leaves no half record behind."""
    fs = FailingFS()
    store = SessionStore(root, durability="none", fs=fs)
    store.append("s", user("1"))
    before = log_path(root, "s").read_bytes()
    fs.short_write = True
    with pytest.raises(DurabilityError):
        store.append_many("s", [user("2"), user("3")])
    fs.short_write = False
    assert log_path(root, "s").read_bytes() == before
    assert store.append("s", user("2")) == 2
