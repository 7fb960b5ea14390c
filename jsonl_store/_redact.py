"""Secrets found in stored text and replaced by a marker naming their kind (spec §18).

A secret becomes ``[REDACTED:<kind>]`` (`marker`), so a transcript stays readable and
says what was there. The built-in patterns (`BUILTIN_KINDS`) are written here, one per
format, each citing where its format is described; they are combined into one regular
expression, so a text is searched once whatever the number of kinds.

Redaction sits on the append path, so the common case (nothing secret) must cost little:
`Redactor.redact_json` first looks in the encoded bytes for the literal pieces every
built-in pattern needs (`_GATES`, a necessary condition, see its comment), and only when
one is there decodes the value and redacts its strings. A value over `_BIG` (a long tool
output) has only the lines those pieces are on decoded and searched (`_large_may_hold`).

Why not a library: detect-secrets 1.5.0 (https://github.com/Yelp/detect-secrets), the
well-kept one, took 6.3 ms for one clean 0.5 KB line with its default plugins (its
entropy plugins also flag random ids and base64 data as secrets), against 5.6 µs for
`Redactor.find` on the same line, measured on this project's CI machine; it would also
bring pyyaml and requests into a core that depends on orjson and msgspec only. The
formats are what we take from it and from each vendor's documentation, cited below.
"""

from __future__ import annotations

import base64
import functools
import itertools
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Final, NamedTuple

import msgspec

from ._errors import InvalidArgument

#: What a kind may be named: it is written into the marker, which readers parse.
KIND_PATTERN: Final = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
#: The marker as written: `marker` builds it, `MARKER_RE` finds it (spec §18).
MARKER_RE: Final = re.compile(r"\[REDACTED:([a-z0-9]+(?:-[a-z0-9]+)*)\]")
#: The kind a user's pattern given without one is reported as.
CUSTOM_KIND: Final = "custom"

#: The first line of a PEM (RFC 7468 §2) or OpenPGP armored (RFC 4880 §6.2) private key.
KEY_HEADER: Final = r"-----BEGIN[A-Z0-9 ]{0,32} PRIVATE KEY(?: BLOCK)?-----"

# What may stand around a token: a token never starts or ends in the middle of a run of
# these, so "task-runner" holds no OpenAI key and a longer id holds no AWS key id.
_B = r"(?<![A-Za-z0-9_\-])"
_E = r"(?![A-Za-z0-9_\-])"
# Spaces around ':' in a header or a JSON key, bounded so that every match starts within
# `_LOOKBACK` characters before one of its `_TEXT_ANCHORS`.
_SP = r"[ \t]{0,4}"
# The header's name in the three spellings in use (not any mix of cases): `_GATES` can
# then look for it by its 'z'.
_AUTHORIZATION = ("Authorization", "authorization", "AUTHORIZATION")


def _starts(first: str) -> str:
    """``first``, where a token may start (not inside a longer run of token characters).

    The look-behind comes after the first character, so every alternative of the combined
    pattern starts with a literal, which CPython's regex engine tests before entering the
    alternative: a text position is rejected by one comparison per kind.
    """
    return f"{first}(?<![A-Za-z0-9_\\-]{first})"


