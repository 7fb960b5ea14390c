"""Stored text as HTML: Markdown rendered and sanitised, code highlighted, or escaped plain text.

With the ``html`` extra (markdown-it-py, nh3, Pygments), a message's text is read as
CommonMark (https://spec.commonmark.org/) with tables and strikethrough, raw HTML
off (``<div>`` in a message is text, as written) and images off (``![a](u)`` is a
link to ``u``, never fetched); fenced code is highlighted by Pygments into classes
whose colours are in the page's one stylesheet. The result then goes through nh3
(https://nh3.readthedocs.io/, the Rust ammonia sanitiser): only the tags and
attributes listed here survive and a link keeps only an ``http``, ``https`` or
``mailto`` URL, so no script, handler or ``javascript:`` URL can reach the page even if
the Markdown renderer let one through. Without the extra every text is escaped into a
``<pre>`` block, as written.
"""

from __future__ import annotations

import functools
import html
from collections.abc import Callable
from typing import Any

from ._transcript import visible

#: What a rendered message may hold: CommonMark's output, GFM tables and strikethrough.
_TAGS = frozenset(
    {"p", "br", "hr", "em", "strong", "del", "s", "code", "pre", "span", "a", "blockquote"}
    | {"ul", "ol", "li", "h1", "h2", "h3", "h4", "h5", "h6"}
    | {"table", "thead", "tbody", "tr", "th", "td"}
)
_ATTRIBUTES = {"a": {"href", "title"}, "code": {"class"}, "span": {"class"}, "ol": {"start"}}
_SCHEMES = frozenset({"http", "https", "mailto"})


def esc(text: str) -> str:
    """Stored text for an HTML element's content or an attribute: nothing hidden, nothing markup."""
    return html.escape(visible(text), quote=True)


def available() -> bool:
    """True when the ``html`` extra is installed (Markdown rendering and highlighting)."""
    return _renderer() is not None


@functools.cache
def _renderer() -> Callable[[str], str] | None:
    try:
        import nh3
        from markdown_it import MarkdownIt
    except ImportError:
        return None
    parser = MarkdownIt("commonmark", {"html": False, "highlight": _fence}).enable(["table", "strikethrough"])
    parser.disable("image")

    def render(text: str) -> str:
        return nh3.clean(
            parser.render(visible(text)),
            tags=set(_TAGS),
            attributes={tag: set(names) for tag, names in _ATTRIBUTES.items()},
            url_schemes=set(_SCHEMES),
            link_rel="noopener noreferrer nofollow",
        )

    return render


def markdown(text: str) -> str:
    """A message's text as HTML: rendered Markdown with the extra, else an escaped ``<pre>`` block."""
    render = _renderer()
    if render is None:
        return f'<pre class="plain">{esc(text)}</pre>'
    return f'<div class="md">{render(text)}</div>'


def _fence(code: str, language: str, _attributes: Any) -> str:
    # markdown-it wraps what this returns in <pre><code class="language-...">.
    return highlighted(code, language) or html.escape(code)


def highlighted(code: str, language: str) -> str | None:
    """``code`` as Pygments' HTML spans for ``language`` (a lexer alias), or None when it has none."""
    try:
        from pygments import highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import get_lexer_by_name
        from pygments.util import ClassNotFound
    except ImportError:
        return None
    try:
        lexer = get_lexer_by_name(language.strip().split()[0] if language.strip() else "text")
    except (ClassNotFound, IndexError):
        return None
    return str(highlight(visible(code), lexer, HtmlFormatter(nowrap=True)))


def code_block(code: str, language: str) -> str:
    """``code`` in a ``<pre>`` block, highlighted when Pygments knows ``language``."""
    spans = highlighted(code, language)
    return f'<pre class="code">{spans if spans is not None else esc(code)}</pre>'


@functools.cache
def code_css() -> str:
    """The highlighting colours (Pygments' default style, scoped to ``pre``), or empty without it."""
    try:
        from pygments.formatters import HtmlFormatter
    except ImportError:
        return ""
    return str(HtmlFormatter(style="default").get_style_defs("pre"))


__all__ = ["available", "code_block", "code_css", "esc", "highlighted", "markdown"]
