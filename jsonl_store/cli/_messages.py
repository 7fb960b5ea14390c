"""Records and messages as a person reads them: each message's parts, results under their calls.

Every message is read through the message model (`jsonl_store.message_parts`, in the
session's dialect) and records through `_folding.fold`, which pairs each tool result with
the call it answers, across messages (spec §5). So a Codex ``function_call`` item, an
Anthropic ``tool_use`` block and a neutral ``tool_calls`` entry all print the same way::

      #5 assistant  · 21:32:50
         → shell({"command":["bash","-lc","ls"]})  [call_1]
           ← #6
             README.md

Text is the body; reasoning is labelled ``(reasoning)`` and dimmed; an image is one line
with its media type and size, never its bytes; anything the dialect does not map is one
``[type]`` line with a short excerpt of its JSON (``show --raw`` and ``cat`` give it whole).
A record whose results all show under their calls is not shown again, and a record with
no content (a token count) is one line with its facts, never an empty card. Every stored
string is escaped before it is printed (`_safe.escape`).
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Sequence
from typing import Any

from .. import ContextSnapshot, Message, RawMessageRecord, SessionView
from .._context.dialect_neutral import Dialect
from .._context.dialects import message_parts, resolve
from .._context.folding import Answer, fold
from .._context.parts import (
    ImagePart,
    OtherPart,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    result_metadata,
)
from .._context.view import imported_kind, shown_role
from .._format.depth import with_deep_stack
from . import _frameworks
from ._blocks import Block, Styled
from ._format import WIDTH, inline, message_dict, seconds, when
from ._safe import escape

INDENT = "     "
#: Without ``--full``, a message body is cut after this many lines or characters ...
MAX_LINES = 12
MAX_CHARS = 800
#: ... a tool's result after these: a transcript is read for what the agent did, and a
#: file it read or a test run's log would bury that ...
RESULT_LINES = 6
RESULT_CHARS = 400
#: ... and a call's arguments after these many characters (a whole file written by an
#: edit tool is an argument too).
ARGUMENT_CHARS = 240
#: Content the dialect does not map is shown as a label and this much of its JSON, even
#: with ``--full``: it is no text to read (``show --raw`` and ``cat`` print it whole).
OTHER_CHARS = 120
#: Colours of a message header's role (rich style names; a hint, dropped without colour).
ROLE_STYLES = {
    "user": "bold green",
    "assistant": "bold cyan",
    "tool": "bold yellow",
    "system": "bold magenta",
    "developer": "bold magenta",
    "compacted": "bold blue",
}


# ---------------------------------------------------------------------------------------
# Text laid out
# ---------------------------------------------------------------------------------------


def _wrap(lines: Iterable[str], width: int, *, indent: str = INDENT, long_words: bool = False) -> list[str]:
    out = []
    room = max(width - len(indent), 20)
    for raw in lines:
        # The body's layout: tabs become spaces, every other control is escaped before
        # wrapping (textwrap would turn a "\r" or "\x0b" into a space and hide it).
        line = escape(raw.expandtabs(4))
        if len(line) <= room:
            out.append(indent + line)
        else:
            parts = textwrap.wrap(line, room, break_long_words=long_words, break_on_hyphens=False)
            out.extend(indent + part for part in parts or [line])
    return out


def _body(
    text: str,
    *,
    full: bool,
    width: int,
    max_lines: int = MAX_LINES,
    max_chars: int = MAX_CHARS,
    indent: str = INDENT,
) -> list[str]:
    # A final newline (a command's output ends with one) would print as an empty line.
    text = text.rstrip("\n")
    if not text:
        return []
    if not full:
        lines = text[:max_chars].split("\n")[:max_lines]
        shown = "\n".join(lines)
        if len(shown) < len(text):
            rest = len(text) - len(shown)
            return [
                *_wrap(lines, width, indent=indent),
                f"{indent}… ({rest:,} more characters; --full shows all)",
            ]
    return _wrap(text.split("\n"), width, indent=indent)


def _cut(text: str, limit: int | None) -> str:
    """``text`` cut to ``limit`` characters with an ellipsis (None: whole)."""
    if limit is None or len(text) <= limit:
        return text
    return text[: limit - 1] + "…"


def _dim(lines: Iterable[str]) -> list[Block]:
    return [Styled(((line, "dim"),)) for line in lines]


# ---------------------------------------------------------------------------------------
# Parts
# ---------------------------------------------------------------------------------------


def _image(part: ImagePart) -> str:
    """An image as one line: its media type and size, or where it is; never its bytes."""
    kind = part.media_type or "unknown type"
    if part.data is not None:
        return f"[image: {kind}, {len(part.data):,} bytes]"
    if part.url is not None:
        return f"[image: {kind}, {_cut(part.url, OTHER_CHARS)}]"
    return f"[image: {kind}]"


def _other(part: OtherPart, room: int) -> str:
    """Content the dialect does not map: ``[type]`` and the start of its compact JSON, in
    ``room`` characters (at most `OTHER_CHARS` of JSON)."""
    raw = part.raw
    described = part.description
    if described is not None:  # a known value (a web search, a tool reference): what it says
        label, text = described
        return f"[{_cut(label, 40)}] {_cut(escape(text), max(room - len(label) - 3, 20))}".rstrip()
    if isinstance(raw, dict):
        kind = raw.get("type")
        label = kind if isinstance(kind, str) else "object"
    else:
        label = "array" if isinstance(raw, list) else "string" if isinstance(raw, str) else "value"
    label = f"[{_cut(label, 40)}] "
    excerpt = escape(inline(raw))  # cut as shown: an escape is several characters wide
    return label + _cut(excerpt, max(min(OTHER_CHARS, room - len(label)), 20))


def _content_lines(
    content: str | list[Part], *, indent: str, limits: dict[str, int], full: bool, width: int
) -> list[Block]:
    """A tool result's content: its text, and a line for each image or other item."""
    if isinstance(content, str):
        return list(_body(content, full=full, width=width, indent=indent, **limits))
    out: list[Block] = []
    for part in content:
        out.extend(_part_lines(part, full=full, width=width, indent=indent, limits=limits))
    return out


