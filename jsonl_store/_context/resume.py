"""`resume`: close the interrupted tool batch in the log itself, once (spec §9.11).

Spec §5's tool-batch repair (an interrupted batch is closed when the next request
starts, by adding a result for each call that has none) is applied to the raw log, not
only to a view of it: the closing results are records, so the batch stays
whole when the agent appends its next message, and every later read sees the same ids.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import msgspec

from .._format.records import MESSAGE_TYPES
from .dialect_neutral import Dialect
from .dialects import resolve
from .tool_batches import _id_of, _open_calls, _segments, closing_id


def _with_id(message: Any, identifier: str) -> Any:
    if isinstance(message, MESSAGE_TYPES):
        return msgspec.structs.replace(message, id=identifier)
    if isinstance(message, dict):
        if message.get("role") == "tool":
            # A stored chat-shaped result says it failed, as a ToolMessage does: readers
            # and frameworks that keep dicts see an error (`to_openai_chat` leaves it out).
            return {**message, "is_error": True, "id": identifier}
        return {**message, "id": identifier}
    return message  # a dialect's own objects keep what they have


def closing_results(context: Sequence[Any], notice: str, dialect: str | Dialect = "neutral") -> list[Any]:
    """The messages the last tool batch lacks (the dialect's notices), with derived ids; [] when whole.

    The last batch is the context's last part when it makes calls (`_context.tool_batches`'s
    reading of batches, in ``dialect``). A call id made twice needs two results; the
    first results answer the first occurrences. When the dialect gives one message per
    open call, message ``k`` gets the id of open call ``k``; when it bundles them (one
    message holding several results), message ``k`` gets ``closing_id`` of the first
    open call's caller, the open call ids joined by NUL, and ``k``.
    """
    reading = resolve(dialect)
    segments = list(_segments(context, reading))
    if not segments:
        return []
    start, calls_end, end = segments[-1]
    if calls_end == start or end != len(context):
        return []
    calls = _open_calls(context[start:calls_end], reading)
    answered: Counter[Any] = Counter()
    for message in context[calls_end:end]:
        answered.update(reading.answers(message))
    seen: Counter[Any] = Counter()
    missing: list[tuple[Any, Any, str | None]] = []
    occurrences: list[int] = []
    for caller, call_id, name in calls:
        occurrence = seen[call_id]
        seen[call_id] += 1
        if occurrence >= answered[call_id]:
            missing.append((caller, call_id, name))
            occurrences.append(occurrence)
    if not missing:
        return []
    notices = reading.notices(missing, notice)
    if len(notices) == len(missing):
        ids = [
            closing_id(_id_of(caller), str(call_id), occurrence)
            for (caller, call_id, _), occurrence in zip(missing, occurrences, strict=True)
        ]
    else:
        joined = "\x00".join(str(call_id) for _, call_id, _ in missing)
        ids = [closing_id(_id_of(missing[0][0]), joined, k) for k in range(len(notices))]
    return [_with_id(message, identifier) for message, identifier in zip(notices, ids, strict=True)]
