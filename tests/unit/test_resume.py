"""`resume`: the interrupted tool batch is closed in the log, once, with stable ids."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import log_path

from jsonl_store import (
    INTERRUPTED_NOTICE,
    AssistantMessage,
    InvalidArgument,
    SessionStore,
    ToolCall,
    ToolMessage,
    UserMessage,
    is_provider_valid,
)


def interrupted(store: SessionStore, sid: str = "s") -> None:
    """A batch of two calls killed after the first result."""
    store.append(sid, UserMessage(content="do two things"))
    store.append(
        sid, AssistantMessage(id="a1", tool_calls=[ToolCall(id="c1", name="x"), ToolCall(id="c2", name="y")])
    )
    store.append(sid, ToolMessage(tool_call_id="c1", name="x", content="did x"))


def test_the_open_call_gets_an_error_result_in_the_log(store: SessionStore) -> None:
    """resume appends one error result per open call; the view is provider-valid and keeps the result that ran."""
    interrupted(store)
    view = store.resume("s")
    assert is_provider_valid(view.messages)
    last = view.raw_tail[-1].message
    assert isinstance(last, ToolMessage)
    assert (last.tool_call_id, last.name, last.is_error, last.content) == (
        "c2",
        "y",
        True,
        INTERRUPTED_NOTICE,
    )
    assert [r.sequence for r in store.records("s")] == [1, 2, 3, 4]


def test_the_batch_stays_whole_when_the_agent_goes_on(store: SessionStore) -> None:
    """After resume, the next message leaves the batch (and the tool that did run) in the context."""
    interrupted(store)
    store.resume("s")
    store.append("s", AssistantMessage(content="x is done; y was interrupted"))
    contents = [getattr(m, "content", None) for m in store.load("s").messages]
    assert "did x" in contents and INTERRUPTED_NOTICE in contents


def test_resuming_again_writes_nothing(store: SessionStore, root: Path) -> None:
    """A second resume (and one of a session with no open batch) changes no byte."""
    interrupted(store)
    first = store.resume("s")
    before = log_path(root, "s").read_bytes()
    assert store.resume("s") == first
    assert log_path(root, "s").read_bytes() == before


def test_closing_ids_are_the_same_from_any_store(root: Path) -> None:
    """Two stores resuming copies of one session derive the same id for the closing result."""
    ids = []
    for sid in ("one", "two"):
        store = SessionStore(root, durability="none")
        interrupted(store, sid)
        last = store.resume(sid).raw_tail[-1].message
        assert isinstance(last, ToolMessage)
        ids.append(last.id)
    assert ids[0] == ids[1]


def test_a_dict_session_gets_dict_results(store: SessionStore) -> None:
    """Sessions stored as plain dicts get plain dict results, with an id."""
    store.append(
        "s",
        {
            "role": "assistant",
            "id": "a",
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
        },
    )
    last = store.resume("s").raw_tail[-1].message
    assert isinstance(last, dict)
    assert {k: last[k] for k in ("role", "tool_call_id", "name", "is_error")} == {
        "role": "tool",
        "tool_call_id": "c1",
        "name": "f",
        "is_error": True,
    }
    assert last["content"] == INTERRUPTED_NOTICE
    assert isinstance(last["id"], str) and last["id"]


def test_a_repeated_call_id_needs_as_many_results(store: SessionStore) -> None:
    """An assistant message naming one call id twice, answered once, gets one more result with its own id."""
    store.append(
        "s", AssistantMessage(id="a", tool_calls=[ToolCall(id="c", name="x"), ToolCall(id="c", name="x")])
    )
    store.append("s", ToolMessage(tool_call_id="c", content="first"))
    view = store.resume("s")
    results = [r.message for r in view.raw_tail if isinstance(r.message, ToolMessage)]
    assert [m.content for m in results] == ["first", INTERRUPTED_NOTICE]


def test_nothing_to_close_is_a_plain_load(store: SessionStore, root: Path) -> None:
    """A session whose last batch is whole, or an unknown one, is loaded and nothing is written."""
    store.append("s", UserMessage(content="hi"))
    before = log_path(root, "s").read_bytes()
    assert store.resume("s") == store.load("s")
    assert log_path(root, "s").read_bytes() == before
    assert not store.resume("nobody").exists


def test_a_notice_of_ones_own(store: SessionStore) -> None:
    """notice= sets the closing results' content; it must be a non-empty str."""
    interrupted(store)
    last = store.resume("s", notice="killed").raw_tail[-1].message
    assert isinstance(last, ToolMessage) and last.content == "killed"
    with pytest.raises(InvalidArgument):
        store.resume("s", notice="")


def test_an_anthropic_session_is_closed_in_its_own_shape(store: SessionStore) -> None:
    """resume(dialect="anthropic") answers an open tool_use with a user message of tool_result blocks."""
    store.append("s", {"role": "user", "content": "read it"})
    store.append(
        "s",
        {"role": "assistant", "content": [{"type": "tool_use", "id": "tu1", "name": "read", "input": {}}]},
    )
    view = store.resume("s", dialect="anthropic")
    last = view.raw_tail[-1].message
    assert isinstance(last, dict) and last["role"] == "user"
    assert [(b["type"], b["tool_use_id"]) for b in last["content"]] == [("tool_result", "tu1")]
    assert is_provider_valid(view.context, dialect="anthropic")
    assert store.resume("s", dialect="anthropic") == view  # once


def test_the_view_and_resume_give_a_closing_result_one_id(store: SessionStore) -> None:
    """model_context() names the synthetic result alike on every call, and resume stores that very id."""
    interrupted(store)
    view = store.load("s")
    first, second = view.model_context()[-1], view.model_context()[-1]
    assert isinstance(first, ToolMessage) and isinstance(second, ToolMessage)
    assert first.id == second.id
    stored = store.resume("s").raw_tail[-1].message
    assert isinstance(stored, ToolMessage) and stored.id == first.id
