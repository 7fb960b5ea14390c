"""A large value redacts the same through the RE2 screen (the regex extra) and through the gates without it."""

from __future__ import annotations

import msgspec
from fake_secrets import SECRETS, labelled
from helpers import examples, needs_re2
from hypothesis import given, settings
from hypothesis import strategies as st

from jsonl_store import Redactor, redact_text
from jsonl_store._text.redact import _line_holds
from jsonl_store._text.redact_prefilter import _BIG, _large_may_hold, screen

# Code that holds a secret's name before a separator on every third line, and nothing secret.
_FILLER = "    x = f(a, b)\n    self.key = key\n    if token: return\n    url = 'https://h/p'\n" * 1200
_PIECES = st.sampled_from(
    [
        "=", " = ", ": ", ":", "\n", "\\", '"', "'", "\t", "@", "://", "//", "-u ", "--user=", "u:",
        "DB_PASSWORD", "api_key", "Key", "AccountKey", "TOKEN", "secret", "Authorization", "Bearer ",
        "aB3dE5gH7jK9mN1pQ2", "hunter2hunter2", "-----BEGIN", "sk-", "ghp_", "eyJ", "SG.", "xoxb-",
    ]
)  # fmt: skip


def _redactors() -> tuple[Redactor, Redactor]:
    """A redactor whose large values go through the RE2 screen, and one whose go through the gates."""
    screened, gated = Redactor(), Redactor()
    screened._screens.append(screen())
    gated._screens.append(None)
    assert screened._screen() is not None
    return screened, gated


@needs_re2
@settings(max_examples=examples(80), deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, len(_FILLER)),
            st.lists(
                st.one_of(_PIECES, st.text(max_size=6), st.sampled_from([t for _, t, _ in SECRETS])),
                max_size=8,
            ),
        ),
        max_size=4,
    )
)
def test_a_large_value_redacts_alike_with_and_without_the_screen(
    insertions: list[tuple[int, list[str]]],
) -> None:
    """Pieces spliced into a value over 64 KB: screened, gated and per-string `redact_text` all agree."""
    content = _FILLER
    for at, pieces in sorted(insertions, reverse=True):
        content = content[:at] + "".join(pieces) + content[at:]
    data = msgspec.json.encode({"content": content, "parts": [p for _, pieces in insertions for p in pieces]})
    assert len(data) > _BIG
    screened, gated = _redactors()
    out = msgspec.json.decode(screened.redact_json(data))
    assert out == msgspec.json.decode(gated.redact_json(data))
    assert out == {
        "content": redact_text(content),
        "parts": [redact_text(p) for _, ps in insertions for p in ps],
    }


@needs_re2
def test_every_labelled_secret_in_a_large_value_gets_past_the_screen_and_the_gates() -> None:
    """Each labelled fake secret, alone amid 95 KB of code, has the screen and the gates both send the value to redaction."""
    found = screen()
    assert found is not None
    half = len(_FILLER) // 2
    for item in labelled():
        data = msgspec.json.encode(
            {"role": "tool", "content": f"{_FILLER[:half]}{item.text}\n{_FILLER[half:]}"}
        )
        assert _large_may_hold(data, _line_holds, found), (item.kind, item.context)
        assert _large_may_hold(data, _line_holds, None), (item.kind, item.context)
