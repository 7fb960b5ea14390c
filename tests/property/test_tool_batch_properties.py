"""Properties of tool-batch repair over arbitrary interleavings of messages.

The histories mix user, system, compacted and assistant messages (with zero to three tool
calls) with tool results that answer real calls, answer them twice, answer nothing, or
never come; some messages are hidden by ``include_in_messages=False``. Each history is
made entirely of message classes, of OpenAI-shaped dicts, of flat dicts, or of a mix.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jsonl_store._context.tool_batches import (
    INTERRUPTED_NOTICE,
    close_interrupted,
    includes,
    is_provider_valid,
    provider_safe,
    provider_violation,
    repair_context,
)
from jsonl_store._format.records import (
    AssistantMessage,
    CompactedMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
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


# ---------------------------------------------------------------------------------------
# Every dialect: the same rule
#
# One abstract history is rendered in each dialect's own shapes (Responses items; Anthropic
# blocks, results of a run sometimes in one user message, sometimes with the next user's
# text in it; pydantic-ai requests and responses), and in the library's classes. Read back
# as calls, results and plain contents, every function's output must be what "neutral"
# gives for the class rendering: the rule does not depend on the shape. The class
# rendering joins the calls that one dialect keeps together (Responses: consecutive call
# items are one batch), and a run's results come before the text beside them (where the
# API puts them).
# ---------------------------------------------------------------------------------------

NOTICE = "NOTICE"
DIALECTS = ["openai-responses", "anthropic", "pydantic-ai"]


@st.composite
def abstract_histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Abstract messages: ``what``, call ``ids``, ``label`` (its content), ``include``, ``fuse``.

    ``fuse`` (Anthropic, pydantic-ai) puts a user message's text into the result message
    before it; drawn only where that does not change which messages follow the batch.
    """
    items = [item for turn in draw(st.lists(turns, max_size=12)) for item in turn]
    history = [
        {"what": what, "ids": ids, "label": f"m{n}", "include": draw(st.sampled_from([True] * 9 + [False]))}
        for n, (what, ids) in enumerate(items)
    ]
    shown = [item for item in history if item["include"]]
    for before, item, after in zip(shown, shown[1:], shown[2:], strict=False):
        fits = before["what"] == "tool" and item["what"] == "user" and after["what"] != "tool"
        item["fuse"] = fits and draw(st.booleans())
    return history


def as_classes(history: list[dict[str, Any]], dialect: str) -> list[Message]:
    """The included messages as library classes, calls joined as ``dialect`` joins them."""
    out: list[Message] = []
    for item in (item for item in history if item["include"]):
        what, ids, label = item["what"], item["ids"], item["label"]
        calls = [ToolCall(id=i, name=f"tool_{i}") for i in ids or []]
        if what == "assistant" and calls and dialect == "openai-responses" and out and call_ids(out[-1]):
            previous = out.pop()
            assert isinstance(previous, AssistantMessage)
            out.append(AssistantMessage(content=previous.content, tool_calls=[*previous.tool_calls, *calls]))
        else:
            out.append(render((what, ids), "class", int(label[1:]), True))
    return out


def as_responses(history: list[dict[str, Any]]) -> list[Any]:
    """Responses items: one ``function_call`` per call, one ``function_call_output`` per result."""
    out: list[Any] = []
    for item in history:
        hidden = {} if item["include"] else {"include_in_messages": False}
        what, ids, label = item["what"], item["ids"], item["label"]
        if what == "assistant" and ids:
            out.extend(
                {"type": "function_call", "call_id": i, "name": f"tool_{i}", "arguments": "{}", **hidden}
                for i in ids
            )
        elif what == "tool":
            out.append({"type": "function_call_output", "call_id": ids, "output": label, **hidden})
        else:
            out.append({"role": what, "content": label, **hidden})
    return out


