"""Turning what the store returns into text a person reads, or JSON a program reads.

Nothing here touches files: the commands fetch through `SessionStore` and hand the
results over. Messages are rendered from their plain-dict form, so message class
instances and dicts appended as dicts print the same way.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import msgspec
import orjson

from .. import ContextSnapshot, Message, Problem, RawMessageRecord, SessionSummary, SessionView
from .._codec import with_deep_stack
from .._dialects import resolve
from . import _frameworks
from ._blocks import Block, Styled, Table
from ._safe import escape, json_escape

INDENT = "     "
#: Without ``--full``, a message body is cut after this many lines or characters ...
MAX_LINES = 12
MAX_CHARS = 800
#: ... and a tool's result after these: a transcript is read for what the agent did,
#: and a file it read or a test run's log would bury that.
RESULT_LINES = 6
RESULT_CHARS = 400
#: The width a line is wrapped to when the caller does not say (a pipe's, `_term.DEFAULT_WIDTH`).
WIDTH = 100
#: Colours of a message header's role (rich style names; a hint, dropped without colour).
ROLE_STYLES = {
    "user": "bold green",
    "assistant": "bold cyan",
    "tool": "bold yellow",
    "system": "bold magenta",
    "compacted": "bold blue",
}
#: Tool arguments and other values shown inline are cut below this many levels of nesting
#: (shown as ``{…}`` / ``[…]``), so no stored value can make the formatter recurse deeply.
MAX_DEPTH = 50
# Whatever append accepts (nested up to `_codec.MAX_DEPTH`) is printed whole by `dumps`
# (tail --json, show --json, cat): `dumps`, `message_dict` and `render_message`, which have
# no side effects, run again on a deeper stack when the caller's is too short for a value
# (`_codec.with_deep_stack`).


# ---------------------------------------------------------------------------------------
# JSON
# ---------------------------------------------------------------------------------------


def _builtins(value: Any) -> Any:
    """orjson's fallback for the types it does not know: msgspec Structs (records, messages)."""
    if isinstance(value, msgspec.Struct):
        return msgspec.to_builtins(value)
    raise TypeError(f"cannot encode {type(value).__name__} as JSON")


@with_deep_stack
def dumps(value: Any, *, indent: bool = False) -> bytes:
    """``value`` as UTF-8 JSON with a final newline.

    orjson first; msgspec for what orjson refuses (integers beyond 64 bits, which a dict
    message may hold and the store keeps; nesting deeper than orjson's 255 levels); the
    standard library last, for strings holding lone surrogates (a ``--root`` path with
    bytes that are not UTF-8), which it writes as ``\\udcff`` escapes.
    """
    option = orjson.OPT_UTC_Z | orjson.OPT_APPEND_NEWLINE | (orjson.OPT_INDENT_2 if indent else 0)
    try:
        return orjson.dumps(value, default=_builtins, option=option)
    except TypeError:
        pass
    try:
        data = msgspec.json.encode(value)
    except UnicodeEncodeError:
        builtins = msgspec.to_builtins(value)
        text = json.dumps(builtins, indent=2 if indent else None, separators=None if indent else (",", ":"))
        return text.encode() + b"\n"
    return (msgspec.json.format(data, indent=2) if indent else data) + b"\n"


@with_deep_stack
def message_dict(message: Message) -> dict[str, Any]:
    """A message as a plain dict (``role`` first for message classes)."""
    if isinstance(message, dict):
        return message
    out: dict[str, Any] = msgspec.to_builtins(message)
    return out


# ---------------------------------------------------------------------------------------
# Small pieces
# ---------------------------------------------------------------------------------------


def when(value: datetime | str | None) -> str:
    """A UTC time to the second: ``2025-01-31 14:02:11Z``."""
    if value is None:
        return "-"
    if isinstance(value, str):
        try:
            return when(datetime.fromisoformat(value))
        except ValueError:
            return value
    return value.strftime("%Y-%m-%d %H:%M:%SZ")


def seconds(duration_ns: int | None) -> str:
    if not duration_ns:
        return ""
    value = duration_ns / 1e9
    return f"{value:.1f} s" if value >= 0.1 else f"{value * 1000:.0f} ms"


