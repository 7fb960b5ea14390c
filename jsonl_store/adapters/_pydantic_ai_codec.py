"""pydantic-ai's ``ModelMessage``s as stored records, and their tool-batch dialect.

Shared by the pydantic-ai and pydantic-ai-harness adapters; importing it needs pydantic-ai
(``pydantic-ai-slim``), which both extras install.

A message is stored as the dict ``{"role": R, "format": "pydantic-ai", "content": J}``:
``J`` is the message as pydantic-ai's own ``ModelMessagesTypeAdapter`` writes it in JSON
mode (bytes as base64), so the record is the message pydantic-ai would serialise, and
``R`` (``user`` for a ``ModelRequest``, ``assistant`` for a ``ModelResponse``) only says
who made it, for people and ``jsonl-store show``.

pydantic-ai's JSON does not say which Python class a binary value had: it reads every
binary back as a ``BinaryImage`` when its media type is an image and as a plain
``BinaryContent`` otherwise, so a plain ``BinaryContent`` holding an image or a
``BinaryAudio`` would come back as another class, which never compares equal. So the
record names each binary whose class that reading would not restore: under
``"plain_binary"`` the places (paths of field names and list indexes) of plain
``BinaryContent`` values, under ``"binary_class"`` ``[path, class name]`` pairs for
pydantic-ai's other ``BinaryContent`` subclasses; decoding puts that class back there, so
a message comes back equal to the one saved. A subclass pydantic-ai does not define is
refused (`UnsupportedValue`): no reader could make it again.
"""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import Iterator, Sequence
from typing import Any, TypeGuard

import orjson

try:
    from pydantic_ai import messages as _messages
    from pydantic_ai.messages import (
        BinaryContent,
        BinaryImage,
        ModelMessage,
        ModelMessagesTypeAdapter,
        ModelRequest,
        ModelResponse,
        RetryPromptPart,
        ToolCallPart,
        ToolReturnPart,
    )
except ImportError as exc:  # pragma: no cover - exercised in an environment without the extra
    raise ImportError(
        'jsonl_store.adapters.pydantic_ai needs pydantic-ai: pip install "jsonl_store[pydantic-ai]"'
    ) from exc

import jsonl_store as _js
from jsonl_store import INTERRUPTED_NOTICE, InvalidArgument, ModelUsage, UnsupportedValue, message_parts

#: The ``format`` of a stored pydantic-ai message.
MESSAGE_FORMAT = "pydantic-ai"

#: What pydantic-ai's own repair answers an interrupted call with (pydantic-ai 2.x,
#: ``pydantic_ai.messages.INTERRUPTED_TOOL_RETURN_CONTENT``); older releases have no such
#: text, and the store's notice stands in.
PYDANTIC_AI_NOTICE: str = getattr(_messages, "INTERRUPTED_TOOL_RETURN_CONTENT", INTERRUPTED_NOTICE)
#: The metadata key pydantic-ai marks the results it synthesises with.
SYNTHESIZED_KEY: str = getattr(
    _messages, "SYNTHESIZED_TOOL_RETURN_METADATA_KEY", "pydantic_ai_synthesized_tool_return"
)
_RETURN_FIELDS = {field.name for field in dataclasses.fields(ToolReturnPart)}

Path = tuple[str | int, ...]


#: pydantic-ai's own binary classes, by name: the only ones a record may name.
BINARY_CLASSES: dict[str, type[BinaryContent]] = {
    cls.__name__: cls
    for cls in vars(_messages).values()
    if isinstance(cls, type) and issubclass(cls, BinaryContent)
}
#: The key of a record's plain ``BinaryContent`` places, and of its other classes' places.
PLAIN_KEY, CLASS_KEY = "plain_binary", "binary_class"


def _read_back_class(value: BinaryContent) -> type[BinaryContent]:
    """The class pydantic-ai's JSON reading gives a binary (``BinaryContent.narrow_type``'s rule)."""
    return BinaryImage if value.is_image else BinaryContent


