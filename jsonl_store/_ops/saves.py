"""`checkpoint`'s store side: a save checked, its session labelled, and its rewrite written.

What a save appends is decided by `_session.checkpoint` (matching the caller's list against the
cached ids); this module gives it the session, the fork prefix its `History` reads, the
lock and the append path, and writes a rewrite's batch right after its snapshot
(spec §10).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from .._errors import InvalidArgument
from .._format.records import Message, MessageTiming
from .._io import dirs as _dirs
from .._session import checkpoint as _checkpoint
from .._session.handles import OpenSession
from .._text.redactions import Tally
from . import append as _append
from . import compact as _compact
from .appending import append
from .store_state import StoreState


def checkpoint(
    state: StoreState,
    store: _checkpoint.Store,
    session_id: str,
    messages: Sequence[Message],
    append_options: dict[str, Any],
) -> list[int]:
    """`SessionStore.checkpoint`; ``append_options`` are among `_ops.append.CHECKPOINT_KEYWORDS`."""
    handles = state.handles
    where = state.where(session_id)
    # Checked before the session is made: nothing may be created for a call that fails.
    _checkpoint.check_messages(messages)
    unknown = set(append_options) - _append.CHECKPOINT_KEYWORDS
    if unknown:
        raise InvalidArgument(f"checkpoint got unknown append options: {', '.join(sorted(unknown))}")
    session = handles.session(session_id)
    if not _dirs.exists(state.fs, where.log_path):
        # The save would make the session: the append it ends with is checked first (as
        # an append checks before touching a file), so a save that fails on bad options
        # (a usage on a user message, a session_type that is no int) makes nothing.
        _check_first_save(state, session, messages, append_options)
    # A session this save makes (new, or anew after another store deleted it) gets
    # this call's labels, as an append's would (spec §9.8): the save makes it before
    # its append, so neither defaults nor an earlier append's labels may stand in.
    # What the redactor replaces in them is counted once, by the append that follows,
    # and only if this save made the session (`OpenSession.made_redacted`).
    _append.set_init(
        session, handles.clock(), append_options.get("parent_session_id"),
        append_options.get("session_type", 0), append_options.get("agent_name"),
        append_options.get("title"), state.tally(),
    )  # fmt: skip
    return _checkpoint.save(
        store,
        session,
        messages,
        append_options,
        reading=(where, _checkpoint.fork_prefix(functools.partial(state.history, where))),
        lock=lambda: handles.lock_made(session),
        make=lambda: handles.writer(session),  # creates the session (and its lock file) if new
        rewrite_context=functools.partial(rewrite_context, state),
    )


def _check_first_save(
    state: StoreState, session: OpenSession, messages: Sequence[Message], append_options: dict[str, Any]
) -> None:
    """Encode (and drop) the append a save into a new session makes: every message it
    keeps, with its options, so bad input raises before the session is made."""
    _checkpoint.ids_of(messages, 0)  # refuses what is no message, as the save would
    options = dict(append_options)
    kept = [m for m in messages if _checkpoint.persisted(m)]
    timings = _append.per_message(options.pop("timing", None), MessageTiming, len(kept), "timing")
    usages = _append.usages_for(kept, options.pop("usage", None))
    _append.encode(
        session, kept, state.sizes, _append.Options.from_keywords(options), timings, usages,
        state.handles.clock, state.handles.new_id,
    )  # fmt: skip


def rewrite_context(
    state: StoreState,
    session_id: str,
    batch: list[Message],
    compacted: Message,
    expected_version: int,
    append_options: dict[str, Any],
) -> list[int]:
    """`checkpoint`'s rewrite, under the session lock: ``batch`` (a marker record, then the
    new tail) in one write, made right after the snapshot through the marker (spec §10)."""
    where = state.where(session_id)
    options = dict(append_options)
    tail = batch[1:]
    timings = [None, *_append.per_message(options.pop("timing", None), MessageTiming, len(tail), "timing")]
    usages = [None, *_append.usages_for(tail, options.pop("usage", None))]

    def before_write(tally: Tally | None) -> Callable[[int, bytes], None]:
        # Once the batch is encoded (bad input raises before anything is read or written).
        inherited = state.inherited_version(where) if state.fork_point(where) else 0
        return _compact.before_batch(state.handles, where, compacted, (expected_version, inherited), tally)

    return append(
        state, session_id, "checkpoint", batch, timings, usages, _append.Options.from_keywords(options),
        before_write=before_write,
    )  # fmt: skip


__all__ = ["checkpoint", "rewrite_context"]
