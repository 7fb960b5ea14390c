"""Search every session of a store for a text or a regular expression, as fast as ``grep``.

A search reads each session's raw log in two passes over the public API and the
documented files (README, "The session directory"):

1. A **prefilter** over the bytes of ``messages.jsonl``, with ``bytes.find`` (C speed,
   no decoding): a session whose file cannot hold the needle is skipped without reading
   one record. It looks for the needle *as the writer encodes it*: spec/FORMAT.md §3
   says that inside JSON strings only control characters are escaped (besides the ``"``
   and ``\\`` JSON itself escapes) and everything else is written raw, UTF-8 included.
   So the longest run of the needle without a control character, with ``"`` and ``\\``
   escaped, occurs literally in every line that holds the needle, whichever form a
   writer chose for the control characters (``\\n`` or ``\\u000a``).
2. The **confirmation**: the sessions that pass are read with
   ``SessionStore.records(containing=needle)``, which checks the checksum of each line
   holding the needle, leaves out a batch torn by a crash and decodes only those lines;
   each record's searchable strings are matched again, decoded. A hit is only ever
   what a decode-everything search finds (`naive_search`;
   ``tests/property/test_search_properties.py`` checks exactly that).

A regular expression is matched on decoded text only (its bytes form is not a string's
JSON form), so ``regex=True`` decodes every record. It is matched by RE2 (`_regex`), in
time linear in the text searched, never by Python's backtracking `re`.
"""

from __future__ import annotations

import mmap
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import msgspec

from ._errors import InvalidArgument, SessionNotFound, UnsafePath
from ._find import find
from ._regex import Pattern, compile_linear
from ._view import SessionSummary
from .store import SessionStore

#: Characters of context kept on each side of a match in `Hit.snippet`.
CONTEXT = 40
#: What the prefilter cannot look for literally: control characters (a writer may spell
#: them ``\\n`` or ``\\u000a``, spec/FORMAT.md §3).
_CONTROL = re.compile("[\x00-\x1f]+")
_ROLES = frozenset({"system", "user", "assistant", "tool", "compacted"})


@dataclass(frozen=True)
class Hit:
    """One match: where it is, and a line of text around it.

    ``sequence`` is the record's sequence in the raw log (0 for a session's title),
    ``role`` the message's role (``None`` for a title), ``field`` what matched
    (``"content"``, ``"reasoning"``, ``"tool name"``, ``"arguments"``, ``"title"``).
    ``snippet`` is the matched string with at most `CONTEXT` characters either side;
    ``snippet[start:end]`` is the match, and ``offset`` is where the match starts in the
    whole string.
    """

    session_id: str
    sequence: int
    role: str | None
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
            "field": self.field,
            "snippet": self.snippet,
            "start": self.start,
            "end": self.end,
            "offset": self.offset,
        }


def _plain_matcher(text: str) -> Callable[[str], tuple[int, int] | None]:
    length = len(text)

    def match(value: str) -> tuple[int, int] | None:
        at = value.find(text)
        return None if at < 0 else (at, at + length)

    return match


def _regex_matcher(pattern: Pattern) -> Callable[[str], tuple[int, int] | None]:
    def match(value: str) -> tuple[int, int] | None:
        found = pattern.search(value)
        return None if found is None else found.span()

    return match


def needle_bytes(text: str) -> bytes:
    """The bytes every raw-log line holding ``text`` in a string contains (see the module doc).

    The longest run of ``text`` without a control character, JSON-escaped as a writer
    escapes it; empty when ``text`` is only control characters (every line qualifies).
    """
    runs = _CONTROL.split(text)
    longest = max(runs, key=len)
    return longest.replace("\\", "\\\\").replace('"', '\\"').encode("utf-8", "surrogatepass")


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


def _call_parts(call: object) -> tuple[object, object]:
    """A tool call's name and arguments, as a message class or a dict (OpenAI's ``function``) holds them."""
    if isinstance(call, dict):
        function = call.get("function")
        if isinstance(function, dict):
            return function.get("name"), function.get("arguments")
        return call.get("name"), call.get("arguments")
    return getattr(call, "name", None), getattr(call, "arguments", None)


def searchable(message: object) -> Iterator[tuple[str, str]]:
    """Each ``(field, string)`` of a message a search looks at, in the message's order.

    The message text (``content``: a string, or the string values of its parts or of a
    tool's structured result), ``reasoning``, each tool call's ``name`` and the strings of
    its ``arguments`` (keys and values), and a tool result's ``name``. Numbers are not
    text: a search for ``42`` does not find ``{"line": 42}``.
    """
    if isinstance(message, dict):
        get = message.get
    else:
        fields = msgspec.structs.asdict(message) if isinstance(message, msgspec.Struct) else {}
        get = fields.get
    for text in _strings(get("content")):
        yield "content", text
    reasoning = get("reasoning")
    if isinstance(reasoning, str):
        yield "reasoning", reasoning
    calls = get("tool_calls")
    if isinstance(calls, list):
        for call in calls:
            name, arguments = _call_parts(call)
            if isinstance(name, str):
                yield "tool name", name
            for text in _strings(arguments, keys=True):
                yield "arguments", text
    name = get("name")
    if isinstance(name, str):
        yield "tool name", name


