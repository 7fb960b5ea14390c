"""The message model every reader uses: a stored message as ordered, dialect-neutral parts.

A session keeps its messages in their source's own shape (spec §5.2, "The message model"). What a
person or a program wants of one is the same in every shape: its text, its reasoning, the
tool calls it made, the results it carries and its images. `jsonl_store.message_parts`
gives exactly that, in order, as the part values below; each dialect says how its shape
maps to them next to its tool-batch rules (`_context.dialects`). Anything a dialect does not map
becomes an `OtherPart` holding the stored value as it is, so a reader can always show
that something was there: nothing is silently dropped.

This module holds the part types and the readers that several dialects share (content
lists of text and images, data URLs, JSON arguments). It imports no dialect.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any, TypeAlias

import msgspec
import orjson

from .._errors import InvalidArgument
from .._format.records import JsonValue


class _Part(msgspec.Struct, frozen=True, tag_field="kind", gc=False):
    @property
    def kind(self) -> str:
        """``"text"``, ``"reasoning"``, ``"tool_call"``, ``"tool_result"``, ``"image"`` or ``"other"``."""
        return self.__struct_config__.tag  # type: ignore[return-value]  # every part has a str tag


class TextPart(_Part, frozen=True, tag="text"):
    """Text the message says (a user's prompt, a model's answer, a system instruction)."""

    text: str


class ReasoningPart(_Part, frozen=True, tag="reasoning"):
    """The model's reasoning; ``text`` is empty when the provider keeps it encrypted."""

    text: str


class ToolCallPart(_Part, frozen=True, tag="tool_call"):
    """One tool call: ``arguments`` decoded from JSON where the dialect stores a JSON string
    (left as the string when it is not valid JSON)."""

    id: Any
    name: str | None
    arguments: JsonValue = None


class ToolResultPart(_Part, frozen=True, tag="tool_result"):
    """The result answering the call ``tool_call_id``: a string, or a list of parts (text, images)."""

    tool_call_id: Any
    content: str | list[Part] = ""
    is_error: bool = False


class ImagePart(_Part, frozen=True, tag="image"):
    """An image: its bytes (``data``, decoded from the stored base64) or where it is (``url``)."""

    media_type: str | None
    data: bytes | None = None
    url: str | None = None


class OtherPart(_Part, frozen=True, tag="other"):
    """Stored content the dialect does not map, exactly as stored (a hosted tool's item, a
    document block, a block type newer than this library)."""

    raw: JsonValue

    @property
    def description(self) -> tuple[str, str] | None:
        """``(label, text)`` a reader shows instead of the JSON, for a value whose meaning is
        known (a web search's query, the tools a tool search found, spec §5.2); else None."""
        return describe(self.raw)


Part: TypeAlias = TextPart | ReasoningPart | ToolCallPart | ToolResultPart | ImagePart | OtherPart
"""One part of a message, as `jsonl_store.message_parts` gives them."""

PART_TYPES: tuple[type[_Part], ...] = (
    TextPart,
    ReasoningPart,
    ToolCallPart,
    ToolResultPart,
    ImagePart,
    OtherPart,
)


# ---------------------------------------------------------------------------------------
# What a reader shows of an `other` part whose meaning is known (spec §5.2, "Descriptions")
# ---------------------------------------------------------------------------------------


def _words(value: Any) -> str:
    """The strings of a small JSON value, in order, joined by ", " (numbers and nulls left out)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return ", ".join(filter(None, (_words(item) for item in value)))
    if isinstance(value, dict):
        return ", ".join(filter(None, (_words(item) for item in value.values())))
    return ""


def _tool_names(tools: Any) -> list[str]:
    """The names in a tool search's ``tools`` list, a group's tools after the group's name."""
    names: list[str] = []
    for tool in tools if isinstance(tools, list) else ():
        if isinstance(tool, dict):
            if isinstance(tool.get("name"), str):
                names.append(tool["name"])
            names.extend(_tool_names(tool.get("tools")))
    return names


