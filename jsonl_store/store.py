"""`SessionStore`: the one API behind the library and the command line.

The data's way is short and one-directional: arguments -> records (``_append``,
``_records``) -> lines (``_codec``) -> files (``_log``, ``_snapshots``, ``_meta``) through
the one file-system door (``_fs``), and back through `LogReader` (``_reader``). This
module checks arguments, turns ``OSError`` into `StorageError`, and says where the
damage it meets goes; the work is done in the modules named after each concern.
"""

from __future__ import annotations

import collections
import functools
import inspect
import logging
import os
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Concatenate, Literal, ParamSpec, Self, TypeVar

from . import (
    _append,
    _blob_writes,
    _blobs,
    _checkpoint,
    _codec,
    _compact,
    _depth,
    _dirs,
    _forks,
    _meta,
    _process,
    _recovery,
    _redact,
    _redactions,
    _resume,
    _session,
    _sources,
    _usage,
)
from ._dialect_neutral import Dialect
from ._dialects import stored_dialect
from ._errors import (
    CorruptSession,
    InvalidArgument,
    JsonlStoreError,
    ParentMismatch,
    SequenceConflict,
    SessionHasForks,
    SessionNotFound,
    StorageError,
    UnsafePath,
    UnsupportedFormat,
    storage_error,
)
from ._fs import OS_FS, FileSystem
from ._handles import SHARED_LISTINGS, Handles, OpenSession, now
from ._ids import new_uuid7
from ._log import Line, LogWriter
from ._meta import Origin, SessionMeta
from ._paths import FORK_NAME, LOG_NAME, is_session_id, validate_session_id
from ._problems import CORRUPT_KINDS, LEFT_FOR_READERS, UNUSABLE_KINDS, Forward, Problem, Reporter
from ._reader import LogReader
from ._records import ContextSnapshot, ForkPoint, Message, MessageTiming, ModelUsage, RawMessageRecord
from ._snapshots import Listings
from ._snapshots import clock as _snapshots_clock
from ._tool_batches import INTERRUPTED_NOTICE
from ._view import SessionSummary, SessionView

if TYPE_CHECKING:
    from . import _secrets

Durability = Literal["fsync", "none"]
#: ``SessionStore(redact=...)``: True (the built-in patterns), False, a list of extra
#: patterns (a regular expression, or a ``(kind, regular expression)`` pair), a
#: `Redactor`, or a function from a stored string to the string to store.
RedactSetting = bool | Sequence[Any] | _redact.Redactor | Callable[[str], str]

logger = logging.getLogger("jsonl_store")

_UNSET: Any = _meta._UNSET

P = ParamSpec("P")
R = TypeVar("R")


def _missing(session_id: str) -> SessionNotFound:
    return SessionNotFound(f"session {session_id!r} does not exist", session_id=session_id)


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


