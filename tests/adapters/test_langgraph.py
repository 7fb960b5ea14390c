"""JsonlCheckpointSaver under real LangGraph graphs, offline, side by side with LangGraph's InMemorySaver.

The graphs (`langgraph_agent`) are LangGraph's own ``StateGraph`` with ``MessagesState``
and ``ToolNode``, the model langchain_core's ``GenericFakeChatModel``: nothing of LangGraph
is mocked. The conformance suite runs in test_langgraph_conformance.py; the crash test in
tests/crash/test_langgraph_kill.py.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph.checkpoint.base", reason='needs the extra: pip install -e ".[langgraph]"')

from fake_secrets import SECRETS
from helpers import cli
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph_agent import question, tool_loop

from jsonl_store import CorruptSession, InvalidArgument, Redaction, SessionStore, encode_session_id
from jsonl_store.adapters.langgraph import JsonlCheckpointSaver


def config(thread: str = "thread-1") -> Any:
    return {"configurable": {"thread_id": thread}, "recursion_limit": 1000}


def same(messages: list[BaseMessage]) -> list[BaseMessage]:
    """Messages without their ids (the fake model gives each run's messages fresh ones)."""
    return [m.model_copy(update={"id": None}) for m in messages]


def session_bytes(directory: Path) -> int:
    """Bytes of a session's files: the raw log, its blobs, meta.json."""
    return sum(p.stat().st_size for p in directory.rglob("*") if p.is_file() and p.name != ".lock")


def test_a_200_message_tool_calling_thread_appends_the_same_bytes_per_step_at_its_end_as_at_its_start(
    tmp_path: Path,
) -> None:
    """Each super-step costs bytes for its new message only: step 200 writes no more than step 2."""
    graph = tool_loop(JsonlCheckpointSaver(str(tmp_path)), calls=100)
    steps = graph.stream(question(), config(), stream_mode="updates", durability="sync")
    sizes = [session_bytes(tmp_path / "thread-1") for _ in steps]
    assert len(graph.get_state(config()).values["messages"]) == 202
    steps = [after - before for before, after in itertools.pairwise(sizes)]
    # A step's bytes are the checkpoint record (a constant size) plus the one message it
    # added: the same at 200 messages as at 2. Writing the whole list would make the last
    # steps cost about 100 times the first.
    early, late = max(steps[1:21]), max(steps[-21:-1])
    assert late <= early * 1.1, (early, late)
    assert sizes[-1] < 1_500_000


def test_a_thread_read_back_by_a_new_saver_is_the_state_langgraphs_in_memory_saver_keeps(
    tmp_path: Path,
) -> None:
    """Messages, checkpoint history and next step are what InMemorySaver gives for the same run."""
    tool_loop(JsonlCheckpointSaver(str(tmp_path)), calls=5).invoke(question(), config())
    memory = tool_loop(InMemorySaver(), calls=5)
    memory.invoke(question(), config())
    ours = tool_loop(JsonlCheckpointSaver(str(tmp_path)), calls=5)
    state, expected = ours.get_state(config()), memory.get_state(config())
    assert same(state.values["messages"]) == same(expected.values["messages"])
    assert state.next == expected.next == ()
    history = [s.metadata for s in ours.get_state_history(config())]
    assert [(m["step"], m["source"]) for m in history] == [
        (m["step"], m["source"]) for m in (s.metadata for s in memory.get_state_history(config()))
    ]


def test_a_second_turn_in_a_new_process_stores_only_its_new_messages(tmp_path: Path) -> None:
    """A saver that did not write the thread still appends the new tail, not the whole list."""
    tool_loop(JsonlCheckpointSaver(str(tmp_path)), calls=3).invoke(question(), config())
    graph = tool_loop(JsonlCheckpointSaver(str(tmp_path)), calls=6)
    graph.invoke({"messages": [HumanMessage(content="And three more.")]}, config())
    messages = graph.get_state(config()).values["messages"]
    records = list(SessionStore(str(tmp_path)).records("thread-1"))
    shown = [r.message for r in records if isinstance(r.message, dict) and r.message["role"] != "system"]
    # Each message of the thread is in the log once, as the store's own message.
    assert len(shown) == len(messages) == 14
    assert [m["role"] for m in shown[:3]] == ["user", "assistant", "tool"]


def test_an_async_graph_keeps_the_state_a_sync_one_does(tmp_path: Path) -> None:
    """ainvoke through the a* methods gives the state invoke gives, and a sync saver reads it."""
    asyncio.run(tool_loop(JsonlCheckpointSaver(str(tmp_path)), calls=4).ainvoke(question(), config("a")))
    tool_loop(JsonlCheckpointSaver(str(tmp_path)), calls=4).invoke(question(), config("s"))
    graph = tool_loop(JsonlCheckpointSaver(str(tmp_path)), calls=4)
    assert same(graph.get_state(config("a")).values["messages"]) == same(
        graph.get_state(config("s")).values["messages"]
    )


def test_a_message_replaced_by_id_is_read_back_replaced(tmp_path: Path) -> None:
    """update_state that rewrites a message (not an append) stores the new list, and reads it back."""
    graph = tool_loop(JsonlCheckpointSaver(str(tmp_path)), calls=2)
    graph.invoke(question(), config())
    graph.update_state(
        config(), {"messages": [HumanMessage(content="Look other numbers up.", id="question")]}
    )
    again = tool_loop(JsonlCheckpointSaver(str(tmp_path)), calls=2).get_state(config())
    messages = again.values["messages"]
    assert messages[0].content == "Look other numbers up."
    assert [type(m).__name__ for m in messages] == [
        "HumanMessage",
        *["AIMessage", "ToolMessage"] * 2,
        "AIMessage",
    ]


def test_any_thread_id_is_a_thread_and_list_gives_it_back(tmp_path: Path) -> None:
    """A thread id with ':' and '/' is stored under its encoded name and listed as given."""
    saver = JsonlCheckpointSaver(str(tmp_path))
    thread = "user:42/thread 7"
    tool_loop(saver, calls=1).invoke(question(), config(thread))
    assert (tmp_path / encode_session_id(thread)).is_dir()
    threads = {t.config["configurable"]["thread_id"] for t in saver.list(None)}
    assert threads == {thread}
    saver.delete_thread(thread)
    assert list(saver.list(None)) == []
    assert saver.get_tuple(config(thread)) is None


def test_a_config_without_a_thread_id_is_a_typed_error(tmp_path: Path) -> None:
    """get_tuple and put_writes without configurable.thread_id raise InvalidArgument (a ValueError)."""
    saver = JsonlCheckpointSaver(str(tmp_path))
    with pytest.raises(InvalidArgument, match="thread_id"):
        saver.get_tuple({"configurable": {}})
    with pytest.raises(ValueError, match="thread_id"):
        saver.put_writes({}, [("a", 1)], "task")


def test_a_damaged_langgraph_record_is_a_corrupt_session_not_a_traceback(tmp_path: Path) -> None:
    """A record whose langgraph entry lost a field raises CorruptSession naming its sequence."""
    store = SessionStore(str(tmp_path))
    store.append("t", {"role": "system", "content": "x", "langgraph": {"op": "value", "ns": ""}})
    with pytest.raises(CorruptSession, match="#1"):
        JsonlCheckpointSaver(str(tmp_path)).get_tuple(config("t"))


def test_jsonl_store_show_search_and_export_read_a_thread_as_its_conversation(tmp_path: Path) -> None:
    """`show` prints the question, each tool call with its result and the answer; search finds a result once; export writes HTML."""
    tool_loop(JsonlCheckpointSaver(str(tmp_path / "store")), calls=2).invoke(question(), config())
    shown = cli("--root", "store", "show", "thread-1", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "Look some numbers up." in shown.stdout
    assert 'lookup({"n":0})' in shown.stdout and 'lookup({"n":1})' in shown.stdout
    assert "the record for 1: lorem ipsum" in shown.stdout
    assert "Done: 2 lookups." in shown.stdout
    listed = cli("--root", "store", "ls", cwd=tmp_path)
    assert listed.returncode == 0 and "thread-1" in listed.stdout
    found = cli("--root", "store", "search", "record for 1", cwd=tmp_path)
    assert found.returncode == 0 and found.stdout.startswith("thread-1 #")  # the tool result, once
    assert found.stdout.count("\n") == 1
    exported = cli("--root", "store", "export", "thread-1", "--format", "html", "-o", "t.html", cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    page = (tmp_path / "t.html").read_text(encoding="utf-8")
    assert "Done: 2 lookups." in page and "the record for 1: lorem ipsum" in page


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_thread_committed_to_git_resumes_in_a_clone(tmp_path: Path) -> None:
    """A thread's files committed and cloned give the same state, and the clone's graph goes on."""
    root = tmp_path / "repo"
    tool_loop(JsonlCheckpointSaver(str(root)), calls=2).invoke(question(), config())
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "a thread"]):
        subprocess.run(["git", *argv], cwd=root, env=env, check=True, capture_output=True)
    status = subprocess.run(["git", "status", "--porcelain"], cwd=root, check=True, capture_output=True)
    assert status.stdout == b""
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(root), str(clone)], check=True, capture_output=True)
    original = tool_loop(JsonlCheckpointSaver(str(root)), calls=2).get_state(config())
    graph = tool_loop(JsonlCheckpointSaver(str(clone)), calls=3)
    assert same(graph.get_state(config()).values["messages"]) == same(original.values["messages"])
    graph.invoke({"messages": [HumanMessage(content="One more.")]}, config())
    last = graph.get_state(config()).values["messages"][-1]
    assert isinstance(last, AIMessage) and last.content == "Done: 3 lookups."