def _part_lines(
    part: Part, *, full: bool, width: int, indent: str = INDENT, limits: dict[str, int] | None = None
) -> list[Block]:
    """A text, reasoning, image or other part (calls and results have their own layout)."""
    if isinstance(part, TextPart):
        return list(_body(part.text, full=full, width=width, indent=indent, **(limits or {})))
    if isinstance(part, ReasoningPart):
        if not part.text:
            return _dim([f"{indent}(reasoning: encrypted by the provider, no text stored)"])
        return _dim(_body("(reasoning) " + part.text, full=full, width=width, indent=indent))
    if isinstance(part, ImagePart):
        return [*_wrap([_image(part)], width, indent=indent, long_words=True)]
    metadata = result_metadata(part)
    if metadata is not None:  # a shell result's exit code and duration, as the HTML shows them
        facts = " · ".join(f"{key} {inline(value)}" for key, value in metadata.items())
        return _dim(_wrap([facts], width, indent=indent, long_words=True))
    if isinstance(part, OtherPart):
        shown = _wrap([_other(part, width - len(indent))], width, indent=indent, long_words=True)
        return list(shown) if part.description is not None else _dim(shown)
    return []


def _call_lines(call: ToolCallPart, *, full: bool, width: int) -> list[Block]:
    """A tool call, ``→ name(arguments)  [id]``: one line when it fits, else wrapped below its name."""
    name = call.name or "unnamed tool"
    shown = _cut(
        inline(call.arguments) if call.arguments is not None else "", None if full else ARGUMENT_CHARS
    )
    ident = "" if call.id is None else f"  [{inline(call.id)}]"
    arrow = (INDENT + "→ ", "yellow")
    one = Styled((arrow, (name, "bold yellow"), (f"({shown})", ""), (ident, "dim")))
    if len(escape(one.plain)) <= width:
        return [one]
    # Arguments are JSON, often one long word: break inside words, or a line runs on.
    room = max(width - len(INDENT) - 2, 20)
    first, *rest = textwrap.wrap(
        escape(f"{name}({shown}){ident}"),
        room,
        break_long_words=True,
        break_on_hyphens=False,
        subsequent_indent="  ",
    )
    head = escape(name)
    if first.startswith(head):
        lines: list[Block] = [Styled((arrow, (head, "bold yellow"), (first[len(head) :], "")))]
    else:  # the name alone is longer than a line
        lines = [Styled((arrow, (first, "bold yellow")))]
    return [*lines, *(INDENT + "  " + line for line in rest)]


