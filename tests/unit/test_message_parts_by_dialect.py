"""`jsonl_store.message_parts`: each part kind in each built-in dialect, and every record of the real transcripts."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from jsonl_store import (
    AssistantMessage,
    ImagePart,
    OtherPart,
    Part,
    ReasoningPart,
    SessionStore,
    TextPart,
    ToolCall,
    ToolCallPart,
    ToolMessage,
    ToolResultPart,
    UserMessage,
    message_parts,
)
from jsonl_store.importers import import_claude_code, import_codex, import_pi

DATA = Path(__file__).parent.parent / "importers" / "data"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(64))
PNG64 = base64.b64encode(PNG).decode()


def test_the_neutral_dialect_maps_each_part_kind() -> None:
    """Library classes and chat dicts: reasoning, text, images, calls (JSON-string arguments decoded) and results."""
    call = ToolCall(id="c1", name="read", arguments={"path": "a.py"})
    assistant = AssistantMessage(content="Reading.", reasoning="first look", tool_calls=[call])
    assert message_parts(assistant) == [
        ReasoningPart("first look"),
        TextPart("Reading."),
        ToolCallPart("c1", "read", {"path": "a.py"}),
    ]
    user = UserMessage(
        content=[
            {"type": "text", "text": "see"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG64}"}},
            {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
            {"type": "input_audio", "input_audio": {"data": "AAAA"}},
        ]
    )
    assert message_parts(user) == [
        TextPart("see"),
        ImagePart("image/png", data=PNG),
        ImagePart(None, url="https://example.com/a.png"),
        OtherPart({"type": "input_audio", "input_audio": {"data": "AAAA"}}),
    ]
    assert message_parts(ToolMessage(tool_call_id="c1", content="boom", is_error=True)) == [
        ToolResultPart("c1", "boom", is_error=True)
    ]
    chat = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c2", "type": "function", "function": {"name": "ls", "arguments": '{"dir": "."}'}},
            {"id": "c3", "type": "function", "function": {"name": "ls", "arguments": '{"dir": '}},
        ],
    }
    assert message_parts(chat) == [
        ToolCallPart("c2", "ls", {"dir": "."}),
        ToolCallPart("c3", "ls", '{"dir": '),
    ]


def test_the_responses_dialect_maps_each_item_type() -> None:
    """Call, custom call (input kept as text), output, reasoning, message and a hosted tool's item."""
    items: list[tuple[dict[str, Any], list[Part]]] = [
        (
            {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": '{"cmd": ["ls"]}'},
            [ToolCallPart("c1", "shell", {"cmd": ["ls"]})],
        ),
        (
            {"type": "function_call", "call_id": "c2", "name": "shell", "arguments": "not json"},
            [ToolCallPart("c2", "shell", "not json")],
        ),
        (
            {"type": "custom_tool_call", "call_id": "c3", "name": "apply_patch", "input": "*** Begin Patch"},
            [ToolCallPart("c3", "apply_patch", "*** Begin Patch")],
        ),
        (
            {"type": "function_call_output", "call_id": "c1", "output": "a.txt"},
            [ToolResultPart("c1", "a.txt")],
        ),
        (
            {
                "type": "custom_tool_call_output",
                "call_id": "c3",
                "output": [{"type": "input_text", "text": "ok"}],
            },
            [ToolResultPart("c3", [TextPart("ok")])],
        ),
        (
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": "plan"}]},
            [ReasoningPart("plan")],
        ),
        (
            {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "look"},
                    {"type": "input_image", "image_url": f"data:image/png;base64,{PNG64}"},
                ],
            },
            [TextPart("look"), ImagePart("image/png", data=PNG)],
        ),
    ]
    for item, parts in items:
        assert message_parts(item, "openai-responses") == parts
    hosted = {"type": "web_search_call", "id": "w1", "action": {"query": "jsonl"}}
    assert message_parts(hosted, "openai-responses") == [OtherPart(hosted)]


def test_an_encrypted_reasoning_item_is_one_empty_reasoning_part() -> None:
    """A reasoning item with only ``encrypted_content`` (and an Anthropic ``redacted_thinking`` block) reads as empty reasoning."""
    item = {"type": "reasoning", "summary": [], "encrypted_content": "gAAAAB..."}
    assert message_parts(item, "openai-responses") == [ReasoningPart("")]
    redacted = {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "EqQBCgIYAh..."}]}
    assert message_parts(redacted, "anthropic") == [ReasoningPart("")]


def test_the_anthropic_dialect_maps_each_block_type() -> None:
    """Text, thinking, tool_use, tool_result (string or list, error marked), image (base64 or URL); an unknown block is an `OtherPart`."""
    assistant = {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "hmm", "signature": "sig"},
            {"type": "text", "text": "Reading."},
            {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/a"}},
            {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {"query": "x"}},
        ],
    }
    assert message_parts(assistant, "anthropic") == [
        ReasoningPart("hmm"),
        TextPart("Reading."),
        ToolCallPart("t1", "Read", {"file_path": "/a"}),
        OtherPart(assistant["content"][3]),
    ]
    user = {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "text", "is_error": True},
            {"type": "tool_result", "tool_use_id": "t2", "content": [{"type": "text", "text": "listed"}]},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG64}},
            {"type": "image", "source": {"type": "url", "url": "https://example.com/b.png"}},
            {"type": "text", "text": "and this"},
        ],
    }
    assert message_parts(user, "anthropic") == [
        ToolResultPart("t1", "text", is_error=True),
        ToolResultPart("t2", [TextPart("listed")]),
        ImagePart("image/png", data=PNG),
        ImagePart(None, url="https://example.com/b.png"),
        TextPart("and this"),
    ]