def _binary_classes(value: Any, path: Path) -> Iterator[tuple[Path, type[BinaryContent]]]:
    """Where ``value`` holds a binary whose class pydantic-ai reads back as another, and its class."""
    if isinstance(value, BinaryContent):
        if type(value) is not _read_back_class(value):
            if BINARY_CLASSES.get(type(value).__name__) is not type(value):
                raise UnsupportedValue(
                    f"{type(value).__name__} is a BinaryContent subclass pydantic-ai does not define: "
                    "it would not come back as itself"
                )
            yield path, type(value)
        return
    if isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from _binary_classes(item, (*path, index))
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            yield from _binary_classes(getattr(value, field.name), (*path, field.name))
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str):
                yield from _binary_classes(item, (*path, key))


def _replaced(value: Any, path: Path, cls: type[BinaryContent]) -> Any:
    """``value`` with the binary at ``path`` back as a ``cls`` (copies on the way)."""
    if not path:
        if not isinstance(value, BinaryContent):
            raise InvalidArgument("a stored binary path does not lead to binary content")
        binary = cls(data=value.data, media_type=value.media_type, vendor_metadata=value.vendor_metadata)
        # The identifier pydantic-ai computed and wrote is the one it reads back; keep it.
        object.__setattr__(binary, "_identifier", value._identifier)
        return binary
    head, rest = path[0], path[1:]
    if isinstance(head, int) and isinstance(value, list):
        return [*value[:head], _replaced(value[head], rest, cls), *value[head + 1 :]]
    if isinstance(head, str) and isinstance(value, dict):
        return {**value, head: _replaced(value[head], rest, cls)}
    if isinstance(head, str) and dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(value, **{head: _replaced(getattr(value, head), rest, cls)})
    raise InvalidArgument("a stored binary path does not match the message it belongs to")


def _stored_classes(item: dict[str, Any]) -> Iterator[tuple[Path, type[BinaryContent]]]:
    """The places and classes a stored message names (both keys; see the module's docstring)."""
    for path in item.get(PLAIN_KEY) or ():
        if not isinstance(path, list):
            raise InvalidArgument(f"a stored {PLAIN_KEY} entry is not a path")
        yield tuple(path), BinaryContent
    for entry in item.get(CLASS_KEY) or ():
        if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], list)):
            raise InvalidArgument(f"a stored {CLASS_KEY} entry is not [path, class name]")
        cls = BINARY_CLASSES.get(entry[1]) if isinstance(entry[1], str) else None
        if cls is None:
            raise InvalidArgument(
                f"a stored {CLASS_KEY} entry names no pydantic-ai binary class: {entry[1]!r}"
            )
        yield tuple(entry[0]), cls


def role(message: ModelMessage) -> str:
    """``user`` for a request, ``assistant`` for a response (for people reading the log)."""
    return "assistant" if isinstance(message, ModelResponse) else "user"


def encode(messages: Sequence[ModelMessage]) -> list[dict[str, Any]]:
    """The records' messages for ``messages``: each encoded once, by pydantic-ai."""
    for message in messages:
        if not isinstance(message, (ModelRequest, ModelResponse)):
            raise InvalidArgument(
                f"a pydantic-ai history holds ModelMessage values, not {type(message).__name__}"
            )
    dumped = ModelMessagesTypeAdapter.dump_python(list(messages), mode="json")
    out = []
    for message, content in zip(messages, dumped, strict=True):
        stored: dict[str, Any] = {"role": role(message), "format": MESSAGE_FORMAT, "content": content}
        found = list(_binary_classes(message, ()))
        plain = [list(path) for path, cls in found if cls is BinaryContent]
        others = [[list(path), cls.__name__] for path, cls in found if cls is not BinaryContent]
        if plain:
            stored[PLAIN_KEY] = plain
        if others:
            stored[CLASS_KEY] = others
        out.append(stored)
    return out


def is_stored_message(message: Any) -> TypeGuard[dict[str, Any]]:
    """Whether a record's message is a stored pydantic-ai message."""
    return (
        isinstance(message, dict)
        and message.get("format") == MESSAGE_FORMAT
        and isinstance(message.get("content"), dict)
    )


def decode(stored: Sequence[dict[str, Any]]) -> list[ModelMessage]:
    """The ``ModelMessage``s of stored messages, validated by pydantic-ai in one call.

    Raises pydantic's ``ValidationError`` (a ``ValueError``) for a message pydantic-ai cannot read.
    """
    if not stored:
        return []
    # JSON, not Python, validation: bytes were written as base64 text, which only the
    # JSON mode reads back as bytes.
    messages = ModelMessagesTypeAdapter.validate_json(orjson.dumps([item["content"] for item in stored]))
    for index, item in enumerate(stored):
        for path, cls in _stored_classes(item):
            messages[index] = _replaced(messages[index], path, cls)
    return messages


