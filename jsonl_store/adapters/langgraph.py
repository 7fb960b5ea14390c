"""A LangGraph checkpointer that keeps each thread as a jsonl_store session.

``JsonlCheckpointSaver(root, **store_options)`` is a ``BaseCheckpointSaver``
(``langgraph/checkpoint/base``), sync and async: ``get_tuple``, ``list``, ``put``,
``put_writes``, ``delete_thread``, ``copy_thread`` and their ``a*`` forms, and
``get_next_version``. It passes ``langgraph-checkpoint-conformance``
(tests/adapters/test_langgraph_conformance.py).
Install it with ``pip install "jsonl_store[langgraph]"``.

What is on disk
---------------
A thread is one session, ``encode_session_id(thread_id)`` below ``root``; its checkpoint
namespaces (subgraphs) live inside it. Each ``put`` is one `SessionStore.append_many`: a
checkpoint record, then one record per channel that changed (LangGraph's
``new_versions``), never the channels that did not. A list that grows (the messages
channel of ``add_messages``) is stored as its new elements only, one record each, naming
the version it extends: a step that adds k messages costs O(k) bytes however long the
thread is, and a read rebuilds the list from those records. Each LangChain message is
also written as the store's own message (``user``, ``assistant`` with its tool calls,
``tool``, ``system``), so ``jsonl-store show``, ``search`` and the HTML export read the
thread as a conversation; every other record is kept out of the session context
(``include_in_messages: false``). Values are LangGraph's serde output (``JsonPlusSerializer``
unless ``serde=`` says otherwise), kept exactly; the record shapes are in spec/FORMAT.md §20
and ``_langgraph_log``.

A ``put`` or ``put_writes`` is written all or nothing (spec §8.7): a process killed
mid-step leaves the thread at its last committed checkpoint with the pending writes
committed before it, which is what LangGraph resumes from. ``delete_thread`` deletes the
session (`SessionStore.delete_session`). The optional ``prune`` and ``delete_for_runs``
are not offered: they drop part of a thread and keep the rest, which an append-only log
cannot do without a rewrite.
"""

from __future__ import annotations

import asyncio
import secrets
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from jsonl_store import InvalidArgument, SessionStore, decode_session_id, encode_session_id
from jsonl_store.adapters._langgraph_log import KEY, Saved, Thread, Typed, Version, pack

try:
    from langchain_core.messages import BaseMessage
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.base import (
        WRITES_IDX_MAP,
        BaseCheckpointSaver,
        ChannelVersions,
        Checkpoint,
        CheckpointMetadata,
        CheckpointTuple,
        get_checkpoint_id,
        get_checkpoint_metadata,
    )
    from langgraph.checkpoint.serde.base import SerializerProtocol
except ImportError as exc:  # pragma: no cover - exercised in an environment without the extra
    raise ImportError(
        'jsonl_store.adapters.langgraph needs LangGraph: pip install "jsonl_store[langgraph]"'
    ) from exc

from ._in_thread import run_to_completion
from ._langgraph_shown import note, readable, redact_strings, step_label

__all__ = ["JsonlCheckpointSaver"]

#: The session's agent name: how `list(None)` tells the store's LangGraph threads.
AGENT_NAME = "langgraph"
#: A value whose base64 is this short is kept in the checkpoint record, not a record of
#: its own: LangGraph's routing channels (``branch:to:...``) hold such values every step.
INLINE = 256

#: Messages to append (the class's ``list`` method hides the builtin in its body).
Records = list[dict[str, Any]]
Tuples = list[CheckpointTuple]
Serialized = list[Typed]


def _configurable(config: RunnableConfig) -> dict[str, Any]:
    configurable = config.get("configurable")
    if not isinstance(configurable, dict) or "thread_id" not in configurable:
        raise InvalidArgument(f"a LangGraph config needs configurable.thread_id, got {config!r}")
    return configurable


def _config(thread_id: str, ns: str, checkpoint_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint_id}}


