"""`StoreState`: what one `SessionStore`'s operations share, and where their damage goes.

The facade (``store.py``) checks a public method's arguments and hands the call to the
module named after its concern (``_ops.reading``, ``_ops.listing``, ``_ops.session_edits``,
``_ops.appending``, ``_ops.saves``, ``_ops.forking``, ``_ops.maintenance``); each of those takes this
state: the root and file system, the open handles, the snapshot and fork-file caches,
the blob sizes, the redactor, and the caller's ``on_problem`` / ``on_redact``. It also
holds the small reads several operations start with (a session's directory checked,
its metadata, its `History`, its summary).
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

from .._context.view import SessionSummary
from .._errors import (
    InvalidArgument,
    JsonlStoreError,
    SessionNotFound,
    StorageError,
    UnsupportedFormat,
    storage_error,
)
from .._format import depth as _depth
from .._format import sources as _sources
from .._format.ids import new_uuid7
from .._format.names import FORK_NAME, is_session_id
from .._format.records import ForkPoint
from .._io.fs import OS_FS, FileSystem, check_directory
from .._io.session_dir import SessionDir
from .._log import blob_writes as _blob_writes
from .._log.problems import Forward, Problem, Reporter
from .._log.snapshots import Listings
from .._session import catalog as _catalog
from .._session import forks as _forks
from .._session import meta as _meta
from .._session import summary as _session
from .._session.handles import SHARED_LISTINGS, Handles, now
from .._session.history import History
from .._session.meta import SessionMeta
from .._text import redact as _redact
from .._text import redactions as _redactions

logger = logging.getLogger("jsonl_store")

#: "Not given": `update_session`'s fields, and a summary's metadata not read yet.
UNSET: Any = _meta._UNSET

P = ParamSpec("P")
R = TypeVar("R")


class StoreState:
    """One store's configuration, handles and caches; built from ``SessionStore``'s checked arguments."""

    def __init__(
        self,
        root: str,
        *,
        durable: bool,
        lock_timeout: float,
        on_problem: Callable[[Problem], None] | None,
        fs: FileSystem | None,
        clock: Callable[[], datetime] | None,
        ids: Callable[[], str] | None,
        redactor: _redact.Redactor | None,
        sizes: _blob_writes.Sizes,
        on_redact: Callable[[_redactions.Redaction], None] | None,
    ) -> None:
        self.root = root
        self.durable = durable
        self.lock_timeout = lock_timeout
        #: What every stored string passes through before it reaches a file (None: nothing).
        self.redactor = redactor
        self.fs: FileSystem = fs if fs is not None else OS_FS
        self.sizes = sizes
        sizes.store = functools.partial(_blob_writes.store, durable=durable)
        # A file system passed in gets caches of its own (the shared ones hold only for
        # the real one, whose directories are the same for every store of this process).
        self.listings = SHARED_LISTINGS if fs is None else Listings()
        self.absences = _forks.SHARED_ABSENCES if fs is None else _forks.Absences()
        # The derived catalog lives in real files only: a simulated file system lists from its files.
        self.catalog = _catalog.Catalog(root) if fs is None else None
        self.on_problem = on_problem
        self.on_redact = on_redact
        self.handles = Handles(
            root,
            self.fs,
            durable=durable,
            lock_timeout=lock_timeout,
            reporter=Forward(self.sink),
            clock=now if clock is None else _sources.checked_clock(clock),
            new_id=new_uuid7 if ids is None else _sources.checked_ids(ids),
        )

    def forked(self) -> None:
        """Renew the mutexes of this store's handle cache and catalog in a forked child."""
        self.handles.forked()
        if self.catalog is not None:
            self.catalog.forked()

    def close(self) -> None:
        """Close every descriptor this store holds; it reopens them on first use."""
        self.handles.close()
        if self.catalog is not None:
            self.catalog.close()

    # -- where damage and redactions go -------------------------------------------------

    def sink(self, problem: Problem) -> None:
        if self.on_problem is not None:
            self.on_problem(problem)
        else:
            logger.warning("%s", problem)

    def report(self, problems: Iterable[Problem]) -> None:
        for problem in problems:
            self.sink(problem)

    def tally(self) -> _redactions.Tally | None:
        """A counter of what this store's redactor replaces in one write (None: no redaction)."""
        return _redactions.Tally(self.redactor) if self.redactor is not None else None

    def redacted(
        self, tally: _redactions.Tally | None, session_id: str, operation: str, sequences: Iterable[int] = ()
    ) -> None:
        """Say what a write replaced (spec §18.1): to ``on_redact``, else as a warning in the log."""
        notice = tally.notice(session_id, operation, tuple(s for s in sequences if s)) if tally else None
        if notice is None:
            return
        if self.on_redact is not None:
            self.on_redact(notice)
            return
        try:
            logger.warning("%s", notice)
        except RecursionError:
            # The write is done and must not be reported as failed: an append accepted from
            # a stack with little room left (spec §4's nesting rule) logs from a thread with
            # room instead. The warning may have reached a handler once already.
            _depth.in_deep_stack(logger.warning, "%s", notice)

    # -- a session's directory, metadata, history ---------------------------------------

    def where(self, session_id: str) -> SessionDir:
        """The session's directory as a `SessionDir`; `InvalidArgument` for an id no session can have."""
        return SessionDir(self.fs, session_id, self.handles.directory(session_id), self.listings)

    def entry(self, name: str, path: str | None = None) -> SessionDir:
        """An entry of the root as a listing found it (``path``, when the caller has it): its
        name is not checked again, so `verify()` reaches an entry no session id names."""
        return SessionDir(
            self.fs, name, os.path.join(self.root, name) if path is None else path, self.listings
        )

    def exists(self, where: SessionDir) -> bool:
        """Whether the session directory exists; `UnsafePath` when it is a symlink or no directory."""
        return check_directory(where.fs, where.path, session_id=where.session_id)

    def history(self, where: SessionDir, found: Reporter) -> History:
        """The session's history (a fork's chain, snapshots, records), its damage going to ``found``."""
        return History(where, self.where, found)

    def read_meta(self, where: SessionDir) -> SessionMeta | None:
        """The session's metadata; damage is reported at once."""
        found = Reporter()
        meta = _session.read_meta(where, found)
        self.report(found.problems)
        return meta

    def readable(self, session_id: str) -> SessionDir:
        """The session's directory, once the session is known to be one this version reads."""
        where = self.where(session_id)
        self.exists(where)
        self.read_meta(where)
        return where

    def require_writable(self, where: SessionDir) -> SessionMeta | None:
        """Refuse to change a session this version cannot read or must not write."""
        if not self.exists(where):
            raise missing(where.session_id)
        meta = self.read_meta(where)
        if meta is not None:
            _meta.check_writable(meta, where.session_id)
        return meta

    def fork_point(self, where: SessionDir) -> ForkPoint | None:
        """The session's fork point; None for a session that is not a fork (or does not exist)."""
        if not self.exists(where):
            return None
        try:
            return _forks.read(where)
        except _forks.DamagedFork as exc:
            raise UnsupportedFormat(
                f"session {where.session_id!r}: {FORK_NAME} cannot be read ({exc})",
                session_id=where.session_id,
            ) from None

    def inherited_version(self, where: SessionDir) -> int:
        """The version of the source snapshot a fork's context starts at (0: none): `History.inherited_version`."""
        return self.history(where, Reporter()).inherited_version()

    def summary(
        self,
        where: SessionDir,
        meta: SessionMeta | None = UNSET,
        read_fork: Callable[[], ForkPoint | None] | None = None,
    ) -> SessionSummary | None:
        """The session's summary; ``meta`` when the caller has just read or written it."""
        if meta is UNSET:
            meta = _session.read_meta(where, Reporter())
        return _session.summary(where, meta, read_fork)


