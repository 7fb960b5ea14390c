"""`jsonl_store.adapters.zett` with the real zett-agent, offline, beside zett's own SQLite storage.

Each session is written by zett's runtime (a fake model, as zett's docs write one, and
real tools), every object is dropped, and the session is read back in a new process
(`zett_scenario.py`). Both storages run the same scenario and must give the same raw
log, the same restored context and the same requests to the model.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.metadata
import json
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

zett_agent = pytest.importorskip("zett_agent")

from zett_agent.extensions.compaction import CompactedMessage  # noqa: E402
from zett_agent.extensions.events import MessageTiming  # noqa: E402
from zett_agent.messages import (  # noqa: E402
    AgentMessage,
    AssistantMessage,
    ImageBytesSource,
    ImageContent,
    SystemMessage,
    TextContent,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from zett_agent.model import ModelUsage  # noqa: E402
from zett_agent.resume import ResumeKind, classify_resume  # noqa: E402
from zett_agent.stop import StopInfo, StopReason  # noqa: E402
from zett_agent.storage import SQLiteSessionStorage  # noqa: E402

from jsonl_store import JsonlStoreError, SessionStore, is_provider_valid  # noqa: E402
from jsonl_store.adapters.zett import JsonlSessionStorage, ZettCompatError  # noqa: E402

#: The zett-agent releases these tests passed with; the extra's floor is the oldest.
TESTED_ZETT_VERSIONS = ("0.1.17", "0.2.0", "0.2.1")
SCENARIO = Path(__file__).with_name("zett_scenario.py")
#: Fields that differ between two storages by nature: ids and the moment of writing.
UNIQUE_FIELDS = {"id", "created_at", "updated_at"}
#: Fields that differ between two runs of a scenario: the clock and the generated request id.
RUN_FIELDS = {
    "request_id", "started_at", "completed_at", "duration_ns", "reasoning_started_at", "reasoning_completed_at",
    "reasoning_duration_ns", "content_started_at", "content_completed_at", "content_duration_ns",
}  # fmt: skip


def scenario(backend: str, root: Path, *args: str, expect: int = 0) -> str:
    done = subprocess.run(
        [sys.executable, str(SCENARIO), backend, str(root), *args],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == expect, done.stderr
    return done.stdout


def dump(backend: str, root: Path, session_id: str) -> tuple[Any, list[Any]]:
    """The session as a new process loads it through `backend`: (SessionView, whole raw log)."""
    loaded: tuple[Any, list[Any]] = pickle.loads(bytes.fromhex(scenario(backend, root, session_id, "dump")))
    return loaded


def comparable(item: Any, *, runs: bool = False) -> dict[str, Any]:
    """A record or snapshot without the fields each storage (and, with ``runs``, each run) makes up."""
    fields = item.model_dump() if hasattr(item, "model_dump") else dataclasses.asdict(item)
    left_out = UNIQUE_FIELDS | RUN_FIELDS if runs else UNIQUE_FIELDS
    return {name: value for name, value in fields.items() if name not in left_out}


def same_log(one: list[Any], other: list[Any], *, runs: bool = False) -> bool:
    return [comparable(r, runs=runs) for r in one] == [comparable(r, runs=runs) for r in other]


def run_both(tmp_path: Path, session_id: str, *steps: tuple[str, ...]) -> dict[str, Path]:
    roots = {backend: tmp_path / backend for backend in ("jsonl", "sqlite")}
    for backend, root in roots.items():
        root.mkdir()
        for step in steps:
            expect = 3 if "crash" in " ".join(step) else 0
            scenario(backend, root, session_id, *step, expect=expect)
    return roots


def test_the_extension_is_zetts_own_persistence_extension_over_the_storage(tmp_path: Path) -> None:
    """JsonlSessionExtension is a BaseSessionPersistenceExtension whose storage is JsonlSessionStorage."""
    from zett_agent.extensions.persistence import BaseSessionPersistenceExtension

    from jsonl_store.adapters.zett import JsonlSessionExtension

    extension = JsonlSessionExtension(tmp_path, durability="none")
    assert isinstance(extension, BaseSessionPersistenceExtension)
    assert isinstance(extension.storage, JsonlSessionStorage) and extension.storage.store.durability == "none"


def test_the_tested_zett_agent_version_is_pinned() -> None:
    """The tests ran against these zett-agent releases; another one needs them run and this list extended."""
    assert importlib.metadata.version("zett-agent") in TESTED_ZETT_VERSIONS


TURNS = (("run", "Add things."), ("run", "Again."), ("compact",), ("run", "Once more."))


def test_both_storages_on_one_agent_hold_the_same_records_field_for_field(tmp_path: Path) -> None:
    """The two extensions on one agent: every record and the snapshot equal, timing and request ids too."""
    for step in TURNS:
        scenario("both", tmp_path, "chat-1", *step)
    (jsonl_view, jsonl_log), (sql_view, sql_log) = (
        dump("jsonl", tmp_path, "chat-1"),
        dump("sqlite", tmp_path, "chat-1"),
    )
    assert same_log(jsonl_log, sql_log) and len(jsonl_log) == 19
    assert same_log(jsonl_view.raw_tail, sql_view.raw_tail)
    assert comparable(jsonl_view.snapshot) == comparable(sql_view.snapshot)
    assert jsonl_view.messages == sql_view.messages


def test_sessions_reopened_in_new_processes_equal_zett_sqlite_storage(tmp_path: Path) -> None:
    """Turns with tool calls, a compaction and a later turn: the same log, context and requests as SQLite."""
    roots = run_both(tmp_path, "chat-1", *TURNS)
    (jsonl_view, jsonl_log), (sql_view, sql_log) = (
        dump("jsonl", roots["jsonl"], "chat-1"),
        dump("sqlite", roots["sqlite"], "chat-1"),
    )
    assert same_log(jsonl_log, sql_log, runs=True)
    assert len(jsonl_log) > 12 and any(
        r.message.tool_calls for r in jsonl_log if isinstance(r.message, AssistantMessage)
    )
    assert jsonl_view.snapshot is not None and comparable(jsonl_view.snapshot) == comparable(
        sql_view.snapshot
    )
    assert same_log(jsonl_view.raw_tail, sql_view.raw_tail, runs=True)
    assert jsonl_view.messages == sql_view.messages
    assert (jsonl_view.title, jsonl_view.agent_name, jsonl_view.parent_session_id, jsonl_view.session_type) == (
        sql_view.title, sql_view.agent_name, sql_view.parent_session_id, sql_view.session_type,
    )  # fmt: skip
    requests = {b: pickle.loads((root / "requests.pickle").read_bytes()) for b, root in roots.items()}
    assert requests["jsonl"] == requests["sqlite"] and len(requests["jsonl"]) == 7


def test_records_keep_timing_usage_metadata_and_tags_as_zett_gave_them(tmp_path: Path) -> None:
    """Each record carries the request id, timing, token counts, metadata and tags of zett's append."""
    run_both(tmp_path, "chat-1", ("run", "Add things."))
    _, log = dump("jsonl", tmp_path / "jsonl", "chat-1")
    assistant = next(r for r in log if isinstance(r.message, AssistantMessage))
    assert (assistant.input_tokens, assistant.output_tokens, assistant.cache_read_tokens) == (20, 7, 4)
    assert assistant.metadata == {"source": "test"} and assistant.tags == {"turn": "Add things."}
    assert assistant.completed_at >= assistant.started_at and assistant.duration_ns > 0
    assert len({r.request_id for r in log}) == 1 and log[0].request_id


