"""The ``"openai-responses"`` dialect: OpenAI Responses API items, one per call and one per result, by ``call_id``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from .._errors import InvalidArgument
from .._format.records import AssistantMessage
from .dialect_neutral import Call, chat_calls, neutral_answers, neutral_parts, notice_message
from .parts import (
    ImagePart,
    OtherPart,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    base64_of,
    chat_item,
    decode_arguments,
    encode_arguments,
    result_content,
)

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
        return chat_calls(message)

    def answers(self, message: Any) -> Sequence[Any]:
        if _item_type(message) in _RESPONSES_RESULTS:
            return [message.get("call_id")]
        return neutral_answers(message)

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
                out.append(notice_message(caller, call_id, name, notice))
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
