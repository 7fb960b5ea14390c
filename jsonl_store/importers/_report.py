"""What an import did, per source file: `ImportReport`, `FileReport`, `DamagedLine`, and the import's error.

A report is plain data (frozen dataclasses), so a caller can test it, print it, or turn it
into JSON with `ImportReport.to_dict` (what ``jsonl-store import --json`` prints).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from .._errors import JsonlStoreError

#: At most this many damaged lines are listed per file; `FileReport.damaged_count` counts all.
MAX_LISTED_DAMAGE = 100


class ImportSourceError(JsonlStoreError, FileNotFoundError):
    """A path given to an importer (or its tool's default folder) does not exist."""


@dataclass(frozen=True)
class DamagedLine:
    """A source line that is not a JSON object (bad JSON, binary bytes, too long), or cannot be stored."""

    path: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}"


@dataclass(frozen=True)
class FileReport:
    """What importing one source file did.

    ``added`` records were appended and ``present`` were found already stored (an earlier
    import of the same lines); ``skipped`` lines were not understood (or carry nothing to
    store), counted per line type in ``skipped_types``; ``damaged`` lists lines that could
    not be read, ``damaged_count`` counts them all. ``snapshots`` compactions were stored
    as snapshots; ``children`` are the sub-agent sessions this file fed. ``problem`` says
    why the file could not be imported at all (unreadable, not a regular file, no
    transcript in it), else None. ``redacted`` counts, per kind, the values the store's
    redactor replaced by markers in what this file stored (its session and sub-agent
    sessions together; empty for a store made with ``redact=False``), never the values.
    """

    path: str
    session_id: str | None
    added: int = 0
    present: int = 0
    skipped: int = 0
    skipped_types: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    damaged: tuple[DamagedLine, ...] = ()
    damaged_count: int = 0
    snapshots: int = 0
    children: tuple[str, ...] = ()
    problem: str | None = None
    redacted: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    #: Lines read into the session's meta instead of a record (a title, a header, the
    #: model of a turn), counted per line type.
    in_meta: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    #: Why the lines of each type in ``skipped_types`` and ``in_meta`` are no records (where
    #: their content went, or why they hold none): no line is left out unnamed.
    reasons: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "session_id": self.session_id,
            "added": self.added,
            "present": self.present,
            "skipped": self.skipped,
            "skipped_types": dict(self.skipped_types),
            "in_meta": dict(self.in_meta),
            "reasons": dict(self.reasons),
            "damaged": [{"path": d.path, "line": d.line, "reason": d.reason} for d in self.damaged],
            "damaged_count": self.damaged_count,
            "snapshots": self.snapshots,
            "children": list(self.children),
            "problem": self.problem,
            "redacted": dict(self.redacted),
        }


@dataclass(frozen=True)
class ImportReport:
    """What one importer call did: one `FileReport` per source file, in the order imported."""

    tool: str
    files: tuple[FileReport, ...] = ()

    @property
    def added(self) -> int:
        return sum(f.added for f in self.files)

    @property
    def present(self) -> int:
        return sum(f.present for f in self.files)

    @property
    def skipped(self) -> int:
        return sum(f.skipped for f in self.files)

    @property
    def damaged(self) -> list[DamagedLine]:
        return [d for f in self.files for d in f.damaged]

    @property
    def damaged_count(self) -> int:
        return sum(f.damaged_count for f in self.files)

    @property
    def redacted(self) -> dict[str, int]:
        """Values replaced by markers per kind, every file together (`FileReport.redacted`)."""
        total: Counter[str] = Counter()
        for f in self.files:
            total.update(f.redacted)
        return dict(total)

    @property
    def problems(self) -> list[FileReport]:
        """The files that could not be imported at all."""
        return [f for f in self.files if f.problem is not None]

    @property
    def ok(self) -> bool:
        """True when no line was damaged and every file could be imported (skipped lines are fine)."""
        return self.damaged_count == 0 and not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "added": self.added,
            "present": self.present,
            "skipped": self.skipped,
            "damaged_count": self.damaged_count,
            "redacted": self.redacted,
            "files": [f.to_dict() for f in self.files],
        }
