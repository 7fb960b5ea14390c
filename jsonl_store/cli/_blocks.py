"""What a command prints, before it knows where to: plain lines, styled lines and tables.

The formatter builds these; `_term` turns them into text for the output at hand -- plain
text for a pipe or a file, and on a terminal (with rich, the ``cli`` extra) colour and
tables drawn to the terminal's width. A style is only a hint: the plain form of every
block is the same text without it, so a script reads the same words as a person.
"""

from __future__ import annotations

import dataclasses
import textwrap
from collections.abc import Iterable, Sequence

from ._safe import escape


@dataclasses.dataclass(frozen=True, slots=True)
class Styled:
    """One line in parts, each ``(text, style)``; a style is a rich style name, ``""`` for none."""

    parts: tuple[tuple[str, str], ...]

    @property
    def plain(self) -> str:
        return "".join(text for text, _ in self.parts)


#: Two spaces between columns, as in the plain form of every table.
GAP = "  "
#: A column that wraps is not made narrower than this (nor than its header).
MIN_WRAPPED = 6


@dataclasses.dataclass(frozen=True, slots=True)
class Table:
    """Rows of cells under a header; ``right`` names the right-aligned columns, ``wrap``
    the ones a terminal too narrow for the table may wrap (ids, names, titles). The others
    (numbers, times) are never cut nor wrapped: a number shortened reads as another number."""

    header: tuple[str, ...]
    rows: Sequence[Sequence[str]]
    right: frozenset[int] = frozenset()
    wrap: frozenset[int] = frozenset()
    #: Columns of `wrap` whose cells wrap only between words (a time: its date over its
    #: clock), never inside one.
    whole_words: frozenset[int] = frozenset()
    #: A column (a session id) that is never wrapped: when the table is wider than the
    #: terminal, each row's cell of it gets a line of its own and the rest of the row is
    #: indented under it, so an id stays whole and can be copied from the screen.
    own_line: int | None = None

    def lines(self, width: int | None = None) -> list[str]:
        """The table as plain lines: columns padded to their widest cell, two spaces apart
        (`layout`'s header lines, then its rows)."""
        header, rows = self.layout(width)
        return [*header, *rows]

    def layout(self, width: int | None = None) -> tuple[list[str], list[str]]:
        """The header's lines and the rows' lines.

        With a ``width`` the table is fitted to it: first the columns in `wrap` are
        narrowed (widest first) and their cells wrapped over as many lines as they need;
        if that is not enough, the header's names wrap at their spaces too (``CACHE`` over
        ``READ``), so a number column is only as wide as its widest number. A table that
        cannot fit even so is wider than ``width``: a number is never cut.
        """
        # Cells are escaped here, not only when printed, so widths count what is shown.
        rows = [[escape(cell) for cell in row] for row in self.rows]
        k = self.own_line
        if width is not None and k is not None:
            natural = [max([len(name), *(len(row[i]) for row in rows)]) for i, name in enumerate(self.header)]
            if self._width(natural) > width:
                keep = [i for i in range(len(self.header)) if i != k]
                rest = self._without(k)
                header, lines = rest._fit([[row[i] for i in keep] for row in rows], width - len(GAP))
                out = []
                for row, row_lines in zip(rows, lines, strict=True):
                    out.append(row[k])
                    out.extend(GAP + line for line in row_lines)
                return [self.header[k], *(GAP + line for line in header)], out
        header, lines = self._fit(rows, width)
        return header, [line for row_lines in lines for line in row_lines]

    def _fit(self, rows: list[list[str]], width: int | None) -> tuple[list[str], list[list[str]]]:
        """The header's lines and each row's lines, ``rows`` (escaped) fitted to ``width``."""
        cells = [max((len(row[i]) for row in rows), default=0) for i in range(len(self.header))]
        names = [len(name) for name in self.header]
        widths = self._fitted([max(c, n) for c, n in zip(cells, names, strict=True)], names, rows, width)
        if width is not None and self._width(widths) > width:
            words = [_longest_word([name]) for name in self.header]
            widths = self._fitted([max(c, n) for c, n in zip(cells, words, strict=True)], words, rows, width)
        header = self._row_lines(list(self.header), widths, long_words=False)
        return header, [self._row_lines(row, widths) for row in rows]

    def _without(self, k: int) -> Table:
        """This table without column ``k`` (its cells still unescaped)."""
        keep = [i for i in range(len(self.header)) if i != k]
        moved = {old: new for new, old in enumerate(keep)}
        return Table(
            tuple(self.header[i] for i in keep),
            [[row[i] for i in keep] for row in self.rows],
            frozenset(moved[i] for i in self.right if i in moved),
            frozenset(moved[i] for i in self.wrap if i in moved),
            frozenset(moved[i] for i in self.whole_words if i in moved),
        )

    @staticmethod
    def _width(widths: list[int]) -> int:
        return sum(widths) + len(GAP) * (len(widths) - 1)

    def _fitted(
        self, widths: list[int], names: list[int], rows: list[list[str]], width: int | None
    ) -> list[int]:
        """``widths`` with the wrapping columns narrowed, widest first, until the table fits
        ``width``; none below its name's width ``names`` nor `MIN_WRAPPED` (nor, for
        `whole_words`, its longest word)."""
        if width is None:
            return widths
        widths = list(widths)
        floors = [max(name, MIN_WRAPPED) for name in names]
        for i in self.whole_words:
            floors[i] = max(floors[i], _longest_word(row[i] for row in rows))
        excess = self._width(widths) - width
        # Text first; a time wraps (its date over its clock) only when that is not enough.
        for columns in (self.wrap - self.whole_words, self.whole_words):
            while excess > 0:
                narrowable = [i for i in columns if widths[i] > floors[i]]
                if not narrowable:
                    break
                widest = max(narrowable, key=lambda i: widths[i])
                widths[widest] -= 1
                excess -= 1
        return widths

    def _row_lines(self, row: list[str], widths: list[int], *, long_words: bool = True) -> list[str]:
        """One row over as many lines as its widest wrapped cell needs."""
        cells = [
            textwrap.wrap(
                cell, w, break_long_words=long_words and i not in self.whole_words, break_on_hyphens=False
            )
            or [""]
            if len(cell) > w
            else [cell]
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ]
        height = max(len(lines) for lines in cells)
        return [
            self._line([lines[k] if k < len(lines) else "" for lines in cells], widths) for k in range(height)
        ]

    def _line(self, cells: list[str], widths: list[int]) -> str:
        padded = [
            cell.rjust(w) if i in self.right else cell.ljust(w)
            for i, (cell, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return GAP.join(padded).rstrip()


def _longest_word(texts: Iterable[str]) -> int:
    return max((len(word) for text in texts for word in text.split()), default=0)


#: One thing to print: a line of text, a styled line, or a table.
Block = str | Styled | Table


def plain_lines(blocks: Sequence[Block], width: int | None = None) -> list[str]:
    """The blocks as lines of plain text (not yet escaped, but table cells); tables fitted to
    ``width`` when one is given (`Table.lines`)."""
    out: list[str] = []
    for block in blocks:
        if isinstance(block, Table):
            out.extend(block.lines(width))
        elif isinstance(block, Styled):
            out.append(block.plain)
        else:
            out.append(block)
    return out


__all__ = ["GAP", "Block", "Styled", "Table", "plain_lines"]
