"""A session as one self-contained HTML page, and a store as a directory of them.

Each page is one file: inline CSS, no script, no font, no image, nothing fetched. Its
Content-Security-Policy (https://www.w3.org/TR/CSP3/) allows only that one stylesheet,
by its SHA-256, so even markup that slipped through could run no script and load
nothing. Every stored string is shown through `html.escape` after `visible` (control and
bidirectional characters as ``\\x1b`` / ``\\u202e``), inside ``<pre>`` for bodies, so a
message holding ``</details>`` or ``<script>`` is text on the page.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import html
import os
from collections.abc import Callable

from .._codec import with_deep_stack
from .._errors import StorageError, storage_error
from .._view import SessionSummary
from ..store import SessionStore
from ._transcript import Entry, Transcript, collect, entries, one_line, page_name, tokens_label, visible, when

INDEX = "index.html"

_CSS = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 60rem; padding: 1rem; color: #1b1b1b; }
header { border-bottom: 1px solid #ccc; margin-bottom: 1rem; }
h1 { font-size: 1.4rem; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; }
dl.facts dt { font-weight: 600; }
dl.facts dd { margin: 0; }
section.msg { border: 1px solid #ddd; border-radius: 6px; margin: .8rem 0; padding: .4rem .8rem; }
section.msg > h2 { font-size: .9rem; margin: .2rem 0; color: #555; font-weight: 600; }
section.user { background: #f3f7ff; }
section.assistant { background: #fff; }
section.tool { background: #f7f7f7; }
section.system { background: #fffbea; }
section.compacted { background: #f0fff4; }
section.out-of-context { opacity: .7; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; margin: .3rem 0; font: 13px/1.4 ui-monospace, monospace; }
details { margin: .3rem 0; }
summary { cursor: pointer; color: #333; }
.error { color: #a00; }
div.boundary { border-top: 3px double #2a7; border-bottom: 3px double #2a7; margin: 1.2rem 0; padding: .4rem .8rem; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .3rem .5rem; border-bottom: 1px solid #eee; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
"""
_CSS_HASH = base64.b64encode(hashlib.sha256(_CSS.encode()).digest()).decode()
#: No script, no connection, no frame, no form; the one inline stylesheet by its hash.
CSP = (
    f"default-src 'none'; style-src 'sha256-{_CSS_HASH}'; img-src 'none'; script-src 'none'; "
    "base-uri 'none'; form-action 'none'; frame-src 'none'"
)


def esc(text: str) -> str:
    """Stored text for an HTML element's content or an attribute: nothing hidden, nothing markup."""
    return html.escape(visible(text), quote=True)


def esc_line(text: str) -> str:
    """`esc` for one-line labels (titles, names): newlines and tabs shown as ``\\n``/``\\t``."""
    return html.escape(one_line(text), quote=True)


def _page(title: str, body: list[str]) -> str:
    head = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{html.escape(CSP, quote=True)}">',
        '<meta name="referrer" content="no-referrer">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc_line(title)}</title>",
        f"<style>{_CSS}</style>",
        "</head>",
        "<body>",
    ]
    return "\n".join([*head, *body, "</body>", "</html>"]) + "\n"


def _link(session_id: str, label: str) -> str:
    return f'<a href="{html.escape(page_name(session_id), quote=True)}">{esc_line(label)}</a>'


def _details(summary: str, body: str, *, error: bool = False) -> list[str]:
    cls = ' class="error"' if error else ""
    return [f"<details><summary{cls}>{esc_line(summary)}</summary>", f"<pre>{esc(body)}</pre>", "</details>"]


def _entry_html(entry: Entry) -> list[str]:
    if entry.role == "boundary":
        return [
            f'<div class="boundary" id="snapshot-{entry.snapshot_version}">',
            f"<p><strong>Compaction (snapshot {entry.snapshot_version}):</strong> records #1 to #{entry.sequence} "
            "are replaced in the model context by this summary:</p>",
            f"<pre>{esc(entry.text)}</pre>",
            "</div>",
        ]
    facts = [f"#{entry.sequence} {entry.role}"]
    if entry.tool_name:
        facts.append(f"result of {entry.tool_name}")
    if entry.is_error:
        facts.append("error")
    facts += [fact for fact in (entry.duration, entry.tokens) if fact]
    if not entry.in_context:
        facts.append("not in the model context")
    role_class = entry.role if entry.role in {"user", "assistant", "tool", "system", "compacted"} else "other"
    classes = f"msg {role_class}" + ("" if entry.in_context else " out-of-context")
    lines = [f'<section class="{classes}" id="r{entry.sequence}">', f"<h2>{esc_line(' · '.join(facts))}</h2>"]
    if entry.result_of is not None:
        label = f"result of {entry.tool_name or 'tool'} ({entry.result_of})" + (
            " · error" if entry.is_error else ""
        )
        lines += _details(label, entry.text, error=entry.is_error)
    else:
        if entry.reasoning:
            lines += _details("reasoning", entry.reasoning)
        if entry.text:
            lines.append(f"<pre>{esc(entry.text)}</pre>")
        for call in entry.calls:
            lines += _details(f"tool call {call.name} ({call.call_id})", call.arguments)
    lines.append("</section>")
    return lines


