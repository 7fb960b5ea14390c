"""`SessionStore`: the one API behind the library and the command line, as a facade.

Each public method turns ``OSError`` into `StorageError` and hands the call, over the
store's `StoreState`, to the module of its concern: ``_ops.reading``, ``_ops.listing``,
``_ops.session_edits``, ``_ops.appending`` (the one append path), ``_ops.saves``, ``_ops.compact``,
``_ops.forking``, ``_ops.maintenance``. They check the arguments before any file is touched.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, Self

from . import _process
from ._context.dialect_neutral import Dialect
from ._context.tool_batches import INTERRUPTED_NOTICE
from ._context.view import SessionSummary, SessionView
from ._errors import InvalidArgument, JsonlStoreError
from ._format.names import validate_session_id
from ._format.records import ContextSnapshot, Message, MessageTiming, ModelUsage, RawMessageRecord
from ._io.fs import FileSystem
from ._log import blob_writes as _blob_writes
from ._log import blobs as _blobs
from ._log.problems import UNUSABLE_KINDS, Problem
from ._ops import append as _append
from ._ops import appending as _appending
from ._ops import compact as _compact
from ._ops import forking as _forking
from ._ops import listing as _listing
from ._ops import maintenance as _maintenance
from ._ops import reading as _reading
from ._ops import saves as _saves
from ._ops import searching as _searching
from ._ops import session_edits as _session_edits
from ._ops.store_state import UNSET, StoreState, check_options, checked_root, failure, storage_errors
from ._session import catalog as _catalog
from ._session import meta as _meta
from ._session import usage as _usage
from ._session.meta import Origin
from ._text import redact as _redact
from ._text import redactions as _redactions

if TYPE_CHECKING:
    from ._ops import secrets as _secrets

Durability = Literal["fsync", "none"]
#: ``SessionStore(redact=...)``: True (the built-in patterns), False, a list of extra
#: patterns (a regular expression, or a ``(kind, regular expression)`` pair), a
#: `Redactor`, or a function from a stored string to the string to store.
RedactSetting = bool | Sequence[Any] | _redact.Redactor | Callable[[str], str]

_UNSET: Any = UNSET
_storage_errors = storage_errors


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
        check_options(durability, lock_timeout, on_problem=on_problem, on_redact=on_redact)
        #: Strings over ``blob_threshold`` UTF-8 bytes go to blob files; a record line is
        #: at most ``max_record_bytes`` (spec §5.1).
        sizes = _blob_writes.Sizes(blob_threshold, max_record_bytes)
        self.blob_threshold, self.max_record_bytes = sizes.threshold, sizes.max_record_bytes
        self.root = checked_root(root)
        redactor = _redact.make(redact)
        self.durability: Durability = durability
        self.lock_timeout = float(lock_timeout)
        self._state = StoreState(
            self.root, durable=durability == "fsync", lock_timeout=self.lock_timeout, on_problem=on_problem,
            fs=fs, clock=clock, ids=ids, redactor=redactor, sizes=sizes, on_redact=on_redact,
        )  # fmt: skip
        self._handles = self._state.handles
        _process.STORES.add(self)

    @property
    def _fs(self) -> FileSystem:
        """The file-system door the store's own reads go through (`StoreState.fs`)."""
        return self._state.fs

    @_fs.setter
    def _fs(self, fs: FileSystem) -> None:
        self._state.fs = fs

    def _after_fork_in_child(self) -> None:
        # A store may be used in a forked child (docs/guides/agent-loop.md, "Concurrency"): its handle cache
        # gets fresh mutexes there; descriptors and locks are renewed by their own objects,
        # each tracked in `_process`.
        self._handles.forked()
        if self._state.catalog is not None:
            self._state.catalog.forked()

    # -- lifecycle ----------------------------------------------------------------------

    @_storage_errors
    def close(self) -> None:
        """Close every open descriptor. The store can still be used; it reopens lazily.

        After a failed fsync, closing is how a session's writer is recovered.
        """
        self._handles.close()
        if self._state.catalog is not None:
            self._state.catalog.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SessionStore({self.root!r}, durability={self.durability!r})"

    @property
    def redactor(self) -> _redact.Redactor | None:
        """What this store redacts stored strings with (``redact=``), or None."""
        return self._state.redactor

    def _sink(self, problem: Problem) -> None:
        """Where damage goes: ``on_problem``, else a warning in the log."""
        self._state.sink(problem)

    @property
    def _catalog(self) -> _catalog.Catalog | None:
        """The derived catalog (`StoreState.catalog`; None over a simulated file system)."""
        return self._state.catalog

    @property
    def _searching(self) -> _searching.Searching:
        """What `jsonl_store.search` and the command's catalog asks of the store (`_ops.searching`)."""
        return _searching.Searching(self._state, self.get_session)

    def _summary(self, session_id: str, directory: str, *args: Any, **kwargs: Any) -> SessionSummary | None:
        """The session's summary (`StoreState.summary`)."""
        return self._state.summary(session_id, directory, *args, **kwargs)

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
            return _appending.append(
                self._state, session_id, "append", [message], timings=[timing], usages=[usage],
                request_id=request_id, parent_session_id=parent_session_id, title=title, agent_name=agent_name,
                session_type=session_type, metadata=metadata, tags=tags,
                expected_last_sequence=expected_last_sequence, created_at=created_at,
            )[0]  # fmt: skip
        except JsonlStoreError:
            raise
        except OSError as exc:  # what `_storage_errors` does, without a wrapper call per append
            raise failure(self.root, exc, "append", session_id) from exc

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
            return _appending.append(
                self._state, session_id, "append_many", messages, timings=timings, usages=usages,
                request_id=request_id, parent_session_id=parent_session_id, title=title, agent_name=agent_name,
                session_type=session_type, metadata=metadata, tags=tags,
                expected_last_sequence=expected_last_sequence, created_at=created_at,
            )  # fmt: skip
        except JsonlStoreError:
            raise
        except OSError as exc:  # as in `append`
            raise failure(self.root, exc, "append_many", session_id) from exc

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
        return _reading.load(self._state, session_id, strict=strict)

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
        return _reading.resume(self.load, self.append_many, session_id, notice, dialect)

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
        return _reading.open_records(self._state, session_id, after, containing)

    @_storage_errors
    def tail(self, session_id: str, n: int) -> list[RawMessageRecord]:
        """The last ``n`` raw-log records, oldest first, read backwards from the log's end.

        Costs O(n), whatever the log's length; snapshots do not matter (these are records,
        as `records` gives them). An unknown session gives ``[]``.
        """
        return _reading.tail(self._state, session_id, n)

    @_storage_errors
    def get_session(self, session_id: str) -> SessionSummary | None:
        """The session's summary, or None when it does not exist."""
        directory = self._handles.directory(session_id)
        if not self._handles.check_dir(session_id, directory):
            return None
        return self._summary(session_id, directory)

    @_storage_errors
    def list_sessions(self, *, parent_session_id: str | None = None) -> list[SessionSummary]:
        """Every session (or the children of ``parent_session_id``), newest activity first."""
        if parent_session_id is not None:
            validate_session_id(parent_session_id)
        return _listing.list_sessions(self._state, parent_session_id, self._summary)

    @_storage_errors
    def session_ids(self) -> list[str]:
        """The name of every entry below the root that may be a session, sorted: what
        ``verify()`` goes through, also those `list_sessions` leaves out (a session of a
        newer format, one with an unsafe path), so ``verify(id)`` over them is ``verify()``."""
        return _listing.names(self._state)

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
        return _session_edits.create(
            self._state, session_id, title=title, agent_name=agent_name, parent_session_id=parent_session_id,
            session_type=session_type, metadata=metadata, created_at=created_at,
        )  # fmt: skip

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
        return _compact.take(
            self._state, session_id, compacted_message, compacted_through_sequence, expected_version
        )

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
        validate_session_id(session_id)
        update = _meta.Update.checked(
            title=title, pinned=pinned, metadata=metadata, remove_metadata=remove_metadata,
            expected_version=expected_version, origin=origin, agent_name=agent_name,
        )  # fmt: skip
        return _session_edits.update(self._state, session_id, update)

    # -- token usage --------------------------------------------------------------------

    @_storage_errors
    def record_usage(self, session_id: str, record: ModelUsage | Mapping[str, Any]) -> None:
        """Append one model call's token counts to the session's token-usage log.

        ``record`` is a `ModelUsage` or a mapping with the same keys plus optional
        ``model``, ``request_id`` and any further JSON keys (kept under ``extra``).
        """
        _appending.record_usage(self._state, session_id, record)

    @_storage_errors
    def usage(self, session_id: str) -> Iterator[dict[str, Any]]:
        """Every token-usage record of the session, oldest first, as dicts."""
        return _reading.usage(self._state, session_id, self._state.readable(session_id))

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
        return _usage.own_calls(_reading.own_record_calls(self._state, session_id), self.usage(session_id))

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
        return _saves.checkpoint(self._state, self, session_id, messages, append_options, _APPEND_OPTIONS)

    def _rewrite_context(
        self, session_id: str, batch: list[Message], compacted: Message, expected_version: int,
        append_options: dict[str, Any],
    ) -> list[int]:  # fmt: skip
        """`checkpoint`'s rewrite (`_ops.saves.rewrite_context`), as `_session.checkpoint.Store` names it."""
        return _saves.rewrite_context(
            self._state, session_id, batch, compacted, expected_version, append_options
        )

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
        return _forking.fork(self._state, self.records, session_id, at_sequence, new_session_id)

    # -- deleting -------------------------------------------------------------------------

    @_storage_errors
    def delete_session(self, session_id: str) -> bool:
        """Delete the session's files; False when there was nothing to delete.

        Sessions are never deleted any other way. The lock file stays (deleting a lock
        file another process waits on would let two holders in); it is git-ignored.
        """
        return _forking.delete(self._state, session_id)

    # -- verify and repair ------------------------------------------------------------------

    @_storage_errors
    def verify(self, session_id: str | None = None) -> list[Problem]:
        """Every problem on disk (one session or all), with what `repair` would do. Changes nothing."""
        return _maintenance.verify(self._state, session_id)

    @_storage_errors
    def repair(self, session_id: str) -> list[Problem]:
        """Fix what `verify` finds in one session and report it; running it twice changes nothing.

        Damaged tails are cut into sidecar files, damaged snapshots and metadata are moved
        aside, leftover temporary files are deleted. Damage in the middle of the log stays
        where it is (readers skip it); it is reported with ``action`` saying so.
        """
        return _maintenance.repair(self._state, session_id)

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
        return _maintenance.scan(self._state, session_id)

    @_storage_errors
    def allow_findings(self, fingerprints: Iterable[str]) -> list[str]:
        """Add fingerprints of `scan` findings that are no secret to the store root's allowlist.

        The allowlist (``.jsonl-store-allow``, spec §18.2) is a text file meant to be
        committed with the store: a finding whose fingerprint it holds is reported as
        ``allowed``, and `redact_session` leaves its value as it is. Nothing stored is
        changed. Returns the fingerprints that were not in it yet; raises `InvalidArgument`
        for one that is not 16 lower-case hex digits (nothing is added then).
        """
        if isinstance(fingerprints, str) or not isinstance(fingerprints, Iterable):
            raise InvalidArgument(f"fingerprints must be a list of str, got {fingerprints!r}")
        return _maintenance.allow(self._state, fingerprints)

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
        return _maintenance.redact_session(self._state, session_id)


#: The keywords `checkpoint` passes on to `append_many`.
_APPEND_OPTIONS = frozenset(inspect.signature(SessionStore.append_many).parameters) - {
    "self",
    "session_id",
    "messages",
    "expected_last_sequence",  # a checkpoint decides what it appends after
}

__all__ = ["UNUSABLE_KINDS", "Durability", "RedactSetting", "SessionStore"]
