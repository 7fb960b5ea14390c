"""What the command writes is safe for a terminal and for any output encoding.

Everything the store holds is untrusted text: a title, an agent name, a message, a tool's
arguments or output may hold escape sequences (``\\x1b[2J`` clears the screen,
``\\x1b]0;...\\x07`` sets the window title, ``\\x9b`` is a one-byte CSI to some
terminals), a ``\\r`` or backspaces that overwrite what was printed before them, or
bidirectional overrides (``\\u202e``) that make text read differently from what it is.
A path under a user's ``--root`` may hold any byte but ``/`` and NUL.

So every line of text the command prints goes through `escape`, which shows each such
character in Python's notation -- ``\\x1b``, ``\\r``, ``\\n``, ``\\t``, ``\\u202e``,
and ``\\xff`` for a byte of a path that is not UTF-8 -- and JSON output goes through
`json_text`, which writes the same characters as JSON ``\\u`` escapes (the decoded value is
unchanged). Then `encodable` makes the text fit the output's encoding: under
``PYTHONIOENCODING=ascii`` an ``é`` is shown as ``\\xe9`` instead of raising
`UnicodeEncodeError`. Backslashes are not doubled: the text output is for reading (code
with backslashes stays readable); ``cat`` and ``--json`` are the exact form.
"""

from __future__ import annotations

import codecs
import re
from typing import TextIO

# The characters never written raw: C0 controls and DEL, C1 controls (U+0080-U+009F, which
# some terminals obey like ESC sequences), the bidirectional marks, embeddings, overrides
# and isolates (U+061C, U+200E/F, U+202A-U+202E, U+2066-U+2069), the line and paragraph
# separators, and lone surrogates (a path's non-UTF-8 bytes; they cannot be encoded).
# Joiners and variation selectors stay: emoji sequences need them and they move no text.
_CONTROLS = "\x00-\x1f\x7f-\x9f"
_OTHERS = "\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff"
_UNSAFE = re.compile(f"[{_CONTROLS}{_OTHERS}]")
# In JSON a raw "\n" can only be the encoder's indentation (inside strings it writes
# "\n" as an escape), so it is the one control JSON output keeps.
_UNSAFE_IN_JSON = re.compile(f"[\x00-\x09\x0b-\x1f\x7f-\x9f{_OTHERS}]")
_NON_ASCII = re.compile("[^\x00-\x7f]")
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
# The few non-ASCII marks the command itself prints, spelled in ASCII where the output
# cannot encode them (a separator shown as "\xb7" would read as data).
_ASCII_MARKS = str.maketrans({"·": "-", "→": "->", "…": "..."})


def _shown(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that is not UTF-8, as Python decodes paths and argv
        return f"\\x{code - 0xDC00:02x}"
    return _NAMED.get(char) or (f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}")


def escape(text: str) -> str:
    """``text`` as one line a terminal shows as it is: every unsafe character escaped.

    Newlines and tabs are escaped too: a caller that lays text out over several lines
    splits it first (and expands tabs), so a newline in a title cannot forge a line.
    """
    return _UNSAFE.sub(_shown, text)


def _json_escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code > 0xFFFF:  # JSON spells a character beyond the BMP as a UTF-16 pair
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def json_escape(text: str) -> str:
    """JSON ``text`` with every unsafe character (but the layout ``\\n``) as a ``\\u`` escape."""
    return _UNSAFE_IN_JSON.sub(_json_escape, text)


def json_text(data: bytes, stream: object) -> str:
    """JSON bytes as text for ``stream``: the same JSON value, with no unsafe character raw.

    JSON encoders escape C0 controls but write DEL, C1 controls, bidi overrides and U+2028
    raw (all valid JSON); here they become ``\\u`` escapes, so ``jq`` reads the same
    strings and a terminal sees no control. Outside strings JSON is ASCII, so escaping
    every non-ASCII character (for an output that cannot encode it) keeps it valid.
    """
    text = json_escape(data.decode("utf-8", "surrogateescape"))
    if not _is_unicode(stream):
        text = _NON_ASCII.sub(_json_escape, text)
    return text


def _is_unicode(stream: object) -> bool:
    """Whether ``stream`` can encode every character (UTF-8, or one of the UTF-16/32)."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        name = codecs.lookup(encoding).name
    except LookupError:
        return False
    return name.startswith("utf")


def encodable(text: str, stream: object) -> str:
    """``text`` changed only where ``stream``'s encoding cannot hold every character.

    Then each character it cannot hold is shown escaped (``é`` as ``\\xe9``), except the
    command's own marks, which become ASCII (``→`` as ``->``, ``…`` as ``...``).
    """
    if _is_unicode(stream):
        return text
    encoding = getattr(stream, "encoding", None) or "ascii"
    text = text.translate(_ASCII_MARKS)
    try:
        return text.encode(encoding, "backslashreplace").decode(encoding)
    except LookupError:
        return text.encode("ascii", "backslashreplace").decode("ascii")


def write_lines(stream: TextIO, lines: list[str]) -> None:
    """Write each line escaped, encodable, and ended by a newline."""
    stream.write(encodable("".join(escape(line) + "\n" for line in lines), stream))


__all__ = ["encodable", "escape", "json_escape", "json_text", "write_lines"]
