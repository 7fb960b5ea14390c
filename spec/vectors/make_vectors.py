#!/usr/bin/env python3
"""Build the test vectors of spec/FORMAT.md from fixed ids and timestamps.

    python spec/vectors/make_vectors.py            # rewrite valid/, invalid/, recover/
    python spec/vectors/make_vectors.py --check    # exit 1 if the committed files differ
    python spec/vectors/make_vectors.py --example  # print FORMAT.md §14's files, made by the store

Every line is made the way a writer makes it: the record is encoded by the library's own
msgspec Structs (so the key order is the writer's) and sealed with
`jsonl_store._format.codec.seal` (so the CRC-32 is right). Damage is then applied with the small
byte helpers of `jsonl_store.testing.damage` (`tear`, `flip`, `zero_fill`, `noise`,
`crlf`, `add_bom`), the same ones the tests use.

Each vector is a directory holding ``expected.json`` and ``session/`` (one session
directory, copied below a store root as ``<root>/session``). The expectations are written
here from how each vector was built (which line was damaged, at which byte offset), not
captured from the store, so tests/vectors/test_vectors.py checks the store against the
spec. The keys of ``expected.json`` are described in ``tests/vectors/test_vectors.py``.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import msgspec

from jsonl_store import (
    AssistantMessage,
    CompactedMessage,
    Message,
    ModelUsage,
    SessionStore,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from jsonl_store._format import codec as _codec
from jsonl_store._format.names import LOCK_NAME
from jsonl_store._format.records import ContextSnapshot, ForkPoint, RawMessageRecord, UsageRecord
from jsonl_store._log import blob_writes as _blob_writes
from jsonl_store._session import forks as _forks
from jsonl_store._session import meta as _meta
from jsonl_store.testing.damage import add_bom, crlf, flip, noise, tear, zero_fill

HERE = Path(__file__).resolve().parent
GROUPS = ("valid", "invalid", "recover")
SESSION = "session"
T0 = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)


# ---------------------------------------------------------------------------------------
# Fixed ids and times
# ---------------------------------------------------------------------------------------


def record_id(n: int) -> str:
    return f"01941a2b-3c00-7000-8000-{n:012x}"


def message_id(n: int) -> str:
    return f"01941a2b-3c00-7000-9000-{n:012x}"


def snapshot_id(n: int) -> str:
    return f"01941a2b-3c00-7000-a000-{n:012x}"


def at(seconds: int) -> datetime:
    return T0 + timedelta(seconds=seconds)


def iso(seconds: int) -> str:
    return at(seconds).isoformat().replace("+00:00", "Z")


# ---------------------------------------------------------------------------------------
# Lines, the way the writer makes them
# ---------------------------------------------------------------------------------------


def builtins(message: Any) -> Any:
    return msgspec.to_builtins(message)


class Log:
    """A raw log under construction: its lines, and what a reader must give back."""

    def __init__(self) -> None:
        self.lines: list[bytes] = []
        self.messages: dict[int, Any] = {}
        self.extra: dict[int, dict[str, Any]] = {}
        #: Blob files by SHA-256, for records added with ``spill`` (spec §5.1).
        self.blobs: dict[str, bytes] = {}

    def add(
        self,
        message: Any,
        *,
        sequence: int | None = None,
        n: int | None = None,
        seconds: int | None = None,
        spill: int | None = None,
        **fields: Any,
    ) -> bytes:
        """Append the line of one record; ``n`` picks its id and time (default: sequence).

        With ``spill``, strings over that many UTF-8 bytes go to blob files, as a writer
        with that threshold puts them (§5.1).
        """
        sequence = len(self.lines) + 1 if sequence is None else sequence
        n = sequence if n is None else n
        payload, plain = _codec.encode_message(message)
        if spill is not None:
            payload = _blob_writes.spill(payload, spill, self.blobs)
        record = RawMessageRecord(
            sequence=sequence,
            id=record_id(n),
            created_at=at(n if seconds is None else seconds),
            plain=plain,
            # Pre-encoded, embedded byte for byte by the encoder; the field's static
            # type is what readers give back, which a Raw never is.
            message=cast("Message", msgspec.Raw(payload)),
            **fields,
        )
        line = _codec.encode_record(record)
        self.lines.append(line)
        self.messages[sequence] = message
        if fields:
            self.extra[sequence] = fields
        return line

    def add_batch(self, *messages: Any) -> list[bytes]:
        """Append the lines of one `append_many` batch: one time, ``batch_end`` on every record."""
        first = len(self.lines) + 1
        end = first + len(messages) - 1
        assert len(messages) > 1, "a batch of one record carries no batch_end"
        return [self.add(message, seconds=first, batch_end=end) for message in messages]

    def data(self) -> bytes:
        return b"".join(self.lines)

    def files(self, *, leave_out: tuple[str, ...] = ()) -> dict[str, bytes]:
        """The session's files: the raw log and its blobs (but those named in ``leave_out``)."""
        blobs = {f"blobs/{digest}": data for digest, data in self.blobs.items() if digest not in leave_out}
        return {"messages.jsonl": self.data(), **blobs}

    def offset(self, index: int) -> int:
        """Byte offset where line ``index`` (0-based) starts."""
        return sum(len(line) for line in self.lines[:index])

    def expect(self, sequence: int, n: int | None = None) -> dict[str, Any]:
        """What a reader must give for the record with ``sequence``."""
        message = self.messages[sequence]
        out: dict[str, Any] = {
            "sequence": sequence,
            "id": record_id(sequence if n is None else n),
            "type": type(message).__name__,
            "message": builtins(message),
        }
        for key, value in self.extra.get(sequence, {}).items():
            out[key] = builtins(value)
        return out


def snapshot_line(
    log: Log,
    version: int,
    through: int,
    message: Any,
    *,
    boundary_index: int | None = None,
    boundary_id: str | None = None,
    shift: int = 0,
) -> bytes:
    """A snapshot whose boundary is record ``through`` of ``log`` (line index through - 1).

    ``shift``: bytes a text conversion added before the boundary record in the file the
    snapshot was made for.
    """
    index = through - 1 if boundary_index is None else boundary_index
    payload, plain = _codec.encode_message(message)
    start = log.offset(index) + shift
    snapshot = ContextSnapshot(
        version=version,
        id=snapshot_id(version),
        created_at=at(100 + version),
        compacted_through_sequence=through,
        boundary_offset=start,
        tail_offset=start + len(log.lines[index]),
        boundary_record_id=boundary_id or record_id(through),
        plain=plain,
        compacted_message=msgspec.Raw(payload),
    )
    return _codec.encode_snapshot(snapshot)


def meta(**fields: Any) -> bytes:
    return _meta.encode(_meta.SessionMeta(created_at=at(0), **fields))


def usage_line(seconds: int, **fields: Any) -> bytes:
    return _codec.encode_usage(UsageRecord(recorded_at=at(seconds), **fields))


def problem(kind: str, file: str, offset: int | None = None, line: int | None = None) -> dict[str, Any]:
    return {"kind": kind, "file": file, "offset": offset, "line": line}


#: What verify() says repair() would do (and repair() says it did) for each kind (§12).
ACTIONS = {
    "unsupported-format": "none: needs a newer jsonl_store",
    "bad-meta": "move aside",
    "leftover-temp": "delete",
    "damaged-line": "none: readers skip it",
    "gap": "none: readers skip it",
    "out-of-order": "none: readers skip it",
    "bad-record": "none: readers skip it",
    "bad-snapshot": "move aside",
    "text-conversion": "restore the bytes as written (\\n line ends, no byte-order mark)",
    "unrecognized-records": "none: restore the file's bytes as written, or move it aside; writers never cut these lines",
    "moved-boundary": "write the boundary offsets anew",
    "orphan-blob": "delete",
}
PUT_BLOB_BACK = "none: put the blob file back (from git or a copy); readers show a placeholder"
BLOB_SPILL = 64  # the threshold the blob vectors were written with: short strings, small files


def acted(found: list[dict[str, Any]], sidecar: str | None = None) -> list[dict[str, Any]]:
    """The problems of ``found`` with the action verify and repair name for each.

    A torn tail is cut into ``<log>.cut-<offset>``, or into ``sidecar`` when given (the
    name with ``.2`` when the first is taken).
    """
    out = []
    for item in found:
        if item["kind"] == "torn-tail":
            action = "cut into " + (sidecar or f"{item['file']}.cut-{item['offset']:012d}")
        else:
            action = ACTIONS[item["kind"]]
        out.append({**item, "action": action})
    return out


# ---------------------------------------------------------------------------------------
# The messages the vectors are made of
# ---------------------------------------------------------------------------------------


