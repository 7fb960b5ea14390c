"""Regular expressions matched in time linear in the text: RE2, through google-re2 (the ``regex`` extra).

Python's `re` backtracks: ``(a+)+$`` on 35 characters that end in no ``a`` tries every way
to split them, about 2**35 steps, and a C loop that long does not even stop for Ctrl-C.
RE2 (https://github.com/google/re2/wiki/WhyRE2) runs in time linear in the text for
every pattern it accepts, and refuses the few constructs that cannot be matched that way
(backreferences, lookaround, possessive and atomic groups): those raise
`UnsupportedRegex`. Without the extra a regular expression is refused with
`RegexUnavailable` rather than matched by an engine that can run forever.

google-re2 ships no type information, so it is loaded by name and used through the two
small protocols below.
"""

from __future__ import annotations

import importlib
import re
from typing import Protocol

from .._errors import InvalidArgument, RegexUnavailable, UnsupportedRegex

#: What `RegexUnavailable` tells a user to install.
EXTRA = "pip install 'jsonl_store[regex]'"
SYNTAX = "https://github.com/google/re2/wiki/Syntax"


class Match(Protocol):
    def span(self) -> tuple[int, int]: ...


class Pattern(Protocol):
    def search(self, text: str) -> Match | None: ...


def compile_linear(text: str) -> Pattern:
    """``text`` compiled by RE2 (its syntax: `SYNTAX`).

    Raises `RegexUnavailable` (an `ImportError`) when google-re2 is not installed,
    `UnsupportedRegex` (an `InvalidArgument`) for a construct RE2 lacks that Python's
    `re` has, and `InvalidArgument` (a `ValueError`) for a pattern that is no regular
    expression at all.
    """
    try:
        engine = importlib.import_module("re2")
    except ImportError:
        raise RegexUnavailable(
            "a regular expression search needs RE2, an engine that runs in time linear in the "
            f"text (Python's re can run forever on patterns like '(a+)+$'): {EXTRA}"
        ) from None
    options = engine.Options()
    options.log_errors = False  # the reason is in the error raised; RE2 would also print it
    try:
        compiled: Pattern = engine.compile(text, options)
    except engine.error as exc:
        raise _refusal(text, exc) from None
    return compiled


def _refusal(text: str, exc: BaseException) -> InvalidArgument:
    reason = exc.args[0] if exc.args else exc
    if isinstance(reason, bytes):
        reason = reason.decode("utf-8", "replace")
    try:
        re.compile(text)
    except re.error as error:
        return InvalidArgument(f"not a valid regular expression: {error}")
    return UnsupportedRegex(
        f"RE2 does not accept this pattern ({reason}): it matches in time linear in the text, "
        f"so it has no backreferences, lookaround or atomic groups; see {SYNTAX}"
    )


__all__ = ["EXTRA", "SYNTAX", "Match", "Pattern", "compile_linear"]
