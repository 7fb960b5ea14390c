"""zett-agent's ``SessionStorage`` over a jsonl_store store: ``pip install "jsonl_store[zett]"``.

`JsonlSessionStorage` implements the protocol of ``zett_agent.extensions.persistence``
(``load``, ``append``, ``snapshot``) and behaves as zett's own ``SQLSessionStorage``
does (``zett_agent/_sql_storage.py``), so ``BaseSessionPersistenceExtension`` restores
the same context from either; `JsonlSessionExtension` is that extension over it.

- a zett message is stored as a plain dict record: the fields zett's own codec gives
  it, plus the store's ``role`` (``_zett_records`` says how), and reads back equal;
- an append without timing gets ``MessageTiming.instant()``, as in the SQL storage;
- a later append's ``title``/``agent_name`` update the session, as the SQL storage's
  do, but as a runtime update: a title a user set (``SessionStore.update_session``)
  stays;
- bad input, a parent that differs from the session's, and a stale or misplaced
  snapshot raise `ZettCompatError` (a ``ValueError``, as zett raises, and a
  `jsonl_store.JsonlStoreError`) with the SQL storage's words, which zett's callers
  match (the store's own error, `SnapshotConflict` or `InvalidArgument`, is its
  ``__cause__``);
- session ids are free-form strings: `jsonl_store.encode_session_id` names the
  directories (a UUIDv7, zett's default id, is its own encoding);
- the SQL storage's session management calls (``create_session``, ``get_session``,
  ``list_sessions``, ``update_session``, ``delete_session``, ``count_messages``,
  ``list_raw_messages``) give zett's own ``SessionSummary`` and ``RawMessageRecord``
  and zett's errors, on any session of the store. zett's ``update_session`` is a
  user's change (``origin="user"``) and counts as activity, as in SQL: its time is kept
  in the session's metadata as ``"zett_updated_at"``.

An interrupted tool batch is left as the log holds it: zett's runtime answers its open
calls itself when the next request starts (``INTERRUPTED_TOOL_RESULT``), through this
storage, so the log gets what the SQL storage would get.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from itertools import islice, takewhile
from typing import Any

try:
    from zett_agent.extensions.compaction import CompactedMessage
    from zett_agent.extensions.events import MessageTiming
    from zett_agent.extensions.persistence import (
        BaseSessionPersistenceExtension,
        ContextSnapshot,
        RawMessageRecord,
        SessionSummary,
        SessionView,
    )
    from zett_agent.ids import new_uuid7
    from zett_agent.json_types import JsonValue
    from zett_agent.messages import AnyMessage, AssistantMessage
    from zett_agent.model import ModelUsage
    from zett_agent.storage import MessageKind
    from zett_agent.sync_runtime import SyncMethodsMixin
except ImportError as exc:  # pragma: no cover - exercised in a subprocess by the tests
    raise ImportError('jsonl_store.adapters.zett needs zett-agent: pip install "jsonl_store[zett]"') from exc

# The store's public API only, as any user of it would write (no private module).
import jsonl_store as core
from jsonl_store import InvalidArgument, SessionNotFound, SessionStore, SnapshotConflict, encode_session_id

from . import _zett_records as codec
from . import _zett_rules as rules
from ._zett_rules import ZettCompatError

__all__ = ["JsonlSessionExtension", "JsonlSessionStorage", "ZettCompatError"]


class JsonlSessionStorage(SyncMethodsMixin):
    """zett-agent's ``SessionStorage`` over a `SessionStore` at ``root``, with every call of
    zett's ``SQLSessionStorage`` but its database ones (``build_url``, ``for_mysql``, ...).

    ``store_options`` go to `SessionStore` (``durability``, ``lock_timeout``, ...);
    ``self.store`` is that store, for everything zett's calls do not cover (``records``,
    ``fork``, ``jsonl-store show``). Each call runs the store in a worker thread, so the
    event loop is never blocked; ``sync()`` is zett's blocking view of the storage.
    """

    def __init__(self, root: str | os.PathLike[str], **store_options: Any) -> None:
        self.store = SessionStore(root, **store_options)
        #: The store's clock, for the time zett's update_session keeps (`rules.UPDATED_KEY`).
        self._clock: Callable[[], datetime] = store_options.get("clock") or (lambda: datetime.now(UTC))
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
            raise ZettCompatError(rules.TITLE_LENGTH)
        if agent_name is not None and (not agent_name.strip() or len(agent_name) > 64):
            raise ZettCompatError(rules.AGENT_NAME_LENGTH)
        if usage is not None and not isinstance(message, AssistantMessage):
            raise ZettCompatError("Model usage belongs only to assistant messages")
        if codec.kind(message) is MessageKind.CHECKPOINT:
            raise ZettCompatError("Checkpoints belong in snapshots, not raw logs")
        options: dict[str, Any] = {
            "request_id": request_id,
            "timing": codec.timing(timing or MessageTiming.instant()),
            "usage": codec.usage(usage) if usage is not None else None,
            "metadata": rules.json_fields(metadata, field_name="Message metadata"),
            "tags": rules.json_fields(tags, field_name="Message tags", nonempty_keys=True),
            "title": title,
            "agent_name": agent_name,
        }
        if parent_session_id is not None and parent_session_id == session_id:
            # SQL stores a session as its own parent; the store refuses one (a parent chain
            # must end), so this is refused in the words zett's create_session uses for it.
            raise ZettCompatError(rules.OWN_PARENT)
        record = codec.to_record(message)
        return await asyncio.to_thread(self._append, session_id, record, parent_session_id, options)

    async def snapshot(
        self,
        session_id: str,
        compacted_message: CompactedMessage,
        compacted_through_sequence: int,
        expected_version: int,
    ) -> ContextSnapshot:
        """Create one immutable checkpoint; `ZettCompatError` for a stale version or a bad boundary."""
        if type(compacted_message) is not CompactedMessage:
            raise ZettCompatError(rules.ONE_COMPACTED)
        record = codec.to_record(compacted_message)
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
            raise ZettCompatError("after_sequence cannot be negative")
        if through_sequence is not None and through_sequence < 1:
            raise ZettCompatError("through_sequence must be positive")
        if limit < 1:
            raise ZettCompatError("limit must be positive")
        if offset < 0:
            raise ZettCompatError("offset cannot be negative")
        return await asyncio.to_thread(
            self._list, session_id, after_sequence, through_sequence, limit, offset
        )

    async def create_session(
        self,
        *,
        session_id: str | None = None,
        parent_session_id: str | None = None,
        title: str | None = None,
        agent_name: str | None = None,
        session_type: int = 0,  # zett's own sessions' type (zett_agent.storage)
    ) -> SessionSummary:
        """An empty session (a new UUIDv7 id when none is given); `ZettCompatError` if it exists."""
        resolved_id = session_id or new_uuid7()
        if not resolved_id.strip():
            raise ZettCompatError("session_id cannot be empty")
        if parent_session_id is not None and not parent_session_id.strip():
            raise ZettCompatError("parent_session_id cannot be empty")
        if parent_session_id == resolved_id:
            raise ZettCompatError(rules.OWN_PARENT)
        fields = (rules.title(title), rules.agent_name(agent_name), rules.session_type_code(session_type))
        return await asyncio.to_thread(self._create, resolved_id, parent_session_id, *fields)

    async def list_sessions(
        self,
        *,
        session_types: Sequence[int] | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[SessionSummary]:
        """One page of the store's sessions (of ``session_types``), latest activity first."""
        rules.page(limit, offset)
        codes = tuple(rules.session_type_code(value) for value in session_types) if session_types else None
        return await asyncio.to_thread(self._list_sessions, codes, limit, offset)

    async def count_messages(self, session_id: str) -> int:
        """The number of raw-log records (0 for an unknown session), read from the log's end."""
        summary = await self.get_session(session_id)
        return summary.message_count if summary is not None else 0

    async def get_session(self, session_id: str) -> SessionSummary | None:
        """The session's summary without its messages; None for an unknown session."""
        return await asyncio.to_thread(self._get, session_id)

    async def update_session(
        self,
        session_id: str,
        *,
        title: str | None = None,
        agent_name: str | None = None,
    ) -> SessionSummary | None:
        """Set the title or agent name (a user's change, which later runtime updates leave);
        None for an unknown session."""
        if title is None and agent_name is None:
            raise ZettCompatError("At least one session field must be supplied")
        changes = {"title": rules.title(title), "agent_name": rules.agent_name(agent_name)}
        given = {name: value for name, value in changes.items() if value is not None}
        return await asyncio.to_thread(self._update, session_id, given)

    async def delete_session(self, session_id: str) -> bool:
        """Delete the session's files (`SessionStore.delete_session`); False when there were none."""
        return await asyncio.to_thread(self._delete, session_id)

    # -- the blocking halves, run in a worker thread ------------------------------------

    def _create(
        self,
        session_id: str,
        parent_session_id: str | None,
        title: str | None,
        agent_name: str | None,
        kind: int,
    ) -> SessionSummary:
        stored_id = encode_session_id(session_id)
        stored_parent = encode_session_id(parent_session_id) if parent_session_id is not None else None
        # The store's create_session returns a session that exists as it is; zett's refuses.
        # Two processes creating one id at once both succeed here (SQL's second one fails
        # with the database's IntegrityError, no ValueError either).
        if self.store.get_session(stored_id) is not None:
            raise ZettCompatError(f"Session already exists: {session_id}")
        summary = self.store.create_session(
            stored_id, title=title, agent_name=agent_name, parent_session_id=stored_parent, session_type=kind
        )
        self._parents[stored_id] = summary.parent_session_id
        return rules.summary_of(session_id, summary)

    def _list_sessions(self, codes: tuple[int, ...] | None, limit: int, offset: int) -> list[SessionSummary]:
        found = [
            (key, stored)
            for stored in self.store.list_sessions()
            if codes is None or stored.session_type in codes
            if (key := rules.listing_key(stored)) is not None
        ]
        # SQL's order: ORDER BY updated_at DESC, id DESC (zett's ids, not directory names);
        # zett's summaries are made for the page only.
        found.sort(key=lambda item: item[0], reverse=True)
        return [rules.summary_of(key[1], stored) for key, stored in found[offset : offset + limit]]

    def _get(self, session_id: str) -> SessionSummary | None:
        stored_id = rules.stored(session_id)
        summary = self.store.get_session(stored_id) if stored_id is not None else None
        return rules.summary_of(session_id, summary) if summary is not None else None

    def _update(self, session_id: str, changes: dict[str, Any]) -> SessionSummary | None:
        stored_id = rules.stored(session_id)
        if stored_id is None:
            return None
        activity = {rules.UPDATED_KEY: self._clock().isoformat()}
        try:
            summary = self.store.update_session(stored_id, metadata=activity, **changes)
        except SessionNotFound:
            return None
        return rules.summary_of(session_id, summary)

    def _delete(self, session_id: str) -> bool:
        stored_id = rules.stored(session_id)
        if stored_id is None:
            return False
        # A session made again after its deletion may have another parent.
        self._parents.pop(stored_id, None)
        return self.store.delete_session(stored_id)

    def _list(
        self, session_id: str, after: int, through: int | None, limit: int, offset: int
    ) -> list[RawMessageRecord]:
        stored_id = rules.stored(session_id)
        if stored_id is None:
            return []  # no session has that id, as in SQL
        records = self.store.records(stored_id, after=after)
        try:
            wanted = takewhile(lambda r: through is None or r.sequence <= through, records)
            return [codec.record_of(session_id, record) for record in islice(wanted, offset, offset + limit)]
        finally:
            close = getattr(records, "close", None)  # stop reading at the page's end
            if close is not None:
                close()

    def _load(self, session_id: str) -> SessionView:
        stored_id = rules.stored(session_id)
        if stored_id is None:
            return SessionView(session_type=0)  # an unknown session, as in SQL
        view = self.store.load(stored_id)
        return SessionView(
            parent_session_id=rules.parent(view.parent_session_id),
            session_type=view.session_type,
            title=view.title,
            agent_name=view.agent_name,
            snapshot=codec.snapshot_of(session_id, view.snapshot) if view.snapshot is not None else None,
            raw_tail=[codec.record_of(session_id, record) for record in view.raw_tail],
        )

    def _append(
        self, session_id: str, record: dict[str, Any], parent_session_id: str | None, options: dict[str, Any]
    ) -> int:
        stored_id = encode_session_id(session_id)
        stored_parent = encode_session_id(parent_session_id) if parent_session_id is not None else None
        title, agent_name = options["title"], options["agent_name"]
        read = title is not None or agent_name is not None or stored_id not in self._parents
        summary = self._read_parent(stored_id) if read else None
        if not read and self._parents[stored_id] != stored_parent:
            # Before refusing, the session as it is now: another process may have deleted
            # it and made it again with another parent.
            summary = self._read_parent(stored_id)
        # zett's SQL storage refuses any other parent than the session's, None included;
        # the store itself only refuses a different one it is given.
        if stored_id in self._parents and self._parents[stored_id] != stored_parent:
            raise ZettCompatError("Session parent cannot change after creation")
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

    def _read_parent(self, stored_id: str) -> core.SessionSummary | None:
        """The session's summary, its parent remembered (forgotten when there is no session)."""
        summary = self.store.get_session(stored_id)
        if summary is None:
            self._parents.pop(stored_id, None)
        else:
            self._parents[stored_id] = summary.parent_session_id
        return summary

    def _snapshot(
        self, session_id: str, record: dict[str, Any], compacted_through_sequence: int, expected_version: int
    ) -> ContextSnapshot:
        stored_id = encode_session_id(session_id)
        try:
            snapshot = self.store.snapshot(stored_id, record, compacted_through_sequence, expected_version)
        except SnapshotConflict as exc:
            raise ZettCompatError(rules.CONFLICT) from exc
        except (SessionNotFound, InvalidArgument) as exc:
            reason = self._refusal(stored_id, compacted_through_sequence, expected_version)
            if reason is None:
                raise  # a refusal SQL has no words for: a fork's boundary before its branch, a size
            raise ZettCompatError(reason) from exc
        return codec.snapshot_of(session_id, snapshot)

    def _refusal(self, stored_id: str, through: int, expected_version: int) -> str | None:
        """What zett's SQL storage says of a snapshot the store refused, checked in its order
        (version, then the boundary in the log, then past the previous one), on the session as
        it is now: the store checks the boundary's advance before its place in the log."""
        summary = self.store.get_session(stored_id)
        latest = self.store.load(stored_id).snapshot if summary is not None else None
        if (latest.version if latest is not None else 0) != expected_version:
            return rules.CONFLICT
        if through < 1 or through > (summary.message_count if summary is not None else 0):
            return rules.OUTSIDE
        if latest is not None and through <= latest.compacted_through_sequence:
            return rules.BEHIND
        return None


