"""A session as one self-contained HTML page (a store as a directory of them: `_site`).

Each page is one file: inline CSS, no script, no font, nothing fetched. Its
Content-Security-Policy (https://www.w3.org/TR/CSP3/) allows only that one stylesheet,
by its SHA-256, and images from ``data:`` URLs or beside the page, so even markup that
slipped through could run no script and load nothing from elsewhere. Stored text is
rendered by `_markup` (Markdown, sanitised, with the ``html`` extra; escaped otherwise);
every other stored string goes through `html.escape` after `visible` (control and
bidirectional characters as ``\\x1b`` / ``\\u202e``).

Messages are read through the message model (`_transcript.entries`): a tool call reads
``→ name(args)`` and folds away its arguments (a file edit as its diff) and the result
that answers it, wherever that result is stored; reasoning is dimmed; an image is an
``<img>`` from its bytes, inlined as a ``data:`` URL only up to `INLINE_IMAGE_CAP`.
"""

from __future__ import annotations

import base64
import hashlib
import html
from dataclasses import dataclass, field

from .._context.folding import Answer
from .._context.parts import ImagePart, OtherPart, Part, ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from .._context.view import SessionSummary
from .._format.depth import with_deep_stack
from ..store import SessionStore
from ._edits import edit_diff, line_kind, result_metadata
from ._markup import code_block, code_css, esc, markdown
from ._transcript import (
    INLINE_IMAGE_CAP,
    Entry,
    Transcript,
    arguments_preview,
    calls_in,
    collect,
    entries,
    facts,
    headline,
    image_type,
    json_text,
    one_line,
    page_name,
    tokens_label,
    when,
)

INDEX = "index.html"
IMAGES = "images"