def conversation() -> Log:
    """Four plain-text turns: damage anywhere leaves no tool batch to repair."""
    log = Log()
    log.add(UserMessage(id=message_id(1), content="What is 6 x 7?"))
    log.add(AssistantMessage(id=message_id(2), content="6 x 7 = 42."))
    log.add(UserMessage(id=message_id(3), content="And 6 x 8?"))
    log.add(AssistantMessage(id=message_id(4), content="6 x 8 = 48."))
    return log


def summary(n: int, text: str) -> CompactedMessage:
    return CompactedMessage(id=message_id(100 + n), content=text)


def context(log: Log, *sequences: int, first: Any = None) -> list[Any]:
    out = [builtins(first)] if first is not None else []
    return out + [builtins(log.messages[s]) for s in sequences]


# ---------------------------------------------------------------------------------------
# Vectors
# ---------------------------------------------------------------------------------------

VECTORS: dict[str, tuple[dict[str, bytes], dict[str, Any]]] = {}


def vector(group: str, name: str) -> Callable[[Callable[[], tuple[dict[str, bytes], dict[str, Any]]]], None]:
    def register(build: Callable[[], tuple[dict[str, bytes], dict[str, Any]]]) -> None:
        files, expected = build()
        expected = {"description": (build.__doc__ or "").strip(), **expected}
        VECTORS[f"{group}/{name}"] = (files, expected)

    return register


def clean(log: Log, *, messages: list[Any] | None = None, append: int | None = None) -> dict[str, Any]:
    """Expectations of an undamaged session without a snapshot."""
    last = max(log.messages)
    return {
        "load": {
            "snapshot_version": None,
            "records": [log.expect(s) for s in sorted(log.messages)],
            "messages": messages if messages is not None else context(log, *sorted(log.messages)),
            "problems": [],
        },
        "records": sorted(log.messages),
        "verify": [],
        "repair": [],
        "append": {"sequence": append if append is not None else last + 1},
    }


# -- valid ------------------------------------------------------------------------------


@vector("valid", "plain-session")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """A tool call and its result, usage on the assistant record, timing, request data."""
    log = Log()
    log.add(SystemMessage(id=message_id(1), content="You are a calculator."))
    log.add(UserMessage(id=message_id(2), content="What is 6 x 7?"), request_id="req-1")
    log.add(
        AssistantMessage(
            id=message_id(3),
            tool_calls=[ToolCall(id="call-1", name="multiply", arguments={"a": 6, "b": 7})],
        ),
        request_id="req-1",
        metadata={"model": "example-1"},
        tags={"phase": "tools"},
        started_at=at(2),
        completed_at=at(3),
        duration_ns=1_000_000_000,
        input_tokens=30,
        output_tokens=12,
        cache_read_tokens=0,
        cache_write_tokens=0,
        reasoning_tokens=0,
    )
    log.add(
        ToolMessage(id=message_id(4), tool_call_id="call-1", name="multiply", content="42"),
        request_id="req-1",
    )
    log.add(AssistantMessage(id=message_id(5), content="6 x 7 = 42."), request_id="req-1")
    files = {"meta.json": meta(title="Multiplication", agent_name="calc"), "messages.jsonl": log.data()}
    expected = clean(log)
    expected["summary"] = {
        "title": "Multiplication",
        "agent_name": "calc",
        "parent_session_id": None,
        "session_type": 0,
        "message_count": 5,
        "created_at": iso(0),
        "updated_at": iso(5),
    }
    return files, expected


@vector("valid", "fork")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """A fork of session "origin" at #2 (fork.json, §6.1): its history is origin's #1-#2, then its own log from #3."""
    origin = Log()
    origin.add(UserMessage(id=message_id(1), content="Plan the trip."))
    origin.add(AssistantMessage(id=message_id(2), content="Train or plane?"))
    origin.add(UserMessage(id=message_id(3), content="Plane."))  # origin's own, not the fork's
    fork = Log()
    fork.add(UserMessage(id=message_id(13), content="Train."), sequence=3, n=13)
    point = ForkPoint(session_id="origin", sequence=2, record_id=record_id(2), created_at=at(10))
    files = {
        "fork.json": _forks.encode(point),
        "meta.json": meta(),
        "messages.jsonl": fork.data(),
        "../origin/meta.json": meta(),
        "../origin/messages.jsonl": origin.data(),
    }
    records = [origin.expect(1), origin.expect(2), fork.expect(3, n=13)]
    messages = [builtins(origin.messages[1]), builtins(origin.messages[2]), builtins(fork.messages[3])]
    expected = {
        "load": {"snapshot_version": None, "records": records, "messages": messages, "problems": []},
        "records": [1, 2, 3],
        "verify": [],
        "repair": [],
        "append": {"sequence": 4},
        "summary": {"message_count": 3, "created_at": iso(0), "updated_at": iso(13)},
    }
    return files, expected


@vector("valid", "log-only")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """A session directory holding only its raw log (no meta.json): still a session."""
    log = conversation()
    expected = clean(log)
    expected["summary"] = {"title": None, "message_count": 4, "created_at": iso(1), "updated_at": iso(4)}
    # The append writes the missing meta.json; the session was still created by record 1.
    expected["append"]["summary"] = {"created_at": iso(1), "message_count": 5}
    return {"messages.jsonl": log.data()}, expected


@vector("valid", "append-many-batch")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """Records 2..4 written by one append_many: one created_at, batch_end 4 on each; read like any others."""
    log = Log()
    log.add(UserMessage(id=message_id(1), content="What is 6 x 7?"))
    log.add_batch(
        AssistantMessage(id=message_id(2), tool_calls=[ToolCall(id="call-1", name="multiply")]),
        {"role": "tool", "tool_call_id": "call-1", "content": "42"},
        AssistantMessage(id=message_id(4), content="6 x 7 = 42."),
    )
    log.add(UserMessage(id=message_id(5), content="Thanks!"))
    expected = clean(log)
    expected["records_after"] = {"after": 2, "sequences": [3, 4, 5]}
    # A boundary inside a whole batch is allowed.
    expected["snapshot"] = {"expected_version": 0, "through": 3, "version": 1}
    return {"messages.jsonl": log.data()}, expected


@vector("valid", "with-snapshots")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """Two snapshots: the newest one (boundary 4) wins; load reads only the tail after it."""
    log = conversation()
    log.add(UserMessage(id=message_id(5), content="And 7 x 8?"))
    log.add(AssistantMessage(id=message_id(6), content="7 x 8 = 56."))
    first = summary(1, "The user asked for 6 x 7 (42).")
    second = summary(2, "The user asked for 6 x 7 (42) and 6 x 8 (48).")
    files = {
        "meta.json": meta(title="Times tables"),
        "messages.jsonl": log.data(),
        "snapshot-00000001.json": snapshot_line(log, 1, 2, first),
        "snapshot-00000002.json": snapshot_line(log, 2, 4, second),
    }
    expected = {
        "load": {
            "snapshot_version": 2,
            "records": [log.expect(5), log.expect(6)],
            "messages": context(log, 5, 6, first=second),
            "problems": [],
        },
        "records": [1, 2, 3, 4, 5, 6],
        "records_after": {"after": 3, "sequences": [4, 5, 6]},
        "verify": [],
        "repair": [],
        "append": {"sequence": 7},
        "snapshot": {"expected_version": 2, "through": 6, "version": 3},
    }
    return files, expected


@vector("valid", "json-edge-values")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """U+2028 (raw UTF-8), NUL (escaped), emoji, huge integers, deep nesting, key order."""
    log = Log()
    log.add(
        UserMessage(id=message_id(1), content="line\u2028separator, paragraph\u2029separator, NUL \x00 end")
    )
    log.add(
        {
            "content": "keys in their own order; emoji \U0001f600 and \u00e9",
            "role": "user",
            "big": 2**100,
            "negative": -(2**80),
            "float": 0.1,
            "nested": [[[[{"deep": [None, True, False, ""]}]]]],
        }
    )
    log.add(AssistantMessage(id=message_id(3), content="\U0001f44d", reasoning="tab\tand\nnewline"))
    return {"messages.jsonl": log.data()}, clean(log)