def as_anthropic(history: list[dict[str, Any]], split: bool) -> list[Any]:
    """Anthropic messages: results of a run in one user message (or one each, if ``split``)."""
    out: list[Any] = []
    for index, item in enumerate(history):
        hidden = {} if item["include"] else {"include_in_messages": False}
        what, ids, label = item["what"], item["ids"], item["label"]
        text = {"type": "text", "text": label}
        if what == "assistant":
            uses = [{"type": "tool_use", "id": i, "name": f"tool_{i}", "input": {}} for i in ids]
            out.append({"role": "assistant", "content": [text, *uses], **hidden})
        elif what == "tool":
            result = {"type": "tool_result", "tool_use_id": ids, "content": label}
            previous = history[index - 1] if index else None
            if (
                not split
                and previous
                and previous["what"] == "tool"
                and previous["include"] == item["include"]
            ):
                out[-1]["content"].append(result)
            else:
                out.append({"role": "user", "content": [result], **hidden})
        elif item.get("fuse"):
            out[-1 - next(i for i, m in enumerate(reversed(out)) if includes(m))]["content"].append(text)
        else:
            out.append({"role": what, "content": label, **hidden})
    return out


def as_pydantic_ai(history: list[dict[str, Any]], split: bool) -> list[Any]:
    """pydantic-ai messages (it has no hidden messages, so only the included ones)."""
    from pydantic_ai.messages import (
        ModelRequest,
        ModelResponse,
        SystemPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )

    out: list[Any] = []
    for item in (item for item in history if item["include"]):
        what, ids, label = item["what"], item["ids"], item["label"]
        if what == "assistant":
            out.append(
                ModelResponse(parts=[TextPart(label), *(ToolCallPart(f"tool_{i}", {}, i) for i in ids)])
            )
        elif what == "tool":
            result = ToolReturnPart(f"tool_{ids}", label, ids)
            if not split and out and isinstance(out[-1], ModelRequest) and PYDANTIC_AI.answers(out[-1]):
                out[-1].parts = [*out[-1].parts, result]
            else:
                out.append(ModelRequest(parts=[result]))
        elif item.get("fuse"):
            out[-1].parts.append(UserPromptPart(label))
        else:
            out.append(
                ModelRequest(parts=[SystemPromptPart(label) if what == "system" else UserPromptPart(label)])
            )
    return out


def rendered(history: list[dict[str, Any]], dialect: str, split: bool) -> list[Any]:
    """``history`` in ``dialect``'s own shapes."""
    if dialect == "openai-responses":
        return as_responses(history)
    if dialect == "anthropic":
        return as_anthropic(history, split)
    return as_pydantic_ai(history, split)


def atoms(message: Any, dialect: str) -> tuple[list[Any], list[Any], list[Any]]:
    """``(calls, results, plain)`` of one message: call ids, (id, label) pairs, content labels."""
    if dialect == "pydantic-ai" and not isinstance(message, (dict, *MESSAGE_CLASSES)):
        parts = message.parts
        calls = [p.tool_call_id for p in parts if p.part_kind == "tool-call"]
        returns = [p for p in parts if p.part_kind == "tool-return"]
        results = [
            (p.tool_call_id, NOTICE if p.content == INTERRUPTED_NOTICE else p.content) for p in returns
        ]
        plain = [p.content for p in parts if p.part_kind in ("text", "user-prompt", "system-prompt")]
        return calls, results, ([] if calls else plain)
    if isinstance(message, dict) and message.get("type") == "function_call":
        return [message["call_id"]], [], []
    if isinstance(message, dict) and message.get("type") == "function_call_output":
        output = message["output"]
        return [], [(message["call_id"], NOTICE if output == INTERRUPTED_NOTICE else output)], []
    if isinstance(message, dict) and isinstance(message.get("content"), list):
        blocks = message["content"]
        calls = [b["id"] for b in blocks if b["type"] == "tool_use"]
        results = [
            (
                b["tool_use_id"],
                NOTICE if b.get("is_error") and b["content"] == INTERRUPTED_NOTICE else b["content"],
            )
            for b in blocks
            if b["type"] == "tool_result"
        ]
        return calls, results, ([] if calls else [b["text"] for b in blocks if b["type"] == "text"])
    if role(message) == "tool":
        return [], [(answered_id(message), NOTICE if is_notice(message) else _content(message))], []
    return call_ids(message), [], ([] if call_ids(message) else [_content(message)])


def _content(message: Any) -> Any:
    return message["content"] if isinstance(message, dict) else message.content


