"""A session of the OpenAI Agents SDK stored in a jsonl_store session directory.

``JsonlSession(session_id, root)`` implements the SDK's ``Session`` protocol
(``agents/memory/session.py``: ``get_items``, ``add_items``, ``pop_item``,
``clear_session``, ``session_settings``) and gives back the same items as the SDK's own
``SQLiteSession`` (``agents/memory/sqlite_session.py``) would, in the same order, across
``Runner.run``, ``Runner.run_streamed`` and parallel tool calls. Install it with
``pip install "jsonl_store[openai-agents]"``; the tests ran against openai-agents 0.24.0
and 0.21.0, the extra's floor.

What is on disk
---------------
Any Python string the SDK takes is a session id (``SQLiteSession`` takes any). The session
is the directory ``encode_session_id(session_id)`` below ``root`` when that encoding
exists (``decode_session_id`` gives the SDK's id back); an id it refuses (longer than 128
characters once encoded, empty, or holding a NUL) gets ``_sha256-`` and the SHA-256 of its
UTF-8 instead, a name no encoding starts with, so two ids never share a directory. A
session whose directory name is not its id keeps the id in its ``meta.json``: the
session metadata key ``openai_agents`` holds ``{"session_id": id}``, and the title is
the id (its ``repr``, shortened to 200 characters, when it is longer or holds a NUL), so
``jsonl-store ls`` shows it. A directory whose metadata names another id is refused
(`InvalidSessionId`) before anything is read or written. Only a lone surrogate, which no
file (and no SQLite text) can hold, raises `InvalidSessionId` when the session is made.

Its raw log holds three kinds of records, and is never rewritten:

- **An item**: one record per item ``add_items`` got, all of one call in one
  ``append_many`` (all or nothing, as SQLite's transaction). The record's message is the
  dict ``{"role": R, "content": item}``: the SDK item verbatim under ``content``, so it
  comes back equal whatever keys it has, and ``R`` only says who made it, for people
  and for ``jsonl-store show`` (``user``, ``system`` for system and developer messages,
  ``tool`` for ``*_output`` items, ``assistant`` for the rest).
- **A pop**: ``pop_item`` appends ``{"role": "system", "content": "pop_item: #S",
  "include_in_messages": false}`` with the record metadata ``{"openai_agents": {"op":
  "pop", "item": S}}``, ``S`` being the sequence of the item it took. It is a conditional
  append (``expected_last_sequence`` = the last sequence it read): of two concurrent pops
  that read the same log, one writes and the other reads again and takes the next item,
  so no item is ever popped twice, across threads and processes.
- **A compaction**: the SDK's ``OpenAIResponsesCompactionSession`` replaces the newest
  items by its summary through ``_get_compaction_snapshot`` (see there): one conditional
  ``append_many`` of a marker, ``{"role": "system", "content": "pop_item: #S, ...",
  "include_in_messages": false, "openai_agents": {"op": "pop", "items": [S, ...],
  "drop": [D, ...]}}`` (in the message, since a batch's records share one metadata),
  which takes the items ``S`` as that many pops would and, with ``drop``, the oldest
  items ``D`` an ``EncryptedSession`` pruned, followed by the new items.
- **A clear**: ``clear_session`` appends ``{"role": "system", "content":
  "clear_session", "include_in_messages": false}`` with metadata ``{"openai_agents":
  {"op": "clear"}}``, then makes a snapshot through it whose compacted message is not in
  the model context (``CompactedMessage(include_in_messages=False)``), so ``load()``,
  ``jsonl-store show`` and ``get_items()`` start after it. The marker is what counts;
  the snapshot only saves reading (a crash between the two, or a concurrent clear that
  snapshots first, loses nothing).

Which items are live follows from the records alone: reading backwards from the end of
the log, a clear ends the history, and a pop takes the nearest item before it that no
later pop took (``pop_item`` always takes the newest live item, so pops and items nest
like brackets). ``get_items(limit)`` reads the log backwards with ``SessionStore.tail``,
from ``limit`` records on, doubling the window only when pops stand among them: its cost
is that of the last ``limit`` items, the pops after them and the items those pops took,
never the log's length. ``get_items()`` without a limit reads the records after the last
clear (``load()``'s tail), folding pops in as it goes. Records that are neither (another
program's, the core's ``resume()`` results) are skipped; so are damaged lines, as SQLite
skips rows that are not JSON (a damaged pop record would give its item back). The
session's snapshots are the adapter's: one made by other means (``checkpoint``,
``snapshot``) would hide the items before it from ``get_items()`` without a limit.

``clear_session`` keeps every record; ``store.delete_session(session.store_session_id)``
is the real removal of the session's files (``session.store`` is the ``SessionStore``).

Tool batches
------------
The SDK (0.24) saves a run's input first and a turn's items after its tools ran, so a
process killed inside a tool leaves the history up to that input, as SQLiteSession does,
which the SDK and the provider accept.
A writer that stored a ``function_call`` without its ``function_call_output`` (an older
SDK, a program of yours) leaves a history the Responses API refuses ("No tool output found
for function call ..."). ``close_interrupted_calls()`` answers each such call of the last
batch with an error output, once, in the log: the core's rule for Responses items
(``close_interrupted(items, dialect="openai-responses")``) applied to the items, appended
with a conditional append as ``store.resume`` does (``resume`` itself reads the stored
messages, which here wrap the items).
"""

