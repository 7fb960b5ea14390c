"""`resume`: close the interrupted tool batch in the log itself, once (spec §9.9).

The seed rule (``002_193ac4f508577b36.txt`` in the project's seeds: "when the next
request starts, by adding a result for each call that has none") is applied to the raw
log, not only to a view of it: the closing results are records, so the batch stays
whole when the agent appends its next message, and every later read sees the same ids.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Sequence
from typing import Any

from ._records import Message, ToolMessage
from ._tool_batches import _answers, _calls, _is_result  # the neutral dialect's accessors

#: Namespace of the closing results' ids (spec §9.9): uuid5 of the assistant message's id,
#: the call id and the call's occurrence, so every process derives the same id.
CLOSING_NAMESPACE = uuid.UUID("5b0c9d1e-7f3a-5c2b-9e61-0a4d8f2c7b13")


def closing_id(assistant_id: str, call_id: str, occurrence: int) -> str:
    """The id of the result that closes call ``call_id`` (its ``occurrence``-th, from 0)."""
    return str(uuid.uuid5(CLOSING_NAMESPACE, f"{assistant_id}\x00{call_id}\x00{occurrence}"))


def _message_id(message: Message) -> Any:
    return message.get("id") if isinstance(message, dict) else message.id


def closing_results(context: Sequence[Message], notice: str) -> list[Message]:
    """The results the last tool batch lacks, one per unanswered call; [] when it is whole.

    The last batch is the last assistant message with tool calls when only tool results
    follow it. A call id the assistant repeated needs as many results. Results are dicts
    when the assistant message is one (the session stores plain dicts), else `ToolMessage`.
    """
    end = len(context)
    start = end
    while start > 0 and _is_result(context[start - 1]):
        start -= 1
    if start == 0 or not _calls(context[start - 1]):
        return []
    assistant = context[start - 1]
    unanswered: Counter[Any] = Counter(call_id for call_id, _ in _calls(assistant))
    for answer in context[start:end]:
        call_id = _answers(answer)
        if unanswered[call_id] > 0:
            unanswered[call_id] -= 1
    if not +unanswered:
        return []
    assistant_id = str(_message_id(assistant) or "")
    seen: Counter[Any] = Counter()
    answered_first = Counter(call_id for call_id, _ in _calls(assistant))
    answered_first.subtract(unanswered)
    closing: list[Message] = []
    for call_id, name in _calls(assistant):
        seen[call_id] += 1
        if seen[call_id] <= answered_first[call_id]:
            continue  # this occurrence has its result
        result_id = closing_id(assistant_id, str(call_id), seen[call_id] - 1)
        if isinstance(assistant, dict):
            # The shape `close_interrupted` gives a dict session (OpenAI chat's, which has
            # no error flag), with the derived id.
            result: dict[str, Any] = {"role": "tool", "tool_call_id": call_id, "content": notice}
            if name is not None:
                result["name"] = name
            result["id"] = result_id
            closing.append(result)
        else:
            closing.append(ToolMessage(id=result_id, tool_call_id=call_id, name=name, content=notice, is_error=True))
    return closing
