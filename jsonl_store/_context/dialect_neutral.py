"""The `Dialect` protocol and the ``"neutral"`` dialect the others build on.

``"neutral"`` reads this library's message classes and OpenAI chat dicts (``tool_calls`` on an
assistant message, one ``role: "tool"`` message per result, by ``tool_call_id``). Every dialect
also reads what it reads, and pydantic-ai's messages as its adapters store them; the registry
and the rules every dialect follows are in `_context.dialects`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from .._errors import InvalidArgument
from .._format.records import AssistantMessage, ToolMessage, _Message
from .parts import (
    ImagePart,
    OtherPart,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    chat_item,
    content_parts,
    decode_arguments,
    encode_arguments,
    image_from_base64,
    result_content,
)

#: ``(call id, tool name)`` of one tool call; the name is None when the message has none.
Call = tuple[Any, str | None]


@runtime_checkable
class Dialect(Protocol):
    """What tool-batch repair needs to know about a message format (docs/guides/message-model.md, "Dialects").

    A *batch* is a run of messages that make calls (one message, unless `joins` links the
    next ones to it) plus the run of messages right after it that carry results. None of
    the methods may change the message it is given.
    """

    def calls(self, message: Any) -> Sequence[Call]:
        """The ``(call id, tool name)`` of each tool call ``message`` makes, in order; empty for none."""
        ...

    def answers(self, message: Any) -> Sequence[Any]:
        """The call id each tool result in ``message`` answers, in order; empty for none.

        Asked only of messages that make no call.
        """
        ...

    def keep_answers(self, message: Any, keep: Sequence[bool]) -> Any | None:
        """``message`` with only the results whose flag in ``keep`` is True, or None if nothing is left.

        ``keep`` has one flag per entry of ``answers(message)``, at least one of them False.
        Content that is no tool result stays (a user's text beside Anthropic results).
        """
        ...

    def joins(self, previous: Any, message: Any) -> bool:
        """True when ``message``, right after ``previous``, belongs to the same batch's calls.

        A run of joined messages is cut back to end at a message that makes calls.
        """
        ...

    def notices(self, unanswered: Sequence[tuple[Any, Any, str | None]], notice: str) -> list[Any]:
        """New messages with an error result saying ``notice`` for each unanswered call.

        Each entry is ``(the message that made the call, call id, tool name)``, in call
        order. The messages go right after the batch's results, in the order returned.
        """
        ...


# ---------------------------------------------------------------------------------------
# neutral: this library's classes and OpenAI chat dicts
# ---------------------------------------------------------------------------------------


_NONE: Sequence[Any] = ()


def chat_calls(message: Any) -> Sequence[Call]:
    """The ``(id, name)`` of each tool call an assistant message made; empty for other roles."""
    if isinstance(message, AssistantMessage):
        return [(call.id, call.name) for call in message.tool_calls]
    if isinstance(message, dict) and message.get("role") == "assistant":
        # A call is OpenAI-shaped ({"id", "type", "function": {"name", ...}}) or flat.
        return [
            (call["id"], call.get("name") or (call.get("function") or {}).get("name"))
            for call in message.get("tool_calls") or ()
        ]
    return _NONE


def _is_result(message: Any) -> bool:
    """True for a tool result."""
    if isinstance(message, dict):
        return message.get("role") == "tool"
    return isinstance(message, ToolMessage)


def _answers(result: Any) -> Any:
    """The call id a tool result answers (None for a dict that names none)."""
    if isinstance(result, dict):
        return result.get("tool_call_id")
    assert isinstance(result, ToolMessage)
    return result.tool_call_id


def neutral_answers(message: Any) -> Sequence[Any]:
    """``[the call id]`` for a tool result, empty for anything else."""
    if isinstance(message, ToolMessage):
        return [message.tool_call_id]
    if isinstance(message, dict) and message.get("role") == "tool":
        return [message.get("tool_call_id")]
    return _NONE


def notice_message(assistant: Any, call_id: Any, name: str | None, notice: str) -> Any:
    """An error result for one unanswered call, of the same kind as the assistant message."""
    if isinstance(assistant, dict):
        result: dict[str, Any] = {"role": "tool", "tool_call_id": call_id, "content": notice}
        if name is not None:
            result["name"] = name
        return result
    return ToolMessage(tool_call_id=call_id, name=name, content=notice, is_error=True)


def call_part(call: Any) -> Part:
    """One entry of ``tool_calls``: a `ToolCall`, an OpenAI chat call or a flat dict."""
    if isinstance(call, dict):
        function = call.get("function")
        inner = function if isinstance(function, dict) else call
        return ToolCallPart(
            call.get("id"), call.get("name") or inner.get("name"), decode_arguments(inner.get("arguments"))
        )
    return ToolCallPart(call.id, call.name, decode_arguments(call.arguments))


def neutral_parts(message: Any) -> list[Part]:
    """The parts of a message in the neutral shape: a library class or an OpenAI chat dict.

    An assistant message is its reasoning, then its content, then its calls; a tool result
    is one `ToolResultPart`; any other role is its content. A stored pydantic-ai message
    (``format: "pydantic-ai"``, as the pydantic-ai adapters write them) is read by its own
    parts. A value that is neither a dict nor a library class is one `OtherPart`.
    """
    if isinstance(message, _Message):
        return _class_parts(message)
    if not isinstance(message, dict):
        return [OtherPart(message)]
    if message.get("format") == "pydantic-ai" and isinstance(message.get("content"), dict):
        return pydantic_ai_parts(message["content"])
    role = message.get("role")
    if role == "tool":
        content = result_content(message.get("content"))
        return [ToolResultPart(message.get("tool_call_id"), content, bool(message.get("is_error")))]
    out: list[Part] = []
    reasoning = message.get("reasoning")
    if isinstance(reasoning, str) and reasoning:
        out.append(ReasoningPart(reasoning))
    out.extend(content_parts(message.get("content")))
    if role == "assistant":
        out.extend(call_part(call) for call in message.get("tool_calls") or ())
    return out


def _class_parts(message: _Message) -> list[Part]:
    if isinstance(message, ToolMessage):
        return [ToolResultPart(message.tool_call_id, result_content(message.content), message.is_error)]
    if isinstance(message, AssistantMessage):
        out: list[Part] = [ReasoningPart(message.reasoning)] if message.reasoning else []
        out.extend(content_parts(message.content))
        out.extend(call_part(call) for call in message.tool_calls)
        return out
    return content_parts(getattr(message, "content", None))


def neutral_from_parts(parts: Sequence[Part], role: str) -> dict[str, Any]:
    """One OpenAI-chat-shaped dict of ``role`` holding ``parts`` (what `neutral_parts` reads back).

    Raises `InvalidArgument` for parts one such message cannot hold (two reasoning texts,
    a tool result beside anything else, a call outside an assistant message).
    """
    if role == "tool":
        if len(parts) != 1 or not isinstance(parts[0], ToolResultPart):
            raise InvalidArgument("a neutral tool message holds exactly one tool result")
        result = parts[0]
        message: dict[str, Any] = {
            "role": "tool",
            "tool_call_id": result.tool_call_id,
            "content": _chat_result(result),
        }
        if result.is_error:
            message["is_error"] = True
        return message
    message = {"role": role}
    reasoning = [p for p in parts if isinstance(p, ReasoningPart)]
    calls = [p for p in parts if isinstance(p, ToolCallPart)]
    content = [p for p in parts if not isinstance(p, (ReasoningPart, ToolCallPart))]
    if len(reasoning) > 1 or (reasoning and not reasoning[0].text) or (calls and role != "assistant"):
        raise InvalidArgument(f"a neutral {role} message cannot hold these parts")
    if reasoning:
        message["reasoning"] = reasoning[0].text
    if len(content) == 1 and isinstance(content[0], TextPart) and content[0].text:
        # One non-empty text is the plain string; an empty one stays an item, since
        # content "" reads as no part at all (`content_parts`).
        message["content"] = content[0].text
    elif content:
        message["content"] = [chat_item(p) for p in content]
    if calls:
        message["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": encode_arguments(c.arguments)},
            }
            for c in calls
        ]
    return message


def _chat_result(result: ToolResultPart) -> Any:
    if isinstance(result.content, str):
        return result.content
    return [chat_item(p) for p in result.content]


# ---------------------------------------------------------------------------------------
# pydantic-ai's messages as its adapters store them (read by every dialect)
# ---------------------------------------------------------------------------------------


def pydantic_ai_parts(content: dict[str, Any]) -> list[Part]:
    """The parts of a pydantic-ai ``ModelRequest``/``ModelResponse`` in pydantic-ai's JSON form.

    The part kinds are pydantic-ai's (``pydantic_ai.messages``, https://ai.pydantic.dev/api/messages/):
    a request's system and user prompts are text, its tool returns results, a retry prompt
    for a tool an error result; a response's text, thinking and tool calls map one to one.
    Built-in (provider-run) tool parts and files are `OtherPart`s.
    """
    out: list[Part] = []
    for part in content.get("parts") or ():
        out.extend(_pydantic_ai_part(part))
    return out


def _pydantic_ai_part(part: Any) -> list[Part]:
    kind = part.get("part_kind") if isinstance(part, dict) else None
    if kind in ("system-prompt", "text") and isinstance(part.get("content"), str):
        return [TextPart(part["content"])]
    if kind == "user-prompt":
        body = part.get("content")
        return [_pydantic_ai_item(item) for item in (body if isinstance(body, list) else [body])]
    if kind == "thinking":
        return [ReasoningPart(part.get("content") or "")]
    if kind == "tool-call":
        return [
            ToolCallPart(part.get("tool_call_id"), part.get("tool_name"), decode_arguments(part.get("args")))
        ]
    if kind == "tool-return":
        # pydantic-ai 2 marks a return that is no success by its outcome ("failed",
        # "denied", "retried", "interrupted": pydantic_ai.messages.ToolReturnPart).
        failed = part.get("outcome") not in (None, "success")
        return [ToolResultPart(part.get("tool_call_id"), result_content(part.get("content")), failed)]
    if kind == "retry-prompt" and part.get("tool_name") is not None:
        return [ToolResultPart(part.get("tool_call_id"), result_content(part.get("content")), True)]
    if kind == "retry-prompt" and isinstance(part.get("content"), str):
        return [TextPart(part["content"])]
    return [OtherPart(part)]


def _pydantic_ai_item(item: Any) -> Part:
    if isinstance(item, str):
        return TextPart(item)
    kind = item.get("kind") if isinstance(item, dict) else None
    if kind == "image-url" and isinstance(item.get("url"), str):
        return ImagePart(item.get("media_type"), url=item["url"])
    if kind == "binary" and str(item.get("media_type", "")).startswith("image/"):
        return image_from_base64(item.get("media_type"), item.get("data"), item)
    return OtherPart(item)


class NeutralDialect:
    """This library's message classes and OpenAI chat dicts: one result per message."""

    # Plain functions, not methods: repair asks these of every message in the context.
    calls = staticmethod(chat_calls)
    answers = staticmethod(neutral_answers)

    def keep_answers(self, message: Any, keep: Sequence[bool]) -> Any | None:
        return message if keep[0] else None

    def joins(self, previous: Any, message: Any) -> bool:
        # Each assistant message is a batch of its own: two in a row are two batches.
        return False

    def notices(self, unanswered: Sequence[tuple[Any, Any, str | None]], notice: str) -> list[Any]:
        return [notice_message(caller, call_id, name, notice) for caller, call_id, name in unanswered]

    parts = staticmethod(neutral_parts)
    from_parts = staticmethod(neutral_from_parts)


NEUTRAL = NeutralDialect()
