"""Redaction of text: every built-in kind is found and replaced by its marker, near-misses stay."""

from __future__ import annotations

import functools
import re

import pytest
from fake_secrets import NEAR_MISSES, SECRETS

from jsonl_store import REDACTION_KINDS, InvalidArgument, Redactor, SessionStore, redact_text
from jsonl_store._text.redact import MARKER_RE, mask


@pytest.mark.parametrize(
    ("kind", "text", "redacted"), SECRETS, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(SECRETS)]
)
def test_each_fake_secret_becomes_the_marker_of_its_kind(kind: str, text: str, redacted: str) -> None:
    """A fake secret of each format is replaced by ``[REDACTED:<kind>]``; the text around it stays."""
    assert redact_text(text) == redacted
    assert [found.kind for found in Redactor().find(text)] == [kind]


def test_the_corpus_covers_every_built_in_kind() -> None:
    """Every built-in kind has at least one fake secret in the corpus."""
    assert {kind for kind, _, _ in SECRETS} == set(REDACTION_KINDS)


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_near_misses_are_left_as_they_are(text: str) -> None:
    """Hashes, UUIDs, base64 images, 'sk-' in words and harmless KEY=value lines are no secrets."""
    assert redact_text(text) == text
    assert Redactor().find(text) == []


@pytest.mark.parametrize(("kind", "text", "redacted"), SECRETS)
def test_the_pre_filter_lets_every_secret_through(kind: str, text: str, redacted: str) -> None:
    """The cheap search of encoded bytes says 'maybe' for every JSON value holding a secret."""
    import msgspec

    assert Redactor().might_hold(msgspec.json.encode({"content": text}))
    assert Redactor().redact_json(msgspec.json.encode({"content": text})) == msgspec.json.encode(
        {"content": redacted}
    )


def test_clean_json_comes_back_as_the_same_object() -> None:
    """Nothing to redact: `redact_json` returns its argument itself (no copy, no re-encoding)."""
    data = b'{"role":"user","content":"What is 6 * 7?"}'
    assert Redactor().redact_json(data) is data


def test_a_value_in_a_mapping_key_is_redacted_too() -> None:
    """Keys are stored text as well: a secret used as a key is replaced."""
    token = "ghp_" + "x1" * 18
    assert Redactor().redact_value({token: [token, 1]}) == {
        "[REDACTED:github-token]": ["[REDACTED:github-token]", 1]
    }


def test_extra_patterns_with_and_without_a_kind() -> None:
    """Extra patterns add kinds: a bare pattern is 'custom', a pair names its kind, 'secret' limits the span."""
    redactor = Redactor([r"ACME-\d{6}", ("employee-id", re.compile(r"emp=(?P<secret>\d+)"))])
    assert redactor.redact("ACME-123456 emp=42 ok") == "[REDACTED:custom] emp=[REDACTED:employee-id] ok"
    assert redactor.redact("AKIA" + "Z" * 16) == "[REDACTED:aws-access-key]"  # built-ins stay
    assert Redactor([r"ACME-\d{6}"], builtin=False).redact("AKIA" + "Z" * 16) == "AKIA" + "Z" * 16


def test_extra_patterns_see_strings_with_escapes() -> None:
    """A pattern spanning a newline matches the string even though JSON writes the newline escaped."""
    redactor = Redactor([r"line one\nline two"], builtin=False)
    assert redactor.redact_json(b'{"c":"line one\\nline two"}') == b'{"c":"[REDACTED:custom]"}'


@pytest.mark.parametrize(
    "setting",
    [[("Bad Kind", "x")], [("ok", "(")], [""], "not a list", [b"bytes"], 42],
    ids=["bad-kind", "bad-regex", "matches-empty", "str", "bytes", "int"],
)
def test_bad_redact_settings_are_refused(tmp_path: object, setting: object) -> None:
    """A bad ``redact=`` raises `InvalidArgument` (a ValueError) when the store is made."""
    with pytest.raises(InvalidArgument):
        SessionStore(str(tmp_path), redact=setting)  # type: ignore[arg-type]


def test_a_callable_sees_every_stored_string(tmp_path: object) -> None:
    """``redact=callable`` replaces the built-ins: each stored string is what the function returns."""
    store = SessionStore(str(tmp_path), redact=lambda text: text.replace("blue", "[REDACTED:colour]"))
    store.append("s", {"role": "user", "content": "blue sky", "x": ["blue"]}, title="blue")
    assert store.load("s").messages == [
        {"role": "user", "content": "[REDACTED:colour] sky", "x": ["[REDACTED:colour]"]}
    ]
    assert store.load("s").title == "[REDACTED:colour]"


def test_a_callable_that_returns_no_str_is_an_error(tmp_path: object) -> None:
    """A redact function returning something other than a str raises `InvalidArgument`; nothing is written."""
    store = SessionStore(str(tmp_path), redact=lambda text: None)  # type: ignore[arg-type,return-value]
    with pytest.raises(InvalidArgument):
        store.append("s", {"role": "user", "content": "x"})
    assert store.list_sessions() == []


def test_markers_are_what_the_spec_says() -> None:
    """A marker is ``[REDACTED:`` + a lower-case kind + ``]``; every built-in kind fits the grammar."""
    for kind in REDACTION_KINDS:
        assert MARKER_RE.fullmatch(f"[REDACTED:{kind}]")


def test_a_preview_never_shows_more_than_a_quarter_of_the_secret() -> None:
    """The masked preview shows at most 4 characters and never more than a quarter of the secret."""
    assert mask("ghp_" + "a" * 36) == "ghp_…(40 chars)"
    assert mask("hunter22") == "hu…(8 chars)"
    assert mask("abc") == "…(3 chars)"


