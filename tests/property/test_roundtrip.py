"""Property tests: any JSON value, and any text, comes back exactly as it was stored."""

from __future__ import annotations

import itertools
import math
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import examples, log_path, read_tree
from hypothesis import given, settings
from hypothesis import strategies as st

from jsonl_store import (
    CompactedMessage,
    JsonlStoreError,
    SessionStore,
    ToolMessage,
    UserMessage,
)
from jsonl_store.testing.strategies import json_values as storable_json_values

# ---------------------------------------------------------------------------------------
# Strategies
# ---------------------------------------------------------------------------------------

#: Characters that break naive line splitting, escaping or encoding.
SPECIAL = [
    "\u2028", "\u2029", "\x00", "\r", "\n", "\r\n", "\x85", "\x0b", "\x0c", "\x1c", "\x1e", "\x7f", "\x1b",
    '"', "\\", "/", "\ufeff", "\ud7ff", "\ue000", "\uffff", "\U0010ffff", "é", "漢", "😀", "👩\u200d👩\u200d👧",
    ',"crc":"00000000"}', '"message":', ',"plain":true,',
]  # fmt: skip

#: Any text without lone surrogates (which UTF-8 cannot carry).
any_text = st.text(st.characters(codec="utf-8"), max_size=30)
text = st.one_of(any_text, st.lists(st.sampled_from(SPECIAL) | any_text, max_size=6).map("".join))

integers = st.one_of(
    st.integers(),
    st.integers(min_value=-(10**300), max_value=10**300),
    st.sampled_from([2**53 + 1, 2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63) - 1, -(2**64), 10**100]),
)
floats = st.floats(allow_nan=False, allow_infinity=False)
scalars = st.one_of(st.none(), st.booleans(), integers, floats, text)
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(text, children, max_size=5),
    max_leaves=30,
)


@st.composite
def deep_values(draw: st.DrawFn) -> Any:
    """A JSON value nested up to a few hundred levels, through lists and dicts."""
    value = draw(json_values)
    depth = draw(st.integers(min_value=1, max_value=400))
    kinds = draw(st.lists(st.booleans(), min_size=depth, max_size=depth))
    key = draw(text)
    for in_list in kinds:
        value = [value] if in_list else {key: value}
    return value


values = st.one_of(json_values, deep_values())


def strictly_equal(a: Any, b: Any) -> bool:
    """Equal with the same types all the way down and the same dict key order (1 != 1.0 != True)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(strictly_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(strictly_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return bool(a == b)


# ---------------------------------------------------------------------------------------
# Fixtures: one store per test module run, a new session per example
# ---------------------------------------------------------------------------------------

_ids = itertools.count()


def new_session() -> str:
    """A session id no earlier example used."""
    return f"s{next(_ids)}"


@pytest.fixture(scope="module")
def shared_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store root shared by every example of this module."""
    return tmp_path_factory.mktemp("roundtrip")


@pytest.fixture(scope="module")
def writer(shared_root: Path) -> Iterator[SessionStore]:
    """The store the examples write with."""
    with SessionStore(shared_root, durability="none") as store:
        yield store


@pytest.fixture(scope="module")
def reader(shared_root: Path) -> Iterator[SessionStore]:
    """A second store on the same root: it decodes only from disk, never from the writer's state."""
    with SessionStore(shared_root, durability="none") as store:
        yield store


# ---------------------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------------------


@settings(max_examples=examples(100), deadline=None)
@given(value=values, key=text)
def test_any_json_value_round_trips_as_a_dict_message_field(
    writer: SessionStore, reader: SessionStore, shared_root: Path, value: Any, key: str
) -> None:
    """A dict message holding any JSON value under any key comes back strictly equal, on one line."""
    session = new_session()
    message = {"role": "user", "content": "x", key or "k": value}
    assert writer.append(session, message) == 1
    (record,) = reader.records(session)
    assert strictly_equal(record.message, message)
    assert strictly_equal(reader.load(session).messages[0], message)
    assert log_path(shared_root, session).read_bytes().count(b"\n") == 1


@settings(max_examples=examples(50), deadline=None)
@given(value=values)
def test_any_json_value_round_trips_as_record_metadata_and_tags(
    writer: SessionStore, reader: SessionStore, value: Any
) -> None:
    """Request metadata and tags holding any JSON value come back strictly equal."""
    session = new_session()
    writer.append(session, UserMessage(content="x"), metadata={"m": value}, tags={"t": value})
    (record,) = reader.records(session)
    assert strictly_equal(record.metadata, {"m": value})
    assert strictly_equal(record.tags, {"t": value})


