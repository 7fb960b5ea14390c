"""Where the times and ids a store writes come from, when the caller gives them.

By default a record's ``created_at`` is the wall clock and its ``id`` a fresh UUIDv7
(`_format.ids`). `SessionStore(clock=..., ids=...)` takes both from the caller instead, so the
same inputs write the same bytes (a test, a reproducible export, transcripts regenerated
for a repository): see spec/FORMAT.md §9.12. What the caller's functions return is
checked, since it goes into every file verbatim: a time must be timezone-aware (it is
written in UTC, as every time of the format is), an id must be a UUID in its canonical
lowercase text form (the format's record and snapshot ids are UUIDs).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime

from .._errors import InvalidArgument

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def checked_clock(clock: Callable[[], datetime]) -> Callable[[], datetime]:
    """``clock``, with each time it gives checked to be aware and turned to UTC."""
    if not callable(clock):
        raise InvalidArgument(f"clock must be a callable returning a datetime, got {clock!r}")

    def utc_now() -> datetime:
        moment = clock()
        if not isinstance(moment, datetime) or moment.utcoffset() is None:
            raise InvalidArgument(f"clock must return a timezone-aware datetime, got {moment!r}")
        return moment.astimezone(UTC)

    return utc_now


def checked_ids(ids: Callable[[], str]) -> Callable[[], str]:
    """``ids``, with each id it gives checked to be a canonical lowercase UUID."""
    if not callable(ids):
        raise InvalidArgument(f"ids must be a callable returning a UUID string, got {ids!r}")

    def new_id() -> str:
        value = ids()
        if not isinstance(value, str) or _UUID.fullmatch(value) is None:
            raise InvalidArgument(f"ids must return a lowercase canonical UUID string, got {value!r}")
        return value

    return new_id


__all__ = ["checked_clock", "checked_ids"]
