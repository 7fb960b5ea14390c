"""Redaction counts as properties: a notice counts exactly the markers a write added; a fingerprint names a value."""

from __future__ import annotations

import tempfile
from collections import Counter

from fake_secrets import SECRETS
from guessing import Guessing
from helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from jsonl_store import Redaction, SessionStore, UserMessage
from jsonl_store._ops.secrets import fingerprint
from jsonl_store._text.redactions import new_markers

_PIECES = st.lists(
    st.one_of(
        st.text(max_size=30),
        st.sampled_from([text for _, text, _ in SECRETS]),
        st.sampled_from(["[REDACTED:github-token]", "guess=swordfish", "[REDACTED:", "]"]),
    ),
    max_size=6,
)


@settings(max_examples=examples(100), deadline=None)
@given(_PIECES)
def test_a_notice_counts_exactly_the_certain_findings_an_append_replaced(pieces: list[str]) -> None:
    """Whatever the text (secrets, guesses, markers already there), the notice's counts are the
    certain findings of the stored redactor, per kind, and the markers the stored text gained."""
    text = " ".join(pieces)
    redactor = Guessing()
    seen: list[Redaction] = []
    with (
        tempfile.TemporaryDirectory() as root,
        SessionStore(root, redact=redactor, on_redact=seen.append, durability="none") as store,
    ):
        store.append("s", UserMessage(content=text))
        stored = str(store.load("s").messages[0].content)  # type: ignore[union-attr]
    certain = Counter(f.kind for f in redactor.find(text) if f.certain)
    told = Counter(seen[0].kinds) if seen else Counter()
    assert told == certain == new_markers(text, stored)


@settings(max_examples=examples(200))
@given(st.text(min_size=1, max_size=60), st.text(min_size=1, max_size=60), st.sampled_from(["a", "b-c"]))
def test_a_fingerprint_is_16_hex_digits_the_same_for_one_value_and_apart_for_two(
    one: str, other: str, kind: str
) -> None:
    """The fingerprint depends on kind and value only; two values (or kinds) get two fingerprints."""
    mark = fingerprint(kind, one)
    assert len(mark) == 16 and set(mark) <= set("0123456789abcdef")
    assert fingerprint(kind, one) == mark
    assert (fingerprint(kind, other) == mark) == (one == other)
    assert fingerprint(kind + "-x", one) != mark
