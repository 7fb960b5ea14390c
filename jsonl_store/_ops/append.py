"""An append's arguments checked and its records encoded, before any file is touched.

`encode` does everything that can fail on bad input, then hands the writer a `Batch`
whose `build` runs under the append lock and only numbers the lines (spec §9.1): the
next sequence is known only there. `encode_one` and `One` are the same for the append a
runner makes on every message (one message, at most its usage, no other option), flat:
about a quarter of a buffered append's time was the general path's lists and keywords.
Both encode each record with `encode_record`, the one record encoder;
tests/property/test_append_paths.py checks that the two write the same bytes and raise
the same errors.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

import msgspec

from .._errors import InvalidArgument, ParentMismatch, SequenceConflict
from .._format import codec as _codec
from .._format import depth as _depth
from .._format import roundtrip as _roundtrip
from .._format.ids import new_uuid7
from .._format.names import FORK_NAME, LOG_NAME, validate_session_id
from .._format.records import AssistantMessage, Message, MessageTiming, ModelUsage
from .._io import dirs as _dirs
from .._io.session_dir import SessionDir
from .._log import blob_writes as _blob_writes
from .._log.reader import sequence_of
from .._log.scan import Line
from .._session import meta as _meta
from .._session.handles import OpenSession, now
from .._text.redact import Redactor
from .._text.redactions import Tally


class Options(msgspec.Struct, frozen=True, kw_only=True):
    """The keywords of `SessionStore.append` and ``append_many`` besides the messages, their
    timings and usages, as given (`encode` checks them). One value instead of nine keywords
    passed down: a checkpoint's ``append_options`` build it too (`from_keywords`)."""

    request_id: str | None = None
    parent_session_id: str | None = None
    title: str | None = None
    agent_name: str | None = None
    session_type: int = 0
    metadata: Mapping[str, Any] | None = None
    tags: Mapping[str, Any] | None = None
    expected_last_sequence: int | None = None
    created_at: datetime | None = None

    @classmethod
    def from_keywords(cls, keywords: Mapping[str, Any]) -> Options:
        """The options among ``keywords`` (a checkpoint's ``append_options``; others are ignored)."""
        return cls(**{name: keywords[name] for name in cls.__struct_fields__ if name in keywords})


#: What `SessionStore.checkpoint` passes on to the append it makes: every option but the
#: expectation (a checkpoint decides what it appends after), and the timings and usages.
CHECKPOINT_KEYWORDS = frozenset(Options.__struct_fields__) - {"expected_last_sequence"} | {"timing", "usage"}


def is_assistant(message: Message) -> bool:
    if isinstance(message, dict):
        return message.get("role") == "assistant"
    return isinstance(message, AssistantMessage)


def per_message(value: Any, kind: type, count: int, name: str) -> list[Any]:
    """One value for the whole batch, or one per message, as a list of ``count``."""
    if value is None or isinstance(value, kind):
        return [value] * count
    try:
        values = list(value)
    except TypeError:
        raise InvalidArgument(
            f"{name} must be one {kind.__name__} or a list of them, got {value!r}"
        ) from None
    if len(values) != count:
        raise InvalidArgument(f"{name} has {len(values)} entries for {count} messages")
    return values


def usages_for(messages: Sequence[Message], usage: object) -> list[ModelUsage | None]:
    """``usage`` per message: a single `ModelUsage` belongs to the batch's only assistant message."""
    count = len(messages)
    if isinstance(usage, ModelUsage):
        assistants = [i for i, m in enumerate(messages) if is_assistant(m)]
        if len(assistants) != 1:
            raise InvalidArgument(
                f"a single usage needs exactly one assistant message in the batch, found {len(assistants)}"
            )
        usages: list[ModelUsage | None] = [None] * count
        usages[assistants[0]] = usage
        return usages
    return per_message(usage, ModelUsage, count, "usage")


