"""Importing any prefix of a transcript, then the whole grown file, stores what importing the whole file once does."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from helpers import examples
from hypothesis import example, given, settings
from hypothesis import strategies as st

from jsonl_store import CompactedMessage, SessionStore
from jsonl_store.importers import import_claude_code, import_codex, import_pi

DATA = Path(__file__).parents[1] / "importers" / "data"
#: The transcripts cut here. Claude Code's are cut only between messages: one message written
#: as several lines and cut between them is two records (docs/guides/importing.md).
SOURCES = {
    "codex": (import_codex, DATA / "codex" / "SYNTHETIC-codex-schema-drift-composite.jsonl"),
    "codex-rollout": (import_codex, DATA / "codex" / "codex-0.58.0-rollout-shell-calls-truncated.jsonl"),
    "pi": (import_pi, DATA / "pi" / "pi-v3-redacted-minimal.jsonl"),
    "claude-code": (import_claude_code, DATA / "claude-code" / "cc-2.1.114-subagent-a36efb2a1231c41e2.jsonl"),
}


def cut_points(name: str, data: bytes) -> list[int] | None:
    """Where a file may be cut: anywhere (None), or, for Claude Code, at the ends of whole messages."""
    if name != "claude-code":
        return None
    points, offset, previous = [0], 0, None
    for line in data.splitlines(keepends=True):
        message = json.loads(line).get("message") or {}
        key = message.get("id") if message.get("role") == "assistant" else None
        if key is None or key != previous:
            points.append(offset)
        offset += len(line)
        previous = key
    return [*points, len(data)]


def stored(root: Path) -> dict[str, Any]:
    """What a store holds, without what differs between any two writes (record ids, write times)."""
    store = SessionStore(root)
    found: dict[str, Any] = {}
    for summary in store.list_sessions():
        sid = summary.session_id
        view = store.load(sid)
        found[sid] = {
            "parent": summary.parent_session_id,
            "title": summary.title,
            # source_end differs by the newline a cut right before it leaves for the next import.
            # A message whose lines a cut parted (the results of its parallel tool calls
            # come between them) has its usage on its first part's record and its final
            # counts in the usage log: the calls and their counts are what is compared.
            "records": [
                (
                    r.sequence,
                    r.message,
                    {k: v for k, v in r.metadata.items() if k != "source_end"},
                    r.request_id,
                )
                for r in store.records(sid)
            ],
            "calls": sorted(
                (c["request_id"] or "", c["model"] or "", c["input_tokens"], c["output_tokens"])
                for c in store.model_calls(sid)
            ),
            "snapshot": (view.snapshot.version, view.snapshot.compacted_through_sequence)
            if view.snapshot
            else None,
            # A compacted message gets a fresh id when the snapshot is made: compare its text.
            "context": [m.content if isinstance(m, CompactedMessage) else m for m in view.messages],
        }
    return found


@settings(max_examples=examples(25))
@given(name=st.sampled_from(sorted(SOURCES)), cut=st.floats(0, 1), second_cut=st.floats(0, 1))
# A cut just before a line's newline: that line is whole JSON and imported; its newline,
# read next time, once numbered the following line one too many.
@example(name="codex", cut=0.0, second_cut=0.04000157752792833)
def test_any_prefix_then_the_rest_equals_the_whole(name: str, cut: float, second_cut: float) -> None:
    """Cut the file at any byte (twice), importing after each growth: the store ends as one import of the whole."""
    importer, path = SOURCES[name]
    data = path.read_bytes()
    first = int(len(data) * cut)
    second = first + int((len(data) - first) * second_cut)
    points = cut_points(name, data)
    if points is not None:  # the nearest message end at or before each cut
        first, second = (max(p for p in points if p <= end) for end in (first, second))
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        source = work / path.name
        whole, grown = work / "whole", work / "grown"
        source.write_bytes(data)
        importer(SessionStore(whole, durability="none"), source)
        store = SessionStore(grown, durability="none")
        for end in (first, second, len(data)):
            source.write_bytes(data[:end])
            report = importer(store, source)
            assert report.damaged_count == 0
        assert stored(grown) == stored(whole)