_CSS = """
body { font: 15px/1.5 system-ui, sans-serif; margin: 0 auto; max-width: 62rem; padding: 1rem 1.2rem; color: #1b1b1b; background: #fafafa; }
a { color: #0b5cad; }
header { border-bottom: 1px solid #ccc; margin-bottom: 1rem; }
header nav { font-size: .9rem; }
h1 { font-size: 1.4rem; margin: .4rem 0; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .15rem 1rem; font-size: .9rem; }
dl.facts dt { font-weight: 600; color: #444; }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
ul.children { margin: .2rem 0 .8rem; padding-left: 1.2rem; font-size: .9rem; }
section.msg { border: 1px solid #ddd; border-left: 4px solid #bbb; border-radius: 6px; margin: .7rem 0; padding: .3rem .9rem .5rem; background: #fff; }
section.msg > h2 { font-size: .8rem; margin: .2rem 0 .3rem; color: #666; font-weight: 500; }
section.msg > h2 .role { font-weight: 700; color: #222; text-transform: uppercase; letter-spacing: .04em; margin-right: .5rem; }
section.user { border-left-color: #3b7ddd; background: #f4f8ff; }
section.assistant { border-left-color: #8a8a8a; }
section.tool { border-left-color: #b08800; }
section.system, section.developer { border-left-color: #c9a400; background: #fffdf0; }
section.out-of-context { opacity: .75; }
p.fact { font-size: .8rem; color: #777; margin: .3rem 0 .3rem .3rem; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; margin: .3rem 0; font: 12.5px/1.4 ui-monospace, SFMono-Regular, Menlo, monospace; background: #f6f8fa; padding: .4rem .6rem; border-radius: 4px; }
div.typed { white-space: pre-wrap; overflow-wrap: anywhere; margin: .2rem 0; }
div.md > :first-child { margin-top: .2rem; }
div.md > :last-child { margin-bottom: .2rem; }
div.md h1, div.md h2, div.md h3, div.md h4 { font-size: 1.05rem; margin: .7rem 0 .3rem; }
div.md code { font: 12.5px ui-monospace, SFMono-Regular, Menlo, monospace; background: #f0f0f0; padding: 0 .2rem; border-radius: 3px; }
div.md pre code { background: none; padding: 0; }
div.md table { border-collapse: collapse; }
div.md th, div.md td { border: 1px solid #ddd; padding: .2rem .5rem; }
details { margin: .3rem 0; }
summary { cursor: pointer; color: #333; }
details.reasoning, p.reasoning { color: #777; font-style: italic; }
details.reasoning > div.md, details.reasoning > pre { border-left: 2px solid #ddd; padding-left: .6rem; }
details.call { border: 1px solid #e3e3e3; border-radius: 5px; padding: .2rem .6rem; background: #fcfcfc; }
details.call > summary { font: 13px/1.5 ui-monospace, SFMono-Regular, Menlo, monospace; overflow-wrap: anywhere; }
details.call > summary .name { font-weight: 700; color: #6f42c1; }
details.call > summary .args { color: #555; }
.badge { font: 11px system-ui, sans-serif; border-radius: 3px; padding: 0 .3rem; margin-left: .4rem; background: #eee; color: #444; }
.badge.error, .error > summary .badge.state { background: #ffe3e3; color: #a00; }
details.error { border-color: #e5a0a0; }
div.result { border-top: 1px dashed #ddd; margin-top: .3rem; padding-top: .2rem; }
div.result > p, div.other > p, p.meta { font-size: .8rem; color: #666; margin: .2rem 0; }
div.result.error > p { color: #a00; font-weight: 600; }
pre.diff span { display: inline-block; width: 100%; }
pre.diff .add { background: #e6ffec; }
pre.diff .del { background: #ffebe9; }
pre.diff .hunk { color: #6f42c1; }
pre.out { max-height: 32rem; overflow: auto; }
p.subagent { font-size: .85rem; margin: .3rem 0; }
p.id, p.sub { font-size: .75rem; color: #888; margin: .3rem 0 .1rem; }
section.msg p.fact { margin-left: 0; }
figure { margin: .4rem 0; }
img { max-width: 100%; height: auto; border: 1px solid #ddd; border-radius: 4px; }
p.placeholder { font-size: .85rem; color: #666; border: 1px dashed #bbb; padding: .3rem .6rem; }
div.boundary { border-top: 3px double #2a7; border-bottom: 3px double #2a7; margin: 1.2rem 0; padding: .4rem .8rem; background: #f0fff4; }
table.sessions { border-collapse: collapse; width: 100%; font-size: .9rem; }
table.sessions th, table.sessions td { text-align: left; padding: .25rem .5rem; border-bottom: 1px solid #eee; vertical-align: top; }
table.sessions td.num, table.sessions th.num { text-align: right; font-variant-numeric: tabular-nums; }
table.sessions tr.child td.title { padding-left: 1.6rem; }
table.sessions tr.child td.title::before { content: "\\21B3  "; color: #999; }
table.sessions td.id { font: 11px ui-monospace, monospace; color: #777; overflow-wrap: anywhere; }
"""
_STYLE = _CSS + code_css()
_CSS_HASH = base64.b64encode(hashlib.sha256(_STYLE.encode()).digest()).decode()
#: No script, no connection, no frame, no form; the one inline stylesheet by its hash;
#: images only from ``data:`` URLs or beside the page (``images/``, `export_html`).
CSP = (
    f"default-src 'none'; style-src 'sha256-{_CSS_HASH}'; img-src data: 'self'; script-src 'none'; "
    "base-uri 'none'; form-action 'none'; frame-src 'none'"
)

_ROLES = frozenset({"user", "assistant", "tool", "system", "developer"})


def esc_line(text: str) -> str:
    """`esc` for one-line labels (titles, names): newlines and tabs shown as ``\\n``/``\\t``."""
    return html.escape(one_line(text), quote=True)


@dataclass
class Images:
    """Where a page's images go: inline up to `INLINE_IMAGE_CAP`; a larger one into `files`
    (``images/<sha256>.<ext>``, for `export_html` to write beside the page) when ``beside``,
    else nowhere (the page shows a placeholder with its type and size)."""

    beside: bool = False
    files: dict[str, bytes] = field(default_factory=dict)

    def source(self, image: ImagePart, media_type: str) -> str | None:
        """The ``src`` of ``image`` (which has bytes), or None for a placeholder."""
        assert image.data is not None
        if len(image.data) <= INLINE_IMAGE_CAP:
            return f"data:{media_type};base64,{base64.b64encode(image.data).decode()}"
        if not self.beside:
            return None
        extension = media_type.split("/", 1)[1].split("+", 1)[0]
        name = f"{IMAGES}/{hashlib.sha256(image.data).hexdigest()}.{extension}"
        self.files[name] = image.data
        return name


def _size(count: int) -> str:
    return f"{count / 1024:,.1f} KiB" if count < 1024 * 1024 else f"{count / 1024 / 1024:,.1f} MiB"


