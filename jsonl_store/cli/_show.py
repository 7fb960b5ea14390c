"""``show``: one session for a person -- its transcript, its model context, or its raw records.

The transcript (`records`) is what happened, compacted records included, with a rule at
the latest snapshot's boundary; ``--context`` is what `load` hands the model
(``view.messages``), ``--close`` that context closed as `model_context(close_last=True)`
gives it; ``--raw`` is every record with its stored fields. On a terminal the output is
wrapped to its width, coloured, and paged when longer than the screen (`_term.show`).
"""

from __future__ import annotations

import argparse
from typing import Any

from .. import Message, RawMessageRecord, SessionView
from . import _format, _messages, _term
from ._blocks import Block
from ._commands import CliError, emit_json, existing, open_store, width


def _context_entries(view: SessionView, messages: list[Message]) -> list[dict[str, Any]]:
    """Each context message with the sequence and usage of its record (none for the compacted
    message, nor for a result the repair added, which ``added`` marks)."""
    records = {id(record.message): record for record in view.raw_tail}
    stored = {id(message) for message in view.context}
    entries = []
    for message in messages:
        record: RawMessageRecord | None = records.get(id(message))
        entries.append(
            {
                "sequence": record.sequence if record is not None else None,
                "usage": record.usage if record is not None else None,
                "added": id(message) not in stored,
                "message": message,
            }
        )
    return entries


def _open_batch(view: SessionView, closed: list[Message], *, closing: bool) -> list[Block]:
    pending = _messages.open_calls(view, closed)
    if not pending or closing:
        return []
    return [
        "",
        f"The last tool batch is open: {', '.join(pending)} without a result.",
        "--close answers each open call with an interruption notice.",
    ]


def show(args: argparse.Namespace) -> int:
    if args.raw and args.close:
        raise CliError("--raw prints the records and --close the closed context: choose one")
    store = open_store(args)
    summary = existing(store, args.session_id)
    view = store.load(args.session_id)
    snapshot = view.snapshot
    closed = view.model_context(close_last=True)
    context = args.context or args.close
    children = store.list_sessions(parent_session_id=args.session_id)
    if args.json:
        document: dict[str, Any] = {
            "session": summary,
            "children": [child.session_id for child in children],
            "snapshot": snapshot,
        }
        if context:
            document["messages"] = _context_entries(view, closed if args.close else view.messages)
        else:
            document["records"] = list(store.records(args.session_id))
        document["problems"] = view.problems
        emit_json(document)
        return 0
    columns = width()
    blocks: list[Block] = list(_format.render_summary(summary, view, children, full=args.full, width=columns))
    if context:
        messages = closed if args.close else view.messages
        source = "view.model_context(close_last=True)" if args.close else "view.messages"
        blocks += ["", f"Context ({source}, {_format.plural(len(messages), 'message')}):", ""]
        blocks += _messages.render_context(view, messages, full=args.full, width=columns)
    else:
        records = list(store.records(args.session_id))
        kind = "Raw log" if args.raw else "Transcript"
        blocks += ["", f"{kind} ({_format.plural(len(records), 'record')}):", ""]
        blocks += _messages.render_records(
            records, snapshot, dialect=summary.dialect, full=args.full, width=columns, raw=args.raw
        )
    blocks += _open_batch(view, closed, closing=args.close)
    _term.show(blocks, pager=not args.no_pager)
    return 0


__all__ = ["show"]