def count(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def table(
    header: Sequence[str],
    rows: Iterable[Sequence[str]],
    *,
    right: Iterable[int] = (),
    wrap: Iterable[int] = (),
) -> Table:
    """A table; ``right`` names the right-aligned columns, ``wrap`` those that may wrap on a
    narrow terminal (`Table.lines` is its plain form)."""
    return Table(tuple(header), [tuple(row) for row in rows], frozenset(right), frozenset(wrap))


def rate(part: int, whole: int) -> str:
    """``part`` of ``whole`` as a percentage, ``-`` when there is no whole."""
    return f"{100 * part / whole:.1f}%" if whole else "-"


def _inline(value: Any) -> str:
    """A value on one line: a string as it is, anything else as compact JSON cut at `MAX_DEPTH`."""
    if isinstance(value, str):
        return value
    return _compact(value, MAX_DEPTH)


def _compact(value: Any, depth: int) -> str:
    # Recursion is bounded by ``depth``, not by the data: a stored value may be nested
    # thousands of levels deep, and showing more than a screenful of braces helps nobody.
    if isinstance(value, dict):
        if not value:
            return "{}"
        if depth <= 0:
            return "{…}"
        items = (f"{_scalar(str(key))}:{_compact(item, depth - 1)}" for key, item in value.items())
        return "{" + ",".join(items) + "}"
    if isinstance(value, (list, tuple)):
        if not value:
            return "[]"
        if depth <= 0:
            return "[…]"
        return "[" + ",".join(_compact(item, depth - 1) for item in value) + "]"
    if isinstance(value, msgspec.Struct):
        return _compact(msgspec.structs.asdict(value), depth)
    return _scalar(value)


def _scalar(value: Any) -> str:
    # JSON's own escapes for controls in a string, so none is left for `escape` to show
    # in another notation.
    return json_escape(dumps(value).decode("utf-8", "surrogateescape").rstrip("\n"))


def _text(content: Any) -> str:
    """A message's content as text: strings as they are, text parts joined, the rest as JSON."""
    if content is None:
        return ""
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
                parts.append(part["text"])
            else:
                parts.append(_inline(part))
        return "\n".join(parts)
    return _inline(content)


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
    text: str, *, full: bool, width: int, max_lines: int = MAX_LINES, max_chars: int = MAX_CHARS
) -> list[str]:
    if not text:
        return []
    if not full:
        lines = text[:max_chars].split("\n")[:max_lines]
        shown = "\n".join(lines)
        if len(shown) < len(text):
            rest = len(text) - len(shown)
            return [*_wrap(lines, width), f"{INDENT}… ({rest:,} more characters; --full shows all)"]
    return _wrap(text.split("\n"), width)


# ---------------------------------------------------------------------------------------
# Messages and records
# ---------------------------------------------------------------------------------------


def _call(call: dict[str, Any]) -> tuple[str, str, Any]:
    """``(id, name, arguments)`` of a tool call, flat or OpenAI-shaped."""
    function: dict[str, Any] = call["function"] if isinstance(call.get("function"), dict) else {}
    name = call.get("name") or function.get("name") or "?"
    arguments = call.get("arguments", function.get("arguments", {}))
    return str(call.get("id", "?")), str(name), arguments


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