def html_page(title: str, body: list[str]) -> str:
    head = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{html.escape(CSP, quote=True)}">',
        '<meta name="referrer" content="no-referrer">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc_line(title)}</title>",
        f"<style>{_STYLE}</style>",
        "</head>",
        "<body>",
    ]
    return "\n".join([*head, *body, "</body>", "</html>"]) + "\n"


def page_link(session_id: str, label: str) -> str:
    return f'<a href="{html.escape(page_name(session_id), quote=True)}">{esc_line(label)}</a>'


# ---------------------------------------------------------------------------------------
# Parts
# ---------------------------------------------------------------------------------------


def _image(image: ImagePart, images: Images) -> list[str]:
    media_type = image_type(image)
    if image.data is None:
        url = image.url or ""
        shown = (
            f'<a href="{esc(url)}">{esc_line(url)}</a>'
            if url.startswith(("https://", "http://"))
            else esc_line(url)
        )
        return [f'<p class="placeholder">image at {shown} (not fetched)</p>']
    label = f"{media_type or 'image of unknown type'}, {_size(len(image.data))}"
    source = images.source(image, media_type or "application/octet-stream")
    if source is None:
        return [
            f'<p class="placeholder">[image: {esc_line(label)}: over the {INLINE_IMAGE_CAP // 1024} KiB '
            "a single page inlines; <code>export --all</code> writes it beside the pages]</p>"
        ]
    return [f'<figure><img src="{html.escape(source, quote=True)}" alt="{esc_line(label)}"></figure>']


def _other(part: OtherPart) -> list[str]:
    kind = part.raw.get("type") if isinstance(part.raw, dict) else None
    described = part.description
    if described is not None:  # a known value (a web search, a tool reference): what it says, shown
        name, text = described
        label = f"<b>{esc_line(name)}</b>" + (f": {esc_line(text)}" if text else "")
    else:
        label = esc_line(f"other: {kind}" if isinstance(kind, str) else "other content")
    return [
        f'<details class="other"><summary>{label} <span class="badge">as stored</span></summary>',
        code_block(json_text(part.raw), "json"),
        "</details>",
    ]


def _result_body(content: str | list[Part], images: Images) -> list[str]:
    if isinstance(content, str):
        return [f'<pre class="out">{esc(content)}</pre>'] if content else ['<p class="empty">(empty)</p>']
    out: list[str] = []
    for part in content:
        metadata = result_metadata(part)
        if metadata is not None:
            facts = " · ".join(f"{key} {json_text(value)}" for key, value in metadata.items())
            out.insert(0, f'<p class="meta">{esc_line(facts)}</p>')
        elif isinstance(part, TextPart):
            out.append(f'<pre class="out">{esc(part.text)}</pre>')
        else:
            out += _part(part, {}, 0, images)
    return out or ['<p class="empty">(empty)</p>']


def _result(result: ToolResultPart, images: Images, label: str) -> list[str]:
    cls = "result error" if result.is_error else "result"
    heading = f"{label} · error" if result.is_error else label
    return [
        f'<div class="{cls}">',
        f"<p>{esc_line(heading)}</p>",
        *_result_body(result.content, images),
        "</div>",
    ]


def _diff(text: str) -> str:
    lines = []
    for line in text.split("\n"):
        kind = line_kind(line)
        lines.append(f'<span class="{kind}">{esc(line)}</span>' if kind else esc(line))
    return '<pre class="diff">' + "\n".join(lines) + "</pre>"


def _call(
    call: ToolCallPart, answer: Answer | None, images: Images, child: SessionSummary | None
) -> list[str]:
    name = call.name or "(unnamed tool)"
    if answer is None:
        state = '<span class="badge state">no result</span>'
    elif answer.part.is_error:
        state = '<span class="badge state error">error</span>'
    else:
        state = ""
    error = answer is not None and answer.part.is_error
    diff = edit_diff(call)
    out = [
        f'<details class="call{" error" if error else ""}"{" open" if error else ""}>',
        f'<summary>→ <span class="name">{esc_line(name)}</span>'
        f'(<span class="args">{esc_line(arguments_preview(call.arguments))}</span>){state}</summary>',
    ]
    if diff is not None:
        out.append(_diff(diff))
        out += [
            "<details><summary>arguments</summary>",
            code_block(json_text(call.arguments), "json"),
            "</details>",
        ]
    else:
        out.append(code_block(json_text(call.arguments), "json"))
    out.append(f'<p class="id">call id {esc_line(str(call.id))}</p>' if call.id is not None else "")
    if child is not None:
        label = child.title or child.agent_name or child.session_id
        out.append(f'<p class="subagent">sub-agent session: {page_link(child.session_id, label)}</p>')
    if answer is not None:
        where = f"result (#{answer.record.sequence})"
        out += _result(answer.part, images, where)
    out.append("</details>")
    return out


