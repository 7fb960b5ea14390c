"""Provider request shapes: a session context as the messages one API's request takes.

- `to_openai_chat`: Chat Completions ``messages``.
- `to_openai_responses`: the Responses API's ``input`` items.
- `to_anthropic`: the Messages API's ``system`` and ``messages``.

Each takes what a session context holds: this library's message classes, neutral dicts
(OpenAI chat shape, as `append` stores them), and dicts already in that API's own shape
(Responses items, Anthropic content blocks), which pass through. A message with
``include_in_messages=False`` is left out, and so is whatever the API does not define:
the library's ``id``, ``persist`` and ``include_in_messages``, and any other key.

The choices, the same in all three unless said:

- A `CompactedMessage` becomes a user message whose text is the summary. A summary stands
  for what was said before; it is no instruction (an OpenAI system message outranks the
  user's, and Anthropic has no system message in the conversation).
- A tool result's content that is not a str is sent as its JSON text. Only Anthropic has
  an error flag (``is_error``); an OpenAI result carries its text only.
- Tool-call arguments are a JSON string for OpenAI (an object is serialized) and an object
  for Anthropic (a string is parsed; one that is no JSON object is sent as
  ``{"INVALID_JSON": text}``, as pydantic-ai's ``ToolCallPart.args_as_dict`` does).
- ``AssistantMessage.reasoning`` is left out: no API takes plain reasoning text back (they
  want their own signed or encrypted items, which pass through when stored as such).
- An assistant message with neither content nor tool calls is left out: it says nothing,
  and Anthropic refuses an empty message.

These functions change shapes only: repair the tool batches first (`repair_context`, in
the dialect the session is stored in).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import orjson

from .._errors import InvalidMessage
from .._format.records import ToolCall, _Message
from .tool_batches import includes

#: The keys each Chat Completions role defines besides ``role`` and ``content``.
_CHAT_KEYS = {
    "system": ("name",),
    "developer": ("name",),
    "user": ("name",),
    "assistant": ("name", "refusal", "audio", "function_call"),
}

#: Output items this library pairs with their calls: their ``id`` can only be the caller's.
_RESPONSES_RESULTS = frozenset({"function_call_output", "custom_tool_call_output"})


# ---------------------------------------------------------------------------------------
# Reading a message of the session context
# ---------------------------------------------------------------------------------------


def _role(message: Any, index: int) -> str:
    role = (
        message.role
        if isinstance(message, _Message)
        else message.get("role")
        if isinstance(message, dict)
        else None
    )
    if not isinstance(role, str):
        raise InvalidMessage(
            f"message {index}: {type(message).__name__} is no message class or dict with a role"
        )
    return role


def _get(message: Any, key: str, default: Any = None) -> Any:
    if isinstance(message, dict):
        return message.get(key, default)
    return getattr(message, key, default)


def _call(call: Any, index: int) -> tuple[str, str, Any]:
    """``(id, name, arguments)`` of a tool call; `InvalidMessage` for one no API can take."""
    call_id: Any
    name: Any
    if isinstance(call, ToolCall):
        call_id, name, arguments = call.id, call.name, call.arguments
    else:
        # OpenAI-shaped ({"id", "type", "function": {"name", "arguments"}}) or flat.
        function = call.get("function") or {}
        call_id, name = call.get("id"), call.get("name") or function.get("name")
        arguments = call["arguments"] if "arguments" in call else function.get("arguments", {})
    if not isinstance(call_id, str) or not isinstance(name, str) or not name:
        raise InvalidMessage(f"message {index}: a tool call needs a str id and a function name, got {call!r}")
    return call_id, name, arguments


def _tool_calls(message: Any, index: int) -> list[tuple[str, str, Any]]:
    return [_call(call, index) for call in _get(message, "tool_calls") or ()]


def _json_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return orjson.dumps(value).decode()
    except orjson.JSONEncodeError:  # an int beyond 64 bits, which only the standard library writes
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _text(content: Any) -> str:
    """The text of a content that is a str or a list of parts (other parts are left out)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = [part.get("text") if isinstance(part, dict) else part for part in content]
    return "".join(part for part in parts if isinstance(part, str))


def _image_url(part: dict[str, Any]) -> tuple[str, str | None]:
    """The URL and detail of an OpenAI chat ``image_url`` part."""
    image = part.get("image_url")
    if isinstance(image, str):
        return image, None
    if isinstance(image, dict) and isinstance(image.get("url"), str):
        return image["url"], image.get("detail")
    raise InvalidMessage(f"an image_url part needs a URL, got {part!r}")


