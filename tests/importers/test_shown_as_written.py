"""Readers show imported content as what it is, never its JSON (tests/importers/data, plus small hand-written cases).

`show`, `tail`, the HTML and the Markdown export read every message through the message
model (`jsonl_store.message_parts`); what they must show is taken from the source file
with plain ``json``: the tool names of Claude Code's ``tool_reference`` blocks, a Codex
web or tool search's query, a ``developer`` message's role, an imported line's kind.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from jsonl_store import CompactedMessage, OtherPart, SessionStore, TextPart, message_parts, repair_context
from jsonl_store.cli import main
from jsonl_store.export import to_html, to_markdown
from jsonl_store.importers import import_claude_code, import_codex
from jsonl_store.search import search, search_ranked

DATA = Path(__file__).parent / "data"
CC_214 = DATA / "claude-code" / "cc-2.1.114-main-with-subagents.jsonl"
CODEX_SYNTHETIC = DATA / "codex" / "SYNTHETIC-codex-schema-drift-composite.jsonl"
CODEX_EXEC = DATA / "codex" / "codex-0.135.0-exec-redacted-minimal.jsonl"
CC_SESSION = "claude-code-ef958aa1-0e93-49f0-bb71-150f63befcd1"


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _tool_references(path: Path) -> list[str]:
    """The tool_name of every tool_reference block inside a tool_result of the file."""
    names = []
    for d in _lines(path):
        content = d.get("message", {}).get("content") if isinstance(d.get("message"), dict) else None
        for block in content if isinstance(content, list) else ():
            inner = block.get("content") if block.get("type") == "tool_result" else None
            names += [
                b["tool_name"]
                for b in inner or ()
                if isinstance(b, dict) and b.get("type") == "tool_reference"
            ]
    return names


def _show(root: str | Path, capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(["--root", str(root), *argv]) == 0
    return capsys.readouterr().out


@pytest.fixture
def cc_store(tmp_path: Path) -> SessionStore:
    store = SessionStore(tmp_path / "s", durability="none")
    import_claude_code(store, CC_214)
    return store


def test_tool_references_show_as_the_tools_they_name_in_every_reader(
    cc_store: SessionStore, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ToolSearch result's tool_reference blocks read as their tool names in show, tail, HTML and Markdown, never as JSON."""
    names = _tool_references(CC_214)
    assert len(names) >= 5
    monkeypatch.setenv("COLUMNS", "100")
    root = cc_store.root
    shown = _show(root, capsys, "show", CC_SESSION, "--no-pager")
    tail = _show(root, capsys, "tail", CC_SESSION, "-n", "200")
    html, markdown = to_html(cc_store, CC_SESSION), to_markdown(cc_store, CC_SESSION)
    for name in names:
        assert f"[tool reference] {name}" in shown and f"[tool reference] {name}" in tail
        assert f"<b>tool reference</b>: {name} " in html
        assert f"<summary>tool reference: {name} (as stored)</summary>" in markdown
    for text in (shown, tail, html, markdown):
        assert '"type":"tool_reference"' not in text.replace(" ", "").split("asstored")[0] or text is html
    assert "[tool_reference]" not in shown and "other: tool_reference" not in html + markdown


def test_tool_references_are_stored_as_written_and_found_by_both_searches(cc_store: SessionStore) -> None:
    """The blocks stay in the record as the file has them; search and the catalog's ranked search find their tool names."""
    stored = [
        block
        for record in cc_store.records(CC_SESSION)
        if isinstance(record.message, dict) and isinstance(record.message.get("content"), list)
        for result in record.message["content"]
        if isinstance(result, dict)
        and result.get("type") == "tool_result"
        and isinstance(result.get("content"), list)
        for block in result["content"]
        if block.get("type") == "tool_reference"
    ]
    assert [b["tool_name"] for b in stored] == _tool_references(CC_214)
    assert all(set(b) == {"type", "tool_name"} for b in stored)
    hits = [h for h in search(cc_store, "TaskCreate") if h.kind == "tool_result"]
    assert hits and all(h.session_id == CC_SESSION for h in hits)
    ranked = search_ranked(cc_store, "TaskUpdate", limit=50)
    assert any(h.kind == "tool_result" and h.session_id == CC_SESSION for h in ranked)


