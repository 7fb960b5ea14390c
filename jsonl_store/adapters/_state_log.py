"""A framework's whole-state ``save`` kept as appends: what changed is written, nothing is rewritten.

pydantic-ai-harness saves a session's full state after each turn (its history, its
transcript, its model) and pydantic-ai users save a whole history; the raw log is
append-only. So a save writes only the difference from what the log holds:

- the items after the longest common prefix of each list (the stored list and the new
  one), encoded once each;
- before them, when the new state is not an extension of the stored one (a list got
  shorter or changed in the middle, or the model changed), or when it is the first save
  of a session and holds nothing, one *state record*:
  ``{"role": "system", "format": "pydantic-ai-state", "content": {"messages": K,
  "updates": U, "model": M}, "include_in_messages": false}``, meaning "keep the first
  ``K`` messages and ``U`` updates, the model is ``M``".

All of one save is one conditional ``append_many`` (``expected_last_sequence`` = the last
sequence the adapter knows): all or nothing, and never on top of a state it has not
seen. When another writer (another process, another store object) appended since, the
append raises `SequenceConflict`, the adapter reads the log again and writes the
difference from what is there now. So after ``save(S)`` returns, the log reads back as
``S`` -- the last writer wins, as with the harness's in-memory store -- and nothing
another writer stored is ever rewritten.

A session exists once a save of it committed: a log without a complete record (what a
crash inside the first save leaves: a directory, ``meta.json``, an empty or torn log)
reads as no session. Reading a state back replays the records: items are added, a state record cuts the lists
back; only the items left in the end are decoded. A save costs what is new: the adapter
remembers the lists it last saved or loaded, and finds the common prefix by identity
first (the frameworks hand over the same objects again, so this is a pointer comparison
per old item) and by equality only where identity fails.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Sequence
from typing import Any

from jsonl_store import (
    InvalidArgument,
    JsonlStoreError,
    ModelUsage,
    RawMessageRecord,
    SequenceConflict,
    SessionStore,
    encode_session_id,
)

#: The ``format`` of a state record.
STATE_FORMAT = "pydantic-ai-state"

#: How often a save reads the log again after another writer got in first, before it
#: gives up (each retry means another save finished: the log moves on, it never stalls).
MAX_ATTEMPTS = 1000


class SaveConflict(JsonlStoreError, RuntimeError):
    """Other writers kept appending to the session while a save tried to catch up with them."""


@dataclasses.dataclass
class Stored:
    """What the log holds for one session, as last read or written by this process."""

    messages: list[Any]
    updates: list[Any]
    model: str | None
    last_sequence: int
    exists: bool


@dataclasses.dataclass
class Raw:
    """A replayed log before decoding: the stored dicts left after every state record."""

    messages: list[dict[str, Any]]
    updates: list[dict[str, Any]]
    model: str | None
    last_sequence: int


def _none(items: Sequence[Any]) -> list[Any]:
    return []


def _never(message: Any) -> bool:
    return False


def common_prefix(old: Sequence[Any], new: Sequence[Any]) -> int:
    """How many leading items ``old`` and ``new`` share (identity first, then ``==``)."""
    n = min(len(old), len(new))
    i = 0
    while i < n and old[i] is new[i]:
        i += 1
    while i < n and old[i] == new[i]:
        i += 1
    return i


def state_record(messages: int, updates: int, model: str | None) -> dict[str, Any]:
    return {
        "role": "system",
        "format": STATE_FORMAT,
        "content": {"messages": messages, "updates": updates, "model": model},
        "include_in_messages": False,
    }


def replay(
    records: Sequence[RawMessageRecord], is_message: Callable[[Any], bool], is_update: Callable[[Any], bool]
) -> Raw:
    """The stored items a log's records leave, oldest first (records of other kinds are skipped)."""
    messages: list[dict[str, Any]] = []
    updates: list[dict[str, Any]] = []
    model: str | None = None
    for record in records:
        message = record.message
        if not isinstance(message, dict):
            continue
        if is_message(message):
            messages.append(message)
        elif is_update(message):
            updates.append(message)
        elif message.get("format") == STATE_FORMAT and isinstance(message.get("content"), dict):
            state = message["content"]
            keep_messages, keep_updates = state.get("messages"), state.get("updates")
            if type(keep_messages) is int and keep_messages >= 0:
                del messages[keep_messages:]
            if type(keep_updates) is int and keep_updates >= 0:
                del updates[keep_updates:]
            value = state.get("model")
            model = value if isinstance(value, str) else None
    last = records[-1].sequence if records else 0
    return Raw(messages=messages, updates=updates, model=model, last_sequence=last)


