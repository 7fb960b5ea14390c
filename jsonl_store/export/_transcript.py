"""What an export shows of one session, read once through `SessionStore`'s public API.

A `Transcript` is the session's summary (`get_session`), every record of its raw log
(`records`), the latest snapshot (`load`: where the model context was compacted), its
parent and children (`list_sessions(parent_session_id=...)`) and its token totals
(`usage_totals`). The Markdown, HTML and JSON renderings are made from it alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import msgspec

from .._codec import with_deep_stack
from .._errors import SessionNotFound
from .._records import ContextSnapshot, ModelUsage, RawMessageRecord
from .._view import SessionSummary
from ..store import SessionStore

# The characters an export never shows raw, the set `jsonl_store/cli/_safe.py` escapes
# for a terminal: C0 controls but newline and tab, DEL, C1 controls, the bidirectional
# marks, embeddings, overrides and isolates (which make text read other than it is,
# https://trojansource.codes/), the line and paragraph separators, lone surrogates.
_HIDDEN = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)


def _shown(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` with every hidden character shown in Python's notation (``\\x1b``, ``\\u202e``)."""
    return _HIDDEN.sub(_shown, text)


def one_line(text: str) -> str:
    """`visible`, with newlines and tabs shown too: for titles, names and labels."""
    return visible(text).replace("\n", "\\n").replace("\t", "\\t")


