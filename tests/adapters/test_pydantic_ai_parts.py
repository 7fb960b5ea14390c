"""pydantic-ai messages in the message model, with the real pydantic-ai (skipped without the extra).

Stored pydantic-ai messages (``format: "pydantic-ai"``, written by the adapter's codec) read
through `jsonl_store.message_parts`; `PYDANTIC_AI` maps the message objects the same way,
round-trips them (``from_parts``) and agrees with its own tool-batch rules.
"""

from __future__ import annotations

import json
import warnings
from typing import Any

import pytest

pytest.importorskip("pydantic_ai", reason='needs the extra: pip install -e ".[pydantic-ai]"')

from helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_ai import messages as pai

import jsonl_store as js
from jsonl_store.adapters._pydantic_ai_codec import PYDANTIC_AI, encode, role

TEXT = st.text(max_size=8)
IDS = st.text("abc123_-", min_size=1, max_size=6)
NAMES = st.text("abcdefgh_", min_size=1, max_size=6)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=6,
)
OUTCOMES = st.sampled_from(["success", "failed", "denied", "interrupted", "retried"])


def retry(content: str, tool_name: str | None, tool_call_id: str) -> pai.RetryPromptPart:
    """A ``RetryPromptPart``, which pydantic-ai 2 deprecates but still reads and writes."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pai.RetryPromptPart(content=content, tool_name=tool_name, tool_call_id=tool_call_id)


USER_ITEMS = st.one_of(
    TEXT,
    NAMES.map(lambda name: pai.ImageUrl(url=f"https://example.com/{name}.png")),
    st.binary(max_size=8).map(lambda data: pai.BinaryContent(data=data, media_type="image/png")),
    st.binary(max_size=8).map(lambda data: pai.BinaryContent(data=data, media_type="audio/wav")),
)
REQUEST_PARTS = st.one_of(
    TEXT.map(lambda text: pai.SystemPromptPart(content=text)),
    (TEXT | st.lists(USER_ITEMS, max_size=3)).map(lambda content: pai.UserPromptPart(content=content)),
    st.builds(
        lambda name, content, call_id, outcome: pai.ToolReturnPart(
            tool_name=name, content=content, tool_call_id=call_id, outcome=outcome
        ),
        NAMES,
        TEXT | JSON,
        IDS,
        OUTCOMES,
    ),
    st.builds(retry, TEXT, NAMES | st.none(), IDS),
)
RESPONSE_PARTS = st.one_of(
    TEXT.map(lambda text: pai.TextPart(content=text)),
    TEXT.map(lambda text: pai.ThinkingPart(content=text)),
    st.builds(
        lambda name, args, call_id: pai.ToolCallPart(tool_name=name, args=args, tool_call_id=call_id),
        NAMES,
        st.none() | st.dictionaries(NAMES, JSON, max_size=3) | JSON.map(json.dumps),
        IDS,
    ),
)
MESSAGES = st.one_of(
    st.lists(REQUEST_PARTS, min_size=1, max_size=4).map(lambda parts: pai.ModelRequest(parts=parts)),
    st.lists(RESPONSE_PARTS, min_size=1, max_size=4).map(lambda parts: pai.ModelResponse(parts=parts)),
)


@given(message=MESSAGES)
@settings(max_examples=examples(200))
def test_a_pydantic_ai_message_and_its_record_give_the_same_parts(message: Any) -> None:
    """`PYDANTIC_AI.parts` of a message object is `message_parts` of the dict the codec stores it as."""
    assert PYDANTIC_AI.parts(message) == js.message_parts(encode([message])[0])


@given(message=MESSAGES)
@settings(max_examples=examples(200))
def test_parts_to_a_pydantic_ai_message_and_back_are_the_same_parts(message: Any) -> None:
    """parts(from_parts(parts(m), role)) == parts(m), over real pydantic-ai messages."""
    parts = PYDANTIC_AI.parts(message)
    rebuilt = PYDANTIC_AI.from_parts(parts, role(message))
    assert isinstance(rebuilt, type(message))
    assert PYDANTIC_AI.parts(rebuilt) == parts


@given(message=MESSAGES)
@settings(max_examples=examples(200))
def test_the_calls_and_results_of_the_parts_are_the_ones_repair_reads(message: Any) -> None:
    """The parts' calls are `PYDANTIC_AI.calls`; a request's results are its ``answers``."""
    parts = js.message_parts(message, PYDANTIC_AI)
    calls = [(p.id, p.name) for p in parts if isinstance(p, js.ToolCallPart)]
    assert calls == list(PYDANTIC_AI.calls(message))
    if not calls:
        assert [p.tool_call_id for p in parts if isinstance(p, js.ToolResultPart)] == list(
            PYDANTIC_AI.answers(message)
        )


def test_each_pydantic_ai_part_kind_maps_to_its_part() -> None:
    """Prompts are text, thinking reasoning, calls with decoded args, returns results (failed ones errors), images images, audio other."""
    request = pai.ModelRequest(
        parts=[
            pai.SystemPromptPart(content="be brief"),
            pai.UserPromptPart(
                content=[
                    "look",
                    pai.ImageUrl(url="https://example.com/a.png"),
                    pai.BinaryContent(data=b"\x89PNG", media_type="image/png"),
                    pai.BinaryContent(data=b"RIFF", media_type="audio/wav"),
                ]
            ),
            pai.ToolReturnPart(tool_name="ls", content="a.txt", tool_call_id="c1"),
            pai.ToolReturnPart(tool_name="rm", content="no", tool_call_id="c2", outcome="denied"),
        ]
    )
    response = pai.ModelResponse(
        parts=[
            pai.ThinkingPart(content="hmm"),
            pai.TextPart(content="done"),
            pai.ToolCallPart(tool_name="ls", args='{"path": "."}', tool_call_id="c3"),
        ]
    )
    stored_request, stored_response = encode([request, response])
    parts = js.message_parts(stored_request)
    assert parts[:4] == [
        js.TextPart("be brief"),
        js.TextPart("look"),
        js.ImagePart("image/png", url="https://example.com/a.png"),
        js.ImagePart("image/png", data=b"\x89PNG"),
    ]
    assert isinstance(parts[4], js.OtherPart) and parts[4].raw["media_type"] == "audio/wav"
    assert parts[5:] == [js.ToolResultPart("c1", "a.txt"), js.ToolResultPart("c2", "no", is_error=True)]
    assert js.message_parts(stored_response) == [
        js.ReasoningPart("hmm"),
        js.TextPart("done"),
        js.ToolCallPart("c3", "ls", {"path": "."}),
    ]
    assert js.message_parts(response, PYDANTIC_AI) == js.message_parts(stored_response)
