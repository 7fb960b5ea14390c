"""Where the output goes: a terminal gets colour, its own width and a pager; a pipe gets plain text.

`screen` looks at stdout once: whether it is a terminal, how wide and tall it is, whether
to colour (never with ``NO_COLOR`` set, https://no-color.org, nor for ``TERM=dumb``), and
whether rich (the ``cli`` extra) is there to draw with. `write` prints blocks for that
screen, and `show` also hands output longer than the screen to a pager, as git does
(``$PAGER``, else ``less -R``; ``LESS=FRX`` unless ``LESS`` is set,
https://git-scm.com/docs/git-config#Documentation/git-config.txt-corepager).

Whatever the screen, every piece of stored text is escaped first (`_safe.escape`), and
rich only renders a style around text already escaped, never markup, so a stored
``[bold]`` or ``:smile:`` prints as written. The only control sequences on the screen
are rich's own colours (SGR, ``ESC [ ... m``). Tables are laid out by `_blocks.Table` to
the terminal's width: text columns wrap, numbers are never cut.
"""

from __future__ import annotations

import dataclasses
import io
import os
import shlex
import shutil
import signal
import sys
from collections.abc import Sequence
from typing import TextIO

from ._blocks import Block, Styled, Table, plain_lines
from ._safe import encodable, escape

#: The width of text that goes to a pipe or a file (and of a terminal that will not say).
DEFAULT_WIDTH = 100
#: Below this width, text is still wrapped as if it were this wide (words stay whole).
MIN_WIDTH = 40


@dataclasses.dataclass(frozen=True, slots=True)
class Screen:
    """What the output can show."""

    #: stdout is a terminal.
    tty: bool
    #: Columns to wrap text to.
    width: int
    #: Rows of the terminal; 0 when unknown (a pipe, or a pseudo-terminal never sized).
    height: int
    #: Draw with rich: a terminal that is not ``TERM=dumb``, and rich is installed.
    rich: bool
    #: Colour and bold: `rich`, and ``NO_COLOR`` is not set.
    colour: bool


def _rich_available() -> bool:
    try:
        import rich.console  # noqa: F401  (imported lazily: the core does not need rich)
    except ImportError:
        return False
    return True


def _columns_from_environment() -> int:
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        return DEFAULT_WIDTH
    return columns if columns > 0 else DEFAULT_WIDTH


def screen(stream: TextIO | None = None) -> Screen:
    """The screen behind ``stream`` (default stdout)."""
    stream = sys.stdout if stream is None else stream
    try:
        tty = stream.isatty()
        fd = stream.fileno() if tty else -1
    except (AttributeError, OSError, ValueError):  # replaced in-process (pytest's capture)
        tty, fd = False, -1
    width, height = _columns_from_environment(), 0
    if tty:
        try:
            size = os.get_terminal_size(fd)
        except OSError:
            size = os.terminal_size((0, 0))
        # A pseudo-terminal nobody sized reports 0 x 0: wrap as for a pipe, never page.
        width = size.columns or width
        height = size.lines
    dumb = os.environ.get("TERM") == "dumb"
    drawn = tty and not dumb and _rich_available()
    colour = drawn and not os.environ.get("NO_COLOR")
    return Screen(tty=tty, width=max(width, MIN_WIDTH), height=height, rich=drawn, colour=colour)


def _rich_text(blocks: Sequence[Block], where: Screen) -> str:
    from rich.color import ColorSystem
    from rich.style import Style

    buffer = io.StringIO()
    styles: dict[str, Style] = {}

    def styled(text: str, style: str) -> str:
        if not style or not where.colour:
            return text
        if style not in styles:
            styles[style] = Style.parse(style)
        # The 16 standard colours and bold/dim: every colour terminal shows them. (A
        # line at a time through Style.render, not Console.print: a 5,000-record
        # transcript is 20,000 lines, and laying them out again would take seconds.)
        return styles[style].render(text, color_system=ColorSystem.STANDARD)

    for block in blocks:
        if isinstance(block, Table):
            # Laid out here, not by rich: rich narrows any column of a table too wide for
            # the terminal, numbers included, down to nothing (`Table.lines` never cuts one).
            header, rows = block.layout(where.width)
            buffer.write("".join(styled(line, "bold") + "\n" for line in header))
            buffer.write("".join(row + "\n" for row in rows))
        elif isinstance(block, Styled):
            buffer.write("".join(styled(escape(text), style) for text, style in block.parts) + "\n")
        else:
            buffer.write(escape(block) + "\n")
    return buffer.getvalue()


def render(blocks: Sequence[Block], where: Screen, stream: object) -> str:
    """The blocks as the text to write to ``stream``, escaped and encodable."""
    if where.rich:
        text = _rich_text(blocks, where)
    else:
        text = "".join(
            escape(line) + "\n" for line in plain_lines(blocks, where.width if where.tty else None)
        )
    return encodable(text, stream)


def write(blocks: Sequence[Block], *, stream: TextIO | None = None, where: Screen | None = None) -> None:
    """Print ``blocks`` on ``stream`` (default stdout) for its screen."""
    stream = sys.stdout if stream is None else stream
    stream.write(render(blocks, where or screen(stream), stream))


def pager_command() -> list[str] | None:
    """The pager to run: ``$PAGER`` (through the shell, as git runs it), else ``less -R``, else none."""
    configured = os.environ.get("PAGER")
    if configured is not None:
        # An empty PAGER, or cat, means "no pager" (as git reads it).
        if not configured.strip() or shlex.split(configured) == ["cat"]:
            return None
        return ["/bin/sh", "-c", configured]
    less = shutil.which("less")
    return [less, "-R"] if less else None


#: What the shell exits with when it cannot find or run the command (POSIX, "Command
#: Search and Execution"): the pager never ran, so nothing was shown.
_NOT_RUN = (126, 127)


def _run_pager(command: list[str], text: str, stream: TextIO) -> bool:
    """Feed ``text`` to the pager; False when it could not be started (then print it directly)."""
    env = dict(os.environ)
    env.setdefault("LESS", "FRX")  # quit if it fits, keep colours, leave the text on screen
    encoding = getattr(stream, "encoding", None) or "utf-8"
    stream.flush()
    try:
        import subprocess  # here: only a paged command starts a process (4 ms of every start-up)

        process = subprocess.Popen(command, stdin=subprocess.PIPE, env=env)
    except OSError:
        return False
    # The pager owns the terminal now: Ctrl-C is for it (less stops a search with it), and
    # this process waits for it to finish instead of dying under it.
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        assert process.stdin is not None
        try:
            process.stdin.write(text.encode(encoding, "backslashreplace"))
            process.stdin.close()
        except BrokenPipeError:  # the reader quit before reading everything: fine
            pass
        process.wait()
    finally:
        signal.signal(signal.SIGINT, previous)
    return process.returncode not in _NOT_RUN


def show(blocks: Sequence[Block], *, pager: bool = True) -> None:
    """Print ``blocks`` on stdout, through a pager when they are longer than the terminal.

    The pager runs only on a terminal of known height, and only when ``pager`` (the
    command's ``--no-pager`` unset) and the output has more lines than the screen.
    """
    stream = sys.stdout
    where = screen(stream)
    text = render(blocks, where, stream)
    if pager and where.tty and where.height and text.count("\n") >= where.height:
        command = pager_command()
        if command is not None and _run_pager(command, text, stream):
            return
    stream.write(text)


__all__ = ["DEFAULT_WIDTH", "Screen", "pager_command", "render", "screen", "show", "write"]
