"""The pre-filter's passes over a large value without RE2: each lets through every place the gates it stands for give."""

from __future__ import annotations

import re

import msgspec
from fake_secrets import SECRETS
from helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from jsonl_store import Redactor
from jsonl_store._text import redact_prefilter as prefilter
from jsonl_store._text.redact import _line_holds

# Pieces of the three letters' formats and of near misses ("AIz", "SG." too short, "ization").
_LETTER_PIECES = st.sampled_from(
    ["A", "AK", "KIA", "AS", "SIA", "AI", "Iza", "z", "G", "SG", "SG.", ".", "uthoriz", "ation", "ization",
     "Authorization", "AIzaSy", "_", "-", "x", "0123456789abcdefghijk"]
)  # fmt: skip

# Pieces around a separator: secret words in any case, each gap `_BYTE_GAPS` spells (once
# encoded: a quote, a space, a tab, a backslash), what may follow ("==", "=>", ":=", a
# newline, a call), URLs, and near-miss words ("classes", "return", "passage").
_NAMED_PIECES = st.sampled_from(
    ["=", ":", " ", "\t", '"', "'", "\\", "\n", "==", "=>", ":=", "://", "//", "@", "(", "$", ",",
     "password", "PASSWD", "pwd", "Pass", "secret", "TOKEN", "token", "credentials", "Credential", "api_key",
     "API-KEY", "AccountKey", "Key", "key", "classes", "return", "passage", "x", "hunter2hunter2",
     "https", "hooks.slack.com/", "services/", "aB3dE5gH7jK9mN1pQ2rS4t"]
)  # fmt: skip


def _encoded(pieces: list[str]) -> bytes:
    """``pieces`` joined, as one JSON string in an object (what the pre-filter reads)."""
    return msgspec.json.encode({"content": "".join(pieces)})


@settings(max_examples=examples(400))
@given(st.lists(st.one_of(_LETTER_PIECES, st.text(max_size=4)), max_size=16))
def test_the_letters_pass_matches_where_the_three_gates_do(pieces: list[str]) -> None:
    """`_letters_hold` (one pass over a copy) answers as the 'A', 'z' and 'G' gates of `_GATES` searched one by one."""
    data = _encoded(pieces)
    expected = any(gate.search(data) is not None for gate in prefilter._LETTER_GATES.values())
    assert prefilter._letters_hold(data) == expected


def _screened_places(data: bytes) -> set[int]:
    """The separators `_named_checked` and `_urls_checked` look at: the screen's, and the '@'-found URLs'."""
    places = {m.start() for m in prefilter._NAMED_SCREEN.finditer(data.replace(b":", b"="))}
    for at in (m.start() for m in re.finditer(rb"@", data)):
        slash = data.rfind(b"/", 0, at)
        if slash >= 2 and data.startswith(b"://", slash - 2):
            places.add(slash - 2)
    return places


def _gated_places(data: bytes) -> set[int]:
    """The separators the gates of each separator let through (the places judged before the screen)."""
    places = {
        m.start() for m in prefilter._EQUALS_GATE.finditer(data) if prefilter._named_before(data, m.start())
    }
    places |= {
        m.start()
        for m in prefilter._LARGE_COLON.finditer(data)
        if data.startswith(b"//", m.start() + 1) or prefilter._named_before(data, m.start())
    }
    return places


#: What after a separator no value can start with (`_value_after`, `_UNQUOTED`, `_judge`):
#: the screen skips those places, and only those.
_NO_VALUE = re.compile(rb"""[=>:",;&`()\[\]{}<$%]|\\[nr]""")


@settings(max_examples=examples(600))
@given(st.lists(st.one_of(_NAMED_PIECES, st.text(max_size=4)), max_size=14))
def test_the_named_screen_lets_through_each_place_the_separator_gates_give(pieces: list[str]) -> None:
    """Every '=' or ':' `_EQUALS_GATE` or `_LARGE_COLON` lets through after a secret's name (a value can
    follow it), or before a URL's user info or an https Slack webhook's path, is found by the one-pass screen."""
    data = _encoded(pieces)
    screened = _screened_places(data)
    for at in _gated_places(data):
        url = data.startswith(b"//", at + 1)
        if not url and _NO_VALUE.match(data, at + 1):
            continue
        webhook = data.startswith(b"//hooks.slack.com/", at + 1) and data.endswith(b"https", 0, at)
        if url and not webhook and b"@" not in data[at:]:
            continue  # user info needs an '@', a webhook `BUILTIN`'s "https://"
        assert at in screened, (data, at)


_FILLER = "    x = f(a, b)\n    self.key = key\n    if token: return\n    pass\n" * 1000


@settings(max_examples=examples(150), deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, len(_FILLER)),
            st.lists(
                st.one_of(_NAMED_PIECES, _LETTER_PIECES, st.sampled_from([t for _, t, _ in SECRETS])),
                max_size=8,
            ),
        ),
        min_size=1,
        max_size=3,
    )
)
def test_a_large_value_with_a_certain_secret_gets_past_the_gates(
    insertions: list[tuple[int, list[str]]],
) -> None:
    """Pieces spliced into 250 KB of code: whenever a string holds a certain secret, the gates (no RE2) say so."""
    content = _FILLER
    for at, pieces in sorted(insertions, reverse=True):
        content = content[:at] + "".join(pieces) + content[at:]
    data = msgspec.json.encode({"content": content})
    assert len(data) > prefilter._BIG
    if any(found.certain for found in Redactor().find(content)):
        assert prefilter._large_may_hold(data, _line_holds, None)