def _web_search(action: Any) -> tuple[str, str]:
    """A Responses ``web_search_call``'s action: a search's queries, a page opened, a pattern found in one
    (https://platform.openai.com/docs/api-reference/responses/object, ``web_search_call.action``)."""
    if not isinstance(action, dict):
        return "web search", ""
    kind = action.get("type")
    label = "web search" if kind in (None, "search") or not isinstance(kind, str) else f"web search: {kind}"
    queries = action.get("queries")
    query = action.get("query")
    if isinstance(queries, list) and any(isinstance(q, str) and q for q in queries):
        seen = [query] if isinstance(query, str) and query and query not in queries else []
        return label, _words([*seen, *queries])
    parts = [action.get(key) for key in ("query", "pattern", "url")]
    return label, " ".join(p for p in parts if isinstance(p, str) and p)


def _agent_message(raw: dict[str, Any]) -> tuple[str, str]:
    """A Codex ``agent_message`` item (one agent's message to another): who to whom, and its text."""
    author, recipient = raw.get("author"), raw.get("recipient")
    label = "agent message"
    if isinstance(author, str) and isinstance(recipient, str):
        label = f"agent message {author} → {recipient}"
    content = raw.get("content")
    items = content if isinstance(content, list) else []
    texts = [item["text"] for item in items if isinstance(item, dict) and isinstance(item.get("text"), str)]
    return label, "\n".join(texts)


def describe(raw: Any) -> tuple[str, str] | None:
    """``(label, text)`` for stored content no part maps but whose meaning is known, else None.

    - An Anthropic ``tool_reference`` block (what a tool search gives back: a tool the model
      may now call, https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/tool-search-tool):
      ``("tool reference", its tool_name)``.
    - A Responses ``web_search_call`` item: ``("web search", its queries)``, or the page it
      opened or searched in.
    - A Responses ``tool_search_call`` item: ``("tool search", the strings of its arguments)``;
      a ``tool_search_output`` item: ``("tool search result", the names of the tools it found)``.
    - A Responses ``image_generation_call``: ``("image generation", its revised prompt)``.
    - A Codex ``agent_message`` item (a message between agents): ``("agent message <author> →
      <recipient>", the text of its content items)``.

    The text is what the stored value says, nothing added; the value itself stays as stored.
    None too when the value says none of it (a search without a query): a reader then shows
    the value as stored.
    """
    if not isinstance(raw, dict):
        return None
    kind = raw.get("type")
    described: tuple[str, str] | None = None
    if kind == "tool_reference":
        name = raw.get("tool_name")
        described = "tool reference", name if isinstance(name, str) else ""
    elif kind == "web_search_call":
        described = _web_search(raw.get("action"))
    elif kind == "tool_search_call":
        described = "tool search", _words(raw.get("arguments"))
    elif kind == "tool_search_output":
        described = "tool search result", ", ".join(_tool_names(raw.get("tools")))
    elif kind == "image_generation_call":
        prompt = raw.get("revised_prompt")
        described = "image generation", prompt if isinstance(prompt, str) else ""
    elif kind == "agent_message":
        described = _agent_message(raw)
    return described if described is not None and described[1] else None


# ---------------------------------------------------------------------------------------
# Readers several dialects share
# ---------------------------------------------------------------------------------------


def decode_arguments(arguments: Any) -> JsonValue:
    """A call's arguments as a JSON value: a JSON string decoded, anything else as it is."""
    if isinstance(arguments, str):
        try:
            return orjson.loads(arguments)
        except orjson.JSONDecodeError:
            return arguments
    return arguments


def encode_arguments(arguments: JsonValue) -> str:
    """The JSON string a dialect that stores arguments as a string keeps for ``arguments``.

    A string is encoded too (as a JSON string), so reading it back gives the same string,
    whether or not its text is itself JSON.
    """
    return orjson.dumps(arguments).decode()


def image_from_base64(media_type: Any, data: Any, raw: Any) -> Part:
    """An `ImagePart` of base64 ``data``, or an `OtherPart` of ``raw`` when it is no base64."""
    if not isinstance(data, str):
        return OtherPart(raw)
    try:
        decoded = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return OtherPart(raw)
    return ImagePart(media_type if isinstance(media_type, str) else None, data=decoded)


