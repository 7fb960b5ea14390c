"""Exported pages hold any stored text inert, and show every call and result, whatever the text."""

from __future__ import annotations

import tempfile
from html.parser import HTMLParser
from pathlib import Path

from helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from jsonl_store import AssistantMessage, SessionStore, ToolCall, ToolMessage, UserMessage
from jsonl_store.export import to_html

#: Every tag an exported page writes itself, and those its Markdown renderer may add.
PAGE_TAGS = {"html", "head", "meta", "title", "style", "body", "header", "nav", "main", "h1", "h2", "h3"}
PAGE_TAGS |= {"dl", "dt", "dd", "section", "div", "p", "pre", "span", "details", "summary", "code", "a"}
PAGE_TAGS |= {"figure", "img", "ul", "ol", "li", "table", "thead", "tbody", "tr", "th", "td", "br", "hr"}
PAGE_TAGS |= {"em", "strong", "del", "s", "blockquote", "h4", "h5", "h6"}

#: Markup, Markdown and characters chosen to break out of wherever they land.
PIECES = st.sampled_from(
    ["<script>", "</script>", "<img src=x onerror=alert(1)>", "</details>", "</pre>", "```", "~~~", "`",
     "[a](javascript:alert(1))", "<javascript:x>", "\x1b[2J", "\u202e", "&lt;", "&#x3c;script&#x3e;", '"', "'",
     "\n", "\n\n", "# ", "- ", "| a |\n|---|\n", "<!--", "-->", "<![CDATA[", "**", "_", "\\"]
)  # fmt: skip
TEXT = st.lists(st.one_of(PIECES, st.text(max_size=8)), max_size=12).map("".join)


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.bad: list[str] = []
        self.calls = 0
        self.results = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in PAGE_TAGS:
            self.bad.append(tag)
        for name, value in attrs:
            if name.startswith("on") or (value or "").strip().lower().startswith("javascript:"):
                self.bad.append(f"{tag} {name}={value}")
            if name == "class" and value is not None:
                self.calls += value.split()[:1] == ["call"]
                self.results += value.split()[:1] == ["result"]


@settings(max_examples=examples(60))
@given(prompt=TEXT, answer=TEXT, reasoning=TEXT, name=TEXT, argument=TEXT, output=TEXT, error=st.booleans())
def test_any_stored_text_stays_inert_and_every_call_keeps_its_result(
    prompt: str, answer: str, reasoning: str, name: str, argument: str, output: str, error: bool
) -> None:
    """Whatever a prompt, answer, reasoning, tool name, argument or output holds: no foreign tag or handler, one call, one result."""
    with tempfile.TemporaryDirectory() as scratch, SessionStore(Path(scratch), durability="none") as store:
        store.append("s", UserMessage(content=prompt))
        call = ToolCall(id="c1", name=name or "tool", arguments={"x": argument})
        store.append("s", AssistantMessage(content=answer, reasoning=reasoning or None, tool_calls=[call]))
        store.append("s", ToolMessage(tool_call_id="c1", content=output, is_error=error))
        page = to_html(store, "s")
    parsed = _Tags()
    parsed.feed(page)
    assert parsed.bad == []
    assert (parsed.calls, parsed.results) == (1, 1)
    assert "\x1b" not in page and "\u202e" not in page
