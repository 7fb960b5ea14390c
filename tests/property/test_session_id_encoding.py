"""`encode_session_id` / `decode_session_id`: a reversible map from free-form names to session ids."""

from __future__ import annotations

import pytest
from helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from jsonl_store import InvalidSessionId, decode_session_id, encode_session_id
from jsonl_store._format.names import is_session_id

names = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=40)
valid_ids = st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,60}", fullmatch=True)


@settings(max_examples=examples(300))
@given(names)
def test_every_name_encodes_to_a_valid_id_that_decodes_back(name: str) -> None:
    """decode(encode(s)) == s, and encode(s) is a session id, for any name without NUL that fits."""
    try:
        encoded = encode_session_id(name)
    except InvalidSessionId:
        assert len(name.encode("utf-8")) * 3 > 128  # only a name too long to fit is refused
        return
    assert is_session_id(encoded)
    assert decode_session_id(encoded) == name


@settings(max_examples=examples(300))
@given(names, names)
def test_two_names_never_share_an_id(first: str, second: str) -> None:
    """The map is one-to-one: different names get different ids."""
    try:
        a, b = encode_session_id(first), encode_session_id(second)
    except InvalidSessionId:
        return
    assert (a == b) == (first == second)


@settings(max_examples=examples(300))
@given(valid_ids)
def test_a_plain_valid_id_is_its_own_encoding(session_id: str) -> None:
    """A valid id without '.' that does not start with '_' maps to itself."""
    if "." in session_id or session_id.startswith("_"):
        return
    assert encode_session_id(session_id) == session_id
    assert decode_session_id(session_id) == session_id


@settings(max_examples=examples(300))
@given(valid_ids)
def test_decoding_any_valid_id_round_trips_or_refuses(session_id: str) -> None:
    """An id either decodes to a name that encodes back to it, or is refused as no encoding."""
    try:
        name = decode_session_id(session_id)
    except InvalidSessionId:
        return
    assert encode_session_id(name) == session_id


@pytest.mark.parametrize(
    ("name", "encoded"),
    [
        ("user:42/chat 1", "user.3a42.2fchat.201"),
        ("chat_1", "chat_1"),
        ("_x", "_.5fx"),
        ("-x", "_-x"),
        ("v1.2", "v1.2e2"),
    ],
)
def test_documented_examples(name: str, encoded: str) -> None:
    """The store guide's examples (docs/guides/store.md)."""
    assert encode_session_id(name) == encoded
    assert decode_session_id(encoded) == name


@pytest.mark.parametrize("bad", ["", "a\x00b", "\ud800", "x" * 129, "/" * 43])
def test_names_that_cannot_be_ids_are_refused(bad: str) -> None:
    """Empty, NUL, a lone surrogate, or too long once encoded: InvalidSessionId (nothing is truncated)."""
    with pytest.raises(InvalidSessionId):
        encode_session_id(bad)
