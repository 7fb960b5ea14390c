"""Scenario tests for tool-batch repair in each dialect, and for adding one (`jsonl_store._context.dialects`)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest

from jsonl_store import (
    INTERRUPTED_NOTICE,
    AssistantMessage,
    Dialect,
    InvalidArgument,
    SessionStore,
    ToolCall,
    ToolMessage,
    UserMessage,
    close_interrupted,
    is_provider_valid,
    provider_safe,
    provider_violation,
    register_dialect,
    repair_context,
)
from jsonl_store._context import dialects as _dialects

RESPONSES = "openai-responses"


def same(actual: list[Any], expected: list[Any]) -> bool:
    """True when both lists hold the very same objects in the same order."""
    return len(actual) == len(expected) and all(a is e for a, e in zip(actual, expected, strict=True))


@pytest.fixture(autouse=True)
def _own_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test registers into a copy of the registry, so no test sees another's dialects."""
    monkeypatch.setattr(_dialects, "_DIALECTS", dict(_dialects._DIALECTS))


# ---------------------------------------------------------------------------------------
# openai-responses
# ---------------------------------------------------------------------------------------


def call(call_id: str, kind: str = "function_call") -> dict[str, Any]:
    """A Responses call item."""
    if kind == "custom_tool_call":
        return {"type": kind, "call_id": call_id, "name": "patch", "input": "*** Begin Patch"}
    return {
        "type": kind,
        "call_id": call_id,
        "name": f"tool_{call_id}",
        "arguments": "{}",
        "id": f"fc_{call_id}",
    }


def output(call_id: str, text: str = "ok") -> dict[str, Any]:
    """A Responses function_call_output item."""
    return {"type": "function_call_output", "call_id": call_id, "output": text}


def said(text: str, role: str = "user") -> dict[str, Any]:
    """A Responses (or chat) message with text content."""
    return {"role": role, "content": text}


def test_responses_parallel_batch_stored_one_call_per_item_is_kept() -> None:
    """Consecutive function_call items are one batch, answered in any order: complete, so kept as is."""
    history = [said("list both"), call("a"), call("b"), output("b"), output("a"), said("thanks")]
    assert same(provider_safe(history, dialect=RESPONSES), history)
    assert is_provider_valid(history, dialect=RESPONSES)


def test_responses_parallel_batch_of_class_messages_is_one_batch() -> None:
    """An adapter's one AssistantMessage per call makes one batch too; "neutral" drops it as two broken ones."""
    a = AssistantMessage(tool_calls=[ToolCall(id="a", name="ls")])
    b = AssistantMessage(tool_calls=[ToolCall(id="b", name="ls")])
    rb, ra, after = ToolMessage(tool_call_id="b"), ToolMessage(tool_call_id="a"), UserMessage(content="ok")
    history: list[Any] = [a, b, rb, ra, after]
    assert same(repair_context(history, dialect=RESPONSES), history)
    assert same(repair_context(history), [after])


def test_responses_assistant_text_starts_a_new_batch() -> None:
    """A message that says something besides its calls is not joined to the calls before it."""
    first = AssistantMessage(tool_calls=[ToolCall(id="a", name="ls")])
    second = AssistantMessage(content="and now", tool_calls=[ToolCall(id="b", name="ls")])
    rb = ToolMessage(tool_call_id="b")
    assert same(repair_context([first, second, rb], dialect=RESPONSES), [second, rb])


def test_responses_interrupted_batch_mid_history_goes_with_its_reasoning_item() -> None:
    """A reasoning item right before the calls belongs to the batch: dropped with it, never left dangling."""
    thought = {"type": "reasoning", "id": "rs_1", "summary": []}
    history = [said("go"), thought, call("a"), call("b"), output("a"), said("next")]
    assert same(provider_safe(history, dialect=RESPONSES), [history[0], history[-1]])
    kept = repair_context(history, mid_history="close", dialect=RESPONSES)
    assert (
        same(kept[:5], history[:5]) and kept[5] == output("b", INTERRUPTED_NOTICE) and kept[6] is history[-1]
    )


