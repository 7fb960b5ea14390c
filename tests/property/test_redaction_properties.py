"""Redaction as properties: a secret anywhere in text goes, the rest stays; redacting twice changes nothing."""

from __future__ import annotations

import msgspec
import pytest
from fake_secrets import SECRETS
from helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from jsonl_store import Redactor, redact_text
from jsonl_store._text import redact as _redact
from jsonl_store._text.redact import marker

# Text that can hold no secret of any built-in kind: no upper case (AKIA, AIza, eyJ,
# Bearer), no '-', '_' or '=' (sk-, ghp_, KEY=value), but letters of other scripts.
_PLAIN = st.text(
    alphabet=st.sampled_from("abcdefghijklmnopqrstuvwxyz0123456789 .,:;!?()\n\téß中"), max_size=80
)
_TOKEN = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"


@st.composite
def fake_secret(draw: st.DrawFn) -> tuple[str, str]:
    """A fake secret of a prefixed format with a random body: (kind, secret)."""
    kind, make = draw(
        st.sampled_from(
            [
                ("github-token", lambda b: "ghp_" + b[:36]),
                ("openai-api-key", lambda b: "sk-" + b[:48]),
                ("anthropic-api-key", lambda b: "sk-ant-api03-" + b),
                ("google-api-key", lambda b: "AIza" + b[:35]),
                ("stripe-key", lambda b: "sk_live_" + b[:24]),
                ("gitlab-token", lambda b: "glpat-" + b[:20]),
                ("slack-token", lambda b: "xoxb-" + b[:30]),
                ("aws-access-key", lambda b: "AKIA" + b.upper()[:16]),
            ]
        )
    )
    random_body = draw(st.text(alphabet=st.sampled_from(_TOKEN), min_size=48, max_size=60))
    return kind, make(random_body)


@settings(max_examples=examples(200))
@given(fake_secret(), _PLAIN, _PLAIN)
def test_a_secret_anywhere_in_text_is_redacted_and_nothing_else_changes(
    secret: tuple[str, str], before: str, after: str
) -> None:
    """Random text, a space, a fake secret, a space, random text: only the secret is replaced."""
    kind, token = secret
    assert redact_text(f"{before} {token} {after}") == f"{before} {marker(kind)} {after}"


@settings(max_examples=examples(200))
@given(
    st.lists(st.one_of(st.text(max_size=40), st.sampled_from([text for _, text, _ in SECRETS])), max_size=6)
)
def test_redacting_twice_changes_nothing_and_leaves_nothing_to_find(pieces: list[str]) -> None:
    """Any text (random pieces and corpus secrets joined): redaction is idempotent and leaves no finding."""
    text = " ".join(pieces)
    once = redact_text(text)
    assert redact_text(once) == once
    assert Redactor().find(once) == []


@settings(max_examples=examples(200))
@given(
    st.lists(st.one_of(st.text(max_size=30), st.sampled_from([text for _, text, _ in SECRETS])), max_size=5)
)
def test_json_redaction_is_string_redaction(pieces: list[str]) -> None:
    """`redact_json` of a JSON value is the encoding of the value with each string redacted (pre-filter included)."""
    value = {"content": " ".join(pieces), "parts": pieces, "n": 1.5}
    data = msgspec.json.encode(value)
    expected = {"content": redact_text(value["content"]), "parts": [redact_text(p) for p in pieces], "n": 1.5}  # type: ignore[arg-type]
    assert msgspec.json.decode(Redactor().redact_json(data)) == expected


def _assignments_everywhere(text: str) -> list[tuple[int, int, bool]]:
    """The name-based values in ``text`` found the slow way: the name read back before every '=' and ':'."""
    spans = []
    for at, char in enumerate(text):
        if char not in "=:":
            continue
        name = _redact._NAME_REVERSED.match(text[max(0, at - _redact._NAME_LIMIT) : at][::-1])
        value = _redact._value_after(text, at + 1) if name is not None else None
        if name is not None and value is not None:
            start, end, quoted, tight = value
            verdict = _redact._judge(text[start:end], quoted=quoted, tight=tight)
            if verdict is not None:
                spans.append((start, end, verdict and name["query"] is None))
    return spans


