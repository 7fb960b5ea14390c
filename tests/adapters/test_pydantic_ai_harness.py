"""JsonlSessionStore under pydantic-ai-harness's real ACP agent, offline, beside its InMemorySessionStore.

The harness's ``PydanticAIACPAgent`` runs for real (sessions, prompts with an image and
tool calls, ``session/load``) over pydantic-ai's ``FunctionModel``; the client is the
smallest object the agent streams to. Nothing of the harness is mocked. Crashes are real
processes dying inside a tool. Ran against pydantic-ai-harness 0.62.0 with
pydantic-ai-slim 2.62.0 and agent-client-protocol 0.11.1.
"""

from __future__ import annotations

import asyncio
import base64
import json
import subprocess
import sys
import threading
import warnings
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pydantic_ai_harness", reason='needs the extra: pip install -e ".[pydantic-ai-harness]"')
pytest.importorskip("acp", reason='needs the extra: pip install -e ".[pydantic-ai-harness]"')

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # the ACP part says it is experimental
    from acp import RequestError, schema
    from pydantic_ai_harness.experimental.acp import InMemorySessionStore, PydanticAIACPAgent, StoredSession

import pydantic_ai_child as child_module
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_ai.messages import (
    BinaryAudio,
    BinaryContent,
    BinaryImage,
    FilePart,
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolReturnPart,
    UserPromptPart,
)

from jsonl_store import CorruptSession, SessionStore, is_provider_valid
from jsonl_store.adapters.pydantic_ai import PYDANTIC_AI
from jsonl_store.adapters.pydantic_ai_harness import JsonlSessionStore
from jsonl_store.cli import main as cli_main
from jsonl_store.testing import SimulatedFileSystem, crash_states

CHILD = Path(__file__).parents[1] / "pydantic_ai_child.py"


class Client:
    """What an editor is to the agent here: it receives the session updates."""

    def __init__(self) -> None:
        self.updates: list[Any] = []

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)


def acp_agent(store: Any) -> tuple[PydanticAIACPAgent[None, str], Client]:
    agent = PydanticAIACPAgent(child_module.agent(boom=False), session_store=store)
    client = Client()
    agent.on_connect(client)  # type: ignore[arg-type]
    return agent, client


def text(value: str) -> schema.TextContentBlock:
    return schema.TextContentBlock(type="text", text=value)


async def conversation(store: Any) -> tuple[str, PydanticAIACPAgent[None, str]]:
    """A new session, a turn with an image, a turn with parallel-free tool calls."""
    agent, _ = acp_agent(store)
    created = await agent.new_session(cwd="/", mcp_servers=[])
    image = schema.ImageContentBlock(
        type="image", data=base64.b64encode(child_module.PNG).decode(), mime_type="image/png"
    )
    await agent.prompt(created.session_id, [text("look"), image])
    await agent.prompt(created.session_id, [text("use the tools")])
    return created.session_id, agent


def child(mode: str, root: Path, sid: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(CHILD), mode, str(root), sid],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def run(coro: Any) -> Any:
    return asyncio.run(coro)


# ---------------------------------------------------------------------------------------
# Round trips, beside the harness's own store
# ---------------------------------------------------------------------------------------


def test_a_session_loads_exactly_as_the_in_memory_store_keeps_it(tmp_path: Path) -> None:
    """The same conversation over both stores: messages, updates and model load equal to InMemorySessionStore's."""

    async def both() -> None:
        memory = InMemorySessionStore()
        sid_memory, _ = await conversation(memory)
        sid_jsonl, agent = await conversation(JsonlSessionStore(str(tmp_path)))
        expected = await memory.load(sid_memory)
        loaded = await JsonlSessionStore(str(tmp_path)).load(sid_jsonl)
        assert expected is not None and loaded is not None
        assert loaded.messages == agent.session_history(sid_jsonl)
        assert len(loaded.messages) == len(expected.messages) and len(loaded.updates) == len(expected.updates)
        assert [type(u) for u in loaded.updates] == [type(u) for u in expected.updates]
        assert loaded.model == expected.model
        assert any(p.part_kind == "tool-call" for m in loaded.messages for p in m.parts)

    run(both())


