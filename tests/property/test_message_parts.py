"""The message model's two promises, for every built-in dialect (docs/guides/message-model.md).

1. Parts → the dialect's own shape (``from_parts``) → parts is stable: the mapping loses
   nothing a part says.
2. The calls and results a message's parts name are the ones tool-batch repair reads
   (``calls``/``answers``): one source of truth for what a message calls and answers.

Messages are generated in each dialect's own shape: the neutral dialect's library classes
and OpenAI chat dicts, Responses API items, Anthropic content blocks.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any

from helpers import examples
from hypothesis import example, given, settings
from hypothesis import strategies as st

from jsonl_store import (
    AssistantMessage,
    OtherPart,
    SystemMessage,
    ToolCall,
    ToolCallPart,
    ToolMessage,
    ToolResultPart,
    UserMessage,
    message_parts,
    register_dialect,
)
from jsonl_store._context.dialect_neutral import NEUTRAL, Call
from jsonl_store._context.dialects import resolve

TEXT = st.text(max_size=8)
IDS = st.text("abc123_-", min_size=1, max_size=6)
NAMES = st.text("abcdefgh_", min_size=1, max_size=6)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=6,
)
IMAGE = st.binary(max_size=12)
#: Arguments as a dialect that keeps a JSON string may hold them: valid JSON (as a model
#: writes it) or not (a truncated stream).
ARGUMENT_TEXT = st.one_of(JSON.map(json.dumps), TEXT)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def role_of(message: Any) -> str:
    return message["role"] if isinstance(message, dict) else str(message.role)


# ---------------------------------------------------------------------------------------
# neutral: library classes and OpenAI chat dicts
# ---------------------------------------------------------------------------------------

CHAT_ITEMS = st.one_of(
    TEXT.map(lambda text: {"type": "text", "text": text}),
    IMAGE.map(lambda data: {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b64(data)}"}}),
    NAMES.map(lambda name: {"type": "image_url", "image_url": {"url": f"https://example.com/{name}.png"}}),
    st.fixed_dictionaries(
        {"type": st.just("input_audio"), "input_audio": st.fixed_dictionaries({"data": TEXT})}
    ),
)
CHAT_CONTENT = TEXT | st.lists(CHAT_ITEMS, max_size=3)


@st.composite
def neutral_messages(draw: st.DrawFn) -> Any:
    kind = draw(
        st.sampled_from(["system", "user", "assistant", "tool", "chat-user", "chat-assistant", "chat-tool"])
    )
    if kind == "system":
        return SystemMessage(content=draw(TEXT))
    if kind == "user":
        return UserMessage(content=draw(CHAT_CONTENT))
    if kind == "assistant":
        calls = draw(st.lists(st.builds(ToolCall, id=IDS, name=NAMES, arguments=JSON), max_size=2))
        content = draw(st.none() | CHAT_CONTENT)
        return AssistantMessage(content=content, reasoning=draw(st.none() | TEXT), tool_calls=calls)
    if kind == "tool":
        content = draw(TEXT | st.lists(CHAT_ITEMS, max_size=2))
        return ToolMessage(tool_call_id=draw(IDS), content=content, is_error=draw(st.booleans()))
    if kind == "chat-user":
        return {"role": "user", "content": draw(CHAT_CONTENT)}
    if kind == "chat-assistant":
        chat_calls = [
            {
                "id": draw(IDS),
                "type": "function",
                "function": {"name": draw(NAMES), "arguments": draw(ARGUMENT_TEXT)},
            }
            for _ in range(draw(st.integers(0, 2)))
        ]
        message: dict[str, Any] = {"role": "assistant", "content": draw(st.none() | TEXT)}
        if chat_calls:
            message["tool_calls"] = chat_calls
        return message
    return {
        "role": "tool",
        "tool_call_id": draw(IDS),
        "content": draw(TEXT | st.lists(CHAT_ITEMS, max_size=2)),
    }


# ---------------------------------------------------------------------------------------
# openai-responses: one item per call, output, reasoning or message
# ---------------------------------------------------------------------------------------

RESPONSES_ITEMS = st.one_of(
    TEXT.map(lambda text: {"type": "input_text", "text": text}),
    IMAGE.map(lambda data: {"type": "input_image", "image_url": f"data:image/jpeg;base64,{b64(data)}"}),
)


@st.composite
def responses_items(draw: st.DrawFn) -> Any:
    kind = draw(
        st.sampled_from(
            ["function_call", "custom_tool_call", "output", "reasoning", "message", "web_search_call"]
        )
    )
    call_id = draw(IDS)
    if kind == "function_call":
        arguments = draw(ARGUMENT_TEXT)
        return {
            "type": kind,
            "role": "assistant",
            "call_id": call_id,
            "name": draw(NAMES),
            "arguments": arguments,
        }
    if kind == "custom_tool_call":
        return {
            "type": kind,
            "role": "assistant",
            "call_id": call_id,
            "name": draw(NAMES),
            "input": draw(TEXT),
        }
    if kind == "output":
        output = draw(TEXT | st.lists(RESPONSES_ITEMS, max_size=2) | RESPONSES_ITEMS)
        kind = draw(st.sampled_from(["function_call_output", "custom_tool_call_output"]))
        return {"type": kind, "role": "tool", "call_id": call_id, "output": output}
    if kind == "reasoning":
        summary = [{"type": "summary_text", "text": t} for t in draw(st.lists(TEXT, max_size=2))]
        item: dict[str, Any] = {"type": "reasoning", "role": "assistant", "summary": summary}
        if draw(st.booleans()):
            item["encrypted_content"] = draw(TEXT)
        return item
    if kind == "message":
        role = draw(st.sampled_from(["user", "assistant", "system", "developer"]))
        text_type = "output_text" if role == "assistant" else "input_text"
        content = [{"type": text_type, "text": t} for t in draw(st.lists(TEXT, max_size=2))]
        if role == "assistant" and draw(st.booleans()):
            content.append({"type": "refusal", "refusal": draw(TEXT)})
        return {"type": "message", "role": role, "content": content}
    return {"type": kind, "role": "assistant", "id": call_id, "action": {"query": draw(TEXT)}}


# ---------------------------------------------------------------------------------------
# anthropic: content blocks
# ---------------------------------------------------------------------------------------

ANTHROPIC_MEDIA = st.one_of(
    TEXT.map(lambda text: {"type": "text", "text": text}),
    IMAGE.map(
        lambda data: {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": b64(data)},
        }
    ),
    NAMES.map(
        lambda name: {"type": "image", "source": {"type": "url", "url": f"https://example.com/{name}"}}
    ),
    TEXT.map(lambda text: {"type": "document", "source": {"type": "text", "data": text}}),
)


@st.composite
def anthropic_messages(draw: st.DrawFn) -> Any:
    role = draw(st.sampled_from(["user", "assistant"]))
    if draw(st.booleans()):
        return {"role": role, "content": draw(TEXT)}
    shared = [ANTHROPIC_MEDIA]
    if role == "assistant":
        blocks = st.one_of(
            *shared,
            st.builds(lambda t, s: {"type": "thinking", "thinking": t, "signature": s}, TEXT, TEXT),
            TEXT.map(lambda data: {"type": "redacted_thinking", "data": data}),
            st.builds(lambda i, n, a: {"type": "tool_use", "id": i, "name": n, "input": a}, IDS, NAMES, JSON),
        )
    else:
        result = st.builds(
            lambda i, c, e: {"type": "tool_result", "tool_use_id": i, "content": c, "is_error": e},
            IDS,
            TEXT | st.lists(ANTHROPIC_MEDIA, max_size=2),
            st.booleans(),
        )
        blocks = st.one_of(*shared, result)
    return {"role": role, "content": draw(st.lists(blocks, max_size=4))}


#: Each dialect with messages of its own shape.
OWN_SHAPES = st.one_of(
    st.tuples(st.just("neutral"), neutral_messages()),
    st.tuples(st.just("openai-responses"), responses_items()),
    st.tuples(st.just("anthropic"), anthropic_messages()),
)
#: Every dialect also reads the neutral shape (its tool batches too): what ``from_parts``
#: builds is the dialect's own shape, so only the calls and results are compared for these.
ALL_SHAPES = OWN_SHAPES | st.tuples(st.sampled_from(["openai-responses", "anthropic"]), neutral_messages())


@given(case=OWN_SHAPES)
# One empty text item is a part of its own, not the empty content a bare "" is.
@example(("neutral", {"role": "user", "content": [{"type": "text", "text": ""}]}))
@settings(max_examples=examples(400))
def test_parts_to_the_dialects_shape_and_back_are_the_same_parts(case: tuple[str, Any]) -> None:
    """For every built-in dialect: parts(from_parts(parts(m), role)) == parts(m)."""
    name, message = case
    dialect: Any = resolve(name)
    parts = message_parts(message, name)
    rebuilt = dialect.from_parts(parts, role_of(message))
    assert message_parts(rebuilt, name) == parts


@given(case=ALL_SHAPES)
@settings(max_examples=examples(400))
def test_the_calls_and_results_of_the_parts_are_the_ones_repair_reads(case: tuple[str, Any]) -> None:
    """The parts' tool calls are the dialect's ``calls``; for a message without calls, its results are ``answers``."""
    name, message = case
    dialect = resolve(name)
    parts = message_parts(message, name)
    calls = [(p.id, p.name) for p in parts if isinstance(p, ToolCallPart)]
    assert calls == list(dialect.calls(message))
    if not calls:
        assert [p.tool_call_id for p in parts if isinstance(p, ToolResultPart)] == list(
            dialect.answers(message)
        )


# ---------------------------------------------------------------------------------------
# A dialect registered without ``parts`` gets them; one with ``parts`` uses its own
# ---------------------------------------------------------------------------------------


class Delegating:
    """Neutral's tool-batch rules without a ``parts`` method."""

    def calls(self, message: Any) -> Sequence[Call]:
        return NEUTRAL.calls(message)

    def answers(self, message: Any) -> Sequence[Any]:
        return NEUTRAL.answers(message)

    def keep_answers(self, message: Any, keep: Sequence[bool]) -> Any | None:
        return NEUTRAL.keep_answers(message, keep)

    def joins(self, previous: Any, message: Any) -> bool:
        return False

    def notices(self, unanswered: Sequence[tuple[Any, Any, str | None]], notice: str) -> list[Any]:
        return NEUTRAL.notices(unanswered, notice)


