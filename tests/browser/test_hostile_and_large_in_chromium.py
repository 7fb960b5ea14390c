"""Exported pages in headless chromium: hostile text runs nothing, and an index of 1,000 sessions.

A stored ``<script>``, ``onerror=`` or ``javascript:`` link, in a prompt, a model's
Markdown, reasoning, a tool's name, arguments and result, an image's media type or content
the dialect does not map, must reach the DOM as text only. The page's CSP forbids every
script anyway, so the hostile page is also loaded with its CSP removed: the sanitising
alone must hold.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from headless import CHROMIUM, Dom, dom

from jsonl_store import AssistantMessage, SessionStore, ToolCall, ToolMessage, UserMessage
from jsonl_store.export import export_html, page_name

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (apt-get install chromium)")

#: Each would set ``data-pwned`` on the body, or navigate, if it ever ran.
PAYLOAD = "\n\n".join(
    [
        "<script>document.body.dataset.pwned = 'script'</script>",
        "<img src=x onerror=\"document.body.dataset.pwned='onerror'\">",
        '<svg onload="document.body.dataset.pwned=\'svg\'"></svg> <iframe src="javascript:alert(1)"></iframe>',
        "[markdown link](javascript:document.body.dataset.pwned='link') [encoded](jav&#x61;script:alert(1))",
        "<javascript:alert(1)> ![image](javascript:alert(1)) [ref][evil]",
        "[evil]: javascript:alert(1)",
        '<a href="javascript:alert(1)">raw link</a> <b onmouseover="alert(1)">bold</b>',
        "```\"><script>document.body.dataset.pwned='fence'</script>\nprint('hi')\n```",
    ]
)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A session holding the payload everywhere a message can, exported as one page."""
    root = tmp_path_factory.mktemp("hostile")
    with SessionStore(root / "store", durability="none") as store:
        store.append("evil", UserMessage(content=PAYLOAD), title=PAYLOAD.split("\n")[0])
        call = ToolCall(id="c1", name="<script>x()</script>", arguments={"cmd": PAYLOAD, PAYLOAD: 1})
        store.append("evil", AssistantMessage(content=PAYLOAD, reasoning=PAYLOAD, tool_calls=[call]))
        store.append("evil", ToolMessage(tool_call_id="c1", content=PAYLOAD, is_error=True))
        store.append(
            "evil",
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": PAYLOAD},
                    {
                        "type": "image_url",
                        "image_url": {"url": 'data:image/png" onerror="alert(1);base64,iVBORw0KGgo='},
                    },
                    {"type": "image_url", "image_url": {"url": "javascript:alert(1)"}},
                    {"type": "hosted_thing", "html": PAYLOAD},
                ],
            },
        )
        export_html(store, root / "site")
    return root / "site" / page_name("evil")


def _inert(page: Dom) -> None:
    tags = {element.tag for element in page.elements}
    assert not tags & {"script", "iframe", "svg", "object", "embed", "frame", "form", "base"}
    for element in page.elements:
        for name, value in element.attrs.items():
            assert not name.startswith("on"), (element.tag, name)
            assert not value.strip().lower().startswith(("javascript:", "vbscript:", "data:text")), (
                element.tag,
                name,
            )
            if element.tag == "img" and name == "src":
                assert value.startswith(
                    ("data:image/png;base64,", "data:application/octet-stream;base64,", "images/")
                )
    body = page.having("body")[0]
    assert "data-pwned" not in body.attrs


def test_a_hostile_session_runs_nothing_and_shows_the_payload_as_text(hostile: Path) -> None:
    """The payload, in every part of every kind, is text in the DOM: no script, handler or script URL; no console message."""
    page, console = dom(hostile)
    assert console == ""
    _inert(page)
    text = "".join(page.having("body")[0].text)
    assert (
        text.count("document.body.dataset.pwned = 'script'") >= 5
    )  # prompt, answer, reasoning, args, result
    assert "".join(page.having("title")[0].text) == "<script>document.body.dataset.pwned = 'script'</script>"


def test_without_its_csp_the_hostile_page_still_runs_nothing(hostile: Path, tmp_path: Path) -> None:
    """With the Content-Security-Policy taken out, the sanitised markup alone keeps every script from running."""
    source = hostile.read_text()
    start = source.index('<meta http-equiv="Content-Security-Policy"')
    bare = tmp_path / "bare.html"
    bare.write_text(source[:start] + source[source.index(">", start) + 1 :])
    assert "Content-Security-Policy" not in bare.read_text()
    page, console = dom(bare, "--virtual-time-budget=3000")
    assert console == ""
    _inert(page)


def test_the_index_of_a_thousand_sessions_is_one_page_grouped_and_nested(tmp_path: Path) -> None:
    """1,000 sessions over 2 projects and 10 days: one index page under 1 MB, every session a row, sub-agents under their parent."""
    days = iter(datetime(2026, 1, 1, tzinfo=UTC) + timedelta(hours=6 * i) for i in range(10_000))
    with SessionStore(tmp_path / "store", durability="none", clock=lambda: next(days)) as store:
        for n in range(900):
            store.append(f"s{n:04}", UserMessage(content=f"task {n}"), title=f"Task {n}")
            if n % 2:
                store.update_session(f"s{n:04}", metadata={"cwd": f"/home/me/project-{n % 4}"})
            if n % 9 == 0:
                sub = f"s{n:04}-sub"
                store.append(
                    sub, UserMessage(content="sub-task"), parent_session_id=f"s{n:04}", title=f"Sub {n}"
                )
        export_html(store, tmp_path / "site")
    index = tmp_path / "site" / "index.html"
    assert index.stat().st_size < 1_000_000
    page, console = dom(index)
    assert console == ""
    groups = {"".join(h2.text) for h2 in page.having("h2")}
    assert groups == {"/home/me/project-1", "/home/me/project-3", str(tmp_path / "store")}
    listed = _rows(page)
    assert len(listed) == 1000 and len({session for _, session in listed}) == 1000
    children = [(position, session) for position, (child, session) in enumerate(listed) if child]
    assert len(children) == 100
    for position, session in children:
        assert listed[position - 1] == (False, session.removesuffix("-sub"))  # right under its parent


def _rows(page: Dom) -> list[tuple[bool, str]]:
    """Each row of the index's tables, in order: (a sub-agent row, its session id)."""
    rows = []
    child = False
    for element in page.elements:
        if element.tag == "tr":
            child = "child" in element.classes
        elif element.tag == "td" and "id" in element.classes:
            rows.append((child, "".join(element.text)))
    return rows