def test_session_load_replays_the_transcript_to_a_new_client(tmp_path: Path) -> None:
    """A new agent over a new store reopens the session: the client gets the stored updates, the history is restored."""

    async def reopen() -> None:
        sid, agent = await conversation(JsonlSessionStore(str(tmp_path)))
        history = agent.session_history(sid)
        stored = await JsonlSessionStore(str(tmp_path)).load(sid)
        assert stored is not None and history is not None
        second, client = acp_agent(JsonlSessionStore(str(tmp_path)))
        await second.load_session(cwd="/", session_id=sid, mcp_servers=[])
        assert client.updates == stored.updates and len(client.updates) > 0
        assert second.session_history(sid) == history
        await second.prompt(sid, [text("and now?")])  # the reopened session goes on
        after = await JsonlSessionStore(str(tmp_path)).load(sid)
        assert after is not None and after.messages[: len(history)] == history

    run(reopen())


def test_a_new_process_loads_what_another_saved(tmp_path: Path) -> None:
    """A child runs the ACP agent; the parent's store loads the same history, transcript and model."""
    done = child("harness-turns", tmp_path, "-")
    assert done.returncode == 0, done.stderr
    sid, state = done.stdout.splitlines()
    expected = json.loads(state)
    loaded = run(JsonlSessionStore(str(tmp_path)).load(sid))
    assert loaded is not None
    assert json.loads(ModelMessagesTypeAdapter.dump_json(loaded.messages)) == expected["history"]
    again = child("harness-dump", tmp_path, sid)
    assert json.loads(again.stdout) == expected


def test_an_empty_session_exists_and_an_unknown_one_is_none(tmp_path: Path) -> None:
    """new_session's empty save makes a session that loads as StoredSession(); an id never saved is None."""
    store = JsonlSessionStore(str(tmp_path))

    async def check() -> None:
        agent, _ = acp_agent(store)
        created = await agent.new_session(cwd="/", mcp_servers=[])
        assert await JsonlSessionStore(str(tmp_path)).load(created.session_id) == StoredSession()
        assert await store.load("never-saved") is None

    run(check())


def test_the_model_round_trips_and_a_change_is_one_record(tmp_path: Path) -> None:
    """A save that only changes the model appends one state record; load gives the new model."""
    store = JsonlSessionStore(str(tmp_path))
    messages: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart(content="hi", timestamp=TIME)])]
    store.save_sync("s", StoredSession(messages=messages, model="test:a"))
    before = SessionStore(str(tmp_path)).get_session("s")
    store.save_sync("s", StoredSession(messages=messages, model="test:b"))
    after = SessionStore(str(tmp_path)).get_session("s")
    assert before is not None and after is not None and after.message_count == before.message_count + 1
    assert JsonlSessionStore(str(tmp_path)).load_sync("s") == StoredSession(messages=messages, model="test:b")


# ---------------------------------------------------------------------------------------
# Cost and last writer wins
# ---------------------------------------------------------------------------------------


def test_a_save_writes_and_encodes_only_the_turns_new_items(tmp_path: Path) -> None:
    """Per turn, the log grows by that turn's messages and updates only (no state record, nothing re-encoded)."""
    store = JsonlSessionStore(str(tmp_path))
    counted: list[int] = []
    real = store._log._encode_messages

    def counting(items: Any) -> list[dict[str, Any]]:
        counted.append(len(items))
        return real(items)

    store._log._encode_messages = counting

    async def turns() -> None:
        agent, _ = acp_agent(store)
        created = await agent.new_session(cwd="/", mcp_servers=[])
        sid, total = created.session_id, 0
        for turn in range(6):
            await agent.prompt(sid, [text(f"turn {turn}")])
            history = agent.session_history(sid)
            assert history is not None
            assert counted[-1] == len(history) - total
            total = len(history)
        stored = await store.load(sid)
        assert stored is not None
        summary = store.store.get_session(sid)
        # + 1: new_session's empty save, the record that makes the session exist.
        assert summary is not None and summary.message_count == len(stored.messages) + len(stored.updates) + 1

    run(turns())


TIME = datetime(2026, 1, 1, tzinfo=UTC)


def state_of(n: int, tag: str) -> StoredSession:
    messages: list[ModelMessage] = []
    for i in range(n):
        messages.append(ModelRequest(parts=[UserPromptPart(content=f"{tag}{i}", timestamp=TIME)]))
        messages.append(ModelResponse(parts=[TextPart(f"{tag} answer {i}")], timestamp=TIME))
    updates = [
        schema.AgentMessageChunk(session_update="agent_message_chunk", content=text(f"{tag}{i}"))
        for i in range(n)
    ]
    return StoredSession(messages=messages, updates=list(updates), model=f"test:{tag}")


