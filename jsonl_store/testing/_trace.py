"""What a `SimulatedFileSystem` records: each mutating call and its effects on the disk.

A `TraceEntry` is one call (its name, a readable account, what it returned) and the
*effects* it had: bytes written at an offset, a directory entry set or removed, an inode
made durable. `jsonl_store.testing.crash_states` replays the effects with a durability
model; the names and accounts are for people reading a failure report.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TypeAlias

# ---------------------------------------------------------------------------------------
# Effects: what one operation changed, the unit `crash_states` replays
# ---------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class NewInode:
    """An inode came into being (empty file or empty directory); it has no name yet."""

    ino: int
    is_dir: bool


@dataclasses.dataclass(frozen=True, slots=True)
class SetEntry:
    """Directory ``dir_ino`` now maps ``name`` to ``target`` (None: the name is gone)."""

    dir_ino: int
    name: str
    target: int | None


@dataclasses.dataclass(frozen=True, slots=True)
class DirOp:
    """Directory changes one call made; they reach the disk together or not at all."""

    entries: tuple[SetEntry, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class WriteData:
    """``data`` written into file ``ino`` at ``offset`` (a gap before it reads as zeros)."""

    ino: int
    offset: int
    data: bytes


@dataclasses.dataclass(frozen=True, slots=True)
class Truncate:
    """File ``ino`` cut (or zero-extended) to ``length`` bytes."""

    ino: int
    length: int


@dataclasses.dataclass(frozen=True, slots=True)
class SyncFile:
    """fsync/fdatasync of a file: its data and size are durable; its names are not."""

    ino: int


@dataclasses.dataclass(frozen=True, slots=True)
class SyncDir:
    """fsync of a directory: the entries set in it so far are durable."""

    ino: int


Effect: TypeAlias = NewInode | DirOp | WriteData | Truncate | SyncFile | SyncDir
DataOp: TypeAlias = WriteData | Truncate


@dataclasses.dataclass(frozen=True, slots=True)
class TraceEntry:
    """One mutating call: its position, name, a readable account, and its effects."""

    index: int
    op: str
    detail: str
    effects: tuple[Effect, ...]
    result: str = ""

    def __str__(self) -> str:
        returned = f" = {self.result}" if self.result else ""
        return f"#{self.index} {self.op}({self.detail}){returned}"


def format_trace(entries: Sequence[TraceEntry]) -> str:
    """One line per entry, for failure reports."""
    return "\n".join(str(entry) for entry in entries)