def read_back(context: list[Any], dialect: str) -> list[tuple[str, Any]]:
    """The context as ``("call", id)``, ``("result", (id, label))`` and ``("plain", label)``.

    In a run of messages that carry results, all results come first, then the rest.
    """
    out: list[tuple[str, Any]] = []
    run_plain: list[tuple[str, Any]] = []
    for message in context:
        calls, results, plain = atoms(message, dialect)
        if not results:
            out.extend(run_plain)
            run_plain = []
        out.extend(("call", i) for i in calls)
        out.extend(("result", r) for r in results)
        (run_plain if results else out).extend(("plain", p) for p in plain)
    return out + run_plain


MESSAGE_CLASSES = (SystemMessage, UserMessage, AssistantMessage, ToolMessage, CompactedMessage)
try:
    from jsonl_store.adapters.pydantic_ai import PYDANTIC_AI
except ImportError:  # the pydantic-ai cases skip
    PYDANTIC_AI = None  # type: ignore[assignment]


def resolve_dialect(name: str) -> Any:
    """The dialect argument for ``name``: the built-in's name, or the test's pydantic-ai dialect."""
    if name == "pydantic-ai":
        if PYDANTIC_AI is None:
            pytest.skip("pydantic-ai is not installed")
        return PYDANTIC_AI
    return name


def outputs(context: list[Any], dialect: Any) -> dict[str, list[Any]]:
    """Every repair function's output for ``context`` in ``dialect``, by a readable name."""
    out = {
        "provider_safe": provider_safe(context, dialect=dialect),
        "close_interrupted": close_interrupted(context, dialect=dialect),
    }
    for policy in ("drop", "close"):
        for close_last in (True, False):
            out[f"repair_context({policy}, {close_last})"] = repair_context(
                context, mid_history=policy, close_last=close_last, dialect=dialect
            )
    return out


@pytest.mark.parametrize("name", DIALECTS)
@EXAMPLES
@given(history=abstract_histories(), split=st.booleans())
def test_every_dialect_applies_the_neutral_rule(
    name: str, history: list[dict[str, Any]], split: bool
) -> None:
    """Each function's output, read back, is what the neutral dialect gives for the same history."""
    dialect = resolve_dialect(name)
    classes, native = as_classes(history, name), rendered(history, name, split)
    expected, actual = outputs(classes, "neutral"), outputs(native, dialect)
    for function, output in actual.items():
        assert read_back(output, name) == read_back(expected[function], "neutral"), function
    shown = [message for message in native if includes(message)]
    assert is_provider_valid(shown, dialect=dialect) == is_provider_valid(classes)


@pytest.mark.parametrize("name", DIALECTS)
@EXAMPLES
@given(history=abstract_histories(), split=st.booleans(), policy=policies)
def test_every_dialect_repairs_to_a_valid_context_and_stays_there(
    name: str, history: list[dict[str, Any]], split: bool, policy: Any
) -> None:
    """close_last=True is valid in the dialect; a valid context, or an output repaired again, is unchanged."""
    dialect = resolve_dialect(name)
    native = rendered(history, name, split)
    repaired = repair_context(native, mid_history=policy, dialect=dialect)
    assert provider_violation(repaired, dialect=dialect) is None
    for function, output in outputs(repaired, dialect).items():
        assert len(output) == len(repaired) and all(a is b for a, b in zip(output, repaired, strict=True)), (
            function
        )
    for function, output in outputs(native, dialect).items():
        again = outputs(output, dialect)[function]
        assert len(again) == len(output) and all(a is b for a, b in zip(again, output, strict=True)), function


def same_but_notice_ids(actual: list[Message], expected: list[Message]) -> bool:
    """The same objects, except notices, which are equal but for their new ``id``."""
    if len(actual) != len(expected):
        return False
    for a, e in zip(actual, expected, strict=True):
        if a is e:
            continue
        if not (is_notice(a) and is_notice(e)):
            return False
        if isinstance(a, ToolMessage) and isinstance(e, ToolMessage):
            if (a.tool_call_id, a.name) != (e.tool_call_id, e.name):
                return False
        elif a != e:
            return False
    return True


@pytest.mark.parametrize("name", ["openai-responses", "anthropic"])
@EXAMPLES
@given(histories())
def test_every_dialect_reads_neutral_messages_as_neutral_does(name: str, history: list[Message]) -> None:
    """Classes and OpenAI chat dicts mean the same in every dialect: the same output, the same verdict."""
    for function, output in outputs(history, name).items():
        assert same_but_notice_ids(output, outputs(history, "neutral")[function]), function
    assert provider_violation(history, dialect=name) == provider_violation(history)
