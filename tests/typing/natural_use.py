"""Code a user would write against the public API; it must pass ``mypy --strict`` unchanged.

Nothing here runs in the suite: `test_public_api_types.py` type-checks this directory.
Each function is one habit of an agent runtime, written the way the docs show it.
"""

from __future__ import annotations

import asyncio
import errno

from jsonl_store import (
    AssistantMessage,
    AsyncSessionStore,
    CompactedMessage,
    Message,
    ModelUsage,
    Problem,
    RawMessageRecord,
    SessionNotFound,
    SessionStore,
    SessionSummary,
    SessionView,
    StorageError,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UnsafePath,
    UserMessage,
    is_provider_valid,
)
from jsonl_store.testing import SimulatedFileSystem, crash_states


def one_turn(store: SessionStore, sid: str) -> list[int]:
    """A turn appended as one batch, given as a list literal of mixed message classes."""
    return store.append_many(
        sid,
        [
            UserMessage(content="Run the tests."),
            AssistantMessage(tool_calls=[ToolCall(id="t1", name="pytest", arguments={"k": "fast"})]),
            ToolMessage(tool_call_id="t1", content="12 passed"),
        ],
        usage=ModelUsage(input_tokens=120, output_tokens=30),
        title="tests",
    )


def batch_built_first(store: SessionStore, sid: str) -> list[int]:
    """A batch put in a variable before the call: its inferred type must still be accepted."""
    batch = [UserMessage(content="hi"), AssistantMessage(content="hello")]
    batch.append(UserMessage(content="and again"))
    return store.append_many(sid, batch)


def plain_dicts(store: SessionStore, sid: str) -> int:
    """Messages given as plain dicts, as a provider SDK returns them."""
    store.append_many(sid, [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}])
    return store.append(sid, {"role": "system", "content": "be brief"})


def tool_names(store: SessionStore, sid: str) -> list[str]:
    """Iterate the raw log and narrow each record's message with isinstance."""
    names: list[str] = []
    for record in store.records(sid, after=0):
        message = record.message
        if isinstance(message, AssistantMessage):
            names.extend(call.name for call in message.tool_calls)
        elif isinstance(message, ToolMessage):
            names.append(message.name or message.tool_call_id)
        elif isinstance(message, dict):
            names.append(str(message.get("role")))
        sequence: int = record.sequence
        tokens: int | None = record.total_tokens
        del sequence, tokens
    return names


def first_user_text(records: list[RawMessageRecord]) -> str | None:
    """Read the content of a narrowed message without a cast."""
    for record in records:
        if isinstance(record.message, UserMessage) and isinstance(record.message.content, str):
            return record.message.content
    return None


def context_for_model(store: SessionStore, sid: str) -> list[Message]:
    """Load a session and hand its context to a provider."""
    view: SessionView = store.load(sid)
    messages: list[Message] = view.messages
    closed = view.model_context(mid_history="close", close_last=True)
    assert is_provider_valid(closed)
    problems: list[Problem] = view.problems
    if view.snapshot is not None:
        print(view.snapshot.compacted_through_sequence, view.last_sequence, len(problems))  # noqa: T201 - user code prints
    return messages + closed


def compact(store: SessionStore, sid: str) -> int:
    """Summarise the log so far into a snapshot."""
    view = store.load(sid)
    version = view.snapshot.version if view.snapshot else 0
    snapshot = store.snapshot(sid, CompactedMessage(content="summary"), view.last_sequence, version)
    return snapshot.version


def save_runner_state(store: SessionStore, sid: str, history: list[Message]) -> list[int]:
    """A runner saving its whole message list each step."""
    history.append(SystemMessage(content="be brief"))
    return store.checkpoint(sid, history, request_id="r1")


def rename(store: SessionStore, sid: str) -> SessionSummary:
    """A UI rename, then a runtime update that must not clobber it."""
    summary = store.update_session(sid, title="Release notes", pinned=True)
    return store.update_session(
        sid,
        metadata={"cost": 0.02},
        remove_metadata=["draft"],
        expected_version=summary.version,
        origin="runtime",
    )


def spent(store: SessionStore, sid: str) -> int:
    """Record a model call's usage and read the session's total."""
    store.record_usage(sid, ModelUsage(input_tokens=10, output_tokens=2))
    store.record_usage(sid, {"input_tokens": 5, "model": "m"})
    totals: ModelUsage = store.usage_totals(sid)
    return totals.total_tokens + totals.cache_read_tokens


def careful_append(store: SessionStore, sid: str) -> str:
    """Catch the storage errors and act on their fields."""
    try:
        store.append(sid, UserMessage(content="hi"))
    except UnsafePath as exc:
        return f"a person must look at {exc.path} (errno {exc.errno})"
    except StorageError as exc:
        if exc.errno == errno.ENOSPC:
            return "disk full"
        return f"{exc.filename}: {exc.strerror}"
    except SessionNotFound as exc:
        return exc.message
    return "ok"


def listing(store: SessionStore) -> dict[str, str | None]:
    """List sessions and their titles."""
    found = store.get_session("chat-1")
    titles = {s.session_id: s.title for s in store.list_sessions()}
    if found is not None:
        titles[found.session_id] = found.title
    return titles


async def async_turn(root: str, sid: str) -> int:
    """The same habits from asyncio code."""
    async with AsyncSessionStore(root, durability="none") as store:
        await store.append_many(sid, [UserMessage(content="hi"), AssistantMessage(content="hello")])
        await store.append(sid, UserMessage(content="more"))
        view = await store.load(sid)
        count = 0
        async for record in store.records(sid):
            if isinstance(record.message, AssistantMessage):
                count += 1
        summary = await store.update_session(sid, title="async")
        totals = await store.usage_totals(sid)
        return count + len(view.messages) + summary.version + totals.total_tokens


def crash_test_my_resume() -> int:
    """The agent-loop guide's crash-state example: the simulated file system passed as ``fs=``."""
    fs = SimulatedFileSystem()
    agent = SessionStore("/store", fs=fs)
    agent.append("job", UserMessage(content="Run the tests."))
    resumed = 0
    for state in crash_states(fs):
        context = SessionStore("/store", fs=state.filesystem()).load("job").model_context(close_last=True)
        assert is_provider_valid(context), state.description
        resumed += 1
    return resumed


if __name__ == "__main__":
    print(asyncio.run(async_turn("/tmp/sessions", "chat")))  # noqa: T201 - user code prints
