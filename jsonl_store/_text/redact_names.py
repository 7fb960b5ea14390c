"""Name-based secrets: the value after a name that says it is secret, and URL and curl passwords (spec §18).

A name says little about its value, so each value is judged (`_judge`): certain only when
it is a literal that is no code, no placeholder and varied enough to look generated;
otherwise a guess, which `scan` reports and redaction leaves in place.
"""

from __future__ import annotations

import base64
import itertools
import re
from collections.abc import Iterator
from typing import Final

from .redact_rules import ENV_KIND, MARKER_RE, PASSWORD_KIND, Found

# The last three letters of the secret words (passwORD, passWD, PWD, pASS, secRET, toKEN,
# credentiALS, credentIAL, api_KEY ...), then what may stand between a name and its '='
# or ':' (a quote, a space, a JSON-escaped quote: a JSON text shown inside a string), in
# fixed widths: a look-behind must have one. Found from each separator backwards in C;
# only the few candidates are read back (`_NAME_REVERSED`). One pattern per separator: a
# pattern starting with one literal character is searched for at memchr speed, one
# starting with a class ("[=:]") is tried at every position, some 15 times slower.
_ENDINGS = "(?:ord|swd|pwd|ass|ret|ken|als|ial|key)"
_TEXT_GAPS = ("", "[\"' \t]", "(?:[\"'][ \t]|\\\\[\"'])", "\\\\[\"'][ \t]")
# Before the full look-behinds, cheap ones: for ':' the character just before (a last
# letter or a gap's), for '=' (code is full of " = ") the last letter before each gap.


def _guard(separator: str) -> str:
    if separator == ":":
        return "(?<=[dstnly\"' \t]:)"
    return "(?:" + "|".join(f"(?<=[dstnly]{gap}=)" for gap in _TEXT_GAPS) + ")"


_NAME_CANDIDATES: Final = tuple(
    re.compile(
        sep + _guard(sep) + "(?:" + "|".join(f"(?<={_ENDINGS}{gap}.)" for gap in _TEXT_GAPS) + ")",
        re.ASCII | re.IGNORECASE,
    )
    for sep in "=:"
)


def _candidates(text: str) -> list[int]:
    """Where a '=' or ':' follows a name that may end with a secret word, in text order."""
    found = [m.start() for m in _NAME_CANDIDATES[0].finditer(text)] if "=" in text else []
    if ":" in text:
        found += [m.start() for m in _NAME_CANDIDATES[1].finditer(text)]
        found.sort()
    return found


#: The text before a candidate's separator, reversed: the gap, then a secret word ending there.
_NAME_REVERSED: Final = re.compile(
    r"""[ \t]?["']?\\?(?:drowssap|dwssap|terces|nekot|s?laitnederc"""
    r"|(?:ssap|dwp)(?![A-Za-z0-9])|yek[_.\-]?(?:ipa|ssecca|etavirp|terces|htua)(?![A-Za-z0-9]))"
    r"[A-Za-z0-9_\-]*(?P<query>[?&])?",
    re.ASCII | re.IGNORECASE,
)
#: How far before its separator a candidate's name is read back (the gap, the name, and
#: the '?' or '&' of a URL's query before it).
_NAME_LIMIT: Final = 64
#: An unquoted value: up to a space, a quote or what ends a value on a shell line or in a query.
_UNQUOTED: Final = re.compile(r"""[^\s"'`\\,;&]{1,256}""")
#: What makes an unquoted value code or a reference, not a literal: a call, an index, a
#: template, a variable (`$TOKEN`, `%(token)s`, `<token>`), a number, a decorator, an
#: unpacking, a path (`PWD=/home/me`). ('+' and '/' inside stay: base64 values hold them.)
_CODE: Final = re.compile(r"[()\[\]{}<>$%]|^-?\d[\d_.]*$|^[.@*/~]|^[A-Za-z]:\\")
_DOTTED: Final = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+", re.ASCII)
_IDENTIFIER: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*", re.ASCII)
_BASE64: Final = re.compile(r"[A-Za-z0-9+/]+={0,2}", re.ASCII)
#: A file path (`"PWD": "/Users/me"`), which a value in quotes may also be.
_PATH: Final = re.compile(r"(?:~|\.{1,2})?/[\w.\-]+(?:/[\w.\-]*)*|[A-Za-z]:\\[\w.\\\- ]*")
#: Digits and signs read as the letters they stand for in a placeholder ("s00pers3cret").
_LEET: Final = str.maketrans("013457@$", "oieastas")
#: What a placeholder, a sample or a word holds (https://docs.github.com/en/code-security/secret-scanning
#: leaves such values out the same way): never a secret, not even a guess.
_PLACEHOLDER: Final = re.compile(
    r"change.?me|example|placeholder|dummy|sample|your|xxx|\*\*\*|\.\.\.|redacted|secret|passw|token"
    r"|fake|todo|replace|insert|enter|test|none|null|undefined|true|false|string|default|mypass",
    re.IGNORECASE,
)
#: The character classes `_looks_generated` counts changes between (separators are skipped).
_CLASS = {**dict.fromkeys("abcdefghijklmnopqrstuvwxyz", 1), **dict.fromkeys("ABCDEFGHIJKLMNOPQRSTUVWXYZ", 2)}
_CLASS.update(dict.fromkeys("0123456789", 3))
_SEPARATORS = frozenset("_-.")


