"""``jsonl-store search``, run as a real command: hits, exit codes like grep's, colour only for a person."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import helpers
import pytest
from helpers import needs_re2, needs_rich

from jsonl_store import AssistantMessage, SessionStore, ToolCall, ToolMessage, UserMessage

MARK = b"\x1b[1;31m"


def command() -> list[str]:
    """The installed ``jsonl-store`` next to this Python, else ``python -m jsonl_store.cli``."""
    script = Path(sys.executable).with_name("jsonl-store")
    return [str(script)] if script.exists() else [sys.executable, "-m", "jsonl_store.cli"]


def environment(**changes: str) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if k not in ("JSONL_STORE_ROOT", "NO_COLOR", "PYTHONIOENCODING")
    }
    env["TERM"] = "xterm-256color"
    env.update(changes)
    return env


def run(root: Path, *args: str, **env: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*command(), "--root", str(root), *args],
        check=False,
        capture_output=True,
        env=environment(**env),
        timeout=60,
    )


def run_on_pty(argv: list[str], env: dict[str, str], *, stderr_too: bool = False) -> tuple[int, bytes]:
    """The command with stdout on a pseudo-terminal; its exit code and the bytes it wrote there.

    stderr (where the progress bar goes) is left out, so the bytes are the hits alone,
    unless ``stderr_too``.
    """
    return helpers.run_on_pty(command() + argv, env, stderr_too=stderr_too)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """Two sessions; one message holds an escape sequence and a bidi override next to the needle."""
    root = tmp_path / "sessions"
    with SessionStore(root, durability="none") as store:
        store.append("chat-1", UserMessage(content="Why does week 53 fail?"), title="Week bug")
        call = ToolCall(id="c1", name="grep", arguments={"pattern": "week"})
        store.append("chat-1", AssistantMessage(content="Let me look.", tool_calls=[call]))
        store.append(
            "chat-1", ToolMessage(tool_call_id="c1", name="grep", content="dates.py:3: week\x1b[2J\u202e")
        )
        store.append("chat-2", UserMessage(content="unrelated"))
    return root


def test_hits_are_printed_one_per_line_and_exit_zero(root: Path) -> None:
    """Each hit names session, sequence, role and the part kind that matched; the exit code is 0."""
    done = run(root, "search", "week")
    assert done.returncode == 0
    lines = done.stdout.decode().splitlines()
    assert run(root, "search", "bug").stdout == b"chat-1 title (title): Week bug\n"
    assert lines == [
        "chat-1 #1 user (text): Why does week 53 fail?",
        "chat-1 #2 assistant (tool_call arguments): week",
        "chat-1 #3 tool (tool_result): dates.py:3: week\\x1b[2J\\u202e",
    ]


def test_no_hit_exits_one_and_bad_input_exits_two(root: Path, tmp_path: Path) -> None:
    """Like grep: 1 when nothing matched, 2 for a bad regex, an unknown session or a missing root."""
    assert run(root, "search", "nowhere").returncode == 1
    assert run(root, "search", "--regex", "(").returncode == 2
    assert run(root, "search", "x", "--session", "missing").returncode == 2
    assert run(tmp_path / "absent", "search", "x").returncode == 2
    not_utf8 = subprocess.run(
        [*command(), "--root", str(root), "search", os.fsdecode(b"\xff")],
        check=False,
        capture_output=True,
        env=environment(),
        timeout=60,
    )
    assert not_utf8.returncode == 2 and b"not valid UTF-8 text: '\\xff'" in not_utf8.stderr
    bad = run(root, "search", "x", "--role", "robot")
    assert bad.returncode == 2 and b"invalid choice" in bad.stderr


@needs_re2
def test_filters_and_json(root: Path) -> None:
    """``--role``, ``--session`` and ``--regex`` narrow the hits; ``--json`` prints them as an array."""
    done = run(root, "search", "--regex", r"week( 5\d)?", "--role", "tool", "--session", "chat-1", "--json")
    assert done.returncode == 0
    (hit,) = json.loads(done.stdout)
    assert (hit["session_id"], hit["sequence"], hit["role"], hit["kind"], hit["field"]) == (
        "chat-1",
        3,
        "tool",
        "tool_result",
        "content",
    )
    assert hit["snippet"][hit["start"] : hit["end"]] == "week"
    assert b"\x1b" not in done.stdout and "\u202e".encode() not in done.stdout


@needs_rich
def test_the_match_is_coloured_on_a_terminal_only(root: Path) -> None:
    """On a pty the match is bold red; with NO_COLOR or into a pipe there is no escape sequence at all."""
    argv = ["--root", str(root), "search", "week 53"]
    code, output = run_on_pty(argv, environment())
    assert code == 0 and MARK + b"week 53" + b"\x1b[0m" in output
    code, output = run_on_pty(argv, environment(NO_COLOR="1"))
    assert code == 0 and b"week 53" in output and b"\x1b" not in output
    piped = run(root, "search", "week 53")
    assert piped.returncode == 0 and b"\x1b" not in piped.stdout + piped.stderr


def test_a_stored_escape_never_reaches_the_terminal_raw(root: Path) -> None:
    """The stored ESC and override next to a match are shown escaped, also between colour codes."""
    code, output = run_on_pty(["--root", str(root), "search", "dates.py"], environment())
    assert code == 0
    assert b"\x1b[2J" not in output and "\u202e".encode() not in output
    assert b"\\x1b[2J\\u202e" in output


@needs_rich
def test_search_and_export_all_show_a_bar_on_a_terminal_only(root: Path, tmp_path: Path) -> None:
    """With stderr on a terminal, search and export --all draw a bar; piped, stderr stays empty."""
    env = environment()
    code, output = run_on_pty(["--root", str(root), "search", "week"], env, stderr_too=True)
    assert code == 0 and b"searching" in output
    site = str(tmp_path / "site")
    code, output = run_on_pty(["--root", str(root), "export", "--all", "-o", site], env, stderr_too=True)
    assert code == 0 and b"exporting" in output
    assert run(root, "search", "week").stderr == b""
    assert run(root, "export", "--all", "-o", site).stderr == b""


def test_a_reader_that_stops_early_ends_the_search_quietly(tmp_path: Path) -> None:
    """``jsonl-store search x | head -1``: the search stops with exit code 0 and no traceback."""
    root = tmp_path / "many"
    with SessionStore(root, durability="none") as store:
        store.append_many("big", [UserMessage(content=f"needle {i} " + "x" * 200) for i in range(5000)])
    process = subprocess.Popen(
        [*command(), "--root", str(root), "search", "needle"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environment(),
    )
    assert process.stdout is not None and process.stderr is not None
    assert process.stdout.readline().startswith(b"big #1 user (text): needle 0 ")
    process.stdout.close()
    with process.stderr:
        assert process.wait(timeout=60) == 0
        assert b"Traceback" not in process.stderr.read()


@needs_re2
def test_a_regex_that_backtracks_forever_in_re_exits_at_once(tmp_path: Path) -> None:
    """``search --regex '(a+)+$'`` on a 35-character message ends (exit 1, nothing matched) instead of running forever."""
    root = tmp_path / "s"
    with SessionStore(root, durability="none") as store:
        store.append("chat", UserMessage(content="a" * 34 + "!"))
    done = run(root, "search", "--regex", "(a+)+$")
    assert (done.returncode, done.stdout, done.stderr) == (1, b"", b"")
    assert run(root, "search", "--regex", "(a+)+!$").stdout.startswith(b"chat #1 user (text): aaaa")


@needs_re2
def test_ctrl_c_stops_a_long_regex_search_with_130_and_no_traceback(tmp_path: Path) -> None:
    """SIGINT while a search still has hits to print ends it with exit code 130 and no traceback."""
    root = tmp_path / "many"
    with SessionStore(root, durability="none") as store:
        store.append_many("big", [UserMessage(content=f"needle {i} " + "x" * 200) for i in range(5000)])
    process = subprocess.Popen(
        [*command(), "--root", str(root), "search", "--regex", "needle [0-9]+"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environment(),
    )
    try:
        assert process.stdout is not None
        # The first hits are out, and the rest (about 1 MB) cannot fit in the pipe while
        # nobody reads it: the search is still going when the signal comes.
        assert os.read(process.stdout.fileno(), 4096).startswith(b"big #1 user (text): needle 0 ")
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 130
    assert b"Traceback" not in err and err.strip() == b""


def test_more_hits_than_one_write_holds_are_all_printed_in_order(tmp_path: Path) -> None:
    """A pipe gets every hit of a search with several hundred hits, each once, in the library's order."""
    from jsonl_store.cli._search import hit_line
    from jsonl_store.search import search

    root = tmp_path / "many"
    with SessionStore(root, durability="none") as store:
        for session in range(3):
            store.append_many(
                f"s{session}", [UserMessage(content=f"line {i} of the log") for i in range(250)]
            )
        expected = [hit_line(hit, colour=False) for hit in search(store, "of the log")]
    done = run(root, "search", "of the log")
    assert done.returncode == 0
    assert len(expected) == 750
    assert done.stdout.decode().splitlines() == expected
