"""`jsonl_store.export`: what a transcript shows, and that stored text stays inert in it."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from jsonl_store import (
    AssistantMessage,
    CompactedMessage,
    ModelUsage,
    SessionNotFound,
    SessionStore,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from jsonl_store.export import CSP, export_html, page_name, to_html, to_json, to_markdown

#: Markup, a fence, a details end, a link, controls and a bidi override, as stored text.
HOSTILE = (
    "<script>alert(1)</script></details></pre>```\n~~~\n"
    "[click](javascript:alert(2)) https://example.com \x1b[2J\x07 \u202eevil\u202c end"
)


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    """A parent with a tool batch, usage, a compaction and a hostile message; a child session."""
    store = SessionStore(tmp_path / "sessions", durability="none")
    store.append(
        "main", UserMessage(content="Please read the README."), title="Read <b>it</b>", agent_name="coder"
    )
    call = ToolCall(id="c1", name="read_file", arguments={"path": "README.md"})
    store.append(
        "main",
        AssistantMessage(content="Reading.", tool_calls=[call]),
        usage=ModelUsage(input_tokens=1200, output_tokens=40, cache_read_tokens=1000),
    )
    store.append("main", ToolMessage(tool_call_id="c1", name="read_file", content="# jsonl_store"))
    store.snapshot(
        "main", CompactedMessage(content="Read the README."), compacted_through_sequence=3, expected_version=0
    )
    store.append("main", UserMessage(content=HOSTILE))
    store.append("main-sub", UserMessage(content="sub-agent task"), parent_session_id="main", title="Sub")
    return store


class _Structure(HTMLParser):
    """The tags of a page, and its text, as a browser's parser reads them."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.links += [value or "" for name, value in attrs if name == "href"]

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(page: str) -> _Structure:
    parser = _Structure()
    parser.feed(page)
    return parser


def test_html_shows_every_record_the_boundary_the_tokens_and_the_links(store: SessionStore) -> None:
    """The page has each record, the compaction summary, token totals and a link to the child."""
    page = parse(to_html(store, "main"))
    text = "".join(page.text)
    for shown in ("user#1 · ", "Please read the README.", '→ read_file(path="README.md")', "# jsonl_store",
                  "result (#3)", "Compaction (snapshot 1)", "Read the README.",
                  "1,240 (1,200 in · 40 out · 1,000 cache read)"):  # fmt: skip
        assert shown in text
    assert page_name("main-sub") in page.links and "index.html" not in page.links  # a page on its own
    assert page.tags.count("details") == 1  # the call folds away, its result under it


def test_hostile_text_is_escaped_in_html_and_adds_no_tag(store: SessionStore) -> None:
    """``<script>``, ``</details>``, controls and overrides in a message become text, not markup."""
    html_page = to_html(store, "main")
    page = parse(html_page)
    assert "script" not in page.tags
    # The user's, the assistant's (its result folded under its call) and the hostile user's.
    assert page.tags.count("details") == 1 and page.tags.count("section") == 3
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&lt;/details&gt;" in html_page
    assert "\\x1b[2J\\x07" in html_page and "\\u202eevil\\u202c" in html_page
    assert re.search("[\x00-\x08\x0b-\x1f\x7f\u202a-\u202e]", html_page) is None
    assert "Read &lt;b&gt;it&lt;/b&gt;" in html_page  # the title too


def test_the_page_forbids_scripts_and_every_fetch(store: SessionStore) -> None:
    """The CSP meta tag allows no script, no connection and only the page's own stylesheet by hash."""
    assert "default-src 'none'" in CSP and "script-src 'none'" in CSP and "'sha256-" in CSP
    assert "unsafe-inline" not in CSP
    page = to_html(store, "main")
    assert 'http-equiv="Content-Security-Policy"' in page
    assert re.search(r"""(src|href)=["']?(https?:)?//""", page) is None


def test_markdown_fences_hostile_text_so_it_cannot_close_anything(store: SessionStore) -> None:
    """Stored backticks get a longer fence; ``</details>`` and links stay inside it."""
    markdown = to_markdown(store, "main")
    fence = re.search(r"^(`{4,})text\n<script>", markdown, re.MULTILINE)
    assert fence is not None  # the text holds ``` so its fence has four backticks
    body_end = markdown.index(f"\n{fence.group(1)}\n", fence.end())
    assert "[click](javascript:alert(2))" in markdown[fence.end() : body_end]
    assert markdown.count("<details>") == markdown.count("</details>") - 1 == 1  # one is the stored text's
    assert "[` main-sub: Sub `](session-main-sub.md)" in markdown
    assert "**Compaction (snapshot 1):** records #1 to #3" in markdown
    assert "`` Read <b>it</b> ``" not in markdown and "# ` Read <b>it</b> `" in markdown
    assert re.search("[\x00-\x08\x0b-\x1f\x7f\u202a-\u202e]", markdown) is None


