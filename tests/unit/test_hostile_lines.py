"""Hostile bytes get a typed problem in time and memory linear in their size (spec §8.4, §6, §7).

A checksum-valid line nested thousands of levels deep, a garbage line of tens of
megabytes, a metadata or snapshot file far over its cap: each is reported as the damage
it is, the records around it still read, and no reader copies a long line once per
``{"`` in it. Costs are proven by counting the bytes read, never by timing.
"""

from __future__ import annotations

import os
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from helpers import classes

from jsonl_store import CompactedMessage, InvalidArgument, Problem, SessionStore, UserMessage
from jsonl_store._format import codec as _codec
from jsonl_store._format.depth import MAX_DEPTH, nesting
from jsonl_store._format.names import LOG_NAME, META_NAME, USAGE_NAME
from jsonl_store._io.fs import OS_FS

SID = "s"
DEEP = 5000


class CountingFileSystem:
    """The real file system, counting the bytes every ``pread`` returns."""

    def __init__(self) -> None:
        self.read = 0

    def pread(self, fd: int, length: int, offset: int) -> bytes:
        data = OS_FS.pread(fd, length, offset)
        self.read += len(data)
        return data

    def __getattr__(self, name: str) -> Any:
        return getattr(OS_FS, name)


def _deep_line(sequence: int) -> bytes:
    """A checksum-valid record line whose message content is nested DEEP lists deep."""
    body = (
        b'{"sequence":%d,"id":"deep","created_at":"2025-01-01T00:00:00Z","message":{"role":"user","content":'
        % sequence
        + b"[" * DEEP
        + b"]" * DEEP
        + b"}}"
    )
    return _codec.seal(body)


def _session(root: Path, count: int = 3) -> Path:
    store = SessionStore(root)
    for n in range(count):
        store.append(SID, UserMessage(id=f"m{n}", content=f"message {n}"), title="Hostile")
    store.record_usage(SID, {"input_tokens": 7})
    store.close()
    return root / SID


# -- nesting ---------------------------------------------------------------------------


def test_a_deeply_nested_record_mid_log_is_a_bad_record_and_later_records_read(root: Path) -> None:
    """load, records and verify report bad-record for the nested line and keep the rest."""
    directory = _session(root, 2)
    log = directory / LOG_NAME
    log.write_bytes(log.read_bytes() + _deep_line(3))
    store = SessionStore(root, on_problem=lambda problem: None)
    # The nested line is no record to anyone, its sequence included: the append numbers
    # on from the last record it can read.
    store.append(SID, UserMessage(id="m3", content="after the deep one"))
    view = store.load(SID)
    assert [m.id for m in classes(view.messages)] == ["m0", "m1", "m3"]
    assert [p.kind for p in view.problems] == ["bad-record"]
    assert [r.sequence for r in store.records(SID)] == [1, 2, 3]
    assert [p.kind for p in store.verify(SID)] == ["bad-record"]
    assert store.get_session(SID).message_count == 3  # type: ignore[union-attr]


def test_a_deeply_nested_last_record_does_not_break_appends_or_listing(root: Path) -> None:
    """A nested line at the very end: listing, the next append and verify still work."""
    directory = _session(root, 2)
    log = directory / LOG_NAME
    log.write_bytes(log.read_bytes() + _deep_line(3))
    store = SessionStore(root, on_problem=lambda problem: None)
    assert [s.session_id for s in store.list_sessions()] == [SID]
    assert store.append(SID, UserMessage(content="next")) >= 3
    assert {p.kind for p in store.verify(SID)} <= {"bad-record", "gap", "out-of-order"}


def test_a_value_accepted_near_the_nesting_limit_reads_back_from_a_deep_stack(root: Path) -> None:
    """The deepest value an append accepts reads back even when the reader runs 700 frames deeper."""
    store = SessionStore(root)
    value: Any = []
    depth = 0
    while True:  # the deepest list this writer takes, from this stack
        candidate: Any = [value]
        try:
            store.append(SID, {"role": "user", "content": "x", "v": candidate})
        except InvalidArgument:
            break
        except ValueError:
            break
        value, depth = candidate, depth + 1
    assert depth == MAX_DEPTH - 2  # the message dict and the innermost [] are levels too (spec §4)

    def deep_read(frames: int) -> Any:
        if frames:
            return deep_read(frames - 1)
        return [r.message["v"] for r in SessionStore(root).records(SID)]  # type: ignore[index]

    found = deep_read(700)
    assert nesting(found[-1]) == depth + 1 and len(found) == depth


