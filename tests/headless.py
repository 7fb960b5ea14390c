"""Debian's chromium, headless, for the tests in ``tests/browser``.

``CHROMIUM`` is its path or None (the tests skip without it; ``.ci/run`` installs it).
`chromium` runs it once with a profile of its own, no GPU and no sandbox (root in CI);
no network is needed. `dom` loads a page and gives its DOM after the load event, as
parsed by `html.parser`, and the console lines chromium printed (a script error, a
Content-Security-Policy violation).
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def chromium(*args: str) -> subprocess.CompletedProcess[bytes]:
    """One headless chromium run with ``args``; raises when it fails or takes 2 minutes."""
    assert CHROMIUM is not None
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", *args],
        capture_output=True,
        timeout=120,
        check=True,
    )


@dataclass
class Element:
    """One element of a dumped DOM: its tag, attributes and the text inside it."""

    tag: str
    attrs: dict[str, str]
    text: list[str] = field(default_factory=list)
    #: The text not inside a label: a heading, or an exported page's one-line facts.
    content: list[str] = field(default_factory=list)

    @property
    def classes(self) -> set[str]:
        """The element's classes."""
        return set(self.attrs.get("class", "").split())


class Dom(HTMLParser):
    """Every element of a page, in document order, each with the text inside it."""

    _VOID = frozenset({"meta", "img", "br", "hr", "link", "input", "source", "wbr"})

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[Element] = []
        self._open: list[Element] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {name: value or "" for name, value in attrs})
        self.elements.append(element)
        if tag not in self._VOID:
            self._open.append(element)

    def handle_endtag(self, tag: str) -> None:
        for depth in range(len(self._open) - 1, -1, -1):
            if self._open[depth].tag == tag:
                del self._open[depth:]
                return

    def handle_data(self, data: str) -> None:
        for depth, element in enumerate(self._open):
            element.text.append(data)
            if not any(_label(inner) for inner in self._open[depth + 1 :]):
                element.content.append(data)

    def having(self, tag: str, cls: str | None = None) -> list[Element]:
        """The elements of ``tag`` (with the class ``cls``)."""
        return [e for e in self.elements if e.tag == tag and (cls is None or cls in e.classes)]


def _label(element: Element) -> bool:
    # A heading, or what an exported page writes as a record's facts (#4 · time · tokens).
    return element.tag in {"h1", "h2", "h3", "summary"} or bool(element.classes & {"sub", "fact"})


def dom(page: Path, *extra: str) -> tuple[Dom, str]:
    """The DOM of ``page`` after it loaded, and what chromium printed on its console."""
    loaded = chromium("--enable-logging=stderr", "--v=0", *extra, "--dump-dom", page.as_uri())
    parsed = Dom()
    parsed.feed(loaded.stdout.decode())
    console = "\n".join(
        line for line in loaded.stderr.decode(errors="replace").splitlines() if ":CONSOLE" in line
    )
    return parsed, console
