"""One line <-> one record: strict encoding, the per-line checksum, and decoding.

A line is one JSON object whose last key is ``"crc"``::

    {"sequence":1,"id":"...","created_at":"...","message":{...},"crc":"1c291ca3"}\\n

The checksum is CRC-32 (zlib) of every byte before ``,"crc":``, written as eight
lowercase hex digits, so the suffix always has the same 18 bytes and a reader finds it
without parsing. The line is still plain JSON: ``jq`` and ``grep`` work on it unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Final

import msgspec

from .._errors import InvalidMessage, UnsupportedValue
from .checksum import crc32
from .depth import check_encoded, in_deep_stack, within_depth
from .records import (
    MESSAGE_TYPES,
    ROLES,
    AnyMessage,
    ContextSnapshot,
    ModelUsage,
    RawMessageRecord,
    UsageRecord,
)
from .roundtrip import explain

CRC_KEY: Final = b',"crc":"'
SUFFIX_LENGTH: Final = len(CRC_KEY) + 8 + 2  # ,"crc":" + 8 hex digits + "}
#: The suffix a line's CRC-32 spells, ``SUFFIX % crc``: one comparison checks key and digits.
SUFFIX: Final = CRC_KEY + b'%08x"}'

#: What decoding a line or file that is not what it should be can raise. msgspec decodes
#: nested JSON recursively and raises RecursionError past the interpreter's limit: a
#: checksum-valid line nested a thousand levels deep is a bad record, not a crash.
DECODE_ERRORS: Final = (msgspec.ValidationError, msgspec.DecodeError, RecursionError)

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


def encode_message(message: object) -> tuple[bytes, bool]:
    """Encode one message; return its JSON bytes and whether it was a plain dict.

    Raises `InvalidMessage` for a message nested deeper than `MAX_DEPTH`, from any
    depth of the caller's stack.
    """
    try:
        encoded = _encode_message(message, "$")
    except RecursionError:
        return within_depth(_encode_message, message, "$")
    check_encoded(encoded[0], message, "$")
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
            raise explain(message, "$") from None
        try:
            back = decode(data)
        except msgspec.ValidationError as exc:
            raise InvalidMessage(f"message does not match its class: {exc}") from None
        if back != message:
            raise explain(message, "$")
        return data, False
    if isinstance(message, dict):
        role = message.get("role")
        if not isinstance(role, str) or role not in ROLES:
            raise InvalidMessage(f"a dict message needs 'role' in {sorted(ROLES)}, got {role!r}")
        data = _encode_value(message, "$")
        if _any_decoder.decode(data) != message:
            raise explain(message, "$")
        return data, True
    if isinstance(message, MESSAGE_TYPES):
        data = _encode_value(message, "$")
        try:
            back = _message_decoder.decode(data)
        except msgspec.ValidationError as exc:
            raise InvalidMessage(f"message does not match its class: {exc}") from None
        if back != message:
            raise explain(message, "$")
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
        return within_depth(_encode_json, value, where)
    check_encoded(data, value, where)
    return data


def _encode_json(value: object, where: str) -> bytes:
    data = _encode_value(value, where)
    if _any_decoder.decode(data) != value:
        raise explain(value, where)
    return data


#: What encoding a value JSON cannot carry raises (a lone surrogate: UnicodeEncodeError,
#: a ValueError; an int past 64 bits: OverflowError). A RecursionError is no fault of the
#: value's: `within_depth` handles it.
_ENCODE_ERRORS: Final = (TypeError, OverflowError, ValueError)


def _encode_value(value: object, where: str) -> bytes:
    try:
        data = _encoder.encode(value)
    except _ENCODE_ERRORS:
        raise explain(value, where) from None
    return data


def seal(body: bytes) -> bytes:
    """Turn an encoded JSON object into a checksummed line ending in ``\\n``."""
    assert body[-1:] == b"}", body[-20:]
    head = body[:-1]
    return b'%s,"crc":"%08x"}\n' % (head, crc32(head))


def is_sealed(line: bytes) -> bool:
    """Whether a line (without its newline) ends in a checksum that holds.

    The CRC runs over a memoryview, so checking costs no copy of the line; decoders
    read the line as it is (to a Struct decoder ``"crc"`` is just an unknown key).
    """
    if len(line) < SUFFIX_LENGTH + 2 or line[-SUFFIX_LENGTH:-10] != CRC_KEY or line[-2:] != b'"}':
        return False
    # Compare the text, not a parsed number: only the exact eight lowercase digits a
    # writer produces are accepted.
    return b"%08x" % crc32(memoryview(line)[:-SUFFIX_LENGTH]) == line[-10:-2]


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
    sealed = body + b',"crc":"%08x"}' % crc32(body)
    return sealed + b"\n", sealed


def encode_record(record: RawMessageRecord) -> bytes:
    """A whole decoded record as its sealed line: what the spec's vectors are built with
    (``spec/vectors/make_vectors.py``) and what the append path's lines must equal
    (``tests/unit/test_codec.py``). The store writes records through `_ops.append.encode_record`
    only, which builds the same bytes from pieces encoded once."""
    return seal(_encoder.encode(record))


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
        record = in_deep_stack(_decode_with_message, *args)
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
        snapshot = in_deep_stack(_decode_with_message, *args)
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
        item = in_deep_stack(_any_decoder.decode, line)
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
        return in_deep_stack(_position_decoder.decode, body)


def record_summary(body: bytes) -> tuple[int, datetime | None]:
    """A record's sequence and creation time, skipping the message (for session listings)."""
    head = _head(body)
    return head.sequence, head.created_at


class _CallMeta(msgspec.Struct):
    model: Any = None
    provider: Any = None


class CallFields(msgspec.Struct):
    """What a record tells about the model call it holds, its message skipped: the fields
    `jsonl_store._session.usage.record_calls` reads (a usage report need not decode messages)."""

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
        return in_deep_stack(_call_decoder.decode, body)


def record_position(body: bytes) -> tuple[int, int, str]:
    """A record's sequence, batch end and id, without decoding its message into objects."""
    head = _head(body)
    return head.sequence, head.batch_end, head.id
