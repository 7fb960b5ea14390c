"""Bad input: typed errors that are also the fitting built-in error, and nothing written."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from helpers import read_tree

from jsonl_store import (
    AssistantMessage,
    AsyncSessionStore,
    CompactedMessage,
    InvalidArgument,
    InvalidMessage,
    InvalidSessionId,
    JsonlStoreError,
    ModelUsage,
    SessionStore,
    ToolCall,
    ToolMessage,
    UnsupportedValue,
    UserMessage,
)
from jsonl_store._format.depth import MAX_DEPTH, nesting

NAN = float("nan")
INF = float("inf")


class Custom:
    """An object JSON cannot carry."""


def nested_list(depth: int) -> Any:
    """A list nested ``depth`` levels deep."""
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


# (message, the error class it must raise)
BAD_MESSAGES: list[tuple[str, object, type[JsonlStoreError]]] = [
    ("nan", {"role": "user", "content": NAN}, InvalidMessage),
    ("inf", {"role": "user", "content": "x", "v": INF}, InvalidMessage),
    ("minus-inf-deep", {"role": "user", "content": "x", "v": [{"a": -INF}]}, InvalidMessage),
    ("tuple", {"role": "user", "content": "x", "v": (1, 2)}, UnsupportedValue),
    ("bytes", {"role": "user", "content": b"raw"}, UnsupportedValue),
    ("bytearray", {"role": "user", "content": "x", "v": bytearray(b"x")}, UnsupportedValue),
    ("set", {"role": "user", "content": "x", "v": {1, 2}}, UnsupportedValue),
    ("custom-object", {"role": "user", "content": "x", "v": Custom()}, UnsupportedValue),
    ("int-key", {"role": "user", "content": "x", "v": {1: "one"}}, UnsupportedValue),
    ("none-key", {"role": "user", "content": "x", None: 1}, UnsupportedValue),
    ("lone-surrogate-value", {"role": "user", "content": "a\ud800b"}, InvalidMessage),
    ("lone-surrogate-key", {"role": "user", "content": "x", "k\udfff": 1}, InvalidMessage),
    ("wrong-role", {"role": "robot", "content": "x"}, InvalidMessage),
    ("missing-role", {"content": "x"}, InvalidMessage),
    ("role-not-str", {"role": 1, "content": "x"}, InvalidMessage),
    ("str", "hello", UnsupportedValue),
    ("int", 42, UnsupportedValue),
    ("list", [{"role": "user", "content": "x"}], UnsupportedValue),
    ("none", None, UnsupportedValue),
    ("class-lone-surrogate", UserMessage(content="\udc80"), InvalidMessage),
    ("class-nan-part", UserMessage(content=[{"type": "x", "v": NAN}]), InvalidMessage),
    (
        "class-tuple-args",
        AssistantMessage(tool_calls=[ToolCall(id="c", name="f", arguments=(1,))]),
        UnsupportedValue,
    ),
    ("class-bytes-tool-content", ToolMessage(tool_call_id="c", content=b"x"), UnsupportedValue),
    ("class-wrong-field-type", UserMessage(content=5), InvalidMessage),  # type: ignore[arg-type]
    ("class-object", UserMessage(content=Custom()), UnsupportedValue),  # type: ignore[arg-type]
    ("class-plain-object", UserMessage(content=object()), UnsupportedValue),  # type: ignore[arg-type]
    ("class-object-in-part", UserMessage(content=[{"type": "x", "v": Custom()}]), UnsupportedValue),
    (
        "class-object-in-arguments",
        AssistantMessage(tool_calls=[ToolCall(id="c", name="f", arguments={"a": Custom()})]),
        UnsupportedValue,
    ),
    ("class-set-tool-content", ToolMessage(tool_call_id="c", content={1, 2}), UnsupportedValue),
    ("class-datetime-part", UserMessage(content=[datetime(2026, 1, 1, tzinfo=UTC)]), UnsupportedValue),
]


@pytest.mark.parametrize(
    ("message", "error"), [c[1:] for c in BAD_MESSAGES], ids=[c[0] for c in BAD_MESSAGES]
)
def test_unencodable_message_raises_a_typed_error_and_writes_nothing(
    store: SessionStore, root: Path, message: object, error: type[JsonlStoreError]
) -> None:
    """A message that cannot come back unchanged raises its typed error; the files stay byte-identical."""
    store.append("s", UserMessage(content="first"))
    before = read_tree(root)
    with pytest.raises(error) as info:
        store.append("s", message)  # type: ignore[arg-type]
    assert isinstance(info.value, JsonlStoreError)
    assert isinstance(info.value, (ValueError, TypeError))
    assert read_tree(root) == before
    with pytest.raises(error):
        store.append_many("s", [UserMessage(content="ok"), message])  # type: ignore[list-item]
    assert read_tree(root) == before
    assert store.append("s", UserMessage(content="next")) == 2


@pytest.mark.parametrize(
    ("message", "error"), [c[1:] for c in BAD_MESSAGES], ids=[c[0] for c in BAD_MESSAGES]
)
def test_unencodable_first_message_creates_no_session(
    store: SessionStore, root: Path, message: object, error: type[JsonlStoreError]
) -> None:
    """A bad first message creates neither the root nor the session."""
    with pytest.raises(error):
        store.append("s", message)  # type: ignore[arg-type]
    assert not root.exists()


def test_error_message_says_where_the_bad_value_is(store: SessionStore) -> None:
    """The error names the path of the offending value inside the message."""
    with pytest.raises(InvalidMessage, match=r"\$\.v\[1\]\.a"):
        store.append("s", {"role": "user", "content": "x", "v": [0, {"a": NAN}]})


@pytest.mark.parametrize(
    ("option", "value", "error"),
    [
        ("metadata", {"v": NAN}, InvalidMessage),
        ("metadata", {"v": (1,)}, UnsupportedValue),
        ("metadata", {1: "x"}, UnsupportedValue),
        ("tags", {"t": "\ud800"}, InvalidMessage),
        ("tags", {"t": b"x"}, UnsupportedValue),
    ],
)
def test_unencodable_metadata_or_tags_raise_and_write_nothing(
    store: SessionStore, root: Path, option: str, value: object, error: type[JsonlStoreError]
) -> None:
    """Request metadata and tags have the same round-trip promise as messages."""
    store.append("s", UserMessage(content="first"))
    before = read_tree(root)
    with pytest.raises(error):
        store.append("s", UserMessage(content="x"), **{option: value})  # type: ignore[arg-type]
    assert read_tree(root) == before


def test_huge_integer_beyond_the_digit_limit_raises_a_typed_error(store: SessionStore, root: Path) -> None:
    """An integer too long to read back (Python's int digit limit) is refused, not written."""
    with pytest.raises(JsonlStoreError) as info:
        store.append("s", {"role": "user", "content": "x", "v": 10**5000})
    assert isinstance(info.value, (ValueError, TypeError))
    assert not root.exists()


@pytest.mark.parametrize("depth", [1_500, 5_000])
def test_too_deeply_nested_message_raises_a_typed_error(store: SessionStore, root: Path, depth: int) -> None:
    """A message nested past the supported depth raises InvalidMessage (a ValueError), writing nothing."""
    with pytest.raises(JsonlStoreError) as info:
        store.append("s", {"role": "user", "content": "x", "v": nested_list(depth)})
    assert isinstance(info.value, ValueError)
    assert not root.exists()


def test_nesting_near_the_limit_round_trips_up_to_max_depth_and_is_refused_past_it(
    store: SessionStore,
) -> None:
    """Up to MAX_DEPTH levels (the message dict is one) an append is stored and reads back; one more is InvalidMessage."""
    for depth in range(MAX_DEPTH - 12, MAX_DEPTH + 3):
        session = f"d{depth}"
        message = {"role": "user", "content": "x", "v": nested_list(depth - 1)}
        if depth > MAX_DEPTH:
            with pytest.raises(InvalidMessage):
                store.append(session, message)
            continue
        store.append(session, message)
        (record,) = store.records(session)
        assert nesting(record.message) == depth


# ---------------------------------------------------------------------------------------
# Invalid session ids, from every method that takes one
# ---------------------------------------------------------------------------------------

BAD_IDS: list[object] = [
    "",
    ".",
    "..",
    "/",
    "a/b",
    "../escape",
    "\\",
    "a\\b",
    "\x00",
    "a\x00b",
    "\n",
    "a\nb",
    "x" * 129,
    "-rf",
    ".hidden",
    "sp ace",
    "é",
    None,
    7,
    b"bytes",
    Path("p"),
]
BAD_ID_NAMES = [repr(i)[:20] for i in BAD_IDS]

SYNC_CALLS: dict[str, Callable[[SessionStore, Any], object]] = {
    "append": lambda s, i: s.append(i, UserMessage(content="x")),
    "append-parent": lambda s, i: s.append("ok", UserMessage(content="x"), parent_session_id=i),
    "append_many": lambda s, i: s.append_many(i, [UserMessage(content="x")]),
    "append_many-empty": lambda s, i: s.append_many(i, []),
    "append-persist-false": lambda s, i: s.append(i, UserMessage(content="x", persist=False)),
    "checkpoint": lambda s, i: s.checkpoint(i, [UserMessage(content="x")]),
    "load": lambda s, i: s.load(i),
    "snapshot": lambda s, i: s.snapshot(i, CompactedMessage(content="c"), 1, 0),
    "records": lambda s, i: list(s.records(i)),
    "records-unconsumed": lambda s, i: s.records(i),
    "list_sessions-parent": lambda s, i: s.list_sessions(parent_session_id=i),
    "get_session": lambda s, i: s.get_session(i),
    "update_session": lambda s, i: s.update_session(i, title="t"),
    "record_usage": lambda s, i: s.record_usage(i, ModelUsage(input_tokens=1)),
    "usage": lambda s, i: list(s.usage(i)),
    "usage-unconsumed": lambda s, i: s.usage(i),
    "usage_totals": lambda s, i: s.usage_totals(i),
    "delete_session": lambda s, i: s.delete_session(i),
    "verify": lambda s, i: s.verify(i),
    "repair": lambda s, i: s.repair(i),
}


#: Methods whose session id is optional: None is a valid value for them.
OPTIONAL_ID = {"append-parent", "list_sessions-parent", "verify", "list_sessions"}


CASES = [
    pytest.param(method, bad_id, id=f"{method}-{name}")
    for method in sorted(SYNC_CALLS)
    for bad_id, name in zip(BAD_IDS, BAD_ID_NAMES, strict=True)
    if not (bad_id is None and method in OPTIONAL_ID)
]


@pytest.mark.parametrize(("method", "bad_id"), CASES)
def test_invalid_session_id_raises_from_every_method_and_creates_nothing(
    tmp_path: Path, method: str, bad_id: object
) -> None:
    """Every method that takes a session id refuses an unsafe one and touches no file anywhere."""
    root = tmp_path / "store"
    store = SessionStore(root, durability="none")
    store.append("ok", UserMessage(content="x"))
    before = read_tree(tmp_path)
    with pytest.raises(InvalidSessionId) as info:
        SYNC_CALLS[method](store, bad_id)
    assert isinstance(info.value, ValueError) and isinstance(info.value, JsonlStoreError)
    assert read_tree(tmp_path) == before
    store.close()


@pytest.mark.parametrize("method", sorted(SYNC_CALLS))
def test_invalid_session_id_creates_nothing_on_a_fresh_root(tmp_path: Path, method: str) -> None:
    """On a store whose root does not exist yet, a bad id does not even create the root."""
    store = SessionStore(tmp_path / "store", durability="none")
    for bad_id in ("..", "a/b", "", "x" * 129):
        with pytest.raises(InvalidSessionId):
            SYNC_CALLS[method](store, bad_id)
    assert os.listdir(tmp_path) == []


ASYNC_CALLS: dict[str, Callable[[AsyncSessionStore, Any], Any]] = {
    "append": lambda s, i: s.append(i, UserMessage(content="x")),
    "append_many": lambda s, i: s.append_many(i, [UserMessage(content="x")]),
    "checkpoint": lambda s, i: s.checkpoint(i, [UserMessage(content="x")]),
    "load": lambda s, i: s.load(i),
    "snapshot": lambda s, i: s.snapshot(i, CompactedMessage(content="c"), 1, 0),
    "list_sessions": lambda s, i: s.list_sessions(parent_session_id=i),
    "get_session": lambda s, i: s.get_session(i),
    "update_session": lambda s, i: s.update_session(i, title="t"),
    "record_usage": lambda s, i: s.record_usage(i, ModelUsage(input_tokens=1)),
    "usage_totals": lambda s, i: s.usage_totals(i),
    "delete_session": lambda s, i: s.delete_session(i),
    "verify": lambda s, i: s.verify(i),
    "repair": lambda s, i: s.repair(i),
}


async def _collect(iterator: Any) -> list[Any]:
    return [item async for item in iterator]


@pytest.mark.parametrize("method", [*sorted(ASYNC_CALLS), "records", "usage"])
def test_invalid_session_id_raises_from_every_async_method_and_creates_nothing(
    tmp_path: Path, method: str
) -> None:
    """The async store refuses an unsafe id from every method (iterators on first iteration)."""
    store = AsyncSessionStore(tmp_path / "store", durability="none")

    async def attempt(bad_id: object) -> None:
        if method in ("records", "usage"):
            await _collect(getattr(store, method)(bad_id))
        else:
            await ASYNC_CALLS[method](store, bad_id)

    for bad_id in ("..", "a/b", "", "\x00", *([] if method in OPTIONAL_ID else [None])):
        with pytest.raises(InvalidSessionId):
            asyncio.run(attempt(bad_id))
    assert os.listdir(tmp_path) == []


def test_message_class_with_an_object_says_where_it_is(store: SessionStore) -> None:
    """A message class holding an object() is UnsupportedValue naming the field, as the dict form is."""
    with pytest.raises(UnsupportedValue, match=r"\$\.tool_calls\[0\]\.arguments\.a has type object"):
        store.append(
            "s", AssistantMessage(tool_calls=[ToolCall(id="c", name="f", arguments={"a": object()})])
        )
    with pytest.raises(UnsupportedValue, match=r"\$\.content has type object"):
        store.snapshot("s", CompactedMessage(content=object()), 1, 0)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------
# Short identifying strings: no lone surrogate (not UTF-8), no NUL
# ---------------------------------------------------------------------------------------

SURROGATE = "bad\ud800name"
LOW_SURROGATE = "\udcff"  # what a command line's undecodable byte 0xff becomes
NUL = "bad\x00name"

#: (call, the argument's name): each passes ``value`` as one short identifying string.
LABEL_CALLS: dict[str, tuple[Callable[[SessionStore, str], object], str]] = {
    "append-title": (lambda s, v: s.append("s", UserMessage(content="x"), title=v), "title"),
    "append-title-new-session": (lambda s, v: s.append("new", UserMessage(content="x"), title=v), "title"),
    "append-agent_name": (lambda s, v: s.append("new", UserMessage(content="x"), agent_name=v), "agent_name"),
    "append-request_id": (lambda s, v: s.append("s", UserMessage(content="x"), request_id=v), "request_id"),
    "append_many-request_id": (
        lambda s, v: s.append_many("s", [UserMessage(content="x")], request_id=v),
        "request_id",
    ),
    "checkpoint-request_id": (
        lambda s, v: s.checkpoint("s", [UserMessage(content="x")], request_id=v),
        "request_id",
    ),
    "update_session-title": (lambda s, v: s.update_session("s", title=v), "title"),
    "record_usage-model": (lambda s, v: s.record_usage("s", {"input_tokens": 1, "model": v}), "model"),
    "record_usage-model-new-session": (lambda s, v: s.record_usage("new", {"model": v}), "model"),
    "record_usage-request_id": (lambda s, v: s.record_usage("s", {"request_id": v}), "request_id"),
}


@pytest.mark.parametrize("value", [SURROGATE, LOW_SURROGATE, NUL], ids=["surrogate", "low-surrogate", "nul"])
@pytest.mark.parametrize("call", sorted(LABEL_CALLS))
def test_lone_surrogate_or_nul_in_a_label_raises_invalid_argument_and_writes_nothing(
    store: SessionStore, root: Path, call: str, value: str
) -> None:
    """A title, agent name, request id or model with a lone surrogate or a NUL is refused; no byte changes."""
    store.append("s", UserMessage(content="first"))
    store.record_usage("s", {"input_tokens": 1})
    before = read_tree(root)
    method, name = LABEL_CALLS[call]
    with pytest.raises(InvalidArgument, match=name) as info:
        method(store, value)
    assert isinstance(info.value, ValueError) and not isinstance(info.value, UnicodeError)
    assert read_tree(root) == before


@pytest.mark.parametrize("value", [SURROGATE, NUL], ids=["surrogate", "nul"])
def test_bad_label_on_a_fresh_store_creates_not_even_the_root(
    store: SessionStore, root: Path, value: str
) -> None:
    """The first append of a store refuses a bad title before it makes the root."""
    with pytest.raises(InvalidArgument):
        store.append("s", UserMessage(content="x"), title=value)
    with pytest.raises(InvalidArgument):
        store.record_usage("s", {"model": value})
    assert not root.exists()


def test_nul_in_json_values_is_stored_and_read_back(store: SessionStore) -> None:
    """JSON carries \\u0000: message content, metadata and tags may hold a NUL and come back equal."""
    store.append("s", UserMessage(content="a\x00b"), metadata={"k\x00": "v\x00"}, tags={"t": "\x00"})
    store.update_session("s", metadata={"m\x00": "\x00"})
    (record,) = store.records("s")
    assert record.message.content == "a\x00b"  # type: ignore[union-attr]
    assert record.metadata == {"k\x00": "v\x00"} and record.tags == {"t": "\x00"}
    summary = store.get_session("s")
    assert summary is not None and summary.metadata == {"m\x00": "\x00"}


def test_lone_surrogate_in_metadata_or_removed_key_is_refused(store: SessionStore, root: Path) -> None:
    """A lone surrogate is refused in metadata keys and values and in remove_metadata, writing nothing."""
    store.append("s", UserMessage(content="first"))
    before = read_tree(root)
    with pytest.raises(InvalidMessage):
        store.update_session("s", metadata={"k\ud800": 1})
    with pytest.raises(InvalidMessage):
        store.update_session("s", metadata={"k": "\udfff"})
    with pytest.raises(InvalidArgument):
        store.update_session("s", remove_metadata=["k\ud800"])
    with pytest.raises(InvalidArgument):
        store.update_session("s", remove_metadata=[7])  # type: ignore[list-item]
    assert read_tree(root) == before


@pytest.mark.parametrize(
    "bad_root", ["sess\x00ions", "sess\ud800ions", b"sessions"], ids=["nul", "surrogate", "bytes"]
)
def test_root_the_file_system_cannot_name_raises_invalid_argument(tmp_path: Path, bad_root: Any) -> None:
    """A store root with a NUL or a lone surrogate (or given as bytes) is refused when the store is made."""
    root: Any = bad_root if isinstance(bad_root, bytes) else str(tmp_path / bad_root)  # bytes: a wrong type
    with pytest.raises(InvalidArgument):
        SessionStore(root)
    assert os.listdir(tmp_path) == []


# ---------------------------------------------------------------------------------------
# Arguments of the wrong type: a library error, never a bare TypeError or AttributeError
# ---------------------------------------------------------------------------------------

WRONG_TYPES: dict[str, Callable[[SessionStore, Path], object]] = {
    "root-int": lambda s, r: SessionStore(7),  # type: ignore[arg-type]
    "root-none": lambda s, r: SessionStore(None),  # type: ignore[arg-type]
    "lock_timeout-str": lambda s, r: SessionStore(r, lock_timeout="30"),  # type: ignore[arg-type]
    "lock_timeout-none": lambda s, r: SessionStore(r, lock_timeout=None),  # type: ignore[arg-type]
    "on_problem-not-callable": lambda s, r: SessionStore(r, on_problem="print"),  # type: ignore[arg-type]
    "append_many-timing-int": lambda s, r: s.append_many("s", [UserMessage(content="x")], timing=5),  # type: ignore[arg-type]
    "append_many-usage-int": lambda s, r: s.append_many("s", [UserMessage(content="x")], usage=5),  # type: ignore[arg-type]
    "checkpoint-none": lambda s, r: s.checkpoint("new", None),  # type: ignore[arg-type]
    "checkpoint-str": lambda s, r: s.checkpoint("new", "hello"),  # type: ignore[arg-type]
    "checkpoint-int-items": lambda s, r: s.checkpoint("new", [1, 2]),  # type: ignore[list-item]
    "checkpoint-unknown-option": lambda s, r: s.checkpoint("new", [UserMessage(content="x")], titel="typo"),
    "update_session-remove-int": lambda s, r: s.update_session("s", remove_metadata=5),  # type: ignore[arg-type]
    "update_session-remove-str": lambda s, r: s.update_session("s", remove_metadata="key"),
}


@pytest.mark.parametrize("call", sorted(WRONG_TYPES))
def test_argument_of_the_wrong_type_raises_a_library_error_and_creates_nothing(
    store: SessionStore, root: Path, call: str
) -> None:
    """A wrong type raises InvalidArgument or UnsupportedValue (still a ValueError/TypeError); nothing is written."""
    store.append("s", UserMessage(content="first"))
    before = read_tree(root)
    with pytest.raises(JsonlStoreError) as info:
        WRONG_TYPES[call](store, root)
    assert isinstance(info.value, (InvalidArgument, UnsupportedValue))
    assert read_tree(root) == before
