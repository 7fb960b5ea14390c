"""Secrets found in stored text and replaced by a marker naming their kind (spec §18).

A secret becomes ``[REDACTED:<kind>]`` (`marker`), so a transcript stays readable and
says what was there. The built-in patterns (`BUILTIN_KINDS`) are written here, one per
format, each citing where its format is described; they are combined into one regular
expression, so a text is searched once whatever the number of kinds.

Redaction sits on the append path, so the common case (nothing secret) must cost little:
`Redactor.redact_json` first looks in the encoded bytes for the literal pieces every
built-in pattern needs (`_GATES`, a necessary condition, see its comment), and only when
one is there decodes the value and redacts its strings.

Why not a library: detect-secrets 1.5.0 (https://github.com/Yelp/detect-secrets), the
well-kept one, took 6.3 ms for one clean 0.5 KB line with its default plugins (its
entropy plugins also flag random ids and base64 data as secrets), against 5.6 µs for
`Redactor.find` on the same line, measured on this project's CI machine; it would also
bring pyyaml and requests into a core that depends on orjson and msgspec only. The
formats are what we take from it and from each vendor's documentation, cited below.
"""

from __future__ import annotations

import functools
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

# What may stand around a token: a token never starts or ends in the middle of a run of
# these, so "task-runner" holds no OpenAI key and a longer id holds no AWS key id.
_B = r"(?<![A-Za-z0-9_\-])"
_E = r"(?![A-Za-z0-9_\-])"
# A value an `.env` line or a header assigns: a run of non-space characters, not a marker
# already there (redacting twice changes nothing) and not a reference to another variable
# (`$TOKEN`, `${TOKEN}`, `<token>`), which holds no secret itself.
_VALUE = r"""(?!\[REDACTED:)(?![$<{%])(?P<secret>[^\s"'`\\,;]{4,})"""
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
    # PEM (RFC 7468 §2) and OpenPGP armor (RFC 4880 §6.2) private keys: the whole block,
    # also when the END line is missing (a truncated tool output still holds key bytes).
    (
        "private-key",
        r"-----BEGIN[A-Z0-9 ]{0,32} PRIVATE KEY(?: BLOCK)?-----(?:[A-Za-z0-9+/=\s:,.\-]|\\n|\\r)*?"
        r"(?:-----END[A-Z0-9 ]{0,32} PRIVATE KEY(?: BLOCK)?-----|(?=[^A-Za-z0-9+/=\s:,.\-\\])|\Z)",
    ),
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
        for name in ("aws_secret_access_key", "AWS_SECRET_ACCESS_KEY")
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

#: `.env`, shell and config assignments whose name says it holds a secret
#: (DB_PASSWORD=..., export GITHUB_TOKEN=..., --db-password=..., api_key = "..."): the
#: value goes, the name stays. The name must end with the secret-looking word, as a whole
#: part of it for the short words, so MAX_TOKENS=4096, TOKEN_COUNT=3 and COMPASS=north
#: stay as they are. Found from each '=' backwards: `_ENV_NAME_REVERSED` reads the text
#: before the '=' reversed, so one anchored match decides, not a search of every word.
ENV_KIND: Final = "env-secret"
_ENV_NAME_REVERSED: Final = re.compile(
    r"""[ \t]?["']?(?i:(?:drowssap|dwssap|terces|nekot)[A-Za-z0-9]*"""
    r"|(?:ssap|dwp|yek_?ipa|yek_?ssecca|yek_?etavirp|yek_?terces|yek_?htua|s?laitnederc|terces_?tneilc)"
    r"(?![A-Za-z0-9]))(?:[_.\-][A-Za-z0-9]+)*(?![A-Za-z0-9_.])"
)
_ENV_VALUE: Final = re.compile(r"""[ \t]?["']?""" + _VALUE)
#: How far before '=' a secret-looking name may start.
_ENV_NAME_LIMIT: Final = 128
#: The '=' signs `_ENV_NAME_REVERSED` can match before: the name ends with the last letter
#: of one of its words (passworD, passwD, pwD, secreT, tokeN, pasS, credentialS, credentiaL,
#: keY), in either case or as U+017F (long s), which matches 's' case-insensitively, then
#: maybe a quote, then maybe a space or tab. Code is full of '=' (``x = 1``), so the name
#: is read backwards only where this says it may end; the scan is one pass in C.
_ENV_LAST = "dDtTnNsSyYlL\u017f"
_ENV_CANDIDATES: Final = re.compile(
    f"=(?:(?<=[{_ENV_LAST}]=)|(?<=[{_ENV_LAST}][\"'\t ]=)|(?<=[{_ENV_LAST}][\"'][\t ]=))"
)