def _result_lines(
    result: ToolResultPart,
    label: str,
    *,
    indent: str,
    full: bool,
    width: int,
    short: bool,
) -> list[Block]:
    """A result: ``←`` and where it is from (marked when an error), then its content below."""
    parts: list[tuple[str, str]] = [(indent + "← ", "yellow"), (label, "dim")]
    if result.is_error:
        parts.append((" error", "bold red"))
    limits = {"max_lines": RESULT_LINES, "max_chars": RESULT_CHARS} if short else {}
    body = _content_lines(result.content, indent=indent + "  ", limits=limits, full=full, width=width)
    if not body:
        parts.append((" (empty result)", "dim"))
    return [Styled(tuple((text, style) for text, style in parts if text)), *body]


def _name_of(call_id: Any, names: dict[Any, str | None]) -> str:
    try:
        return names.get(call_id) or ""
    except TypeError:  # an id stored as a list or an object
        return ""


# ---------------------------------------------------------------------------------------
# One message
# ---------------------------------------------------------------------------------------


def _role(data: dict[str, Any], parts: Sequence[Part]) -> str:
    """The message's role; for an item stored without one, what its parts are."""
    role = shown_role(data)
    if role is not None:
        return role
    if parts and all(isinstance(p, ToolResultPart) for p in parts):
        return "tool"
    if any(isinstance(p, (ToolCallPart, ReasoningPart)) for p in parts):
        return "assistant"
    return "message"


def _facts(record: RawMessageRecord | None, *, clock: bool) -> list[str]:
    """What a record's header says besides its role: when, how long it took, its tokens."""
    facts: list[str] = []
    if record is None:
        return facts
    if clock:
        facts.append(record.created_at.strftime("%H:%M:%S"))
    if record.duration_ns:
        facts.append(seconds(record.duration_ns))
    usage = record.usage
    if usage is not None:
        tokens = f"{usage.input_tokens:,} in / {usage.output_tokens:,} out tokens"
        if usage.cache_read_tokens:
            tokens += f" ({usage.cache_read_tokens:,} cached)"
        facts.append(tokens)
    return facts


def _parts_body(
    parts: Sequence[Part],
    record: RawMessageRecord | None,
    answers: dict[int, Answer] | None,
    skip: frozenset[int],
    names: dict[Any, str | None] | None,
    *,
    full: bool,
    width: int,
    short: bool,
) -> list[Block]:
    """Each part in order but those in ``skip``, each call's result (``answers``) under it."""
    answers = answers or {}
    names = names or {}
    # Results of this very record that answer a call in it show under that call only.
    paired = {id(answer.part) for answer in answers.values() if answer.record is record}
    body: list[Block] = []
    for index, part in enumerate(parts):
        if index in skip or id(part) in paired:
            continue
        if isinstance(part, ToolCallPart):
            body.extend(_call_lines(part, full=full, width=width))
            answer = answers.get(index)
            if answer is not None:
                where = "" if answer.record is record else f"#{answer.record.sequence}"
                # The record is not shown on its own: its facts (a tool's run time) go here.
                where = " · ".join([where, *_facts(answer.record, clock=False)]) if where else where
                body.extend(
                    _result_lines(
                        answer.part, where, indent=INDENT + "  ", full=full, width=width, short=short
                    )
                )
        elif isinstance(part, ToolResultPart):
            name = _name_of(part.tool_call_id, names)
            label = f"result of {name}" if name else "result"
            if part.tool_call_id is not None:
                label += f" [{inline(part.tool_call_id)}]"
            body.extend(_result_lines(part, label, indent=INDENT, full=full, width=width, short=short))
        else:
            body.extend(_part_lines(part, full=full, width=width))
    return body


