"""pi sessions (``~/.pi/agent/sessions/--<cwd>--/<time>_<id>.jsonl``) as sessions.

pi (https://github.com/badlogic/pi-mono, ``packages/coding-agent/docs/session.md``) writes a
``session`` header line, then entries linked by ``id``/``parentId``: ``message`` entries
(roles ``user``, ``assistant``, ``toolResult``, ``bashExecution`` ...), ``model_change``,
``compaction``, ``session_info`` (the session's name) and more. Entries are read in file
order (the branch written last wins where a session branched). Messages are stored in
this library's neutral shape (dialect ``"neutral"``): an assistant message's ``toolCall``
blocks become ``tool_calls``, a ``toolResult`` a ``role: "tool"`` message with its
``tool_call_id`` and ``is_error``. Usage is on each assistant message once, with
``input_tokens`` counting cached input too (pi's ``input`` + ``cacheRead`` + ``cacheWrite``).
A ``compaction`` entry becomes a snapshot. Every other entry (``session_info``,
``model_change``, ``thinking_level_change``, a message of a role no dialect sends, an
entry type newer than this importer) is a hidden record (``include_in_messages=False``)
holding it as written (``pi_line``), labelled ``pi_type``; only the header is not stored.

Session id: ``pi-<id>`` from the header, through `encode_session_id`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from .. import ModelUsage
from ._events import Collector, Compaction, Entry, Parsed, Target, fields_text, session_id_for, token_count

PREFIX = "pi-"
#: Fields a hidden record keeps elsewhere (``type`` as ``pi_type``, ``id`` and ``timestamp`` in its metadata).
_ENVELOPE = frozenset({"type", "id", "timestamp"})
#: Fields no part of what a line says: its links.
_NOT_SAID = frozenset({"parentId"})


def default_location() -> str:
    """``$PI_CODING_AGENT_DIR/sessions``, else ``~/.pi/agent/sessions``."""
    base = os.environ.get("PI_CODING_AGENT_DIR") or os.path.join(os.path.expanduser("~"), ".pi", "agent")
    return os.path.join(base, "sessions")


def usage_of(message: dict[str, Any]) -> ModelUsage | None:
    usage = message.get("usage")
    if not isinstance(usage, dict):
        return None
    read, write = token_count(usage, "cacheRead"), token_count(usage, "cacheWrite")
    fresh, output = token_count(usage, "input"), token_count(usage, "output")
    if not (read or write or fresh or output):
        return None
    return ModelUsage(input_tokens=fresh + read + write, output_tokens=output, cache_read_tokens=read,
                      cache_write_tokens=write)  # fmt: skip


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))
    return ""


def _assistant(message: dict[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    blocks: list[Any] = content if isinstance(content, list) else []
    calls = [
        {"id": b["id"], "name": b.get("name"), "arguments": b.get("arguments")}
        for b in blocks
        if isinstance(b, dict) and b.get("type") == "toolCall" and isinstance(b.get("id"), str)
    ]
    thinking = "\n".join(
        b["thinking"] for b in blocks if isinstance(b, dict) and isinstance(b.get("thinking"), str)
    )
    converted: dict[str, Any] = {"role": "assistant", "content": _text(message.get("content"))}
    if calls:
        converted["tool_calls"] = calls
    if thinking:
        converted["reasoning"] = thinking
    return converted


def convert(message: dict[str, Any]) -> dict[str, Any] | None:
    """A pi message in the neutral shape, or None for a role that is no conversation message."""
    role = message.get("role")
    if role == "user":
        return {
            "role": "user",
            "content": message.get("content") if isinstance(message.get("content"), (str, list)) else "",
        }
    if role == "assistant":
        return _assistant(message)
    if role == "toolResult" and isinstance(message.get("toolCallId"), str):
        result = {
            "role": "tool",
            "tool_call_id": message["toolCallId"],
            "content": _text(message.get("content")),
        }
        if isinstance(message.get("toolName"), str):
            result["name"] = message["toolName"]
        if message.get("isError") is True:
            result["is_error"] = True
        return result
    if role == "bashExecution" and isinstance(message.get("command"), str):
        output = message.get("output") if isinstance(message.get("output"), str) else ""
        return {"role": "user", "content": f"Ran `{message['command']}`:\n{output}"}
    return None


class Pi:
    """The pi session format (see the module's docstring)."""

    tool = "pi"
    dialect = "neutral"
    expected = "a pi session (JSON lines headed by a line of type session with its id)"

    def identify(self, path: str, head: list[dict[str, Any]]) -> Target | None:
        for d in head:
            if d.get("type") == "session" and isinstance(d.get("id"), str):
                cwd = d.get("cwd")
                return Target(
                    session_id_for(PREFIX, d["id"]),
                    agent_name="pi",
                    cwd=cwd if isinstance(cwd, str) else None,
                )
        return None

    def parse(self, path: str, lines: Iterator[Parsed], out: Collector) -> None:
        for line, d in lines:
            kind = d.get("type")
            metadata = {k: d[k] for k in ("timestamp", "id") if isinstance(d.get(k), str)}
            message = d.get("message")
            if (
                kind == "message"
                and isinstance(message, dict)
                and (converted := convert(message)) is not None
            ):
                if isinstance(message.get("model"), str):
                    metadata["model"] = message["model"]
                request_id = message.get("responseId") if isinstance(message.get("responseId"), str) else None
                usage = usage_of(message) if message.get("role") == "assistant" else None
                out.add(
                    Entry(out.main.session_id, converted, line.number, line.end, usage, request_id, metadata)
                )
            elif kind == "compaction" and isinstance(d.get("summary"), str) and d["summary"]:
                out.add(Compaction(out.main.session_id, d["summary"], line.number, line.end, metadata))
            elif kind == "session":
                out.read_into_meta(
                    "session", "the file's header: its id and cwd are the session's id and metadata cwd"
                )
            else:
                if kind == "session_info" and isinstance(d.get("name"), str):
                    out.main.title = d["name"]
                # A setting (model, thinking level), the session's name, a message of a role no
                # dialect sends, a line type newer than this importer: kept as written, hidden.
                fields = {k: v for k, v in d.items() if k not in _ENVELOPE}
                shown = {k: v for k, v in fields.items() if k != "message"}
                kept = {"role": "system", "content": fields_text(shown, _NOT_SAID), "pi_type": str(kind),
                        "pi_line": fields, "include_in_messages": False}  # fmt: skip
                out.add(Entry(out.main.session_id, kept, line.number, line.end, metadata=metadata))