def test_a_kill_inside_a_tool_restores_a_context_zett_and_openai_accept(tmp_path: Path) -> None:
    """os._exit in a tool: the next request answers the open call, and OpenAI's payload pairs every call."""
    roots = run_both(tmp_path, "chat-1", ("run", "Add things."), ("run", "Now crash."))
    for backend, root in roots.items():
        view, _ = dump(backend, root, "chat-1")
        last = view.raw_tail[-1].message
        assert (
            isinstance(last, ToolMessage) and last.tool_call_id == "call-2-a"
        )  # the add ran, the crash did not
        assert classify_resume(view.messages).kind is ResumeKind.RECOVER_TOOLS
        # the native API reads zett's records as provider-safe context too
        store = SessionStore(root) if backend == "jsonl" else None
        if store is not None:
            assert not is_provider_valid(store.load("chat-1").context)
            assert is_provider_valid(store.load("chat-1").model_context())
        scenario(backend, root, "chat-1", "provider", "Go on.")
    payloads = {b: json.loads((root / "openai.json").read_bytes()) for b, root in roots.items()}
    assert payloads["jsonl"] == payloads["sqlite"]
    messages = payloads["jsonl"]["messages"]
    for index, message in enumerate(messages):
        if message["role"] == "assistant" and message.get("tool_calls"):
            ids = [call["id"] for call in message["tool_calls"]]
            answers = [m["tool_call_id"] for m in messages[index + 1 : index + 1 + len(ids)]]
            assert sorted(answers) == sorted(ids), messages
    assert messages[-1] == {"role": "user", "content": "Go on."}
    (_, jsonl_log), (_, sql_log) = (
        dump("jsonl", roots["jsonl"], "chat-1"),
        dump("sqlite", roots["sqlite"], "chat-1"),
    )
    assert same_log(jsonl_log, sql_log, runs=True)
    closing = next(
        r.message
        for r in jsonl_log
        if isinstance(r.message, ToolMessage) and r.message.tool_call_id == "call-2-b"
    )
    assert not closing.success and "may or may not have completed" in closing.text


