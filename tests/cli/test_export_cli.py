"""``jsonl-store export``, run as a real command: files, stdout, ``--all``, and usage errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from jsonl_store import AssistantMessage, SessionStore, ToolCall, ToolMessage, UserMessage


def command() -> list[str]:
    """The installed ``jsonl-store`` next to this Python, else ``python -m jsonl_store.cli``."""
    script = Path(sys.executable).with_name("jsonl-store")
    return [str(script)] if script.exists() else [sys.executable, "-m", "jsonl_store.cli"]


def run(root: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if k != "JSONL_STORE_ROOT"}
    return subprocess.run(
        [*command(), "--root", str(root), *args], check=False, capture_output=True, env=env, timeout=60
    )


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A session with a tool batch and an escape sequence in a message, and a sub-agent session."""
    root = tmp_path / "sessions"
    with SessionStore(root, durability="none") as store:
        store.append("chat-1", UserMessage(content="List the files.\x1b[2J"), title="Files")
        store.append("chat-1", AssistantMessage(tool_calls=[ToolCall(id="c1", name="ls", arguments={})]))
        store.append("chat-1", ToolMessage(tool_call_id="c1", name="ls", content="a.py\nb.py"))
        store.append("chat-1-sub", UserMessage(content="sub task"), parent_session_id="chat-1")
    return root


@pytest.mark.parametrize("fmt", ["md", "html", "json"])
def test_each_format_goes_to_a_file_or_to_stdout_the_same(root: Path, tmp_path: Path, fmt: str) -> None:
    """``-o FILE`` writes what stdout would show; neither holds a raw escape character."""
    out = tmp_path / f"chat-1.{fmt}"
    written = run(root, "export", "chat-1", "--format", fmt, "-o", str(out))
    assert written.returncode == 0 and b"exported session chat-1" in written.stdout
    printed = run(root, "export", "chat-1", "--format", fmt)
    assert printed.returncode == 0
    assert out.read_bytes() == printed.stdout
    assert b"\x1b" not in printed.stdout and b"a.py" in printed.stdout


def test_markdown_is_the_default_and_json_parses(root: Path) -> None:
    """Without ``--format`` the transcript is Markdown; ``--format json`` is one JSON document."""
    assert run(root, "export", "chat-1").stdout.startswith(b"# ` Files `")
    document = json.loads(run(root, "export", "chat-1", "--format", "json").stdout)
    assert [r["sequence"] for r in document["records"]] == [1, 2, 3] and document["children"] == [
        "chat-1-sub"
    ]


def test_all_writes_an_index_and_one_page_per_session(root: Path, tmp_path: Path) -> None:
    """``export --all --format html -o DIR`` writes index.html and a page per session, and says so."""
    site = tmp_path / "site"
    done = run(root, "export", "--all", "--format", "html", "-o", str(site))
    assert done.returncode == 0 and b"exported 2 sessions" in done.stdout
    assert sorted(p.name for p in site.iterdir()) == [
        "index.html",
        "session-chat-1-sub.html",
        "session-chat-1.html",
    ]


@pytest.mark.parametrize(
    "args",
    [
        ["export"],
        ["export", "chat-1", "--all", "-o", "x"],
        ["export", "--all", "--format", "md", "-o", "x"],
        ["export", "--all"],
        ["export", "missing"],
        ["export", "chat-1", "--format", "pdf"],
    ],
)
def test_usage_errors_and_unknown_sessions_exit_two(root: Path, args: list[str]) -> None:
    """A missing ID, ID with ``--all``, ``--all`` without HTML or ``-o``, an unknown session or format: exit 2."""
    done = run(root, *args)
    assert (
        done.returncode == 2 and done.stderr.startswith(b"jsonl-store: error:")
    ) or b"usage:" in done.stderr
    assert done.returncode == 2 and b"Traceback" not in done.stderr


def test_a_file_that_cannot_be_written_is_one_error_line(root: Path, tmp_path: Path) -> None:
    """``-o`` into a missing directory: exit 2 and one line naming the file, no traceback."""
    done = run(root, "export", "chat-1", "-o", str(tmp_path / "no" / "such" / "file.md"))
    assert done.returncode == 2 and done.stderr.count(b"\n") == 1 and b"file.md" in done.stderr


def test_help_shows_an_example(root: Path) -> None:
    """``export --help`` ends with examples and the exit codes."""
    done = run(root, "export", "--help")
    assert done.returncode == 0 and b"jsonl-store export --all --format html -o site/" in done.stdout


def test_an_output_that_is_a_directory_leaves_no_temporary_file(root: Path, tmp_path: Path) -> None:
    """``-o DIR`` for one session: exit 2, one error line, and nothing left beside it."""
    target = tmp_path / "out"
    target.mkdir()
    done = run(root, "export", "chat-1", "-o", str(target))
    assert done.returncode == 2 and done.stderr.count(b"\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "sessions"]
