"""`jsonl-store usage --by ...` as a process: the report's table and JSON, on an imported transcript."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import cli

from jsonl_store import SessionStore, usage_report
from jsonl_store.importers import import_claude_code, import_codex

DATA = Path(__file__).parents[1] / "importers" / "data"
ROW_KEYS = {"key", "calls", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
            "reasoning_tokens", "total_tokens", "cost_usd"}  # fmt: skip


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A store holding a real Claude Code session (with its sub-agent) and a real Codex rollout."""
    store = SessionStore(tmp_path / "s", durability="none")
    import_claude_code(store, DATA / "claude-code" / "cc-2.0.55-main-with-agent.jsonl")
    import_claude_code(store, DATA / "claude-code" / "cc-2.0.55-agent-c8d9b115.jsonl")
    import_codex(store, DATA / "codex" / "codex-0.58.0-rollout-shell-calls-truncated.jsonl")
    return Path(store.root)


@pytest.mark.parametrize("by", ["session", "day", "month", "model", "project"])
def test_usage_by_json_prints_the_reports_rows(root: Path, by: str) -> None:
    """usage --by X --json prints a list of row objects, the rows usage_report gives."""
    done = cli("--root", str(root), "usage", "--by", by, "--json", cwd=root)
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert isinstance(rows, list) and rows
    assert all(row.keys() >= ROW_KEYS for row in rows)
    assert rows == [row.as_dict() for row in usage_report(SessionStore(root), by=by)]  # type: ignore[arg-type]


def test_usage_by_project_keys_imported_sessions_by_their_cwd(root: Path) -> None:
    """An imported session's project is the working directory its transcript names."""
    done = cli("--root", str(root), "usage", "--by", "project", "--json", cwd=root)
    keys = {row["key"] for row in json.loads(done.stdout)}
    assert keys == {"/src/deep-manifest", "/home/user/projects/temp/chatbot-ui"}


def test_usage_by_day_table_has_a_cost_column_a_total_and_the_price_table(root: Path) -> None:
    """The table ends with a total row, prices each row in USD and names the price table and UTC."""
    pytest.importorskip("genai_prices")
    done = cli("--root", str(root), "usage", "--by", "day", cwd=root)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split()[:3] == ["DAY", "(UTC)", "CALLS"] and "COST (USD)" in lines[0]
    assert lines[1].startswith("2025-")
    total = next(line for line in lines if line.startswith("total"))
    assert total.split()[-1].startswith("$")
    assert any(line.startswith("prices: genai-prices ") and "UTC" in line for line in lines)


def test_usage_of_one_session_by_month_and_a_date_range(root: Path) -> None:
    """usage ID --by month --since/--until (ISO or ccusage's YYYYMMDD) reports that session's calls in that UTC range only."""
    sid = "codex-019a93b9-f380-7600-98ff-940e6b99603c"
    done = cli("--root", str(root), "usage", sid, "--by", "month", "--since", "2025-11-01", "--until", "20251130",
               "--json", cwd=root)  # fmt: skip
    [row] = json.loads(done.stdout)
    assert (row["key"], row["calls"]) == ("2025-11", 39)
    done = cli(
        "--root", str(root), "usage", sid, "--by", "month", "--since", "2025-12-01", "--json", cwd=root
    )
    assert json.loads(done.stdout) == []


def test_usage_refuses_a_date_that_is_no_date(root: Path) -> None:
    """A --since that is not YYYY-MM-DD is a usage error (exit 2), not a traceback."""
    done = cli("--root", str(root), "usage", "--by", "day", "--since", "2025-13-01", cwd=root)
    assert done.returncode == 2 and "not a date" in done.stderr and "Traceback" not in done.stderr


def test_usage_without_the_price_table_says_cost_is_unavailable(root: Path, tmp_path: Path) -> None:
    """Without genai-prices the tokens are shown, each cost is "-" (null in JSON) and a note says why."""
    hidden = tmp_path / "hide"
    (hidden / "genai_prices").mkdir(parents=True)
    (hidden / "genai_prices" / "__init__.py").write_text("raise ImportError('hidden for this test')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(hidden), *sys.path])}
    env.pop("JSONL_STORE_ROOT", None)

    def run(*argv: str) -> str:
        done = subprocess.run([sys.executable, "-m", "jsonl_store.cli", "--root", str(root), "usage", *argv],
                              env=env, capture_output=True, text=True, check=False, timeout=120)  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout

    rows = json.loads(run("--by", "model", "--json"))
    assert rows and all(row["cost_usd"] is None and row["prices_version"] is None for row in rows)
    table = run("--by", "model")
    assert "cost unavailable" in table
    assert all(
        line.split()[-1] == "-"
        for line in table.splitlines()[1:]
        if line.startswith(("claude", "gpt", "total"))
    )


def test_usage_names_the_models_it_could_not_price(tmp_path: Path) -> None:
    """A model the price table does not know is named under the table, and its row has no cost."""
    pytest.importorskip("genai_prices")
    store = SessionStore(tmp_path / "s", durability="none")
    store.record_usage("a", {"input_tokens": 10, "output_tokens": 2, "model": "in-house-\x1b[31mmodel"})
    done = cli("--root", str(store.root), "usage", "--by", "model", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout
    assert "not priced: 1 call of in-house-" in done.stdout
    [row] = [line for line in done.stdout.splitlines() if line.startswith("in-house")]
    assert row.split()[-1] == "-"


def test_usage_without_by_keeps_the_per_session_and_per_model_totals(root: Path) -> None:
    """Plain usage still prints its per-session and per-model tables, and usage ID that session's calls."""
    done = cli("--root", str(root), "usage", "--json", cwd=root)
    assert set(json.loads(done.stdout)) == {"sessions", "models", "totals"}
    done = cli("--root", str(root), "usage", "codex-019a93b9-f380-7600-98ff-940e6b99603c", "--json", cwd=root)
    assert len(json.loads(done.stdout)["calls"]) == 39
