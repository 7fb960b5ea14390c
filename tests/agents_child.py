"""A child process for the adapter tests: runs the real Agents SDK on one session and exits.

``python agents_child.py MODE BACKEND ROOT SESSION_ID RUNNER``, BACKEND ``jsonl``
(JsonlSession below ROOT) or ``sqlite`` (SQLiteSession in ROOT/sqlite.db), RUNNER ``run``
or ``run_streamed``. Modes:

- ``turns``: the conversation of `TURNS` (tool calls in parallel), then a normal exit;
- ``kill``: one plain turn, then a turn whose second tool calls ``os._exit(17)`` while
  the first may have run: the process dies between the tool calls and their results;
- ``pop``: prints ``ready``, waits for a line on stdin, then pops until the session is
  empty, printing each item as a JSON line.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from agents import Agent, Runner, SQLiteSession, function_tool, set_tracing_disabled
from agents_fake_model import FakeModel, call, text

from jsonl_store.adapters.openai_agents import JsonlSession

set_tracing_disabled(True)


@function_tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@function_tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@function_tool
def crash() -> str:
    """Stops the process in the middle of a tool batch."""
    sys.stdout.flush()
    os._exit(17)


#: (user input, the model's outputs for each of its calls in that run)
TURNS: list[tuple[str, list[list[Any]]]] = [
    (
        "What is 1 + 2, and the weather in Paris and Oslo?",
        [
            [
                call("add", '{"a": 1, "b": 2}', "c1"),
                call("weather", '{"city": "Paris"}', "c2"),
                call("weather", '{"city": "Oslo"}', "c3"),
            ],
            [text("3; sunny in both.", "msg_a")],
        ],
    ),
    ("And 3 + 4?", [[call("add", '{"a": 3, "b": 4}', "c4")], [text("7.", "msg_b")]]),
    ("Thanks!", [[text("You're welcome.", "msg_c")]]),
]


def agent(model: FakeModel) -> Agent[Any]:
    return Agent(name="assistant", instructions="Be brief.", model=model, tools=[add, weather, crash])


def open_session(backend: str, root: str, session_id: str) -> Any:
    if backend == "jsonl":
        return JsonlSession(session_id, root)
    return SQLiteSession(session_id, str(Path(root) / "sqlite.db"))


async def run_turn(runner: str, the_agent: Agent[Any], user_input: str, session: Any) -> Any:
    if runner == "run":
        return (await Runner.run(the_agent, user_input, session=session)).final_output
    streamed = Runner.run_streamed(the_agent, user_input, session=session)
    async for _ in streamed.stream_events():
        pass
    return streamed.final_output


async def turns(backend: str, root: str, session_id: str, runner: str) -> None:
    session = open_session(backend, root, session_id)
    for user_input, outputs in TURNS:
        model = FakeModel(outputs)
        await run_turn(runner, agent(model), user_input, session)


async def kill(backend: str, root: str, session_id: str, runner: str) -> None:
    session = open_session(backend, root, session_id)
    await run_turn(runner, agent(FakeModel([[text("Hello!", "msg_0")]])), "Hi", session)
    model = FakeModel([[call("add", '{"a": 1, "b": 1}', "k1"), call("crash", "{}", "k2")], [text("never")]])
    await run_turn(runner, agent(model), "Add, then crash.", session)
    raise AssertionError("the crash tool did not stop the process")


async def pop(backend: str, root: str, session_id: str) -> None:
    session = open_session(backend, root, session_id)
    await session.get_items(1)  # opened and warm
    print("ready", flush=True)  # noqa: T201 (the parent reads it)
    sys.stdin.readline()  # all children start popping together
    while (item := await session.pop_item()) is not None:
        print(json.dumps(item), flush=True)  # noqa: T201 (the parent reads it)


def main(argv: list[str]) -> None:
    mode, backend, root, session_id, *rest = argv
    if mode == "turns":
        asyncio.run(turns(backend, root, session_id, rest[0]))
    elif mode == "kill":
        asyncio.run(kill(backend, root, session_id, rest[0]))
    elif mode == "pop":
        asyncio.run(pop(backend, root, session_id))
    else:
        raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
