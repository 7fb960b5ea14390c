"""Dialects: where one message format keeps its tool calls and their results.

Tool-batch repair (`_tool_batches`) applies one rule to every format. A *dialect* answers
the few questions the rule asks of a message: which calls it makes, which calls its
results answer, what is left of it without some results, whether it belongs to the calls
of the message before it, and how to write the error results that close unanswered calls.

Three are built in; `register_dialect` adds one under a name:

- ``"neutral"``: this library's message classes and OpenAI chat dicts (``tool_calls`` on an
  assistant message, one ``role: "tool"`` message per result, by ``tool_call_id``).
- ``"openai-responses"``: OpenAI Responses API items: one ``function_call`` (or
  ``custom_tool_call``) item per call, answered by a ``function_call_output`` (or
  ``custom_tool_call_output``) item with the same ``call_id``. Consecutive call items are
  the calls of one batch, and a ``reasoning`` item right before them goes with them (the
  API refuses a reasoning item whose following item is missing).
- ``"anthropic"``: Anthropic Messages: ``tool_use`` blocks in an assistant message's
  content, answered by ``tool_result`` blocks (``tool_use_id``) in the next user message,
  which may also hold text.

Every dialect also reads what ``"neutral"`` reads, so the library's classes mean the same
in all of them; a dialect adds its own dict shapes. A dialect's methods never change the
message they are given.

Each built-in dialect also maps its shape to the message model every reader uses
(`_parts`): ``parts(message)`` gives a message's ordered parts and ``from_parts(parts,
role)`` builds one message of the dialect's shape from them. The mapping sits beside the
tool-batch rules it must agree with: the calls and results a message's parts name are the
ones ``calls`` and ``answers`` give (a property test holds the two readings equal).
A dialect registered without ``parts`` reads as ``"neutral"``, its own ``calls`` and
``answers`` deciding the calls and results (`message_parts`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import orjson

from ._errors import InvalidArgument
from ._parts import (
    ImagePart,
    OtherPart,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    base64_of,
    chat_item,
    content_item,
    content_parts,
    decode_arguments,
    encode_arguments,
    image_from_base64,
    result_content,
)
from ._records import AssistantMessage, ToolMessage, _Message

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


def _calls(message: Any) -> Sequence[Call]:
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


def _neutral_answers(message: Any) -> Sequence[Any]:
    """``[the call id]`` for a tool result, empty for anything else."""
    if isinstance(message, ToolMessage):
        return [message.tool_call_id]
    if isinstance(message, dict) and message.get("role") == "tool":
        return [message.get("tool_call_id")]
    return _NONE


def _notice(assistant: Any, call_id: Any, name: str | None, notice: str) -> Any:
    """An error result for one unanswered call, of the same kind as the assistant message."""
    if isinstance(assistant, dict):
        result: dict[str, Any] = {"role": "tool", "tool_call_id": call_id, "content": notice}
        if name is not None:
            result["name"] = name
        return result
    return ToolMessage(tool_call_id=call_id, name=name, content=notice, is_error=True)


def _call_part(call: Any) -> Part:
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
        out.extend(_call_part(call) for call in message.get("tool_calls") or ())
    return out


def _class_parts(message: _Message) -> list[Part]:
    if isinstance(message, ToolMessage):
        return [ToolResultPart(message.tool_call_id, result_content(message.content), message.is_error)]
    if isinstance(message, AssistantMessage):
        out: list[Part] = [ReasoningPart(message.reasoning)] if message.reasoning else []
        out.extend(content_parts(message.content))
        out.extend(_call_part(call) for call in message.tool_calls)
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
    calls = staticmethod(_calls)
    answers = staticmethod(_neutral_answers)

    def keep_answers(self, message: Any, keep: Sequence[bool]) -> Any | None:
        return message if keep[0] else None

    def joins(self, previous: Any, message: Any) -> bool:
        # Each assistant message is a batch of its own: two in a row are two batches.
        return False

    def notices(self, unanswered: Sequence[tuple[Any, Any, str | None]], notice: str) -> list[Any]:
        return [_notice(caller, call_id, name, notice) for caller, call_id, name in unanswered]

    parts = staticmethod(neutral_parts)
    from_parts = staticmethod(neutral_from_parts)


NEUTRAL = NeutralDialect()


# ---------------------------------------------------------------------------------------
# openai-responses: one item per call, one item per result, by call_id
# ---------------------------------------------------------------------------------------

#: The client-run call items and the output item that answers each, by ``call_id``. Other
#: tool items (computer, shell, apply_patch, hosted tools) are not paired: their outputs
#: are no text a notice could stand in for, or the provider runs them itself.
RESPONSES_OUTPUTS = {"function_call": "function_call_output", "custom_tool_call": "custom_tool_call_output"}
_RESPONSES_RESULTS = frozenset(RESPONSES_OUTPUTS.values())


def _item_type(message: Any) -> Any:
    return message.get("type") if isinstance(message, dict) else None


def _says_nothing(message: Any) -> bool:
    """True for a message whose only content is its calls (it converts to call items alone)."""
    if isinstance(message, AssistantMessage):
        return not message.content
    return isinstance(message, dict) and (
        message.get("type") in RESPONSES_OUTPUTS or not message.get("content")
    )


class OpenAIResponsesDialect:
    """OpenAI Responses API items (``function_call`` / ``function_call_output`` by ``call_id``)."""

    def calls(self, message: Any) -> Sequence[Call]:
        if _item_type(message) in RESPONSES_OUTPUTS:
            return [(message.get("call_id"), message.get("name"))]
        return _calls(message)

    def answers(self, message: Any) -> Sequence[Any]:
        if _item_type(message) in _RESPONSES_RESULTS:
            return [message.get("call_id")]
        return _neutral_answers(message)

    def keep_answers(self, message: Any, keep: Sequence[bool]) -> Any | None:
        return message if keep[0] else None

    def joins(self, previous: Any, message: Any) -> bool:
        # The API stores a parallel batch one call per item: [fc a, fc b, out b, out a] is
        # one batch. A message that says something besides its calls starts a new one.
        opens = bool(self.calls(previous)) or _item_type(previous) == "reasoning"
        follows = (bool(self.calls(message)) and _says_nothing(message)) or _item_type(message) == "reasoning"
        return opens and follows

    def notices(self, unanswered: Sequence[tuple[Any, Any, str | None]], notice: str) -> list[Any]:
        out: list[Any] = []
        for caller, call_id, name in unanswered:
            if (kind := _item_type(caller)) in RESPONSES_OUTPUTS:
                item = {"type": RESPONSES_OUTPUTS[kind], "call_id": call_id, "output": notice}
                if "role" in caller:
                    # Items stored with a role (as SessionStore needs to append them, e.g. by
                    # jsonl_store.importers) get one, so resume() can append the notice too.
                    item["role"] = "tool"
                out.append(item)
            else:
                out.append(_notice(caller, call_id, name, notice))
        return out

    def parts(self, message: Any) -> list[Part]:
        """A call item is one `ToolCallPart` (a ``custom_tool_call``'s free-form ``input`` kept
        as its string), an output item one `ToolResultPart`, a ``reasoning`` item one
        `ReasoningPart` per summary or reasoning text (one empty part when all of it is
        encrypted), a ``message`` item its content; any other item type (hosted tools such as
        ``web_search_call``, which repair does not pair either) is one `OtherPart`."""
        kind = _item_type(message)
        if kind == "function_call":
            return [
                ToolCallPart(
                    message.get("call_id"), message.get("name"), decode_arguments(message.get("arguments"))
                )
            ]
        if kind == "custom_tool_call":
            return [ToolCallPart(message.get("call_id"), message.get("name"), message.get("input"))]
        if kind in _RESPONSES_RESULTS:
            return [_responses_result(message.get("call_id"), message.get("output"))]
        if kind == "reasoning":
            return _reasoning_parts(message)
        if kind is None or kind == "message":
            return neutral_parts(message)
        return [OtherPart(message)]

    def from_parts(self, parts: Sequence[Part], role: str) -> Any:
        """One Responses item of ``role`` holding ``parts``: a call or output item for a lone
        call or result, a ``reasoning`` item for reasoning alone, else a ``message`` item."""
        if len(parts) == 1 and isinstance(parts[0], ToolCallPart):
            call = parts[0]
            return {
                "type": "function_call",
                "call_id": call.id,
                "name": call.name,
                "arguments": encode_arguments(call.arguments),
                "role": role,
            }
        if len(parts) == 1 and isinstance(parts[0], ToolResultPart):
            result = parts[0]
            return {
                "type": "function_call_output",
                "call_id": result.tool_call_id,
                "output": _responses_output(result),
                "role": role,
            }
        if len(parts) == 1 and isinstance(parts[0], OtherPart) and _item_type(parts[0].raw) is not None:
            return parts[0].raw
        if parts and all(isinstance(p, ReasoningPart) for p in parts):
            summary = [
                {"type": "summary_text", "text": p.text} for p in parts if isinstance(p, ReasoningPart)
            ]
            return {"type": "reasoning", "summary": summary, "role": role}
        if any(isinstance(p, (ReasoningPart, ToolCallPart, ToolResultPart)) for p in parts):
            raise InvalidArgument("a Responses item holds one call, one output, reasoning alone, or content")
        text_type = "output_text" if role == "assistant" else "input_text"
        return {"type": "message", "role": role, "content": [_responses_item(p, text_type) for p in parts]}


def _responses_result(call_id: Any, output: Any) -> ToolResultPart:
    """An output item's result. Codex writes a shell call's output as JSON text,
    ``{"output": "...", "metadata": {"exit_code": N, "duration_seconds": S}}``
    (codex-rs ``FunctionCallOutputPayload``, https://github.com/openai/codex): that reads as
    the output's text, then the metadata as an `OtherPart`, an error when the exit code is
    not 0. Any other output is its text or its items, as stored."""
    if isinstance(output, str) and output.startswith('{"output":'):
        shell = _shell_output(output)
        if shell is not None:
            return ToolResultPart(call_id, shell.content, shell.is_error)
    return ToolResultPart(call_id, result_content([output] if isinstance(output, dict) else output))


def _shell_output(text: str) -> ToolResultPart | None:
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if (
        not isinstance(value, dict)
        or not isinstance(value.get("output"), str)
        or set(value) - {"output", "metadata"}
    ):
        return None
    metadata = value.get("metadata")
    content: list[Part] = [TextPart(value["output"])]
    if isinstance(metadata, dict):
        content.append(OtherPart({"metadata": metadata}))
        code = metadata.get("exit_code")
        failed = isinstance(code, int) and not isinstance(code, bool) and code != 0
    elif metadata is None and "metadata" not in value:
        failed = False
    else:
        return None
    return ToolResultPart(None, content, failed)


def _reasoning_parts(item: dict[str, Any]) -> list[Part]:
    texts = [
        entry["text"]
        for key in ("summary", "content")
        for entry in item.get(key) or ()
        if isinstance(entry, dict) and isinstance(entry.get("text"), str)
    ]
    return [ReasoningPart(text) for text in texts] or [ReasoningPart("")]


def _responses_item(part: Part, text_type: str) -> Any:
    if isinstance(part, TextPart):
        return {"type": text_type, "text": part.text}
    if isinstance(part, ImagePart):
        url = (
            f"data:{part.media_type or 'application/octet-stream'};base64,{base64_of(part.data)}"
            if part.data is not None
            else part.url
        )
        return {"type": "input_image", "image_url": url}
    return chat_item(part)


def _responses_output(result: ToolResultPart) -> Any:
    if isinstance(result.content, str):
        return result.content
    return [_responses_item(p, "input_text") for p in result.content]


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
        return uses or _calls(message)

    def answers(self, message: Any) -> Sequence[Any]:
        blocks = _blocks(message, "user")
        if blocks is not None:
            return [b.get("tool_use_id") for b in blocks if _block_type(b) == "tool_result"]
        return _neutral_answers(message)

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
                out.append(_notice(caller, call_id, name, notice))
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
            out.extend(_call_part(call) for call in message.get("tool_calls") or ())
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


# ---------------------------------------------------------------------------------------
# The registry
# ---------------------------------------------------------------------------------------

_DIALECTS: dict[str, Dialect] = {
    "neutral": NEUTRAL,
    "openai-responses": OpenAIResponsesDialect(),
    "anthropic": AnthropicDialect(),
}


def register_dialect(name: str, dialect: Dialect) -> None:
    """Make ``dialect`` usable as ``dialect=name`` in every tool-batch function.

    Raises `InvalidArgument` when ``name`` is not a non-empty str, when ``dialect`` lacks a
    method of `Dialect`, or when another dialect already has that name (registering the
    same object again is allowed, so a module may be imported twice).
    """
    if not isinstance(name, str) or not name:
        raise InvalidArgument(f"a dialect's name must be a non-empty str, got {name!r}")
    if not isinstance(dialect, Dialect):
        raise InvalidArgument(
            f"{dialect!r} is no Dialect: it needs calls, answers, keep_answers, joins and notices"
        )
    if _DIALECTS.get(name, dialect) is not dialect:
        raise InvalidArgument(f"a different dialect is already registered as {name!r}")
    _DIALECTS[name] = dialect


def stored_dialect(metadata: dict[str, Any]) -> str:
    """The dialect a session's metadata names (``metadata["dialect"]``, as importers and
    adapters write it), when it is a registered one; else ``"neutral"``.

    A name this process has not registered reads as neutral rather than failing a load:
    the messages are still given back, only their tool batches are read the neutral way.
    """
    name = metadata.get("dialect")
    return name if isinstance(name, str) and name in _DIALECTS else "neutral"


def message_parts(message: Any, dialect: str | Dialect = "neutral") -> list[Part]:
    """``message``, stored in ``dialect`` (a registered name or a `Dialect`), as ordered parts.

    Every message gives a list (empty for a message with no content, such as an empty
    assistant turn); what the dialect does not map is an `OtherPart` holding the stored
    value, so nothing is left out. A registered dialect without a ``parts`` method reads as
    ``"neutral"``; where its own ``calls``/``answers`` disagree with that reading, the
    message is one `OtherPart` followed by a part naming each call (or result) they give.
    Raises `InvalidArgument` for an unknown dialect name.
    """
    reading = resolve(dialect)
    own = getattr(reading, "parts", None)
    if callable(own):
        return list(own(message))
    return _derived_parts(reading, message)


def _derived_parts(reading: Dialect, message: Any) -> list[Part]:
    parts = neutral_parts(message)
    calls = list(reading.calls(message))
    answers = [] if calls else list(reading.answers(message))
    seen_calls = [(p.id, p.name) for p in parts if isinstance(p, ToolCallPart)]
    seen_answers = [p.tool_call_id for p in parts if isinstance(p, ToolResultPart)]
    if calls == seen_calls and answers == seen_answers:
        return parts
    named: list[Part] = [ToolCallPart(call_id, name) for call_id, name in calls]
    named.extend(ToolResultPart(call_id) for call_id in answers)
    return [OtherPart(message), *named]


def resolve(dialect: str | Dialect) -> Dialect:
    """The dialect a ``dialect=`` argument names (a registered name, or a `Dialect` itself)."""
    if isinstance(dialect, str):
        try:
            return _DIALECTS[dialect]
        except KeyError:
            known = ", ".join(repr(name) for name in sorted(_DIALECTS))
            raise InvalidArgument(f"unknown dialect {dialect!r}; registered: {known}") from None
    if not isinstance(dialect, Dialect):
        raise InvalidArgument(f"dialect must be a registered name or a Dialect, got {dialect!r}")
    return dialect
