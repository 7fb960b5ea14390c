"""zett-agent's session rules, in the words of its SQL storage, and its ids and summaries.

zett's callers match the texts of the ``ValueError`` its SQL storage raises
(``zett_agent/_sql_storage.py``: ``create_session``, ``list_sessions``,
``update_session``, ``append``, ``snapshot``; the same in zett-agent 0.1.17, 0.2.0 and
0.2.1), so the adapter raises `ZettCompatError` with exactly those texts: an
``except ValueError`` written for zett catches it, and an ``except JsonlStoreError``
written for this library does too. The rest is how a store session looks to zett: its
id (``encode_session_id`` names the directory), its summary, its place in zett's list.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from zett_agent.extensions.persistence import SessionSummary
from zett_agent.json_types import JsonValue, json_object

# The store's public API only, as any user of it would write (no private module).
import jsonl_store as core
from jsonl_store import InvalidSessionId, JsonlStoreError, decode_session_id, encode_session_id


class ZettCompatError(JsonlStoreError, ValueError):
    """A call zett's SQL storage refuses, refused with its text (zett raises ``ValueError``).

    The message is zett's, word for word (its callers match it); where the store refused
    first (a stale snapshot version, a boundary outside the log), the store's own error
    is the ``__cause__``.
    """


#: Where zett's ``update_session`` keeps its time: the SQL storage moves ``updated_at``
#: (the order of ``list_sessions``) on an update, and a store session's own ``updated_at``
#: is its last record's time.
UPDATED_KEY = "zett_updated_at"
CONFLICT = "Snapshot conflict; reload the session"
OUTSIDE = "Snapshot boundary must identify an existing Raw Log message"
BEHIND = "Snapshot boundary must advance beyond the previous checkpoint"
ONE_COMPACTED = "Context snapshot must contain exactly one CompactedMessage"
TITLE_LENGTH = "Session title must contain between 1 and 200 characters"
AGENT_NAME_LENGTH = "Agent name must contain between 1 and 64 characters"
OWN_PARENT = "parent_session_id must differ from session_id"


def session_type_code(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ZettCompatError("session_type must be an integer code")
    if value < 0:
        raise ZettCompatError("session_type cannot be negative")
    return int(value)


def title(given: str | None) -> str | None:
    """A title as zett stores one given to ``create_session`` or ``update_session``: stripped."""
    if given is None:
        return None
    stripped = given.strip()
    if not stripped or len(stripped) > 200:
        raise ZettCompatError(TITLE_LENGTH)
    return stripped


def agent_name(given: str | None) -> str | None:
    if given is None:
        return None
    stripped = given.strip()
    if not stripped or len(stripped) > 64:
        raise ZettCompatError(AGENT_NAME_LENGTH)
    return stripped


def page(limit: int, offset: int) -> None:
    if limit < 1:
        raise ZettCompatError("limit must be positive")
    if offset < 0:
        raise ZettCompatError("offset cannot be negative")


def json_fields(
    value: Mapping[str, JsonValue] | None, *, field_name: str, nonempty_keys: bool = False
) -> dict[str, JsonValue]:
    """A record's metadata or tags checked by zett's own ``json_object``, its refusal typed."""
    try:
        return json_object(value, field_name=field_name, nonempty_keys=nonempty_keys)
    except ValueError as exc:
        raise ZettCompatError(str(exc)) from exc


def parent(stored: str | None) -> str | None:
    """zett's id of a parent directory name (None for no parent)."""
    return decode_session_id(stored) if stored is not None else None


def stored(session_id: str) -> str | None:
    """The directory name of a zett session id; None for an id no directory can have (``""``),
    which names no session, as an id the SQL storage never saw names none there."""
    try:
        return encode_session_id(session_id)
    except InvalidSessionId:
        return None


def updated_at(summary: core.SessionSummary) -> datetime:
    """The session's last activity as zett counts it: its last record or zett's last update."""
    stamp = summary.metadata.get(UPDATED_KEY)
    try:
        updated = datetime.fromisoformat(stamp) if isinstance(stamp, str) else None
    except ValueError:
        updated = None  # edited by hand: the records' time stands
    if updated is None or updated.tzinfo is None:
        return summary.updated_at
    return max(summary.updated_at, updated)


def summary_of(session_id: str, summary: core.SessionSummary) -> SessionSummary:
    """The store's summary as zett's, under zett's id for the session."""
    return SessionSummary(
        session_id=session_id,
        parent_session_id=parent(summary.parent_session_id),
        session_type=summary.session_type,
        title=summary.title,
        agent_name=summary.agent_name,
        message_count=summary.message_count,
        created_at=summary.created_at,
        updated_at=updated_at(summary),
    )


def listing_key(summary: core.SessionSummary) -> tuple[datetime, str] | None:
    """Where a session goes in zett's list: (last activity, zett's id). None when no zett id
    names it or its parent (``a.b``, made with the store's own API: ``encode_session_id``
    never makes it, so zett could not open it)."""
    try:
        session_id = decode_session_id(summary.session_id)
        parent(summary.parent_session_id)
    except InvalidSessionId:
        return None
    return updated_at(summary), session_id
