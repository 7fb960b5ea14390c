"""Crash safety of blob writes on the simulated disk: no record is ever durable before its blob (spec §9.14)."""

from __future__ import annotations

from typing import Any

from helpers import as_class

from jsonl_store import Message, SessionStore, ToolMessage, UserMessage
from jsonl_store.testing import SimulatedFileSystem, crash_states

ROOT = "/store"
BIG = "output line\n" * 20  # 240 bytes: over the threshold below
OTHER = "é" * 200


def _text(message: Message) -> Any:
    """The content of a message read back as its class."""
    return as_class(message).content


def _workload(store: SessionStore, fs: SimulatedFileSystem) -> list[tuple[int, str]]:
    """Appends with blobs (one payload twice); each record's content and the trace length once acknowledged."""
    acknowledged: list[tuple[int, str]] = []
    store.append("s", UserMessage(id="u1", content="small"))
    acknowledged.append((len(fs.trace), "small"))
    store.append("s", ToolMessage(id="t1", tool_call_id="c1", content=BIG))
    acknowledged.append((len(fs.trace), BIG))
    store.append_many(
        "s", [ToolMessage(id="t2", tool_call_id="c2", content=OTHER), UserMessage(id="u2", content=BIG)]
    )
    acknowledged += [(len(fs.trace), OTHER), (len(fs.trace), BIG)]
    return acknowledged


def _run() -> tuple[SimulatedFileSystem, int, list[tuple[int, str]]]:
    fs = SimulatedFileSystem()
    fs.makedirs(ROOT)
    start = len(fs.trace)
    store = SessionStore(ROOT, fs=fs, blob_threshold=64)
    acknowledged = _workload(store, fs)
    store.close()
    return fs, start, acknowledged


def test_every_crash_point_leaves_no_record_or_a_record_whose_blob_is_complete() -> None:
    """After each call of blob and log writes, crashed either way, every record read has its whole string."""
    fs, start, acknowledged = _run()
    blob_ops = [e for e in fs.trace[start:] if "/blobs" in e.detail]
    assert any(e.op == "rename" for e in blob_ops) and any(e.op == "fsync_dir" for e in blob_ops)
    states = 0
    for state in crash_states(fs, start=start, max_states_per_prefix=24):
        states += 1
        store = SessionStore(ROOT, fs=state.filesystem())
        view = store.load("s")
        assert not [p for p in view.problems if p.kind == "bad-blob"], state.description
        contents = [_text(m) for m in view.context]
        assert contents == [content for _, content in acknowledged[: len(contents)]], state.description
        # An append acknowledged before the crash is never lost (durability="fsync").
        assert len(contents) >= sum(1 for at, _ in acknowledged if at <= state.prefix), state.description
        # What a crash leaves of blobs is at worst an orphan or a temporary file, which repair clears.
        kinds = {p.kind for p in store.verify("s")}
        assert kinds <= {"orphan-blob", "leftover-temp", "torn-tail"}, (state.description, kinds)
        store.repair("s")
        assert store.verify("s") == [], state.description
        assert [_text(m) for m in store.load("s").context] == contents
    assert states > 50


def test_a_process_crash_after_the_blob_and_before_the_record_leaves_an_orphan() -> None:
    """Killed right after the blobs directory's fsync: the record is not there, its blob is an orphan."""
    fs, start, _ = _run()
    synced = [
        e.index for e in fs.trace[start:] if e.op == "fsync_dir" and e.detail.strip("'").endswith("/blobs")
    ]
    state = next(s for s in crash_states(fs, prefixes={synced[0] + 1}, power=False))
    store = SessionStore(ROOT, fs=state.filesystem())
    assert [_text(m) for m in store.load("s").context] == ["small"]
    assert [p.kind for p in store.verify("s")] == ["orphan-blob"]
