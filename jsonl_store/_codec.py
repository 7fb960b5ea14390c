"""One line <-> one record: strict encoding, the per-line checksum, and decoding.

A line is one JSON object whose last key is ``"crc"``::

    {"sequence":1,"id":"...","created_at":"...","message":{...},"crc":"1c291ca3"}\\n

The checksum is CRC-32 (zlib) of every byte before ``,"crc":``, written as eight
lowercase hex digits, so the suffix always has the same 18 bytes and a reader finds it
without parsing. The line is still plain JSON: ``jq`` and ``grep`` work on it unchanged.
"""

from __future__ import annotations

import functools
import math
import sys
import threading
import zlib
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any, Final, ParamSpec, TypeVar

import msgspec

from . import _process
from ._errors import InvalidArgument, InvalidMessage, UnsupportedValue
from ._records import (
    MESSAGE_TYPES,
    ROLES,
    AnyMessage,
    ContextSnapshot,
    ModelUsage,
    RawMessageRecord,
    ToolCall,
    UsageRecord,
)

CRC_KEY: Final = b',"crc":"'
SUFFIX_LENGTH: Final = len(CRC_KEY) + 8 + 2  # ,"crc":" + 8 hex digits + "}
#: The suffix a line's CRC-32 spells, ``SUFFIX % crc``: one comparison checks key and digits.
SUFFIX: Final = CRC_KEY + b'%08x"}'
#: The deepest a message, metadata or tags value may nest: JSON objects and arrays inside
#: each other (spec §4). msgspec encodes and decodes recursively, within the interpreter's
#: recursion limit less the frames already on the caller's stack, so the limit is checked
#: on its own (`nesting`), and a value within it that the caller's stack is too deep for is
#: encoded again in a thread with room (`_in_deep_stack`): what is accepted never depends
#: on where `append` was called from, and every reader and printer can follow it.
MAX_DEPTH: Final = 1000
#: A reader that meets a value too deep for its own stack decodes it again in a fresh
#: thread with this much room, so whatever a writer accepted (from any stack) reads back.
DEEP_STACK: Final = 3 * MAX_DEPTH

#: What decoding a line or file that is not what it should be can raise. msgspec decodes
#: nested JSON recursively and raises RecursionError past the interpreter's limit: a
#: checksum-valid line nested a thousand levels deep is a bad record, not a crash.
DECODE_ERRORS: Final = (msgspec.ValidationError, msgspec.DecodeError, RecursionError)

T = TypeVar("T")
P = ParamSpec("P")

_encoder = msgspec.json.Encoder()
_any_decoder = msgspec.json.Decoder()
_message_decoder: msgspec.json.Decoder[AnyMessage] = msgspec.json.Decoder(AnyMessage)


class _TypedRecord(RawMessageRecord, frozen=True, kw_only=True, omit_defaults=True):
    """A raw-log record whose message decodes straight into its message class."""

    message: AnyMessage


class _TypedSnapshot(ContextSnapshot, frozen=True, kw_only=True, omit_defaults=True):
    compacted_message: AnyMessage


_plain_record_decoder = msgspec.json.Decoder(RawMessageRecord)
_typed_record_decoder = msgspec.json.Decoder(_TypedRecord)
_plain_snapshot_decoder = msgspec.json.Decoder(ContextSnapshot)
_typed_snapshot_decoder = msgspec.json.Decoder(_TypedSnapshot)
_usage_decoder = msgspec.json.Decoder(UsageRecord)

# `plain` is written right before the message. The fields before it hold no free text, so
# the first `"message":` in a line is the record's own key, and the bytes in front of it
# tell which decoder to use without parsing the line twice.
_PLAIN_MARK: Final = b',"plain":true,'
_PLAIN_LENGTH: Final = len(_PLAIN_MARK)
_MESSAGE_KEY: Final = b'"message":'
_force_setattr = msgspec.structs.force_setattr


# ---------------------------------------------------------------------------------------
# Messages
# ---------------------------------------------------------------------------------------


#: One decoder per message class: the round trip of an exact instance skips the union's tag lookup.
_class_decoders: Final[dict[type, Callable[[bytes], Any]]] = {
    cls: msgspec.json.Decoder(cls).decode for cls in MESSAGE_TYPES
}


