"""Messages the framework adapters store, shown as a person reads them, not as JSON.

The pydantic-ai and pydantic-ai-harness adapters store a framework's own JSON under a
record's ``content`` with a ``format`` key saying whose it is (``jsonl_store/adapters``):
a pydantic-ai ``ModelMessage`` (``"pydantic-ai"``), an ACP session update
(``"acp-update"``), a state record (``"pydantic-ai-state"``). Printed as JSON those are a
wall of keys and nulls; here each becomes a label for the header and the lines of its
body: the text, the tool calls with their arguments, the tool results. Only the shapes
are read (no framework is imported), and anything unexpected falls back to JSON.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: What a shown message is: the label for its header, and its body as text.
Shown = tuple[str, str, list[tuple[str, str, Any]]]


def _text_of(value: Any) -> str | None:
    """A text value, or the text of a text block (``{"type": "text", "text": ...}``)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and value.get("type") == "text":
        text = value.get("text")
        return text if isinstance(text, str) else None
    return None


def _content_text(content: Any, inline: Callable[[Any], str]) -> str:
    """Prompt or result content: strings as they are, binary values as their type and size."""
    items = content if isinstance(content, list) else [content]
    out = []
    for item in items:
        text = _text_of(item)
        if text is not None:
            out.append(text)
        elif isinstance(item, dict) and item.get("kind") == "binary":
            size = len(item.get("data") or "") * 3 // 4
            out.append(f"[{item.get('media_type', 'binary')}, about {size:,} bytes]")
        elif isinstance(item, dict) and item.get("type") == "image":
            size = len(item.get("data") or "") * 3 // 4
            out.append(f"[{item.get('mimeType', 'image')}, about {size:,} bytes]")
        else:
            out.append(inline(item))
    return "\n".join(out)


def _pydantic_ai(content: dict[str, Any], inline: Callable[[Any], str]) -> Shown:
    """A ModelRequest or ModelResponse: its parts, one after another."""
    lines: list[str] = []
    calls: list[tuple[str, str, Any]] = []
    for part in content.get("parts") or ():
        if not isinstance(part, dict):
            continue
        kind = part.get("part_kind")
        if kind in ("user-prompt", "text"):
            lines.append(_content_text(part.get("content"), inline))
        elif kind in ("system-prompt", "thinking"):
            lines.append(f"({kind}) {_content_text(part.get('content'), inline)}")
        elif kind == "tool-call":
            calls.append((str(part.get("tool_call_id")), str(part.get("tool_name")), part.get("args")))
        elif kind in ("tool-return", "retry-prompt"):
            outcome = part.get("outcome")
            mark = f" {outcome}" if outcome not in (None, "success") else ""
            lines.append(
                f"← {part.get('tool_name')} [{part.get('tool_call_id')}]{mark}: "
                + _content_text(part.get("content"), inline)
            )
        else:
            lines.append(inline(part))
    label = "pydantic-ai " + str(content.get("kind", "message"))
    return label, "\n".join(lines), calls


def _acp_update(content: dict[str, Any], inline: Callable[[Any], str]) -> Shown:
    """An ACP session update: its kind, and its text, tool call or plan."""
    kind = str(content.get("sessionUpdate", "update"))
    if "content" in content and kind.endswith("_chunk"):
        return kind, _content_text(content["content"], inline), []
    if kind in ("tool_call", "tool_call_update"):
        facts = [str(content[key]) for key in ("title", "status", "kind") if content.get(key)]
        body = " · ".join(facts)
        if "rawInput" in content:
            body += f"\ninput: {inline(content['rawInput'])}"
        if "rawOutput" in content:
            body += f"\noutput: {inline(content['rawOutput'])}"
        return f"{kind} [{content.get('toolCallId', '?')}]", body, []
    if kind == "plan":
        entries = content.get("entries") or []
        return (
            kind,
            "\n".join(
                f"- [{e.get('status', '?')}] {e.get('content', '')}" for e in entries if isinstance(e, dict)
            ),
            [],
        )
    rest = {key: value for key, value in content.items() if key != "sessionUpdate"}
    return kind, inline(rest) if rest else "", []


def _state(content: dict[str, Any], inline: Callable[[Any], str]) -> Shown:
    model = content.get("model")
    return (
        "state",
        f"keeps the first {content.get('messages')} messages and {content.get('updates')} updates"
        + (f"; model {model}" if model else ""),
        [],
    )


_SHOWN: dict[str, Callable[[dict[str, Any], Callable[[Any], str]], Shown]] = {
    "pydantic-ai": _pydantic_ai,
    "acp-update": _acp_update,
    "pydantic-ai-state": _state,
}


def shown(data: dict[str, Any], inline: Callable[[Any], str]) -> Shown | None:
    """``(label, body, tool calls)`` for a message an adapter stored, or None for any other."""
    render = _SHOWN.get(data.get("format"))  # type: ignore[arg-type]
    content = data.get("content")
    if render is None or not isinstance(content, dict):
        return None
    return render(content, inline)


__all__ = ["shown"]