def test_resume_after_a_kill_inside_a_tool_matches_sqlite(tmp_path: Path) -> None:
    """agent.resume() after os._exit in a tool: the same closing result, model request and log as SQLite."""
    roots = run_both(tmp_path, "chat-1", ("run", "Please crash now."), ("resume",))
    (_, jsonl_log), (_, sql_log) = (
        dump("jsonl", roots["jsonl"], "chat-1"),
        dump("sqlite", roots["sqlite"], "chat-1"),
    )
    assert same_log(jsonl_log, sql_log, runs=True)
    assert isinstance(jsonl_log[-1].message, AssistantMessage) and jsonl_log[-1].message.content.startswith(
        "Results:"
    )
    requests = {b: pickle.loads((root / "requests.pickle").read_bytes()) for b, root in roots.items()}
    assert requests["jsonl"] == requests["sqlite"]


# -- the storage protocol, called directly ----------------------------------------------


def every_kind_of_message() -> list[Any]:
    image = ImageContent(ImageBytesSource(b"\x89PNG\r\n\x1a\n\x00\xff", "image/png"), alt_text="a dot")
    return [
        SystemMessage(content="Be brief.", include_in_messages=True),
        UserMessage(content=[TextContent("What is this?"), image], attributes={"ui": {"draft": 2**70}}),
        AgentMessage(content="Continue with the plan.", attributes={"resume": "retry_response"}),
        AssistantMessage(
            content="Looking.",
            reasoning="It is an image.",
            provider="anthropic",
            model="claude-x",
            tool_calls=(
                ToolCall("t1", "zoom", {"factor": 2.5, "box": [1, 2, None]}),
                ToolCall("t2", "ocr", {}, error="bad JSON"),
            ),
            replay_blocks=({"type": "thinking", "signature": "c2ln"},),
        ),
        ToolMessage(tool_call_id="t1", name="zoom", content=[TextContent("zoomed"), image]),
        ToolMessage(tool_call_id="t2", name="ocr", content="unreadable", success=False),
        AssistantMessage(content="Cut", stop=StopInfo(StopReason.MAX_OUTPUT, "length")),
        UserMessage(content="Hidden from the model.", include_in_messages=False),
        UserMessage(content="Not for subscribers.", persist=False),
    ]


async def append_all(storage: Any, session_id: str, messages: list[Any], timing: MessageTiming) -> list[int]:
    sequences = []
    for message in messages:
        usage = ModelUsage(input_tokens=9, output_tokens=3) if isinstance(message, AssistantMessage) else None
        sequences.append(
            await storage.append(
                session_id, "req-1", message, timing, metadata={"n": 1.5}, tags={"k": "v"}, usage=usage
            )
        )
    return sequences


def both(tmp_path: Path) -> tuple[JsonlSessionStorage, Any]:
    return JsonlSessionStorage(tmp_path / "jsonl"), SQLiteSessionStorage(tmp_path / "sessions.sqlite3")


