"""Damage on disk: the `Problem` record, its kinds, its actions, and the `Reporter`.

Every reader and writer reports what it meets the same way: to a `Reporter` handed to
it, one `Problem` at a time (the idea of LevelDB's ``log::Reader::Reporter``,
https://github.com/google/leveldb/blob/main/db/log_reader.h). The store decides where
problems go once an operation is over: into ``view.problems``, to ``on_problem``, to the
log, or nowhere. Kinds and the exact action texts are spec §12's table.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Final, Literal, TypeAlias

#: Every kind of problem (spec §12).
ProblemKind: TypeAlias = Literal[
    "bad-blob",
    "bad-fork",
    "bad-meta",
    "bad-record",
    "bad-snapshot",
    "damaged-line",
    "gap",
    "leftover-temp",
    "moved-boundary",
    "orphan-blob",
    "out-of-order",
    "text-conversion",
    "torn-tail",
    "unreadable",
    "unrecognized-records",
    "unsafe-path",
    "unsupported-format",
]

#: Kinds that leave a session unusable: nothing else of it is read (spec §12).
UNUSABLE_KINDS: Final = frozenset({"unsupported-format", "unreadable", "unsafe-path"})

#: What ``load(strict=True)`` raises for: damage inside the log, a file that cannot be read.
#: Never the remains of a crash (a torn last line is not reported at all) and never a text
#: conversion (its records read as written).
CORRUPT_KINDS: Final = frozenset(
    {"bad-blob", "bad-fork", "bad-meta", "bad-record", "bad-snapshot", "damaged-line", "gap", "out-of-order"}
)

# What a reader did, as it reports (spec §12: "a reader with what it did").
SKIPPED: Final = "skipped"
SKIPPED_LINE: Final = "skipped; reading resumes at the next line"
SKIPPED_SNAPSHOT: Final = "skipped for an older snapshot"
READ_AS_WRITTEN: Final = "read as written"
KEPT_AFTER_GAP: Final = "reported; later records are kept"
PLACEHOLDER: Final = "read with a placeholder string in its place"

# What `repair` does, in the imperative, as `verify` reports (spec §12's exact texts).
LEFT_FOR_READERS: Final = "none: readers skip it"
MOVE_ASIDE: Final = "move aside"
DELETE: Final = "delete"
RESTORE: Final = "restore the bytes as written (\\n line ends, no byte-order mark)"
REANCHOR: Final = "write the boundary offsets anew"
LEAVE_UNSAFE: Final = (
    "none: put a regular file (a directory for a session) in its place; repair never touches it"
)
LEAVE_UNRECOGNIZED: Final = (
    "none: restore the file's bytes as written, or move it aside; writers never cut these lines"
)
NEEDS_NEWER: Final = "none: needs a newer jsonl_store"
SHOWN_AS_PLACEHOLDER: Final = "none: readers show a placeholder"
PUT_BLOB_BACK: Final = "none: put the blob file back (from git or a copy); readers show a placeholder"
CHECK_SYSTEM: Final = "none: check permissions and the file system"


def cut_into(sidecar: str) -> str:
    """The action of a damaged tail: where its bytes go (spec §9.3)."""
    return f"cut into {sidecar}"


@dataclasses.dataclass(frozen=True, slots=True)
class Problem:
    """Something wrong on disk: where, what, and what `repair` does (or did) about it."""

    path: str
    kind: ProblemKind
    reason: str
    action: str
    offset: int | None = None
    line: int | None = None

    def __str__(self) -> str:
        where = self.path
        if self.line is not None:
            where += f":{self.line}"
        if self.offset is not None:
            where += f" @{self.offset}"
        return f"{where}: {self.kind}: {self.reason} ({self.action})"


class Reporter:
    """Collects the problems one operation meets, in the order met."""

    __slots__ = ("problems",)

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def report(self, problem: Problem) -> None:
        self.problems.append(problem)


class _Discard(Reporter):
    """For reads whose damage another read of the same operation reports already."""

    __slots__ = ()

    def report(self, problem: Problem) -> None:
        pass


class Forward(Reporter):
    """Hands each problem on at once (a long-lived writer's cuts go to the store's sink)."""

    __slots__ = ("_sink",)

    def __init__(self, sink: Callable[[Problem], None]) -> None:
        super().__init__()
        self._sink = sink

    def report(self, problem: Problem) -> None:
        self._sink(problem)


#: The reporter that keeps nothing.
DISCARD: Final[Reporter] = _Discard()
