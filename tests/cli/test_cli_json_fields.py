"""Every ``--json`` output carries at least the fields its table or summary shows.

Each test reads the columns the command actually prints (its table's header, or the keys of
``show``'s summary) and looks each one's JSON key up in the output of the same command with
``--json``: a new column without its JSON field fails here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jsonl_store import AssistantMessage, ModelUsage, SessionStore, UserMessage
from jsonl_store.cli import main

#: Each column of the ``ls`` table and the key of each JSON session that holds its value.
LS = {
    "PIN": "pinned",
    "SESSION": "session_id",
    "RECORDS": "message_count",
    "TOKENS": "total_tokens",
    "UPDATED (UTC)": "updated_at",
    "AGENT": "agent_name",
    "PARENT": "parent_session_id",
    "TITLE": "title",
}
#: The columns of ``usage`` (per session, per model and the total) and their JSON keys.
USAGE = {
    "SESSION": "session_id",
    "MODEL": "model",
    "CALLS": "calls",
    "INPUT": "input_tokens",
    "OUTPUT": "output_tokens",
    "CACHE READ": "cache_read_tokens",
    "CACHE WRITE": "cache_write_tokens",
    "REASONING": "reasoning_tokens",
    "HIT RATE": "cache_hit_rate",
}
#: The columns of ``usage ID`` (one session's model calls) and their JSON keys.
USAGE_ONE = {
    "RECORDED (UTC)": "recorded_at",
    "FROM": "source",
    "MODEL": "model",
    "INPUT": "input_tokens",
    "OUTPUT": "output_tokens",
    "CACHE READ": "cache_read_tokens",
    "CACHE WRITE": "cache_write_tokens",
    "REASONING": "reasoning_tokens",
}
#: The facts of ``show``'s summary and where its JSON document holds each.
SHOW = {
    "session": ("session", "session_id"),
    "title": ("session", "title"),
    "agent": ("session", "agent_name"),
    "type": ("session", "session_type"),
    "parent": ("session", "parent_session_id"),
    "children": ("children", None),
    "records": ("session", "message_count"),
    "created": ("session", "created_at"),
    "updated": ("session", "updated_at"),
    "snapshot": ("snapshot", None),
    "pinned": ("session", "pinned"),
    "metadata": ("session", "metadata"),
}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A pinned session with usage, a child, and metadata."""
    path = tmp_path / "store"
    with SessionStore(path, durability="none") as store:
        store.append("chat", UserMessage(content="hi"), title="Chat", agent_name="coder")
        store.append(
            "chat",
            AssistantMessage(content="hello"),
            usage=ModelUsage(input_tokens=1_200, output_tokens=30, cache_read_tokens=1_024),
        )
        store.record_usage("chat", {"input_tokens": 500, "output_tokens": 5, "model": "m-small"})
        store.append("chat-sub", UserMessage(content="help"), parent_session_id="chat")
        store.update_session("chat", pinned=True, metadata={"project": "x"})
    return path


def text_and_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[list[str], Any]:
    """The lines a command prints, and what it prints with --json, decoded."""
    assert main(list(argv)) == 0
    lines = capsys.readouterr().out.splitlines()
    assert main([*argv, "--json"]) == 0
    return lines, json.loads(capsys.readouterr().out)


def columns(header: str, known: dict[str, Any]) -> list[str]:
    """The column names of a table's header line (names hold single spaces, columns two)."""
    names = [name.strip() for name in header.split("  ") if name.strip()]
    unknown = [name for name in names if name not in known]
    assert not unknown, f"a column with no JSON key in this test: {unknown}"
    return names


