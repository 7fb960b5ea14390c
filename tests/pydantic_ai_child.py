"""A child process for the pydantic-ai adapter tests: runs the real framework on one session.

Its output is its result for the parent test (hence print).

``python pydantic_ai_child.py MODE ROOT SESSION_ID``. Modes:

- ``history-turns``: two turns of an agent with parallel tool calls, the history saved
  with `PydanticAIHistory.save` after every step of the run (as an agent that must lose
  nothing saves); prints the final history as pydantic-ai's JSON;
- ``history-kill``: one plain turn, then a turn whose model calls ``add`` and ``boom`` in
  parallel; ``boom`` calls ``os._exit(17)``: the process dies after the response with
  the calls was saved and before their results exist;
- ``history-dump``: prints ``PydanticAIHistory.load(SESSION_ID, repair=False)`` as JSON;
- ``harness-turns``: the ACP agent of pydantic-ai-harness with a `JsonlSessionStore`: a
  new session (its id is SESSION_ID's value, given to the store), a turn with an image, a
  turn with a tool call; prints ``{"history": ..., "transcript": ...}`` as JSON;
- ``harness-kill``: reopens the session (``session/load``) and runs a turn whose tool
  calls ``os._exit(17)``;
- ``harness-dump``: prints what a new `JsonlSessionStore` loads, as ``harness-turns`` does;
- ``harness-save``: saves the state read as JSON from stdin (``{"history", "transcript",
  "model"}``) and prints ``saved``.
"""

# ruff: noqa: T201  (what the child prints is what the parent test reads)
from __future__ import annotations

import asyncio
import base64
import json
import os
import sys
import warnings
from collections.abc import AsyncIterator
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelResponse,
    TextPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel

from jsonl_store.adapters.pydantic_ai import PydanticAIHistory

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256))


def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The model: asks for tools in parallel on a prompt saying "tools", answers otherwise."""
    last = messages[-1]
    prompt = " ".join(str(part.content) for part in last.parts if isinstance(part, UserPromptPart))
    if "tools" in prompt:
        names = [tool.name for tool in info.function_tools]
        calls = [ToolCallPart("add", {"a": 6, "b": 7}, tool_call_id="c-add")]
        if "boom" in names:
            calls.append(ToolCallPart("boom", {}, tool_call_id="c-boom"))
        return ModelResponse(parts=calls, model_name="script")
    return ModelResponse(parts=[TextPart(f"done after {len(messages)} messages")], model_name="script")


async def stream_script(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
    """`script`, streamed (the harness streams every request)."""
    response = script(messages, info)
    for index, part in enumerate(response.parts):
        if isinstance(part, TextPart):
            yield part.content
        elif isinstance(part, ToolCallPart):
            yield {
                index: DeltaToolCall(
                    name=part.tool_name, json_args=part.args_as_json_str(), tool_call_id=part.tool_call_id
                )
            }


def agent(*, boom: bool) -> Agent[None, str]:
    built: Agent[None, str] = Agent(FunctionModel(script, stream_function=stream_script))

    @built.tool_plain
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    if boom:

        @built.tool_plain(name="boom")
        def die() -> str:
            """Dies, as a process killed inside a tool does."""
            sys.stdout.flush()
            os._exit(17)

    return built


def dumps(messages: list[ModelMessage]) -> str:
    return ModelMessagesTypeAdapter.dump_json(messages).decode()


async def saved_turn(history: PydanticAIHistory, sid: str, built: Agent[None, str], prompt: str) -> None:
    """One run, the history saved after each step of it."""
    async with built.iter(prompt, message_history=history.load(sid)) as run:
        async for _ in run:
            history.save(sid, run.all_messages())
    history.save(sid, run.all_messages())


def history_mode(mode: str, root: str, sid: str) -> None:
    history = PydanticAIHistory(root)
    if mode == "history-turns":
        built = agent(boom=False)
        asyncio.run(saved_turn(history, sid, built, "hello"))
        asyncio.run(saved_turn(history, sid, built, "use the tools"))
        print(dumps(history.load(sid, repair=False)))
    elif mode == "history-kill":
        built = agent(boom=True)
        asyncio.run(saved_turn(history, sid, built, "hello"))
        asyncio.run(saved_turn(history, sid, built, "use the tools"))
        print("not killed")
    elif mode == "history-dump":
        print(dumps(history.load(sid, repair=False)))


def harness_mode(mode: str, root: str, sid: str) -> None:
    warnings.simplefilter("ignore")  # the harness's ACP part warns that it is experimental
    from acp import schema
    from pydantic import TypeAdapter
    from pydantic_ai_harness.experimental.acp import PydanticAIACPAgent, StoredSession
    from pydantic_ai_harness.experimental.acp._session import SessionUpdate

    from jsonl_store.adapters.pydantic_ai_harness import JsonlSessionStore

    updates: TypeAdapter[list[Any]] = TypeAdapter(list[SessionUpdate])
    store = JsonlSessionStore(root)

    class Client:
        async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
            pass

    def state(stored: StoredSession | None) -> str:
        assert stored is not None
        return json.dumps(
            {
                "history": json.loads(dumps(stored.messages)),
                "transcript": updates.dump_python(stored.updates, mode="json"),
                "model": stored.model,
            }
        )

    async def turns() -> None:
        acp_agent = PydanticAIACPAgent(agent(boom=mode == "harness-kill"), session_store=store)
        acp_agent.on_connect(Client())  # type: ignore[arg-type]
        text = schema.TextContentBlock(type="text", text="")
        if mode == "harness-turns":
            created = await acp_agent.new_session(cwd="/", mcp_servers=[])
            image = schema.ImageContentBlock(
                type="image", data=base64.b64encode(PNG).decode(), mime_type="image/png"
            )
            await acp_agent.prompt(created.session_id, [text.model_copy(update={"text": "look"}), image])
            await acp_agent.prompt(created.session_id, [text.model_copy(update={"text": "use the tools"})])
            print(created.session_id)
            print(state(await store.load(created.session_id)))
        else:  # harness-kill
            await acp_agent.load_session(cwd="/", session_id=sid, mcp_servers=[])
            await acp_agent.prompt(sid, [text.model_copy(update={"text": "use the tools"})])
            print("not killed")

    if mode == "harness-dump":
        print(state(asyncio.run(store.load(sid))))
    elif mode == "harness-save":
        given = json.loads(sys.stdin.read())
        session = StoredSession(
            messages=ModelMessagesTypeAdapter.validate_json(json.dumps(given["history"])),
            updates=updates.validate_python(given["transcript"]),
            model=given["model"],
        )
        asyncio.run(store.save(sid, session))
        print("saved")
    else:
        asyncio.run(turns())


if __name__ == "__main__":
    MODE, ROOT, SID = sys.argv[1:4]
    if MODE.startswith("history-"):
        history_mode(MODE, ROOT, SID)
    else:
        harness_mode(MODE, ROOT, SID)