def role_of(message: object) -> str:
    """The role of a stored message (a class instance or a plain dict)."""
    if isinstance(message, dict):
        role = message.get("role")
        return role if isinstance(role, str) else ""
    return str(getattr(message, "role", ""))


def _hit(
    session_id: str, sequence: int, role: str | None, field: str, text: str, span: tuple[int, int]
) -> Hit:
    begin, end = span
    left = max(0, begin - CONTEXT)
    right = min(len(text), end + CONTEXT)
    return Hit(session_id, sequence, role, field, text[left:right], begin - left, end - left, begin)


def _file_may_hold(path: str, needle: bytes) -> bool:
    """Whether the file at ``path`` contains ``needle`` (True when it cannot tell).

    Opened without following a symlink or blocking, and read through a read-only map, so the kernel
    pages the file in and nothing is copied; an empty needle or an unreadable file says
    True and leaves the judgement to `SessionStore.records`, which reports what it meets.
    """
    if not needle:
        return True
    try:
        # O_NONBLOCK: a FIFO in a log's place must not hang the search (README, "Files
        # that are not what they seem"); it is then no regular file, and records() decides.
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return True
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return True
        if info.st_size == 0:
            return False
        with mmap.mmap(fd, info.st_size, access=mmap.ACCESS_READ) as data:
            return find(data, needle) >= 0
    except (OSError, ValueError):
        return True
    finally:
        os.close(fd)


def _has_blobs(log: str) -> bool:
    """Whether the session of the raw log ``log`` keeps large strings in ``blobs/`` (spec §5.1).

    The needle may then be in a blob file only, which holds the string's raw bytes, not
    their JSON form: such a session is always confirmed by records(), which restores them.
    """
    try:
        return stat.S_ISDIR(os.lstat(os.path.join(os.path.dirname(log), "blobs")).st_mode)
    except OSError:
        return False


def _logs_of(store: SessionStore, summary: SessionSummary) -> list[str]:
    """The raw logs a session's records come from: its own, and for a fork its sources'.

    The documented layout (README, "The session directory"): a fork reads its history
    from its source's ``messages.jsonl`` up to the branch (README, `fork`), so the needle
    may be there only. A store over a simulated file system has no such real files, and
    the prefilter then lets records() decide.
    """
    paths = [os.path.join(store.root, summary.session_id, "messages.jsonl")]
    seen = {summary.session_id}
    point = summary.fork
    while point is not None and point.session_id not in seen:
        seen.add(point.session_id)
        try:
            source = store.get_session(point.session_id)
        except UnsafePath:
            break  # a symlink or no directory: never followed, the fork is read alone (spec §8.10)
        paths.append(os.path.join(store.root, point.session_id, "messages.jsonl"))
        point = source.fork if source is not None else None
    return paths


def _open(store_or_root: SessionStore | str | os.PathLike[str]) -> tuple[SessionStore, bool]:
    if isinstance(store_or_root, SessionStore):
        return store_or_root, False
    if isinstance(store_or_root, (str, os.PathLike)):
        return SessionStore(store_or_root), True
    raise InvalidArgument(f"expected a SessionStore or a path, got {type(store_or_root).__name__}")


def _compile(text: str, regex: bool) -> tuple[Callable[[str], tuple[int, int] | None], bytes]:
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
    match: Callable[[str], tuple[int, int] | None],
    needle: bytes,
    role: str | None,
) -> Iterator[Hit]:
    sid = summary.session_id
    if role is None and summary.title is not None:
        span = match(summary.title)
        if span is not None:
            yield _hit(sid, 0, None, "title", summary.title, span)
    logs = _logs_of(store, summary)
    if not any(_file_may_hold(path, needle) or _has_blobs(path) for path in logs):
        return
    # The same needle again, line by line: only the lines that hold it are decoded.
    for record in store.records(sid, containing=needle or None):
        message = record.message
        message_role = role_of(message)
        if role is not None and message_role != role:
            continue
        for field, value in searchable(message):
            span = match(value)
            if span is not None:
                yield _hit(sid, record.sequence, message_role, field, value, span)


def naive_search(store: SessionStore, text: str, *, regex: bool = False) -> Iterator[Hit]:
    """`search` without the prefilter: every record of every session decoded and matched.

    The reference the property tests compare `search` with, and what a reader can read to
    see what a hit is.
    """
    match, _ = _compile(text, regex)
    for summary in store.list_sessions():
        yield from _search_session(store, summary, match, b"", None)


__all__ = ["CONTEXT", "Hit", "naive_search", "needle_bytes", "role_of", "search", "searchable"]