def test_responses_reasoning_before_a_plain_message_is_plain() -> None:
    """A reasoning item followed by no call is an ordinary item and stays."""
    thought = {"type": "reasoning", "id": "rs_1", "summary": []}
    history = [said("hi"), thought, said("hello", "assistant")]
    assert same(repair_context(history, dialect=RESPONSES), history)


def test_responses_last_batch_is_closed_with_output_items_of_the_calls_kind() -> None:
    """A function_call gets a function_call_output notice, a custom_tool_call a custom_tool_call_output."""
    history = [said("fix it"), call("a"), call("p", "custom_tool_call"), output("a")]
    assert same(provider_safe(history, dialect=RESPONSES), history)
    closed = close_interrupted(history, dialect=RESPONSES)
    assert same(closed[:4], history)
    assert closed[4:] == [{"type": "custom_tool_call_output", "call_id": "p", "output": INTERRUPTED_NOTICE}]
    assert is_provider_valid(closed, dialect=RESPONSES)


def test_responses_orphan_output_is_dropped() -> None:
    """An output item whose call is not right before it is dropped."""
    history = [said("hi"), output("ghost"), said("hello", "assistant")]
    assert same(repair_context(history, dialect=RESPONSES), [history[0], history[2]])
    assert (
        provider_violation(history, dialect=RESPONSES)
        == "message 1: tool result for 'ghost' follows no tool call"
    )


def test_responses_violation_names_the_call_item_without_output() -> None:
    """The missing output is reported at the call item that has none."""
    history = [call("a"), call("b"), output("a"), said("next")]
    assert (
        provider_violation(history, dialect=RESPONSES)
        == "message 1: tool call 'b' has no result right after it"
    )


# ---------------------------------------------------------------------------------------
# anthropic
# ---------------------------------------------------------------------------------------


def uses(*ids: str, text: str | None = None) -> dict[str, Any]:
    """An Anthropic assistant message with an optional text block and one tool_use block per id."""
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    blocks += [{"type": "tool_use", "id": i, "name": f"tool_{i}", "input": {}} for i in ids]
    return {"role": "assistant", "content": blocks}


def results(*ids: str, text: str | None = None) -> dict[str, Any]:
    """An Anthropic user message with one tool_result block per id and an optional text block after them."""
    blocks: list[dict[str, Any]] = [{"type": "tool_result", "tool_use_id": i, "content": "ok"} for i in ids]
    if text:
        blocks.append({"type": "text", "text": text})
    return {"role": "user", "content": blocks}


def notice_block(call_id: str) -> dict[str, Any]:
    """The tool_result block that closes ``call_id``."""
    return {"type": "tool_result", "tool_use_id": call_id, "content": INTERRUPTED_NOTICE, "is_error": True}


def test_anthropic_complete_batch_is_returned_unchanged() -> None:
    """tool_use blocks answered by tool_result blocks in the next user message: valid, the same objects."""
    history = [said("go"), uses("a", "b", text="checking"), results("b", "a"), said("done", "assistant")]
    for output_ in (
        provider_safe(history, dialect="anthropic"),
        repair_context(history, dialect="anthropic"),
    ):
        assert same(output_, history)
    assert is_provider_valid(history, dialect="anthropic")


def test_anthropic_dropped_batch_keeps_the_users_text_beside_its_results() -> None:
    """Dropping a mid-history batch removes its tool_result blocks, not the user's words in that message."""
    history = [said("go"), uses("a", "b"), results("a", text="also, hurry"), uses("c"), results("c")]
    repaired = repair_context(history, dialect="anthropic")
    assert repaired[0] is history[0]
    assert repaired[1] == {"role": "user", "content": [{"type": "text", "text": "also, hurry"}]}
    assert same(repaired[2:], history[3:])
    assert history[2] == results("a", text="also, hurry")  # the stored message is untouched


def test_anthropic_last_batch_is_closed_with_a_user_message_of_error_results() -> None:
    """Each open tool_use gets an is_error tool_result, all in one user message after the finished ones."""
    history = [said("go"), uses("a", "b", "c"), results("b")]
    closed = close_interrupted(history, dialect="anthropic")
    assert same(closed[:3], history)
    assert closed[3:] == [{"role": "user", "content": [notice_block("a"), notice_block("c")]}]
    assert is_provider_valid(closed, dialect="anthropic")


