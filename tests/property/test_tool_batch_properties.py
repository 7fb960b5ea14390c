"""Properties of tool-batch repair over arbitrary interleavings of messages.

The histories mix user, system, compacted and assistant messages (with zero to three tool
calls) with tool results that answer real calls, answer them twice, answer nothing, or
never come; some messages are hidden by ``include_in_messages=False``. Each history is
made entirely of message classes, of OpenAI-shaped dicts, of flat dicts, or of a mix.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from jsonl_store._records import (
    AssistantMessage,
    CompactedMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from jsonl_store._tool_batches import (
    INTERRUPTED_NOTICE,
    close_interrupted,
    includes,
    is_provider_valid,
    provider_safe,
    provider_violation,
    repair_context,
)

EXAMPLES = settings(max_examples=300, deadline=None)

# ---------------------------------------------------------------------------------------
# Reading messages in the tests, independently of the module under test
# ---------------------------------------------------------------------------------------


def role(message: Message) -> str:
    """The message's role, for classes and dicts alike."""
    if isinstance(message, dict):
        return str(message["role"])
    return {
        SystemMessage: "system",
        UserMessage: "user",
        AssistantMessage: "assistant",
        ToolMessage: "tool",
        CompactedMessage: "compacted",
    }[type(message)]


def call_ids(message: Message) -> list[str]:
    """The ids of the tool calls an assistant message made."""
    if isinstance(message, AssistantMessage):
        return [call.id for call in message.tool_calls]
    if isinstance(message, dict) and message["role"] == "assistant":
        return [call["id"] for call in message.get("tool_calls") or []]
    return []


def answered_id(message: Message) -> Any:
    """The call id a tool result answers."""
    if isinstance(message, dict):
        return message["tool_call_id"]
    assert isinstance(message, ToolMessage)
    return message.tool_call_id


def is_plain(message: Message) -> bool:
    """Neither a tool result nor an assistant message with tool calls."""
    return role(message) != "tool" and not call_ids(message)


def is_notice(message: Message) -> bool:
    """True for an interruption notice added by repair."""
    if isinstance(message, dict):
        return bool(message["role"] == "tool" and message["content"] == INTERRUPTED_NOTICE)
    return isinstance(message, ToolMessage) and message.content == INTERRUPTED_NOTICE and message.is_error


def is_subsequence_plus_notices(output: list[Message], history: list[Message]) -> bool:
    """Every output message is a history message, in history order, or an added notice."""
    originals = {id(message) for message in history}
    position = 0
    for message in output:
        if id(message) not in originals:
            if not is_notice(message):
                return False
            continue
        while history[position] is not message:
            position += 1  # an IndexError here means the order was broken
        position += 1
    return True


def appears_in_order(output: list[Message], history: list[Message]) -> bool:
    """The history messages found in the output keep their relative order."""
    positions = {id(message): index for index, message in enumerate(history)}
    found = [positions[id(message)] for message in output if id(message) in positions]
    return found == sorted(found)


def seed_rule(history: list[Message]) -> list[Message]:
    """The seed's `_provider_safe_messages`, restated plainly, as an oracle."""
    context = [message for message in history if includes(message)]
    kept: list[Message] = []
    index = 0
    while index < len(context):
        message, index = context[index], index + 1
        if role(message) == "tool":
            continue
        if not call_ids(message):
            kept.append(message)
            continue
        results = []
        while index < len(context) and role(context[index]) == "tool":
            results.append(context[index])
            index += 1
        expected = Counter(call_ids(message))
        observed = Counter(answered_id(result) for result in results)
        if expected == observed or (index == len(context) and not observed - expected):
            kept.extend([message, *results])
    return kept


# ---------------------------------------------------------------------------------------
# Strategies
# ---------------------------------------------------------------------------------------

CALL_IDS = ["a", "b", "c", "d"]
KINDS = ["class", "openai", "flat"]


def render(item: tuple[str, Any], kind: str, number: int, include: bool) -> Message:
    """Build one abstract message as a message class instance or a dict of ``kind``."""
    what, ids = item
    if kind == "class":
        extra: dict[str, Any] = {} if include else {"include_in_messages": False}
        if what == "assistant":
            calls = [ToolCall(id=i, name=f"tool_{i}") for i in ids]
            return AssistantMessage(content=f"m{number}", tool_calls=calls, **extra)
        if what == "tool":
            return ToolMessage(tool_call_id=ids, content=f"m{number}", **extra)
        if what == "system":
            return SystemMessage(content=f"m{number}", **extra)
        if what == "compacted":
            return CompactedMessage(content=f"m{number}", **extra)
        return UserMessage(content=f"m{number}", **extra)
    message: dict[str, Any] = {"role": what, "content": f"m{number}"}
    if what == "assistant" and ids:
        if kind == "openai":
            message["tool_calls"] = [
                {"id": i, "type": "function", "function": {"name": f"tool_{i}", "arguments": "{}"}}
                for i in ids
            ]
        else:
            message["tool_calls"] = [{"id": i, "name": f"tool_{i}", "arguments": {}} for i in ids]
    if what == "tool":
        message["tool_call_id"] = ids
    if not include:
        message["include_in_messages"] = False
    return message


