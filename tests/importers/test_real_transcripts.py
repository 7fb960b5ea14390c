"""The importers on real transcripts (tests/importers/data, MIT, see its README): what they store matches the source.

Every expected figure here is computed by the test from the source file with a few lines
of plain ``json`` parsing, not by the importer's code: tool calls and results paired by
id, token usage counted once per model call, sub-agent links and compactions.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from helpers import as_class, plain, read_tree

from jsonl_store import CompactedMessage, SessionStore, is_provider_valid, repair_context
from jsonl_store.importers import import_claude_code, import_codex, import_pi

DATA = Path(__file__).parent / "data"
CC = DATA / "claude-code"
CODEX = DATA / "codex"
PI = DATA / "pi"
#: The sub-agent files (their own sessions, children of another file's): tested with their layout.
AGENT_FILES = {"cc-2.0.55-agent-c8d9b115.jsonl", "cc-2.1.114-subagent-a36efb2a1231c41e2.jsonl"}
CC_FILES = sorted(p.name for p in CC.glob("*.jsonl") if p.name not in AGENT_FILES)


def source(path: Path) -> Iterator[dict[str, Any]]:
    """The JSON objects of a transcript file, in order."""
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            yield json.loads(line)


def blocks(content: Any, kind: str) -> list[dict[str, Any]]:
    return (
        [b for b in content if isinstance(b, dict) and b.get("type") == kind]
        if isinstance(content, list)
        else []
    )


def stored_blocks(store: SessionStore, session_id: str, kind: str) -> list[dict[str, Any]]:
    found = []
    for record in store.records(session_id):
        message = record.message
        assert isinstance(message, dict)
        found.extend(blocks(message.get("content"), kind))
    return found


def claude_usage(lines: list[dict[str, Any]]) -> int:
    """Input plus output tokens, each assistant message counted once (its last line's usage)."""
    last: dict[str, dict[str, int]] = {}
    for d in lines:
        message = d.get("message")
        if (
            d.get("type") == "assistant"
            and isinstance(message, dict)
            and isinstance(message.get("usage"), dict)
        ):
            last[message.get("id") or d.get("requestId") or d["uuid"]] = message["usage"]
    keys = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    return sum(u.get(k, 0) for u in last.values() for k in keys)


@pytest.mark.parametrize("name", CC_FILES)
def test_claude_code_calls_and_results_pair_by_id_as_in_the_source(tmp_path: Path, name: str) -> None:
    """Every tool_use and tool_result block of a Claude Code file is stored once, in its session or a sidechain's."""
    store = SessionStore(tmp_path / "s", durability="none")
    report = import_claude_code(store, CC / name)
    assert report.ok and len(report.files) == 1
    lines = list(source(CC / name))
    sessions = [report.files[0].session_id, *report.files[0].children]
    for kind, key in (("tool_use", "id"), ("tool_result", "tool_use_id")):
        expected = sorted(
            str(b.get(key)) for d in lines for b in blocks((d.get("message") or {}).get("content"), kind)
        )
        got = sorted(str(b.get(key)) for sid in sessions for b in stored_blocks(store, str(sid), kind))
        assert got == expected


@pytest.mark.parametrize("name", CC_FILES)
def test_claude_code_usage_counts_each_message_once(tmp_path: Path, name: str) -> None:
    """usage_totals over a file's sessions equals the source's usage summed once per message id."""
    store = SessionStore(tmp_path / "s", durability="none")
    report = import_claude_code(store, CC / name)
    sessions = [report.files[0].session_id, *report.files[0].children]
    total = sum(store.usage_totals(str(sid)).total_tokens for sid in sessions)
    assert total == claude_usage(list(source(CC / name)))
    assert total > 0 or "SYNTHETIC" in name


def test_inline_sidechains_become_one_child_session_per_chain(tmp_path: Path) -> None:
    """Each chain of isSidechain lines (starting at a line without parentUuid) is a child of the session."""
    name = "cc-1.0.108-inline-sidechain-task.jsonl"
    lines = list(source(CC / name))
    roots = [d["uuid"] for d in lines if d.get("isSidechain") and d.get("parentUuid") is None]
    store = SessionStore(tmp_path / "s", durability="none")
    report = import_claude_code(store, CC / name)
    main = report.files[0].session_id
    assert main == f"claude-code-{lines[0]['sessionId']}"
    assert sorted(report.files[0].children) == sorted(f"{main}-sidechain-{uuid}" for uuid in roots)
    assert {s.session_id for s in store.list_sessions(parent_session_id=main)} == set(
        report.files[0].children
    )
    # No sidechain message reached the main session: its users and distinct assistant ids are the main lines'.
    main_lines = [d for d in lines if not d.get("isSidechain")]
    expected = len({d["message"]["id"] for d in main_lines if d["type"] == "assistant"})
    expected += sum(1 for d in main_lines if d["type"] == "user")
    assert store.get_session(main).message_count == expected  # type: ignore[union-attr]


def _claude_layout(tmp_path: Path) -> Path:
    """The two sub-agent layouts as Claude Code writes them, from the data files."""
    projects = tmp_path / "projects"
    old = projects / "-src-deep-manifest"
    old.mkdir(parents=True)
    shutil.copy(CC / "cc-2.0.55-main-with-agent.jsonl", old / "a7da6a22-facc-4fcd-8bab-f83c87862004.jsonl")
    shutil.copy(CC / "cc-2.0.55-agent-c8d9b115.jsonl", old / "agent-c8d9b115.jsonl")
    new = projects / "-experiments-worktrees"
    agents = new / "ef958aa1-0e93-49f0-bb71-150f63befcd1" / "subagents"
    agents.mkdir(parents=True)
    shutil.copy(
        CC / "cc-2.1.114-main-with-subagents.jsonl", new / "ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl"
    )
    shutil.copy(CC / "cc-2.1.114-subagent-a36efb2a1231c41e2.jsonl", agents / "agent-a36efb2a1231c41e2.jsonl")
    shutil.copy(
        CC / "cc-2.1.114-subagent-a36efb2a1231c41e2.meta.json", agents / "agent-a36efb2a1231c41e2.meta.json"
    )
    return projects


def test_sub_agent_files_become_child_sessions_of_their_session_id(tmp_path: Path) -> None:
    """agent-<id>.jsonl and <session>/subagents/agent-<id>.jsonl are children of the sessionId their lines name."""
    projects = _claude_layout(tmp_path)
    store = SessionStore(tmp_path / "s", durability="none")
    report = import_claude_code(store, projects)
    assert report.ok and len(report.files) == 4
    meta = json.loads((CC / "cc-2.1.114-subagent-a36efb2a1231c41e2.meta.json").read_text())
    for agent_file, agent_id in (("cc-2.0.55-agent-c8d9b115.jsonl", "c8d9b115"),
                                 ("cc-2.1.114-subagent-a36efb2a1231c41e2.jsonl", "a36efb2a1231c41e2")):  # fmt: skip
        first = next(source(CC / agent_file))
        assert first["agentId"] == agent_id
        parent = f"claude-code-{first['sessionId']}"
        child = store.get_session(f"{parent}-agent-{agent_id}")
        assert child is not None and child.parent_session_id == parent
        assert store.get_session(parent) is not None
    child = store.get_session("claude-code-ef958aa1-0e93-49f0-bb71-150f63befcd1-agent-a36efb2a1231c41e2")
    assert child is not None and child.title == meta["description"] and child.agent_name == meta["agentType"]


def _head_summaries(lines: list[dict[str, Any]]) -> list[str]:
    """The ``summary`` lines before the file's first message of its own session (not a sidechain's)."""
    found = []
    for d in lines:
        if d.get("type") in ("user", "assistant") and not d.get("isSidechain"):
            break
        if d.get("type") == "summary":
            found.append(d["summary"])
    return found


def test_compact_boundaries_become_snapshots(tmp_path: Path) -> None:
    """Each compact_boundary of the synthetic file is one snapshot, in file order; its summary line is none."""
    path = CC / "SYNTHETIC-cc-schema-drift-composite-with-compaction.jsonl"
    lines = list(source(path))
    boundaries = [
        i for i, d in enumerate(lines) if d.get("type") == "system" and d.get("subtype") == "compact_boundary"
    ]
    summary = next(d["message"]["content"] for d in lines[boundaries[0] :] if d.get("isCompactSummary"))
    head = _head_summaries(lines)
    assert len(head) == 1
    store = SessionStore(tmp_path / "s", durability="none")
    report = import_claude_code(store, path)
    main = str(report.files[0].session_id)
    view = store.load(main)
    expected = len(boundaries)
    assert view.snapshot is not None and view.snapshot.version == expected == report.files[0].snapshots
    snapshots = sorted((Path(store.root) / main).glob("snapshot-*.json"))
    assert len(snapshots) == expected
    assert summary in snapshots[0].read_text(encoding="utf-8")
    assert all(head[0] not in path.read_text(encoding="utf-8") for path in snapshots)


@pytest.mark.parametrize("name", CC_FILES)
def test_summary_lines_are_hidden_records_never_in_the_context(tmp_path: Path, name: str) -> None:
    """Each summary line (a title Claude Code gave a conversation) is a hidden record holding its text as written."""
    lines = list(source(CC / name))
    written = [d for d in lines if d.get("type") == "summary" and isinstance(d.get("summary"), str)]
    store = SessionStore(tmp_path / "s", durability="none")
    main = str(import_claude_code(store, CC / name).files[0].session_id)
    kept = [r for r in store.records(main) if plain(r.message).get("claude_code_type") == "summary"]
    assert [plain(r.message)["content"] for r in kept] == [d["summary"] for d in written]
    assert all(plain(r.message)["include_in_messages"] is False for r in kept)
    assert [r.metadata.get("leafUuid") for r in kept] == [d.get("leafUuid") for d in written]
    context = store.load(main).model_context()
    titles = {d["summary"] for d in written}
    contents = [m.get("content") if isinstance(m, dict) else getattr(m, "content", None) for m in context]
    assert not any(isinstance(text, str) and text in titles for text in contents)


@pytest.mark.parametrize("name", CC_FILES)
def test_attachment_lines_are_hidden_records_holding_the_attachment_as_written(
    tmp_path: Path, name: str
) -> None:
    """Every attachment line of a session's own (a queued prompt, a hook's output, a reminder) is kept, never in the context."""
    written = [
        d["attachment"]
        for d in source(CC / name)
        if d.get("type") == "attachment"
        and isinstance(d.get("attachment"), dict)
        and not d.get("isSidechain")
    ]
    store = SessionStore(tmp_path / "s", durability="none")
    main = str(import_claude_code(store, CC / name).files[0].session_id)
    kept = [plain(r.message) for r in store.records(main) if "attachment" in plain(r.message)]
    assert [message["attachment"] for message in kept] == written
    assert all(message["include_in_messages"] is False for message in kept)
    queued = [a["prompt"] for a in written if a.get("type") == "queued_command"]
    assert [m["content"] for m in kept if m["claude_code_type"] == "attachment:queued_command"] == queued
    hooks = [
        a for a in written if a.get("type") == "hook_success" and not a.get("content") and a.get("stdout")
    ]
    assert [m["content"] for m in kept if m["attachment"] in hooks] == [a["stdout"] for a in hooks]


def test_rejected_calls_stay_error_results(tmp_path: Path) -> None:
    """A call the user rejected is stored as the is_error tool_result Claude Code wrote."""
    name = "cc-1.0.17-interrupted-tool-use.jsonl"
    expected = [b["tool_use_id"] for d in source(CC / name)
                for b in blocks((d.get("message") or {}).get("content"), "tool_result") if b.get("is_error")]  # fmt: skip
    store = SessionStore(tmp_path / "s", durability="none")
    sid = str(import_claude_code(store, CC / name).files[0].session_id)
    assert (
        expected
        and [b["tool_use_id"] for b in stored_blocks(store, sid, "tool_result") if b.get("is_error")]
        == expected
    )
    assert is_provider_valid(store.load(sid).context, dialect="anthropic")


def test_a_dangling_call_is_the_open_batch_resume_closes(tmp_path: Path) -> None:
    """The last Bash call without a result is left open; resume(dialect="anthropic") answers it with an error result."""
    name = "cc-1.0.17-dangling-tool-use.jsonl"
    lines = list(source(CC / name))
    used = [b["id"] for d in lines for b in blocks((d.get("message") or {}).get("content"), "tool_use")]
    answered = {
        b["tool_use_id"]
        for d in lines
        for b in blocks((d.get("message") or {}).get("content"), "tool_result")
    }
    open_calls = [c for c in used if c not in answered]
    assert len(open_calls) == 1
    store = SessionStore(tmp_path / "s", durability="none")
    sid = str(import_claude_code(store, CC / name).files[0].session_id)
    assert store.get_session(sid).metadata["dialect"] == "anthropic"  # type: ignore[union-attr]
    view = store.load(sid)
    assert not is_provider_valid(view.context, dialect="anthropic")
    assert is_provider_valid(repair_context(view.context, dialect="anthropic"), dialect="anthropic")
    resumed = store.resume(sid, dialect="anthropic")
    assert is_provider_valid(resumed.context, dialect="anthropic")
    closing = resumed.context[-1]
    assert isinstance(closing, dict)
    assert [(b["tool_use_id"], b["is_error"]) for b in blocks(closing["content"], "tool_result")] == [
        (open_calls[0], True)
    ]


def test_codex_usage_is_the_last_cumulative_total(tmp_path: Path) -> None:
    """Codex's repeated cumulative token_count events sum to the file's last total_token_usage."""
    name = "codex-0.58.0-rollout-shell-calls-truncated.jsonl"
    totals = [d["payload"]["info"]["total_token_usage"] for d in source(CODEX / name)
              if d["type"] == "event_msg" and d["payload"]["type"] == "token_count" and d["payload"]["info"]]  # fmt: skip
    store = SessionStore(tmp_path / "s", durability="none")
    sid = str(import_codex(store, CODEX / name).files[0].session_id)
    usage = store.usage_totals(sid)
    last = totals[-1]
    assert usage.input_tokens == last["input_tokens"] and usage.output_tokens == last["output_tokens"]
    assert usage.cache_read_tokens == last["cached_input_tokens"]
    assert usage.reasoning_tokens == last["reasoning_output_tokens"]
    distinct = len({json.dumps(t, sort_keys=True) for t in totals})
    assert len(store.model_calls(sid)) == distinct


def test_codex_function_calls_pair_with_their_outputs(tmp_path: Path) -> None:
    """The 39 shell calls of the 0.58 rollout are stored with their outputs, valid in the openai-responses dialect."""
    name = "codex-0.58.0-rollout-shell-calls-truncated.jsonl"
    items = [d["payload"] for d in source(CODEX / name) if d["type"] == "response_item"]
    calls = [i["call_id"] for i in items if i["type"] == "function_call"]
    outputs = [i["call_id"] for i in items if i["type"] == "function_call_output"]
    store = SessionStore(tmp_path / "s", durability="none")
    sid = str(import_codex(store, CODEX / name).files[0].session_id)
    stored = [r.message for r in store.records(sid) if isinstance(r.message, dict)]
    assert [m["call_id"] for m in stored if m.get("type") == "function_call"] == calls
    assert [m["call_id"] for m in stored if m.get("type") == "function_call_output"] == outputs
    assert store.get_session(sid).metadata["dialect"] == "openai-responses"  # type: ignore[union-attr]
    assert is_provider_valid(store.load(sid).context, dialect="openai-responses")


def test_a_codex_session_loads_in_its_own_dialect(tmp_path: Path) -> None:
    """load().messages of an imported rollout keeps every output its call got: the view reads openai-responses."""
    name = "codex-0.58.0-rollout-shell-calls-truncated.jsonl"
    store = SessionStore(tmp_path / "s", durability="none")
    sid = str(import_codex(store, CODEX / name).files[0].session_id)
    view = store.load(sid)
    assert view.dialect == "openai-responses"
    in_source = [d["payload"]["call_id"] for d in source(CODEX / name)
                 if d["type"] == "response_item" and d["payload"]["type"] == "function_call_output"]  # fmt: skip
    outputs = [
        m["call_id"] for m in view.context if isinstance(m, dict) and m.get("type") == "function_call_output"
    ]
    assert outputs == in_source and len(outputs) == 39
    assert view.messages == view.context  # nothing is interrupted, so nothing is dropped
    assert is_provider_valid(view.model_context(), dialect="openai-responses")


def test_resume_closes_a_dangling_call_in_the_sessions_dialect(tmp_path: Path) -> None:
    """resume() with no dialect given closes the open Bash call the Anthropic way, as the session's metadata says."""
    name = "cc-1.0.17-dangling-tool-use.jsonl"
    store = SessionStore(tmp_path / "s", durability="none")
    sid = str(import_claude_code(store, CC / name).files[0].session_id)
    view = store.load(sid)
    assert view.dialect == "anthropic"
    assert is_provider_valid(view.model_context(), dialect="anthropic")
    resumed = store.resume(sid)
    assert is_provider_valid(resumed.context, dialect="anthropic")
    closing = resumed.context[-1]
    assert isinstance(closing, dict) and blocks(closing["content"], "tool_result")[0]["is_error"] is True


def test_codex_compacted_lines_become_snapshots(tmp_path: Path) -> None:
    """Each ``compacted`` line of the synthetic rollout is one snapshot, the last one holding the last summary."""
    path = CODEX / "SYNTHETIC-codex-schema-drift-composite.jsonl"
    compacted = [d["payload"]["message"] for d in source(path) if d["type"] == "compacted"]
    store = SessionStore(tmp_path / "s", durability="none")
    report = import_codex(store, path)
    view = store.load(str(report.files[0].session_id))
    assert view.snapshot is not None and view.snapshot.version == len(compacted)
    first = as_class(view.messages[0])
    assert isinstance(first, CompactedMessage) and first.content == (
        compacted[-1] or "Conversation compacted"
    )


def test_pi_session_keeps_title_model_and_usage(tmp_path: Path) -> None:
    """pi's session_info name is the title; each assistant message's usage counts once."""
    path = PI / "pi-v3-redacted-minimal.jsonl"
    lines = list(source(path))
    header = lines[0]
    usage = [
        d["message"]["usage"] for d in lines if d["type"] == "message" and d["message"]["role"] == "assistant"
    ]
    store = SessionStore(tmp_path / "s", durability="none")
    report = import_pi(store, path)
    summary = store.get_session(f"pi-{header['id']}")
    assert summary is not None and report.files[0].session_id == summary.session_id
    assert summary.title == next(d["name"] for d in lines if d["type"] == "session_info")
    total = store.usage_totals(summary.session_id)
    assert total.total_tokens == sum(
        u["input"] + u["cacheRead"] + u["cacheWrite"] + u["output"] for u in usage
    )
    models = [r.metadata.get("model") for r in store.records(summary.session_id) if r.usage is not None]
    assert models == [
        d["message"]["model"] for d in lines if d["type"] == "message" and d["message"]["role"] == "assistant"
    ]


@pytest.mark.parametrize("tool", ["claude-code", "codex", "pi"])
def test_importing_a_folder_twice_changes_no_byte(tmp_path: Path, tool: str) -> None:
    """A second import of the same transcripts writes nothing: every store file keeps its bytes."""
    importer = {"claude-code": import_claude_code, "codex": import_codex, "pi": import_pi}[tool]
    store = SessionStore(tmp_path / "s", durability="none")
    first = importer(store, DATA / tool)
    before = read_tree(tmp_path / "s")
    second = importer(store, DATA / tool)
    assert first.added > 0 and second.added == 0 and second.ok
    assert read_tree(tmp_path / "s") == before


@pytest.mark.parametrize(("importer", "path"), [(import_claude_code, CC / "cc-1.0.17-interrupted-tool-use.jsonl"),
                                                 (import_codex, CODEX / "codex-0.135.0-exec-redacted-minimal.jsonl"),
                                                 (import_pi, PI / "pi-v3-redacted-minimal.jsonl")])  # fmt: skip
def test_records_keep_the_sources_timestamps(tmp_path: Path, importer: Any, path: Path) -> None:
    """Each record's created_at is one of the source's timestamps, and the first is the first message line's."""
    lines = list(source(path))
    stamps = {datetime.fromisoformat(d["timestamp"]) for d in lines if isinstance(d.get("timestamp"), str)}
    store = SessionStore(tmp_path / "s", durability="none")
    sid = str(importer(store, path).files[0].session_id)
    records = list(store.records(sid))
    assert records and all(r.created_at in stamps for r in records)
    assert records[0].created_at == min(r.created_at for r in records)


IMPORTERS = {"claude-code": import_claude_code, "codex": import_codex, "pi": import_pi}
REAL_FILES = [p for p in sorted(DATA.glob("*/*.jsonl"))]


@pytest.mark.parametrize("path", REAL_FILES, ids=lambda p: p.name)
def test_an_imported_session_began_when_its_transcript_did(tmp_path: Path, path: Path) -> None:
    """Each session an import makes has its first record's source time as created_at, its last record's as updated_at."""
    stamps = {moment for d in source(path) if (moment := _time(d.get("timestamp"))) is not None}
    store = SessionStore(tmp_path / "s", durability="none")
    [file] = IMPORTERS[path.parent.name](store, path).files
    for sid in (file.session_id, *file.children):
        summary = store.get_session(str(sid))
        records = list(store.records(str(sid)))
        assert summary is not None and records
        first = next(r.created_at for r in records if r.created_at in stamps)
        assert summary.created_at == first <= summary.updated_at
        assert summary.updated_at == records[-1].created_at  # the last activity is the source's too


def _time(value: object) -> datetime | None:
    try:
        return datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None


@pytest.mark.parametrize(("tool", "path"), [(t, p) for t in IMPORTERS for p in REAL_FILES if p.parent.name != t],
                         ids=lambda v: v if isinstance(v, str) else v.name)  # fmt: skip
def test_every_real_transcript_is_refused_by_the_other_tools_importers(
    tmp_path: Path, tool: str, path: Path
) -> None:
    """Each real transcript given to another tool's importer is a file problem, and the store stays empty."""
    store = SessionStore(tmp_path / "s", durability="none")
    report = IMPORTERS[tool](store, path)
    (file,) = report.files
    assert file.problem is not None and file.problem.startswith("not a"), file.problem
    assert file.session_id is None and not report.ok
    assert store.list_sessions() == [] and not (tmp_path / "s").exists()


def _rewound(tmp_path: Path) -> tuple[Path, Path, list[dict[str, Any]]]:
    """The dangling-call transcript rewound at its prompt "all of texts now sound the same": a
    new prompt and answer written as a second child of that prompt's parent, as Claude Code
    writes an edited prompt. Returns the rewound file, the file up to the rewound prompt,
    and the two new lines."""
    lines = (CC / "cc-1.0.17-dangling-tool-use.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    parsed = [json.loads(line) for line in lines]
    at = next(
        i
        for i, d in enumerate(parsed)
        if d.get("message", {}).get("content") == "all of texts now sound the same"
    )
    edited = {**parsed[at], "uuid": "rewound-prompt", "timestamp": "2025-06-08T12:00:00.000Z",
              "message": {"role": "user", "content": "make it sound like jazz instead"}}  # fmt: skip
    reply = {**parsed[at + 1], "uuid": "rewound-answer", "parentUuid": "rewound-prompt",
             "timestamp": "2025-06-08T12:00:05.000Z", "requestId": "req_rewound",
             "message": {**parsed[at + 1]["message"], "id": "msg_rewound",
                         "content": [{"type": "text", "text": "Switching to jazz."}]}}  # fmt: skip
    new = [edited, reply]
    rewound = tmp_path / "rewound" / "d3ad4cdc-5657-435d-98fa-0035d53e383d.jsonl"
    before = tmp_path / "before" / rewound.name
    rewound.parent.mkdir()
    before.parent.mkdir()
    rewound.write_text("".join(lines) + "".join(json.dumps(d) + "\n" for d in new), encoding="utf-8")
    before.write_text("".join(lines[:at]), encoding="utf-8")
    return rewound, before, new


def test_a_rewound_conversation_has_its_active_branch_as_context(tmp_path: Path) -> None:
    """The chain ending at the last message is the context; the abandoned branch is kept, hidden and marked, not interleaved."""
    rewound, before, new = _rewound(tmp_path)
    store = SessionStore(tmp_path / "s", durability="none")
    sid = str(import_claude_code(store, rewound).files[0].session_id)
    plain_store = SessionStore(tmp_path / "p", durability="none")
    import_claude_code(plain_store, before)
    kept = plain_store.load(sid).context
    view = store.load(sid)
    assert view.context == [
        *kept,
        *({"role": d["type"], "content": d["message"]["content"]} for d in new),
    ]
    assert is_provider_valid(
        view.context, dialect="anthropic"
    )  # the dangling call was on the abandoned branch
    # Nothing of the abandoned branch is lost: every line after the rewound prompt is a hidden, marked record.
    lines = list(source(rewound))
    after = [d for d in lines[len(list(source(before))) : -2] if d.get("type") in ("user", "assistant")]
    left = [r for r in store.records(sid) if r.metadata.get("branch") == "abandoned"]
    assert left and all(plain(r.message)["include_in_messages"] is False for r in left)
    kept_uuids = {u for r in left for u in r.metadata.get("uuids", [r.metadata.get("uuid")])}
    assert kept_uuids == {d["uuid"] for d in after}
    assert store.usage_totals(sid).total_tokens == claude_usage(
        lines
    )  # the abandoned branch's calls were made: they count


@pytest.mark.parametrize("name", sorted(p.name for p in CC.glob("*.jsonl")))
def test_a_transcript_without_a_branch_keeps_every_message_in_its_context(tmp_path: Path, name: str) -> None:
    """Where no line was rewound, the context after the last snapshot is every record stored after it, in order."""
    store = SessionStore(tmp_path / "s", durability="none")
    [file] = import_claude_code(store, CC / name).files
    for sid in (str(file.session_id), *file.children):
        view = store.load(sid)
        through = view.snapshot.compacted_through_sequence if view.snapshot else 0
        records = [r for r in store.records(sid) if r.sequence > through]
        assert not any(r.metadata.get("branch") for r in store.records(sid))
        assert view.context[1 if view.snapshot else 0 :] == [
            r.message for r in records if plain(r.message).get("include_in_messages", True)
        ]
