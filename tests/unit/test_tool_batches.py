"""Scenario tests for tool-batch repair (`jsonl_store._context.tool_batches`)."""

from __future__ import annotations

from typing import Any

import pytest

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


def user(text: str = "hi") -> UserMessage:
    """A user turn."""
    return UserMessage(content=text)


def calls(*ids: str) -> AssistantMessage:
    """An assistant message calling one tool per id."""
    return AssistantMessage(tool_calls=[ToolCall(id=i, name=f"tool_{i}") for i in ids])


def result(call_id: str, content: str = "ok") -> ToolMessage:
    """A tool result answering ``call_id``."""
    return ToolMessage(tool_call_id=call_id, content=content, name=f"tool_{call_id}")


def same(actual: list[Message], expected: list[Message]) -> bool:
    """True when both lists hold the very same objects in the same order."""
    return len(actual) == len(expected) and all(a is e for a, e in zip(actual, expected, strict=True))


def is_notice(message: Message, call_id: str) -> bool:
    """True for the interruption notice that closes ``call_id``."""
    return (
        isinstance(message, ToolMessage)
        and message.tool_call_id == call_id
        and message.content == INTERRUPTED_NOTICE
        and message.is_error
    )


# ---------------------------------------------------------------------------------------
# provider_safe: the seed rule
# ---------------------------------------------------------------------------------------


def test_complete_history_is_returned_unchanged() -> None:
    """A history whose batches are all complete passes through as the same objects."""
    history: list[Message] = [
        SystemMessage(content="be brief"),
        user(),
        calls("a", "b"),
        result("a"),
        result("b"),
        AssistantMessage(content="done"),
    ]
    assert same(provider_safe(history), history)
    assert is_provider_valid(history)


def test_orphan_result_is_dropped() -> None:
    """A tool result that follows no assistant tool call is left out."""
    u, answer = user(), AssistantMessage(content="hello")
    assert same(provider_safe([u, result("ghost"), answer]), [u, answer])


def test_result_after_plain_assistant_is_orphan() -> None:
    """A result after an assistant message without tool calls is an orphan too."""
    u, answer = user(), AssistantMessage(content="hello")
    assert same(provider_safe([u, answer, result("a")]), [u, answer])


def test_interrupted_batch_in_the_middle_is_dropped_with_its_results() -> None:
    """An incomplete batch in mid-history goes, results included; the dialogue around stays."""
    first, second, later = user("1"), user("2"), AssistantMessage(content="later")
    history: list[Message] = [first, calls("a", "b"), result("a"), second, later]
    assert same(provider_safe(history), [first, second, later])


def test_last_batch_is_kept_with_the_results_that_finished() -> None:
    """The batch at the very end keeps its finished results and stays open."""
    u, a, done = user(), calls("a", "b", "c"), result("b")
    assert same(provider_safe([u, a, done]), [u, a, done])
    assert provider_violation([u, a, done]) == "message 1: tool call 'a' has no result right after it"


def test_last_batch_with_no_results_is_kept() -> None:
    """A run that stopped right after the assistant message keeps that message."""
    u, a = user(), calls("a")
    assert same(provider_safe([u, a]), [u, a])


def test_last_batch_with_a_stray_result_is_dropped() -> None:
    """The seed rule: a last batch holding a result that answers no call is dropped whole."""
    u = user()
    assert same(provider_safe([u, calls("a", "b"), result("a"), result("zzz")]), [u])


def test_duplicate_result_in_the_middle_drops_the_batch() -> None:
    """A mid-history batch answering one call twice is not complete, so it is dropped."""
    u, after = user(), user("after")
    history: list[Message] = [u, calls("a"), result("a"), result("a"), after]
    assert same(provider_safe(history), [u, after])


def test_results_out_of_order_within_a_batch_are_kept_in_their_order() -> None:
    """Results may arrive in any order; a complete batch is kept exactly as stored."""
    a, rb, ra, after = calls("a", "b"), result("b"), result("a"), user()
    history: list[Message] = [a, rb, ra, after]
    assert same(provider_safe(history), history)
    assert is_provider_valid(history)


