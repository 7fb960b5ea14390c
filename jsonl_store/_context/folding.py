"""Records as a reader shows them: each message's parts, and every tool result folded under
the call it answers.

A transcript reads best as ``→ name(args)`` with the call's result right under it, even
where the result is stored in a later message (a ``role: "tool"`` message, an Anthropic
user message of ``tool_result`` blocks, a Responses output item). `fold` pairs them by id,
across messages, the way tool-batch repair matches them (spec §5): a result answers the
oldest call with its id that no earlier result answered. A result that answers no call
before it stays where it is, shown on its own. `show`, `tail`, the Markdown and HTML
exports read records through this one function.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict, deque
from collections.abc import Iterable, Sequence
from typing import Any

from .._format.records import RawMessageRecord
from .dialect_neutral import Dialect
from .dialects import message_parts
from .parts import Part, ToolCallPart, ToolResultPart


@dataclasses.dataclass(frozen=True, slots=True)
class Answer:
    """The result a call got: the part, and the record that holds it."""

    part: ToolResultPart
    record: RawMessageRecord


@dataclasses.dataclass(frozen=True, slots=True)
class Folded:
    """One record as shown: its parts, the result of each call among them (by the call's
    index in `parts`), and which of its result parts are already shown under a call."""

    record: RawMessageRecord
    parts: list[Part]
    answers: dict[int, Answer]
    #: Indexes (in `parts`) of results shown under an earlier call, not again here.
    folded: frozenset[int]

    @property
    def shown(self) -> list[tuple[int, Part]]:
        """The parts this record shows itself, with their index: all but the folded results."""
        return [(index, part) for index, part in enumerate(self.parts) if index not in self.folded]

    @property
    def empty(self) -> bool:
        """True when every part is a result shown under its call (nothing of its own to show)."""
        return bool(self.parts) and len(self.folded) == len(self.parts)


def fold(records: Iterable[RawMessageRecord], dialect: str | Dialect = "neutral") -> list[Folded]:
    """``records`` with their parts read in ``dialect`` and each result paired with its call."""
    read = [(record, message_parts(record.message, dialect)) for record in records]
    waiting: dict[Any, deque[tuple[int, int]]] = defaultdict(deque)
    answers: list[dict[int, Answer]] = [{} for _ in read]
    folded: list[set[int]] = [set() for _ in read]
    for position, (record, parts) in enumerate(read):
        for index, part in enumerate(parts):
            if isinstance(part, ToolResultPart) and _hashable(part.tool_call_id):
                queue = waiting.get(part.tool_call_id)
                if queue:
                    at, call_index = queue.popleft()
                    answers[at][call_index] = Answer(part, record)
                    if at != position:
                        folded[position].add(index)
            elif isinstance(part, ToolCallPart) and _hashable(part.id):
                waiting[part.id].append((position, index))
    return [
        Folded(record, parts, answers[position], frozenset(folded[position]))
        for position, (record, parts) in enumerate(read)
    ]


def _hashable(value: Any) -> bool:
    # Ids come from stored JSON: a hostile file may hold a list or an object there.
    return isinstance(value, (str, int, float, bool)) or value is None


def calls_and_results(parts: Sequence[Part]) -> tuple[int, int]:
    """How many tool calls and tool results ``parts`` hold."""
    calls = sum(isinstance(part, ToolCallPart) for part in parts)
    results = sum(isinstance(part, ToolResultPart) for part in parts)
    return calls, results
