"""`SessionStore`: the one API behind the library and the command line.

The data's way is short and one-directional: arguments -> records (``_records``) ->
lines (``_codec``) -> files (``_log``, ``_snapshots``, ``_meta``) through the one
file-system door (``_fs``), and back.
"""

from __future__ import annotations

import errno
import functools
import inspect
import itertools
import logging
import os
import resource
import stat
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import Any, Concatenate, Literal, ParamSpec, Self, TypeVar

import msgspec

from . import _atomic, _codec, _meta, _recovery, _session, _snapshots
from ._errors import (
    InvalidArgument,
    InvalidMessage,
    JsonlStoreError,
    LockTimeout,
    ParentMismatch,
    SessionNotFound,
    SnapshotConflict,
    StorageError,
    UnsafePath,
    UnsupportedFormat,
    UnsupportedValue,
    storage_error,
)
from ._fs import (
    DIR_MODE,
    OS_FS,
    FileSystem,
    check_directory,
    describe_mode,
    open_regular,
    register_descriptor_cache,
)
from ._ids import new_uuid7
from ._log import FLAGS_READ, Line, LogWriter, first_line_converted, last_good, scan
from ._meta import Origin, SessionMeta
from ._paths import (
    GITATTRIBUTES_NAME,
    GITATTRIBUTES_TEXT,
    GITIGNORE_NAME,
    GITIGNORE_TEXT,
    LOCK_NAME,
    LOG_NAME,
    META_NAME,
    USAGE_NAME,
    is_session_id,
    validate_session_id,
)
from ._records import (
    MESSAGE_TYPES,
    AssistantMessage,
    CompactedMessage,
    ContextSnapshot,
    Message,
    MessageTiming,
    ModelUsage,
    Problem,
    RawMessageRecord,
    SessionSummary,
    SessionView,
    UsageRecord,
)
from ._recovery import UNUSABLE_KINDS
from ._repair import includes

Durability = Literal["fsync", "none"]

logger = logging.getLogger("jsonl_store")

_UNSET: Any = _meta._UNSET
#: The most sessions one store keeps open (each holds up to two descriptors).
_MAX_OPEN_SESSIONS = 64


