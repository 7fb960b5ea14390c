"""Importers: Claude Code, Codex and pi transcripts as jsonl_store sessions (docs/guides/importing.md)."""

from ._api import import_claude_code, import_codex, import_pi
from ._report import DamagedLine, FileReport, ImportReport, ImportSourceError

__all__ = [
    "DamagedLine",
    "FileReport",
    "ImportReport",
    "ImportSourceError",
    "import_claude_code",
    "import_codex",
    "import_pi",
]
