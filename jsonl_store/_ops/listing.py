"""Which sessions a store root holds: `list_sessions`, `session_ids`, a session's forks.

A session is a directory below the root named by a session id (spec §3). The root is
listed once and each entry looked at with one ``lstat``: a regular file (a README beside
the sessions) is no session and is skipped silently; a symlink or a FIFO with a
session's name is a session gone wrong, which a listing reports and `verify` names.
"""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Callable
from typing import Protocol

from .._context.view import BY_ACTIVITY, SessionSummary
from .._errors import UnsafePath, UnsupportedFormat
from .._format.names import is_session_id, validate_session_id
from .._format.records import ForkPoint
from .._io.session_dir import SessionDir
from .._log.snapshots import clock as _snapshots_clock
from .._session import forks as _forks
from . import recovery as _recovery
from .store_state import StoreState


class Summarize(Protocol):
    """How a listing reads one entry's summary: `SessionStore._summary`, which a test may wrap."""

    def __call__(
        self, session_id: str, directory: str, *, read_fork: Callable[[], ForkPoint | None] | None = None
    ) -> SessionSummary | None: ...


def list_sessions(
    state: StoreState, parent_session_id: str | None, summarize: Summarize
) -> list[SessionSummary]:
    """`SessionStore.list_sessions`; ``summarize`` reads one summary."""
    if parent_session_id is not None:
        validate_session_id(parent_session_id)
    entries = _entries(state)
    # The catalog answers for the sessions it checked fresh (spec §21), in a listing's order;
    # the rest are read here.
    listed = state.catalog.listing(entries, summarize) if state.catalog is not None else None
    found, names = listed if listed is not None else ([], _sessions_among(entries))
    now = _snapshots_clock()  # before the listing's lstats (`_session.forks.Absences`)
    for name in names:
        try:
            summary = _summary_of(state, state.entry(name), now, summarize)
        except UnsafePath as exc:
            # One broken session must not hide the others: skip it, and say why.
            state.sink(_recovery.unsafe_problem(exc))
            continue
        except (NotADirectoryError, UnsupportedFormat):
            continue
        if summary is None:
            continue
        found.append(summary)
    if parent_session_id is not None:
        found = [summary for summary in found if summary.parent_session_id == parent_session_id]
    if names or listed is None:
        found.sort(key=BY_ACTIVITY, reverse=True)
    return found


def _summary_of(
    state: StoreState, where: SessionDir, now: int, summarize: Summarize
) -> SessionSummary | None:
    """One entry's summary, None when it is no session (any more).

    One lstat per entry, right before its summary is read: a directory is read; a
    regular file is no session; anything else is checked again, and a symlink or a FIFO
    in a session's place raises `UnsafePath`.
    """
    try:
        st = state.fs.lstat(where.path)
    except FileNotFoundError:
        return None  # deleted since the listing
    if stat.S_ISREG(st.st_mode):
        return None
    if not stat.S_ISDIR(st.st_mode) and not state.exists(where):
        return None
    read_fork: Callable[[], ForkPoint | None] = functools.partial(state.absences.read, where, st, now)
    return summarize(where.session_id, where.path, read_fork=read_fork)


def names(state: StoreState) -> list[str]:
    """The root's entries that may be sessions: session ids that are no regular files."""
    found = []
    for name in candidates(state):
        try:
            mode = state.fs.lstat(os.path.join(state.root, name)).st_mode
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(mode):
            found.append(name)
    return found


def candidates(state: StoreState) -> list[str]:
    """The root's entries named as sessions are, sorted (no file system call per entry)."""
    return _sessions_among(_entries(state))


def _entries(state: StoreState) -> list[str]:
    """The root's entries, whatever their names (none when there is no root yet)."""
    try:
        return state.fs.listdir(state.root)
    except FileNotFoundError:
        return []


def _sessions_among(entries: list[str]) -> list[str]:
    return [name for name in sorted(entries) if is_session_id(name)]


def forks_of(state: StoreState, session_id: str) -> list[str]:
    """The sessions whose ``fork.json`` names ``session_id`` as their source."""
    forks = []
    for name in names(state):
        if name == session_id:
            continue
        try:
            point = _forks.read(state.entry(name))
        except (_forks.DamagedFork, UnsafePath):
            continue  # not a fork this store can read: it reads nothing of this session
        if point is not None and point.session_id == session_id:
            forks.append(name)
    return forks


__all__ = ["candidates", "forks_of", "list_sessions", "names"]
