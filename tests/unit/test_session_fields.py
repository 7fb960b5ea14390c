"""Fields users read and change: every message's ``role``, a session's ``agent_name``."""

from __future__ import annotations

import msgspec
import pytest

from jsonl_store import (
    AssistantMessage,
    CompactedMessage,
    InvalidArgument,
    SessionStore,
    SystemMessage,
    ToolMessage,
    UserMessage,
)


@pytest.mark.parametrize(
    ("message", "role"),
    [
        (SystemMessage(content="x"), "system"),
        (UserMessage(content="x"), "user"),
        (AssistantMessage(content="x"), "assistant"),
        (ToolMessage(tool_call_id="c"), "tool"),
        (CompactedMessage(content="x"), "compacted"),
    ],
)
def test_every_message_class_has_its_role(message: object, role: str) -> None:
    """m.role is the role written on disk (a loop checking m.role == "tool" ends)."""
    assert message.role == role  # type: ignore[attr-defined]
    assert msgspec.json.decode(msgspec.json.encode(message))["role"] == role


def test_role_is_read_only() -> None:
    """A role cannot be set: it is the message's class."""
    with pytest.raises(AttributeError):
        UserMessage(content="x").role = "assistant"  # type: ignore[misc]


def test_roles_of_loaded_messages(store: SessionStore) -> None:
    """Messages read back carry their role too."""
    store.append_many("s", [UserMessage(content="q"), AssistantMessage(content="a")])
    assert [m.role for m in store.load("s").messages] == ["user", "assistant"]  # type: ignore[union-attr]


def test_agent_name_changes_like_the_title(store: SessionStore) -> None:
    """update_session(agent_name=...) renames the agent; a runtime rename does not undo a user's."""
    store.append("s", UserMessage(content="x"), agent_name="first")
    assert store.update_session("s", agent_name="second").agent_name == "second"
    assert store.update_session("s", agent_name="runtime's", origin="runtime").agent_name == "second"
    assert store.load("s").agent_name == "second"
    assert store.update_session("s", agent_name=None).agent_name is None


def test_a_bad_agent_name_is_refused(store: SessionStore) -> None:
    """An agent name must be 1 to 64 characters."""
    store.append("s", UserMessage(content="x"))
    with pytest.raises(InvalidArgument):
        store.update_session("s", agent_name="x" * 65)
