"""A scripted model for the OpenAI Agents SDK: the SDK's ``Model`` interface, offline.

Each call takes the next list of output items from the script and records the input it
was given, as the SDK's own tests do with their fake model; ``stream_response`` yields the
one event the runner needs, ``response.completed``. Shared by the adapter tests and their
child processes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from agents import Model, ModelResponse, Usage
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)


def text(words: str, item_id: str = "msg_1") -> ResponseOutputMessage:
    """An assistant message output item."""
    return ResponseOutputMessage(
        id=item_id,
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(text=words, type="output_text", annotations=[])],
    )


def call(name: str, arguments: str, call_id: str) -> ResponseFunctionToolCall:
    """A function-call output item."""
    return ResponseFunctionToolCall(
        id=f"fc_{call_id}", call_id=call_id, type="function_call", name=name, arguments=arguments
    )


class FakeModel(Model):
    """Answers each model call with the next scripted list of output items."""

    def __init__(self, turns: list[list[Any]] | None = None) -> None:
        self.turns = list(turns or [])
        self.inputs: list[Any] = []

    def add(self, *outputs: Any) -> None:
        self.turns.append(list(outputs))

    def _next(self, model_input: Any) -> list[Any]:
        self.inputs.append(model_input)
        return self.turns.pop(0)

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        return ModelResponse(output=self._next(input), usage=Usage(), response_id=None)

    async def stream_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> AsyncIterator[Any]:
        output = self._next(input)
        response = Response(
            id="resp_1",
            created_at=0,
            model="fake",
            object="response",
            output=output,
            tool_choice="auto",
            tools=[],
            parallel_tool_calls=True,
        )
        yield ResponseCompletedEvent(type="response.completed", sequence_number=0, response=response)