@st.composite
def batches(draw: st.DrawFn) -> list[tuple[str, Any]]:
    """An assistant message with 0-3 calls and a run of results: exact, partial or wrong."""
    ids = draw(st.lists(st.sampled_from(CALL_IDS), max_size=3))
    results = draw(
        st.one_of(
            st.permutations(ids),
            st.lists(st.sampled_from([*ids, "zzz"]) if ids else st.just("zzz"), max_size=4),
        )
    )
    return [("assistant", ids), *(("tool", i) for i in results)]


turns = st.one_of(
    st.sampled_from([[("user", None)], [("system", None)], [("compacted", None)], [("assistant", [])]]),
    batches(),
    st.sampled_from([*CALL_IDS, "zzz"]).map(lambda i: [("tool", i)]),
)


@st.composite
def histories(draw: st.DrawFn) -> list[Message]:
    """A history of class messages, dicts of one shape, or a mix of all three."""
    items = [item for turn in draw(st.lists(turns, max_size=12)) for item in turn]
    mode = draw(st.sampled_from([*KINDS, "mixed"]))
    history = []
    for number, item in enumerate(items):
        kind = draw(st.sampled_from(KINDS)) if mode == "mixed" else mode
        include = draw(st.sampled_from([True] * 9 + [False]))
        history.append(render(item, kind, number, include))
    return history


policies = st.sampled_from(["drop", "close"])


# ---------------------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------------------


@EXAMPLES
@given(histories(), policies)
def test_repair_with_close_last_is_always_provider_valid(history: list[Message], policy: Any) -> None:
    """Whatever the history and policy, repair_context(close_last=True) can be sent as is."""
    repaired = repair_context(history, mid_history=policy, close_last=True)
    assert provider_violation(repaired) is None


@EXAMPLES
@given(histories())
def test_provider_safe_is_valid_but_for_results_missing_at_the_end(history: list[Message]) -> None:
    """provider_safe output lacks nothing but results of the last batch: closing only appends."""
    safe = provider_safe(history)
    closed = close_interrupted(safe)
    assert is_provider_valid(closed)
    assert closed[: len(safe)] == safe
    assert all(is_notice(message) for message in closed[len(safe) :])


@EXAMPLES
@given(histories())
def test_provider_safe_matches_the_seed_rule(history: list[Message]) -> None:
    """provider_safe is the seed's rule, applied to the included messages."""
    safe = provider_safe(history)
    expected = seed_rule(history)
    assert len(safe) == len(expected) and all(a is b for a, b in zip(safe, expected, strict=True))


@EXAMPLES
@given(histories(), policies, st.booleans())
def test_plain_messages_are_all_kept_in_order(history: list[Message], policy: Any, close_last: bool) -> None:
    """Every included message outside a tool batch survives every repair, in order."""
    expected = [message for message in history if includes(message) and is_plain(message)]
    for output in (
        provider_safe(history),
        repair_context(history, mid_history=policy, close_last=close_last),
    ):
        kept = [message for message in output if is_plain(message)]
        assert len(kept) == len(expected) and all(a is b for a, b in zip(kept, expected, strict=True))


@EXAMPLES
@given(histories(), policies, st.booleans())
def test_repair_is_idempotent(history: list[Message], policy: Any, close_last: bool) -> None:
    """Repairing a repaired context changes nothing, for every function and option."""
    once = repair_context(history, mid_history=policy, close_last=close_last)
    assert repair_context(once, mid_history=policy, close_last=close_last) == once
    safe = provider_safe(history)
    assert provider_safe(safe) == safe
    closed = close_interrupted(history)
    assert close_interrupted(closed) == closed


@EXAMPLES
@given(histories(), st.booleans())
def test_close_policy_never_drops_an_assistant_message(history: list[Message], close_last: bool) -> None:
    """Policy "close" keeps every included assistant message, batch or not."""
    repaired = repair_context(history, mid_history="close", close_last=close_last)
    kept = {id(message) for message in repaired}
    for message in history:
        if includes(message) and role(message) == "assistant":
            assert id(message) in kept


@EXAMPLES
@given(histories(), policies, st.booleans())
def test_repair_only_removes_and_adds_notices(history: list[Message], policy: Any, close_last: bool) -> None:
    """Repair never reorders or rewrites messages; the only new ones are interruption notices."""
    for output in (
        provider_safe(history),
        close_interrupted(history),
        repair_context(history, mid_history=policy, close_last=close_last),
    ):
        assert is_subsequence_plus_notices(output, history)
        assert appears_in_order(output, history)
        assert all(includes(message) for message in output)


@EXAMPLES
@given(histories(), policies, st.booleans())
def test_valid_context_is_returned_unchanged(history: list[Message], policy: Any, close_last: bool) -> None:
    """A context that is already valid comes back as the very same messages."""
    context = repair_context(history, mid_history=policy)
    assert is_provider_valid(context)
    for output in (
        provider_safe(context),
        close_interrupted(context),
        repair_context(context, mid_history=policy, close_last=close_last),
    ):
        assert len(output) == len(context) and all(a is b for a, b in zip(output, context, strict=True))


@EXAMPLES
@given(histories())
def test_close_interrupted_touches_only_the_last_batch(history: list[Message]) -> None:
    """close_interrupted leaves every message before the final assistant message alone."""
    context = [message for message in history if includes(message)]
    closed = close_interrupted(history)
    start = len(context)
    while start > 0 and role(context[start - 1]) == "tool":
        start -= 1
    assert closed[:start] == context[:start]
    if start > 0 and call_ids(context[start - 1]):
        assert Counter(answered_id(m) for m in closed[start:]) == Counter(call_ids(context[start - 1]))
    else:
        assert closed == context