def test_last_writer_wins_across_processes_and_nothing_is_rewritten(tmp_path: Path) -> None:
    """A child saves a different state just before this store saves again: each load gives the last save."""
    store = JsonlSessionStore(str(tmp_path))
    mine, theirs = state_of(3, "mine"), state_of(2, "theirs")
    store.save_sync("s", mine)
    path = tmp_path / "s" / "messages.jsonl"
    grown = path.read_bytes()
    payload = json.dumps(
        {
            "history": json.loads(ModelMessagesTypeAdapter.dump_json(theirs.messages)),
            "transcript": [u.model_dump(mode="json", by_alias=True) for u in theirs.updates],
            "model": theirs.model,
        }
    )
    done = child("harness-save", tmp_path, "s", stdin=payload)
    assert done.stdout == "saved\n", done.stderr
    assert store.load_sync("s") == theirs
    store.save_sync("s", mine)  # the same state as this store's cache: it must still win
    assert JsonlSessionStore(str(tmp_path)).load_sync("s") == mine
    assert path.read_bytes().startswith(grown)
    grown = path.read_bytes()
    store.save_sync("s", mine)  # now nothing changed: nothing is written
    assert path.read_bytes() == grown


def test_concurrent_saves_from_threads_and_stores_end_in_one_saved_state(tmp_path: Path) -> None:
    """Eight threads over two stores save different states at once: the log loads as one of them, whole."""
    stores = [JsonlSessionStore(str(tmp_path)), JsonlSessionStore(str(tmp_path))]
    states = [state_of(1 + i % 4, f"t{i}") for i in range(8)]
    barrier = threading.Barrier(8)

    def save(i: int) -> None:
        barrier.wait()
        for _ in range(3):
            stores[i % 2].save_sync("s", states[i])

    threads = [threading.Thread(target=save, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert JsonlSessionStore(str(tmp_path)).load_sync("s") in states
    assert SessionStore(str(tmp_path)).verify("s") == []


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    saves=st.lists(
        st.tuples(st.integers(0, 1), st.integers(0, 3), st.integers(0, 3), st.sampled_from(["a", "b"])),
        min_size=1,
        max_size=6,
    )
)
def test_any_sequence_of_saves_loads_as_the_last(
    tmp_path_factory: pytest.TempPathFactory, saves: list[tuple[int, int, int, str]]
) -> None:
    """Two stores save prefixes and variants of states in any order: every load is the last save."""
    root = str(tmp_path_factory.mktemp("saves"))
    stores = [JsonlSessionStore(root), JsonlSessionStore(root)]
    for who, n_messages, n_updates, tag in saves:
        full = state_of(3, tag)
        state = StoredSession(
            messages=full.messages[: n_messages * 2], updates=full.updates[:n_updates], model=full.model
        )
        stores[who].save_sync("s", state)
        assert stores[1 - who].load_sync("s") == state
        assert JsonlSessionStore(root).load_sync("s") == state


# ---------------------------------------------------------------------------------------
# Crashes, corruption, and what people see
# ---------------------------------------------------------------------------------------


def test_a_process_killed_inside_a_tool_reopens_at_the_last_committed_turn(tmp_path: Path) -> None:
    """Killed in a tool mid-turn: the session reopens as after the previous turn, and the next prompt runs."""
    done = child("harness-turns", tmp_path, "-")
    sid, state = done.stdout.splitlines()
    killed = child("harness-kill", tmp_path, sid)
    assert killed.returncode == 17, killed.stderr
    assert json.loads(child("harness-dump", tmp_path, sid).stdout) == json.loads(state)
    stored = JsonlSessionStore(str(tmp_path)).load_sync(sid)
    assert stored is not None and is_provider_valid(stored.messages, dialect=PYDANTIC_AI)

    async def go_on() -> None:
        agent, _ = acp_agent(JsonlSessionStore(str(tmp_path)))
        await agent.load_session(cwd="/", session_id=sid, mcp_servers=[])
        response = await agent.prompt(sid, [text("use the tools")])
        assert response.stop_reason == "end_turn"

    run(go_on())


def test_corruption_raises_and_the_harness_answers_internal_error(tmp_path: Path) -> None:
    """A damaged middle line: load raises CorruptSession, and session/load fails with internal_error."""
    sid, _ = run(conversation(JsonlSessionStore(str(tmp_path))))
    path = tmp_path / sid / "messages.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    lines[2] = lines[2].replace(b'"format"', b'"formet"')
    path.write_bytes(b"".join(lines))
    with pytest.raises(CorruptSession):
        JsonlSessionStore(str(tmp_path)).load_sync(sid)

    async def reopen() -> None:
        agent, _ = acp_agent(JsonlSessionStore(str(tmp_path)))
        with pytest.raises(RequestError) as raised:
            await agent.load_session(cwd="/", session_id=sid, mcp_servers=[])
        assert raised.value.code == -32603  # JSON-RPC internal error

    run(reopen())


def test_a_torn_tail_loads_the_state_before_it(tmp_path: Path) -> None:
    """A crash's half line at the end is not corruption: the last complete save loads."""
    store = JsonlSessionStore(str(tmp_path))
    state = state_of(2, "x")
    store.save_sync("s", state)
    path = tmp_path / "s" / "messages.jsonl"
    path.write_bytes(path.read_bytes() + b'{"sequence": 77, "message": {"role": "us')
    assert JsonlSessionStore(str(tmp_path)).load_sync("s") == state


def test_show_prints_the_updates_as_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """jsonl-store show shows an update's kind and its text, not an empty line or raw JSON (show --raw is the JSON)."""
    sid, _ = run(conversation(JsonlSessionStore(str(tmp_path))))
    assert cli_main(["--root", str(tmp_path), "show", sid, "--full"]) == 0
    out = capsys.readouterr().out
    assert "agent_message_chunk" in out and "done after" in out
    assert "user_message_chunk" in out and "look" in out
    assert '"sessionUpdate"' not in out


@pytest.mark.parametrize("turns", [0, 1], ids=["new-session", "first-turn"])
def test_a_first_save_cut_short_by_any_crash_loads_as_none_or_as_saved(turns: int) -> None:
    """Every state a crash in a session's first save leaves loads as None or as the save, never as an empty session."""
    fs = SimulatedFileSystem()
    state = state_of(turns, "c") if turns else StoredSession()
    JsonlSessionStore("/store", fs=fs).save_sync("s", state)
    loads, meta_without_record = [], 0
    for crash in crash_states(fs):
        disk = crash.filesystem()
        loaded = JsonlSessionStore("/store", fs=disk, on_problem=lambda _: None).load_sync("s")
        loads.append(loaded)
        if disk.exists("/store/s/meta.json") and not disk.exists("/store/s/messages.jsonl"):
            meta_without_record += 1
            assert loaded is None
    assert meta_without_record > 0  # the state the harness mistook for a saved session
    assert None in loads and state in loads
    assert all(loaded is None or loaded == state for loaded in loads)


# Each binary class pydantic-ai defines, with media types its checks accept; pydantic-ai's
# JSON reads them all back as BinaryImage or BinaryContent, by media type alone.
BINARIES = st.one_of(
    st.builds(
        BinaryContent,
        data=st.binary(max_size=8),
        media_type=st.sampled_from(["image/png", "application/pdf", "audio/wav"]),
    ),
    st.builds(
        BinaryImage, data=st.binary(max_size=8), media_type=st.sampled_from(["image/png", "image/webp"])
    ),
    st.builds(
        BinaryAudio, data=st.binary(max_size=8), media_type=st.sampled_from(["audio/wav", "audio/mpeg"])
    ),
)


def _placed(binary: BinaryContent, where: str) -> ModelMessage:
    if where == "prompt":
        return ModelRequest(parts=[UserPromptPart(content=["look", binary], timestamp=TIME)])
    if where == "tool-return":
        return ModelRequest(
            parts=[
                ToolReturnPart(tool_name="t", content={"file": [binary]}, tool_call_id="c", timestamp=TIME)
            ]
        )
    return ModelResponse(parts=[FilePart(content=binary)], timestamp=TIME)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(st.tuples(BINARIES, st.sampled_from(["prompt", "tool-return", "file"])), min_size=1, max_size=4)
)
def test_every_binary_comes_back_as_its_own_class_with_pydantic_ais_json_values(
    tmp_path_factory: pytest.TempPathFactory, placed: list[tuple[BinaryContent, str]]
) -> None:
    """BinaryImage, BinaryAudio and plain BinaryContent anywhere load as what was saved, values as pydantic-ai's JSON reads them."""
    root = str(tmp_path_factory.mktemp("binaries"))
    messages = [_placed(binary, where) for binary, where in placed]
    JsonlSessionStore(root).save_sync("s", StoredSession(messages=messages))
    loaded = JsonlSessionStore(root).load_sync("s")
    assert loaded is not None and loaded.messages == messages
    reference = ModelMessagesTypeAdapter.validate_json(ModelMessagesTypeAdapter.dump_json(messages))
    assert ModelMessagesTypeAdapter.dump_json(loaded.messages) == ModelMessagesTypeAdapter.dump_json(
        reference
    )