def test_anthropic_last_batch_without_results_is_closed() -> None:
    """An assistant message whose tools never reported gets a user message answering all of them."""
    closed = repair_context([said("go"), uses("a")], dialect="anthropic")
    assert closed[2] == {"role": "user", "content": [notice_block("a")]}


def test_anthropic_closing_trims_stray_and_duplicate_results_inside_a_message() -> None:
    """Under "close" a result that answers no call, or answers one twice, is removed from its message."""
    stored = results("a", "zzz", "a", text="more")
    repaired = repair_context([uses("a"), stored, said("next")], mid_history="close", dialect="anthropic")
    assert repaired[1] == {"role": "user", "content": [stored["content"][0], stored["content"][3]]}
    assert repaired[0] == uses("a") and repaired[2] == said("next")


def test_anthropic_orphan_results_go_and_their_text_stays() -> None:
    """tool_result blocks after a message without tool_use are removed; a message left empty goes."""
    history = [said("hi"), results("ghost", text="still here"), results("ghost")]
    repaired = repair_context(history, dialect="anthropic")
    assert repaired == [said("hi"), {"role": "user", "content": [{"type": "text", "text": "still here"}]}]
    assert (
        provider_violation(history, dialect="anthropic")
        == "message 1: tool result for 'ghost' follows no tool call"
    )


def test_anthropic_results_may_span_consecutive_user_messages() -> None:
    """Two user messages of results in a row answer one batch (the API joins consecutive turns)."""
    history = [uses("a", "b"), results("a"), results("b"), said("next")]
    assert same(repair_context(history, dialect="anthropic"), history)


def test_anthropic_text_only_user_message_ends_the_batch() -> None:
    """A user message without tool_result right after tool_use leaves the batch unanswered."""
    history = [uses("a"), said("what happened?")]
    assert (
        provider_violation(history, dialect="anthropic")
        == "message 0: tool call 'a' has no result right after it"
    )
    assert same(repair_context(history, dialect="anthropic"), [history[1]])


def test_anthropic_reads_the_library_classes_as_neutral_does() -> None:
    """Message classes mean the same in every dialect: their notices are ToolMessages."""
    a = AssistantMessage(tool_calls=[ToolCall(id="a", name="ls")])
    closed = close_interrupted([UserMessage(content="go"), a], dialect="anthropic")
    assert closed[1] is a and isinstance(closed[2], ToolMessage) and closed[2].is_error


# ---------------------------------------------------------------------------------------
# Choosing and adding a dialect
# ---------------------------------------------------------------------------------------


def test_unknown_dialect_name_is_refused_with_the_known_names() -> None:
    """A misspelt name raises InvalidArgument (a ValueError) that lists the registered names."""
    # Other tests (and the docs' examples) register dialects of their own: the built-ins are listed
    # among whatever else is registered, sorted.
    with pytest.raises(InvalidArgument, match=r"'anthropic', .*'neutral', .*'openai-responses'"):
        repair_context([], dialect="openai")
    with pytest.raises(ValueError, match="Dialect"):
        is_provider_valid([], dialect=42)  # type: ignore[arg-type]


class Bracketed:
    """A toy format: "call:x" strings make calls, "done:x" strings answer them."""

    def calls(self, message: Any) -> list[tuple[Any, str | None]]:
        return [(message[5:], None)] if message.startswith("call:") else []

    def answers(self, message: Any) -> list[Any]:
        return [message[5:]] if message.startswith("done:") else []

    def keep_answers(self, message: Any, keep: Any) -> Any:
        return None

    def joins(self, previous: Any, message: Any) -> bool:
        return bool(self.calls(previous) and self.calls(message))

    def notices(self, unanswered: Any, notice: str) -> list[Any]:
        return [f"done:{call_id}" for _, call_id, _ in unanswered]


