"""A store as a directory of HTML pages: the index (sessions by project and day, sub-agents
under their parent) and `export_html`, which writes it with one page per session."""

from __future__ import annotations

import contextlib
import os
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from .._context.view import SessionSummary
from .._errors import StorageError, storage_error
from ..store import SessionStore
from ._html import IMAGES, INDEX, Images, esc_line, html_page, page_link, project_of, render_html
from ._transcript import collect, headline, page_name, when

# ---------------------------------------------------------------------------------------
# The index
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Listed:
    """One session as the index lists it."""

    summary: SessionSummary
    title: str
    tokens: int


def _row(listed: Listed, child: bool) -> str:
    summary = listed.summary
    return (
        f"<tr{' class=child' if child else ''}>"
        f'<td class="title">{page_link(summary.session_id, listed.title)}</td>'
        f'<td class="id">{esc_line(summary.session_id)}</td>'
        f"<td>{esc_line(summary.agent_name or '')}</td>"
        f'<td class="num">{summary.message_count:,}</td>'
        f'<td class="num">{listed.tokens:,}</td>'
        f"<td>{esc_line(when(summary.updated_at)[11:])}</td>"
        "</tr>"
    )


def _tree(listed: Iterable[Listed]) -> list[tuple[Listed, int]]:
    """Sessions with their children (by ``parent_session_id``) right under them, each with its depth."""
    items = list(listed)
    known = {item.summary.session_id for item in items}
    children: dict[str, list[Listed]] = defaultdict(list)
    roots = []
    for item in items:
        parent = item.summary.parent_session_id
        if parent is not None and parent in known and parent != item.summary.session_id:
            children[parent].append(item)
        else:
            roots.append(item)
    out: list[tuple[Listed, int]] = []
    seen: set[str] = set()
    stack = [(root, 0) for root in reversed(roots)]
    while stack:
        item, depth = stack.pop()
        if item.summary.session_id in seen:
            continue
        seen.add(item.summary.session_id)
        out.append((item, depth))
        stack += [(kid, depth + 1) for kid in reversed(children.get(item.summary.session_id, []))]
    return out


def render_index(sessions: list[Listed], *, root: str = "") -> str:
    """The index page: sessions grouped by project (``root`` for those with none), then by
    the day of their last append (newest first), sub-agent sessions under their parent."""
    groups: dict[str, list[tuple[Listed, int]]] = defaultdict(list)
    group = ""
    for item, depth in _tree(sessions):
        if depth == 0:  # a sub-agent session is listed under its parent, in the parent's group
            group = project_of(item.summary) or root or "this store"
        groups[group].append((item, depth))
    total = sum(item.tokens for item in sessions)
    body = [
        "<header><h1>Sessions</h1>",
        f"<p>{len(sessions):,} sessions · {total:,} tokens</p></header>",
        "<main>",
    ]
    for project, rows in groups.items():
        body.append(f"<section><h2>{esc_line(project)}</h2>")
        day = ""
        for item, depth in rows:
            today = when(item.summary.updated_at)[:10]
            if depth == 0 and today != day:
                if day:
                    body.append("</tbody></table>")
                day = today
                body += [
                    f"<h3>{today}</h3>",
                    '<table class="sessions"><thead><tr><th>title</th><th>session</th><th>agent</th>'
                    '<th class="num">records</th><th class="num">tokens</th><th>last append (UTC)</th></tr></thead><tbody>',
                ]
            body.append(_row(item, depth > 0))
        body.append("</tbody></table></section>")
    body.append("</main>")
    return html_page("Sessions", body)


# ---------------------------------------------------------------------------------------
# Writing a directory
# ---------------------------------------------------------------------------------------


def _write(path: str, data: str | bytes) -> None:
    # A temporary name, then a rename: a reader of the directory never sees half a page.
    temporary = f"{path}.tmp"
    raw = data if isinstance(data, bytes) else data.encode("utf-8", "surrogateescape")
    try:
        with open(temporary, "wb") as out:
            out.write(raw)
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

    ``index.html`` lists the sessions by project and day and links to one
    ``session-<id>.html`` per session, which links back, to its parent and to its
    sub-agent sessions; images over `INLINE_IMAGE_CAP` go into ``images/`` beside them.
    ``directory`` is created if missing; pages already there are replaced.
    ``on_session(summary)`` is called before each session's page (the command's progress
    bar). Raises `StorageError` (an `OSError`) when a page cannot be written, and what
    `collect` raises.
    """
    target = os.fspath(directory)
    sessions = store.list_sessions()
    written = []
    listed = []
    try:
        os.makedirs(target, exist_ok=True)
        for summary in sessions:
            if on_session is not None:
                on_session(summary)
            transcript = collect(store, summary.session_id, listing=sessions)
            images = Images(beside=True)
            page = render_html(transcript, in_site=True, images=images)
            written += _write_images(target, images)
            path = os.path.join(target, page_name(summary.session_id))
            _write(path, page)
            written.append(path)
            listed.append(Listed(transcript.summary, headline(transcript), transcript.totals.total_tokens))
        index = os.path.join(target, INDEX)
        _write(index, render_index(listed, root=os.fspath(store.root)))
    except StorageError:
        raise  # the store's own, already saying what failed
    except OSError as exc:
        raise storage_error(exc, f"export_html({target!r})", where=target) from exc
    return [index, *written]


def _write_images(target: str, images: Images) -> list[str]:
    out = []
    for name, data in images.files.items():
        os.makedirs(os.path.join(target, IMAGES), exist_ok=True)
        path = os.path.join(target, name)
        if not os.path.exists(path):  # named by its SHA-256: the same bytes
            _write(path, data)
        out.append(path)
    return out


__all__ = ["Listed", "export_html", "render_index"]
