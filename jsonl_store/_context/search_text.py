"""What a search reads of a message: the strings of its parts, each with the part's kind and field.

One reading for every search, so the substring and regular expression search
(`jsonl_store.search.search`) and the catalog's ranked index (`_session.catalog_index`) look at
the same text: a message read as parts in its dialect (`jsonl_store.message_parts`).
"""

from __future__ import annotations

from collections.abc import Iterator

from .dialect_neutral import Dialect
from .dialects import message_parts
from .parts import ImagePart, Part, ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from .view import shown_role

#: What a hit's `Hit.field` is when it is the part's own text (the other fields:
#: ``"name"`` and ``"arguments"`` of a tool call, ``"url"`` of an image).
CONTENT = "content"


def strings(value: object, *, keys: bool = False) -> Iterator[str]:
    """Every string value inside a JSON value (and every key, with ``keys``), depth first, in order."""
    stack: list[object] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            pending: list[object] = []
            for key, inner in item.items():
                if keys:
                    pending.append(key)
                pending.append(inner)
            stack.extend(reversed(pending))
        elif isinstance(item, list):
            stack.extend(reversed(item))


def part_strings(part: Part) -> Iterator[tuple[str, str]]:
    """Each ``(field, string)`` of one part a search looks at, in order."""
    if isinstance(part, (TextPart, ReasoningPart)):
        yield CONTENT, part.text
    elif isinstance(part, ToolCallPart):
        if isinstance(part.name, str):
            yield "name", part.name
        for text in strings(part.arguments, keys=True):
            yield "arguments", text
    elif isinstance(part, ToolResultPart):
        if isinstance(part.content, str):
            yield CONTENT, part.content
        else:
            for inner in part.content:
                for _, text in part_strings(inner):
                    yield CONTENT, text
    elif isinstance(part, ImagePart):
        if part.url is not None:
            yield "url", part.url
    else:
        # Keys too: an unmapped value is read as stored, where grep would find its keys
        # (a Codex shell result's metadata, a hosted tool's item).
        for text in strings(part.raw, keys=True):
            yield CONTENT, text


def searchable(message: object, dialect: str | Dialect = "neutral") -> Iterator[tuple[str, str, str]]:
    """Each ``(kind, field, string)`` of a message a search looks at, in the message's order.

    The message is read as parts in ``dialect`` (`jsonl_store.message_parts`), so every
    dialect is searched alike: text and reasoning; a tool call's name and the strings of
    its arguments (keys and values, decoded when the dialect stores a JSON string; a
    custom tool's free-form input is one string); a tool result's output (a string, or
    the text of its parts); an image's URL (not its bytes); and every string (keys and
    values) of a part the dialect does not map. Numbers are not text: a search for ``42`` does not find
    ``{"line": 42}``. Kinds and fields are `Hit`'s.
    """
    for part in message_parts(message, dialect):
        for field, text in part_strings(part):
            yield part.kind, field, text


def role_of(message: object) -> str:
    """The role of a stored message (a class instance or a plain dict) as readers show it
    (`view.shown_role`: a Codex ``developer`` message stored as ``system`` is a developer's),
    so a search hit names the role ``show`` and the exports print; "" for none."""
    return shown_role(message) or ""


__all__ = ["CONTENT", "part_strings", "role_of", "searchable", "strings"]
