"""Hypothesis strategies for sessions, messages and workloads (needs ``hypothesis``).

The messages are the kinds an agent writes: system, user and assistant turns, and tool
batches (an assistant message with tool calls and the results that follow), both as
message classes and as plain dicts, with text that stresses a line-oriented format
(newlines, U+2028, NUL, emoji). A workload is a list of `Operation` values that
`jsonl_store.testing.oracle.run_workload` runs against a store.

Example::

    from hypothesis import given
    from jsonl_store.testing import SimulatedFileSystem, crash_states
    from jsonl_store.testing.oracle import run_workload
    from jsonl_store.testing.strategies import workloads

    @given(workloads())
    def test_my_resume_code(workload):
        fs = SimulatedFileSystem()
        result = run_workload(SessionStore("/store", fs=fs), workload, fs=fs)
        for state in crash_states(fs):
            my_resume(SessionStore("/store", fs=state.filesystem()))
"""

from __future__ import annotations

import errno
import json
from typing import Any

from hypothesis import strategies as st

from .._format.records import (
    AssistantMessage,
    Message,
    ModelUsage,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from .._log.blobs import MARKER_KEY
from ._simfs import Fault
from ._workload import Append, AppendMany, Operation, RecordUsage, Snapshot, UpdateSession

# Characters a JSON-lines format must survive: a line end inside a string, the Unicode
# line separators str.splitlines() would split on, NUL, a lone high code point, quotes.
_TRICKY = '\n\r\u2028\u2029\x00\x85"\\{}😀é\t'


def texts(*, max_size: int = 40) -> st.SearchStrategy[str]:
    """Short text, heavy on characters that break naive line handling."""
    alphabet = st.one_of(st.sampled_from(_TRICKY), st.characters(codec="utf-8"))
    return st.text(alphabet, max_size=max_size)


def _titles() -> st.SearchStrategy[str]:
    """Titles as tricky as `texts`, but without the NUL the store refuses in a title."""
    return texts(max_size=10).map(lambda text: text.replace("\x00", "")).filter(bool)


def session_ids() -> st.SearchStrategy[str]:
    """Valid session ids: ``[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}`` (kept short here)."""
    return st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,15}", fullmatch=True)


def json_values(*, max_leaves: int = 8) -> st.SearchStrategy[Any]:
    """JSON values that round-trip unchanged: huge integers, finite floats, nesting.

    No object has the key ``"$blob"``, which marks a large string kept in a blob file
    (spec §5.1): a message holding one is refused (`InvalidMessage`).
    """
    leaves = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=False, allow_infinity=False),
        texts(max_size=10),
    )
    return st.recursive(
        leaves,
        lambda children: (
            st.lists(children, max_size=3)
            | st.dictionaries(texts(max_size=6).filter(lambda key: key != MARKER_KEY), children, max_size=3)
        ),
        max_leaves=max_leaves,
    )


def _message_ids() -> st.SearchStrategy[str]:
    return st.uuids().map(str)


def _call_ids(count: int) -> st.SearchStrategy[list[str]]:
    return st.lists(
        st.from_regex(r"call_[a-z0-9]{1,8}", fullmatch=True), min_size=count, max_size=count, unique=True
    )


@st.composite
def messages(draw: st.DrawFn, *, plain: bool | None = None) -> Message:
    """One system, user or plain-text assistant message (a class or, if ``plain``, a dict)."""
    as_dict = draw(st.booleans()) if plain is None else plain
    role = draw(st.sampled_from(["user", "user", "assistant", "system"]))
    content = draw(texts())
    hidden = draw(st.integers(0, 9)) == 0  # now and then a message kept out of the model context
    if as_dict:
        message: dict[str, Any] = {"role": role, "content": content}
        if draw(st.booleans()):
            message["x_extra"] = draw(json_values())
        if hidden:
            message["include_in_messages"] = False
        return message
    # Ids are drawn, not left to the default factory: it uses the random module, which
    # hypothesis forbids inside strategies (and reseeds per example).
    common: dict[str, Any] = {"id": draw(_message_ids()), "include_in_messages": not hidden}
    if role == "user":
        return UserMessage(content=content, **common)
    if role == "system":
        return SystemMessage(content=content, **common)
    return AssistantMessage(content=content, reasoning=draw(st.none() | texts()), **common)