_ASSIGNMENT_PIECES = st.sampled_from(
    [
        "=", " = ", ": ", ":", "x = 1", "DB_PASSWORD", "passwd", "Pa\u017f\u017fWORD", "pa\u017f\u017f", "DB_PA\u017f\u017f", "api_key", "secret", "TOKEN", "credentials",
        "pwd", "'", '"', '\\"', "\t", " ", "hunter2hunter2", "$TOKEN", "abc.def", "-", "_", "KEY", "Key", "aB3dE5gH7jK9", "f(x)",
        "://", "@", "u:", "-u ", "\n", "?", "&", "/path", "`",
    ]
)  # fmt: skip


@settings(max_examples=examples(400))
@given(st.lists(st.one_of(_ASSIGNMENT_PIECES, st.text(max_size=6)), max_size=12))
def test_assignments_are_found_as_reading_before_every_separator_finds_them(pieces: list[str]) -> None:
    """Reading names back only where `_candidates` says finds every value a read before every '=' and ':' finds."""
    text = "".join(pieces)
    found = [(f.start, f.end, f.certain) for f in _redact._builtin_find(text) if f.kind == _redact.ENV_KIND]
    assert found == _assignments_everywhere(text)


@settings(max_examples=examples(300))
@given(
    st.lists(
        st.one_of(_ASSIGNMENT_PIECES, st.text(max_size=8), st.sampled_from([t for _, t, _ in SECRETS])),
        max_size=6,
    )
)
def test_a_value_with_only_names_is_redacted_as_its_strings_are(pieces: list[str]) -> None:
    """`redact_json` skipping the other kinds' scan where the gates saw only names or URLs equals per-string `redact_text`."""
    value = {"content": "".join(pieces), "parts": pieces}
    data = msgspec.json.encode(value)
    expected = {"content": redact_text(value["content"]), "parts": [redact_text(p) for p in pieces]}  # type: ignore[arg-type]
    assert msgspec.json.decode(Redactor().redact_json(data)) == expected


_HOSTILE = [
    "-----BEGIN PRIVATE KEY-----\n" + ("> 12 | " + "A" * 200 + "\n") * 2000,
    "-----BEGIN RSA PRIVATE KEY-----" + "\n  7 | " * 20000,
    "://" + "a" * 100_000,
    "x://a:" + "b" * 100_000,
    "password=" * 20_000,
    'password="' + "x" * 100_000,
    "-u " + "a:" * 50_000,
    "Authorization: Bearer \n" * 10_000,
    "token: " * 20_000 + "\\" * 1000,
]


@pytest.mark.parametrize("text", _HOSTILE, ids=range(len(_HOSTILE)))
def test_hostile_texts_come_back_unchanged_in_one_pass(text: str) -> None:
    """Texts built to make a backtracking pattern explode (a gutter on every line, a URL that never
    reaches '@', a quote never closed) are searched in linear time and hold no secret: unchanged."""
    assert redact_text(text) == text
    assert msgspec.json.decode(Redactor().redact_json(msgspec.json.encode({"c": text}))) == {"c": text}


_LARGE_FILLER = "    x = f(a, b)\n    self.key = key\n    if token: return\n" * 1500


@settings(max_examples=examples(60))
@given(
    st.lists(
        st.tuples(
            st.integers(0, len(_LARGE_FILLER)),
            st.lists(
                st.one_of(
                    _ASSIGNMENT_PIECES, st.text(max_size=8), st.sampled_from([t for _, t, _ in SECRETS])
                ),
                max_size=6,
            ),
        ),
        max_size=4,
    )
)
def test_a_large_value_is_redacted_as_its_strings_are(insertions: list[tuple[int, list[str]]]) -> None:
    """Pieces spliced into a value over 64 KB (judged line by line from its bytes) redact as per-string `redact_text`."""
    content = _LARGE_FILLER
    for at, pieces in sorted(insertions, reverse=True):
        content = content[:at] + "".join(pieces) + content[at:]
    value = {"content": content, "parts": [piece for _, pieces in insertions for piece in pieces]}
    data = msgspec.json.encode(value)
    assert len(data) > _redact._BIG
    expected = {"content": redact_text(content), "parts": [redact_text(p) for p in value["parts"]]}
    assert msgspec.json.decode(Redactor().redact_json(data)) == expected