@pytest.mark.parametrize(
    ("kind", "text", "redacted"), SECRETS, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(SECRETS)]
)
def test_the_pre_filter_finds_a_secret_in_a_large_value_after_many_near_misses(
    kind: str, text: str, redacted: str
) -> None:
    """A secret after thousands of '-', '_', '/' and 'z' (the pre-filter's jumps, then its search) is still redacted."""
    import msgspec

    noise = "a-b_c d/e f-z tip_ " * 400
    data = msgspec.json.encode({"content": noise + text, "tool_call_id": "x_y-z"})
    assert len(data) > 4096
    assert msgspec.json.decode(Redactor().redact_json(data))["content"] == noise + redacted


def test_a_redact_replaced_on_the_instance_is_called_for_every_string() -> None:
    """A `redact` set on one redactor (a mock, a wrapper) is what redact_json applies, name-based or not."""
    redactor = Redactor()
    redactor.redact = lambda text: "replaced"  # type: ignore[method-assign]
    assert redactor.redact_json(b'{"a":"DB_TOKEN=1"}') == b'{"replaced":"replaced"}'
    assert redactor.redact_json(b'{"a":"AKIAIOSFODNN7EXAMPLE"}') == b'{"replaced":"replaced"}'


@functools.cache
def _stdlib_code(size: int) -> str:
    """``size`` characters of this interpreter's standard library, its files in name order: real
    code, full of '=' and ':' after names such as token, password and key."""
    import os
    import sysconfig

    folder = sysconfig.get_paths()["stdlib"]
    pieces: list[str] = []
    for name in sorted(os.listdir(folder)):
        if name.endswith(".py") and sum(map(len, pieces)) < size:
            with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as file:
                pieces.append(file.read())
    return "".join(pieces)[:size]


@pytest.mark.parametrize(
    ("kind", "text", "redacted"), SECRETS, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(SECRETS)]
)
def test_a_secret_on_one_line_of_a_large_code_output_is_redacted(kind: str, text: str, redacted: str) -> None:
    """A secret on its own line in the middle of 96 KB of code (each line judged alone) is redacted as in text."""
    import msgspec

    code = _stdlib_code(96 * 1024)
    content = f"{code[: len(code) // 2]}\n{text}\n{code[len(code) // 2 :]}"
    data = msgspec.json.encode({"role": "tool", "content": content})
    assert msgspec.json.decode(Redactor().redact_json(data))["content"] == redact_text(content)
    assert redacted in redact_text(content)


def test_a_megabyte_of_code_is_checked_without_decoding_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """1 MB of the standard library comes back as it is with under 1% of it decoded (only lines with a secret's name)."""
    import msgspec

    from jsonl_store._text import redact as _redact

    decoded: list[int] = []

    class Counting:
        def decode(self, data: bytes) -> object:
            decoded.append(len(data))
            return msgspec.json.decode(data)

    data = msgspec.json.encode({"role": "tool", "content": _stdlib_code(1 << 20)})
    monkeypatch.setattr(_redact, "_decoder", Counting())
    assert Redactor().redact_json(data) is data
    assert sum(decoded) < len(data) // 100


def test_a_url_with_the_longest_user_and_password_is_redacted_in_a_small_value_as_in_text() -> None:
    """A 128-character user and a 256-character password: the encoded-value gate lets the URL through."""
    import msgspec

    url = "postgres://" + "u" * 128 + ":" + "aB3dE5gH7jK9mN1p" * 16 + "@db.internal:5432/app"
    content = f"connect with {url}\n"
    data = msgspec.json.encode({"role": "tool", "content": content})
    assert msgspec.json.decode(Redactor().redact_json(data))["content"] == redact_text(content) != content


def test_a_url_password_after_a_long_user_in_a_large_value_is_redacted() -> None:
    """A database URL whose user takes 128 characters, in 96 KB of code, loses its password as in text."""
    import msgspec

    url = "postgres://" + "u" * 128 + ":" + "aB3dE5gH7jK9mN1p" * 16 + "@db.internal:5432/app"
    content = f"{_stdlib_code(96 * 1024)}\n{url}\n"
    data = msgspec.json.encode({"role": "tool", "content": content})
    assert msgspec.json.decode(Redactor().redact_json(data))["content"] == redact_text(content) != content


@pytest.mark.parametrize(
    "line",
    [
        '{\\"password\\": \\"aB3dE5gH7jK9mN1pQ2rS4t\\"}',
        'x = {\\"api_key\\":\\"aB3dE5gH7jK9mN1pQ2rS4t\\"}',
        "DB_PASSWORD\\'=aB3dE5gH7jK9mN1pQ2rS4t",
        '{\\"token\\":\t\\"aB3dE5gH7jK9mN1pQ2rS4t\\"}',
    ],
)
@pytest.mark.parametrize("size", [0, 96 * 1024])
def test_a_value_in_json_shown_with_its_escapes_is_redacted_as_in_text(line: str, size: int) -> None:
    """A name's quote written with a backslash before it (JSON shown inside a string) still lets its value
    through the encoded-value gates, alone and in 96 KB of code: the stored string is redacted as the text is."""
    import msgspec

    content = f"{_stdlib_code(size)}\n{line}\n"
    data = msgspec.json.encode({"role": "tool", "content": content})
    assert msgspec.json.decode(Redactor().redact_json(data))["content"] == redact_text(content) != content