@vector("valid", "unknown-fields")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """Fields a newer writer added (record, message, snapshot, meta, usage) are ignored."""
    log = conversation()
    # A newer writer's record: an unknown top-level field (written last, before the
    # checksum) and an unknown field inside a known message class.
    body = (
        b'{"sequence":5,"id":"%s","created_at":"%s","message":{"role":"user","content":"Thanks!",'
        b'"id":"%s","mood":"happy"},"future_field":{"x":[1,2]}}'
        % (record_id(5).encode(), iso(5).encode(), message_id(5).encode())
    )
    log.lines.append(_codec.seal(body))
    log.messages[5] = UserMessage(id=message_id(5), content="Thanks!")
    snap = _codec.unseal(snapshot_line(log, 1, 2, summary(1, "6 x 7 = 42."))[:-1])
    assert snap is not None
    snapshot = _codec.seal(snap[:-1] + b',"future_snapshot_field":true}')
    meta_data = meta(title="Forward compatible")
    meta_data = meta_data[:-3] + b',\n  "future_meta_field": [1]\n}\n'
    usage = usage_line(10, input_tokens=5, output_tokens=1)
    usage = _codec.seal(_codec.unseal(usage[:-1])[:-1] + b',"future_usage_field":"x"}')  # type: ignore[index]
    files = {
        "meta.json": meta_data,
        "messages.jsonl": log.data(),
        "snapshot-00000001.json": snapshot,
        "usage.jsonl": usage,
    }
    expected = {
        "load": {
            "snapshot_version": 1,
            "records": [log.expect(3), log.expect(4), log.expect(5)],
            "messages": context(log, 3, 4, 5, first=summary(1, "6 x 7 = 42.")),
            "problems": [],
        },
        "records": [1, 2, 3, 4, 5],
        "summary": {"title": "Forward compatible", "message_count": 5},
        "usage_totals": {"input_tokens": 5, "output_tokens": 1},
        "verify": [],
        "repair": [],
        "append": {"sequence": 6},
    }
    return files, expected


@vector("valid", "unknown-role")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """A role this reader does not know comes back as a plain dict, not an error."""
    log = conversation()
    body = (
        b'{"sequence":5,"id":"%s","created_at":"%s","message":{"role":"critic","verdict":"fine","id":"%s"}}'
        % (record_id(5).encode(), iso(5).encode(), message_id(5).encode())
    )
    log.lines.append(_codec.seal(body))
    log.messages[5] = {"role": "critic", "verdict": "fine", "id": message_id(5)}
    # A known role whose fields do not fit its class (content missing) is given back the same way.
    body = b'{"sequence":6,"id":"%s","created_at":"%s","message":{"role":"user","id":"%s","parts":[]}}' % (
        record_id(6).encode(),
        iso(6).encode(),
        message_id(6).encode(),
    )
    log.lines.append(_codec.seal(body))
    log.messages[6] = {"role": "user", "id": message_id(6), "parts": []}
    return {"messages.jsonl": log.data()}, clean(log)


@vector("valid", "excluded-and-interrupted")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """include_in_messages=false stays out of the context; an unanswered tool batch mid-history is dropped."""
    log = Log()
    log.add(UserMessage(id=message_id(1), content="List the files, then read a.txt."))
    log.add(UserMessage(id=message_id(2), content="(internal note)", include_in_messages=False))
    log.add(
        AssistantMessage(
            id=message_id(3),
            tool_calls=[
                ToolCall(id="c1", name="ls"),
                ToolCall(id="c2", name="read", arguments={"path": "a.txt"}),
            ],
        )
    )
    log.add(ToolMessage(id=message_id(4), tool_call_id="c1", content="a.txt"))
    log.add(UserMessage(id=message_id(5), content="Never mind; say hello."))
    log.add({"role": "assistant", "content": "Hello!", "id": message_id(6)})
    return {"messages.jsonl": log.data()}, clean(log, messages=context(log, 1, 5, 6))


@vector("valid", "redaction-markers")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """Markers a redacting writer left (§18), a secret an older writer stored as given, and a sample.

    Readers give all back as stored; `scan` finds only the secret, `redact` replaces it by
    a marker (new checksums, the same sequences and ids) and then finds nothing. AWS's
    documentation key (AKIAIOSFODNN7EXAMPLE) is a sample, no secret: it stays (§18.3).
    """
    log = Log()
    log.add(UserMessage(id=message_id(1), content="Deploy with key [REDACTED:aws-access-key]."))
    log.add(AssistantMessage(id=message_id(2), content="Using AKIAIOSFODNN7EXAMPLE now."))
    log.add(
        UserMessage(id=message_id(3), content="My .env holds DB_PASSWORD=q7Rt2xLm9Vp4Kd8s\n"),
        tags={"note": "[REDACTED:github-token]"},
    )
    expected = clean(log)
    # Each finding's fingerprint (§18.2): SHA-256 of "kind:value", its first 16 hex digits.
    expected["scan"] = [
        {"file": "messages.jsonl", "line": 3, "sequence": 3, "where": "$.message.content",
         "kind": "env-secret", "preview": "q7Rt…(16 chars)", "fingerprint": "fff9e71c007486d4",
         "certain": True, "allowed": False},
    ]  # fmt: skip
    expected["redact"] = {
        "messages": [
            "Deploy with key [REDACTED:aws-access-key].",
            "Using AKIAIOSFODNN7EXAMPLE now.",
            "My .env holds DB_PASSWORD=[REDACTED:env-secret]\n",
        ],
        "ids": [record_id(1), record_id(2), record_id(3)],
    }
    return {"messages.jsonl": log.data()}, expected


@vector("valid", "usage-log")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """The token-usage log: one checksummed line per model call; zero counts are omitted."""
    log = conversation()
    usage = (
        usage_line(
            2, input_tokens=100, output_tokens=20, cache_read_tokens=80, model="example-1", request_id="r1"
        )
        + usage_line(4, input_tokens=130, output_tokens=25, reasoning_tokens=7, extra={"cost_usd": 0.0021})
        + usage_line(5)
    )
    expected = clean(log)
    expected["usage"] = [
        {
            "recorded_at": iso(2),
            "input_tokens": 100,
            "output_tokens": 20,
            "cache_read_tokens": 80,
            "model": "example-1",
            "request_id": "r1",
        },
        {
            "recorded_at": iso(4),
            "input_tokens": 130,
            "output_tokens": 25,
            "reasoning_tokens": 7,
            "extra": {"cost_usd": 0.0021},
        },
        {"recorded_at": iso(5)},
    ]
    expected["usage_totals"] = {
        "input_tokens": 230,
        "output_tokens": 45,
        "cache_read_tokens": 80,
        "cache_write_tokens": 0,
        "reasoning_tokens": 7,
    }
    return {"meta.json": meta(), "messages.jsonl": log.data(), "usage.jsonl": usage}, expected


@vector("valid", "user-and-runtime-meta")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """A title a user set (user_fields) survives a runtime update; a runtime key does not block a user."""
    log = conversation()
    files = {
        "meta.json": meta(
            title="Renamed by the user",
            parent_session_id="parent-1",
            session_type=2,
            metadata={"cwd": "src", "model": "example-1"},
            version=3,
            title_version=2,
            metadata_version=1,
            user_fields=["metadata.cwd", "title"],
        ),
        "messages.jsonl": log.data(),
    }
    expected = clean(log)
    expected["summary"] = {
        "title": "Renamed by the user",
        "parent_session_id": "parent-1",
        "session_type": 2,
        "version": 3,
        "title_version": 2,
        "metadata_version": 1,
    }
    expected["update"] = [
        {
            "args": {
                "title": "Derived by the agent",
                "metadata": {"cwd": "/tmp", "model": "example-2"},
                "origin": "runtime",
            },
            "summary": {
                "title": "Renamed by the user",
                "metadata": {"cwd": "src", "model": "example-2"},
                "version": 4,
                "title_version": 2,
                "metadata_version": 2,
            },
        },
        {
            "args": {"title": "Renamed again", "expected_version": 4},
            "summary": {"title": "Renamed again", "version": 5, "title_version": 3, "metadata_version": 2},
        },
        {"args": {"title": "Stale", "expected_version": 4}, "raises": "MetadataConflict"},
    ]
    return files, expected


