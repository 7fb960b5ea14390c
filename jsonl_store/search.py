"""Search every session of a store for a text or a regular expression, as fast as ``grep``.

A search reads each session's raw log in two passes over the public API and the
documented files (docs/guides/store.md, "The session directory"):

1. A **prefilter** over the bytes of ``messages.jsonl``, with ``bytes.find`` (C speed,
   no decoding): a session whose file cannot hold the needle is skipped without reading
   one record. It looks for a piece of the needle every line holding a match contains
   (`needle_bytes`, spec/FORMAT.md §5.2, "Searching"): the longest run of printable
   ASCII without ``"\\/<>&'`` or space. Spec §3 says the writer escapes only control
   characters, ``"`` and ``\\`` and writes everything else raw; a call's arguments stored
   as a JSON string are one more level of JSON, whose writer may also escape ``/``,
   ``<>&'`` and non-ASCII by choice; a structured tool result reads as indented JSON
   text (spaces the line lacks). Such a run survives all of it. A needle without one is
   looked for as its longest run without controls, ``"``, ``\\`` or space, and the lines
   holding a nested escape (`NESTED_ESCAPES`: ``\\u00e9``, ``\\/`` inside a string) are
   confirmed too.
2. The **confirmation**: the sessions that pass are read with
   ``SessionStore.records(containing=...)``, which checks the checksum of each line
   holding those bytes, leaves out a batch torn by a crash and decodes only those lines;
   each record's message is read as parts (`jsonl_store.message_parts`, in the session's
   dialect) and their strings matched, decoded. A hit is only ever what a
   decode-everything search finds (`naive_search`;
   ``tests/property/test_search_properties.py`` checks exactly that).

A regular expression is matched on decoded text only (its bytes form is not a string's
JSON form), so ``regex=True`` decodes every record. It is matched by RE2 (`_regex`), in
time linear in the text searched, never by Python's backtracking `re`.
"""

from __future__ import annotations

import heapq
import mmap
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from ._dialect_neutral import Dialect
from ._dialects import message_parts
from ._errors import InvalidArgument, SessionNotFound, UnsafePath
from ._find import find
from ._parts import ImagePart, Part, ReasoningPart, TextPart, ToolCallPart, ToolResultPart, decode_arguments
from ._paths import BLOBS_DIR, LOG_NAME
from ._records import RawMessageRecord
from ._regex import Pattern, compile_linear
from ._view import SessionSummary
from .store import SessionStore

#: Characters of context kept on each side of a match in `Hit.snippet`.
CONTEXT = 40
#: What the prefilter cannot count on finding literally in a line (`needle_bytes`): control
#: characters (a writer may spell them ``\\n`` or ``\\u000a``, spec/FORMAT.md §3), ``"`` and
#: ``\\`` (escaped once in a record, twice in arguments stored as a JSON string) and the
#: space (a structured tool result reads as indented JSON text, ``{"a": 1}`` where the line
#: holds ``{"a":1}``).
_UNSEEN = re.compile('[\x00-\x1f"\\\\ ]+')
#: What is not *plain*: besides `_UNSEEN`, what some JSON writer escapes by choice in a JSON
#: string nested in a string (non-ASCII and U+2028 as ``\\uXXXX``: Python's ``json.dumps``,
#: Go's ``encoding/json``; ``/`` as ``\\/`` and ``<>&'`` as ``\\u003c``...: PHP's
#: ``json_encode``, https://www.php.net/manual/en/json.constants.php).
_NOT_PLAIN = re.compile("[^!#-%(-.0-;=?-\\[\\]-~]+")
#: What a raw-log line holds where a JSON string inside one of its strings (arguments
#: stored as a JSON string) uses an escape no writer needs: ``\\u00e9`` or ``\\/`` there is
#: ``\\\\u00e9`` or ``\\\\/`` in the line. When the needle has no plain run, lines holding
#: these are confirmed too, whatever else they hold.
NESTED_ESCAPES = (b"\\\\u", b"\\\\/")
_ROLES = frozenset({"system", "user", "assistant", "tool", "compacted"})
#: What a hit's `Hit.field` is when it is the part's own text (the other fields:
#: ``"name"`` and ``"arguments"`` of a tool call, ``"url"`` of an image).
CONTENT = "content"


