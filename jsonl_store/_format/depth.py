"""The nesting limit of stored JSON (spec §4) and the deeper stack that lets every reader follow it.

msgspec encodes and decodes recursively, within the interpreter's recursion limit less the
frames already on the caller's stack. A value within `MAX_DEPTH` that the caller's stack is
too short for is encoded or decoded again in a thread with room, so what `append` accepts
never depends on where it was called from.
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any, Final, ParamSpec, TypeVar

import msgspec

from .. import _process
from .._errors import InvalidMessage

T = TypeVar("T")
P = ParamSpec("P")

#: The deepest a message, metadata or tags value may nest: JSON objects and arrays inside
#: each other (spec §4). msgspec encodes and decodes recursively, within the interpreter's
#: recursion limit less the frames already on the caller's stack, so the limit is checked
#: on its own (`nesting`), and a value within it that the caller's stack is too deep for is
#: encoded again in a thread with room (`in_deep_stack`): what is accepted never depends
#: on where `append` was called from, and every reader and printer can follow it.
MAX_DEPTH: Final = 1000
#: A reader that meets a value too deep for its own stack decodes it again in a fresh
#: thread with this much room, so whatever a writer accepted (from any stack) reads back.
DEEP_STACK: Final = 3 * MAX_DEPTH


def nesting(value: object) -> int:
    """How many JSON objects and arrays deep ``value`` goes (a scalar 0, ``[]`` 1, ``[{}]`` 2).

    Walked without recursion, and stops early once past `MAX_DEPTH`. Message classes
    count as the objects they encode to.
    """
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: Iterable[object] = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        elif isinstance(item, msgspec.Struct):
            children = [getattr(item, name) for name in item.__struct_fields__]
        else:
            continue
        if level > deepest:
            deepest = level
            if deepest > MAX_DEPTH:
                break
        stack.extend((child, level + 1) for child in children)
    return deepest


def _check_nesting(value: object, where: str) -> None:
    if nesting(value) > MAX_DEPTH:
        raise InvalidMessage(
            f"value at {where} is nested deeper than {MAX_DEPTH} levels of objects and arrays"
        )


#: A value nested deeper than `MAX_DEPTH` encodes to more than twice as many bytes (an
#: opening and a closing bracket per level): shorter encodings need no look at their depth.
_SHALLOW_BYTES: Final = 2 * MAX_DEPTH


def within_depth(encode: Callable[[Any, str], T], value: object, where: str) -> T:
    """``encode(value, where)`` again on a deeper stack after a RecursionError, for a value
    within `MAX_DEPTH` (`InvalidMessage` for a deeper one)."""
    _check_nesting(value, where)
    return in_deep_stack(encode, value, where)


#: Whether msgspec's recursion counts against `sys.getrecursionlimit()`: on CPython 3.11 C
#: code shares the interpreter's counter; from 3.12 it has a limit of its own
#: (https://docs.python.org/3.12/whatsnew/3.12.html, "sys.setrecursionlimit").
_SHARED_RECURSION_LIMIT: Final = sys.version_info < (3, 12)


def check_encoded(data: bytes, value: object, where: str) -> None:
    """Refuse a value whose encoding succeeded on a roomy stack but is nested past `MAX_DEPTH`.

    Free in the common case: with the interpreter's limit at most `MAX_DEPTH` and C code
    counting against it, a value that encoded cannot be deeper. Otherwise fewer brackets
    than `MAX_DEPTH` in its JSON (those inside strings counted too) mean it cannot be;
    only the others are walked (`nesting`).
    """
    if _SHARED_RECURSION_LIMIT and sys.getrecursionlimit() <= MAX_DEPTH:
        return
    if len(data) > _SHALLOW_BYTES and data.count(b"[") + data.count(b"{") > MAX_DEPTH:
        _check_nesting(value, where)


class _DeepStack:
    """The lock under which one deep-stack decode at a time raises the recursion limit."""

    mutex = threading.Lock()

    @classmethod
    def renew(cls) -> None:
        # In a forked child: a thread of the parent may have held it, and is gone.
        cls.mutex = threading.Lock()


_process.register("deep-stack decode lock", _DeepStack.renew)

#: ``active`` is set in the thread `in_deep_stack` runs: there is no deeper stack to go to.
_deep_thread = threading.local()


def in_deep_stack(decode: Callable[..., T], *args: Any) -> T:
    """``decode(*args)`` again, in a fresh thread whose stack has `DEEP_STACK` levels of room.

    Only ever called after a RecursionError: a value nested close to the limit that a
    writer accepted from a shallow stack can fail in a reader called from a deeper one.
    The interpreter's limit is raised for the moment (never lowered), under a lock.
    """
    if getattr(_deep_thread, "active", False):
        # Called from that thread itself (a printer that reads): waiting there for
        # another such thread would wait for the lock it holds.
        raise msgspec.DecodeError(f"JSON nested deeper than {DEEP_STACK} levels")
    outcome: list[Any] = []

    def run() -> None:
        _deep_thread.active = True
        try:
            outcome.append((True, decode(*args)))
        except BaseException as exc:  # noqa: BLE001 (handed to the calling thread)
            outcome.append((False, exc))

    with _DeepStack.mutex:
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, DEEP_STACK + 100))
        try:
            worker = threading.Thread(target=run, name="jsonl_store-deep-decode")
            worker.start()
            worker.join()
        finally:
            sys.setrecursionlimit(limit)
    ok, value = outcome[0]
    if ok:
        return value  # type: ignore[no-any-return]
    if isinstance(value, RecursionError):
        raise msgspec.DecodeError(f"JSON nested deeper than {DEEP_STACK} levels") from None
    raise value


def with_deep_stack(function: Callable[P, T]) -> Callable[P, T]:
    """``function``, called again in a thread with `DEEP_STACK` levels of room when the
    caller's stack is too short for the value it was given.

    For the readers and printers of what `append` accepted (nested up to `MAX_DEPTH`,
    from any depth of the caller's stack): only for functions without side effects,
    which may run twice.
    """

    @functools.wraps(function)
    def call(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return function(*args, **kwargs)
        except RecursionError:
            return in_deep_stack(functools.partial(function, *args, **kwargs))

    return call