@with_deep_stack  # whatever append accepts, however deep the caller's stack (spec §4)
def render_html(transcript: Transcript, *, in_site: bool = False) -> str:
    """A `Transcript` as one HTML page; ``in_site``: with a link to the index beside it."""
    summary = transcript.summary
    title = summary.title or summary.session_id
    facts = [("session", esc_line(summary.session_id))]
    if summary.agent_name:
        facts.append(("agent", esc_line(summary.agent_name)))
    if summary.parent_session_id:
        facts.append(("parent session", _link(summary.parent_session_id, summary.parent_session_id)))
    if summary.fork is not None:
        source = summary.fork.session_id
        facts.append(("forked from", f"{_link(source, source)} after #{summary.fork.sequence}"))
    for child in transcript.children:
        label = child.session_id + (f": {child.title}" if child.title else "")
        facts.append(("sub-agent session", _link(child.session_id, label)))
    facts.append(("records", f"{summary.message_count:,}"))
    facts.append(("created", esc_line(when(summary.created_at))))
    facts.append(("last append", esc_line(when(summary.updated_at))))
    totals = transcript.totals
    facts.append(("tokens", esc_line(f"{totals.total_tokens:,} ({tokens_label(totals)})")))
    body = [
        "<header>",
        *([f'<p><a href="{INDEX}">all sessions</a></p>'] if in_site else []),
        f"<h1>{esc_line(title)}</h1>",
        '<dl class="facts">',
        *(f"<dt>{name}</dt><dd>{value}</dd>" for name, value in facts),
        "</dl>",
        "</header>",
        "<main>",
    ]
    for entry in entries(transcript):
        body += _entry_html(entry)
    body.append("</main>")
    return _page(title, body)


def to_html(store: SessionStore, session_id: str) -> str:
    """``session_id`` as one self-contained HTML page.

    The same content as `to_markdown`; parent and sub-agent sessions link to their
    ``session-<id>.html`` beside it, as `export_html` names them. Raises what `collect`
    raises (`SessionNotFound` for an unknown session).
    """
    return render_html(collect(store, session_id))


def render_index(sessions: list[tuple[SessionSummary, int]]) -> str:
    """The index page: one row per session (with its token total), linking to its page."""
    rows = []
    for summary, tokens in sessions:
        parent = summary.parent_session_id
        rows.append(
            "<tr>"
            f"<td>{_link(summary.session_id, summary.session_id)}</td>"
            f"<td>{esc_line(summary.title or '')}</td>"
            f"<td>{esc_line(summary.agent_name or '')}</td>"
            f"<td>{_link(parent, parent) if parent else ''}</td>"
            f'<td class="num">{summary.message_count:,}</td>'
            f'<td class="num">{tokens:,}</td>'
            f"<td>{esc_line(when(summary.updated_at))}</td>"
            "</tr>"
        )
    body = [
        "<header><h1>Sessions</h1></header>",
        "<main><table>",
        "<thead><tr><th>session</th><th>title</th><th>agent</th><th>parent</th>"
        '<th class="num">records</th><th class="num">tokens</th><th>last append</th></tr></thead>',
        "<tbody>",
        *rows,
        "</tbody></table></main>",
    ]
    return _page("Sessions", body)


def _write(path: str, text: str) -> None:
    # A temporary name, then a rename: a reader of the directory never sees half a page.
    temporary = f"{path}.tmp"
    try:
        with open(temporary, "w", encoding="utf-8", errors="surrogateescape") as out:
            out.write(text)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def export_html(
    store: SessionStore,
    directory: str | os.PathLike[str],
    *,
    on_session: Callable[[SessionSummary], None] | None = None,
) -> list[str]:
    """Write every session of ``store`` into ``directory`` as HTML; return the paths written.

    ``index.html`` lists the sessions (newest activity first) and links to one
    ``session-<id>.html`` per session, which links back, to its parent and to its
    sub-agent sessions. ``directory`` is created if missing; pages already there are
    replaced. ``on_session(summary)`` is called before each session's page (the command's
    progress bar). Raises `StorageError` (an `OSError`) when a page cannot be written,
    and what `collect` raises.
    """
    target = os.fspath(directory)
    sessions = store.list_sessions()
    written = []
    index_rows = []
    try:
        os.makedirs(target, exist_ok=True)
        for summary in sessions:
            if on_session is not None:
                on_session(summary)
            transcript = collect(store, summary.session_id)
            path = os.path.join(target, page_name(summary.session_id))
            _write(path, render_html(transcript, in_site=True))
            written.append(path)
            index_rows.append((transcript.summary, transcript.totals.total_tokens))
        index = os.path.join(target, INDEX)
        _write(index, render_index(index_rows))
    except StorageError:
        raise  # the store's own, already saying what failed
    except OSError as exc:
        raise storage_error(exc, f"export_html({target!r})", where=target) from exc
    return [index, *written]


__all__ = ["CSP", "INDEX", "esc", "export_html", "render_html", "render_index", "to_html"]
