"""A table fitted to a terminal's width keeps every number whole and every character of its text.

`Table.layout` narrows only the text columns, wraps their cells, and wraps header names at
their spaces; whatever the cells and the width, each number column's cells appear whole on
the row's first line, and a text cell's wrapped pieces join back to its words.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from jsonl_store.cli._blocks import Table

HEADER = ("SESSION", "CALLS", "INPUT TOKENS", "UPDATED (UTC)", "TITLE")
RIGHT = frozenset({1, 2})
WRAP = frozenset({0, 3, 4})
WORDS = frozenset({3})

text = st.text(st.characters(codec="ascii", categories=["L", "N", "P"]), min_size=1, max_size=60)
number = st.integers(min_value=0, max_value=10**15).map(lambda n: f"{n:,}")
time = st.just("2026-12-02 06:18:03Z")
row = st.tuples(text, number, number, time, st.lists(text, min_size=1, max_size=6).map(" ".join))


def in_order(needle: str, haystack: str) -> bool:
    """Whether the characters of ``needle`` are in ``haystack`` in order."""
    rest = iter(haystack)
    return all(char in rest for char in needle)


@given(cells=row, width=st.integers(min_value=20, max_value=200))
def test_a_fitted_table_keeps_every_number_and_every_character(
    cells: tuple[str, str, str, str, str], width: int
) -> None:
    """At any width a row's numbers are whole words of its first line, and its text is all there, in order."""
    table = Table(HEADER, [cells], RIGHT, WRAP, WORDS)
    header, body = table.layout(width)
    natural = table.lines()
    if len(natural[1]) <= width and len(natural[0]) <= width:
        assert [*header, *body] == natural  # a table that fits is not touched
    first = body[0].split()
    assert cells[1] in first and cells[2] in first
    assert "2026-12-02" in first and "06:18:03Z" in " ".join(body).split()  # wrapped between its words only
    shown = "".join("".join(body).split())
    assert in_order(cells[0], shown) and in_order("".join(cells[4].split()), shown)