def nesting(value: object) -> int:
    """How many JSON objects and arrays deep ``value`` goes (a scalar 0, ``[]`` 1, ``[{}]`` 2).

    Walked without recursion, and stops early once past `MAX_DEPTH`. Message classes
    count as the objects they encode to.
    """
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: Iterable[object] = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        elif isinstance(item, msgspec.Struct):
            children = [getattr(item, name) for name in item.__struct_fields__]
        else:
            continue
        if level > deepest:
            deepest = level
            if deepest > MAX_DEPTH:
                break
        stack.extend((child, level + 1) for child in children)
    return deepest


def _check_nesting(value: object, where: str) -> None:
    if nesting(value) > MAX_DEPTH:
        raise InvalidMessage(
            f"value at {where} is nested deeper than {MAX_DEPTH} levels of objects and arrays"
        )


#: A value nested deeper than `MAX_DEPTH` encodes to more than twice as many bytes (an
#: opening and a closing bracket per level): shorter encodings need no look at their depth.
_SHALLOW_BYTES: Final = 2 * MAX_DEPTH


def _within_depth(encode: Callable[[Any, str], T], value: object, where: str) -> T:
    """``encode(value, where)`` again on a deeper stack after a RecursionError, for a value
    within `MAX_DEPTH` (`InvalidMessage` for a deeper one)."""
    _check_nesting(value, where)
    return _in_deep_stack(encode, value, where)


#: Whether msgspec's recursion counts against `sys.getrecursionlimit()`: on CPython 3.11 C
#: code shares the interpreter's counter; from 3.12 it has a limit of its own
#: (https://docs.python.org/3.12/whatsnew/3.12.html, "sys.setrecursionlimit").
_SHARED_RECURSION_LIMIT: Final = sys.version_info < (3, 12)


def _check_encoded(data: bytes, value: object, where: str) -> None:
    """Refuse a value whose encoding succeeded on a roomy stack but is nested past `MAX_DEPTH`.

    Free in the common case: with the interpreter's limit at most `MAX_DEPTH` and C code
    counting against it, a value that encoded cannot be deeper. Otherwise fewer brackets
    than `MAX_DEPTH` in its JSON (those inside strings counted too) mean it cannot be;
    only the others are walked (`nesting`).
    """
    if _SHARED_RECURSION_LIMIT and sys.getrecursionlimit() <= MAX_DEPTH:
        return
    if len(data) > _SHALLOW_BYTES and data.count(b"[") + data.count(b"{") > MAX_DEPTH:
        _check_nesting(value, where)


def encode_message(message: object) -> tuple[bytes, bool]:
    """Encode one message; return its JSON bytes and whether it was a plain dict.

    Raises `InvalidMessage` for a message nested deeper than `MAX_DEPTH`, from any
    depth of the caller's stack.
    """
    try:
        encoded = _encode_message(message, "$")
    except RecursionError:
        return _within_depth(_encode_message, message, "$")
    _check_encoded(encoded[0], message, "$")
    return encoded


def _encode_message(message: object, where: str) -> tuple[bytes, bool]:
    """`encode_message` on the caller's stack (RecursionError when it is too short).

    The message must come back *equal* when read: a value JSON cannot carry unchanged
    (NaN, a tuple, a non-str key, bytes, a custom object) raises instead of being
    silently altered. The check is a decode-and-compare, which costs about as much as
    the encoding itself and is exactly the promise made to the caller.
    """
    decode = _class_decoders.get(type(message))
    if decode is not None:
        # The common case, flat: an instance of a message class itself (a subclass takes
        # the general path below, and fails its round trip there).
        try:
            data = _encoder.encode(message)
        except _ENCODE_ERRORS:
            raise _explain(message, "$") from None
        try:
            back = decode(data)
        except msgspec.ValidationError as exc:
            raise InvalidMessage(f"message does not match its class: {exc}") from None
        if back != message:
            raise _explain(message, "$")
        return data, False
    if isinstance(message, dict):
        role = message.get("role")
        if not isinstance(role, str) or role not in ROLES:
            raise InvalidMessage(f"a dict message needs 'role' in {sorted(ROLES)}, got {role!r}")
        data = _encode_value(message, "$")
        if _any_decoder.decode(data) != message:
            raise _explain(message, "$")
        return data, True
    if isinstance(message, MESSAGE_TYPES):
        data = _encode_value(message, "$")
        try:
            back = _message_decoder.decode(data)
        except msgspec.ValidationError as exc:
            raise InvalidMessage(f"message does not match its class: {exc}") from None
        if back != message:
            raise _explain(message, "$")
        return data, False
    raise UnsupportedValue(
        f"a message must be a dict with 'role' or one of the message classes, not {type(message).__name__}"
    )


