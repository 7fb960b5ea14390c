"""Unit tests for `_codec`: one line <-> one record, the checksum, strict message encoding."""

from __future__ import annotations

import zlib
from datetime import UTC, datetime
from typing import cast

import msgspec
import orjson
import pytest

from jsonl_store import (
    AssistantMessage,
    CompactedMessage,
    ContextSnapshot,
    InvalidMessage,
    Message,
    ModelUsage,
    RawMessageRecord,
    ToolCall,
    UnsupportedValue,
    UserMessage,
)
from jsonl_store._format import codec as _codec
from jsonl_store._format.records import UsageRecord
from jsonl_store.testing.damage import flip, tear

NOW = datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=UTC)


def record(message: object, plain: bool = False, **fields: object) -> RawMessageRecord:
    """A raw-log record holding ``message`` encoded as the store does."""
    payload, is_plain = _codec.encode_message(message)
    assert is_plain == plain
    return RawMessageRecord(
        sequence=1,
        id="r-1",
        created_at=NOW,
        plain=plain,
        # Pre-encoded, embedded byte for byte by the encoder; the field's static type is
        # what readers give back, which a Raw never is.
        message=cast("Message", msgspec.Raw(payload)),
        **fields,  # type: ignore[arg-type]
    )


# ---------------------------------------------------------------------------------------
# Lines and checksums
# ---------------------------------------------------------------------------------------


def test_seal_appends_a_crc32_of_the_body_as_the_last_key() -> None:
    """A sealed line is the object with ,"crc":"<8 hex>" as its last key and a newline."""
    line = _codec.seal(b'{"a":1}')
    crc = zlib.crc32(b'{"a":1')
    assert line == b'{"a":1,"crc":"%08x"}\n' % crc
    assert orjson.loads(line) == {"a": 1, "crc": f"{crc:08x}"}
    assert len(line) - len(b'{"a":1') - 1 == _codec.SUFFIX_LENGTH


def test_unseal_gives_back_the_body() -> None:
    """unseal(seal(body)) without the newline is body."""
    body = b'{"k":"v","n":[1,2]}'
    assert _codec.unseal(_codec.seal(body)[:-1]) == body


@pytest.mark.parametrize("position", range(27))
def test_unseal_rejects_any_flipped_bit(position: int) -> None:
    """Flipping any bit of a sealed line makes unseal refuse it."""
    line = _codec.seal(b'{"k":"value"}')[:-1]
    assert len(line) == 30
    for mask in (0x01, 0x10, 0x80):
        assert _codec.unseal(flip(line, position, mask)) is None


@pytest.mark.parametrize("keep", [0, 1, 5, 15, 29])
def test_unseal_rejects_a_torn_line(keep: int) -> None:
    """Any prefix of a sealed line is refused."""
    assert _codec.unseal(tear(_codec.seal(b'{"k":"value"}')[:-1], keep)) is None


@pytest.mark.parametrize(
    "line", [b"", b"{}", b'{"crc":"zzzzzzzz"}', b'{"a":1,"crc":"0000000g"}', b"\x00" * 40]
)
def test_unseal_rejects_lines_that_are_not_sealed(line: bytes) -> None:
    """Lines without a valid checksum suffix are refused, never raise."""
    assert _codec.unseal(line) is None


# ---------------------------------------------------------------------------------------
# Messages
# ---------------------------------------------------------------------------------------


def test_encode_message_tells_plain_dicts_from_classes() -> None:
    """encode_message returns the JSON and whether the message was a plain dict."""
    data, plain = _codec.encode_message({"role": "user", "content": "x"})
    assert plain and orjson.loads(data) == {"role": "user", "content": "x"}
    data, plain = _codec.encode_message(UserMessage(content="x", id="m"))
    assert not plain and orjson.loads(data) == {"role": "user", "content": "x", "id": "m"}


def test_class_message_omits_defaults_on_disk() -> None:
    """Fields equal to their default are not written (short lines, small diffs)."""
    data, _ = _codec.encode_message(AssistantMessage(content="x", id="m"))
    assert orjson.loads(data) == {"role": "assistant", "content": "x", "id": "m"}
    data, _ = _codec.encode_message(UserMessage(content="x", id="m", include_in_messages=False))
    assert orjson.loads(data)["include_in_messages"] is False


def test_encode_json_keeps_the_round_trip_promise() -> None:
    """encode_json refuses what would not come back equal, saying where."""
    assert orjson.loads(_codec.encode_json({"a": [1, "x", None]})) == {"a": [1, "x", None]}
    with pytest.raises(InvalidMessage, match=r"metadata\.a\[0\]"):
        _codec.encode_json({"a": [float("inf")]}, "metadata")
    with pytest.raises(UnsupportedValue):
        _codec.encode_json({"a": datetime.now(UTC)})


def test_bool_and_int_keep_their_types() -> None:
    """True stays True and 1 stays 1 (JSON keeps them apart even where Python equality does not)."""
    value = {"role": "user", "content": "x", "flags": [True, 1, 1.0, False, 0, 0.0]}
    data, _ = _codec.encode_message(value)
    back = msgspec.json.decode(data)["flags"]
    assert [type(v) for v in back] == [bool, int, float, bool, int, float]


