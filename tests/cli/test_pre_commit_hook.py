"""`jsonl-store scan` as a pre-commit hook of another repository, through pre-commit itself.

pre-commit is not a test dependency: these tests run where it is installed (CI's docs stage
installs it) and skip elsewhere.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from jsonl_store import SessionStore, UserMessage

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / ".pre-commit-hooks.yaml"
# A GitHub token's shape (ghp_ and 36 characters), built here so no scanner reads one in this file.
TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def test_the_hook_manifest_passes_pre_commits_schema() -> None:
    """.pre-commit-hooks.yaml is valid by pre-commit's own schema and names `jsonl-store scan`."""
    clientlib = pytest.importorskip("pre_commit.clientlib")
    [hook] = clientlib.load_manifest(str(MANIFEST))
    assert hook["id"] == "jsonl-store-scan" and hook["entry"] == "jsonl-store scan"
    assert hook["language"] == "python" and hook["pass_filenames"] is False
    assert hook["args"] == ["--root", "sessions"] and hook["files"] == "^sessions/"


def test_the_hook_fails_a_commit_holding_a_secret(tmp_path: Path) -> None:
    """`pre-commit try-repo` of this checkout fails on a stored token and passes once it is redacted."""
    pytest.importorskip("pre_commit")
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs git and a git checkout of this repository")
    user = tmp_path / "user"
    user.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=user, check=True)
    SessionStore(user / "sessions", redact=False).append("chat", UserMessage(content=f"my key {TOKEN}"))
    subprocess.run(["git", "add", "-A"], cwd=user, check=True)
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "cache")}
    argv = [sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), "jsonl-store-scan", "--all-files"]
    blocked = subprocess.run(argv, cwd=user, env=env, capture_output=True, text=True, check=False)
    assert blocked.returncode == 1, blocked.stdout + blocked.stderr
    assert "[REDACTED:github-token]" in blocked.stdout and TOKEN not in blocked.stdout
    SessionStore(user / "sessions").redact_session("chat")
    subprocess.run(["git", "add", "-A"], cwd=user, check=True)
    passed = subprocess.run(argv, cwd=user, env=env, capture_output=True, text=True, check=False)
    assert passed.returncode == 0, passed.stdout + passed.stderr
