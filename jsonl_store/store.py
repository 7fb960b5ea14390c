"""`SessionStore`: the one API behind the library and the command line, as a facade.

Each public method turns ``OSError`` into `StorageError` and hands the call, over the
store's `StoreState`, to the module of its concern: ``_ops.reading``, ``_ops.listing``,
``_ops.session_edits``, ``_ops.appending`` (the one append path), ``_ops.saves``, ``_ops.compact``,
``_ops.forking``, ``_ops.maintenance``. They check the arguments before any file is touched.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, Self

from . import _process
from ._context.dialect_neutral import Dialect
from ._context.tool_batches import INTERRUPTED_NOTICE
from ._context.view import SessionSummary, SessionView
from ._format.records import ContextSnapshot, ForkPoint, Message, MessageTiming, ModelUsage, RawMessageRecord
from ._io.fs import FileSystem
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
from ._ops.append import Options
from ._ops.store_state import UNSET as _UNSET
from ._ops.store_state import build as build_state
from ._ops.store_state import storage_errors as _storage_errors
from ._session import catalog as _catalog
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


class SessionStore:
    """Sessions stored as plain files below ``root``; safe for many threads and processes.

    ``durability="fsync"`` (the default) returns from an append only once the record is
    on disk; ``"none"`` survives a process crash but not a power loss. ``lock_timeout``
    bounds every wait for another writer; ``clock`` and ``ids`` replace the wall clock
    and the UUIDv7s, so the same inputs give the same bytes (spec §9.12). Every argument
    is described in docs/guides/store.md, "SessionStore(root, ...)".
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
        self._state = build_state(
            root, durability=durability, lock_timeout=lock_timeout, on_problem=on_problem, fs=fs, clock=clock,
            ids=ids, redact=redact, blob_threshold=blob_threshold, max_record_bytes=max_record_bytes,
            on_redact=on_redact,
        )  # fmt: skip
        self.root, self.durability, self.lock_timeout = self._state.root, durability, self._state.lock_timeout
        sizes = self._state.sizes
        self.blob_threshold, self.max_record_bytes = sizes.threshold, sizes.max_record_bytes
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
        # A store may be used in a forked child (docs/guides/agent-loop.md, "Concurrency");
        # descriptors and locks are renewed by their own objects, each tracked in `_process`.
        self._state.forked()

    @_storage_errors
    def close(self) -> None:
        """Close every open descriptor (also how a writer recovers after a failed fsync); it reopens lazily."""
        self._state.close()

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

    def _summary(
        self, session_id: str, directory: str, *, read_fork: Callable[[], ForkPoint | None] | None = None
    ) -> SessionSummary | None:
        """One listed entry's summary (`StoreState.summary`): what a listing and the catalog read each through."""
        return self._state.summary(self._state.entry(session_id, directory), read_fork=read_fork)

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

        The first append creates the session: ``title``, ``agent_name``,
        ``parent_session_id`` and ``session_type`` initialise its metadata (a different
        parent later raises `ParentMismatch`). With ``expected_last_sequence`` the record is
        written only if the log ends at that sequence, else `SequenceConflict`.
        ``created_at`` (timezone-aware) is the record's time instead of now. A message that
        cannot be stored unchanged raises `InvalidMessage` or `UnsupportedValue`, and
        nothing is written. Every keyword and error: docs/guides/store.md, "append(...)".
        """
        options = Options(
            request_id=request_id, parent_session_id=parent_session_id, title=title, agent_name=agent_name,
            session_type=session_type, metadata=metadata, tags=tags,
            expected_last_sequence=expected_last_sequence, created_at=created_at,
        )  # fmt: skip
        # Not wrapped in `_storage_errors`: `_ops.appending.append` turns an OSError into its error.
        return _appending.append(self._state, session_id, "append", [message], [timing], [usage], options)[0]

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

        Returns one sequence per message (0 for ``persist=False``). ``timing`` and ``usage``
        are one value for the batch or one per message; a single ``usage`` belongs to the
        batch's only assistant message. The other keywords are `append`'s.
        """
        timings, usages = _append.batch_timings_and_usages(messages, timing, usage)
        options = Options(
            request_id=request_id, parent_session_id=parent_session_id, title=title, agent_name=agent_name,
            session_type=session_type, metadata=metadata, tags=tags,
            expected_last_sequence=expected_last_sequence, created_at=created_at,
        )  # fmt: skip
        return _appending.append(self._state, session_id, "append_many", messages, timings, usages, options)

    # -- reading ------------------------------------------------------------------------

    @_storage_errors
    def load(self, session_id: str, *, strict: bool = False) -> SessionView:
        """The latest valid snapshot plus the raw-log records after its boundary (an empty view if none).

        Reads only the tail. Damage met is in ``view.problems`` (and goes to ``on_problem``),
        or raises `CorruptSession` with ``strict=True``; a torn last line is never damage.
        """
        return _reading.load(self._state, session_id, strict=strict)

    @_storage_errors
    def resume(
        self, session_id: str, *, notice: str = INTERRUPTED_NOTICE, dialect: str | Dialect | None = None
    ) -> SessionView:
        """Load the session after closing its interrupted tool batch in the log, once.

        Each call of the last tool batch without a result gets an error result (``notice``
        as content, an id derived from the call: spec §9.9), appended only if the log still
        ends where it was loaded. Idempotent, also across processes. ``dialect`` reads the
        tool calls (see `repair_context`); None is the session's own. See
        docs/guides/store.md, "resume(...)".
        """
        return _reading.resume(self.load, self.append_many, session_id, notice, dialect)

    @_storage_errors
    def records(
        self, session_id: str, *, after: int = 0, containing: bytes | None = None
    ) -> Iterator[RawMessageRecord]:
        """Stream the raw log's records with a sequence above ``after``, in constant memory.

        Reading starts at the tail offset of a snapshot whose boundary is at or before
        ``after``. With ``containing``, only records whose line holds those bytes are
        decoded (a prefilter the caller confirms, as `jsonl_store.search` does); records a
        fork reads from its sources are given whole.
        """
        return _reading.open_records(self._state, session_id, after, containing)

    @_storage_errors
    def tail(self, session_id: str, n: int) -> list[RawMessageRecord]:
        """The last ``n`` raw-log records, oldest first, read backwards in O(n); ``[]`` for an unknown session."""
        return _reading.tail(self._state, session_id, n)

    @_storage_errors
    def get_session(self, session_id: str) -> SessionSummary | None:
        """The session's summary, or None when it does not exist."""
        return _reading.get_session(self._state, session_id)

    @_storage_errors
    def list_sessions(self, *, parent_session_id: str | None = None) -> list[SessionSummary]:
        """Every session (or the children of ``parent_session_id``), newest activity first."""
        return _listing.list_sessions(self._state, parent_session_id, self._summary)

    @_storage_errors
    def session_ids(self) -> list[str]:
        """Every entry below the root that may be a session, sorted: what ``verify()`` goes
        through, also those `list_sessions` leaves out (a newer format, an unsafe path)."""
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

        ``created_at`` (timezone-aware) replaces now. A session that exists is left as it is,
        but a different ``parent_session_id`` raises `ParentMismatch`.
        """
        return _session_edits.create(
            self._state, session_id, title=title, agent_name=agent_name, parent_session_id=parent_session_id,
            session_type=session_type, metadata=metadata, created_at=created_at,
        )  # fmt: skip

    # -- snapshots, metadata, token usage ----------------------------------------

    @_storage_errors
    def snapshot(
        self,
        session_id: str,
        compacted_message: Message,
        compacted_through_sequence: int,
        expected_version: int,
    ) -> ContextSnapshot:
        """Create snapshot ``expected_version + 1``: a summary replacing the log up to a sequence.

        ``expected_version`` is the snapshot version the caller's context came from (0 for
        none). Raises `SnapshotConflict` when another writer made a newer one first, and
        `InvalidArgument` when the boundary does not advance or passes the last sequence.
        """
        return _compact.take(
            self._state, session_id, compacted_message, compacted_through_sequence, expected_version
        )

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

        With ``origin="runtime"`` a field or metadata key a user set is left alone;
        ``expected_version`` makes the update a compare-and-swap (`MetadataConflict`).
        Raises `SessionNotFound` for a session that was never written.
        """
        return _session_edits.update(
            self._state, session_id, title=title, pinned=pinned, metadata=metadata, remove_metadata=remove_metadata,
            expected_version=expected_version, origin=origin, agent_name=agent_name,
        )  # fmt: skip

    @_storage_errors
    def record_usage(self, session_id: str, record: ModelUsage | Mapping[str, Any]) -> None:
        """Append one model call's token counts (a `ModelUsage`, or a mapping of its keys plus
        ``model``, ``request_id`` and any JSON keys, kept under ``extra``) to the usage log."""
        _appending.record_usage(self._state, session_id, record)

    @_storage_errors
    def usage(self, session_id: str) -> Iterator[dict[str, Any]]:
        """Every token-usage record of the session, oldest first, as dicts."""
        return _reading.usage(self._state, self._state.readable(session_id))

    @_storage_errors
    def usage_totals(self, session_id: str) -> ModelUsage:
        """The tokens of every model call of the session, each call counted once (`model_calls`)."""
        return _usage.total(self.model_calls(session_id))

    @_storage_errors
    def model_calls(self, session_id: str, *, inherited: bool = True) -> list[dict[str, Any]]:
        """Every model call of the session once, with its tokens and where it was recorded.

        The usage log's lines, then the usage of assistant records whose ``request_id`` it
        does not name; each a dict of `ModelUsage`'s counts plus ``source``,
        ``recorded_at``, ``model`` and ``request_id``. ``inherited=False`` leaves out a
        fork's history read from its source (what `usage_report` counts).
        """
        if inherited:
            return _usage.calls(self.records(session_id), self.usage(session_id))
        return _usage.own_calls(_reading.own_record_calls(self._state, session_id), self.usage(session_id))

    # -- whole-state saves ----------------------------------------------------------------

    @_storage_errors
    def checkpoint(self, /, session_id: str, messages: Sequence[Message], **append_options: Any) -> list[int]:
        """Save a runner's full message list by appending only what is not stored yet; the sequences.

        Messages are matched by ``id``. A stored message is never removed or reordered, even
        when ``messages`` lacks it (spec §10); a list that rewrites history (a new
        `CompactedMessage`, messages in another order) is stored as a snapshot plus a new
        tail. ``append_options`` are `append_many`'s keywords but ``expected_last_sequence``.
        An extending save costs O(new messages). See docs/guides/store.md, "checkpoint(...)".
        """
        return _saves.checkpoint(self._state, self, session_id, messages, append_options)

    # -- forks and deleting ------------------------------------------------------------

    @_storage_errors
    def fork(self, session_id: str, at_sequence: int, new_session_id: str | None = None) -> str:
        """A new session whose history is ``session_id``'s up to ``at_sequence``; its id.

        Nothing is copied: the fork's ``fork.json`` names the branch, and its own records
        start at ``at_sequence + 1`` (spec §8.10). ``new_session_id`` defaults to a new UUID.
        Raises `SessionNotFound` for an unknown source and `InvalidArgument` when
        ``at_sequence`` is no record of its history, the id is taken, or the source's
        history cannot be followed (docs/guides/store.md, "fork(...)").
        """
        return _forking.fork(self._state, self.records, session_id, at_sequence, new_session_id)

    @_storage_errors
    def delete_session(self, session_id: str) -> bool:
        """Delete the session's files; False when there was nothing to delete.

        Its lock file stays, git-ignored: deleting a lock another process waits on would let two holders in.
        """
        return _forking.delete(self._state, session_id)

    # -- verify, repair, secrets -------------------------------------------------------

    @_storage_errors
    def verify(self, session_id: str | None = None) -> list[Problem]:
        """Every problem on disk (one session or all), with what `repair` would do. Changes nothing."""
        return _maintenance.verify(self._state, session_id)

    @_storage_errors
    def repair(self, session_id: str) -> list[Problem]:
        """Fix what `verify` finds in one session and report it; running it twice changes nothing.

        Damaged tails are cut into sidecars, damaged snapshots and metadata moved aside;
        damage mid-log stays (readers skip it), reported as such.
        """
        return _maintenance.repair(self._state, session_id)

    @_storage_errors
    def scan(self, session_id: str | None = None) -> list[_secrets.SecretFinding]:
        """Every secret stored in one session (or all), in every file of its directory.

        Uses this store's redactor (the built-in patterns with ``redact=False``); changes
        nothing. A finding names where the secret is, its kind, a masked preview and its
        fingerprint, never the secret; ``certain`` is False for a guess, ``allowed`` True
        for a value the allowlist clears (docs/guides/git.md, "jsonl-store scan").
        """
        return _maintenance.scan(self._state, session_id)

    @_storage_errors
    def allow_findings(self, fingerprints: Iterable[str]) -> list[str]:
        """Add fingerprints of `scan` findings that are no secret to the store root's allowlist.

        The allowlist (``.jsonl-store-allow``, spec §18.2) is committed with the store: its
        findings are ``allowed`` and `redact_session` keeps them. Returns the fingerprints
        that were new; `InvalidArgument` for one that is not 16 lower-case hex digits.
        """
        return _maintenance.allow(self._state, fingerprints)

    @_storage_errors
    def redact_session(self, session_id: str) -> list[_secrets.SecretFinding]:
        """Rewrite a stored session without the certain secrets `scan` finds in it; return what was redacted.

        Guesses and allowed values stay. The one rewrite of stored bytes this library makes:
        each file holding a secret is written anew and renamed over the old one, under the
        session's locks; meant to run offline (docs/guides/git.md, "jsonl-store redact").
        Raises `SessionNotFound` for a session that does not exist.
        """
        return _maintenance.redact_session(self._state, session_id)


__all__ = ["UNUSABLE_KINDS", "Durability", "RedactSetting", "SessionStore"]