def _changes(value: str) -> int:
    """How often the class (lower, upper, digit, other) changes from one character to the next."""
    classes = [_CLASS.get(c, 4) for c in value if c not in _SEPARATORS]
    return sum(a != b for a, b in itertools.pairwise(classes))


def _looks_generated(value: str) -> bool:
    """Whether ``value`` is varied enough to be a generated credential, not a word or a name.

    Random characters change class (lower, upper, digit, other) at about half their
    places; a camelCase name twice per word. A value without digits or symbols must
    change nearly as often as random letters do; a base64 text that decodes to readable
    words ("bm90IG15…", "not my…") is a sample, not a key.
    """
    changes = _changes(value)
    if len(value) < 8 or len(set(value)) < 5 or changes < max(3, 0.3 * len(value)):
        return False
    if value.isalpha() and changes < 0.45 * len(value):
        return False
    return not _readable_base64(value)


def _readable_base64(value: str) -> bool:
    """Whether ``value`` is base64 of printable text with a space (an encoded sentence)."""
    if len(value) % 4 or not _BASE64.fullmatch(value):
        return False
    try:
        decoded = base64.b64decode(value, validate=True)
    except ValueError:
        return False
    return b" " in decoded and all(32 <= byte < 127 for byte in decoded)


def _judge(value: str, *, quoted: bool, tight: bool) -> bool | None:
    """What a value after a secret's name is: True certain, False a guess, None no finding.

    ``quoted``: a literal between quotes (or a URL's password); ``tight``: written
    ``NAME=value`` with no space, as `.env` lines, flags and queries are and code rarely is.
    """
    if len(value) < 4 or MARKER_RE.search(value) or value[0] in "$<{%" or "${" in value:
        return None  # too short to hold a secret, a marker, or a reference to another value
    if not quoted and (_CODE.search(value) or _DOTTED.fullmatch(value)):
        return None  # an expression, a call, an attribute, a number
    if _PLACEHOLDER.search(value) or _PLACEHOLDER.search(value.translate(_LEET)) or _PATH.fullmatch(value):
        return None  # a placeholder, also spelled in digits ("s3cr3t"), or a path
    if quoted and (any(c.isspace() for c in value) or "{" in value):
        return False  # prose or a template: maybe a passphrase, never certain
    if not quoted and not tight and _IDENTIFIER.fullmatch(value):
        # `name = value` / `name: value` with an identifier: code (a variable, an annotation),
        # unless it changes class nearly as often as random characters do (a camelCase name
        # changes twice per word).
        if _looks_generated(value) and _changes(value) * 4 >= len(value) and any(c.isdigit() for c in value):
            return True
        return None
    return _looks_generated(value)