def test_repeated_call_id_needs_as_many_results() -> None:
    """Calls count as a multiset: a repeated call id is answered once per repetition."""
    a, r1, r2, after = calls("x", "x"), result("x"), result("x"), user()
    assert same(provider_safe([a, r1, r2, after]), [a, r1, r2, after])
    assert same(provider_safe([a, r1, after]), [after])


def test_compacted_and_system_messages_are_kept() -> None:
    """Messages outside tool batches are never touched."""
    summary, system = CompactedMessage(content="earlier"), SystemMessage(content="s")
    assert same(provider_safe([summary, system]), [summary, system])


def test_empty_context_stays_empty() -> None:
    """Nothing in, nothing out, and nothing to violate."""
    assert provider_safe([]) == []
    assert close_interrupted([]) == []
    assert is_provider_valid([])


# ---------------------------------------------------------------------------------------
# include_in_messages
# ---------------------------------------------------------------------------------------


def test_excluded_messages_are_left_out() -> None:
    """A message with include_in_messages=False is not part of the model context."""
    hidden = UserMessage(content="hidden", include_in_messages=False)
    u = user()
    assert not includes(hidden)
    assert includes(u)
    assert same(provider_safe([hidden, u]), [u])
    assert same(repair_context([hidden, u]), [u])
    assert same(close_interrupted([hidden, u]), [u])


def test_excluded_result_counts_as_missing() -> None:
    """A result hidden by include_in_messages=False leaves its call unanswered."""
    a = calls("a")
    hidden = ToolMessage(tool_call_id="a", content="secret", include_in_messages=False)
    after = user()
    assert same(provider_safe([a, hidden, after]), [after])
    closed = close_interrupted([a, hidden])
    assert closed[0] is a and is_notice(closed[1], "a") and len(closed) == 2


def test_result_of_an_excluded_assistant_message_is_orphan() -> None:
    """Hiding an assistant message hides the batch: its results become orphans."""
    a = AssistantMessage(tool_calls=[ToolCall(id="a", name="t")], include_in_messages=False)
    u = user()
    assert same(repair_context([u, a, result("a")]), [u])


def test_includes_defaults_to_true_for_dicts() -> None:
    """A dict without include_in_messages is included; an explicit False is not."""
    assert includes({"role": "user", "content": "x"})
    assert not includes({"role": "user", "content": "x", "include_in_messages": False})


# ---------------------------------------------------------------------------------------
# close_interrupted
# ---------------------------------------------------------------------------------------


def test_close_interrupted_adds_notices_only_for_missing_calls() -> None:
    """Each call without a result gets one error notice, after the results that finished."""
    u, a, rb = user(), calls("a", "b", "c"), result("b")
    closed = close_interrupted([u, a, rb])
    assert same(closed[:3], [u, a, rb])
    assert len(closed) == 5
    assert is_notice(closed[3], "a") and is_notice(closed[4], "c")
    notice = closed[3]
    assert isinstance(notice, ToolMessage) and notice.name == "tool_a"
    assert is_provider_valid(closed)


def test_close_interrupted_leaves_a_complete_last_batch_alone() -> None:
    """A finished last batch needs no notice."""
    history: list[Message] = [user(), calls("a"), result("a")]
    assert same(close_interrupted(history), history)


def test_close_interrupted_leaves_mid_history_batches_alone() -> None:
    """Only the batch at the very end is closed; an earlier broken one is not its job."""
    history: list[Message] = [calls("a"), user(), calls("b")]
    closed = close_interrupted(history)
    assert same(closed[:3], history)
    assert len(closed) == 4 and is_notice(closed[3], "b")
    assert not is_provider_valid(closed)


def test_close_interrupted_without_a_last_batch_is_a_no_op() -> None:
    """A context ending in a user message comes back as it was."""
    history: list[Message] = [calls("a"), result("a"), user()]
    assert same(close_interrupted(history), history)