def image_from_url(url: Any, raw: Any) -> Part:
    """An `ImagePart` for ``url``: a ``data:`` URL's bytes decoded, any other URL kept."""
    if not isinstance(url, str):
        return OtherPart(raw)
    if url.startswith("data:"):
        header, sep, body = url.partition(",")
        if sep and header.endswith(";base64"):
            media_type = header[len("data:") : -len(";base64")] or None
            return image_from_base64(media_type, body, raw)
        return OtherPart(raw)
    return ImagePart(None, url=url)


def data_url(image: ImagePart) -> str | None:
    """The ``data:`` URL of an image that has bytes, else None."""
    if image.data is None:
        return None
    encoded = base64.b64encode(image.data).decode()
    return f"data:{image.media_type or 'application/octet-stream'};base64,{encoded}"


def base64_of(data: bytes) -> str:
    """``data`` as standard base64 text."""
    return base64.b64encode(data).decode()


#: OpenAI Chat Completions content parts, and the ``input_text``/``output_text`` of the
#: Responses API, both carry their text under ``text``.
_TEXT_TYPES = frozenset({"text", "input_text", "output_text"})


def content_item(item: Any) -> Part:
    """One item of a content list as a part: text, an image in any of the shapes the built-in
    dialects use, or an `OtherPart`.

    Covers OpenAI Chat (``text``, ``image_url``), the Responses API (``input_text``,
    ``output_text``, ``refusal``, ``input_image``) and Anthropic (``text``, ``image``); a bare
    string is text.
    """
    if isinstance(item, str):
        return TextPart(item)
    if not isinstance(item, dict):
        return OtherPart(item)
    kind = item.get("type")
    if kind in _TEXT_TYPES and isinstance(item.get("text"), str):
        return TextPart(item["text"])
    if kind == "refusal" and isinstance(item.get("refusal"), str):
        return TextPart(item["refusal"])
    if kind == "image_url":
        inner = item.get("image_url")
        return image_from_url(inner.get("url") if isinstance(inner, dict) else inner, item)
    if kind == "input_image" and isinstance(item.get("image_url"), str):
        return image_from_url(item["image_url"], item)
    if kind == "image":
        return _anthropic_image(item)
    return OtherPart(item)


def _anthropic_image(block: dict[str, Any]) -> Part:
    source = block.get("source")
    if isinstance(source, dict):
        if source.get("type") == "base64":
            return image_from_base64(source.get("media_type"), source.get("data"), block)
        if source.get("type") == "url":
            return image_from_url(source.get("url"), block)
    return OtherPart(block)


def content_parts(content: Any) -> list[Part]:
    """A message's ``content`` as parts: a string is one text part (none when empty), a list
    one part per item, None nothing, and any other value an `OtherPart`."""
    if content is None or content == "":
        return []
    if isinstance(content, str):
        return [TextPart(content)]
    if isinstance(content, list):
        return [content_item(item) for item in content]
    return [OtherPart(content)]


def result_content(content: Any) -> str | list[Part]:
    """A tool result's content: a string as it is, a list as parts, anything else as its JSON text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return [content_item(item) for item in content]
    if content is None:
        return ""
    return orjson.dumps(content, option=orjson.OPT_INDENT_2).decode()


def chat_item(part: Part) -> Any:
    """A part as an OpenAI Chat content item (the neutral shape of a content list)."""
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if isinstance(part, ImagePart):
        url = data_url(part) if part.data is not None else part.url
        return {"type": "image_url", "image_url": {"url": url}}
    if isinstance(part, OtherPart):
        return part.raw
    raise InvalidArgument(f"a {part.kind} part cannot stand in a content list")


def result_metadata(part: Part) -> dict[str, Any] | None:
    """The metadata of a shell result (Codex's exit code and duration), which the
    ``openai-responses`` dialect gives as an `OtherPart` ``{"metadata": {...}}`` after the
    output's text (spec §5.2); None for any other part. Readers show it as one line of facts."""
    if isinstance(part, OtherPart) and isinstance(part.raw, dict) and set(part.raw) == {"metadata"}:
        metadata = part.raw["metadata"]
        return metadata if isinstance(metadata, dict) else None
    return None


def text_of(parts: list[Part] | str) -> str:
    """The text of a result's content: a string as it is, else its text parts joined by newlines."""
    if isinstance(parts, str):
        return parts
    return "\n".join(part.text for part in parts if isinstance(part, TextPart))