def test_registered_dialect_is_used_by_name_and_by_object() -> None:
    """register_dialect makes a name usable everywhere; a Dialect object works without registering."""
    toy = Bracketed()
    assert isinstance(toy, Dialect)
    register_dialect("bracketed", toy)
    history = ["hi", "call:a", "call:b", "done:b", "bye", "call:c"]
    assert repair_context(history, dialect="bracketed") == ["hi", "bye", "call:c", "done:c"]
    assert provider_safe(history, dialect=toy) == ["hi", "bye", "call:c"]
    register_dialect("bracketed", toy)  # the same object again: allowed


def test_register_dialect_refuses_a_taken_name_and_non_dialects() -> None:
    """A name in use, an empty name, or an object missing methods raises InvalidArgument."""
    with pytest.raises(InvalidArgument, match="already registered"):
        register_dialect("neutral", Bracketed())
    with pytest.raises(InvalidArgument, match="non-empty"):
        register_dialect("", Bracketed())
    with pytest.raises(InvalidArgument, match="no Dialect"):
        register_dialect("half", object())  # type: ignore[arg-type]


def test_pydantic_ai_messages_through_a_registered_dialect() -> None:
    """The protocol fits pydantic-ai: calls by tool_call_id, results dropped from a request that keeps its prompt."""
    pytest.importorskip("pydantic_ai")
    from pydantic_ai.messages import (
        ModelRequest,
        ModelResponse,
        RetryPromptPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )

    from jsonl_store.adapters.pydantic_ai import PYDANTIC_AI

    register_dialect("pydantic-ai", PYDANTIC_AI)
    prompt = UserPromptPart(content="and then?")
    with warnings.catch_warnings():  # deprecated in pydantic-ai 2, still in stored histories
        warnings.simplefilter("ignore")
        feedback = RetryPromptPart(content="be brief")  # no tool name: feedback, no tool result
    calls = ModelResponse(parts=[ToolCallPart("ls", {}, "a"), ToolCallPart("cat", {}, "b")])
    partial = ModelRequest(parts=[ToolReturnPart("ls", "x.py", "a"), prompt, feedback])
    later = ModelRequest(parts=[UserPromptPart(content="next")])
    dropped = repair_context([calls, partial, later], dialect="pydantic-ai")
    assert dropped[0].parts == [prompt, feedback] and dropped[1] is later
    closed = repair_context([calls, partial], dialect="pydantic-ai")
    assert closed[:2] == [calls, partial]
    (notice,) = closed[2].parts
    assert isinstance(notice, ToolReturnPart) and (notice.tool_call_id, notice.tool_name) == ("b", "cat")
    assert notice.content == INTERRUPTED_NOTICE
    assert is_provider_valid(closed, dialect="pydantic-ai")


def test_anthropic_text_left_of_a_duplicate_result_moves_after_the_notices() -> None:
    """Closing keeps a batch's results together: a message left with only text comes after them."""
    history = [uses("a", "b"), results("a"), results("a", text="hurry")]
    closed = close_interrupted(history, dialect="anthropic")
    assert same(closed[:2], history[:2])
    assert closed[2:] == [
        {"role": "user", "content": [notice_block("b")]},
        {"role": "user", "content": [{"type": "text", "text": "hurry"}]},
    ]
    assert is_provider_valid(closed, dialect="anthropic")


def test_a_view_reads_the_dialect_its_metadata_names_and_neutral_for_an_unknown_one(tmp_path: Path) -> None:
    """metadata["dialect"] picks how load().messages reads tool batches; a name not registered reads as neutral."""
    store = SessionStore(tmp_path / "s", durability="none")
    call = {"role": "assistant", "type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"}
    output = {"role": "tool", "type": "function_call_output", "call_id": "c1", "output": "a b"}
    store.append_many("r", [{"role": "user", "content": "list"}, call, output])
    neutral = store.load("r")
    assert neutral.dialect == "neutral"
    assert output not in neutral.messages  # read the neutral way, the output answers no call
    store.update_session("r", metadata={"dialect": "openai-responses"})
    view = store.load("r")
    assert view.dialect == "openai-responses"
    assert view.messages == view.context
    store.update_session("r", metadata={"dialect": "no-such-dialect"})
    assert store.load("r").dialect == "neutral"