@settings(max_examples=examples(40), deadline=None)
@given(value=values, key=text)
def test_any_json_value_round_trips_as_session_metadata(
    writer: SessionStore, reader: SessionStore, value: Any, key: str
) -> None:
    """Session metadata (the pretty-printed meta.json) keeps any JSON value strictly equal."""
    session = new_session()
    writer.append(session, UserMessage(content="x"))
    writer.update_session(session, metadata={key: value})
    summary = reader.get_session(session)
    assert summary is not None and strictly_equal(summary.metadata, {key: value})


@settings(max_examples=examples(40), deadline=None)
@given(value=values)
def test_any_json_value_round_trips_in_class_messages_and_snapshots(
    writer: SessionStore, reader: SessionStore, value: Any
) -> None:
    """Tool results, content parts and compacted dict messages keep any JSON value."""
    session = new_session()
    tool = ToolMessage(tool_call_id="c", content=value)
    parts = UserMessage(content=[value])
    writer.append_many(session, [tool, parts])
    summary = {"role": "compacted", "content": "s", "v": value}
    writer.snapshot(session, summary, 1, 0)
    view = reader.load(session)
    assert view.snapshot is not None and strictly_equal(view.snapshot.compacted_message, summary)
    assert view.raw_tail[0].message == parts and strictly_equal(view.raw_tail[0].message.content, [value])
    (first, _) = reader.records(session)
    assert type(first.message) is ToolMessage and strictly_equal(first.message.content, value)


@settings(max_examples=examples(60), deadline=None)
@given(value=json_values)
def test_any_json_value_round_trips_in_the_usage_log(
    writer: SessionStore, reader: SessionStore, value: Any
) -> None:
    """Extra keys of a usage record keep any JSON value."""
    session = new_session()
    writer.record_usage(session, {"input_tokens": 1, "note": value})
    (item,) = reader.usage(session)
    assert strictly_equal(item["extra"], {"note": value})


@settings(max_examples=examples(150), deadline=None)
@given(content=text)
def test_any_text_round_trips_as_user_message_content(
    writer: SessionStore, reader: SessionStore, content: str
) -> None:
    """UserMessage content of any text comes back equal, as a UserMessage."""
    session = new_session()
    message = UserMessage(content=content)
    writer.append_many(session, [message, CompactedMessage(content=content)])
    first, second = reader.records(session)
    assert type(first.message) is UserMessage and first.message == message
    assert second.message.content == content  # type: ignore[union-attr]


# Values JSON cannot carry unchanged, mixed into otherwise valid ones.
bad_leaves = st.one_of(
    st.just(float("nan")),
    st.just(float("inf")),
    st.just(-float("inf")),
    st.tuples(st.integers()),
    st.binary(max_size=3),
    st.frozensets(st.integers(), max_size=2),
    st.just("\ud800"),
    st.text(max_size=3).map(lambda t: t + "\udfff"),
    st.dictionaries(st.integers(), st.none(), min_size=1, max_size=2),
)
maybe_bad = st.recursive(
    st.one_of(scalars, bad_leaves),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(text, children, max_size=4),
    max_leaves=15,
)


@settings(max_examples=examples(150), deadline=None)
@given(value=maybe_bad)
def test_any_value_either_round_trips_or_is_refused_with_nothing_written(
    writer: SessionStore, reader: SessionStore, shared_root: Path, value: Any
) -> None:
    """A message either comes back strictly equal or raises a typed error, leaving the files unchanged."""
    session = new_session()
    writer.append(session, UserMessage(content="first"))
    before = read_tree(shared_root / session)
    message = {"role": "user", "content": "x", "v": value}
    try:
        writer.append(session, message)
    except JsonlStoreError as error:
        assert isinstance(error, (ValueError, TypeError))
        assert read_tree(shared_root / session) == before
        assert writer.append(session, UserMessage(content="next")) == 2
        return
    _, record = reader.records(session)
    assert strictly_equal(record.message, message)


@given(value=storable_json_values(max_leaves=12))
@settings(max_examples=examples(300))
def test_json_values_are_storable_so_no_object_has_the_blob_key(value: object) -> None:
    """json_values never makes an object keyed "$blob" (reserved for blob markers, spec §5.1), which a store refuses."""

    def keys(item: object) -> list[str]:
        if isinstance(item, dict):
            return [*item, *(k for inner in item.values() for k in keys(inner))]
        if isinstance(item, list):
            return [k for inner in item for k in keys(inner)]
        return []

    assert "$blob" not in keys(value)
    with tempfile.TemporaryDirectory() as root, SessionStore(root, durability="none") as store:
        store.append("s", {"role": "user", "content": "x", "x_extra": value})
        assert store.load("s").messages[0]["x_extra"] == value  # type: ignore[index]