#: (kind, pattern), a kind listed once per spelling of its fixed start. Where a pattern has
#: a group named ``secret`` only that part is replaced (the name of a variable stays
#: readable), else the whole match. Each starts with a literal character (see `_starts`).
#: Order matters where two kinds can start at one place: the more specific comes first.
BUILTIN: Final[tuple[tuple[str, str], ...]] = (
    # A GCP service-account key file's "private_key" field (the key file layout:
    # https://cloud.google.com/iam/docs/keys-create-delete#creating). Seen as text, its
    # newlines are often JSON's two-character escapes, hence `\\n` in the body.
    (
        "gcp-service-account-key",
        r'"private_key"'
        + _SP
        + ":"
        + _SP
        + r'"(?P<secret>-----BEGIN PRIVATE KEY-----(?:[A-Za-z0-9+/=\s]|\\n)*?'
        r"-----END PRIVATE KEY-----(?:\\n)?)",
    ),
    # PEM (RFC 7468 §2) and OpenPGP armor (RFC 4880 §6.2) private keys: the header here,
    # the whole block in `_key_block_end` (a gutter or a quote on every line, or no END line
    # in a truncated tool output, still leaves no key bytes behind the marker).
    ("private-key", KEY_HEADER),
    # AWS access key ids: "AKIA" (long-term) and "ASIA" (temporary) then 16 upper-case
    # letters and digits (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_identifiers.html#identifiers-unique-ids).
    ("aws-access-key", r"A(?<![A-Za-z0-9]A)(?:KIA|SIA)[A-Z0-9]{16}(?![A-Za-z0-9])"),
    # The secret access key: 40 base64 characters, recognisable only by the name in front
    # (the credentials file and environment variable of
    # https://docs.aws.amazon.com/cli/latest/userguide/cli-configure-files.html).
    *(
        (
            "aws-secret-key",
            name
            + r"""["']?"""
            + _SP
            + "[=:]"
            + _SP
            + r"""["']?(?P<secret>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])""",
        )
        for name in ("aws_secret_access_key", "AWS_SECRET_ACCESS_KEY", "SecretAccessKey", "secretAccessKey")
    ),
    # Azure storage connection strings: "AccountKey=<base64>", Service Bus and Event Hubs
    # "SharedAccessKey=<base64>"
    # (https://learn.microsoft.com/azure/storage/common/storage-configure-connection-string).
    *(
        ("azure-storage-key", name + r"=(?P<secret>[A-Za-z0-9+/]{20,}={0,2})")
        for name in ("AccountKey", "SharedAccessKey")
    ),
    # GitHub: ghp_ (personal), gho_ (OAuth), ghu_ (user-to-server), ghs_ (server-to-server),
    # ghr_ (refresh) with 36 base62 characters, and fine-grained github_pat_ tokens
    # (https://github.blog/2021-04-05-behind-githubs-new-authentication-token-formats/).
    ("github-token", _starts("g") + r"(?:h[pousr]_[A-Za-z0-9]{36,251}|ithub_pat_[A-Za-z0-9_]{22,244})" + _E),
    # GitLab personal access tokens: "glpat-" then 20 or more characters
    # (https://docs.gitlab.com/ee/security/tokens/#token-prefixes).
    ("gitlab-token", _starts("g") + r"lpat-[A-Za-z0-9_\-]{20,}(?:\.[A-Za-z0-9_\-]+)*" + _E),
    # Anthropic API keys: "sk-ant-" (https://docs.anthropic.com/en/api/getting-started);
    # before OpenAI's, whose "sk-" they start with.
    ("anthropic-api-key", _starts("s") + r"k-ant-[A-Za-z0-9_\-]{32,}" + _E),
    # OpenAI: "sk-" and 20 or more letters and digits (the older keys), or "sk-proj-",
    # "sk-svcacct-", "sk-admin-" keys, which also hold "-" and "_"
    # (https://platform.openai.com/docs/api-reference/authentication).
    (
        "openai-api-key",
        _starts("s") + r"k-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{20,}|[A-Za-z0-9]{20,})" + _E,
    ),
    # Google API keys: "AIza" and 35 characters (https://cloud.google.com/docs/authentication/api-keys).
    ("google-api-key", _starts("A") + r"Iza[0-9A-Za-z_\-]{35}" + _E),
    # Slack tokens: xoxb- (bot), xoxp- (user), xoxa-/xoxr- (app, refresh), xoxe- (config),
    # xapp- (app-level) (https://api.slack.com/authentication/token-types), and incoming
    # webhook URLs (https://api.slack.com/messaging/webhooks).
    ("slack-token", _starts("x") + r"(?:ox[abeoprs]-[A-Za-z0-9\-]{10,}|app-[0-9]-[A-Za-z0-9\-]{10,})" + _E),
    ("slack-webhook", r"https://hooks\.slack\.com/services/(?P<secret>[A-Za-z0-9_/]{20,})"),
    # Stripe secret and restricted keys, live and test (https://docs.stripe.com/keys);
    # publishable keys (pk_) are public by design.
    *(("stripe-key", _starts(first) + r"k_(?:live|test)_[A-Za-z0-9]{16,}" + _E) for first in "sr"),
    # SendGrid API keys: "SG." then two base64url parts of 22 and 43 characters
    # (https://www.twilio.com/docs/sendgrid/ui/account-and-settings/api-keys).
    ("sendgrid-api-key", _starts("S") + r"G\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}" + _E),
    # Twilio API key SIDs: "SK" and 32 hex digits, the key's name, which with its secret
    # (found by name, `.env` style) signs requests (https://www.twilio.com/docs/iam/api-keys).
    ("twilio-api-key", _starts("S") + r"K[0-9a-fA-F]{32}" + _E),
    # PyPI API tokens: "pypi-" and a base64url macaroon, whose first bytes encode to "AgE"
    # (https://pypi.org/help/#apitoken).
    ("pypi-token", _starts("p") + r"ypi-AgE[A-Za-z0-9_\-]{50,}" + _E),
    # npm access tokens: "npm_" and 36 base62 characters
    # (https://github.blog/2021-09-23-announcing-npms-new-access-token-format/), and
    # whatever `.npmrc` gives as a registry's "_authToken" (older tokens are UUIDs)
    # (https://docs.npmjs.com/cli/configuring-npm/npmrc#auth-related-configuration).
    ("npm-token", _starts("n") + r"pm_[A-Za-z0-9]{36}" + _E),
    ("npm-token", r":_authToken" + _SP + "=" + _SP + r"""["']?(?![$<{%])(?P<secret>[^\s"'`$]{8,})"""),
    # A JSON Web Token (RFC 7519 §3): three base64url parts; the first two are JSON
    # objects, so they start with "eyJ" ('{"' encoded).
    ("jwt", _starts("e") + r"yJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*" + _E),
    # HTTP credentials (RFC 9110 §11.6.2; Bearer RFC 6750 §2.1, Basic RFC 7617), as a
    # header line or a header mapping written out ("Authorization": "Bearer ...").
    *(
        (
            "bearer-token",
            name + r"""["']?""" + _SP + ":" + _SP + r"""["']?(?:Bearer|bearer|BEARER)[ \t]+"""
            r"(?!\[REDACTED:)(?![$<{%])(?P<secret>[A-Za-z0-9\-._~+/]{8,}=*)",
        )
        for name in _AUTHORIZATION
    ),
    *(
        (
            "basic-auth",
            name + r"""["']?""" + _SP + ":" + _SP + r"""["']?(?:Basic|basic|BASIC)[ \t]+"""
            r"(?P<secret>[A-Za-z0-9+/]{8,}={0,2})",
        )
        for name in _AUTHORIZATION
    ),
)

