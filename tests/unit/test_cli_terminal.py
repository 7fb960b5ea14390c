"""What reaches the user's terminal: stored controls escaped, pipes, encodings, bad argv, deep data.

The terminal tests run the real ``jsonl-store`` command with stdout and stderr on a
pseudo-terminal and read every byte it wrote; the pipe and encoding tests run it in a
shell pipeline or a child process with the environment a user may have.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import helpers
import orjson
import pytest

from jsonl_store import (
    AssistantMessage,
    JsonlStoreError,
    SessionStore,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from jsonl_store.cli import _format, _messages, _safe, main
from jsonl_store.cli._blocks import plain_lines

#: Every kind of stored text that could steer a terminal: clear screen, set the window
#: title (OSC ... BEL), a one-byte C1 CSI, a right-to-left override, a carriage return,
#: a backspace and DEL, between printable text and non-ASCII letters and emoji.
EVIL = "A\x1b[2JB\x1b]0;evil\x07C\x9bD\u202eE\rF\x08G\x7fH"
UNICODE = "café 😀 naïve — ok"
SESSION = "evil"
CHILD = "evil-sub"

#: What may never reach the terminal raw. Written here, not imported from `_safe`, so the
#: test states the rule on its own. Only "\n" is allowed, and on a terminal the command's
#: own colours (`SGR`), which `assert_nothing_raw` takes out first.
FORBIDDEN = re.compile(
    "[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)
#: Select Graphic Rendition, ``ESC [ params m``: colour and bold, nothing that moves the
#: cursor, clears, or sets a title (ECMA-48 8.3.117). The only sequence rich writes here.
SGR = re.compile("\x1b\\[[0-9;]*m")


def command() -> list[str]:
    """The installed ``jsonl-store`` script next to this Python, else ``python -m jsonl_store.cli``."""
    script = Path(sys.executable).with_name("jsonl-store")
    return [str(script)] if script.exists() else [sys.executable, "-m", "jsonl_store.cli"]


def environment(**changes: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("JSONL_STORE_ROOT", "PYTHONIOENCODING")}
    env.update(changes)
    return env


def write_evil(root: Path) -> None:
    """A session whose title, agent, metadata, messages, tool calls, results and usage hold `EVIL`."""
    with SessionStore(root, durability="none") as store:
        store.append(
            SESSION,
            UserMessage(content=f"{EVIL}\n{UNICODE}\n\tindented {EVIL}"),
            title=f"T {EVIL} {UNICODE}",
            agent_name=f"agent {EVIL}",
            metadata={EVIL: EVIL},
        )
        store.append(
            SESSION,
            AssistantMessage(
                content=EVIL,
                reasoning=EVIL,
                tool_calls=[
                    ToolCall(id="c1", name=f"run{EVIL}", arguments={EVIL: [EVIL, {"deep": EVIL}]}),
                    ToolCall(id="c2", name=f"open{EVIL}", arguments={}),
                ],
            ),
        )
        store.append(SESSION, ToolMessage(tool_call_id="c1", name=f"run{EVIL}", content=f"out {EVIL}"))
        store.record_usage(SESSION, {"input_tokens": 1, "output_tokens": 2, "model": f"m {EVIL}"})
        store.append(CHILD, UserMessage(content=UNICODE), parent_session_id=SESSION, agent_name=UNICODE)


@pytest.fixture
def evil_root(tmp_path: Path) -> Path:
    """A store whose own directory name holds an escape sequence, with the `EVIL` session in it."""
    root = tmp_path / "store \x1b]0;pwned\x07 dir"
    write_evil(root)
    return root


def tear_tail(root: Path, session_id: str = SESSION) -> None:
    """Half a record at the end of the log, so verify and repair report a problem with a path."""
    with open(root / session_id / "messages.jsonl", "ab") as log:
        log.write(b'{"sequence":99,"id":"\x1b[2J')


def run_on_pty(argv: list[str], env: dict[str, str] | None = None) -> tuple[int, bytes]:
    """Run the command with stdin, stdout and stderr on a pseudo-terminal; return its exit code and bytes."""
    return helpers.run_on_pty(command() + argv, env or environment())


def assert_nothing_raw(output: bytes, where: str, *, colour: bool = True) -> str:
    """``output`` is UTF-8 and holds no control, C1 or bidi character but newlines (and, if
    ``colour``, colour sequences); return it decoded, without the colours."""
    text = output.decode("utf-8")
    if colour:
        text = SGR.sub("", text)
    found = FORBIDDEN.search(text)
    assert found is None, (
        f"{where}: raw {found.group()!r} at {found.start()}: {text[max(0, found.start() - 40) :][:80]!r}"
    )
    return text


# -- escape --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("\x1b[2J", "\\x1b[2J"),
        ("\x1b]0;evil\x07", "\\x1b]0;evil\\x07"),
        ("\x9b", "\\x9b"),
        ("\x85", "\\x85"),
        ("\u202e", "\\u202e"),
        ("\u2066x\u2069", "\\u2066x\\u2069"),
        ("\u2028", "\\u2028"),
        ("a\rb\x08c\x7f\x00", "a\\rb\\x08c\\x7f\\x00"),
        ("two\nlines\tand a tab", "two\\nlines\\tand a tab"),
        ("\udcff", "\\xff"),
    ],
)
def test_escape_shows_each_unsafe_character_in_python_notation(raw: str, shown: str) -> None:
    """escape turns each control, C1, bidi, separator and non-UTF-8 byte into visible ASCII."""
    assert _safe.escape(raw) == shown


def test_escape_keeps_printable_text_emoji_and_joiners() -> None:
    """Letters, emoji, a ZWJ family emoji and backslashes pass unchanged."""
    text = "café 😀 👨\u200d👩\u200d👧 C:\\temp \\x1b"
    assert _safe.escape(text) == text


def test_json_escaping_keeps_the_value_and_leaves_no_raw_separator() -> None:
    """DEL, C1, bidi and U+2028/U+2029 become \\u escapes: the JSON decodes to the same strings."""
    value = {"text": "a\x7fb\x85c\u202ed\u2028e\u2029f 😀", "n": [1, "\x1b"]}
    for indent in (False, True):
        text = _safe.json_text(_format.dumps(value, indent=indent), sys.stdout)
        assert FORBIDDEN.search(text) is None
        assert orjson.loads(text) == value


# -- a real terminal -----------------------------------------------------------------------

READING = [
    ["list"],
    ["ls", "--pinned"],
    ["tail", SESSION, "-n", "5"],
    ["usage"],
    ["usage", "--json"],
    ["show", SESSION, "--context"],
    ["list", "--json"],
    ["list", "--parent", SESSION],
    ["show", SESSION],
    ["show", SESSION, "--raw"],
    ["show", SESSION, "--close", "--full"],
    ["show", SESSION, "--json"],
    ["show", SESSION, "--raw", "--json"],
    ["cat", SESSION],
    ["usage", SESSION],
    ["usage", SESSION, "--json"],
    ["verify"],
    ["verify", SESSION, "--json"],
    ["repair", SESSION],
]


@pytest.mark.parametrize("colour", [True, False], ids=["colour", "NO_COLOR"])
def test_no_stored_control_reaches_the_terminal(evil_root: Path, colour: bool) -> None:
    """On a pty, every reading command shows the stored escapes, overrides, CR and BS escaped;
    with NO_COLOR set not one escape sequence is written, not even a colour."""
    tear_tail(evil_root)  # so verify and repair print problems, with the root's path in them
    env = environment() if colour else environment(NO_COLOR="1")
    for argv in READING:
        code, output = run_on_pty(["--root", str(evil_root), *argv], env)
        text = assert_nothing_raw(output, shlex.join(argv), colour=colour)
        assert code in (0, 1), (argv, text)
        assert "Traceback" not in text, (argv, text)
        if ("--json" not in argv and argv[0] in ("show", "tail")) or argv == ["usage", SESSION]:
            assert "\\x1b[2J" in text and "\\u202e" in text, (argv, text)  # shown, not dropped
        if argv[0] == "verify" and "--json" not in argv:
            assert "\\x1b]0;pwned\\x07" in text  # the root's own name, escaped


def test_changing_commands_and_errors_on_a_terminal_show_no_raw_control(evil_root: Path) -> None:
    """rename to a hostile title, usage errors and an unknown session print escaped text only."""
    for argv, expected in [
        (["rename", SESSION, f"new {EVIL}"], 0),
        (["show", "no-such\x1b[2J"], 2),
        (["list", f"stray {EVIL}"], 2),
        (["cat", SESSION, "--after", f"1{EVIL}"], 2),
        (["show", CHILD, "--root", str(evil_root / f"missing {EVIL}")], 2),
        (["delete", CHILD, "--yes"], 0),
    ]:
        code, output = run_on_pty(["--root", str(evil_root), *argv])
        text = assert_nothing_raw(output, shlex.join(argv))
        assert code == expected and "Traceback" not in text, (argv, text)


def test_demo_on_a_terminal_writes_no_raw_control(tmp_path: Path) -> None:
    """demo into a directory whose name holds an escape sequence prints it escaped."""
    code, output = run_on_pty(["demo", str(tmp_path / "demo \x1b[2J")])
    text = assert_nothing_raw(output, "demo")
    assert code == 0 and "demo \\x1b[2J" in text


def test_a_title_with_a_newline_cannot_forge_a_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A newline in a title is shown as \\n: list prints one line per session, never a made-up one."""
    SessionStore(tmp_path).append("s", UserMessage(content="hi"), title="real\nno problems in /")
    assert main(["--root", str(tmp_path), "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and lines[1].endswith("real\\nno problems in /")


def test_message_newlines_and_tabs_stay_layout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """In a message body newlines break lines and tabs become spaces, as the formatter lays text out."""
    SessionStore(tmp_path).append("s", UserMessage(content="first\n\tsecond\r"))
    assert main(["--root", str(tmp_path), "show", "s"]) == 0
    out = capsys.readouterr().out
    assert "     first\n         second\\r\n" in out and "\t" not in out


def test_delete_prompt_shows_the_title_escaped(
    evil_root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The question delete asks on a terminal holds the title, escaped."""
    asked: list[str] = []

    def answer(prompt: str) -> str:
        asked.append(prompt)
        return "n"

    monkeypatch.setattr(sys.stdin, "isatty", lambda: True, raising=False)
    monkeypatch.setattr("builtins.input", answer)
    assert main(["--root", str(evil_root), "delete", SESSION]) == 1
    [prompt] = asked
    assert FORBIDDEN.search(prompt) is None and "\\x1b[2J" in prompt


# -- cat and JSON --------------------------------------------------------------------------


def test_cat_writes_no_raw_control_byte_and_decodes_to_the_stored_strings(evil_root: Path) -> None:
    """cat's bytes hold no 0x00-0x1f but newlines, no 0x7f, no C1 or bidi; each line is the record."""
    result = subprocess.run(
        [*command(), "--root", str(evil_root), "cat", SESSION],
        capture_output=True,
        env=environment(),
        check=False,
    )
    assert (result.returncode, result.stderr) == (0, b"")
    assert not re.search(rb"[\x00-\x09\x0b-\x1f\x7f]", result.stdout)
    assert_nothing_raw(result.stdout, "cat")
    records = [orjson.loads(line) for line in result.stdout.splitlines()]
    assert records[0]["message"]["content"].startswith(EVIL)
    assert records[1]["message"]["tool_calls"][0]["name"] == f"run{EVIL}"
    assert [r["sequence"] for r in records] == [1, 2, 3]


def test_json_output_escapes_line_separators_and_stays_valid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """show --json and cat write U+2028/U+2029, DEL and C1 as escapes; the JSON decodes to the stored text."""
    text = "x\u2028y\u2029z\x7f\x85\x9b\u202e"
    SessionStore(tmp_path).append("s", UserMessage(content=text), title=text)
    assert main(["--root", str(tmp_path), "show", "s", "--json", "--context"]) == 0
    out = capsys.readouterr().out
    assert FORBIDDEN.search(out.replace("\n", "")) is None
    document = orjson.loads(out)
    assert document["session"]["title"] == text and document["messages"][0]["message"]["content"] == text
    assert main(["--root", str(tmp_path), "cat", "s"]) == 0
    out = capsys.readouterr().out
    assert "\\u2028" in out and orjson.loads(out)["message"]["content"] == text


# -- pipes ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def long_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A session of 3,000 records: more output than any pipe buffer holds."""
    root = tmp_path_factory.mktemp("long")
    with SessionStore(root, durability="none") as store:
        for start in range(0, 3000, 500):
            store.append_many(
                "long", [UserMessage(content=f"message {i} " * 8) for i in range(start, start + 500)]
            )
    return root


@pytest.mark.parametrize(
    "argv",
    [["show", "long"], ["show", "long", "--raw"], ["show", "long", "--json"], ["cat", "long"], ["list"]],
)
def test_output_piped_into_head_exits_0_quietly(long_root: Path, tmp_path: Path, argv: list[str]) -> None:
    """`jsonl-store ... | head -1` under pipefail: exit 0, one line out, nothing on stderr."""
    errors = tmp_path / "stderr"
    line = shlex.join([*command(), "--root", str(long_root), *argv])
    result = subprocess.run(
        ["bash", "-o", "pipefail", "-c", f"{line} 2>{shlex.quote(str(errors))} | head -1"],
        capture_output=True,
        env=environment(),
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, (result.returncode, errors.read_text())
    assert errors.read_bytes() == b""
    assert result.stdout.count(b"\n") == 1


def test_a_reader_closing_the_pipe_early_gives_exit_0_and_empty_stderr(long_root: Path) -> None:
    """A reader that takes one chunk and closes the pipe: jsonl-store exits 0 with nothing on stderr."""
    with subprocess.Popen(
        [*command(), "--root", str(long_root), "cat", "long"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environment(),
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        assert process.stdout.read(100)
        process.stdout.close()
        errors = process.stderr.read()
        assert (process.wait(timeout=60), errors) == (0, b"")


# -- encodings -----------------------------------------------------------------------------

EVERY_COMMAND = [
    *READING,
    ["show", SESSION, "--close"],
    ["show", SESSION, "--full"],
    ["repair", SESSION, "--json"],
    ["verify", SESSION],
    ["rename", SESSION, f"renamed {UNICODE}"],
    ["rename", CHILD, "plain"],
    ["delete", CHILD, "--yes"],
    ["--help"],
    ["show", "--help"],
]


#: One run of each subcommand, for the environments that are not plain ASCII.
EACH_SUBCOMMAND = [
    ["list"],
    ["ls", "--pinned", "--json"],
    ["tail", SESSION],
    ["usage"],
    ["pin", SESSION],
    ["unpin", SESSION],
    ["show", SESSION, "--raw"],
    ["show", SESSION, "--json"],
    ["cat", SESSION],
    ["usage", SESSION],
    ["verify"],
    ["repair", SESSION],
    ["rename", CHILD, f"renamed {UNICODE}"],
    ["delete", CHILD, "--yes"],
]


@pytest.mark.parametrize(
    ("env", "commands"),
    [
        ({"PYTHONIOENCODING": "ascii"}, EVERY_COMMAND),
        ({"LANG": "C", "LC_ALL": "C"}, EACH_SUBCOMMAND),
        ({"PYTHONIOENCODING": "latin-1"}, EACH_SUBCOMMAND),
    ],
    ids=["PYTHONIOENCODING=ascii", "LC_ALL=C", "PYTHONIOENCODING=latin-1"],
)
def test_every_command_survives_a_narrow_output_encoding(
    tmp_path: Path, env: dict[str, str], commands: list[list[str]]
) -> None:
    """Under ASCII, the C locale or Latin-1 every command exits normally; text is escaped, JSON valid."""
    root = tmp_path / "störe 😀"
    write_evil(root)
    tear_tail(root)
    ascii_only = env.get("PYTHONIOENCODING") == "ascii"
    for argv in [*commands, ["demo", str(tmp_path / "démo")]]:
        full = argv if argv[0] == "demo" else ["--root", str(root), *argv]
        result = subprocess.run(
            [*command(), *full], capture_output=True, env=environment(**env), timeout=60, check=False
        )
        where = f"{env} {shlex.join(argv)}: {result.stderr!r}"
        assert result.returncode in (0, 1) and b"Traceback" not in result.stderr, where
        assert b"Error" not in result.stderr, where
        if ascii_only:
            assert result.stdout.isascii() and result.stderr.isascii(), where
            if argv[:2] == ["show", SESSION] and len(argv) == 2:
                assert b"caf\\xe9 \\U0001f600" in result.stdout  # escaped, not replaced by "?"
        if "--json" in argv or argv[0] == "cat":
            lines = [result.stdout] if argv[0] != "cat" else result.stdout.splitlines()
            assert all(json.loads(line) is not None for line in lines), where


def test_an_ascii_stream_in_process_gets_escapes_not_an_error(
    evil_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With sys.stdout an ASCII stream that raises on anything else, show and show --json still work."""
    import io

    for argv in (["show", SESSION], ["show", SESSION, "--json"], ["list"], ["cat", SESSION]):
        buffer = io.BytesIO()
        stream = io.TextIOWrapper(buffer, encoding="ascii", errors="strict")
        monkeypatch.setattr(sys, "stdout", stream)
        assert main(["--root", str(evil_root), *argv]) == 0
        stream.flush()
        assert buffer.getvalue().isascii()
        if argv[-1] == "--json":
            assert orjson.loads(buffer.getvalue())["session"]["title"] == f"T {EVIL} {UNICODE}"


# -- bad arguments and errors --------------------------------------------------------------


def test_rename_to_a_non_utf8_title_exits_2_with_one_line(evil_root: Path) -> None:
    """`jsonl-store rename ID $'\\xff'`: one error line naming the byte, exit 2, the title unchanged."""
    before = SessionStore(evil_root).get_session(SESSION)
    result = subprocess.run(
        [*command(), "--root", str(evil_root), "rename", SESSION, b"bad \xff title"],
        capture_output=True,
        env=environment(),
        check=False,
    )
    assert result.returncode == 2 and result.stdout == b""
    assert result.stderr == b"jsonl-store: error: TITLE is not valid UTF-8 text: 'bad \\xff title'\n"
    assert SessionStore(evil_root).get_session(SESSION) == before


def test_a_non_utf8_session_id_or_parent_exits_2(evil_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A session id or --parent decoded to a lone surrogate is refused before the store sees it."""
    for argv in (["show", "x\udcff"], ["list", "--parent", "\udcfe"]):
        assert main(["--root", str(evil_root), *argv]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "is not valid UTF-8 text" in err


def test_a_root_whose_name_is_not_utf8_is_shown_escaped(tmp_path: Path) -> None:
    """A --root with a byte that is not UTF-8 works; text shows it as \\xff, --json stays valid JSON."""
    root = os.path.join(os.fsencode(tmp_path), b"store-\xff")
    write_evil(Path(os.fsdecode(root)))
    tear_tail(Path(os.fsdecode(root)))
    for argv, shown in ((["verify"], b"store-\\xff"), (["verify", "--json"], b"store-\\udcff")):
        result = subprocess.run(
            [*command(), b"--root", root, *argv], capture_output=True, env=environment(), check=False
        )
        assert result.returncode == 1 and result.stderr == b"", result.stderr
        assert shown in result.stdout
        if "--json" in argv:
            assert json.loads(result.stdout)[0]["kind"] == "torn-tail"


@pytest.mark.parametrize(
    "error",
    [
        OSError(5, "Input/output error", "messages.jsonl\x1b[2J"),
        JsonlStoreError("damaged \x1b]0;evil\x07 log"),
        UnicodeEncodeError("utf-8", "\udcff", 0, 1, "surrogates not allowed"),
    ],
    ids=["OSError", "JsonlStoreError", "UnicodeEncodeError"],
)
def test_an_error_raised_while_iterating_records_is_one_escaped_line(
    evil_root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], error: Exception
) -> None:
    """An error from the records() generator midway: what was read is printed, then one line, exit 2."""
    real = SessionStore.records

    def failing(self: SessionStore, session_id: str, *, after: int = 0) -> Iterator[Any]:
        yield from list(real(self, session_id, after=after))[:1]
        raise error

    monkeypatch.setattr(SessionStore, "records", failing)
    assert main(["--root", str(evil_root), "cat", SESSION]) == 2
    captured = capsys.readouterr()
    assert captured.out.count("\n") == 1
    assert captured.err.startswith("jsonl-store: error: ") and captured.err.count("\n") == 1
    assert FORBIDDEN.search(captured.err.rstrip("\n")) is None


# -- deep nesting --------------------------------------------------------------------------


def nested(depth: int) -> Any:
    """A value ``depth`` levels deep: dicts and lists in turn, a string at the bottom."""
    value: Any = "leaf"
    for level in range(depth):
        value = {"k": value} if level % 2 else [value]
    return value


def test_the_formatter_cuts_a_5000_level_tool_argument() -> None:
    """A tool argument 5,000 levels deep renders, even with --full, as one short line cut at MAX_DEPTH, without recursing."""
    message = {"role": "assistant", "tool_calls": [{"id": "c", "name": "n", "arguments": nested(5000)}]}
    lines = plain_lines(_messages.render_message(message, full=True))
    [start] = [i for i, line in enumerate(lines) if "→" in line]
    call = "".join(line.strip() for line in lines[start:])  # the call, wrapped over lines
    assert ("{…}" in call or "[…]" in call) and call.count("{") + call.count("[") <= _format.MAX_DEPTH + 2
    assert len(call) < 1000


def test_show_cuts_a_deeply_nested_stored_argument_and_cat_keeps_it_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A stored 300-level tool argument: show cuts the call, show --raw the stored JSON at MAX_DEPTH; cat and --json print it whole."""
    arguments = nested(300)
    SessionStore(tmp_path).append(
        "deep", AssistantMessage(tool_calls=[ToolCall(id="c", name="n", arguments=arguments)])
    )
    assert main(["--root", str(tmp_path), "show", "deep", "--full"]) == 0
    out = capsys.readouterr().out
    assert "→ n({" in out and ("{…}" in out or "[…]" in out) and len(out) < 2000
    assert main(["--root", str(tmp_path), "show", "deep", "--raw"]) == 0
    out = capsys.readouterr().out
    assert '"arguments":{' in out and ("{…}" in out or "[…]" in out) and len(out) < 2000
    assert main(["--root", str(tmp_path), "cat", "deep"]) == 0
    assert orjson.loads(capsys.readouterr().out)["message"]["tool_calls"][0]["arguments"] == arguments
    assert main(["--root", str(tmp_path), "show", "deep", "--json"]) == 0
    assert (
        json.loads(capsys.readouterr().out)["records"][0]["message"]["tool_calls"][0]["arguments"]
        == arguments
    )
    assert main(["--root", str(tmp_path), "show", "deep", "--json", "--context"]) == 0
    [entry] = json.loads(capsys.readouterr().out)["messages"]
    assert entry["message"]["tool_calls"][0]["arguments"] == arguments


def test_a_5000_level_record_line_is_one_line_never_a_traceback(tmp_path: Path) -> None:
    """A checksum-valid record 5,000 levels deep: every command prints one-line messages, no traceback."""
    store = SessionStore(tmp_path)
    store.append("deep", AssistantMessage(tool_calls=[ToolCall(id="c", name="n", arguments={"k": "leaf"})]))
    store.append("deep", UserMessage(content="after the deep line"))
    log = tmp_path / "deep" / "messages.jsonl"
    first, second = log.read_bytes().splitlines(keepends=True)
    # Re-seal the first line with a deep argument: the checksum is CRC-32 of the bytes
    # before ',"crc":', as spec/FORMAT.md says, so readers take it as a sound record.
    body = first[: first.index(b',"crc":')].replace(
        b'{"k":"leaf"}', b'{"k":' * 5000 + b'"leaf"' + b"}" * 5000
    )
    log.write_bytes(body + b',"crc":"%08x"}\n' % zlib.crc32(body) + second)
    for argv in (["show", "deep"], ["show", "deep", "--raw"], ["cat", "deep"], ["verify"], ["list"]):
        result = subprocess.run(
            [*command(), "--root", str(tmp_path), *argv],
            capture_output=True,
            text=True,
            env=environment(),
            check=False,
        )
        where = f"{argv}: {result.stderr[-500:]}"
        assert "Traceback" not in result.stderr and result.returncode in (0, 1, 2), where
        assert all(line.startswith("jsonl-store: ") for line in result.stderr.splitlines()), where
        assert len(result.stdout) + len(result.stderr) < 20_000, where
