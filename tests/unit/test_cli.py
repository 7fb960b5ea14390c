"""The ``jsonl-store`` command: each subcommand, its exit codes, and no traceback for bad input.

Most tests call `main` in-process; the subprocess tests run ``python -m jsonl_store.cli``
once per scenario to check what a shell sees (exit code, stderr without a traceback).
"""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
import pytest
from helpers import cli

from jsonl_store import (
    AssistantMessage,
    CompactedMessage,
    ModelUsage,
    SessionStore,
    ToolCall,
    ToolMessage,
    UserMessage,
    is_provider_valid,
)
from jsonl_store.cli import main

SESSION = "chat"
CHILD = "chat-sub"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run ``jsonl-store argv`` in-process; return its exit code, stdout and stderr."""
    capsys.readouterr()
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A store with one session (a snapshot, a finished and an interrupted tool batch) and a child."""
    path = tmp_path / "sessions"
    with SessionStore(path) as store:
        store.append(SESSION, UserMessage(content="List the files."), title="Files", agent_name="coder")
        store.append(
            SESSION,
            AssistantMessage(tool_calls=[ToolCall(id="c1", name="ls", arguments={"path": "."})]),
            usage=ModelUsage(input_tokens=100, output_tokens=10, cache_read_tokens=64),
        )
        store.append(SESSION, ToolMessage(tool_call_id="c1", name="ls", content="a.py\nb.py"))
        through = store.append(SESSION, AssistantMessage(content="Two files: a.py and b.py."))
        store.snapshot(SESSION, CompactedMessage(content="Listed two files."), through, 0)
        store.append(SESSION, UserMessage(content="Now test both."))
        store.append(
            SESSION,
            AssistantMessage(
                content="Testing.",
                tool_calls=[
                    ToolCall(id="c2", name="test", arguments={}),
                    ToolCall(id="c3", name="test", arguments={}),
                ],
            ),
        )
        store.append(SESSION, ToolMessage(tool_call_id="c2", name="test", content="ok"))
        store.record_usage(SESSION, {"input_tokens": 100, "output_tokens": 10, "model": "m-large"})
        store.record_usage(SESSION, ModelUsage(input_tokens=50, output_tokens=5))
        store.append(CHILD, UserMessage(content="Help."), parent_session_id=SESSION, agent_name="helper")
    return path


def tear_tail(root: Path, session_id: str = SESSION) -> None:
    """Leave what a crash in the middle of a write leaves: half a record, no newline."""
    with open(root / session_id / "messages.jsonl", "ab") as log:
        log.write(b'{"sequence":99,"id":"01')


# -- demo ----------------------------------------------------------------------------------