@st.composite
def tool_batches(
    draw: st.DrawFn, *, plain: bool | None = None, complete: bool | None = None
) -> list[Message]:
    """An assistant message with 1-3 tool calls and the results right after it.

    ``complete=False`` leaves some calls unanswered (an interrupted batch); ``None`` lets
    hypothesis choose. Results come in any order.
    """
    as_dict = draw(st.booleans()) if plain is None else plain
    count = draw(st.integers(1, 3))
    ids = draw(_call_ids(count))
    names = [draw(st.sampled_from(["read_file", "bash", "search"])) for _ in ids]
    arguments = [
        draw(st.dictionaries(st.sampled_from(["path", "q", "n"]), json_values(max_leaves=3), max_size=2))
        for _ in ids
    ]
    answered = (
        list(ids)
        if (complete or (complete is None and draw(st.booleans())))
        else draw(
            st.lists(st.sampled_from(ids), unique=True, max_size=count - 1) if count > 1 else st.just([])
        )
    )
    answered = draw(st.permutations(answered))
    results = [draw(texts(max_size=20)) for _ in answered]
    if as_dict:
        assistant: Message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
                for i, n, a in zip(ids, names, arguments, strict=True)
            ],
        }
        tools: list[Message] = [
            {"role": "tool", "tool_call_id": i, "content": r} for i, r in zip(answered, results, strict=True)
        ]
    else:
        assistant = AssistantMessage(
            id=draw(_message_ids()),
            tool_calls=[
                ToolCall(id=i, name=n, arguments=a) for i, n, a in zip(ids, names, arguments, strict=True)
            ],
        )
        tools = [
            ToolMessage(id=draw(_message_ids()), tool_call_id=i, content=r, name=names[ids.index(i)])
            for i, r in zip(answered, results, strict=True)
        ]
    return [assistant, *tools]


def usages() -> st.SearchStrategy[ModelUsage]:
    """Token counts of one model call."""
    count = st.integers(0, 200_000)
    return st.builds(
        ModelUsage,
        input_tokens=count,
        output_tokens=count,
        cache_read_tokens=count,
        cache_write_tokens=count,
        reasoning_tokens=count,
    )


@st.composite
def _operations(draw: st.DrawFn, session_id: str) -> list[Operation]:
    """One step of an agent: a turn, a tool batch (one write or several), a snapshot, ..."""
    kind = draw(st.sampled_from(["message", "message", "batch", "batch", "snapshot", "update", "usage"]))
    if kind == "message":
        message = draw(messages())
        is_assistant = isinstance(message, AssistantMessage) or (
            isinstance(message, dict) and message["role"] == "assistant"
        )
        return [
            Append(
                session_id,
                message,
                request_id=draw(st.none() | st.from_regex(r"req-[0-9]{1,4}", fullmatch=True)),
                usage=draw(st.none() | usages()) if is_assistant else None,
                title=draw(st.none() | _titles()),
                tags=draw(
                    st.none()
                    | st.dictionaries(st.sampled_from(["a", "b"]), json_values(max_leaves=2), max_size=2)
                ),
            )
        ]
    if kind == "batch":
        batch = draw(tool_batches())
        if draw(st.booleans()):
            return [AppendMany(session_id, tuple(batch))]
        return [Append(session_id, message) for message in batch]
    if kind == "snapshot":
        return [
            Snapshot(
                session_id,
                draw(texts(max_size=30)),
                through=draw(st.sampled_from([0.25, 0.5, 1.0])),
                plain=draw(st.booleans()),
            )
        ]
    if kind == "update":
        return [
            UpdateSession(
                session_id,
                title=draw(st.none() | _titles()),
                pinned=draw(st.none() | st.booleans()),
                metadata=draw(
                    st.none()
                    | st.dictionaries(st.sampled_from(["k", "v"]), json_values(max_leaves=2), max_size=2)
                ),
            )
        ]
    return [RecordUsage(session_id, draw(usages()), model=draw(st.none() | st.sampled_from(["m-1", "m-2"])))]


@st.composite
def workloads(
    draw: st.DrawFn, *, sessions: int = 2, min_steps: int = 1, max_steps: int = 8
) -> list[Operation]:
    """A workload over 1 to ``sessions`` sessions: ``min_steps`` to ``max_steps`` agent steps.

    Each step is one or more operations (a tool batch appended message by message is
    several), so a crash can fall inside a batch.
    """
    ids = draw(st.lists(session_ids(), min_size=1, max_size=sessions, unique=True))
    steps = draw(st.lists(st.sampled_from(ids).flatmap(_operations), min_size=min_steps, max_size=max_steps))
    return [op for step in steps for op in step]


#: The calls an injected fault can hit: every call through which the store changes the disk.
FAULT_OPS = (
    "write",
    "fdatasync",
    "fsync",
    "fsync_dir",
    "rename",
    "link",
    "unlink",
    "ftruncate",
    "mkdir",
    "open",
)


@st.composite
def faults(draw: st.DrawFn, *, max_after: int = 12) -> Fault:
    """An I/O error for one of the store's calls: EIO or ENOSPC, or a short write."""
    op = draw(st.sampled_from(FAULT_OPS))
    after = draw(st.integers(0, max_after))
    if op == "write" and draw(st.booleans()):
        return Fault(op, errno.ENOSPC, after=after, short_write=draw(st.integers(1, 64)))
    return Fault(op, draw(st.sampled_from([errno.EIO, errno.ENOSPC])), after=after)
