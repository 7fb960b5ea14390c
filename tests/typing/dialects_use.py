"""Dialects and provider shapes as user code writes them: it must pass ``mypy --strict``.

The last function holds the mistakes the types must catch, each asserted by a
``# type: ignore[code]`` that ``warn_unused_ignores`` fails once it is not needed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jsonl_store import (
    Dialect,
    Message,
    SessionStore,
    is_provider_valid,
    register_dialect,
    repair_context,
    to_anthropic,
    to_openai_chat,
    to_openai_responses,
)


class Events:
    """A dialect written without importing anything but the protocol's shape."""

    def calls(self, message: Any) -> list[tuple[Any, str | None]]:
        return [(call_id, None) for call_id in message.get("calls", [])]

    def answers(self, message: Any) -> list[Any]:
        return [message["done"]] if "done" in message else []

    def keep_answers(self, message: Any, keep: Sequence[bool]) -> Any | None:
        return None

    def joins(self, previous: Any, message: Any) -> bool:
        return False

    def notices(self, unanswered: Sequence[tuple[Any, Any, str | None]], notice: str) -> list[Any]:
        return [{"done": call_id, "text": notice} for _, call_id, _ in unanswered]


def use_a_dialect(history: list[dict[str, Any]]) -> list[Any]:
    """Register a dialect and repair a history in it, by name and by object."""
    dialect: Dialect = Events()
    register_dialect("events", dialect)
    assert is_provider_valid(history, dialect="events")
    return repair_context(history, mid_history="close", dialect=dialect)


def send_everywhere(store: SessionStore, sid: str) -> int:
    """Turn a session's model context into each provider's request shape."""
    context: list[Message] = store.load(sid).model_context()
    chat: list[dict[str, Any]] = to_openai_chat(context)
    items: list[dict[str, Any]] = to_openai_responses(context)
    system, messages = to_anthropic(context)
    instructions: str = system or ""
    return len(chat) + len(items) + len(messages) + len(instructions)


def mistakes(context: list[Message]) -> None:
    """What the types must refuse."""
    register_dialect("half", object())  # type: ignore[arg-type]
    system: str = to_anthropic(context)[0]  # type: ignore[assignment]
    role = to_openai_chat(context)[0].role  # type: ignore[attr-defined]
    del system, role