#: An out-of-context text longer than this many lines or characters (a skill listing, a
#: hook's output, a tool list an agent harness injects) is shown folded, its first line
#: in the summary: every character stays in the page (and in the browser's find), but the
#: conversation is not pushed out of sight by what the model never saw.
_FOLD_LINES, _FOLD_CHARS = 6, 600


def _folded(text: str) -> list[str]:
    """A long out-of-context text in a closed ``<details>``, its first line and size in the summary."""
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    shown = first if len(first) <= 120 else first[:119] + "\u2026"
    lines = len(text.splitlines())
    size = f"{lines} line{'' if lines == 1 else 's'}, {len(text):,} characters"
    return [
        f'<details class="folded"><summary>{esc_line(shown)} <span class="badge">{size}</span></summary>',
        f'<div class="typed">{esc(text)}</div>',
        "</details>",
    ]


def _part(
    part: Part,
    answers: dict[int, Answer],
    index: int,
    images: Images,
    role: str = "",
    transcript: Transcript | None = None,
    in_context: bool = True,
) -> list[str]:
    if isinstance(part, TextPart):
        if not in_context and (len(part.text) > _FOLD_CHARS or part.text.count("\n") >= _FOLD_LINES):
            return _folded(part.text)
        # A model writes Markdown; a person's prompt, a system text and what a tool injects
        # are read as typed, line breaks kept, the way the agents themselves show them.
        return (
            [markdown(part.text)] if role == "assistant" else [f'<div class="typed">{esc(part.text)}</div>']
        )
    if isinstance(part, ReasoningPart):
        if not part.text:
            return ['<p class="reasoning">reasoning (encrypted by the provider)</p>']
        return [
            '<details class="reasoning" open><summary>reasoning</summary>',
            markdown(part.text),
            "</details>",
        ]
    if isinstance(part, ToolCallPart):
        return _call(part, answers.get(index), images, transcript.started(part) if transcript else None)
    if isinstance(part, ToolResultPart):
        return _result(part, images, f"result of call {part.tool_call_id} (no call before it)")
    if isinstance(part, ImagePart):
        return _image(part, images)
    return _other(part)


# ---------------------------------------------------------------------------------------
# Entries and pages
# ---------------------------------------------------------------------------------------


def _boundary_html(entry: Entry) -> list[str]:
    return [
        f'<div class="boundary" id="snapshot-{entry.snapshot_version}">',
        f"<p><strong>Compaction (snapshot {entry.snapshot_version}):</strong> records #1 to #{entry.sequence} "
        "are replaced in the model context by this summary:</p>",
        markdown(entry.text),
        "</div>",
    ]


def _fact_html(entry: Entry) -> str:
    return f'<p class="fact" id="r{entry.sequence}">{esc_line(" · ".join(facts(entry)))}</p>'


def runs(items: list[Entry]) -> list[list[Entry]]:
    """Entries in runs of one role, the way a person reads a turn: a Codex turn stores each
    reasoning item, call and token count as a record of its own, and reads as one card."""
    out: list[list[Entry]] = []
    for entry in items:
        last = out[-1] if out else None
        if last is not None and entry.role != "boundary" and last[0].role == entry.role:
            last.append(entry)
        else:
            out.append([entry])
    return out