def test_a_copied_thread_goes_on_apart_from_its_source(tmp_path: Path) -> None:
    """copy_thread gives the target the whole history; a turn on the copy leaves the source as it was."""
    saver = JsonlCheckpointSaver(str(tmp_path))
    tool_loop(saver, calls=2).invoke(question(), config("source"))
    saver.copy_thread("source", "copy")
    graph = tool_loop(JsonlCheckpointSaver(str(tmp_path)), calls=4)  # one more call on the copy
    source = graph.get_state(config("source")).values["messages"]
    assert same(graph.get_state(config("copy")).values["messages"]) == same(source)
    assert len(list(graph.get_state_history(config("copy")))) == len(
        list(graph.get_state_history(config("source")))
    )
    graph.invoke({"messages": [HumanMessage(content="One more.")]}, config("copy"))
    assert len(graph.get_state(config("copy")).values["messages"]) == len(source) + 4
    assert same(graph.get_state(config("source")).values["messages"]) == same(source)


def test_a_secret_in_a_message_is_redacted_in_the_serialized_state_too_and_reported(tmp_path: Path) -> None:
    """No byte of the log holds the secret, base64 included; LangGraph reads the marker; the thread still grows by its tail."""
    _, text, redacted = SECRETS[0]
    secret = text.split()[1]
    notices: list[Redaction] = []
    saver = JsonlCheckpointSaver(str(tmp_path), on_redact=notices.append)
    graph = tool_loop(saver, calls=2)
    graph.invoke(question(f"Look some numbers up: {text}"), config())
    messages = graph.get_state(config()).values["messages"]
    assert messages[0].content == f"Look some numbers up: {redacted}"
    assert notices and notices[0].kinds.get("aws-access-key")
    records = list(SessionStore(str(tmp_path)).records("thread-1"))
    for record in records:
        line = json.dumps(record.message)
        assert secret not in line
        entry = record.message.get("langgraph") if isinstance(record.message, dict) else None
        if entry and "data" in entry:
            assert secret.encode() not in base64.b64decode(entry["data"][1])
    shown = [r.message for r in records if isinstance(r.message, dict) and r.message["role"] != "system"]
    assert len(shown) == len(messages) == 6  # each message once: redaction did not break the tail