def test_json_has_the_records_with_sequences_and_usage(store: SessionStore) -> None:
    """`to_json` is one document: session, snapshot, every record with its tokens, children, totals."""
    document = json.loads(to_json(store, "main"))
    assert [r["sequence"] for r in document["records"]] == [1, 2, 3, 4]
    assert document["records"][1]["input_tokens"] == 1200
    assert document["records"][3]["message"] == {
        "role": "user",
        "content": HOSTILE,
        "id": document["records"][3]["message"]["id"],
    }
    assert document["snapshot"]["compacted_through_sequence"] == 3
    assert document["children"] == ["main-sub"] and document["totals"]["total_tokens"] == 1240


def test_export_html_writes_an_index_and_linked_pages(store: SessionStore, tmp_path: Path) -> None:
    """The directory holds index.html and one page per session; parent and child link each other."""
    out = tmp_path / "site"
    written = export_html(store, out)
    assert sorted(Path(p).name for p in written) == [
        "index.html",
        "session-main-sub.html",
        "session-main.html",
    ]
    index = parse((out / "index.html").read_text())
    assert {"session-main.html", "session-main-sub.html"} <= set(index.links)
    child = parse((out / "session-main-sub.html").read_text())
    assert "session-main.html" in child.links and "index.html" in child.links


def test_an_unknown_session_raises_session_not_found(store: SessionStore) -> None:
    """Exporting a session that does not exist raises `SessionNotFound` (a `KeyError`)."""
    for render in (to_html, to_markdown, to_json):
        with pytest.raises(SessionNotFound):
            render(store, "nope")


def test_hostile_names_ids_and_titles_cannot_close_a_summary_or_a_code_span(tmp_path: Path) -> None:
    """A tool name, call id, agent and title made of markup stay text in both formats."""
    evil = "`</summary></details><script>x()</script>[l](javascript:y)\n"
    with SessionStore(tmp_path, durability="none") as store:
        call = ToolCall(id=evil, name=evil, arguments={evil: evil})
        store.append("s", AssistantMessage(tool_calls=[call]), title=evil.strip(), agent_name=evil.strip())
        store.append("s", ToolMessage(tool_call_id=evil, name=evil, content=evil, is_error=True))
        markdown, page = to_markdown(store, "s"), to_html(store, "s")
    summaries = re.findall(r"^<summary>(.*)</summary>$", markdown, re.MULTILINE)
    assert len(summaries) == 1 and all("<" not in s and "&lt;/summary&gt;" in s for s in summaries)
    assert markdown.count("\n<details>\n") == 1 and markdown.count("\n</details>\n") == 1
    assert markdown.startswith("# `` `</summary></details><script>x()</script>[l](javascript:y) ``\n")
    tags = parse(page).tags
    assert "script" not in tags and tags.count("summary") == 1 and tags.count("details") == 1


def test_markdown_rendered_by_a_commonmark_parser_has_no_active_markup(store: SessionStore) -> None:
    """markdown-it (CommonMark, raw HTML on, as GitHub allows ``<details>``) renders no script and one link."""
    markdown_it = pytest.importorskip("markdown_it", reason="markdown-it-py comes with the cli extra (rich)")
    rendered = markdown_it.MarkdownIt("commonmark", {"html": True}).render(to_markdown(store, "main"))
    page = parse(rendered)
    assert "script" not in page.tags
    assert page.links == ["session-main-sub.md"]  # the sub-agent's page; no stored link became one
    assert page.tags.count("details") == 1 and page.tags.count("summary") == 1
    assert "<script>alert(1)</script></details></pre>```" in "".join(page.text)


def test_a_fork_shows_its_whole_history_and_links_its_source(store: SessionStore) -> None:
    """A fork's transcript holds the records it shares with its source, and names the branch."""
    store.fork("main", 2, "main-retry")
    store.append("main-retry", UserMessage(content="Try again."))
    markdown = to_markdown(store, "main-retry")
    assert "- forked from: [` main `](session-main.md) after #2" in markdown
    assert "Please read the README." in markdown and "Try again." in markdown
    page = parse(to_html(store, "main-retry"))
    assert "session-main.html" in page.links and "Try again." in "".join(page.text)