def batch_timings_and_usages(
    messages: Sequence[Message], timing: object, usage: object
) -> tuple[list[MessageTiming | None], list[ModelUsage | None]]:
    """``append_many``'s ``timing`` and ``usage``, one per message; `InvalidArgument` for
    ``messages`` that are no sequence, or a list of either that does not match it."""
    if isinstance(messages, (dict, str, bytes)) or not isinstance(messages, Sequence):
        raise InvalidArgument("append_many takes a sequence of messages")
    return per_message(timing, MessageTiming, len(messages), "timing"), usages_for(messages, usage)


def check_usage(usage: object, message: Message) -> None:
    # Structs do not check types on construction; a string here would write a record
    # that no reader can decode, so the counts are checked before anything is written.
    if not is_assistant(message):
        raise InvalidArgument("usage belongs only to assistant messages")
    if not isinstance(usage, ModelUsage):
        raise InvalidArgument(f"usage must be a ModelUsage, got {type(usage).__name__}")
    for name in usage.__struct_fields__:
        value = getattr(usage, name)
        if type(value) is not int or value < 0:
            raise InvalidArgument(f"usage.{name} must be a non-negative int, got {value!r}")


def check_timing(timing: object) -> None:
    if not isinstance(timing, MessageTiming):
        raise InvalidArgument(f"timing must be a MessageTiming, got {type(timing).__name__}")
    for name in timing.__struct_fields__:
        value = getattr(timing, name)
        expected: type = int if name.endswith("_ns") else datetime
        if value is None and name not in ("started_at", "completed_at", "duration_ns"):
            continue
        if not isinstance(value, expected) or isinstance(value, bool):
            raise InvalidArgument(f"timing.{name} must be {expected.__name__}, got {value!r}")


def record_time(value: object) -> datetime:
    """A caller's ``created_at`` in UTC; a naive datetime (no time zone) would be a guess, so it is refused."""
    if not isinstance(value, datetime) or value.tzinfo is None or value.utcoffset() is None:
        raise InvalidArgument(f"created_at must be a timezone-aware datetime, got {value!r}")
    return value.astimezone(UTC)


def json_object(value: Mapping[str, Any] | None, name: str, redactor: Redactor | None = None) -> Any:
    if value is not None and not isinstance(value, Mapping):
        raise InvalidArgument(f"{name} must be a mapping, got {type(value).__name__}")
    if not value:
        return None  # left out of the line, read back as {}
    data = _codec.encode_json(dict(value), name)
    return msgspec.Raw(redact_deep(redactor.redact_json, data) if redactor is not None else data)


def redact_deep(redact_json: Callable[[bytes], bytes], data: bytes) -> bytes:
    """``redact_json(data)``, on a deeper stack when the caller's is too short for the value:
    it decodes and walks it, and what `_format.codec.encode_message` accepted (up to
    `_format.depth.MAX_DEPTH` levels, spec §4) must be stored from any call depth."""
    try:
        return redact_json(data)
    except RecursionError:
        return _depth.in_deep_stack(redact_json, data)


def check_session_options(
    session_id: str, request_id: str | None, parent_session_id: str | None, session_type: int
) -> None:
    if request_id is not None:
        if not isinstance(request_id, str):
            raise InvalidArgument(f"request_id must be a str, got {type(request_id).__name__}")
        _roundtrip.check_label(request_id, "request_id")
    if parent_session_id is not None:
        validate_session_id(parent_session_id)
        if parent_session_id == session_id:
            raise InvalidArgument(f"session {session_id!r} cannot be its own parent")
    if type(session_type) is not int:
        raise InvalidArgument(f"session_type must be an int, got {session_type!r}")


def _unchanged(data: bytes) -> bytes:
    return data


def redact_labels(redactor: Redactor | None, *labels: str | None) -> tuple[str | None, ...]:
    """``labels`` (a title, an agent name) redacted; None stays None."""
    if redactor is None:
        return labels
    return tuple(redactor.redact(label) if label is not None else None for label in labels)


