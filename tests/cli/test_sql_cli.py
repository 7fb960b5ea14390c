"""``jsonl-store sql`` as a process: a table, --json, --csv, a damaged line on stderr, a bad
query as one line with exit code 2, and stored control characters never raw."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from helpers import cli

from jsonl_store import AssistantMessage, ModelUsage, SessionStore, ToolCall, ToolMessage, UserMessage

pytest.importorskip("duckdb")


def _store(root: Path) -> None:
    store = SessionStore(root)
    store.append("chat", UserMessage(content="find \x1b[2Jthe bug"))
    store.append(
        "chat",
        AssistantMessage(content=None, tool_calls=[ToolCall(id="c1", name="grep", arguments={"q": "bug"})]),
        usage=ModelUsage(input_tokens=1234567, output_tokens=5),
    )
    store.append("chat", ToolMessage(tool_call_id="c1", content="app.py:3"))
    store.update_session("chat", title="Bug hunt")


def test_sql_prints_rows_as_json_objects(tmp_path: Path) -> None:
    """--json is a list of row objects named by the columns, JSON columns parsed."""
    _store(tmp_path)
    query = "SELECT sequence, role, message->'tool_calls' AS calls FROM records ORDER BY sequence"
    done = cli("--root", str(tmp_path), "sql", query, "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert [r["role"] for r in rows] == ["user", "assistant", "tool"]
    assert rows[1]["calls"] == [{"id": "c1", "name": "grep", "arguments": {"q": "bug"}}]


def test_sql_prints_csv_with_a_header(tmp_path: Path) -> None:
    """--csv in a pipe is the exact values, a header line first."""
    _store(tmp_path)
    done = cli(
        "--root",
        str(tmp_path),
        "sql",
        "SELECT session_id, title, input_tokens FROM sessions",
        "--csv",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert list(csv.reader(io.StringIO(done.stdout))) == [
        ["session_id", "title", "input_tokens"],
        ["chat", "Bug hunt", "1234567"],
    ]


def test_sql_table_keeps_numbers_whole_and_escapes_stored_controls(tmp_path: Path) -> None:
    """The table shows every digit of a count and no stored escape sequence raw."""
    _store(tmp_path)
    done = cli(
        "--root",
        str(tmp_path),
        "sql",
        "SELECT r.text, s.input_tokens FROM records r JOIN sessions s USING (session_id)",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "1,234,567" in done.stdout
    assert "\x1b" not in done.stdout and "\\x1b[2J" in done.stdout


def test_sql_reports_a_damaged_line_on_stderr(tmp_path: Path) -> None:
    """A line whose checksum fails is left out of the rows and named on stderr."""
    _store(tmp_path)
    log = tmp_path / "chat" / "messages.jsonl"
    log.write_bytes(log.read_bytes().replace(b"find ", b"fine "))
    done = cli("--root", str(tmp_path), "sql", "SELECT sequence FROM records", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert [r["sequence"] for r in json.loads(done.stdout)] == [2, 3]
    assert "messages.jsonl:1" in done.stderr and "damaged-line" in done.stderr


def test_sql_bad_query_is_one_line_and_exit_2(tmp_path: Path) -> None:
    """A query DuckDB refuses gives its message on one stderr line, no traceback."""
    _store(tmp_path)
    done = cli("--root", str(tmp_path), "sql", "SELECT * FROM nowhere", cwd=tmp_path)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1


@pytest.mark.parametrize("output", [[], ["--json"], ["--csv"]])
def test_sql_prints_every_duckdb_type(tmp_path: Path, output: list[str]) -> None:
    """Intervals, bytes, decimals, nested lists and maps, integers past 64 bits and NaN print
    in each output (ISO 8601, base64, numbers), never a traceback."""
    _store(tmp_path)
    query = (
        "SELECT INTERVAL 1 DAY AS i, 'ab'::BLOB AS b, 1.5::DECIMAL(4,2) AS d, "
        "[12345678901234567890::HUGEINT] AS l, MAP {'k': DATE '2020-01-02'} AS m, 'nan'::DOUBLE AS n"
    )
    done = cli("--root", str(tmp_path), "sql", query, *output, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    for shown in ("P1D", "YWI=", "1.5", "12345678901234567890", "2020-01-02"):
        assert shown in done.stdout


def test_sql_without_duckdb_names_the_extra(tmp_path: Path) -> None:
    """Where DuckDB cannot be imported, `sql` says to install the sql extra, exit code 2."""
    import os
    import subprocess
    import sys

    _store(tmp_path)
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "duckdb.py").write_text("raise ImportError('no duckdb here')\n")
    env = {k: v for k, v in os.environ.items() if k != "JSONL_STORE_ROOT"}
    env["PYTHONPATH"] = os.pathsep.join([str(blocker), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "-m", "jsonl_store.cli", "--root", str(tmp_path), "sql", "SELECT 1"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert "jsonl_store[sql]" in done.stderr and "Traceback" not in done.stderr