@vector("valid", "checkpoint-saves")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """checkpoint() after a load: extending saves append, rewrites make a marker, a snapshot and a new tail."""
    log = conversation()
    stored = [builtins(log.messages[s]) for s in (1, 2, 3, 4)]
    m1, m2, m3, m4 = stored
    other = {"role": "user", "content": "Sent from another window.", "id": message_id(5)}
    new = {"role": "user", "content": "And 9 x 9?", "id": message_id(6)}
    compacted = {"role": "compacted", "content": "6 x 7 = 42 and 6 x 8 = 48.", "id": message_id(101)}
    edited = {**m2, "content": "6 x 7 = 41."}  # same id: not seen as an edit, by design
    steps = [
        {
            "name": "extend",
            "list": [*stored, new],
            "appended": [5],
            "snapshot_version": None,
            "messages": [*stored, new],
        },
        {"name": "same-list", "list": stored, "appended": [], "snapshot_version": None, "messages": stored},
        {
            "name": "stale-list",
            "other": other,
            "list": [*stored, new],
            "appended": [6],
            "snapshot_version": None,
            "messages": [*stored, other, new],
        },
        {
            "name": "edit-keeping-its-id",
            "list": [m1, edited, m3, m4, new],
            "appended": [5],
            "snapshot_version": None,
            "messages": [*stored, new],
        },
        {
            "name": "compaction",
            "list": [compacted, m4, new],
            "appended": [6, 7],
            "snapshot_version": 1,
            "messages": [compacted, m4, new],
        },
        {
            "name": "compaction-keeps-unseen",
            "other": other,
            "list": [compacted, new],
            "appended": [7],
            "snapshot_version": 1,
            "messages": [compacted, new, other],
        },
        {
            "name": "reorder",
            "list": [m2, m1, m3, m4],
            "appended": [6, 7, 8, 9],
            "snapshot_version": 1,
            "messages": [m2, m1, m3, m4],
        },
        {
            "name": "insert-before-stored",
            "list": [m1, new, m2, m3, m4],
            "appended": [6, 7, 8, 9, 10],
            "snapshot_version": 1,
            "messages": [m1, new, m2, m3, m4],
        },
        {
            # A save never removes a stored message (spec §10's rule): a list that lacks
            # one is stale, not an instruction to drop it.
            "name": "drop-from-the-middle",
            "list": [m1, m3, m4, new],
            "appended": [5],
            "snapshot_version": None,
            "messages": [*stored, new],
        },
    ]
    expected = clean(log)
    expected["checkpoint"] = steps
    return {"meta.json": meta(title="Saved by a runner"), "messages.jsonl": log.data()}, expected


# -- invalid ----------------------------------------------------------------------------


# -- blobs (§5.1, §8 rule 11, §9.14, §12) ------------------------------------------------

TOOL_OUTPUT = "".join(f"test_{i} PASSED\n" for i in range(8))  # 120 bytes: spilled
IMAGE = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg=="


def blob_log() -> Log:
    """A tool output, an image as base64 and the same output again: three strings, two blob files."""
    log = Log()
    call = ToolCall(id="call_1", name="pytest", arguments={"path": "tests"})
    log.add(UserMessage(id=message_id(1), content="Run the tests."), spill=BLOB_SPILL)
    log.add(AssistantMessage(id=message_id(2), tool_calls=[call]), spill=BLOB_SPILL)
    log.add(ToolMessage(id=message_id(3), tool_call_id="call_1", content=TOOL_OUTPUT), spill=BLOB_SPILL)
    log.add(
        {
            "role": "user",
            "content": [{"type": "text", "text": "And this screenshot?"}, {"type": "image", "data": IMAGE}],
            "x-previous-output": TOOL_OUTPUT,
        },
        spill=BLOB_SPILL,
    )
    return log