def test_every_kind_of_zett_message_comes_back_equal_in_a_new_process(tmp_path: Path) -> None:
    """Images as bytes, agent messages, stop info, replay blocks, big ints, persist=False: equal objects."""
    messages = every_kind_of_message()

    async def write() -> None:
        jsonl, sql = both(tmp_path)
        timing = MessageTiming.instant()
        sequences = await append_all(jsonl, "user:42/chat 1", messages, timing)
        assert sequences == await append_all(sql, "user:42/chat 1", messages, timing) == list(range(1, 10))
        await sql.close()

    asyncio.run(write())
    (tmp_path / "sqlite").mkdir()
    (tmp_path / "sessions.sqlite3").rename(tmp_path / "sqlite" / "sessions.sqlite3")
    (view, log), (sql_view, sql_log) = (
        dump("jsonl", tmp_path / "jsonl", "user:42/chat 1"),
        dump("sqlite", tmp_path / "sqlite", "user:42/chat 1"),
    )
    assert [r.message for r in log] == messages == [r.message for r in sql_log]
    assert same_log(log, sql_log)
    assert view.messages == sql_view.messages and log[0].session_id == "user:42/chat 1"
    assert (tmp_path / "jsonl" / "user.3a42.2fchat.201" / "messages.jsonl").exists()


def test_a_session_written_with_the_native_api_loads_as_zett_messages(tmp_path: Path) -> None:
    """Records of the store's own message classes come back as the zett messages they stand for."""
    from jsonl_store import AssistantMessage as Assistant
    from jsonl_store import CompactedMessage as Compacted
    from jsonl_store import SystemMessage as System
    from jsonl_store import ToolCall as Call
    from jsonl_store import ToolMessage as Tool
    from jsonl_store import UserMessage as User

    store = SessionStore(tmp_path)
    store.append("native", System(content="Be brief."))
    store.append("native", User(content="Read it."))
    store.snapshot("native", Compacted(content="Asked to read."), 2, 0)
    store.append(
        "native",
        Assistant(
            content="On it.", reasoning="r", tool_calls=[Call(id="c1", name="read", arguments={"p": 1})]
        ),
    )
    store.append("native", Tool(tool_call_id="c1", name="read", content={"lines": 3}, is_error=True))
    view = asyncio.run(JsonlSessionStorage(tmp_path).load("native"))
    assert view.snapshot is not None and view.snapshot.compacted_message == CompactedMessage(
        content="Asked to read."
    )
    assert [r.message for r in view.raw_tail] == [
        AssistantMessage(content="On it.", reasoning="r", tool_calls=(ToolCall("c1", "read", {"p": 1}),)),
        ToolMessage(tool_call_id="c1", name="read", content='{"lines": 3}', success=False),
    ]


def test_a_failed_tool_result_is_an_error_to_the_stores_own_readers(tmp_path: Path) -> None:
    """A zett ToolMessage with success=False is stored with is_error, and reads back without it."""
    failed = ToolMessage(tool_call_id="t", name="run", content="boom", success=False)

    async def go() -> Any:
        storage = JsonlSessionStorage(tmp_path)
        await storage.append("s", "r", failed)
        return (await storage.load("s")).raw_tail[0].message

    assert asyncio.run(go()) == failed
    stored = next(SessionStore(tmp_path).records("s")).message
    assert isinstance(stored, dict) and stored["is_error"] is True


def test_a_batch_the_stores_resume_closed_loads_in_zett(tmp_path: Path) -> None:
    """After SessionStore.resume closed a zett session's open batch, zett loads it with the batch whole."""

    async def write() -> None:
        storage = JsonlSessionStorage(tmp_path)
        await storage.append("s", "r", UserMessage(content="Read both."))
        await storage.append(
            "s", "r", AssistantMessage(tool_calls=(ToolCall("a", "read"), ToolCall("b", "read")))
        )
        await storage.append("s", "r", ToolMessage(tool_call_id="a", name="read", content="ok"))

    asyncio.run(write())
    SessionStore(tmp_path).resume("s")
    view = asyncio.run(JsonlSessionStorage(tmp_path).load("s"))
    closing = view.raw_tail[-1].message
    assert isinstance(closing, ToolMessage) and closing.tool_call_id == "b"
    assert classify_resume(view.messages).kind is ResumeKind.CALL_MODEL


