"""Sessions as transcripts a person reads: Markdown, self-contained HTML, JSON.

Every function reads through `SessionStore`'s public API (`get_session`, `records`,
`load`, `list_sessions`, `usage_totals`) and every message through the message model
(`jsonl_store.message_parts`); see docs/guides/importing.md, "Exporting and searching".
"""

from ._html import CSP, INDEX, render_html, to_html
from ._markdown import render_markdown, to_markdown
from ._markup import available as html_extra_available
from ._site import Listed, export_html, render_index
from ._transcript import INLINE_IMAGE_CAP, Entry, Transcript, collect, entries, page_name, to_json, visible

__all__ = [
    "CSP",
    "INDEX",
    "INLINE_IMAGE_CAP",
    "Entry",
    "Listed",
    "Transcript",
    "collect",
    "entries",
    "export_html",
    "html_extra_available",
    "page_name",
    "render_html",
    "render_index",
    "render_markdown",
    "to_html",
    "to_json",
    "to_markdown",
    "visible",
]