class JsonlCheckpointSaver(BaseCheckpointSaver[str]):
    """LangGraph checkpoints of every thread in jsonl_store sessions below ``root``.

    ``serde`` is LangGraph's serializer protocol (``JsonPlusSerializer`` by default);
    ``store_options`` are `SessionStore`'s keywords (``durability``, ``lock_timeout``,
    ``on_problem``, ``fs``...). ``saver.store`` is the `SessionStore`.
    """

    def __init__(self, root: str, *, serde: SerializerProtocol | None = None, **store_options: Any) -> None:
        super().__init__(serde=serde)
        self.store = SessionStore(root, **store_options)
        # The index of each thread read or written so far, kept up to date with the log
        # by its last record's sequence and id (`_thread`); one lock for the index and
        # the writes that extend it.
        self._threads: dict[str, Thread] = {}
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"JsonlCheckpointSaver({self.store.root!r})"

    def close(self) -> None:
        """Release the store's open descriptors (reopened when used again)."""
        self.store.close()

    # -- the thread index ----------------------------------------------------------------

    def _thread(self, session_id: str) -> Thread:
        """The thread's index, brought up to the log's end (O(1) when nothing changed).

        The log's last record says whether anything did: the same sequence and id as
        indexed, nothing; a longer log that still holds the indexed last record, records
        to add; anything else (the thread deleted and written again), a new index.
        """
        last = self.store.tail(session_id, 1)
        cached = self._threads.get(session_id)
        if not last:
            cached = self._threads[session_id] = Thread()
            return cached
        top = last[0]
        if cached is not None and top.sequence == cached.last_sequence and cached.last_id in (None, top.id):
            cached.last_id = top.id
            return cached
        if cached is None or not self._extend(session_id, cached, top.sequence):
            cached = self._threads[session_id] = Thread()
            cached.feed((record.sequence, record.message) for record in self.store.records(session_id))
        if cached.last_sequence == top.sequence:
            cached.last_id = top.id
        return cached

    def _extend(self, session_id: str, thread: Thread, end: int) -> bool:
        """Add the records after the indexed ones; False when the log no longer holds those."""
        if end <= thread.last_sequence:
            return False
        if thread.last_sequence == 0:
            thread.feed((record.sequence, record.message) for record in self.store.records(session_id))
            return True
        records = self.store.records(session_id, after=thread.last_sequence - 1)
        try:
            first = next(records, None)
            if (
                first is None
                or first.sequence != thread.last_sequence
                or thread.last_id not in (None, first.id)
            ):
                return False
            thread.feed((record.sequence, record.message) for record in records)
            return True
        finally:
            close = getattr(records, "close", None)  # a generator: close its file now, not at GC
            if close is not None:
                close()

    def _versions(self, saved: Saved) -> ChannelVersions:
        versions: ChannelVersions = self.serde.loads_typed(saved.checkpoint)["channel_versions"]
        return versions

    # -- reading ---------------------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names (its thread's newest in its namespace without an id)."""
        configurable = _configurable(config)
        thread_id = str(configurable["thread_id"])
        ns = configurable.get("checkpoint_ns", "") or ""
        with self._lock:
            thread = self._thread(encode_session_id(thread_id))
            saved = thread.checkpoints.get(ns, {})
            checkpoint_id = get_checkpoint_id(config) or max(saved, default=None)
            if checkpoint_id is None or checkpoint_id not in saved:
                return None
            return self._tuple(thread, thread_id, ns, checkpoint_id)

    def _tuple(self, thread: Thread, thread_id: str, ns: str, checkpoint_id: str) -> CheckpointTuple:
        saved = thread.checkpoints[ns][checkpoint_id]
        checkpoint: Checkpoint = self.serde.loads_typed(saved.checkpoint)
        checkpoint["channel_values"] = self._values(thread, ns, checkpoint["channel_versions"])
        writes = thread.writes.get((ns, checkpoint_id), {})
        # The order live execution applies a step's writes in: task path, task id, index
        # (``writes_sort_key`` in langgraph-checkpoint 4's ``checkpoint/base``; older
        # releases sort the same way in their savers).
        ordered = sorted(writes.items(), key=lambda kv: (kv[1].path, *kv[0]))
        return CheckpointTuple(
            config=_config(thread_id, ns, checkpoint_id),
            checkpoint=checkpoint,
            metadata=self.serde.loads_typed(saved.metadata),
            parent_config=_config(thread_id, ns, saved.parent) if saved.parent else None,
            pending_writes=[(w.task, w.channel, self.serde.loads_typed(w.data)) for _, w in ordered],
        )

    def _values(self, thread: Thread, ns: str, versions: ChannelVersions) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for channel, version in versions.items():
            stored = thread.values.get((ns, channel, version))
            if stored is None or stored.kind == "empty":
                continue
            if stored.kind == "list":
                items = thread.items(ns, channel, version) or []
                values[channel] = [self.serde.loads_typed(item) for item in items]
            else:
                assert stored.data is not None, "a whole value always has its data"
                values[channel] = self.serde.loads_typed(stored.data)
        return values

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints newest first: of ``config``'s thread (and namespace, when it names
        one), else of every thread; those whose metadata has ``filter``'s items, older than
        ``before``'s checkpoint, at most ``limit``."""
        return iter(self._list(config, filter or {}, before, limit))

    def _list(
        self,
        config: RunnableConfig | None,
        wanted: dict[str, Any],
        before: RunnableConfig | None,
        limit: int | None,
    ) -> Tuples:
        configurable = _configurable(config) if config is not None else {}
        thread_ids = [str(configurable["thread_id"])] if config is not None else self._thread_ids()
        only_ns = configurable.get("checkpoint_ns")
        only_id = configurable.get("checkpoint_id")
        before_id = get_checkpoint_id(before) if before is not None else None
        found: Tuples = []
        with self._lock:
            for thread_id in thread_ids:
                thread = self._thread(encode_session_id(thread_id))
                for ns, saved in thread.checkpoints.items():
                    if only_ns is not None and ns != only_ns:
                        continue
                    for checkpoint_id in sorted(saved, reverse=True):
                        if limit is not None and len(found) >= limit:
                            return found
                        if (only_id and checkpoint_id != only_id) or (
                            before_id and checkpoint_id >= before_id
                        ):
                            continue
                        metadata = self.serde.loads_typed(saved[checkpoint_id].metadata)
                        if all(metadata.get(k) == v for k, v in wanted.items()):
                            found.append(self._tuple(thread, thread_id, ns, checkpoint_id))
        return found

    def _thread_ids(self) -> Iterator[str]:
        """Every LangGraph thread of the store (sessions this saver made)."""
        return (
            decode_session_id(summary.session_id)
            for summary in self.store.list_sessions()
            if summary.agent_name == AGENT_NAME
        )

    # -- writing ---------------------------------------------------------------------------

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint and the channel values ``new_versions`` names, all or nothing."""
        configurable = _configurable(config)
        thread_id = str(configurable["thread_id"])
        ns = configurable.get("checkpoint_ns", "") or ""
        parent = configurable.get("checkpoint_id")
        session_id = encode_session_id(thread_id)
        bare = {k: v for k, v in checkpoint.items() if k != "channel_values"}
        values = checkpoint["channel_values"]
        with self._lock:
            thread = self._thread(session_id)
            previous = self._parent_versions(thread, ns, parent)
            channels: dict[str, Any] = {}
            payload: Records = []
            given: dict[tuple[str, str, Version], list[Typed]] = {}
            for channel, version in new_versions.items():
                channels[channel], as_given = self._plan(
                    thread, ns, channel, version, values, previous.get(channel), payload
                )
                if as_given is not None:
                    given[(ns, channel, version)] = as_given
            meta = self._redacted(get_checkpoint_metadata(config, metadata))
            head = note(
                f"checkpoint {checkpoint['id']}" + (f" in {ns}" if ns else "") + step_label(meta),
                {
                    "op": "checkpoint",
                    "ns": ns,
                    "id": checkpoint["id"],
                    "parent": parent,
                    "checkpoint": pack(self.serde.dumps_typed(bare)),
                    "metadata": pack(self.serde.dumps_typed(meta)),
                    "channels": channels,
                },
            )
            if self._append(session_id, thread, [head, *payload]):
                for key, elements in given.items():
                    thread.values[key].given = elements
        return _config(thread_id, ns, checkpoint["id"])

    def _parent_versions(self, thread: Thread, ns: str, parent: str | None) -> ChannelVersions:
        saved = thread.checkpoints.get(ns, {}).get(parent) if parent else None
        return self._versions(saved) if saved is not None else {}

    def _plan(
        self,
        thread: Thread,
        ns: str,
        channel: str,
        version: Version,
        values: dict[str, Any],
        previous: Version | None,
        payload: Records,
    ) -> tuple[dict[str, Any], Serialized | None]:
        """How one channel's new value is kept; its records go to ``payload``.

        Also gives, for a list whose new elements were redacted, those elements as
        LangGraph gave them (serialized), for `Thread.items` to compare the next step with.
        """
        where = {"ns": ns, "ch": channel, "v": version}
        if channel not in values:
            return {"v": version, "empty": True}, None
        value = values[channel]
        if isinstance(value, list):
            given = [self.serde.dumps_typed(item) for item in value]
            base = thread.items(ns, channel, previous, given=True) if previous is not None else None
            if base is not None and given[: len(base)] == base:
                start = len(base)
            elif value and all(isinstance(item, BaseMessage) for item in value):
                start, previous = 0, None
            else:
                start = -1
            if start >= 0:
                changed = False
                for item, as_given in zip(value[start:], given[start:], strict=True):
                    kept = self._redacted(item)
                    changed = changed or kept is not item
                    data = as_given if kept is item else self.serde.dumps_typed(kept)
                    # The readable copy is made of the item as given: the store redacts
                    # it and reports that it did (spec §18.1), as for any message.
                    payload.append({**readable(item), KEY: {"op": "item", **where, "data": pack(data)}})
                plan = {"v": version, "base": previous if start else None, "n": len(value) - start}
                return plan, given[start:] if changed else None
        packed = pack(self.serde.dumps_typed(self._redacted(value)))
        if len(packed[1]) <= INLINE:
            return {"v": version, "data": packed}, None
        payload.append(note(f"{channel} = a new value", {"op": "value", **where, "data": packed}))
        return {"v": version}, None

    def _redacted(self, value: Any) -> Any:
        """``value`` with the store's redaction applied to its strings (itself if none changed).

        The serializer's bytes are base64 in the log, where the store's redaction cannot
        see a secret, so the adapter applies it to the value first (`redact_strings`).
        """
        redactor = self.store.redactor
        return value if redactor is None else redact_strings(value, redactor.redact)

    def _append(self, session_id: str, thread: Thread, messages: Records) -> bool:
        """Append ``messages`` in one batch; True when ``thread`` now indexes them too."""
        sequences = self.store.append_many(session_id, messages, agent_name=AGENT_NAME)
        if sequences and sequences[0] == thread.last_sequence + 1 and self._threads.get(session_id) is thread:
            # What the store wrote, as it wrote it (redaction included): read back, not
            # taken from ``messages``, would cost a read of every record appended.
            thread.feed(zip(sequences, messages, strict=True))
            last = self.store.tail(session_id, 1)  # the id that tells this log from a remade one
            if last and last[0].sequence == sequences[-1]:
                thread.last_id = last[0].id
            return True
        self._threads.pop(session_id, None)  # another writer came between: read again next time
        return False

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's pending writes for ``config``'s checkpoint, all or nothing."""
        configurable = _configurable(config)
        thread_id = str(configurable["thread_id"])
        ns = configurable.get("checkpoint_ns", "") or ""
        checkpoint_id = configurable["checkpoint_id"]
        session_id = encode_session_id(thread_id)
        with self._lock:
            thread = self._thread(session_id)
            stored = thread.writes.get((ns, checkpoint_id), {})
            kept: Records = []
            for index, (channel, value) in enumerate(writes):
                idx = WRITES_IDX_MAP.get(channel, index)
                if idx >= 0 and (task_id, idx) in stored:
                    continue  # a regular write is kept once (`_langgraph_log.Thread._write`)
                data = pack(self.serde.dumps_typed(self._redacted(value)))
                kept.append({"idx": idx, "ch": channel, "data": data})
            if kept:
                entry = {"op": "writes", "ns": ns, "id": checkpoint_id, "task": task_id, "path": task_path}
                names = ", ".join(dict.fromkeys(write["ch"] for write in kept))
                record = note(f"task {task_id[:8]} wrote {names}", {**entry, "writes": kept})
                self._append(session_id, thread, [record])

    def delete_thread(self, thread_id: str) -> None:
        """Delete the thread's session: every checkpoint and write of every namespace."""
        session_id = encode_session_id(str(thread_id))
        with self._lock:
            self._threads.pop(session_id, None)
            self.store.delete_session(session_id)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint and pending write of one thread to another, in one batch.

        The source's LangGraph records are appended to the target's session as they are
        (all or nothing), so the target has the whole parent chain, as ``copy_thread``
        requires; other records of the source are not copied. Nothing happens when the
        source has no record.
        """
        source = encode_session_id(str(source_thread_id))
        target = encode_session_id(str(target_thread_id))
        with self._lock:
            messages = [
                record.message
                for record in self.store.records(source)
                if isinstance(record.message, dict) and isinstance(record.message.get(KEY), dict)
            ]
            if messages:
                self._append(target, self._thread(target), messages)

    def get_next_version(self, current: str | int | None, channel: None) -> str:
        """A version above ``current``: a zero-padded counter and a random part.

        The random part keeps two branches of a thread (a checkpoint resumed twice) from
        giving one channel the same version with different values.
        """
        if current is None:
            counter = 0
        elif isinstance(current, int):
            counter = current
        else:
            counter = int(current.split(".", 1)[0])
        return f"{counter + 1:020d}.{secrets.token_hex(4)}"

    # -- asyncio ---------------------------------------------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """`get_tuple`, in a worker thread."""
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """`list`, read in a worker thread."""
        found = await asyncio.to_thread(self._list, config, filter or {}, before, limit)
        for item in found:
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """`put`, in a worker thread, finished even if the caller is cancelled."""
        return await run_to_completion(lambda: self.put(config, checkpoint, metadata, new_versions))

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """`put_writes`, in a worker thread, finished even if the caller is cancelled."""
        await run_to_completion(lambda: self.put_writes(config, writes, task_id, task_path))

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """`copy_thread`, in a worker thread."""
        await run_to_completion(lambda: self.copy_thread(source_thread_id, target_thread_id))

    async def adelete_thread(self, thread_id: str) -> None:
        """`delete_thread`, in a worker thread."""
        await run_to_completion(lambda: self.delete_thread(thread_id))
