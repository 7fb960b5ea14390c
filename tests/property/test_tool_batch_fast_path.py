"""The one-pass check that lets tool-batch repair skip its work never changes what repair returns.

`repair` returns a neutral context unchanged when `_open_in_order` proves every result
answers its batch's next call in order; these properties hold that shortcut to the full
repair (the same dialect under another object, which never takes it) on histories that
mostly need no repair and sometimes do: results permuted, missing, doubled or orphaned,
batches left open in the middle, messages hidden by ``include_in_messages=False``.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from jsonl_store._context.dialect_neutral import NEUTRAL, NeutralDialect
from jsonl_store._context.tool_batches import INTERRUPTED_NOTICE, _open_in_order, includes, repair
from jsonl_store._format.records import (
    AssistantMessage,
    CompactedMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)

EXAMPLES = settings(max_examples=400, deadline=None)
IDS = ["a", "b", "c", "d"]
SHAPES = ["class", "openai", "flat"]


def render(what: str, ids: Any, shape: str, number: int, include: bool) -> Message:
    """One abstract message as a message class or a dict of ``shape``."""
    hidden: dict[str, Any] = {} if include else {"include_in_messages": False}
    if shape == "class":
        if what == "assistant":
            calls = [ToolCall(id=i, name=f"tool_{i}") for i in ids]
            return AssistantMessage(content=f"m{number}", tool_calls=calls, **hidden)
        if what == "tool":
            return ToolMessage(tool_call_id=ids, content=f"m{number}", **hidden)
        kinds = {"user": UserMessage, "system": SystemMessage, "compacted": CompactedMessage}
        return kinds[what](content=f"m{number}", **hidden)
    message: dict[str, Any] = {"role": what, "content": f"m{number}", **hidden}
    if what == "assistant" and ids:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": f"tool_{i}", "arguments": "{}"}}
            if shape == "openai"
            else {"id": i, "name": f"tool_{i}", "arguments": {}}
            for i in ids
        ]
    if what == "tool":
        message["tool_call_id"] = ids
    return message


@st.composite
def batch(draw: st.DrawFn) -> list[tuple[str, Any]]:
    """An assistant message with 1-3 calls and its results: mostly in call order, sometimes not."""
    ids = draw(st.lists(st.sampled_from(IDS), min_size=1, max_size=3))
    results = draw(
        st.one_of(
            st.just(list(ids)),
            st.just(list(ids)),
            st.just(list(ids)),
            st.permutations(ids),
            st.integers(0, len(ids)).map(lambda n: list(ids[:n])),
            st.lists(st.sampled_from([*ids, "zzz"]), max_size=4),
        )
    )
    return [("assistant", ids), *(("tool", i) for i in results)]


turns = st.one_of(
    st.sampled_from([[("user", None)], [("system", None)], [("compacted", None)], [("assistant", [])]]),
    batch(),
    batch(),
    st.sampled_from([*IDS, "zzz"]).map(lambda i: [("tool", i)]),
)


@st.composite
def histories(draw: st.DrawFn) -> list[Message]:
    """A history of classes, of one dict shape, or of all mixed; one message in 20 hidden."""
    items = [item for turn in draw(st.lists(turns, max_size=12)) for item in turn]
    mode = draw(st.sampled_from([*SHAPES, "mixed"]))
    return [
        render(
            what,
            ids,
            draw(st.sampled_from(SHAPES)) if mode == "mixed" else mode,
            number,
            draw(st.sampled_from([True] * 19 + [False])),
        )
        for number, (what, ids) in enumerate(items)
    ]


@st.composite
def answered_in_order(draw: st.DrawFn) -> tuple[list[Message], int]:
    """A context every batch of which is answered in call order, the last maybe in part; its open calls."""
    items: list[tuple[str, Any]] = []
    open_calls = 0
    for turn in draw(st.lists(st.sampled_from(["user", "system", "compacted", "batch"]), max_size=10)):
        if turn != "batch":
            items.append((turn, None))
            continue
        ids = draw(st.lists(st.sampled_from(IDS), max_size=3))
        items += [("assistant", ids), *(("tool", i) for i in ids)]
    ids = draw(st.lists(st.sampled_from(IDS), max_size=3))
    if ids:
        answered = draw(st.integers(0, len(ids)))
        items += [("assistant", ids), *(("tool", i) for i in ids[:answered])]
        open_calls = len(ids) - answered
    shape = draw(st.sampled_from(SHAPES))
    return [render(what, ids, shape, n, True) for n, (what, ids) in enumerate(items)], open_calls


@EXAMPLES
@given(histories(), st.sampled_from(["drop", "close"]), st.booleans())
def test_the_shortcut_returns_what_the_full_repair_returns(
    history: list[Message], policy: Any, close_last: bool
) -> None:
    """Neutral repair equals the same dialect's full repair, for every policy, on any history."""
    context = [message for message in history if includes(message)]
    fast = repair(list(context), policy, close_last, INTERRUPTED_NOTICE, NEUTRAL)
    full = repair(list(context), policy, close_last, INTERRUPTED_NOTICE, NeutralDialect())
    assert fast == full
    # The messages kept are the history's own objects, in both.
    assert [id(m) for m in fast if any(m is h for h in context)] == [
        id(m) for m in full if any(m is h for h in context)
    ]


@EXAMPLES
@given(answered_in_order())
def test_a_context_answered_in_call_order_is_recognised(case: tuple[list[Message], int]) -> None:
    """The one pass accepts a context answered in order and counts the last batch's open calls."""
    context, open_calls = case
    assert _open_in_order(context) == open_calls
    assert repair(context, "drop", False, INTERRUPTED_NOTICE, NEUTRAL) is context


@given(st.sampled_from(IDS))
def test_a_result_out_of_call_order_is_left_to_the_full_repair(first: str) -> None:
    """Results answering a batch in another order than its calls are not judged by the one pass."""
    second = "z" if first != "z" else "y"
    call = AssistantMessage(tool_calls=[ToolCall(id=first, name="t"), ToolCall(id=second, name="t")])
    context: list[Message] = [
        call,
        ToolMessage(tool_call_id=second, content="2"),
        ToolMessage(tool_call_id=first, content="1"),
    ]
    assert _open_in_order(context) == -1
    assert repair(list(context), "drop", True, INTERRUPTED_NOTICE, NEUTRAL) == context