from __future__ import annotations

import asyncio
import importlib
import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from jsonl_store import (
    INTERRUPTED_NOTICE,
    CompactedMessage,
    InvalidArgument,
    InvalidSessionId,
    JsonlStoreError,
    LockTimeout,
    RawMessageRecord,
    SequenceConflict,
    SessionStore,
    SnapshotConflict,
    UnsupportedValue,
    close_interrupted,
)

from . import _agents_ids as ids
from . import _agents_items as log
from ._agents_ids import DIGEST_PREFIX, directory_name
from ._agents_items import MARKER
from ._in_thread import run_to_completion

try:
    from agents.memory.session_settings import SessionSettings, coerce_session_settings, resolve_session_limit
except ImportError as exc:  # pragma: no cover - exercised in an environment without the extra
    raise ImportError(
        'jsonl_store.adapters.openai_agents needs the OpenAI Agents SDK: pip install "jsonl_store[openai-agents]"'
    ) from exc

# openai-agents 0.24's private hook for compaction without a full read (see
# `JsonlSession._get_compaction_snapshot`); older SDKs have none and compact through the
# public calls.
_Snapshot: Any = getattr(importlib.import_module("agents.memory.session"), "_CompactionSnapshot", None)

if TYPE_CHECKING:
    from agents.memory.session import Session

__all__ = ["DIGEST_PREFIX", "MARKER", "JsonlSession", "SessionClosed", "directory_name"]

#: How long an append made on the event loop waits for the append lock (spec §13) before
#: it goes to a worker thread instead (see `JsonlSession.add_items`).
INLINE_LOCK_WAIT = 0.001
#: The largest ``limit`` a ``get_items`` reads on the event loop (see `JsonlSession.get_items`).
INLINE_READ_LIMIT = 100


class SessionClosed(JsonlStoreError, RuntimeError):
    """A `JsonlSession` was used after ``close()``, which the SDK's own sessions refuse too."""


