"""What an export shows of one session, read once through `SessionStore`'s public API.

A `Transcript` is the session's summary (`get_session`), every record of its raw log
(`records`), the latest snapshot (`load`: where the model context was compacted), its
parent and children (`list_sessions(parent_session_id=...)`) and its token totals
(`usage_totals`). The Markdown, HTML and JSON renderings are made from it alone, and
they read every message through the message model (`jsonl_store.message_parts`, in the
session's own dialect) with each tool result folded under the call it answers
(`_folding.fold`): no renderer reads one dialect's keys.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import msgspec

from .._context.dialects import message_parts
from .._context.folding import Answer, Folded, fold
from .._context.parts import ImagePart, Part, ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from .._context.view import SessionSummary, imported_kind, shown_role
from .._errors import SessionNotFound
from .._format.depth import with_deep_stack
from .._format.records import ContextSnapshot, ModelUsage, RawMessageRecord
from .._usage_report import UsageRow, usage_report
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


#: Images up to this size are inlined in a page as ``data:`` URLs (HTML and Markdown); a
#: larger one is written beside the pages by `export_html` (``images/<sha256>.<ext>``) and
#: linked, or shown as a placeholder with its type and size in a single file.
INLINE_IMAGE_CAP = 256 * 1024

_MEDIA_TYPE = re.compile(r"image/[a-z0-9.+-]{1,40}")


def image_type(image: ImagePart) -> str | None:
    """The image's media type when it is a plausible ``image/...`` one (it goes into a URL), else None."""
    media_type = image.media_type
    return media_type if media_type is not None and _MEDIA_TYPE.fullmatch(media_type) else None


@dataclass(frozen=True)
class Transcript:
    """One session as an export shows it."""

    summary: SessionSummary
    records: list[RawMessageRecord]
    snapshot: ContextSnapshot | None
    children: list[SessionSummary]
    totals: ModelUsage
    #: Each sub-agent session's first prompt (stripped) → its session: how a call that
    #: started it (a Claude Code ``Task``/``Agent`` call passes it as an argument) links to it.
    prompts: dict[str, SessionSummary] = field(default_factory=dict)
    #: The session's own model calls summed and priced (`jsonl_store.usage_report`); None
    #: when it recorded none.
    cost: UsageRow | None = None

    @property
    def cost_label(self) -> str:
        """What the session's calls cost, or why that is not known (never a guessed $0)."""
        row = self.cost
        if row is None or not row.calls:
            return "no model calls recorded"
        if row.prices_version is None:
            return "not known: prices need the cost extra (pip install 'jsonl_store[cost]')"
        if row.cost_usd is None:
            models = ", ".join(row.unpriced_models)
            return f"not known: {row.unpriced_calls:,} of {row.calls:,} calls by models without a price ({models})"
        calls = f"{row.calls:,} call{'' if row.calls == 1 else 's'}"
        return f"${row.cost_usd:,.4f} for {calls} (prices: {row.prices_version})"

    def started(self, call: ToolCallPart) -> SessionSummary | None:
        """The sub-agent session ``call`` started: one whose first prompt is an argument of the call."""
        if not self.prompts or not isinstance(call.arguments, dict):
            return None
        for value in call.arguments.values():
            if isinstance(value, str) and value.strip() in self.prompts:
                return self.prompts[value.strip()]
        return None


def collect(
    store: SessionStore, session_id: str, *, listing: list[SessionSummary] | None = None
) -> Transcript:
    """Read ``session_id`` for an export.

    ``listing``, every session of the store as `list_sessions` gave it, saves asking the
    store for the session's children (what `export_html` passes: asking once per session
    read every summary for every session, minutes for 1,000 sessions).
    Raises `SessionNotFound` (a `KeyError`) for a session that does not exist, and what
    `SessionStore.get_session`, `load` and `records` raise.
    """
    summary = store.get_session(session_id)
    if summary is None:
        raise SessionNotFound(
            f"session {session_id!r} does not exist in {store.root!r}", session_id=session_id
        )
    if listing is None:
        children = store.list_sessions(parent_session_id=session_id)
    else:
        children = [other for other in listing if other.parent_session_id == session_id]
    return Transcript(
        summary=summary,
        records=list(store.records(session_id)),
        snapshot=store.load(session_id).snapshot,
        children=children,
        totals=store.usage_totals(session_id),
        prompts={prompt: child for child in children if (prompt := _first_prompt(store, child))},
        cost=_cost(store, session_id),
    )


@with_deep_stack  # genai-prices builds its price table on first use, which takes more stack than a deep caller may have left
def _cost(store: SessionStore, session_id: str) -> UsageRow | None:
    """The session's own model calls summed and priced (None when it has none)."""
    return next(iter(usage_report(store, by="session", session_id=session_id)), None)


def _first_prompt(store: SessionStore, child: SessionSummary) -> str:
    """The text of a session's first record, stripped (empty when it has none)."""
    for record in store.records(child.session_id):
        parts = message_parts(record.message, child.dialect)
        return "\n\n".join(part.text for part in parts if isinstance(part, TextPart)).strip()
    return ""


