"""What a format's parser reports to the engine (`_engine`): the sessions a file feeds
(`Target`), what its lines mean (`Entry`, `Compaction`, `UsageUpdate`), the `Collector`
they go to, the `Format` protocol a parser implements, and the checks of untrusted source
values (token counts, timestamps, titles) every parser shares."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from .. import ModelUsage, encode_session_id
from . import _source

#: The longest title a session may have (`update_session`'s limit).
_MAX_TITLE = 200


@dataclass
class Target:
    """A session one source file feeds: the file's own, or a sub-agent's."""

    session_id: str
    parent: str | None = None
    title: str | None = None
    agent_name: str | None = None
    #: The working directory the source names for the session: the project a usage
    #: report groups it under (spec §19).
    cwd: str | None = None
    #: Whether ``title`` is a name the source gave the session after an earlier one (Codex's
    #: ``thread_name_updated``): it replaces a title an earlier import set, never a user's.
    renamed: bool = False


@dataclass
class Entry:
    """One message for one session, from source lines ``line`` .. the line ending at ``end``."""

    session_id: str
    message: dict[str, Any]
    line: int
    end: int
    usage: ModelUsage | None = None
    request_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class Compaction:
    """A compaction summary: the session's context up to here is replaced by ``summary``,
    followed by the ``replacement`` messages where the source says what the context became."""

    session_id: str
    summary: str
    line: int
    end: int
    metadata: dict[str, Any] = field(default_factory=dict)
    replacement: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class UsageUpdate:
    """Larger counts for a model call whose usage a record of an earlier import holds under
    ``request_id`` (the import read the call's first lines only): a usage-log line with that
    ``request_id``, which `SessionStore.model_calls` counts instead of the record's usage."""

    session_id: str
    usage: ModelUsage
    request_id: str
    line: int
    end: int
    metadata: dict[str, Any] = field(default_factory=dict)


Event = Entry | Compaction | UsageUpdate
Parsed = tuple[_source.SourceLine, dict[str, Any]]


#: ``stored(session_id)``: each source line id the records of a session hold, and that record's message.
StoredLines = Callable[[str], Mapping[str, object]]


def nothing_stored(session_id: str) -> Mapping[str, object]:
    return {}


def as_written(value: dict[str, Any]) -> dict[str, Any]:
    return value


class Collector:
    """What a format's parser reports for one file: targets, events, skipped lines, its state."""

    def __init__(
        self,
        main: Target,
        state: Mapping[str, Any],
        stored: StoredLines = nothing_stored,
        as_stored: Callable[[dict[str, Any]], dict[str, Any]] = as_written,
    ) -> None:
        self.main = main
        self.targets: dict[str, Target] = {main.session_id: main}
        self.events: list[Event] = []
        self.skipped: Counter[str] = Counter()
        #: Lines read into the session's meta, not stored as records (`FileReport.in_meta`).
        self.in_meta: Counter[str] = Counter()
        #: Why the lines of each kind skipped or read into meta are no records (`FileReport.reasons`).
        self.reasons: dict[str, str] = {}
        self.state: dict[str, Any] = dict(state)
        self.stored_lines = stored
        #: A value as the store keeps it (redacted as the store's redactor would), to compare
        #: a line read now with what an earlier import stored of it.
        self.as_stored = as_stored

    def target(self, target: Target) -> str:
        self.targets.setdefault(target.session_id, target)
        return target.session_id

    def add(self, event: Event) -> None:
        self.events.append(event)

    def skip(self, kind: object, reason: str) -> None:
        """Count a line not stored as a record, under its kind, with why (the report names both)."""
        key = str(kind)[:80]
        self.skipped[key] += 1
        self.reasons.setdefault(key, reason)

    def read_into_meta(self, kind: str, reason: str) -> None:
        """Count a line whose content went into the session's meta (a title, a header, a turn's
        model), not into a record, with where it went (the report names both)."""
        self.in_meta[kind[:80]] += 1
        self.reasons.setdefault(kind[:80], reason)


class Format(Protocol):
    """One tool's transcript format."""

    tool: str
    dialect: str
    #: What a file of this format is, for the one line that refuses a file of another kind.
    expected: str

    def identify(self, path: str, head: list[dict[str, Any]]) -> Target | None:
        """The session the file at ``path`` feeds, from its first lines (None: not this format)."""
        ...

    def parse(self, path: str, lines: Iterator[Parsed], out: Collector) -> None:
        """Report every line's meaning to ``out`` (``out.state`` is the state the last import left)."""
        ...


def token_count(usage: dict[str, Any], key: str) -> int:
    """A token count of a source's usage object: a non-negative int, else 0 (sources are untrusted)."""
    value = usage.get(key, 0)
    return value if type(value) is int and value >= 0 else 0


def session_id_for(prefix: str, source_id: str) -> str:
    """``prefix`` + `encode_session_id` of the source's id (a UUID is its own encoding).

    Raises `InvalidSessionId` when that is longer than a session id may be.
    """
    return prefix + encode_session_id(source_id)


def source_time(value: object) -> datetime | None:
    """A source's ISO 8601 timestamp as an aware datetime (UTC when it names no zone), or None."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def clean_title(value: object) -> str | None:
    """A title the store accepts (1 to 200 characters, no NUL or lone surrogate), or None."""
    if not isinstance(value, str):
        return None
    text = " ".join(value.replace("\x00", " ").split())
    text = text.encode("utf-8", "replace").decode("utf-8")[:_MAX_TITLE]
    return text or None


def fields_text(d: Mapping[str, Any], leave_out: frozenset[str] = frozenset()) -> str:
    """A source line's plain values as ``name: value`` pairs, in order (what a line with no
    text of its own says: a turn's duration, a tool call's server and tool), a nested
    object's as ``outer.inner: value``, ``leave_out`` (top-level names), flags, nulls and
    empty values left out: the text of a record that keeps the line as written beside it."""
    return ", ".join(f"{name}: {value}" for name, value in _plain_fields(d, "", leave_out))


def _plain_fields(
    value: Any, name: str, leave_out: frozenset[str] = frozenset()
) -> Iterator[tuple[str, str]]:
    stack: list[tuple[str, Any]] = [(name, value)]
    while stack:  # depth first, in order, without recursion (a source's nesting is untrusted)
        path, item = stack.pop()
        if isinstance(item, str) or (isinstance(item, (int, float)) and not isinstance(item, bool)):
            if item != "":
                yield path, str(item)
        elif isinstance(item, list) and item and all(isinstance(inner, str) for inner in item):
            yield path, ", ".join(item)
        elif isinstance(item, dict):
            keys = [k for k in item if not (path == "" and k in leave_out)]
            stack.extend(reversed([(f"{path}.{k}" if path else str(k), item[k]) for k in keys]))
        elif isinstance(item, list):
            stack.extend(reversed([(f"{path}.{i}", inner) for i, inner in enumerate(item)]))