def decode_message(payload: bytes, plain: bool) -> Any:
    """A message back from the bytes `encode_message` made: a dict when ``plain``, else its class."""
    return _any_decoder.decode(payload) if plain else _message_decoder.decode(payload)


def encode_json(value: object, where: str = "$") -> bytes:
    """Encode a metadata or tags value with the same round-trip promise (and depth limit) as messages."""
    try:
        data = _encode_json(value, where)
    except RecursionError:
        return _within_depth(_encode_json, value, where)
    _check_encoded(data, value, where)
    return data


def _encode_json(value: object, where: str) -> bytes:
    data = _encode_value(value, where)
    if _any_decoder.decode(data) != value:
        raise _explain(value, where)
    return data


#: What encoding a value JSON cannot carry raises (a lone surrogate: UnicodeEncodeError,
#: a ValueError; an int past 64 bits: OverflowError). A RecursionError is no fault of the
#: value's: `_within_depth` handles it.
_ENCODE_ERRORS: Final = (TypeError, OverflowError, ValueError)


def _encode_value(value: object, where: str) -> bytes:
    try:
        data = _encoder.encode(value)
    except _ENCODE_ERRORS:
        raise _explain(value, where) from None
    return data


def _explain(value: object, where: str) -> InvalidMessage | UnsupportedValue:
    """Find the first value that cannot round-trip and say where it is (``$.a[0]``).

    Only called on the error path, so it may be slow and thorough. It recurses: on a
    stack too short for the value it raises RecursionError, and `_within_depth` calls it
    again from a deeper one.
    """
    found = _find_bad(value, where, 0)
    if found is None:
        return InvalidMessage(f"value at {where} does not survive a JSON round trip")
    return found


#: The Structs a message is made of; any other Struct inside a message is a value JSON
#: gives back as a dict, not as itself.
_SCHEMA_STRUCTS: Final[tuple[type[msgspec.Struct], ...]] = (*MESSAGE_TYPES, ToolCall)


def _find_bad(value: object, where: str, depth: int) -> InvalidMessage | UnsupportedValue | None:
    """The first value in ``value`` JSON cannot give back unchanged, as the error to raise."""
    if depth > MAX_DEPTH:
        return InvalidMessage(f"value at {where} is nested deeper than {MAX_DEPTH} levels")
    kind = type(value)
    if value is None or kind is bool or kind is int:
        return None
    if kind is str or kind is float:
        return _bad_scalar(value, where)
    if kind is list:
        assert isinstance(value, list)
        return _first_bad(((item, f"{where}[{index}]") for index, item in enumerate(value)), depth)
    if kind is dict:
        assert isinstance(value, dict)
        return _bad_dict(value, where, depth)
    if isinstance(value, _SCHEMA_STRUCTS):
        # Walk the fields themselves: converting the message to builtins first would fail
        # on the very value being looked for (an object()), or turn it into one JSON can
        # carry (a set into a list, a datetime into a str) and hide it.
        return _first_bad(
            ((getattr(value, name), f"{where}.{name}") for name in value.__struct_fields__), depth
        )
    return UnsupportedValue(
        f"value at {where} has type {kind.__name__}, which JSON cannot give back unchanged "
        "(use dict, list, str, int, float, bool or None)"
    )


def _bad_scalar(value: object, where: str) -> InvalidMessage | None:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return InvalidMessage(f"string at {where} holds a lone surrogate (not valid UTF-8)")
        return None
    assert isinstance(value, float)
    if not math.isfinite(value):
        return InvalidMessage(f"number at {where} is {value!r}, which JSON cannot represent")
    return None