def _card(
    message: Message,
    parts: Sequence[Part],
    *,
    record: RawMessageRecord | None = None,
    answers: dict[int, Answer] | None = None,
    skip: frozenset[int] = frozenset(),
    label: str | None = None,
    note: str | None = None,
    names: dict[Any, str | None] | None = None,
    full: bool = False,
    width: int = WIDTH,
    clock: bool = False,
    short_results: bool = False,
) -> list[Block]:
    """One message: a header line, then each part in order, each call's result under it."""
    data = message_dict(message)
    role = _role(data, parts)
    shown_label = (label or (f"#{record.sequence}" if record is not None else "")).rjust(4)
    header: list[tuple[str, str]] = [(shown_label, "dim"), (" ", ""), (role, ROLE_STYLES.get(role, "bold"))]
    kind = imported_kind(data)
    if kind is not None:  # an imported line that is no plain message: say which (`summary`, `attachment:...`)
        header.append((f" {escape(kind)}", "dim"))
    framework = _frameworks.shown(data, inline)
    if framework is not None:  # an adapter's framework message: say whose
        header.append((f" {framework[0]}", "dim"))
    if framework is not None and all(isinstance(p, OtherPart) for p in parts):
        # A framework message the message model does not map (an ACP update, a state
        # record): its text as the adapter's format gives it, not its JSON.
        body: list[Block] = list(_body(framework[1], full=full, width=width))
    else:
        body = _parts_body(parts, record, answers, skip, names, full=full, width=width, short=short_results)
    facts = _facts(record, clock=clock)
    if data.get("include_in_messages") is False:
        facts.append("not in the model context")
    if not body and (record is None or record.usage is None):
        facts.append("no content")
    if note:
        facts.append(note)
    if facts:
        header.append(("  · " + " · ".join(facts), "dim"))
    return [Styled(tuple(header)), *body]


@with_deep_stack
def render_message(
    message: Message,
    *,
    dialect: str | Dialect = "neutral",
    record: RawMessageRecord | None = None,
    label: str | None = None,
    note: str | None = None,
    names: dict[Any, str | None] | None = None,
    full: bool = False,
    width: int = WIDTH,
    clock: bool = False,
) -> list[Block]:
    """One message read in ``dialect``, as a header line and an indented body.

    ``label`` stands where the record's sequence goes (``#12``); ``note`` ends the header;
    ``clock`` adds the record's time of day; ``names`` gives the tool name of a call id, for
    a result shown on its own.
    """
    parts = message_parts(message, dialect)
    return _card(
        message,
        parts,
        record=record,
        label=label,
        note=note,
        names=names,
        full=full,
        width=width,
        clock=clock,
    )


def _raw_lines(record: RawMessageRecord, width: int) -> list[Block]:
    """A record as stored: its message as compact JSON (cut only below `_format.MAX_DEPTH`
    levels), then its stored fields."""
    facts = [f"id {record.id}", f"created {when(record.created_at)}"]
    if record.request_id is not None:
        facts.append(f"request {record.request_id}")
    if record.batch_end:
        facts.append(f"batch through #{record.batch_end}")
    role = message_dict(record.message).get("role")
    header: list[tuple[str, str]] = [
        (f"#{record.sequence}".rjust(4), "dim"),
        (" ", ""),
        (str(role) if role is not None else "message", ROLE_STYLES.get(str(role), "bold")),
    ]
    shown = _facts(record, clock=True)
    if shown:
        header.append(("  · " + " · ".join(shown), "dim"))
    message = _wrap([inline(message_dict(record.message))], width, long_words=True)
    return [Styled(tuple(header)), *message, Styled(((INDENT + " · ".join(facts), "dim"),))]


# ---------------------------------------------------------------------------------------
# Records and contexts
# ---------------------------------------------------------------------------------------


def boundary(snapshot: ContextSnapshot) -> Styled:
    """The rule printed after the last record a snapshot compacts."""
    return Styled(
        (
            (
                f"---- snapshot {snapshot.version}: the records above are compacted; the tail starts here ----",
                "bold blue",
            ),
        )
    )


def _compacted(snapshot: ContextSnapshot, dialect: str | Dialect, *, full: bool, width: int) -> list[Block]:
    return render_message(
        snapshot.compacted_message,
        dialect=dialect,
        label="--",
        note=f"snapshot {snapshot.version}: replaces #1-#{snapshot.compacted_through_sequence}",
        full=full,
        width=width,
    )


