"""What a store keeps open: sessions, their log writers, the descriptor cache and the locks.

A session is *prepared* once per store (its directory and metadata made, its parent
cached) and then appended to through its `LogWriter`s. At most `open_sessions_limit()`
sessions keep descriptors; the least recently used one gives them back, and when the
process runs out of descriptors every idle one does (``_io.fs.register_descriptor_cache``).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import resource
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import Any

from .. import _process
from .._errors import LockTimeout, SessionNotFound, UnsafePath, UnsupportedFormat
from .._format.ids import new_uuid7
from .._format.names import (
    BLOBS_DIR,
    FORK_NAME,
    GITATTRIBUTES_NAME,
    GITATTRIBUTES_TEXT,
    GITIGNORE_NAME,
    GITIGNORE_TEXT,
    LOCK_NAME,
    LOG_NAME,
    META_NAME,
    USAGE_NAME,
    deleted_name,
    validate_session_id,
)
from .._io import atomic as _atomic
from .._io import dirs as _dirs
from .._io.cleared import clear_deleted
from .._io.fs import FileSystem, open_regular, register_descriptor_cache
from .._io.session_dir import SessionDir
from .._log import blob_writes as _blob_writes
from .._log import snapshots as _snapshots
from .._log.problems import Reporter
from .._log.reader import body_sequence, ends_batch
from .._log.scan import FLAGS_READ, Line
from .._log.writer import LogWriter
from . import meta as _meta
from . import summary as _session
from .checkpoint import CheckpointCache
from .forks import DamagedFork
from .forks import read as _forks_read
from .meta import SessionMeta

#: The most descriptors one store keeps open: a session's log takes one, its usage log a
#: second. About as many files as LevelDB keeps open by default (``max_open_files``): a
#: store appending round-robin to a few hundred sessions must not reopen one per append.
MAX_OPEN_DESCRIPTORS = 2048


def open_descriptors_limit() -> int:
    """How many descriptors a store keeps open: at most a quarter of the descriptor limit.

    With ``ulimit -n 1024`` (a common default) that is 256, so 256 sessions that only
    append messages; with ``ulimit -n 64``, 16. The rest of the limit is left to reads,
    locks and the program itself, and should the process run out anyway, every idle
    cached descriptor is given back before anything fails
    (``_io.fs.register_descriptor_cache``).
    """
    try:
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (OSError, ValueError):
        return 256
    if soft == resource.RLIM_INFINITY:
        return MAX_OPEN_DESCRIPTORS
    return max(2, min(MAX_OPEN_DESCRIPTORS, soft // 4))


def now() -> datetime:
    return datetime.now(UTC)


class OpenSession:
    """What one store keeps open for one session: its log writers and cached facts."""

    __slots__ = (
        "base", "checkpoint", "directory", "fs", "init", "init_metadata", "init_redacted", "log",
        "made_redacted", "mutex", "parent", "prepared", "seen", "seen_id", "session_id", "usage", "where",
    )  # fmt: skip

    def __init__(self, session_id: str, directory: str, fs: FileSystem) -> None:
        self.session_id = session_id
        self.directory = directory
        self.fs = fs
        self.where = SessionDir(fs, session_id, directory)
        self.log: LogWriter | None = None
        self.usage: LogWriter | None = None
        #: The parent never changes once written, so it can be cached for the checks.
        self.parent: str | None = None
        #: A fork's branch sequence (its own log starts after it; spec §8.10), else 0.
        #: ``fork.json`` is written once, before the fork's first record, so it is cached too.
        self.base = 0
        self.prepared = False
        self.mutex = threading.Lock()
        self.checkpoint: CheckpointCache | None = None
        #: The last sequence this store handed to its caller (load or checkpoint): what a
        #: runner using this store has seen, for `checkpoint`'s rewrite rule.
        self.seen = 0
        #: The id of the record at ``seen`` ("" when not known): a session deleted and
        #: made again numbers from 1 anew, and none of its records were seen.
        self.seen_id = ""
        #: What the latest append would initialise the session with, should it have to
        #: (re)create it: (created_at, parent, type, agent name, title).
        self.init: tuple[datetime, str | None, int, str | None, str | None] | None = None
        #: The metadata `create_session` gives a session it makes.
        self.init_metadata: dict[str, Any] = {}
        #: Values redaction replaced in ``init``'s title and agent name, per kind: reported
        #: only by a write that makes the metadata with them (spec §18.1), never by one that
        #: finds the session made and so stores neither.
        self.init_redacted: dict[str, int] = {}
        #: Those counts of a metadata file this store made, until a write reports them.
        self.made_redacted: dict[str, int] = {}

    def parent_on_disk(self) -> str | None:
        """The parent ``meta.json`` names now (read only; no lock taken), as the cache may be stale."""
        meta = _session.read_meta(self.where, Reporter())
        return meta.parent_session_id if meta is not None else None

    def initial_meta(self, clock: Callable[[], datetime] = now) -> SessionMeta:
        if self.init is None:
            return SessionMeta(created_at=clock(), metadata=dict(self.init_metadata))
        created_at, parent, session_type, agent_name, title = self.init
        return SessionMeta(
            created_at=created_at,
            parent_session_id=parent,
            session_type=session_type,
            agent_name=agent_name,
            title=title,
            metadata=dict(self.init_metadata),
        )

    def close(self) -> None:
        for writer in (self.log, self.usage):
            if writer is not None:
                writer.close()


class Handles:
    """The open sessions of one store, their locks, and the making of what they need on disk."""

    def __init__(
        self,
        root: str,
        fs: FileSystem,
        *,
        durable: bool,
        lock_timeout: float,
        reporter: Reporter,
        clock: Callable[[], datetime] = now,
        new_id: Callable[[], str] = new_uuid7,
    ) -> None:
        #: Where the times and ids of what this store writes come from (`SessionStore`'s
        #: ``clock`` and ``ids``): the wall clock and UUIDv7s, or a caller's, for files
        #: that must come out the same byte for byte.
        self.clock = clock
        self.new_id = new_id
        self.root = root
        self.fs = fs
        self.durable = durable
        self.lock_timeout = lock_timeout
        #: Where writers report what they cut or move aside (the store's `on_problem`).
        self.reporter = reporter
        self._sessions: OrderedDict[str, OpenSession] = OrderedDict()
        self._mutex = threading.Lock()
        self._locks: dict[str, AbstractContextManager[Any]] = {}
        #: `OpenSession.seen` and ``seen_id`` of sessions evicted from `_sessions` or closed.
        self._seen: dict[str, tuple[int, str]] = {}
        self._root_ready = False
        self._max_open = open_descriptors_limit()
        self._held = 0  # descriptors the sessions in `_sessions` may hold: 1 each, 2 with a usage log
        register_descriptor_cache(self)

    def forked(self) -> None:
        """In a forked child: fresh mutexes (a thread of the parent may have held one)."""
        self._mutex = threading.Lock()
        for session in self._sessions.values():
            session.mutex = threading.Lock()

    def close(self) -> None:
        with self._mutex:
            sessions = list(self._sessions.values())
            self._sessions.clear()
            self._held = 0
            # Closing gives back descriptors only: what the caller has seen outlives them,
            # as it outlives an eviction (checkpoint's rewrite rule, spec §10).
            for session in sessions:
                self._seen[session.session_id] = (session.seen, session.seen_id)
        for session in sessions:
            session.close()

    def _release_descriptors(self) -> int:
        """Close the cached descriptors no call is using right now; return how many.

        Called by the file system when the process is out of descriptors (EMFILE): the
        cache gives way, and the sessions reopen lazily. Never waits for a lock, since the
        caller may hold one of them.
        """
        if not self._mutex.acquire(blocking=False):
            return 0
        try:
            sessions = list(self._sessions.values())
        finally:
            self._mutex.release()
        closed = 0
        for session in sessions:
            for writer in (session.log, session.usage):
                if writer is not None:
                    closed += writer.release()
        return closed

    # -- sessions ---------------------------------------------------------------------------

    def directory(self, session_id: str) -> str:
        return os.path.join(self.root, validate_session_id(session_id))

    def session(self, session_id: str) -> OpenSession:
        session = self._sessions.get(session_id)
        if session is not None:
            return session
        directory = self.directory(session_id)
        evicted: list[OpenSession] = []
        with self._mutex:
            session = self._sessions.get(session_id)
            if session is None:
                session = self._sessions[session_id] = OpenSession(session_id, directory, self.fs)
                session.seen, session.seen_id = self._seen.pop(session_id, (0, ""))
                self._held += 1
                while self._held > self._max_open and len(self._sessions) > 1:
                    old = self._sessions.popitem(last=False)[1]
                    self._held -= 2 if old.usage is not None else 1
                    # Descriptors are released, but what the caller has seen of the session
                    # must outlive them: checkpoint's rewrite rule depends on it.
                    self._seen[old.session_id] = (old.seen, old.seen_id)
                    evicted.append(old)
        for old in evicted:
            old.close()
        return session

    def known_log_end(self, session_id: str) -> tuple[Line | None] | None:
        """`LogWriter.known_last` of the session's raw-log writer; None without one.

        Opens nothing: a session whose log this store has not appended to (or whose
        descriptor it let go) gets None, and the caller reads the file.
        """
        session = self._sessions.get(session_id)
        writer = session.log if session is not None else None
        return writer.known_last() if writer is not None else None

    def saw(self, session_id: str, sequence: int, record_id: str) -> None:
        """Remember that the caller was handed the session up to ``sequence``, the record
        ``record_id`` (for `checkpoint`): what this store last loaded for it (spec §10).

        A read opens nothing for writing: a session this store has not opened gets only an
        entry in ``_seen``, so loading many sessions never evicts another one's writer.
        """
        with self._mutex:
            session = self._sessions.get(session_id)
            if session is not None:
                session.seen, session.seen_id = sequence, record_id
            else:
                self._seen[session_id] = (sequence, record_id)

    def forget(self, session_id: str) -> None:
        """Close and drop what this store keeps open for a session (before delete or repair).

        What the caller has seen is kept: a delete forgets it only once it has deleted.
        """
        with self._mutex:
            session = self._sessions.pop(session_id, None)
            if session is not None:
                self._held -= 2 if session.usage is not None else 1
                self._seen[session_id] = (session.seen, session.seen_id)
        if session is not None:
            session.close()

    def lock(self, session_id: str) -> AbstractContextManager[Any]:
        """The session's cross-process lock (metadata, snapshots, checkpoint, delete, repair)."""
        path = os.path.join(self.root, session_id, LOCK_NAME)
        with self._mutex:
            lock = self._locks.get(path)
            if lock is None:
                lock = self._locks[path] = _NamedLock(
                    self.fs.lock(path, self.lock_timeout), session_id, self.lock_timeout, path
                )
        return lock

    @contextlib.contextmanager
    def lock_made(self, session: OpenSession) -> Iterator[None]:
        """The session lock of a session this store writes to, made again if it was deleted.

        Another store's delete renames the directory away (spec §9.5), lock file and all;
        a writer that still holds it as prepared (`checkpoint`) makes the session again,
        as its next append would, and locks that.
        """
        for attempt in range(_PREPARE_ATTEMPTS):
            lock = self.lock(session.session_id)
            try:
                lock.__enter__()
            except SessionNotFound:
                if attempt == _PREPARE_ATTEMPTS - 1:
                    raise
                self.prepared(session, again=True)
                continue
            try:
                yield
            finally:
                lock.__exit__(None, None, None)
            return

    # -- making what a session needs ----------------------------------------------------------

    def ensure_root(self) -> None:
        if self._root_ready:
            return
        _dirs.makedirs(self.fs, self.root, durable=self.durable)
        for name, text in ((GITIGNORE_NAME, GITIGNORE_TEXT), (GITATTRIBUTES_NAME, GITATTRIBUTES_TEXT)):
            if not _dirs.exists(self.fs, os.path.join(self.root, name)):
                _atomic.create_exclusive(self.fs, self.root, name, text.encode(), durable=self.durable)
        self._root_ready = True

    def prepare(self, session: OpenSession) -> None:
        """Make sure the session's directory and metadata exist; cache its parent.

        Runs once per store and session (and again if the session was deleted meanwhile).
        The first metadata file is created under the session lock by compare-and-swap, so
        two processes making the same new session agree on one file. A metadata file torn
        by a power loss (possible under ``durability="none"``) is moved aside and made
        anew, so it never blocks the appends that follow.
        """
        for attempt in range(_PREPARE_ATTEMPTS):
            found = Reporter()
            try:
                meta = self._ensure_meta(session, found)
                break
            except SessionNotFound:
                # Deleted by another process between our mkdir and its lock (a delete
                # renames the directory away, spec §9.5): make it again.
                if attempt == _PREPARE_ATTEMPTS - 1:
                    raise
        if found.problems:
            self.reporter.report(found.problems[0])  # read twice, reported once
        _meta.check_writable(meta, session.session_id)
        session.parent = meta.parent_session_id
        try:
            point = _forks_read(session.where)
        except DamagedFork as exc:
            raise UnsupportedFormat(
                f"session {session.session_id!r}: {FORK_NAME} cannot be read ({exc}); "
                "appending would number records wrongly",
                session_id=session.session_id,
            ) from None
        session.base = point.sequence if point is not None else 0
        session.prepared = True

    def _ensure_meta(self, session: OpenSession, found: Reporter) -> SessionMeta:
        """The session's directory made and its metadata read, or created under its lock."""
        self.ensure_root()
        made = _dirs.makedirs(self.fs, session.directory, durable=self.durable, session_id=session.session_id)
        if made[:-1]:
            # More than the session directory was made: the root itself was gone (removed
            # by someone else while this store was open). What `ensure_root` writes into
            # a new root (the .gitignore) must be written into this one too.
            self._root_ready = False
            self.ensure_root()
        # What a delete of this id cut short by a crash left (spec §9.5): no session any
        # more, only files to remove. One lstat, once per store and session.
        gone = os.path.join(self.root, deleted_name(session.session_id))
        if _dirs.exists(self.fs, gone):
            clear_deleted(self.fs, gone)
        meta = _session.read_meta(session.where, found)
        if meta is None:
            with self.lock(session.session_id):
                meta = _session.read_meta(session.where, found)
                if meta is None:
                    meta = self._create_meta(session, moved_aside=bool(found.problems))
        return meta

    def _create_meta(self, session: OpenSession, *, moved_aside: bool) -> SessionMeta:
        """The first metadata file, made under the session lock (a damaged one moved aside first)."""
        if moved_aside:
            _session.move_aside(session.where, META_NAME)
        meta = session.initial_meta(self.clock)
        first = _session.began_at(session.where)
        if first is not None:
            # The log (or the fork file) is older than this metadata: the session began with it.
            meta.created_at = first
        if _meta.create(session.where, meta, durable=self.durable):
            session.made_redacted = dict(session.init_redacted)
            return meta
        existing = _session.read_meta(session.where, Reporter())
        if existing is None:
            raise UnsupportedFormat(
                f"session {session.session_id!r}: {META_NAME} cannot be read", session_id=session.session_id
            )
        return existing

    def prepared(self, session: OpenSession, *, again: bool = False) -> None:
        """Prepare the session (directory and metadata) unless this store has already.

        ``again``: whatever this store did before, since another store may have deleted
        the session meanwhile (`create_session` and `fork` make sure of what they return).
        """
        with session.mutex:
            if again or not session.prepared:
                self.prepare(session)

    def writer(self, session: OpenSession) -> LogWriter:
        """The session's raw-log writer, preparing the session on first use."""
        with session.mutex:
            if not session.prepared:
                self.prepare(session)
            if session.log is None:
                session.log = self.new_writer(session, LOG_NAME, f"session {session.session_id!r}")
            return session.log

    def usage_writer(self, session: OpenSession) -> LogWriter:
        self.writer(session)
        with session.mutex:
            if session.usage is None:
                writer = self.new_writer(
                    session, USAGE_NAME, f"usage log of session {session.session_id!r}", raw_log=False
                )
                with self._mutex:  # counted as eviction counts it: both under `_mutex`
                    session.usage = writer
                    if self._sessions.get(session.session_id) is session:
                        self._held += 1
            return session.usage

    def new_writer(self, session: OpenSession, name: str, label: str, *, raw_log: bool = True) -> LogWriter:
        return LogWriter(
            session.where,
            name,
            durable=self.durable,
            lock_timeout=self.lock_timeout,
            label=label,
            # The file was (re)created: after a delete_session by someone else the
            # metadata must be made again, from this call's arguments.
            on_new_file=lambda: self.prepare(session),
            accept=ends_batch if raw_log else None,
            sequence_of=body_sequence if raw_log else None,
            reporter=self.reporter,
        )

    def delete(self, where: SessionDir, check: Callable[[], None] | None = None) -> bool:
        """Delete the session's directory under both its locks; whether it held a session.

        ``check`` runs under the session lock first and may raise to refuse the delete.
        The directory is renamed away in one step, then emptied (spec §9.5): a crash
        leaves the whole session or none of it.
        """
        fs, session_id = where.fs, where.session_id
        self.forget(session_id)
        with self.lock(session_id):
            if check is not None:
                check()
            try:
                fd: int | None = open_regular(fs, where.log_path, FLAGS_READ, session_id=session_id)
            except FileNotFoundError:
                fd = None
            try:
                if fd is not None:
                    # Hold the append lock until the log is unlinked: a writer that gets it
                    # next sees the file gone (st_nlink == 0) and starts a new session.
                    fs.flock(fd, fcntl.LOCK_EX)
                names = self._deletable(where)
                # A directory holding nothing but the lock file is a session another
                # process is making right now (its mkdir, then this lock, then its
                # metadata): there is nothing to delete, and renaming it away would only
                # take it from under that maker, again and again when deletes repeat.
                if any(name != LOCK_NAME for name in names):
                    gone = os.path.join(self.root, deleted_name(session_id))
                    self._rename_away(where.path, gone)
                    if self.durable:
                        fs.fsync_dir(self.root)
                    clear_deleted(fs, gone)
            finally:
                if fd is not None:
                    fs.close(fd)
        with self._mutex:
            # None of what a new session of this id will hold was seen (checkpoint, spec §10):
            # forgotten only once the files are gone, so a refused delete keeps it.
            self._seen.pop(session_id, None)
        return any(name in (LOG_NAME, META_NAME, FORK_NAME) for name in names)

    def _rename_away(self, directory: str, gone: str) -> None:
        """Rename the session directory to ``gone``, clearing what an earlier delete left there.

        rename(2) replaces an empty directory and refuses one that holds something (a
        delete cut short by a crash, or one another process is clearing right now).
        """
        for attempt in range(_PREPARE_ATTEMPTS):
            clear_deleted(self.fs, gone)
            try:
                self.fs.rename(directory, gone)
                return
            except OSError as exc:
                if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST) or attempt == _PREPARE_ATTEMPTS - 1:
                    raise

    def _deletable(self, where: SessionDir) -> list[str]:
        """The session directory's names, once every one is known to be the store's to delete.

        Only regular files (and the blob files in ``blobs/``) are deleted: anything else is
        not the store's, and a person must look at it, so `UnsafePath` and nothing deleted.
        """
        fs = where.fs
        blobs = _blob_writes.deletable(where)  # checks what blobs/ holds
        names = fs.listdir(where.path)
        checked = [name for name in names if not (name == BLOBS_DIR and blobs is not None)]
        _blob_writes.only_regular_files(fs, where.path, checked, where.session_id)
        return names


