"""The RE2 screen of large values: used when google-re2 is installed, the gates otherwise, the same secrets gone."""

from __future__ import annotations

import importlib
import types

import msgspec
import pytest
from helpers import needs_re2

from jsonl_store import Redactor, redact_text
from jsonl_store._text import redact_prefilter as prefilter
from jsonl_store._text.redact import _line_holds

_CODE = "    x = f(a, b)\n    self.token = token\n    if key: return\n" * 2000
_TOKEN_LINE = "API_TOKEN=aB3dE5gH7jK9mN1pQ2rS4t"


def _stored(redactor: Redactor, content: str) -> str:
    data = msgspec.json.encode({"role": "tool", "content": content})
    assert len(data) > prefilter._BIG
    out: str = msgspec.json.decode(redactor.redact_json(data))["content"]
    return out


def test_without_google_re2_there_is_no_screen_and_the_gates_still_redact(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With `re2` unimportable `screen()` is None, and a large value loses its secret through the gates."""
    real = importlib.import_module

    def no_re2(name: str, package: str | None = None) -> types.ModuleType:
        if name == "re2":
            raise ImportError("no google-re2 here")
        return real(name, package)

    monkeypatch.setattr(importlib, "import_module", no_re2)
    assert prefilter.screen() is None
    redactor = Redactor()
    content = f"{_CODE}{_TOKEN_LINE}\n{_CODE}"
    assert redactor._screen() is None
    assert _stored(redactor, content) == redact_text(content) != content
    assert "aB3dE5gH7jK9mN1pQ2rS4t" not in _stored(redactor, content)


@needs_re2
def test_the_default_redactor_screens_large_values_with_re2() -> None:
    """With the regex extra a redactor compiles the screen once and keeps it; code without a secret comes back as it is."""
    redactor = Redactor()
    data = msgspec.json.encode({"role": "tool", "content": _CODE})
    assert redactor.redact_json(data) is data
    assert redactor._screen() is not None
    assert redactor._screen() is redactor._screen()


@needs_re2
def test_a_url_with_user_info_does_not_hide_a_secret_on_the_next_line() -> None:
    """A URL whose user info would run on to an '@' on the next line stops at the line's end: the token there is found."""
    screen = prefilter.screen()
    assert screen is not None
    token = "ghp_" + "aB3dE5gH7jK9mN1pQ2rS4tU6vW8xY0zA1bC2d"
    content = f"{_CODE}see http://host\n{token}@example\n{_CODE}"
    data = msgspec.json.encode({"role": "tool", "content": content})
    assert prefilter._screened(data, screen, _line_holds)
    assert token not in _stored(Redactor(), content)
    assert _stored(Redactor(), content) == redact_text(content)


@needs_re2
def test_a_private_key_header_in_a_large_value_sends_all_of_it_to_redaction() -> None:
    """A key block spans lines, so its header alone makes the screen answer True, and the block is removed whole."""
    screen = prefilter.screen()
    assert screen is not None
    block = (
        "-----BEGIN PRIVATE KEY-----\n"
        + ("MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" * 2 + "\n") * 8
        + "-----END PRIVATE KEY-----"
    )
    content = f"{_CODE}{block}\n{_CODE}"
    data = msgspec.json.encode({"role": "tool", "content": content})
    assert prefilter._screened(data, screen, lambda line: False)
    assert "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" not in _stored(Redactor(), content)


# Code with separators, URLs and decorators on every line but no secret's name: no line of
# it is judged, so a secret's own place is what sends a value to redaction.
_PLAIN_CODE = (
    "    x = f(a, b)\n    if y: return {'a': 1}\n    url = 'https://h.example/p'\n    @decorator\n" * 1000
)


def _gated() -> Redactor:
    """A redactor whose large values go through the gates, as without google-re2."""
    redactor = Redactor()
    redactor._screens.append(None)
    return redactor


@pytest.mark.parametrize(
    "line",
    [
        "DATABASE_URL=postgres://app:aB3dE5gH7jK9mN1pQ2rS4t@db.internal/app",
        "see http://deploy:aB3dE5gH7jK9mN1pQ2rS4t@10.0.0.7:8080/hooks",
        "hook = 'https://hooks.slack.com/services/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v'",
        '{\\"password\\": \\"aB3dE5gH7jK9mN1pQ2rS4t\\"}',
        "export API_TOKEN='aB3dE5gH7jK9mN1pQ2rS4t'",
        "AccountKey=aB3dE5gH7jK9mN1pQ2rS4tU6vW8xY0zC==",
    ],
)
def test_a_url_password_a_webhook_or_a_named_value_amid_code_is_redacted_without_re2(line: str) -> None:
    """One secret amid 200 KB of code full of '=', ':', '@' and URLs but no secret's name: the gates find its line."""
    content = f"{_PLAIN_CODE}{line}\n{_PLAIN_CODE}"
    assert redact_text(content) != content
    assert _stored(_gated(), content) == redact_text(content)


def test_a_url_after_more_at_signs_than_are_jumped_to_is_still_found() -> None:
    """Past the '@' it jumps to one by one, the URL search runs over the rest: a password after 5,000 '@' goes."""
    content = "x@y\n" * 5000 + "postgres://app:aB3dE5gH7jK9mN1pQ2rS4t@db/app\n" + _PLAIN_CODE
    data = msgspec.json.encode({"role": "tool", "content": content})
    assert data.count(b"@") > prefilter._JUMPS + len(data) // prefilter._SPARSE
    assert "aB3dE5gH7jK9mN1pQ2rS4t" not in _stored(_gated(), content)
    assert _stored(_gated(), content) == redact_text(content)


def test_code_full_of_separators_and_names_comes_back_unchanged_without_re2() -> None:
    """Code whose names end like secret words ("token = next_token()") holds nothing certain: the value is kept as it was."""
    data = msgspec.json.encode({"role": "tool", "content": _CODE * 3})
    assert _gated().redact_json(data) is data
