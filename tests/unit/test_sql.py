"""SQL over the store (`jsonl_store.sql`, README "SQL over the store"): every view, checksums
verified on the way, on hand-made stores and on the shared real transcripts."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from jsonl_store import (
    AssistantMessage,
    CompactedMessage,
    ModelUsage,
    Problem,
    SessionStore,
    ToolCall,
    ToolMessage,
    UserMessage,
    message_parts,
)
from jsonl_store.importers import import_claude_code, import_codex, import_pi
from jsonl_store.testing.damage import flip

pytest.importorskip("duckdb")  # the sql extra; with it, jsonl_store.sql must import

from jsonl_store import sql

#: The real transcripts the importers are tested on (the shared ones, committed: its README).
TRANSCRIPTS = Path(__file__).resolve().parents[1] / "importers" / "data"


def _chat(store: SessionStore, session_id: str) -> None:
    store.append(session_id, UserMessage(content="list the files"))
    store.append(
        session_id,
        AssistantMessage(
            content="running ls", tool_calls=[ToolCall(id="c1", name="ls", arguments={"path": "."})]
        ),
        usage=ModelUsage(input_tokens=10, output_tokens=4),
    )
    store.append(session_id, ToolMessage(tool_call_id="c1", content="a.py\nb.py", is_error=True))


def test_every_view_shows_the_sessions_records_parts_usage_and_snapshots(tmp_path: Path) -> None:
    """Each view has the rows the store's own API gives, with the documented columns."""
    store = SessionStore(tmp_path)
    _chat(store, "s1")
    store.update_session("s1", title="Listing")
    store.record_usage("s1", {"input_tokens": 7, "output_tokens": 1, "model": "m-1"})
    store.snapshot("s1", CompactedMessage(content="asked for files"), 2, 0)
    con = sql.connect(tmp_path)
    assert con.sql(
        "SELECT session_id, title, message_count, calls, input_tokens FROM sessions"
    ).fetchall() == [("s1", "Listing", 3, 2, 17)]
    assert con.sql("SELECT sequence, role, text FROM records ORDER BY sequence").fetchall() == [
        (1, "user", "list the files"),
        (2, "assistant", "running ls"),
        (3, "tool", "a.py\nb.py"),
    ]
    assert con.sql(
        "SELECT sequence, part_index, kind, tool_name, tool_call_id, arguments->>'path', content, is_error "
        "FROM parts ORDER BY sequence, part_index"
    ).fetchall() == [
        (1, 0, "text", None, None, None, "list the files", None),
        (2, 0, "text", None, None, None, "running ls", None),
        (2, 1, "tool_call", "ls", "c1", ".", None, None),
        (3, 0, "tool_result", None, "c1", None, "a.py\nb.py", True),
    ]
    assert con.sql("SELECT source, model, input_tokens FROM usage ORDER BY source DESC").fetchall() == [
        ("usage log", "m-1", 7),
        ("record 2", None, 10),
    ]
    assert con.sql("SELECT session_id, version, compacted_through_sequence FROM snapshots").fetchall() == [
        ("s1", 1, 2)
    ]


def test_a_damaged_line_is_left_out_and_reported(tmp_path: Path) -> None:
    """A flipped byte in the middle of a raw log: that record is missing, the others and the
    other sessions are read, and the damage reaches on_problem."""
    store = SessionStore(tmp_path)
    _chat(store, "bad")
    _chat(store, "good")
    log = tmp_path / "bad" / "messages.jsonl"
    data = log.read_bytes()
    second = data.index(b"\n") + 1
    log.write_bytes(flip(data, second + 40))
    problems: list[Problem] = []
    con = sql.connect(tmp_path, on_problem=problems.append)
    rows = con.sql("SELECT session_id, sequence FROM records ORDER BY ALL").fetchall()
    assert rows == [("bad", 1), ("bad", 3), ("good", 1), ("good", 2), ("good", 3)]
    assert [p.kind for p in problems if p.path.endswith("messages.jsonl")] == ["damaged-line", "gap"]


