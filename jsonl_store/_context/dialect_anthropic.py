"""The ``"anthropic"`` dialect: Anthropic Messages, ``tool_use`` blocks answered by ``tool_result`` blocks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._errors import InvalidArgument
from .dialect_neutral import (
    Call,
    call_part,
    chat_calls,
    neutral_answers,
    neutral_from_parts,
    neutral_parts,
    notice_message,
)
from .parts import (
    ImagePart,
    OtherPart,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    base64_of,
    content_item,
    result_content,
)

# ---------------------------------------------------------------------------------------
# anthropic: tool_use blocks, answered by tool_result blocks in the next user message
# ---------------------------------------------------------------------------------------


def _blocks(message: Any, role: str) -> list[Any] | None:
    """The content blocks of an Anthropic-shaped dict of ``role``, or None."""
    if isinstance(message, dict) and message.get("role") == role:
        content = message.get("content")
        if isinstance(content, list):
            return content
    return None


def _block_type(block: Any) -> Any:
    return block.get("type") if isinstance(block, dict) else None


class AnthropicDialect:
    """Anthropic Messages (``tool_use`` blocks, then ``tool_result`` blocks by ``tool_use_id``)."""

    def calls(self, message: Any) -> Sequence[Call]:
        blocks = _blocks(message, "assistant")
        uses = [(b.get("id"), b.get("name")) for b in blocks or () if _block_type(b) == "tool_use"]
        return uses or chat_calls(message)

    def answers(self, message: Any) -> Sequence[Any]:
        blocks = _blocks(message, "user")
        if blocks is not None:
            return [b.get("tool_use_id") for b in blocks if _block_type(b) == "tool_result"]
        return neutral_answers(message)

    def keep_answers(self, message: Any, keep: Sequence[bool]) -> Any | None:
        blocks = _blocks(message, "user")
        if blocks is None:
            return message if keep[0] else None
        flags = iter(keep)
        content = [b for b in blocks if _block_type(b) != "tool_result" or next(flags)]
        return {**message, "content": content} if content else None

    def joins(self, previous: Any, message: Any) -> bool:
        return False

    def notices(self, unanswered: Sequence[tuple[Any, Any, str | None]], notice: str) -> list[Any]:
        out: list[Any] = []
        blocks: list[Any] | None = None  # the tool_result blocks of the user message being built
        for caller, call_id, name in unanswered:
            if any(_block_type(b) == "tool_use" for b in _blocks(caller, "assistant") or ()):
                if blocks is None:
                    blocks = []
                    out.append({"role": "user", "content": blocks})
                blocks.append(
                    {"type": "tool_result", "tool_use_id": call_id, "content": notice, "is_error": True}
                )
            else:
                blocks = None
                out.append(notice_message(caller, call_id, name, notice))
        return out

    def parts(self, message: Any) -> list[Part]:
        """The blocks of a user or assistant message in order: ``text``, ``thinking`` (a
        ``redacted_thinking`` block is an empty `ReasoningPart`), an assistant's ``tool_use``,
        a user's ``tool_result``, ``image``; other blocks are `OtherPart`s. A message
        without a block list reads as neutral, as its tool batches do."""
        role = message.get("role") if isinstance(message, dict) else None
        if not isinstance(role, str) or role not in {"user", "assistant"}:
            return neutral_parts(message)
        blocks = _blocks(message, role)
        if blocks is None:
            return neutral_parts(message)
        out = [_anthropic_part(block, role) for block in blocks]
        if role == "assistant" and not any(isinstance(p, ToolCallPart) for p in out):
            # What `calls` reads when there is no tool_use block: neutral tool_calls.
            out.extend(call_part(call) for call in message.get("tool_calls") or ())
        return out

    def from_parts(self, parts: Sequence[Part], role: str) -> Any:
        """One Anthropic message of ``role`` whose content blocks hold ``parts`` in order."""
        if role not in ("user", "assistant"):
            return neutral_from_parts(parts, role)
        return {"role": role, "content": [_anthropic_block(p, role) for p in parts]}


def _anthropic_part(block: Any, role: str) -> Part:
    kind = _block_type(block)
    if kind == "text" and isinstance(block.get("text"), str):
        return TextPart(block["text"])
    if kind == "thinking":
        thinking = block.get("thinking")
        return ReasoningPart(thinking if isinstance(thinking, str) else "")
    if kind == "redacted_thinking":
        return ReasoningPart("")
    if kind == "tool_use" and role == "assistant":
        return ToolCallPart(block.get("id"), block.get("name"), block.get("input"))
    if kind == "tool_result" and role == "user":
        return ToolResultPart(
            block.get("tool_use_id"), result_content(block.get("content")), bool(block.get("is_error"))
        )
    return content_item(block)


def _anthropic_block(part: Part, role: str) -> Any:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if isinstance(part, ReasoningPart):
        return {"type": "thinking", "thinking": part.text}
    if isinstance(part, ToolCallPart) and role == "assistant":
        return {"type": "tool_use", "id": part.id, "name": part.name, "input": part.arguments}
    if isinstance(part, ToolResultPart) and role == "user":
        content = (
            part.content
            if isinstance(part.content, str)
            else [_anthropic_block(p, role) for p in part.content]
        )
        block = {"type": "tool_result", "tool_use_id": part.tool_call_id, "content": content}
        if part.is_error:
            block["is_error"] = True
        return block
    if isinstance(part, ImagePart):
        if part.data is not None:
            source = {"type": "base64", "media_type": part.media_type, "data": base64_of(part.data)}
        else:
            source = {"type": "url", "url": part.url}
        return {"type": "image", "source": source}
    if isinstance(part, OtherPart):
        return part.raw
    raise InvalidArgument(f"an Anthropic {role} message cannot hold a {part.kind} part")