def usage(message: ModelMessage) -> ModelUsage | None:
    """A response's token counts in the store's terms (for ``jsonl-store usage``), else None."""
    if not isinstance(message, ModelResponse):
        return None
    counts = message.usage
    details = getattr(counts, "details", None) or {}
    return ModelUsage(
        input_tokens=counts.input_tokens or 0,
        output_tokens=counts.output_tokens or 0,
        cache_read_tokens=getattr(counts, "cache_read_tokens", 0) or 0,
        cache_write_tokens=getattr(counts, "cache_write_tokens", 0) or 0,
        reasoning_tokens=int(details.get("reasoning_tokens", 0) or 0),
    )


# ---------------------------------------------------------------------------------------
# The tool-batch dialect
# ---------------------------------------------------------------------------------------


def is_result(part: Any) -> TypeGuard[ToolReturnPart | RetryPromptPart]:
    """A request part that answers a tool call: pydantic-ai's own ``_is_tool_result_part``.

    A ``ToolReturnPart``, or a ``RetryPromptPart`` that names a tool (one without a tool
    name is feedback on the whole response, not a result), as
    https://github.com/pydantic/pydantic-ai/blob/main/pydantic_ai_slim/pydantic_ai/messages.py
    reads them.
    """
    return isinstance(part, ToolReturnPart) or (
        isinstance(part, RetryPromptPart) and part.tool_name is not None
    )


class PydanticAIDialect:
    """The store's tool-batch rule over pydantic-ai's ``ModelRequest``/``ModelResponse`` messages.

    Calls are a response's ``ToolCallPart``s; results are the ``ToolReturnPart``s (and
    tool-bound ``RetryPromptPart``s) of the requests after it, matched by
    ``tool_call_id``; a request keeps its other parts when its results are dropped. A
    closing result is the one pydantic-ai's ``repair_messages`` synthesises: a
    ``ToolReturnPart`` with ``outcome="interrupted"``, the call's ``tool_kind``, the
    response's timestamp and pydantic-ai's marker in its ``metadata``, so pydantic-ai
    finds nothing left to repair and its prompt cache sees the same history.
    """

    def calls(self, message: Any) -> Sequence[tuple[Any, str | None]]:
        if not isinstance(message, ModelResponse):
            return []
        return [
            (part.tool_call_id, part.tool_name) for part in message.parts if isinstance(part, ToolCallPart)
        ]

    def answers(self, message: Any) -> Sequence[Any]:
        if not isinstance(message, ModelRequest):
            return []
        return [part.tool_call_id for part in message.parts if is_result(part)]

    def keep_answers(self, message: Any, keep: Sequence[bool]) -> Any | None:
        flags = iter(keep)
        parts = [part for part in message.parts if not is_result(part) or next(flags)]
        return dataclasses.replace(message, parts=parts) if parts else None

    def joins(self, previous: Any, message: Any) -> bool:
        return False

    def notices(self, unanswered: Sequence[tuple[Any, Any, str | None]], notice: str) -> list[Any]:
        parts = []
        for response, call_id, name in unanswered:
            call = next(
                (p for p in response.parts if isinstance(p, ToolCallPart) and p.tool_call_id == call_id), None
            )
            options: dict[str, Any] = {"metadata": {SYNTHESIZED_KEY: True}, "timestamp": response.timestamp}
            if "outcome" in _RETURN_FIELDS:
                options["outcome"] = "interrupted"
            if "tool_kind" in _RETURN_FIELDS and call is not None:
                options["tool_kind"] = call.tool_kind
            parts.append(
                ToolReturnPart(tool_name=name or "", content=notice, tool_call_id=call_id, **options)
            )
        return [ModelRequest(parts=parts)]

    def parts(self, message: Any) -> list[_js.Part]:
        """The parts of a ``ModelRequest``/``ModelResponse``: read from the dict it is stored
        as (`encode`), as `jsonl_store.message_parts` reads a stored pydantic-ai message,
        so an object and its record give the same parts. Anything else reads as neutral."""
        if isinstance(message, (ModelRequest, ModelResponse)):
            return message_parts(encode([message])[0])
        return message_parts(message)

    def from_parts(self, parts: Sequence[_js.Part], role: str) -> ModelMessage:
        """A ``ModelResponse`` (``role`` ``"assistant"``) or ``ModelRequest`` holding ``parts``,
        built as pydantic-ai's JSON and validated by pydantic-ai.

        A result's tool name is not in its part: it is written as ``""``. Raises
        `InvalidArgument` for a part the message kind cannot hold (a call in a request, an
        image in a response, an `OtherPart` that is no stored pydantic-ai part).
        """
        if role == "assistant":
            body = {"kind": "response", "parts": [_response_part(part) for part in parts]}
        else:
            body = {"kind": "request", "parts": [_request_part(part, role) for part in parts]}
        return decode([{"content": body}])[0]