def test_a_deeply_nested_meta_json_is_bad_meta(root: Path) -> None:
    """meta.json nested thousands deep is bad-meta in load and verify, and an append replaces it."""
    directory = _session(root)
    (directory / META_NAME).write_bytes(b'{"metadata":{"deep":' + b"[" * DEEP + b"]" * DEEP + b"}}")
    reported: list[Problem] = []
    store = SessionStore(root, on_problem=reported.append)
    assert [p.kind for p in store.load(SID).problems] == ["bad-meta"]
    assert [p.kind for p in store.verify(SID)] == ["bad-meta"]
    store.append(SID, UserMessage(content="after"))
    assert (directory / "meta.json.damaged").exists()
    assert store.verify(SID) == []


def test_a_deeply_nested_snapshot_is_bad_snapshot(root: Path) -> None:
    """A nested snapshot line is skipped as bad-snapshot; the whole log is the tail."""
    directory = _session(root)
    store = SessionStore(root, on_problem=lambda problem: None)
    store.snapshot(SID, CompactedMessage(content="two"), 2, 0)
    nested = _codec.seal(b'{"version":2,"compacted_message":' + b"[" * DEEP + b"]" * DEEP + b"}")
    (directory / "snapshot-00000002.json").write_bytes(nested)
    view = store.load(SID)
    assert view.snapshot is not None and view.snapshot.version == 1
    assert [p.kind for p in view.problems] == ["bad-snapshot"]


def test_a_deeply_nested_usage_line_is_skipped_as_a_bad_record(root: Path) -> None:
    """usage() reports the nested line and gives the others; the totals count only those."""
    directory = _session(root)
    usage = directory / USAGE_NAME
    nested = _codec.seal(b'{"recorded_at":"2025-01-01T00:00:00Z","extra":' + b"[" * DEEP + b"]" * DEEP + b"}")
    usage.write_bytes(usage.read_bytes() + nested + usage.read_bytes())
    reported: list[Problem] = []
    store = SessionStore(root, on_problem=reported.append)
    assert store.usage_totals(SID).input_tokens == 14
    assert [p.kind for p in reported] == ["bad-record"]


# -- long lines ------------------------------------------------------------------------

LONG = 48 << 20