def _bad_dict(
    value: dict[object, object], where: str, depth: int
) -> InvalidMessage | UnsupportedValue | None:
    for key, item in value.items():  # in order: the first bad key or value is the one named
        if type(key) is not str:
            return UnsupportedValue(f"key {key!r} at {where} is not a str; JSON object keys are strings")
        bad = _find_bad(key, f"{where} (key {key!r})", depth + 1) or _find_bad(
            item, f"{where}.{key}", depth + 1
        )
        if bad is not None:
            return bad
    return None


def _first_bad(parts: Iterable[tuple[object, str]], depth: int) -> InvalidMessage | UnsupportedValue | None:
    for part, where in parts:
        bad = _find_bad(part, where, depth + 1)
        if bad is not None:
            return bad
    return None


def check_label(value: str, name: str) -> None:
    """Refuse a short identifying string (title, agent name, request id, model) a line cannot hold.

    A lone surrogate is not UTF-8, so no file can hold it. A NUL could be stored as
    ``\\u0000``, but in a name it is a mistake (a C string cut short) that would reach
    every terminal and tool that shows the name, so it is refused too. JSON values
    (messages, metadata, tags) may hold NULs.
    """
    if "\x00" in value:
        raise InvalidArgument(f"{name} must not contain a NUL character, got {value!r}"[:300])
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidArgument(
                f"{name} holds a lone surrogate at position {exc.start} (not valid UTF-8), got {value!r}"[
                    :300
                ]
            ) from None


# ---------------------------------------------------------------------------------------
# Lines
# ---------------------------------------------------------------------------------------


def seal(body: bytes) -> bytes:
    """Turn an encoded JSON object into a checksummed line ending in ``\\n``."""
    assert body[-1:] == b"}", body[-20:]
    head = body[:-1]
    return b'%s,"crc":"%08x"}\n' % (head, zlib.crc32(head))


def is_sealed(line: bytes) -> bool:
    """Whether a line (without its newline) ends in a checksum that holds.

    The CRC runs over a memoryview, so checking costs no copy of the line; decoders
    read the line as it is (to a Struct decoder ``"crc"`` is just an unknown key).
    """
    if len(line) < SUFFIX_LENGTH + 2 or line[-SUFFIX_LENGTH:-10] != CRC_KEY or line[-2:] != b'"}':
        return False
    # Compare the text, not a parsed number: only the exact eight lowercase digits a
    # writer produces are accepted.
    return b"%08x" % zlib.crc32(memoryview(line)[:-SUFFIX_LENGTH]) == line[-10:-2]


def unseal(line: bytes) -> bytes | None:
    """Return the JSON object of a line without its checksum key, or None if the checksum fails."""
    if not is_sealed(line):
        return None
    return line[:-SUFFIX_LENGTH] + b"}"


def _trailer_struct() -> type[msgspec.Struct]:
    """The fields a record carries after its message, derived from `RawMessageRecord`.

    Deriving (rather than restating) them keeps the key order of lines written from parts
    identical to the order the record type declares.
    """
    fields = msgspec.structs.fields(RawMessageRecord)
    names = [f.name for f in fields]
    spec = []
    for field in fields[names.index("message") + 1 : names.index("session_id")]:
        # A factory default (metadata, tags) becomes None: callers pass encoded JSON or nothing.
        default = None if field.default is msgspec.NODEFAULT else field.default
        spec.append((field.name, Any, default))
    return msgspec.defstruct("_RecordTrailer", spec, kw_only=True, omit_defaults=True)


_RecordTrailer = _trailer_struct()


def encode_trailer(**fields: Any) -> bytes:
    """The bytes of a record after its message (``,"request_id":...``), or b"" for none."""
    data = _encoder.encode(_RecordTrailer(**fields))
    return b"," + data[1:-1] if len(data) > 2 else b""


def usage_trailer(usage: Any) -> bytes:
    """A `ModelUsage` as the last fields of a record (the same bytes `encode_trailer` makes)."""
    if type(usage) is ModelUsage:
        # Its fields, in order, are the record's last ones (`RawMessageRecord`): the
        # encoder writes them in one call, without a format operation per count.
        return b"," + _encoder.encode(usage)[1:-1]
    return (
        b',"input_tokens":%d,"output_tokens":%d,"cache_read_tokens":%d,"cache_write_tokens":%d,"reasoning_tokens":%d'
        % (
            usage.input_tokens,
            usage.output_tokens,
            usage.cache_read_tokens,
            usage.cache_write_tokens,
            usage.reasoning_tokens,
        )
    )


