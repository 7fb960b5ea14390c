"""``tail``: a session's last records, and with ``-f`` every record appended after them.

Following polls the raw log through the public API: ``tail(ID, 1)`` says whether the
last sequence moved, and ``tail(ID, k)`` then gives the ``k`` new records (a sound
history has no gaps, so they are exactly the ones after the last printed; a fork whose
source lost records has some, and `_after` then stops at the history's start). Both
read backwards from the end of the log, so a poll costs the same on a 20,000-record session as on a new one,
where ``records(after=last)`` would read the log from its start or its last snapshot.
A record is printed once it is whole on disk, whatever else happens to the session
meanwhile: a snapshot never rewrites the raw log (spec/FORMAT.md), and a writer that cuts
a torn tail before its append (docs/guides/agent-loop.md, "Crash safety and durability") removes only bytes that were never
a record. Polling, not inotify: it works the same on Linux, macOS and every file system.
"""

from __future__ import annotations

import argparse
import errno
import os
import select
import stat
import sys
import time
from typing import Any

from .. import Problem, RawMessageRecord, SessionStore
from . import _format, _messages, _safe
from ._commands import emit, existing, open_store, warn, width

#: Seconds between two looks at the log while following.
POLL_SECONDS = 0.25


class _Printer:
    """Prints records as they come: JSON lines, or the transcript in the session's dialect.

    The tool names of the calls printed so far are kept, so a result that arrives in a
    later poll than its call is still named after it.
    """

    def __init__(self, args: argparse.Namespace, dialect: str) -> None:
        self.json: bool = args.json
        self.full: bool = args.full
        self.dialect = dialect
        self.names: dict[Any, str | None] = {}

    def __call__(self, records: list[RawMessageRecord]) -> None:
        if self.json:
            out = sys.stdout
            for record in records:  # one JSON line per record, as `cat` prints them
                out.write(_safe.json_text(_format.dumps(record), out))
        else:
            emit(
                _messages.render_records(
                    records, None, dialect=self.dialect, full=self.full, width=width(), names=self.names
                )
            )
        sys.stdout.flush()  # a pipe reader (`tail -f | grep`) sees each record as it comes


class _WarnOnce:
    """`warn`, once per distinct problem: a follow meets the same damage at every poll
    (a fork's ``bad-fork`` while its source is gone), and saying it each time would bury
    the records in warnings."""

    #: Distinct problems remembered at most; then all are forgotten at once.
    KEPT = 1024

    def __init__(self) -> None:
        self._said: set[str] = set()

    def __call__(self, problem: Problem) -> None:
        text = str(problem)
        if text in self._said:
            return
        if len(self._said) >= self.KEPT:
            self._said.clear()
        self._said.add(text)
        warn(problem)


def _reader_gone() -> bool:
    """Whether stdout is a pipe whose reader has closed it (``tail -f ID | head -1`` is done).

    Without this a follow would learn it only from its next write, which may never come
    on a quiet session; poll(2) reports POLLERR on such a pipe's write end (as GNU tail
    checks since coreutils 8.28).
    """
    try:
        fd = sys.stdout.fileno()
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return False
    except (AttributeError, OSError, ValueError):  # no real descriptor (replaced in-process)
        return False
    poller = select.poll()
    poller.register(fd, 0)  # POLLERR and POLLHUP are always reported
    return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))


def _last_sequence(store: SessionStore, session_id: str) -> int:
    latest = store.tail(session_id, 1)
    return latest[-1].sequence if latest else 0


def _after(store: SessionStore, session_id: str, last: int, n: int) -> list[RawMessageRecord]:
    """The records after sequence ``last``, at least ``n`` of them.

    More may have been appended since the last sequence was read: ask for more until
    the oldest one given is the one right after ``last``, so none is skipped, or until
    fewer than asked come back, which is the whole history. A fork's history may lack
    the records right after ``last`` for good (its source emptied or cut short under it,
    spec/FORMAT.md §8.10): without that second stop the request would double forever.
    """
    while True:
        records = store.tail(session_id, n)
        if not records or records[0].sequence <= last + 1 or len(records) < n:
            return [record for record in records if record.sequence > last]
        n *= 2


def tail(args: argparse.Namespace) -> int:
    store = open_store(args, _WarnOnce() if args.follow else None)
    summary = existing(store, args.session_id)
    _print = _Printer(args, summary.dialect)
    records = store.tail(args.session_id, args.lines)
    if not args.follow:
        _print(records)
        return 0
    try:  # from the first line printed on, Ctrl-C is how it ends
        _print(records)
        # From the last record printed, so one appended since store.tail is not skipped.
        last = records[-1].sequence if records else _last_sequence(store, args.session_id)
        while True:
            newest = _last_sequence(store, args.session_id)
            if newest < last:  # deleted and written anew: its records start again at 1
                last = 0
            if newest > last:
                new = _after(store, args.session_id, last, newest - last)
                if new:
                    _print(new)
                    last = new[-1].sequence
                else:  # it was deleted or cut short meanwhile: look again at the next poll
                    time.sleep(POLL_SECONDS)
            elif _reader_gone():
                raise BrokenPipeError(errno.EPIPE, "the reader of stdout went away")  # main: exit 0
            else:
                time.sleep(POLL_SECONDS)
    except KeyboardInterrupt:
        # Ctrl-C is how a follow ends: a success, as for tail -f.
        return 0


__all__ = ["POLL_SECONDS", "tail"]
