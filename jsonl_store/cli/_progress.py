"""A progress bar for the command's long operations, shown only to a person.

Import, search, ``export --all`` and ``verify`` over many sessions can take a while; on a
terminal they show a bar on stderr, and when stderr is piped, redirected, or rich (the
``cli`` extra) is not installed, they show nothing, so their output stays the same for
scripts. The bar is drawn by rich (https://rich.readthedocs.io/en/stable/progress.html),
which redraws in place and leaves no control sequence behind once it is done; the
labels it shows are escaped first, since they may name stored things.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

from ._safe import escape


class Progress(Protocol):
    """What a long operation reports to: how far it got, and what it works on now."""

    def advance(self, steps: int = 1) -> None: ...

    def describe(self, label: str) -> None: ...


class _Silent:
    """The bar when nobody watches: every report is dropped."""

    def advance(self, steps: int = 1) -> None:
        pass

    def describe(self, label: str) -> None:
        pass


class _Bar:
    """One rich task of a live `rich.progress.Progress`."""

    def __init__(self, progress: object, task: object) -> None:
        self._progress = progress
        self._task = task

    def advance(self, steps: int = 1) -> None:
        self._progress.advance(self._task, steps)  # type: ignore[attr-defined]

    def describe(self, label: str) -> None:
        # rich reads markup in descriptions: a stored "[bold]" must show as written.
        from rich.markup import escape as markup_escape

        self._progress.update(self._task, description=markup_escape(escape(label)))  # type: ignore[attr-defined]


def wanted(stream: object | None = None) -> bool:
    """Whether a bar should be drawn on ``stream`` (default stderr): a terminal, and not ``TERM=dumb``."""
    stream = sys.stderr if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    if isatty is None or not isatty():
        return False
    return os.environ.get("TERM") != "dumb"


@contextmanager
def progress(label: str, total: int | None) -> Iterator[Progress]:
    """A bar labelled ``label`` counting to ``total`` steps (``None``: unknown), or a silent one.

    The bar goes to stderr, so ``jsonl-store search ... > hits.txt`` on a terminal shows
    progress while the hits go to the file.
    """
    if not wanted():
        yield _Silent()
        return
    try:
        from rich.console import Console
        from rich.markup import escape as markup_escape
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn
        from rich.progress import Progress as RichProgress
    except ImportError:  # the cli extra is not installed: the command works, without a bar
        yield _Silent()
        return
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
    )
    # transient: the finished bar is erased, so what stays on screen is the command's output.
    with RichProgress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(markup_escape(escape(label)), total=total)
        yield _Bar(bar, task)


__all__ = ["Progress", "progress", "wanted"]