def _value_after(text: str, at: int) -> tuple[int, int, bool, bool] | None:
    """The value a separator at ``at - 1`` assigns: (start, end, quoted, tight), or None."""
    if text.startswith(("=", ">", ":", "//"), at):
        return None  # '==', '=>', ':=', '::', a URL's "://": no assignment
    start = at
    while start < len(text) and start - at < 4 and text[start] in " \t":
        start += 1
    tight = start == at and text[at - 2 : at - 1] not in (" ", "\t")
    quote = text[start : start + 2] if text.startswith(('\\"', "\\'"), start) else text[start : start + 1]
    # Backquotes are left out: in prose they mark code (`d===t`), in JavaScript a template.
    if quote in ('"', "'", '\\"', "\\'"):
        inner = start + len(quote)
        close = text.find(quote, inner, inner + 257)
        if close < 0 or "\n" in text[inner:close]:
            return None  # no literal on this line: a string built over lines, or code
        return inner, close, True, tight
    if text[at - 1] == ":" and start == at:
        return None  # YAML puts a space after ':'; `name:value` is code (a JavaScript object)
    value = _UNQUOTED.match(text, start)
    return None if value is None else (start, value.end(), False, tight)


#: A URL's user info with a password, found from its "://": the user, then the password.
_URL_USERINFO: Final = re.compile(r"""://([^\s:/@?#"'`<>\[\],\\]{0,128}):([^\s/@?#"'`<>,\\]{1,256})@""")
#: curl's ``-u user:password`` / ``--user user:password``.
_CURL_USER: Final = re.compile(
    r"""-(?<![\w-]-)(?:u|-user)(?:[ \t]+|=)["']?([^\s:"']{1,128}):([^\s"']{1,256})"""
)


def _assignments(text: str) -> Iterator[Found]:
    """The values names say are secret, certain or guessed (`_judge`)."""
    for at in _candidates(text):
        name = _NAME_REVERSED.match(text[max(0, at - _NAME_LIMIT) : at][::-1])
        value = _value_after(text, at + 1) if name is not None else None
        if name is None or value is None:
            continue
        start, end, quoted, tight = value
        verdict = _judge(text[start:end], quoted=quoted, tight=tight)
        if verdict is not None:
            # A URL's query parameter (`?token=`, `&page_token=`) carries badge, CSRF and
            # pagination tokens as often as credentials: a guess at most.
            yield Found(ENV_KIND, start, end, verdict and name["query"] is None)


def _passwords(text: str) -> Iterator[Found]:
    """The passwords of URLs' user info and of curl's ``-u``, certain or guessed (`_judge`)."""
    # Each pattern starts with a literal, so one pass finds where it can start (see
    # `_NAME_CANDIDATES`): cheaper than testing for "://" or "-u " first.
    matches = [*_URL_USERINFO.finditer(text), *_CURL_USER.finditer(text)]
    for match in matches:
        user, password = match.group(1, 2)
        verdict = None if password == user else _judge(password, quoted=True, tight=True)
        if verdict is not None:
            start, end = match.span(2)
            yield Found(PASSWORD_KIND, start, end, verdict)


#: The kinds known by the name in front of a value of no fixed format: a placeholder there
#: (``Bearer YOUR_TOKEN``, ``_authToken=MYTOKEN``) is a sample, as a name-based value's is.
_NAMED_FORMATS: Final = frozenset({"npm-token", "bearer-token", "aws-secret-key", "azure-storage-key"})


def _sample(kind: str, secret: str) -> bool:
    """Whether a match is documentation's sample, not a secret: AWS's example keys
    (AKIAIOSFODNN7EXAMPLE, https://docs.aws.amazon.com/IAM/latest/UserGuide/security-creds.html)
    and their like, or a placeholder after a name."""
    return "EXAMPLE" in secret.upper() or (kind in _NAMED_FORMATS and _PLACEHOLDER.search(secret) is not None)