@dataclass(frozen=True)
class Hit:
    """One match: where it is, and a line of text around it.

    ``sequence`` is the record's sequence in the raw log (0 for a session's title),
    ``role`` the message's role (``None`` for a title), ``kind`` the kind of the message
    part that matched (`jsonl_store.message_parts`: ``"text"``, ``"reasoning"``,
    ``"tool_call"``, ``"tool_result"``, ``"image"``, ``"other"``) or ``"title"``, and
    ``field`` where in that part: ``"content"`` (its text, a result's output, the strings
    of an other part), a tool call's ``"name"`` or ``"arguments"``, an image's ``"url"``,
    or ``"title"``. ``snippet`` is the matched string with at most `CONTEXT` characters
    either side; ``snippet[start:end]`` is the match, and ``offset`` is where the match
    starts in the whole string.
    """

    session_id: str
    sequence: int
    role: str | None
    kind: str
    field: str
    snippet: str
    start: int
    end: int
    offset: int

    def to_dict(self) -> dict[str, Any]:
        """The hit as a JSON-ready dict (what ``jsonl-store search --json`` prints)."""
        return {
            "session_id": self.session_id,
            "sequence": self.sequence,
            "role": self.role,
            "kind": self.kind,
            "field": self.field,
            "snippet": self.snippet,
            "start": self.start,
            "end": self.end,
            "offset": self.offset,
        }


Matcher = Callable[[str], "tuple[int, int] | None"]


def _plain_matcher(text: str) -> Matcher:
    length = len(text)

    def match(value: str) -> tuple[int, int] | None:
        at = value.find(text)
        return None if at < 0 else (at, at + length)

    return match


def _regex_matcher(pattern: Pattern) -> Matcher:
    def match(value: str) -> tuple[int, int] | None:
        found = pattern.search(value)
        return None if found is None else found.span()

    return match


def needle_bytes(text: str) -> bytes:
    """Bytes every raw-log line holding a match of ``text`` contains (see the module doc).

    The longest *plain* run of ``text`` (printable ASCII but ``"\\/<>&'`` and space), which
    every JSON writer writes as it is, at every level of nesting and in indented JSON
    alike. When ``text`` has none (``東京``), the longest run without a control character,
    ``"``, ``\\`` or space, as UTF-8: the store's writer writes those raw (spec §3), though a
    JSON string nested in a string may escape them (`needs_escapes`). Empty when ``text``
    has neither (every line qualifies).
    """
    plain = max(_NOT_PLAIN.split(text), key=len)
    if plain:
        return plain.encode("ascii")
    return max(_UNSEEN.split(text), key=len).encode("utf-8", "surrogatepass")


def needs_escapes(needle: bytes) -> bool:
    """Whether a line may hold a match of a needle's text without the needle: true when the
    needle is no plain run, which a nested JSON string may write with `NESTED_ESCAPES`."""
    return _NOT_PLAIN.search(needle.decode("utf-8", "surrogatepass")) is not None


def _escapes_hiding(needle: bytes) -> tuple[bytes, ...]:
    """The `NESTED_ESCAPES` a match of ``needle``'s text may be written with: none for a
    plain run; ``\\\\u`` (which may stand for any character) for another, and ``\\\\/``
    only when the run holds a ``/`` (the one character it stands for)."""
    if not needs_escapes(needle):
        return ()
    return tuple(escape for escape in NESTED_ESCAPES if escape != b"\\\\/" or b"/" in needle)


def _strings(value: object, *, keys: bool = False) -> Iterator[str]:
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


def _part_strings(part: Part) -> Iterator[tuple[str, str]]:
    """Each ``(field, string)`` of one part a search looks at, in order."""
    if isinstance(part, (TextPart, ReasoningPart)):
        yield CONTENT, part.text
    elif isinstance(part, ToolCallPart):
        if isinstance(part.name, str):
            yield "name", part.name
        for text in _strings(part.arguments, keys=True):
            yield "arguments", text
    elif isinstance(part, ToolResultPart):
        if isinstance(part.content, str):
            yield CONTENT, part.content
        else:
            for inner in part.content:
                for _, text in _part_strings(inner):
                    yield CONTENT, text
    elif isinstance(part, ImagePart):
        if part.url is not None:
            yield "url", part.url
    else:
        # Keys too: an unmapped value is read as stored, where grep would find its keys
        # (a Codex shell result's metadata, a hosted tool's item).
        for text in _strings(part.raw, keys=True):
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
        for field, text in _part_strings(part):
            yield part.kind, field, text


def role_of(message: object) -> str:
    """The role of a stored message (a class instance or a plain dict)."""
    if isinstance(message, dict):
        role = message.get("role")
        return role if isinstance(role, str) else ""
    return str(getattr(message, "role", ""))


def _hit(
    session_id: str,
    sequence: int,
    role: str | None,
    kind: str,
    field: str,
    text: str,
    span: tuple[int, int],
) -> Hit:
    begin, end = span
    left = max(0, begin - CONTEXT)
    right = min(len(text), end + CONTEXT)
    return Hit(session_id, sequence, role, kind, field, text[left:right], begin - left, end - left, begin)


