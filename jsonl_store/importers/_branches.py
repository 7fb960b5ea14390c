"""A Claude Code conversation's branches: its lines as a tree, the active branch and the abandoned ones.

Claude Code links each line to the one before it: ``uuid`` and ``parentUuid`` (after a
compaction, ``logicalParentUuid``). Rewinding a conversation (double Esc, or editing an
earlier prompt) writes the new turn as another child of an earlier line, so the file then
holds two branches, in the order they were written. What Claude Code resumes, and what
its viewers show, is the chain that ends at the last message: the *active branch*.

Parallel tool calls also give a line several children (the next part of the message, and
the result of the call it holds), without being a branch: the parts of a message on the
active branch (one ``message.id``) and the results of the calls they hold are on it too.

A message line is *abandoned* when it is not on the active branch but descends from it:
the branch was left at the line where the two part. A line whose ancestry never meets
the active branch (a parent written in another file, a line with no parent) is left where
it is: nothing shows it was left.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ._events import Entry


@dataclass
class _Node:
    """One line ``uuid`` names: its parent, and what this pass stored of it."""

    parent: str | None
    entries: list[Entry] = field(default_factory=list)
    message_id: str | None = None
    uses: set[str] = field(default_factory=set)
    answers: set[str] = field(default_factory=set)


def _ids(content: object, kind: str, key: str) -> set[str]:
    if not isinstance(content, list):
        return set()
    return {
        b[key]
        for b in content
        if isinstance(b, dict) and b.get("type") == kind and isinstance(b.get(key), str)
    }


class Tree:
    """The lines of one session read in one pass, linked by ``uuid`` / ``parentUuid``."""

    def __init__(self) -> None:
        self.nodes: dict[str, _Node] = {}
        self.last: str | None = None

    def link(self, d: dict[str, Any]) -> None:
        """Note a line's parent (the first line with a ``uuid`` keeps it: a repeated line changes nothing)."""
        uuid = d.get("uuid")
        if not isinstance(uuid, str) or uuid in self.nodes:
            return
        parent = d.get("parentUuid")
        if parent is None:
            parent = d.get("logicalParentUuid")  # a compaction's boundary names the line it follows
        self.nodes[uuid] = _Node(parent if isinstance(parent, str) and parent != uuid else None)

    def message(self, d: dict[str, Any], message: dict[str, Any]) -> None:
        """Note a message line: its message id and the tool calls it makes or answers."""
        uuid = d.get("uuid")
        node = self.nodes.get(uuid) if isinstance(uuid, str) else None
        if node is None:
            return
        if isinstance(message.get("id"), str):
            node.message_id = message["id"]
        content = message.get("content")
        node.uses |= _ids(content, "tool_use", "id")
        node.answers |= _ids(content, "tool_result", "tool_use_id")
        self.last = uuid

    def stored(self, uuids: list[str], entry: Entry) -> None:
        """Note the entry the lines ``uuids`` became."""
        for uuid in uuids:
            node = self.nodes.get(uuid)
            if node is not None and all(held is not entry for held in node.entries):
                node.entries.append(entry)

    def abandoned(self) -> list[Entry]:
        """The entries every line of which is on an abandoned branch, in the order they were made."""
        if self.last is None:
            return []
        on = self._chain(self.last)
        messages = {n.message_id for u in on if (n := self.nodes[u]).message_id is not None}
        calls: set[str] = set()
        for uuid, node in self.nodes.items():
            if uuid in on or (node.message_id is not None and node.message_id in messages):
                calls |= node.uses
        left: dict[int, bool] = {}
        found: list[Entry] = []
        memo: dict[str, bool] = {}
        for uuid, node in self.nodes.items():
            active = (
                uuid in on
                or (node.message_id is not None and node.message_id in messages)
                or (bool(node.answers) and node.answers <= calls)
            )
            gone = not active and self._descends(uuid, on, memo)
            for entry in node.entries:
                if id(entry) not in left:
                    found.append(entry)
                    left[id(entry)] = gone
                else:
                    left[id(entry)] = left[id(entry)] and gone
        return [entry for entry in found if left[id(entry)]]

    def _chain(self, uuid: str) -> set[str]:
        """``uuid`` and its ancestors in this pass (a loop of parents ends it)."""
        chain: set[str] = set()
        current: str | None = uuid
        while current is not None and current in self.nodes and current not in chain:
            chain.add(current)
            current = self.nodes[current].parent
        return chain

    def _descends(self, uuid: str, on: set[str], memo: dict[str, bool]) -> bool:
        """Whether an ancestor of ``uuid`` is on the active branch; ``memo`` keeps each
        ancestor's answer, so a pass is linear in its lines."""
        path: list[str] = []
        seen = {uuid}
        current = self.nodes[uuid].parent
        result = False
        while current is not None and current not in seen:
            if current in on:
                result = True
                break
            if current in memo:
                result = memo[current]
                break
            node = self.nodes.get(current)
            if node is None:
                break
            seen.add(current)
            path.append(current)
            current = node.parent
        for ancestor in path:
            memo[ancestor] = result
        return result
