"""Scenario tests for the provider request shapes (`jsonl_store._context.providers`).

Each shape is asserted exactly, then checked against the provider's own request types
(`provider_types`, skipped when the ``providers`` extra is not installed).
"""

from __future__ import annotations

from typing import Any

import pytest
from provider_types import anthropic_request, conforms, openai_chat, openai_responses

from jsonl_store import (
    AssistantMessage,
    CompactedMessage,
    InvalidMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
    close_interrupted,
    to_anthropic,
    to_openai_chat,
    to_openai_responses,
)

PNG = "data:image/png;base64,iVBORw0KGgo="


def session() -> list[Any]:
    """A session context with one of everything: instructions, a summary, an image, a tool batch, dicts."""
    return [
        SystemMessage(content="Be brief."),
        CompactedMessage(content="Earlier: the user asked for the files."),
        UserMessage(
            content=[
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "image_url": {"url": PNG}},
            ]
        ),
        AssistantMessage(
            content="Looking.",
            reasoning="the user wants a listing",
            tool_calls=[
                ToolCall(id="a", name="ls", arguments={"path": "."}),
                ToolCall(id="b", name="wc", arguments='{"f": 1}'),
            ],
        ),
        ToolMessage(tool_call_id="a", name="ls", content="main.py"),
        ToolMessage(tool_call_id="b", name="wc", content={"lines": 3}, is_error=True),
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c", "name": "ls", "arguments": {}}],
            "id": "m7",
        },
        {"role": "tool", "tool_call_id": "c", "name": "ls", "content": "ok", "id": "m8", "persist": True},
        UserMessage(content="hidden", include_in_messages=False),
        AssistantMessage(content="A picture of a directory."),
    ]


# ---------------------------------------------------------------------------------------
# OpenAI Chat Completions
# ---------------------------------------------------------------------------------------


