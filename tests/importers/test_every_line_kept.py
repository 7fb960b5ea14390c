"""Every line of every real transcript (tests/importers/data) is a record or named in the import's report.

A line is *stored* when a record's ``source_line`` .. ``source_end`` covers it (a record of
the file's session or of a sub-agent's); every other line is counted in the report's
``skipped_types`` or ``in_meta``, under a type that ``reasons`` explains. The line numbers
and byte offsets are the test's own, read from the file with plain ``json``.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from jsonl_store import SessionStore
from jsonl_store.importers import import_claude_code, import_codex, import_pi

DATA = Path(__file__).parent / "data"
FILES = [
    *[(import_claude_code, p) for p in sorted((DATA / "claude-code").glob("*.jsonl"))],
    *[(import_codex, p) for p in sorted((DATA / "codex").glob("*.jsonl"))],
    *[(import_pi, p) for p in sorted((DATA / "pi").glob("*.jsonl"))],
]


def _line_ends(path: Path) -> dict[int, int]:
    """Each line's byte offset after its newline, by line number (1-based)."""
    ends, offset = {}, 0
    for number, line in enumerate(path.read_bytes().splitlines(keepends=True), start=1):
        offset += len(line)
        ends[number] = offset
    return ends


def _covered(store: SessionStore, sessions: list[str], ends: dict[int, int]) -> set[int]:
    """The source lines the sessions' records were made from."""
    by_end = {end: number for number, end in ends.items()}
    lines: set[int] = set()
    for session_id in sessions:
        for record in store.records(session_id):
            first, end = record.metadata.get("source_line"), record.metadata.get("source_end")
            if isinstance(first, int) and isinstance(end, int):
                lines.update(range(first, by_end[end] + 1))
    return lines


def _texts(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _texts(v)]
    if isinstance(value, list):
        return [t for v in value for t in _texts(v)]
    return []


@pytest.mark.parametrize(("importer", "path"), FILES, ids=[p.name for _, p in FILES])
def test_every_source_line_is_stored_or_named_with_a_reason(
    tmp_path: Path, importer: Any, path: Path
) -> None:
    """No line is dropped unnamed: each is covered by a record, or counted in the report under a type it explains."""
    store = SessionStore(tmp_path / "s", durability="none", redact=False)
    report = importer(store, path)
    [file] = report.files
    assert report.ok and file.session_id is not None
    ends = _line_ends(path)
    covered = _covered(store, [file.session_id, *file.children], ends)
    uncovered = set(ends) - covered
    named = Counter(file.skipped_types) + Counter(file.in_meta)
    assert set(file.reasons) == set(named) and all(file.reasons.values())
    lines = [json.loads(line) for line in path.read_bytes().splitlines()]
    kinds = Counter(str(lines[number - 1].get("type")) for number in uncovered)
    # Each uncovered line is named: under its type (``event_msg:user_message``, ``turn_context``),
    # or as what it is (``duplicate``: a user or assistant line read before).
    named_as = " ".join(named)
    assert all(kind in named_as or (kind in ("user", "assistant") and "duplicate" in named) for kind in kinds)
    # As many as are named, but for those a record's lines enclose (a file-history-snapshot
    # written between two lines of one assistant message).
    assert (
        len(uncovered)
        <= sum(named.values())
        <= len(uncovered) + sum(1 for number in covered if str(lines[number - 1].get("type")) in named_as)
    )


@pytest.mark.parametrize(("importer", "path"), FILES, ids=[p.name for _, p in FILES])
def test_a_stored_lines_strings_are_all_in_its_record(tmp_path: Path, importer: Any, path: Path) -> None:
    """A line stored as a hidden record keeps its text intact: each string of the line's own fields is in the record."""
    store = SessionStore(tmp_path / "s", durability="none", redact=False)
    [file] = importer(store, path).files
    lines = path.read_bytes().splitlines()
    envelope = {"sessionId", "session_id", "cwd", "version", "gitBranch", "userType", "entrypoint", "slug"}
    checked = 0
    for session_id in [file.session_id, *file.children]:
        for record in store.records(session_id):
            message = record.message
            if not (isinstance(message, dict) and message.get("include_in_messages") is False):
                continue
            first = record.metadata.get("source_line")
            if not isinstance(first, int) or message.get("codex_event") == "token_count":
                continue
            d = json.loads(lines[first - 1])
            if d.get("type") in ("summary", "compacted") or d.get("subtype") == "compact_boundary":
                continue  # a title or a compaction: tested with the summaries and snapshots
            if "payload" in d:
                fields = d["payload"]
            elif isinstance(d.get("attachment"), dict):
                fields = d["attachment"]
            else:  # the line's own fields; its links to other lines are no text
                fields = {
                    k: v for k, v in d.items() if k not in envelope | {"parentUuid", "logicalParentUuid"}
                }
            # The timestamp is the record's created_at (spec §19), the type its label.
            held = set(_texts(message)) | set(_texts(record.metadata)) | {d.get("type"), d.get("timestamp")}
            assert set(_texts(fields)) <= held, set(_texts(fields)) - held
            checked += 1
    assert checked or "SYNTHETIC" not in path.name
