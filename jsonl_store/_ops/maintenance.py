"""Whole-session checks and rewrites: `verify`, `repair`, `scan`, `redact_session`.

`verify` and `repair` are `_ops.recovery.check` over one session or every entry of the root
(spec §12); the secret scan and its one rewrite are `_ops.secrets`' (spec §18.2), imported
only when used, so a store that never scans never loads it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from .._errors import InvalidArgument
from .._io import dirs as _dirs
from .._io.session_dir import SessionDir
from .._log.problems import Problem
from .._text import redact as _redact
from . import listing as _listing
from . import recovery as _recovery
from .store_state import StoreState, missing

if TYPE_CHECKING:
    from . import secrets as _secrets


def _check(state: StoreState, where: SessionDir, *, fix: bool) -> list[Problem]:
    return _recovery.check(where, fix=fix, durable=state.durable, lock_timeout=state.lock_timeout)


def verify(state: StoreState, session_id: str | None) -> list[Problem]:
    """Every problem on disk of one session, or of every entry that may be one (`_ops.listing.names`)."""
    if session_id is None:
        problems: list[Problem] = []
        for name in _listing.names(state):
            problems.extend(_check(state, state.entry(name), fix=False))
        return problems
    return _check(state, state.where(session_id), fix=False)


def repair(state: StoreState, session_id: str) -> list[Problem]:
    """Fix what `verify` finds in one session, under its lock, and report it."""
    handles = state.handles
    where = state.where(session_id)
    handles.forget(session_id)
    # Looked at before the lock is taken: a `.lock` that is a symlink is reported, not opened.
    unsafe = _recovery.unsafe_paths(where)
    if unsafe:
        return unsafe
    if not _dirs.exists(state.fs, where.path):
        return []
    with handles.lock(session_id):
        return _check(state, where, fix=True)


def scan(state: StoreState, session_id: str | None) -> list[_secrets.SecretFinding]:
    """The secrets stored in one session (or all), as `SessionStore.scan` describes."""
    from . import secrets as _secrets  # here: a store that never scans never imports it (start-up)

    redactor = state.redactor or _redact.DEFAULT
    allowed = _secrets.read_allowlist(state.fs, state.root)
    names = _listing.names(state) if session_id is None else [session_id]
    found: list[_secrets.SecretFinding] = []
    for name in names:
        where = state.where(name)
        if state.exists(where):
            found.extend(_secrets.scan(where, redactor, allowed))
    return found


def allow(state: StoreState, fingerprints: Iterable[str]) -> list[str]:
    """Fingerprints added to the store root's allowlist (spec §18.2); those not in it yet."""
    from . import secrets as _secrets

    if isinstance(fingerprints, str) or not isinstance(fingerprints, Iterable):
        raise InvalidArgument(f"fingerprints must be a list of str, got {fingerprints!r}")
    return _secrets.add_to_allowlist(state.fs, state.root, fingerprints, durable=state.durable)


def redact_session(state: StoreState, session_id: str) -> list[_secrets.SecretFinding]:
    """The one rewrite of stored bytes (`_ops.secrets.redact`), under the session lock; what it redacted."""
    from . import secrets as _secrets

    redactor = state.redactor or _redact.DEFAULT
    allowed = _secrets.read_allowlist(state.fs, state.root)
    handles = state.handles
    where = state.where(session_id)
    if not state.exists(where):
        raise missing(session_id)
    handles.forget(session_id)
    with handles.lock(session_id):
        found = _secrets.redact(where, redactor, lock_timeout=state.lock_timeout, allowed=allowed)
    handles.forget(session_id)  # what it cached of the old files is stale now
    return found


__all__ = ["allow", "redact_session", "repair", "scan", "verify"]
