"""What a person at a terminal sees: colour only there, the terminal's width, a pager, and plain text without rich.

Each test runs the real ``jsonl-store`` command in a child process, on a pseudo-terminal
of a set size (``TIOCSWINSZ``) or with its output piped, and reads every byte it wrote.
The pager is a small script that records that it ran, its arguments and what it was
given, so nothing waits on ``less``.
"""

from __future__ import annotations

import fcntl
import os
import re
import stat
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
from helpers import needs_rich
from terminal import command, environment, on_pty, read_all, visible

from jsonl_store import AssistantMessage, SessionStore, ToolCall, ToolMessage, UserMessage
from jsonl_store.cli import main

LONG_WORDS = " ".join(f"word{i:03d}" for i in range(60))  # 479 characters, no long word
#: A child that cannot import rich: the command without the cli extra.
WITHOUT_RICH = "import sys; sys.modules['rich'] = None; from jsonl_store.cli import main; sys.exit(main())"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A store with one short session ``s`` (a long paragraph, a tool call and its result) and a long one."""
    path = tmp_path / "sessions"
    with SessionStore(path, durability="none") as store:
        store.append("s", UserMessage(content=LONG_WORDS), title="[bold red]not markup[/] :smile:")
        store.append("s", AssistantMessage(tool_calls=[ToolCall(id="c1", name="grep", arguments={"q": "x"})]))
        store.append(
            "s", ToolMessage(tool_call_id="c1", name="grep", content="\x1b[31mRED\n" + "line\n" * 20)
        )
        store.append_many("long", [UserMessage(content=f"message {i}") for i in range(60)])
    return path


@pytest.fixture
def pager(tmp_path: Path) -> tuple[Path, Path]:
    """A pager script and the file where it records its arguments, ``$LESS`` and its input."""
    log = tmp_path / "pager.log"
    script = tmp_path / "pager.sh"
    script.write_text(f'#!/bin/sh\n{{ echo "args:$*"; echo "LESS=$LESS"; cat; }} > "{log}"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script, log


# -- colour --------------------------------------------------------------------------------


@needs_rich
def test_a_terminal_gets_colour_and_roles_are_coloured(root: Path) -> None:
    """On a terminal show colours the role; what is left without the colours is the plain text."""
    code, text = on_pty(["--root", str(root), "show", "s", "--no-pager"])
    assert code == 0
    assert re.search(r"\x1b\[[0-9;]*muser\x1b\[0m", text), text[:500]
    shown = visible(text)
    assert "#1 user" in shown and "→ grep" in shown


@pytest.mark.parametrize("env", [{"NO_COLOR": "1"}, {"TERM": "dumb"}], ids=["NO_COLOR", "TERM=dumb"])
@pytest.mark.parametrize("argv", [["show", "s", "--no-pager"], ["ls"], ["usage"], ["tail", "s"], ["demo"]])
def test_no_colour_and_no_escape_sequence_with_no_color_or_a_dumb_terminal(
    root: Path, tmp_path: Path, env: dict[str, str], argv: list[str]
) -> None:
    """With NO_COLOR set or TERM=dumb not one ESC is written, on a terminal."""
    full = [*argv, str(tmp_path / "demo")] if argv == ["demo"] else ["--root", str(root), *argv]
    code, text = on_pty(full, env=environment(**env))
    assert code == 0 and "\x1b" not in text and text.strip()


@pytest.mark.parametrize("argv", [["show", "s"], ["ls"], ["usage"], ["tail", "s"], ["verify"]])
def test_piped_output_has_no_escape_sequence(root: Path, argv: list[str]) -> None:
    """Piped, every command writes plain text, however the terminal around it is set."""
    result = subprocess.run(
        [*command(), "--root", str(root), *argv],
        capture_output=True,
        env=environment(FORCE_COLOR="1"),
        check=False,
    )
    assert result.returncode == 0 and b"\x1b" not in result.stdout and result.stdout.strip()


def test_stored_markup_and_escapes_print_as_written(root: Path) -> None:
    """A stored ``[bold red]`` and ``:smile:`` are not rich markup, a stored ESC is shown as ``\\x1b``."""
    code, text = on_pty(["--root", str(root), "show", "s", "--full", "--no-pager"])
    shown = visible(text)
    assert code == 0
    assert "[bold red]not markup[/] :smile:" in shown and "😄" not in shown
    assert "\\x1b[31mRED" in shown
    code, text = on_pty(["--root", str(root), "ls"])
    assert "[bold red]not markup[/]" in visible(text).replace("\n", "")


# -- width ---------------------------------------------------------------------------------


@pytest.mark.parametrize("cols", [60, 200])
def test_show_wraps_text_to_the_terminals_width(root: Path, cols: int) -> None:
    """A 479-character paragraph is wrapped to 60 columns on a 60-column terminal, and kept
    far wider than the old fixed 96 on a 200-column one; every word stays, in order."""
    code, text = on_pty(["--root", str(root), "show", "s", "--no-pager"], cols=cols)
    assert code == 0
    lines = visible(text).splitlines()
    assert max(len(line) for line in lines) <= cols
    body = [line.strip() for line in lines if line.strip().startswith("word")]
    assert " ".join(body) == LONG_WORDS
    if cols == 200:
        assert len(body) == 3 and len(body[0]) > 150
    else:
        assert len(body) >= 9


def test_piped_text_wraps_at_columns_else_100(root: Path) -> None:
    """Piped, text wraps at $COLUMNS when it is set, else at 100 columns."""
    for env, width in ((environment(), 100), (environment(COLUMNS="70"), 70)):
        result = subprocess.run(
            [*command(), "--root", str(root), "show", "s"],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        lines = result.stdout.splitlines()
        body = [line for line in lines if line.strip().startswith("word")]
        assert max(len(line) for line in body) <= width
        assert max(len(line) for line in body) > width - 12  # filled, not wrapped short


# -- the pager -----------------------------------------------------------------------------


@needs_rich
def test_output_longer_than_the_screen_goes_to_the_pager(root: Path, pager: tuple[Path, Path]) -> None:
    """show of 60 records on a 20-row terminal runs $PAGER with the coloured text and LESS=FRX."""
    script, log = pager
    code, text = on_pty(["--root", str(root), "show", "long"], rows=20, env=environment(PAGER=str(script)))
    assert code == 0 and "message 59" not in text
    recorded = log.read_text(encoding="utf-8")
    assert recorded.startswith("args:\nLESS=FRX\n")
    assert "message 0" in recorded and "message 59" in recorded and "\x1b[" in recorded


def test_less_minus_r_is_the_pager_without_pager_set(
    root: Path, pager: tuple[Path, Path], tmp_path: Path
) -> None:
    """Without $PAGER the command runs ``less -R`` (here a stand-in named less on PATH)."""
    script, log = pager
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "less").symlink_to(script)
    env = environment(PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", LESS="-X")
    code, _ = on_pty(["--root", str(root), "show", "long"], rows=20, env=env)
    assert code == 0
    assert log.read_text(encoding="utf-8").startswith("args:-R\nLESS=-X\n")  # a LESS of the user's is kept


@pytest.mark.parametrize(
    ("argv", "rows"),
    [(["show", "long", "--no-pager"], 20), (["show", "s"], 200), (["show", "long", "--json"], 20)],
    ids=["--no-pager", "fits-the-screen", "json"],
)
def test_no_pager_when_told_when_it_fits_or_for_json(
    root: Path, pager: tuple[Path, Path], argv: list[str], rows: int
) -> None:
    """--no-pager, output shorter than the screen and JSON print directly."""
    script, log = pager
    code, text = on_pty(["--root", str(root), *argv], rows=rows, env=environment(PAGER=str(script)))
    assert code == 0 and not log.exists() and text.strip()


def test_no_pager_when_piped(root: Path, pager: tuple[Path, Path]) -> None:
    """Piped, show never pages, however long its output."""
    script, log = pager
    result = subprocess.run(
        [*command(), "--root", str(root), "show", "long"],
        capture_output=True,
        text=True,
        env=environment(PAGER=str(script), LINES="5"),
        check=False,
    )
    assert result.returncode == 0 and "message 59" in result.stdout and not log.exists()


def test_a_pager_that_cannot_run_leaves_the_output_on_the_screen(root: Path) -> None:
    """A $PAGER the shell cannot find: its one complaint, then the transcript printed directly."""
    code, text = on_pty(
        ["--root", str(root), "show", "long"], rows=20, env=environment(PAGER="no-such-pager-x")
    )
    shown = visible(text)
    assert code == 0 and "message 0" in shown and "message 59" in shown and "no-such-pager-x" in shown


def test_an_empty_pager_or_cat_means_none(root: Path, pager: tuple[Path, Path]) -> None:
    """PAGER="" and PAGER=cat print directly, as git reads them."""
    for value in ("", "cat"):
        code, text = on_pty(["--root", str(root), "show", "long"], rows=20, env=environment(PAGER=value))
        assert code == 0 and "message 59" in visible(text)


# -- without rich --------------------------------------------------------------------------


def test_without_rich_a_terminal_gets_plain_text_to_its_width_and_the_pager(
    root: Path, pager: tuple[Path, Path]
) -> None:
    """Without the cli extra: no colour, but text still wraps to the terminal and long output is paged."""
    script, log = pager
    program = [sys.executable, "-c", WITHOUT_RICH]
    code, text = on_pty(
        ["--root", str(root), "show", "s"], cols=60, program=program, env=environment(PAGER=str(script))
    )
    assert code == 0 and "\x1b" not in text
    assert max(len(line) for line in text.splitlines()) <= 60 and "word059" in text
    code, text = on_pty(
        ["--root", str(root), "show", "long"], rows=20, program=program, env=environment(PAGER=str(script))
    )
    assert code == 0 and "message 59" in log.read_text(encoding="utf-8")
    for argv in (["ls", "--pinned"], ["usage"], ["tail", "long", "-n", "3"], ["verify"], ["--help"]):
        code, text = on_pty(["--root", str(root), *argv], program=program)
        assert code == 0 and "\x1b" not in text and "Traceback" not in text, (argv, text)


def test_the_shim_really_hides_rich() -> None:
    """The no-rich child cannot import rich (else the test above would prove nothing)."""
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; sys.modules['rich'] = None\ntry:\n import rich.console\nexcept ImportError:\n print('hidden')",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.stdout.strip() == "hidden"


# -- progress and help ---------------------------------------------------------------------


@needs_rich
def test_verify_over_many_sessions_shows_a_bar_on_a_terminal_and_plain_stdout(tmp_path: Path) -> None:
    """verify over 25 sessions: a bar on stderr (a terminal), the usual one line on stdout (a pipe)."""
    root = tmp_path / "many"
    with SessionStore(root, durability="none") as store:
        for i in range(25):
            store.append(f"s{i:02d}", UserMessage(content="hi"))
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    try:
        process = subprocess.Popen(
            [*command(), "--root", str(root), "verify"],
            stdout=subprocess.PIPE,
            stderr=slave,
            env=environment(),
        )
    finally:
        os.close(slave)
    try:
        bar = read_all(master)
    finally:
        os.close(master)
    out, _ = process.communicate(timeout=60)
    assert process.returncode == 0
    assert out == f"no problems in {root}\n".encode()
    assert b"verify" in bar and b"/25" in bar


def test_every_subcommand_help_ends_with_an_example(capsys: pytest.CaptureFixture[str]) -> None:
    """Each subcommand's --help shows an example of it; the top-level help lists the exit codes."""
    names = [
        "demo",
        "list",
        "ls",
        "show",
        "tail",
        "cat",
        "usage",
        "pin",
        "unpin",
        "verify",
        "repair",
        "delete",
        "rename",
    ]
    for name in names:
        assert main([name, "--help"]) == 0
        out = capsys.readouterr().out
        example = out.split("example:\n", 1)[1]
        canonical = "list" if name == "ls" else name
        assert re.search(rf"jsonl-store (--root \S+ )?(ls|{canonical})\b", example), (name, out)
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for line in ("exit codes:", "  0  success", "  1  problems found or fixed", "  2  bad input"):
        assert line in out
