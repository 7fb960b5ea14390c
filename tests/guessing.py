"""A redactor that also guesses, for tests of how guesses are reported and left alone.

The built-in name-based rules are another part of the code; these tests must not depend on
which texts they guess at, so this one guesses on a form of its own: ``guess=<word>``.
"""

from __future__ import annotations

import re

from jsonl_store import Redactor
from jsonl_store._text.redact import Found

GUESS_KIND = "password-guess"
_GUESS = re.compile(r"guess=(\w{4,})")


class Guessing(Redactor):
    """The built-in patterns (certain) plus ``guess=<word>`` as a guess (``certain=False``)."""

    def find(self, text: str) -> list[Found]:
        guesses = [Found(GUESS_KIND, m.start(1), m.end(1), False) for m in _GUESS.finditer(text)]
        return sorted([*super().find(text), *guesses], key=lambda f: f.start)

    def redact(self, text: str) -> str:
        return self._redact(text, [f for f in self.find(text) if f.certain])