def build(
    root: str | os.PathLike[str],
    *,
    durability: str,
    lock_timeout: float,
    on_problem: Callable[[Problem], None] | None,
    fs: FileSystem | None,
    clock: Callable[[], datetime] | None,
    ids: Callable[[], str] | None,
    redact: Any,
    blob_threshold: int,
    max_record_bytes: int,
    on_redact: Callable[[_redactions.Redaction], None] | None,
) -> StoreState:
    """A `SessionStore`'s state from its arguments, each checked first (`InvalidArgument`)."""
    check_options(durability, lock_timeout, on_problem=on_problem, on_redact=on_redact)
    # Strings over ``blob_threshold`` UTF-8 bytes go to blob files; a record line is at
    # most ``max_record_bytes`` (spec §5.1).
    sizes = _blob_writes.Sizes(blob_threshold, max_record_bytes)
    root = checked_root(root)
    redactor = _redact.make(redact)
    return StoreState(
        root, durable=durability == "fsync", lock_timeout=float(lock_timeout), on_problem=on_problem, fs=fs,
        clock=clock, ids=ids, redactor=redactor, sizes=sizes, on_redact=on_redact,
    )  # fmt: skip


def check_options(durability: object, lock_timeout: object, **callbacks: object) -> None:
    """`InvalidArgument` for a ``SessionStore`` option no store can work with."""
    if durability not in ("fsync", "none"):
        raise InvalidArgument(f"durability must be 'fsync' or 'none', got {durability!r}")
    if not isinstance(lock_timeout, (int, float)) or not lock_timeout > 0:
        raise InvalidArgument(f"lock_timeout must be a positive number of seconds, got {lock_timeout!r}")
    for name, value in callbacks.items():
        if value is not None and not callable(value):
            raise InvalidArgument(f"{name} must be callable, got {value!r}")


