"""What a command prints, before it knows where to: plain lines, styled lines and tables.

The formatter builds these; `_term` turns them into text for the output at hand -- plain
text for a pipe or a file, and on a terminal (with rich, the ``cli`` extra) colour and
tables drawn to the terminal's width. A style is only a hint: the plain form of every
block is the same text without it, so a script reads the same words as a person.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from ._safe import escape


@dataclasses.dataclass(frozen=True, slots=True)
class Styled:
    """One line in parts, each ``(text, style)``; a style is a rich style name, ``""`` for none."""

    parts: tuple[tuple[str, str], ...]

    @property
    def plain(self) -> str:
        return "".join(text for text, _ in self.parts)


@dataclasses.dataclass(frozen=True, slots=True)
class Table:
    """Rows of cells under a header; ``right`` names the right-aligned columns, ``wrap``
    the ones a terminal too narrow for the table may wrap (the others, ids and numbers,
    are never cut)."""

    header: tuple[str, ...]
    rows: Sequence[Sequence[str]]
    right: frozenset[int] = frozenset()
    wrap: frozenset[int] = frozenset()

    def lines(self) -> list[str]:
        """The table as plain lines: columns padded to their widest cell, two spaces apart."""
        # Cells are escaped here, not only when printed, so widths count what is shown.
        rows = [list(self.header), *([escape(cell) for cell in row] for row in self.rows)]
        widths = [max(len(row[i]) for row in rows) for i in range(len(self.header))]
        out = []
        for row in rows:
            cells = [
                cell.rjust(w) if i in self.right else cell.ljust(w)
                for i, (cell, w) in enumerate(zip(row, widths, strict=True))
            ]
            out.append("  ".join(cells).rstrip())
        return out


#: One thing to print: a line of text, a styled line, or a table.
Block = str | Styled | Table


def plain_lines(blocks: Sequence[Block]) -> list[str]:
    """The blocks as lines of plain text (not yet escaped, but table cells)."""
    out: list[str] = []
    for block in blocks:
        if isinstance(block, Table):
            out.extend(block.lines())
        elif isinstance(block, Styled):
            out.append(block.plain)
        else:
            out.append(block)
    return out


__all__ = ["Block", "Styled", "Table", "plain_lines"]