# ---------------------------------------------------------------------------------------
# Records and snapshots
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "plain"),
    [
        (UserMessage(content="hi", id="m"), False),
        (AssistantMessage(content=None, tool_calls=[ToolCall(id="c", name="f")], id="m"), False),
        ({"role": "assistant", "content": "x", "odd": {"k": 2**65}}, True),
        ({"role": "compacted", "content": "s"}, True),
    ],
)
def test_record_round_trips_through_a_line(message: object, plain: bool) -> None:
    """encode_record -> unseal -> decode_record gives the record back with the message's own type."""
    line = _codec.encode_record(record(message, plain, metadata={"k": 1}, input_tokens=5))
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    body = _codec.unseal(line[:-1])
    assert body is not None
    back = _codec.decode_record(body, "sess")
    assert back.message == message and type(back.message) is type(message)
    assert (back.sequence, back.id, back.created_at, back.session_id) == (1, "r-1", NOW, "sess")
    assert back.metadata == {"k": 1} and back.input_tokens == 5


def test_record_line_starts_with_sequence_and_never_holds_the_session_id() -> None:
    """The first key on disk is the sequence; the session id is the directory's name, not a field."""
    line = _codec.encode_record(record(UserMessage(content="x", id="m")))
    assert line.startswith(b'{"sequence":1,')
    assert b"session_id" not in line


@pytest.mark.parametrize("plain", [False, True])
@pytest.mark.parametrize("batch_end", [0, 9])
@pytest.mark.parametrize("tokens", [0, 7, 2**64 - 1, 2**70])
def test_a_line_built_from_parts_is_the_line_of_the_whole_record(
    plain: bool, batch_end: int, tokens: int
) -> None:
    """record_head + usage_trailer + record_line write the very bytes encoding the whole record does."""
    message: object = {"role": "user", "content": "x"} if plain else UserMessage(content="x", id="m")
    payload, is_plain = _codec.encode_message(message)
    usage = ModelUsage(input_tokens=tokens, output_tokens=3, cache_read_tokens=tokens)
    head = _codec.record_head("r-1", _codec.encode_time(NOW), payload, is_plain)
    trailer = _codec.encode_trailer(request_id="q", metadata=msgspec.Raw(b'{"k":1}')) + _codec.usage_trailer(
        usage
    )
    line, body = _codec.record_line(7, batch_end, head, trailer)
    whole = RawMessageRecord(
        sequence=7,
        batch_end=batch_end,
        id="r-1",
        created_at=NOW,
        plain=is_plain,
        message=cast("Message", msgspec.Raw(payload)),  # as in `record`
        request_id="q",
        metadata=cast("dict[str, object]", msgspec.Raw(b'{"k":1}')),
        **msgspec.structs.asdict(usage),
    )
    assert line == _codec.encode_record(whole)
    assert body == line[:-1]


def test_record_of_an_unknown_role_is_read_as_a_plain_dict() -> None:
    """A role written by a newer version comes back as a dict instead of failing the record."""
    line = _codec.seal(
        b'{"sequence":1,"id":"r","created_at":"2024-05-01T12:00:00Z","message":{"role":"critic","content":"x"}}'
    )
    back = _codec.decode_record(_codec.unseal(line[:-1]) or b"", "s")
    assert back.message == {"role": "critic", "content": "x"}


def test_message_text_that_looks_like_the_plain_mark_does_not_confuse_the_decoder() -> None:
    """A class message whose text contains ',"plain":true,"message":' still decodes as its class."""
    message = UserMessage(content=',"plain":true,"message":{"role":"user"}', id="m")
    body = _codec.unseal(_codec.encode_record(record(message))[:-1])
    assert body is not None
    assert _codec.decode_record(body, "s") == msgspec.structs.replace(
        _codec.decode_record(body, "s"), message=message
    )
    assert type(_codec.decode_record(body, "s").message) is UserMessage


def test_record_that_does_not_fit_the_schema_raises_a_msgspec_error() -> None:
    """decode_record leaves schema errors to the caller (which reports them as bad-record)."""
    with pytest.raises(msgspec.ValidationError):
        _codec.decode_record(
            b'{"sequence":"x","id":"r","created_at":"2024-05-01T12:00:00Z","message":{}}', "s"
        )


def test_snapshot_round_trips_through_a_line() -> None:
    """encode_snapshot -> unseal -> decode_snapshot keeps every field and the message type."""
    payload, plain = _codec.encode_message(CompactedMessage(content="sum", id="c"))
    snapshot = ContextSnapshot(
        version=3,
        id="snap",
        created_at=NOW,
        compacted_through_sequence=7,
        boundary_offset=100,
        tail_offset=180,
        boundary_record_id="r-7",
        plain=plain,
        compacted_message=msgspec.Raw(payload),
    )
    body = _codec.unseal(_codec.encode_snapshot(snapshot)[:-1])
    assert body is not None
    back = _codec.decode_snapshot(body, "s")
    assert back.compacted_message == CompactedMessage(content="sum", id="c")
    assert (back.version, back.compacted_through_sequence, back.boundary_offset, back.tail_offset) == (
        3,
        7,
        100,
        180,
    )
    assert back.session_id == "s" and back.updated_at == NOW


def test_usage_record_round_trips_through_a_line() -> None:
    """encode_usage -> unseal -> decode_usage gives the usage record back."""
    usage = UsageRecord(recorded_at=NOW, input_tokens=4, model="m", extra={"x": [1]})
    body = _codec.unseal(_codec.encode_usage(usage)[:-1])
    assert body is not None and _codec.decode_usage(body) == usage