def missing(session_id: str) -> SessionNotFound:
    return SessionNotFound(f"session {session_id!r} does not exist", session_id=session_id)


def checked_root(root: str | os.PathLike[str]) -> str:
    """``root`` as a str path, or `InvalidArgument` for what every os call would refuse later."""
    try:
        path = os.fspath(root)
    except TypeError:
        raise InvalidArgument(f"root must be a str or a path, got {root!r}") from None
    if not isinstance(path, str):
        raise InvalidArgument(f"root must be a str or a str path, got {path!r}")
    try:
        os.fsencode(path)
        if "\x00" in path:
            raise ValueError("embedded NUL")
    except (UnicodeEncodeError, ValueError):
        raise InvalidArgument(f"root must be a path the file system can name, got {path!r}") from None
    return path


class _Rooted(Protocol):
    root: str


S = TypeVar("S", bound=_Rooted)


def failure(root: str, exc: OSError, method: str, session_id: object) -> StorageError:
    """The `StorageError` a public method raises for an ``OSError`` (raise it ``from exc``).

    An error that names no file is placed in the session's directory, else the root.
    """
    if isinstance(session_id, str):
        where = os.path.join(root, session_id) if is_session_id(session_id) else root
        return storage_error(exc, f"{method}({session_id!r})", session_id=session_id, where=where)
    return storage_error(exc, f"{method}()", where=root)


def storage_errors(method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R]:
    """Let no bare ``OSError`` out of a public method: it becomes a `StorageError`.

    Errors of this library pass unchanged (`LockTimeout` and `ReadOnlySession` are
    ``OSError`` subclasses too). `_ops.appending.append` does the same inline for
    `append` and `append_many`, so the hot path pays no extra call.
    """
    name = method.__name__

    @functools.wraps(method)
    def call(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(self, *args, **kwargs)
        except JsonlStoreError:
            raise
        except OSError as exc:
            raise failure(self.root, exc, name, args[0] if args else kwargs.get("session_id")) from exc

    return call


__all__ = [
    "UNSET",
    "StoreState",
    "build",
    "check_options",
    "checked_root",
    "failure",
    "missing",
    "storage_errors",
]
