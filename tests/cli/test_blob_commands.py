"""The jsonl-store command shows the strings blob files hold, as the library gives them back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from jsonl_store import SessionStore, ToolMessage, UserMessage

OUTPUT = "".join(f"row {i}: {'ok' if i % 7 else 'failed'}\n" for i in range(40))


def cli(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run ``python -m jsonl_store.cli argv`` as a child process."""
    env = {k: v for k, v in os.environ.items() if k != "JSONL_STORE_ROOT"}
    return subprocess.run(
        [sys.executable, "-m", "jsonl_store.cli", *argv],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def _session(root: Path) -> Path:
    store = SessionStore(root, blob_threshold=100)
    store.append("s", UserMessage(content="run the tests"))
    store.append("s", ToolMessage(tool_call_id="c1", content=OUTPUT + "\x1b[31m"))
    folder = root / "s" / "blobs"
    assert len(os.listdir(folder)) == 1
    return folder


def test_cat_prints_the_restored_string_not_the_marker(tmp_path: Path) -> None:
    """cat's JSON lines hold the tool output itself; the escape byte in it is escaped, never raw."""
    _session(tmp_path / "st")
    done = cli("--root", "st", "cat", "s", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "$blob" not in done.stdout and "\x1b" not in done.stdout
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert records[1]["message"]["content"].startswith(OUTPUT)


def test_show_full_json_holds_the_restored_string(tmp_path: Path) -> None:
    """show --json --raw gives the whole string in its records."""
    _session(tmp_path / "st")
    done = cli("--root", "st", "show", "s", "--raw", "--full", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["records"][1]["message"]["content"] == OUTPUT + "\x1b[31m"
    assert document["problems"] == []


def test_verify_exits_1_and_names_a_missing_blob(tmp_path: Path) -> None:
    """With the blob file gone, verify reports bad-blob naming the blob and exits 1; show prints the placeholder."""
    folder = _session(tmp_path / "st")
    (blob,) = folder.iterdir()
    blob.unlink()
    done = cli("--root", "st", "verify", "s", cwd=tmp_path)
    assert done.returncode == 1
    assert "bad-blob" in done.stdout and blob.name in done.stdout
    shown = cli("--root", "st", "show", "s", "--raw", "--full", cwd=tmp_path)
    assert f"blob sha256:{blob.name} unavailable: the file is missing" in " ".join(shown.stdout.split())