def set_init(
    session: OpenSession,
    created_at: datetime,
    parent_session_id: str | None,
    session_type: int,
    agent_name: str | None,
    title: str | None,
    redactor: Redactor | None,
) -> None:
    """What the session's metadata is made from should this write have to make it (spec §9.8).

    Raises `InvalidArgument` for a title or agent name `update_session` would refuse.
    """
    if title is not None or agent_name is not None:
        _meta.check_title(title)
        _meta.check_agent_name(agent_name)
    counted: dict[str, int] = {}
    if isinstance(redactor, Tally) and (title is not None or agent_name is not None):
        # Counted apart: the labels are stored only if this write makes the session.
        labels = Tally(redactor.inner)
        title, agent_name = redact_labels(labels, title, agent_name)
        counted = labels.kinds
    else:
        title, agent_name = redact_labels(redactor, title, agent_name)
    session.init = (created_at, parent_session_id, session_type, agent_name, title)
    session.init_redacted = counted


class Batch:
    """The encoded records of one append, waiting for their sequences."""

    __slots__ = ("blobs", "bodies", "expected", "parent", "sequences", "session", "store_blobs", "stored")

    def __init__(
        self,
        session: OpenSession,
        bodies: list[tuple[bytes, bytes] | None],
        parent: str | None,
        expected: int | None = None,
        blobs: dict[str, bytes] | None = None,
        store_blobs: Callable[[SessionDir, dict[str, bytes]], None] | None = None,
    ) -> None:
        self.session = session
        #: The large strings the records name, by SHA-256, and what writes them (spec §9.14).
        self.blobs = blobs
        self.store_blobs = store_blobs
        #: The last sequence the caller expects the log to hold (spec §9.1, conditional appends).
        self.expected = expected
        #: Per message: the line without sequence and checksum, or None (``persist=False``).
        self.bodies = bodies
        self.stored = len(bodies) - bodies.count(None)
        self.parent = parent
        self.sequences: list[int] = []

    def build(self, last: Line | None) -> tuple[bytes, Line]:
        """The batch's lines after ``last``, numbered; runs under the append lock."""
        # Checked under the lock: the session may have been deleted and made anew (with
        # another parent) since this store cached its parent.
        parent = self.parent
        if parent is not None and self.session.parent != parent:
            # The cached parent may be stale: this store knew the session before another
            # store deleted it and made it anew with a parent (its first open of the new
            # log is no "new file" to it). The metadata on disk decides.
            self.session.parent = self.session.parent_on_disk()
        if parent is not None and self.session.parent != parent:
            session_id = self.session.session_id
            raise ParentMismatch(
                f"session {session_id!r} has parent {self.session.parent!r}; a parent never changes (got {parent!r})",
                session_id=session_id,
            )
        # A fork's own log starts after its branch point (spec §8.10).
        sequence = sequence_of(last) if last is not None else self.session.base
        if self.expected is not None and sequence != self.expected:
            raise SequenceConflict(
                f"session {self.session.session_id!r} ends at sequence {sequence}, not {self.expected}; "
                "nothing was written",
                expected=self.expected,
                actual=sequence,
                session_id=self.session.session_id,
            )
        # Every record of a multi-record batch names the batch's last sequence, so a
        # reader can tell a batch torn by a power loss and give it back whole or not at all.
        batch_end = sequence + self.stored if self.stored > 1 else 0
        sequences = self.sequences
        sequences.clear()  # a retry after the session was made anew numbers again
        parts = []
        body = b""
        record_line = _codec.record_line
        for pieces in self.bodies:
            if pieces is None:
                sequences.append(0)
                continue
            sequence += 1
            sequences.append(sequence)
            line, body = record_line(sequence, batch_end, *pieces)
            parts.append(line)
        if self.blobs and self.store_blobs is not None:
            # Under the append lock, right before the write: no record is ever durable
            # before its blobs, and repair, which takes this lock to delete orphan blobs,
            # never sees a blob whose record is still to come (spec §9.14).
            self.store_blobs(self.session.where, self.blobs)
        data = b"".join(parts) if len(parts) > 1 else parts[0]
        return data, Line(len(data) - len(parts[-1]), None, body, len(data), sequence)