# ---------------------------------------------------------------------------------------
# OpenAI Chat Completions
# ---------------------------------------------------------------------------------------


def to_openai_chat(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """The Chat Completions ``messages`` of a session context (see the module docstring).

    Raises `InvalidMessage` for a message with a role chat has no place for, or a tool
    call without a str id and a function name.
    """
    out = []
    for index, message in enumerate(messages):
        if includes(message) and (converted := _chat_message(message, index)) is not None:
            out.append(converted)
    return out


def _chat_message(message: Any, index: int) -> dict[str, Any] | None:
    role = _role(message, index)
    content = _get(message, "content")
    if role == "compacted":
        return {"role": "user", "content": _text(content)}
    if role == "tool":
        if not (isinstance(content, str) or (isinstance(message, dict) and isinstance(content, list))):
            content = _json_text(content)  # a dict's list is chat's own text parts
        return {"role": "tool", "tool_call_id": _get(message, "tool_call_id"), "content": content}
    if role not in _CHAT_KEYS:
        raise InvalidMessage(f"message {index}: role {role!r} has no Chat Completions message")
    out: dict[str, Any] = {"role": role}
    if content not in (None, "", []) or role != "assistant":
        out["content"] = content
    if isinstance(message, dict):
        out.update((key, message[key]) for key in _CHAT_KEYS[role] if message.get(key) is not None)
    if role == "assistant":
        calls = [_chat_call(call, index) for call in _get(message, "tool_calls") or ()]
        if calls:
            out["tool_calls"] = calls
        elif len(out) == 1:
            return None  # it says nothing
    return out


def _chat_call(call: Any, index: int) -> dict[str, Any]:
    if isinstance(call, dict) and call.get("type") == "custom":
        return {key: call[key] for key in ("id", "type", "custom") if key in call}
    call_id, name, arguments = _call(call, index)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": _json_text(arguments)}}


# ---------------------------------------------------------------------------------------
# OpenAI Responses
# ---------------------------------------------------------------------------------------


def to_openai_responses(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """The Responses API ``input`` items of a session context (see the module docstring).

    A message becomes ``{"role", "content"}`` (chat ``text`` and ``image_url`` parts become
    ``input_text`` and ``input_image``); an assistant message's text, then one
    ``function_call`` item per call; a tool result a ``function_call_output``. A dict with
    a ``"type"`` is a Responses item and passes through without ``persist`` and
    ``include_in_messages``; it keeps its ``id`` (the provider's item id, which the API
    needs on some items, such as ``reasoning``), except on an input message and on a
    ``function_call_output`` or ``custom_tool_call_output``, where it can only be yours.

    Raises `InvalidMessage` for a message with a role the API has no item for, or a tool
    call without a str id and a function name.
    """
    out: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        if not includes(message):
            continue
        if isinstance(message, dict) and "type" in message:
            out.append(_responses_item(message))
            continue
        role = _role(message, index)
        content = _get(message, "content")
        if role in ("system", "developer", "user", "compacted"):
            out.append({"role": "user" if role == "compacted" else role, "content": _input_content(content)})
        elif role == "assistant":
            if text := _text(content):
                out.append({"role": "assistant", "content": text})
            out.extend(
                {
                    "type": "function_call",
                    "call_id": call_id,
                    "name": name,
                    "arguments": _json_text(arguments),
                }
                for call_id, name, arguments in _tool_calls(message, index)
            )
        elif role == "tool":
            output = {"type": "function_call_output", "call_id": _get(message, "tool_call_id")}
            out.append({**output, "output": _json_text(content)})
        else:
            raise InvalidMessage(f"message {index}: role {role!r} has no Responses item")
    return out


def _responses_item(item: dict[str, Any]) -> dict[str, Any]:
    kind = item["type"]
    made_by_model = kind not in _RESPONSES_RESULTS and not (
        kind == "message" and (item.get("role") != "assistant" or not isinstance(item.get("content"), list))
    )
    dropped = (
        ("persist", "include_in_messages") if made_by_model else ("id", "persist", "include_in_messages")
    )
    return {key: value for key, value in item.items() if key not in dropped}


def _input_content(content: Any) -> Any:
    if not isinstance(content, list):
        return content
    out = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            out.append({"type": "input_text", "text": part.get("text")})
        elif kind == "image_url":
            url, detail = _image_url(part)
            out.append({"type": "input_image", "image_url": url, "detail": detail or "auto"})
        else:
            out.append(part)  # already a Responses part
    return out


# ---------------------------------------------------------------------------------------
# Anthropic Messages
# ---------------------------------------------------------------------------------------


def to_anthropic(messages: Sequence[Any]) -> tuple[str | None, list[dict[str, Any]]]:
    """The Messages API ``system`` and ``messages`` of a session context.

    Anthropic takes instructions only as the request's ``system``, so the text of every
    system (and developer) message goes there, joined by blank lines, in order; ``system``
    is None when there is none (leave the parameter out then). Each other message becomes
    content blocks: text (chat ``image_url`` parts become ``image`` blocks), then one
    ``tool_use`` block per call; a tool result a ``tool_result`` block in a user message.
    Consecutive messages of one role make one message (the API would join them anyway),
    and in a user message the ``tool_result`` blocks come first, as the API requires
    (https://platform.claude.com/docs/en/agents-and-tools/tool-use/implement-tool-use).
    Empty text is left out (the API refuses an empty text block).

    Raises `InvalidMessage` for a message with a role the API has no message for, a tool
    call without a str id and a function name, or an image URL that is neither a base64
    ``data:`` URL nor a web address.
    """
    system: list[str] = []
    turns: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        if not includes(message):
            continue
        role = _role(message, index)
        if role in ("system", "developer"):
            if text := _text(_get(message, "content")):
                system.append(text)
            continue
        role, blocks = _anthropic_turn(message, role, index)
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    for turn in turns:
        if turn["role"] == "user":
            blocks = turn["content"]
            turn["content"] = [b for b in blocks if _is_tool_result(b)] + [
                b for b in blocks if not _is_tool_result(b)
            ]
    return "\n\n".join(system) or None, turns


def _anthropic_turn(message: Any, role: str, index: int) -> tuple[str, list[Any]]:
    """The role and content blocks of one message that is no system message."""
    content = _get(message, "content")
    if role == "tool":
        result: dict[str, Any] = {"type": "tool_result", "tool_use_id": _get(message, "tool_call_id")}
        if content not in (None, ""):
            result["content"] = _json_text(content)
        if _get(message, "is_error"):
            result["is_error"] = True
        return "user", [result]
    if role in ("user", "compacted"):
        return "user", _blocks(content)
    if role == "assistant":
        uses = [
            {"type": "tool_use", "id": call_id, "name": name, "input": _arguments_object(arguments)}
            for call_id, name, arguments in _tool_calls(message, index)
        ]
        return "assistant", _blocks(content) + uses
    raise InvalidMessage(f"message {index}: role {role!r} has no Anthropic message")


def _is_tool_result(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") == "tool_result"


def _blocks(content: Any) -> list[Any]:
    """Content blocks of a str or a list of parts (Anthropic blocks pass through)."""
    if content is None or content == "":
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    out: list[Any] = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if isinstance(part, str):
            out.extend(_blocks(part))
        elif kind == "text":
            if part.get("text"):
                out.append(part)
        elif kind == "image_url":
            out.append(_image_block(part))
        else:
            out.append(part)  # already an Anthropic block (image, document, thinking, ...)
    return out


def _image_block(part: dict[str, Any]) -> dict[str, Any]:
    url, _ = _image_url(part)
    if url.startswith("data:"):
        header, _, data = url[len("data:") :].partition(",")
        media_type, _, encoding = header.partition(";")
        if encoding != "base64":
            raise InvalidMessage(f"an image data: URL must be base64, got {url[:40]!r}")
        return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}
    if url.startswith(("https://", "http://")):
        return {"type": "image", "source": {"type": "url", "url": url}}
    raise InvalidMessage(f"an image URL must be a base64 data: URL or a web address, got {url[:40]!r}")


def _arguments_object(arguments: Any) -> Any:
    """Tool-call arguments as the JSON object Anthropic's ``input`` must be."""
    if isinstance(arguments, dict):
        return arguments
    if arguments == "":
        return {}
    if isinstance(arguments, str):
        try:
            parsed = orjson.loads(arguments)
        except orjson.JSONDecodeError:
            parsed = None
        if isinstance(parsed, dict):
            return parsed
    return {"INVALID_JSON": _json_text(arguments)}
