"""The lines of a JSON string inside encoded bytes, as redaction's pre-filter judges them.

A large value (a long tool output) has only the lines around the places a secret may be
judged (`jsonl_store._text.redact_prefilter`), each by a function the caller gives
(`LineJudge`), straight from the encoded bytes: a line there ends at a newline's escape
(``\\n``) or at the string's closing quote, never at a quote or ``n`` a backslash escapes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

#: What a caller judges each line of a large value with (`redact_prefilter._large_may_hold`): given the
#: bytes of one line as they stand inside a JSON string, whether it may hold a certain
#: secret (True too when it cannot tell, such as for bytes that do not decode).
LineJudge = Callable[[bytes], bool]
#: How far from a separator its line's ends are looked for.
LINE_LIMIT: Final = 16 * 1024


def line_at(data: bytes, at: int) -> tuple[int, int] | None:
    """The line of the JSON string of encoded ``data`` that holds ``data[at]``: where its
    bytes start and end. A line ends at a newline (its escape, \\n) or at the string's
    end; None when an end is farther than `LINE_LIMIT`."""
    start, end = _line_start(data, at), _line_end(data, at)
    if start is None or end is None:
        return None
    return start, end


def _escaped(data: bytes, at: int) -> bool:
    """Whether ``data[at]`` follows an odd run of backslashes: escaped, part of the escape before it."""
    run = at
    while run > 0 and data[run - 1] == 0x5C:
        run -= 1
    return (at - run) % 2 == 1


def _line_start(data: bytes, at: int) -> int | None:
    """Just after the string's opening quote or the newline escape before ``data[at]``."""
    low, high = max(0, at - LINE_LIMIT), at
    while True:
        quote, newline = data.rfind(b'"', low, high), data.rfind(b"\\n", low, high)
        edge = max(quote, newline)
        if edge < 0:
            return None
        if not _escaped(data, edge):
            return edge + (1 if edge == quote else 2)
        high = edge


def _line_end(data: bytes, at: int) -> int | None:
    """The string's closing quote or the newline escape after ``data[at]``."""
    low, high = at + 1, min(len(data), at + LINE_LIMIT)
    while True:
        quote, newline = data.find(b'"', low, high), data.find(b"\\n", low, high)
        edge = min(quote, newline) if quote >= 0 and newline >= 0 else max(quote, newline)
        if edge < 0:
            return None
        if not _escaped(data, edge):
            return edge
        low = edge + 1


def line_holds_at(data: bytes, at: int, checked: set[int], budget: int, line_holds: LineJudge) -> bool:
    """Whether the line around ``at`` holds a certain secret, each line judged once (``checked``);
    True too when the line's ends cannot be found or more than ``budget`` lines were judged,
    so the caller searches all of the text."""
    line = line_at(data, at)
    if line is None:
        return True
    start, end = line
    if start in checked:
        return False
    if len(checked) >= budget:
        return True
    checked.add(start)
    return line_holds(data[start:end])
