"""What Claude Code's side lines say, as the importer keeps them (spec §19).

Beside the conversation, a Claude Code transcript holds ``system`` lines (an API error, a
hook's summary, a turn's duration), ``attachment`` lines (a prompt queued while the agent
worked, a hook's output or added context) and ``summary`` lines (a title Claude Code gave
the conversation). Each becomes a hidden record holding the line as written; this module
gives the text such a record shows and search finds: what the line says in words, never
its ids and flags.
"""

from __future__ import annotations

from typing import Any

from . import _source
from ._events import Entry, fields_text

#: Fields every line repeats (the session's, kept in its meta) or that the record keeps
#: elsewhere (``type`` as ``claude_code_type``, ``uuid`` and ``timestamp`` in its metadata).
ENVELOPE = frozenset({"type", "uuid", "timestamp", "sessionId", "session_id", "cwd", "version",
                       "gitBranch", "userType", "entrypoint", "slug"})  # fmt: skip
#: Where an attachment keeps its text, first found first (a queued prompt, a hook's
#: context or output, a reminder's text).
ATTACHMENT_TEXT = ("prompt", "content", "text", "stdout", "stderr")


def _error_text(error: object) -> str:
    """The message of a ``system`` line's ``error`` (an ``api_error`` nests the API's own error
    object in it: ``error.error.error.message``), else its formatted text or its type."""
    for _ in range(4):  # the nesting Claude Code writes, no deeper
        if not isinstance(error, dict):
            return error if isinstance(error, str) else ""
        for key in ("message", "formatted"):
            if isinstance(error.get(key), str) and error[key]:
                return str(error[key])
        if isinstance(error.get("error"), (dict, str)):
            error = error["error"]
            continue
        return str(error["type"]) if isinstance(error.get("type"), str) else ""
    return ""


def system_text(d: dict[str, Any]) -> str:
    """What a ``system`` line says: its ``content``, an error's message, else its plain fields."""
    content = d.get("content")
    if isinstance(content, str) and content:
        return content
    return _error_text(d.get("error")) or fields_text_of(d)


#: Fields of a line that are no part of what it says: ids, links, flags.
_NOT_SAID = frozenset({"type", "subtype", "uuid", "parentUuid", "logicalParentUuid", "isSidechain",
                       "isMeta", "timestamp", "toolUseID", "requestId", "level"})  # fmt: skip


def fields_text_of(d: dict[str, Any]) -> str:
    """A line's plain fields as text, the envelope, ids and flags left out (`fields_text`)."""
    return fields_text(d, ENVELOPE | _NOT_SAID)


def text_of(value: object) -> str:
    """An attachment field's text: a string, or a list of strings one a line (a hook's added context)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(item, str) for item in value):
        return "\n".join(value)
    return ""


def summary_entry(session_id: str, line: _source.SourceLine, d: dict[str, Any], timestamp: object) -> Entry:
    """A ``summary`` line as a hidden ``system`` record holding its text as written, its ``leafUuid`` kept."""
    metadata: dict[str, Any] = {"leafUuid": d["leafUuid"]} if isinstance(d.get("leafUuid"), str) else {}
    if isinstance(timestamp, str):
        metadata["timestamp"] = timestamp
    message = {
        "role": "system",
        "content": d["summary"],
        "claude_code_type": "summary",
        "include_in_messages": False,
    }
    return Entry(session_id, message, line.number, line.end, metadata=metadata)