def json_text(value: object) -> str:
    """``value`` as indented JSON text (non-ASCII kept, as stored); a string as it is."""
    if isinstance(value, str):
        return value
    try:
        data = msgspec.json.encode(value)
    except (TypeError, UnicodeEncodeError, OverflowError):
        return repr(value)
    return msgspec.json.format(data, indent=2).decode("utf-8", "replace")


def arguments_preview(arguments: object, width: int = 100) -> str:
    """A call's arguments on one line, cut at ``width`` characters with ``…``: for ``→ name(args)``.

    An object reads as ``key=value`` pairs (values as JSON); the whole arguments are always
    shown in full under the line.
    """
    if isinstance(arguments, dict):
        text = ", ".join(f"{key}={_compact(value)}" for key, value in arguments.items())
    elif arguments is None:
        text = ""
    elif isinstance(arguments, str):
        text = arguments  # a custom tool's free-form input, not JSON
    else:
        text = _compact(arguments)
    text = one_line(text)
    return text if len(text) <= width else text[: width - 1] + "…"


def _compact(value: object) -> str:
    try:
        return msgspec.json.encode(value).decode("utf-8", "replace")
    except (TypeError, UnicodeEncodeError, OverflowError):
        return repr(value)


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


def _role(message: object, parts: list[Part]) -> str:
    """The role a message states; for an item with none (a Responses function call or
    reasoning item), the role its parts imply."""
    role = shown_role(message)
    if role is not None:
        return role
    if any(isinstance(part, (ToolCallPart, ReasoningPart)) for part in parts):
        return "assistant"
    if parts and all(isinstance(part, ToolResultPart) for part in parts):
        return "tool"
    return "other"


def _in_context(message: object) -> bool:
    # A plain dict stored with include_in_messages=False is kept out of the model context
    # (docs/guides/store.md, `append`): a Codex token_count event is one.
    return not (isinstance(message, dict) and message.get("include_in_messages") is False)


@dataclass(frozen=True)
class Entry:
    """One thing a transcript shows, in order: a record's message, or a compaction boundary.

    For a message: its ``role``, the ``parts`` it shows itself (index in the message, part:
    every part but the results already shown under their call), ``answers`` (a call's
    index → the result that answers it, wherever that is stored), and its facts. An entry
    with no part to show is a one-line fact (`fact`: a Codex ``token_count`` event shows its
    tokens). For the boundary (``role == "boundary"``, after the record ``sequence``):
    ``text`` is the latest snapshot's compacted message, which replaces records 1 to
    ``sequence`` in the model context.
    """

    sequence: int
    role: str
    parts: list[tuple[int, Part]] = field(default_factory=list)
    answers: dict[int, Answer] = field(default_factory=dict)
    time: str = ""
    tokens: str = ""
    duration: str = ""
    #: False for a record stored with ``include_in_messages=False`` (kept out of the context).
    in_context: bool = True
    text: str = ""
    snapshot_version: int = 0
    #: The kind of source line an imported record holds (`imported_kind`: ``summary``,
    #: ``attachment:hook_success``), "" for a plain message.
    kind: str = ""

    @property
    def fact(self) -> bool:
        """True for a message with nothing to show but its facts (a one-line entry, never a card)."""
        return self.role != "boundary" and not self.parts


def entries(transcript: Transcript) -> list[Entry]:
    """What a transcript shows, in raw-log order, with the latest snapshot's boundary in place.

    A record whose every part is a result already shown under its call is not shown again.
    """
    snapshot = transcript.snapshot
    out: list[Entry] = []
    for folded in fold(transcript.records, transcript.summary.dialect):
        if not folded.empty:
            out.append(_entry(folded))
        if snapshot is not None and folded.record.sequence == snapshot.compacted_through_sequence:
            out.append(_boundary(snapshot, transcript.summary.dialect))
    if snapshot is not None and not any(e.role == "boundary" for e in out):
        out.insert(0, _boundary(snapshot, transcript.summary.dialect))  # its record is not readable any more
    return out


def _boundary(snapshot: ContextSnapshot, dialect: str) -> Entry:
    parts = message_parts(snapshot.compacted_message, dialect)
    text = "\n\n".join(part.text for part in parts if isinstance(part, TextPart))
    return Entry(
        snapshot.compacted_through_sequence, "boundary", text=text, snapshot_version=snapshot.version
    )


def _entry(folded: Folded) -> Entry:
    record = folded.record
    usage = record.usage
    # A result in the same message as its call is shown under the call, not a second time.
    under_calls = {id(answer.part) for answer in folded.answers.values() if answer.record is record}
    return Entry(
        record.sequence,
        _role(record.message, folded.parts),
        parts=[(index, part) for index, part in folded.shown if id(part) not in under_calls],
        answers=folded.answers,
        time=when(record.created_at),
        tokens=tokens_label(usage) if usage is not None else "",
        duration=duration_label(record),
        in_context=_in_context(record.message),
        kind=imported_kind(record.message) or "",
    )


