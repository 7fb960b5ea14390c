"""Provider-safe context: repairing the tool batches a crash left open.

A *tool batch* is an assistant message with tool calls plus the run of tool results right
after it. A provider accepts a context only when every batch is complete: each call is
answered exactly once by a result in that run, and no tool result stands anywhere else.
The raw log breaks this whenever the process stopped between appending an assistant message
and its last result, so the model context is repaired here; the raw log itself never is.

The rules, the same for message class instances and plain dicts, and in every dialect:

- A message with ``include_in_messages=False`` is not part of the model context. It is
  left out first, so a result hidden that way counts as missing. Every function here
  returns a model context.
- A tool result outside a batch (an *orphan*) is dropped: no call in the context is
  answered by it.
- An incomplete batch in the middle of the history is dropped whole (policy ``"drop"``)
  or closed (policy ``"close"``).
- The batch at the very end is the request that was interrupted. It is kept with the
  results that finished, because dropping it would forget the tools that did run and what
  they changed; *closing* it answers each call still without a result.

To *close* a batch: keep the first result of each call, drop results that answer no call
and second results of a call, then add `INTERRUPTED_NOTICE` as an error result for each
call still unanswered, right after the kept results. Calls are counted as a multiset: an
assistant message that repeats a call id needs that many results.

Where a message format keeps its calls and results is its *dialect* (`_context.dialects`): the
library's classes and OpenAI chat dicts (``"neutral"``, the default), OpenAI Responses
items, Anthropic content blocks, or one registered with `register_dialect`. In a dialect
whose messages hold several results and other content (an Anthropic user message with
text), dropping a result removes only that result from the message; the message goes when
nothing is left of it, and when only other content is left of it in a batch being closed,
it moves after the batch's results, which must stay together.

What this does not do: it never edits an assistant message (a call id the model repeated
stays repeated, though some providers reject that); it never reorders the results of a
batch (providers take them in any order), nor the blocks of a message.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Literal, TypeAlias

import msgspec

from .._format.records import MESSAGE_TYPES, AssistantMessage, ToolMessage, _Message
from .dialect_neutral import NEUTRAL, Dialect, chat_calls
from .dialects import resolve

#: What to do with an incomplete tool batch in the middle of the history.
ToolBatchPolicy: TypeAlias = Literal["drop", "close"]

INTERRUPTED_NOTICE = (
    "This tool call was interrupted before its result was recorded. It may have run in "
    "part or in full, so check its effects before calling it again."
)
"""The content of the error result that closes a call left without one."""


#: The library's own message classes: `includes` and `_open_in_order` read them directly.
_CLASSES = frozenset(MESSAGE_TYPES)


def model_messages(messages: Iterable[Any]) -> list[Any]:
    """The messages that belong in the model context, in order (`includes`, inlined for the
    library's classes: `SessionView.context` runs this once per message of a load)."""
    return [
        message
        for message in messages
        if (message.include_in_messages if type(message) in _CLASSES else includes(message))
    ]


def includes(message: Any) -> bool:
    """True when the message belongs in the model context (``include_in_messages``)."""
    if type(message) in _CLASSES:  # the common case first: a stored message of a library class
        return bool(message.include_in_messages)
    if isinstance(message, dict):
        return bool(message.get("include_in_messages", True))
    if isinstance(message, _Message):
        return message.include_in_messages
    # Another library's message (a dialect's): it has no such flag, so it is included.
    return bool(getattr(message, "include_in_messages", True))


# ---------------------------------------------------------------------------------------
# Finding the batches
# ---------------------------------------------------------------------------------------


def _calls_end(context: Sequence[Any], start: int, dialect: Dialect) -> int:
    """Index just past the calls of a batch that starts at ``start``; ``start`` when none does."""
    makes_calls = bool(dialect.calls(context[start]))
    if not makes_calls and not (
        start + 1 < len(context) and dialect.joins(context[start], context[start + 1])
    ):
        return start
    end = start + 1
    while end < len(context) and dialect.joins(context[end - 1], context[end]):
        end += 1
    # A joined run ends at its last message that makes calls (a Responses reasoning item
    # after the calls goes with what follows).
    while end - 1 > start and not dialect.calls(context[end - 1]):
        end -= 1
    return end if makes_calls or end - 1 > start else start


def _segments(context: Sequence[Any], dialect: Dialect) -> Iterator[tuple[int, int, int]]:
    """``(start, calls_end, end)`` of each part of ``context``, in order.

    A batch has its calls in ``context[start:calls_end]`` and its results in
    ``context[calls_end:end]``; a part with ``calls_end == start`` is the single message
    ``context[start]`` (``end == start + 1``), a plain message or an orphan result.
    """
    index = 0
    while index < len(context):
        calls_end = _calls_end(context, index, dialect)
        if calls_end == index:
            yield index, index, index + 1
            index += 1
            continue
        end = calls_end
        while end < len(context) and dialect.answers(context[end]) and not dialect.calls(context[end]):
            end += 1
        yield index, calls_end, end
        index = end


def _open_calls(callers: Sequence[Any], dialect: Dialect) -> list[tuple[Any, Any, str | None]]:
    """``(caller, call id, name)`` of each call the messages of a batch make, in order."""
    return [(caller, call_id, name) for caller in callers for call_id, name in dialect.calls(caller)]


def _without_results(messages: Sequence[Any], dialect: Dialect) -> list[Any]:
    """What is left of messages that carry results once those are dropped (in most dialects, nothing)."""
    left = (dialect.keep_answers(message, [False] * len(dialect.answers(message))) for message in messages)
    return [rest for rest in left if rest is not None]


# ---------------------------------------------------------------------------------------
# Repair
# ---------------------------------------------------------------------------------------


def _close(callers: Sequence[Any], results: Sequence[Any], notice: str | None, dialect: Dialect) -> list[Any]:
    """The results of a batch trimmed to its calls, then (unless ``notice`` is None) closed.

    A message left with no result but other content (a user's text beside Anthropic
    results) moves after the batch's results and notices, which must stay together.
    """
    calls = _open_calls(callers, dialect)
    unanswered: Counter[Any] = Counter(call_id for _, call_id, _ in calls)
    kept: list[Any] = []
    left: list[Any] = []
    for result in results:
        keep = []
        for call_id in dialect.answers(result):
            keep.append(unanswered[call_id] > 0)
            if keep[-1]:
                unanswered[call_id] -= 1
        if all(keep):
            kept.append(result)
        elif (trimmed := dialect.keep_answers(result, keep)) is not None:
            (kept if any(keep) else left).append(trimmed)
    if notice is not None:
        missing = []
        occurrences = []
        answered = Counter(call_id for _, call_id, _ in calls)
        answered.subtract(unanswered)
        seen: Counter[Any] = Counter()
        for call in calls:
            occurrence = seen[call[1]]
            seen[call[1]] += 1
            if occurrence >= answered[call[1]]:
                missing.append(call)
                occurrences.append(occurrence)
        if missing:
            kept.extend(with_closing_ids(dialect.notices(missing, notice), missing, occurrences))
    return kept + left


#: Namespace of the ids of closing results (spec §9.11): uuid5 of the calling message's
#: id, the call id and the call's occurrence, so every process derives the same id.
CLOSING_NAMESPACE = uuid.UUID("5b0c9d1e-7f3a-5c2b-9e61-0a4d8f2c7b13")


def closing_id(caller_id: str, call_id: str, occurrence: int) -> str:
    """The id of the result that closes call ``call_id`` (its ``occurrence``-th, from 0)."""
    return str(uuid.uuid5(CLOSING_NAMESPACE, f"{caller_id}\x00{call_id}\x00{occurrence}"))


def _id_of(message: Any) -> str:
    found = message.get("id") if isinstance(message, dict) else getattr(message, "id", None)
    return found if isinstance(found, str) else ""


def with_closing_ids(
    notices: list[Any], missing: Sequence[tuple[Any, Any, str | None]], occurrences: Sequence[int]
) -> list[Any]:
    """Give message-class notices the id derived from the call they close (spec §9.11).

    The same call closed twice, by two repairs of one view or by `resume` and a later
    repair, gets one id. Dicts and a dialect's own objects are left as the dialect made
    them (`resume` gives stored dicts their ids itself).
    """
    if len(notices) != len(missing):
        return notices
    return [
        msgspec.structs.replace(message, id=closing_id(_id_of(caller), str(call_id), occurrence))
        if isinstance(message, _Message)
        else message
        for message, (caller, call_id, _), occurrence in zip(notices, missing, occurrences, strict=True)
    ]


def repair_context(
    messages: Sequence[Any],
    *,
    mid_history: ToolBatchPolicy = "drop",
    close_last: bool = True,
    notice: str = INTERRUPTED_NOTICE,
    dialect: str | Dialect = "neutral",
) -> list[Any]:
    """Return the model context of ``messages`` with its tool batches made safe to send.

    ``mid_history="drop"`` drops a batch in the middle unless it is complete; ``"close"``
    keeps it and closes it. ``close_last=True`` closes the batch at the very end (never
    dropping it, as its calls may have run), so the result is always provider-valid (see
    `is_provider_valid`). With ``close_last=False``
    the last batch keeps the results that finished and may lack some: under ``"drop"`` it
    is dropped whole if any of its results answers no call (spec §5's rule), under
    ``"close"`` such results are dropped instead. ``dialect`` says where calls and
    results are (a registered name or a `Dialect`); raises `InvalidArgument` for an
    unknown one.
    """
    reading = resolve(dialect)
    return repair(
        [message for message in messages if includes(message)], mid_history, close_last, notice, reading
    )


def repair(
    context: list[Any], mid_history: ToolBatchPolicy, close_last: bool, notice: str, reading: Dialect
) -> list[Any]:
    """`repair_context` of a model context (its messages already filtered by `includes`)."""
    if reading is NEUTRAL:
        open_calls = _open_in_order(context)
        if open_calls == 0 or (open_calls > 0 and not close_last):
            return context
    repaired: list[Any] = []
    for start, calls_end, end in _segments(context, reading):
        if calls_end == start:
            # An orphan result answers no call in this context; anything else stays.
            message = context[start]
            repaired.extend(_without_results([message], reading) if reading.answers(message) else [message])
            continue
        callers, results = context[start:calls_end], context[calls_end:end]
        at_end = end == len(context)
        closing = close_last if at_end else mid_history == "close"
        if closing:
            repaired.extend((*callers, *_close(callers, results, notice, reading)))
        elif mid_history == "close":
            # Only the last batch gets here: trimmed, but left open for the caller to close.
            repaired.extend((*callers, *_close(callers, results, None, reading)))
        else:
            # "drop" keeps a complete batch, and a last batch whose missing results may
            # still come. A result that answers no call means damage, not an interruption.
            expected = [call_id for _, call_id, _ in _open_calls(callers, reading)]
            answered = [call_id for result in results for call_id in reading.answers(result)]
            # Most batches are answered in call order: equal lists need no multiset count.
            if expected == answered or _complete_or_open(Counter(expected), Counter(answered), at_end):
                repaired.extend((*callers, *results))
            else:
                repaired.extend(_without_results(results, reading))
    return repaired


def _open_in_order(context: Sequence[Any]) -> int:
    """The calls of the last batch still unanswered, or -1: one pass that proves no repair is due.

    In the neutral dialect a context needs no repair when every result answers the next
    unanswered call of the batch it follows, in call order, and every batch but the last
    is whole: `repair` then keeps each message where it is, under any policy, except that
    ``close_last`` would add results to an open last batch. Anything else (a result out of
    order, a batch left open in the middle, an orphan, a subclass or another library's
    object) gives -1, and the full repair decides; so this only skips work, never changes
    a result (``tests/property/test_tool_batch_fast_path.py`` holds the two equal).
    """
    expected: Sequence[Any] = ()
    answered = 0
    for message in context:
        kind = type(message)
        if kind is ToolMessage:
            calls: Sequence[Any] = _NO_CALLS
            answers: Sequence[Any] = (message.tool_call_id,)
        elif kind is AssistantMessage:
            calls, answers = [call.id for call in message.tool_calls], _NO_CALLS
        elif kind in _CLASSES:
            calls = answers = _NO_CALLS
        elif kind is dict:
            calls = [call_id for call_id, _ in chat_calls(message)]
            answers = _NO_CALLS if calls else NEUTRAL.answers(message)
        else:
            return -1
        if answers:
            # `_segments` takes a message as results only when it makes no call.
            if answered < len(expected) and answers[0] == expected[answered]:
                answered += 1
                continue
            return -1
        if answered != len(expected):
            return -1  # a batch left open before the end
        expected, answered = calls, 0
    return len(expected) - answered


_NO_CALLS: Sequence[Any] = ()


def _complete_or_open(expected: Counter[Any], answered: Counter[Any], at_end: bool) -> bool:
    """True for a batch every call of which is answered once, or, at the end, none more than once."""
    return expected == answered or (at_end and not answered - expected)


def provider_safe(messages: Sequence[Any], *, dialect: str | Dialect = "neutral") -> list[Any]:
    """Return the model context with interrupted tool batches dropped, except the last.

    Orphan results are dropped, and so is an incomplete batch in the middle of the history,
    its results included. The batch at the very end is kept with the results that finished,
    left open for the runtime to close (see `close_interrupted`), unless one of its results
    answers no call. The same as ``repair_context(mid_history="drop", close_last=False)``.
    """
    return repair_context(messages, mid_history="drop", close_last=False, dialect=dialect)


def close_interrupted(
    messages: Sequence[Any], *, notice: str = INTERRUPTED_NOTICE, dialect: str | Dialect = "neutral"
) -> list[Any]:
    """Return the model context with the batch at the very end closed; nothing else changes.

    Each call of the last assistant message that has no result gets an error result
    saying ``notice``, so a model does not blindly repeat a side effect that may already
    have happened. Results that answer no call of that message are dropped. A context that
    does not end in a tool batch comes back as it is.
    """
    reading = resolve(dialect)
    context = [message for message in messages if includes(message)]
    segments = list(_segments(context, reading))
    start, calls_end, _ = segments[-1] if segments else (0, 0, 0)
    if calls_end == start:
        return context
    return [*context[:calls_end], *_close(context[start:calls_end], context[calls_end:], notice, reading)]


# ---------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------


def provider_violation(messages: Sequence[Any], *, dialect: str | Dialect = "neutral") -> str | None:
    """Return why a provider would reject ``messages`` (the first reason found), or None.

    The messages are judged as given: ``include_in_messages`` is not consulted.
    """
    reading = resolve(dialect)
    for start, calls_end, end in _segments(messages, reading):
        if calls_end == start:
            if answers := reading.answers(messages[start]):
                return f"message {start}: tool result for {answers[0]!r} follows no tool call"
            continue
        calls = _open_calls(messages[start:calls_end], reading)
        unanswered: Counter[Any] = Counter(call_id for _, call_id, _ in calls)
        for position in range(calls_end, end):
            for call_id in reading.answers(messages[position]):
                if unanswered[call_id] == 0:
                    return (
                        f"message {position}: result for {call_id!r} answers no open call of message {start}"
                    )
                unanswered[call_id] -= 1
        for position in range(start, calls_end):
            for call_id, _ in reading.calls(messages[position]):
                if unanswered[call_id] > 0:
                    return f"message {position}: tool call {call_id!r} has no result right after it"
    return None


def is_provider_valid(messages: Sequence[Any], *, dialect: str | Dialect = "neutral") -> bool:
    """True when every tool call is answered exactly once, right after it, and no result is orphan."""
    return provider_violation(messages, dialect=dialect) is None
