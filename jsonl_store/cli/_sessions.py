"""``ls``/``list``, ``pin`` and ``unpin``: the sessions of a store, and which ones a person keeps at hand."""

from __future__ import annotations

import argparse

import msgspec

from .. import SessionSummary
from . import _format
from ._commands import emit, emit_json, existing, open_store


def list_(args: argparse.Namespace) -> int:
    """Sessions newest activity first (`list_sessions`), with their tokens (`usage_totals`);
    ``--json`` gives each `SessionSummary` with ``total_tokens`` added."""
    store = open_store(args)
    sessions = store.list_sessions(parent_session_id=args.parent)
    if args.pinned:
        # sorted() is stable: within pinned and within the others, newest stays first.
        sessions = sorted(sessions, key=lambda s: not s.pinned)
    tokens = {s.session_id: store.usage_totals(s.session_id).total_tokens for s in sessions}
    if args.json:
        # Each summary with the TOKENS column's figure, so the JSON says all the table does.
        emit_json([{**msgspec.to_builtins(s), "total_tokens": tokens[s.session_id]} for s in sessions])
        return 0
    if not sessions:
        emit([f"no sessions in {store.root}" + (f" with parent {args.parent}" if args.parent else "")])
        return 0
    emit([_format.render_sessions(sessions, tokens=tokens, mark_pinned=args.pinned)])
    return 0


def _set_pinned(args: argparse.Namespace, pinned: bool) -> int:
    store = open_store(args)
    existing(store, args.session_id)
    summary: SessionSummary = store.update_session(args.session_id, pinned=pinned)
    emit([f"session {summary.session_id} is {'pinned' if summary.pinned else 'no longer pinned'}"])
    return 0


def pin(args: argparse.Namespace) -> int:
    """Pin a session (`update_session(pinned=True)`), so ``ls --pinned`` shows it first."""
    return _set_pinned(args, True)


def unpin(args: argparse.Namespace) -> int:
    """Unpin a session (`update_session(pinned=False)`)."""
    return _set_pinned(args, False)


__all__ = ["list_", "pin", "unpin"]
