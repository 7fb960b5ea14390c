"""A zett-agent message as a store record, and the store's records as zett's objects.

A zett message is stored as a plain dict: the fields zett's own codec
(``zett_agent.storage.encode_messages``) gives it, plus the store's ``role``. An
``AgentMessage``, which has no provider role, is ``"user"`` with ``"zett_kind":
"agent"``; a failed tool result also has the store's ``"is_error": true``. Reading
decodes it with ``decode_messages``, the call zett's SQL storage makes, so the objects
are equal to those zett wrote. A message's own ``persist`` flag is kept as
``zett_persist`` (the store reads ``persist`` as "do not write"; zett's storage writes
what it is given).
"""

from __future__ import annotations

import json
from typing import Any

from zett_agent.extensions.compaction import CompactedMessage
from zett_agent.extensions.events import MessageTiming
from zett_agent.extensions.persistence import ContextSnapshot, RawMessageRecord
from zett_agent.messages import AnyMessage
from zett_agent.model import ModelUsage
from zett_agent.storage import MESSAGE_TYPES, MessageKind, decode_messages, encode_messages

# The store's public API only, as any user of it would write (no private module).
import jsonl_store as core
from jsonl_store import InvalidMessage

from ._zett_rules import ONE_COMPACTED, ZettCompatError

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


def kind(message: object) -> MessageKind:
    """zett's kind of a message object (zett's words for any other object)."""
    for found, cls in MESSAGE_TYPES.items():
        if type(message) is cls:
            return found
    raise ZettCompatError(f"Unsupported message type: {type(message).__name__}")


def to_record(message: AnyMessage | CompactedMessage) -> dict[str, Any]:
    """The record a zett message is stored as: zett's own encoding, with the store's role."""
    found = kind(message)
    [envelope] = json.loads(encode_messages([message]))
    record: dict[str, Any] = {"role": _ROLES[found]}
    if found is MessageKind.AGENT:
        record[_KIND_KEY] = "agent"
    data: dict[str, Any] = envelope["data"]
    if not data.pop("persist", True):
        record[_PERSIST_KEY] = False
    if not data.get("attributes"):
        data.pop("attributes", None)  # the default, {}: short lines
    record.update(data)
    if found is MessageKind.TOOL and not data["success"]:
        record[_ERROR_KEY] = True  # what the store's readers (jsonl-store show, resume) look for
    return record


def _from_record(stored: object) -> AnyMessage:
    """The zett message a record holds: the one `to_record` stored, equal to it."""
    if not isinstance(stored, dict):
        stored = _from_native(stored)
    found = MessageKind.AGENT if stored.get(_KIND_KEY) == "agent" else _KINDS[stored["role"]]
    data = {key: value for key, value in stored.items() if key not in _OWN_KEYS}
    if _PERSIST_KEY in stored:
        data["persist"] = stored[_PERSIST_KEY]
    if found is MessageKind.TOOL:
        # A result another writer added (SessionStore.resume's closing result names no
        # success and maybe no tool): the store's is_error stands for zett's success.
        data.setdefault("success", not stored.get(_ERROR_KEY, False))
        data.setdefault("name", "")
    [message] = decode_messages(json.dumps([{"kind": int(found), "data": data}], ensure_ascii=False))
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
    # Caught by `_message`, which names the record.
    raise ValueError(f"Stored message is not one zett-agent can read: {message!r}")


def timing(given: MessageTiming) -> core.MessageTiming:
    """zett's timing of a message as the store's."""
    return core.MessageTiming(
        started_at=given.started_at,
        completed_at=given.completed_at,
        duration_ns=given.duration_ns,
        reasoning_started_at=given.reasoning_started_at,
        reasoning_completed_at=given.reasoning_completed_at,
        reasoning_duration_ns=given.reasoning_duration_ns,
        content_started_at=given.content_started_at,
        content_completed_at=given.content_completed_at,
        content_duration_ns=given.content_duration_ns,
    )


def usage(given: ModelUsage) -> core.ModelUsage:
    """zett's token usage of a call as the store's."""
    return core.ModelUsage(
        input_tokens=given.input_tokens,
        output_tokens=given.output_tokens,
        cache_read_tokens=given.cache_read_tokens,
        cache_write_tokens=given.cache_write_tokens,
        reasoning_tokens=given.reasoning_tokens,
    )


def _message(session_id: str, sequence: int, stored: object) -> AnyMessage:
    """The zett message a record holds. A record in another tool's shape (a Claude Code or
    Codex session an import stored as written) is an `InvalidMessage` naming the record, not
    pydantic's validation error, which quotes the stored text."""
    try:
        return _from_record(stored)
    except (ValueError, KeyError, TypeError) as exc:  # pydantic's ValidationError is a ValueError
        raise InvalidMessage(
            f"record #{sequence} of session {session_id!r} is not a message zett-agent can read "
            "(another tool's shape, as an import stores it: jsonl-store show reads it)",
            session_id=session_id,
        ) from exc


def record_of(session_id: str, record: core.RawMessageRecord) -> RawMessageRecord:
    """A store record as zett's ``RawMessageRecord`` of the session zett calls ``session_id``."""
    started_at = record.started_at or record.created_at  # a record appended without timing
    return RawMessageRecord(
        id=record.id,
        session_id=session_id,
        request_id=record.request_id or "",
        sequence=record.sequence,
        message=_message(session_id, record.sequence, record.message),
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


def snapshot_of(session_id: str, snapshot: core.ContextSnapshot) -> ContextSnapshot:
    """A store snapshot as zett's ``ContextSnapshot`` (its compacted message zett's)."""
    compacted = _message(session_id, snapshot.compacted_through_sequence, snapshot.compacted_message)
    if not isinstance(compacted, CompactedMessage):
        raise ZettCompatError(ONE_COMPACTED)
    return ContextSnapshot(
        id=snapshot.id,
        session_id=session_id,
        version=snapshot.version,
        compacted_message=compacted,
        compacted_through_sequence=snapshot.compacted_through_sequence,
        created_at=snapshot.created_at,
        updated_at=snapshot.updated_at,
    )
