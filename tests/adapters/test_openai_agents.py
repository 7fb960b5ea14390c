"""JsonlSession against the real OpenAI Agents SDK, offline, side by side with SQLiteSession.

The SDK runs for real (``Runner.run``, ``Runner.run_sync``, ``Runner.run_streamed``, its
function tools in parallel) with a scripted model (`agents_fake_model.FakeModel`); no SDK
part is mocked. The ported tests follow ``tests/memory/test_session.py`` and
``tests/memory/test_session_limit.py`` of openai-agents-python, the ones that test
behaviour rather than SQLite internals. Ran against openai-agents 0.24.0, and 0.21.0 (the
floor the ``openai-agents`` extra declares), each with openai 3.57.0.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import fcntl
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("agents", reason='needs the extra: pip install -e ".[openai-agents]"')

import agents_child as child
from agents import Agent, RunConfig, Runner, Session, SessionSettings, SQLiteSession, set_tracing_disabled
from agents_fake_model import FakeModel, call, text
from helpers import cli

from jsonl_store import INTERRUPTED_NOTICE, InvalidSessionId, OsFileSystem, SessionStore, decode_session_id
from jsonl_store.adapters import openai_agents as openai_agents_adapter
from jsonl_store.adapters.openai_agents import MARKER, JsonlSession, SessionClosed, directory_name

set_tracing_disabled(True)

CHILD = Path(__file__).parents[1] / "agents_child.py"
RUNNERS = ["run", "run_sync", "run_streamed"]


def run(coro: Any) -> Any:
    return asyncio.run(coro)


async def run_agent(runner: str, agent: Agent[Any], user_input: Any, **kwargs: Any) -> Any:
    """One run of ``agent`` the way ``runner`` names (the SDK tests' ``run_agent_async``)."""
    if runner == "run":
        return await Runner.run(agent, user_input, **kwargs)
    if runner == "run_sync":

        def in_thread() -> Any:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            try:
                return Runner.run_sync(agent, user_input, **kwargs)
            finally:
                loop.close()

        return await asyncio.to_thread(in_thread)
    result = Runner.run_streamed(agent, user_input, **kwargs)
    async for _ in result.stream_events():
        pass
    return result


def spawn(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(CHILD), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def provider_valid(items: list[Any]) -> bool:
    """Every function_call has exactly one output after it, and no output lacks its call."""
    calls: dict[str, int] = {}
    for item in items:
        if item.get("type") == "function_call":
            calls[item["call_id"]] = 0
        elif item.get("type") == "function_call_output":
            if item["call_id"] not in calls:
                return False
            calls[item["call_id"]] += 1
    return all(count == 1 for count in calls.values())


# -- the same items as SQLiteSession -----------------------------------------------------


@pytest.mark.parametrize("runner", RUNNERS)
def test_items_and_model_inputs_equal_sqlite_sessions_with_parallel_tool_calls(
    tmp_path: Path, runner: str
) -> None:
    """Three turns with parallel tool calls give the items and model inputs SQLiteSession gives."""

    async def conversation(session: Any) -> tuple[list[Any], list[Any]]:
        inputs: list[Any] = []
        for user_input, outputs in child.TURNS:
            model = FakeModel(outputs)
            await run_agent(runner, child.agent(model), user_input, session=session)
            inputs.extend(model.inputs)
        return await session.get_items(), inputs

    sqlite_items, sqlite_inputs = run(conversation(SQLiteSession("chat", str(tmp_path / "s.db"))))
    jsonl_items, jsonl_inputs = run(conversation(JsonlSession("chat", str(tmp_path / "sessions"))))
    assert jsonl_items == sqlite_items and jsonl_inputs == sqlite_inputs
    assert [i.get("type") for i in jsonl_items].count("function_call") == 4 and provider_valid(jsonl_items)


@pytest.mark.parametrize("runner", ["run", "run_streamed"])
def test_reopened_in_another_process_the_items_equal_sqlite_sessions(tmp_path: Path, runner: str) -> None:
    """Items written by one process and read by another equal SQLiteSession's, item for item."""
    for backend in ("jsonl", "sqlite"):
        done = spawn("turns", backend, str(tmp_path), "user:42/chat 1", runner)
        assert done.returncode == 0, done.stderr
    jsonl = run(JsonlSession("user:42/chat 1", str(tmp_path)).get_items())
    sqlite = run(SQLiteSession("user:42/chat 1", str(tmp_path / "sqlite.db")).get_items())
    assert jsonl == sqlite and len(jsonl) == 14


@pytest.mark.parametrize("runner", ["run", "run_streamed"])
def test_killed_inside_a_tool_the_restored_items_equal_sqlites_and_the_next_run_works(
    tmp_path: Path, runner: str
) -> None:
    """A process killed between tool calls and their results leaves items the SDK runs on."""
    for backend in ("jsonl", "sqlite"):
        died = spawn("kill", backend, str(tmp_path), "k", runner)
        assert died.returncode == 17, died.stderr
    jsonl_session = JsonlSession("k", str(tmp_path))
    sqlite_session = SQLiteSession("k", str(tmp_path / "sqlite.db"))
    restored = run(jsonl_session.get_items())
    assert restored == run(sqlite_session.get_items()) and provider_valid(restored)

    async def next_run(session: Any) -> tuple[Any, list[Any]]:
        model = FakeModel([[call("add", '{"a": 1, "b": 1}', "n1")], [text("2, this time.", "msg_n")]])
        result = await run_agent(runner, child.agent(model), "Try again.", session=session)
        return result.final_output, model.inputs

    assert run(next_run(jsonl_session)) == run(next_run(sqlite_session))
    assert run(jsonl_session.get_items()) == run(sqlite_session.get_items())


def test_a_call_stored_without_its_output_is_closed_once_and_the_next_run_works(tmp_path: Path) -> None:
    """close_interrupted_calls answers a batch's open calls in the log, once; the SDK runs on."""
    session = JsonlSession("open", str(tmp_path))
    opened = [
        {"role": "user", "content": "Weather in Paris and Oslo?"},
        {"type": "function_call", "call_id": "w1", "name": "weather", "arguments": '{"city": "Paris"}'},
        {"type": "function_call", "call_id": "w2", "name": "weather", "arguments": '{"city": "Oslo"}'},
        {"type": "function_call_output", "call_id": "w2", "output": "sunny in Oslo"},
    ]
    run(session.add_items(opened))
    added = run(session.close_interrupted_calls())
    assert added == [{"type": "function_call_output", "call_id": "w1", "output": INTERRUPTED_NOTICE}]
    assert run(session.close_interrupted_calls()) == []
    restored = run(JsonlSession("open", str(tmp_path)).get_items())
    assert restored == [*opened, *added] and provider_valid(restored)
    model = FakeModel([[text("Oslo is sunny; Paris was interrupted.")]])
    run(Runner.run(child.agent(model), "So?", session=session))
    assert model.inputs[0][:5] == restored


# -- pops and clears ---------------------------------------------------------------------


def test_concurrent_pops_in_four_processes_never_take_an_item_twice(tmp_path: Path) -> None:
    """Four processes popping one session take every item exactly once between them."""
    items = [{"role": "user", "content": f"m{i}"} for i in range(200)]
    run(JsonlSession("stack", str(tmp_path)).add_items(items))
    children = [
        subprocess.Popen(
            [sys.executable, str(CHILD), "pop", "jsonl", str(tmp_path), "stack"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    for process in children:
        assert process.stdout is not None
        assert process.stdout.readline() == "ready\n"
    for process in children:
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()
    popped: list[str] = []
    for process in children:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
        popped.extend(json.loads(line)["content"] for line in out.splitlines())
    assert sorted(popped) == sorted(item["content"] for item in items)
    assert run(JsonlSession("stack", str(tmp_path)).get_items()) == []


def test_concurrent_pops_in_threads_never_take_an_item_twice(tmp_path: Path) -> None:
    """Eight threads, each with its own JsonlSession, pop 60 items exactly once between them."""
    run(
        JsonlSession("stack", str(tmp_path)).add_items(
            [{"role": "user", "content": f"m{i}"} for i in range(60)]
        )
    )

    def drain() -> list[str]:
        session = JsonlSession("stack", str(tmp_path), durability="none")
        taken: list[str] = []
        while (item := asyncio.run(session.pop_item())) is not None:
            taken.append(item["content"])
        return taken

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        popped = [content for taken in pool.map(lambda _: drain(), range(8)) for content in taken]
    assert sorted(popped) == sorted(f"m{i}" for i in range(60))


def test_pops_and_clears_are_records_and_the_log_is_never_rewritten(tmp_path: Path) -> None:
    """pop_item and clear_session append records; the earlier records stay byte for byte."""
    session = JsonlSession("log", str(tmp_path))
    run(session.add_items([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]))
    log = tmp_path / "log" / "messages.jsonl"
    before = log.read_bytes()
    assert run(session.pop_item()) == {"role": "assistant", "content": "b"}
    run(session.clear_session())
    assert log.read_bytes().startswith(before)
    ops = [r.metadata.get("openai_agents", {}).get("op", "item") for r in session.store.records("log")]
    assert ops == ["item", "item", "pop", "clear"]
    assert (
        run(session.get_items()) == [] and run(session.get_items(5)) == [] and run(session.pop_item()) is None
    )
    assert session.store.load("log").messages == []  # the clear's snapshot: load() starts after it
    run(session.add_items([{"role": "user", "content": "c"}]))
    assert run(JsonlSession("log", str(tmp_path)).get_items()) == [{"role": "user", "content": "c"}]
    assert session.store.delete_session(session.store_session_id)  # the real removal
    assert not (tmp_path / "log" / "messages.jsonl").exists() and run(session.get_items()) == []


def test_pops_between_adds_nest_like_brackets(tmp_path: Path) -> None:
    """Interleaved adds and pops leave what SQLiteSession leaves, for every limit."""
    script = ["a", "b", "pop", "c", "pop", "d", "e", "pop", "pop", "f", "g", "h", "pop"]

    async def play(session: Any) -> list[Any]:
        popped = []
        for step in script:
            if step == "pop":
                popped.append(await session.pop_item())
            else:
                await session.add_items([{"role": "user", "content": step}])
        return [popped] + [await session.get_items(limit) for limit in (None, -1, 0, 1, 2, 3, 4, 10)]

    assert run(play(JsonlSession("p", str(tmp_path)))) == run(play(SQLiteSession("p")))


class CountingFileSystem(OsFileSystem):
    """The real file system, counting the bytes read."""

    def __init__(self) -> None:
        super().__init__()
        self.read = 0

    def pread(self, fd: int, length: int, offset: int) -> bytes:
        data = super().pread(fd, length, offset)
        self.read += len(data)
        return data


def test_get_items_with_a_limit_reads_the_last_items_not_the_log(tmp_path: Path) -> None:
    """get_items(3) reads about as much of a 4,000-item log as of a 40-item one."""
    read = {}
    for count in (40, 4000):
        fs = CountingFileSystem()
        session = JsonlSession(f"s{count}", str(tmp_path), durability="none", fs=fs)
        run(session.add_items([{"role": "user", "content": f"message {i:05}"} for i in range(count)]))
        run(session.pop_item())
        fs.read = 0
        assert [i["content"] for i in run(session.get_items(3))] == [
            f"message {i:05}" for i in range(count - 4, count - 1)
        ]
        read[count] = fs.read
    assert read[4000] < 2 * read[40] + 4096


def test_free_form_session_ids_map_to_directories_and_back(tmp_path: Path) -> None:
    """A session id such as 'user:42/chat 1' gets its own directory, decoded back to the id."""
    session = JsonlSession("user:42/chat 1", str(tmp_path))
    run(session.add_items([{"role": "user", "content": "hi"}]))
    [summary] = SessionStore(tmp_path).list_sessions()
    assert decode_session_id(summary.session_id) == "user:42/chat 1" == session.session_id
    assert run(JsonlSession("user:42/chat 2", str(tmp_path)).get_items()) == []


# Ids the SDK's users write (scoped paths of UUIDs), ids past what a directory name holds,
# and any text at all: empty, NUL, controls, any script.
_UUID = "0193e4c2-7d1a-7b3e-9f2a-3c4d5e6f7a8b"
SESSION_IDS = st.one_of(
    st.text(max_size=40),
    st.text(min_size=100, max_size=400),
    st.just(f"user:{_UUID}/thread:{_UUID}/run:{_UUID}"),
    st.sampled_from(["", "\x00", "_x", ".", "..", "-rf", "a" * 129, "\u00e9" * 50]),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(SESSION_IDS, min_size=2, max_size=4, unique=True))
def test_any_string_is_a_session_id_with_a_directory_of_its_own(ids: list[str]) -> None:
    """Distinct ids of any length or characters keep apart, each under its own directory."""
    with tempfile.TemporaryDirectory() as root:
        for index, session_id in enumerate(ids):
            run(
                JsonlSession(session_id, root, durability="none").add_items(
                    [{"role": "user", "content": str(index)}]
                )
            )
        store = SessionStore(root)
        assert len({directory_name(session_id) for session_id in ids}) == len(ids)
        for index, session_id in enumerate(ids):
            session = JsonlSession(session_id, root)
            assert session.session_id is session_id
            assert run(session.get_items()) == [{"role": "user", "content": str(index)}]
            summary = store.get_session(session.store_session_id)
            assert summary is not None
            if session.store_session_id == session_id:
                assert MARKER not in summary.metadata
            else:
                assert summary.metadata[MARKER] == {"session_id": session_id}
                assert summary.title is not None


def test_a_scoped_id_too_long_to_encode_is_shown_by_ls(tmp_path: Path) -> None:
    """``user:<uuid>/thread:<uuid>/run:<uuid>`` is stored, and ``jsonl-store ls`` names it."""
    session_id = f"user:{_UUID}/thread:{_UUID}/run:{_UUID}"
    run(JsonlSession(session_id, str(tmp_path)).add_items([{"role": "user", "content": "hi"}]))
    listed = cli("--root", str(tmp_path), "ls", "--json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    [row] = json.loads(listed.stdout)
    assert row["title"] == session_id
    table = cli("--root", str(tmp_path), "ls", cwd=tmp_path)
    assert f"user:{_UUID}" in table.stdout


def test_a_directory_that_holds_another_ids_session_is_refused_before_any_write(tmp_path: Path) -> None:
    """Were two ids to share a digest, the second would be refused, its items never mixed in."""
    first = JsonlSession("x" * 200, str(tmp_path))
    run(first.add_items([{"role": "user", "content": "first"}]))
    store = SessionStore(tmp_path)
    store.update_session(
        first.store_session_id, metadata={MARKER: {"session_id": "y" * 200}}, origin="runtime"
    )
    before = (tmp_path / first.store_session_id / "messages.jsonl").read_bytes()
    second = JsonlSession("x" * 200, str(tmp_path))
    with pytest.raises(InvalidSessionId, match="holds the session"):
        run(second.add_items([{"role": "user", "content": "second"}]))
    with pytest.raises(InvalidSessionId):
        run(second.get_items())
    assert (tmp_path / first.store_session_id / "messages.jsonl").read_bytes() == before


def test_a_lone_surrogate_id_is_refused_as_sqlite_cannot_store_it_either(tmp_path: Path) -> None:
    """No file holds a lone surrogate: the id is refused with a ValueError, nothing made."""
    with pytest.raises(InvalidSessionId) as raised:
        JsonlSession("chat-\ud800", str(tmp_path))
    assert isinstance(raised.value, ValueError)
    assert list(tmp_path.iterdir()) == []


def test_after_close_every_call_raises_runtime_error_as_sqlite_sessions_do(tmp_path: Path) -> None:
    """A closed session refuses every call, an empty add included, as a closed SQLiteSession does."""

    async def refusals(session: Any) -> list[str]:
        await session.add_items([{"role": "user", "content": "hi"}])
        session.close()
        session.close()  # closing twice is harmless for both
        calls = [
            session.add_items([]),
            session.add_items([{"role": "user", "content": "again"}]),
            session.get_items(),
            session.get_items(limit=0),
            session.pop_item(),
            session.clear_session(),
        ]
        names = []
        for coroutine in calls:
            with pytest.raises(RuntimeError) as raised:
                await coroutine
            names.append(type(raised.value).__name__)
        return names

    assert set(run(refusals(SQLiteSession("s", str(tmp_path / "db.sqlite"))))) == {"RuntimeError"}
    assert set(run(refusals(JsonlSession("s", str(tmp_path / "store"))))) == {"SessionClosed"}
    assert run(JsonlSession("s", str(tmp_path / "store")).get_items()) == [{"role": "user", "content": "hi"}]
    assert issubclass(SessionClosed, RuntimeError)


def test_a_buffered_add_waits_for_a_held_lock_in_a_thread_and_the_event_loop_runs_on(tmp_path: Path) -> None:
    """With durability="none" an add runs on the event loop, but never waits there for another writer's lock."""
    session = JsonlSession("held", str(tmp_path), durability="none")
    run(session.add_items([{"role": "user", "content": "first"}]))
    # The append lock (spec §13): flock on the log, held as another process's writer holds it.
    lock_fd = os.open(tmp_path / "held" / "messages.jsonl", os.O_WRONLY | os.O_APPEND)
    fcntl.flock(lock_fd, fcntl.LOCK_EX)

    async def main() -> int:
        ticks = 0
        adding = asyncio.ensure_future(session.add_items([{"role": "user", "content": "second"}]))
        while ticks < 5:  # the loop keeps running while the add waits
            await asyncio.sleep(0.01)
            ticks += 1
        assert not adding.done()
        fcntl.flock(lock_fd, fcntl.LOCK_UN)
        await adding
        return ticks

    try:
        assert run(main()) == 5
    finally:
        os.close(lock_fd)
    assert [item["content"] for item in run(session.get_items())] == ["first", "second"]


needs_compaction_hook = pytest.mark.skipif(
    openai_agents_adapter._Snapshot is None, reason="openai-agents before 0.24 has no compaction hook"
)
# One step on a session and on a list that models it: ("add", n), ("pop", 0), or
# ("replace", k): compaction replaces the last k items (of a window of k + 1) with one
# summary, pruning the oldest items whose text starts with "old" when k is odd.
STEPS = st.lists(
    st.tuples(st.sampled_from(["add", "pop", "replace"]), st.integers(0, 4)), min_size=1, max_size=12
)


@needs_compaction_hook
@settings(max_examples=60, deadline=None)
@given(STEPS)
def test_adds_pops_and_compaction_replacements_read_back_as_a_list_does(steps: list[tuple[str, int]]) -> None:
    """Any mix of adds, pops and the SDK hook's suffix replacements (pruning too) reads as the model list, whole and by limit."""

    async def main(root: str) -> None:
        session, model = JsonlSession("s", root, durability="none"), []
        for counter, (step, n) in enumerate(steps):
            if step == "add":
                items = [
                    {"role": "user", "content": f"{'old' if i % 2 else 'new'} {counter}.{i}"}
                    for i in range(n)
                ]
                await session.add_items(items)
                model += items
            elif step == "pop":
                assert await session.pop_item() == (model.pop() if model else None)
            else:
                snapshot = await session._get_compaction_snapshot(
                    n + 1, prune_prefix=(lambda item: item["content"].startswith("old")) if n % 2 else None
                )
                assert snapshot.items == model[-(n + 1) :] and snapshot.complete == (len(model) <= n + 1)
                summary = {"type": "compaction", "id": f"cmp_{counter}", "encrypted_content": "x"}
                replaced = await snapshot.replace_suffix(1, [summary])
                assert replaced == (len(snapshot.items) > 1)
                if replaced:
                    model = [*_kept(model, len(snapshot.items) - 1, n % 2 == 1), summary]
            assert await session.get_items() == model
            for limit in (1, 2, 5):
                assert await session.get_items(limit=limit) == model[-limit:]

    with tempfile.TemporaryDirectory() as root:
        run(main(root))


def _kept(model: list[Any], replaced: int, prune: bool) -> list[Any]:
    """What SQLiteSession keeps of ``model`` when its last ``replaced`` items are replaced:
    the items before them, less the leading ones ``prune_prefix`` accepts when pruning."""
    kept = model[: len(model) - replaced]
    while prune and kept and kept[0]["content"].startswith("old"):
        kept = kept[1:]
    return kept


@needs_compaction_hook
def test_automatic_compaction_under_a_read_limit_replaces_the_history_in_one_append(tmp_path: Path) -> None:
    """The SDK's compaction session compacts a JsonlSession read through a limit, as it does a SQLiteSession."""
    from types import SimpleNamespace
    from unittest.mock import AsyncMock, MagicMock

    from agents.memory import OpenAIResponsesCompactionSession
    from agents.testing import ScriptedModel

    summary = {"type": "compaction", "id": "cmp_1", "encrypted_content": "summary"}

    async def main() -> list[Any]:
        client = MagicMock()
        client.responses.compact = AsyncMock(return_value=SimpleNamespace(output=[summary]))
        backend = JsonlSession("limited", str(tmp_path), session_settings={"limit": 1})
        session = OpenAIResponsesCompactionSession(
            "limited",
            backend,
            client=client,
            compaction_mode="input",
            should_trigger_compaction=lambda _: True,
        )
        await session.add_items([{"role": "user", "content": "older"}])
        agent = Agent(name="worker", model=ScriptedModel(steps=[[text("ok")]]))
        await Runner.run(agent, "now", session=session, run_config=RunConfig(session_settings={"limit": 100}))
        client.responses.compact.assert_awaited_once()
        return await backend.get_items(limit=100)

    before = len(list(SessionStore(tmp_path).records("limited"))) if (tmp_path / "limited").exists() else 0
    assert run(main()) == [summary]
    records = list(SessionStore(tmp_path).records("limited"))
    assert before == 0 and len(records) > 1  # the log only grew: nothing was rewritten


def test_items_with_values_the_store_keeps_only_as_json_come_back_as_sqlite_gives_them(
    tmp_path: Path,
) -> None:
    """A tuple comes back as a list, as SQLiteSession's json round trip gives it."""
    item: Any = {"role": "user", "content": [{"type": "input_text", "text": "hi"}], "extra": (1, 2)}
    jsonl, sqlite = JsonlSession("t", str(tmp_path)), SQLiteSession("t")
    run(jsonl.add_items([item]))
    run(sqlite.add_items([item]))
    assert run(jsonl.get_items()) == run(sqlite.get_items()) == [{**item, "extra": [1, 2]}]


# -- ported from openai-agents-python tests/memory/test_session.py -----------------------


@pytest.mark.parametrize("runner", RUNNERS)
def test_session_memory_basic_functionality(tmp_path: Path, runner: str) -> None:
    """The second turn's model input holds the first turn (ported: basic functionality)."""

    async def main() -> None:
        session = JsonlSession("test_session_123", str(tmp_path))
        model = FakeModel([[text("San Francisco")], [text("California")]])
        agent = Agent(name="test", model=model)
        first = await run_agent(runner, agent, "What city is the Golden Gate Bridge in?", session=session)
        second = await run_agent(runner, agent, "What state is it in?", session=session)
        assert (first.final_output, second.final_output) == ("San Francisco", "California")
        assert len(model.inputs[-1]) == 3

    run(main())


@pytest.mark.parametrize("runner", RUNNERS)
def test_session_memory_different_sessions(tmp_path: Path, runner: str) -> None:
    """Two session ids keep separate histories in one root (ported: different sessions)."""

    async def main() -> None:
        model = FakeModel([[text("I like cats")], [text("I like dogs")], [text("Yes, you mentioned cats")]])
        agent = Agent(name="test", model=model)
        cats, dogs = JsonlSession("session_1", str(tmp_path)), JsonlSession("session_2", str(tmp_path))
        await run_agent(runner, agent, "I like cats", session=cats)
        await run_agent(runner, agent, "I like dogs", session=dogs)
        result = await run_agent(runner, agent, "What did I say I like?", session=cats)
        assert result.final_output == "Yes, you mentioned cats"
        assert "I like dogs" not in json.dumps(model.inputs[-1])

    run(main())


def test_session_memory_direct(tmp_path: Path) -> None:
    """Items added come back; a clear empties the session (ported: memory direct)."""

    async def main() -> None:
        session = JsonlSession("direct_test", str(tmp_path))
        items = [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi there!"}]
        await session.add_items(items)
        assert await session.get_items() == items
        await session.clear_session()
        assert await session.get_items() == []

    run(main())


def test_session_pop_item(tmp_path: Path) -> None:
    """Pops take the newest item until None (ported: memory pop item)."""

    async def main() -> None:
        session = JsonlSession("pop_test", str(tmp_path))
        assert await session.pop_item() is None
        items = [
            {"role": "user", "content": "Hello"},
            {"role": "assistant", "content": "Hi there!"},
            {"role": "user", "content": "How are you?"},
        ]
        await session.add_items(items)
        assert await session.pop_item() == items[2]
        assert await session.get_items() == items[:2]
        assert await session.pop_item() == items[1]
        assert await session.pop_item() == items[0]
        assert await session.pop_item() is None
        assert await session.get_items() == []

    run(main())


def test_session_pop_different_sessions(tmp_path: Path) -> None:
    """A pop affects its own session only (ported: pop different sessions)."""

    async def main() -> None:
        one, two = JsonlSession("session_1", str(tmp_path)), JsonlSession("session_2", str(tmp_path))
        await one.add_items([{"role": "user", "content": "Session 1 message"}])
        await two.add_items(
            [
                {"role": "user", "content": "Session 2 message 1"},
                {"role": "user", "content": "Session 2 message 2"},
            ]
        )
        assert (await two.pop_item() or {}).get("content") == "Session 2 message 2"
        assert [i["content"] for i in await one.get_items()] == ["Session 1 message"]
        assert [i["content"] for i in await two.get_items()] == ["Session 2 message 1"]

    run(main())


def test_pop_and_limit_skip_a_torn_newest_line(tmp_path: Path) -> None:
    """A damaged newest line is skipped by get_items(limit) and pop_item (ported: corrupt rows)."""

    async def main() -> None:
        session = JsonlSession("corrupt", str(tmp_path))
        items = [{"role": "user", "content": f"valid {i}"} for i in range(3)]
        await session.add_items(items)
        with open(tmp_path / "corrupt" / "messages.jsonl", "ab") as log:
            log.write(b'{"sequence":4,"not valid json {{{')
        assert await JsonlSession("corrupt", str(tmp_path)).get_items(limit=2) == items[1:]
        assert await session.pop_item() == items[2]
        assert await session.get_items() == items[:2]

    run(main())


def test_session_get_items_with_limit(tmp_path: Path) -> None:
    """limit gives the latest N in order; more than stored gives all; 0 gives none (ported)."""

    async def main() -> None:
        session = JsonlSession("count_test", str(tmp_path))
        items = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"} for i in range(6)]
        await session.add_items(items)
        assert await session.get_items() == items
        assert await session.get_items(limit=2) == items[-2:]
        assert await session.get_items(limit=4) == items[-4:]
        assert await session.get_items(limit=10) == items
        assert await session.get_items(limit=0) == []

    run(main())


@pytest.mark.parametrize("runner", RUNNERS)
def test_session_memory_appends_list_input_by_default(tmp_path: Path, runner: str) -> None:
    """A list input is appended to the stored history (ported)."""

    async def main() -> None:
        session = JsonlSession("list_input", str(tmp_path))
        history = [
            {"role": "user", "content": "Earlier message"},
            {"role": "assistant", "content": "Saved reply"},
        ]
        await session.add_items(history)
        model = FakeModel([[text("This should run")]])
        list_input = [{"role": "user", "content": "Test message"}]
        await run_agent(runner, Agent(name="test", model=model), list_input, session=session)
        assert model.inputs[-1] == history + list_input

    run(main())


@pytest.mark.parametrize("runner", RUNNERS)
def test_session_callback_prepared_input(tmp_path: Path, runner: str) -> None:
    """session_input_callback decides the model input (ported: callback prepared input)."""

    async def main() -> None:
        session = JsonlSession("session_1", str(tmp_path))
        history = [
            {"role": "user", "content": "Hello there."},
            {"role": "assistant", "content": "Hi, I'm here to assist you."},
        ]
        await session.add_items(history)

        def only_user_messages(old: list[Any], new: list[Any]) -> list[Any]:
            return [item for item in old if item["role"] == "user"] + new

        model = FakeModel([[text("I'm gpt-4o")]])
        new_input = [{"role": "user", "content": "What your name?"}]
        await run_agent(
            runner,
            Agent(name="test", model=model),
            new_input,
            session=session,
            run_config=RunConfig(session_input_callback=only_user_messages),
        )
        assert model.inputs[-1] == [history[0], new_input[0]]

    run(main())


@pytest.mark.parametrize("runner", RUNNERS)
def test_session_callback_repeating_history_does_not_grow_session(tmp_path: Path, runner: str) -> None:
    """A callback that repeats history does not store it again (ported)."""

    async def main() -> None:
        session = JsonlSession("session_repeat", str(tmp_path))

        def repeat_first(old: list[Any], new: list[Any]) -> list[Any]:
            return new if not old else [*old, old[0], *new]

        for turn in range(3):
            model = FakeModel([[text(f"assistant {turn}")]])
            await run_agent(
                runner,
                Agent(name="test", model=model),
                f"user {turn}",
                session=session,
                run_config=RunConfig(session_input_callback=repeat_first),
            )
        stored = await session.get_items()
        assert [i.get("content") for i in stored if i.get("role") == "user"] == ["user 0", "user 1", "user 2"]
        assert len(stored) == 6

    run(main())


def test_session_unicode_and_special_characters(tmp_path: Path) -> None:
    """Non-ASCII text and SQL-looking text come back unchanged (ported: unicode, special chars)."""

    async def main() -> None:
        session = JsonlSession("unicode_test", str(tmp_path))
        items = [
            {"role": "user", "content": c}
            for c in (
                "こんにちは",
                "😊👍",
                "Привет",
                "O'Reilly",
                "Robert'); DROP TABLE students;--",
                "a\x00b\u2028",
            )
        ]
        await session.add_items(items)
        assert await JsonlSession("unicode_test", str(tmp_path)).get_items() == items

    run(main())


def test_session_concurrent_access(tmp_path: Path) -> None:
    """Items added from five threads are all stored (ported: concurrent access)."""
    session = JsonlSession("concurrent_test", str(tmp_path))
    with concurrent.futures.ThreadPoolExecutor(max_workers=5) as pool:
        list(
            pool.map(
                lambda i: asyncio.run(session.add_items([{"role": "user", "content": f"Message {i}"}])),
                range(10),
            )
        )
    assert {i["content"] for i in run(session.get_items())} == {f"Message {i}" for i in range(10)}


def test_failed_add_items_writes_nothing_and_the_session_stays_usable(tmp_path: Path) -> None:
    """An item JSON cannot carry raises TypeError, writes nothing, and later adds work (ported)."""

    async def main() -> None:
        session = JsonlSession("rollback_test", str(tmp_path))
        with pytest.raises(TypeError):
            await session.add_items(
                [{"role": "user", "content": "kept out"}, {"role": "user", "content": object()}]
            )
        await session.add_items([{"role": "user", "content": "after failure"}])
        assert await session.get_items() == [{"role": "user", "content": "after failure"}]

    run(main())


def test_session_settings_default_constructor_and_dictionary(tmp_path: Path) -> None:
    """A JsonlSession is a Session; settings default to SessionSettings(), a dict is checked (ported)."""
    assert isinstance(JsonlSession("a", str(tmp_path)), Session)  # the SDK's runtime-checkable protocol
    assert JsonlSession("a", str(tmp_path)).session_settings == SessionSettings()
    assert JsonlSession(
        "b", str(tmp_path), session_settings=SessionSettings(limit=5)
    ).session_settings == SessionSettings(limit=5)
    settings = JsonlSession("c", str(tmp_path), session_settings={"limit": 0}).session_settings
    assert isinstance(settings, SessionSettings) and settings.limit == 0
    with pytest.raises(TypeError, match="Unknown session settings: limitt"):
        JsonlSession("d", str(tmp_path), session_settings={"limitt": 1})


def test_get_items_uses_the_settings_limit_unless_one_is_given(tmp_path: Path) -> None:
    """session_settings.limit is the default; an explicit limit overrides it (ported)."""

    async def main() -> None:
        session = JsonlSession("limits", str(tmp_path), session_settings=SessionSettings(limit=3))
        items = [{"role": "user", "content": f"Message {i}"} for i in range(10)]
        await session.add_items(items)
        assert await session.get_items() == items[-3:]
        assert await session.get_items(limit=2) == items[-2:]

    run(main())


@pytest.mark.parametrize("runner", RUNNERS)
def test_session_limit_from_run_config(tmp_path: Path, runner: str) -> None:
    """RunConfig's session_settings limit the history the model gets (ported: test_session_limit)."""

    async def main() -> None:
        session = JsonlSession("limit_test", str(tmp_path), session_settings=SessionSettings(limit=100))
        agent_model = FakeModel([[text(f"Reply {i}")] for i in range(1, 5)])
        agent = Agent(name="test", model=agent_model)
        for i in range(1, 4):
            await run_agent(runner, agent, f"Message {i}", session=session)
        assert len(await session.get_items()) == 6
        await run_agent(
            runner,
            agent,
            "Message 4",
            session=session,
            run_config=RunConfig(session_settings=SessionSettings(limit=2)),
        )
        last = agent_model.inputs[-1]
        assert [last[0]["content"], last[1]["content"][0]["text"], last[2]["content"]] == [
            "Message 3",
            "Reply 3",
            "Message 4",
        ]

    run(main())


@pytest.mark.parametrize("runner", RUNNERS)
def test_session_limit_drops_an_output_whose_call_is_cut_off(tmp_path: Path, runner: str) -> None:
    """A limit boundary never hands the model an output without its call (ported)."""

    async def main() -> None:
        session = JsonlSession("limit_tool_pair", str(tmp_path))
        history = [
            {"role": "user", "content": "What is the weather?"},
            {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "It is sunny.", "annotations": []}],
            },
        ]
        await session.add_items(history)
        assert await session.get_items(limit=2) == history[-2:]
        model = FakeModel([[text("Tomorrow is sunny too.")]])
        await run_agent(
            runner,
            Agent(name="test", model=model),
            "What about tomorrow?",
            session=session,
            run_config=RunConfig(session_settings=SessionSettings(limit=2)),
        )
        assert model.inputs[-1] == [history[-1], {"role": "user", "content": "What about tomorrow?"}]

    run(main())