def _request_part(part: _js.Part, role: str) -> dict[str, Any]:
    """One part of a request in pydantic-ai's JSON (``part_kind``), the inverse of its reading."""
    if isinstance(part, _js.TextPart):
        return {"part_kind": "system-prompt" if role == "system" else "user-prompt", "content": part.text}
    if isinstance(part, _js.ImagePart):
        return {"part_kind": "user-prompt", "content": [_image_item(part)]}
    if isinstance(part, _js.ToolResultPart):
        content = part.content if isinstance(part.content, str) else [_result_item(p) for p in part.content]
        if part.is_error and "outcome" not in _RETURN_FIELDS:
            return {
                "part_kind": "retry-prompt",
                "tool_name": "",
                "tool_call_id": part.tool_call_id,
                "content": content,
            }
        result = {
            "part_kind": "tool-return",
            "tool_name": "",
            "tool_call_id": part.tool_call_id,
            "content": content,
        }
        if part.is_error:
            result["outcome"] = "failed"
        return result
    if isinstance(part, _js.OtherPart) and isinstance(part.raw, dict):
        if "part_kind" in part.raw:
            return part.raw
        if "kind" in part.raw:  # an item of a user prompt (audio, a document) the model does not map
            return {"part_kind": "user-prompt", "content": [part.raw]}
    raise InvalidArgument(f"a pydantic-ai request cannot hold this {part.kind} part")


def _response_part(part: _js.Part) -> dict[str, Any]:
    """One part of a response in pydantic-ai's JSON (``part_kind``), the inverse of its reading."""
    if isinstance(part, _js.TextPart):
        return {"part_kind": "text", "content": part.text}
    if isinstance(part, _js.ReasoningPart):
        return {"part_kind": "thinking", "content": part.text}
    if isinstance(part, _js.ToolCallPart):
        # pydantic-ai keeps args as an object or a JSON string: anything else as its JSON.
        args = part.arguments
        if not isinstance(args, dict) and args is not None:
            args = orjson.dumps(args).decode()
        return {"part_kind": "tool-call", "tool_name": part.name or "", "tool_call_id": part.id, "args": args}
    if isinstance(part, _js.OtherPart) and isinstance(part.raw, dict) and "part_kind" in part.raw:
        return part.raw
    raise InvalidArgument(f"a pydantic-ai response cannot hold this {part.kind} part")


def _image_item(part: _js.ImagePart) -> dict[str, Any]:
    if part.data is not None:
        data = base64.b64encode(part.data).decode()
        return {"kind": "binary", "data": data, "media_type": part.media_type}
    item: dict[str, Any] = {"kind": "image-url", "url": part.url}
    if part.media_type is not None:
        item["media_type"] = part.media_type
    return item


def _result_item(part: _js.Part) -> Any:
    """One entry of a tool return's content list: text as a string, anything else as stored."""
    if isinstance(part, _js.TextPart):
        return part.text
    if isinstance(part, _js.OtherPart):
        return part.raw
    raise InvalidArgument(f"a pydantic-ai tool return's content cannot hold this {part.kind} part")


#: The dialect object: pass it as ``dialect=`` to the store's repair functions.
PYDANTIC_AI = PydanticAIDialect()


#: The `_state_log.StateLog` item functions of pydantic-ai messages, as both adapters store them.
MESSAGE_CODECS: dict[str, Any] = {
    "encode_messages": encode,
    "is_message": is_stored_message,
    "decode_messages": decode,
    "usage": usage,
}
