"""Properties of the provider request shapes: a repaired context is a valid request for every API.

Arbitrary session contexts (message classes and OpenAI chat dicts with the library's own
fields; text, parts and images; arguments as objects, JSON strings and broken JSON; tool
contents of every JSON kind; interrupted tool batches) are repaired, converted, and checked
against the provider's own request types (the ``providers`` extra; skipped without it),
against the rules those types cannot say, and against the target API's dialect: every
call is still answered exactly once, right after it.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from provider_types import anthropic_request, openai_chat, openai_responses

from jsonl_store import (
    AssistantMessage,
    CompactedMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
    is_provider_valid,
    repair_context,
    to_anthropic,
    to_openai_chat,
    to_openai_responses,
)

pytest.importorskip("openai")
pytest.importorskip("anthropic")

EXAMPLES = settings(max_examples=150, deadline=None)
IDS = ["call_a", "call_b", "toolu_c"]

texts = st.text(max_size=12)
library_fields = st.fixed_dictionaries(
    {}, optional={"id": st.just("m-1"), "persist": st.booleans(), "include_in_messages": st.just(True)}
)
parts = st.one_of(
    texts.map(lambda t: {"type": "text", "text": t}),
    st.sampled_from(["data:image/png;base64,iVBORw0KGgo=", "https://example.com/a.png"]).map(
        lambda url: {"type": "image_url", "image_url": {"url": url}}
    ),
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | texts,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(texts, inner, max_size=2),
    max_leaves=4,
)
arguments = st.one_of(
    st.dictionaries(texts, json_values, max_size=2),
    st.just(""),
    st.just('{"path": "."}'),
    st.just('{"path": '),
    st.just("[1]"),
)


@st.composite
def assistant(draw: st.DrawFn, ids: list[str]) -> Any:
    """An assistant message calling ``ids``, as a class or a chat dict."""
    content = draw(st.none() | texts | st.lists(parts.filter(lambda p: p["type"] == "text"), max_size=2))
    if draw(st.booleans()):
        calls = [ToolCall(id=i, name=f"tool_{i}", arguments=draw(arguments)) for i in ids]
        return AssistantMessage(content=content, reasoning=draw(st.none() | texts), tool_calls=calls)
    message: dict[str, Any] = {"role": "assistant", "content": content, **draw(library_fields)}
    if ids:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": f"tool_{i}", "arguments": "{}"}} for i in ids
        ]
    return message


@st.composite
def result(draw: st.DrawFn, call_id: str) -> Any:
    """A tool result for ``call_id``, as a class or a chat dict."""
    if draw(st.booleans()):
        return ToolMessage(
            tool_call_id=call_id, content=draw(json_values), is_error=draw(st.booleans()), name="t"
        )
    return {
        "role": "tool",
        "tool_call_id": call_id,
        "content": draw(texts),
        "name": "t",
        **draw(library_fields),
    }


@st.composite
def contexts(draw: st.DrawFn) -> list[Any]:
    """A session context: plain messages and tool batches whose results are whole, partial or wrong."""
    out: list[Any] = []
    for kind in draw(
        st.lists(st.sampled_from(["system", "compacted", "user", "user-dict", "batch", "say"]), max_size=8)
    ):
        if kind == "system":
            out.append(SystemMessage(content=draw(texts)))
        elif kind == "compacted":
            out.append(CompactedMessage(content=draw(texts)))
        elif kind == "user":
            out.append(UserMessage(content=draw(texts | st.lists(parts, max_size=3))))
        elif kind == "user-dict":
            out.append({"role": "user", "content": draw(texts), **draw(library_fields)})
        elif kind == "say":
            out.append(draw(assistant([])))
        else:
            ids = draw(st.lists(st.sampled_from(IDS), min_size=1, max_size=3, unique=True))
            out.append(draw(assistant(ids)))
            answered = draw(st.permutations(ids) | st.lists(st.sampled_from([*IDS, "zzz"]), max_size=3))
            out.extend(draw(result(i)) for i in answered)
    return out


@EXAMPLES
@given(contexts(), st.sampled_from(["drop", "close"]))
def test_a_repaired_context_is_a_valid_request_for_every_api(context: list[Any], policy: Any) -> None:
    """After repair_context, each shape passes the SDK's types and keeps every call answered right after it."""
    repaired = repair_context(context, mid_history=policy)
    chat = to_openai_chat(repaired)
    openai_chat(chat)
    assert is_provider_valid(chat)
    items = to_openai_responses(repaired)
    openai_responses(items)
    assert is_provider_valid(items, dialect="openai-responses")
    system, messages = to_anthropic(repaired)
    anthropic_request(system, messages)
    assert is_provider_valid(messages, dialect="anthropic")


@EXAMPLES
@given(contexts())
def test_every_call_and_result_survives_the_conversion(context: list[Any]) -> None:
    """The shapes only reshape: each call id and each result of the repaired context is in every one."""
    repaired = repair_context(context)
    calls = [
        call.id if isinstance(call, ToolCall) else call["id"] for m in repaired for call in _tool_calls(m)
    ]
    results = [
        m.tool_call_id if isinstance(m, ToolMessage) else m["tool_call_id"] for m in repaired if _is_tool(m)
    ]
    chat = to_openai_chat(repaired)
    assert [c["id"] for m in chat for c in m.get("tool_calls", [])] == calls
    assert [m["tool_call_id"] for m in chat if m["role"] == "tool"] == results
    items = to_openai_responses(repaired)
    assert [i["call_id"] for i in items if i.get("type") == "function_call"] == calls
    assert [i["call_id"] for i in items if i.get("type") == "function_call_output"] == results
    blocks = [b for m in to_anthropic(repaired)[1] for b in m["content"]]
    assert [b["id"] for b in blocks if b["type"] == "tool_use"] == calls
    assert sorted(b["tool_use_id"] for b in blocks if b["type"] == "tool_result") == sorted(results)


def _tool_calls(message: Any) -> list[Any]:
    return (
        list(message.tool_calls if isinstance(message, AssistantMessage) else message.get("tool_calls") or [])
        if _is_assistant(message)
        else []
    )


def _is_assistant(message: Any) -> bool:
    return isinstance(message, AssistantMessage) or (
        isinstance(message, dict) and message.get("role") == "assistant"
    )


def _is_tool(message: Any) -> bool:
    return isinstance(message, ToolMessage) or (isinstance(message, dict) and message.get("role") == "tool")
