"""The Agents SDK's items as raw-log records, and which of them are live.

`JsonlSession` keeps each item as the record ``{"role": R, "content": item}`` and marks
pops, suffix replacements and clears with `MARKER` (``jsonl_store.adapters.openai_agents``
describes the records); reading the log forward (`fold`) or backwards from its end
(`scan_back`) gives the same live items.
"""

from __future__ import annotations

import json
from typing import Any

from jsonl_store import RawMessageRecord, SessionStore

#: The key of the record metadata that marks a pop or a clear, and of the session
#: metadata that keeps the SDK's id of a session whose directory is not named by it.
MARKER = "openai_agents"

_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}


def role(item: Any) -> str:
    """Who made an item, in the store's roles (for people and ``jsonl-store show`` only)."""
    if not isinstance(item, dict):
        return "user"
    found = _ROLES.get(item.get("role"))  # type: ignore[arg-type]
    if found is not None:
        return found
    kind = item.get("type")
    return "tool" if isinstance(kind, str) and kind.endswith("_output") else "assistant"


def op(record: RawMessageRecord) -> str | None:
    """``"pop"`` or ``"clear"`` for a marker record, ``"item"`` for an item, None for others."""
    marker = record.metadata.get(MARKER)
    if isinstance(marker, dict):
        name = marker.get("op")
        return name if name in ("pop", "clear") else None
    message = record.message
    if isinstance(message, dict):
        if suffix_pops(message):
            return "pop"
        if isinstance(message.get("content"), dict):
            return "item"
    return None


def suffix_pops(message: dict[str, Any]) -> int:
    """How many items a suffix replacement's marker message takes (0: it is none)."""
    marker = message.get(MARKER)
    if isinstance(marker, dict) and marker.get("op") == "pop" and isinstance(marker.get("items"), list):
        return len(marker["items"])
    return 0


def popped(record: RawMessageRecord) -> int:
    """How many items a pop record takes: one, or a suffix replacement's count."""
    message = record.message
    return (suffix_pops(message) if isinstance(message, dict) else 0) or 1


def dropped(record: RawMessageRecord) -> list[int]:
    """The sequences of the oldest items a suffix replacement pruned (``"drop"``), if any."""
    message = record.message
    marker = message.get(MARKER) if isinstance(message, dict) else None
    drop = marker.get("drop") if isinstance(marker, dict) else None
    return [n for n in drop if type(n) is int] if isinstance(drop, list) else []


def item(record: RawMessageRecord) -> Any:
    """The SDK item an item record holds."""
    message = record.message
    assert isinstance(message, dict), "only item records are asked for their item"
    return message["content"]


def scan_back(records: list[RawMessageRecord], limit: int) -> tuple[list[RawMessageRecord], bool]:
    """The live items among ``records`` (a tail of the log), newest first, at most ``limit``.

    The flag says whether the answer is final: ``limit`` items found or a clear met, so
    records before these cannot add to it.
    """
    pending = 0  # pops seen whose item is further back
    # Items a suffix replacement pruned from the front, by sequence: never the item a pop
    # took (a pop takes the newest live item, a pruning lists live ones only).
    gone: set[int] = set()
    live: list[RawMessageRecord] = []
    for record in reversed(records):
        kind = op(record)
        if kind == "clear":
            return live, True
        if kind == "pop":
            pending += popped(record)
            gone.update(dropped(record))
        elif kind == "item" and record.sequence not in gone:
            if pending:
                pending -= 1
            else:
                live.append(record)
                if len(live) == limit:
                    return live, True
    return live, False


def fold(records: list[RawMessageRecord]) -> list[RawMessageRecord]:
    """The live items after reading ``records`` forward: clears empty it, pops take the last."""
    live: list[RawMessageRecord] = []
    for record in records:
        kind = op(record)
        if kind == "item":
            live.append(record)
        elif kind == "clear":
            live.clear()
        elif kind == "pop":
            gone = set(dropped(record))
            live = [entry for entry in live if entry.sequence not in gone] if gone else live
            del live[max(0, len(live) - popped(record)) :]
    return live


def json_normalized(items: list[Any]) -> list[Any]:
    """The items as SQLiteSession gives them back: through ``json.dumps`` and ``json.loads``.

    Only needed for values the store refuses to keep unchanged (a tuple, a ``str`` enum);
    a value JSON cannot carry raises ``TypeError`` here, as SQLiteSession's ``add_items`` does.
    """
    return [json.loads(json.dumps(item)) for item in items]


def append_items(store: SessionStore, session_id: str, items: list[Any], title: str | None) -> None:
    """The items as one all-or-nothing append; one item through ``append``, the store's
    flat path for a single message (an ``append_many`` of one costs more)."""
    if len(items) == 1:
        [one] = items
        store.append(session_id, {"role": role(one), "content": one}, title=title)
    else:
        store.append_many(session_id, [{"role": role(each), "content": each} for each in items], title=title)