def test_an_image_spilled_to_a_blob_reads_back_as_its_bytes(tmp_path: Path) -> None:
    """A base64 image over the blob threshold is kept in blobs/, and its part holds the decoded bytes."""
    image = bytes(range(256)) * 64
    block = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": base64.b64encode(image).decode()},
    }
    with SessionStore(tmp_path, durability="none", blob_threshold=1024) as store:
        store.create_session("s", metadata={"dialect": "anthropic"})
        store.append("s", {"role": "user", "content": [block, {"type": "text", "text": "what is this?"}]})
        assert any((tmp_path / "s" / "blobs").iterdir())
        view = store.load("s")
        (record,) = view.raw_tail
        assert view.parts(record) == [ImagePart("image/png", data=image), TextPart("what is this?")]


# ---------------------------------------------------------------------------------------
# Every record of the real transcripts: parts, none dropped, each of the right kind
# ---------------------------------------------------------------------------------------

#: The part kind each stored block or item type reads as; anything else is ``other``.
ANTHROPIC_KINDS = {
    "text": "text",
    "thinking": "reasoning",
    "redacted_thinking": "reasoning",
    "tool_use": "tool_call",
    "tool_result": "tool_result",
    "image": "image",
}
RESPONSES_KINDS = {
    "function_call": "tool_call",
    "custom_tool_call": "tool_call",
    "function_call_output": "tool_result",
    "custom_tool_call_output": "tool_result",
}
CONTENT_KINDS = {
    "text": "text",
    "input_text": "text",
    "output_text": "text",
    "input_image": "image",
    "image_url": "image",
}


def content_kinds(content: Any) -> list[str]:
    """The part kinds a ``content`` value reads as: one per list item, one for a non-empty string."""
    if isinstance(content, list):
        return [item_kind(item) for item in content]
    return ["text"] if content else []


def block_kind(block: Any) -> str:
    if not isinstance(block, dict):
        return "text" if isinstance(block, str) else "other"
    source = block.get("source")
    if block.get("type") == "image" and isinstance(source, dict) and source.get("type") == "base64":
        try:
            base64.b64decode(source.get("data", ""), validate=True)
        except ValueError:
            return "other"  # no base64 (a trimmed fixture): kept, as stored
    return ANTHROPIC_KINDS.get(str(block.get("type")), "other")


def item_kind(item: Any) -> str:
    if not isinstance(item, dict):
        return "text" if isinstance(item, str) else "other"
    if item.get("type") == "input_image" and not isinstance(item.get("image_url"), str):
        return "other"  # an image with no URL (a trimmed fixture): kept, as stored
    return CONTENT_KINDS.get(str(item.get("type")), "other")


def expected_kinds(message: Any, dialect: str) -> list[str]:
    """The kinds of ``message``'s parts, read from the stored shape by this test's own rules."""
    if not isinstance(message, dict):
        return [part.kind for part in message_parts(message)]  # library classes: tested above
    role, content, kind = message.get("role"), message.get("content"), message.get("type")
    if dialect == "anthropic" and role in ("user", "assistant") and isinstance(content, list):
        return [block_kind(block) for block in content]
    if dialect == "openai-responses" and kind is not None:
        if kind in RESPONSES_KINDS:
            return [RESPONSES_KINDS[kind]]
        if kind == "reasoning":
            texts = [e for key in ("summary", "content") for e in message.get(key) or () if "text" in e]
            return ["reasoning"] * max(1, len(texts))
        return content_kinds(content) if kind == "message" else ["other"]
    if role == "tool":
        return ["tool_result"]
    calls = ["tool_call"] * len(message.get("tool_calls") or ())
    return (["reasoning"] if message.get("reasoning") else []) + content_kinds(content) + calls


@pytest.fixture(scope="module")
def transcripts(tmp_path_factory: pytest.TempPathFactory) -> SessionStore:
    """Every shared transcript imported into one store."""
    store = SessionStore(tmp_path_factory.mktemp("parts-real"), durability="none")
    import_claude_code(store, DATA / "claude-code")
    import_codex(store, DATA / "codex")
    import_pi(store, DATA / "pi")
    return store


def test_every_record_of_every_real_transcript_reads_as_parts_with_nothing_dropped(
    transcripts: SessionStore,
) -> None:
    """Each stored block or item of every imported record is exactly one part of the kind its type says."""
    checked = 0
    dialects = set()
    for summary in transcripts.list_sessions():
        dialects.add(summary.dialect)
        for record in transcripts.records(summary.session_id):
            parts = message_parts(record.message, summary.dialect)
            where = (summary.session_id, record.sequence)
            assert [part.kind for part in parts] == expected_kinds(record.message, summary.dialect), where
            checked += 1
    assert dialects == {"anthropic", "openai-responses", "neutral"}
    assert checked > 700