def when(moment: datetime) -> str:
    """A time as a person reads it, in UTC to the second: ``2026-12-01 14:30:47 UTC``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def page_name(session_id: str, suffix: str = ".html") -> str:
    """The file a session's page has in an exported directory: ``session-<id>.html``.

    The prefix keeps every page apart from ``index.html``; a session id is already a safe
    file name (docs/guides/store.md, "The session directory").
    """
    return f"session-{session_id}{suffix}"


@dataclass(frozen=True)
class Transcript:
    """One session as an export shows it."""

    summary: SessionSummary
    records: list[RawMessageRecord]
    snapshot: ContextSnapshot | None
    children: list[SessionSummary]
    totals: ModelUsage


def collect(store: SessionStore, session_id: str) -> Transcript:
    """Read ``session_id`` for an export.

    Raises `SessionNotFound` (a `KeyError`) for a session that does not exist, and what
    `SessionStore.get_session`, `load` and `records` raise.
    """
    summary = store.get_session(session_id)
    if summary is None:
        raise SessionNotFound(
            f"session {session_id!r} does not exist in {store.root!r}", session_id=session_id
        )
    return Transcript(
        summary=summary,
        records=list(store.records(session_id)),
        snapshot=store.load(session_id).snapshot,
        children=store.list_sessions(parent_session_id=session_id),
        totals=store.usage_totals(session_id),
    )


def message_fields(message: object) -> dict[str, Any]:
    """A stored message as a plain dict (a class instance's fields, with its ``role``)."""
    if isinstance(message, dict):
        return message
    if isinstance(message, msgspec.Struct):
        fields: dict[str, Any] = {"role": getattr(message, "role", "")}
        fields.update(msgspec.to_builtins(message))
        return fields
    return {"role": ""}


def text_of(content: object) -> str:
    """A message's content as text: a string as it is, text parts joined, anything else as JSON."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(
        isinstance(p, dict) and isinstance(p.get("text"), str) for p in content
    ):
        return "\n\n".join(p["text"] for p in content)
    return json_text(content)


def json_text(value: object) -> str:
    """``value`` as indented JSON text (non-ASCII kept, as stored)."""
    if isinstance(value, str):
        return value
    try:
        data = msgspec.json.encode(value)
    except (TypeError, UnicodeEncodeError, OverflowError):
        return repr(value)
    return msgspec.json.format(data, indent=2).decode("utf-8", "replace")


@dataclass(frozen=True)
class Call:
    """One tool call of an assistant message, as shown."""

    call_id: str
    name: str
    arguments: str


def calls_of(fields: dict[str, Any]) -> list[Call]:
    """The tool calls of a message dict, as the message classes and OpenAI's chat shape hold them."""
    calls = fields.get("tool_calls")
    if not isinstance(calls, list):
        return []
    out = []
    for call in calls:
        if not isinstance(call, dict):
            continue
        function = call.get("function")
        where = function if isinstance(function, dict) else call
        out.append(
            Call(str(call.get("id", "")), str(where.get("name", "")), json_text(where.get("arguments", {})))
        )
    return out


def tokens_label(usage: ModelUsage) -> str:
    """``1,200 in · 40 out`` and the cache and reasoning counts that are not zero."""
    parts = [f"{usage.input_tokens:,} in", f"{usage.output_tokens:,} out"]
    if usage.cache_read_tokens:
        parts.append(f"{usage.cache_read_tokens:,} cache read")
    if usage.cache_write_tokens:
        parts.append(f"{usage.cache_write_tokens:,} cache write")
    if usage.reasoning_tokens:
        parts.append(f"{usage.reasoning_tokens:,} reasoning")
    return " · ".join(parts)


def duration_label(record: RawMessageRecord) -> str:
    """The record's duration (``2.0 s``), or empty when it has none."""
    if not record.duration_ns:
        return ""
    return f"{record.duration_ns / 1e9:,.1f} s"


@dataclass(frozen=True)
class Entry:
    """One thing a transcript shows, in order: a record's message, or a compaction boundary.

    For a message: ``role``, ``text`` (its content as text), ``reasoning``, its tool
    ``calls``, and for a tool result ``result_of`` (the call id it answers), ``tool_name``
    and ``is_error``. For the boundary (``role == "boundary"``, after the record
    ``sequence``): ``text`` is the latest snapshot's compacted message, which replaces
    records 1 to ``sequence`` in the model context.
    """

    sequence: int
    role: str
    text: str
    reasoning: str = ""
    calls: tuple[Call, ...] = ()
    result_of: str | None = None
    tool_name: str = ""
    is_error: bool = False
    tokens: str = ""
    duration: str = ""
    #: False for a record stored with ``include_in_messages=False`` (kept out of the context).
    in_context: bool = True
    snapshot_version: int = 0


def entries(transcript: Transcript) -> list[Entry]:
    """What a transcript shows, in raw-log order, with the latest snapshot's boundary in place."""
    snapshot = transcript.snapshot
    out: list[Entry] = []
    for record in transcript.records:
        out.append(_entry(record))
        if snapshot is not None and record.sequence == snapshot.compacted_through_sequence:
            out.append(_boundary(snapshot))
    if snapshot is not None and not any(e.role == "boundary" for e in out):
        out.insert(0, _boundary(snapshot))  # its boundary record is not readable any more
    return out


def _boundary(snapshot: ContextSnapshot) -> Entry:
    fields = message_fields(snapshot.compacted_message)
    return Entry(
        snapshot.compacted_through_sequence,
        "boundary",
        text_of(fields.get("content")),
        snapshot_version=snapshot.version,
    )


def _entry(record: RawMessageRecord) -> Entry:
    fields = message_fields(record.message)
    role = str(fields.get("role", ""))
    reasoning = fields.get("reasoning")
    usage = record.usage
    is_tool = role == "tool"
    return Entry(
        record.sequence,
        role,
        text_of(fields.get("content")),
        reasoning=reasoning if isinstance(reasoning, str) else "",
        calls=tuple(calls_of(fields)),
        result_of=str(fields.get("tool_call_id", "")) if is_tool else None,
        tool_name=str(fields.get("name") or "") if is_tool else "",
        is_error=bool(fields.get("is_error")) if is_tool else False,
        tokens=tokens_label(usage) if usage is not None else "",
        duration=duration_label(record),
        in_context=fields.get("include_in_messages", True) is not False,
    )


def to_json(store: SessionStore, session_id: str) -> bytes:
    """``session_id`` as one JSON document: ``session``, ``snapshot``, ``records``, ``children``, ``totals``.

    Every record is given with its sequence, message, timing and token counts; dates are
    ISO 8601 strings. Raises what `collect` raises.
    """
    return _json_document(collect(store, session_id))


@with_deep_stack  # whatever append accepts, however deep the caller's stack (spec §4)
def _json_document(transcript: Transcript) -> bytes:
    document = {
        "session": msgspec.to_builtins(transcript.summary),
        "snapshot": None if transcript.snapshot is None else msgspec.to_builtins(transcript.snapshot),
        "records": [_record_dict(record) for record in transcript.records],
        "children": [child.session_id for child in transcript.children],
        "totals": {**msgspec.to_builtins(transcript.totals), "total_tokens": transcript.totals.total_tokens},
    }
    return msgspec.json.format(msgspec.json.encode(document), indent=2) + b"\n"


def _record_dict(record: RawMessageRecord) -> dict[str, Any]:
    data: dict[str, Any] = msgspec.to_builtins(record)
    data["message"] = message_fields(record.message)
    data.pop("session_id", None)
    return data


__all__ = [
    "Call",
    "Entry",
    "Transcript",
    "calls_of",
    "collect",
    "duration_label",
    "entries",
    "json_text",
    "message_fields",
    "one_line",
    "page_name",
    "text_of",
    "to_json",
    "tokens_label",
    "visible",
    "when",
]