def _held(path: str, needles: Sequence[bytes]) -> set[bytes]:
    """Which of ``needles`` the file at ``path`` contains (all of them when it cannot tell).

    Opened without following a symlink or blocking, and read through a read-only map, so the kernel
    pages the file in and nothing is copied; an empty needle or an unreadable file counts
    as found and leaves the judgement to `SessionStore.records`, which reports what it meets.
    """
    everything = set(needles)
    try:
        # O_NONBLOCK: a FIFO in a log's place must not hang the search (docs/guides/agent-loop.md, "Files
        # that are not what they seem"); it is then no regular file, and records() decides.
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return everything
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return everything
        if info.st_size == 0:
            return set()
        with mmap.mmap(fd, info.st_size, access=mmap.ACCESS_READ) as data:
            return {needle for needle in needles if not needle or find(data, needle) >= 0}
    except (OSError, ValueError):
        return everything
    finally:
        os.close(fd)


def _has_blobs(log: str) -> bool:
    """Whether the session of the raw log ``log`` keeps large strings in ``blobs/`` (spec §5.1).

    The needle may then be in a blob file only, which holds the string's raw bytes, not
    their JSON form: such a session is always confirmed by records(), which restores them.
    """
    try:
        return stat.S_ISDIR(os.lstat(os.path.join(os.path.dirname(log), BLOBS_DIR)).st_mode)
    except OSError:
        return False


def _logs_of(store: SessionStore, summary: SessionSummary) -> list[str]:
    """The raw logs a session's records come from: its own, and for a fork its sources'.

    The documented layout (docs/guides/store.md, "The session directory"): a fork reads its history
    from its source's ``messages.jsonl`` up to the branch (docs/guides/store.md, `fork`), so the needle
    may be there only. A store over a simulated file system has no such real files, and
    the prefilter then lets records() decide.
    """
    paths = [os.path.join(store.root, summary.session_id, LOG_NAME)]
    seen = {summary.session_id}
    point = summary.fork
    while point is not None and point.session_id not in seen:
        seen.add(point.session_id)
        try:
            source = store.get_session(point.session_id)
        except UnsafePath:
            break  # a symlink or no directory: never followed, the fork is read alone (spec §8.10)
        paths.append(os.path.join(store.root, point.session_id, LOG_NAME))
        point = source.fork if source is not None else None
    return paths


def _open(store_or_root: SessionStore | str | os.PathLike[str]) -> tuple[SessionStore, bool]:
    if isinstance(store_or_root, SessionStore):
        return store_or_root, False
    if isinstance(store_or_root, (str, os.PathLike)):
        return SessionStore(store_or_root), True
    raise InvalidArgument(f"expected a SessionStore or a path, got {type(store_or_root).__name__}")


def _compile(text: str, regex: bool) -> tuple[Matcher, bytes]:
    if not isinstance(text, str) or not text:
        raise InvalidArgument(f"the text to search for must be a non-empty str, got {text!r}")
    if not regex:
        return _plain_matcher(text), needle_bytes(text)
    return _regex_matcher(compile_linear(text)), b""


def search(
    store_or_root: SessionStore | str | os.PathLike[str],
    text: str,
    *,
    regex: bool = False,
    session_id: str | None = None,
    role: str | None = None,
    on_session: Callable[[SessionSummary], None] | None = None,
) -> Iterator[Hit]:
    """The hits of ``text`` in every session (or in ``session_id``), session by session.

    Sessions come newest activity first (as `SessionStore.list_sessions` lists them),
    records in sequence order, and one hit per matching string (its first match). A
    session's title is searched too (``sequence`` 0) unless ``role`` is given, which keeps
    only messages of that role. ``regex=True`` reads ``text`` as an RE2 regular
    expression (https://github.com/google/re2/wiki/Syntax), matched in time linear in
    the text; it needs the ``regex`` extra (google-re2). ``on_session(summary)`` is
    called as each session is started (the command's progress bar).

    Raises `InvalidArgument` (a `ValueError`) when ``text`` is empty or not a str, the
    regular expression does not compile, or ``role`` is not a role; `UnsupportedRegex`
    (an `InvalidArgument`) for what RE2 cannot match in linear time (backreferences,
    lookaround); `RegexUnavailable` (an `ImportError`) for ``regex=True`` without
    google-re2; `SessionNotFound` when ``session_id`` names no session; what
    `SessionStore.records` raises.
    """
    match, needle = _compile(text, regex)
    if role is not None and role not in _ROLES:
        raise InvalidArgument(f"role must be one of {sorted(_ROLES)}, got {role!r}")
    store, owned = _open(store_or_root)
    try:
        if session_id is not None:
            summary = store.get_session(session_id)
            if summary is None:
                raise SessionNotFound(
                    f"session {session_id!r} does not exist in {store.root!r}", session_id=session_id
                )
            sessions: Iterable[SessionSummary] = [summary]
        else:
            sessions = store.list_sessions()
        for summary in sessions:
            if on_session is not None:
                on_session(summary)
            yield from _search_session(store, summary, match, needle, role)
    finally:
        if owned:
            store.close()


