"""One zett-agent request in a process of its own, for tests/adapters/test_zett.py.

    python zett_scenario.py BACKEND ROOT SESSION ACTION [PROMPT]

BACKEND is ``jsonl`` (`JsonlSessionStorage` at ROOT), ``sqlite`` (zett's own
``SQLiteSessionExtension``, ``ROOT/sessions.sqlite3``) or ``both`` (the two extensions on
one agent, so each storage is handed the very same appends); ACTION is ``run`` (a request
with PROMPT), ``resume`` (``agent.resume()``), ``compact`` (``agent.compact()``) or
``provider`` (a request with PROMPT to zett's real ``OpenAIProvider``, over an offline
transport that keeps the JSON body it would send in ``ROOT/openai.json``) or ``dump``
(print the session as zett's storage loads it and its whole raw log, pickled, in hex). Every request
the fake model gets is added to ``ROOT/requests.pickle``. A prompt containing "crash"
makes the model call the ``crash`` tool, which ends the process with ``os._exit(3)``
while the ``add`` call of the same batch may already have its result.

The model is a fake, as zett's docs write one (``AgentModel``: ``retry`` and
``stream``): its answer depends only on the request, so the same history gives the
same reply in every process.
"""

from __future__ import annotations

import asyncio
import json
import os
import pickle
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from zett_agent.agent import Agent, AgentRunConfig
from zett_agent.extensions.compaction import CompactionExtension
from zett_agent.extensions.sqlite import SQLiteSessionExtension
from zett_agent.messages import AgentMessage, AssistantMessage, ToolCall, ToolMessage, UserMessage
from zett_agent.model import ModelEvent, ModelRequest, ModelResponse, ModelUsage, RetryOptions
from zett_agent.tools.base import tool

from jsonl_store.adapters.zett import JsonlSessionExtension


class FakeModel:
    """Asks for two tools after a user's message, answers with their results after them."""

    retry = RetryOptions(max_retries=0)

    def __init__(self, log: Path | None = None) -> None:
        self.log = log

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        if self.log is not None:
            requests = pickle.loads(self.log.read_bytes()) if self.log.exists() else []
            requests.append(list(request.messages))
            self.log.write_bytes(pickle.dumps(requests))
        yield ModelEvent.completed(
            ModelResponse(
                self.reply(request),
                usage=ModelUsage(
                    input_tokens=len(request.messages) * 10, output_tokens=7, cache_read_tokens=4
                ),
            )
        )

    @staticmethod
    def reply(request: ModelRequest) -> AssistantMessage:
        if not request.tools:  # a compaction summary
            return AssistantMessage(content=f"Summary of {len(request.messages)} messages.")
        last = request.messages[-1]
        turn = sum(isinstance(m, UserMessage | AgentMessage) for m in request.messages)
        if isinstance(last, ToolMessage):
            results = [m.text for m in request.messages if isinstance(m, ToolMessage)]
            return AssistantMessage(content="Results: " + ", ".join(results), provider="fake", model="fake-1")
        second = "crash" if isinstance(last, UserMessage) and "crash" in last.text else "add"
        return AssistantMessage(
            content="",
            reasoning=f"turn {turn}",
            tool_calls=(
                ToolCall(f"call-{turn}-a", "add", {"a": turn, "b": 2}),
                ToolCall(f"call-{turn}-b", second, {"a": turn, "b": 3}),
            ),
            replay_blocks=({"type": "signed", "data": f"opaque-{turn}"},),
        )


@tool(guidelines="Use it to add two numbers.")
async def add(a: int, b: int) -> str:
    """Add two numbers.

    Args:
        a: The first number.
        b: The second number.
    """
    return str(a + b)


@tool(guidelines="Never use it.")
async def crash(a: int, b: int) -> str:
    """Stop the process, as a kill inside a tool would.

    Args:
        a: Ignored.
        b: Ignored.
    """
    await asyncio.sleep(0.2)  # the other call of the batch finishes first
    os._exit(3)


def offline_openai(body_file: Path) -> Any:
    """zett's OpenAI provider, its HTTP transport replaced: it answers "ok" and keeps the request."""
    import httpx
    from zett_agent.providers.openai import OpenAIProvider

    def answer(request: httpx.Request) -> httpx.Response:
        body_file.write_bytes(request.content)
        chunk = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "gpt-test"}
        events = [
            {
                **chunk,
                "choices": [
                    {"index": 0, "delta": {"role": "assistant", "content": "ok"}, "finish_reason": None}
                ],
            },
            {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        ]
        text = "".join(f"data: {json.dumps(event)}\n\n" for event in events) + "data: [DONE]\n\n"
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=text.encode())

    return OpenAIProvider("gpt-test", "sk-offline", transport=httpx.MockTransport(answer))


def persistence(backend: str, root: Path) -> list[Any]:
    if backend not in ("jsonl", "sqlite", "both"):
        raise SystemExit(f"unknown backend {backend!r}")
    extensions: list[Any] = []
    if backend in ("jsonl", "both"):
        extensions.append(JsonlSessionExtension(root))
    if backend in ("sqlite", "both"):
        extensions.append(SQLiteSessionExtension(root / "sessions.sqlite3"))
    return extensions


async def main(backend: str, root: Path, session_id: str, action: str, prompt: str = "") -> None:
    extensions = persistence(backend, root)
    try:
        if action == "dump":
            [extension] = extensions
            view = await extension.storage.load(session_id)
            log = await extension.storage.list_raw_messages(session_id)
            sys.stdout.write(pickle.dumps((view, log)).hex())
            return
        model: Any = FakeModel(root / "requests.pickle")
        if action == "provider":
            model, action = offline_openai(root / "openai.json"), "run"
        compaction = [CompactionExtension(model, max_tokens=1, keep_recent_tokens=1, count_tokens=len)]
        agent = await Agent.create(
            model,
            config=AgentRunConfig(session_id=session_id),
            tools=[add, crash],
            extensions=[*extensions, *(compaction if action == "compact" else [])],
        )
        if action == "run":
            await agent.run(prompt, metadata={"source": "test"}, tags={"turn": prompt})
        elif action == "resume":
            await agent.resume()
        elif action == "compact":
            async for _ in agent.compact():
                pass
        else:
            raise SystemExit(f"unknown action {action!r}")
    finally:
        for extension in extensions:
            await extension.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], Path(sys.argv[2]), sys.argv[3], sys.argv[4], *sys.argv[5:]))
