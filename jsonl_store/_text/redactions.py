"""What a redaction replaced, counted per kind and never shown: `Redaction`, `Tally`, `new_markers`.

Every rewrite is visible (spec §18.1): a write that replaced values by markers says how
many and of which kinds. The count is what the rewrite really changed: the markers in
its output that its input did not hold. That works the same for the built-in patterns,
a user's patterns and a user's function (`CallableRedactor`), whose findings are not
known otherwise, and it never needs the replaced values themselves.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Mapping
from typing import Any, Final

from .redact import Found, Redactor, _walk

#: `_text.redact.MARKER_RE` over encoded bytes: a marker holds nothing JSON escapes, so the
#: encoding of a string holds each of its markers as it is.
_MARKER_BYTES: Final = re.compile(rb"\[REDACTED:([a-z0-9]+(?:-[a-z0-9]+)*)\]")
_MARKER_TEXT: Final = re.compile(r"\[REDACTED:([a-z0-9]+(?:-[a-z0-9]+)*)\]")


def _markers(data: str | bytes) -> Counter[str]:
    if isinstance(data, bytes):
        return Counter(match.decode("ascii") for match in _MARKER_BYTES.findall(data))
    return Counter(_MARKER_TEXT.findall(data))


def new_markers(before: str | bytes, after: str | bytes) -> Counter[str]:
    """The markers per kind that ``after`` holds and ``before`` did not: what a redaction replaced."""
    if "[REDACTED:" not in after if isinstance(after, str) else b"[REDACTED:" not in after:
        return Counter()
    return _markers(after) - _markers(before)


def summary(kinds: Mapping[str, int]) -> str:
    """``github-token 2, env-secret 1``: the kinds most replaced first, then by name."""
    return ", ".join(
        f"{kind} {count}" for kind, count in sorted(kinds.items(), key=lambda kc: (-kc[1], kc[0]))
    )


@dataclasses.dataclass(frozen=True)
class Redaction:
    """Values a store replaced by markers before writing them (``SessionStore(on_redact=...)``).

    ``operation`` is the method that wrote (``append``, ``append_many``,
    ``create_session``, ...), ``sequences`` the records it wrote (empty for a write of
    metadata), ``kinds`` how many values of each kind it replaced. Never a value.
    """

    session_id: str
    operation: str
    sequences: tuple[int, ...]
    kinds: Mapping[str, int]

    @property
    def count(self) -> int:
        """How many values were replaced, all kinds together."""
        return sum(self.kinds.values())

    def __str__(self) -> str:
        where = ""
        if len(self.sequences) == 1:
            where = f", sequence {self.sequences[0]}"
        elif self.sequences:
            where = f", sequences {self.sequences[0]}-{self.sequences[-1]}"
        values = "value" if self.count == 1 else "values"
        return (
            f"session {self.session_id!r}: {self.count} {values} redacted by {self.operation}"
            f"{where} ({summary(self.kinds)})"
        )


class Tally(Redactor):
    """A redactor that counts what another one replaces (`new_markers`), for one write.

    Made per call, so two threads appending at once never mix their counts; it stands in
    wherever a `Redactor` is taken (`_ops.append.encode`, `_session.meta.Update.redact`, ...).
    """

    def __init__(self, inner: Redactor) -> None:  # no super().__init__: every use is delegated
        self._inner = inner
        #: Values replaced per kind (a dict, not a Counter: one is made per append, and a
        #: Counter costs some 0.7 µs to make, a dict a few ns).
        self.kinds: dict[str, int] = {}

    def __repr__(self) -> str:
        return f"Tally({self._inner!r})"

    @property
    def inner(self) -> Redactor:
        """The redactor whose replacements this one counts."""
        return self._inner

    def find(self, text: str) -> list[Found]:
        return self._inner.find(text)

    def might_hold(self, data: bytes) -> bool:
        return self._inner.might_hold(data)

    def redact(self, text: str) -> str:
        out = self._inner.redact(text)
        if out != text:
            self.add(new_markers(text, out))
        return out

    def redact_json(self, data: bytes) -> bytes:
        out = self._inner.redact_json(data)
        if out is not data:
            self.add(new_markers(data, out))
        return out

    def add(self, counts: Mapping[str, int]) -> None:
        """Count ``counts`` (values replaced per kind) as replaced too."""
        kinds = self.kinds
        for kind, count in counts.items():
            kinds[kind] = kinds.get(kind, 0) + count

    def redact_value(self, value: Any) -> Any:
        return _walk(value, self.redact)

    def notice(self, session_id: str, operation: str, sequences: tuple[int, ...]) -> Redaction | None:
        """What this tally counted as a `Redaction`, or None when nothing was replaced."""
        if not self.kinds:
            return None
        return Redaction(session_id, operation, sequences, dict(self.kinds))
