"""The merge vectors of spec §17: each case's base, ours and theirs merge as its files say.

A case's ``expected/<file>`` was written out record by record by
spec/vectors/make_merge_vectors.py, never by the merge code; a conflict case must leave a
conflict that keeps every line of both sides.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from jsonl_store import SessionStore, merge_session_file
from jsonl_store._session import forks as _forks

VECTORS = Path(__file__).resolve().parents[2] / "spec" / "vectors"
CASES = sorted(p.name for p in (VECTORS / "merge").iterdir() if p.is_dir())


def _files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in directory.iterdir() if p.is_file()}


def _builder() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_merge_vectors", VECTORS / "make_merge_vectors.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_merge_vectors_are_what_the_builder_builds() -> None:
    """spec/vectors/merge is byte for byte what make_merge_vectors.py makes (its --check)."""
    assert _builder().main(["--check"]) == 0


@pytest.mark.parametrize("name", CASES)
def test_merge_vector(name: str, tmp_path: Path) -> None:
    """The case merges to its expected file (either way round), or is a conflict keeping both sides."""
    directory = VECTORS / "merge" / name
    info: dict[str, Any] = json.loads((directory / "case.json").read_text())
    file = info["file"]
    sides = {side: _files(directory / side) for side in ("base", "ours", "theirs")}
    known = {side: sides[side] if info["known"][side] else None for side in ("ours", "theirs")}
    data = {side: sides[side].get(file, b"") for side in sides}
    forks = {
        side: [_forks.parse(f) for f in _files(directory / f"{side}-forks").values()]
        if (directory / f"{side}-forks").is_dir()
        else []
        for side in ("ours", "theirs")
    }
    result = merge_session_file(
        file,
        data["base"],
        data["ours"],
        data["theirs"],
        ours_files=known["ours"],
        theirs_files=known["theirs"],
        ours_forks=forks["ours"],
        theirs_forks=forks["theirs"],
    )
    if info["conflict"]:
        assert result.conflict is not None
        kept = set(result.data.splitlines())
        assert set(data["ours"].splitlines()) <= kept and set(data["theirs"].splitlines()) <= kept
        return
    assert result.conflict is None, result.conflict
    assert result.data == (directory / "expected" / file).read_bytes()
    flipped = merge_session_file(
        file,
        data["base"],
        data["theirs"],
        data["ours"],
        ours_files=known["theirs"],
        theirs_files=known["ours"],
        ours_forks=forks["theirs"],
        theirs_forks=forks["ours"],
    )
    if info["known"]["ours"] and info["known"]["theirs"]:
        assert flipped.data == result.data  # the same bytes whichever side is ours
    if file == "messages.jsonl" and result.data.startswith(b'{"sequence":1,'):
        # The merged log with every side's snapshot files is a clean session (a fork's own
        # log needs its source beside it, which the merge never reads).
        session = tmp_path / "store" / "s"
        session.mkdir(parents=True)
        for side in ("base", "ours", "theirs"):
            for other, content in sides[side].items():
                if other != file:
                    (session / other).write_bytes(content)
        (session / file).write_bytes(result.data)
        assert SessionStore(tmp_path / "store").verify() == []
