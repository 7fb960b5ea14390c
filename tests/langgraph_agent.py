"""LangGraph graphs the checkpointer tests run, offline, and the process the crash test kills.

``tool_loop`` is the usual agent: a chat model node and a ``ToolNode``, looping while the
model asks for a tool. The model is langchain_core's ``GenericFakeChatModel``, given each
turn the one reply the script says for the thread's length, so a thread resumed in
another process goes on as if it had never stopped. ``fan_out`` runs two tool nodes in
one super-step (parallel tasks), so a kill can land after one task's writes were saved
and before the other finished.

Run as ``python langgraph_agent.py ROOT THREAD MARKS ROUNDS start`` it is the crash
test's child: it runs ``fan_out`` on ``JsonlCheckpointSaver(ROOT)`` and the slow node of
round 2 prints ``in-slow`` and waits to be killed. With ``resume`` instead of ``start`` it
goes on from the thread's last checkpoint (``invoke(None)``) and prints the messages'
contents as JSON. With ``loop`` it runs ``tool_loop`` with ROUNDS calls, or resumes it
from where a kill left it, printing ``started`` first. Every node appends its name and round to the file MARKS when it runs,
so the parent can tell which tasks ran again after a resume.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

#: A tool result's text: a few hundred bytes, as a real lookup gives.
RESULT = "the record for {n}: " + "lorem ipsum dolor sit amet " * 12


@tool
def lookup(n: int) -> str:
    """Look a number up."""
    return RESULT.format(n=n)


def reply(messages: Sequence[BaseMessage], calls: int) -> AIMessage:
    """What the scripted model says next: a tool call until ``calls`` were made, then an answer."""
    made = sum(1 for m in messages if isinstance(m, AIMessage))
    if made < calls:
        call = {"name": "lookup", "args": {"n": made}, "id": f"call_{made}", "type": "tool_call"}
        return AIMessage(content=f"Let me look {made} up.", tool_calls=[call])
    return AIMessage(content=f"Done: {made} lookups.")


def tool_loop(checkpointer: BaseCheckpointSaver[Any], calls: int) -> Any:
    """The agent loop: model → tools → model ... until the model answers without a call."""

    def agent(state: MessagesState) -> dict[str, Any]:
        model = GenericFakeChatModel(messages=iter([reply(state["messages"], calls)]))
        return {"messages": [model.invoke(state["messages"])]}

    def route(state: MessagesState) -> str:
        last = state["messages"][-1]
        return "tools" if isinstance(last, AIMessage) and last.tool_calls else END

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode([lookup]))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", route, ["tools", END])
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer=checkpointer)


def fan_out(checkpointer: BaseCheckpointSaver[Any], rounds: int, on_run: Callable[[str, int], None]) -> Any:
    """Each round: the model calls two tools, run by two nodes in the same super-step."""

    def agent(state: MessagesState) -> dict[str, Any]:
        made = sum(1 for m in state["messages"] if isinstance(m, AIMessage))
        on_run("agent", made)
        if made >= rounds:
            return {"messages": [AIMessage(content="all rounds done")]}
        calls: list[Any] = [
            {"name": name, "args": {}, "id": f"{name}_{made}", "type": "tool_call"}
            for name in ("fast", "slow")
        ]
        return {"messages": [AIMessage(content=f"round {made}", tool_calls=calls)]}

    def answer(name: str, state: MessagesState) -> dict[str, Any]:
        made = sum(1 for m in state["messages"] if isinstance(m, AIMessage)) - 1
        on_run(name, made)
        return {"messages": [ToolMessage(content=f"{name} {made}", tool_call_id=f"{name}_{made}")]}

    def fast(state: MessagesState) -> dict[str, Any]:
        return answer("fast", state)

    def slow(state: MessagesState) -> dict[str, Any]:
        return answer("slow", state)

    def route(state: MessagesState) -> Any:
        last = state["messages"][-1]
        return ["fast", "slow"] if isinstance(last, AIMessage) and last.tool_calls else END

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("fast", fast)
    graph.add_node("slow", slow)
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", route, ["fast", "slow", END])
    graph.add_edge(["fast", "slow"], "agent")
    return graph.compile(checkpointer=checkpointer)


def question(text: str = "Look some numbers up.") -> dict[str, Any]:
    return {"messages": [HumanMessage(content=text, id="question")]}


def _child(root: str, thread: str, marks: str, rounds: int, mode: str) -> None:
    """The crash test's victim (round 2's slow node stops for the kill), or its resumption."""
    import json

    from jsonl_store.adapters.langgraph import JsonlCheckpointSaver

    def on_run(name: str, made: int) -> None:
        with open(marks, "a", encoding="utf-8") as out:
            out.write(f"{name} {made}\n")
        if mode == "start" and name == "slow" and made == 2:
            time.sleep(0.5)  # the fast node's writes are saved meanwhile (a parallel task)
            sys.stdout.write("in-slow\n")  # the child's report to the test, through a pipe
            sys.stdout.flush()
            time.sleep(60)  # killed here

    saver = JsonlCheckpointSaver(root, durability="fsync")
    config: Any = {"configurable": {"thread_id": thread}, "recursion_limit": 1000}
    if mode == "loop":  # the tool loop, started or resumed from wherever a kill left it
        graph = tool_loop(saver, rounds)
        saved = graph.get_state(config)
        sys.stdout.write("started\n")
        sys.stdout.flush()
        if not saved.values:
            graph.invoke(question(), config)
        elif saved.tasks:  # unfinished (`next` leaves out the tasks whose writes were saved)
            graph.invoke(None, config)
        messages = graph.get_state(config).values["messages"]
    else:
        messages = fan_out(saver, rounds, on_run).invoke(question() if mode == "start" else None, config)[
            "messages"
        ]
    sys.stdout.write(json.dumps([m.content for m in messages]) + "\n")


if __name__ == "__main__":
    _child(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5])
