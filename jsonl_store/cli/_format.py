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

from .. import Message, Problem, SessionSummary, SessionView
from .._format.depth import with_deep_stack
from ._blocks import Table
from ._safe import json_escape

#: The width a line is wrapped to when the caller does not say (a pipe's, `_term.DEFAULT_WIDTH`).
WIDTH = 100
#: Tool arguments and other values shown inline are cut below this many levels of nesting
#: (shown as ``{…}`` / ``[…]``), so no stored value can make the formatter recurse deeply.
MAX_DEPTH = 50
# Whatever append accepts (nested up to `_depth.MAX_DEPTH`) is printed whole by `dumps`
# (tail --json, show --json, cat): `dumps`, `message_dict` and `render_message`, which have
# no side effects, run again on a deeper stack when the caller's is too short for a value
# (`_depth.with_deep_stack`).


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
    whole_words: Iterable[int] = (),
    own_line: int | None = None,
) -> Table:
    """A table; ``right`` names the right-aligned columns, ``wrap`` those that may wrap on a
    narrow terminal, ``whole_words`` those of them that wrap only between words, ``own_line``
    an id column that never wraps and takes a line of its own instead (`Table.lines` is its
    plain form)."""
    words = frozenset(whole_words)
    return Table(
        tuple(header),
        [tuple(row) for row in rows],
        frozenset(right),
        frozenset(wrap) | words,
        words,
        own_line,
    )


def rate(part: int, whole: int) -> str:
    """``part`` of ``whole`` as a percentage, ``-`` when there is no whole."""
    return f"{100 * part / whole:.1f}%" if whole else "-"


def inline(value: Any) -> str:
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
    # The agent, parent and title may wrap on a narrow terminal; counts and time never, and
    # the id never either: it takes a line of its own, so it can be copied whole.
    last = len(header) - 1
    first = 1 if mark_pinned else 0
    updated = header.index("UPDATED (UTC)")
    return table(
        header, rows, right=right, wrap=(last - 2, last - 1, last), whole_words=(updated,), own_line=first
    )


#: How much of a session's metadata `show`'s header prints unless ``--full``: an import's
#: bookkeeping (the message ids it counted) runs to thousands of characters.
METADATA_CHARS = 400
#: Room the note after cut metadata takes (``… (12,345 more characters; --full or --json shows all)``).
_NOTE_ROOM = 58


def render_summary(
    summary: SessionSummary,
    view: SessionView,
    children: Sequence[SessionSummary],
    *,
    full: bool = False,
    width: int = WIDTH,
) -> list[str]:
    """The facts of a session, one ``name: value`` line each, fitted to ``width`` columns.

    A fact that holds its default (no title, agent, parent or children; session type 0) is
    left out: it says nothing. The metadata is cut at `METADATA_CHARS` without ``full``, and
    wrapped under its name at ``width`` (it is one JSON text, so words are cut where needed).
    """
    snapshot = view.snapshot
    facts: list[tuple[str, str]] = [("session", summary.session_id)]
    optional = (
        ("title", summary.title or ""),
        ("agent", summary.agent_name or ""),
        ("type", str(summary.session_type) if summary.session_type else ""),
        ("parent", summary.parent_session_id or ""),
        ("children", ", ".join(c.session_id for c in children)),
    )
    facts += [(key, value) for key, value in optional if value]
    facts += [
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
    name_width = max(len(key) for key, _ in [*facts, ("metadata", "")]) + 2
    room = max(width - name_width, 20)
    if summary.metadata:
        text = inline(summary.metadata)
        if not full and len(text) > METADATA_CHARS:
            # One line: as much as fits beside the note (a terminal too narrow even for that
            # wraps it below); shorter metadata is wrapped whole.
            cut = max(min(room - _NOTE_ROOM, METADATA_CHARS), 20)
            text = f"{text[:cut]}… ({len(text) - cut:,} more characters; --full or --json shows all)"
        facts.append(("metadata", text))
    lines: list[str] = []
    for key, value in facts:
        if key != "metadata":
            lines.append(f"{key + ':':<{name_width - 1}} {value}")
            continue
        wrapped = textwrap.wrap(value, room, break_long_words=True, break_on_hyphens=False) or [""]
        lines.append(f"{key + ':':<{name_width - 1}} {wrapped[0]}")
        lines += [" " * name_width + more for more in wrapped[1:]]
    return lines


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
    return table(header, rows, right=range(3, 8), wrap=(1, 2), whole_words=(0,))


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
