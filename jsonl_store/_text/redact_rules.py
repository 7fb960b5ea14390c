"""The built-in redaction rules: one pattern per secret format, the marker, a finding (spec §18).

Each format is written once here, citing where it is described; `_text.redact` combines them
into one regular expression and searches a text from the literal pieces each needs
(`_TEXT_ANCHORS`). A private key is found by its header, and its block is read line by
line whatever gutter each line carries (`_key_block_end`). Name-based values, whose
format is no more than the name in front, are judged in `_text.redact_names`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Final, NamedTuple

from .._errors import InvalidArgument

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
