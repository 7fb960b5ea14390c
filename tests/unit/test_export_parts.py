"""`jsonl_store.export` reads messages through the message model: calls with their results,
edits as diffs, images, facts, on real Claude Code and Codex transcripts and on hand-made ones."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
import struct
import zlib
from pathlib import Path

import pytest

from jsonl_store import AssistantMessage, SessionStore, ToolCall, UserMessage, usage_report
from jsonl_store.export import INLINE_IMAGE_CAP, _markup, export_html, to_html, to_json, to_markdown
from jsonl_store.importers import import_claude_code, import_codex

DATA = Path(__file__).resolve().parent.parent / "importers" / "data"
CODEX = DATA / "codex" / "codex-0.58.0-rollout-shell-calls-truncated.jsonl"
CLAUDE_IMAGE = DATA / "claude-code" / "cc-1.0.128-image-paste.jsonl"


def _only(store: SessionStore) -> str:
    (summary,) = store.list_sessions()
    return summary.session_id


def _png(width: int, height: int, noise: int = 0) -> bytes:
    """A real PNG of ``width`` × ``height`` grey pixels, ``noise`` random-ish bytes making it larger."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    rows = b"".join(b"\x00" + bytes((x * 7 + y * 13) % 256 for x in range(width)) for y in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    extra = (
        chunk(b"tEXt", b"c\x00" + hashlib.sha256(b"x").hexdigest().encode() * (noise // 64 + 1))
        if noise
        else b""
    )
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + extra
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


@pytest.fixture
def codex(tmp_path: Path) -> SessionStore:
    """The real Codex 0.58 rollout: 39 calls, each answered, and token_count events."""
    store = SessionStore(tmp_path / "codex", durability="none")
    import_codex(store, CODEX)
    return store


def test_a_codex_rollout_shows_every_shell_call_with_its_output_under_it(codex: SessionStore) -> None:
    """All 39 calls (37 shell, 2 update_plan) read ``→ name(...)`` with their output (as text) under them, in HTML and Markdown."""
    session = _only(codex)
    page = to_html(codex, session)
    assert page.count('<details class="call') == 39
    assert page.count('<div class="result') == 39
    assert page.count('<span class="badge state">no result</span>') == 0
    # A shell result stored as {"output", "metadata"} JSON reads as its output, metadata beside it.
    assert (
        '<p class="meta">exit_code 0 · duration_seconds 0.0</p>\n<pre class="out">LM Studio configuration.md\nREADME.md\n'
        in page
    )
    markdown = to_markdown(codex, session)
    calls = re.findall(r"^<summary>→ (\w+)\(", markdown, re.MULTILINE)
    assert len(calls) == 39 and set(calls) == {"shell", "update_plan"}
    assert markdown.count("**result (#") == 39


def test_a_codex_token_count_event_is_a_one_line_fact_with_its_tokens(codex: SessionStore) -> None:
    """A stored token_count event (no content, outside the context) is one line with its tokens, never a card."""
    session = _only(codex)
    events = [
        r for r in codex.records(session) if isinstance(r.message, dict) and r.message.get("codex_event")
    ]
    assert events
    page = to_html(codex, session)
    for record in events:
        line = re.search(rf'<p class="fact" id="r{record.sequence}">([^<]*)</p>', page)
        assert line is not None
        assert f"{record.input_tokens:,} in" in line.group(1) and "not in the model context" in line.group(1)
        assert f'<h2 id="r{record.sequence}"' not in page
    markdown = to_markdown(codex, session)
    assert f"### ` #{events[0].sequence} assistant" not in markdown
    assert f"` #{events[0].sequence} assistant · " in markdown


def test_a_codex_apply_patch_in_a_shell_call_is_shown_as_its_patch(codex: SessionStore) -> None:
    """The patch a shell call hands to ``apply_patch`` is shown as a diff, lines marked added and removed."""
    page = to_html(codex, _only(codex))
    diffs = re.findall(r'<pre class="diff">(.*?)</pre>', page, re.DOTALL)
    assert len(diffs) == 2
    assert '<span class="hunk">*** Begin Patch</span>' in diffs[0]
    assert '<span class="add">+  const baseLmstudioUrl' in diffs[0]
    assert '<span class="del">-  // Ollama API' in diffs[0]


def test_a_claude_code_edit_is_shown_as_a_unified_diff(tmp_path: Path) -> None:
    """Claude Code's ``Edit`` (old_string, new_string) becomes a unified diff of the file; its arguments stay."""
    with SessionStore(tmp_path, durability="none") as store:
        import_claude_code(store, CLAUDE_IMAGE)
        page = to_html(store, _only(store))
    (diff,) = re.findall(r'<pre class="diff">(.*?)</pre>', page, re.DOTALL)
    assert "--- /Users/dain/workspace/danieldemmel.me-next/public/tokenizer.css" in diff
    assert '<span class="add">+details:not([open]) {</span>' in diff
    assert "new_string" in page.split("<summary>arguments</summary>", 1)[1]  # the arguments stay, folded


def test_an_image_under_the_cap_is_inline_and_one_over_it_a_placeholder_or_a_file(tmp_path: Path) -> None:
    """A small image is a data: URL; a large one is a placeholder in one page and a file beside the pages in a directory."""
    small, large = _png(8, 8), _png(8, 8, noise=INLINE_IMAGE_CAP + 1000)
    assert len(large) > INLINE_IMAGE_CAP
    with SessionStore(tmp_path / "store", durability="none") as store:
        for session, image in (("small", small), ("large", large)):
            url = f"data:image/png;base64,{base64.b64encode(image).decode()}"
            store.append(session, UserMessage(content=[{"type": "image_url", "image_url": {"url": url}}]))
        assert f'src="data:image/png;base64,{base64.b64encode(small).decode()}"' in to_html(store, "small")
        single = to_html(store, "large")
        assert "<img" not in single and base64.b64encode(large).decode()[:100] not in single
        assert f"image/png, {len(large) / 1024:,.1f} KiB" in single
        export_html(store, tmp_path / "site")
        name = f"images/{hashlib.sha256(large).hexdigest()}.png"
        assert (tmp_path / "site" / name).read_bytes() == large
        assert f'<img src="{name}"' in (tmp_path / "site" / "session-large.html").read_text()
        markdown = to_markdown(store, "large")
        assert f"[image: image/png, {len(large):,} bytes: not inlined]" in markdown


def test_json_export_gives_each_record_its_parts_and_images_without_their_bytes_again(tmp_path: Path) -> None:
    """Each record gains ``parts`` tagged by kind; an image part gives size and SHA-256, the message keeps the bytes."""
    image = _png(4, 4)
    url = f"data:image/png;base64,{base64.b64encode(image).decode()}"
    with SessionStore(tmp_path, durability="none") as store:
        store.append(
            "s",
            UserMessage(
                content=[{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": url}}]
            ),
        )
        store.append(
            "s",
            AssistantMessage(content="ok", tool_calls=[ToolCall(id="c", name="zoom", arguments={"x": 1})]),
        )
        document = json.loads(to_json(store, "s"))
    first, second = document["records"]
    assert first["parts"] == [
        {"kind": "text", "text": "look"},
        {
            "kind": "image",
            "media_type": "image/png",
            "url": None,
            "size": len(image),
            "sha256": hashlib.sha256(image).hexdigest(),
        },
    ]
    assert first["message"]["content"][1]["image_url"]["url"] == url  # the message as stored
    assert second["parts"] == [
        {"kind": "text", "text": "ok"},
        {"kind": "tool_call", "id": "c", "name": "zoom", "arguments": {"x": 1}},
    ]
    assert document["session"]["dialect"] == "neutral"


def test_a_models_markdown_is_rendered_and_a_persons_prompt_is_shown_as_typed(tmp_path: Path) -> None:
    """With the html extra, an answer's Markdown becomes markup with highlighted code; a prompt keeps its characters."""
    if not _markup.available():
        pytest.skip("the html extra (markdown-it-py, nh3) renders Markdown")
    answer = (
        "**Done.** See `app.py`:\n\n```python\ndef f():\n    return 1\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |"
    )
    with SessionStore(tmp_path, durability="none") as store:
        store.append("s", UserMessage(content="make **f** <b>return</b> 1"))
        store.append("s", AssistantMessage(content=answer))
        page = to_html(store, "s")
    assert "<strong>Done.</strong>" in page and "<code>app.py</code>" in page and "<table>" in page
    assert '<span class="k">def</span>' in page  # Pygments' keyword class, coloured by the page's stylesheet
    assert '<div class="typed">make **f** &lt;b&gt;return&lt;/b&gt; 1</div>' in page


def test_without_the_html_extra_text_is_escaped_as_written(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Without markdown-it-py and nh3 the page still renders: a model's text in an escaped ``<pre>`` block."""
    monkeypatch.setattr(_markup, "_renderer", lambda: None)
    with SessionStore(tmp_path, durability="none") as store:
        store.append("s", AssistantMessage(content="**bold** <script>x()</script>"))
        page = to_html(store, "s")
    assert '<pre class="plain">**bold** &lt;script&gt;x()&lt;/script&gt;</pre>' in page
    assert not _markup.available()


def test_export_html_lists_the_sessions_once_whatever_their_number(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Every page's sub-agent links come from one listing, not one `list_sessions` per session."""
    with SessionStore(tmp_path / "store", durability="none") as store:
        for n in range(5):
            store.append(f"s{n}", UserMessage(content="hi"))
        store.append("s0-sub", UserMessage(content="sub"), parent_session_id="s0")
        calls = []
        listing = store.list_sessions

        def counted(*args: object, **kwargs: object) -> object:
            calls.append(kwargs)
            return listing(*args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(store, "list_sessions", counted)
        export_html(store, tmp_path / "site")
    assert len(calls) == 1
    assert 'href="session-s0-sub.html"' in (tmp_path / "site" / "session-s0.html").read_text()


def test_the_command_says_when_pages_show_text_as_written(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Without the html extra, ``jsonl-store export --format html`` notes on stderr how to get rendered Markdown."""
    from jsonl_store.cli import main

    with SessionStore(tmp_path / "store", durability="none") as store:
        store.append("s", AssistantMessage(content="**hi**"))
    monkeypatch.setattr(_markup, "_renderer", lambda: None)
    assert (
        main(
            [
                "--root",
                str(tmp_path / "store"),
                "export",
                "s",
                "--format",
                "html",
                "-o",
                str(tmp_path / "s.html"),
            ]
        )
        == 0
    )
    assert "pip install 'jsonl_store[html]'" in capsys.readouterr().err
    monkeypatch.undo()
    if _markup.available():
        assert main(["--root", str(tmp_path / "store"), "export", "--all", "-o", str(tmp_path / "site")]) == 0
        captured = capsys.readouterr()
        assert "jsonl_store[html]" not in captured.err and "exported 1 session to" in captured.out


def test_a_claude_code_task_call_links_the_sub_agent_session_it_started(tmp_path: Path) -> None:
    """The ``Task`` calls of a real Claude Code session link to the sub-agent sessions their prompts started."""
    with SessionStore(tmp_path, durability="none") as store:
        import_claude_code(store, DATA / "claude-code" / "cc-1.0.108-inline-sidechain-task.jsonl")
        (parent,) = [s for s in store.list_sessions() if s.parent_session_id is None]
        children = {s.session_id for s in store.list_sessions() if s.parent_session_id == parent.session_id}
        page, markdown = to_html(store, parent.session_id), to_markdown(store, parent.session_id)
    linked = set(re.findall(r'<p class="subagent">sub-agent session: <a href="session-([^"]+)\.html">', page))
    assert len(children) == 2 and linked == children
    assert {f"sub-agent session: [` {child} `](session-{child}.md)" in markdown for child in children} == {
        True
    }


def test_a_page_header_gives_the_sessions_cost_from_its_calls(tmp_path: Path) -> None:
    """The HTML and Markdown headers give the session's priced cost, or say why it is not known."""
    store = SessionStore(tmp_path / "s", durability="none")
    store.append("none", UserMessage(content="hi"))
    assert "- cost: no model calls recorded" in to_markdown(store, "none")
    counts = {"input_tokens": 1_000, "output_tokens": 100}
    for session, model in (("priced", "claude-sonnet-4-20250514"), ("unpriced", "no-such-model-xyz")):
        store.append(session, UserMessage(content="hi"))
        store.append(session, AssistantMessage(content="yo"))
        store.record_usage(session, {**counts, "model": model})
    row = usage_report(store, by="session", session_id="priced")[0]
    if row.prices_version is None:  # the cost extra is not installed
        assert "prices need the cost extra" in to_markdown(store, "priced")
        return
    assert row.cost_usd is not None and row.cost_usd > 0
    assert f"- cost: ${row.cost_usd:,.4f} for 1 call (prices: " in to_markdown(store, "priced")
    assert f"${row.cost_usd:,.4f}" in to_html(store, "priced")
    line = next(x for x in to_markdown(store, "unpriced").splitlines() if x.startswith("- cost:"))
    assert "no-such-model-xyz" in line and "$" not in line


def test_a_long_text_outside_the_context_is_folded_with_every_character_kept(tmp_path: Path) -> None:
    """A hidden record's long text is in a closed details (first line in its summary), whole; short ones and context messages are not folded."""
    store = SessionStore(tmp_path, durability="none")
    listing = "\n".join(f"- skill-{i}: does <thing> number {i}" for i in range(40))
    store.append("s", {"role": "system", "content": listing, "include_in_messages": False})
    store.append(
        "s", {"role": "system", "content": "permissionMode: acceptEdits", "include_in_messages": False}
    )
    store.append("s", UserMessage(content=listing))
    page = to_html(store, "s")
    folded = re.findall(
        r'<details class="folded"><summary>(.*?)</summary>\s*<div class="typed">(.*?)</div>', page, re.S
    )
    assert len(folded) == 1
    summary, body = folded[0]
    assert summary.startswith("- skill-0: does &lt;thing&gt; number 0") and "40 lines" in summary
    assert html.unescape(body) == listing
    assert '<div class="typed">permissionMode: acceptEdits</div>' in page
    assert page.count(html.escape(listing, quote=False)) == 2  # the user's copy too, not folded


def test_a_folded_single_line_says_one_line(tmp_path: Path) -> None:
    """A long one-line text outside the context folds with "1 line" and its size in the summary."""
    store = SessionStore(tmp_path, durability="none")
    store.append("s", {"role": "system", "content": "tools: " + "x, " * 300, "include_in_messages": False})
    assert '<span class="badge">1 line, 907 characters</span>' in to_html(store, "s")
