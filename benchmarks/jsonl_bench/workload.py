"""The records every store is measured on, made once and shared by all of them.

Two kinds, as an agent produces them: an assistant message of about 0.8 KB on disk with
one tool call and token usage, and a 10 KB tool result. Each store gets the same content;
the baselines get it as the plain dict a raw-log line holds, jsonl_store as message objects.
Content is varied per record (a pool of distinct texts) so no layer can cache a repeat.
"""

from __future__ import annotations

import functools
import os
import random
import sysconfig
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

ASSISTANT = "assistant"
TOOL = "tool"

_WORDS = [
    "the",
    "file",
    "config",
    "parser",
    "returns",
    "value",
    "error",
    "when",
    "line",
    "token",
    "index",
    "path",
    "module",
    "test",
    "function",
    "class",
    "import",
    "raise",
    "except",
    "list",
    "dict",
    "string",
    "bytes",
    "offset",
    "record",
    "session",
    "store",
    "append",
    "snapshot",
    "tail",
    "boundary",
    "checksum",
    "writer",
    "reader",
    "lock",
    "fsync",
    "rename",
    "directory",
]
_POOL = 256


@dataclass(frozen=True, slots=True)
class Turn:
    """The content of one record, independent of how a store represents it."""

    kind: str
    text: str
    call_id: str
    arguments: dict[str, Any]
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int


def _text(rng: random.Random, size: int) -> str:
    words: list[str] = []
    length = 0
    while length < size:
        word = rng.choice(_WORDS)
        words.append(word)
        length += len(word) + 1
    return " ".join(words)[:size]


def _make_pool(kind: str, text_size: int, seed: int) -> list[Turn]:
    rng = random.Random(seed)
    return [
        Turn(
            kind=kind,
            text=_text(rng, text_size),
            call_id=f"call_{seed}_{i:04d}",
            arguments={"path": f"src/pkg/module_{i % 37}.py", "start_line": i, "end_line": i + 40},
            input_tokens=1200 + rng.randrange(4000),
            output_tokens=50 + rng.randrange(400),
            cache_read_tokens=rng.randrange(1200),
        )
        for i in range(_POOL)
    ]


# Text sizes chosen so a raw-log line (with sequence, ids, timestamps, usage and the
# store's own framing) comes out near 0.8 KB and 10 KB; bench.py prints the real sizes.
_ASSISTANT_POOL = _make_pool(ASSISTANT, 420, seed=1)
_TOOL_POOL = _make_pool(TOOL, 9_900, seed=2)


def turn(kind: str, i: int) -> Turn:
    """The ``i``-th record of ``kind`` (cycling through a pool of distinct contents)."""
    pool = _ASSISTANT_POOL if kind == ASSISTANT else _TOOL_POOL
    return pool[i % _POOL]


def mixed_kind(i: int) -> str:
    """Kind of the ``i``-th record of a realistic mixed log: every fourth is a tool result."""
    return TOOL if i % 4 == 3 else ASSISTANT


# ---------------------------------------------------------------------------------------
# As plain dicts (what the floor, SQLite, whole-file and harness baselines write)
# ---------------------------------------------------------------------------------------

_NOW = datetime(2025, 1, 1, tzinfo=UTC).isoformat()


def record_dict(t: Turn, sequence: int) -> dict[str, Any]:
    """The record as a raw-log line would hold it: sequence, ids, time, message, usage."""
    # Ids and timestamps are fixed strings: the floor is the cost of encoding and writing
    # a line of this shape, not of making ids or reading the clock.
    record: dict[str, Any] = {
        "sequence": sequence,
        "id": "01940000-0000-7000-8000-000000000000",
        "created_at": _NOW,
    }
    if t.kind == ASSISTANT:
        record["message"] = {
            "role": "assistant",
            "id": "01940000-0000-7000-8000-000000000001",
            "content": t.text,
            "tool_calls": [{"id": t.call_id, "name": "read_file", "arguments": t.arguments}],
        }
        record["input_tokens"] = t.input_tokens
        record["output_tokens"] = t.output_tokens
        record["cache_read_tokens"] = t.cache_read_tokens
    else:
        record["message"] = {
            "role": "tool",
            "id": "01940000-0000-7000-8000-000000000001",
            "tool_call_id": t.call_id,
            "name": "read_file",
            "content": t.text,
        }
    return record


def record_dicts(kind: str, start: int, count: int) -> list[dict[str, Any]]:
    return [record_dict(turn(kind, i), i + 1) for i in range(start, start + count)]


# ---------------------------------------------------------------------------------------
# As jsonl_store messages (imported lazily: the baselines run without the store)
# ---------------------------------------------------------------------------------------


def store_message(t: Turn) -> tuple[Any, Any]:
    """``(message, usage)`` for `SessionStore.append`; usage is None for a tool result."""
    from jsonl_store import AssistantMessage, ModelUsage, ToolCall, ToolMessage

    if t.kind == ASSISTANT:
        message = AssistantMessage(
            content=t.text,
            tool_calls=[ToolCall(id=t.call_id, name="read_file", arguments=t.arguments)],
        )
        usage = ModelUsage(
            input_tokens=t.input_tokens,
            output_tokens=t.output_tokens,
            cache_read_tokens=t.cache_read_tokens,
        )
        return message, usage
    return ToolMessage(tool_call_id=t.call_id, name="read_file", content=t.text), None


def store_messages(kind: str, start: int, count: int) -> list[tuple[Any, Any]]:
    return [store_message(turn(kind, i)) for i in range(start, start + count)]


# ---------------------------------------------------------------------------------------
# Code output: what an agent's tool returns after `cat` of source files
# ---------------------------------------------------------------------------------------

#: The size of one code output: issue 20 bounds what redaction costs on 1 MB of it.
CODE_OUTPUT_BYTES = 1 << 20


@functools.cache
def _code() -> str:
    """1 MB of this interpreter's standard library, its files in name order: real code, full
    of the '=' and ':' and names (token, password, key) that redaction must read past."""
    folder = sysconfig.get_paths()["stdlib"]
    pieces: list[str] = []
    size = 0
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".py"):
            continue
        with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as file:
            pieces.append(file.read())
        size += len(pieces[-1])
        if size >= CODE_OUTPUT_BYTES:
            break
    return "".join(pieces)[:CODE_OUTPUT_BYTES]


def code_output(i: int) -> Any:
    """The ``i``-th 1 MB code output as a tool message; each differs in its last line, so no
    two are one blob file (a string this long is spilled, spec §5.1)."""
    from jsonl_store import ToolMessage

    return ToolMessage(tool_call_id=f"call_code_{i}", name="bash", content=f"{_code()}\n# output {i}\n")
