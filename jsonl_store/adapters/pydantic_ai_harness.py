"""pydantic-ai-harness's ACP ``SessionStore`` kept in jsonl_store session directories.

``JsonlSessionStore(root)`` implements the protocol of
``pydantic_ai_harness.experimental.acp.SessionStore`` (``async save(session_id,
StoredSession)``, ``async load(session_id) -> StoredSession | None``), so an ACP agent's
sessions survive restarts and crashes, and ``session/load`` reopens them::

    from pydantic_ai_harness.experimental.acp import run_acp_stdio_sync
    run_acp_stdio_sync(agent, session_store=JsonlSessionStore("sessions"))

Install it with ``pip install "jsonl_store[pydantic-ai-harness]"``; the tests ran against
pydantic-ai-harness 0.62.0 (pydantic-ai-slim 2.62.0, agent-client-protocol 0.11.1).

What is on disk
---------------
The session is the directory ``encode_session_id(session_id)`` below ``root``. Its raw log
holds, in the order saves wrote them:

- the history's ``ModelMessage``s, one record each, as ``jsonl_store.adapters.pydantic_ai``
  writes them (``{"role", "format": "pydantic-ai", "content"}``, with the response's token
  usage on the record);
- the transcript's ACP session updates, one record each: ``{"role": "user"|"assistant",
  "format": "acp-update", "content": <the update as ACP's JSON writes it, defaults left out>,
  "include_in_messages": false}`` (``user`` for the user's own message chunks);
- a state record where a save was not an extension of the stored state (a history a
  processor shortened, another writer's different state, a new model): see
  ``_state_log``.

A save appends only what is new, in one conditional append: its cost is the new items'
(each encoded once), plus a pointer comparison per old item. After ``save(S)`` returns,
``load()`` gives exactly ``S`` (equal messages, updates and model), also when another
store or process saved a different state of the session just before: the last save to
finish wins, as with the harness's ``InMemorySessionStore``, and no record is ever
rewritten. ``load`` returns ``None`` for an id never saved, and raises `CorruptSession`
for damage in the middle of a log (which the harness answers with ``internal_error``); a
torn last line, what a crash leaves, is not damage: the state before it loads.
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Sequence
from typing import Any

# The harness first: without it (and so, often, without pydantic-ai too) the error must
# name this adapter's extra, not the pydantic-ai adapter's that the codec below names.
try:
    from pydantic import TypeAdapter
    from pydantic_ai_harness.experimental import HarnessExperimentalWarning
except ImportError as exc:  # pragma: no cover - exercised in an environment without the extra
    raise ImportError(
        "jsonl_store.adapters.pydantic_ai_harness needs pydantic-ai-harness with ACP: "
        'pip install "jsonl_store[pydantic-ai-harness]"'
    ) from exc

with warnings.catch_warnings():
    # The ACP part of the harness warns that it is experimental on import; the user who
    # picked this adapter picked ACP, so the warning says nothing new here.
    warnings.simplefilter("ignore", HarnessExperimentalWarning)
    try:
        from pydantic_ai_harness.experimental.acp import StoredSession
        from pydantic_ai_harness.experimental.acp._session import SessionUpdate
    except ImportError as exc:  # pragma: no cover - the harness without its acp extra
        raise ImportError(
            "jsonl_store.adapters.pydantic_ai_harness needs pydantic-ai-harness with ACP: "
            'pip install "jsonl_store[pydantic-ai-harness]"'
        ) from exc

# Only now, after the harness check above: see the comment there.
from . import _state_log
from ._pydantic_ai_codec import MESSAGE_CODECS

__all__ = ["JsonlSessionStore"]

#: The ``format`` of a stored ACP session update.
UPDATE_FORMAT = "acp-update"

_UPDATES: TypeAdapter[list[Any]] = TypeAdapter(list[SessionUpdate])


def _update_role(content: dict[str, Any]) -> str:
    return "user" if content.get("sessionUpdate") == "user_message_chunk" else "assistant"


def encode_updates(updates: Sequence[Any]) -> list[dict[str, Any]]:
    """The records' messages for ACP session updates (JSON by alias, as ACP sends them)."""
    dumped = _UPDATES.dump_python(list(updates), mode="json", by_alias=True, exclude_defaults=True)
    return [
        {
            "role": _update_role(content),
            "format": UPDATE_FORMAT,
            "content": content,
            "include_in_messages": False,
        }
        for content in dumped
    ]


def is_stored_update(message: Any) -> bool:
    return (
        isinstance(message, dict)
        and message.get("format") == UPDATE_FORMAT
        and isinstance(message.get("content"), dict)
    )


def decode_updates(stored: Sequence[dict[str, Any]]) -> list[Any]:
    """The ACP updates of stored ones, validated by ACP's own models in one call."""
    return _UPDATES.validate_python([item["content"] for item in stored]) if stored else []


class JsonlSessionStore(_state_log.Adapter):
    """pydantic-ai-harness ACP sessions, one jsonl_store session each (see the module docs).

    ``root`` and ``store_options`` are `SessionStore`'s; ``self.store`` is the store. The
    file work runs in a worker thread, so the event loop never waits on the disk.
    """

    def __init__(self, root: str, **store_options: Any) -> None:
        super().__init__(
            root,
            store_options,
            **MESSAGE_CODECS,
            encode_updates=encode_updates,
            is_update=is_stored_update,
            decode_updates=decode_updates,
        )

    def save_sync(self, session_id: str, session: StoredSession) -> None:
        """`save`, for code that is not async."""
        self._log.save(self.store_session_id(session_id), session.messages, session.updates, session.model)

    def load_sync(self, session_id: str) -> StoredSession | None:
        """`load`, for code that is not async."""
        stored = self._log.load(self.store_session_id(session_id))
        if not stored.exists:
            return None
        return StoredSession(messages=list(stored.messages), updates=list(stored.updates), model=stored.model)

    async def save(self, session_id: str, session: StoredSession) -> None:
        """Store the session's committed state (the harness calls this after each turn)."""
        # Shielded: a save that started finishes even when the turn is cancelled meanwhile
        # (the harness logs and swallows that cancellation); the write is all or nothing anyway.
        await asyncio.shield(asyncio.to_thread(self.save_sync, session_id, session))

    async def load(self, session_id: str) -> StoredSession | None:
        """The session as last saved, or None for an id never saved."""
        return await asyncio.to_thread(self.load_sync, session_id)
