"""The nesting limit (spec §4, `_depth.MAX_DEPTH`): exact, whatever the caller's stack, and every reader and exporter follows it."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any, TypeVar

import msgspec
import pytest
from helpers import nested_lists as lists
from helpers import nested_objects as objects
from hypothesis import given, settings
from hypothesis import strategies as st

from jsonl_store import AssistantMessage, InvalidMessage, SessionStore, ToolCall, ToolMessage
from jsonl_store._format.depth import MAX_DEPTH, nesting
from jsonl_store.export import to_html, to_json, to_markdown

T = TypeVar("T")


def message(levels: int, leaf: str = "deep") -> dict[str, Any]:
    """A dict message exactly ``levels`` objects and arrays deep (the message itself is one)."""
    return {"role": "user", "content": lists(levels - 1, leaf)}


def with_frames_left(margin: int, call: Callable[[], T]) -> T:
    """``call()`` from so deep a stack that only ``margin`` frames are left below the recursion limit."""
    frame: FrameType | None = sys._getframe()
    depth = 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1

    def descend(levels: int) -> T:
        return call() if levels <= 0 else descend(levels - 1)

    return descend(sys.getrecursionlimit() - depth - margin)


def tokens(value: object) -> list[object]:
    """``value`` as a flat list of brackets, keys and scalars, made without recursion (``==`` on
    values this deep recurses past the test's own stack)."""
    out: list[object] = []
    stack: list[object] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            out.append("{")
            stack.append("}")
            for key, inner in reversed(item.items()):
                stack.extend((inner, ("key", key)))
        elif isinstance(item, list):
            out.append("[")
            stack.append("]")
            stack.extend(reversed(item))
        else:
            out.append(item)
    return out


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    return SessionStore(tmp_path / "s", durability="none")


def test_nesting_counts_objects_and_arrays() -> None:
    """A scalar is 0 deep, [] 1, a message class counts as the object it encodes to."""
    assert [nesting("x"), nesting([]), nesting([{}]), nesting({"a": [1, {"b": 2}]})] == [0, 1, 2, 3]
    assert (
        nesting(AssistantMessage(content="c", tool_calls=[ToolCall(id="c", name="f", arguments={"a": [1]})]))
        == 5
    )
    assert nesting(message(MAX_DEPTH)) == MAX_DEPTH


@settings(max_examples=50, deadline=None)
@given(st.recursive(st.integers() | st.text(max_size=3), lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=3), inner, max_size=3)))  # fmt: skip
def test_nesting_is_the_depth_of_the_json_brackets(value: Any) -> None:
    """`nesting` agrees with the deepest run of open brackets in the value's JSON (strings hold none here)."""
    data = msgspec.json.encode(value).decode()
    deepest = level = 0
    in_string = escaped = False
    for char in data:
        if in_string and escaped:
            escaped = False  # the character after a backslash is part of its escape
        elif in_string and char == "\\":
            escaped = True
        elif char == '"':
            in_string = not in_string
        elif not in_string and char in "[{":
            level += 1
            deepest = max(deepest, level)
        elif not in_string and char in "]}":
            level -= 1
    assert nesting(value) == deepest


@pytest.mark.parametrize("margin", [400, 60, 25])
def test_an_append_at_the_limit_is_stored_from_any_call_depth(store: SessionStore, margin: int) -> None:
    """A message and metadata exactly MAX_DEPTH deep are stored and read back, however few frames the caller has left."""
    deepest = message(MAX_DEPTH)
    metadata = {"m": objects(MAX_DEPTH - 1)}
    with_frames_left(margin, lambda: store.append("s", deepest, metadata=metadata))
    (record,) = with_frames_left(margin, lambda: list(store.records("s")))
    assert tokens(record.message) == tokens(deepest) and tokens(record.metadata) == tokens(metadata)
    assert tokens(with_frames_left(margin, lambda: store.load("s").context)) == tokens([deepest])


#: Leaves that send an append down its other paths: a string spilled to a blob file, one
#: the redactor rewrites (a GitHub token's shape, https://github.blog/2021-04-05-behind-githubs-new-authentication-token-formats/).
LEAVES = {"blob": "x" * 70_000, "secret": "token ghp_" + "a1B2c3D4e5" * 3 + "a1B2c3"}


@pytest.mark.parametrize("leaf", sorted(LEAVES))
def test_a_deep_append_that_spills_or_redacts_is_stored_from_a_deep_stack(
    store: SessionStore, leaf: str
) -> None:
    """At the limit with 25 frames left, a message whose string goes to a blob or is redacted is stored, and reads back as deep."""
    with_frames_left(25, lambda: store.append("s", message(MAX_DEPTH, LEAVES[leaf])))
    (record,) = store.records("s")
    assert nesting(record.message) == MAX_DEPTH
    if leaf == "blob":
        assert tokens(record.message) == tokens(message(MAX_DEPTH, LEAVES[leaf]))


@pytest.mark.parametrize("margin", [400, 60, 25])
def test_an_append_one_level_past_the_limit_is_invalid_message_from_any_call_depth(
    store: SessionStore, margin: int
) -> None:
    """One level more, in a message, a message class or metadata, is `InvalidMessage` (never RecursionError), writing nothing."""
    too_deep: list[Callable[[], object]] = [
        lambda: store.append("s", message(MAX_DEPTH + 1)),
        lambda: store.append("s", ToolMessage(tool_call_id="c", content=lists(MAX_DEPTH))),
        lambda: store.append("s", {"role": "user", "content": "x"}, metadata={"m": objects(MAX_DEPTH)}),
    ]
    for append in too_deep:
        with pytest.raises(InvalidMessage, match=f"nested deeper than {MAX_DEPTH} levels"):
            with_frames_left(margin, append)
    assert store.get_session("s") is None


def test_the_exporters_render_a_record_at_the_limit_from_a_deep_stack(store: SessionStore) -> None:
    """to_markdown, to_html and to_json of records MAX_DEPTH deep work with 60 frames left, and hold the value whole."""
    store.append("s", message(MAX_DEPTH))
    store.append(
        "s",
        AssistantMessage(
            content="c", tool_calls=[ToolCall(id="c1", name="f", arguments=objects(MAX_DEPTH - 4))]
        ),
    )
    store.append(
        "s",
        {"role": "tool", "tool_call_id": "c1", "content": [objects(MAX_DEPTH - 3)]},
        metadata={"m": objects(MAX_DEPTH - 1)},
    )
    innermost = '"deep"' + "]" * (MAX_DEPTH - 1)
    assert innermost in with_frames_left(60, lambda: to_json(store, "s")).decode().replace("\n", "").replace(
        " ", ""
    )
    for export in (to_markdown, to_html):
        text = with_frames_left(60, lambda: export(store, "s"))  # noqa: B023 (called at once)
        assert "deep" in text and "f" in text


def test_a_raised_recursion_limit_does_not_raise_the_nesting_limit(store: SessionStore) -> None:
    """With sys.setrecursionlimit(20_000) msgspec could encode deeper, but one level past MAX_DEPTH is still refused."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(20_000)
    try:
        with pytest.raises(InvalidMessage, match=f"nested deeper than {MAX_DEPTH} levels"):
            store.append("s", message(MAX_DEPTH + 1))
        with pytest.raises(InvalidMessage, match=f"nested deeper than {MAX_DEPTH} levels"):
            store.append("s", {"role": "user", "content": "x"}, metadata={"m": objects(MAX_DEPTH)})
        store.append("s", message(MAX_DEPTH))
    finally:
        sys.setrecursionlimit(limit)
    assert [nesting(r.message) for r in store.records("s")] == [MAX_DEPTH]