def test_close_interrupted_drops_stray_and_duplicate_results_of_the_last_batch() -> None:
    """Closing keeps the first result of each call and drops the ones that answer nothing."""
    a, first, again, stray = calls("a", "b"), result("a", "1"), result("a", "2"), result("zzz")
    closed = close_interrupted([a, first, again, stray])
    assert same(closed[:2], [a, first])
    assert len(closed) == 3 and is_notice(closed[2], "b")


def test_close_interrupted_uses_the_notice_given() -> None:
    """A caller can word the notice."""
    closed = close_interrupted([calls("a")], notice="lost")
    assert isinstance(closed[1], ToolMessage) and closed[1].content == "lost"


# ---------------------------------------------------------------------------------------
# repair_context
# ---------------------------------------------------------------------------------------


def test_repair_context_drop_closes_the_last_batch() -> None:
    """The default: mid-history incomplete batches dropped, the last one closed."""
    u1, u2, last, done = user("1"), user("2"), calls("c", "d"), result("d")
    history: list[Message] = [u1, calls("a", "b"), result("b"), u2, last, done]
    repaired = repair_context(history)
    assert same(repaired[:4], [u1, u2, last, done])
    assert len(repaired) == 5 and is_notice(repaired[4], "c")
    assert is_provider_valid(repaired)


def test_repair_context_close_keeps_mid_history_batches() -> None:
    """Policy "close" keeps an incomplete mid-history batch and closes it."""
    u, a, rb, after = user(), calls("a", "b"), result("b"), user("after")
    repaired = repair_context([u, a, rb, after], mid_history="close")
    assert same(repaired[:3], [u, a, rb])
    assert is_notice(repaired[3], "a")
    assert repaired[4] is after and len(repaired) == 5
    assert is_provider_valid(repaired)


def test_repair_context_close_drops_duplicate_and_stray_results() -> None:
    """Closing keeps the first result of a call and drops results that answer no call."""
    a, first, again, stray, after = calls("a"), result("a", "1"), result("a", "2"), result("q"), user()
    repaired = repair_context([a, first, stray, again, after], mid_history="close")
    assert same(repaired, [a, first, after])


def test_repair_context_close_last_batch_with_stray_result_is_closed_not_dropped() -> None:
    """With close_last the last batch is closed even where the seed rule would drop it."""
    a, ra, stray = calls("a", "b"), result("a"), result("zzz")
    repaired = repair_context([a, ra, stray])
    assert same(repaired[:2], [a, ra])
    assert len(repaired) == 3 and is_notice(repaired[2], "b")


def test_repair_context_without_close_last_leaves_the_last_batch_open() -> None:
    """close_last=False keeps the last batch's finished results and adds nothing."""
    a, rb = calls("a", "b"), result("b")
    assert same(repair_context([a, rb], close_last=False), [a, rb])
    assert same(repair_context([a, rb], mid_history="close", close_last=False), [a, rb])


def test_repair_context_close_without_close_last_trims_the_last_batch() -> None:
    """Policy "close" never drops the last batch: its stray results go, the message stays."""
    a, rb, stray = calls("a", "b"), result("b"), result("zzz")
    assert same(repair_context([a, rb, stray], mid_history="close", close_last=False), [a, rb])
    assert same(repair_context([a, rb, stray], close_last=False), [])


def test_back_to_back_batches_are_judged_separately() -> None:
    """An assistant message with calls right after another ends the first batch's run."""
    first, second, rb = calls("a"), calls("b"), result("b")
    assert same(repair_context([first, second, rb]), [second, rb])
    closed = repair_context([first, second, rb], mid_history="close")
    assert closed[0] is first and is_notice(closed[1], "a")
    assert same(closed[2:], [second, rb])


