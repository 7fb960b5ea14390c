"""Claude Code ``system`` lines that carry text are kept: records outside the context, shown and searched."""

from __future__ import annotations

import json
from pathlib import Path

from jsonl_store import SessionStore
from jsonl_store.importers import import_claude_code
from jsonl_store.search import search

DATA = Path(__file__).parent / "data" / "claude-code"


def _system_texts(path: Path) -> list[tuple[str, str]]:
    """``(subtype, content)`` of each ``system`` line of the file that has text."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        d = json.loads(line)
        text = d.get("content") if d.get("type") == "system" else None
        # A compact_boundary is a snapshot, tested with the compactions.
        if isinstance(text, str) and text and d.get("subtype") != "compact_boundary":
            out.append((d.get("subtype"), text))
    return out


def test_every_system_line_with_text_is_a_record_outside_the_context(tmp_path: Path) -> None:
    """away_summary, api_refusal and the like are stored as hidden system records, in file order, and searchable."""
    store = SessionStore(tmp_path / "s", durability="none")
    expected: list[tuple[str, str]] = []
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
    assert stored == expected
    words = next(content for subtype, content in expected if subtype == "away_summary").split()[:4]
    assert any(hit.kind == "text" for hit in search(store, " ".join(words)))
