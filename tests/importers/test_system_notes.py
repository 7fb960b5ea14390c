"""Claude Code ``system`` lines are kept: records outside the context, shown and searched."""

from __future__ import annotations

import json
from pathlib import Path

from jsonl_store import SessionStore
from jsonl_store.importers import import_claude_code
from jsonl_store.search import search

DATA = Path(__file__).parent / "data" / "claude-code"


def _error_message(error: object) -> str | None:
    """The ``message`` of a ``system`` line's ``error``, however deep the API's own error nests it."""
    while isinstance(error, dict):
        if isinstance(error.get("message"), str):
            return str(error["message"])
        error = error.get("error")
    return None


def _system_texts(path: Path) -> list[tuple[str, str | None]]:
    """``(subtype, text)`` of each ``system`` line of the file: its content, else its error's
    message, else None (a line of fields only: a turn's duration, a hook summary)."""
    out: list[tuple[str, str | None]] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        d = json.loads(line)
        # A compact_boundary is a snapshot, tested with the compactions.
        if d.get("type") != "system" or d.get("subtype") == "compact_boundary":
            continue
        text = d.get("content")
        out.append(
            (d.get("subtype"), text if isinstance(text, str) and text else _error_message(d.get("error")))
        )
    return out


def test_every_system_line_with_text_is_a_record_outside_the_context(tmp_path: Path) -> None:
    """away_summary, api_error, turn_duration and the like are hidden system records, in file order, with their text."""
    store = SessionStore(tmp_path / "s", durability="none")
    expected: list[tuple[str, str | None]] = []
    stored: list[tuple[str, str]] = []
    for path in sorted(DATA.glob("*.jsonl")):
        texts = _system_texts(path)
        report = import_claude_code(store, path)
        if not texts:
            continue
        expected += texts
        session_id = report.files[0].session_id
        assert session_id is not None
        for record in store.records(session_id):
            message = record.message
            if isinstance(message, dict) and str(message.get("claude_code_type", "")).startswith("system:"):
                assert message["include_in_messages"] is False and message["role"] == "system"
                stored.append((message["claude_code_type"].removeprefix("system:"), message["content"]))
        context = store.load(session_id).context
        assert not [
            m for m in context if isinstance(m, dict) and "claude_code_type" in m and m["role"] == "system"
        ]
    assert len(expected) >= 3  # away_summary twice, a refusal and its fallback in the shared files
    with_text = [(subtype, text) for subtype, text in expected if text is not None]
    assert [(s, t) for (s, t), (_, e) in zip(stored, expected, strict=True) if e is not None] == with_text
    assert [subtype for subtype, _ in stored] == [subtype for subtype, _ in expected]
    assert all(text for _, text in stored)  # a line of fields only shows them as text
    assert {"api_error", "error"} <= {subtype for subtype, _ in expected}
    words = next(content for subtype, content in expected if subtype == "away_summary").split()[:4]
    assert any(hit.kind == "text" for hit in search(store, " ".join(words)))