def test_openai_chat_shape_of_a_whole_session() -> None:
    """Classes and dicts become chat messages; ids, reasoning, tool names and hidden messages are left out."""
    messages = to_openai_chat(session())
    assert messages == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Earlier: the user asked for the files."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "image_url": {"url": PNG}},
            ],
        },
        {
            "role": "assistant",
            "content": "Looking.",
            "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "ls", "arguments": '{"path":"."}'}},
                {"id": "b", "type": "function", "function": {"name": "wc", "arguments": '{"f": 1}'}},
            ],
        },
        {"role": "tool", "tool_call_id": "a", "content": "main.py"},
        {"role": "tool", "tool_call_id": "b", "content": '{"lines":3}'},
        {
            "role": "assistant",
            "tool_calls": [{"id": "c", "type": "function", "function": {"name": "ls", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c", "content": "ok"},
        {"role": "assistant", "content": "A picture of a directory."},
    ]
    openai_chat(messages)


def test_openai_chat_keeps_the_keys_chat_defines_and_drops_the_rest() -> None:
    """A dict's ``name`` or ``refusal`` stays; the library's fields and unknown keys go."""
    messages = to_openai_chat(
        [
            {
                "role": "user",
                "content": "hi",
                "name": "ada",
                "id": "u1",
                "include_in_messages": True,
                "extra": 1,
            },
            {"role": "assistant", "content": None, "refusal": "I can't."},
            {"role": "developer", "content": "Answer in French."},
        ]
    )
    assert messages == [
        {"role": "user", "content": "hi", "name": "ada"},
        {"role": "assistant", "refusal": "I can't."},
        {"role": "developer", "content": "Answer in French."},
    ]
    openai_chat(messages)


def test_an_assistant_message_that_says_nothing_is_left_out() -> None:
    """No content and no calls: nothing to send, in any shape."""
    empty: list[Any] = [UserMessage(content="hi"), AssistantMessage(), {"role": "assistant", "content": ""}]
    assert to_openai_chat(empty) == [{"role": "user", "content": "hi"}]
    assert to_openai_responses(empty) == [{"role": "user", "content": "hi"}]
    assert to_anthropic(empty) == (None, [{"role": "user", "content": [{"type": "text", "text": "hi"}]}])


def test_a_closed_batch_is_accepted_by_each_providers_types() -> None:
    """The notices close_interrupted adds are valid results in every shape."""
    context = close_interrupted(
        [UserMessage(content="go"), AssistantMessage(tool_calls=[ToolCall(id="a", name="ls")])]
    )
    openai_chat(to_openai_chat(context))
    openai_responses(to_openai_responses(context))
    system, messages = to_anthropic(context)
    anthropic_request(system, messages)
    assert messages[-1]["content"][0]["is_error"] is True


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        ({"role": "narrator", "content": "x"}, "role 'narrator'"),
        ({"role": "assistant", "tool_calls": [{"id": "a", "arguments": "{}"}]}, "function name"),
        ("just text", "no message class or dict with a role"),
    ],
)
def test_a_message_no_api_can_take_raises(message: Any, reason: str) -> None:
    """An unknown role, a nameless tool call or a non-message raise InvalidMessage (a ValueError), saying which."""
    for convert in (to_openai_chat, to_openai_responses, to_anthropic):
        with pytest.raises(InvalidMessage, match=reason):
            convert([UserMessage(content="hi"), message])


# ---------------------------------------------------------------------------------------
# OpenAI Responses
# ---------------------------------------------------------------------------------------


def test_openai_responses_shape_of_a_whole_session() -> None:
    """Messages become input messages (parts as input_*), calls function_call items, results their outputs."""
    items = to_openai_responses(session())
    assert items == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Earlier: the user asked for the files."},
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "What is this?"},
                {"type": "input_image", "image_url": PNG, "detail": "auto"},
            ],
        },
        {"role": "assistant", "content": "Looking."},
        {"type": "function_call", "call_id": "a", "name": "ls", "arguments": '{"path":"."}'},
        {"type": "function_call", "call_id": "b", "name": "wc", "arguments": '{"f": 1}'},
        {"type": "function_call_output", "call_id": "a", "output": "main.py"},
        {"type": "function_call_output", "call_id": "b", "output": '{"lines":3}'},
        {"type": "function_call", "call_id": "c", "name": "ls", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c", "output": "ok"},
        {"role": "assistant", "content": "A picture of a directory."},
    ]
    openai_responses(items)


def test_openai_responses_items_pass_through_with_the_providers_ids_only() -> None:
    """Items keep the ids the provider gave (a reasoning item needs its id); ids on items you write go."""
    stored = [
        {"role": "user", "content": "hi", "id": "u1"},
        {"type": "reasoning", "id": "rs_1", "summary": [], "include_in_messages": True},
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "a",
            "name": "ls",
            "arguments": "{}",
            "status": "completed",
        },
        {"type": "function_call_output", "id": "mine-2", "call_id": "a", "output": "ok", "persist": True},
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "Done.", "annotations": []}],
        },
        {
            "type": "message",
            "id": "mine-3",
            "role": "user",
            "content": [{"type": "input_text", "text": "thanks"}],
        },
    ]
    items = to_openai_responses(stored)
    assert items == [
        {"role": "user", "content": "hi"},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        stored[2],
        {"type": "function_call_output", "call_id": "a", "output": "ok"},
        stored[4],
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "thanks"}]},
    ]
    openai_responses(items)


# ---------------------------------------------------------------------------------------
# Anthropic Messages
# ---------------------------------------------------------------------------------------


