"""``jsonl-store import TOOL`` of a file another tool wrote (or of no transcript at all): one line, exit 1, nothing made."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers import cli

DATA = Path(__file__).parents[1] / "importers" / "data"
#: One real transcript of each tool (tests/importers/data, MIT, see its README).
REAL = {
    "claude-code": DATA / "claude-code" / "cc-1.0.17-dangling-tool-use.jsonl",
    "codex": DATA / "codex" / "codex-0.58.0-rollout-shell-calls-truncated.jsonl",
    "pi": DATA / "pi" / "pi-v3-redacted-minimal.jsonl",
}
#: What each importer's refusal names as the format it expected.
EXPECTED = {
    "claude-code": "not a Claude Code transcript",
    "codex": "not a Codex rollout",
    "pi": "not a pi session",
}
#: Files no tool wrote, by kind: their bytes.
OTHER = {
    "empty": b"",
    "jsonl": b'{"event": "deploy", "id": 1}\n{"event": "rollback", "id": 2}\n',
    "json-array": b'[\n  {"type": "user", "message": {"role": "user", "content": "hi"}}\n]\n',
}
CASES = [(tool, kind) for tool in REAL for kind in [*(k for k in REAL if k != tool), *OTHER]]


def source_file(tmp_path: Path, kind: str) -> Path:
    if kind in REAL:
        return REAL[kind]
    path = tmp_path / f"{kind}.jsonl"
    path.write_bytes(OTHER[kind])
    return path


@pytest.mark.parametrize(("tool", "kind"), CASES)
def test_a_file_of_another_kind_exits_1_with_one_line_and_creates_nothing(
    tmp_path: Path, tool: str, kind: str
) -> None:
    """Importing another tool's transcript, plain JSONL, an empty file or a JSON array prints one line naming the format, exits 1, writes nothing."""
    path = source_file(tmp_path, kind)
    done = cli("--root", "s", "import", tool, str(path), cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr == ""
    (line,) = done.stdout.splitlines()
    assert line.startswith(f"{path}: not imported: {EXPECTED[tool]} ("), line
    assert not os.path.exists(tmp_path / "s")