class JsonlSession:
    """An OpenAI Agents SDK ``Session`` kept in a jsonl_store session below ``root``.

    ``session_id`` is the SDK's id, any string (`directory_name` says where it goes);
    ``session_settings`` is a ``SessionSettings`` or its dict; ``store_options`` are
    ``SessionStore``'s keywords (``durability``, ``lock_timeout``, ``on_problem``, ``fs``).
    After ``close()`` every call raises `SessionClosed`, a ``RuntimeError``, as the SDK's
    ``SQLiteSession`` does after its ``close()``.
    """

    session_settings: SessionSettings | None

    def __init__(
        self,
        session_id: str,
        root: str,
        session_settings: SessionSettings | dict[str, Any] | None = None,
        **store_options: Any,
    ) -> None:
        self.session_id = session_id
        self.store_session_id = directory_name(session_id)
        # As SQLiteSession: a dict is checked and made a SessionSettings, None the defaults.
        self.session_settings = (
            coerce_session_settings(session_settings) if session_settings is not None else SessionSettings()
        )
        self.store = SessionStore(root, **store_options)
        # Under durability="none" an append is a buffered write that costs less than handing
        # it to a worker thread, which made add_items several times an append
        # (benchmarks/adapter_overhead.py). Such appends run on the event loop, through a
        # store whose lock wait is short, so the loop never waits on another writer.
        self._inline = (
            SessionStore(root, **{**store_options, "lock_timeout": INLINE_LOCK_WAIT})
            if self.store.durability == "none"
            else None
        )
        # A directory named by the id itself needs no check; another is checked (and named
        # in its metadata) once, by the first call that reaches it.
        self._claimed = self.store_session_id == session_id
        self._closed = False

    def __repr__(self) -> str:
        return f"JsonlSession({self.session_id!r}, {self.store.root!r})"

    def close(self) -> None:
        """Release the store's open descriptors; every later call raises `SessionClosed`.

        Closing again does nothing. The SDK's sessions behave so (``SQLiteSession.close``
        in ``agents/memory/sqlite_session.py``): code written against them that relies on
        a closed session refusing work finds the same here.
        """
        self._closed = True
        self.store.close()
        if self._inline is not None:
            self._inline.close()

    def _check_open(self) -> None:
        if self._closed:
            # Worded as the SDK's "SQLiteSession is closed", so code matching it matches.
            raise SessionClosed(f"{type(self).__name__} is closed (session {self.session_id!r})")

    # -- the Session protocol ------------------------------------------------------------

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The history, oldest first; the last ``limit`` items (``session_settings.limit``
        when None; 0 gives none and a negative limit all, as SQLiteSession does).

        A read of at most `INLINE_READ_LIMIT` items runs on the event loop; a longer or
        unlimited one in a worker thread.
        """
        self._check_open()
        resolved = resolve_session_limit(limit, self.session_settings)
        if resolved is not None and 0 <= resolved <= INLINE_READ_LIMIT:
            # A read takes no lock, so it never waits on another writer, and the last few
            # items cost less to read than the hand-off to a worker thread does (which made
            # get_items(limit=20) twice a tail(20): benchmarks/adapter_overhead.py).
            return self._get_items(resolved)
        return await asyncio.to_thread(self._get_items, resolved)

    async def add_items(self, items: list[Any]) -> None:
        """Append ``items`` to the history, all or nothing.

        With ``durability="none"`` the append runs on the event loop when the append lock
        (spec §13) is free within `INLINE_LOCK_WAIT` (a buffered write takes microseconds); otherwise,
        and always under ``"fsync"``, in a worker thread.
        """
        self._check_open()  # before the empty-list return, as SQLiteSession checks
        if not items:
            return
        items = list(items)
        if self._inline is not None and self._claimed:
            try:
                self._add_items(items, self._inline)
                return
            except LockTimeout:
                pass  # another writer holds the lock: wait for it in a thread
        await run_to_completion(lambda: self._add_items(items, self.store))

    async def pop_item(self) -> Any | None:
        """Take the newest item off the history and return it; None when it is empty.

        Atomic across threads and processes: no item is returned by two pops.
        """
        self._check_open()
        return await run_to_completion(self._pop_item)

    async def clear_session(self) -> None:
        """Empty the history (the log keeps the records; see the module's docstring)."""
        self._check_open()
        await run_to_completion(self._clear_session)

    async def _get_compaction_snapshot(
        self, limit: int, *, prune_prefix: Callable[[Any], bool] | None = None
    ) -> Any:
        """The SDK's compaction hook, as its own sessions have it (private in openai-agents 0.24).

        ``OpenAIResponsesCompactionSession`` asks the session for its last ``limit`` items,
        whether they are all of them, and an atomic "replace the items from ``start`` on
        with these" (``agents/memory/session.py``, ``_CompactionSnapshot``); without it, it
        skips automatic compaction under a read limit. Here the replacement is one
        conditional append: a record that pops those items (and, with ``prune_prefix``,
        as an ``EncryptedSession`` asks, drops the oldest items it accepts, by sequence,
        as SQLiteSession deletes them), then the new ones; it fails (False) when anything
        was appended since the read. Nothing is rewritten.
        """
        self._check_open()
        if _Snapshot is None:
            return None
        live, last = await asyncio.to_thread(self._live, limit + 1)
        complete = len(live) <= limit
        live = live[max(0, len(live) - limit) :]

        async def replace_suffix(start: int, output: list[Any]) -> bool:
            self._check_open()
            expected = live[start:]
            if not expected:
                return False
            return await run_to_completion(
                lambda: self._replace_suffix(expected, list(output), last, prune_prefix)
            )

        return _Snapshot([log.item(record) for record in live], complete, replace_suffix)

    # -- beyond the protocol -------------------------------------------------------------

    async def close_interrupted_calls(self, notice: str = INTERRUPTED_NOTICE) -> list[Any]:
        """Answer each ``function_call`` of the last batch that has no output, in the log.

        The last batch is the run of ``function_call`` and ``function_call_output`` items
        at the end of the history (parallel calls are one item each, their outputs in any
        order). Each call without an output gets ``{"type": "function_call_output",
        "call_id": ..., "output": notice}``, appended once (a conditional append: with
        concurrent callers, one writes). Returns the outputs added ([] when none was missing).
        """
        self._check_open()
        if not isinstance(notice, str) or not notice:
            raise InvalidArgument(f"notice must be a non-empty str, got {notice!r}")
        return await run_to_completion(lambda: self._close_interrupted(notice))

    # -- the work, in a worker thread ----------------------------------------------------

    def _claim(self) -> None:
        """Refuse a directory whose metadata names another SDK id, once per instance."""
        if self._claimed:
            return
        summary = self.store.get_session(self.store_session_id)
        if summary is None:
            return  # nothing there yet: the first append makes it this id's
        marker = summary.metadata.get(MARKER)
        stored = marker.get("session_id") if isinstance(marker, dict) else None
        if stored is not None and stored != self.session_id:
            raise InvalidSessionId(
                f"the directory {self.store_session_id!r} holds the session {stored!r}, not {self.session_id!r}",
                session_id=self.store_session_id,
            )
        self._claimed = stored is not None

    def _name(self) -> None:
        """Keep the SDK's id in the metadata of a session its directory name does not name."""
        if not self._claimed:
            self.store.update_session(
                self.store_session_id, metadata={MARKER: {"session_id": self.session_id}}, origin="runtime"
            )
            self._claimed = True

    def _live(self, limit: int | None) -> tuple[list[RawMessageRecord], int]:
        """The last ``limit`` live item records (all when None), oldest first, and the
        log's last sequence as read."""
        self._claim()
        sid = self.store_session_id
        if limit is None:
            view = self.store.load(sid)
            return log.fold(view.raw_tail), view.last_sequence
        window = max(limit, 2)
        while True:
            records = self.store.tail(sid, window)
            live, final = log.scan_back(records, limit)
            if final or len(records) < window:
                live.reverse()
                return live, records[-1].sequence if records else 0
            window *= 2

    def _get_items(self, limit: int | None) -> list[Any]:
        if limit is not None and limit < 0:
            limit = None  # SQLite's LIMIT -1: no limit
        if limit == 0:
            return []
        live, _ = self._live(limit)
        return [log.item(record) for record in live]

    def _add_items(self, items: list[Any], store: SessionStore) -> None:
        self._claim()
        # The title only counts when this append makes the session (spec §9.8, rule 8).
        title = None if self._claimed else ids.title(self.session_id)
        try:
            log.append_items(store, self.store_session_id, items, title)
        except UnsupportedValue:
            # raises TypeError for what JSON cannot carry
            log.append_items(store, self.store_session_id, log.json_normalized(items), title)
        self._name()

    def _pop_item(self) -> Any | None:
        while True:
            live, last = self._live(1)
            if not live:
                return None
            top = live[0]
            marker = {"role": "system", "content": f"pop_item: #{top.sequence}", "include_in_messages": False}
            try:
                self.store.append(
                    self.store_session_id,
                    marker,
                    metadata={MARKER: {"op": "pop", "item": top.sequence}},
                    expected_last_sequence=last,
                )
            except SequenceConflict:
                continue  # the log moved (maybe another pop took this item): read again
            return log.item(top)

    def _replace_suffix(
        self,
        expected: list[RawMessageRecord],
        output: list[Any],
        last: int,
        prune_prefix: Callable[[Any], bool] | None,
    ) -> bool:
        sequences = [record.sequence for record in reversed(expected)]
        operation: dict[str, Any] = {"op": "pop", "items": sequences}
        if prune_prefix is not None:
            live, now = self._live(None)  # the front is the oldest items: all are read
            if now != last:
                return False
            front = live[: len(live) - len(expected)]
            drop = [
                record.sequence for record in itertools.takewhile(lambda r: prune_prefix(log.item(r)), front)
            ]
            if drop:
                operation["drop"] = drop
        marker = {
            "role": "system",
            "content": "pop_item: " + ", ".join(f"#{sequence}" for sequence in sequences),
            "include_in_messages": False,
            MARKER: operation,
        }
        messages = [marker, *({"role": log.role(item), "content": item} for item in output)]
        try:
            self.store.append_many(self.store_session_id, messages, expected_last_sequence=last)
        except SequenceConflict:
            return False  # the log moved since the read: the SDK keeps the history as it is
        return True

    def _clear_session(self) -> None:
        self._claim()
        sid = self.store_session_id
        last = self.store.tail(sid, 1)
        if not last or log.op(last[0]) == "clear":
            return  # no session, or already clear: nothing to record
        marker = {"role": "system", "content": "clear_session", "include_in_messages": False}
        sequence = self.store.append(sid, marker, metadata={MARKER: {"op": "clear"}})
        view = self.store.load(sid)
        version = view.snapshot.version if view.snapshot else 0
        if view.snapshot is not None and view.snapshot.compacted_through_sequence >= sequence:
            return  # a concurrent clear snapshotted past this one already
        try:
            self.store.snapshot(
                sid,
                CompactedMessage(
                    content="clear_session: earlier items were cleared", include_in_messages=False
                ),
                compacted_through_sequence=sequence,
                expected_version=version,
            )
        except (SnapshotConflict, InvalidArgument):
            pass  # another writer snapshotted meanwhile; the marker alone is what counts

    def _close_interrupted(self, notice: str) -> list[Any]:
        while True:
            live, last = self._live(None)
            items = [log.item(record) for record in live]
            # The core's rule for Responses items (calls and outputs paired by call_id,
            # consecutive calls one batch); the closing outputs come after the batch, at the end.
            closed = close_interrupted(items, notice=notice, dialect="openai-responses")
            assert closed[: len(items)] == items, "closing only appends to the last batch"
            outputs = closed[len(items) :]
            if not outputs:
                return []
            messages = [{"role": log.role(output), "content": output} for output in outputs]
            try:
                self.store.append_many(self.store_session_id, messages, expected_last_sequence=last)
            except SequenceConflict:
                continue  # another writer appended (maybe these very outputs): look again
            return outputs


if TYPE_CHECKING:  # mypy checks that JsonlSession is what the SDK's Session protocol asks for

    def _is_a_session(session: JsonlSession) -> Session:
        return session