class SessionStore:
    """Sessions stored as plain files below ``root``; safe for many threads and processes.

    ``durability="fsync"`` (the default) returns from an append only once the record is
    on disk; ``"none"`` makes one ``write(2)`` per append, which survives a process crash
    but not a power loss. ``lock_timeout`` bounds every wait for another writer.
    ``clock`` (returning an aware ``datetime``) and ``ids`` (returning a lowercase UUID
    string) replace the wall clock and the UUIDv7s of what the store writes, so the same
    inputs give the same bytes (spec §9.12).
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        durability: Durability = "fsync",
        lock_timeout: float = 30.0,
        on_problem: Callable[[Problem], None] | None = None,
        fs: FileSystem | None = None,
        clock: Callable[[], datetime] | None = None,
        ids: Callable[[], str] | None = None,
        redact: RedactSetting = True,
        blob_threshold: int = _blobs.DEFAULT_THRESHOLD,
        max_record_bytes: int = _blobs.DEFAULT_MAX_RECORD_BYTES,
        on_redact: Callable[[_redactions.Redaction], None] | None = None,
    ) -> None:
        if durability not in ("fsync", "none"):
            raise InvalidArgument(f"durability must be 'fsync' or 'none', got {durability!r}")
        if not isinstance(lock_timeout, (int, float)) or not lock_timeout > 0:
            raise InvalidArgument(f"lock_timeout must be a positive number of seconds, got {lock_timeout!r}")
        if on_problem is not None and not callable(on_problem):
            raise InvalidArgument(f"on_problem must be callable, got {on_problem!r}")
        if on_redact is not None and not callable(on_redact):
            raise InvalidArgument(f"on_redact must be callable, got {on_redact!r}")
        #: Strings over ``blob_threshold`` UTF-8 bytes go to blob files; a record line is
        #: at most ``max_record_bytes`` (spec §5.1).
        self._sizes = _blob_writes.Sizes(blob_threshold, max_record_bytes)
        self.blob_threshold, self.max_record_bytes = self._sizes.threshold, self._sizes.max_record_bytes
        self.root = _checked_root(root)
        #: What every stored string passes through before it reaches a file (None: nothing).
        self._redactor = _redact.make(redact)
        self.durability: Durability = durability
        self.lock_timeout = float(lock_timeout)
        self._durable = durability == "fsync"
        self._fs: FileSystem = fs if fs is not None else OS_FS
        self._sizes.store = functools.partial(_blob_writes.store, self._fs, durable=self._durable)
        # A file system passed in gets a listing cache of its own (`SHARED_LISTINGS`
        # holds only for the real one).
        self._listings = SHARED_LISTINGS if fs is None else Listings()
        self._absences = _forks.SHARED_ABSENCES if fs is None else _forks.Absences()
        self._on_problem = on_problem
        self._on_redact = on_redact
        self._handles = Handles(
            self.root,
            self._fs,
            durable=self._durable,
            lock_timeout=self.lock_timeout,
            reporter=Forward(self._sink),
            clock=now if clock is None else _sources.checked_clock(clock),
            new_id=new_uuid7 if ids is None else _sources.checked_ids(ids),
        )
        _process.STORES.add(self)

    def _after_fork_in_child(self) -> None:
        # A store may be used in a forked child (docs/guides/agent-loop.md, "Concurrency"): its handle cache
        # gets fresh mutexes there; descriptors and locks are renewed by their own objects,
        # each tracked in `_process`.
        self._handles.forked()

    # -- lifecycle ----------------------------------------------------------------------

    @_storage_errors
    def close(self) -> None:
        """Close every open descriptor. The store can still be used; it reopens lazily.

        After a failed fsync, closing is how a session's writer is recovered.
        """
        self._handles.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SessionStore({self.root!r}, durability={self.durability!r})"

    @property
    def redactor(self) -> _redact.Redactor | None:
        """What this store redacts stored strings with (``redact=``), or None."""
        return self._redactor

    # -- where damage goes ----------------------------------------------------------------

    def _sink(self, problem: Problem) -> None:
        if self._on_problem is not None:
            self._on_problem(problem)
        else:
            logger.warning("%s", problem)

    def _tally(self) -> _redactions.Tally | None:
        """A counter of what this store's redactor replaces in one write (None: no redaction)."""
        return _redactions.Tally(self._redactor) if self._redactor is not None else None

    def _redacted(
        self, tally: _redactions.Tally | None, session_id: str, operation: str, sequences: Iterable[int] = ()
    ) -> None:
        """Say what a write replaced (spec §18.1): to ``on_redact``, else as a warning in the log."""
        notice = tally.notice(session_id, operation, tuple(s for s in sequences if s)) if tally else None
        if notice is None:
            return
        if self._on_redact is not None:
            self._on_redact(notice)
            return
        try:
            logger.warning("%s", notice)
        except RecursionError:
            # The write is done and must not be reported as failed: an append accepted from
            # a stack with little room left (spec §4's nesting rule) logs from a thread with
            # room instead. The warning may have reached a handler once already.
            _depth.in_deep_stack(logger.warning, "%s", notice)

    def _report(self, problems: Iterable[Problem]) -> None:
        for problem in problems:
            self._sink(problem)

    def _read_meta(self, session_id: str, directory: str) -> SessionMeta | None:
        """The session's metadata; damage is reported at once."""
        found = Reporter()
        meta = _session.read_meta(self._fs, session_id, directory, found)
        self._report(found.problems)
        return meta

    def _links(self, session_id: str, directory: str, found: Reporter) -> list[_forks.Link]:
        """The sessions this one's history is read from (spec §8.10): itself alone unless a fork.

        A fork file that cannot be read, a source that is no session of this root, or a
        chain that loops or is too deep, is reported (``bad-fork``) and the session is
        read alone, from its own log. So are own records at or before the branch: they
        are read, after the sources' records before them.
        """
        path = os.path.join(directory, FORK_NAME)
        try:
            point = _forks.read(self._fs, directory)
            if point is None:
                return [_forks.Link(session_id, 0, None)]
            first = _session.first_sequence(self._fs, directory)
            links = _forks.chain(self._fs, self._handles.directory, session_id, first)
        except _forks.DamagedFork as exc:
            found.report(Problem(path, "bad-fork", str(exc), LEFT_FOR_READERS))
            return [_forks.Link(session_id, 0, None)]
        if links[-1].base < point.sequence:
            reason = _forks.early_records(first, point)
            found.report(Problem(path, "bad-fork", reason, LEFT_FOR_READERS))
        return links

    def _fork_history(
        self, links: list[_forks.Link], found: Reporter
    ) -> tuple[ContextSnapshot | None, list[RawMessageRecord]]:
        """A fork's snapshot and the records after it: its own newest snapshot, else its
        sources' newest one before the branch, else none (spec §8.10)."""
        fs, directory_of = self._fs, self._handles.directory
        start = self._fork_start(links, found)
        if start is not None:
            index, snapshot = start
            link = links[index]
            tail = list(
                _forks.link_records(
                    fs, directory_of(link.session_id), link, found,
                    start=snapshot.tail_offset, after=snapshot.compacted_through_sequence,
                    listings=self._listings,
                )
            )  # fmt: skip
            for later in links[index + 1 :]:
                tail.extend(_forks.link_records(fs, directory_of(later.session_id), later, found))
            return snapshot, tail
        tail = []
        for link in links:
            tail.extend(_forks.link_records(fs, directory_of(link.session_id), link, found))
        return None, tail

    def _fork_start(self, links: list[_forks.Link], found: Reporter) -> tuple[int, ContextSnapshot] | None:
        """The newest snapshot a history made of ``links`` starts at, and its link's index (spec §8.10)."""
        for index in range(len(links) - 1, -1, -1):
            link = links[index]
            with LogReader(
                self._fs, link.session_id, self._handles.directory(link.session_id), found,
                listings=self._listings,
            ) as log:  # fmt: skip
                snapshot = _forks.latest_snapshot_upto(log, link.upto)
            if snapshot is not None:
                return index, snapshot
        return None

    def _fork_point(self, session_id: str, directory: str) -> ForkPoint | None:
        """The session's fork point; None for a session that is not a fork (or does not exist)."""
        if not self._handles.check_dir(session_id, directory):
            return None
        try:
            return _forks.read(self._fs, directory)
        except _forks.DamagedFork as exc:
            raise UnsupportedFormat(
                f"session {session_id!r}: {FORK_NAME} cannot be read ({exc})", session_id=session_id
            ) from None

    def _fork_prefix(self, session_id: str, directory: str) -> _checkpoint.Prefix:
        """What a session's history holds before its own log, as `checkpoint` counts it:
        nothing for a session that is not a fork.

        Read when the checkpoint cache is built (the first save, or after a new snapshot
        or log); its origin is looked at again by the saves of a fork without a snapshot
        of its own (or of a session with no record yet), never by other saves.
        """

        def origin() -> object:
            return self._fork_origin(self._links(session_id, directory, Reporter()))

        def read() -> _checkpoint.Before:
            ids: dict[Any, int] = {}
            found = Reporter()
            links = self._links(session_id, directory, found)
            point = links[-2].check if len(links) > 1 else None
            if point is None:
                # not a fork (or one whose fork.json the next append refuses)
                return _checkpoint.Before(ids, 0, "", 0, None)
            key = self._fork_origin(links)
            snapshot, tail = self._fork_history(links[:-1], found)
            if snapshot is not None:
                ids[_checkpoint.message_id(snapshot.compacted_message)] = 0
            for record in tail:
                ids.setdefault(_checkpoint.message_id(record.message), record.sequence)
            version = snapshot.version if snapshot is not None else 0
            return _checkpoint.Before(ids, links[-1].base, point.record_id, version, key)

        return _checkpoint.Prefix(origin, read)

    def _fork_origin(self, links: list[_forks.Link]) -> object:
        """What a fork's history before its own log is read from: its chain and the snapshot it starts at."""
        if len(links) == 1:
            return None
        start = self._fork_start(links[:-1], Reporter())
        snapshot = start[1] if start is not None else None
        return (
            tuple((link.session_id, link.base, link.upto, link.check) for link in links),
            None if snapshot is None else (snapshot.session_id, snapshot.version, snapshot.id),
        )

    def _readable(self, session_id: str) -> str:
        """The session's directory, once the session is known to be one this version reads."""
        directory = self._handles.directory(session_id)
        self._handles.check_dir(session_id, directory)
        self._read_meta(session_id, directory)
        return directory

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
        expected_last_sequence: int | None = None,
        created_at: datetime | None = None,
    ) -> int:
        """Append one immutable record; return its sequence (0 when ``persist`` is False).

        The first append creates the session, and ``title``, ``agent_name``,
        ``parent_session_id`` and ``session_type`` initialise its metadata (they are not
        copied into records, and are ignored once the session exists, except that a
        different parent raises `ParentMismatch`). Raises `InvalidMessage` /
        `UnsupportedValue` for a message that cannot be stored unchanged; nothing is
        written then. With ``expected_last_sequence``, the record is written only if the
        log's last sequence is exactly that (0: no record yet), checked under the append
        lock; otherwise `SequenceConflict`, and nothing is written. ``created_at`` (a
        timezone-aware datetime) is the record's time instead of now: when the message was
        made elsewhere (an imported transcript's timestamp).
        """
        try:
            if (
                request_id is None
                and timing is None
                and parent_session_id is None
                and title is None
                and agent_name is None
                and type(session_type) is int
                and not session_type
                and metadata is None
                and tags is None
                and expected_last_sequence is None
                and created_at is None
            ):
                return self._append_one(session_id, message, usage)
            return self._append(
                session_id,
                "append",
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
                expected_last_sequence=expected_last_sequence,
                created_at=created_at,
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
        expected_last_sequence: int | None = None,
        created_at: datetime | None = None,
    ) -> list[int]:
        """Append several records all or nothing: one write, at most one fsync.

        Returns one sequence per message (0 for a message with ``persist=False``).
        ``timing`` and ``usage`` are one value for the whole batch or one per message;
        a single ``usage`` belongs to the batch's only assistant message.
        ``expected_last_sequence`` makes the batch conditional, and ``created_at`` sets
        the records' time, as in `append`.
        """
        if isinstance(messages, (dict, str, bytes)) or not isinstance(messages, Sequence):
            raise InvalidArgument("append_many takes a sequence of messages")
        timings = _append.per_message(timing, MessageTiming, len(messages), "timing")
        usages = _append.usages_for(messages, usage)
        try:
            return self._append(
                session_id,
                "append_many",
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
                expected_last_sequence=expected_last_sequence,
                created_at=created_at,
            )
        except JsonlStoreError:
            raise
        except OSError as exc:  # as in `append`
            raise _failure(self, exc, "append_many", session_id) from exc

    def _append_one(self, session_id: str, message: Message, usage: ModelUsage | None) -> int:
        """`_append` of a runner's plain ``append(session_id, message[, usage=...])``, flat."""
        handles = self._handles
        session = handles.session(session_id)
        tally = self._tally()
        one = _append.encode_one(session, message, usage, self._sizes, handles.clock, handles.new_id, tally)
        if one is None:
            return 0  # not to be persisted
        self._write(session, handles.writer, one.build)
        if tally is not None and tally.kinds:
            self._redacted(tally, session_id, "append", (one.sequence,))
        return one.sequence

    def _append(
        self, session_id: str, operation: str, messages: Sequence[Message], **options: Any
    ) -> list[int]:
        handles = self._handles
        session = handles.session(session_id)
        tally = self._tally()
        # Everything that can fail on bad input is checked before any file is touched.
        batch = _append.encode(
            session,
            messages,
            self._sizes,
            **options,
            clock=handles.clock,
            new_id=handles.new_id,
            redactor=tally,
        )
        if batch is None:
            return [0] * len(messages)  # nothing to persist
        if batch.expected:
            expected = batch.expected
            _append.refuse_unstarted(session, expected)
            # Deleted between that look and the write: the retry must not make it again.
            self._write(
                session, handles.writer, batch.build, lambda: _append.refuse_unstarted(session, expected)
            )
        else:
            self._write(session, handles.writer, batch.build)
        if tally is not None:
            made = _take_made_redacted(session)
            if made:
                tally.add(made)
            if tally.kinds:
                self._redacted(tally, session_id, operation, batch.sequences)
        return batch.sequences

    @staticmethod
    def _write(
        session: OpenSession,
        writer_of: Callable[[OpenSession], LogWriter],
        build: Callable[[Line | None], tuple[bytes, Line]],
        before_retry: Callable[[], None] | None = None,
    ) -> None:
        """``writer_of(session).append(build)``; when the session directory vanished under
        us (another process deleted it), the session is made again and the write retried,
        unless ``before_retry`` raises first. A delete renames the whole directory away
        (spec §9.5), so a process deleting the session again and again can take it from
        under each retry: the write is tried `_WRITE_ATTEMPTS` times in all."""
        for attempt in range(_WRITE_ATTEMPTS):
            writer = writer_of(session)
            try:
                writer.append(build)
                return
            except FileNotFoundError:
                if attempt == _WRITE_ATTEMPTS - 1:
                    raise
                session.prepared = False
                writer.close()
                if before_retry is not None:
                    before_retry()

    # -- reading ------------------------------------------------------------------------

    @_storage_errors
    def load(self, session_id: str, *, strict: bool = False) -> SessionView:
        """The latest valid snapshot plus the raw-log records after its boundary.

        Reads only the tail, whatever the log's length. An unknown session gives an empty
        view. Damage met on the way is in ``view.problems`` (and goes to ``on_problem``);
        with ``strict=True`` it raises `CorruptSession` instead: damage in the middle of
        the log, a snapshot or metadata file that cannot be read. A torn last line (what a
        crash leaves) is never damage.
        """
        if type(strict) is not bool:
            raise InvalidArgument(f"strict must be a bool, got {strict!r}")
        directory = self._handles.directory(session_id)
        self._handles.check_dir(session_id, directory)
        found = Reporter()
        meta = _session.read_meta(self._fs, session_id, directory, found)
        links = self._links(session_id, directory, found)
        if len(links) == 1:
            with LogReader(self._fs, session_id, directory, found, listings=self._listings) as log:
                snapshot = log.latest_snapshot()
                start, after = (
                    (snapshot.tail_offset, snapshot.compacted_through_sequence) if snapshot else (0, 0)
                )
                tail = [record for _, record in log.records(start, after)]
        else:
            snapshot, tail = self._fork_history(links, found)
        self._report(found.problems)
        if strict:
            corrupt = [p for p in found.problems if p.kind in CORRUPT_KINDS]
            if corrupt:
                raise CorruptSession(
                    f"session {session_id!r} is damaged: {corrupt[0]}"
                    + (f" (and {len(corrupt) - 1} more)" if len(corrupt) > 1 else ""),
                    problems=corrupt,
                    session_id=session_id,
                )
        view = SessionView(
            session_id=session_id,
            parent_session_id=meta.parent_session_id if meta else None,
            session_type=meta.session_type if meta else 0,
            title=meta.title if meta else None,
            agent_name=meta.agent_name if meta else None,
            snapshot=snapshot,
            raw_tail=tail,
            problems=found.problems,
            dialect=stored_dialect(meta.metadata) if meta else "neutral",
        )
        self._handles.saw(session_id, view.last_sequence, _last_record_id(view))
        return view

    @_storage_errors
    def resume(
        self, session_id: str, *, notice: str = INTERRUPTED_NOTICE, dialect: str | Dialect | None = None
    ) -> SessionView:
        """Load the session after closing its interrupted tool batch in the log, once.

        When the last tool batch has calls without results (the process stopped inside
        a tool), one error result per open call (``is_error``, ``notice`` as content,
        an id derived from the call: spec §9.9) is appended in one batch, only if the log
        still ends where it was loaded; then the session is loaded again. Idempotent, and
        safe with several processes: concurrent resumes store the closing results once.
        ``dialect`` reads the stored messages' tool calls (see `repair_context`); None,
        the default, is the session's own (`SessionView.dialect`). The results it makes
        must be messages the store holds (dicts with a ``role``).
        """
        if not isinstance(notice, str) or not notice:
            raise InvalidArgument(f"notice must be a non-empty str, got {notice!r}")
        while True:
            view = self.load(session_id)
            closing = _resume.closing_results(
                view.context, notice, view.dialect if dialect is None else dialect
            )
            if not closing:
                return view
            try:
                self.append_many(session_id, closing, expected_last_sequence=view.last_sequence)
            except SequenceConflict:
                continue  # another writer appended (maybe these very results): look again

    @_storage_errors
    def records(
        self, session_id: str, *, after: int = 0, containing: bytes | None = None
    ) -> Iterator[RawMessageRecord]:
        """Stream the raw log's records with a sequence above ``after``, in constant memory.

        When a snapshot's boundary is at or before ``after``, reading starts at that
        snapshot's tail offset instead of the beginning of the file. With ``containing``,
        only the records whose line in the log holds those bytes are decoded and given
        (a prefilter: the caller checks the decoded record; `jsonl_store.search` uses it);
        the records a fork reads from its sources are given whole (the branch record's id
        is checked on the way).
        """
        if type(after) is not int or after < 0:
            raise InvalidArgument(f"after must be a non-negative int, got {after!r}")
        if containing is not None and (not isinstance(containing, bytes) or not containing):
            raise InvalidArgument(f"containing must be non-empty bytes or None, got {containing!r}")
        # Checked now, not at the first next(): a session this version cannot read fails
        # where records() is called.
        directory = self._readable(session_id)
        return self._records(session_id, directory, after, containing)

    def _records(
        self, session_id: str, directory: str, after: int, containing: bytes | None = None
    ) -> Iterator[RawMessageRecord]:
        # A generator runs after records() returned, outside `_storage_errors`: it turns
        # an OSError met while iterating into a StorageError itself.
        found = Reporter()
        try:
            links = self._links(session_id, directory, found)
            for link in links[:-1]:  # a fork's history: its sources' records up to the branch
                yield from _forks.link_records(
                    self._fs, self._handles.directory(link.session_id), link, found, after=after
                )
            base = links[-1].base
            with LogReader(self._fs, session_id, directory, found, listings=self._listings) as log:
                start, floor = 0, base
                if after > base:
                    snapshot = log.latest_snapshot(at_most=after)
                    if snapshot is not None:
                        start, floor = snapshot.tail_offset, snapshot.compacted_through_sequence
                for _, record in log.records(start, floor, containing):
                    if record.sequence > after:
                        yield record
        except JsonlStoreError:
            raise
        except OSError as exc:
            raise _failure(self, exc, "records", session_id) from exc
        finally:
            # Snapshots skipped on the way are `load`'s to report; the records' damage is ours.
            self._report(p for p in found.problems if p.kind != "bad-snapshot")

    @_storage_errors
    def tail(self, session_id: str, n: int) -> list[RawMessageRecord]:
        """The last ``n`` raw-log records, oldest first, read backwards from the log's end.

        Costs O(n), whatever the log's length; snapshots do not matter (these are records,
        as `records` gives them). An unknown session gives ``[]``.
        """
        if type(n) is not int or n < 0:
            raise InvalidArgument(f"n must be a non-negative int, got {n!r}")
        directory = self._readable(session_id)
        found = Reporter()
        with LogReader(self._fs, session_id, directory, found) as log:
            records = log.last_records(n)
        links = self._links(session_id, directory, found) if len(records) < n else []
        if len(links) > 1:
            # A fork's own log is short of n: the rest comes from the end of its history
            # before the branch (read forwards: O(that history), spec §8.10).
            missing = n - len(records)
            before: collections.deque[RawMessageRecord] = collections.deque(maxlen=missing)
            for link in links[:-1]:
                before.extend(
                    _forks.link_records(self._fs, self._handles.directory(link.session_id), link, found)
                )
            records = [*before, *records]
        self._report(found.problems)
        return records

    @_storage_errors
    def get_session(self, session_id: str) -> SessionSummary | None:
        """The session's summary, or None when it does not exist."""
        directory = self._handles.directory(session_id)
        if not self._handles.check_dir(session_id, directory):
            return None
        return self._summary(session_id, directory)

    def _summary(
        self,
        session_id: str,
        directory: str,
        meta: SessionMeta | None = _UNSET,
        read_fork: Callable[[], ForkPoint | None] | None = None,
    ) -> SessionSummary | None:
        """The session's summary; ``meta`` when the caller has just read or written it."""
        if meta is _UNSET:
            meta = _session.read_meta(self._fs, session_id, directory, Reporter())
        return _session.summary(self._fs, session_id, directory, meta, read_fork)

    @_storage_errors
    def list_sessions(self, *, parent_session_id: str | None = None) -> list[SessionSummary]:
        """Every session (or the children of ``parent_session_id``), newest activity first."""
        if parent_session_id is not None:
            validate_session_id(parent_session_id)
        found = []
        now = _snapshots_clock()  # before the listing's lstats (`_forks.Absences`)
        absences = self._absences
        for name in self._session_candidates():
            directory = os.path.join(self.root, name)
            try:
                # One lstat per entry, right before its summary is read: a directory is
                # read; a regular file is no session; anything else is checked again, and a
                # symlink or a FIFO in a session's place raises UnsafePath.
                try:
                    st = self._fs.lstat(directory)
                except FileNotFoundError:
                    continue  # deleted since the listing
                if stat.S_ISREG(st.st_mode):
                    continue
                if not stat.S_ISDIR(st.st_mode) and not self._handles.check_dir(name, directory):
                    continue
                summary = self._summary(
                    name, directory, read_fork=functools.partial(absences.read, self._fs, directory, st, now)
                )
            except UnsafePath as exc:
                # One broken session must not hide the others: skip it, and say why.
                self._sink(_recovery.unsafe_problem(exc))
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

    @_storage_errors
    def session_ids(self) -> list[str]:
        """The name of every entry below the root that may be a session, sorted: what
        ``verify()`` goes through, also those `list_sessions` leaves out (a session of a
        newer format, one with an unsafe path), so ``verify(id)`` over them is ``verify()``."""
        return self._session_names()

    def _session_names(self) -> list[str]:
        """The root's entries that may be sessions: session ids that are no regular files.

        A regular file (a README next to the sessions) is not a session and is skipped
        silently; a symlink or a FIFO with a session's name is a session gone wrong, which
        `list_sessions` and `verify` report.
        """
        found = []
        for name in self._session_candidates():
            try:
                mode = self._fs.lstat(os.path.join(self.root, name)).st_mode
            except FileNotFoundError:
                continue
            if not stat.S_ISREG(mode):
                found.append(name)
        return found

    def _session_candidates(self) -> list[str]:
        """The root's entries named as sessions are, sorted (no file system call per entry)."""
        try:
            names = self._fs.listdir(self.root)
        except FileNotFoundError:
            return []
        return [name for name in sorted(names) if is_session_id(name)]

    @_storage_errors
    def create_session(
        self,
        session_id: str,
        *,
        title: str | None = None,
        agent_name: str | None = None,
        parent_session_id: str | None = None,
        session_type: int = 0,
        metadata: Mapping[str, Any] | None = None,
        created_at: datetime | None = None,
    ) -> SessionSummary:
        """Make an empty session (its directory and metadata) and return its summary.

        ``created_at`` (a timezone-aware datetime) is the session's ``created_at`` instead of
        now, for a session made elsewhere (an imported transcript's first record's time).
        Calling it for a session that exists changes nothing and returns its summary; a
        different ``parent_session_id`` than the session has raises `ParentMismatch`.
        """
        handles = self._handles
        directory = handles.directory(session_id)
        _append.check_session_options(session_id, None, parent_session_id, session_type)
        _meta.check_title(title)
        _meta.check_agent_name(agent_name)
        if metadata is not None and not isinstance(metadata, Mapping):
            raise InvalidArgument(f"metadata must be a mapping, got {type(metadata).__name__}")
        began = self._handles.clock() if created_at is None else _append.record_time(created_at)
        initial = dict(metadata or {})
        _codec.encode_json(initial, "metadata")
        redactor = self._tally()
        if redactor is not None:
            initial = redactor.redact_value(initial)
            title = redactor.redact(title) if title is not None else None
            agent_name = redactor.redact(agent_name) if agent_name is not None else None
        session = handles.session(session_id)
        session.init = (began, parent_session_id, session_type, agent_name, title)
        session.init_redacted = {}
        session.init_metadata = initial
        handles.prepared(session, again=True)
        self._redacted(redactor, session_id, "create_session")
        if parent_session_id is not None and session.parent != parent_session_id:
            raise ParentMismatch(
                f"session {session_id!r} has parent {session.parent!r}; a parent never changes "
                f"(got {parent_session_id!r})",
                session_id=session_id,
            )
        summary = self._summary(session_id, directory)
        if summary is None:  # deleted again at once by another process
            raise SessionNotFound(f"session {session_id!r} does not exist", session_id=session_id)
        return summary

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
        (0 for none, as in ``load(...).snapshot``; for a fork that is its own newest
        snapshot, else the source's it starts at). Raises `SnapshotConflict` when another
        writer created a newer snapshot first, and `InvalidArgument` when the boundary does
        not advance past the previous snapshot's or passes the last sequence.
        """
        directory = self._handles.directory(session_id)
        _compact.check_arguments(compacted_message, compacted_through_sequence, expected_version)
        self._require_writable(session_id, directory)
        point = self._fork_point(session_id, directory)
        if point is not None and compacted_through_sequence <= point.sequence:
            # A fork's boundary must be one of its own records (spec §8.10): the records
            # before its branch are its source's, and a snapshot never reaches into them.
            raise InvalidArgument(
                f"sequence {compacted_through_sequence} is before session {session_id!r}'s own records "
                f"(it is a fork of its source at #{point.sequence}); compact a later record",
                session_id=session_id,
            )
        tally = self._tally()
        inherited = self._inherited_version(session_id, directory) if point is not None else 0
        with self._handles.lock(session_id):
            snapshot = _compact.create(
                self._handles,
                session_id,
                directory,
                compacted_message,
                compacted_through_sequence,
                (expected_version, inherited),
                tally,
            )
        self._redacted(tally, session_id, "snapshot")
        return snapshot

    def _inherited_version(self, session_id: str, directory: str) -> int:
        """The version of the source snapshot a fork's context starts at (0: none).

        Until a fork has a snapshot of its own, its context starts at its source's (spec
        §8.10), and that is the version `load` hands the caller to pass back.
        """
        links = self._links(session_id, directory, Reporter())
        start = self._fork_start(links[:-1], Reporter())
        return start[1].version if start is not None else 0

    def _require_writable(self, session_id: str, directory: str) -> SessionMeta | None:
        """Refuse to change a session this version cannot read or must not write."""
        if not self._handles.check_dir(session_id, directory):
            raise SessionNotFound(f"session {session_id!r} does not exist", session_id=session_id)
        meta = self._read_meta(session_id, directory)
        if meta is not None:
            _meta.check_writable(meta, session_id)
        return meta

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
        agent_name: str | None = _UNSET,
    ) -> SessionSummary:
        """Merge only the named fields into the session's metadata, under its lock.

        A UI rename and a runtime metadata update never clobber each other; with
        ``origin="runtime"`` a field or metadata key a user set is left alone.
        ``agent_name`` changes like ``title`` (a user's choice wins over the runtime's).
        ``expected_version`` makes the update a compare-and-swap (`MetadataConflict`).
        Raises `SessionNotFound` for a session that was never written.
        """
        directory = self._handles.directory(session_id)
        update = _meta.Update.checked(
            title=title, pinned=pinned, metadata=metadata, remove_metadata=remove_metadata,
            expected_version=expected_version, origin=origin, agent_name=agent_name,
        )  # fmt: skip
        tally = self._tally()
        if tally is not None:
            update.redact(tally)
        if not self._handles.check_dir(session_id, directory):
            raise _missing(session_id)
        with self._handles.lock(session_id):
            meta = self._read_meta(session_id, directory)
            if meta is None:
                meta = self._unwritten_meta(session_id, directory)
            _meta.check_writable(meta, session_id)
            if update.apply(meta, session_id):
                _meta.write(self._fs, directory, meta, durable=self._durable)
                self._redacted(tally, session_id, "update_session")
        # The log's end as this store's writer left it, when an fstat and an lstat show the
        # file at the log's path unchanged since (`LogWriter.known_last`): no reopening and
        # reading of it, which after a durable write's fsyncs cost more than the rest.
        summary = _session.summary(
            self._fs, session_id, directory, meta, known_end=self._handles.known_log_end(session_id)
        )
        assert summary is not None
        return summary

    def _unwritten_meta(self, session_id: str, directory: str) -> SessionMeta:
        """The metadata to give a session that has none (readable) yet, under its lock.

        Such a session exists if its log does, or its fork file: a fork whose making
        stopped before its metadata is one `load`, `get_session` and `list_sessions` show
        (spec §9.13), so an update gives it its metadata as its next append would.
        Raises `SessionNotFound` otherwise.
        """
        began = _session.began_at(self._fs, directory)
        if began is None and not _dirs.exists(self._fs, os.path.join(directory, LOG_NAME)):
            raise _missing(session_id)
        return SessionMeta(created_at=began or self._handles.clock())

    # -- token usage --------------------------------------------------------------------

    @_storage_errors
    def record_usage(self, session_id: str, record: ModelUsage | Mapping[str, Any]) -> None:
        """Append one model call's token counts to the session's token-usage log.

        ``record`` is a `ModelUsage` or a mapping with the same keys plus optional
        ``model``, ``request_id`` and any further JSON keys (kept under ``extra``).
        """
        session = self._handles.session(session_id)
        line = _usage.encode(record, self._handles.clock)
        tally = self._tally()
        if tally is not None:
            line = _usage.redact(line, tally)
        build = _usage.builder(line)
        # If the session has to be made (anew) for this record, it starts with defaults,
        # not with what an earlier append of this store would have given it.
        session.init = None
        self._write(session, self._handles.usage_writer, build)
        self._redacted(tally, session_id, "record_usage")

    @_storage_errors
    def usage(self, session_id: str) -> Iterator[dict[str, Any]]:
        """Every token-usage record of the session, oldest first, as dicts."""
        return self._usage(session_id, self._readable(session_id))

    def _usage(self, session_id: str, directory: str) -> Iterator[dict[str, Any]]:
        # As in `_records`: OSErrors met while iterating become StorageErrors here.
        found = Reporter()
        try:
            yield from _usage.read(self._fs, directory, found)
        except JsonlStoreError:
            raise
        except OSError as exc:
            raise _failure(self, exc, "usage", session_id) from exc
        finally:
            self._report(found.problems)

    @_storage_errors
    def usage_totals(self, session_id: str) -> ModelUsage:
        """The tokens of every model call of the session, each call counted once.

        A call counts once whether it was recorded with `record_usage`, as ``usage=`` of
        an assistant record, or both (the same ``request_id``): see `model_calls`.
        Reads the whole raw log and the usage log.
        """
        return _usage.total(self.model_calls(session_id))

    @_storage_errors
    def model_calls(self, session_id: str, *, inherited: bool = True) -> list[dict[str, Any]]:
        """Every model call of the session once, with its tokens and where it was recorded.

        The usage log's lines come first, then the usage given with assistant records,
        except a record whose ``request_id`` the usage log also names (one call recorded
        twice). Each is a dict of `ModelUsage`'s counts plus ``source`` (``"usage log"``
        or ``"record <sequence>"``), ``recorded_at``, ``model`` and ``request_id``.
        With ``inherited=False``, a fork's history read from its source is left out (those
        calls are the source's) and no message is decoded: what `usage_report` counts.
        """
        if inherited:
            return _usage.calls(self.records(session_id), self.usage(session_id))
        directory = self._readable(session_id)
        found = Reporter()
        try:
            records = list(_usage.record_calls(self._fs, session_id, directory, found))
        finally:
            self._report(p for p in found.problems if p.kind != "bad-snapshot")
        return _usage.own_calls(records, self.usage(session_id))

    # -- whole-state saves ----------------------------------------------------------------

    @_storage_errors
    def checkpoint(self, /, session_id: str, messages: Sequence[Message], **append_options: Any) -> list[int]:
        """Save a runner's full message list by appending only what is not stored yet.

        Messages are matched by ``id`` (stored messages are immutable: give an edited message
        a new id). As spec §10 says, a stored message is never
        removed or reordered by a save, even when ``messages`` lacks it (a stale list, or
        records another writer appended): the new messages go after the stored ones. A list
        that rewrites history (a caller's compaction, i.e. a new `CompactedMessage`; a new
        message placed before stored ones; stored messages in another order) is stored as
        a snapshot plus a new tail, and the raw log is never rewritten; stored messages the
        caller has not seen (newer than its list and than what this store last loaded or
        saved for it) are kept after it. Returns the sequences appended. An extending save
        reads and writes only the new bytes, and looks only at the messages after the list
        this store saved last (O(new messages)); the first save of a session by a store
        reads its tail once, as `load` does, and a rewrite costs O(tail).
        """
        handles = self._handles
        directory = handles.directory(session_id)
        # Checked before the session is made: nothing may be created for a call that fails.
        _checkpoint.check_messages(messages)
        unknown = set(append_options) - _APPEND_OPTIONS
        if unknown:
            raise InvalidArgument(f"checkpoint got unknown append options: {', '.join(sorted(unknown))}")
        session = handles.session(session_id)
        if not _dirs.exists(self._fs, os.path.join(directory, LOG_NAME)):
            # The save would make the session: the append it ends with is checked first (as
            # an append checks before touching a file), so a save that fails on bad options
            # (a usage on a user message, a session_type that is no int) makes nothing.
            self._check_first_save(session, messages, append_options)
        # A session this save makes (new, or anew after another store deleted it) gets
        # this call's labels, as an append's would (spec §9.8): the save makes it before
        # its append, so neither defaults nor an earlier append's labels may stand in.
        # What the redactor replaces in them is counted once, by the append that follows,
        # and only if this save made the session (`OpenSession.made_redacted`).
        _append.set_init(
            session, handles.clock(), append_options.get("parent_session_id"),
            append_options.get("session_type", 0), append_options.get("agent_name"),
            append_options.get("title"), self._tally(),
        )  # fmt: skip
        return _checkpoint.save(
            self,
            session,
            messages,
            append_options,
            reading=(self._fs, directory, self._listings, self._fork_prefix(session_id, directory)),
            lock=lambda: handles.lock_made(session),
            make=lambda: handles.writer(session),  # creates the session (and its lock file) if new
        )

    def _check_first_save(
        self, session: Any, messages: Sequence[Message], append_options: dict[str, Any]
    ) -> None:
        """Encode (and drop) the append a save into a new session makes: every message it
        keeps, with its options, so bad input raises before the session is made."""
        _checkpoint.ids_of(messages, 0)  # refuses what is no message, as the save would
        options = dict(append_options)
        kept = [m for m in messages if _checkpoint.persisted(m)]
        timings = _append.per_message(options.pop("timing", None), MessageTiming, len(kept), "timing")
        usages = _append.usages_for(kept, options.pop("usage", None))
        _append.encode(
            session,
            kept,
            self._sizes,
            **{**_REWRITE_DEFAULTS, **options},
            timings=timings,
            usages=usages,
            clock=self._handles.clock,
            new_id=self._handles.new_id,
        )

    def _rewrite_context(
        self,
        session_id: str,
        batch: list[Message],
        compacted: Message,
        expected_version: int,
        append_options: dict[str, Any],
    ) -> list[int]:
        """`checkpoint`'s rewrite, under the session lock: ``batch`` (a marker record, then the
        new tail) in one write, made right after the snapshot through the marker (spec §10)."""
        handles = self._handles
        session = handles.session(session_id)
        directory = handles.directory(session_id)
        options = dict(append_options)
        tail = batch[1:]
        timings = [
            None,
            *_append.per_message(options.pop("timing", None), MessageTiming, len(tail), "timing"),
        ]
        usages = [None, *_append.usages_for(tail, options.pop("usage", None))]
        tally = self._tally()
        encoded = _append.encode(
            session, batch, self._sizes, timings=timings, usages=usages,
            **{**_REWRITE_DEFAULTS, **options},
            clock=handles.clock, new_id=handles.new_id, redactor=tally,
        )  # fmt: skip
        assert encoded is not None  # the marker is always stored
        inherited = (
            self._inherited_version(session_id, directory) if self._fork_point(session_id, directory) else 0
        )
        make = _compact.before_batch(
            handles, session_id, directory, compacted, (expected_version, inherited), tally
        )

        def build(last: Line | None) -> tuple[bytes, Line]:
            data, line = encoded.build(last)
            # Under the append lock, right before the write: the batch goes where the good
            # part ends now (the writer has cut any damaged tail), and no one can write first.
            make(last.end if last is not None else 0, data[: data.index(b"\n") + 1])
            return data, line

        self._write(session, handles.writer, build)
        self._redacted(tally, session_id, "checkpoint", encoded.sequences)
        return encoded.sequences

    # -- forks ----------------------------------------------------------------------------

    @_storage_errors
    def fork(self, session_id: str, at_sequence: int, new_session_id: str | None = None) -> str:
        """A new session whose history is ``session_id``'s up to ``at_sequence``; its id.

        Nothing is copied: the fork's ``fork.json`` names the source, the sequence and that
        record's id, and readers read the source's records up to it, then the fork's own
        (spec §8.10), which start at ``at_sequence + 1``. Forks of forks work the same way.
        ``new_session_id`` defaults to a new UUID. Raises `SessionNotFound` for an unknown
        source, `InvalidArgument` when ``at_sequence`` is not a record of its history,
        ``new_session_id`` is taken, or the source's history cannot be followed: a chain
        of forks longer than readers follow (64 sessions, the new fork and every source
        before it counted) or a source whose ``fork.json`` cannot be read.
        The source may go on appending: the fork keeps the history as it was at the branch.
        """
        validate_session_id(session_id)
        if type(at_sequence) is not int or at_sequence < 1:
            raise InvalidArgument(f"at_sequence must be a positive int, got {at_sequence!r}")
        handles = self._handles
        target = handles.new_id() if new_session_id is None else new_session_id
        validate_session_id(target)
        if target == session_id:
            raise InvalidArgument(f"a session cannot be a fork of itself ({session_id!r})")
        source_dir = self._readable(session_id)
        source = self._summary(session_id, source_dir)
        if source is None:
            raise SessionNotFound(f"session {session_id!r} does not exist", session_id=session_id)
        self._check_fork_depth(session_id)
        target_dir = handles.directory(target)
        # Under the source's lock: a delete of the source (which holds it too) either sees
        # this fork or has already removed what it would branch from.
        with handles.lock(session_id):
            record = next(iter(self.records(session_id, after=at_sequence - 1)), None)
            if record is None or record.sequence != at_sequence:
                raise InvalidArgument(
                    f"sequence {at_sequence} is not a record of session {session_id!r}", session_id=session_id
                )
            point = ForkPoint(
                session_id=session_id, sequence=at_sequence, record_id=record.id, created_at=handles.clock()
            )
            # The fork's records are the source's shape: its readers (load's repair, show,
            # search, export) must read them in the source's dialect (spec §5.2).
            dialect = source.metadata.get("dialect")
            self._make_fork(
                target, target_dir, point, {"dialect": dialect} if isinstance(dialect, str) else {}
            )
        return target

    def _check_fork_depth(self, session_id: str) -> None:
        """Refuse a fork of ``session_id`` that readers would not follow to its start.

        Readers follow at most `_forks.MAX_DEPTH` sessions and read a longer chain as the
        fork alone (spec §8.10): a fork one past it would silently lose its whole history.
        A source whose own chain cannot be followed would give the fork nothing of it.
        """
        try:
            sessions = _forks.depth(self._fs, self._handles.directory, session_id)
        except _forks.DamagedFork as exc:
            raise InvalidArgument(
                f"session {session_id!r} cannot be forked: its history cannot be read ({exc})",
                session_id=session_id,
            ) from None
        if sessions >= _forks.MAX_DEPTH:
            raise InvalidArgument(
                f"session {session_id!r} ends a chain of forks of {sessions} sessions; a fork of it would be "
                f"session {sessions + 1} of the chain, and readers follow {_forks.MAX_DEPTH}",
                session_id=session_id,
            )

    def _make_fork(self, target: str, directory: str, point: ForkPoint, metadata: dict[str, Any]) -> None:
        """The fork's directory, its ``fork.json`` (once), then its metadata.

        A crash before ``fork.json`` leaves an empty directory, which is no session; one
        after it leaves a fork without metadata, which the next append gives it. Asking
        again for the same fork completes it; a different one is refused.
        """
        handles = self._handles
        made = handles.check_dir(target, directory)
        present = _forks.read(self._fs, directory) if made else None
        if present is not None:
            if (present.session_id, present.sequence) != (point.session_id, point.sequence):
                raise InvalidArgument(f"session {target!r} is another fork already", session_id=target)
            point = present  # the same fork, asked for again (or finished after a crash)
        elif made and self._summary(target, directory) is not None:
            raise InvalidArgument(
                f"session {target!r} exists already; a fork needs a new id", session_id=target
            )
        handles.ensure_root()
        _dirs.makedirs(self._fs, directory, durable=self._durable, session_id=target)
        if present is None and not _forks.create(self._fs, directory, point, durable=self._durable):
            raise InvalidArgument(
                f"session {target!r} was made a fork by someone else meanwhile", session_id=target
            )
        session = handles.session(target)
        # A fork's metadata starts with defaults (and its source's dialect), not with what an
        # earlier append of this store to a session of that id (since deleted) would have given it.
        session.init, session.init_metadata = None, metadata
        try:
            handles.prepared(session, again=True)
        finally:
            session.init_metadata = {}  # the fork's only: a later re-made session starts clean

    def _forks_of(self, session_id: str) -> list[str]:
        """The sessions whose ``fork.json`` names ``session_id`` as their source."""
        forks = []
        for name in self._session_names():
            if name == session_id:
                continue
            try:
                point = _forks.read(self._fs, os.path.join(self.root, name))
            except (_forks.DamagedFork, UnsafePath):
                continue  # not a fork this store can read: it reads nothing of this session
            if point is not None and point.session_id == session_id:
                forks.append(name)
        return forks

    # -- deleting -------------------------------------------------------------------------

    @_storage_errors
    def delete_session(self, session_id: str) -> bool:
        """Delete the session's files; False when there was nothing to delete.

        Sessions are never deleted any other way. The lock file stays (deleting a lock
        file another process waits on would let two holders in); it is git-ignored.
        """
        directory = self._handles.directory(session_id)
        if not self._handles.check_dir(session_id, directory):
            return False

        def no_forks() -> None:
            forks = self._forks_of(session_id)
            if forks:
                raise SessionHasForks(
                    f"session {session_id!r} has forks that read their history from it ({', '.join(forks)}); "
                    "delete them first",
                    forks=forks,
                    session_id=session_id,
                )

        return self._handles.delete(session_id, directory, no_forks)

    # -- verify and repair ------------------------------------------------------------------

    def _check(self, session_id: str, directory: str, *, fix: bool) -> list[Problem]:
        return _recovery.check(
            self._fs, session_id, directory, fix=fix, durable=self._durable, lock_timeout=self.lock_timeout
        )

    @_storage_errors
    def verify(self, session_id: str | None = None) -> list[Problem]:
        """Every problem on disk (one session or all), with what `repair` would do. Changes nothing."""
        if session_id is None:
            problems: list[Problem] = []
            for name in self._session_names():
                problems.extend(self._check(name, os.path.join(self.root, name), fix=False))
            return problems
        return self._check(session_id, self._handles.directory(session_id), fix=False)

    @_storage_errors
    def repair(self, session_id: str) -> list[Problem]:
        """Fix what `verify` finds in one session and report it; running it twice changes nothing.

        Damaged tails are cut into sidecar files, damaged snapshots and metadata are moved
        aside, leftover temporary files are deleted. Damage in the middle of the log stays
        where it is (readers skip it); it is reported with ``action`` saying so.
        """
        directory = self._handles.directory(session_id)
        self._handles.forget(session_id)
        # Looked at before the lock is taken: a `.lock` that is a symlink is reported, not opened.
        unsafe = _recovery.unsafe_paths(self._fs, session_id, directory)
        if unsafe:
            return unsafe
        if not _dirs.exists(self._fs, directory):
            return []
        with self._handles.lock(session_id):
            return self._check(session_id, directory, fix=True)

    # -- secrets ------------------------------------------------------------------------

    @_storage_errors
    def scan(self, session_id: str | None = None) -> list[_secrets.SecretFinding]:
        """Every secret stored in one session (or all), in every file of its directory.

        Uses this store's redactor (the built-in patterns when the store was made with
        ``redact=False``). Changes nothing; a finding names the file, line, sequence, JSON
        path and kind of a secret, a masked preview and its fingerprint, never the secret
        itself; ``certain`` is False for a guess, ``allowed`` True for a value the store
        root's allowlist clears (`allow_findings`). Raises `InvalidArgument` for an
        allowlist line that is not a fingerprint.
        """
        from . import _secrets  # here: a store that never scans never imports it (start-up)

        redactor = self._redactor or _redact.DEFAULT
        allowed = _secrets.read_allowlist(self._fs, self.root)
        names = self._session_names() if session_id is None else [session_id]
        found: list[_secrets.SecretFinding] = []
        for name in names:
            directory = self._handles.directory(name)
            if self._handles.check_dir(name, directory):
                found.extend(_secrets.scan(self._fs, name, directory, redactor, allowed))
        return found

    @_storage_errors
    def allow_findings(self, fingerprints: Iterable[str]) -> list[str]:
        """Add fingerprints of `scan` findings that are no secret to the store root's allowlist.

        The allowlist (``.jsonl-store-allow``, spec §18.2) is a text file meant to be
        committed with the store: a finding whose fingerprint it holds is reported as
        ``allowed``, and `redact_session` leaves its value as it is. Nothing stored is
        changed. Returns the fingerprints that were not in it yet; raises `InvalidArgument`
        for one that is not 16 lower-case hex digits (nothing is added then).
        """
        from . import _secrets

        if isinstance(fingerprints, str) or not isinstance(fingerprints, Iterable):
            raise InvalidArgument(f"fingerprints must be a list of str, got {fingerprints!r}")
        return _secrets.add_to_allowlist(self._fs, self.root, fingerprints, durable=self._durable)

    @_storage_errors
    def redact_session(self, session_id: str) -> list[_secrets.SecretFinding]:
        """Rewrite a stored session without the certain secrets `scan` finds in it; return what was redacted.

        Guesses (``certain=False``) and values the allowlist clears stay as they are.

        The one rewrite of stored bytes this library makes: each file holding a secret is
        written anew (new checksums; snapshots get their boundary's offsets in the new raw
        log) and renamed over the old one, under the session lock and the append locks;
        sidecars of cut tails and damaged files are redacted too, leftover temporary files
        deleted. Meant to run offline (no agent using the session): a reader in the middle
        of a `load` may see the old log with a new snapshot, which it then skips. Running
        it again finds nothing. Raises `SessionNotFound` for a session that does not exist.
        """
        from . import _secrets

        redactor = self._redactor or _redact.DEFAULT
        allowed = _secrets.read_allowlist(self._fs, self.root)
        directory = self._handles.directory(session_id)
        if not self._handles.check_dir(session_id, directory):
            raise SessionNotFound(f"session {session_id!r} does not exist", session_id=session_id)
        self._handles.forget(session_id)
        with self._handles.lock(session_id):
            found = _secrets.redact(
                self._fs, session_id, directory, redactor, lock_timeout=self.lock_timeout, allowed=allowed
            )
        self._handles.forget(session_id)  # what it cached of the old files is stale now
        return found


def _checked_root(root: str | os.PathLike[str]) -> str:
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


def _last_record_id(view: SessionView) -> str:
    """The id of the record at ``view.last_sequence`` ("" for an empty session)."""
    if view.raw_tail:
        return view.raw_tail[-1].id
    return view.snapshot.boundary_record_id if view.snapshot is not None else ""


#: The keywords `checkpoint` passes on to `append_many`.
_APPEND_OPTIONS = frozenset(inspect.signature(SessionStore.append_many).parameters) - {
    "self",
    "session_id",
    "messages",
    "expected_last_sequence",  # a checkpoint decides what it appends after
}


def _take_made_redacted(session: OpenSession) -> dict[str, int]:
    """What redaction replaced in the labels of a metadata file this store made, once."""
    with session.mutex:
        made, session.made_redacted = session.made_redacted, {}
    return made


#: How many times `SessionStore._write` tries a write whose session directory vanished.
_WRITE_ATTEMPTS = 8

#: What `append_many` passes to the encoder when a keyword is not given (`_rewrite_context`,
#: and the check of a save that makes its session).
_REWRITE_DEFAULTS: dict[str, Any] = {
    "request_id": None,
    "parent_session_id": None,
    "title": None,
    "agent_name": None,
    "session_type": 0,
    "metadata": None,
    "tags": None,
    "created_at": None,
}

__all__ = ["UNUSABLE_KINDS", "Durability", "RedactSetting", "SessionStore"]