class OwnKeys(Delegating):
    """Calls kept under a key of its own (``{"role": "assistant", "invoke": [[id, name], ...]}``)."""

    def calls(self, message: Any) -> Sequence[Call]:
        return [(i, n) for i, n in message.get("invoke") or ()] if isinstance(message, dict) else []


class WithParts(Delegating):
    """A dialect that maps its messages itself."""

    def parts(self, message: Any) -> list[Any]:
        return [OtherPart({"mine": message.get("role") if isinstance(message, dict) else None})]


register_dialect("test-delegating", Delegating())
register_dialect("test-own-keys", OwnKeys())
register_dialect("test-with-parts", WithParts())


@given(message=neutral_messages())
@settings(max_examples=examples(200))
def test_a_dialect_registered_without_parts_reads_as_neutral_where_its_rules_agree(message: Any) -> None:
    """Without ``parts``, a dialect whose calls and answers are neutral's reads every message as neutral does."""
    assert message_parts(message, "test-delegating") == message_parts(message, "neutral")


@given(calls=st.lists(st.tuples(IDS, NAMES), min_size=1, max_size=3), text=TEXT)
@settings(max_examples=examples(100))
def test_a_dialect_registered_without_parts_names_the_calls_its_own_rules_read(
    calls: list[tuple[str, str]], text: str
) -> None:
    """Where its ``calls`` read what neutral parts do not, the message is one `OtherPart` and a call part per call."""
    message = {"role": "assistant", "content": text, "invoke": [list(call) for call in calls]}
    parts = message_parts(message, "test-own-keys")
    assert parts[0] == OtherPart(message)
    assert [(p.id, p.name) for p in parts if isinstance(p, ToolCallPart)] == calls
    assert parts[1:] == [ToolCallPart(i, n) for i, n in calls]


@given(message=neutral_messages() | anthropic_messages())
@settings(max_examples=examples(50))
def test_a_dialect_registered_with_parts_is_read_by_its_own(message: Any) -> None:
    """A registered dialect's own ``parts`` method is what `message_parts` gives."""
    role = message.get("role") if isinstance(message, dict) else None
    assert message_parts(message, "test-with-parts") == [OtherPart({"mine": role})]