def test_zett_errors_are_the_value_errors_zett_sqlite_storage_raises(tmp_path: Path) -> None:
    """Bad input, a changed parent and stale or misplaced snapshots raise ValueError, with SQLite's words."""
    summary = CompactedMessage(content="Earlier: greetings.")

    async def attempts(storage: Any) -> list[str]:
        await storage.append("parent", "r", UserMessage(content="hi"))
        await storage.append("child", "r", UserMessage(content="hi"), parent_session_id="parent")
        await storage.snapshot("parent", summary, 1, 0)
        calls = [
            storage.append("parent", "r", UserMessage(content="x"), usage=ModelUsage(input_tokens=1)),
            storage.append("parent", "r", summary),
            storage.append("parent", "r", UserMessage(content="x"), title="  "),
            storage.append("parent", "r", UserMessage(content="x"), agent_name="a" * 65),
            storage.append("parent", "r", UserMessage(content="x"), metadata={"bad": float("nan")}),
            storage.append("parent", "r", UserMessage(content="x"), tags={" ": 1}),
            storage.append("child", "r", UserMessage(content="x")),
            storage.append("child", "r", UserMessage(content="x"), parent_session_id="other"),
            storage.append("parent", "r", UserMessage(content="x"), parent_session_id="other"),
            storage.snapshot("parent", summary, 1, 0),
            storage.snapshot("parent", summary, 1, 1),
            storage.snapshot("parent", summary, 99, 1),
            storage.snapshot("nobody", summary, 1, 0),
        ]
        errors = []
        for call in calls:
            with pytest.raises(ValueError) as caught:
                await call
            errors.append(str(caught.value))
        if isinstance(storage, SQLiteSessionStorage):
            await storage.close()
        return errors

    jsonl, sql = both(tmp_path)
    assert asyncio.run(attempts(jsonl)) == asyncio.run(attempts(sql))


def test_zett_refusals_are_typed_value_errors_that_keep_zetts_text_and_pickle(tmp_path: Path) -> None:
    """Each refusal is a ZettCompatError: caught by ``except ValueError`` and ``except JsonlStoreError``, zett's text, picklable."""
    summary = CompactedMessage(content="Earlier: greetings.")

    async def refusals(storage: JsonlSessionStorage) -> list[ValueError]:
        await storage.append("s", "r", UserMessage(content="hi"))
        calls = [
            storage.append("s", "r", UserMessage(content="x"), title=" "),
            storage.append("s", "r", UserMessage(content="x"), metadata={"bad": float("nan")}),
            storage.append("s", "r", UserMessage(content="x"), parent_session_id="s"),
            storage.create_session(session_id="s"),
            storage.list_sessions(limit=0),
            storage.update_session("s"),
            storage.snapshot("s", summary, 9, 0),
        ]
        caught = []
        for call in calls:
            with pytest.raises(ValueError) as raised:
                await call
            caught.append(raised.value)
        return caught

    errors = asyncio.run(refusals(JsonlSessionStorage(tmp_path)))
    assert all(type(error) is ZettCompatError and isinstance(error, JsonlStoreError) for error in errors)
    assert [str(error) for error in errors] == [
        "Session title must contain between 1 and 200 characters",
        "Message metadata must be JSON serializable",
        "parent_session_id must differ from session_id",
        "Session already exists: s",
        "limit must be positive",
        "At least one session field must be supplied",
        "Snapshot boundary must identify an existing Raw Log message",
    ]
    copies = [pickle.loads(pickle.dumps(error)) for error in errors]
    assert [(type(copy), str(copy)) for copy in copies] == [(ZettCompatError, str(error)) for error in errors]


def test_a_stale_snapshot_keeps_the_stores_conflict_as_its_cause(tmp_path: Path) -> None:
    """The ValueError for a stale version has the store's SnapshotConflict as its __cause__."""
    from jsonl_store import SnapshotConflict

    async def go() -> BaseException | None:
        storage = JsonlSessionStorage(tmp_path)
        await storage.append("s", "r", UserMessage(content="hi"))
        await storage.snapshot("s", CompactedMessage(content="sum"), 1, 0)
        with pytest.raises(ValueError, match="Snapshot conflict") as caught:
            await storage.snapshot("s", CompactedMessage(content="sum"), 1, 0)
        return caught.value.__cause__

    assert isinstance(asyncio.run(go()), SnapshotConflict)


