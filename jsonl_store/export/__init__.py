"""Sessions as transcripts a person reads: Markdown, self-contained HTML, JSON.

Every function reads through `SessionStore`'s public API (`get_session`, `records`,
`load`, `list_sessions`, `usage_totals`); see docs/guides/importing.md, "Exporting and searching".
"""

from ._html import CSP, INDEX, export_html, render_html, render_index, to_html
from ._markdown import render_markdown, to_markdown
from ._transcript import Entry, Transcript, collect, entries, page_name, to_json, visible

__all__ = [
    "CSP",
    "INDEX",
    "Entry",
    "Transcript",
    "collect",
    "entries",
    "export_html",
    "page_name",
    "render_html",
    "render_index",
    "render_markdown",
    "to_html",
    "to_json",
    "to_markdown",
    "visible",
]
