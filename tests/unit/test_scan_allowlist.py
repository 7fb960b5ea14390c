"""Scan reports guesses and certain secrets apart, names each by a fingerprint, and an allowlist clears them (spec §18.2)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from fake_secrets import body
from guessing import GUESS_KIND, Guessing

from jsonl_store import InvalidArgument, SessionStore, UserMessage

TOKEN = "ghp_" + body(36)
ALLOW = ".jsonl-store-allow"


def _leaky(root: Path, *texts: str, session_id: str = "s") -> None:
    """A session stored as given (an older store, or one made with redact=False)."""
    with SessionStore(root, redact=False) as store:
        for text in texts:
            store.append(session_id, UserMessage(content=text))


def _content(store: SessionStore, session_id: str = "s") -> list[str]:
    return [str(m.content) for m in store.load(session_id).messages]  # type: ignore[union-attr]


def test_a_guess_is_reported_unsure_and_redact_leaves_it(tmp_path: Path) -> None:
    """A guess is a finding with certain=False; redact_session rewrites the certain secret beside it only."""
    _leaky(tmp_path, f"guess=hunter22 and {TOKEN}")
    store = SessionStore(tmp_path, redact=Guessing())
    found = store.scan("s")
    assert [(f.kind, f.certain, f.blocking) for f in found] == [
        (GUESS_KIND, False, False),
        ("github-token", True, True),
    ]
    rewritten = store.redact_session("s")
    assert [f.kind for f in rewritten] == ["github-token"]
    assert _content(store) == ["guess=hunter22 and [REDACTED:github-token]"]
    assert [(f.kind, f.certain) for f in store.scan("s")] == [(GUESS_KIND, False)]


def test_a_fingerprint_names_one_value_of_one_kind_everywhere_and_hides_it(tmp_path: Path) -> None:
    """One value has one fingerprint in every session, line and file; another value another; none shows it."""
    other = "ghp_" + body(36)[::-1]
    _leaky(tmp_path, TOKEN, f"again {TOKEN}", session_id="a")
    _leaky(tmp_path, f"and {TOKEN}", other, session_id="b")
    found = SessionStore(tmp_path).scan()
    marks = {f.fingerprint for f in found if f.preview and f.kind == "github-token"}
    expected = hashlib.sha256(f"github-token:{TOKEN}".encode()).hexdigest()[:16]
    assert marks == {expected, hashlib.sha256(f"github-token:{other}".encode()).hexdigest()[:16]}
    assert sum(f.fingerprint == expected for f in found) == 3
    assert all(TOKEN not in f.fingerprint and body(36)[:8] not in f.fingerprint for f in found)


def test_an_allowlisted_value_is_reported_allowed_and_never_rewritten(tmp_path: Path) -> None:
    """allow_findings clears a value everywhere: scan marks it allowed, redact leaves the files' bytes."""
    _leaky(tmp_path, f"a fixture token {TOKEN}")
    store = SessionStore(tmp_path)
    [finding] = store.scan("s")
    assert store.allow_findings([finding.fingerprint]) == [finding.fingerprint]
    log = (tmp_path / "s" / "messages.jsonl").read_bytes()
    [again] = store.scan("s")
    assert again.allowed and not again.blocking and again._replace(allowed=False) == finding
    assert store.redact_session("s") == []
    assert (tmp_path / "s" / "messages.jsonl").read_bytes() == log
    assert finding.fingerprint in (tmp_path / ALLOW).read_text().splitlines()


def test_allowing_adds_each_fingerprint_once_and_keeps_what_a_person_wrote(tmp_path: Path) -> None:
    """The allowlist is appended to: comments and entries already there stay, a repeat is not added."""
    (tmp_path / ALLOW).write_text("# test fixtures\n0123456789abcdef  # a fake key in tests/\n\n")
    store = SessionStore(tmp_path)
    assert store.allow_findings(["0123456789abcdef", "fedcba9876543210", "fedcba9876543210"]) == [
        "fedcba9876543210"
    ]
    assert (tmp_path / ALLOW).read_text() == (
        "# test fixtures\n0123456789abcdef  # a fake key in tests/\n\nfedcba9876543210\n"
    )


def test_a_new_allowlist_starts_with_a_comment_saying_what_it_is(tmp_path: Path) -> None:
    """The file made by the first allow_findings explains itself to whoever reads the commit."""
    SessionStore(tmp_path).allow_findings(["0123456789abcdef"])
    lines = (tmp_path / ALLOW).read_text().splitlines()
    assert lines[0].startswith("# ") and lines[-1] == "0123456789abcdef"


@pytest.mark.parametrize(
    "bad", ["0123456789ABCDEF", "0123456789abcde", "0123456789abcdef0", "zz23456789abcdef", "", 1234]
)
def test_allow_findings_refuses_what_is_not_a_fingerprint(tmp_path: Path, bad: object) -> None:
    """Anything but 16 lower-case hex digits is an InvalidArgument, and nothing is written."""
    with pytest.raises(InvalidArgument):
        SessionStore(tmp_path).allow_findings(["0123456789abcdef", bad])  # type: ignore[list-item]
    assert not (tmp_path / ALLOW).exists()


def test_allow_findings_refuses_a_single_string(tmp_path: Path) -> None:
    """A bare str would be read as its characters: it is refused, as a list of them is wanted."""
    with pytest.raises(InvalidArgument):
        SessionStore(tmp_path).allow_findings("0123456789abcdef")


def test_an_allowlist_line_that_is_not_a_fingerprint_is_an_error_naming_the_line(tmp_path: Path) -> None:
    """A mistyped entry stops scan and redact with the file and line, instead of clearing nothing silently."""
    _leaky(tmp_path, TOKEN)
    (tmp_path / ALLOW).write_text("# ok\n0123456789abcdef\nghp_not-a-fingerprint\n")
    store = SessionStore(tmp_path)
    with pytest.raises(InvalidArgument, match=r"\.jsonl-store-allow:3: "):
        store.scan()
    with pytest.raises(InvalidArgument, match=r"\.jsonl-store-allow:3: "):
        store.redact_session("s")
    assert TOKEN in _content(store)[0]


def test_an_allowlist_that_is_not_utf8_or_too_large_is_an_error(tmp_path: Path) -> None:
    """Bytes that are no text, or a file over 1 MiB, are refused with a typed error, never half-read."""
    (tmp_path / ALLOW).write_bytes(b"\xff\xfe0123456789abcdef\n")
    with pytest.raises(InvalidArgument, match="not UTF-8"):
        SessionStore(tmp_path).scan()
    (tmp_path / ALLOW).write_bytes(b"0123456789abcdef\n" * 70_000)
    with pytest.raises(InvalidArgument, match="more than an allowlist"):
        SessionStore(tmp_path).scan()


def test_an_allowlisted_guess_and_a_user_pattern_are_told_apart(tmp_path: Path) -> None:
    """A user's pattern is certain (redact rewrites it); a guess the allowlist clears is allowed and unsure."""
    _leaky(tmp_path, "guess=swordfish TICKET-123456")
    store = SessionStore(tmp_path, redact=Guessing([("ticket", r"TICKET-(?P<secret>\d{6})")]))
    guess = next(f for f in store.scan("s") if not f.certain)
    store.allow_findings([guess.fingerprint])
    assert [(f.kind, f.certain, f.allowed) for f in store.scan("s")] == [
        (GUESS_KIND, False, True),
        ("ticket", True, False),
    ]
    assert [f.kind for f in store.redact_session("s")] == ["ticket"]
    assert _content(store) == ["guess=swordfish TICKET-[REDACTED:ticket]"]