def _open_sessions_limit() -> int:
    """How many sessions a store keeps open: at most a quarter of the descriptor limit.

    With ``ulimit -n 64`` a fixed cache of 64 sessions (128 descriptors) could never fit;
    the rest of the limit is left to reads, locks and the program itself.
    """
    try:
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (OSError, ValueError):
        return _MAX_OPEN_SESSIONS
    if soft == resource.RLIM_INFINITY:
        return _MAX_OPEN_SESSIONS
    return max(1, min(_MAX_OPEN_SESSIONS, soft // 8))


def _now() -> datetime:
    return datetime.now(UTC)


P = ParamSpec("P")
R = TypeVar("R")


def _failure(store: SessionStore, exc: OSError, method: str, session_id: object) -> StorageError:
    """The `StorageError` a public method raises for an ``OSError`` (raise it ``from exc``).

    An error that names no file is placed in the session's directory, else the root.
    """
    if isinstance(session_id, str):
        where = os.path.join(store.root, session_id) if is_session_id(session_id) else store.root
        return storage_error(exc, f"{method}({session_id!r})", session_id=session_id, where=where)
    return storage_error(exc, f"{method}()", where=store.root)


def _storage_errors(
    method: Callable[Concatenate[SessionStore, P], R],
) -> Callable[Concatenate[SessionStore, P], R]:
    """Let no bare ``OSError`` out of a public method: it becomes a `StorageError`.

    Errors of this library pass unchanged (`LockTimeout` and `ReadOnlySession` are
    ``OSError`` subclasses too). `append` and `append_many` do the same inline instead,
    so the hot path pays no extra call.
    """
    name = method.__name__

    @functools.wraps(method)
    def call(self: SessionStore, /, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(self, *args, **kwargs)
        except JsonlStoreError:
            raise
        except OSError as exc:
            raise _failure(self, exc, name, args[0] if args else kwargs.get("session_id")) from exc

    return call


def _message_id(message: Message) -> Any:
    return message.get("id") if isinstance(message, dict) else message.id


def _persisted(message: Message) -> bool:
    if isinstance(message, dict):
        return message.get("persist", True) is not False
    return message.persist


def _is_assistant(message: Message) -> bool:
    if isinstance(message, dict):
        return message.get("role") == "assistant"
    return isinstance(message, AssistantMessage)


def _is_compacted(message: Message) -> bool:
    if isinstance(message, dict):
        return message.get("role") == "compacted"
    return isinstance(message, CompactedMessage)


class _Session:
    """What one store keeps open for one session: its log writers and cached facts."""

    __slots__ = (
        "checkpoint", "directory", "init", "log", "mutex", "parent", "prepared", "seen", "session_id", "usage"
    )

    def __init__(self, session_id: str, directory: str) -> None:
        self.session_id = session_id
        self.directory = directory
        self.log: LogWriter | None = None
        self.usage: LogWriter | None = None
        #: The parent never changes once written, so it can be cached for the checks.
        self.parent: str | None = None
        self.prepared = False
        self.mutex = threading.Lock()
        self.checkpoint: _CheckpointCache | None = None
        #: The last sequence this store handed to its caller (load or checkpoint): what a
        #: runner using this store has seen, for `checkpoint`'s rewrite rule.
        self.seen = 0
        #: What the latest append would initialise the session with, should it have to
        #: (re)create it: (created_at, parent, type, agent name, title).
        self.init: tuple[datetime, str | None, int, str | None, str | None] | None = None

    def initial_meta(self) -> SessionMeta:
        if self.init is None:
            return SessionMeta(created_at=_now())
        created_at, parent, session_type, agent_name, title = self.init
        return SessionMeta(
            created_at=created_at,
            parent_session_id=parent,
            session_type=session_type,
            agent_name=agent_name,
            title=title,
        )

    def close(self) -> None:
        for writer in (self.log, self.usage):
            if writer is not None:
                writer.close()


class _CheckpointCache:
    """Ids of the session context as of a log offset, so a checkpoint reads only new bytes."""

    __slots__ = ("boundary", "ids", "last_id", "last_offset", "last_sequence", "log_end", "snapshot_version")

    def __init__(self, snapshot_version: int, log_end: int, ids: dict[Any, int], last_sequence: int) -> None:
        #: Where the last record read starts, and its id: the log is still the one this
        #: cache was read from only if that record is still there (a deleted and re-made
        #: session has a new log that may be just as long).
        self.last_offset = log_end
        self.last_id = ""
        self.boundary = last_sequence
        self.snapshot_version = snapshot_version
        self.log_end = log_end
        self.ids = ids
        self.last_sequence = last_sequence


class SessionStore:
    """Sessions stored as plain files below ``root``; safe for many threads and processes.

    ``durability="fsync"`` (the default) returns from an append only once the record is
    on disk; ``"none"`` makes one ``write(2)`` per append, which survives a process crash
    but not a power loss. ``lock_timeout`` bounds every wait for another writer.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        durability: Durability = "fsync",
        lock_timeout: float = 30.0,
        on_problem: Callable[[Problem], None] | None = None,
        fs: FileSystem | None = None,
    ) -> None:
        if durability not in ("fsync", "none"):
            raise InvalidArgument(f"durability must be 'fsync' or 'none', got {durability!r}")
        if not isinstance(lock_timeout, (int, float)) or not lock_timeout > 0:
            raise InvalidArgument(f"lock_timeout must be a positive number of seconds, got {lock_timeout!r}")
        if on_problem is not None and not callable(on_problem):
            raise InvalidArgument(f"on_problem must be callable, got {on_problem!r}")
        try:
            self.root = os.fspath(root)
        except TypeError:
            raise InvalidArgument(f"root must be a str or a path, got {root!r}") from None
        if not isinstance(self.root, str):
            raise InvalidArgument(f"root must be a str or a str path, got {self.root!r}")
        try:
            # What every os call would refuse later, refused here once, as a typed error.
            os.fsencode(self.root)
            if "\x00" in self.root:
                raise ValueError("embedded NUL")
        except (UnicodeEncodeError, ValueError):
            raise InvalidArgument(f"root must be a path the file system can name, got {self.root!r}") from None
        self.durability: Durability = durability
        self.lock_timeout = float(lock_timeout)
        self._durable = durability == "fsync"
        self._fs: FileSystem = fs if fs is not None else OS_FS
        # What this process knows of snapshot directories is true for every store on the
        # real file system (each entry is checked against the directory's change times);
        # a file system passed in gets a cache of its own.
        self._listings = _SHARED_LISTINGS if fs is None else _snapshots.Listings()
        self._on_problem = on_problem
        self._sessions: OrderedDict[str, _Session] = OrderedDict()
        self._sessions_mutex = threading.Lock()
        self._locks: dict[str, AbstractContextManager[Any]] = {}
        self._seen: dict[str, int] = {}  # `_Session.seen` of sessions evicted from `_sessions`
        self._root_ready = False
        self._max_open = _open_sessions_limit()
        register_descriptor_cache(self)
        _stores.add(self)

    def _forked(self) -> None:
        """In a forked child: fresh mutexes (a thread of the parent may have held one)."""
        self._sessions_mutex = threading.Lock()
        for session in self._sessions.values():
            session.mutex = threading.Lock()

    # -- lifecycle ----------------------------------------------------------------------

    @_storage_errors
    def close(self) -> None:
        """Close every open descriptor. The store can still be used; it reopens lazily.

        After a failed fsync, closing is how a session's writer is recovered.
        """
        with self._sessions_mutex:
            sessions = list(self._sessions.values())
            self._sessions.clear()
        for session in sessions:
            session.close()

    def _release_descriptors(self) -> int:
        """Close the cached descriptors no call is using right now; return how many.

        Called by the file system when the process is out of descriptors (EMFILE): the
        cache gives way, and the sessions reopen lazily. Never waits for a lock, since the
        caller may hold one of them.
        """
        if not self._sessions_mutex.acquire(blocking=False):
            return 0
        try:
            sessions = list(self._sessions.values())
        finally:
            self._sessions_mutex.release()
        closed = 0
        for session in sessions:
            for writer in (session.log, session.usage):
                if writer is not None:
                    closed += writer.release()
        return closed

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SessionStore({self.root!r}, durability={self.durability!r})"

    # -- internals: paths, locks, sessions -----------------------------------------------

    def _dir(self, session_id: str) -> str:
        return os.path.join(self.root, validate_session_id(session_id))

    def _report(self, problems: Iterable[Problem]) -> None:
        for problem in problems:
            if self._on_problem is not None:
                self._on_problem(problem)
            else:
                logger.warning("%s", problem)

    def _lock(self, session_id: str) -> AbstractContextManager[Any]:
        """The session's cross-process lock (metadata, snapshots, checkpoint, delete, repair)."""
        path = os.path.join(self.root, session_id, LOCK_NAME)
        with self._sessions_mutex:
            lock = self._locks.get(path)
            if lock is None:
                lock = self._locks[path] = _NamedLock(
                    self._fs.lock(path, self.lock_timeout), session_id, self.lock_timeout, path
                )
        return lock

    def _session(self, session_id: str) -> _Session:
        session = self._sessions.get(session_id)
        if session is not None:
            return session
        directory = self._dir(session_id)
        evicted: list[_Session] = []
        with self._sessions_mutex:
            session = self._sessions.get(session_id)
            if session is None:
                session = self._sessions[session_id] = _Session(session_id, directory)
                session.seen = self._seen.pop(session_id, 0)
                while len(self._sessions) > self._max_open:
                    old = self._sessions.popitem(last=False)[1]
                    # Descriptors are released, but what the caller has seen of the session
                    # must outlive them: checkpoint's rewrite rule depends on it.
                    self._seen[old.session_id] = old.seen
                    evicted.append(old)
        for old in evicted:
            old.close()
        return session

    def _saw(self, session_id: str, sequence: int) -> None:
        """Remember that the caller has seen the session up to ``sequence`` (for `checkpoint`).

        A read opens nothing for writing: a session this store has not opened gets only an
        entry in ``_seen``, so loading many sessions never evicts another one's writer.
        """
        with self._sessions_mutex:
            session = self._sessions.get(session_id)
            if session is not None:
                session.seen = max(session.seen, sequence)
            else:
                self._seen[session_id] = max(self._seen.get(session_id, 0), sequence)

    def _forget(self, session_id: str) -> None:
        """Close and drop what this store keeps open for a session (before delete or repair)."""
        with self._sessions_mutex:
            session = self._sessions.pop(session_id, None)
        if session is not None:
            session.close()

    def _makedirs(self, path: str, *, session_id: str | None = None) -> list[str]:
        """Make ``path`` and its missing parents (mode 0700); with fsync, make each name durable.

        The directory holding ``path`` is fsynced even when ``path`` already existed: the
        process that made it may have crashed (or failed its fsync) before doing so.
        Returns the directories this call made, parents first.
        With ``session_id``, ``path`` is a session directory and must not be a symlink
        (`UnsafePath`); the root and its parents may be (a user's ``~/sessions ->
        /data/sessions``). Every error but "exists" is raised, never retried: a name that
        exists but is no directory (a dangling symlink) or a file system that makes no
        directories (``/proc``) used to send this walk up and down forever.
        """
        made: list[str] = []
        missing: list[str] = []
        while True:  # up, to the nearest directory that exists
            try:
                self._fs.mkdir(path, DIR_MODE)
                created = True
                break
            except FileExistsError:
                created = False
                break
            except FileNotFoundError as exc:
                parent = os.path.dirname(path)
                if not parent or parent == path:
                    raise _cannot_make(path, exc) from exc
                missing.append(path)
                path = parent
            except OSError as exc:
                raise _cannot_make(path, exc) from exc
        while True:  # and down again, making each missing one
            if created:
                made.append(path)
            else:
                # Made by us before, or by another process just now (which may not have
                # fsynced its parent yet): it must be a directory, and its name durable.
                self._check_existing(path, session_id if not missing else None)
            if self._durable:
                self._fs.fsync_dir(os.path.dirname(path) or ".")
            if not missing:
                return made
            path = missing.pop()
            try:
                self._fs.mkdir(path, DIR_MODE)
                created = True
            except FileExistsError:
                created = False
            except OSError as exc:
                raise _cannot_make(path, exc) from exc

    def _check_existing(self, path: str, session_id: str | None) -> None:
        """Refuse a name ``mkdir`` found taken by something that is not a directory."""
        if session_id is not None:
            check_directory(self._fs, path, session_id=session_id)  # never through a symlink
            return
        try:
            mode = self._fs.stat(path).st_mode  # the root and its parents may be symlinks
        except FileNotFoundError as exc:
            message = f"{os.path.basename(path) or path} is a dangling symlink; no store can be made below it"
            raise UnsafePath(message, filename=path, path=path) from exc
        if not stat.S_ISDIR(mode):
            message = f"{os.path.basename(path) or path} is not a directory; a store cannot be made below it"
            raise UnsafePath(message, filename=path, path=path)

    def _ensure_root(self) -> None:
        if self._root_ready:
            return
        self._makedirs(self.root)
        for name, text in ((GITIGNORE_NAME, GITIGNORE_TEXT), (GITATTRIBUTES_NAME, GITATTRIBUTES_TEXT)):
            if not self._exists(os.path.join(self.root, name)):
                _atomic.create_exclusive(self._fs, self.root, name, text.encode(), durable=self._durable)
        self._root_ready = True

    def _exists(self, path: str) -> bool:
        """Whether a name exists (``lstat``: a symlink is a name, never followed)."""
        try:
            self._fs.lstat(path)
        except FileNotFoundError:
            return False
        return True

    def _is_session_entry(self, name: str) -> bool:
        """Whether an entry of the root may be a session: a session id that is no regular file.

        A regular file (a README next to the sessions) is not a session and is skipped
        silently; a symlink or a FIFO with a session's name is a session gone wrong, which
        `list_sessions` and `verify` report.
        """
        if not is_session_id(name):
            return False
        try:
            mode = self._fs.lstat(os.path.join(self.root, name)).st_mode
        except FileNotFoundError:
            return False
        return not stat.S_ISREG(mode)

    def _check_dir(self, session_id: str, directory: str) -> bool:
        """Whether the session directory exists; `UnsafePath` when it is a symlink or no directory."""
        return check_directory(self._fs, directory, session_id=session_id)

    def _prepare(self, session: _Session) -> None:
        """Make sure the session's directory and metadata exist; cache its parent.

        Runs once per store and session (and again if the session was deleted meanwhile).
        The first metadata file is created under the session lock by compare-and-swap, so
        two processes making the same new session agree on one file. A metadata file torn
        by a power loss (possible under ``durability="none"``) is moved aside and made
        anew, so it never blocks the appends that follow.
        """
        self._ensure_root()
        if self._makedirs(session.directory, session_id=session.session_id)[:-1]:
            # More than the session directory was made: the root itself was gone (removed
            # by someone else while this store was open). What `_ensure_root` writes into
            # a new root (the .gitignore) must be written into this one too.
            self._root_ready = False
            self._ensure_root()
        problems: list[Problem] = []
        meta = self._read_meta(session.session_id, session.directory, problems)
        if meta is None:
            with self._lock(session.session_id):
                meta = self._read_meta(session.session_id, session.directory, problems)
                if meta is None:
                    if problems:
                        _session.move_aside(self._fs, session.directory, META_NAME)
                    meta = session.initial_meta()
                    first = _session.first_record_time(self._fs, session.directory)
                    if first is not None:
                        # The log is older than this metadata: the session began with it.
                        meta.created_at = first
                    if not _meta.create(self._fs, session.directory, meta, durable=self._durable):
                        meta = self._read_meta(session.session_id, session.directory)
                        if meta is None:
                            raise UnsupportedFormat(
                                f"session {session.session_id!r}: meta.json cannot be read", session_id=session.session_id
                            )
        self._report(problems[:1])
        _meta.check_writable(meta, session.session_id)
        session.parent = meta.parent_session_id
        session.prepared = True

    def _read_meta(self, session_id: str, directory: str, problems: list[Problem] | None = None) -> SessionMeta | None:
        """The session's metadata; a damaged file is reported (to ``problems``, else on_problem)."""
        found: list[Problem] = [] if problems is None else problems
        meta = _session.read_meta(self._fs, session_id, directory, found)
        if problems is None:
            self._report(found)
        return meta

    def _require_writable(self, session_id: str, directory: str) -> SessionMeta | None:
        """Refuse to change a session this version cannot read or must not write."""
        if not self._check_dir(session_id, directory):
            raise SessionNotFound(f"session {session_id!r} does not exist", session_id=session_id)
        meta = self._read_meta(session_id, directory)
        if meta is not None:
            _meta.check_writable(meta, session_id)
        return meta

    def _writer(self, session: _Session) -> LogWriter:
        """The session's raw-log writer, preparing the session on first use."""
        with session.mutex:
            if not session.prepared:
                self._prepare(session)
            if session.log is None:
                session.log = self._new_writer(session, LOG_NAME, f"session {session.session_id!r}")
                session.log.accept = _session.ends_batch
                session.log.sequence_of = _session.body_sequence
            return session.log

    def _usage_writer(self, session: _Session) -> LogWriter:
        self._writer(session)
        with session.mutex:
            if session.usage is None:
                session.usage = self._new_writer(session, USAGE_NAME, f"usage log of session {session.session_id!r}")
            return session.usage

    def _new_writer(self, session: _Session, name: str, label: str) -> LogWriter:
        return LogWriter(
            self._fs,
            os.path.join(session.directory, name),
            session.directory,
            durable=self._durable,
            lock_timeout=self.lock_timeout,
            label=label,
            session_id=session.session_id,
            # The file was (re)created: after a delete_session by someone else the
            # metadata must be made again, from this call's arguments.
            on_new_file=lambda: self._prepare(session),
        )

    # -- appending ----------------------------------------------------------------------

    def append(
        self,
        session_id: str,
        message: Message,
        *,
        request_id: str | None = None,
        timing: MessageTiming | None = None,
        usage: ModelUsage | None = None,
        parent_session_id: str | None = None,
        title: str | None = None,
        agent_name: str | None = None,
        session_type: int = 0,
        metadata: Mapping[str, Any] | None = None,
        tags: Mapping[str, Any] | None = None,
    ) -> int:
        """Append one immutable record; return its sequence (0 when ``persist`` is False).

        The first append creates the session, and ``title``, ``agent_name``,
        ``parent_session_id`` and ``session_type`` initialise its metadata (they are not
        copied into records, and are ignored once the session exists, except that a
        different parent raises `ParentMismatch`). Raises `InvalidMessage` /
        `UnsupportedValue` for a message that cannot be stored unchanged; nothing is
        written then.
        """
        try:
            return self._append(
                session_id,
                [message],
                request_id=request_id,
                timings=[timing],
                usages=[usage],
                parent_session_id=parent_session_id,
                title=title,
                agent_name=agent_name,
                session_type=session_type,
                metadata=metadata,
                tags=tags,
            )[0]
        except JsonlStoreError:
            raise
        except OSError as exc:  # what `_storage_errors` does, without a wrapper call per append
            raise _failure(self, exc, "append", session_id) from exc

    def append_many(
        self,
        session_id: str,
        messages: Sequence[Message],
        *,
        request_id: str | None = None,
        timing: MessageTiming | Sequence[MessageTiming | None] | None = None,
        usage: ModelUsage | Sequence[ModelUsage | None] | None = None,
        parent_session_id: str | None = None,
        title: str | None = None,
        agent_name: str | None = None,
        session_type: int = 0,
        metadata: Mapping[str, Any] | None = None,
        tags: Mapping[str, Any] | None = None,
    ) -> list[int]:
        """Append several records all or nothing: one write, at most one fsync.

        Returns one sequence per message (0 for a message with ``persist=False``).
        ``timing`` and ``usage`` are one value for the whole batch or one per message;
        a single ``usage`` belongs to the batch's only assistant message.
        """
        if isinstance(messages, (dict, str, bytes)) or not isinstance(messages, Sequence):
            raise InvalidArgument("append_many takes a sequence of messages")
        count = len(messages)
        timings = self._per_message(timing, MessageTiming, count, "timing")
        if isinstance(usage, ModelUsage):
            assistants = [i for i, m in enumerate(messages) if _is_assistant(m)]
            if len(assistants) != 1:
                raise InvalidArgument(
                    f"a single usage needs exactly one assistant message in the batch, found {len(assistants)}"
                )
            usages: list[ModelUsage | None] = [None] * count
            usages[assistants[0]] = usage
        else:
            usages = self._per_message(usage, ModelUsage, count, "usage")
        try:
            return self._append(
                session_id,
                messages,
                request_id=request_id,
                timings=timings,
                usages=usages,
                parent_session_id=parent_session_id,
                title=title,
                agent_name=agent_name,
                session_type=session_type,
                metadata=metadata,
                tags=tags,
            )
        except JsonlStoreError:
            raise
        except OSError as exc:  # as in `append`
            raise _failure(self, exc, "append_many", session_id) from exc

    @staticmethod
    def _per_message(value: Any, kind: type, count: int, name: str) -> list[Any]:
        if value is None or isinstance(value, kind):
            return [value] * count
        try:
            values = list(value)
        except TypeError:
            raise InvalidArgument(f"{name} must be one {kind.__name__} or a list of them, got {value!r}") from None
        if len(values) != count:
            raise InvalidArgument(f"{name} has {len(values)} entries for {count} messages")
        return values

    def _append(
        self,
        session_id: str,
        messages: Sequence[Message],
        *,
        request_id: str | None,
        timings: Sequence[MessageTiming | None],
        usages: Sequence[ModelUsage | None],
        parent_session_id: str | None,
        title: str | None,
        agent_name: str | None,
        session_type: int,
        metadata: Mapping[str, Any] | None,
        tags: Mapping[str, Any] | None,
    ) -> list[int]:
        session = self._session(session_id)
        # Everything that can fail on bad input is checked before any file is touched.
        if request_id is not None:
            if not isinstance(request_id, str):
                raise InvalidArgument(f"request_id must be a str, got {type(request_id).__name__}")
            _codec.check_label(request_id, "request_id")
        if parent_session_id is not None:
            validate_session_id(parent_session_id)
            if parent_session_id == session_id:
                raise InvalidArgument(f"session {session_id!r} cannot be its own parent")
        if type(session_type) is not int:
            raise InvalidArgument(f"session_type must be an int, got {session_type!r}")
        common: dict[str, Any] = {}
        if request_id is not None or metadata is not None or tags is not None:
            common = {
                "request_id": request_id,
                "metadata": self._json_object(metadata, "metadata"),
                "tags": self._json_object(tags, "tags"),
            }
        shared_trailer = _codec.encode_trailer(**common) if common else b""
        now = _now()
        created = _codec.encode_time(now)
        bodies: list[tuple[bytes, bytes] | None] = []
        for index, message in enumerate(messages):
            payload, plain = _codec.encode_message(message)
            if not _persisted(message):
                bodies.append(None)
                continue
            usage = usages[index]
            timing = timings[index]
            if usage is not None:
                _check_usage(usage)
                if not _is_assistant(message):
                    raise InvalidArgument("usage belongs only to assistant messages")
            if timing is not None:
                _check_timing(timing)
                usage_fields = msgspec.structs.asdict(usage) if usage is not None else {}
                trailer = _codec.encode_trailer(**common, **msgspec.structs.asdict(timing), **usage_fields)
            elif usage is not None:
                # The common case of a model response: token counts are the record's last
                # fields, so they follow the shared part without another encoding pass.
                trailer = shared_trailer + _codec.usage_trailer(usage)
            else:
                trailer = shared_trailer
            bodies.append((_codec.record_head(new_uuid7(), created, payload, plain), trailer))
        stored = len(bodies) - bodies.count(None)
        if not stored:
            return [0] * len(messages)  # nothing to persist
        if title is not None:
            _meta.check_title(title)
        if agent_name is not None:
            _meta.check_agent_name(agent_name)
        session.init = (now, parent_session_id, session_type, agent_name, title)
        writer = self._writer(session)
        sequences: list[int] = []

        def build(last: Line | None) -> tuple[bytes, Line]:
            # Checked under the append lock: the session may have been deleted and made
            # anew (with another parent) since this store cached its parent.
            if parent_session_id is not None and session.parent != parent_session_id:
                raise ParentMismatch(
                    f"session {session_id!r} has parent {session.parent!r}; a parent never changes "
                    f"(got {parent_session_id!r})",
                    session_id=session_id,
                )
            sequence = _session.sequence_of(last)
            # Every record of a multi-record batch names the batch's last sequence, so a
            # reader can tell a batch torn by a power loss and give it back whole or not at all.
            batch_end = sequence + stored if stored > 1 else 0
            parts = []
            body = b""
            for pieces in bodies:
                if pieces is None:
                    sequences.append(0)
                    continue
                sequence += 1
                sequences.append(sequence)
                line, body = _codec.record_line(sequence, batch_end, *pieces)
                parts.append(line)
            data = b"".join(parts) if len(parts) > 1 else parts[0]
            return data, Line(len(data) - len(parts[-1]), None, body, len(data), sequence)

        try:
            writer.append(build)
        except FileNotFoundError:
            # The session directory vanished under us (deleted by another process):
            # make it again and retry once.
            sequences.clear()
            session.prepared = False
            writer.close()
            writer = self._writer(session)
            writer.append(build)
        if writer.cuts:
            self._report(writer.cuts)
            writer.cuts.clear()
        return sequences

    @staticmethod
    def _json_object(value: Mapping[str, Any] | None, name: str) -> Any:
        if value is not None and not isinstance(value, Mapping):
            raise InvalidArgument(f"{name} must be a mapping, got {type(value).__name__}")
        if not value:
            return None  # left out of the line, read back as {}
        return msgspec.Raw(_codec.encode_json(dict(value), name))

    # -- reading ------------------------------------------------------------------------

    @_storage_errors
    def load(self, session_id: str) -> SessionView:
        """The latest valid snapshot plus the raw-log records after its boundary.

        Reads only the tail, whatever the log's length. An unknown session gives an empty
        view. Damage met on the way is in ``view.problems`` (and goes to ``on_problem``).
        """
        directory = self._dir(session_id)
        self._check_dir(session_id, directory)
        problems: list[Problem] = []
        meta = self._read_meta(session_id, directory, problems)
        fd, size = _session.open_log(self._fs, directory)
        try:
            snapshot = _snapshots.latest(
                self._fs, directory, session_id, fd, size, problems, listings=self._listings
            )
            tail: list[RawMessageRecord] = []
            if fd is not None:
                size = _session.size_for(self._fs, fd, size, snapshot)
                start = snapshot.tail_offset if snapshot is not None else 0
                after = snapshot.compacted_through_sequence if snapshot is not None else 0
                end = _session.good_end(self._fs, fd, size, start)
                tail = [r for _, r in _session.decode_lines(self._fs, session_id, directory, fd, start, end, after, problems)]
        finally:
            if fd is not None:
                self._fs.close(fd)
        self._report(problems)
        view = SessionView(
            session_id=session_id,
            parent_session_id=meta.parent_session_id if meta else None,
            session_type=meta.session_type if meta else 0,
            title=meta.title if meta else None,
            agent_name=meta.agent_name if meta else None,
            snapshot=snapshot,
            raw_tail=tail,
            problems=problems,
        )
        self._saw(session_id, view.last_sequence)
        return view

    @_storage_errors
    def records(self, session_id: str, *, after: int = 0) -> Iterator[RawMessageRecord]:
        """Stream the raw log's records with a sequence above ``after``, in constant memory.

        When a snapshot's boundary is at or before ``after``, reading starts at that
        snapshot's tail offset instead of the beginning of the file.
        """
        directory = self._dir(session_id)
        if type(after) is not int or after < 0:
            raise InvalidArgument(f"after must be a non-negative int, got {after!r}")
        # Checked now, not at the first next(): a session this version cannot read fails
        # where records() is called.
        self._check_dir(session_id, directory)
        self._read_meta(session_id, directory)
        return self._records(session_id, directory, after)

    def _records(self, session_id: str, directory: str, after: int) -> Iterator[RawMessageRecord]:
        # A generator runs after records() returned, outside `_storage_errors`: it turns
        # an OSError met while iterating into a StorageError itself.
        try:
            fd, size = _session.open_log(self._fs, directory)
        except JsonlStoreError:
            raise
        except OSError as exc:
            raise _failure(self, exc, "records", session_id) from exc
        if fd is None:
            return
        problems: list[Problem] = []
        try:
            start, floor = 0, 0
            if after > 0:
                snapshot = _snapshots.latest(
                    self._fs, directory, session_id, fd, size, None, at_most=after, listings=self._listings
                )
                if snapshot is not None:
                    start, floor = snapshot.tail_offset, snapshot.compacted_through_sequence
                    size = _session.size_for(self._fs, fd, size, snapshot)
            end = _session.good_end(self._fs, fd, size, start)
            for _, record in _session.decode_lines(self._fs, session_id, directory, fd, start, end, floor, problems):
                if record.sequence > after:
                    yield record
        except JsonlStoreError:
            raise
        except OSError as exc:
            raise _failure(self, exc, "records", session_id) from exc
        finally:
            self._fs.close(fd)
            self._report(problems)

    def _summary(self, session_id: str, directory: str, meta: SessionMeta | None = _UNSET) -> SessionSummary | None:
        """The session's summary; ``meta`` when the caller has just read or written it."""
        if meta is _UNSET:
            meta = self._read_meta(session_id, directory, [])
        return _session.summary(self._fs, session_id, directory, meta)

    @_storage_errors
    def get_session(self, session_id: str) -> SessionSummary | None:
        """The session's summary, or None when it does not exist."""
        directory = self._dir(session_id)
        if not self._check_dir(session_id, directory):
            return None
        return self._summary(session_id, directory)

    @_storage_errors
    def list_sessions(self, *, parent_session_id: str | None = None) -> list[SessionSummary]:
        """Every session (or the children of ``parent_session_id``), newest activity first."""
        if parent_session_id is not None:
            validate_session_id(parent_session_id)
        try:
            names = self._fs.listdir(self.root)
        except FileNotFoundError:
            return []
        found = []
        for name in names:
            if not self._is_session_entry(name):
                continue
            directory = os.path.join(self.root, name)
            try:
                if not self._check_dir(name, directory):
                    continue  # deleted since the listing
                summary = self._summary(name, directory)
            except UnsafePath as exc:
                # One broken session must not hide the others: skip it, and say why.
                self._report([_recovery.unsafe_problem(exc)])
                continue
            except (NotADirectoryError, UnsupportedFormat):
                continue
            if summary is None:
                continue
            if parent_session_id is not None and summary.parent_session_id != parent_session_id:
                continue
            found.append(summary)
        found.sort(key=lambda s: (s.updated_at, s.session_id), reverse=True)
        return found

    # -- snapshots ----------------------------------------------------------------------

    @_storage_errors
    def snapshot(
        self,
        session_id: str,
        compacted_message: Message,
        compacted_through_sequence: int,
        expected_version: int,
    ) -> ContextSnapshot:
        """Create snapshot ``expected_version + 1``: a summary replacing the log up to a sequence.

        ``expected_version`` is the version of the snapshot the caller's context came from
        (0 for none, as in ``load(...).snapshot``). Raises `SnapshotConflict` when another
        writer created a newer snapshot first, and `InvalidArgument` when the boundary does
        not advance past the previous snapshot's or passes the last sequence.
        """
        directory = self._dir(session_id)
        if not _is_compacted(compacted_message):
            raise InvalidArgument("a snapshot's message must be a CompactedMessage (or a dict with role 'compacted')")
        payload, plain = _codec.encode_message(compacted_message)
        _snapshots.check_size(payload)
        for name, value in (("compacted_through_sequence", compacted_through_sequence), ("expected_version", expected_version)):
            if type(value) is not int or value < 0:
                raise InvalidArgument(f"{name} must be a non-negative int, got {value!r}")
        self._require_writable(session_id, directory)
        with self._lock(session_id):
            fd, size = self._log_as_written(session_id, directory)
            try:
                if self._durable:
                    # The snapshot must never be on disk without its boundary record: records
                    # written under durability="none", or before a failed fsync, may still be
                    # only in the page cache.
                    self._fs.fdatasync(fd)
                # One listing, under the lock, for both the newest snapshot and the next
                # version: only a snapshot() holding the lock makes a new one.
                present = _snapshots.versions(self._fs, directory)
                problems: list[Problem] = []
                current = _snapshots.latest(self._fs, directory, session_id, fd, size, problems, present=present)
                self._report(problems)
                current_version = current.version if current else 0
                if expected_version != current_version:
                    raise SnapshotConflict(
                        f"session {session_id!r} is at snapshot version {current_version}, not {expected_version}",
                        session_id=session_id,
                    )
                previous = current.compacted_through_sequence if current else 0
                if compacted_through_sequence <= previous:
                    raise InvalidArgument(
                        f"the boundary must advance past sequence {previous}, got {compacted_through_sequence}"
                    )
                start = current.tail_offset if current else 0
                size = _session.size_for(self._fs, fd, size, current)
                end, last = last_good(self._fs, fd, size, start, _session.ends_batch)
                boundary = _snapshots.find_boundary(
                    self._fs, fd, session_id, start, end, previous, compacted_through_sequence,
                    _session.sequence_of(last) if last is not None else previous,
                )
                if boundary is None:
                    raise InvalidArgument(
                        f"sequence {compacted_through_sequence} is not in session {session_id!r}'s log"
                    )
            finally:
                self._fs.close(fd)
            # Damaged files keep their number, so the next version is above all of them.
            version = max([current_version, *present]) + 1
            snapshot = ContextSnapshot(
                version=version,
                id=new_uuid7(),
                created_at=_now(),
                compacted_through_sequence=compacted_through_sequence,
                boundary_offset=boundary.offset,
                tail_offset=boundary.end,
                boundary_record_id=_codec.record_position(boundary.body)[2],
                plain=plain,
                compacted_message=msgspec.Raw(payload),
            )
            if not _snapshots.create(self._fs, directory, snapshot, durable=self._durable):
                raise SnapshotConflict(
                    f"snapshot {version} of session {session_id!r} was created by another writer",
                    session_id=session_id,
                )
        return msgspec.structs.replace(
            snapshot, compacted_message=compacted_message, session_id=session_id
        )

    def _log_as_written(self, session_id: str, directory: str) -> tuple[int, int]:
        """A read descriptor on the raw log and its size, once the log holds its bytes as written.

        A snapshot's offsets must be those of the restored log (§9.3, §10): made on lines a
        text conversion lengthened, they would stop holding as soon as a writer restored
        the log. So a conversion seen in the first or last line is undone first, as the
        next append would (and as `repair` does), under the append lock.
        """
        fd, size = _session.open_log(self._fs, directory)
        if fd is None:
            raise SessionNotFound(f"session {session_id!r} has no records to compact", session_id=session_id)
        try:
            _, last = last_good(self._fs, fd, size)
            converted = (last is not None and last.converted) or first_line_converted(self._fs, fd, size)
        except BaseException:
            self._fs.close(fd)
            raise
        if not converted:
            return fd, size
        self._fs.close(fd)
        writer = self._new_writer(self._session(session_id), LOG_NAME, f"session {session_id!r}")
        writer.accept = _session.ends_batch
        try:
            writer.restore()
        finally:
            writer.close()
        self._report(writer.cuts)
        fd, size = _session.open_log(self._fs, directory)
        if fd is None:
            raise SessionNotFound(f"session {session_id!r} has no records to compact", session_id=session_id)
        return fd, size

    # -- metadata -----------------------------------------------------------------------

    @_storage_errors
    def update_session(
        self,
        session_id: str,
        *,
        title: str | None = _UNSET,
        pinned: bool = _UNSET,
        metadata: Mapping[str, Any] | None = _UNSET,
        remove_metadata: Iterable[str] = (),
        expected_version: int | None = None,
        origin: Origin = "user",
    ) -> SessionSummary:
        """Merge only the named fields into the session's metadata, under its lock.

        A UI rename and a runtime metadata update never clobber each other; with
        ``origin="runtime"`` a field or metadata key a user set is left alone.
        ``expected_version`` makes the update a compare-and-swap (`MetadataConflict`).
        Raises `SessionNotFound` for a session that was never written.
        """
        directory = self._dir(session_id)
        if title is not _UNSET:
            _meta.check_title(title)
        if pinned is not _UNSET and type(pinned) is not bool:
            raise InvalidArgument(f"pinned must be a bool, got {pinned!r}")
        if origin not in ("user", "runtime"):
            raise InvalidArgument(f"origin must be 'user' or 'runtime', got {origin!r}")
        merged_metadata = _UNSET
        if metadata is not _UNSET and metadata is not None:
            if not isinstance(metadata, Mapping):
                raise InvalidArgument(f"metadata must be a mapping, got {type(metadata).__name__}")
            merged_metadata = dict(metadata)
            _codec.encode_json(merged_metadata, "metadata")
        if isinstance(remove_metadata, (str, bytes)):
            raise InvalidArgument(f"remove_metadata takes a list of keys, not one {type(remove_metadata).__name__}")
        try:
            removed = tuple(remove_metadata)
        except TypeError:
            raise InvalidArgument(f"remove_metadata takes a list of keys, got {remove_metadata!r}") from None
        for key in removed:
            if not isinstance(key, str):
                raise InvalidArgument(f"remove_metadata takes metadata keys (str), got {key!r}")
            if not key.isascii():
                try:
                    key.encode("utf-8")
                except UnicodeEncodeError:
                    # Such a key can never have been stored; naming it is a caller's bug.
                    raise InvalidArgument(f"remove_metadata key {key!r} holds a lone surrogate") from None
        missing = SessionNotFound(f"session {session_id!r} does not exist", session_id=session_id)
        if not self._check_dir(session_id, directory):
            raise missing
        with self._lock(session_id):
            meta = self._read_meta(session_id, directory)
            if meta is None:
                # No (readable) metadata: a session exists only if its log does.
                if not self._exists(os.path.join(directory, LOG_NAME)):
                    raise missing
                meta = SessionMeta(created_at=_session.first_record_time(self._fs, directory) or _now())
            _meta.check_writable(meta, session_id)
            changed = _meta.merge(
                meta,
                title=title,
                pinned=pinned,
                metadata=merged_metadata,
                remove_metadata=removed,
                expected_version=expected_version,
                origin=origin,
                session_id=session_id,
            )
            if changed:
                _meta.write(self._fs, directory, meta, durable=self._durable)
        summary = self._summary(session_id, directory, meta)
        assert summary is not None
        return summary

    # -- token usage --------------------------------------------------------------------

    @_storage_errors
    def record_usage(self, session_id: str, record: ModelUsage | Mapping[str, Any]) -> None:
        """Append one model call's token counts to the session's token-usage log.

        ``record`` is a `ModelUsage` or a mapping with the same keys plus optional
        ``model``, ``request_id`` and any further JSON keys (kept under ``extra``).
        """
        session = self._session(session_id)
        if isinstance(record, ModelUsage):
            record = msgspec.structs.asdict(record)  # checked below like any mapping
        if isinstance(record, Mapping):
            known = {f for f in UsageRecord.__struct_fields__ if f not in ("recorded_at", "extra")}
            fields = {k: v for k, v in record.items() if k in known}
            extra = {k: v for k, v in record.items() if k not in known}
            _codec.encode_json(extra, "record")
            try:
                usage = msgspec.convert({"recorded_at": _now(), **fields, "extra": extra}, UsageRecord)
            except msgspec.ValidationError as exc:
                raise InvalidArgument(f"bad usage record: {exc}") from None
        else:
            raise InvalidArgument(f"record must be a ModelUsage or a mapping, got {type(record).__name__}")
        for name in ModelUsage.__struct_fields__:
            if getattr(usage, name) < 0:
                raise InvalidArgument(f"{name} must not be negative, got {getattr(usage, name)}")
        for name in ("model", "request_id"):
            if getattr(usage, name) is not None:
                _codec.check_label(getattr(usage, name), name)
        line = _codec.encode_usage(usage)
        # If the session has to be made (anew) for this record, it starts with defaults,
        # not with what an earlier append of this store would have given it.
        session.init = None

        def build(last: Line | None) -> tuple[bytes, Line]:
            return line, Line(0, None, line[:-1], len(line))

        writer = self._usage_writer(session)
        try:
            writer.append(build)
        except FileNotFoundError:
            # As in `_append`: the session directory vanished under us (removed by another
            # process), so make the session again and retry once.
            session.prepared = False
            writer.close()
            writer = self._usage_writer(session)
            writer.append(build)

    @_storage_errors
    def usage(self, session_id: str) -> Iterator[dict[str, Any]]:
        """Every token-usage record of the session, oldest first, as dicts."""
        directory = self._dir(session_id)
        self._check_dir(session_id, directory)
        self._read_meta(session_id, directory)
        return self._usage(session_id, directory)

    def _usage(self, session_id: str, directory: str) -> Iterator[dict[str, Any]]:
        # As in `_records`: OSErrors met while iterating become StorageErrors here.
        path = os.path.join(directory, USAGE_NAME)
        try:
            fd = open_regular(self._fs, path, FLAGS_READ)
        except JsonlStoreError:
            raise
        except FileNotFoundError:
            return
        except OSError as exc:
            raise _failure(self, exc, "usage", session_id) from exc
        problems: list[Problem] = []
        try:
            size = self._fs.fstat(fd).st_size
            for line in scan(self._fs, fd, path, 0, size, problems, first_line=1):
                try:
                    item = _codec.decode_usage_dict(line.body)
                except _codec.DECODE_ERRORS as exc:
                    problems.append(
                        Problem(path, "bad-record", f"checksum holds but the line is not a usage record: {exc}",
                                "skipped", line.offset, line.number)
                    )
                    continue
                yield item
        except JsonlStoreError:
            raise
        except OSError as exc:
            raise _failure(self, exc, "usage", session_id) from exc
        finally:
            self._fs.close(fd)
            self._report(problems)

    @_storage_errors
    def usage_totals(self, session_id: str) -> ModelUsage:
        """The sum of the session's token-usage log."""
        total = ModelUsage()
        for item in self.usage(session_id):
            # A line another program wrote may hold anything under these keys: only
            # non-negative integers are tokens.
            counts = {name: item.get(name, 0) for name in ModelUsage.__struct_fields__}
            total = total + ModelUsage(
                **{name: v if type(v) is int and v >= 0 else 0 for name, v in counts.items()}
            )
        return total

    # -- whole-state saves ----------------------------------------------------------------

    @_storage_errors
    def checkpoint(self, /, session_id: str, messages: Sequence[Message], **append_options: Any) -> list[int]:
        """Save a runner's full message list by appending only what is not stored yet.

        Messages are matched by ``id`` (stored messages are immutable: give an edited message
        a new id). As in the seed ``004_0b1605c615b13fa7.txt``, a stored message is never
        removed or reordered by a save, even when ``messages`` lacks it (a stale list, or
        records another writer appended): the new messages go after the stored ones. A list
        that rewrites history (a caller's compaction, i.e. a new `CompactedMessage`; a new
        message placed before stored ones; stored messages in another order) is stored as
        a snapshot plus a new tail, and the raw log is never rewritten; stored messages the
        caller has not seen (newer than its list and than what this store last loaded or
        saved for it) are kept after it. Returns the sequences appended. An extending save
        reads and writes only the new bytes (O(new messages)); the first save of a session
        by a store reads its tail once, as `load` does, and a rewrite costs O(tail).
        """
        directory = self._dir(session_id)
        # Checked before the session is made: nothing may be created for a call that fails.
        if isinstance(messages, (dict, str, bytes)) or not isinstance(messages, Sequence):
            raise InvalidArgument("checkpoint takes a sequence of messages")
        for message in messages:
            if not isinstance(message, (dict, *MESSAGE_TYPES)):
                raise UnsupportedValue(
                    f"a message must be a dict with 'role' or one of the message classes, not {type(message).__name__}"
                )
        unknown = set(append_options) - _APPEND_OPTIONS
        if unknown:
            raise InvalidArgument(f"checkpoint got unknown append options: {', '.join(sorted(unknown))}")
        wanted = [m for m in messages if _persisted(m)]
        ids = []
        for index, message in enumerate(wanted):
            message_id = _message_id(message)
            if not isinstance(message_id, str) or not message_id:
                raise InvalidMessage(f"checkpoint needs an 'id' on every message; message {index} has none")
            ids.append(message_id)
        if len(set(ids)) != len(ids):
            raise InvalidMessage("checkpoint got two messages with the same id")
        if not wanted:
            return []  # nothing to store, and a save never removes anything
        session = self._session(session_id)
        self._writer(session)  # creates the session (and its lock file) if it is new
        with self._lock(session_id):
            cache = self._checkpoint_state(session, directory)
            known = cache.ids
            split = len(wanted)
            while split > 0 and ids[split - 1] not in known:
                split -= 1
            positions = [known.get(i) for i in ids[:split]]
            consistent = all(p is not None for p in positions) and all(
                a < b for a, b in itertools.pairwise(positions)  # type: ignore[operator]
            )
            new = wanted[split:]
            if consistent and known and any(_is_compacted(m) for m in new):
                consistent = False  # a caller's compaction of what is stored
            if consistent:
                sequences = self.append_many(session_id, new, **append_options) if new else []
            else:
                seen = max([session.seen, *(p for p in positions if p is not None)])
                sequences = self._rewrite(session_id, wanted, set(ids), seen, cache, append_options)
            session.seen = self._checkpoint_state(session, directory).last_sequence
            return sequences

    def _checkpoint_state(self, session: _Session, directory: str) -> _CheckpointCache:
        fd, size = _session.open_log(self._fs, directory)
        try:
            cache = session.checkpoint
            snapshot = _snapshots.latest(
                self._fs, directory, session.session_id, fd, size, None, listings=self._listings
            )
            if fd is not None:
                size = _session.size_for(self._fs, fd, size, snapshot)
            version = snapshot.version if snapshot else 0
            if (
                cache is None
                or cache.snapshot_version != version
                or cache.log_end > size
                or (fd is not None and not self._still_holds(fd, cache))
            ):
                ids: dict[Any, int] = {}
                if snapshot is not None:
                    ids[_message_id(snapshot.compacted_message)] = 0
                start = snapshot.tail_offset if snapshot else 0
                last = snapshot.compacted_through_sequence if snapshot else 0
                cache = _CheckpointCache(version, start, ids, last)
            if fd is not None and size > cache.log_end:
                end = _session.good_end(self._fs, fd, size, cache.log_end)
                for line, record in _session.decode_lines(self._fs, 
                    session.session_id, directory, fd, cache.log_end, end, cache.last_sequence, []
                ):
                    cache.ids.setdefault(_message_id(record.message), record.sequence)
                    cache.last_sequence = record.sequence
                    cache.last_offset, cache.last_id = line.offset, record.id
                    # Only up to the last complete record: a batch still being written
                    # (or torn) is read again next time.
                    cache.log_end = line.end
            session.checkpoint = cache
            return cache
        finally:
            if fd is not None:
                self._fs.close(fd)

    def _still_holds(self, fd: int, cache: _CheckpointCache) -> bool:
        if not cache.last_id:
            return True
        raw = self._fs.pread(fd, cache.log_end - cache.last_offset, cache.last_offset)[:-1]
        if not _codec.is_sealed(raw):
            return False
        try:
            return _codec.record_position(raw)[2] == cache.last_id
        except _codec.DECODE_ERRORS:
            return False

    def _rewrite(
        self,
        session_id: str,
        wanted: list[Message],
        wanted_ids: set[str],
        seen: int,
        cache: _CheckpointCache,
        append_options: dict[str, Any],
    ) -> list[int]:
        """Store ``wanted`` as the new session context: a snapshot, then a new tail."""
        compacted: Message
        if wanted and _is_compacted(wanted[0]):
            compacted, rest = wanted[0], wanted[1:]
        else:
            compacted = CompactedMessage(
                content="The history was rewritten by a checkpoint; the messages after this one replace it.",
                include_in_messages=False,
            )
            rest = wanted
        # Records newer than anything the caller has seen (its list, and what this store
        # last loaded or saved for it) were appended by another writer meanwhile: the
        # caller cannot have meant to drop them, so they stay, after the caller's list.
        unseen = [
            record.message
            for record in self.records(session_id, after=max(seen, cache.boundary))
            if _message_id(record.message) not in wanted_ids and includes(record.message)
        ]
        for message in wanted:
            _codec.encode_message(message)  # refuse bad input before the marker is written
        _snapshots.check_size(_codec.encode_message(compacted)[0])
        # A marker record first: it always advances the boundary (even right after another
        # snapshot) and leaves a trace of the rewrite in the raw log.
        marker = CompactedMessage(
            content="checkpoint: the session context was rewritten here", include_in_messages=False
        )
        through = self.append(session_id, marker)
        self.snapshot(session_id, compacted, through, cache.snapshot_version)
        tail = [*rest, *unseen]
        return self.append_many(session_id, tail, **append_options)[: len(rest)] if tail else []

    # -- deleting -------------------------------------------------------------------------

    @_storage_errors
    def delete_session(self, session_id: str) -> bool:
        """Delete the session's files; False when there was nothing to delete.

        Sessions are never deleted any other way. The lock file stays (deleting a lock
        file another process waits on would let two holders in); it is git-ignored.
        """
        directory = self._dir(session_id)
        if not self._check_dir(session_id, directory):
            return False
        self._forget(session_id)
        existed = False
        with self._lock(session_id):
            log_path = os.path.join(directory, LOG_NAME)
            try:
                fd = open_regular(self._fs, log_path, FLAGS_READ, session_id=session_id)
            except FileNotFoundError:
                fd = None
            try:
                if fd is not None:
                    # Hold the append lock while unlinking: a writer that gets it next sees
                    # the file gone (st_nlink == 0) and starts a new session.
                    self._fs.flock(fd, 2)
                names = [name for name in self._fs.listdir(directory) if name != LOCK_NAME]
                for name in names:
                    # Only regular files are deleted: anything else is not the store's, and a
                    # person must look at it (a delete never removes half a session either).
                    path = os.path.join(directory, name)
                    mode = self._fs.lstat(path).st_mode
                    if not stat.S_ISREG(mode):
                        raise UnsafePath(f"{name} is {describe_mode(mode)}, not a regular file; nothing was "
                                         "deleted", filename=path, session_id=session_id, path=path)
                for name in names:
                    self._fs.unlink(os.path.join(directory, name))
                    existed = existed or name in (LOG_NAME, META_NAME)
            finally:
                if fd is not None:
                    self._fs.close(fd)
            if self._durable:
                self._fs.fsync_dir(directory)
        return existed

    # -- verify and repair ------------------------------------------------------------------

    def _check(self, session_id: str, directory: str, *, fix: bool) -> list[Problem]:
        return _recovery.check(
            self._fs, session_id, directory, fix=fix, durable=self._durable, lock_timeout=self.lock_timeout
        )

    @_storage_errors
    def verify(self, session_id: str | None = None) -> list[Problem]:
        """Every problem on disk (one session or all), with what `repair` would do. Changes nothing."""
        if session_id is None:
            try:
                names = sorted(n for n in self._fs.listdir(self.root) if self._is_session_entry(n))
            except FileNotFoundError:
                return []
            problems: list[Problem] = []
            for name in names:
                problems.extend(self._check(name, os.path.join(self.root, name), fix=False))
            return problems
        return self._check(session_id, self._dir(session_id), fix=False)

    @_storage_errors
    def repair(self, session_id: str) -> list[Problem]:
        """Fix what `verify` finds in one session and report it; running it twice changes nothing.

        Damaged tails are cut into sidecar files, damaged snapshots and metadata are moved
        aside, leftover temporary files are deleted. Damage in the middle of the log stays
        where it is (readers skip it); it is reported with ``action`` saying so.
        """
        directory = self._dir(session_id)
        self._forget(session_id)
        # Looked at before the lock is taken: a `.lock` that is a symlink is reported, not opened.
        unsafe = _recovery.unsafe_paths(self._fs, session_id, directory)
        if unsafe:
            return unsafe
        if not self._exists(directory):
            return []
        with self._lock(session_id):
            return self._check(session_id, directory, fix=True)



#: The keywords `checkpoint` passes on to `append_many`.
_APPEND_OPTIONS = frozenset(inspect.signature(SessionStore.append_many).parameters) - {"self", "session_id", "messages"}

_stores: weakref.WeakSet[SessionStore] = weakref.WeakSet()
_SHARED_LISTINGS = _snapshots.Listings()


def _after_fork_in_child() -> None:
    for store in list(_stores):
        store._forked()


# A store may be used in a forked child (README, "Concurrency"); its descriptors and locks
# are the business of `_log` and `_lock`, which have fork hooks of their own.
os.register_at_fork(after_in_child=_after_fork_in_child)


def _cannot_make(path: str, exc: OSError) -> StorageError:
    """The typed error for a directory ``mkdir`` refused, keeping ``errno``."""
    if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
        reason = exc.strerror or str(exc)
        return UnsafePath(
            f"cannot make directory {os.path.basename(path)}: {reason} (a dangling symlink or a file in "
            "the way, or a file system that holds no new directories, such as /proc)",
            errno=exc.errno,
            strerror=exc.strerror,
            filename=path,
            path=path,
        )
    return storage_error(exc, f"making directory {os.path.basename(path)}", where=path)


def _check_usage(usage: object) -> None:
    # Structs do not check types on construction; a string here would write a record
    # that no reader can decode, so the counts are checked before anything is written.
    if not isinstance(usage, ModelUsage):
        raise InvalidArgument(f"usage must be a ModelUsage, got {type(usage).__name__}")
    for name in usage.__struct_fields__:
        value = getattr(usage, name)
        if type(value) is not int or value < 0:
            raise InvalidArgument(f"usage.{name} must be a non-negative int, got {value!r}")


def _check_timing(timing: object) -> None:
    if not isinstance(timing, MessageTiming):
        raise InvalidArgument(f"timing must be a MessageTiming, got {type(timing).__name__}")
    for name in timing.__struct_fields__:
        value = getattr(timing, name)
        expected: type = int if name.endswith("_ns") else datetime
        if value is None and name not in ("started_at", "completed_at", "duration_ns"):
            continue
        if not isinstance(value, expected) or isinstance(value, bool):
            raise InvalidArgument(f"timing.{name} must be {expected.__name__}, got {value!r}")


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
            raise SessionNotFound(f"session {self._session_id!r} does not exist", session_id=self._session_id) from None
        except UnsafePath as exc:  # a .lock that is a symlink or no regular file
            exc.session_id = self._session_id
            raise

    def __exit__(self, *exc: object) -> None:
        self._lock.__exit__(*exc)  # type: ignore[arg-type]


__all__ = ["UNUSABLE_KINDS", "Durability", "SessionStore"]