#: Name-based findings: the value after a name that says it holds a secret
#: (``DB_PASSWORD=…``, ``export GITHUB_TOKEN=…``, ``--db-password=…``, ``"password": "…"``,
#: ``password: …`` in YAML). The name must end with the secret-looking word, as a whole part
#: of it for the short words, so MAX_TOKENS=4096, TOKEN_COUNT=3 and COMPASS=north are no
#: candidates. A name says little about its value: code is full of ``token = next_token()``
#: and ``self.password = password``. So such a value is only a *guess* (`Found.certain` is
#: False: `Redactor.find` reports it, `Redactor.redact` leaves it) unless it passes
#: `_judge`: a literal (quoted, or an unquoted `.env`/INI/YAML/flag value that is no code),
#: no placeholder or reference, and varied enough to look generated.
ENV_KIND: Final = "env-secret"
#: The password of a URL's user info (``postgres://user:…@host/db``, RFC 3986 §3.2.1) or
#: of curl's ``-u user:…`` (https://curl.se/docs/manpage.html#-u), judged as a name-based
#: value is.
PASSWORD_KIND: Final = "password"
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
#: `_NAME_REVERSED` over encoded bytes, looser: the gap as JSON writes it (a quote as \",
#: a tab as \t, a backslash as \\), and no look at the byte before the word (the 'n' of
#: an escaped newline is a letter there, not in the text).
_NAME_REVERSED_BYTES: Final = re.compile(
    rb"""[ \t"'\\t]{0,8}(?:drowssap|dwssap|terces|nekot|s?laitnederc|ssap|dwp"""
    rb"|yek[_.\-]?(?:ipa|ssecca|etavirp|terces|htua))",
    re.IGNORECASE,
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


BUILTIN_KINDS: Final = (*dict.fromkeys(kind for kind, _ in BUILTIN), ENV_KIND, PASSWORD_KIND)

#: The literal pieces every pattern of `BUILTIN` needs, as text: a string without one is
#: not searched further, and one with them only from a little before each (`_LOOKBACK`).
#: The look-behinds check what is just before a common character ('-', '_') only where
#: it occurs.
_TEXT_ANCHORS: Final = (
    r"AKIA|ASIA|AIza"
    r"|-(?:----BEGIN|(?<=sk-)|(?<=glpat-)|(?<=xox.-)|(?<=xapp-)|(?<=pypi-))"
    r"|_(?:(?<=gh[pousr]_)|(?<=github_)|(?<=[sr]k_)|(?<=[Aa][Ww][Ss]_)|(?<=npm_)|(?=authToken))"
    r"|=(?<=Key=)|J(?<=eyJ)|\.(?:(?<=hooks\.)|(?<=SG\.))|K(?:(?<=SK)|(?<=ccessK))"
    r"|B(?:earer|EARER|asic|ASIC)|b(?:earer|asic)"
)
_ANCHORS_IN_TEXT: Final = re.compile(_TEXT_ANCHORS)
#: Every match of `BUILTIN` starts at most this far before the anchor it needs (the
#: longest way is "AUTHORIZATION": "Bearer, with the spaces `_SP` allows).
_LOOKBACK: Final = 40
#: The encoded-JSON pre-filter: (byte, bytes next to it, pattern); a built-in secret in any
#: string of a JSON value needs, in the value's encoding, one of the bytes and a match of
#: its pattern at that byte (look-behinds check what comes before it). None of these
#: pieces is ever escaped in JSON (only '"', '\\' and control characters are), so the
#: encoding holds them whenever a string does. Finding one byte (``bytes.find``, which is
#: memchr) is some 20 times faster than any regular-expression scan, so `_holds` jumps
#: from one occurrence of the byte to the next and tries the pattern only there: '-' and
#: '_' are in nearly every value (ids, keys), but only a few times.
_GATES: Final[tuple[tuple[bytes, frozenset[int] | None, re.Pattern[bytes]], ...]] = (
    (b"A", None, re.compile(rb"A(?:KIA|SIA|Iza)")),
    (b"J", frozenset(b"y"), re.compile(rb"J(?<=eyJ)")),
    (b"z", frozenset(b"i"), re.compile(rb"z(?<=uthoriz)ation")),
    (b"Z", frozenset(b"I"), re.compile(rb"Z(?<=UTHORIZ)ATION")),
    (b"/", frozenset(b"m"), re.compile(rb"/(?<=hooks\.slack\.com/)")),
    (b"G", frozenset(b"S"), re.compile(rb"G(?<=SG)\.[A-Za-z0-9_\-]{22}\.")),
    (b"K", frozenset(b"Ss"), re.compile(rb"K(?:(?<=SK)[0-9a-fA-F]{32}|(?<=ccessK)ey)")),
    # -----BEGIN, sk-, glpat-, xox?-, xapp-, pypi-: the byte before, or the '-' after for
    # BEGIN. Each with what its kinds' patterns need after it (letters, digits, '-' and '_'
    # are never escaped either): code is full of '-' and '_' ("disk_", "task-"), and a
    # value these let through has every string scanned for every kind.
    (
        b"-",
        frozenset(b"-ktabeoprsi"),
        re.compile(
            rb"-(?:----BEGIN|(?<=[abeoprskti]-)(?:(?<=sk-)(?:ant-|proj-|svcacct-|admin-|[A-Za-z0-9]{20})"
            rb"|(?<=glpat-)[A-Za-z0-9_\-]{20}|(?<=xox[abeoprs]-)[A-Za-z0-9\-]{10}|(?<=xapp-)[0-9]-"
            rb"|(?<=pypi-)AgE))"
        ),
    ),
    # gh?_, github_pat_, sk_/rk_ live or test, aws_secret_access_key, npm_, :_authToken.
    (
        b"_",
        frozenset(b"pousrbkSsm:"),
        re.compile(
            rb"_(?<=[pousrbkSsm:]_)(?:(?<=gh[pousr]_)[A-Za-z0-9]{36}|(?<=github_)pat_|(?<=[sr]k_)(?:live|test)_"
            rb"|(?<=aws_)secret_access_key|(?<=AWS_)SECRET_ACCESS_KEY|(?<=npm_)[A-Za-z0-9]{36}"
            rb"|(?<=:_)authToken)"
        ),
    ),
)
#: The name-based and password pre-filter over encoded JSON: (byte, the bytes that may
#: stand just before it, pattern), as `_GATES`: a candidate separator (as
#: `_NAME_CANDIDATES`, with the gaps a JSON encoding writes: '\\"', '\\t'), a URL with user
#: info, curl's ``-u``. A record's own keys end in an unescaped '"' before their ':'
#: ("content":); those are skipped unread, since no string's text holds them.
_BYTE_GAPS = (
    b"",
    b"[\"' \t]",
    b"(?:[\"'][ \t]|\\\\[\"'t])",
    b"(?:\\\\[\"'][ \t]|[\"']\\\\t)",
    b"\\\\[\"']\\\\t",
)
_NAME_ENDS = frozenset(b"dDsStTnNlLyY' \t")


def _separator_gate(separator: bytes, url: bytes = b"") -> re.Pattern[bytes]:
    """Where ``separator`` may follow a secret word's last letters (`_ENDINGS`) and one of
    `_BYTE_GAPS`: a look at the byte before it picks the gaps that can end there (a
    letter, a space, a quote, an escaped tab), so each occurrence costs a few look-behinds,
    not one per gap. After ':', an unescaped '"' ends a record's own key ("content":), which
    no string's text holds: only a quote's escape (\\") is looked at there. ``url``:
    alternatives tried first, each ending in '|' (a URL's "//" after ':').
    """
    ending = _ENDINGS.encode()

    def before(piece: bytes) -> bytes:
        return b"(?<=" + piece + separator + b")"

    quotes = b"[\"']" if separator == b"=" else b"'"
    branches = (
        before(b"[dstnly]") + before(ending),
        before(b"[ \t]")
        + b"(?:"
        + before(b"[dstnly][ \t]")
        + before(ending + b"[ \t]")
        + b"|"
        + before(b"[\"'][ \t]")
        + b"(?:"
        + before(ending + b"[\"'][ \t]")
        + b"|"
        + before(ending + b"\\\\[\"'][ \t]")
        + b"))",
        before(b"[\"']") + b"(?:" + before(ending + quotes) + b"|" + before(ending + b"\\\\[\"']") + b")",
        before(b"\\\\t")
        + b"(?:"
        + before(ending + b"\\\\t")
        + b"|"
        + before(ending + b"[\"']\\\\t")
        + b"|"
        + before(ending + b"\\\\[\"']\\\\t")
        + b")",
    )
    # The URL first: its ':' may follow any byte. Then one look at the byte before, which
    # rejects most separators in code (')', '=', most letters) and a record's keys at once.
    first = (
        before(b"[dstnly \t\"']")
        if separator == b"="
        else b"(?:" + before(b"[dstnly \t']") + b"|" + before(b'\\\\"') + b")"
    )
    return re.compile(separator + b"(?:" + url + first + b"(?:" + b"|".join(branches) + b"))", re.IGNORECASE)


#: Where a '=' or ':' may assign a name-based value (the gaps of `_BYTE_GAPS`), or a ':'
#: start a URL with user info.
_EQUALS_GATE: Final = _separator_gate(b"=")
#: The URL branch spans what `_URL_USERINFO` can take between "//" and "@": a user of up
#: to 128 characters, ':', a password of up to 256 (neither holds a byte JSON escapes).
_COLON_GATE: Final = _separator_gate(b":", rb'//[^/\s"@]{1,385}@|')
#: curl's option in front of a user and its password.
_DASH_GATE: Final = re.compile(rb"-(?:u|-user)(?:[ =]|\\t)")


def _named_gate(data: bytes) -> bool:
    """Whether a name-based value or a password may be in a string of the encoded ``data``.

    As `_holds` does: from one occurrence of '=', ':' or '-' to the next (memchr; a
    multi-byte ``bytes.find`` is some 50 times slower), trying the pattern only where the
    bytes around allow it, and after a number of occurrences that grows with the size
    (a search of the rest costs about as much as 512 bytes per jump) one search of the rest.
    """
    if len(data) <= _SHORT:  # as in `_gate`: one search costs less than the jumps
        gates = ((b"=", _EQUALS_GATE), (b":", _COLON_GATE), (b"-", _DASH_GATE))
        return any((at := data.find(b)) >= 0 and p.search(data, at) is not None for b, p in gates)
    jumps = _JUMPS + len(data) // 512
    return (
        _jump(data, 0x3D, _NAME_ENDS_EQUALS, jumps, _EQUALS_GATE)
        or _jump(data, 0x3A, _NAME_ENDS, jumps, _COLON_GATE)
        or _jump(data, 0x2D, None, jumps, _DASH_GATE)
    )


#: '=' after a quote: in a string's text it is escaped (\"), so it is never a record's own.
_NAME_ENDS_EQUALS = _NAME_ENDS | frozenset(b'"')


def _jump(
    data: bytes, byte: int, before: frozenset[int] | None, jumps: int, pattern: re.Pattern[bytes]
) -> bool:
    """`_named_gate` for one byte: ``before`` the bytes just before it that let the pattern
    be tried (None: for '-', the byte after must be 'u' or '-')."""
    find, end = data.find, len(data) - 1
    at = find(byte)
    while at >= 0 and jumps:
        jumps -= 1
        if before is None:
            tried = at < end and data[at + 1] in (0x75, 0x2D)  # -u, --user
        else:
            previous = data[at - 1]
            # ':' after an unescaped '"' ends a record's own key ("content":), which no
            # string's text holds; an escaped one (\") ends a key in a JSON text shown.
            tried = previous in before or (previous == 0x22 and data[at - 2] == 0x5C)
            tried = tried or (byte == 0x3A and at < end and data[at + 1] == 0x2F)  # ://
        if tried and pattern.match(data, at) is not None:
            return True
        at = find(byte, at + 1)
    return at >= 0 and pattern.search(data, at) is not None


def _large_may_hold(data: bytes) -> bool:
    """Whether a string of the large encoded ``data`` may hold a certain secret: False means
    `Redactor.redact_json` leaves it as it is, without decoding it.

    Code holds name-based candidates on every page, nearly none of them certain, and
    decoding a megabyte and searching all of its text cost more than appending it (issue
    20 bounds what redaction adds to an append of 1 MB of code output). So: the formats'
    gates (`_LARGE_GATES`), then each place where a name-based value, a password, a Slack
    webhook or a token with a '-' can be (`_line_checked`) is searched on its line alone.
    """
    for byte, before, pattern in _LARGE_GATES:
        at = data.find(byte)
        if at >= 0 and _holds(data, at, byte, before, pattern):
            return True
    return _line_checked(data)


def _line_checked(data: bytes) -> bool:
    """Whether a line of a string of ``data`` that the separators' gates let through holds
    a certain secret, searched as `Redactor.find` searches text.

    A name-based value or password is judged on its line only: a name, its gap and its
    value never span a newline (`_NAME_REVERSED`, `_value_after`, `_URL_USERINFO`,
    `_CURL_USER`), nor does a match of `BUILTIN` (such as a Slack webhook, or an Azure key,
    "AccountKey=", which the '=' gate lets through by its "key") but a private key's block,
    so its header answers True. So do too many lines, or a line too long to find the ends
    of: the caller then searches all of the text.
    """
    checked: set[int] = set()
    budget = len(data) // _LINE_SHARE
    for pattern in (_EQUALS_GATE, _LARGE_COLON, _LARGE_DASH):
        match = pattern.search(data)
        while match is not None:
            at = match.start()
            if pattern is _LARGE_DASH and data.startswith(b"----BEGIN", at + 1):
                return True
            if pattern is _LARGE_DASH or data.startswith(b"//", at + 1) or _named_before(data, at):
                line = _line_at(data, at)
                if line is None:
                    return True
                start, text = line
                if start not in checked:
                    if len(checked) >= budget:
                        return True
                    checked.add(start)
                    if any(found.certain for found in _builtin_find(text)):
                        return True
            match = pattern.search(data, at + 1)
    return False


def _named_before(data: bytes, at: int) -> bool:
    """Whether a secret word (`_NAME_REVERSED_BYTES`), or an Azure key's name, may end just
    before the separator at ``data[at]``."""
    if data.endswith(b"Key", 0, at):  # "AccountKey=", "SharedAccessKey=": `BUILTIN`'s azure-storage-key
        return True
    return _NAME_REVERSED_BYTES.match(data[max(0, at - _NAME_BYTES) : at][::-1]) is not None


#: How many bytes before a separator its name's word and gap can take: the longest word
#: ("credentials", "private_key") and the widest gap as JSON writes it (\\\"\t).
_NAME_BYTES: Final = 24
#: At most one line checked per this many bytes of a value (`_line_checked`); past that,
#: one search of all its text costs less.
_LINE_SHARE: Final = 4096
#: How far from a separator its line's ends are looked for.
_LINE_LIMIT: Final = 16 * 1024


def _line_at(data: bytes, at: int) -> tuple[int, str] | None:
    """The line of the JSON string of encoded ``data`` that holds ``data[at]``: where its
    bytes start and its text. A line ends at a newline (its escape, \\n) or at the string's
    end; None when an end is farther than `_LINE_LIMIT`."""
    start, end = _line_start(data, at), _line_end(data, at)
    if start is None or end is None:
        return None
    try:
        text = _decoder.decode(b'"' + data[start:end] + b'"')
    except msgspec.DecodeError:
        return None
    return (start, text) if isinstance(text, str) else None


def _escaped(data: bytes, at: int) -> bool:
    """Whether ``data[at]`` follows an odd run of backslashes: escaped, part of the escape before it."""
    run = at
    while run > 0 and data[run - 1] == 0x5C:
        run -= 1
    return (at - run) % 2 == 1


def _line_start(data: bytes, at: int) -> int | None:
    """Just after the string's opening quote or the newline escape before ``data[at]``."""
    low, high = max(0, at - _LINE_LIMIT), at
    while True:
        quote, newline = data.rfind(b'"', low, high), data.rfind(b"\\n", low, high)
        edge = max(quote, newline)
        if edge < 0:
            return None
        if not _escaped(data, edge):
            return edge + (1 if edge == quote else 2)
        high = edge


def _line_end(data: bytes, at: int) -> int | None:
    """The string's closing quote or the newline escape after ``data[at]``."""
    low, high = at + 1, min(len(data), at + _LINE_LIMIT)
    while True:
        quote, newline = data.find(b'"', low, high), data.find(b"\\n", low, high)
        edge = min(quote, newline) if quote >= 0 and newline >= 0 else max(quote, newline)
        if edge < 0:
            return None
        if not _escaped(data, edge):
            return edge
        low = edge + 1


#: Above this size a value is taken to hold a name-based candidate (`_gate`, which
#: `might_hold` answers with): code of this size always does. `Redactor.redact_json`
#: checks such a value line by line from its bytes instead (`_large_may_hold`).
_BIG: Final = 64 * 1024
#: After this many occurrences of a byte, one search of the rest is cheaper than the jumps,
#: unless they are sparse: more than `_SPARSE` bytes apart on average.
_JUMPS: Final = 8
_SPARSE: Final = 512
#: Up to this size one search from a byte's first occurrence costs less than the jumps.
_SHORT: Final = 2048
#: `_GATES` for a large value (`_large_may_hold`): a Slack webhook is looked for from its
#: "://" instead (`_LARGE_COLON`), a token with a '-' from `_LARGE_DASH`, on their lines.
_LARGE_GATES: Final = tuple(gate for gate in _GATES if gate[0] not in (b"/", b"-"))
#: `_COLON_GATE` for a large value, with a Slack webhook and user info of any length (the
#: run stops at the next '/', so each byte is read once): the line is then searched.
_LARGE_COLON: Final = _separator_gate(b":", rb'//(?:[^/\s"@]*@|hooks\.slack\.com/)|')
#: The '-' gate of `_GATES` and curl's ``-u`` (`_DASH_GATE`) in one pass, for a large value:
#: a private key's header has its whole text searched (its block spans lines), anything
#: else its line (`_line_checked`).
_LARGE_DASH: Final = re.compile(
    b"-(?:" + _DASH_GATE.pattern[1:] + b"|" + next(p for b, _, p in _GATES if b == b"-").pattern[1:] + b")"
)


def _holds(
    data: bytes,
    at: int,
    byte: bytes,
    before: frozenset[int] | None,
    pattern: re.Pattern[bytes],
) -> bool:
    """Whether ``pattern`` matches at an occurrence of ``byte`` in ``data``, the first at ``at``.

    ``before``: the bytes one of the pattern's matches can have just before ``byte`` (or,
    for '-', just after it), looked at first: one index, not a call of the pattern.
    """
    first, jumps = at, 0
    # Jump while the byte is rare: a jump costs about what the pattern's own scan of
    # `_SPARSE` bytes does (memchr is some ten times faster than the engine's loop).
    while jumps < _JUMPS or at - first > jumps * _SPARSE:
        if (
            before is None
            or (at > 0 and data[at - 1] in before)
            or (at + 1 < len(data) and data[at + 1] in before)
        ) and pattern.match(data, at) is not None:
            return True
        at = data.find(byte, at + 1)
        if at < 0:
            return False
        jumps += 1
    return pattern.search(data, at) is not None


#: The methods whose replacement `Redactor.redact_json` must call, wherever it is made.
_OVERRIDABLE: Final = frozenset({"find", "redact", "might_hold"})
#: What `_gate` says of an encoded JSON value: no built-in secret can be in it; only a
#: name-based value or a password can (`_named_gate`); any kind can.
_NONE, _NAMED, _ANY = 0, 1, 2


def _gate(data: bytes) -> int:
    """The pre-filter of the built-in kinds over an encoded JSON value: `_NONE`, `_NAMED` or `_ANY`."""
    find, short = data.find, len(data) <= _SHORT
    for byte, before, pattern in _GATES:
        at = find(byte)  # most bytes are not there: no call beyond this one
        if at < 0:
            continue
        # A short value: one search from the first occurrence costs less than jumps.
        if pattern.search(data, at) is not None if short else _holds(data, at, byte, before, pattern):
            return _ANY
    if find(b"=") >= 0 and b"Key=" in data:  # Azure's "AccountKey=" / "SharedAccessKey="
        return _ANY
    if len(data) > _BIG:
        return _NAMED
    return _NAMED if _named_gate(data) else _NONE


def marker(kind: str) -> str:
    """The text a secret of ``kind`` is replaced by: ``[REDACTED:<kind>]``."""
    return f"[REDACTED:{kind}]"


class Found(NamedTuple):
    """One secret in a text: its kind, where it is (``text[start:end]``), and whether it is
    certain (a known format, or a value that passes `_judge`) or only a guess from a name,
    which `Redactor.redact` leaves in place."""

    kind: str
    start: int
    end: int
    certain: bool = True


def mask(secret: str) -> str:
    """A preview that never shows the secret: a few leading characters and the length.

    At most a quarter of the secret (and at most 4 characters) is shown, which for the
    prefixed formats is the public prefix ("ghp_", "AKIA") and nothing of the random part.
    """
    shown = secret[: min(4, len(secret) // 4)]
    return f"{shown}…({len(secret)} chars)"


def _compile(patterns: Iterable[Any]) -> list[tuple[str, re.Pattern[str]]]:
    """A user's extra patterns as (kind, compiled pattern), each checked."""
    if isinstance(patterns, (str, bytes, re.Pattern)) or not isinstance(patterns, Iterable):
        raise InvalidArgument(f"extra redaction patterns must be a list, got {patterns!r}")
    compiled = []
    for item in patterns:
        kind, pattern = item if isinstance(item, tuple) and len(item) == 2 else (CUSTOM_KIND, item)
        if not isinstance(kind, str) or not KIND_PATTERN.fullmatch(kind):
            raise InvalidArgument(f"a redaction kind is lower-case letters, digits and '-', got {kind!r}")
        if isinstance(pattern, str):
            try:
                pattern = re.compile(pattern)
            except re.error as exc:
                raise InvalidArgument(f"bad redaction pattern {item!r}: {exc}") from None
        if not isinstance(pattern, re.Pattern) or not isinstance(pattern.pattern, str):
            raise InvalidArgument(f"a redaction pattern is a str or a compiled str pattern, got {item!r}")
        if pattern.search(""):  # would match everywhere, and replace nothing by a marker forever
            raise InvalidArgument(f"redaction pattern {pattern.pattern!r} matches the empty text")
        compiled.append((kind, pattern))
    return compiled


def _combined(table: Iterable[tuple[str, str]]) -> tuple[re.Pattern[str], list[tuple[str, re.Pattern[str]]]]:
    """One pattern of every alternative (no groups: each alternative's leading literal is then
    tested before it is entered), and each (kind, pattern) to tell which one matched."""
    table = list(table)
    combined = "|".join(source.replace("(?P<secret>", "(?:") for _, source in table)
    return re.compile(combined), [(kind, re.compile(source)) for kind, source in table]


@functools.cache
def _builtin() -> tuple[re.Pattern[str], list[tuple[str, re.Pattern[str]]]]:
    """The built-in patterns, compiled on first use: only a string the pre-filter let
    through needs them, and compiling them costs every command's start-up ~20 ms."""
    return _combined(BUILTIN)


#: Where a line of a key block ends: a newline, or its JSON escape in a text that shows JSON.
_LINE_BREAK: Final = re.compile(r"\r?\n|\r|\\r\\n|\\n")
#: What a tool may put before each line of a key block: `cat -n`'s and an editor's line
#: numbers ("  12\t", "12:", "  12 | ", "12→"), e-mail and Markdown quotes ("> "), a
#: comment's start. Bounded, so a line is read in linear time.
_GUTTER: Final = re.compile(
    r"[ \t]{0,16}(?:\d{1,9}[ \t]{0,4}[|:\u2192\t]?|(?:>[ \t]{0,2}){1,8}|(?:#|//|;|\*|\")[ \t]?)?[ \t]{0,4}"
)
#: A line of a key block after its gutter: base64 (up to a line's width), or one of the
#: headers RFC 1421 §4.6 and RFC 4880 §6.2 allow (an encrypted key's "Proc-Type").
_KEY_LINE: Final = re.compile(
    r"[A-Za-z0-9+/=]{1,160}[ \t]{0,8}|(?:Proc-Type|DEK-Info|Comment|Version|Hash|Charset):[^\r\n\\]{0,200}|[ \t]{0,8}"
)
_KEY_END: Final = re.compile(KEY_HEADER.replace("BEGIN", "END"))
#: How far a key block may reach (an 8192-bit RSA key in PEM is under 7 KB).
_KEY_BLOCK_LIMIT: Final = 64 * 1024


def _key_block_end(text: str, at: int) -> int | None:
    """Where the private-key block whose header ends at ``at`` ends; None for a mere mention.

    Line by line, whatever gutter each line carries (`_GUTTER`): up to the END line, or,
    in a truncated text, after the last line of key data. A header with no key data after
    it (code that tests for one, prose) holds nothing secret.
    """
    limit, data_lines, end = min(len(text), at + _KEY_BLOCK_LIMIT), 0, at
    while end < limit and (brk := _LINE_BREAK.match(text, end)) is not None:
        gutter = _GUTTER.match(text, brk.end())
        start = gutter.end() if gutter is not None else brk.end()
        closing = _KEY_END.match(text, start)
        if closing is not None:
            return closing.end() if data_lines else None
        line = _KEY_LINE.match(text, start)
        after = line.end() if line is not None else start
        if after < len(text) and _LINE_BREAK.match(text, after) is None:
            break  # not a line of key data: the block ended before it
        data_lines += after - start >= 16
        end = after
    return end if data_lines else None


#: The kinds known by the name in front of a value of no fixed format: a placeholder there
#: (``Bearer YOUR_TOKEN``, ``_authToken=MYTOKEN``) is a sample, as a name-based value's is.
_NAMED_FORMATS: Final = frozenset({"npm-token", "bearer-token", "aws-secret-key", "azure-storage-key"})


def _sample(kind: str, secret: str) -> bool:
    """Whether a match is documentation's sample, not a secret: AWS's example keys
    (AKIAIOSFODNN7EXAMPLE, https://docs.aws.amazon.com/IAM/latest/UserGuide/security-creds.html)
    and their like, or a placeholder after a name."""
    return "EXAMPLE" in secret.upper() or (kind in _NAMED_FORMATS and _PLACEHOLDER.search(secret) is not None)


def _prefixed(text: str) -> list[Found]:
    """The secrets of the built-in formats (`BUILTIN`) in ``text``, left to right."""
    found: list[Found] = []
    end = 0  # where the last match ended: matches do not overlap
    builtin_pattern, kind_patterns = _builtin()
    for anchor in _ANCHORS_IN_TEXT.finditer(text):
        at = anchor.start()
        if at < end:
            continue
        # The combined pattern is tried only at the few places a match can start from:
        # the leftmost start that matches wins, as in a search.
        for start in range(max(end, at - _LOOKBACK), at + 1):
            if builtin_pattern.match(text, start) is None:
                continue
            # The alternative that matched is the first kind's pattern matching here.
            kind, match = next(
                (kind, m) for kind, pattern in kind_patterns if (m := pattern.match(text, start))
            )
            span = match.span("secret") if "secret" in match.re.groupindex else match.span()
            end = match.end()
            if kind == "private-key":
                block = _key_block_end(text, end)
                if block is None:
                    break  # a mention of the header, no key
                span, end = (span[0], block), block
            if not _sample(kind, text[span[0] : span[1]]):
                found.append(Found(kind, *span))
            break
    return found


def _builtin_find(text: str, *, anchors: bool = True) -> list[Found]:
    """The secrets of built-in kinds in ``text``, maybe overlapping (see `_leftmost`).

    ``anchors=False`` looks for name-based values and passwords only: for a string of a
    JSON value in which `_GATES` found none of the other kinds' pieces (`Redactor.redact_json`).
    """
    found = _prefixed(text) if anchors else []
    if "=" in text or ":" in text:
        found.extend(_assignments(text))
        found.extend(_passwords(text))
    return found


def _no_overlaps(found: list[Found]) -> list[Found]:
    """``found`` without overlaps, left to right: the leftmost wins, a known format over a
    name-based value (a GitHub token assigned to GITHUB_TOKEN is a GitHub token), then the longest."""
    found.sort(key=lambda f: (f.start, f.kind in (ENV_KIND, PASSWORD_KIND), -f.end))
    kept: list[Found] = []
    for item in found:
        if not kept or item.start >= kept[-1].end:
            kept.append(item)
    return kept


def _leftmost(found: list[Found]) -> list[Found]:
    """``found`` without overlaps: the certain ones first (a guess never hides a secret
    from `Redactor.redact`), then the guesses that overlap none of them; left to right."""
    if len(found) < 2:
        return found
    certain = _no_overlaps([f for f in found if f.certain])
    guesses = [
        g for g in found if not g.certain and all(g.end <= c.start or g.start >= c.end for c in certain)
    ]
    return sorted(certain + _no_overlaps(guesses), key=lambda f: f.start)


class Redactor:
    """Finds secrets in text and replaces each by `marker` of its kind.

    ``patterns`` adds kinds of your own: each a regular expression (reported as
    ``custom``) or a ``(kind, pattern)`` pair; a group named ``secret`` limits what is
    replaced, as in the built-in ones. ``builtin=False`` leaves only yours.
    """

    def __init__(self, patterns: Iterable[Any] = (), *, builtin: bool = True) -> None:
        self._extra = _compile(patterns)
        self._builtin = bool(builtin)

    def __repr__(self) -> str:
        extra = [kind for kind, _ in self._extra]
        return f"Redactor(builtin={self._builtin}, extra={extra})"

    # -- text -----------------------------------------------------------------------

    def find(self, text: str) -> list[Found]:
        """Every secret in ``text``, left to right, none overlapping another: the certain
        ones and the guesses (``certain=False``, name-based values that fail `_judge`)."""
        return self._find(text, anchors=True)

    def _find(self, text: str, *, anchors: bool) -> list[Found]:
        found = _builtin_find(text, anchors=anchors) if self._builtin else []
        for kind, pattern in self._extra:
            for match in pattern.finditer(text):
                start, end = match.span("secret") if "secret" in pattern.groupindex else match.span()
                if start < end and not MARKER_RE.fullmatch(text, start, end):
                    found.append(Found(kind, start, end))
        return _leftmost(found)

    def redact(self, text: str) -> str:
        """``text`` with every certain secret replaced by `marker` of its kind; guesses stay."""
        return self._redact(text, self.find(text))

    def _redact_named(self, text: str) -> str:
        """`redact` of a string that can hold no built-in secret but a name-based value or a password."""
        return self._redact(text, self._find(text, anchors=False))

    @staticmethod
    def _redact(text: str, found: list[Found]) -> str:
        if not any(f.certain for f in found):
            return text
        pieces: list[str] = []
        at = 0
        for kind, start, end, certain in found:
            if not certain:
                continue
            pieces += (text[at:start], marker(kind))
            at = end
        pieces.append(text[at:])
        return "".join(pieces)

    # -- JSON values ----------------------------------------------------------------

    def might_hold(self, data: bytes) -> bool:
        """False only when the JSON ``data`` surely holds no secret (the cheap pre-filter)."""
        return (self._builtin and _gate(data) != _NONE) or self._extra_might_match(data)

    def _extra_might_match(self, data: bytes) -> bool:
        if not self._extra:
            return False
        # A JSON text without a backslash holds each of its strings as it is (nothing is
        # escaped), so a pattern that matches no part of it matches none of its strings.
        if b"\\" in data:
            return True
        text = data.decode()
        return any(pattern.search(text) for _, pattern in self._extra)

    def redact_value(self, value: Any) -> Any:
        """A copy of a JSON value with every string (keys too) redacted; ``value`` itself if none changed."""
        return _walk(value, self.redact)

    def redact_json(self, data: bytes) -> bytes:
        """The encoded JSON value ``data`` with its strings redacted; ``data`` itself when nothing was.

        The bytes of everything that is not a redacted string stay as they were: a
        decoded value re-encodes to its own bytes (msgspec keeps key order and writes
        numbers as it read them).
        """
        redact = self._text_redactor(data)
        if redact is None:
            return data
        value = _decode(data)
        redacted = _walk(value, redact)
        return data if redacted is value else _encode(redacted)

    def _text_redactor(self, data: bytes) -> Callable[[str], str] | None:
        """What `redact_json` applies to each string of ``data``; None when none can hold a secret.

        Where `_GATES` found none of the formats' pieces, only a name-based value or a
        password (`_named_gate`), and no user pattern may match, only those are looked for: the built-in kinds' scan of each
        string is skipped. A subclass (or an instance) that replaces `find`, `redact` or
        `might_hold` gets its own `redact` on every string `might_hold` lets through.
        """
        cls = type(self)
        if (
            cls.find is not Redactor.find
            or cls.redact is not Redactor.redact
            or cls.might_hold is not Redactor.might_hold
            or not _OVERRIDABLE.isdisjoint(vars(self))  # one replaced on the instance (a mock)
        ):
            return self.redact if self.might_hold(data) else None
        if self._extra_might_match(data):
            return self.redact
        if not self._builtin:
            return None
        if len(data) > _BIG:
            return self.redact if _large_may_hold(data) else None
        gate = _gate(data)
        if gate == _NONE:
            return None
        return self.redact if gate == _ANY else self._redact_named


class CallableRedactor(Redactor):
    """A redactor that hands every stored string to a function of yours (``redact=callable``)."""

    def __init__(self, function: Callable[[str], str]) -> None:
        super().__init__(builtin=False)
        self._function = function

    def __repr__(self) -> str:
        return f"CallableRedactor({self._function!r})"

    def redact(self, text: str) -> str:
        result = self._function(text)
        if not isinstance(result, str):
            raise InvalidArgument(f"the redact callable must return a str, got {type(result).__name__}")
        return result

    def find(self, text: str) -> list[Found]:
        # What a function changed is all that can be said about it: one finding per change.
        redacted = self.redact(text)
        return [] if redacted == text else [Found(CUSTOM_KIND, 0, len(text))]

    def might_hold(self, data: bytes) -> bool:
        return True  # nothing is known about the function: every value is walked


_decoder = msgspec.json.Decoder()
_encoder = msgspec.json.Encoder()


def _decode(data: bytes) -> Any:
    return _decoder.decode(data)


def _encode(value: Any) -> bytes:
    return _encoder.encode(value)


def _walk(value: Any, redact: Callable[[str], str]) -> Any:
    """``value`` with ``redact`` applied to every string; the same object when nothing changed."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        items = [_walk(item, redact) for item in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if isinstance(value, dict):
        pairs = [(_walk(k, redact), _walk(v, redact)) for k, v in value.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(pairs, value.items(), strict=True)):
            return value
        return dict(pairs)
    return value


def strings(value: Any, where: str = "$") -> Iterator[tuple[str, str]]:
    """Every string in a JSON value (keys too) with where it is (``$.content``)."""
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from strings(item, f"{where}[{index}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            yield f"{where}.<key>", key
            yield from strings(item, f"{where}.{key}")


def make(setting: object) -> Redactor | None:
    """The redactor ``SessionStore(redact=...)`` asks for: True, False, a list of patterns or a callable."""
    if setting is True:
        return DEFAULT
    if setting is False or setting is None:
        return None
    if isinstance(setting, Redactor):
        return setting
    if callable(setting):  # a compiled pattern is not callable: it is one of the extra patterns
        return CallableRedactor(setting)
    if not isinstance(setting, Iterable):
        raise InvalidArgument(f"redact must be a bool, a list of patterns or a callable, got {setting!r}")
    return Redactor(setting)


DEFAULT: Final = Redactor()


def redact_text(text: str) -> str:
    """``text`` with every secret of a built-in kind replaced by its marker."""
    if not isinstance(text, str):
        raise InvalidArgument(f"redact_text takes a str, got {type(text).__name__}")
    return DEFAULT.redact(text)