#: Text a tool puts in a user message of its own accord: markup (Codex's
#: ``<environment_context>``, Claude Code's ``<command-name>``) and Claude Code's notice
#: before a local command's output. A headline skips them, as claude-code-log does.
_NOT_TYPED = ("<", "Caveat: The messages below were generated by the user while running local commands")


def headline(transcript: Transcript) -> str:
    """The session's title, else the start of its first user text that a person typed (not
    text the tool added, `_NOT_TYPED`), else its id."""
    if transcript.summary.title:
        return transcript.summary.title
    for entry in entries(transcript):
        if entry.role != "user":
            continue
        for _, part in entry.parts:
            if (
                isinstance(part, TextPart)
                and part.text.strip()
                and not part.text.lstrip().startswith(_NOT_TYPED)
            ):
                text = " ".join(part.text.split())
                return text if len(text) <= 80 else text[:79] + "…"
    return transcript.summary.session_id


def facts(entry: Entry) -> list[str]:
    """The one-line facts of a message entry: ``#4 assistant``, its time, duration, tokens, context."""
    out = [f"#{entry.sequence} {entry.role}" + (f" {entry.kind}" if entry.kind else "")]
    out += [fact for fact in (entry.time, entry.duration) if fact]
    if entry.tokens:
        out.append(f"tokens {entry.tokens}")
    if not entry.in_context:
        out.append("not in the model context")
    if entry.fact and not entry.tokens:
        out.append("no content")
    return out


def calls_in(transcript: Transcript) -> int:
    """How many tool calls the transcript's messages make."""
    return sum(
        isinstance(part, ToolCallPart)
        for folded in fold(transcript.records, transcript.summary.dialect)
        for part in folded.parts
    )


def to_json(store: SessionStore, session_id: str) -> bytes:
    """``session_id`` as one JSON document: ``session``, ``snapshot``, ``records``, ``children``, ``totals``.

    Every record is given with its sequence, message (as stored), timing, token counts and
    ``parts``: the message read in the session's dialect (`jsonl_store.message_parts`),
    each part an object tagged by ``kind``. An image part gives ``media_type``, ``url``,
    ``size`` and ``sha256`` of its bytes, never the bytes again: they are in the message.
    Dates are ISO 8601 strings. Raises what `collect` raises.
    """
    return _json_document(collect(store, session_id))


@with_deep_stack  # whatever append accepts, however deep the caller's stack (spec §4)
def _json_document(transcript: Transcript) -> bytes:
    dialect = transcript.summary.dialect
    document = {
        "session": {**msgspec.to_builtins(transcript.summary), "dialect": dialect},
        "snapshot": None if transcript.snapshot is None else msgspec.to_builtins(transcript.snapshot),
        "records": [_record_dict(folded) for folded in fold(transcript.records, dialect)],
        "children": [child.session_id for child in transcript.children],
        "totals": {**msgspec.to_builtins(transcript.totals), "total_tokens": transcript.totals.total_tokens},
    }
    return msgspec.json.format(msgspec.json.encode(document), indent=2) + b"\n"


def _record_dict(folded: Folded) -> dict[str, Any]:
    record = folded.record
    data: dict[str, Any] = msgspec.to_builtins(record)
    data["message"] = _message_dict(record.message)
    data["parts"] = [_part_dict(part) for part in folded.parts]
    data.pop("session_id", None)
    return data


def _message_dict(message: object) -> Any:
    """A stored message as JSON: a dict as it is, a class instance as its fields with its ``role``."""
    if isinstance(message, msgspec.Struct):
        return {"role": getattr(message, "role", ""), **msgspec.to_builtins(message)}
    return msgspec.to_builtins(message)


def _part_dict(part: Part) -> Any:
    if isinstance(part, ImagePart):
        return image_dict(part)
    if isinstance(part, ToolResultPart) and isinstance(part.content, list):
        return {**msgspec.to_builtins(part), "content": [_part_dict(inner) for inner in part.content]}
    return msgspec.to_builtins(part)


def image_dict(image: ImagePart) -> dict[str, Any]:
    """An image part as JSON without its bytes: ``kind``, ``media_type``, ``url``, ``size``, ``sha256``."""
    out: dict[str, Any] = {"kind": "image", "media_type": image.media_type, "url": image.url}
    if image.data is not None:
        out["size"] = len(image.data)
        out["sha256"] = hashlib.sha256(image.data).hexdigest()
    return out


__all__ = [
    "INLINE_IMAGE_CAP",
    "Entry",
    "Transcript",
    "arguments_preview",
    "calls_in",
    "collect",
    "duration_label",
    "entries",
    "facts",
    "headline",
    "image_dict",
    "image_type",
    "json_text",
    "one_line",
    "page_name",
    "to_json",
    "tokens_label",
    "visible",
    "when",
]
