"""The importers on small transcripts written here, one per shape the issue names.

Interrupted and rejected calls, compactions, sidechains, a file that grew, a second
import, damaged and unknown lines, and hostile files (huge lines, binary bytes, FIFOs,
symlink loops, unreadable files): each gives stored records the repair understands, a
reported problem, or a typed error, never a traceback or a hang.
"""

from __future__ import annotations

import json
import os
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from helpers import as_class, fails_after, plain, read_tree

from jsonl_store import (
    CompactedMessage,
    JsonlStoreError,
    SessionStore,
    TextPart,
    is_provider_valid,
    repair_context,
)
from jsonl_store.importers import ImportSourceError, _source, import_claude_code, import_codex, import_pi
from jsonl_store.search import search

SID = "11111111-2222-3333-4444-555555555555"
MAIN = f"claude-code-{SID}"
USAGE = {
    "input_tokens": 10,
    "cache_creation_input_tokens": 5,
    "cache_read_input_tokens": 100,
    "output_tokens": 7,
}


def user(uuid: str, content: Any, **extra: Any) -> dict[str, Any]:
    return {"type": "user", "sessionId": SID, "uuid": uuid, "timestamp": "2025-01-01T00:00:00Z",
            "message": {"role": "user", "content": content}, **extra}  # fmt: skip


def assistant(uuid: str, message_id: str, *content: dict[str, Any], **extra: Any) -> dict[str, Any]:
    message = {
        "id": message_id,
        "role": "assistant",
        "model": "claude-x",
        "content": list(content),
        "usage": USAGE,
    }
    return {"type": "assistant", "sessionId": SID, "uuid": uuid, "requestId": f"req-{message_id}",
            "timestamp": "2025-01-01T00:00:01Z", "message": message, **extra}  # fmt: skip


