"""No stored control character reaches the terminal from any part of a message: tool arguments
and names, results, reasoning, image media types and content the dialect does not map.

Each dialect's session holds an escape sequence, a C1 control, a carriage return and a
bidi override in every part; ``show`` and ``tail`` print them escaped (``\\x1b``,
``\\u202e``), on a terminal with colour and in a pipe.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
from terminal import on_pty, visible

from jsonl_store import SessionStore
from jsonl_store.cli import main

#: Every kind of unsafe character: an OSC title change, a CSI, a one-byte C1 CSI, a
#: carriage return, a bidi override and an isolate.
EVIL = "\x1b]0;owned\x07 \x1b[2J \x9b31m \rover \u202eright \u2066"
#: What the terminal shows of it (`_safe.escape`).
SHOWN = "\\x1b]0;owned\\x07 \\x1b[2J \\x9b31m \\rover \\u202eright \\u2066"
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 40).decode()

NEUTRAL: list[dict[str, Any]] = [
    {
        "role": "user",
        "content": [{"type": "image_url", "image_url": {"url": f"data:image/png{EVIL};base64,{PNG}"}}],
    },
    {
        "role": "assistant",
        "reasoning": f"thinking {EVIL}",
        "tool_calls": [
            {
                "id": f"c1{EVIL}",
                "type": "function",
                "function": {
                    "name": f"grep{EVIL}",
                    "arguments": f'{{"q": "{EVIL.encode("unicode_escape").decode()}"}}',
                },
            }
        ],
    },
    {"role": "tool", "tool_call_id": f"c1{EVIL}", "content": f"result {EVIL}", "is_error": True},
]
ANTHROPIC: list[dict[str, Any]] = [
    {
        "role": "user",
        "content": [
            {"type": "image", "source": {"type": "base64", "media_type": f"image/png{EVIL}", "data": PNG}}
        ],
    },
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": f"thinking {EVIL}"},
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": f"ls {EVIL}"}},
            {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {"query": EVIL}},
        ],
    },
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": f"out {EVIL}"}]},
]
RESPONSES: list[dict[str, Any]] = [
    {
        "type": "reasoning",
        "role": "assistant",
        "summary": [{"type": "summary_text", "text": f"thinking {EVIL}"}],
    },
    {
        "type": "custom_tool_call",
        "role": "assistant",
        "call_id": "k1",
        "name": "apply_patch",
        "input": f"*** Begin Patch {EVIL}",
    },
    {"type": "custom_tool_call_output", "role": "tool", "call_id": "k1", "output": f"done {EVIL}"},
    {"type": "web_search_call", "role": "assistant", "action": {"query": EVIL}},
]
SESSIONS = {"neutral": NEUTRAL, "anthropic": ANTHROPIC, "openai-responses": RESPONSES}


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One session per dialect, every part of it holding `EVIL`."""
    path = tmp_path_factory.mktemp("controls") / "store"
    with SessionStore(path, durability="none") as store:
        for dialect, messages in SESSIONS.items():
            store.append_many(dialect, messages)
            store.update_session(dialect, metadata={"dialect": dialect})
    return path


def shown_count(text: str) -> int:
    """How many times `EVIL` (or the escaped arguments' JSON of it) is on screen, escaped."""
    return text.count("\\x1b]0;owned\\x07")


@pytest.mark.parametrize("dialect", sorted(SESSIONS))
@pytest.mark.parametrize(
    "argv", [["show", "--no-pager", "--full"], ["tail"], ["show", "--context", "--no-pager"]]
)
def test_no_stored_control_in_any_part_reaches_a_pipe(
    root: Path, capsys: pytest.CaptureFixture[str], dialect: str, argv: list[str]
) -> None:
    """Piped, every part's controls and bidi marks print escaped, and each part is still shown."""
    assert main(["--root", str(root), argv[0], dialect, *argv[1:]]) == 0
    out = capsys.readouterr().out
    visible(out)  # fails on any raw control but the newline
    assert not any(mark in out for mark in ("\u202e", "\u2066", "\x9b"))
    assert shown_count(out) >= len(SESSIONS[dialect]) - 1, out


@pytest.mark.parametrize("dialect", sorted(SESSIONS))
def test_no_stored_control_in_any_part_reaches_a_colour_terminal(root: Path, dialect: str) -> None:
    """On a terminal with colour the only escape sequences are the command's own colours."""
    code, text = on_pty(["--root", str(root), "show", dialect, "--full", "--no-pager"], cols=120)
    assert code == 0
    shown = visible(text)
    assert SHOWN in shown.replace("\n", "") or shown_count(shown) >= 2, shown
    assert not any(mark in text for mark in ("\u202e", "\u2066", "\x9b"))


def test_an_image_media_type_with_controls_is_escaped_in_its_placeholder(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An image's stored media type is shown escaped inside its one-line placeholder, never its bytes."""
    assert main(["--root", str(root), "show", "anthropic", "--no-pager"]) == 0
    out = capsys.readouterr().out
    [line] = [line for line in out.splitlines() if "[image:" in line]
    assert line.strip().startswith("[image: image/png\\x1b]0;owned\\x07") and line.strip().endswith(
        " 48 bytes]"
    )
    assert PNG not in out


@pytest.mark.parametrize("columns", ["80", "120"])
def test_content_the_dialect_does_not_map_is_one_labelled_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, columns: str
) -> None:
    """A 20,000-character hosted-tool item shows, even with --full, as one [type] line with a JSON excerpt."""
    item = {"type": "web_search_call", "role": "assistant", "action": {"sources": ["x" * 100] * 200}}
    with SessionStore(tmp_path, durability="none") as store:
        store.append("s", item, metadata=None)
        store.update_session("s", metadata={"dialect": "openai-responses"})
    monkeypatch.setenv("COLUMNS", columns)
    assert main(["--root", str(tmp_path), "show", "s", "--full", "--no-pager"]) == 0
    lines = capsys.readouterr().out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("#1 "))
    assert [line.strip()[:19] for line in lines[start + 1 :]] == ["[web_search_call] {"]
    assert len(lines[start + 1]) <= int(columns) and lines[start + 1].endswith("…")