def _run_html(run: list[Entry], images: Images, transcript: Transcript) -> list[str]:
    first = run[0]
    if first.role == "boundary":
        return _boundary_html(first)
    if all(entry.fact for entry in run):
        return [_fact_html(entry) for entry in run]
    role_class = first.role if first.role in _ROLES else "other"
    outside = all(not entry.in_context for entry in run)
    lines = [f'<section class="msg {role_class}{" out-of-context" if outside else ""}">']
    heading = f'<span class="role">{esc_line(first.role)}</span>'
    for position, entry in enumerate(run):
        if entry.fact:
            lines.append(_fact_html(entry))
            continue
        # The kind of an imported line that is no plain message (`summary`, `attachment:...`), as show's header names it.
        label = f"#{entry.sequence} {entry.kind}" if entry.kind else f"#{entry.sequence}"
        meta = esc_line(" · ".join([label, *facts(entry)[1:]]))
        if position == 0:
            lines.append(f'<h2 id="r{entry.sequence}">{heading}{meta}</h2>')
        else:
            if len(lines) == 1:
                lines.append(f"<h2>{heading}</h2>")
            lines.append(f'<p class="sub" id="r{entry.sequence}">{meta}</p>')
        for index, part in entry.parts:
            lines += _part(part, entry.answers, index, images, entry.role, transcript, entry.in_context)
    lines.append("</section>")
    return lines


def project_of(summary: SessionSummary) -> str | None:
    """The project a session belongs to, as its metadata records it (``cwd``, ``project`` or
    ``repository``, the first that is a string), else None."""
    for key in ("cwd", "project", "repository"):
        value = summary.metadata.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _header_facts(transcript: Transcript) -> list[tuple[str, str]]:
    summary = transcript.summary
    facts_out = [("session", esc_line(summary.session_id))]
    if summary.agent_name:
        facts_out.append(("agent", esc_line(summary.agent_name)))
    facts_out.append(("format", esc_line(summary.dialect)))
    project = project_of(summary)
    if project:
        facts_out.append(("project", esc_line(project)))
    if summary.parent_session_id:
        facts_out.append(("parent session", page_link(summary.parent_session_id, summary.parent_session_id)))
    if summary.fork is not None:
        source = summary.fork.session_id
        facts_out.append(("forked from", f"{page_link(source, source)} after #{summary.fork.sequence}"))
    calls = calls_in(transcript)
    facts_out.append(
        ("records", f"{summary.message_count:,} · {calls:,} tool call{'' if calls == 1 else 's'}")
    )
    facts_out.append(("created", esc_line(when(summary.created_at))))
    facts_out.append(("last append", esc_line(when(summary.updated_at))))
    totals = transcript.totals
    facts_out.append(("tokens", esc_line(f"{totals.total_tokens:,} ({tokens_label(totals)})")))
    facts_out.append(("cost", esc_line(transcript.cost_label)))
    return facts_out


@with_deep_stack  # whatever append accepts, however deep the caller's stack (spec §4)
def render_html(transcript: Transcript, *, in_site: bool = False, images: Images | None = None) -> str:
    """A `Transcript` as one HTML page; ``in_site``: with a link to the index beside it.

    ``images`` receives the images over `INLINE_IMAGE_CAP` to write beside the page (give
    ``Images(beside=True)``); without it they are placeholders.
    """
    images = images if images is not None else Images()
    title = headline(transcript)
    body = [
        "<header>",
        *([f'<nav><a href="{INDEX}">all sessions</a></nav>'] if in_site else []),
        f"<h1>{esc_line(title)}</h1>",
        '<dl class="facts">',
        *(f"<dt>{name}</dt><dd>{value}</dd>" for name, value in _header_facts(transcript)),
        "</dl>",
    ]
    if transcript.children:
        body.append('<p>Sub-agent sessions:</p><ul class="children">')
        for child in transcript.children:
            label = child.title or child.agent_name or child.session_id
            body.append(f"<li>{page_link(child.session_id, label)} · {child.message_count:,} records</li>")
        body.append("</ul>")
    body += ["</header>", "<main>"]
    for run in runs(entries(transcript)):
        body += _run_html(run, images, transcript)
    body.append("</main>")
    return html_page(title, body)


def to_html(store: SessionStore, session_id: str) -> str:
    """``session_id`` as one self-contained HTML page.

    Parent and sub-agent sessions link to their ``session-<id>.html`` beside it, as
    `export_html` names them; an image over `INLINE_IMAGE_CAP` is a placeholder with its
    type and size. Raises what `collect` raises (`SessionNotFound` for an unknown session).
    """
    return render_html(collect(store, session_id))


__all__ = [
    "CSP",
    "IMAGES",
    "INDEX",
    "INLINE_IMAGE_CAP",
    "Images",
    "esc",
    "headline",
    "project_of",
    "render_html",
    "to_html",
]