class JsonlSessionExtension(BaseSessionPersistenceExtension[JsonlSessionStorage]):
    """zett's persistence extension over `JsonlSessionStorage`, the drop-in for
    ``SQLiteSessionExtension``/``SQLSessionExtension``: every call they offer, alike.

    It is the subclass zett's docs ask a storage to come with (``BaseSessionPersistenceExtension``
    does the restoring, appending and compacting); ``self.storage`` is the storage.
    """

    def __init__(self, root: str | os.PathLike[str], **store_options: Any) -> None:
        super().__init__(JsonlSessionStorage(root, **store_options))

    async def list_raw_messages(
        self,
        session_id: str,
        *,
        after_sequence: int = 0,
        through_sequence: int | None = None,
        limit: int = 10_000,
        offset: int = 0,
    ) -> list[RawMessageRecord]:
        """One page of the session's whole raw log (`JsonlSessionStorage.list_raw_messages`)."""
        return await self.storage.list_raw_messages(
            session_id,
            after_sequence=after_sequence,
            through_sequence=through_sequence,
            limit=limit,
            offset=offset,
        )

    async def create_session(
        self,
        *,
        session_id: str | None = None,
        parent_session_id: str | None = None,
        title: str | None = None,
        agent_name: str | None = None,
        session_type: int = 0,
    ) -> SessionSummary:
        """An empty session (`JsonlSessionStorage.create_session`)."""
        return await self.storage.create_session(
            session_id=session_id,
            parent_session_id=parent_session_id,
            title=title,
            agent_name=agent_name,
            session_type=session_type,
        )

    async def list_sessions(
        self,
        *,
        session_types: Sequence[int] | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[SessionSummary]:
        """One page of sessions, latest activity first (`JsonlSessionStorage.list_sessions`)."""
        return await self.storage.list_sessions(session_types=session_types, limit=limit, offset=offset)

    async def get_session(self, session_id: str) -> SessionSummary | None:
        """The session's summary, or None (`JsonlSessionStorage.get_session`)."""
        return await self.storage.get_session(session_id)

    async def update_session(
        self,
        session_id: str,
        *,
        title: str | None = None,
        agent_name: str | None = None,
    ) -> SessionSummary | None:
        """Set the title or agent name (`JsonlSessionStorage.update_session`)."""
        return await self.storage.update_session(session_id, title=title, agent_name=agent_name)

    async def delete_session(self, session_id: str) -> bool:
        """Delete the session's files (`JsonlSessionStorage.delete_session`)."""
        return await self.storage.delete_session(session_id)

    async def close(self) -> None:
        """Release the store's open descriptors, as ``SQLSessionExtension.close`` releases its pool."""
        await self.storage.close()