def _call_lines(call: dict[str, Any], width: int) -> list[Block]:
    """A tool call, ``→ name(arguments)  [id]``: one line when it fits, else wrapped below its name."""
    call_id, name, arguments = _call(call)
    shown = _inline(arguments)
    arrow = (INDENT + "→ ", "yellow")
    one = Styled((arrow, (name, "bold yellow"), (f"({shown})", ""), (f"  [{call_id}]", "dim")))
    if len(escape(one.plain)) <= width:
        return [one]
    # Arguments are JSON, often one long word: break inside words, or a line runs on.
    room = max(width - len(INDENT) - 2, 20)
    first, *rest = textwrap.wrap(
        escape(f"{name}({shown})  [{call_id}]"),
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


@with_deep_stack
def render_message(
    message: Message,
    *,
    record: RawMessageRecord | None = None,
    label: str | None = None,
    note: str | None = None,
    full: bool = False,
    width: int = WIDTH,
    clock: bool = False,
    short_results: bool = False,
) -> list[Block]:
    """One message as a header line and an indented body.

    ``label`` stands where the record's sequence goes (``#12``); ``note`` ends the header;
    ``clock`` adds the record's time of day; ``short_results`` cuts a tool's result
    sooner than other messages (`RESULT_LINES`).
    """
    data = message_dict(message)
    role = str(data.get("role", "?"))
    label = (label or (f"#{record.sequence}" if record is not None else "")).rjust(4)
    parts: list[tuple[str, str]] = [(label, "dim"), (" ", ""), (role, ROLE_STYLES.get(role, "bold"))]
    if role == "tool":
        if data.get("name"):
            parts.append((f" {data['name']}", "yellow"))
        parts.append((f" [{data.get('tool_call_id', '?')}]", "dim"))
        if data.get("is_error"):
            parts.append((" error", "bold red"))
    facts = _facts(record, clock=clock)
    if data.get("include_in_messages") is False:
        facts.append("not in the model context")
    if note:
        facts.append(note)
    framework = _frameworks.shown(data, _inline)
    if framework is not None:  # an adapter's framework message: its text, not its JSON
        parts.append((f" {framework[0]}", "dim"))
    if facts:
        parts.append(("  · " + " · ".join(facts), "dim"))
    lines: list[Block] = [Styled(tuple(parts))]
    if isinstance(data.get("reasoning"), str) and data["reasoning"]:
        lines.extend(_body("(reasoning) " + data["reasoning"], full=full, width=width))
    limits = (
        {"max_lines": RESULT_LINES, "max_chars": RESULT_CHARS} if short_results and role == "tool" else {}
    )
    body = framework[1] if framework is not None else _text(data.get("content"))
    lines.extend(_body(body, full=full, width=width, **limits))
    calls = [call for call in data.get("tool_calls") or () if isinstance(call, dict)]
    if framework is not None:
        calls += [
            {"id": call_id, "name": name, "arguments": arguments} for call_id, name, arguments in framework[2]
        ]
    for call in calls:
        lines.extend(_call_lines(call, width))
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

    A message that is not in ``view.context`` was made by the repair (an interruption
    notice) and is marked with ``added_note``.
    """
    # The context holds the very objects of the records, so identity finds the record.
    records = {id(record.message): record for record in view.raw_tail}
    stored = {id(message) for message in view.context}
    snapshot = view.snapshot
    lines: list[Block] = []
    for message in messages:
        if snapshot is not None and message is snapshot.compacted_message:
            lines.extend(
                render_message(
                    message,
                    label="--",
                    note=f"snapshot {snapshot.version}: replaces #1-#{snapshot.compacted_through_sequence}",
                    full=full,
                    width=width,
                )
            )
        elif id(message) not in stored:
            lines.extend(render_message(message, label="+", note=added_note, full=full, width=width))
        else:
            lines.extend(render_message(message, record=records.get(id(message)), full=full, width=width))
    return lines


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


def _stored_fields(record: RawMessageRecord) -> Styled:
    facts = [f"id {record.id}", f"created {when(record.created_at)}"]
    if record.request_id is not None:
        facts.append(f"request {record.request_id}")
    if record.batch_end:
        facts.append(f"batch through #{record.batch_end}")
    return Styled(((INDENT + " · ".join(facts), "dim"),))


def render_records(
    records: Iterable[RawMessageRecord],
    snapshot: ContextSnapshot | None,
    *,
    full: bool,
    width: int = WIDTH,
    raw: bool = False,
) -> list[Block]:
    """Every raw-log record, with a rule where the latest snapshot's boundary is.

    The transcript (``raw=False``) shortens tool results; ``raw`` shows each record's
    stored fields (id, time, request id) and every body whole.
    """
    lines: list[Block] = []
    for record in records:
        lines.extend(
            render_message(
                record.message,
                record=record,
                full=full or raw,
                width=width,
                clock=True,
                short_results=not raw,
            )
        )
        if raw:
            lines.append(_stored_fields(record))
        if snapshot is not None and record.sequence == snapshot.compacted_through_sequence:
            lines.append(boundary(snapshot))
            if not raw:  # the transcript shows what the model was given instead of them
                lines.extend(
                    render_message(
                        snapshot.compacted_message,
                        label="--",
                        note=f"snapshot {snapshot.version}: replaces #1-#{snapshot.compacted_through_sequence}",
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


# ---------------------------------------------------------------------------------------
# Sessions, usage, problems
# ---------------------------------------------------------------------------------------


def render_sessions(
    sessions: Sequence[SessionSummary],
    *,
    tokens: dict[str, int] | None = None,
    mark_pinned: bool = False,
) -> Table:
    """The sessions as a table; ``tokens`` adds a TOKENS column, ``mark_pinned`` a ``*`` column."""
    header = ["SESSION", "RECORDS", "UPDATED (UTC)", "AGENT", "PARENT", "TITLE"]
    right = {1}
    if tokens is not None:
        header.insert(2, "TOKENS")
        right.add(2)
    rows = []
    for s in sessions:
        row = [
            s.session_id,
            count(s.message_count),
            when(s.updated_at),
            s.agent_name or "-",
            s.parent_session_id or "-",
            s.title or "-",
        ]
        if tokens is not None:
            row.insert(2, count(tokens.get(s.session_id, 0)))
        if mark_pinned:
            row.insert(0, "*" if s.pinned else "")
        rows.append(row)
    if mark_pinned:
        header.insert(0, "PIN")
        right = {i + 1 for i in right}
    # Agent, parent and title may wrap on a narrow terminal; the id, counts and time not.
    last = len(header) - 1
    return table(header, rows, right=right, wrap=(last - 2, last - 1, last))


def render_summary(
    summary: SessionSummary, view: SessionView, children: Sequence[SessionSummary]
) -> list[str]:
    snapshot = view.snapshot
    facts: list[tuple[str, str]] = [
        ("session", summary.session_id),
        ("title", summary.title or "-"),
        ("agent", summary.agent_name or "-"),
        ("type", str(summary.session_type)),
        ("parent", summary.parent_session_id or "-"),
        ("children", ", ".join(c.session_id for c in children) or "-"),
        ("records", count(summary.message_count)),
        ("created", when(summary.created_at)),
        ("updated", when(summary.updated_at)),
        (
            "snapshot",
            f"version {snapshot.version}, compacts #1-#{snapshot.compacted_through_sequence}; "
            f"{plural(len(view.raw_tail), 'record')} in the tail"
            if snapshot is not None
            else "none",
        ),
    ]
    if summary.pinned:
        facts.append(("pinned", "yes"))
    if summary.metadata:
        facts.append(("metadata", _inline(summary.metadata)))
    width = max(len(key) for key, _ in facts)
    return [f"{key + ':':<{width + 1}} {value}" for key, value in facts]


USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
)


def render_usage(items: Sequence[dict[str, Any]], totals: Any) -> Table:
    rows = [
        (
            when(item.get("recorded_at")),
            str(item.get("source", "usage log")),
            str(item.get("model") or "-"),
            *(count(item.get(field, 0)) for field in USAGE_FIELDS),
        )
        for item in items
    ]
    rows.append(("total", "", "", *(count(getattr(totals, field)) for field in USAGE_FIELDS)))
    header = ("RECORDED (UTC)", "FROM", "MODEL", "INPUT", "OUTPUT", "CACHE READ", "CACHE WRITE", "REASONING")
    return table(header, rows, right=range(3, 8))


def render_problem(problem: Problem, *, done: bool) -> str:
    """One problem; ``done`` says whether its action was taken (repair) or would be (verify)."""
    if done:
        return str(problem)
    where = problem.path
    if problem.line is not None:
        where += f":{problem.line}"
    if problem.offset is not None:
        where += f" @{problem.offset}"
    return f"{where}: {problem.kind}: {problem.reason} (repair: {problem.action})"
