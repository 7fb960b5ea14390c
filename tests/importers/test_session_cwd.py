"""An imported session records the working directory its transcript names (spec §19), its project."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from jsonl_store import SessionStore
from jsonl_store.importers import ImportReport, import_claude_code, import_codex, import_pi

DATA = Path(__file__).parent / "data"
IMPORTERS: dict[str, Callable[..., ImportReport]] = {
    "claude-code": import_claude_code,
    "codex": import_codex,
    "pi": import_pi,
}


def first_cwd(path: Path) -> str | None:
    """The first ``cwd`` the file names: a Claude Code line's, Codex's session_meta payload's, pi's header's."""
    for line in path.read_text(encoding="utf-8").splitlines():
        d: Any = json.loads(line) if line.strip() else {}
        for holder in (d, d.get("payload") if d.get("type") == "session_meta" else None):
            if isinstance(holder, dict) and isinstance(holder.get("cwd"), str):
                return str(holder["cwd"])
    return None


@pytest.mark.parametrize(
    "path",
    [
        p
        for p in sorted(DATA.glob("*/*.jsonl"))
        if first_cwd(p) is not None and not p.name.startswith("SYNTHETIC")
    ],
    ids=lambda p: p.name,
)
def test_an_imported_sessions_metadata_holds_the_cwd_its_transcript_names(tmp_path: Path, path: Path) -> None:
    """The session a real transcript feeds, and each sub-agent session it feeds, records its cwd."""
    store = SessionStore(tmp_path / "s", durability="none")
    [file] = IMPORTERS[path.parent.name](store, path).files
    for sid in [str(file.session_id), *file.children]:
        summary = store.get_session(sid)
        assert summary is not None
        assert summary.metadata.get("cwd") == first_cwd(path)
