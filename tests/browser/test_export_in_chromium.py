"""Exported HTML pages in a real headless browser: they load, show the messages, run nothing.

Debian's ``chromium`` (``.ci/run`` installs it when missing); without it these tests skip.
``--dump-dom`` prints the DOM after the page loaded, so what a person sees is what is
checked, ``--enable-logging=stderr`` prints every console message (a script error, a
Content-Security-Policy violation), and ``--screenshot`` renders the page. The page holds no script and its CSP forbids
every script: a hostile message's ``<script>`` would show up in the DOM as an element if
it had become one, and the DOM of a page whose markup broke would lose sections.
"""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pytest
from headless import CHROMIUM, chromium

from jsonl_store import AssistantMessage, SessionStore, ToolCall, ToolMessage, UserMessage
from jsonl_store.export import export_html

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (apt-get install chromium)")

HOSTILE = "<script>document.title='pwned'</script></details></section></main>\x1b[2J \u202eevil\u202c <img src=x onerror=alert(1)>"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class _Dom(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []
        self.title = ""
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self._in_title = tag == "title"

    def handle_endtag(self, tag: str) -> None:
        self._in_title = False

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._in_title:
            self.title += data


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """An exported store: a session with a tool batch and a hostile message, and its sub-agent."""
    with SessionStore(tmp_path / "sessions", durability="none") as store:
        store.append("main", UserMessage(content="Find the bug."), title="Bug hunt")
        call = ToolCall(id="c1", name="grep", arguments={"pattern": "TODO"})
        store.append("main", AssistantMessage(content="Searching.", tool_calls=[call]))
        store.append("main", ToolMessage(tool_call_id="c1", name="grep", content="app.py:3: TODO"))
        store.append("main", UserMessage(content=HOSTILE))
        store.append("main-sub", UserMessage(content="a sub-agent's task"), parent_session_id="main")
        export_html(store, tmp_path / "site")
    return tmp_path / "site"


def test_the_page_loads_shows_the_messages_and_runs_no_script(site: Path, tmp_path: Path) -> None:
    """The page loads with no console message; its DOM holds every message, the hostile text as text, nothing injected."""
    page = site / "session-main.html"
    dom = _Dom()
    # With logging on stderr, chromium prints every console message (a script error, a
    # CSP violation: a blocked script or style) as an "INFO:CONSOLE" line.
    loaded = chromium("--enable-logging=stderr", "--v=0", "--dump-dom", page.as_uri())
    assert b":CONSOLE" not in loaded.stderr, loaded.stderr.decode(errors="replace")
    dom.feed(loaded.stdout.decode())
    text = "".join(dom.text)
    for shown in (
        "Find the bug.",
        "Searching.",
        '→ grep(pattern="TODO")',
        "result (#3)",
        "app.py:3: TODO",
        "<script>document.title",
    ):
        assert shown in text
    assert "\\u202eevil\\u202c" in text and "\\x1b[2J" in text
    assert "script" not in dom.tags and "img" not in dom.tags
    # The user's, the assistant's with its result folded under the call, the hostile one.
    assert dom.tags.count("section") == 3 and dom.tags.count("details") == 1
    assert dom.title == "Bug hunt"  # the stored script did not run


def test_a_screenshot_of_each_page_is_a_png(site: Path, tmp_path: Path) -> None:
    """The browser renders the index and a session page to non-empty PNG images."""
    for name in ("index.html", "session-main.html", "session-main-sub.html"):
        shot = tmp_path / f"{name}.png"
        chromium(f"--screenshot={shot}", "--window-size=1000,1200", (site / name).as_uri())
        data = shot.read_bytes()
        assert data.startswith(PNG_SIGNATURE) and len(data) > 5000


def test_a_page_whose_stylesheet_changed_is_reported_by_the_console_check(site: Path, tmp_path: Path) -> None:
    """The console check can fail: a page whose style no longer matches its CSP hash logs a violation."""
    page = site / "session-main.html"
    changed = tmp_path / "changed.html"
    changed.write_text(page.read_text().replace("<style>", "<style>p { color: red; }"))
    loaded = chromium("--enable-logging=stderr", "--v=0", "--dump-dom", changed.as_uri())
    assert b":CONSOLE" in loaded.stderr and b"Content Security Policy" in loaded.stderr