def _garbage(length: int) -> bytes:
    """Bytes with no newline and many '{"' (each a salvage candidate), like a torn binary dump."""
    unit = b'{"x\x00\xff garbage {"sequence": '
    return (unit * (length // len(unit) + 1))[:length]


def test_a_long_garbage_line_mid_log_costs_one_pass_and_flat_memory(root: Path) -> None:
    """load() over a log with a 48 MiB garbage line reads about its size once and holds little of it."""
    directory = _session(root, 2)
    log = directory / LOG_NAME
    head = log.read_bytes()
    after = _codec.seal(
        b'{"sequence":3,"id":"r3","created_at":"2025-01-01T00:00:00Z","message":{"role":"user","content":"x"}}'
    )
    log.write_bytes(head + _garbage(LONG) + b"\n" + after)
    fs = CountingFileSystem()
    store = SessionStore(root, fs=fs, on_problem=lambda problem: None)
    tracemalloc.start()
    try:
        view = store.load(SID)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [r.sequence for r in view.raw_tail] == [1, 2, 3]
    assert [p.kind for p in view.problems] == ["damaged-line"]
    size = os.path.getsize(log)
    # The good end (backward) and the records (forward), each finding the line's end and
    # checking it once: a few passes over the bytes, whatever the line holds.
    assert fs.read <= 5 * size
    assert peak < 24 << 20  # never the whole 48 MiB line at once


def test_a_record_glued_behind_a_long_garbage_line_is_salvaged(root: Path) -> None:
    """Salvage finds the record at the end of a 48 MiB line full of '{"' candidates."""
    directory = _session(root, 2)
    log = directory / LOG_NAME
    lines = log.read_bytes().split(b"\n")
    log.write_bytes(lines[0] + b"\n" + _garbage(LONG) + lines[1] + b"\n")
    fs = CountingFileSystem()
    store = SessionStore(root, fs=fs, on_problem=lambda problem: None)
    assert [r.sequence for r in store.records(SID)] == [1, 2]
    assert fs.read <= 5 * os.path.getsize(log)


@pytest.mark.parametrize("newline", [b"", b"\n"], ids=["unterminated", "terminated"])
def test_summaries_and_appends_stay_cheap_when_a_log_ends_in_a_long_garbage_line(
    root: Path, newline: bytes
) -> None:
    """get_session, list_sessions and append read the garbage tail about once, not once per chunk."""
    directory = _session(root, 2)
    log = directory / LOG_NAME
    log.write_bytes(log.read_bytes() + _garbage(LONG) + newline)
    size = os.path.getsize(log)
    fs = CountingFileSystem()
    store = SessionStore(root, fs=fs, on_problem=lambda problem: None)
    assert store.get_session(SID).message_count == 2  # type: ignore[union-attr]
    assert fs.read <= 2 * size
    fs.read = 0
    assert [s.message_count for s in store.list_sessions()] == [2]
    assert fs.read <= 2 * size
    fs.read = 0
    assert store.append(SID, UserMessage(content="after the garbage")) == 3
    assert fs.read <= 3 * size  # find the good end, copy the tail aside (checked as it is copied)


# -- size caps ---------------------------------------------------------------------------


def test_a_meta_json_over_the_cap_is_bad_meta_without_being_read(root: Path) -> None:
    """A 17 MiB meta.json is reported bad-meta and not read (the reader stops at its size)."""
    directory = _session(root)
    (directory / META_NAME).write_bytes(b'{"metadata":{"x":"' + b"a" * (17 << 20) + b'"}}')
    fs = CountingFileSystem()
    store = SessionStore(root, fs=fs, on_problem=lambda problem: None)
    view = store.load(SID)
    assert [p.kind for p in view.problems] == ["bad-meta"]
    assert "16 MiB" in view.problems[0].reason
    assert fs.read < 1 << 20


def test_a_snapshot_over_the_cap_is_bad_snapshot_without_being_read(root: Path) -> None:
    """A 17 MiB snapshot file is skipped as bad-snapshot and not read."""
    directory = _session(root)
    (directory / "snapshot-00000001.json").write_bytes(b"x" * (17 << 20) + b"\n")
    fs = CountingFileSystem()
    store = SessionStore(root, fs=fs, on_problem=lambda problem: None)
    view = store.load(SID)
    assert [p.kind for p in view.problems] == ["bad-snapshot"]
    assert fs.read < 1 << 20


def test_writers_refuse_metadata_and_snapshots_a_reader_would_refuse(root: Path) -> None:
    """update_session and snapshot raise InvalidArgument past the 16 MiB cap and write nothing."""
    directory = _session(root)
    store = SessionStore(root)
    before = {name: (directory / name).read_bytes() for name in os.listdir(directory)}
    with pytest.raises(InvalidArgument):
        store.update_session(SID, metadata={"blob": "a" * (16 << 20)})
    with pytest.raises(InvalidArgument):
        store.snapshot(SID, CompactedMessage(content="a" * (16 << 20)), 2, 0)
    assert {name: (directory / name).read_bytes() for name in os.listdir(directory)} == before


def test_cutting_a_long_garbage_tail_copies_it_in_chunks(root: Path) -> None:
    """The append that cuts a 48 MiB garbage tail into its sidecar never holds the tail whole."""
    directory = _session(root, 2)
    log = directory / LOG_NAME
    good = log.read_bytes()
    junk = _garbage(LONG)
    log.write_bytes(good + junk)
    store = SessionStore(root, on_problem=lambda problem: None)
    tracemalloc.start()
    try:
        assert store.append(SID, UserMessage(content="after the garbage")) == 3
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 24 << 20
    [sidecar] = [name for name in os.listdir(directory) if ".cut-" in name]
    assert (directory / sidecar).read_bytes() == junk  # every byte kept