def encode_time(moment: Any) -> bytes:
    return _encoder.encode(moment)


def record_head(record_id: str, created_at: bytes, payload: bytes, plain: bool) -> bytes:
    """A record's bytes from ``"id"`` through its message; the sequence goes in front later.

    Writing the line from pre-encoded parts keeps the work done under the append lock to
    one format operation and one CRC, whatever the message's size.
    """
    return b"".join(
        (b'"id":"', record_id.encode(), b'","created_at":', created_at, _PLAIN_KEYS[plain], payload)
    )


#: What comes between a record's time and its message: `_PLAIN_MARK` for a plain dict.
_PLAIN_KEYS: Final = (b',"message":', _PLAIN_MARK + b'"message":')


def record_line(sequence: int, batch_end: int, head: bytes, trailer: bytes) -> tuple[bytes, bytes]:
    """The sealed line for one record and its JSON object (for the writer's bookkeeping)."""
    if batch_end:
        body = b"".join((b'{"sequence":%d,"batch_end":%d,' % (sequence, batch_end), head, trailer))
    else:
        body = b"".join((b'{"sequence":%d,' % sequence, head, trailer))
    sealed = body + b',"crc":"%08x"}' % zlib.crc32(body)
    return sealed + b"\n", sealed


def encode_record(record: RawMessageRecord) -> bytes:
    return seal(_encoder.encode(record))


class _DeepStack:
    """The lock under which one deep-stack decode at a time raises the recursion limit."""

    mutex = threading.Lock()

    @classmethod
    def renew(cls) -> None:
        # In a forked child: a thread of the parent may have held it, and is gone.
        cls.mutex = threading.Lock()


_process.register("deep-stack decode lock", _DeepStack.renew)

#: ``active`` is set in the thread `_in_deep_stack` runs: there is no deeper stack to go to.
_deep_thread = threading.local()


def _in_deep_stack(decode: Callable[..., T], *args: Any) -> T:
    """``decode(*args)`` again, in a fresh thread whose stack has `DEEP_STACK` levels of room.

    Only ever called after a RecursionError: a value nested close to the limit that a
    writer accepted from a shallow stack can fail in a reader called from a deeper one.
    The interpreter's limit is raised for the moment (never lowered), under a lock.
    """
    if getattr(_deep_thread, "active", False):
        # Called from that thread itself (a printer that reads): waiting there for
        # another such thread would wait for the lock it holds.
        raise msgspec.DecodeError(f"JSON nested deeper than {DEEP_STACK} levels")
    outcome: list[Any] = []

    def run() -> None:
        _deep_thread.active = True
        try:
            outcome.append((True, decode(*args)))
        except BaseException as exc:  # noqa: BLE001 (handed to the calling thread)
            outcome.append((False, exc))

    with _DeepStack.mutex:
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, DEEP_STACK + 100))
        try:
            worker = threading.Thread(target=run, name="jsonl_store-deep-decode")
            worker.start()
            worker.join()
        finally:
            sys.setrecursionlimit(limit)
    ok, value = outcome[0]
    if ok:
        return value  # type: ignore[no-any-return]
    if isinstance(value, RecursionError):
        raise msgspec.DecodeError(f"JSON nested deeper than {DEEP_STACK} levels") from None
    raise value