def test_a_string_spilled_to_a_blob_is_read_whole(tmp_path: Path) -> None:
    """A tool output stored in a blob file (spec §5.1) comes back whole in records and parts."""
    store = SessionStore(tmp_path, blob_threshold=64)
    output = "line of output\n" * 40
    store.append("s", AssistantMessage(content=None, tool_calls=[ToolCall(id="c", name="cat", arguments={})]))
    store.append("s", ToolMessage(tool_call_id="c", content=output))
    assert list((tmp_path / "s" / "blobs").iterdir())
    con = sql.connect(tmp_path)
    assert con.sql("SELECT text FROM records WHERE sequence = 2").fetchall() == [(output,)]
    assert con.sql("SELECT content FROM parts WHERE kind = 'tool_result'").fetchall() == [(output,)]


def test_a_fork_has_its_own_records_and_names_its_source(tmp_path: Path) -> None:
    """A fork's rows are its own raw log's; the sessions view names its source and branch."""
    store = SessionStore(tmp_path)
    _chat(store, "main")
    store.fork("main", 2, "try")
    store.append("try", UserMessage(content="other way"))
    con = sql.connect(tmp_path)
    assert con.sql("SELECT sequence, text FROM records WHERE session_id = 'try'").fetchall() == [
        (3, "other way")
    ]
    assert con.sql(
        "SELECT fork_session_id, fork_sequence FROM sessions WHERE session_id = 'try'"
    ).fetchall() == [("main", 2)]


def test_many_sessions_each_read_once(tmp_path: Path) -> None:
    """Hundreds of sessions: every record once, each under its own session id."""
    store = SessionStore(tmp_path, durability="none")
    for n in range(300):
        store.append(f"s{n:04d}", UserMessage(content=f"hello {n}"))
    con = sql.connect(tmp_path, parts=False)
    assert con.sql("SELECT count(*), count(DISTINCT session_id) FROM records").fetchall() == [(300, 300)]
    assert con.sql("SELECT text FROM records WHERE session_id = 's0123'").fetchall() == [("hello 123",)]


def test_real_transcripts_give_the_message_models_parts(tmp_path: Path) -> None:
    """Imported Claude Code, Codex and pi transcripts: the parts view holds, per record, the kinds
    `message_parts` reads in the session's dialect, and every record is in records."""
    store = SessionStore(tmp_path / "store", durability="none")
    import_claude_code(store, TRANSCRIPTS / "claude-code")
    import_codex(store, TRANSCRIPTS / "codex")
    import_pi(store, TRANSCRIPTS / "pi")
    con = sql.connect(store.root)
    expected_parts, expected_records = [], []
    for summary in store.list_sessions():
        base = summary.fork.sequence if summary.fork else 0
        for record in store.records(summary.session_id, after=base):
            expected_records.append((summary.session_id, record.sequence))
            kinds = [type(p).__name__ for p in message_parts(record.message, summary.dialect)]
            expected_parts += [(summary.session_id, record.sequence, i, k) for i, k in enumerate(kinds)]
    assert len(expected_records) > 100
    assert sorted(con.sql("SELECT session_id, sequence FROM records").fetchall()) == sorted(expected_records)
    names = {"TextPart": "text", "ReasoningPart": "reasoning", "ToolCallPart": "tool_call"}
    names |= {"ToolResultPart": "tool_result", "ImagePart": "image", "OtherPart": "other"}
    got = con.sql("SELECT session_id, sequence, part_index, kind FROM parts").fetchall()
    assert sorted(got) == sorted((s, q, i, names[k]) for s, q, i, k in expected_parts)
    # A content list without a text item has no text (NULL), not an empty one; a stored ""
    # (Codex's token_count turns) stays "".
    empty = "SELECT count(*) FROM records WHERE text = '' AND json_type(message, '$.content') <> 'VARCHAR'"
    assert con.sql(empty).fetchall() == [(0,)]


