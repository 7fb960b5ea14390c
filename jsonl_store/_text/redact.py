"""Secrets found in stored text and replaced by a marker naming their kind (spec §18).

A secret becomes ``[REDACTED:<kind>]`` (`marker`), so a transcript stays readable and
says what was there. This module is the matcher and the rewriter: `Redactor` finds the
secrets of the built-in rules (`_text.redact_rules`, one pattern per format, combined into one
regular expression so a text is searched once whatever the number of kinds) and the
name-based values (`_text.redact_names`), and replaces the certain ones; `redact_json` does so
for an encoded JSON value after the pre-filter (`_text.redact_prefilter`) said a string of it
may hold one. `_text.redactions` counts what a write replaced.

Why not a library: detect-secrets 1.5.0 (https://github.com/Yelp/detect-secrets), the
well-kept one, took 6.3 ms for one clean 0.5 KB line with its default plugins (its
entropy plugins also flag random ids and base64 data as secrets), against 5.6 µs for
`Redactor.find` on the same line, measured on this project's CI machine; it would also
bring pyyaml and requests into a core that depends on orjson and msgspec only. The
formats are what we take from it and from each vendor's documentation, cited in
`_text.redact_rules`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Final

import msgspec

from .._errors import InvalidArgument

# Names taken from here by the rest of the package, the tests and the benchmarks since
# before the rules, the name-based values and the pre-filter had modules of their own
# are re-exported (``as``), so `_text.redact` stays the one place to import redaction from.
from .redact_names import _NAME_LIMIT as _NAME_LIMIT  # noqa: PLC0414
from .redact_names import _NAME_REVERSED as _NAME_REVERSED  # noqa: PLC0414
from .redact_names import _assignments, _passwords, _sample
from .redact_names import _judge as _judge  # noqa: PLC0414
from .redact_names import _value_after as _value_after  # noqa: PLC0414
from .redact_prefilter import _ANY, _NONE, Screen, _gate, _large_may_hold, screen
from .redact_prefilter import _BIG as _BIG  # noqa: PLC0414
from .redact_rules import _ANCHORS_IN_TEXT, _LOOKBACK, BUILTIN, _combined, _compile, _key_block_end
from .redact_rules import BUILTIN_KINDS as BUILTIN_KINDS  # noqa: PLC0414
from .redact_rules import CUSTOM_KIND as CUSTOM_KIND  # noqa: PLC0414
from .redact_rules import ENV_KIND as ENV_KIND  # noqa: PLC0414
from .redact_rules import KEY_HEADER as KEY_HEADER  # noqa: PLC0414
from .redact_rules import KIND_PATTERN as KIND_PATTERN  # noqa: PLC0414
from .redact_rules import MARKER_RE as MARKER_RE  # noqa: PLC0414
from .redact_rules import PASSWORD_KIND as PASSWORD_KIND  # noqa: PLC0414
from .redact_rules import Found as Found  # noqa: PLC0414
from .redact_rules import marker as marker  # noqa: PLC0414
from .redact_rules import mask as mask  # noqa: PLC0414


@functools.cache
def _builtin() -> tuple[re.Pattern[str], list[tuple[str, re.Pattern[str]]]]:
    """The built-in patterns, compiled on first use: only a string the pre-filter let
    through needs them, and compiling them costs every command's start-up ~20 ms."""
    return _combined(BUILTIN)


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


#: The methods whose replacement `Redactor.redact_json` must call, wherever it is made.
_OVERRIDABLE: Final = frozenset({"find", "redact", "might_hold"})


class Redactor:
    """Finds secrets in text and replaces each by `marker` of its kind.

    ``patterns`` adds kinds of your own: each a regular expression (reported as
    ``custom``) or a ``(kind, pattern)`` pair; a group named ``secret`` limits what is
    replaced, as in the built-in ones. ``builtin=False`` leaves only yours.
    """

    def __init__(self, patterns: Iterable[Any] = (), *, builtin: bool = True) -> None:
        self._extra = _compile(patterns)
        self._builtin = bool(builtin)
        #: `_screen`, once compiled (an empty list before).
        self._screens: list[Screen | None] = []

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
            return self.redact if _large_may_hold(data, _line_holds, self._screen()) else None
        gate = _gate(data)
        if gate == _NONE:
            return None
        return self.redact if gate == _ANY else self._redact_named

    def _screen(self) -> Screen | None:
        """The RE2 pass over a large value's bytes (`_text.redact_prefilter.screen`), compiled the
        first time this redactor meets one; None without the ``regex`` extra."""
        if not self._screens:  # two threads may both compile it: the first one kept is used
            self._screens.append(screen())
        return self._screens[0]


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


def _line_holds(raw: bytes) -> bool:
    """Whether one line of a large value, its bytes as they stand inside a JSON string,
    holds a certain secret of a built-in kind (`_text.redact_prefilter._line_checked`); True
    also when the bytes do not decode, so the caller then searches all of the text."""
    try:
        text = _decoder.decode(b'"' + raw + b'"')
    except msgspec.DecodeError:
        return True
    return not isinstance(text, str) or any(found.certain for found in _builtin_find(text))


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