def test_a_later_appends_title_and_agent_name_update_the_session_as_sqlite_does(tmp_path: Path) -> None:
    """Title and agent name given with a later append become the session's, in both storages."""

    async def go(storage: Any) -> list[tuple[str | None, str | None]]:
        seen = []
        await storage.append("s", "r", UserMessage(content="hi"), title="First", agent_name="planner")
        seen.append(((v := await storage.load("s")).title, v.agent_name))
        await storage.append("s", "r", UserMessage(content="more"))
        seen.append(((v := await storage.load("s")).title, v.agent_name))
        await storage.append("s", "r", UserMessage(content="more"), title="Second")
        seen.append(((v := await storage.load("s")).title, v.agent_name))
        await storage.append("s", "r", UserMessage(content="more"), agent_name="coder")
        seen.append(((v := await storage.load("s")).title, v.agent_name))
        if isinstance(storage, SQLiteSessionStorage):
            await storage.close()
        return seen

    jsonl, sql = both(tmp_path)
    assert asyncio.run(go(jsonl)) == asyncio.run(go(sql)) == [
        ("First", "planner"), ("First", "planner"), ("Second", "planner"), ("Second", "coder"),
    ]  # fmt: skip


def test_a_title_a_user_set_outlasts_a_later_appends_title(tmp_path: Path) -> None:
    """A UI rename through the store is a user's choice; an append's title is the runtime's and yields."""

    async def go() -> str | None:
        storage = JsonlSessionStorage(tmp_path)
        await storage.append("s", "r", UserMessage(content="hi"), title="Generated")
        storage.store.update_session("s", title="Renamed by the user")
        await storage.append("s", "r", UserMessage(content="more"), title="Generated again")
        return (await storage.load("s")).title

    assert asyncio.run(go()) == "Renamed by the user"


def test_an_unknown_session_loads_empty_as_in_sqlite(tmp_path: Path) -> None:
    """load() of a session never written is an empty view, and writes nothing."""
    jsonl, sql = both(tmp_path)

    async def go(storage: Any) -> Any:
        view = await storage.load("nobody")
        if isinstance(storage, SQLiteSessionStorage):
            await storage.close()
        return view

    assert asyncio.run(go(jsonl)) == asyncio.run(go(sql))
    assert not (tmp_path / "jsonl").exists()


def test_list_raw_messages_pages_the_log_as_sqlite_does(tmp_path: Path) -> None:
    """after_sequence, through_sequence, offset and limit select the same records in both storages."""

    async def go(storage: Any) -> list[list[int]]:
        for n in range(8):
            await storage.append("s", "r", UserMessage(content=str(n)))
        await storage.snapshot("s", CompactedMessage(content="sum"), 4, 0)
        pages = [
            [r.sequence for r in await storage.list_raw_messages("s", **query)]
            for query in ({}, {"after_sequence": 2}, {"through_sequence": 5}, {"offset": 1, "limit": 3},
                          {"after_sequence": 1, "through_sequence": 6, "offset": 2, "limit": 2})
        ]  # fmt: skip
        if isinstance(storage, SQLiteSessionStorage):
            await storage.close()
        return pages

    jsonl, sql = both(tmp_path)
    assert asyncio.run(go(jsonl)) == asyncio.run(go(sql))


def test_a_missing_extra_is_a_one_line_import_error_naming_it() -> None:
    """Without zett-agent, importing the adapter says which extra to install, in one line."""
    code = (
        "import sys; sys.modules['zett_agent'] = None\n"
        "try:\n    import jsonl_store.adapters.zett\n"
        "except ImportError as e:\n    print(e)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout == 'jsonl_store.adapters.zett needs zett-agent: pip install "jsonl_store[zett]"\n'


def test_the_store_and_its_adapters_package_import_no_framework() -> None:
    """Importing jsonl_store and jsonl_store.adapters loads no zett-agent module."""
    code = "import sys, jsonl_store, jsonl_store.adapters; print(any(m.startswith('zett_agent') for m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout == "False\n"