#: How often `Handles.prepare` makes a session directory that other processes keep deleting.
_PREPARE_ATTEMPTS = 8


#: What this process knows of snapshot directories is true for every store on the real
#: file system (each entry is checked against the directory's change times).
SHARED_LISTINGS = _snapshots.Listings()
# As `_session.forks.SHARED_ABSENCES`: checked before use, registered so that
# `_process.reset` leaves no cache of the parent behind.
_process.register("snapshot listings", SHARED_LISTINGS.clear)


class _NamedLock:
    """Wraps a file lock so a timeout says which session it was waiting for."""

    __slots__ = ("_lock", "_path", "_session_id", "_timeout")

    def __init__(self, lock: AbstractContextManager[Any], session_id: str, timeout: float, path: str) -> None:
        self._lock = lock
        self._session_id = session_id
        self._timeout = timeout
        self._path = path

    def __enter__(self) -> None:
        try:
            self._lock.__enter__()
        except TimeoutError:
            raise LockTimeout(
                f"session {self._session_id!r} is locked by another writer; gave up after {self._timeout} s",
                session_id=self._session_id,
                path=self._path,
            ) from None
        except FileNotFoundError:
            raise SessionNotFound(
                f"session {self._session_id!r} does not exist", session_id=self._session_id
            ) from None
        except UnsafePath as exc:  # a .lock that is a symlink or no regular file
            exc.session_id = self._session_id
            raise

    def __exit__(self, *exc: object) -> None:
        self._lock.__exit__(*exc)  # type: ignore[arg-type]
