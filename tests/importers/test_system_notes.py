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
        # A sub-agent's line (isSidechain) is stored in its chain's session, not this one.
        if d.get("type") != "system" or d.get("subtype") == "compact_boundary" or d.get("isSidechain"):
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
    with_text: list[tuple[str, str]] = [(subtype, text) for subtype, text in expected if text is not None]
    assert [(s, t) for (s, t), (_, e) in zip(stored, expected, strict=True) if e is not None] == with_text
    assert [subtype for subtype, _ in stored] == [subtype for subtype, _ in expected]
    assert all(text for _, text in stored)  # a line of fields only shows them as text
    assert {"api_error", "error"} <= {subtype for subtype, _ in expected}
    words = next(content for subtype, content in with_text if subtype == "away_summary").split()[:4]
    assert any(hit.kind == "text" for hit in search(store, " ".join(words)))


def test_an_api_error_is_kept_with_its_message_shown_and_searchable(tmp_path: Path) -> None:
    """api_error and error lines (their text under error.message, however deep) are hidden records a search finds."""
    sid = "11111111-2222-3333-4444-555555555555"
    lines = [
        {"type": "user", "sessionId": sid, "uuid": "u1", "timestamp": "2025-01-01T00:00:00Z",
         "message": {"role": "user", "content": "hello"}},
        {"type": "system", "subtype": "api_error", "sessionId": sid, "uuid": "e1",
         "timestamp": "2025-01-01T00:00:01Z", "level": "error", "retryAttempt": 2,
         "error": {"status": 529, "error": {"type": "error", "error": {"type": "overloaded_error",
                   "message": "Overloaded upstream"}}}},
        {"type": "system", "subtype": "error", "sessionId": sid, "uuid": "e2",
         "timestamp": "2025-01-01T00:00:02Z", "error": {"message": "Rate limited: retry in 30 s", "status": 429}},
    ]  # fmt: skip
    path = tmp_path / f"{sid}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    store = SessionStore(tmp_path / "s", durability="none")
    report = import_claude_code(store, path)
    assert report.skipped == 0 and report.added == 3
    kept = [r.message for r in store.records(f"claude-code-{sid}")][1:]
    assert [(m["claude_code_type"], m["content"]) for m in kept] == [  # type: ignore[index]
        ("system:api_error", "Overloaded upstream"),
        ("system:error", "Rate limited: retry in 30 s"),
    ]
    assert kept[0]["claude_code_line"]["error"] == lines[1]["error"]  # type: ignore[index]
    assert store.load(f"claude-code-{sid}").model_context() == [{"role": "user", "content": "hello"}]
    assert [hit.sequence for hit in search(store, "Overloaded upstream")] == [2]


def test_a_mode_change_is_kept_when_it_changes_at_the_time_of_the_lines_around_it(tmp_path: Path) -> None:
    """permission-mode lines (no timestamp) are records when the mode changes, dated by the next or previous line."""
    sid = "11111111-2222-3333-4444-555555555555"

    def mode(name: str) -> dict[str, str]:
        return {"type": "permission-mode", "permissionMode": name, "sessionId": sid}

    def user(uuid: str, when: str) -> dict[str, object]:
        return {"type": "user", "sessionId": sid, "uuid": uuid, "timestamp": when,
                "message": {"role": "user", "content": uuid}}  # fmt: skip

    lines = [mode("default"), user("u1", "2025-01-01T00:00:01Z"), mode("default"), mode("plan"),
             user("u2", "2025-01-01T00:00:02Z")]  # fmt: skip
    path = tmp_path / f"{sid}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    store = SessionStore(tmp_path / "s", durability="none")
    [file] = import_claude_code(store, path).files
    assert dict(file.skipped_types) == {"permission-mode:unchanged": 1} and file.reasons
    records = list(store.records(f"claude-code-{sid}"))
    shown = [
        (r.message.get("content"), r.created_at.isoformat()) for r in records if isinstance(r.message, dict)
    ]
    assert shown == [
        ("permissionMode: default", "2025-01-01T00:00:01+00:00"),
        ("u1", "2025-01-01T00:00:01+00:00"),
        ("permissionMode: plan", "2025-01-01T00:00:01+00:00"),
        ("u2", "2025-01-01T00:00:02+00:00"),
    ]
