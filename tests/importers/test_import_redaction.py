"""An import says what redaction replaced, per file and per kind, and can store a transcript as written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fake_secrets import body
from helpers import cli

from jsonl_store import Redaction, SessionStore
from jsonl_store.importers import import_claude_code

SID = "11111111-2222-3333-4444-555555555555"
MAIN = f"claude-code-{SID}"
TOKEN = "ghp_" + body(36)
AWS_ID = "AKIA" + "QZ7XW3VT9RK2MP5L"


def user(uuid: str, content: Any) -> dict[str, Any]:
    return {"type": "user", "sessionId": SID, "uuid": uuid, "timestamp": "2025-01-01T00:00:00Z",
            "message": {"role": "user", "content": content}}  # fmt: skip


def _transcript(path: Path) -> Path:
    lines = [
        user("u1", f"my token is {TOKEN}"),
        user("u2", [{"type": "tool_result", "tool_use_id": "t1", "content": f"{TOKEN}\nid {AWS_ID}"}]),
        user("u3", "nothing to see here"),
        {"type": "custom-title", "sessionId": SID, "customTitle": f"deploy with {AWS_ID}"},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def _contents(store: SessionStore) -> list[Any]:
    return [r.message["content"] for r in store.records(MAIN)]  # type: ignore[index]


def test_the_report_counts_what_redaction_replaced_per_kind(tmp_path: Path) -> None:
    """FileReport.redacted counts the values replaced in records and title, per kind; none is shown."""
    path = _transcript(tmp_path / f"{SID}.jsonl")
    seen: list[Redaction] = []
    store = SessionStore(tmp_path / "store", on_redact=seen.append)
    report = import_claude_code(store, path)
    [file] = report.files
    assert dict(file.redacted) == {"github-token": 2, "aws-access-key": 2}
    assert report.redacted == {"github-token": 2, "aws-access-key": 2}
    assert report.to_dict()["redacted"] == report.to_dict()["files"][0]["redacted"] == report.redacted
    assert TOKEN not in json.dumps(report.to_dict()) and AWS_ID not in json.dumps(report.to_dict())
    assert _contents(store)[0] == "my token is [REDACTED:github-token]"
    assert store.get_session(MAIN).title == "deploy with [REDACTED:aws-access-key]"  # type: ignore[union-attr]
    assert seen == []  # counted by the import, not told twice by the store


def test_importing_again_counts_only_what_it_stored(tmp_path: Path) -> None:
    """A second import stores nothing new, so it reports nothing redacted."""
    path = _transcript(tmp_path / f"{SID}.jsonl")
    store = SessionStore(tmp_path / "store")
    import_claude_code(store, path)
    assert import_claude_code(store, path).redacted == {}


def test_a_store_without_redaction_imports_the_transcript_as_written(tmp_path: Path) -> None:
    """Importing into SessionStore(redact=False) keeps every value and reports nothing redacted."""
    path = _transcript(tmp_path / f"{SID}.jsonl")
    store = SessionStore(tmp_path / "store", redact=False)
    report = import_claude_code(store, path)
    assert report.redacted == {} and dict(report.files[0].redacted) == {}
    assert _contents(store)[0] == f"my token is {TOKEN}"


def test_a_refused_message_is_not_counted(tmp_path: Path) -> None:
    """A line the store refuses (nested deeper than it keeps) stores nothing, so its token is not counted."""
    path = tmp_path / f"{SID}.jsonl"
    refused = json.dumps(user("u1", [])).replace("[]", "[" * 1000 + json.dumps(TOKEN) + "]" * 1000)
    path.write_text(refused + "\n" + json.dumps(user("u2", "fine")) + "\n", encoding="utf-8")
    report = import_claude_code(SessionStore(tmp_path / "store"), path)
    assert report.damaged_count == 1 and "cannot be stored" in report.damaged[0].reason
    assert report.redacted == {} and report.added == 1


def test_the_command_prints_the_count_per_file_and_in_the_totals(tmp_path: Path) -> None:
    """``jsonl-store import`` ends each file's line with what was redacted, per kind, never a value."""
    path = _transcript(tmp_path / f"{SID}.jsonl")
    done = cli("--root", "s", "import", "claude-code", str(path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    [line, total] = done.stdout.splitlines()
    assert line.endswith(
        ": 3 added, 0 already present, 0 skipped, 4 values redacted (aws-access-key 2, github-token 2)"
    )
    assert total.endswith(", 0 damaged, 4 values redacted (aws-access-key 2, github-token 2)")
    assert TOKEN not in done.stdout + done.stderr and AWS_ID not in done.stdout + done.stderr


def test_the_command_with_no_redact_stores_the_transcript_as_written(tmp_path: Path) -> None:
    """``--no-redact`` keeps every value and says so in the totals; scan then finds the secrets."""
    path = _transcript(tmp_path / f"{SID}.jsonl")
    done = cli("--root", "s", "import", "claude-code", str(path), "--no-redact", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "redacted" not in done.stdout.splitlines()[0]
    assert done.stdout.splitlines()[-1].endswith(", 0 damaged, stored as written (--no-redact)")
    assert _contents(SessionStore(tmp_path / "s", redact=False))[0] == f"my token is {TOKEN}"
    assert cli("--root", "s", "scan", cwd=tmp_path).returncode == 1


def test_the_json_report_holds_the_counts(tmp_path: Path) -> None:
    """``import --json`` carries ``redacted`` per file and in total."""
    path = _transcript(tmp_path / f"{SID}.jsonl")
    done = cli("--root", "s", "import", "claude-code", str(path), "--json", cwd=tmp_path)
    report = json.loads(done.stdout)
    assert report["redacted"] == {"github-token": 2, "aws-access-key": 2}
    assert report["files"][0]["redacted"] == report["redacted"]


def test_a_repeated_line_whose_first_copy_was_redacted_is_not_stored_again(tmp_path: Path) -> None:
    """A resumed transcript repeats a line holding a token after an import: the next import knows it, redacted or not."""
    path = _transcript(tmp_path / f"{SID}.jsonl")
    store = SessionStore(tmp_path / "store")
    import_claude_code(store, path)
    first = path.read_text(encoding="utf-8").splitlines(keepends=True)
    with path.open("a", encoding="utf-8") as out:  # the lines again, as a resume writes them, then one new
        out.writelines([first[0], first[1], json.dumps(user("u4", "a new question")) + "\n"])
    again = import_claude_code(store, path)
    assert again.added == 1 and again.files[0].skipped_types == {"duplicate": 2}
    assert _contents(store)[-2:] == ["nothing to see here", "a new question"]
    assert import_claude_code(store, path).added == 0