def refuse_unstarted(session: OpenSession, expected: int) -> None:
    """`SequenceConflict` for a conditional append expecting records of a session that has
    none: no raw log and no fork file, so its last sequence is 0 (spec §9.1).

    Looked at before the writer opens anything: a conflict must not make the session
    (its directory, metadata and empty log) on the way to being found.
    """
    where = session.where
    if _dirs.exists(where.fs, where.file(LOG_NAME)) or _dirs.exists(where.fs, where.file(FORK_NAME)):
        return
    raise SequenceConflict(
        f"session {session.session_id!r} has no record, not {expected}; nothing was written",
        expected=expected,
        actual=0,
        session_id=session.session_id,
    )


def encode_record(
    message: Message,
    usage: ModelUsage | None,
    timing: MessageTiming | None,
    common: Mapping[str, Any],
    shared_trailer: bytes,
    created: bytes,
    new_id: Callable[[], str],
    redact_json: Callable[[bytes], bytes],
    sizes: _blob_writes.Sizes,
    blobs: dict[str, bytes] | None,
) -> tuple[bytes, bytes, dict[str, bytes] | None] | None:
    """One message's record without its sequence: the head (`_format.codec.record_head`),
    the trailer, and ``blobs`` with its large strings added; None for a message not to be
    stored (``persist=False``). The one record encoder: `encode` calls it per message and
    `encode_one` once. ``common`` are the batch's trailer fields (request id, metadata,
    tags), ``shared_trailer`` their encoding.

    The message is encoded and checked (`_format.codec.encode_message`), redacted, its
    large strings spilled (spec §5.1); then its usage and timing are checked, and a record
    over the cap refused.
    """
    payload, plain = _codec.encode_message(message)
    if not (message.get("persist", True) is not False if isinstance(message, dict) else message.persist):
        return None
    try:
        payload = redact_json(payload)  # first: a secret must never reach a blob file
    except RecursionError:  # `redact_deep`, written out: every append runs this line
        payload = _depth.in_deep_stack(redact_json, payload)
    # Every append pays these two checks (spec §5.1): a memchr for "$" (rarely found),
    # and a length comparison, since only a message this long can hold a string over
    # the threshold. 36 is ord("$"): `int in bytes` is a bare memchr, while `b"$" in
    # bytes` first tries its argument as an int and builds (then drops) a TypeError,
    # and `find` parses its arguments; both cost more than the search.
    if 36 in payload or len(payload) > sizes.threshold:
        payload, blobs = _blob_writes.prepare(payload, sizes.threshold, blobs)
    if usage is not None:
        check_usage(usage, message)
    if timing is not None:
        check_timing(timing)
        usage_fields = msgspec.structs.asdict(usage) if usage is not None else {}
        trailer = _codec.encode_trailer(**common, **msgspec.structs.asdict(timing), **usage_fields)
    elif usage is not None:
        # The common case of a model response: token counts are the record's last
        # fields, so they follow the shared part without another encoding pass.
        trailer = shared_trailer + _codec.usage_trailer(usage)
    else:
        trailer = shared_trailer
    head = _codec.record_head(new_id(), created, payload, plain)
    if len(head) + len(trailer) > sizes.record_room:
        _blob_writes.check_size(head, trailer, sizes.max_record_bytes)
    return head, trailer, blobs


#: `encode_record`'s ``common`` when no batch field is given.
_NO_COMMON: Mapping[str, Any] = MappingProxyType({})