def test_two_savers_taking_turns_on_one_thread_each_read_the_others_turns(tmp_path: Path) -> None:
    """Two savers (as two processes would) alternate turns: each sees the other's, and every message is stored once."""
    first = tool_loop(JsonlCheckpointSaver(str(tmp_path)), calls=9)
    second = tool_loop(JsonlCheckpointSaver(str(tmp_path)), calls=9)
    first.invoke(question(), config())
    for turn, graph in enumerate([second, first, second]):
        graph.invoke({"messages": [HumanMessage(content=f"turn {turn}")]}, config())
    messages = first.get_state(config()).values["messages"]
    assert same(messages) == same(second.get_state(config()).values["messages"])
    assert [m.content for m in messages if isinstance(m, HumanMessage)] == [
        "Look some numbers up.",
        "turn 0",
        "turn 1",
        "turn 2",
    ]
    records = list(SessionStore(str(tmp_path)).records("thread-1"))
    shown = [r.message for r in records if isinstance(r.message, dict) and r.message["role"] != "system"]
    assert len(shown) == len(messages)


def test_a_thread_deleted_and_made_again_by_another_saver_is_read_afresh(tmp_path: Path) -> None:
    """A saver that indexed a thread reads the new one after another saver deleted and rewrote it."""
    saver = JsonlCheckpointSaver(str(tmp_path))
    old = tool_loop(saver, calls=3)
    old.invoke(question(), config())
    other = JsonlCheckpointSaver(str(tmp_path))
    other.delete_thread("thread-1")
    tool_loop(other, calls=3).invoke(question("A longer question this time."), config())
    messages = old.get_state(config()).values["messages"]
    assert messages[0].content == "A longer question this time."
    old.invoke({"messages": [HumanMessage(content="And then?")]}, config())
    again = tool_loop(JsonlCheckpointSaver(str(tmp_path)), calls=3).get_state(config())
    assert [m.content for m in again.values["messages"]][:1] == ["A longer question this time."]
    assert again.values["messages"][-2].content == "And then?"


