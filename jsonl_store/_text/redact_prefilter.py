"""The pre-filter over an encoded JSON value: whether any string of it may hold a secret (spec §18).

Redaction sits on the append path, so the common case (nothing secret) must cost little.
The literal pieces every built-in pattern needs are looked for in the encoded bytes
(`_GATES`, a necessary condition, see its comment); only a value that holds one is
decoded and redacted. A value over `_BIG` (a long tool output) has only the lines those
pieces are on judged (`_large_may_hold`), each by a function the caller gives (`LineJudge`),
so nothing here decodes a value. Those places are found by one RE2 pass (`screen`, with the
``regex`` extra), or else by passes of Python's engine, each over a copy of the bytes in
which the bytes several pieces start with are made one (`_letters_hold`, `_named_checked`).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator
from typing import Final, Protocol

from .redact_lines import LineJudge, line_holds_at
from .redact_names import _ENDINGS

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
    b"(?:\\\\[\"'][ \t]|[\"']\\\\t|\\\\{2}[\"'])",
    b"(?:\\\\[\"']\\\\t|\\\\{2,3}[\"'][ \t]?)",
    b"\\\\{2,3}[\"'](?:[ \t]|\\\\t)",
)
#: A quote of the text as it is encoded, after a backslash of the text or not: \" (a
#: quote), \\' (a backslash and a quote), \\\" (a backslash and a quote shown in
#: JSON, as in {\"password\": ...}). Any of them may end a name's gap (`_TEXT_GAPS`).
_ESCAPED_QUOTES = (b"\\\\[\"']", b"\\\\{2}[\"']", b"\\\\{3}[\"']")
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
        + b"".join(b"|" + before(ending + quote + b"[ \t]") for quote in _ESCAPED_QUOTES)
        + b"))",
        before(b"[\"']")
        + b"(?:"
        + before(ending + quotes)
        + b"".join(b"|" + before(ending + quote) for quote in _ESCAPED_QUOTES)
        + b")",
        before(b"\\\\t")
        + b"(?:"
        + before(ending + b"\\\\t")
        + b"|"
        + before(ending + b"[\"']\\\\t")
        + b"".join(b"|" + before(ending + quote + b"\\\\t") for quote in _ESCAPED_QUOTES)
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


def _large_may_hold(data: bytes, line_holds: LineJudge, screen: Screen | None = None) -> bool:
    """Whether a string of the large encoded ``data`` may hold a certain secret: False means
    `Redactor.redact_json` leaves it as it is, without decoding it.

    Code holds name-based candidates on every page, nearly none of them certain, and
    decoding a megabyte and searching all of its text cost more than appending it (the
    benchmarks race an append of 1 MB of code output with and without redaction). So each
    place where a secret can be has its line alone judged: with a ``screen`` (`screen`),
    the places one RE2 pass finds (`_screened`); without, the formats' gates
    (`_letters_hold`, `_LARGE_GATES`), then each place where a name-based value, a
    password, a Slack webhook or a token with a '-' can be (`_line_checked`).
    """
    if screen is not None:
        return _screened(data, screen, line_holds)
    if _letters_hold(data):
        return True
    for byte, before, pattern in _LARGE_GATES:
        at = data.find(byte)
        if at >= 0 and _holds(data, at, byte, before, pattern):
            return True
    return _line_checked(data, line_holds)


def _letters_hold(data: bytes) -> bool:
    """Whether the gates of `_GATES` for 'A', 'z' and 'G' match in ``data``, in one pass.

    Each of those bytes is in a megabyte of code hundreds or thousands of times, too
    often to jump from one to the next, so each gate would cost a pass of Python's engine.
    In a copy with every 'z' and 'G' made an 'A', one pass of `_LETTERS` finds every
    place one of the three can match (and a few more); each is then held to the gate of
    the byte ``data`` has there.
    """
    folded = data.replace(b"z", b"A").replace(b"G", b"A")
    match = _LETTERS.search(folded)
    while match is not None:
        at = match.start()
        if _LETTER_GATES[data[at]].match(data, at) is not None:
            return True
        match = _LETTERS.search(folded, at + 1)
    return False


def _line_checked(data: bytes, line_holds: LineJudge) -> bool:
    """Whether a line of a string of ``data`` that the separators' gates let through holds
    a certain secret, as ``line_holds`` judges it (`Redactor` searches it as it searches text).

    A name-based value or password is judged on its line only: a name, its gap and its
    value never span a newline (`_NAME_REVERSED`, `_value_after`, `_URL_USERINFO`,
    `_CURL_USER`), nor does a match of `BUILTIN` (such as a Slack webhook, or an Azure key,
    "AccountKey=", which the '=' gate lets through by its "key") but a private key's block,
    so its header answers True. So do too many lines, or a line too long to find the ends
    of: the caller then searches all of the text. The places: each '=' or ':' after a
    secret's name (`_named_checked`), each URL with user info (`_urls_checked`), each '-'
    of a token or of curl's ``-u`` (`_LARGE_DASH`).
    """
    checked: set[int] = set()
    budget = len(data) // _LINE_SHARE
    if _named_checked(data, line_holds, checked, budget) or _urls_checked(data, line_holds, checked, budget):
        return True
    match = _LARGE_DASH.search(data)
    while match is not None:
        at = match.start()
        if data.startswith(b"----BEGIN", at + 1) or line_holds_at(data, at, checked, budget, line_holds):
            return True
        match = _LARGE_DASH.search(data, at + 1)
    return False


def _named_checked(data: bytes, line_holds: LineJudge, checked: set[int], budget: int) -> bool:
    """`_line_checked` for each '=' or ':' after a secret's name (and a Slack webhook's "://").

    Both separators are looked for in one pass of `_NAMED_SCREEN` over a copy of ``data``
    with each ':' made a '=' (``bytes.replace`` of one byte by another is a copy and a
    ``memchr`` loop: a fraction of a pass of Python's engine). Each place it lets through
    is then held to the gate of its own separator (`_EQUALS_GATE`, `_LARGE_COLON`) and to
    `_named_before`: the lines judged are those the two gates give, less those whose
    separator no value can follow.
    """
    for match in _NAMED_SCREEN.finditer(data.replace(b":", b"=")):
        at = match.start()
        if data[at] == 0x3D:  # '='
            held = _EQUALS_GATE.match(data, at) is not None and _named_before(data, at)
        else:
            held = _LARGE_COLON.match(data, at) is not None and (
                data.startswith(b"//", at + 1) or _named_before(data, at)
            )
        if held and line_holds_at(data, at, checked, budget, line_holds):
            return True
    return False


def _urls_checked(data: bytes, line_holds: LineJudge, checked: set[int], budget: int) -> bool:
    """`_line_checked` for each URL with user info (``scheme://user:password@``), found from
    its '@' (``bytes.find``: code holds few). The run between "//" and '@' holds no '/'
    (`_LARGE_COLON`), so the last '/' before an '@' is the end of its URL's "//". Past a
    number of '@' that grows with the size, one search of the rest (`_URL_AT`)."""
    find, rfind = data.find, data.rfind
    jumps = _JUMPS + len(data) // _SPARSE
    previous, at = -1, find(b"@")
    while at >= 0:
        if not jumps:
            return any(
                line_holds_at(data, url.start(), checked, budget, line_holds)
                for url in _URL_AT.finditer(data, previous + 1)
            )
        jumps -= 1
        # Nor does the run hold an '@': its "//" is after the '@' before, so no byte is
        # read back twice.
        colon = rfind(b"/", previous + 1, at) - 2
        if (
            colon > previous
            and data.startswith(b"://", colon)
            and _LARGE_COLON.match(data, colon) is not None
            and line_holds_at(data, colon, checked, budget, line_holds)
        ):
            return True
        previous, at = at, find(b"@", at + 1)
    return False


def _named_before(data: bytes, at: int) -> bool:
    """Whether a secret word (`_NAME_REVERSED_BYTES`), or an Azure key's name, may end just
    before the separator at ``data[at]``."""
    if data.endswith(b"Key", 0, at):  # "AccountKey=", "SharedAccessKey=": `BUILTIN`'s azure-storage-key
        return True
    return _NAME_REVERSED_BYTES.match(data[max(0, at - _NAME_BYTES) : at][::-1]) is not None


#: `_NAME_REVERSED` over encoded bytes, looser: the gap as JSON writes it (a quote as \",
#: a tab as \t, a backslash as \\), and no look at the byte before the word (the 'n' of
#: an escaped newline is a letter there, not in the text).
_NAME_REVERSED_BYTES: Final = re.compile(
    rb"""[ \t"'\\t]{0,8}(?:drowssap|dwssap|terces|nekot|s?laitnederc|ssap|dwp"""
    rb"|yek[_.\-]?(?:ipa|ssecca|etavirp|terces|htua))",
    re.IGNORECASE,
)
#: How many bytes before a separator its name's word and gap can take: the longest word
#: ("credentials", "private_key") and the widest gap as JSON writes it (\\\"\t).
_NAME_BYTES: Final = 24
#: At most one line checked per this many bytes of a value (`_line_checked`); past that,
#: one search of all its text costs less.
_LINE_SHARE: Final = 4096


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
_LARGE_GATES: Final = tuple(gate for gate in _GATES if gate[0] not in (b"/", b"-", b"A", b"z", b"G"))
#: The gates `_letters_hold` checks, by the byte they start with.
_LETTER_GATES: Final = {gate[0][0]: gate[2] for gate in _GATES if gate[0] in (b"A", b"z", b"G")}
#: Where one of `_LETTER_GATES` can match, in a copy of the bytes with each 'z' and 'G'
#: made an 'A': "AKIA", "ASIA", "AIza" (as "AIAa"), "uthorization" from its 'z', "SG." and
#: what follows it from its 'G'. Each alternative starts with a literal byte, which the
#: engine compares before it enters the alternative; all are looked at from one place
#: (`(?=...)`), so no match hides the next.
_LETTERS: Final = re.compile(rb"A(?=KIA|SIA|IAa|ation(?<=uthoriAation)|\.(?<=SA\.)[A-Za-z0-9_\-]{22}\.)")
#: `_COLON_GATE` for a large value, with a Slack webhook and user info of any length (the
#: run stops at the next '/', so each byte is read once): the line is then searched.
_LARGE_COLON: Final = _separator_gate(b":", rb'//(?:[^/\s"@]*@|hooks\.slack\.com/)|')
#: A URL with user info, from the ':' of its "://" to its '@' (`_urls_checked`).
_URL_AT: Final = re.compile(rb'://[^/\s"@]*@')

# `_NAMED_SCREEN` runs over a copy of the bytes with each ':' made a '=': it finds where a
# secret's name and one of `_BYTE_GAPS` may end before a separator that a value can
# follow, or where "https://hooks.slack.com/" starts. CPython's engine pays some 15 ns
# for each assertion it tries at each of the ten thousand separators in a megabyte of
# code, and several times that for a branch; so the first tests are assertions that every
# such place passes, each on the last bytes before the separator, and together they leave
# about one separator in twenty-five to the branch. Each class below is what one byte can
# be when the name ends in one of `_ENDINGS` (passwORD, passWD, PWD, pASS, secRET, toKEN,
# api_KEY, credentiALS, credentIAL).
_LAST = b"dtnlsyDTNLSY"  # an ending's last letter
_MIDDLE = b"rwselaRWSELA"  # the letter before it
_FIRST = b"osparkiOSPARKI"  # the one before that
_QUOTES = b"\"'"
_SPACES = b" \t"
#: `_ENDINGS`, each letter in both cases: a pattern that ignores case is slower.
_ENDINGS_BYTES = (
    rb"(?:[oO][rR][dD]|[sSpP][wW][dD]|[aA][sS][sS]|[rR][eE][tT]|[kK][eE][nNyY]|[aA][lL][sS]|[iI][aA][lL])"
)


def _before(*pieces: bytes, negated: bool = False) -> bytes:
    """A look-behind (or a negative one) at the bytes just before a separator ('=')."""
    return (b"(?<!" if negated else b"(?<=") + b"".join(pieces) + b"=)"


def _any(*classes: bytes) -> bytes:
    return b"[" + b"".join(classes) + b"]"


def _none(*classes: bytes) -> bytes:
    return b"[^" + b"".join(classes) + b"]"


#: A byte of one of `_BYTE_GAPS`: a quote, a space, or a piece of an escape (\t, \").
_GAP_BYTE = _any(b"\\\\", _QUOTES, _SPACES, b"t")
_NAMED_SCREEN: Final = re.compile(
    # What `_value_after` needs after the separator: no '=', '>' or ':' (each ':' is a '='
    # here), no value that `_UNQUOTED` cannot start or that `_judge` takes for code
    # ("x=(", "x=$y"), no newline.
    rb"""=(?![=>",;&`()\[\]{}<$%]|\\[nr])"""
    # The byte before: a name's last letter, or the last byte of a gap.
    + _before(_any(_LAST, _QUOTES, _SPACES))
    # The one before that: after a last letter, the letter before it (or the '\' of \t,
    # or the 'p' of "https"); after a quote, a last letter or the '\' of \"; after a
    # space, a last letter or a quote.
    + _before(_none(_MIDDLE, b"pP\\\\"), _any(_LAST), negated=True)
    + _before(_none(_LAST, b"\\\\"), _any(_QUOTES), negated=True)
    + _before(_none(_LAST, _QUOTES), _any(_SPACES), negated=True)
    # Three and four bytes back, where the ones after them are a name's last letters.
    + _before(_none(_FIRST), _any(_MIDDLE), _any(_LAST), negated=True)
    + _before(_none(_MIDDLE), _any(_LAST), _any(_SPACES, _QUOTES), negated=True)
    + _before(_none(_FIRST), _any(_MIDDLE), _any(_LAST), _any(_SPACES, _QUOTES), negated=True)
    # Then the ending itself, before a gap of each width in `_BYTE_GAPS` (up to six bytes:
    # \\\" and \t).
    + rb"(?:(?=//hooks\.slack\.com/)|"
    + b"|".join(_before(_ENDINGS_BYTES + _GAP_BYTE * width) for width in range(7))
    + b")"
)
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


class _ScreenMatch(Protocol):
    def start(self) -> int: ...


class Screen(Protocol):
    """A compiled RE2 pattern over bytes, as google-re2 gives it (it ships no types)."""

    def finditer(self, data: bytes) -> Iterator[_ScreenMatch]: ...


#: Every place a secret of a built-in kind can be in an encoded JSON value, as one pattern
#: for RE2, which matches an alternation of every piece in one pass over the bytes in
#: time linear in them (https://github.com/google/re2/wiki/WhyRE2), where CPython's engine
#: needs a pass per piece that starts with a different byte (`_GATES`, `_EQUALS_GATE`,
#: `_LARGE_COLON`, `_LARGE_DASH`). It matches wherever those do, and more: a secret word
#: then up to 8 bytes of gap before a separator (`_NAME_REVERSED_BYTES` read forwards, as
#: `_named_before` allows it), an Azure key's name, a URL with user info (up to the '@',
#: never past a newline's escape, so no match hides a place on the next line), curl's
#: ``-u``, and the pieces of `_GATES`, each written forwards (RE2 has no look-behind).
_SCREEN: Final = (
    rb"""(?i:(?:password|passwd|secret|token|credentials?|pass|pwd"""
    rb"""|(?:api|access|private|secret|auth)[_.\-]?key)[ \t"'\\t]{0,8}[=:])"""
    rb"|Key[=:]"
    rb'|://(?:[^/\s"@\\]|\\[^n])*@|hooks\.slack\.com/'
    rb"|-(?:u|-user)(?:[ =]|\\t)"
    rb"|-----BEGIN|sk-(?:ant-|proj-|svcacct-|admin-|[A-Za-z0-9]{20})|glpat-[A-Za-z0-9_\-]{20}"
    rb"|xox[abeoprs]-[A-Za-z0-9\-]{10}|xapp-[0-9]-|pypi-AgE"
    rb"|A(?:KIA|SIA|Iza)|eyJ|uthorization|UTHORIZATION|SG\.[A-Za-z0-9_\-]{22}\.|SK[0-9a-fA-F]{32}|ccessKey"
    rb"|gh[pousr]_[A-Za-z0-9]{36}|github_pat_|[sr]k_(?:live|test)_|aws_secret_access_key"
    rb"|AWS_SECRET_ACCESS_KEY|npm_[A-Za-z0-9]{36}|:_authToken"
)


def screen() -> Screen | None:
    """`_SCREEN` compiled by RE2 (google-re2, the ``regex`` extra), or None without it.

    Latin-1, so each byte is one character whatever the value holds; an older binding
    that cannot compile it leaves the gates of this module in place.
    """
    try:
        engine = importlib.import_module("re2")
    except ImportError:
        return None
    try:
        options = engine.Options()
        options.encoding = engine.Options.Encoding.LATIN1
        options.log_errors = False
        compiled: Screen = engine.compile(_SCREEN, options)
    except (AttributeError, TypeError, ValueError, engine.error):
        return None
    return compiled


def _screened(data: bytes, screen: Screen, line_holds: LineJudge) -> bool:
    """`_large_may_hold` with `_SCREEN`: each place it finds has its line judged, as
    `_line_checked` judges them, but a private key's header, whose block spans lines."""
    checked: set[int] = set()
    budget = len(data) // _LINE_SHARE
    for match in screen.finditer(data):
        at = match.start()
        if data.startswith(b"-----BEGIN", at) or line_holds_at(data, at, checked, budget, line_holds):
            return True
    return False
