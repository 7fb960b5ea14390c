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
   confirmed too. A session keeping large strings in blob files (spec §5.1) is skipped
   only when no blob file its log names holds the needle either, and no placeholder for
   an unreadable blob could (`_blobs_may_hold`).
2. The **confirmation**: the sessions that pass are read with
   ``SessionStore.records(containing=...)``, which checks the checksum of each line
   holding those bytes, leaves out a batch torn by a crash and decodes only those lines;
   each record's message is read as parts (`jsonl_store.message_parts`, in the session's
   dialect) and their strings matched, decoded. A hit is only ever what a
   decode-everything search finds (`naive_search`;
   ``tests/property/test_search_properties.py`` checks exactly that).

A regular expression is matched on decoded text only (its bytes form is not a string's
JSON form), so ``regex=True`` decodes every record. It is matched by RE2 (`_text.regex`), in
time linear in the text searched, never by Python's backtracking `re`.
"""

from __future__ import annotations

import functools
import heapq
import mmap
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from ._context.dialects import message_parts
from ._context.parts import ToolCallPart, ToolResultPart, decode_arguments
from ._context.search_text import CONTENT, part_strings, role_of, searchable, strings
from ._context.view import SessionSummary
from ._errors import InvalidArgument, SessionNotFound
from ._format.names import BLOBS_DIR
from ._format.records import RawMessageRecord
from ._log import blobs as _blobs
from ._log.modes import mapped
from ._session.catalog import RankedHit, fts_query, hit_fields
from ._text.find import find
from ._text.regex import Pattern, compile_linear
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
#: A blob marker as the store's writer encodes it (compact JSON, spec §5.1), from its ``{``.
_MARKER = re.compile(rb'\{"\$blob":"sha256:([0-9a-f]{64})","size":(\d+)\}')
#: The roles a search may be limited to: the roles readers show (`_context.search_text.role_of`;
#: a Codex ``developer`` message is stored as ``system`` and shown as ``developer``).
_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "compacted"})


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
        return hit_fields(self)


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

    Read through a read-only map (`_log.modes.mapped`: no symlink followed, no blocking,
    nothing copied); an empty needle or an unreadable file counts as found and leaves the
    judgement to `SessionStore.records`, which reports what it meets.
    """
    everything = set(needles)
    found = mapped(path, lambda data: {needle for needle in needles if not needle or find(data, needle) >= 0})
    return everything if found is None else found


def _has_blobs(log: str) -> bool:
    """Whether the session of the raw log ``log`` keeps large strings in ``blobs/`` (spec §5.1).

    The needle may then be in a blob file only, which holds the string's raw bytes, not
    their JSON form: `_blobs_may_hold` looks there.
    """
    try:
        return stat.S_ISDIR(os.lstat(os.path.join(os.path.dirname(log), BLOBS_DIR)).st_mode)
    except OSError:
        return False


def _markers(data: bytes | mmap.mmap) -> dict[str, int] | None:
    """The blob each marker in a raw log names (digest: size), or None for a ``"$blob"`` that
    is not a marker exactly as the store's writer encodes it (then nothing is assumed)."""
    named: dict[str, int] = {}
    at = find(data, _blobs.KEY_BYTES)
    while at >= 0:
        marker = _MARKER.match(data, at - 1)
        if marker is None:
            return None
        named[marker.group(1).decode()] = int(marker.group(2))
        at = find(data, _blobs.KEY_BYTES, at + 1)
    return named


def _other_or_holding(size: int, needle: bytes, data: bytes | mmap.mmap) -> bool:
    """Whether a blob file's bytes are not the ``size`` its marker names, or hold ``needle``."""
    return len(data) != size or find(data, needle) >= 0


