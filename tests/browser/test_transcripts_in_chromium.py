"""Every real transcript's exported page in headless chromium: nothing empty, nothing lost.

The Claude Code, Codex and pi transcripts of ``tests/importers/data`` (README there) are
imported and exported with `export_html`, as ``jsonl-store export --all`` does; each page
is loaded and its DOM read after the load event. The counts a page must show are taken
from the store through the public message model (`jsonl_store.message_parts`), not from
the renderer.
"""

from __future__ import annotations

import base64
import re
from pathlib import Path

import pytest
from headless import CHROMIUM, Dom, chromium, dom

from jsonl_store import SessionStore, ToolCallPart, ToolResultPart, message_parts
from jsonl_store.export import export_html, page_name
from jsonl_store.importers import import_claude_code, import_codex, import_pi

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (apt-get install chromium)")

DATA = Path(__file__).resolve().parent.parent / "importers" / "data"
IMPORTERS = {"claude-code": import_claude_code, "codex": import_codex, "pi": import_pi}


Site = tuple[SessionStore, Path, dict[str, tuple[Dom, str]]]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Site:
    """Every real transcript imported into one store, exported as HTML pages, each page loaded once."""
    root = tmp_path_factory.mktemp("real")
    store = SessionStore(root / "store", durability="none")
    for tool, importer in IMPORTERS.items():
        importer(store, DATA / tool)
    export_html(store, root / "site")
    pages = {s.session_id: dom(root / "site" / page_name(s.session_id)) for s in store.list_sessions()}
    return store, root / "site", pages


def _counts(store: SessionStore, session_id: str) -> tuple[int, int]:
    summary = store.get_session(session_id)
    assert summary is not None
    calls = results = 0
    for record in store.records(session_id):
        for part in message_parts(record.message, summary.dialect):
            calls += isinstance(part, ToolCallPart)
            results += isinstance(part, ToolResultPart)
    return calls, results


def test_every_real_session_shows_every_call_and_result_and_no_empty_card(site: Site) -> None:
    """For each Claude Code, Codex and pi session: as many calls and results as its parts, no empty card, no console message."""
    store, _, pages = site
    sessions = store.list_sessions()
    assert {s.metadata["imported_from"]["tool"] for s in sessions} == {"claude-code", "codex", "pi"}
    all_calls = 0
    for summary in sessions:
        page, console = pages[summary.session_id]
        assert console == "", (summary.session_id, console)
        calls, results = _counts(store, summary.session_id)
        all_calls += calls
        assert len(page.having("details", "call")) == calls, summary.session_id
        assert len(page.having("div", "result")) == results, summary.session_id
        cards = page.having("section", "msg")
        assert cards, summary.session_id
        # A card holds more than its role and facts: text, a call, an image, a block.
        empty = [card.attrs for card in cards if not "".join(card.content).strip()]
        assert empty == [], summary.session_id
    assert all_calls > 300  # 39 Codex shell calls, 108 in one Claude Code session, ...


def test_a_pasted_image_is_an_img_the_browser_decodes(site: Site) -> None:
    """The PNG pasted into a Claude Code prompt is an ``<img>`` whose natural width is its own."""
    _, folder, pages = site
    images = [img.attrs["src"] for page, _ in pages.values() for img in page.having("img")]
    assert images, "the image-paste transcript holds a PNG"
    # The page's CSP allows no script, so a page of the test's own, beside it, measures
    # the same sources (a data: URL, or a file in images/ beside the pages).
    harness = folder / "measure.html"
    tags = "".join(f'<img src="{src}">' for src in images)
    harness.write_text(
        f"<!DOCTYPE html><html><body>{tags}<script>"
        'addEventListener("load", () => { document.body.dataset.widths = '
        'Array.from(document.images, i => i.naturalWidth).join(","); });'
        "</script></body></html>"
    )
    loaded = chromium("--virtual-time-budget=5000", "--dump-dom", harness.as_uri())
    widths = re.search(rb'data-widths="([0-9,]*)"', loaded.stdout)
    assert widths is not None
    assert [int(w) for w in widths.group(1).split(b",")] == [_png_width(src, folder) for src in images]
    assert all(_png_width(src, folder) > 0 for src in images)


def _png_width(src: str, folder: Path) -> int:
    data = base64.b64decode(src.split(",", 1)[1]) if src.startswith("data:") else (folder / src).read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    return int.from_bytes(data[16:20], "big")  # IHDR's width (https://www.w3.org/TR/png/#11IHDR)