def test_demo_writes_sessions_and_prints_the_restored_context(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """demo writes a parent and a child session and prints context, sessions, usage, files and a hint."""
    folder = tmp_path / "demo"
    code, out, err = run(capsys, "demo", str(folder))
    assert (code, err) == (0, "")
    store = SessionStore(folder)
    sessions = store.list_sessions()
    assert len(sessions) == 2
    [child] = [s for s in sessions if s.parent_session_id is not None]
    parent = store.get_session(child.parent_session_id or "")
    assert parent is not None and parent.title and child.title
    view = store.load(parent.session_id)
    assert view.snapshot is not None and view.snapshot.version == 1
    assert not is_provider_valid(view.messages)  # the interrupted batch is left open ...
    assert is_provider_valid(view.model_context(close_last=True))  # ... until it is closed
    assert store.usage_totals(parent.session_id).total_tokens > 0
    assert any(r.usage is not None and r.duration_ns for r in store.records(parent.session_id))
    assert store.verify() == []
    for text in (
        "added on restore",
        "snapshot 1",
        "== Sessions",
        "== Token usage",
        "== Files",
        "messages.jsonl",
    ):
        assert text in out
    assert f"cat {folder / parent.session_id / 'messages.jsonl'} | jq ." in out


def test_demo_twice_into_one_folder_adds_two_more_sessions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Running demo again (in the default folder) adds sessions instead of failing."""
    monkeypatch.chdir(tmp_path)
    assert run(capsys, "demo")[0] == 0
    assert run(capsys, "demo")[0] == 0
    assert len(SessionStore(tmp_path / "jsonl-store-demo").list_sessions()) == 4


# -- reading -------------------------------------------------------------------------------


def test_list_prints_every_session_newest_first(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """list prints a table of the sessions, the most recently appended first."""
    code, out, _ = run(capsys, "--root", str(root), "list")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:2] == ["SESSION", "RECORDS"]
    assert [line.split()[0] for line in lines[1:]] == [CHILD, SESSION]


def test_list_parent_and_json_print_only_the_children(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """list --parent ID --json prints the children of ID as a JSON array of summaries."""
    code, out, _ = run(capsys, "list", "--root", str(root), "--parent", SESSION, "--json")
    assert code == 0
    [child] = orjson.loads(out)
    assert (child["session_id"], child["parent_session_id"], child["agent_name"]) == (
        CHILD,
        SESSION,
        "helper",
    )


def test_list_of_an_empty_store_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """list in an existing but empty root prints one line and exits 0."""
    code, out, _ = run(capsys, "--root", str(tmp_path), "list")
    assert (code, out.strip()) == (0, f"no sessions in {tmp_path}")


def test_show_prints_the_whole_transcript_with_the_compaction_boundary(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """show prints every record, compacted ones too, then the boundary rule and the summary in their place."""
    code, out, err = run(capsys, "--root", str(root), "show", SESSION)
    assert (code, err) == (0, "")
    assert "title:    Files" in out and "Transcript (7 records):" in out
    assert out.index("List the files.") < out.index("---- snapshot 1") < out.index("Listed two files.")
    assert out.index("Listed two files.") < out.index("#5 user")
    assert "100 in / 10 out tokens (64 cached)" in out and '→ ls({"path":"."})  [c1]' in out
    assert "The last tool batch is open: test [c3] without a result." in out


def test_show_context_prints_metadata_and_the_model_context(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """show --context prints the summary, the compacted message first, and notes the open tool batch."""
    code, out, err = run(capsys, "--root", str(root), "show", SESSION, "--context")
    assert (code, err) == (0, "")
    assert "title:    Files" in out and f"children: {CHILD}" in out
    assert "snapshot 1: replaces #1-#4" in out and "Listed two files." in out
    assert "List the files." not in out  # compacted away
    assert "#6 assistant" in out and "→ test({})  [c3]" in out
    assert "The last tool batch is open: test [c3] without a result." in out


def test_show_close_adds_the_interruption_notice(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """show --close prints model_context(close_last=True), marking the result the repair added."""
    code, out, _ = run(capsys, "--root", str(root), "show", SESSION, "--close")
    assert code == 0
    assert "+ tool  · added on restore" in out and "← result of test [c3] error" in out
    assert "The last tool batch is open" not in out


def test_show_raw_prints_every_record_with_the_snapshot_boundary(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """show --raw prints the whole raw log, compacted records included, with usage facts."""
    code, out, _ = run(capsys, "--root", str(root), "show", SESSION, "--raw")
    assert code == 0
    assert "List the files." in out and "100 in / 10 out tokens (64 cached)" in out
    assert out.index("#4 assistant") < out.index("---- snapshot 1") < out.index("#5 user")


def test_show_json_is_one_document(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """show --json prints session, snapshot, records and problems; --context swaps in the messages."""
    code, out, _ = run(capsys, "--root", str(root), "show", SESSION, "--json")
    assert code == 0
    document = orjson.loads(out)
    assert document["session"]["title"] == "Files"
    assert document["snapshot"]["compacted_through_sequence"] == 4
    assert [r["sequence"] for r in document["records"]] == list(range(1, 8))
    assert document["problems"] == []
    code, out, _ = run(capsys, "--root", str(root), "show", SESSION, "--json", "--raw")
    assert orjson.loads(out)["records"] == document["records"]
    code, out, _ = run(capsys, "--root", str(root), "show", SESSION, "--json", "--context")
    messages = orjson.loads(out)["messages"]
    assert [m["message"]["role"] for m in messages] == ["compacted", "user", "assistant", "tool"]
    assert [m["sequence"] for m in messages] == [None, 5, 6, 7]


def test_show_context_json_gives_each_message_its_sequence_and_usage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """show --context --json: each message with its record's sequence and usage; --close marks the added result."""
    store = SessionStore(tmp_path)
    store.append("s", UserMessage(content="go"))
    usage = ModelUsage(input_tokens=7, output_tokens=3, cache_read_tokens=2)
    store.append("s", AssistantMessage(tool_calls=[ToolCall(id="c", name="x", arguments={})]), usage=usage)
    _, out, _ = run(capsys, "--root", str(tmp_path), "show", "s", "--json", "--close")
    entries = orjson.loads(out)["messages"]
    assert [(e["sequence"], e["added"]) for e in entries] == [(1, False), (2, False), (None, True)]
    assert entries[0]["usage"] is None
    assert entries[1]["usage"]["input_tokens"] == 7 and entries[1]["usage"]["cache_read_tokens"] == 2
    assert entries[2]["message"]["tool_call_id"] == "c"


def test_show_raw_and_close_together_are_a_usage_error(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--raw prints records and --close a closed context: asked for both, show exits 2 with one line."""
    code, out, err = run(capsys, "--root", str(root), "show", SESSION, "--raw", "--close")
    assert (code, out) == (2, "") and err.count("\n") == 1 and "choose one" in err
    assert run(capsys, "--root", str(root), "show", SESSION, "--raw", "--context")[0] == 2  # argparse's own


def test_show_shortens_long_messages_unless_full(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """show cuts a long message and says how much is left; --full prints all of it."""
    SessionStore(tmp_path).append("long", UserMessage(content="word " * 1000))
    _, out, _ = run(capsys, "--root", str(tmp_path), "show", "long")
    assert "more characters; --full shows all" in out
    _, out, _ = run(capsys, "--root", str(tmp_path), "show", "long", "--full")
    assert "more characters" not in out and out.count("word") == 1000


def test_cat_prints_one_json_line_per_record(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """cat prints each raw-log record as one JSON line; --after skips the first ones."""
    code, out, _ = run(capsys, "--root", str(root), "cat", SESSION)
    assert code == 0
    records = [orjson.loads(line) for line in out.splitlines()]
    assert [r["sequence"] for r in records] == list(range(1, 8))
    assert records[1]["message"]["tool_calls"][0]["id"] == "c1" and records[1]["input_tokens"] == 100
    _, out, _ = run(capsys, "--root", str(root), "cat", SESSION, "--after", "5")
    assert [orjson.loads(line)["sequence"] for line in out.splitlines()] == [6, 7]


def test_cat_keeps_integers_beyond_64_bits(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A dict message holding a huge integer is printed exactly (orjson alone refuses it)."""
    SessionStore(tmp_path).append("big", {"role": "user", "content": "x", "n": 2**100})
    code, out, _ = run(capsys, "--root", str(tmp_path), "cat", "big")
    assert code == 0 and f'"n":{2**100}' in out


def test_usage_prints_each_call_and_the_totals(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """usage prints one row per model call (usage-log lines and usage on records) and a total row."""
    code, out, _ = run(capsys, "--root", str(root), "usage", SESSION)
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == 5 and "m-large" in lines[1] and "record 2" in lines[3]
    assert lines[-1].split()[:3] == ["total", "250", "25"]
    _, out, _ = run(capsys, "--root", str(root), "usage", SESSION, "--json")
    document = orjson.loads(out)
    assert len(document["calls"]) == 3 and document["totals"]["input_tokens"] == 250


# -- verify and repair ---------------------------------------------------------------------


def test_verify_of_a_clean_store_exits_0(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """verify with and without a session id exits 0 and says there are no problems."""
    assert run(capsys, "--root", str(root), "verify") == (0, f"no problems in {root}\n", "")
    assert run(capsys, "--root", str(root), "verify", SESSION)[0] == 0


def test_torn_tail_verify_exits_1_repair_exits_1_then_verify_exits_0(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A torn last line: verify reports it and changes nothing; repair cuts it; verify is clean."""
    tear_tail(root)
    size = (root / SESSION / "messages.jsonl").stat().st_size
    code, out, _ = run(capsys, "--root", str(root), "verify")
    assert code == 1 and "torn-tail: 23 bytes after the last good record (repair: cut into" in out
    assert (root / SESSION / "messages.jsonl").stat().st_size == size
    code, out, _ = run(capsys, "--root", str(root), "repair", SESSION)
    assert code == 1 and "torn-tail" in out
    assert [p.name for p in (root / SESSION).glob("messages.jsonl.cut-*")] != []
    assert run(capsys, "--root", str(root), "verify")[0] == 0
    assert run(capsys, "--root", str(root), "repair", SESSION) == (
        0,
        f"nothing to repair in session {SESSION}\n",
        "",
    )


def test_verify_json_prints_the_problems(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """verify --json prints a JSON array of problems with kind, path and offset."""
    tear_tail(root)
    code, out, _ = run(capsys, "--root", str(root), "verify", SESSION, "--json")
    [problem] = orjson.loads(out)
    assert code == 1 and problem["kind"] == "torn-tail" and problem["offset"] > 0


def test_damage_mid_log_is_reported_by_show_and_stays_after_repair(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A flipped byte mid-log: show warns on stderr and still prints; repair cannot remove it (exit 1)."""
    log = root / SESSION / "messages.jsonl"
    data = bytearray(log.read_bytes())
    start = data.index(b"Now test both.")
    data[start] ^= 0x20
    log.write_bytes(bytes(data))
    code, out, err = run(capsys, "--root", str(root), "show", SESSION)
    assert code == 0 and "jsonl-store: warning:" in err and "damaged-line" in err
    assert "Testing." in out  # reading went on after the damaged line
    assert run(capsys, "--root", str(root), "repair", SESSION)[0] == 1
    code, out, _ = run(capsys, "--root", str(root), "verify", SESSION)
    assert code == 1 and "(repair: none: readers skip it)" in out


def test_verify_exits_2_for_a_session_of_a_newer_format(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A session that needs a newer reader is unusable: verify and repair exit 2."""
    meta = root / SESSION / "meta.json"
    meta.write_bytes(meta.read_bytes().replace(b'"read_format": 1', b'"read_format": 99'))
    code, out, _ = run(capsys, "--root", str(root), "verify")
    assert code == 2 and "unsupported-format" in out
    assert run(capsys, "--root", str(root), "repair", SESSION)[0] == 2


# -- changing ------------------------------------------------------------------------------


def test_rename_sets_the_title(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """rename sets the title through update_session, and it shows in list."""
    code, out, _ = run(capsys, "--root", str(root), "rename", SESSION, "Files, tested")
    assert code == 0 and out == f"session {SESSION} is now titled 'Files, tested'\n"
    assert SessionStore(root).get_session(SESSION) is not None
    assert "Files, tested" in run(capsys, "--root", str(root), "list")[1]


def test_rename_to_an_empty_title_exits_2(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An invalid title is the store's InvalidArgument, printed as one error line."""
    code, out, err = run(capsys, "--root", str(root), "rename", SESSION, "")
    assert (code, out) == (2, "") and err.startswith("jsonl-store: error: title must be")


def test_delete_with_yes_deletes_and_keeps_the_children(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """delete --yes deletes the session's files and says that its child sessions stay."""
    code, out, _ = run(capsys, "--root", str(root), "delete", SESSION, "--yes")
    assert code == 0 and f"deleted session {SESSION}" in out and CHILD in out
    store = SessionStore(root)
    assert store.get_session(SESSION) is None and store.get_session(CHILD) is not None


def test_delete_without_yes_and_without_a_terminal_refuses(
    root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """delete without --yes when stdin is not a terminal exits 2 and deletes nothing."""
    monkeypatch.setattr(sys.stdin, "isatty", lambda: False, raising=False)
    code, _, err = run(capsys, "--root", str(root), "delete", SESSION)
    assert code == 2 and "--yes" in err
    assert SessionStore(root).get_session(SESSION) is not None


@pytest.mark.parametrize(("answer", "deleted"), [("y", True), ("", False)])
def test_delete_asks_on_a_terminal(
    root: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    answer: str,
    deleted: bool,
) -> None:
    """On a terminal, delete asks first: 'y' deletes (exit 0), anything else keeps it (exit 1)."""
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True, raising=False)
    monkeypatch.setattr("builtins.input", lambda prompt: answer)
    code, _, _ = run(capsys, "--root", str(root), "delete", SESSION)
    assert code == (0 if deleted else 1)
    assert (SessionStore(root).get_session(SESSION) is None) == deleted


# -- the root, and bad input ---------------------------------------------------------------


def test_root_comes_from_the_environment_then_the_default(
    root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without --root, $JSONL_STORE_ROOT names the store, else ./sessions."""
    monkeypatch.setenv("JSONL_STORE_ROOT", str(root))
    assert SESSION in run(capsys, "list")[1]
    monkeypatch.delenv("JSONL_STORE_ROOT")
    monkeypatch.chdir(root.parent)  # the fixture's root is ./sessions here
    assert SESSION in run(capsys, "list")[1]


@pytest.mark.parametrize(
    "argv",
    [
        ["show", "no-such"],
        ["cat", "no-such"],
        ["usage", "no-such"],
        ["verify", "no-such"],
        ["repair", "no-such"],
        ["delete", "no-such", "--yes"],
        ["rename", "no-such", "Title"],
        ["tail", "no-such"],
        ["tail", "no-such", "-f"],
        ["pin", "no-such"],
        ["unpin", "no-such"],
    ],
)
def test_an_unknown_session_exits_2(root: Path, capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    """Every command that names a session says when it does not exist and what lists them, exit code 2."""
    code, out, err = run(capsys, "--root", str(root), *argv)
    assert (code, out) == (2, "")
    assert err.startswith("jsonl-store: error: session 'no-such' does not exist")
    assert err.endswith("(`jsonl-store ls` lists its sessions)\n") and err.count("\n") == 1


@pytest.mark.parametrize("session_id", ["../etc", "a/b", ".hidden", "x" * 129])
def test_an_invalid_session_id_exits_2_with_one_line(
    root: Path, capsys: pytest.CaptureFixture[str], session_id: str
) -> None:
    """An unsafe session id is InvalidSessionId, printed as one error line, nothing created."""
    before = sorted(p.name for p in root.iterdir())
    code, out, err = run(capsys, "--root", str(root), "show", session_id)
    assert (code, out) == (2, "")
    assert err.startswith("jsonl-store: error: session id") and err.count("\n") == 1
    assert sorted(p.name for p in root.iterdir()) == before


@pytest.mark.parametrize("command", [["list"], ["verify"], ["show", SESSION], ["repair", SESSION]])
def test_a_missing_root_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    """A root that does not exist is an error (not an empty store), and nothing is created."""
    missing = tmp_path / "nope"
    code, out, err = run(capsys, "--root", str(missing), *command)
    assert (code, out) == (2, "") and "no session store at" in err and "does not exist" in err
    assert not missing.exists()


def test_a_root_that_is_a_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A root that is a file is reported as not a directory."""
    (tmp_path / "file").write_text("x")
    code, _, err = run(capsys, "--root", str(tmp_path / "file"), "verify")
    assert code == 2 and "is not a directory" in err


def test_usage_errors_exit_2_and_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    """argparse's own errors exit 2 and --help exits 0; main returns instead of raising SystemExit."""
    assert run(capsys, "no-such-command")[0] == 2
    assert run(capsys)[0] == 2
    assert run(capsys, "cat", "x", "--after", "many")[0] == 2
    code, out, _ = run(capsys, "--help")
    assert code == 0 and "demo" in out and "verify" in out


def test_negative_after_is_the_stores_error(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """cat --after -1 is rejected by the store (InvalidArgument): exit 2, one line."""
    code, _, err = run(capsys, "--root", str(root), "cat", SESSION, "--after", "-1")
    assert code == 2 and "after must be a non-negative int" in err


# -- as a separate process -----------------------------------------------------------------


def test_subprocess_exit_codes_and_no_traceback(root: Path) -> None:
    """As a process: bad id and missing root exit 2; a torn log verifies 1, repairs 1, then verifies 0."""
    cwd = root.parent
    results = {
        "bad id": (cli("--root", str(root), "show", "../x", cwd=cwd), 2),
        "missing root": (cli("--root", str(cwd / "nope"), "verify", cwd=cwd), 2),
        "clean": (cli("verify", cwd=cwd), 0),  # ./sessions is the default root
    }
    tear_tail(root)
    results["torn: verify"] = (cli("verify", cwd=cwd), 1)
    results["torn: repair"] = (cli("repair", SESSION, cwd=cwd), 1)
    results["repaired: verify"] = (cli("verify", SESSION, cwd=cwd), 0)
    for name, (result, expected) in results.items():
        assert result.returncode == expected, (name, result.stdout, result.stderr)
        assert "Traceback" not in result.stderr, name
        if expected == 2:
            assert result.stderr.startswith("jsonl-store: error: ") and result.stderr.count("\n") == 1, name


def test_show_shortens_long_metadata_unless_full(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """show's header cuts metadata over 400 characters and says how much more --full shows."""
    store = SessionStore(tmp_path, durability="none")
    store.create_session("s", metadata={"import": {"counted": [f"msg_{i:04}" for i in range(200)]}})
    store.append("s", UserMessage(content="hi"))
    assert main(["--root", str(tmp_path), "show", "s", "--no-pager"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("metadata:"))
    assert "more characters; --full or --json shows all)" in line and len(line) < 520
    assert main(["--root", str(tmp_path), "show", "s", "--no-pager", "--full"]) == 0
    assert "msg_0199" in capsys.readouterr().out
