"""A `Dialect` for pydantic-ai's ``ModelMessage`` history, written the way an adapter would.

It shows that the protocol fits a format this library does not know: calls are the
``ToolCallPart``s of a ``ModelResponse``; results are the ``ToolReturnPart``s, and the
``RetryPromptPart``s that name a tool, of the ``ModelRequest``s after it (a retry prompt
without a tool name is feedback on the whole response, no tool result), matched by
``tool_call_id``; a request keeps its other parts when its results are dropped. This is
the same reading as pydantic-ai's own ``_is_tool_result_part``
(https://github.com/pydantic/pydantic-ai/blob/main/pydantic_ai_slim/pydantic_ai/messages.py).
Importing this module needs pydantic-ai (``pydantic-ai-slim``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, TypeGuard

from pydantic_ai.messages import ModelRequest, ModelResponse, RetryPromptPart, ToolCallPart, ToolReturnPart


def is_result(part: Any) -> TypeGuard[ToolReturnPart | RetryPromptPart]:
    """True for a request part that answers a tool call."""
    return isinstance(part, ToolReturnPart) or (
        isinstance(part, RetryPromptPart) and part.tool_name is not None
    )


class PydanticAIDialect:
    """pydantic-ai ``ModelRequest`` / ``ModelResponse`` messages."""

    def calls(self, message: Any) -> Sequence[tuple[Any, str | None]]:
        if not isinstance(message, ModelResponse):
            return []
        return [
            (part.tool_call_id, part.tool_name) for part in message.parts if isinstance(part, ToolCallPart)
        ]

    def answers(self, message: Any) -> Sequence[Any]:
        if not isinstance(message, ModelRequest):
            return []
        return [part.tool_call_id for part in message.parts if is_result(part)]

    def keep_answers(self, message: Any, keep: Sequence[bool]) -> Any | None:
        flags = iter(keep)
        parts = [part for part in message.parts if not is_result(part) or next(flags)]
        return dataclasses.replace(message, parts=parts) if parts else None

    def joins(self, previous: Any, message: Any) -> bool:
        return False

    def notices(self, unanswered: Sequence[tuple[Any, Any, str | None]], notice: str) -> list[Any]:
        return [
            ModelRequest(
                parts=[
                    ToolReturnPart(tool_name=name or "", content=notice, tool_call_id=call_id)
                    for _, call_id, name in unanswered
                ]
            )
        ]


PYDANTIC_AI = PydanticAIDialect()