def _blobs_may_hold(log: str, needle: bytes) -> bool:
    """Whether a record of the raw log ``log`` may hold ``needle`` in a string kept in a blob file.

    A reader puts each marker's string back (spec §5.1), or, for a blob it cannot read,
    placeholder text (`_log.blobs.placeholder`). So a record may match only where a blob file
    its log names holds the needle's bytes (a blob holds the string's UTF-8, the plain
    run of `needle_bytes` as it is), or where the placeholder could hold them. That is
    ruled out only for a marker naming a regular file of the size it says, whose only
    placeholders are the two fixed texts checked here; anything else (a marker in another
    form, a missing, short or unreadable file, a needle with no plain run, which a
    nested escape in the blob may hide) counts as a possible hit, and records() decides.
    """
    if needs_escapes(needle):
        return True
    named = mapped(log, _markers)
    if named is None:
        return True
    folder = os.path.join(os.path.dirname(log), BLOBS_DIR)
    for digest, size in named.items():
        texts = (_blobs.placeholder(digest, _blobs.DAMAGED), _blobs.placeholder(digest, _blobs.NOT_UTF8))
        if any(needle in text.encode() for text in texts):
            return True
        found = mapped(os.path.join(folder, digest), functools.partial(_other_or_holding, size, needle))
        if found is None or found:
            return True
    return False


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
    logs = store._searching.logs(summary)
    if needle:
        wanted = (needle, *_escapes_hiding(needle))
        held = set().union(*(_held(path, wanted) for path in logs))
        in_blobs = any(_has_blobs(path) and _blobs_may_hold(path, needle) for path in logs)
        if not held and in_blobs:
            held.add(needle)  # in a blob file only: records() reads every line, blobs restored
        if not held:
            return
        # The same bytes again, line by line: only the lines that hold them are decoded
        # (and, when a blob file may hold them, every line naming a blob, restored first).
        records = _lines_holding(store, sid, sorted(held), in_blobs)
    else:
        records = store.records(sid)
    for record in records:
        message = record.message
        message_role = role_of(message)
        if role is not None and message_role != role:
            continue
        yield from _record_hits(sid, record.sequence, message_role, message, summary.dialect, match)


def _lines_holding(
    store: SessionStore, sid: str, needles: list[bytes], in_blobs: bool
) -> Iterator[RawMessageRecord]:
    """The records whose line (its blobs restored, with ``in_blobs``) holds any of ``needles``,
    in sequence order, each once."""
    read = store._searching.records
    if len(needles) == 1:
        yield from read(sid, needles[0], in_blobs=in_blobs)
        return
    streams = [read(sid, needle, in_blobs=in_blobs) for needle in needles]
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
        for field, text in part_strings(part):
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
    for text in strings(stored):
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
    for inner in strings(value):
        span = match(inner)
        if span is not None:
            yield inner, span


def search_ranked(
    store_or_root: SessionStore | str | os.PathLike[str],
    query: str,
    *,
    limit: int = 10,
    session_id: str | None = None,
    role: str | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> list[RankedHit]:
    """The best ``limit`` matches of ``query``'s words, best first (FTS5's bm25), from the catalog.

    Every word of ``query`` must be in a part (words as SQLite's unicode61 tokenizer reads
    them: case and diacritics ignored); a hit is one part of one message (or a title),
    read as `search` reads it, with a snippet whose matched words are at `RankedHit.marks`.
    The catalog (``<root>/.catalog/``, spec §21) is brought up to date from the files
    first: the first call on a store indexes every log, later ones only what was appended
    since; ``on_progress(done, total)`` counts those bytes. A fork's inherited records are
    found under the session that holds them. Exact substring and regular expression
    matches are `search`'s: it never uses the catalog.

    Raises `InvalidArgument` (a `ValueError`) when ``query`` holds no word, ``limit`` is
    not a positive int or ``role`` is not a role; `CatalogUnavailable` (a `RuntimeError`)
    when SQLite has no FTS5, the store runs on a simulated file system, or the root cannot
    hold the catalog.
    """
    fts_query(query)  # a query holding no word fails before any file is read
    if type(limit) is not int or limit < 1:
        raise InvalidArgument(f"limit must be a positive int, got {limit!r}")
    if role is not None and role not in _ROLES:
        raise InvalidArgument(f"role must be one of {sorted(_ROLES)}, got {role!r}")
    store, owned = _open(store_or_root)
    try:
        return store._searching.ranked(query, limit, session_id, role, on_progress)
    finally:
        if owned:
            store.close()


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
    "RankedHit",
    "naive_search",
    "needle_bytes",
    "needs_escapes",
    "role_of",
    "search",
    "search_ranked",
    "searchable",
]