def use(call_id: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": "ls"}}


def result(call_id: str, text: str = "ok", *, error: bool = False) -> list[dict[str, Any]]:
    return [{"type": "tool_result", "tool_use_id": call_id, "content": text, "is_error": error}]


def write(path: Path, lines: list[dict[str, Any]], *, mode: str = "w") -> Path:
    with path.open(mode, encoding="utf-8") as out:
        out.writelines(json.dumps(line) + "\n" for line in lines)
    return path


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    return SessionStore(tmp_path / "store", durability="none")


def contents(store: SessionStore, session_id: str) -> list[Any]:
    return [r.message for r in store.records(session_id)]


def test_one_message_written_as_several_lines_is_one_record_with_its_usage_once(
    tmp_path: Path, store: SessionStore
) -> None:
    """Two lines of one message.id (two tool_use blocks, usage repeated) are one record counted once."""
    path = write(tmp_path / f"{SID}.jsonl", [
        user("u1", "list both"),
        assistant("a1", "m1", use("c1")),
        assistant("a2", "m1", use("c2")),
        user("u2", result("c1")),
        user("u3", result("c2")),
    ])  # fmt: skip
    import_claude_code(store, path)
    records = list(store.records(MAIN))
    assert [len(r.message["content"]) if isinstance(r.message, dict) and r.message["role"] == "assistant" else 0
            for r in records] == [0, 2, 0, 0]  # fmt: skip
    assert records[1].request_id == "req-m1" and records[1].metadata["model"] == "claude-x"
    assert records[1].created_at == datetime(2025, 1, 1, 0, 0, 1, tzinfo=UTC)  # the source's timestamp
    assert "timestamp" not in records[1].metadata
    totals = store.usage_totals(MAIN)
    assert (totals.input_tokens, totals.output_tokens, totals.cache_read_tokens) == (115, 7, 100)
    assert is_provider_valid(store.load(MAIN).context, dialect="anthropic")


def test_a_message_split_around_parallel_tool_results_counts_its_final_usage_once(
    tmp_path: Path, store: SessionStore
) -> None:
    """Three lines of one message.id, tool results between them, output 42, 42, 335: one call of 335 output tokens."""
    streamed = [assistant(f"a{n}", "m1", use(f"c{n}")) for n in (1, 2, 3)]
    for line, output in zip(streamed, (42, 42, 335), strict=True):
        line["message"]["usage"] = {**USAGE, "output_tokens": output}
    path = write(tmp_path / f"{SID}.jsonl", [
        user("u1", "run three"),
        streamed[0], user("r1", result("c1")),
        streamed[1], user("r2", result("c2")),
        streamed[2], user("r3", result("c3")),
    ])  # fmt: skip
    import_claude_code(store, path)
    calls = store.model_calls(MAIN)
    assert [(c["output_tokens"], c["input_tokens"]) for c in calls] == [(335, 115)]
    holding = [r for r in store.records(MAIN) if r.usage is not None]
    assert [r.metadata.get("uuid") for r in holding] == ["a3"]  # the record of the line that reported it


def test_a_message_an_import_read_half_of_counts_its_final_usage_once(
    tmp_path: Path, store: SessionStore
) -> None:
    """Imported while Claude Code wrote it (42 output tokens so far), then whole (335): one call of 335, logged once."""
    streamed = [assistant(f"a{n}", "m1", use(f"c{n}")) for n in (1, 2)]
    for line, output in zip(streamed, (42, 335), strict=True):
        line["message"]["usage"] = {**USAGE, "output_tokens": output}
    path = write(tmp_path / f"{SID}.jsonl", [user("u1", "run two"), streamed[0], user("r1", result("c1"))])
    import_claude_code(store, path)
    assert [c["output_tokens"] for c in store.model_calls(MAIN)] == [42]
    write(path, [streamed[1], user("r2", result("c2"))], mode="a")
    import_claude_code(store, path)
    calls = store.model_calls(MAIN)
    assert [(c["output_tokens"], c["request_id"], c["source"]) for c in calls] == [
        (335, "req-m1", "usage log")
    ]
    assert store.usage_totals(MAIN).input_tokens == 115
    import_claude_code(store, path)
    assert len(list(store.usage(MAIN))) == 1


def test_an_interrupted_batch_mid_history_is_repaired_like_any_other(
    tmp_path: Path, store: SessionStore
) -> None:
    """A call whose result never came, then the user's interruption: dropped by default, closed with mid_history="close"."""
    path = write(tmp_path / f"{SID}.jsonl", [
        user("u1", "run both"),
        assistant("a1", "m1", use("c1"), use("c2")),
        user("u2", result("c1")),
        user("u3", [{"type": "text", "text": "[Request interrupted by user for tool use]"}]),
        assistant("a2", "m2", {"type": "text", "text": "Stopped."}),
    ])  # fmt: skip
    import_claude_code(store, path)
    context = store.load(MAIN).context
    assert not is_provider_valid(context, dialect="anthropic")
    dropped = repair_context(context, dialect="anthropic")
    assert is_provider_valid(dropped, dialect="anthropic")
    assert [m["role"] for m in dropped] == ["user", "user", "assistant"]  # the batch went, the words stayed
    closed = repair_context(context, dialect="anthropic", mid_history="close")
    assert is_provider_valid(closed, dialect="anthropic")
    notices = [b for m in closed if isinstance(m["content"], list) for b in m["content"] if b.get("is_error")]
    assert [b["tool_use_id"] for b in notices] == ["c2"]


def test_a_rejected_call_is_an_error_result(tmp_path: Path, store: SessionStore) -> None:
    """The user's rejection is the tool_result with is_error Claude Code wrote, paired with its call."""
    path = write(tmp_path / f"{SID}.jsonl", [
        user("u1", "delete it"),
        assistant("a1", "m1", use("c1")),
        user("u2", result("c1", "The user doesn't want to proceed with this tool use.", error=True)),
    ])  # fmt: skip
    import_claude_code(store, path)
    last = contents(store, MAIN)[-1]
    assert last["content"][0]["is_error"] is True and last["content"][0]["tool_use_id"] == "c1"
    assert is_provider_valid(store.load(MAIN).context, dialect="anthropic")


def test_a_compaction_is_a_snapshot_whose_summary_starts_the_context(
    tmp_path: Path, store: SessionStore
) -> None:
    """compact_boundary plus its isCompactSummary message: the context is the summary, then what followed."""
    boundary = {
        "type": "system",
        "subtype": "compact_boundary",
        "sessionId": SID,
        "uuid": "b1",
        "content": "compacted",
    }
    path = write(tmp_path / f"{SID}.jsonl", [
        user("u1", "first question"),
        assistant("a1", "m1", {"type": "text", "text": "first answer"}),
        boundary,
        user("u2", "The user asked a first question.", isCompactSummary=True),
        user("u3", "second question"),
    ])  # fmt: skip
    report = import_claude_code(store, path)
    assert report.files[0].snapshots == 1
    view = store.load(MAIN)
    first = as_class(view.messages[0])
    assert isinstance(first, CompactedMessage) and first.content == "The user asked a first question."
    assert [m["content"] for m in view.messages[1:] if isinstance(m, dict)] == ["second question"]


def test_parent_links_that_loop_hide_nothing_and_end(tmp_path: Path, store: SessionStore) -> None:
    """Lines whose parentUuid links form a loop (or name the line itself) are read once: no hang, nothing hidden."""
    path = write(tmp_path / f"{SID}.jsonl", [
        user("u1", "one", parentUuid="u3"),
        assistant("a1", "m1", {"type": "text", "text": "two"}, parentUuid="u1"),
        user("u3", "three", parentUuid="a1"),
        user("u4", "four", parentUuid="u4"),
        user("u5", "five", parentUuid="u1"),
    ])  # fmt: skip
    with fails_after(20, "importing looping parent links"):
        report = import_claude_code(store, path)
    assert report.ok and report.added == 5
    assert not [r for r in store.records(MAIN) if r.metadata.get("branch")]
    assert len(store.load(MAIN).context) == 5


def test_a_summary_line_after_messages_is_kept_outside_the_context(
    tmp_path: Path, store: SessionStore
) -> None:
    """A summary line in mid-conversation (a title of it so far) is a hidden record with its leafUuid; it compacts nothing."""
    path = write(tmp_path / f"{SID}.jsonl", [
        user("u1", "list the files"),
        assistant("a1", "m1", {"type": "text", "text": "a b"}),
        {"type": "summary", "summary": "Listing files", "leafUuid": "a1"},
        user("u2", "thanks"),
    ])  # fmt: skip
    report = import_claude_code(store, path)
    assert report.files[0].snapshots == 0 and report.skipped == 0
    [kept] = [r for r in store.records(MAIN) if plain(r.message)["content"] == "Listing files"]
    assert plain(kept.message)["include_in_messages"] is False and kept.metadata["leafUuid"] == "a1"
    assert kept.created_at == datetime(2025, 1, 1, 0, 0, 1, tzinfo=UTC)  # the line before it: it has no time
    context = [plain(m)["content"] for m in store.load(MAIN).context]
    assert context == ["list the files", [{"type": "text", "text": "a b"}], "thanks"]
    assert store.get_session(MAIN).title == "Listing files"  # type: ignore[union-attr]


def test_a_compaction_whose_snapshot_a_crash_prevented_is_made_by_the_next_import(tmp_path: Path) -> None:
    """The marker record is written, snapshot() fails; importing again makes the snapshot, once."""

    class Failing(SessionStore):
        def snapshot(self, *args: Any, **kwargs: Any) -> Any:
            raise JsonlStoreError("simulated crash before the snapshot")

    path = write(tmp_path / f"{SID}.jsonl", [
        user("u1", "q"),
        {"type": "system", "subtype": "compact_boundary", "sessionId": SID, "uuid": "b1"},
        user("u2", "Summary.", isCompactSummary=True),
    ])  # fmt: skip
    failed = import_claude_code(Failing(tmp_path / "store", durability="none"), path)
    assert failed.files[0].problem is not None
    store = SessionStore(tmp_path / "store", durability="none")
    assert store.load(MAIN).snapshot is None
    again = import_claude_code(store, path)
    assert again.ok and again.files[0].snapshots == 1
    snapshot = store.load(MAIN).snapshot
    assert snapshot is not None and snapshot.version == 1
    assert import_claude_code(store, path).files[0].snapshots == 0


def test_a_sidechain_that_goes_on_in_the_grown_file_stays_in_its_child(
    tmp_path: Path, store: SessionStore
) -> None:
    """Sidechain lines appended after the first import continue the same child session."""
    path = write(tmp_path / f"{SID}.jsonl", [
        user("u1", "delegate"),
        assistant("a1", "m1", use("task")),
        user("s1", "sub-agent prompt", isSidechain=True, parentUuid=None),
    ])  # fmt: skip
    first = import_claude_code(store, path)
    child = f"{MAIN}-sidechain-s1"
    assert first.files[0].children == (child,)
    write(path, [assistant("s2", "m2", {"type": "text", "text": "sub-agent answer"}, isSidechain=True, parentUuid="s1"),
                 user("u2", result("task", "done"), parentUuid="a1")], mode="a")  # fmt: skip
    second = import_claude_code(store, path)
    assert second.added == 2
    assert [m["role"] for m in contents(store, child)] == ["user", "assistant"]
    assert [m["role"] for m in contents(store, MAIN)] == ["user", "assistant", "user"]
    summary = store.get_session(child)
    assert summary is not None and summary.parent_session_id == MAIN


def test_a_grown_file_adds_only_its_new_lines(tmp_path: Path, store: SessionStore) -> None:
    """Import, append two lines to the source, import: two records added, the first ones untouched."""
    lines = [user("u1", "one"), assistant("a1", "m1", {"type": "text", "text": "two"})]
    path = write(tmp_path / f"{SID}.jsonl", lines)
    assert import_claude_code(store, path).added == 2
    before = (Path(store.root) / MAIN / "messages.jsonl").read_bytes()
    write(path, [user("u2", "three"), assistant("a2", "m2", {"type": "text", "text": "four"})], mode="a")
    report = import_claude_code(store, path)
    assert report.added == 2 and report.present == 0
    assert (Path(store.root) / MAIN / "messages.jsonl").read_bytes().startswith(before)
    assert [m["content"] if isinstance(m["content"], str) else m["content"][0]["text"] for m in contents(store, MAIN)] == [
        "one", "two", "three", "four"]  # fmt: skip


def test_another_file_naming_the_same_session_is_refused_whole(tmp_path: Path, store: SessionStore) -> None:
    """A second file with the same session id is not imported: read on from the first file's offsets, it would lose its start."""
    first = write(tmp_path / "a.jsonl", [user("a1", "from A, one"), user("a2", "from A, two")])
    second = write(
        tmp_path / "b.jsonl", [user("b1", "from B, one"), user("b2", "from B, two"), user("b3", "three")]
    )
    assert import_claude_code(store, first).added == 2
    before = read_tree(store.root)
    report = import_claude_code(store, second)
    assert not report.ok and report.added == 0
    problem = report.files[0].problem
    assert problem is not None and "'a.jsonl'" in problem and "first line differs" in problem
    assert read_tree(store.root) == before
    # The first file, grown, still imports: its first line is what it was.
    write(first, [user("a3", "from A, three")], mode="a")
    assert import_claude_code(store, first).added == 1
    assert [m["content"] for m in contents(store, MAIN)] == ["from A, one", "from A, two", "from A, three"]


def test_importing_twice_writes_nothing(tmp_path: Path, store: SessionStore) -> None:
    """The second import of an unchanged file leaves every byte of the store as it was."""
    path = write(tmp_path / f"{SID}.jsonl", [user("u1", "one"), assistant("a1", "m1", use("c1"))])
    import_claude_code(store, path)
    before = read_tree(store.root)
    report = import_claude_code(store, path)
    assert report.added == 0 and report.ok and read_tree(store.root) == before


def test_a_damaged_line_is_reported_with_file_and_line(tmp_path: Path, store: SessionStore) -> None:
    """Bad JSON and binary bytes in the middle are damaged lines (file, line number); the lines around them import."""
    path = tmp_path / f"{SID}.jsonl"
    path.write_bytes(
        (json.dumps(user("u1", "one")) + "\n").encode()
        + b'{"type": "user", "message": {\n'
        + b"\xff\xfe\x00binary\n"
        + (json.dumps(user("u2", "two")) + "\n").encode()
    )
    report = import_claude_code(store, path)
    assert [(d.path, d.line) for d in report.damaged] == [(str(path), 2), (str(path), 3)]
    assert report.damaged_count == 2 and not report.ok
    assert [m["content"] for m in contents(store, MAIN)] == ["one", "two"]


def test_an_unknown_line_type_is_skipped_and_counted(tmp_path: Path, store: SessionStore) -> None:
    """A line type the importer does not know is counted under its type and changes nothing else."""
    path = write(tmp_path / f"{SID}.jsonl", [
        user("u1", "one"),
        {"type": "hologram", "sessionId": SID},
        {"type": "hologram", "sessionId": SID},
        {"no type": True},
    ])  # fmt: skip
    report = import_claude_code(store, path)
    assert dict(report.files[0].skipped_types) == {"hologram": 2, "None": 1}
    assert report.skipped == 3 and report.ok and report.added == 1


def test_a_last_line_still_being_written_waits_for_the_next_import(
    tmp_path: Path, store: SessionStore
) -> None:
    """A last line without its newline that is no JSON yet is neither stored nor damaged; once whole it imports."""
    whole = json.dumps(user("u2", "two")) + "\n"
    path = tmp_path / f"{SID}.jsonl"
    path.write_text(json.dumps(user("u1", "one")) + "\n" + whole[:20], encoding="utf-8")
    report = import_claude_code(store, path)
    assert report.added == 1 and report.ok
    path.write_text(json.dumps(user("u1", "one")) + "\n" + whole, encoding="utf-8")
    assert import_claude_code(store, path).added == 1
    assert [m["content"] for m in contents(store, MAIN)] == ["one", "two"]


def test_a_session_written_to_after_its_import_is_left_alone(tmp_path: Path, store: SessionStore) -> None:
    """When the session's last record is no imported one, the import reports it and appends nothing."""
    path = write(tmp_path / f"{SID}.jsonl", [user("u1", "one")])
    import_claude_code(store, path)
    store.append(MAIN, {"role": "user", "content": "typed in jsonl_store"})
    write(path, [user("u2", "two")], mode="a")
    report = import_claude_code(store, path)
    assert report.files[0].problem is not None and "written to after its import" in report.files[0].problem
    assert [m["content"] for m in contents(store, MAIN)] == ["one", "typed in jsonl_store"]


def test_a_line_longer_than_the_limit_is_damaged_not_read(
    tmp_path: Path, store: SessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A line over MAX_LINE is reported as damaged and skipped in chunks; the next line imports."""
    monkeypatch.setattr(_source, "MAX_LINE", 4096)
    monkeypatch.setattr(_source, "_CHUNK", 1024)
    path = tmp_path / f"{SID}.jsonl"
    path.write_text(
        json.dumps(user("u1", "one"))
        + "\n"
        + json.dumps(user("u2", "x" * 20_000))
        + "\n"
        + json.dumps(user("u3", "three"))
        + "\n",
        encoding="utf-8",
    )
    report = import_claude_code(store, path)
    assert [(d.line, "longer than 4096" in d.reason) for d in report.damaged] == [(2, True)]
    assert [m["content"] for m in contents(store, MAIN)] == ["one", "three"]


def test_a_binary_file_is_a_reported_problem(tmp_path: Path, store: SessionStore) -> None:
    """Random bytes are no transcript: the file is reported, nothing is stored, nothing raises."""
    path = tmp_path / "noise.jsonl"
    path.write_bytes(bytes(range(256)) * 64)
    report = import_codex(store, path)
    assert report.files[0].problem is not None and "not a Codex rollout" in report.files[0].problem
    assert store.list_sessions() == []


def test_a_fifo_is_refused_without_blocking(tmp_path: Path, store: SessionStore) -> None:
    """A FIFO named as a transcript is "not a regular file" at once; opening it does not wait for a writer."""
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    with fails_after(20, "importing a FIFO"):
        report = import_pi(store, fifo)
    assert report.files[0].problem is not None and "not a regular file" in report.files[0].problem


def test_a_symlink_loop_in_a_folder_is_not_followed(tmp_path: Path, store: SessionStore) -> None:
    """A folder holding a symlink to itself and a symlinked file: the walk ends and reports the symlinked file."""
    folder = tmp_path / "sessions"
    folder.mkdir()
    (folder / "loop").symlink_to(folder)
    real = write(tmp_path / "elsewhere.jsonl", [{"type": "session", "version": 3, "id": "p1"}])
    (folder / "link.jsonl").symlink_to(real)
    write(folder / "own.jsonl", [{"type": "session", "version": 3, "id": "p2"}])
    with fails_after(20, "walking a symlink loop"):
        report = import_pi(store, folder)
    problems = {Path(f.path).name: f.problem for f in report.files if f.problem}
    assert list(problems) == ["link.jsonl"] and "symlink" in str(problems["link.jsonl"])


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_file_is_a_reported_problem(tmp_path: Path, store: SessionStore) -> None:
    """A file the user may not read is reported with the system's reason; the other files import."""
    secret = write(tmp_path / "a.jsonl", [{"type": "session", "version": 3, "id": "p1"}])
    secret.chmod(0)
    try:
        write(tmp_path / "b.jsonl", [{"type": "session", "version": 3, "id": "p2"}, {"type": "message",
              "message": {"role": "user", "content": "hi"}}])  # fmt: skip
        report = import_pi(store, tmp_path)
    finally:
        secret.chmod(stat.S_IRUSR | stat.S_IWUSR)
    assert [f.problem is not None and "ermission" in f.problem for f in report.files] == [True, False]
    assert report.added == 1


def test_a_missing_path_is_a_typed_error(tmp_path: Path, store: SessionStore) -> None:
    """A path that does not exist raises ImportSourceError, a JsonlStoreError and a FileNotFoundError."""
    with pytest.raises(ImportSourceError) as caught:
        import_claude_code(store, tmp_path / "nothing-here")
    assert isinstance(caught.value, FileNotFoundError) and isinstance(caught.value, JsonlStoreError)
    assert caught.value.path == str(tmp_path / "nothing-here")


def test_no_path_means_the_tools_default_folder(
    tmp_path: Path, store: SessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With paths=None each importer reads its tool's folder, found through the tool's own variable."""
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "pi"))
    with pytest.raises(ImportSourceError):
        import_pi(store)
    (tmp_path / "pi" / "sessions" / "--home--").mkdir(parents=True)
    write(
        tmp_path / "pi" / "sessions" / "--home--" / "s.jsonl", [{"type": "session", "version": 3, "id": "p9"}]
    )
    assert [f.session_id for f in import_pi(store).files] == ["pi-p9"]
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    (tmp_path / "home" / ".claude" / "projects" / "p").mkdir(parents=True)
    write(tmp_path / "home" / ".claude" / "projects" / "p" / f"{SID}.jsonl", [user("u1", "hi")])
    assert [f.session_id for f in import_claude_code(store).files] == [MAIN]


def test_a_source_id_that_is_no_session_id_is_encoded(tmp_path: Path, store: SessionStore) -> None:
    """A source id with characters a session id cannot hold goes through encode_session_id; one too long is a problem."""
    path = write(tmp_path / "a.jsonl", [{"type": "session", "version": 3, "id": "my session/1"}])
    assert import_pi(store, path).files[0].session_id == "pi-my.20session.2f1"
    long = write(tmp_path / "b.jsonl", [{"type": "session", "version": 3, "id": "x" * 200}])
    report = import_pi(store, long)
    assert report.files[0].problem is not None and report.files[0].session_id is None


def codex_line(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": "2025-01-01T00:00:00Z", "type": kind, "payload": payload}


def _codex_counts(tokens: int) -> dict[str, int]:
    return {"input_tokens": tokens, "cached_input_tokens": tokens // 2, "output_tokens": tokens // 10,
            "reasoning_output_tokens": 0, "total_tokens": tokens + tokens // 10}  # fmt: skip


def token_count(total: int | None, last: int | None = None) -> dict[str, Any]:
    """A ``token_count`` event: the cumulative ``total`` and this call's ``last`` (each left out when None)."""
    info = {}
    if total is not None:
        info["total_token_usage"] = _codex_counts(total)
    if last is not None:
        info["last_token_usage"] = _codex_counts(last)
    return codex_line("event_msg", {"type": "token_count", "info": info})


def test_codex_cumulative_token_counts_count_each_call_once(tmp_path: Path, store: SessionStore) -> None:
    """A total repeated counts nothing; each new total is one call of its last_token_usage, with the turn's model."""
    path = write(tmp_path / "rollout.jsonl", [
        codex_line("session_meta", {"id": "t1"}),
        codex_line("turn_context", {"model": "gpt-x"}),
        token_count(1000, 1000), token_count(1000, 1000), token_count(2500, 1500), token_count(2500, 1500),
    ])  # fmt: skip
    import_codex(store, path)
    calls = store.model_calls("codex-t1")
    assert [c["input_tokens"] for c in calls] == [1000, 1500]
    assert store.usage_totals("codex-t1").input_tokens == 2500
    counted = [r for r in store.records("codex-t1") if r.message.get("codex_event") == "token_count"]  # type: ignore[union-attr]
    assert [r.metadata["model"] for r in counted] == ["gpt-x", "gpt-x"]


def test_codex_per_call_counts_win_and_totals_only_fill_a_gap(tmp_path: Path, store: SessionStore) -> None:
    """A resumed rollout's total that jumps counts as its last_token_usage; an event without one counts the total's increase."""
    path = write(tmp_path / "rollout.jsonl", [
        codex_line("session_meta", {"id": "t3"}),
        token_count(1000, 1000),
        token_count(1000, 1000),  # written twice: one call
        token_count(132_000, 3000),  # resumed: the total carries 128,000 tokens of earlier calls
        token_count(140_000),  # no last_token_usage: the total's increase is this call
        token_count(None, 500),  # no total: the call's own counts
    ])  # fmt: skip
    import_codex(store, path)
    assert [c["input_tokens"] for c in store.model_calls("codex-t3")] == [1000, 3000, 8000, 500]
    assert store.usage_totals("codex-t3").output_tokens == 100 + 300 + 800 + 50


def test_a_forked_rollout_does_not_count_the_parents_calls_it_opens_with(
    tmp_path: Path, store: SessionStore
) -> None:
    """A fork's rollout copies its parent's history in one burst: those messages are its context, their token counts are not its calls."""

    def at(seconds: float, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        moment = datetime(2026, 3, 1, 9, 0, tzinfo=UTC) + timedelta(seconds=seconds)
        return {**codex_line(kind, payload), "timestamp": moment.isoformat().replace("+00:00", "Z")}

    def said(role: str, text: str) -> dict[str, Any]:
        kind = "input_text" if role == "user" else "output_text"
        return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}

    copied = [token_count(1000, 1000), token_count(2500, 1500)]
    path = write(tmp_path / "rollout.jsonl", [
        at(0, "session_meta", {"id": "f1", "forked_from_id": "p1"}),
        at(0.01, "response_item", said("user", "first question")),
        at(0.02, "event_msg", copied[0]["payload"]),
        at(0.03, "response_item", said("assistant", "first answer")),
        at(0.04, "event_msg", copied[1]["payload"]),
        at(6, "response_item", said("user", "the fork's own question")),
        at(9, "event_msg", token_count(4000, 1500)["payload"]),
    ])  # fmt: skip
    report = import_codex(store, path)
    assert report.files[0].skipped_types["event_msg:token_count:copied"] == 2
    assert [c["input_tokens"] for c in store.model_calls("codex-f1")] == [1500]
    texts = [
        plain(m)["content"][0]["text"]
        for m in store.load("codex-f1").context
        if plain(m).get("type") == "message"
    ]
    assert texts == ["first question", "first answer", "the fork's own question"]


def _compacted_rollout(path: Path) -> Path:
    said = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix the bug"}]}
    summary = {"type": "compaction", "encrypted_content": "gAAAA-summary"}
    return write(path, [
        codex_line("session_meta", {"id": "t4"}),
        codex_line("response_item", said),
        codex_line("response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "looking"}]}),
        codex_line("compacted", {"message": "", "replacement_history": [said, summary]}),
        codex_line("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go on"}]}),
    ])  # fmt: skip


def test_a_codex_compaction_is_followed_by_the_history_it_says_it_became(
    tmp_path: Path, store: SessionStore
) -> None:
    """A compacted line's replacement_history is the context after its snapshot, then what followed."""
    report = import_codex(store, _compacted_rollout(tmp_path / "rollout.jsonl"))
    assert report.ok and report.files[0].snapshots == 1
    view = store.load("codex-t4")
    assert isinstance(as_class(view.context[0]), CompactedMessage)
    assert [(plain(m)["type"], plain(m)["role"]) for m in view.context[1:]] == [
        ("message", "user"),
        ("compaction", "assistant"),
        ("message", "user"),
    ]
    assert plain(view.context[1])["content"][0]["text"] == "fix the bug"
    assert import_codex(store, tmp_path / "rollout.jsonl").added == 0


def test_a_crash_before_a_compactions_history_is_stored_is_finished_by_the_next_import(
    tmp_path: Path,
) -> None:
    """The marker and snapshot are written, the replacement batch fails: the next import stores it, once."""

    class Failing(SessionStore):
        def append_many(self, *args: Any, **kwargs: Any) -> Any:
            raise JsonlStoreError("simulated crash before the batch")

    path = _compacted_rollout(tmp_path / "rollout.jsonl")
    assert import_codex(Failing(tmp_path / "store", durability="none"), path).files[0].problem is not None
    store = SessionStore(tmp_path / "store", durability="none")
    assert len(store.load("codex-t4").context) == 1  # the summary alone
    again = import_codex(store, path)
    assert again.ok and again.files[0].snapshots == 0 and again.added == 3
    assert len(store.load("codex-t4").context) == 4
    assert import_codex(store, path).added == 0


def test_codex_turn_aborted_leaves_the_open_batch_the_repair_closes(
    tmp_path: Path, store: SessionStore
) -> None:
    """A function_call without output, then turn_aborted: the call is the open batch; repair closes it."""
    path = write(tmp_path / "rollout.jsonl", [
        codex_line("session_meta", {"id": "t2"}),
        codex_line("response_item", {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "rules"}]}),
        codex_line("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}),
        codex_line("response_item", {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c1"}),
        codex_line("event_msg", {"type": "turn_aborted", "reason": "interrupted"}),
    ])  # fmt: skip
    import_codex(store, path)
    records = [m for m in contents(store, "codex-t2") if "codex_type" not in m]  # the header's record aside
    assert records[0]["role"] == "system" and records[0]["codex_role"] == "developer"
    assert records[-1]["include_in_messages"] is False and "interrupted" in records[-1]["content"]
    view = store.resume("codex-t2", dialect="openai-responses")
    assert is_provider_valid(view.context, dialect="openai-responses")
    closing = plain(view.context[-1])
    assert (
        closing["type"] == "function_call_output" and closing["call_id"] == "c1" and closing["role"] == "tool"
    )


def test_pi_tool_calls_and_results_are_neutral_messages(tmp_path: Path, store: SessionStore) -> None:
    """pi's toolCall blocks and toolResult messages pair as tool_calls and role "tool" messages; compaction is a snapshot."""
    path = write(tmp_path / "s.jsonl", [
        {"type": "session", "version": 3, "id": "p3"},
        {"type": "message", "id": "e1", "message": {"role": "user", "content": [{"type": "text", "text": "ls"}]}},
        {"type": "message", "id": "e2", "message": {"role": "assistant", "model": "m", "content": [
            {"type": "text", "text": "Listing."}, {"type": "toolCall", "id": "t1", "name": "bash", "arguments": {"c": "ls"}}],
            "usage": {"input": 5, "output": 2, "cacheRead": 10, "cacheWrite": 0}}},
        {"type": "message", "id": "e3", "message": {"role": "toolResult", "toolCallId": "t1", "toolName": "bash",
                                                    "content": [{"type": "text", "text": "a b"}], "isError": True}},
        {"type": "compaction", "id": "e4", "summary": "Listed files.", "firstKeptEntryId": "e3"},
        {"type": "message", "id": "e5", "message": {"role": "user", "content": "next"}},
    ])  # fmt: skip
    report = import_pi(store, path)
    assert report.ok and report.files[0].snapshots == 1
    records = contents(store, "pi-p3")
    assert records[1]["tool_calls"] == [{"id": "t1", "name": "bash", "arguments": {"c": "ls"}}]
    assert records[2] == {
        "role": "tool",
        "tool_call_id": "t1",
        "name": "bash",
        "content": "a b",
        "is_error": True,
    }
    assert is_provider_valid(records[:3])
    assert store.usage_totals("pi-p3").input_tokens == 15
    view = store.load("pi-p3")
    assert as_class(view.messages[0]).content == "Listed files."


def test_responses_notices_get_a_role_when_their_calls_have_one() -> None:
    """close_interrupted answers a call item stored with a role by an output item with role "tool" (so it can be stored)."""
    from jsonl_store import close_interrupted

    stored = [
        {"role": "assistant", "type": "function_call", "call_id": "c1", "name": "shell", "arguments": "{}"}
    ]
    plain = [{"type": "function_call", "call_id": "c1", "name": "shell", "arguments": "{}"}]
    assert close_interrupted(stored, dialect="openai-responses")[-1]["role"] == "tool"
    assert "role" not in close_interrupted(plain, dialect="openai-responses")[-1]


def test_another_writer_meanwhile_stops_that_file_with_a_problem(tmp_path: Path) -> None:
    """When a record lands between two of the import's conditional appends, the file stops with a problem."""

    class Racing(SessionStore):
        raced = False

        def append(self, session_id: str, message: Any, **options: Any) -> int:
            if options.get("expected_last_sequence") == 1 and not self.raced:
                self.raced = True
                super().append(session_id, {"role": "user", "content": "another writer"})
            return super().append(session_id, message, **options)

    path = write(tmp_path / f"{SID}.jsonl", [user("u1", "one"), user("u2", "two"), user("u3", "three")])
    store = Racing(tmp_path / "store", durability="none")
    report = import_claude_code(store, path)
    assert report.files[0].problem is not None and "another writer" in report.files[0].problem
    assert [m["content"] for m in contents(store, MAIN)] == ["one", "another writer"]


def test_a_store_that_cannot_be_written_raises_its_storage_error(tmp_path: Path) -> None:
    """A store root that is a file is the store's error (UnsafePath, a StorageError), raised, not one problem per file."""
    from jsonl_store import StorageError

    (tmp_path / "store").write_text("not a folder")
    path = write(tmp_path / f"{SID}.jsonl", [user("u1", "one")])
    with pytest.raises(StorageError):
        import_claude_code(SessionStore(tmp_path / "store", durability="none"), path)


def test_records_stored_before_a_crash_are_not_stored_again(tmp_path: Path) -> None:
    """A crash after the records but before the import's position is saved: the next import adds nothing twice."""

    class Crashing(SessionStore):
        def update_session(self, session_id: str, **options: Any) -> Any:
            if "metadata" in options:
                raise KeyboardInterrupt  # the process dies before the position is saved
            return super().update_session(session_id, **options)

    path = write(
        tmp_path / f"{SID}.jsonl",
        [user("u1", "one"), assistant("a1", "m1", use("c1")), user("u2", result("c1"))],
    )
    with pytest.raises(KeyboardInterrupt):
        import_claude_code(Crashing(tmp_path / "store", durability="none"), path)
    store = SessionStore(tmp_path / "store", durability="none")
    assert len(contents(store, MAIN)) == 3
    write(path, [user("u3", "four")], mode="a")
    report = import_claude_code(store, path)
    assert (report.added, report.present) == (1, 3)
    assert [m["role"] for m in contents(store, MAIN)] == ["user", "assistant", "user", "user"]


def test_a_timestamp_that_does_not_parse_stays_in_the_metadata(tmp_path: Path, store: SessionStore) -> None:
    """An unreadable source timestamp leaves the record's time as the import's and keeps the text."""
    path = write(tmp_path / f"{SID}.jsonl", [{**user("u1", "one"), "timestamp": "[trimmed]"}])
    import_claude_code(store, path)
    [record] = store.records(MAIN)
    assert record.metadata["timestamp"] == "[trimmed]" and record.created_at.year >= 2026


def test_a_symlink_loop_named_as_the_path_is_a_reported_problem(tmp_path: Path, store: SessionStore) -> None:
    """A path that is a symlink to itself cannot be opened: the file's problem says why, nothing raises."""
    loop = tmp_path / "loop.jsonl"
    loop.symlink_to(loop)
    with fails_after(20, "opening a symlink loop"):
        report = import_codex(store, loop)
    assert report.files[0].problem is not None and "symbolic links" in report.files[0].problem


def test_lines_nested_too_deeply_are_damaged_not_a_recursion_error(
    tmp_path: Path, store: SessionStore
) -> None:
    """A line nested past what JSON parsing allows, and one past what the store keeps, are damaged lines."""
    path = tmp_path / f"{SID}.jsonl"
    # A message, so that either refusal makes it damaged: orjson 3.10 and later refuse to
    # parse it (depth limit), orjson 3.9 (the declared floor) parses it and the store refuses it.
    too_deep_to_parse = json.dumps(user("u9", [])).replace("[]", "[" * 5000 + "]" * 5000)
    stored_too_deep = json.dumps(user("u2", [])).replace("[]", "[" * 1000 + "]" * 1000)
    path.write_text(
        "\n".join([json.dumps(user("u1", "one")), too_deep_to_parse, stored_too_deep, ""]), encoding="utf-8"
    )
    report = import_claude_code(store, path)
    assert [d.line for d in report.damaged] == [2, 3]
    assert "cannot be stored" in report.damaged[1].reason
    assert [m["content"] for m in contents(store, MAIN)] == ["one"]


def test_lines_written_twice_store_each_message_once(tmp_path: Path, store: SessionStore) -> None:
    """A transcript whose lines repeat (same uuid, as a resume or concatenation writes them) stores each message once."""
    once = [
        user("u1", "list both"),
        assistant("a1", "m1", {"type": "text", "text": "listing"}),
        assistant("a2", "m1", use("c1")),
        user("u2", result("c1")),
    ]
    path = write(tmp_path / f"{SID}.jsonl", once + once + [user("u3", "thanks")])
    report = import_claude_code(store, path)
    assert report.added == 4 and report.files[0].skipped_types == {"duplicate": 4}
    stored = [plain(r.message) for r in store.records(MAIN)]
    assert [m["role"] for m in stored] == ["user", "assistant", "user", "user"]
    assert stored[1]["content"] == [{"type": "text", "text": "listing"}, use("c1")]
    assert is_provider_valid(store.load(MAIN).context, dialect="anthropic")


def test_lines_repeated_after_an_import_are_not_stored_again(tmp_path: Path, store: SessionStore) -> None:
    """Lines appended after an import that repeat earlier ones (even one part of a split message) are skipped; new ones import."""
    first = [
        user("u1", "go"),
        assistant("a1", "m1", {"type": "text", "text": "on it"}),
        assistant("a2", "m1", use("c1")),
        user("u2", result("c1")),
    ]
    path = write(tmp_path / f"{SID}.jsonl", first)
    assert import_claude_code(store, path).added == 3
    write(path, [first[2], first[3], user("u3", "more"), first[1]], mode="a")
    report = import_claude_code(store, path)
    assert report.added == 1 and report.files[0].skipped_types == {"duplicate": 3}
    assert [plain(r.message)["content"] for r in store.records(MAIN)][-1] == "more"
    calls = [b["id"] for r in store.records(MAIN) for b in plain(r.message)["content"]
             if isinstance(b, dict) and b.get("type") == "tool_use"]  # fmt: skip
    assert calls == ["c1"]


def test_parts_of_one_split_message_are_kept_not_taken_for_duplicates(
    tmp_path: Path, store: SessionStore
) -> None:
    """Lines sharing message.id with different uuids and blocks are one message's parts: every block is stored."""
    path = write(tmp_path / f"{SID}.jsonl", [
        user("u1", "three calls"),
        assistant("a1", "m1", use("c1")),
        assistant("a2", "m1", use("c2")),
        assistant("a3", "m1", use("c3")),
    ])  # fmt: skip
    report = import_claude_code(store, path)
    assert report.added == 2 and report.skipped == 0
    last = plain(list(store.records(MAIN))[-1].message)
    assert [b["id"] for b in last["content"]] == ["c1", "c2", "c3"]


def test_a_transcript_opening_with_many_file_snapshots_is_still_claude_code(
    tmp_path: Path, store: SessionStore
) -> None:
    """70 file-history-snapshot lines (no sessionId among them) before the first message still identify a Claude Code file."""
    snapshot = {"type": "file-history-snapshot", "messageId": "m", "snapshot": {"trackedFileBackups": {}}}
    path = write(tmp_path / f"{SID}.jsonl", [snapshot] * 70 + [user("u1", "hello")])
    report = import_claude_code(store, path)
    assert report.ok and report.files[0].session_id == MAIN and report.added == 1


def test_an_earlier_compactions_summary_stays_readable_and_searchable(
    tmp_path: Path, store: SessionStore
) -> None:
    """Two compactions: the first's summary, no longer the context's start, is still in the raw log, shown and found."""
    lines = [user("u1", "first question")]
    for n, summary in enumerate(["The first summary.", "The second summary."], start=1):
        boundary = {
            "type": "system",
            "subtype": "compact_boundary",
            "sessionId": SID,
            "uuid": f"b{n}",
            "content": "compacted",
        }
        lines += [boundary, user(f"s{n}", summary, isCompactSummary=True), user(f"q{n}", f"question {n}")]
    import_claude_code(store, write(tmp_path / f"{SID}.jsonl", lines))
    view = store.load(MAIN)
    assert view.snapshot is not None and view.snapshot.compacted_message.content == "The second summary."
    texts = [
        part.text
        for record in store.records(MAIN)
        for part in view.parts(record)
        if isinstance(part, TextPart)
    ]
    assert any("The first summary." in text for text in texts)
    assert [hit.sequence for hit in search(store, "The first summary.")]


def test_codex_headers_and_turn_settings_are_kept_whole_and_a_repeat_is_counted(
    tmp_path: Path, store: SessionStore
) -> None:
    """Every field of session_meta and of each changed turn_context is in a hidden record; an unchanged one is counted."""
    meta = {
        "id": "t7",
        "cwd": "/w",
        "base_instructions": {"text": "be terse"},
        "git": {"commit_hash": "abc123"},
    }
    turn = {"model": "gpt-x", "approval_policy": "never", "user_instructions": "use tabs"}
    path = write(tmp_path / "rollout.jsonl", [
        codex_line("session_meta", meta), codex_line("turn_context", turn), codex_line("turn_context", turn),
        codex_line("turn_context", {**turn, "model": "gpt-y"}),
    ])  # fmt: skip
    report = import_codex(store, path)
    kept = [m for m in contents(store, "codex-t7") if "codex_type" in m]
    assert [(m["codex_type"], m["codex_payload"]) for m in kept] == [
        ("session_meta", meta),
        ("turn_context", turn),
        ("turn_context", {**turn, "model": "gpt-y"}),
    ]
    assert all(m["include_in_messages"] is False for m in kept)
    assert (
        report.files[0].skipped_types == {"turn_context:same": 1}
        and report.files[0].reasons["turn_context:same"]
    )
    assert [hit.sequence for hit in search(store, "be terse")] == [1]