def test_a_message_json_cannot_hold_is_stored_and_read_back_as_langgraphs_serializer_gives_it(
    tmp_path: Path,
) -> None:
    """NaN, bytes, tuples and a "$blob" key in a message: the put succeeds, the state is InMemorySaver's, show prints it."""
    odd = AIMessage(
        content=[{"type": "text", "text": "odd values", "score": float("inf"), "$blob": 1}],
        tool_calls=[{"name": "lookup", "args": {"n": 1, "raw": b"\x00\x01", "pair": (1, 2)}, "id": "c9"}],
    )
    states = []
    for saver in (JsonlCheckpointSaver(str(tmp_path / "store")), InMemorySaver()):
        graph = tool_loop(saver, calls=0)
        graph.invoke(question(), config())
        graph.update_state(config(), {"messages": [odd]})
        states.append(graph.get_state(config()).values["messages"])
    ours = tool_loop(JsonlCheckpointSaver(str(tmp_path / "store")), calls=0).get_state(config())
    assert same(ours.values["messages"]) == same(states[1]) == same(states[0])
    shown = cli("--root", "store", "show", "thread-1", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "odd values" in shown.stdout and "lookup(" in shown.stdout


def test_an_interrupted_graph_resumes_with_a_new_saver_and_a_command(tmp_path: Path) -> None:
    """interrupt() is kept as a pending write; another saver instance resumes it with Command(resume=...)."""
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.types import Command, interrupt

    def ask(state: MessagesState) -> dict[str, Any]:
        answer = interrupt("Approve the lookup?")
        return {"messages": [AIMessage(content=f"approved: {answer}")]}

    def build(saver: JsonlCheckpointSaver) -> Any:
        graph = StateGraph(MessagesState)
        graph.add_node("ask", ask)
        graph.add_edge(START, "ask")
        graph.add_edge("ask", END)
        return graph.compile(checkpointer=saver)

    first = build(JsonlCheckpointSaver(str(tmp_path)))
    first.invoke(question(), config())
    [task] = first.get_state(config()).tasks
    assert [i.value for i in task.interrupts] == ["Approve the lookup?"]
    second = build(JsonlCheckpointSaver(str(tmp_path)))
    assert [i.value for i in second.get_state(config()).tasks[0].interrupts] == ["Approve the lookup?"]
    second.invoke(Command(resume="yes"), config())
    assert second.get_state(config()).values["messages"][-1].content == "approved: yes"
    assert second.get_state(config()).next == ()


def test_a_subgraph_interrupted_inside_keeps_its_namespace_and_resumes(tmp_path: Path) -> None:
    """A subgraph's checkpoints go to its namespace of the thread's session; the run resumes inside it."""
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.types import Command, interrupt

    def inner(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(content=f"inner got: {interrupt('more?')}")]}

    def build(saver: JsonlCheckpointSaver) -> Any:
        sub = StateGraph(MessagesState)
        sub.add_node("inner", inner)
        sub.add_edge(START, "inner")
        sub.add_edge("inner", END)
        outer = StateGraph(MessagesState)
        outer.add_node("sub", sub.compile())
        outer.add_edge(START, "sub")
        outer.add_edge("sub", END)
        return outer.compile(checkpointer=saver)

    saver = JsonlCheckpointSaver(str(tmp_path))
    build(saver).invoke(question(), config())
    namespaces = {t.config["configurable"]["checkpoint_ns"] for t in saver.list(config())}
    assert "" in namespaces and any(ns.startswith("sub:") for ns in namespaces)
    graph = build(JsonlCheckpointSaver(str(tmp_path)))
    graph.invoke(Command(resume="yes"), config())
    assert graph.get_state(config()).values["messages"][-1].content == "inner got: yes"
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith(".")] == ["thread-1"]