def test_ls_json_has_a_field_for_every_column_of_its_table(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """ls --json holds each ls --pinned column's value, the tokens too, for every session."""
    lines, data = text_and_json(capsys, "--root", str(root), "ls", "--pinned")
    names = columns(lines[0], LS)
    assert "TOKENS" in names
    for session in data:
        assert all(LS[name] in session for name in names), session
    assert {s["session_id"]: s["total_tokens"] for s in data} == {"chat": 1_735, "chat-sub": 0}


def test_usage_json_has_a_field_for_every_column_of_its_tables(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """usage --json holds every per-session and per-model column, for each row and the totals."""
    lines, data = text_and_json(capsys, "--root", str(root), "usage")
    headers = [line for line in lines if line.startswith(("SESSION ", "MODEL "))]
    assert len(headers) == 2
    for header, rows in zip(headers, (data["sessions"], data["models"]), strict=True):
        for name in columns(header, USAGE):
            assert all(USAGE[name] in row for row in rows), (name, rows)
    assert all(USAGE[name] in data["totals"] for name in columns(headers[0], USAGE)[1:])


def test_usage_of_one_session_json_has_a_field_for_every_column(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """usage ID --json holds each column of every model call, and the totals' counts."""
    lines, data = text_and_json(capsys, "--root", str(root), "usage", "chat")
    names = columns(lines[0], USAGE_ONE)
    for call in data["calls"]:
        assert all(USAGE_ONE[name] in call for name in names), call
    assert all(USAGE_ONE[name] in data["totals"] for name in names[3:])


def test_show_json_has_every_fact_of_the_summary(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """show --json holds each fact show's summary prints, the child sessions too."""
    lines, data = text_and_json(capsys, "--root", str(root), "show", "chat", "--no-pager")
    facts = [line.split(":", 1)[0] for line in lines[: lines.index("")]]
    assert "children" in facts
    for fact in facts:
        where, key = SHOW[fact]
        assert where in data and (key is None or key in data[where]), fact
    assert data["children"] == ["chat-sub"]


# -- commands that print one line per item: each line is made of its JSON item's fields ----


def test_search_json_holds_every_field_of_a_hit_line(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Each search line's session, sequence, role, part kind, field and snippet are its JSON hit's."""
    lines, hits = text_and_json(capsys, "--root", str(root), "search", "hel")
    assert len(lines) == len(hits) >= 2
    for line, hit in zip(lines, hits, strict=True):
        # The field is named only when it is not the part's own text (cli/_search.py).
        what = hit["kind"] if hit["field"] in ("content", hit["kind"]) else f"{hit['kind']} {hit['field']}"
        assert line.startswith(f"{hit['session_id']} #{hit['sequence']} {hit['role']} ({what}): ")
        assert line.endswith(hit["snippet"])


def test_verify_json_holds_every_field_of_a_problem_line(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each verify line's path, line, offset, kind, reason and action are its JSON problem's."""
    with open(root / "chat" / "messages.jsonl", "ab") as log:
        log.write(b'{"not a record"}\n{"sequence": 9}\n')
    assert main(["--root", str(root), "verify", "chat"]) == 1
    lines = capsys.readouterr().out.splitlines()[:-1]
    assert main(["--root", str(root), "verify", "chat", "--json"]) == 1
    problems = json.loads(capsys.readouterr().out)
    assert len(lines) == len(problems) >= 1
    for line, p in zip(lines, problems, strict=True):
        where = p["path"] + (f":{p['line']}" if p["line"] is not None else "")
        where += f" @{p['offset']}" if p["offset"] is not None else ""
        assert line == f"{where}: {p['kind']}: {p['reason']} (repair: {p['action']})"


def test_scan_json_holds_every_field_of_a_finding_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each scan line's session, file, line, sequence, place, kind, preview and fingerprint are its JSON finding's."""
    token = "ghp_" + "aB3dE5gH7jK9mN1pQ2rS4tU6vW8xY0zCaB3d"
    with SessionStore(tmp_path, durability="none", redact=False) as store:
        store.append("s", UserMessage(content=f"my token is {token}"))
    assert main(["--root", str(tmp_path), "scan"]) == 1
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("s: ")]
    assert main(["--root", str(tmp_path), "scan", "--json"]) == 1
    findings = json.loads(capsys.readouterr().out)
    assert len(lines) == len(findings) >= 1
    for line, f in zip(lines, findings, strict=True):
        where = f"{f['file']}:{f['line']}" if f["line"] else f["file"]
        sequence = f" sequence {f['sequence']}" if f["sequence"] is not None else ""
        assert line.startswith(f"{f['session_id']}: {where}{sequence} {f['where']}: ")
        assert f"{f['kind']}" in line and line.split(" (")[0].endswith(f"{f['preview']} {f['fingerprint']}")


def test_import_json_holds_every_count_of_its_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each import line's path, session and counts, and the total line's counts, are in the JSON report."""
    source = Path(__file__).parent.parent / "importers" / "data" / "pi" / "pi-v3-redacted-minimal.jsonl"
    argv = ["--root", str(tmp_path / "a"), "import", "pi", str(source)]
    (tmp_path / "a").mkdir()
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    (tmp_path / "b").mkdir()
    assert main(["--root", str(tmp_path / "b"), *argv[2:], "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    [f] = report["files"]
    assert lines[0].startswith(
        f"{f['path']} -> {f['session_id']}: {f['added']} added, {f['present']} already present, {f['skipped']} skipped"
    )
    assert (
        f"{report['added']} records added, {report['present']} already present, "
        f"{report['skipped']} lines skipped, {report['damaged_count']} damaged"
    ) in lines[-1]


def test_scan_allow_json_holds_the_fingerprints_already_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """scan --allow --json lists the fingerprints added and those already there, as its text counts them."""
    first, second = "0123456789abcdef", "fedcba9876543210"
    SessionStore(tmp_path).append("s", UserMessage(content="hi"))
    assert main(["--root", str(tmp_path), "scan", "--allow", first]) == 0
    capsys.readouterr()
    assert main(["--root", str(tmp_path), "scan", "--allow", first, second]) == 0
    assert "(1 already there)" in capsys.readouterr().out
    assert main(["--root", str(tmp_path), "scan", "--allow", first, second, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["added"] == [] and data["already"] == [first, second]