def with_deep_stack(function: Callable[P, T]) -> Callable[P, T]:
    """``function``, called again in a thread with `DEEP_STACK` levels of room when the
    caller's stack is too short for the value it was given.

    For the readers and printers of what `append` accepted (nested up to `MAX_DEPTH`,
    from any depth of the caller's stack): only for functions without side effects,
    which may run twice.
    """

    @functools.wraps(function)
    def call(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return function(*args, **kwargs)
        except RecursionError:
            return _in_deep_stack(functools.partial(function, *args, **kwargs))

    return call


def _decode_with_message(
    body: bytes, key: bytes, plain: msgspec.json.Decoder[Any], typed: msgspec.json.Decoder[Any]
) -> Any:
    index = body.find(key)
    if index > _PLAIN_LENGTH and body.startswith(_PLAIN_MARK, index - _PLAIN_LENGTH):
        return plain.decode(body)
    try:
        return typed.decode(body)
    except msgspec.ValidationError:
        # A role this version does not know (written by a newer writer): give the
        # message back as a plain dict rather than refusing the whole record.
        return plain.decode(body)


def decode_record(body: bytes, session_id: str) -> RawMessageRecord:
    """Decode a checksummed record line; raise msgspec errors if it does not fit the schema.

    A record written without timing gets the times that stand for (spec §4: absent
    ``started_at`` and ``completed_at`` both equal ``created_at``).
    """
    # `_decode_with_message` written out: this runs once per record read, and the call it
    # saves is 2% of reading one (measured with callgrind on the benchmark's records).
    try:
        index = body.find(_MESSAGE_KEY)
        if index > _PLAIN_LENGTH and body.startswith(_PLAIN_MARK, index - _PLAIN_LENGTH):
            record: RawMessageRecord = _plain_record_decoder.decode(body)
        else:
            try:
                record = _typed_record_decoder.decode(body)
            except msgspec.ValidationError:
                record = _plain_record_decoder.decode(body)
    except RecursionError:
        args = (body, _MESSAGE_KEY, _plain_record_decoder, _typed_record_decoder)
        record = _in_deep_stack(_decode_with_message, *args)
    _force_setattr(record, "session_id", session_id)
    if record.started_at is None:
        _force_setattr(record, "started_at", record.created_at)
        _force_setattr(record, "completed_at", record.created_at)
    return record


def encode_snapshot(snapshot: ContextSnapshot) -> bytes:
    return seal(_encoder.encode(snapshot))


def decode_snapshot(body: bytes, session_id: str) -> ContextSnapshot:
    args = (body, b'"compacted_message":', _plain_snapshot_decoder, _typed_snapshot_decoder)
    try:
        snapshot: ContextSnapshot = _decode_with_message(*args)
    except RecursionError:
        snapshot = _in_deep_stack(_decode_with_message, *args)
    _force_setattr(snapshot, "session_id", session_id)
    return snapshot


def encode_usage(record: UsageRecord) -> bytes:
    return seal(_encoder.encode(record))


def decode_usage(body: bytes) -> UsageRecord:
    return _usage_decoder.decode(body)


def decode_usage_dict(line: bytes) -> dict[str, Any]:
    """A usage line as the dict it was written as (without the checksum key)."""
    try:
        item = _any_decoder.decode(line)
    except RecursionError:
        item = _in_deep_stack(_any_decoder.decode, line)
    if not isinstance(item, dict):
        raise msgspec.ValidationError(f"expected a JSON object, got {type(item).__name__}")
    item.pop("crc", None)
    return item


class _Head(msgspec.Struct):
    sequence: int = 0
    batch_end: int = 0
    id: str = ""
    created_at: datetime | None = None


_position_decoder = msgspec.json.Decoder(_Head)


def _head(body: bytes) -> _Head:
    try:
        return _position_decoder.decode(body)
    except RecursionError:  # skipping a deep message recurses too
        return _in_deep_stack(_position_decoder.decode, body)


def record_summary(body: bytes) -> tuple[int, datetime | None]:
    """A record's sequence and creation time, skipping the message (for session listings)."""
    head = _head(body)
    return head.sequence, head.created_at


class _CallMeta(msgspec.Struct):
    model: Any = None
    provider: Any = None


class CallFields(msgspec.Struct):
    """What a record tells about the model call it holds, its message skipped: the fields
    `jsonl_store._usage.record_calls` reads (a usage report need not decode messages)."""

    sequence: int = 0
    created_at: datetime | None = None
    request_id: Any = None
    metadata: _CallMeta | None = None
    input_tokens: Any = None
    output_tokens: Any = None
    cache_read_tokens: Any = None
    cache_write_tokens: Any = None
    reasoning_tokens: Any = None


_call_decoder = msgspec.json.Decoder(CallFields)


def call_fields(body: bytes) -> CallFields:
    """A record's sequence, time, request id, model and token counts, its message skipped."""
    try:
        return _call_decoder.decode(body)
    except RecursionError:  # skipping a deep message recurses too
        return _in_deep_stack(_call_decoder.decode, body)


def record_position(body: bytes) -> tuple[int, int, str]:
    """A record's sequence, batch end and id, without decoding its message into objects."""
    head = _head(body)
    return head.sequence, head.batch_end, head.id