def test_valid_context_is_unchanged_by_every_option() -> None:
    """A valid context is returned as the same objects by every combination of options."""
    history: list[Message] = [user(), calls("a"), result("a"), AssistantMessage(content="done")]
    for policy in ("drop", "close"):
        for close_last in (True, False):
            assert same(repair_context(history, mid_history=policy, close_last=close_last), history)


# ---------------------------------------------------------------------------------------
# Plain dicts
# ---------------------------------------------------------------------------------------


def openai_call(call_id: str, name: str = "search") -> dict[str, Any]:
    """An OpenAI-shaped tool call."""
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}


def test_openai_shaped_dicts_follow_the_same_rules() -> None:
    """OpenAI-style dict messages are repaired like message classes."""
    u = {"role": "user", "content": "hi"}
    mid = {"role": "assistant", "content": None, "tool_calls": [openai_call("a"), openai_call("b")]}
    ra = {"role": "tool", "tool_call_id": "a", "content": "1"}
    again = {"role": "user", "content": "again"}
    last = {"role": "assistant", "content": None, "tool_calls": [openai_call("c", "fetch")]}
    history: list[Message] = [u, {"role": "tool", "tool_call_id": "x", "content": ""}, mid, ra, again, last]
    assert same(provider_safe(history), [u, again, last])
    repaired = repair_context(history)
    assert same(repaired[:3], [u, again, last])
    assert repaired[3] == {
        "role": "tool",
        "tool_call_id": "c",
        "content": INTERRUPTED_NOTICE,
        "name": "fetch",
    }
    assert is_provider_valid(repaired)


def test_flat_dict_calls_and_missing_names() -> None:
    """Flat {"id","name","arguments"} calls work; a notice has no name when the call had none."""
    a = {"role": "assistant", "tool_calls": [{"id": "a", "name": "t", "arguments": {}}, {"id": "b"}]}
    closed = close_interrupted([a])
    assert closed[1:] == [
        {"role": "tool", "tool_call_id": "a", "content": INTERRUPTED_NOTICE, "name": "t"},
        {"role": "tool", "tool_call_id": "b", "content": INTERRUPTED_NOTICE},
    ]


def test_dict_with_empty_or_null_tool_calls_is_a_plain_message() -> None:
    """An assistant dict whose tool_calls is [] or None opens no batch."""
    empty = {"role": "assistant", "content": "x", "tool_calls": []}
    null = {"role": "assistant", "content": "y", "tool_calls": None}
    assert same(repair_context([empty, null]), [empty, null])


def test_dict_result_without_tool_call_id_is_dropped() -> None:
    """A tool dict that names no call answers nothing."""
    a = {"role": "assistant", "tool_calls": [openai_call("a")]}
    bad = {"role": "tool", "content": "?"}
    ra = {"role": "tool", "tool_call_id": "a", "content": "ok"}
    assert same(repair_context([a, bad, ra], mid_history="close"), [a, ra])
    assert provider_violation([a, bad, ra]) == "message 1: result for None answers no open call of message 0"


def test_class_assistant_with_dict_results_is_one_batch() -> None:
    """Kinds can mix: a dict result answers a class assistant's call."""
    a, ra = calls("a"), {"role": "tool", "tool_call_id": "a", "content": "ok"}
    assert is_provider_valid([a, ra])
    assert same(repair_context([a, ra, user()])[:2], [a, ra])


# ---------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("history", "reason"),
    [
        ([result("a")], "message 0: tool result for 'a' follows no tool call"),
        ([calls("a"), user()], "message 0: tool call 'a' has no result right after it"),
        (
            [calls("a"), result("a"), result("a")],
            "message 2: result for 'a' answers no open call of message 0",
        ),
        ([calls("a"), user(), result("a")], "message 0: tool call 'a' has no result right after it"),
    ],
)
def test_provider_violation_names_the_first_problem(history: list[Message], reason: str) -> None:
    """Each kind of invalid context is reported with the message index where it shows."""
    assert provider_violation(history) == reason
    assert not is_provider_valid(history)