def test_anthropic_shape_of_a_whole_session() -> None:
    """System text goes to ``system``; turns alternate; results are tool_result blocks, errors flagged."""
    system, messages = to_anthropic(session())
    assert system == "Be brief."
    assert messages == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Earlier: the user asked for the files."},
                {"type": "text", "text": "What is this?"},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
                },
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Looking."},
                {"type": "tool_use", "id": "a", "name": "ls", "input": {"path": "."}},
                {"type": "tool_use", "id": "b", "name": "wc", "input": {"f": 1}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "a", "content": "main.py"},
                {"type": "tool_result", "tool_use_id": "b", "content": '{"lines":3}', "is_error": True},
            ],
        },
        {"role": "assistant", "content": [{"type": "tool_use", "id": "c", "name": "ls", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c", "content": "ok"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "A picture of a directory."}]},
    ]
    anthropic_request(system, messages)


def test_anthropic_system_messages_are_joined_and_none_without_any() -> None:
    """Every system or developer message's text, in order, joined by a blank line; None when there is none."""
    system, _ = to_anthropic(
        [SystemMessage(content="One."), UserMessage(content="hi"), {"role": "developer", "content": "Two."}]
    )
    assert system == "One.\n\nTwo."
    assert to_anthropic([UserMessage(content="hi")])[0] is None


def test_anthropic_tool_results_come_first_in_their_user_message() -> None:
    """A user's text merged into the results' message goes after every tool_result, as the API requires."""
    context: list[Any] = [
        AssistantMessage(tool_calls=[ToolCall(id="a", name="ls"), ToolCall(id="b", name="ls")]),
        ToolMessage(tool_call_id="a", content="x"),
        {"role": "user", "content": [{"type": "text", "text": "hurry"}]},
        ToolMessage(tool_call_id="b", content="y"),
    ]
    system, messages = to_anthropic(context)
    assert [block["type"] for block in messages[1]["content"]] == ["tool_result", "tool_result", "text"]
    anthropic_request(system, messages)


def test_anthropic_blocks_pass_through_and_arguments_become_objects() -> None:
    """Native blocks (thinking, tool_use) pass; string arguments are parsed, broken ones kept as INVALID_JSON."""
    thinking = {"type": "thinking", "thinking": "hmm", "signature": "c2ln"}
    context: list[Any] = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": [thinking, {"type": "tool_use", "id": "t1", "name": "ls", "input": {}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]},
        AssistantMessage(
            tool_calls=[
                ToolCall(id="t2", name="ls", arguments='{"path": '),
                ToolCall(id="t3", name="ls", arguments=""),
            ]
        ),
        ToolMessage(tool_call_id="t2", content=""),
        ToolMessage(tool_call_id="t3", content="ok"),
    ]
    system, messages = to_anthropic(context)
    assert messages[1]["content"][0] is thinking
    assert [block["input"] for block in messages[3]["content"]] == [{"INVALID_JSON": '{"path": '}, {}]
    assert messages[4]["content"][0] == {"type": "tool_result", "tool_use_id": "t2"}  # no empty content
    anthropic_request(system, messages)


def test_anthropic_image_urls() -> None:
    """A web image becomes a url source; an image URL that is neither base64 data nor a web address raises."""
    system, messages = to_anthropic(
        [
            UserMessage(
                content=[
                    {"type": "image_url", "image_url": "https://example.com/a.png"},
                    {"type": "text", "text": ""},
                ]
            )
        ]
    )
    assert messages == [
        {
            "role": "user",
            "content": [{"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}],
        }
    ]
    anthropic_request(system, messages)
    for url in ("data:image/png,raw", "file:///a.png"):
        with pytest.raises(InvalidMessage, match="image"):
            to_anthropic([UserMessage(content=[{"type": "image_url", "image_url": {"url": url}}])])


# ---------------------------------------------------------------------------------------
# The checker itself
# ---------------------------------------------------------------------------------------


def test_the_type_check_catches_extra_keys_and_bad_nested_values() -> None:
    """conforms fails on a key the provider does not define and on a wrong value inside a list."""
    pytest.importorskip("openai")
    from openai.types.chat import ChatCompletionMessageParam

    conforms(ChatCompletionMessageParam, {"role": "tool", "tool_call_id": "a", "content": "ok"})
    with pytest.raises(AssertionError, match="drops or changes"):
        conforms(
            ChatCompletionMessageParam, {"role": "tool", "tool_call_id": "a", "content": "ok", "name": "ls"}
        )
    with pytest.raises(ValueError, match="function"):
        conforms(
            ChatCompletionMessageParam, {"role": "assistant", "tool_calls": [{"id": "a", "type": "function"}]}
        )