def encode(
    session: OpenSession,
    messages: Sequence[Message],
    sizes: _blob_writes.Sizes,
    options: Options,
    timings: Sequence[MessageTiming | None],
    usages: Sequence[ModelUsage | None],
    clock: Callable[[], datetime] = now,
    new_id: Callable[[], str] = new_uuid7,
    redactor: Redactor | None = None,
) -> Batch | None:
    """Check and encode an append; None when no message is to be stored (all ``persist=False``).

    With a ``redactor``, every stored string (messages, metadata, tags, the request id,
    the first append's title and agent name) is redacted here, before any file is touched,
    and before a long string can be spilled into a blob (so no secret reaches one).
    """
    check_session_options(
        session.session_id, options.request_id, options.parent_session_id, options.session_type
    )
    expected = options.expected_last_sequence
    if expected is not None and (type(expected) is not int or expected < 0):
        raise InvalidArgument(f"expected_last_sequence must be a non-negative int, got {expected!r}")
    common = _NO_COMMON
    if options.request_id is not None or options.metadata is not None or options.tags is not None:
        common = {
            "request_id": redact_labels(redactor, options.request_id)[0],
            "metadata": json_object(options.metadata, "metadata", redactor),
            "tags": json_object(options.tags, "tags", redactor),
        }
    shared_trailer = _codec.encode_trailer(**common) if common else b""
    created_at = clock() if options.created_at is None else record_time(options.created_at)
    created = _codec.encode_time(created_at)
    bodies: list[tuple[bytes, bytes] | None] = []
    blobs: dict[str, bytes] | None = None
    redact_json = redactor.redact_json if redactor is not None else _unchanged
    for message, usage, timing in zip(messages, usages, timings, strict=True):
        record = encode_record(
            message, usage, timing, common, shared_trailer, created, new_id, redact_json, sizes, blobs
        )
        if record is None:
            bodies.append(None)
            continue
        head, trailer, blobs = record
        bodies.append((head, trailer))
    if len(bodies) == bodies.count(None):
        return None
    set_init(
        session, created_at, options.parent_session_id, options.session_type, options.agent_name,
        options.title, redactor,
    )  # fmt: skip
    return Batch(session, bodies, options.parent_session_id, expected, blobs, sizes.store)


class One:
    """The encoded record of a plain single append (`encode_one`), waiting for its sequence."""

    __slots__ = ("blobs", "head", "sequence", "session", "store_blobs", "trailer")

    def __init__(
        self,
        session: OpenSession,
        head: bytes,
        trailer: bytes,
        blobs: dict[str, bytes] | None,
        store_blobs: Callable[[SessionDir, dict[str, bytes]], None] | None,
    ) -> None:
        self.session = session
        self.head = head
        self.trailer = trailer
        self.blobs = blobs
        self.store_blobs = store_blobs
        self.sequence = 0

    def build(self, last: Line | None) -> tuple[bytes, Line]:
        """`Batch.build` for one record with no parent, expectation or batch mark."""
        sequence = (sequence_of(last) if last is not None else self.session.base) + 1
        self.sequence = sequence
        line, body = _codec.record_line(sequence, 0, self.head, self.trailer)
        if self.blobs and self.store_blobs is not None:
            self.store_blobs(self.session.where, self.blobs)  # as in Batch.build
        return line, Line(0, None, body, len(line), sequence)


def encode_one(
    session: OpenSession,
    message: Message,
    usage: ModelUsage | None,
    sizes: _blob_writes.Sizes,
    clock: Callable[[], datetime],
    new_id: Callable[[], str],
    redactor: Redactor | None,
) -> One | None:
    """`encode` of ``append(session, message)`` or ``append(session, message, usage=...)``.

    The same record encoder and checks in the same order, for the append a runner makes
    on every message: none of the `Options` is given.
    """
    created_at = clock()
    record = encode_record(
        message, usage, None, _NO_COMMON, b"", _codec.encode_time(created_at), new_id,
        redactor.redact_json if redactor is not None else _unchanged, sizes, None,
    )  # fmt: skip
    if record is None:
        return None
    session.init = (created_at, None, 0, None, None)
    session.init_redacted = {}
    return One(session, *record, sizes.store)
