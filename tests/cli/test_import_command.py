"""``jsonl-store import`` run as a real process: exit codes, text and JSON reports, escaping, the progress bar."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from helpers import cli, needs_rich

DATA = Path(__file__).parents[1] / "importers" / "data"


def test_import_prints_one_line_per_file_then_the_totals(tmp_path: Path) -> None:
    """Importing the Claude Code data exits 0 with a line per file; a second run adds nothing."""
    first = cli("--root", "s", "import", "claude-code", str(DATA / "claude-code"), cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    files = sorted((DATA / "claude-code").glob("*.jsonl"))
    assert len(lines) == len(files) + 1
    assert lines[-1].startswith(f"{len(files)} files imported into s: ") and " 0 damaged" in lines[-1]
    again = cli("--root", "s", "import", "claude-code", str(DATA / "claude-code"), cwd=tmp_path)
    assert again.returncode == 0 and ": 0 records added," in again.stdout.splitlines()[-1]


def test_json_report_matches_what_the_store_holds(tmp_path: Path) -> None:
    """--json prints the report; its sessions exist and hold the records it says were added."""
    done = cli("--root", "s", "import", "codex", str(DATA / "codex"), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["tool"] == "codex" and len(report["files"]) == 3
    listed = cli("--root", "s", "list", "--json", cwd=tmp_path)
    counts = {s["session_id"]: s["message_count"] for s in json.loads(listed.stdout)}
    assert {f["session_id"]: f["added"] for f in report["files"]} == counts


def test_damaged_lines_exit_1_and_name_file_and_line(tmp_path: Path) -> None:
    """A transcript with a bad line imports the rest, prints path:line of the damage, and exits 1."""
    path = tmp_path / "s.jsonl"
    path.write_text('{"type": "session", "version": 3, "id": "p1"}\n{oops\n', encoding="utf-8")
    done = cli("--root", "s", "import", "pi", str(path), cwd=tmp_path)
    assert done.returncode == 1
    assert f"  {path}:2: not JSON" in done.stdout


def test_a_missing_path_exits_2_with_one_line(tmp_path: Path) -> None:
    """A path that does not exist is one error line on stderr, exit code 2, no traceback."""
    done = cli("--root", "s", "import", "codex", str(tmp_path / "nope"), cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("jsonl-store: error: nothing to import") and done.stderr.count("\n") == 1


def test_an_unknown_tool_is_a_usage_error(tmp_path: Path) -> None:
    """``import gemini`` is refused by the parser with exit code 2."""
    done = cli("import", "gemini", cwd=tmp_path)
    assert done.returncode == 2 and "invalid choice" in done.stderr


def test_help_shows_an_example(tmp_path: Path) -> None:
    """``import --help`` names the default folders and shows an example command."""
    done = cli("import", "--help", cwd=tmp_path)
    assert done.returncode == 0
    assert "~/.claude/projects" in done.stdout and "example:" in done.stdout
    assert "jsonl-store --root sessions import claude-code" in done.stdout


def test_a_hostile_file_name_is_printed_escaped(tmp_path: Path) -> None:
    """An ESC in a transcript's file name reaches the terminal as the text \\x1b."""
    path = tmp_path / "evil\x1b[2J.jsonl"
    path.write_text('{"type": "session", "version": 3, "id": "p1"}\n', encoding="utf-8")
    done = cli("--root", "s", "import", "pi", str(path), cwd=tmp_path)
    assert done.returncode == 0
    assert "evil\\x1b[2J.jsonl" in done.stdout and "\x1b" not in done.stdout


@needs_rich
def test_a_terminal_sees_a_progress_bar_a_pipe_does_not(tmp_path: Path) -> None:
    """With stderr on a pseudo-terminal the import draws its bar there; piped, stderr stays empty."""
    argv = [sys.executable, "-m", "jsonl_store.cli", "--root", "s", "import", "codex", str(DATA / "codex")]
    env = {**os.environ, "TERM": "xterm", "COLUMNS": "80"}
    piped = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, check=False, timeout=120)
    assert piped.returncode == 0 and piped.stderr == b""
    (tmp_path / "tty").mkdir()
    leader, follower = os.openpty()
    try:
        child = subprocess.Popen(argv, cwd=tmp_path / "tty", stdout=subprocess.PIPE, stderr=follower, env=env)
        os.close(follower)
        follower = -1
        seen = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
        out = child.communicate(timeout=120)[0]
    finally:
        os.close(leader)
        if follower != -1:
            os.close(follower)
    assert child.returncode == 0 and b"files imported" in out
    assert b"importing" in seen


def test_show_names_the_open_call_of_an_imported_session_in_its_dialect(tmp_path: Path) -> None:
    """show on a Claude Code import ending inside a Bash call says that call is open, by name and id."""
    source = DATA / "claude-code" / "cc-1.0.17-dangling-tool-use.jsonl"
    done = cli("--root", "s", "import", "claude-code", str(source), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    session_id = json.loads(done.stdout)["files"][0]["session_id"]
    lines = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines()]
    calls = [b for d in lines for b in (d.get("message") or {}).get("content") or []
             if isinstance(b, dict) and b.get("type") == "tool_use"]  # fmt: skip
    answered = {b.get("tool_use_id") for d in lines for b in (d.get("message") or {}).get("content") or []
                if isinstance(b, dict) and b.get("type") == "tool_result"}  # fmt: skip
    (dangling,) = [c for c in calls if c["id"] not in answered]
    shown = cli("--root", "s", "show", session_id, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert (
        f"The last tool batch is open: {dangling['name']} [{dangling['id']}] without a result."
        in shown.stdout
    )


def test_a_refused_file_is_counted_as_not_imported(tmp_path: Path) -> None:
    """The totals line counts a file refused whole (another file's session) apart from the imported ones, and exits 1."""
    for name, uuids in (("a.jsonl", ["a1", "a2"]), ("b.jsonl", ["b1"])):
        (tmp_path / name).write_text(
            "".join(
                json.dumps(
                    {
                        "type": "user",
                        "sessionId": "same",
                        "uuid": u,
                        "timestamp": "2025-01-01T00:00:00Z",
                        "message": {"role": "user", "content": f"from {name}"},
                    }
                )
                + "\n"
                for u in uuids
            ),
            encoding="utf-8",
        )
    assert cli("--root", "s", "import", "claude-code", "a.jsonl", cwd=tmp_path).returncode == 0
    both = cli("--root", "s", "import", "claude-code", "a.jsonl", "b.jsonl", cwd=tmp_path)
    assert both.returncode == 1
    last = both.stdout.splitlines()[-1]
    assert last.startswith("1 file imported into s: 0 records added,") and last.endswith(
        "; 1 file not imported"
    )
