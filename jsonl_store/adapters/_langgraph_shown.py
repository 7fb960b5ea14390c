"""What people see of a LangGraph thread: readable copies of its values, one-line notes.

The checkpointer keeps LangGraph's serde output exactly (``_langgraph_log``); beside it,
each LangChain message is also written as the store's own message so that
``jsonl-store show``, ``search`` and the HTML export read a thread as a conversation, and
every other record carries a one-line note kept out of the session context. The store's
redaction cannot see into the serde's base64, so values are redacted here first.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from langchain_core.messages import BaseMessage
from pydantic import BaseModel

from ._langgraph_log import KEY


def readable(item: Any) -> dict[str, Any]:
    """A list element as the store's own message, for people and the store's readers.

    LangChain messages map to their roles (an AI message's tool calls to the store's
    ``tool_calls``); anything else is a system message kept out of the session context.
    The exact element is in the record's data; this copy only needs to be storable
    (`_shown`), so it never makes a put fail.
    """
    kind = getattr(item, "type", None) if isinstance(item, BaseMessage) else None
    content = _shown(getattr(item, "content", None))
    if kind == "human":
        return {"role": "user", "content": content}
    if kind == "system":
        return {"role": "system", "content": content}
    if kind == "ai":
        calls = [
            {
                "id": str(call.get("id") or ""),
                "name": str(call.get("name", "")),
                "arguments": _shown(call.get("args", {})),
            }
            for call in getattr(item, "tool_calls", ())
        ]
        return {"role": "assistant", "content": content, **({"tool_calls": calls} if calls else {})}
    if kind == "tool":
        return {
            "role": "tool",
            "tool_call_id": str(getattr(item, "tool_call_id", "")),
            "content": content,
            **({"is_error": True} if getattr(item, "status", None) == "error" else {}),
        }
    label = f"a LangChain {kind} message" if kind else f"a {type(item).__name__}"
    return {"role": "system", "content": f"langgraph: {label}", "include_in_messages": False}


def _shown(value: Any, depth: int = 0) -> Any:
    """``value`` as JSON the store keeps unchanged (spec §5): for the readable copy only.

    Tuples become lists, keys strings, and what JSON cannot hold (bytes, NaN, a lone
    surrogate, an object, nesting past 100 levels) its ``repr``.
    """
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)  # an IntEnum as its number
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else repr(value)
    if isinstance(value, str):
        text = str.__str__(value)  # a str enum as its text
        return text if text.isascii() or _encodes(text) else repr(text)
    if depth < 100 and isinstance(value, (list, tuple)):
        return [_shown(item, depth + 1) for item in value]
    if depth < 100 and isinstance(value, dict):
        # "$blob" is the store's marker key (spec §5.1): a message may not hold it.
        return {
            (repr(key) if key == "$blob" else _shown(str(key), depth + 1)): _shown(item, depth + 1)
            for key, item in value.items()
        }
    return repr(value)


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate, which the store refuses (spec §5)
        return False
    return True


def redact_strings(value: Any, redact: Callable[[str], str]) -> Any:
    """A copy of ``value`` with ``redact`` applied to every string in it; ``value`` itself
    when none changed.

    Reaches into what LangGraph state holds: strings, lists, tuples, dicts (keys too) and
    pydantic models (LangChain messages among them) field by field. Objects of other types
    are stored as the serializer writes them, unredacted.
    """
    if isinstance(value, str):
        new = redact(value)
        return value if new == value else new
    if type(value) in (list, tuple):
        items = [redact_strings(item, redact) for item in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return items if type(value) is list else tuple(items)
    if type(value) is dict:
        pairs = [(redact_strings(k, redact), redact_strings(v, redact)) for k, v in value.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(pairs, value.items(), strict=True)):
            return value
        return dict(pairs)
    if isinstance(value, BaseModel):
        changes = {}
        for name in type(value).model_fields:
            field = getattr(value, name, None)
            new = redact_strings(field, redact)
            if new is not field:
                changes[name] = new
        return value.model_copy(update=changes) if changes else value
    return value


def note(text: str, entry: dict[str, Any]) -> dict[str, Any]:
    """A record of the checkpointer's own, shown as one line and kept out of the context."""
    return {"role": "system", "content": f"langgraph: {text}", "include_in_messages": False, KEY: entry}


def step_label(metadata: Any) -> str:
    """`` (step 3, loop)`` for a checkpoint's one-line note, when its metadata says."""
    step, source = metadata.get("step"), metadata.get("source")
    return f" (step {step}, {source})" if step is not None and source else ""
