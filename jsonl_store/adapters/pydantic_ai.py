"""A pydantic-ai agent's message history stored in jsonl_store session directories.

``PydanticAIHistory(root)`` keeps, per session, the ``list[ModelMessage]`` an agent runs
on::

    history = PydanticAIHistory("sessions")
    result = agent.run_sync("Hi", message_history=history.load("chat-1"))
    history.append("chat-1", result.new_messages())   # or history.save("chat-1", result.all_messages())

Install it with ``pip install "jsonl_store[pydantic-ai]"``; the tests ran against
pydantic-ai-slim 2.62.0.

- ``load(session_id)`` gives the history back equal to what was saved (binary content
  included), ready for a new prompt: a process killed inside a tool leaves a response whose
  calls have no results, which pydantic-ai refuses under a new prompt ("Cannot provide a
  new user prompt when the message history contains unprocessed tool calls"); ``load``
  answers each such call the way pydantic-ai's own ``repair_messages`` does (a
  ``ToolReturnPart`` with ``outcome="interrupted"`` and pydantic-ai's marker in its
  metadata), through the store's tool-batch rule in `PYDANTIC_AI`, the pydantic-ai
  dialect. ``load(session_id, repair=False)`` gives the stored history as it is.
- ``save(session_id, messages)`` makes the stored history ``messages``, writing only what
  is new (see ``_state_log``: a shorter or rewritten history, as a history processor
  makes, is one small state record plus the new messages; the log is never rewritten).
- ``append(session_id, messages)`` adds messages after the stored ones.

Each message is one record ``{"role": "user"|"assistant", "format": "pydantic-ai",
"content": <the message as pydantic-ai's ModelMessagesTypeAdapter writes it>}``; a
response's token usage is the record's ``usage`` too, so ``jsonl-store usage`` counts it.
Unknown session ids give ``[]``; ids are free-form (``encode_session_id`` names the
directory). Damage in the middle of a log raises `CorruptSession`; a torn last line
(what a crash leaves) does not.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jsonl_store import (
    repair_context,
)

from . import _state_log
from ._pydantic_ai_codec import MESSAGE_CODECS, PYDANTIC_AI, PYDANTIC_AI_NOTICE, PydanticAIDialect

try:
    from pydantic_ai.messages import ModelMessage
except ImportError as exc:  # pragma: no cover - _pydantic_ai_codec raised first
    raise ImportError(
        'jsonl_store.adapters.pydantic_ai needs pydantic-ai: pip install "jsonl_store[pydantic-ai]"'
    ) from exc


__all__ = ["PYDANTIC_AI", "PydanticAIDialect", "PydanticAIHistory"]


class PydanticAIHistory(_state_log.Adapter):
    """pydantic-ai message histories, one jsonl_store session each.

    ``root`` and ``store_options`` are `SessionStore`'s (``durability``, ``lock_timeout``,
    ...); ``history.store`` is the store, for everything else (``list_sessions``,
    ``verify``, ``delete_session(history.store_session_id(sid))``).
    """

    def __init__(self, root: str, **store_options: Any) -> None:
        super().__init__(root, store_options, **MESSAGE_CODECS)

    def load(
        self, session_id: str, *, repair: bool = True, notice: str = PYDANTIC_AI_NOTICE
    ) -> list[ModelMessage]:
        """The session's history; with ``repair``, every unanswered tool call answered (see above)."""
        messages = list(self._log.load(self.store_session_id(session_id)).messages)
        if not repair:
            return messages
        # mid_history="close": pydantic-ai never drops a call, it answers it; so do we.
        repaired: list[ModelMessage] = repair_context(
            messages, mid_history="close", close_last=True, notice=notice, dialect=PYDANTIC_AI
        )
        return repaired

    def save(self, session_id: str, messages: Sequence[ModelMessage]) -> None:
        """Make the stored history ``messages`` (``result.all_messages()``), appending only the difference."""
        self._log.save(self.store_session_id(session_id), messages, [], None)

    def append(self, session_id: str, messages: Sequence[ModelMessage]) -> None:
        """Add ``messages`` (``result.new_messages()``) after the stored history, in one all-or-nothing append."""
        self._log.append(self.store_session_id(session_id), messages)