def test_codex_web_and_tool_searches_show_their_query(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """web_search_call and tool_search_call items read as their query (and a tool search's result as the tools found), kept as written."""
    store = SessionStore(tmp_path / "s", durability="none")
    [file] = import_codex(store, CODEX_SYNTHETIC).files
    assert file.session_id is not None
    wanted = {
        p["type"]: p
        for d in _lines(CODEX_SYNTHETIC)
        if isinstance(p := d.get("payload"), dict) and d.get("type") == "response_item"
        and p.get("type") in ("web_search_call", "tool_search_call", "tool_search_output")
        and p.get("id") != "[trimmed for fixture]"
    }  # fmt: skip
    stored = {
        r.message["type"]: r.message
        for r in store.records(file.session_id)
        if isinstance(r.message, dict) and r.message.get("type") in wanted
        and r.message.get("id") != "[trimmed for fixture]"
    }  # fmt: skip
    assert all(
        {k: v for k, v in stored[kind].items() if k != "role"} == item for kind, item in wanted.items()
    )
    query = wanted["web_search_call"]["action"]["query"]
    parts = message_parts(stored["web_search_call"], "openai-responses")
    assert [p.description for p in parts if isinstance(p, OtherPart)] == [("web search", query)]
    shown = _show(store.root, capsys, "show", file.session_id, "--no-pager")
    assert f"[web search] {query}" in shown
    assert f"[tool search] {wanted['tool_search_call']['arguments']['query']}" in shown
    assert "[tool search result] example_group, example_tool" in shown
    html = to_html(store, file.session_id)
    assert f"<b>web search</b>: {query} " in html
    assert f"web search: {query} (as stored)" in to_markdown(store, file.session_id)


def test_a_codex_developer_message_shows_as_developer_and_is_sent_as_stored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """show, tail, HTML and Markdown name a developer message developer; model_context() still hands the stored message."""
    store = SessionStore(tmp_path / "s", durability="none")
    [file] = import_codex(store, CODEX_EXEC).files
    sid = file.session_id
    assert sid is not None
    developer = [
        r
        for r in store.records(sid)
        if isinstance(r.message, dict) and r.message.get("codex_role") == "developer"
    ]
    assert (
        len(developer)
        == sum(
            1
            for d in _lines(CODEX_EXEC)
            if d.get("type") == "response_item" and d["payload"].get("role") == "developer"
        )
        == 1
    )
    sequence = developer[0].sequence
    for text in (
        _show(store.root, capsys, "show", sid, "--no-pager"),
        _show(store.root, capsys, "tail", sid),
    ):
        assert any(line.strip().startswith(f"#{sequence} developer") for line in text.splitlines())
    assert f'<span class="role">developer</span>#{sequence}' in to_html(store, sid)
    assert f"#{sequence} developer" in to_markdown(store, sid)
    assert developer[0].message in store.load(sid).model_context()


def test_a_codex_developer_messages_search_hits_name_it_developer(tmp_path: Path) -> None:
    """search and search_ranked give a developer message's hits the role show prints, and its role filter finds them."""
    store = SessionStore(tmp_path / "s", durability="none")
    [file] = import_codex(store, CODEX_EXEC).files
    sid = file.session_id
    assert sid is not None
    [developer] = [
        r
        for r in store.records(sid)
        if isinstance(r.message, dict) and r.message.get("codex_role") == "developer"
    ]
    [part] = [p for p in message_parts(developer.message) if isinstance(p, TextPart)][:1]
    word = max(part.text.split(), key=len)
    hits = [h for h in search(store, word) if h.sequence == developer.sequence]
    ranked = [h for h in search_ranked(store, word, limit=50) if h.sequence == developer.sequence]
    assert hits and ranked
    assert {h.role for h in hits} == {h.role for h in ranked} == {"developer"}
    assert [h.sequence for h in search(store, word, role="developer")].count(developer.sequence) == len(hits)


def test_codex_errors_and_thread_names_are_kept_and_the_newest_name_is_the_title(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An error event and a thread_name_updated are hidden records as written; the newest name titles the session, never over a rename."""

    def line(kind: str, payload: dict[str, Any]) -> str:
        return json.dumps({"timestamp": "2025-01-01T00:00:00Z", "type": kind, "payload": payload}) + "\n"

    path = tmp_path / "rollout.jsonl"
    path.write_text(
        line("session_meta", {"id": "t9"})
        + line(
            "response_item",
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
        )
        + line(
            "event_msg",
            {
                "type": "error",
                "message": "stream disconnected before completion",
                "codex_error_info": "other",
            },
        )
        + line("event_msg", {"type": "thread_name_updated", "thread_id": "t9", "thread_name": "First name"}),
        encoding="utf-8",
    )
    store = SessionStore(tmp_path / "s", durability="none")
    assert import_codex(store, path).skipped == 0
    kept = [m for r in store.records("codex-t9") if "codex_event" in (m := r.message)]  # type: ignore[operator]
    assert [(m["codex_event"], m["content"], m["include_in_messages"]) for m in kept] == [  # type: ignore[index]
        ("error", "stream disconnected before completion", False),
        ("thread_name_updated", "First name", False),
    ]
    assert kept[0]["codex_payload"]["codex_error_info"] == "other"  # type: ignore[index]
    assert store.get_session("codex-t9").title == "First name"  # type: ignore[union-attr]
    with path.open("a", encoding="utf-8") as more:
        more.write(
            line(
                "event_msg", {"type": "thread_name_updated", "thread_id": "t9", "thread_name": "Second name"}
            )
        )
    import_codex(store, path)
    assert store.get_session("codex-t9").title == "Second name"  # type: ignore[union-attr]
    assert "Second name" in _show(store.root, capsys, "ls")
    store.update_session("codex-t9", title="Mine")
    with path.open("a", encoding="utf-8") as more:
        more.write(
            line("event_msg", {"type": "thread_name_updated", "thread_id": "t9", "thread_name": "Third name"})
        )
    import_codex(store, path)
    assert store.get_session("codex-t9").title == "Mine"  # type: ignore[union-attr]
    assert [hit.sequence for hit in search(store, "stream disconnected")] == [3]  # after the header's record


def test_html_labels_an_imported_hidden_records_kind_as_show_does(
    cc_store: SessionStore, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each attachment, system line and summary names its claude_code_type in the HTML and Markdown, as in show's header."""
    kinds = {
        r.sequence: r.message["claude_code_type"]
        for r in cc_store.records(CC_SESSION)
        if isinstance(r.message, dict) and isinstance(r.message.get("claude_code_type"), str)
    }
    assert {"attachment:hook_success", "system:turn_duration"} <= set(kinds.values())
    html, markdown = to_html(cc_store, CC_SESSION), to_markdown(cc_store, CC_SESSION)
    shown = _show(cc_store.root, capsys, "show", CC_SESSION, "--no-pager")
    for sequence, kind in kinds.items():
        assert f"#{sequence} {kind}" in html and f"#{sequence} system {kind}" in markdown
        assert any(line.strip().startswith(f"#{sequence} system {kind}") for line in shown.splitlines())


@pytest.mark.parametrize("columns", [60, 100])
def test_shows_header_leaves_out_defaults_and_fits_the_metadata_to_the_terminal(
    cc_store: SessionStore, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, columns: int
) -> None:
    """No ``type: 0`` or empty title, agent and parent lines; the metadata wraps at COLUMNS, none of it lost up to its cut."""
    monkeypatch.setenv("COLUMNS", str(columns))
    out = _show(cc_store.root, capsys, "show", CC_SESSION, "--no-pager")
    header = out.split("\n\n")[0].splitlines()
    assert [line.split(":")[0] for line in header if not line.startswith(" ")] == [
        "session", "records", "created", "updated", "snapshot", "metadata"
    ]  # fmt: skip
    start = next(i for i, line in enumerate(header) if line.startswith("metadata:"))
    metadata = header[start:]
    assert all(len(line) <= columns for line in metadata)
    joined = "".join(line[len("metadata: ") :] for line in metadata)
    assert joined.startswith('{"cwd":"-experiments')
    # A wrapped line's break takes a space.
    assert joined.replace(" ", "").endswith("morecharacters;--fullor--jsonshowsall)")
    full = (
        _show(cc_store.root, capsys, "show", CC_SESSION, "--no-pager", "--full").split("\n\n")[0].splitlines()
    )
    start = next(i for i, line in enumerate(full) if line.startswith("metadata:"))
    summary = cc_store.get_session(CC_SESSION)
    assert summary is not None
    assert json.loads("".join(line[len("metadata: ") :] for line in full[start:])) == summary.metadata


def test_an_imported_compactions_model_context_goes_to_the_provider_as_it_is(tmp_path: Path) -> None:
    """model_context() of a compacted Claude Code or Codex session is all dialect dicts, the summary a user message."""
    store = SessionStore(tmp_path / "s", durability="none")
    cc = import_claude_code(
        store, DATA / "claude-code" / "SYNTHETIC-cc-schema-drift-composite-with-compaction.jsonl"
    )
    codex = import_codex(store, CODEX_SYNTHETIC)
    for report, dialect in ((cc, "anthropic"), (codex, "openai-responses")):
        session_id = report.files[0].session_id
        assert session_id is not None
        view = store.load(session_id)
        assert view.snapshot is not None and isinstance(view.messages[0], CompactedMessage)
        summary = view.snapshot.compacted_message
        assert isinstance(summary, CompactedMessage)
        context = view.model_context()
        assert all(isinstance(message, dict) for message in context)
        assert message_parts(context[0], dialect) == [TextPart(summary.content)]
        assert context[0]["role"] == "user"  # type: ignore[index]
        assert (
            context[1:] == view.model_context()[1:]
            and context[1:] == repair_context(view.context, dialect=dialect)[1:]
        )
        assert orjson.loads(orjson.dumps(context)) == context  # JSON as it is: nothing to convert
    neutral = SessionStore(tmp_path / "n", durability="none")
    neutral.append("s", {"role": "user", "content": "hi"})
    neutral.snapshot("s", CompactedMessage(content="earlier"), 1, 0)
    neutral.append("s", {"role": "user", "content": "again"})
    assert isinstance(
        neutral.load("s").model_context()[0], CompactedMessage
    )  # the neutral shape is the class


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"type": "tool_reference", "tool_name": "TaskCreate"}, ("tool reference", "TaskCreate")),
        ({"type": "web_search_call", "action": {"type": "search", "query": "q", "queries": ["q", "r"]}}, ("web search", "q, r")),
        ({"type": "web_search_call", "action": {"type": "open_page", "url": "https://e.invalid"}}, ("web search: open_page", "https://e.invalid")),
        ({"type": "web_search_call", "action": {"type": "search", "sources": ["x"]}}, None),
        ({"type": "tool_search_call", "arguments": {"query": "pdf", "limit": 3}}, ("tool search", "pdf")),
        ({"type": "tool_search_call", "arguments": {}}, None),
        ({"type": "tool_search_output", "tools": [{"name": "g", "tools": [{"name": "a"}, {"name": "b"}]}]}, ("tool search result", "g, a, b")),
        ({"type": "image_generation_call", "revised_prompt": "a red fox"}, ("image generation", "a red fox")),
        ({"type": "agent_message", "author": "lead", "recipient": "bob", "content": [{"type": "input_text", "text": "hi"}]}, ("agent message lead → bob", "hi")),
        ({"type": "document", "source": {}}, None),
        ("plain", None),
    ],
)  # fmt: skip
def test_an_other_parts_description_is_what_its_value_says(
    raw: Any, expected: tuple[str, str] | None
) -> None:
    """OtherPart.description gives a known value's label and text, taken from the value alone; None for any other."""
    assert OtherPart(raw).description == expected