BUILTIN_KINDS: Final = (*dict.fromkeys(kind for kind, _ in BUILTIN), ENV_KIND)

#: The literal pieces every pattern of `BUILTIN` needs, as text: a string without one is
#: not searched further, and one with them only from a little before each (`_LOOKBACK`).
#: The look-behinds check what is just before a common character ('-', '_') only where
#: it occurs.
_TEXT_ANCHORS: Final = (
    r"AKIA|ASIA|AIza"
    r"|-(?:----BEGIN|(?<=sk-)|(?<=glpat-)|(?<=xox.-)|(?<=xapp-))"
    r"|_(?:(?<=gh[pousr]_)|(?<=github_)|(?<=[sr]k_)|(?<=[Aa][Ww][Ss]_))"
    r"|=(?<=Key=)|J(?<=eyJ)|\.(?<=hooks\.)"
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
_GATES: Final[tuple[tuple[bytes, frozenset[int] | None, re.Pattern[bytes] | None], ...]] = (
    (b"=", None, None),  # `.env` assignments, Azure connection strings
    (b"A", None, re.compile(rb"A(?:KIA|SIA|Iza)")),
    (b"J", frozenset(b"y"), re.compile(rb"J(?<=eyJ)")),
    (b"z", frozenset(b"i"), re.compile(rb"z(?<=uthoriz)ation")),
    (b"Z", frozenset(b"I"), re.compile(rb"Z(?<=UTHORIZ)ATION")),
    (b"/", frozenset(b"m"), re.compile(rb"/(?<=hooks\.slack\.com/)")),
    # -----BEGIN, sk-, glpat-, xox?-, xapp-: the byte before, or the '-' after for BEGIN.
    # Each with what its kinds' patterns need after it (letters, digits, '-' and '_' are
    # never escaped either): code is full of '-' and '_' ("disk_", "task-"), and a value
    # these let through has every string scanned for every kind.
    (
        b"-",
        frozenset(b"-ktabeoprs"),
        re.compile(
            rb"-(?:----BEGIN|(?<=sk-)(?:ant-|proj-|svcacct-|admin-|[A-Za-z0-9]{20})"
            rb"|(?<=glpat-)[A-Za-z0-9_\-]{20}|(?<=xox[abeoprs]-)[A-Za-z0-9\-]{10}|(?<=xapp-)[0-9]-)"
        ),
    ),
    # gh?_, github_pat_, sk_/rk_ live or test, aws_secret_access_key: the byte before.
    (
        b"_",
        frozenset(b"pousrbkSs"),
        re.compile(
            rb"_(?:(?<=gh[pousr]_)[A-Za-z0-9]{36}|(?<=github_)pat_|(?<=[sr]k_)(?:live|test)_"
            rb"|(?<=aws_)secret_access_key|(?<=AWS_)SECRET_ACCESS_KEY)"
        ),
    ),
)
#: After this many occurrences of a byte, one search of the rest is cheaper than the jumps.
_JUMPS: Final = 8
#: Up to this size one search from a byte's first occurrence costs less than the jumps.
_SHORT: Final = 2048


def _holds(
    data: bytes, at: int, byte: bytes, before: frozenset[int] | None, pattern: re.Pattern[bytes]
) -> bool:
    """Whether ``pattern`` matches at an occurrence of ``byte`` in ``data``, the first at ``at``.

    ``before``: the bytes one of the pattern's matches can have just before ``byte`` (or,
    for '-', just after it), looked at first: one index, not a call of the pattern.
    """
    for _ in range(_JUMPS):
        if (
            before is None
            or (at > 0 and data[at - 1] in before)
            or (at + 1 < len(data) and data[at + 1] in before)
        ) and pattern.match(data, at) is not None:
            return True
        at = data.find(byte, at + 1)
        if at < 0:
            return False
    return pattern.search(data, at) is not None


#: The methods whose replacement `Redactor.redact_json` must call, wherever it is made.
_OVERRIDABLE: Final = frozenset({"find", "redact", "might_hold"})
#: What `_gate` says of an encoded JSON value: no built-in secret can be in it; only an
#: `.env` assignment can (a '=' and none of the other kinds' pieces); any kind can.
_NONE, _ASSIGNMENTS, _ANY = 0, 1, 2


def _gate(data: bytes) -> int:
    """The pre-filter of the built-in kinds over an encoded JSON value: `_NONE`, `_ASSIGNMENTS` or `_ANY`."""
    find, short = data.find, len(data) <= _SHORT
    found = _NONE
    for byte, before, pattern in _GATES:
        at = find(byte)  # most bytes are not there: no call beyond this one
        if at < 0:
            continue
        if pattern is None:
            # '=': an `.env` assignment, or an Azure "AccountKey=" / "SharedAccessKey=",
            # which the other kinds' scan finds (its anchor is "Key=").
            if b"Key=" in data:
                return _ANY
            found = _ASSIGNMENTS
            continue
        # A short value: one search from the first occurrence costs less than jumps.
        if pattern.search(data, at) is not None if short else _holds(data, at, byte, before, pattern):
            return _ANY
    return found


def marker(kind: str) -> str:
    """The text a secret of ``kind`` is replaced by: ``[REDACTED:<kind>]``."""
    return f"[REDACTED:{kind}]"


class Found(NamedTuple):
    """One secret in a text: its kind, where it is (``text[start:end]``), and whether it is
    certain (rewritten by `Redactor.redact`) or a guess (reported by `scan` only)."""

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


def _builtin_find(text: str, *, anchors: bool = True) -> list[Found]:
    """The secrets of built-in kinds in ``text``, maybe overlapping (see `_leftmost`).

    ``anchors=False`` looks for `.env` assignments only: for a string of a JSON value in
    which `_GATES` found none of the other kinds' pieces (`Redactor.redact_json`).
    """
    found: list[Found] = []
    end = 0  # where the last match ended: matches do not overlap
    builtin_pattern, kind_patterns = _builtin()
    for anchor in _ANCHORS_IN_TEXT.finditer(text) if anchors else ():
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
            found.append(
                Found(kind, *(match.span("secret") if "secret" in match.re.groupindex else match.span()))
            )
            end = match.end()
            break
    if "=" not in text:
        return found
    for candidate in _ENV_CANDIDATES.finditer(text):
        at = candidate.start()
        name = _ENV_NAME_REVERSED.match(text[max(0, at - _ENV_NAME_LIMIT) : at][::-1])
        value = _ENV_VALUE.match(text, at + 1) if name is not None else None
        if value is not None:
            found.append(Found(ENV_KIND, *value.span("secret")))
    return found


def _leftmost(found: list[Found]) -> list[Found]:
    """``found`` without overlaps, left to right: the leftmost wins, a known format over an
    `.env` value (a GitHub token assigned to GITHUB_TOKEN is a GitHub token), then the longest."""
    if len(found) < 2:
        return found
    found.sort(key=lambda f: (f.start, f.kind == ENV_KIND, -f.end))
    kept: list[Found] = []
    for item in found:
        if not kept or item.start >= kept[-1].end:
            kept.append(item)
    return kept


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
        """Every secret in ``text``, left to right, none overlapping another."""
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
        """``text`` with every secret replaced by `marker` of its kind."""
        return self._redact(text, self.find(text))

    def _redact_assignments(self, text: str) -> str:
        """`redact` of a string that can hold no built-in secret but an `.env` assignment."""
        return self._redact(text, self._find(text, anchors=False))

    @staticmethod
    def _redact(text: str, found: list[Found]) -> str:
        if not found:
            return text
        pieces: list[str] = []
        at = 0
        for kind, start, end, _ in found:
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

        Where `_GATES` found only '=' signs (code is full of them) and no user pattern may
        match, only `.env` assignments are looked for: the built-in kinds' scan of each
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
        gate = _gate(data) if self._builtin else _NONE
        if gate == _NONE:
            return None
        return self.redact if gate == _ANY else self._redact_assignments


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