def _search_session(
    store: SessionStore,
    summary: SessionSummary,
    match: Matcher,
    needle: bytes,
    role: str | None,
) -> Iterator[Hit]:
    sid = summary.session_id
    if role is None and summary.title is not None:
        span = match(summary.title)
        if span is not None:
            yield _hit(sid, 0, None, "title", "title", summary.title, span)
    logs = _logs_of(store, summary)
    if needle:
        wanted = (needle, *_escapes_hiding(needle))
        held = set().union(*(_held(path, wanted) for path in logs))
        if any(_has_blobs(path) for path in logs):
            held.add(needle)  # the needle may be in a blob file only: records() restores it
        if not held:
            return
        # The same bytes again, line by line: only the lines that hold them are decoded.
        records = _lines_holding(store, sid, sorted(held))
    else:
        records = store.records(sid)
    for record in records:
        message = record.message
        message_role = role_of(message)
        if role is not None and message_role != role:
            continue
        yield from _record_hits(sid, record.sequence, message_role, message, summary.dialect, match)


def _lines_holding(store: SessionStore, sid: str, needles: list[bytes]) -> Iterator[RawMessageRecord]:
    """The records whose line holds any of ``needles``, in sequence order, each once."""
    if len(needles) == 1:
        yield from store.records(sid, containing=needles[0])
        return
    streams = [store.records(sid, containing=needle) for needle in needles]
    last = -1
    for record in heapq.merge(*streams, key=lambda record: record.sequence):
        if record.sequence != last:
            last = record.sequence
            yield record


def _record_hits(
    sid: str, sequence: int, role: str, message: object, dialect: str, match: Matcher
) -> Iterator[Hit]:
    """The hits in one message: one per matching string of its parts (`searchable`).

    Where a part holds JSON as text, what a person saw of it is found too, when none of the
    part's own strings matched: a tool call's arguments as the dialect stored them (the
    JSON string ``"cmd":["ls"`` of a Codex rollout, whose decoded strings are ``ls``), and
    the strings inside a tool output that is JSON text (Codex's ``{"output": ...}``, whose
    ``\\n`` and ``\\"`` a person reads as a newline and a quote).
    """
    for part in message_parts(message, dialect):
        found = False
        for field, text in _part_strings(part):
            span = match(text)
            if span is not None:
                found = found or field != "name"
                yield _hit(sid, sequence, role, part.kind, field, text, span)
        if found:
            continue
        if isinstance(part, ToolCallPart) and not isinstance(part.arguments, str):
            for text, span in _stored_arguments(message, part.arguments, match):
                yield _hit(sid, sequence, role, part.kind, "arguments", text, span)
        elif isinstance(part, ToolResultPart) and isinstance(part.content, str):
            for text, span in _json_text_strings(part.content, match):
                yield _hit(sid, sequence, role, part.kind, CONTENT, text, span)


def _stored_arguments(
    message: object, arguments: object, match: Matcher
) -> Iterator[tuple[str, tuple[int, int]]]:
    """The matching strings of ``message`` that are ``arguments`` as a JSON string.

    Found by value, not by a dialect's key: a string that decodes to the call's arguments
    is the form the dialect stored them in (``decode_arguments`` made them from it).
    """
    stored = message if isinstance(message, dict) else msgspec.to_builtins(message)
    for text in _strings(stored):
        span = match(text)
        if span is not None and decode_arguments(text) == arguments:
            yield text, span


def _json_text_strings(text: str, match: Matcher) -> Iterator[tuple[str, tuple[int, int]]]:
    """The matching strings inside ``text`` when it is a JSON object or array."""
    if not text.lstrip().startswith(("{", "[")):
        return
    value = decode_arguments(text)
    if isinstance(value, str):
        return  # not valid JSON: the text itself was already matched
    for inner in _strings(value):
        span = match(inner)
        if span is not None:
            yield inner, span


def naive_search(store: SessionStore, text: str, *, regex: bool = False) -> Iterator[Hit]:
    """`search` without the prefilter: every record of every session decoded and matched.

    The reference the property tests compare `search` with, and what a reader can read to
    see what a hit is.
    """
    match, _ = _compile(text, regex)
    for summary in store.list_sessions():
        yield from _search_session(store, summary, match, b"", None)


__all__ = [
    "CONTENT",
    "CONTEXT",
    "NESTED_ESCAPES",
    "Hit",
    "naive_search",
    "needle_bytes",
    "needs_escapes",
    "role_of",
    "search",
    "searchable",
]
