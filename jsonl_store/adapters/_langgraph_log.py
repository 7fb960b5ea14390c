"""A LangGraph thread as raw-log records, and the index a checkpointer reads them back by.

Every record the checkpointer writes is a plain-dict message whose ``"langgraph"`` key says
what it is (spec/FORMAT.md §20 lists the shapes):

- ``{"op": "checkpoint", "ns", "id", "parent", "checkpoint", "metadata", "channels"}``: one
  `put`. ``checkpoint`` (without its channel values) and ``metadata`` are LangGraph's serde
  output; ``channels`` names each channel this put gave a new version, with how its value is
  kept: ``{"v": version, "data": ...}`` (a small value, right there), ``{"v": version}`` (a
  value, in a ``value`` record after it), ``{"v": version, "empty": true}`` (the channel has
  no value at that version), or ``{"v": version, "base": earlier version or null, "n": k}``
  (a list: the value at ``base`` followed by the ``k`` ``item`` records after it).
- ``{"op": "value", "ns", "ch", "v", "data"}`` and ``{"op": "item", "ns", "ch", "v",
  "data"}``: a value, or one new element of a list, as LangGraph's serde wrote it.
- ``{"op": "writes", "ns", "id", "task", "path", "writes": [{"idx", "ch", "data"}, ...]}``:
  one `put_writes`, a task's pending writes.

A put is one `append_many` (the checkpoint record first, then its values); a
`put_writes` is one record: a crash leaves all of it or none (spec §8.7). ``data`` is
``[type, base64]``, the serde's ``(type, bytes)`` pair; serde bytes are opaque (msgpack,
or encrypted), so the message around an ``item`` says in the store's own words what it is
(role, content, tool calls) for ``jsonl-store show`` and the HTML export.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from jsonl_store import CorruptSession

#: The key of a record's message that holds what the checkpointer stored.
KEY = "langgraph"

#: A serde's output: its type name and its bytes.
Typed = tuple[str, bytes]
Version = str | int | float


def pack(typed: Typed) -> list[str]:
    """A serde ``(type, bytes)`` pair as JSON (the bytes in base64)."""
    return [typed[0], base64.b64encode(typed[1]).decode("ascii")]


def unpack(data: Any) -> Typed:
    """The serde pair `pack` made."""
    if not (isinstance(data, list) and len(data) == 2 and all(isinstance(x, str) for x in data)):
        raise CorruptSession(f"a LangGraph record holds {data!r} where a [type, base64] pair belongs")
    return data[0], base64.b64decode(data[1], validate=True)


@dataclass
class Stored:
    """One channel's value at one version: whole, empty, or a list grown from an earlier version."""

    kind: str  # "value", "empty" or "list"
    data: Typed | None = None
    base: Version | None = None
    items: list[Typed] = field(default_factory=list)
    #: For a list this process wrote with some element redacted: each new element as
    #: LangGraph gave it, serialized, so the next step's list is still seen to extend it.
    given: list[Typed] | None = None


@dataclass
class Saved:
    """One checkpoint as the log holds it (decoded only when asked for)."""

    parent: str | None
    checkpoint: Typed
    metadata: Typed
    sequence: int


@dataclass
class Write:
    """One pending write: who wrote it, to which channel, the serde value, the task's path."""

    task: str
    channel: str
    data: Typed
    path: str


@dataclass
class Thread:
    """Everything one thread's raw log says, indexed; `feed` adds records in log order."""

    #: namespace -> checkpoint id -> the checkpoint
    checkpoints: dict[str, dict[str, Saved]] = field(default_factory=dict)
    #: (namespace, channel, version) -> its value; a later put of the same version wins
    values: dict[tuple[str, str, Version], Stored] = field(default_factory=dict)
    #: (namespace, checkpoint id) -> (task id, index) -> the write
    writes: dict[tuple[str, str], dict[tuple[str, int], Write]] = field(default_factory=dict)
    #: the sequence and id of the last record indexed (the id None until read back): a
    #: thread deleted and written again by another saver has other ids at the same places
    last_sequence: int = 0
    last_id: str | None = None

    def feed(self, records: Iterable[tuple[int, Any]]) -> None:
        """Index ``(sequence, message)`` pairs, in log order (other programs' records are skipped)."""
        for sequence, message in records:
            self.last_sequence, self.last_id = sequence, None
            entry = message.get(KEY) if isinstance(message, dict) else None
            if isinstance(entry, dict):
                try:
                    self._add(entry, sequence)
                except (KeyError, TypeError, ValueError) as exc:  # binascii.Error is a ValueError
                    raise CorruptSession(f"LangGraph record #{sequence} is malformed: {exc!r}") from exc

    def _add(self, entry: dict[str, Any], sequence: int) -> None:
        op, ns = entry.get("op"), entry.get("ns", "")
        if op == "checkpoint":
            self._checkpoint(entry, ns, sequence)
        elif op == "value":
            self.values[(ns, entry["ch"], entry["v"])] = Stored("value", unpack(entry["data"]))
        elif op == "item":
            stored = self.values.get((ns, entry["ch"], entry["v"]))
            if stored is None or stored.kind != "list":
                raise CorruptSession(f"a LangGraph list item at #{sequence} follows no checkpoint naming it")
            stored.items.append(unpack(entry["data"]))
        elif op == "writes":
            for write in entry["writes"]:
                self._write(entry, ns, write)

    def _checkpoint(self, entry: dict[str, Any], ns: str, sequence: int) -> None:
        self.checkpoints.setdefault(ns, {})[entry["id"]] = Saved(
            entry.get("parent"), unpack(entry["checkpoint"]), unpack(entry["metadata"]), sequence
        )
        for channel, how in entry.get("channels", {}).items():
            key = (ns, channel, how["v"])
            if how.get("empty"):
                self.values[key] = Stored("empty")
            elif "data" in how:
                self.values[key] = Stored("value", unpack(how["data"]))
            elif "n" in how:
                # The items follow in the same batch; `feed` appends them as they come.
                self.values[key] = Stored("list", base=how.get("base"))

    def _write(self, entry: dict[str, Any], ns: str, write: dict[str, Any]) -> None:
        stored = self.writes.setdefault((ns, entry["id"]), {})
        key = (entry["task"], write["idx"])
        # A regular write (index >= 0) is kept once, the first one (a retried task
        # writes the same again); a special one (error, interrupt: negative) is replaced.
        if key[1] >= 0 and key in stored:
            return
        stored[key] = Write(entry["task"], write["ch"], unpack(write["data"]), entry.get("path", ""))

    def items(self, ns: str, channel: str, version: Version, *, given: bool = False) -> list[Typed] | None:
        """The elements of a list value, oldest first; None when it is not kept as a list.

        With ``given``, elements this process stored redacted are as LangGraph gave them.
        """
        chain: list[list[Typed]] = []
        stored = self.values.get((ns, channel, version))
        if stored is None or stored.kind != "list":
            return None
        seen = {version}
        while True:
            chain.append(stored.given if given and stored.given is not None else stored.items)
            if stored.base is None:
                break
            base = self.values.get((ns, channel, stored.base))
            if base is None or base.kind != "list" or stored.base in seen:
                raise CorruptSession(
                    f"LangGraph channel {channel!r} at version {version!r} extends version "
                    f"{stored.base!r}, which the thread's log does not hold as a list"
                )
            seen.add(stored.base)
            stored = base
        return [item for part in reversed(chain) for item in part]
