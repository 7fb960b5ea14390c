"""zett-agent's ``SessionStorage`` over a jsonl_store store: ``pip install "jsonl_store[zett]"``.

`JsonlSessionStorage` implements the protocol of ``zett_agent.extensions.persistence``
(``load``, ``append``, ``snapshot``) and behaves as zett's own ``SQLSessionStorage``
does (``zett_agent/_sql_storage.py``), so ``BaseSessionPersistenceExtension`` restores
the same context from either; `JsonlSessionExtension` is that extension over it.

- a zett message is stored as a plain dict record: the fields zett's own codec
  (``zett_agent.storage.encode_messages``) gives it, plus the store's ``role``. An
  ``AgentMessage``, which has no provider role, is ``"user"`` with ``"zett_kind":
  "agent"``; a failed tool result also has the store's ``"is_error": true``. Loading
  decodes it with ``decode_messages``, the call zett's SQL storage makes, so the
  objects are equal to those zett wrote. A message's own ``persist`` flag is kept as
  ``zett_persist`` (the store reads ``persist`` as "do not write"; zett's storage
  writes what it is given);
- an append without timing gets ``MessageTiming.instant()``, as in the SQL storage;
- a later append's ``title``/``agent_name`` update the session, as the SQL storage's
  do, but as a runtime update: a title a user set (``SessionStore.update_session``)
  stays;
- bad input, a parent that differs from the session's, and a stale or misplaced
  snapshot raise ``ValueError``, as zett expects (the store's `SnapshotConflict` and
  `SessionNotFound` are not ``ValueError``s; they become its ``__cause__``);
- session ids are free-form strings: `jsonl_store.encode_session_id` names the
  directories (a UUIDv7, zett's default id, is its own encoding).

An interrupted tool batch is left as the log holds it: zett's runtime answers its open
calls itself when the next request starts (``INTERRUPTED_TOOL_RESULT``), through this
storage, so the log gets what the SQL storage would get.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Mapping
from itertools import islice, takewhile
from typing import Any

try:
    from zett_agent.extensions.compaction import CompactedMessage
    from zett_agent.extensions.events import MessageTiming
    from zett_agent.extensions.persistence import (
        BaseSessionPersistenceExtension,
        ContextSnapshot,
        RawMessageRecord,
        SessionView,
    )
    from zett_agent.json_types import JsonValue, json_object
    from zett_agent.messages import AnyMessage, AssistantMessage
    from zett_agent.model import ModelUsage
    from zett_agent.storage import MESSAGE_TYPES, MessageKind, decode_messages, encode_messages
except ImportError as exc:  # pragma: no cover - exercised in a subprocess by the tests
    raise ImportError('jsonl_store.adapters.zett needs zett-agent: pip install "jsonl_store[zett]"') from exc

# The store's public API only, as any user of it would write (no private module).
import jsonl_store as core
from jsonl_store import SessionNotFound, SessionStore, SnapshotConflict, decode_session_id, encode_session_id

__all__ = ["JsonlSessionExtension", "JsonlSessionStorage"]

#: The store's role for each zett message kind (spec: roles are system, user, assistant,
#: tool, compacted). An ``AgentMessage`` is sent to providers as a user message.
_ROLES: dict[MessageKind, str] = {
    MessageKind.SYSTEM: "system",
    MessageKind.USER: "user",
    MessageKind.ASSISTANT: "assistant",
    MessageKind.TOOL: "tool",
    MessageKind.CHECKPOINT: "compacted",
    MessageKind.AGENT: "user",
}
_KINDS: dict[str, MessageKind] = {
    "system": MessageKind.SYSTEM,
    "user": MessageKind.USER,
    "assistant": MessageKind.ASSISTANT,
    "tool": MessageKind.TOOL,
    "compacted": MessageKind.CHECKPOINT,
}
_KIND_KEY = "zett_kind"
_PERSIST_KEY = "zett_persist"
_ERROR_KEY = "is_error"
#: Keys the adapter adds to zett's fields; no zett message class has a field of these names.
_OWN_KEYS = ("role", _KIND_KEY, _PERSIST_KEY, _ERROR_KEY)


def _kind(message: object) -> MessageKind:
    for kind, cls in MESSAGE_TYPES.items():
        if type(message) is cls:
            return kind
    raise ValueError(f"Unsupported message type: {type(message).__name__}")


def _to_record(message: AnyMessage | CompactedMessage) -> dict[str, Any]:
    """The record a zett message is stored as: zett's own encoding, with the store's role."""
    kind = _kind(message)
    [envelope] = json.loads(encode_messages([message]))
    record: dict[str, Any] = {"role": _ROLES[kind]}
    if kind is MessageKind.AGENT:
        record[_KIND_KEY] = "agent"
    data: dict[str, Any] = envelope["data"]
    if not data.pop("persist", True):
        record[_PERSIST_KEY] = False
    if not data.get("attributes"):
        data.pop("attributes", None)  # the default, {}: short lines
    record.update(data)
    if kind is MessageKind.TOOL and not data["success"]:
        record[_ERROR_KEY] = True  # what the store's readers (jsonl-store show, resume) look for
    return record


def _from_record(stored: object) -> AnyMessage:
    """The zett message a record holds: the one `_to_record` stored, equal to it."""
    if not isinstance(stored, dict):
        stored = _from_native(stored)
    kind = MessageKind.AGENT if stored.get(_KIND_KEY) == "agent" else _KINDS[stored["role"]]
    data = {key: value for key, value in stored.items() if key not in _OWN_KEYS}
    if _PERSIST_KEY in stored:
        data["persist"] = stored[_PERSIST_KEY]
    if kind is MessageKind.TOOL:
        # A result another writer added (SessionStore.resume's closing result names no
        # success and maybe no tool): the store's is_error stands for zett's success.
        data.setdefault("success", not stored.get(_ERROR_KEY, False))
        data.setdefault("name", "")
    [message] = decode_messages(json.dumps([{"kind": int(kind), "data": data}], ensure_ascii=False))
    return message


def _from_native(message: object) -> dict[str, Any]:
    """A record written with the store's own message classes, in zett's field names."""
    if isinstance(message, core.ToolMessage):
        content = message.content if isinstance(message.content, str) else json.dumps(message.content)
        return {"role": "tool", "tool_call_id": message.tool_call_id, "name": message.name or "",
                "content": content, "success": not message.is_error,
                "include_in_messages": message.include_in_messages}  # fmt: skip
    if isinstance(message, core.AssistantMessage):
        calls = [{"id": c.id, "name": c.name, "arguments": c.arguments if isinstance(c.arguments, dict) else {}}
                 for c in message.tool_calls]  # fmt: skip
        content = message.content if isinstance(message.content, str) else ""
        return {"role": "assistant", "content": content, "reasoning": message.reasoning, "tool_calls": calls,
                "include_in_messages": message.include_in_messages}  # fmt: skip
    if isinstance(message, core.SystemMessage | core.UserMessage | core.CompactedMessage):
        content = message.content if isinstance(message.content, str) else json.dumps(message.content)
        return {"role": message.role, "content": content, "include_in_messages": message.include_in_messages}
    raise ValueError(f"Stored message is not one zett-agent can read: {message!r}")


def _timing(timing: MessageTiming) -> core.MessageTiming:
    return core.MessageTiming(
        started_at=timing.started_at,
        completed_at=timing.completed_at,
        duration_ns=timing.duration_ns,
        reasoning_started_at=timing.reasoning_started_at,
        reasoning_completed_at=timing.reasoning_completed_at,
        reasoning_duration_ns=timing.reasoning_duration_ns,
        content_started_at=timing.content_started_at,
        content_completed_at=timing.content_completed_at,
        content_duration_ns=timing.content_duration_ns,
    )


def _usage(usage: ModelUsage) -> core.ModelUsage:
    return core.ModelUsage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
        reasoning_tokens=usage.reasoning_tokens,
    )


def _record(session_id: str, record: core.RawMessageRecord) -> RawMessageRecord:
    started_at = record.started_at or record.created_at  # a record appended without timing
    return RawMessageRecord(
        id=record.id,
        session_id=session_id,
        request_id=record.request_id or "",
        sequence=record.sequence,
        message=_from_record(record.message),
        metadata=record.metadata,
        tags=record.tags,
        started_at=started_at,
        completed_at=record.completed_at or started_at,
        duration_ns=record.duration_ns,
        reasoning_started_at=record.reasoning_started_at,
        reasoning_completed_at=record.reasoning_completed_at,
        reasoning_duration_ns=record.reasoning_duration_ns,
        content_started_at=record.content_started_at,
        content_completed_at=record.content_completed_at,
        content_duration_ns=record.content_duration_ns,
        input_tokens=record.input_tokens,
        output_tokens=record.output_tokens,
        cache_read_tokens=record.cache_read_tokens,
        cache_write_tokens=record.cache_write_tokens,
        reasoning_tokens=record.reasoning_tokens,
        created_at=record.created_at,
        updated_at=record.updated_at,
    )


def _snapshot(session_id: str, snapshot: core.ContextSnapshot) -> ContextSnapshot:
    compacted = _from_record(snapshot.compacted_message)
    if not isinstance(compacted, CompactedMessage):
        raise ValueError("Context snapshot must contain exactly one CompactedMessage")
    return ContextSnapshot(
        id=snapshot.id,
        session_id=session_id,
        version=snapshot.version,
        compacted_message=compacted,
        compacted_through_sequence=snapshot.compacted_through_sequence,
        created_at=snapshot.created_at,
        updated_at=snapshot.updated_at,
    )


def _parent(stored: str | None) -> str | None:
    return decode_session_id(stored) if stored is not None else None


class JsonlSessionStorage:
    """zett-agent's ``SessionStorage`` over a `SessionStore` at ``root``.

    ``store_options`` go to `SessionStore` (``durability``, ``lock_timeout``, ...);
    ``self.store`` is that store, for everything zett's protocol does not cover
    (``records``, ``update_session``, ``jsonl-store show``). Each call runs the store in
    a worker thread, so the event loop is never blocked.
    """

    def __init__(self, root: str | os.PathLike[str], **store_options: Any) -> None:
        self.store = SessionStore(root, **store_options)
        #: Each session's parent, once seen: a parent never changes, so an append needs
        #: no metadata read to check it (zett's SQL storage checks it on every append).
        self._parents: dict[str, str | None] = {}

    async def close(self) -> None:
        """Release the store's open descriptors (it reopens them when used again)."""
        await asyncio.to_thread(self.store.close)

    async def load(self, session_id: str) -> SessionView:
        """The latest snapshot and the raw-log records after its boundary, as zett's objects."""
        return await asyncio.to_thread(self._load, session_id)

    async def append(
        self,
        session_id: str,
        request_id: str,
        message: AnyMessage,
        timing: MessageTiming | None = None,
        parent_session_id: str | None = None,
        title: str | None = None,
        agent_name: str | None = None,
        metadata: Mapping[str, JsonValue] | None = None,
        tags: Mapping[str, JsonValue] | None = None,
        usage: ModelUsage | None = None,
    ) -> int:
        """Append one immutable raw-log record and return its sequence (zett's rules, see the module)."""
        if title is not None and (not title.strip() or len(title) > 200):
            raise ValueError("Session title must contain between 1 and 200 characters")
        if agent_name is not None and (not agent_name.strip() or len(agent_name) > 64):
            raise ValueError("Agent name must contain between 1 and 64 characters")
        if usage is not None and not isinstance(message, AssistantMessage):
            raise ValueError("Model usage belongs only to assistant messages")
        if _kind(message) is MessageKind.CHECKPOINT:
            raise ValueError("Checkpoints belong in snapshots, not raw logs")
        options: dict[str, Any] = {
            "request_id": request_id,
            "timing": _timing(timing or MessageTiming.instant()),
            "usage": _usage(usage) if usage is not None else None,
            "metadata": json_object(metadata, field_name="Message metadata"),
            "tags": json_object(tags, field_name="Message tags", nonempty_keys=True),
            "title": title,
            "agent_name": agent_name,
        }
        record = _to_record(message)
        return await asyncio.to_thread(self._append, session_id, record, parent_session_id, options)

    async def snapshot(
        self,
        session_id: str,
        compacted_message: CompactedMessage,
        compacted_through_sequence: int,
        expected_version: int,
    ) -> ContextSnapshot:
        """Create one immutable checkpoint; ``ValueError`` for a stale version or a bad boundary."""
        if type(compacted_message) is not CompactedMessage:
            raise ValueError("Context snapshot must contain exactly one CompactedMessage")
        record = _to_record(compacted_message)
        return await asyncio.to_thread(
            self._snapshot, session_id, record, compacted_through_sequence, expected_version
        )

    async def list_raw_messages(
        self,
        session_id: str,
        *,
        after_sequence: int = 0,
        through_sequence: int | None = None,
        limit: int = 10_000,
        offset: int = 0,
    ) -> list[RawMessageRecord]:
        """One page of the whole raw log, snapshots ignored, as zett's SQL storage gives it to a UI."""
        if after_sequence < 0:
            raise ValueError("after_sequence cannot be negative")
        if through_sequence is not None and through_sequence < 1:
            raise ValueError("through_sequence must be positive")
        if limit < 1:
            raise ValueError("limit must be positive")
        if offset < 0:
            raise ValueError("offset cannot be negative")
        return await asyncio.to_thread(
            self._list, session_id, after_sequence, through_sequence, limit, offset
        )

    # -- the blocking halves, run in a worker thread ------------------------------------

    def _list(
        self, session_id: str, after: int, through: int | None, limit: int, offset: int
    ) -> list[RawMessageRecord]:
        records = self.store.records(encode_session_id(session_id), after=after)
        try:
            wanted = takewhile(lambda r: through is None or r.sequence <= through, records)
            return [_record(session_id, record) for record in islice(wanted, offset, offset + limit)]
        finally:
            close = getattr(records, "close", None)  # stop reading at the page's end
            if close is not None:
                close()

    def _load(self, session_id: str) -> SessionView:
        view = self.store.load(encode_session_id(session_id))
        return SessionView(
            parent_session_id=_parent(view.parent_session_id),
            session_type=view.session_type,
            title=view.title,
            agent_name=view.agent_name,
            snapshot=_snapshot(session_id, view.snapshot) if view.snapshot is not None else None,
            raw_tail=[_record(session_id, record) for record in view.raw_tail],
        )

    def _append(
        self, session_id: str, record: dict[str, Any], parent_session_id: str | None, options: dict[str, Any]
    ) -> int:
        stored_id = encode_session_id(session_id)
        stored_parent = encode_session_id(parent_session_id) if parent_session_id is not None else None
        title, agent_name = options["title"], options["agent_name"]
        summary = None
        if title is not None or agent_name is not None or stored_id not in self._parents:
            summary = self.store.get_session(stored_id)
            if summary is not None:
                self._parents[stored_id] = summary.parent_session_id
        # zett's SQL storage refuses any other parent than the session's, None included;
        # the store itself only refuses a different one it is given.
        if stored_id in self._parents and self._parents[stored_id] != stored_parent:
            raise ValueError("Session parent cannot change after creation")
        sequence = self.store.append(stored_id, record, parent_session_id=stored_parent, **options)
        self._parents[stored_id] = stored_parent
        if summary is not None and (
            (title is not None and title != summary.title)
            or (agent_name is not None and agent_name != summary.agent_name)
        ):
            # The SQL storage sets a later append's title and agent name on the session;
            # here it is a runtime update, which leaves a title a user gave alone.
            changes: dict[str, Any] = {}
            if title is not None:
                changes["title"] = title
            if agent_name is not None:
                changes["agent_name"] = agent_name
            self.store.update_session(stored_id, origin="runtime", **changes)
        return sequence

    def _snapshot(
        self, session_id: str, record: dict[str, Any], compacted_through_sequence: int, expected_version: int
    ) -> ContextSnapshot:
        try:
            snapshot = self.store.snapshot(
                encode_session_id(session_id), record, compacted_through_sequence, expected_version
            )
        except SnapshotConflict as exc:
            raise ValueError("Snapshot conflict; reload the session") from exc
        except SessionNotFound as exc:
            raise ValueError("Snapshot boundary must identify an existing Raw Log message") from exc
        return _snapshot(session_id, snapshot)


class JsonlSessionExtension(BaseSessionPersistenceExtension[JsonlSessionStorage]):
    """zett's persistence extension over `JsonlSessionStorage`: where ``SQLiteSessionExtension`` goes.

    It is the subclass zett's docs ask a storage to come with (``BaseSessionPersistenceExtension``
    does the restoring, appending and compacting); ``self.storage`` is the storage.
    """

    def __init__(self, root: str | os.PathLike[str], **store_options: Any) -> None:
        super().__init__(JsonlSessionStorage(root, **store_options))

    async def close(self) -> None:
        """Release the store's open descriptors, as ``SQLSessionExtension.close`` releases its pool."""
        await self.storage.close()
