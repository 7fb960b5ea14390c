"""No colour where it is not wanted: piped output and ``NO_COLOR`` (https://no-color.org) get
not one ESC byte, from every command that prints, on a session of every dialect.

The command runs as a child process, piped (with ``FORCE_COLOR`` set, which must not
matter) and on a pseudo-terminal with ``NO_COLOR`` (`terminal.on_pty`).
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from terminal import command, environment, on_pty

from jsonl_store import SessionStore

CODEX: list[dict[str, Any]] = [
    {"type": "reasoning", "role": "assistant", "summary": [{"type": "summary_text", "text": "**Listing**"}]},
    {
        "type": "function_call",
        "role": "assistant",
        "call_id": "c1",
        "name": "shell",
        "arguments": '{"command":["ls"]}',
    },
    {"type": "function_call_output", "role": "tool", "call_id": "c1", "output": "README.md"},
]
CLAUDE: list[dict[str, Any]] = [
    {"role": "user", "content": [{"type": "text", "text": "read it"}]},
    {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {"path": "a"}}],
    },
    {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "text", "is_error": True}],
    },
]
COMMANDS = [
    ["show", "codex", "--no-pager"],
    ["show", "claude", "--context", "--no-pager"],
    ["show", "claude", "--raw", "--no-pager"],
    ["tail", "codex"],
    ["ls", "--pinned"],
    ["usage"],
    ["usage", "codex"],
    ["search", "README"],
    ["verify"],
    ["scan"],
]


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Responses-dialect session and an Anthropic-dialect one, with a tool call each."""
    path = tmp_path_factory.mktemp("colour") / "store"
    with SessionStore(path, durability="none") as store:
        for session_id, messages, dialect in (
            ("codex", CODEX, "openai-responses"),
            ("claude", CLAUDE, "anthropic"),
        ):
            store.append_many(session_id, messages)
            store.update_session(session_id, metadata={"dialect": dialect}, pinned=True, title="README notes")
    return path


@pytest.mark.parametrize("argv", COMMANDS, ids=" ".join)
def test_piped_output_has_no_esc_byte(root: Path, argv: list[str]) -> None:
    """Piped, a command prints plain text, FORCE_COLOR or not."""
    result = subprocess.run(
        [*command(), "--root", str(root), *argv],
        capture_output=True,
        env=environment(FORCE_COLOR="1"),
        check=False,
    )
    assert result.returncode in (0, 1) and result.stdout.strip()
    assert b"\x1b" not in result.stdout and b"\x1b" not in result.stderr


@pytest.mark.parametrize("argv", COMMANDS, ids=" ".join)
def test_no_color_on_a_terminal_has_no_esc_byte(root: Path, argv: list[str]) -> None:
    """On a terminal with NO_COLOR set, not one ESC byte is written to stdout."""
    # stderr elsewhere: a progress bar there (search) moves the cursor, which is no colour.
    code, text = on_pty(
        ["--root", str(root), *argv], env=environment(NO_COLOR="1"), stderr=subprocess.DEVNULL
    )
    assert code in (0, 1) and text.strip() and "\x1b" not in text
