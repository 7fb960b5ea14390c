"""Mistakes the public types must catch: each line is an error mypy has to report.

Every ``# type: ignore[code]`` below is an assertion. The check runs with
``warn_unused_ignores`` (part of ``--strict``), so a line that stops being an error, or
becomes a different one, fails `test_public_api_types.py`.
"""

from __future__ import annotations

from jsonl_store import AsyncSessionStore, SessionStore, UserMessage


def wrong_messages(store: SessionStore, sid: str) -> None:
    """Things that are not messages, where messages are taken."""
    store.append(sid, 42)  # type: ignore[arg-type]
    store.append(sid, "hello")  # type: ignore[arg-type]
    store.append_many(sid, [UserMessage(content="hi"), 7])  # type: ignore[list-item]
    store.append_many(sid, UserMessage(content="a single message, not a list"))  # type: ignore[arg-type]
    store.checkpoint(sid, ["hello"])  # type: ignore[list-item]
    UserMessage(text="hi")  # type: ignore[call-arg]


def wrong_options(store: SessionStore, sid: str) -> None:
    """Option values outside their Literal, and unknown keywords."""
    SessionStore("/tmp/s", durability="always")  # type: ignore[arg-type]
    store.update_session(sid, origin="admin")  # type: ignore[arg-type]
    store.update_session(sid, name="no such field")  # type: ignore[call-arg]
    store.load(sid).model_context(mid_history="keep")  # type: ignore[arg-type]


def unnarrowed_message(store: SessionStore, sid: str) -> None:
    """A record's message is a union: its content needs an isinstance check first."""
    for record in store.records(sid):
        print(record.message.content)  # type: ignore[union-attr]  # noqa: T201 - user code prints


async def wrong_async(store: AsyncSessionStore, sid: str) -> None:
    """The async store keeps the sync signatures (the wrapper must not erase them)."""
    await store.append(sid, 42)  # type: ignore[arg-type]
    count: str = await store.append(sid, UserMessage(content="hi"))  # type: ignore[assignment]
    del count
