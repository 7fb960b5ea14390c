"""What JSON gives back unchanged: the first value of a message, metadata or tags that it
cannot (named by where it is, ``$.a[0]``), and the short labels a line cannot hold."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Final

import msgspec

from .._errors import InvalidArgument, InvalidMessage, UnsupportedValue
from .depth import MAX_DEPTH
from .records import MESSAGE_TYPES, ToolCall


def explain(value: object, where: str) -> InvalidMessage | UnsupportedValue:
    """Find the first value that cannot round-trip and say where it is (``$.a[0]``).

    Only called on the error path, so it may be slow and thorough. It recurses: on a
    stack too short for the value it raises RecursionError, and `within_depth` calls it
    again from a deeper one.
    """
    found = _find_bad(value, where, 0)
    if found is None:
        return InvalidMessage(f"value at {where} does not survive a JSON round trip")
    return found


#: The Structs a message is made of; any other Struct inside a message is a value JSON
#: gives back as a dict, not as itself.
_SCHEMA_STRUCTS: Final[tuple[type[msgspec.Struct], ...]] = (*MESSAGE_TYPES, ToolCall)


def _find_bad(value: object, where: str, depth: int) -> InvalidMessage | UnsupportedValue | None:
    """The first value in ``value`` JSON cannot give back unchanged, as the error to raise."""
    if depth > MAX_DEPTH:
        return InvalidMessage(f"value at {where} is nested deeper than {MAX_DEPTH} levels")
    kind = type(value)
    if value is None or kind is bool or kind is int:
        return None
    if kind is str or kind is float:
        return _bad_scalar(value, where)
    if kind is list:
        assert isinstance(value, list)
        return _first_bad(((item, f"{where}[{index}]") for index, item in enumerate(value)), depth)
    if kind is dict:
        assert isinstance(value, dict)
        return _bad_dict(value, where, depth)
    if isinstance(value, _SCHEMA_STRUCTS):
        # Walk the fields themselves: converting the message to builtins first would fail
        # on the very value being looked for (an object()), or turn it into one JSON can
        # carry (a set into a list, a datetime into a str) and hide it.
        return _first_bad(
            ((getattr(value, name), f"{where}.{name}") for name in value.__struct_fields__), depth
        )
    return UnsupportedValue(
        f"value at {where} has type {kind.__name__}, which JSON cannot give back unchanged "
        "(use dict, list, str, int, float, bool or None)"
    )


def _bad_scalar(value: object, where: str) -> InvalidMessage | None:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return InvalidMessage(f"string at {where} holds a lone surrogate (not valid UTF-8)")
        return None
    assert isinstance(value, float)
    if not math.isfinite(value):
        return InvalidMessage(f"number at {where} is {value!r}, which JSON cannot represent")
    return None


def _bad_dict(
    value: dict[object, object], where: str, depth: int
) -> InvalidMessage | UnsupportedValue | None:
    for key, item in value.items():  # in order: the first bad key or value is the one named
        if type(key) is not str:
            return UnsupportedValue(f"key {key!r} at {where} is not a str; JSON object keys are strings")
        bad = _find_bad(key, f"{where} (key {key!r})", depth + 1) or _find_bad(
            item, f"{where}.{key}", depth + 1
        )
        if bad is not None:
            return bad
    return None


def _first_bad(parts: Iterable[tuple[object, str]], depth: int) -> InvalidMessage | UnsupportedValue | None:
    for part, where in parts:
        bad = _find_bad(part, where, depth + 1)
        if bad is not None:
            return bad
    return None


def check_label(value: str, name: str) -> None:
    """Refuse a short identifying string (title, agent name, request id, model) a line cannot hold.

    A lone surrogate is not UTF-8, so no file can hold it. A NUL could be stored as
    ``\\u0000``, but in a name it is a mistake (a C string cut short) that would reach
    every terminal and tool that shows the name, so it is refused too. JSON values
    (messages, metadata, tags) may hold NULs.
    """
    if "\x00" in value:
        raise InvalidArgument(f"{name} must not contain a NUL character, got {value!r}"[:300])
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidArgument(
                f"{name} holds a lone surrogate at position {exc.start} (not valid UTF-8), got {value!r}"[
                    :300
                ]
            ) from None


# ---------------------------------------------------------------------------------------
# Lines
# ---------------------------------------------------------------------------------------