def call_names(parts: Iterable[Part], names: dict[Any, str | None] | None = None) -> dict[Any, str | None]:
    """``names`` (a new dict when None) with the tool name of each call among ``parts`` added."""
    names = {} if names is None else names
    for part in parts:
        if isinstance(part, ToolCallPart):
            try:
                names[part.id] = part.name
            except TypeError:  # an id stored as a list or an object names nothing
                pass
    return names


@with_deep_stack
def render_records(
    records: Iterable[RawMessageRecord],
    snapshot: ContextSnapshot | None,
    *,
    dialect: str | Dialect = "neutral",
    full: bool,
    width: int = WIDTH,
    raw: bool = False,
    names: dict[Any, str | None] | None = None,
) -> list[Block]:
    """Every record read in ``dialect``, results under their calls, with a rule where the
    latest snapshot's boundary is.

    The transcript (``raw=False``) shortens tool results and does not show a record again
    whose results all show under their calls; ``raw`` shows each record as stored: its
    message's JSON and its stored fields. ``names`` (call id to tool name, kept by a caller
    that renders a session in pieces, as ``tail -f`` does) is updated with the calls seen.
    """
    lines: list[Block] = []
    names = {} if names is None else names
    items = fold(records, dialect)
    for item in items:
        call_names(item.parts, names)
    for item in items:
        record = item.record
        if raw:
            lines.extend(_raw_lines(record, width))
        elif not item.empty:
            lines.extend(
                _card(
                    record.message,
                    item.parts,
                    record=record,
                    answers=item.answers,
                    skip=item.folded,
                    names=names,
                    full=full,
                    width=width,
                    clock=True,
                    short_results=True,
                )
            )
        if snapshot is not None and record.sequence == snapshot.compacted_through_sequence:
            lines.append(boundary(snapshot))
            if not raw:  # the transcript shows what the model was given instead of them
                lines.extend(_compacted(snapshot, dialect, full=full, width=width))
    return lines


def render_context(
    view: SessionView,
    messages: Sequence[Message],
    *,
    full: bool = False,
    added_note: str = "added on restore",
    width: int = WIDTH,
) -> list[Block]:
    """A model context taken from ``view``, each message with its record's facts.

    The context is shown as the model gets it, one message after another: a result stays
    where it is, named after its call. A message that is not in ``view.context`` was made
    by the repair (an interruption notice) and is marked with ``added_note``.
    """
    # The context holds the very objects of the records, so identity finds the record.
    records = {id(record.message): record for record in view.raw_tail}
    stored = {id(message) for message in view.context}
    snapshot = view.snapshot
    names: dict[Any, str | None] = {}
    lines: list[Block] = []
    for message in messages:
        parts = view.parts(message)
        call_names(parts, names)
        if snapshot is not None and message is snapshot.compacted_message:
            lines.extend(_compacted(snapshot, view.dialect, full=full, width=width))
            continue
        added = id(message) not in stored
        lines.extend(
            _card(
                message,
                parts,
                record=None if added else records.get(id(message)),
                label="+" if added else None,
                note=added_note if added else None,
                names=names,
                full=full,
                width=width,
            )
        )
    return lines


def open_calls(view: SessionView, closed: Sequence[Message]) -> list[str]:
    """``name [call id]`` of each call the repair answered: what the messages in ``closed``
    but not in ``view.context`` answer, read in the session's dialect."""
    reading = resolve(view.dialect)
    present = {id(message) for message in view.context}
    names = {call_id: name for message in view.context for call_id, name in reading.calls(message)}
    return [
        f"{names.get(call_id) or '?'} [{call_id}]"
        for message in closed
        if id(message) not in present
        for call_id in reading.answers(message)
    ]


__all__ = [
    "ARGUMENT_CHARS",
    "INDENT",
    "MAX_CHARS",
    "MAX_LINES",
    "OTHER_CHARS",
    "RESULT_CHARS",
    "RESULT_LINES",
    "boundary",
    "call_names",
    "open_calls",
    "render_context",
    "render_message",
    "render_records",
]