class StateLog:
    """Saves and loads whole states of sessions of one store, writing only differences.

    ``encode_messages``/``encode_updates`` turn new items into records' messages,
    ``is_message``/``is_update`` tell such a record's message, ``decode_messages``/
    ``decode_updates`` turn the live ones back into items (all at once, so a framework's
    validator runs once); ``usage`` gives the token counts to store with a message record.
    Thread-safe: saves of one session from several threads are serialised here, and
    the conditional append orders them against every other writer.
    """

    def __init__(
        self,
        store: SessionStore,
        *,
        encode_messages: Callable[[Sequence[Any]], list[dict[str, Any]]],
        is_message: Callable[[Any], bool],
        decode_messages: Callable[[Sequence[dict[str, Any]]], list[Any]],
        usage: Callable[[Any], ModelUsage | None],
        encode_updates: Callable[[Sequence[Any]], list[dict[str, Any]]] | None = None,
        is_update: Callable[[Any], bool] | None = None,
        decode_updates: Callable[[Sequence[dict[str, Any]]], list[Any]] | None = None,
    ) -> None:
        self.store = store
        self._encode_messages = encode_messages
        self._is_message = is_message
        self._decode_messages = decode_messages
        self._usage = usage
        self._encode_updates = encode_updates or _none
        self._is_update = is_update or _never
        self._decode_updates = decode_updates or _none
        self._known: dict[str, Stored] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def _read(self, session_id: str) -> Stored:
        """The session's state from its log: every record replayed, the live items decoded.

        ``load(strict=True)`` reads it, so damage in the middle of the log raises
        `CorruptSession` and a torn last line is what a crash left; the adapters make no
        snapshot, and one made by other means is read past (all records count).
        """
        store = self.store
        if store.get_session(session_id) is None:
            return Stored(messages=[], updates=[], model=None, last_sequence=0, exists=False)
        view = store.load(session_id, strict=True)
        if view.last_sequence == 0:
            # No record committed: what a crash inside the first save leaves (a directory,
            # meta.json, an empty or torn log) is no saved state; every save writes one.
            return Stored(messages=[], updates=[], model=None, last_sequence=0, exists=False)
        records = view.raw_tail if view.snapshot is None else list(store.records(session_id))
        raw = replay(records, self._is_message, self._is_update)
        return Stored(
            messages=self._decode_messages(raw.messages),
            updates=self._decode_updates(raw.updates),
            model=raw.model,
            last_sequence=raw.last_sequence,
            exists=True,
        )

    def lock(self, session_id: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(session_id, threading.Lock())

    def forget(self, session_id: str) -> None:
        """Drop what this process remembers of a session (it is read again next time)."""
        self._known.pop(session_id, None)

    def load(self, session_id: str) -> Stored:
        """The session's state as the log holds it now, remembered for the next save."""
        with self.lock(session_id):
            stored = self._read(session_id)
            self._known[session_id] = stored
            return stored

    def save(
        self, session_id: str, messages: Sequence[Any], updates: Sequence[Any], model: str | None
    ) -> None:
        """Make the log read back as exactly this state, appending only the difference."""
        if model is not None and not isinstance(model, str):
            raise InvalidArgument(f"model must be a str or None, got {type(model).__name__}")
        messages, updates = list(messages), list(updates)
        with self.lock(session_id):
            for _ in range(MAX_ATTEMPTS):
                known = self._known.get(session_id) or self._read(session_id)
                if self._write(session_id, known, messages, updates, model):
                    return
                self._known.pop(session_id, None)
        raise SaveConflict(
            f"session {session_id!r}: other writers appended {MAX_ATTEMPTS} times while a save caught up",
            session_id=session_id,
        )

    def append(self, session_id: str, messages: Sequence[Any]) -> None:
        """Add messages after the stored ones (whatever other writers appended before)."""
        messages = list(messages)
        records = self._encode_messages(messages)
        usages = [self._usage(message) for message in messages]
        with self.lock(session_id):
            sequences = self.store.append_many(session_id, records, usage=usages) if records else []
            known = self._known.get(session_id)
            if known is not None and sequences and sequences[0] == known.last_sequence + 1:
                known.messages.extend(messages)
                known.last_sequence = sequences[-1]
                known.exists = True
            else:  # another writer came between: read it all again next time
                self._known.pop(session_id, None)

    def _write(
        self, session_id: str, known: Stored, messages: list[Any], updates: list[Any], model: str | None
    ) -> bool:
        """One attempt at a save from ``known``; False when another writer got in first."""
        k = common_prefix(known.messages, messages)
        u = common_prefix(known.updates, updates)
        records: list[dict[str, Any]] = []
        usages: list[ModelUsage | None] = []
        if k < len(known.messages) or u < len(known.updates) or model != known.model:
            records.append(state_record(k, u, model))
            usages.append(None)
        new_messages = messages[k:]
        records.extend(self._encode_messages(new_messages))
        usages.extend(self._usage(message) for message in new_messages)
        records.extend(self._encode_updates(updates[u:]))
        usages.extend(None for _ in range(len(updates) - u))
        if not records and known.exists:
            # Nothing new here; the save still has to win over a writer that got in since.
            if self._last_sequence(session_id) != known.last_sequence:
                return False
            self._known[session_id] = known
            return True
        if not records:
            # A first save of an empty state is a record too, so that a session exists
            # exactly when a save of it committed (`_read`).
            records.append(state_record(0, 0, model))
            usages.append(None)
        try:
            sequences = self.store.append_many(
                session_id, records, usage=usages, expected_last_sequence=known.last_sequence
            )
        except SequenceConflict:
            return False
        self._known[session_id] = Stored(
            messages=messages, updates=updates, model=model, last_sequence=sequences[-1], exists=True
        )
        return True

    def _last_sequence(self, session_id: str) -> int:
        last = self.store.tail(session_id, 1)
        return last[-1].sequence if last else 0


class Adapter:
    """A framework's sessions kept by a `StateLog` over one `SessionStore` (both pydantic-ai adapters).

    ``codecs`` are `StateLog`'s item functions; ``self.store`` is the store.
    """

    def __init__(self, root: str, store_options: dict[str, Any], **codecs: Any) -> None:
        self.store = SessionStore(root, **store_options)
        self._log = StateLog(self.store, **codecs)

    @staticmethod
    def store_session_id(session_id: str) -> str:
        """The store's session id (the directory name) of the framework's session id."""
        return encode_session_id(session_id)