def test_a_missing_root_is_refused(tmp_path: Path) -> None:
    """connect() on a path that is no directory raises InvalidArgument, not an empty store."""
    from jsonl_store import InvalidArgument

    with pytest.raises(InvalidArgument):
        sql.connect(os.fspath(tmp_path / "nowhere"))


def test_a_session_of_a_newer_format_is_reported_not_hidden(tmp_path: Path) -> None:
    """A session this version cannot read is in no view, and on_problem says so."""
    store = SessionStore(tmp_path)
    _chat(store, "old")
    _chat(store, "new")
    meta = tmp_path / "new" / "meta.json"
    meta.write_text(meta.read_text().replace('"read_format": 1', '"read_format": 2'))
    problems: list[Problem] = []
    con = sql.connect(tmp_path, on_problem=problems.append)
    assert con.sql("SELECT DISTINCT session_id FROM records").fetchall() == [("old",)]
    assert [(Path(p.path).parent.name, p.kind) for p in problems] == [("new", "unsupported-format")]


def test_stream_timings_are_columns(tmp_path: Path) -> None:
    """A record's reasoning and answer stream spans (spec §4) are columns of records."""
    from datetime import UTC, datetime, timedelta

    from jsonl_store import MessageTiming

    start = datetime(2025, 1, 1, tzinfo=UTC)
    timing = MessageTiming(
        started_at=start,
        completed_at=start + timedelta(seconds=3),
        duration_ns=3 * 10**9,
        reasoning_started_at=start,
        reasoning_completed_at=start + timedelta(seconds=1),
        reasoning_duration_ns=10**9,
    )
    store = SessionStore(tmp_path)
    store.append("s", AssistantMessage(content="ok"), timing=timing)
    con = sql.connect(tmp_path)
    row = con.sql(
        "SELECT reasoning_completed_at - reasoning_started_at, reasoning_duration_ns, content_started_at, duration_ns "
        "FROM records"
    ).fetchall()
    assert row == [(timedelta(seconds=1), 10**9, None, 3 * 10**9)]


def test_a_root_whose_name_is_a_glob_pattern_is_read_exactly(tmp_path: Path) -> None:
    """A store below a directory named like a glob ('a*') shows its own records, not those
    of a neighbour the pattern would match ('ab')."""
    root = tmp_path / "a*"
    _chat(SessionStore(root), "mine")
    _chat(SessionStore(tmp_path / "ab"), "mine")
    con = sql.connect(root)
    assert con.sql("SELECT session_id, sequence FROM records ORDER BY ALL").fetchall() == [
        ("mine", 1),
        ("mine", 2),
        ("mine", 3),
    ]
    assert con.sql("SELECT count(*) FROM usage").fetchall() == [(1,)]


def test_a_record_longer_than_the_line_cap_once_its_blob_is_read_back(tmp_path: Path) -> None:
    """A 40 MB tool output (a blob on disk, spec §5.1) is one whole row, not a reader error."""
    store = SessionStore(tmp_path, durability="none")
    output = "0123456789" * 4_000_000
    store.append(
        "s", AssistantMessage(content=None, tool_calls=[ToolCall(id="c", name="dump", arguments={})])
    )
    store.append("s", ToolMessage(tool_call_id="c", content=output))
    con = sql.connect(tmp_path, parts=False)
    assert con.sql("SELECT sequence, length(text) FROM records ORDER BY sequence").fetchall() == [
        (1, None),
        (2, 40_000_000),
    ]


def test_the_scratch_files_go_with_the_connection(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What connect() keeps on disk for its views is removed once the connection is gone."""
    import gc
    import tempfile

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    _chat(SessionStore(tmp_path / "store"), "s")
    con = sql.connect(tmp_path / "store")
    assert con.sql("SELECT count(*) FROM parts").fetchall() == [(4,)]
    assert len(list(scratch.iterdir())) == 1
    con.close()
    del con
    gc.collect()
    assert list(scratch.iterdir()) == []
