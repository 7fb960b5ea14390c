"""The JSON Schemas of spec/schema/ describe every file kind: each file of the valid vectors,
of a store the library writes and of the imported real transcripts validates, and DuckDB and
Polars read a store with them alone, giving the records the library gives."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jsonl_store import (
    AssistantMessage,
    CompactedMessage,
    ModelUsage,
    SessionStore,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from jsonl_store.importers import import_claude_code, import_codex

jsonschema = pytest.importorskip("jsonschema")

SPEC = Path(__file__).resolve().parents[2] / "spec"
#: The real transcripts the importers are tested on (the shared ones, committed: its README).
TRANSCRIPTS = Path(__file__).resolve().parents[1] / "importers" / "data"
#: Which schema each file of a session directory follows (spec §2).
KINDS = {"messages.jsonl": "record", "usage.jsonl": "usage", "meta.json": "meta", "fork.json": "fork"}


def _schema(kind: str) -> Any:
    schema = json.loads((SPEC / "schema" / f"{kind}.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema


def _documents(session: Path) -> Iterator[tuple[str, Path, Any]]:
    for path in sorted(session.iterdir()):
        kind = "snapshot" if path.name.startswith("snapshot-") else KINDS.get(path.name)
        if kind is None or not path.is_file():
            continue
        data = path.read_bytes()
        if kind == "meta":
            yield kind, path, json.loads(data)
        else:
            for line in data.splitlines():
                yield kind, path, json.loads(line)


def _check_store(sessions: list[Path]) -> int:
    validators = {
        kind: jsonschema.Draft202012Validator(_schema(kind))
        for kind in ("record", "usage", "meta", "fork", "snapshot")
    }
    checked = 0
    for session in sessions:
        for kind, path, document in _documents(session):
            errors = [e.message for e in validators[kind].iter_errors(document)]
            assert not errors, f"{path}: {errors}"
            checked += 1
    return checked


def test_every_valid_vector_file_fits_its_schema() -> None:
    """Every line and file of spec/vectors/valid validates against the schema of its kind."""
    sessions = sorted((SPEC / "vectors" / "valid").glob("*/session"))
    assert len(sessions) >= 10
    assert _check_store(sessions) > 50


def _written(root: Path) -> SessionStore:
    store = SessionStore(root, durability="none")
    store.append("s", UserMessage(content="hi"))
    store.append(
        "s",
        AssistantMessage(
            content=None, reasoning="think", tool_calls=[ToolCall(id="c", name="ls", arguments={})]
        ),
        usage=ModelUsage(input_tokens=3, output_tokens=1),
    )
    store.append("s", ToolMessage(tool_call_id="c", content={"files": []}, is_error=True), request_id="r")
    store.record_usage("s", {"input_tokens": 1, "model": "m", "request_id": "r", "extra_key": 1})
    store.snapshot("s", CompactedMessage(content="summary"), 2, 0)
    store.update_session("s", title="T", pinned=True, metadata={"k": "v"})
    store.fork("s", 2, "f")
    store.append("f", UserMessage(content="branch"))
    return store


def test_a_written_store_and_real_transcripts_fit_the_schemas(tmp_path: Path) -> None:
    """What the library writes (forks, snapshots, usage, metadata) and the imported shared
    Claude Code and Codex transcripts validate file by file."""
    store = _written(tmp_path)
    import_claude_code(store, TRANSCRIPTS / "claude-code")
    import_codex(store, TRANSCRIPTS / "codex")
    sessions = [p for p in tmp_path.iterdir() if p.is_dir() and not p.name.startswith(".")]
    assert _check_store(sessions) > 10


def _columns(kind: str) -> list[str]:
    return list(_schema(kind)["properties"])


def test_duckdb_and_polars_read_the_store_with_the_schema_alone(tmp_path: Path) -> None:
    """DuckDB's read_json and Polars' scan_ndjson over */messages.jsonl, told only the
    schema's columns, give each session's records as SessionStore.records does."""
    duckdb = pytest.importorskip("duckdb")
    pl = pytest.importorskip("polars")
    store = _written(tmp_path)
    expected = sorted(
        (s.session_id, r.sequence, r.id)
        for s in store.list_sessions()
        for r in store.records(s.session_id, after=s.fork.sequence if s.fork else 0)
    )
    pattern = str(tmp_path / "*" / "messages.jsonl")
    columns = {
        "sequence": "BIGINT",
        "id": "VARCHAR",
        "created_at": "TIMESTAMPTZ",
        "message": "JSON",
        "crc": "VARCHAR",
    }
    assert set(columns) <= set(_columns("record"))
    got = duckdb.sql(
        f"SELECT regexp_extract(filename, '([^/]+)/messages\\.jsonl$', 1), sequence, id "
        f"FROM read_json('{pattern}', format='newline_delimited', filename=true, columns={columns})"
    ).fetchall()
    assert sorted(got) == expected
    frame = (
        pl.scan_ndjson(
            pattern,
            schema={"sequence": pl.Int64, "id": pl.String, "crc": pl.String},
            include_file_paths="path",
        )
        .select(pl.col("path").str.extract(r"([^/]+)/messages\.jsonl$"), "sequence", "id")
        .collect()
    )
    assert sorted(frame.rows()) == expected