def digest_of(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def unavailable(text: str, reason: str) -> str:
    return f"[jsonl_store: blob sha256:{digest_of(text)} unavailable: {reason}]"


@vector("valid", "blobs")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """Strings over the writer's threshold (64 bytes here) in blobs/<sha256>: read back whole, one file per payload."""
    log = blob_log()
    assert sorted(log.blobs) == sorted([digest_of(TOOL_OUTPUT), digest_of(IMAGE)])
    return log.files(), clean(log)


def one_spilled(text: str) -> Log:
    log = Log()
    log.add(UserMessage(id=message_id(1), content=text), spill=BLOB_SPILL)
    log.add(AssistantMessage(id=message_id(2), content="Noted."))
    return log


def placeholder_expectations(log: Log, text: str, reason: str, found: list[dict[str, Any]]) -> dict[str, Any]:
    shown = UserMessage(id=message_id(1), content=unavailable(text, reason))
    record = {**log.expect(1), "message": builtins(shown)}
    return {
        "snapshot_version": None,
        "records": [record, log.expect(2)],
        "messages": [builtins(shown), builtins(log.messages[2])],
        "problems": found,
        "reasons": [f"record 1: {reason}"],
    }


@vector("invalid", "blob-missing")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """A record names a blob file that is not there: a placeholder in its place, bad-blob; repair cannot bring it back."""
    log = one_spilled(TOOL_OUTPUT)
    digest = digest_of(TOOL_OUTPUT)
    found = [problem("bad-blob", digest)]
    checked = [{**found[0], "action": PUT_BLOB_BACK}]
    return log.files(leave_out=(digest,)), {
        "load": placeholder_expectations(log, TOOL_OUTPUT, "the file is missing", found),
        "records": [1, 2],
        "verify": checked,
        "repair": checked,
        "after_repair": {"files": ["messages.jsonl"], "verify": checked, "load_sequences": [1, 2]},
        "append": {"sequence": 3},
    }


@vector("invalid", "blob-damaged")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """A blob file whose bytes no longer match its SHA-256: a placeholder, bad-blob; repair moves it aside."""
    log = one_spilled(TOOL_OUTPUT)
    digest = digest_of(TOOL_OUTPUT)
    files = log.files()
    files[f"blobs/{digest}"] = flip(files[f"blobs/{digest}"], 5)
    found = [problem("bad-blob", digest)]
    reason = "the file's bytes do not match its SHA-256 (damaged)"
    missing = [{**found[0], "action": PUT_BLOB_BACK}]
    return files, {
        "load": placeholder_expectations(log, TOOL_OUTPUT, reason, found),
        "records": [1, 2],
        "verify": [{**found[0], "action": "move aside"}],
        "repair": [{**found[0], "action": "move aside"}],
        "after_repair": {
            "files": [f"blobs-{digest}.damaged", "messages.jsonl"],
            "moved": {f"blobs/{digest}": f"blobs-{digest}.damaged"},
            "verify": missing,
            "load_sequences": [1, 2],
        },
        "append": {"sequence": 3},
    }


@vector("invalid", "blob-malformed-marker")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """An object keyed "$blob" that is not a marker (a foreign writer's): a placeholder, bad-blob at its line."""
    log = Log()
    log.add({"role": "user", "content": {"$blob": "sha256:not-a-digest", "size": 3}})
    shown = {"role": "user", "content": "[jsonl_store: blob sha256:? unavailable: malformed marker]"}
    checked = [{**problem("bad-blob", "messages.jsonl", 0, 1), "action": "none: readers show a placeholder"}]
    return log.files(), {
        "load": {
            "snapshot_version": None,
            "records": [{**log.expect(1), "message": shown}],
            "messages": [shown],
            "problems": [problem("bad-blob", "blobs")],
            "reasons": ["record 1 holds a malformed blob marker"],
        },
        "records": [1],
        "verify": checked,
        "repair": checked,
        "after_repair": {"files": ["messages.jsonl"], "verify": checked, "load_sequences": [1]},
        "append": {"sequence": 2},
    }


@vector("recover", "orphan-blob")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """A blob no record names (a crash after the blob, before its record): harmless; repair deletes it."""
    log = one_spilled("short")
    orphan = "output of a record a crash never wrote " * 2
    expected = clean(log)
    found = [problem("orphan-blob", digest_of(orphan))]
    expected.update(
        verify=acted(found), repair=acted(found), after_repair={"files": ["messages.jsonl"], "verify": []}
    )
    return {**log.files(), f"blobs/{digest_of(orphan)}": orphan.encode()}, expected


@vector("invalid", "newer-read-format")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """meta.json says read_format 2: this reader must refuse the session (UnsupportedFormat)."""
    log = conversation()
    files = {"meta.json": meta(format=2, read_format=2), "messages.jsonl": log.data()}
    unsupported = [problem("unsupported-format", "meta.json")]
    return files, {
        "load": {"raises": "UnsupportedFormat"},
        "verify": acted(unsupported),
        "repair": acted(unsupported),
        "after_repair": {"files": ["messages.jsonl", "meta.json"], "verify": acted(unsupported)},
        "append": {"raises": "UnsupportedFormat"},
        # Raised where records() and usage() are called, not at the first next().
        "records": {"raises": "UnsupportedFormat"},
        "usage": {"raises": "UnsupportedFormat"},
        "summary": {"raises": "UnsupportedFormat"},
        "update": [{"args": {"title": "x"}, "raises": "UnsupportedFormat"}],
        "snapshot": {"expected_version": 0, "through": 2, "raises": "UnsupportedFormat"},
    }


@vector("invalid", "newer-write-format")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """meta.json says format 2, read_format 1: readable, but every write is refused (ReadOnlySession)."""
    log = conversation()
    files = {"meta.json": meta(format=2), "messages.jsonl": log.data()}
    expected = clean(log)
    expected["append"] = {"raises": "ReadOnlySession"}
    expected["update"] = [{"args": {"title": "x"}, "raises": "ReadOnlySession"}]
    expected["snapshot"] = {"expected_version": 0, "through": 2, "raises": "ReadOnlySession"}
    # verify() reads it like any session; repair() never writes to a read-only session.
    expected["repair"] = {"raises": "ReadOnlySession"}
    return files, expected


@vector("invalid", "damaged-mid-log")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """A line that is not a record, between good lines: reported with its offset, reading goes on."""
    log = conversation()
    data = log.lines[0] + b"this is not a record\n" + b"".join(log.lines[1:])
    bad = len(log.lines[0])
    found = [problem("damaged-line", "messages.jsonl", bad, 2)]
    return {"messages.jsonl": data}, {
        "load": {
            "snapshot_version": None,
            "records": [log.expect(s) for s in (1, 2, 3, 4)],
            "messages": context(log, 1, 2, 3, 4),
            "problems": found,
            "reasons": ["not a record (20 bytes)"],
        },
        "records": [1, 2, 3, 4],
        "verify": acted(found),
        "repair": acted(found),
        "after_repair": {"files": ["messages.jsonl"], "verify": acted(found), "load_sequences": [1, 2, 3, 4]},
        "append": {"sequence": 5},
    }


@vector("invalid", "checksum-mismatch")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """Record 2 edited by hand ("42" -> "43") without a new checksum: skipped and reported, gap noted."""
    log = conversation()
    edited = log.lines[1].replace(b"42", b"43")
    data = log.lines[0] + edited + b"".join(log.lines[2:])
    start, after = log.offset(1), log.offset(2)
    found = [problem("damaged-line", "messages.jsonl", start, 2), problem("gap", "messages.jsonl", after, 3)]
    return {"messages.jsonl": data}, {
        "load": {
            "snapshot_version": None,
            "records": [log.expect(s) for s in (1, 3, 4)],
            "messages": context(log, 1, 3, 4),
            "problems": found,
            "reasons": ["checksum mismatch", "sequences 2..2 are missing"],
        },
        "records": [1, 3, 4],
        "verify": acted(found),
        "repair": acted(found),
        "after_repair": {"files": ["messages.jsonl"], "verify": acted(found), "load_sequences": [1, 3, 4]},
        "append": {"sequence": 5},
    }


@vector("invalid", "out-of-order")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """Sequences 1, 2, 4, 3: the gap before 4 is reported, 3 (not above 4) is skipped; the next is 5."""
    log = conversation()
    data = log.lines[0] + log.lines[1] + log.lines[3] + log.lines[2]
    off4, off3 = log.offset(2), log.offset(2) + len(log.lines[3])
    load_found = [
        problem("gap", "messages.jsonl", off4, 3),
        problem("out-of-order", "messages.jsonl", off3, 4),
    ]
    return {"messages.jsonl": data}, {
        "load": {
            "snapshot_version": None,
            "records": [log.expect(s) for s in (1, 2, 4)],
            "problems": load_found,
        },
        "records": [1, 2, 4],
        "verify": acted(load_found),
        "repair": acted(load_found),
        "after_repair": {
            "files": ["messages.jsonl"],
            "verify": acted(load_found),
            "load_sequences": [1, 2, 4],
        },
        # The writer continues after the highest sequence near the end (4), not the last line's (3).
        "append": {"sequence": 5},
    }


@vector("invalid", "checksummed-non-record")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """A line with a valid checksum whose JSON does not fit the record schema: bad-record, skipped."""
    log = conversation()
    bad = _codec.seal(b'{"sequence":"five","id":"x"}')
    data = log.data() + bad + log.add(UserMessage(id=message_id(5), content="Still here?"), sequence=5)
    offset = log.offset(4)
    found = [problem("bad-record", "messages.jsonl", offset, 5)]
    return {"messages.jsonl": data}, {
        "load": {
            "snapshot_version": None,
            "records": [log.expect(s) for s in (1, 2, 3, 4, 5)],
            "problems": found,
        },
        "records": [1, 2, 3, 4, 5],
        "verify": acted(found),
        "repair": acted(found),
        "after_repair": {
            "files": ["messages.jsonl"],
            "verify": acted(found),
            "load_sequences": [1, 2, 3, 4, 5],
        },
        "append": {"sequence": 6},
    }


@vector("invalid", "uppercase-crc")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """Record 2's checksum written in upper case: the right number, the wrong text; not a valid line."""
    log = conversation()
    line = log.lines[1]
    crc = line[-11:-3]  # the line ends in ,"crc":"xxxxxxxx"} and its newline
    assert crc.upper() != crc  # holds a hex letter, so the case matters
    data = log.lines[0] + line[:-11] + crc.upper() + line[-3:] + b"".join(log.lines[2:])
    found = [
        problem("damaged-line", "messages.jsonl", log.offset(1), 2),
        problem("gap", "messages.jsonl", log.offset(2), 3),
    ]
    return {"messages.jsonl": data}, {
        "load": {
            "snapshot_version": None,
            "records": [log.expect(s) for s in (1, 3, 4)],
            "problems": found,
            "reasons": ["checksum mismatch", "sequences 2..2 are missing"],
        },
        "records": [1, 3, 4],
        "verify": acted(found),
        "repair": acted(found),
        "after_repair": {"files": ["messages.jsonl"], "verify": acted(found), "load_sequences": [1, 3, 4]},
        "append": {"sequence": 5},
    }


# -- recover ----------------------------------------------------------------------------


def tail_damage(
    log: Log, tail: bytes, keep: int = 4, *, earlier_cut: bytes | None = None
) -> tuple[dict[str, bytes], dict[str, Any]]:
    """Records 1..keep intact, then ``tail``: silent on load, cut into a sidecar by repair/append.

    ``earlier_cut``: the bytes of a sidecar an earlier crash left at the same offset; the
    new cut goes into ``<name>.2`` beside it, never over it.
    """
    good = b"".join(log.lines[:keep])
    data = good + tail
    found = [problem("torn-tail", "messages.jsonl", len(good))]
    first = f"messages.jsonl.cut-{len(good):012d}"
    files = {"meta.json": meta(title="Crashed"), "messages.jsonl": data}
    sidecar = first
    if earlier_cut is not None:
        files[first] = earlier_cut
        sidecar = first + ".2"
    return files, {
        "load": {
            "snapshot_version": None,
            "records": [log.expect(s) for s in range(1, keep + 1)],
            "messages": context(log, *range(1, keep + 1)),
            "problems": [],
        },
        "records": list(range(1, keep + 1)),
        "summary": {"title": "Crashed", "message_count": keep, "updated_at": iso(keep)},
        "verify": acted(found, sidecar),
        "repair": acted(found, sidecar),
        "after_repair": {
            "files": sorted({*files, sidecar}),
            "cut": {"file": sidecar, "offset": len(good)},
            "verify": [],
            "load_sequences": list(range(1, keep + 1)),
        },
        # The append cuts the tail itself (and reports it) before it writes.
        "append": {"sequence": keep + 1, "problems": found},
    }


@vector("recover", "torn-last-line")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """The writer died mid-record: the last line has no newline. Not corruption."""
    log = conversation()
    log.add(UserMessage(id=message_id(5), content="This record never finished."))
    return tail_damage(log, tear(log.lines[4], 40))


@vector("recover", "complete-line-without-newline")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """A record whose final newline is missing is not a record yet: it belongs to the tail."""
    log = conversation()
    log.add(UserMessage(id=message_id(5), content="All but the newline."))
    return tail_damage(log, log.lines[4][:-1])


@vector("recover", "batch-torn-between-lines")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """An append_many batch (5..7) lost its last line: the batch is tail, records 1..4 stay, the next is 5."""
    log = conversation()
    lines = log.add_batch(
        AssistantMessage(id=message_id(5), tool_calls=[ToolCall(id="call-2", name="multiply")]),
        ToolMessage(id=message_id(6), tool_call_id="call-2", content="56"),
        AssistantMessage(id=message_id(7), content="7 x 8 = 56."),
    )
    return tail_damage(log, lines[0] + lines[1])


@vector("recover", "batch-last-line-without-newline")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """A two-record batch whose last line lost only its newline: the whole batch is tail, not half of it."""
    log = conversation()
    lines = log.add_batch(
        UserMessage(id=message_id(5), content="And 7 x 8?"),
        AssistantMessage(id=message_id(6), content="7 x 8 = 56."),
    )
    return tail_damage(log, lines[0] + lines[1][:-1])


@vector("recover", "second-cut-at-one-offset")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """A sidecar from an earlier crash at the same offset is kept: the new cut goes into <name>.2."""
    log = conversation()
    log.add(UserMessage(id=message_id(5), content="Torn again at the same place."))
    earlier = tear(log.lines[4], 30)
    files, expected = tail_damage(log, tear(log.lines[4], 70), earlier_cut=earlier)
    return files, expected


@vector("recover", "nul-run-tail")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """A run of NUL bytes after the last record (space the file system allocated, data never written)."""
    return tail_damage(conversation(), b"\x00" * 512)


@vector("recover", "zero-filled-tail")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """The last two records' bytes are all zeros (the size reached disk, the data did not)."""
    log = conversation()
    data = zero_fill(log.data(), log.offset(2), len(log.data()) - log.offset(2))
    return tail_damage(log, data[log.offset(2) :], keep=2)


@vector("recover", "garbage-tail")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """Random bytes after the last record, newlines included: still only a damaged tail."""
    junk = noise(300, "garbage-tail").replace(b"\n", b" ")
    junk = junk[:100] + b"\n" + junk[100:200] + b"\n" + junk[200:]
    return tail_damage(conversation(), junk)


@vector("recover", "bit-flip-last-line")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """A flipped bit in the final, newline-terminated record: no good line follows, so it is tail."""
    log = conversation()
    damaged = flip(log.lines[3], 60)
    return tail_damage(log, damaged, keep=3)


@vector("recover", "bit-flip-mid-log")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """A flipped bit in record 2 of 4: reported (checksum mismatch) with its offset; 3 and 4 are still read."""
    log = conversation()
    data = flip(log.data(), log.offset(1) + 70)
    found = [
        problem("damaged-line", "messages.jsonl", log.offset(1), 2),
        problem("gap", "messages.jsonl", log.offset(2), 3),
    ]
    return {"messages.jsonl": data}, {
        "load": {
            "snapshot_version": None,
            "records": [log.expect(s) for s in (1, 3, 4)],
            "messages": context(log, 1, 3, 4),
            "problems": found,
            "reasons": ["checksum mismatch", "sequences 2..2 are missing"],
        },
        "records": [1, 3, 4],
        "verify": acted(found),
        "repair": acted(found),
        "after_repair": {"files": ["messages.jsonl"], "verify": acted(found), "load_sequences": [1, 3, 4]},
        "append": {"sequence": 5},
    }


@vector("recover", "batch-damaged-mid-log")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """Batch 2..4 lost its last record to a flipped bit, with record 5 after it: records 2 and 3 are kept."""
    log = Log()
    log.add(UserMessage(id=message_id(1), content="What is 6 x 7?"))
    log.add_batch(
        AssistantMessage(id=message_id(2), tool_calls=[ToolCall(id="call-1", name="multiply")]),
        ToolMessage(id=message_id(3), tool_call_id="call-1", content="42"),
        AssistantMessage(id=message_id(4), content="6 x 7 = 42."),
    )
    log.add(UserMessage(id=message_id(5), content="Thanks!"))
    data = flip(log.data(), log.offset(3) + 70)
    found = [
        problem("damaged-line", "messages.jsonl", log.offset(3), 4),
        problem("gap", "messages.jsonl", log.offset(4), 5),
    ]
    return {"messages.jsonl": data}, {
        "load": {
            "snapshot_version": None,
            "records": [log.expect(s) for s in (1, 2, 3, 5)],
            "messages": context(log, 1, 2, 3, 5),
            "problems": found,
            "reasons": ["checksum mismatch", "sequences 4..4 are missing"],
        },
        "records": [1, 2, 3, 5],
        "verify": acted(found),
        "repair": acted(found),
        "after_repair": {"files": ["messages.jsonl"], "verify": acted(found), "load_sequences": [1, 2, 3, 5]},
        "append": {"sequence": 6},
    }


@vector("recover", "truncated-line-then-good")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """Record 2 lost its second half but kept a newline; records 3 and 4 after it are read."""
    log = conversation()
    data = log.lines[0] + log.lines[1][:50] + b"\n" + b"".join(log.lines[2:])
    found = [
        problem("damaged-line", "messages.jsonl", log.offset(1), 2),
        problem("gap", "messages.jsonl", len(log.lines[0]) + 51, 3),
    ]
    return {"messages.jsonl": data}, {
        "load": {
            "snapshot_version": None,
            "records": [log.expect(s) for s in (1, 3, 4)],
            "problems": found,
            "reasons": ["not a record (50 bytes)", "sequences 2..2 are missing"],
        },
        "records": [1, 3, 4],
        "verify": acted(found),
        "repair": acted(found),
        "after_repair": {"files": ["messages.jsonl"], "verify": acted(found), "load_sequences": [1, 3, 4]},
        "append": {"sequence": 5},
    }


@vector("recover", "glued-after-nuls")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """Record 3 glued behind 64 NUL bytes on the same line: salvaged, the NULs reported."""
    log = conversation()
    data = log.lines[0] + log.lines[1] + b"\x00" * 64 + log.lines[2] + log.lines[3]
    found = [problem("damaged-line", "messages.jsonl", log.offset(2), 3)]
    return {"messages.jsonl": data}, {
        "load": {
            "snapshot_version": None,
            "records": [log.expect(s) for s in (1, 2, 3, 4)],
            "messages": context(log, 1, 2, 3, 4),
            "problems": found,
            "reasons": ["64 NUL bytes"],
        },
        "records": [1, 2, 3, 4],
        "verify": acted(found),
        "repair": acted(found),
        "after_repair": {"files": ["messages.jsonl"], "verify": acted(found), "load_sequences": [1, 2, 3, 4]},
        "append": {"sequence": 5},
    }


@vector("recover", "glued-after-torn-record")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """A torn record 3 with no newline, then a whole record 3 written after it: the whole one is salvaged."""
    log = conversation()
    data = log.lines[0] + log.lines[1] + tear(log.lines[2], 45) + log.lines[2] + log.lines[3]
    found = [problem("damaged-line", "messages.jsonl", log.offset(2), 3)]
    return {"messages.jsonl": data}, {
        "load": {
            "snapshot_version": None,
            "records": [log.expect(s) for s in (1, 2, 3, 4)],
            "problems": found,
            "reasons": ["not a record (45 bytes)"],
        },
        "records": [1, 2, 3, 4],
        "verify": acted(found),
        "repair": acted(found),
        "after_repair": {"files": ["messages.jsonl"], "verify": acted(found), "load_sequences": [1, 2, 3, 4]},
        "append": {"sequence": 5},
    }


def with_two_snapshots(log: Log, second: bytes, *, log_data: bytes | None = None) -> dict[str, bytes]:
    return {
        "meta.json": meta(title="Compacted"),
        "messages.jsonl": log.data() if log_data is None else log_data,
        "snapshot-00000001.json": snapshot_line(log, 1, 2, summary(1, "6 x 7 = 42.")),
        "snapshot-00000002.json": second,
    }


def fell_back(log: Log, tail: list[int], reason_file: str, *, next_version: int) -> dict[str, Any]:
    found = [problem("bad-snapshot", reason_file)]
    return {
        "load": {
            "snapshot_version": 1,
            "records": [log.expect(s) for s in tail],
            "messages": context(log, *tail, first=summary(1, "6 x 7 = 42.")),
            "problems": found,
        },
        "records": list(range(1, tail[-1] + 1)),
        "verify": acted(found),
        "repair": acted(found),
        "after_repair": {
            "files": ["messages.jsonl", "meta.json", "snapshot-00000001.json", reason_file + ".damaged"],
            "moved": {reason_file: reason_file + ".damaged"},
            "verify": [],
            "load_sequences": tail,
            "snapshot_version": 1,
        },
        "append": {"sequence": tail[-1] + 1},
        # Before repair the damaged file still holds its number, so the next one is above it.
        "snapshot": {"expected_version": 1, "through": tail[-1], "version": next_version},
    }


@vector("recover", "snapshot-past-end")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """Snapshot 2's boundary (record 4) is past the end of a log that lost its last record."""
    log = conversation()
    second = snapshot_line(log, 2, 4, summary(2, "Both products."))
    data = b"".join(log.lines[:3])
    return with_two_snapshots(log, second, log_data=data), fell_back(
        log, [3], "snapshot-00000002.json", next_version=3
    )


@vector("recover", "snapshot-boundary-mismatch")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """Snapshot 2 names record 4 at an offset where the log now holds a different record 4."""
    log = conversation()
    second = snapshot_line(log, 2, 4, summary(2, "Both products."))
    lost = log.lines.pop()
    log.add(AssistantMessage(id=message_id(44), content="6 x 8 = 48!"), n=44)
    assert len(lost) == len(log.lines[3])  # same place, different record id
    expected = fell_back(log, [3, 4], "snapshot-00000002.json", next_version=3)
    expected["load"]["records"] = [log.expect(3), log.expect(4, n=44)]
    return with_two_snapshots(log, second), expected


@vector("recover", "damaged-snapshot")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """Snapshot 2 has a flipped bit: the newest *valid* snapshot (1) is used, never no snapshot."""
    log = conversation()
    second = flip(snapshot_line(log, 2, 4, summary(2, "Both products.")), 200)
    return with_two_snapshots(log, second), fell_back(log, [3, 4], "snapshot-00000002.json", next_version=3)


@vector("recover", "torn-snapshot")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """Snapshot 2 is cut short (no final newline): skipped like any damaged snapshot."""
    log = conversation()
    second = tear(snapshot_line(log, 2, 4, summary(2, "Both products.")), 120)
    return with_two_snapshots(log, second), fell_back(log, [3, 4], "snapshot-00000002.json", next_version=3)


@vector("recover", "damaged-meta")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """meta.json cut short: reported; repair (or the next append) moves it aside and writes a new one."""
    log = conversation()
    damaged = tear(meta(title="Lost title", parent_session_id="parent-1"), 60)
    found = [problem("bad-meta", "meta.json")]
    return {"meta.json": damaged, "messages.jsonl": log.data()}, {
        "load": {
            "snapshot_version": None,
            "records": [log.expect(s) for s in (1, 2, 3, 4)],
            "messages": context(log, 1, 2, 3, 4),
            "problems": found,
        },
        "records": [1, 2, 3, 4],
        "verify": acted(found),
        "repair": acted(found),
        "after_repair": {
            "files": ["messages.jsonl", "meta.json", "meta.json.damaged"],
            "moved": {"meta.json": "meta.json.damaged"},
            "verify": [],
            "load_sequences": [1, 2, 3, 4],
            # The default metadata: created_at from the first record; title and parent are gone.
            "summary": {"title": None, "parent_session_id": None, "created_at": iso(1), "message_count": 4},
        },
        "append": {"sequence": 5},
        # The append moves the damaged file aside, reports it, and makes a new one from its
        # own arguments (as a first append would); the record is written all the same.
        "append_before_repair": {
            "args": {"title": "Recovered"},
            "sequence": 5,
            "problems": found,
            "moved": {"meta.json": "meta.json.damaged"},
            "summary": {"title": "Recovered", "parent_session_id": None, "message_count": 5},
        },
    }


@vector("recover", "leftover-temp")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """A temporary file a writer left when it died before its rename: ignored by readers, deleted by repair."""
    log = conversation()
    temp = "meta.json.0123456789ab.tmp"
    files = {"meta.json": meta(title="Before"), "messages.jsonl": log.data(), temp: meta(title="After")[:30]}
    found = [problem("leftover-temp", temp)]
    return files, {
        "load": {
            "snapshot_version": None,
            "records": [log.expect(s) for s in (1, 2, 3, 4)],
            "problems": [],
        },
        "records": [1, 2, 3, 4],
        "summary": {"title": "Before"},
        "verify": acted(found),
        "repair": acted(found),
        "after_repair": {
            "files": ["messages.jsonl", "meta.json"],
            "verify": [],
            "load_sequences": [1, 2, 3, 4],
        },
        "append": {"sequence": 5},
    }


@vector("recover", "usage-torn-tail")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """The token-usage log follows the raw log's rules: a torn last line is cut into a sidecar."""
    log = conversation()
    good = usage_line(2, input_tokens=10, output_tokens=2) + usage_line(4, input_tokens=12, output_tokens=3)
    torn = tear(usage_line(5, input_tokens=99), 25)
    found = [problem("torn-tail", "usage.jsonl", len(good))]
    sidecar = f"usage.jsonl.cut-{len(good):012d}"
    expected = clean(log)
    expected.update(
        {
            "usage_totals": {"input_tokens": 22, "output_tokens": 5},
            "verify": acted(found),
            "repair": acted(found),
            "after_repair": {
                "files": ["messages.jsonl", sidecar, "usage.jsonl"],
                "cut": {"file": sidecar, "offset": len(good), "log": "usage.jsonl"},
                "verify": [],
                "load_sequences": [1, 2, 3, 4],
            },
        }
    )
    return {"messages.jsonl": log.data(), "usage.jsonl": good + torn}, expected


# ---------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------


# -- text conversions (git core.autocrlf, editors): spec §8.4, §9.3 ----------------------


def converted(
    log: Log, title: str, data: bytes, found: list[dict[str, Any]], *, restores: bool
) -> tuple[dict[str, bytes], dict[str, Any]]:
    """A conversation whose log a text tool changed into ``data``: read whole, restored by repair.

    ``restores``: the next append sees the conversion (first or last line) and restores the
    bytes before it writes, reporting it; otherwise it appends to the log as it is.
    """
    expected: dict[str, Any] = {
        "load": {
            "snapshot_version": None,
            "records": [log.expect(s) for s in range(1, 5)],
            "messages": context(log, 1, 2, 3, 4),
            "problems": found,
        },
        "records": [1, 2, 3, 4],
        "verify": acted(found),
        "repair": acted(found),
        "after_repair": {
            "files": ["messages.jsonl", "meta.json"],
            "restored": {"messages.jsonl": log.data().decode()},
            "verify": [],
            "load_sequences": [1, 2, 3, 4],
        },
        "append": {"sequence": 5},
    }
    if restores:
        expected["append"].update(problems=found, restored=log.data().decode())
    return {"meta.json": meta(title=title), "messages.jsonl": data}, expected


@vector("recover", "crlf-line-ends")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """A git checkout with core.autocrlf=true: every file's lines end in \\r\\n. Nothing is lost:
    readers read every record, the snapshot is found by its boundary record, the next append
    restores the written bytes before it writes and cuts nothing."""
    log = conversation()
    log.add(UserMessage(id=message_id(5), content="And 7 x 8?"))
    snapshot = snapshot_line(log, 1, 3, summary(1, "Two products so far."))
    usage = usage_line(9, input_tokens=12, output_tokens=3)
    original = {"meta.json": meta(title="Cloned"), "messages.jsonl": log.data(),
                "snapshot-00000001.json": snapshot, "usage.jsonl": usage}  # fmt: skip
    files = {name: crlf(data) for name, data in original.items()}
    found = [
        problem("text-conversion", "meta.json", 0),
        problem("text-conversion", "messages.jsonl", 0),
        problem("text-conversion", "usage.jsonl", 0),
        problem("text-conversion", "snapshot-00000001.json", 0),
    ]
    return files, {
        "load": {
            "snapshot_version": 1,
            "records": [log.expect(s) for s in (4, 5)],
            "messages": context(log, 4, 5, first=summary(1, "Two products so far.")),
            "problems": [problem("text-conversion", "messages.jsonl", log.offset(3) + 3)],
        },
        "records": [1, 2, 3, 4, 5],
        "summary": {"title": "Cloned", "message_count": 5, "updated_at": iso(5)},
        "usage_totals": {"input_tokens": 12, "output_tokens": 3},
        "verify": acted(found),
        "repair": acted(found),
        "after_repair": {
            "files": sorted(files),
            "restored": {name: data.decode() for name, data in original.items()},
            "verify": [],
            "load_sequences": [4, 5],
            "snapshot_version": 1,
        },
        "append": {"sequence": 6, "problems": [problem("text-conversion", "messages.jsonl", 0)],
                   "restored": original["messages.jsonl"].decode()},
        "snapshot": {"expected_version": 1, "through": 5, "version": 2},
    }  # fmt: skip


@vector("recover", "crlf-torn-tail")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """A converted log whose writer also died mid-record: repair restores the lines, then cuts
    the torn line at the offset it has in the restored file; no valid record is cut."""
    log = conversation()
    log.add(UserMessage(id=message_id(5), content="This record never finished."))
    good = b"".join(log.lines[:4])
    torn = tear(log.lines[4], 40)
    files = {"meta.json": meta(title="Crashed"), "messages.jsonl": crlf(good) + torn}
    found = [
        problem("text-conversion", "messages.jsonl", 0),
        problem("torn-tail", "messages.jsonl", len(good)),
    ]
    sidecar = f"messages.jsonl.cut-{len(good):012d}"
    return files, {
        "load": {
            "snapshot_version": None,
            "records": [log.expect(s) for s in range(1, 5)],
            "messages": context(log, 1, 2, 3, 4),
            "problems": [problem("text-conversion", "messages.jsonl", 0)],
        },
        "records": [1, 2, 3, 4],
        "verify": acted(found),
        "repair": acted(found),
        "after_repair": {
            "files": sorted({*files, sidecar}),
            "restored": {"messages.jsonl": good.decode(), sidecar: torn.decode()},
            "verify": [],
            "load_sequences": [1, 2, 3, 4],
        },
        "append": {"sequence": 5, "problems": found, "restored": good.decode()},
    }


@vector("recover", "mixed-line-ends")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """Only records 2 and 3 end in \\r\\n (a hand edit): read as written, one problem for the
    file, restored by repair. The first and last lines look untouched, so an append writes on."""
    log = conversation()
    data = log.lines[0] + crlf(log.lines[1]) + crlf(log.lines[2]) + log.lines[3]
    return converted(
        log, "Edited", data, [problem("text-conversion", "messages.jsonl", log.offset(1))], restores=False
    )


@vector("recover", "mixed-line-ends-snapshot")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """A snapshot made while records 2 and 3 ended in \\r\\n: its offsets count those bytes.
    Readers use it; repair restores the log and writes the snapshot's boundary offsets anew."""
    log = conversation()
    log.add(UserMessage(id=message_id(5), content="And 7 x 8?"))
    data = log.lines[0] + crlf(log.lines[1]) + crlf(log.lines[2]) + log.lines[3] + log.lines[4]
    made = snapshot_line(log, 1, 4, summary(1, "Both products."), shift=2)
    found = [problem("text-conversion", "messages.jsonl", log.offset(1))]
    return {"meta.json": meta(title="Edited"), "messages.jsonl": data, "snapshot-00000001.json": made}, {
        "load": {
            "snapshot_version": 1,
            "records": [log.expect(5)],
            "messages": context(log, 5, first=summary(1, "Both products.")),
            "problems": [],
        },
        "records": [1, 2, 3, 4, 5],
        "verify": acted(found),
        "repair": acted(found),
        "after_repair": {
            "files": ["messages.jsonl", "meta.json", "snapshot-00000001.json"],
            "restored": {
                "messages.jsonl": log.data().decode(),
                "snapshot-00000001.json": snapshot_line(log, 1, 4, summary(1, "Both products.")).decode(),
            },
            "verify": [],
            "load_sequences": [5],
            "snapshot_version": 1,
        },
        "append": {"sequence": 6},
    }


@vector("recover", "crlf-converted-twice")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """unix2dos run twice: every line ends in \\r\\r\\n. Still read whole and restored, never cut."""
    log = conversation()
    found = [problem("text-conversion", "messages.jsonl", 0)]
    return converted(log, "Twice", crlf(crlf(log.data())), found, restores=True)


@vector("recover", "reformatted-records")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """A tool rewrote records 3 and 4 with spaces after each colon: whole lines that carry a
    checksum key and fail it. Readers skip them; no writer cuts them (UnrecognizedRecords)."""
    log = conversation()
    spaced = [line.replace(b'":', b'": ') for line in log.lines[2:]]
    data = b"".join(log.lines[:2] + spaced)
    found = [{**problem("unrecognized-records", "messages.jsonl", log.offset(2))}]
    return {"meta.json": meta(title="Reformatted"), "messages.jsonl": data}, {
        "load": {
            "snapshot_version": None,
            "records": [log.expect(s) for s in (1, 2)],
            "messages": context(log, 1, 2),
            "problems": [],
        },
        "records": [1, 2],
        "verify": acted(found),
        "repair": acted(found),
        "after_repair": {
            "files": ["messages.jsonl", "meta.json"],
            "verify": acted(found),
            "load_sequences": [1, 2],
        },
        "append": {"raises": "UnrecognizedRecords"},
    }


@vector("recover", "moved-boundary")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """A snapshot made while every line ended in \\r\\n, read after a writer restored the log:
    its offsets count three \\r too many. Found by its boundary record; repair rewrites them."""
    log = conversation()
    log.add(UserMessage(id=message_id(5), content="And 7 x 8?"))
    made = snapshot_line(log, 1, 4, summary(1, "Both products."), shift=3)
    found = [problem("moved-boundary", "snapshot-00000001.json")]
    return {"meta.json": meta(title="Moved"), "messages.jsonl": log.data(), "snapshot-00000001.json": made}, {
        "load": {
            "snapshot_version": 1,
            "records": [log.expect(5)],
            "messages": context(log, 5, first=summary(1, "Both products.")),
            "problems": [],
        },
        "records": [1, 2, 3, 4, 5],
        "verify": acted(found),
        "repair": acted(found),
        "after_repair": {
            "files": ["messages.jsonl", "meta.json", "snapshot-00000001.json"],
            "restored": {
                "snapshot-00000001.json": snapshot_line(log, 1, 4, summary(1, "Both products.")).decode()
            },
            "verify": [],
            "load_sequences": [5],
            "snapshot_version": 1,
        },
        "append": {"sequence": 6},
    }


@vector("recover", "bom-first-line")
def _() -> tuple[dict[str, bytes], dict[str, Any]]:
    """An editor saved the log with a UTF-8 byte-order mark: the first record is read, not
    salvaged as damage; the next append and repair take the mark out."""
    log = conversation()
    found = [problem("text-conversion", "messages.jsonl", 0)]
    return converted(log, "Saved", add_bom(log.data()), found, restores=True)


def dump(value: Any, depth: int = 0) -> str:
    """JSON with a line per key and per record or problem, compact below (diffs stay small)."""
    pad, inner = "  " * depth, "  " * (depth + 1)
    if depth < 2 and isinstance(value, dict) and value:
        items = [f"{inner}{json.dumps(k)}: {dump(v, depth + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if depth < 3 and isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
        items = [inner + json.dumps(v, ensure_ascii=False) for v in value]
        return "[\n" + ",\n".join(items) + "\n" + pad + "]"
    return json.dumps(value, ensure_ascii=False)


def build() -> dict[str, bytes]:
    """Every vector file, by path relative to this directory."""
    out: dict[str, bytes] = {}
    for name, (files, expected) in sorted(VECTORS.items()):
        for file, data in files.items():
            # "../<other>/<file>": another session of the same store (a fork's source).
            out[f"{name}/{file[3:]}" if file.startswith("../") else f"{name}/{SESSION}/{file}"] = data
        out[f"{name}/expected.json"] = (dump(expected) + "\n").encode()
    return out


def on_disk() -> dict[str, bytes]:
    found = {}
    for group in GROUPS:
        for path in sorted((HERE / group).rglob("*")):
            if path.is_file():
                found[path.relative_to(HERE).as_posix()] = path.read_bytes()
    return found


# ---------------------------------------------------------------------------------------
# The worked example of FORMAT.md §14: made by the real store (real ids and times), so it
# is pasted by hand; tests/vectors checks it has the shape the store writes today.
# ---------------------------------------------------------------------------------------


def example(root: Path) -> dict[str, bytes]:
    """Run the §14 calls against a store at ``root``; return its files (lock files aside)."""
    store = SessionStore(root, durability="none")
    store.append("demo", UserMessage(content="What is 6 x 7?"), title="Multiplication", agent_name="calc")
    store.append_many(
        "demo",
        [
            AssistantMessage(tool_calls=[ToolCall(id="call_1", name="multiply", arguments={"a": 6, "b": 7})]),
            {"role": "tool", "tool_call_id": "call_1", "content": "42"},
        ],
        usage=ModelUsage(input_tokens=31, output_tokens=9),
    )
    store.append("demo", AssistantMessage(content="6 x 7 = 42."))
    store.snapshot(
        "demo", CompactedMessage(content="The user asked for 6 x 7; the multiply tool said 42."), 4, 0
    )
    store.append("demo", UserMessage(content="Thanks!"))
    store.record_usage("demo", ModelUsage(input_tokens=31, output_tokens=9))
    store.close()
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and path.name != LOCK_NAME
    }


EXAMPLE_ORDER = (
    ".gitignore",
    "demo/meta.json",
    "demo/messages.jsonl",
    "demo/snapshot-00000001.json",
    "demo/usage.jsonl",
)


def print_example() -> None:
    """Print the example's files as the fenced blocks FORMAT.md §14 holds."""
    with tempfile.TemporaryDirectory() as tmp:
        files = example(Path(tmp) / "store")
    assert sorted(files) == sorted(EXAMPLE_ORDER), sorted(files)
    for path in EXAMPLE_ORDER:
        kind = "text" if path == ".gitignore" else "json" if path.endswith("meta.json") else "jsonl"
        print(f"```{kind} path={path}\n{files[path].decode()}```\n")
    log = files["demo/messages.jsonl"]
    starts = [0]
    for line in log.split(b"\n")[:-2]:
        starts.append(starts[-1] + len(line) + 1)
    print(f"line starts: {starts}, {len(log)} bytes; line 1 is {starts[1]} bytes")


def main(argv: list[str]) -> int:
    if "--example" in argv:
        print_example()
        return 0
    files = build()
    if "--check" in argv:
        stale = sorted(set(files.items()) ^ set(on_disk().items()))
        for path in sorted({p for p, _ in stale}):
            print(f"out of date: {path}")
        return 1 if stale else 0
    for group in GROUPS:
        shutil.rmtree(HERE / group, ignore_errors=True)
    for path, data in files.items():
        target = HERE / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    print(f"wrote {len(files)} files, {sum(map(len, files.values()))} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
