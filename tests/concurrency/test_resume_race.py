"""`resume` from several processes at once stores the closing results once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jsonl_store import INTERRUPTED_NOTICE, AssistantMessage, SessionStore, ToolCall, ToolMessage, UserMessage

SID = "interrupted"


def test_four_processes_resuming_one_interrupted_session_close_it_once(tmp_path: Path, children: Any) -> None:
    """Two open calls, four concurrent resumes: exactly two closing results in the log, all views agree."""
    store = SessionStore(tmp_path)
    store.append(SID, UserMessage(content="run three tools"))
    calls = [ToolCall(id=f"c{i}", name="tool") for i in range(3)]
    store.append(SID, AssistantMessage(tool_calls=calls))
    store.append(SID, ToolMessage(tool_call_id="c0", content="done"))
    resumers = [children.start("resume", root=str(tmp_path), sid=SID) for _ in range(4)]
    children.go(*resumers)
    last = [r.result() for r in resumers]
    assert last == [5, 5, 5, 5]
    records = list(SessionStore(tmp_path).records(SID))
    closing = [r.message for r in records if isinstance(r.message, ToolMessage) and r.message.is_error]
    assert [m.tool_call_id for m in closing] == ["c1", "c2"]
    assert all(m.content == INTERRUPTED_NOTICE for m in closing)
    assert SessionStore(tmp_path).verify(SID) == []
