"""Provider-safe context: repairing the tool batches a crash left open.

A *tool batch* is an assistant message with tool calls plus the run of tool results right
after it. A provider accepts a context only when every batch is complete: each call is
answered exactly once by a result in that run, and no tool result stands anywhere else.
The raw log breaks this whenever the process stopped between appending an assistant message
and its last result, so the model context is repaired here; the raw log itself never is.

The rules, the same for message class instances and plain dicts:

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

What this does not do: it never edits an assistant message (a call id the model repeated
stays repeated, though some providers reject that); it never reorders the results of a
batch (providers take them in any order); and it reads tool calls only from
``tool_calls`` and ``tool_call_id``, not from Anthropic-style ``tool_use`` /
``tool_result`` content blocks.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, Literal, TypeAlias

from ._records import AssistantMessage, Message, ToolMessage

#: What to do with an incomplete tool batch in the middle of the history.
ToolBatchPolicy: TypeAlias = Literal["drop", "close"]

INTERRUPTED_NOTICE = (
    "This tool call was interrupted before its result was recorded. It may have run in "
    "part or in full, so check its effects before calling it again."
)
"""The content of the error result that closes a call left without one."""


# ---------------------------------------------------------------------------------------
# Accessors: the same questions asked of a message class instance or a plain dict
# ---------------------------------------------------------------------------------------


def includes(message: Message) -> bool:
    """True when the message belongs in the model context (``include_in_messages``)."""
    if isinstance(message, dict):
        return bool(message.get("include_in_messages", True))
    return message.include_in_messages


def _calls(message: Message) -> list[tuple[str, str | None]]:
    """The ``(id, name)`` of each tool call an assistant message made; [] for other roles."""
    if isinstance(message, AssistantMessage):
        return [(call.id, call.name) for call in message.tool_calls]
    if isinstance(message, dict) and message.get("role") == "assistant":
        # A call is OpenAI-shaped ({"id", "type", "function": {"name", ...}}) or flat.
        return [
            (call["id"], call.get("name") or (call.get("function") or {}).get("name"))
            for call in message.get("tool_calls") or ()
        ]
    return []


def _is_result(message: Message) -> bool:
    """True for a tool result."""
    if isinstance(message, dict):
        return message.get("role") == "tool"
    return isinstance(message, ToolMessage)


def _answers(result: Message) -> Any:
    """The call id a tool result answers (None for a dict that names none)."""
    if isinstance(result, dict):
        return result.get("tool_call_id")
    assert isinstance(result, ToolMessage)
    return result.tool_call_id


def _batch_end(context: Sequence[Message], start: int) -> int:
    """Index just past the run of tool results that begins at ``start``."""
    end = start
    while end < len(context) and _is_result(context[end]):
        end += 1
    return end


def _notice(assistant: Message, call_id: str, name: str | None, notice: str) -> Message:
    """An error result for one unanswered call, of the same kind as the assistant message."""
    if isinstance(assistant, dict):
        result: dict[str, Any] = {"role": "tool", "tool_call_id": call_id, "content": notice}
        if name is not None:
            result["name"] = name
        return result
    return ToolMessage(tool_call_id=call_id, name=name, content=notice, is_error=True)


# ---------------------------------------------------------------------------------------
# Repair
# ---------------------------------------------------------------------------------------


def _close(assistant: Message, results: Sequence[Message], notice: str | None) -> list[Message]:
    """The results of a batch trimmed to its calls, then (unless ``notice`` is None) closed."""
    calls = _calls(assistant)
    unanswered: Counter[Any] = Counter(call_id for call_id, _ in calls)
    kept: list[Message] = []
    for result in results:
        call_id = _answers(result)
        if unanswered[call_id] > 0:
            unanswered[call_id] -= 1
            kept.append(result)
    if notice is not None:
        for call_id, name in calls:
            if unanswered[call_id] > 0:
                unanswered[call_id] -= 1
                kept.append(_notice(assistant, call_id, name, notice))
    return kept


def repair_context(
    messages: Sequence[Message],
    *,
    mid_history: ToolBatchPolicy = "drop",
    close_last: bool = True,
    notice: str = INTERRUPTED_NOTICE,
) -> list[Message]:
    """Return the model context of ``messages`` with its tool batches made safe to send.

    ``mid_history="drop"`` drops a batch in the middle unless it is complete; ``"close"``
    keeps it and closes it. ``close_last=True`` closes the batch at the very end (never
    dropping it, as its calls may have run), so the result is always provider-valid (see
    `is_provider_valid`). With ``close_last=False``
    the last batch keeps the results that finished and may lack some: under ``"drop"`` it
    is dropped whole if any of its results answers no call (the seed rule), under
    ``"close"`` such results are dropped instead.
    """
    context = [message for message in messages if includes(message)]
    repaired: list[Message] = []
    index = 0
    while index < len(context):
        message = context[index]
        calls = _calls(message)
        if not calls:
            # An orphan result answers no call in this context; anything else stays.
            if not _is_result(message):
                repaired.append(message)
            index += 1
            continue
        end = _batch_end(context, index + 1)
        results = context[index + 1 : end]
        at_end = end == len(context)
        closing = close_last if at_end else mid_history == "close"
        if closing:
            repaired.extend((message, *_close(message, results, notice)))
        elif mid_history == "close":
            # Only the last batch gets here: trimmed, but left open for the caller to close.
            repaired.extend((message, *_close(message, results, None)))
        else:
            # "drop" keeps a complete batch, and a last batch whose missing results may
            # still come. A result that answers no call means damage, not an interruption.
            expected = Counter(call_id for call_id, _ in calls)
            answered = Counter(_answers(result) for result in results)
            if expected == answered or (at_end and not answered - expected):
                repaired.extend((message, *results))
        index = end
    return repaired


def provider_safe(messages: Sequence[Message]) -> list[Message]:
    """Return the model context with interrupted tool batches dropped, except the last.

    Orphan results are dropped, and so is an incomplete batch in the middle of the history,
    its results included. The batch at the very end is kept with the results that finished,
    left open for the runtime to close (see `close_interrupted`), unless one of its results
    answers no call. The same as ``repair_context(mid_history="drop", close_last=False)``.
    """
    return repair_context(messages, mid_history="drop", close_last=False)


def close_interrupted(messages: Sequence[Message], *, notice: str = INTERRUPTED_NOTICE) -> list[Message]:
    """Return the model context with the batch at the very end closed; nothing else changes.

    Each call of the last assistant message that has no result gets an error result
    saying ``notice``, so a model does not blindly repeat a side effect that may already
    have happened. Results that answer no call of that message are dropped. A context that
    does not end in a tool batch comes back as it is.
    """
    context = [message for message in messages if includes(message)]
    start = len(context)
    while start > 0 and _is_result(context[start - 1]):
        start -= 1
    if start == 0 or not _calls(context[start - 1]):
        return context
    return [*context[:start], *_close(context[start - 1], context[start:], notice)]


# ---------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------


def provider_violation(messages: Sequence[Message]) -> str | None:
    """Return why a provider would reject ``messages`` (the first reason found), or None.

    The messages are judged as given: ``include_in_messages`` is not consulted.
    """
    index = 0
    while index < len(messages):
        message = messages[index]
        calls = _calls(message)
        if not calls:
            if _is_result(message):
                return f"message {index}: tool result for {_answers(message)!r} follows no tool call"
            index += 1
            continue
        end = _batch_end(messages, index + 1)
        unanswered: Counter[Any] = Counter(call_id for call_id, _ in calls)
        for position in range(index + 1, end):
            call_id = _answers(messages[position])
            if unanswered[call_id] == 0:
                return f"message {position}: result for {call_id!r} answers no open call of message {index}"
            unanswered[call_id] -= 1
        if missing := [call_id for call_id, _ in calls if unanswered[call_id] > 0]:
            return f"message {index}: tool call {missing[0]!r} has no result right after it"
        index = end
    return None


def is_provider_valid(messages: Sequence[Message]) -> bool:
    """True when every tool call is answered exactly once, right after it, and no result is orphan."""
    return provider_violation(messages) is None
