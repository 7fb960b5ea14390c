"""The subcommands: each reads its arguments, calls `SessionStore`, prints, returns an exit code.

Exit codes: 0 success (and, for ``verify``/``repair``, no problems); 1 problems found or
fixed, or a delete that was declined; 2 bad input, an unusable session or store.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from .. import Problem, Redaction, SessionNotFound, SessionStore, SessionSummary
from .._format.names import LOG_NAME
from ..store import UNUSABLE_KINDS
from . import _format, _messages, _progress, _safe, _term
from ._blocks import Block, Styled

ROOT_ENV = "JSONL_STORE_ROOT"
DEFAULT_ROOT = "sessions"
DEMO_DIR = "jsonl-store-demo"


class CliError(Exception):
    """A mistake on the command line that the store never sees (exit code 2)."""


def emit(lines: Iterable[Block]) -> None:
    """Print lines and tables; all text is escaped (`_safe.escape`), so stored data cannot steer the terminal.

    On a terminal they are drawn for it (`_term`): colour, tables, its width.
    """
    _term.write(list(lines))


def width() -> int:
    """The width to lay text out for: the terminal's, else `_term.DEFAULT_WIDTH`."""
    return _term.screen().width


def emit_json(value: Any, *, indent: bool = True) -> None:
    """Print ``value`` as JSON, with no control or bidi character raw (`_safe.json_text`)."""
    sys.stdout.write(_safe.json_text(_format.dumps(value, indent=indent), sys.stdout))


def warn(problem: Problem) -> None:
    """The store's ``on_problem``: damage met while reading goes to stderr, once per problem."""
    _safe.write_lines(sys.stderr, [f"jsonl-store: warning: {problem}"])


def told(redaction: Redaction) -> None:
    """The store's ``on_redact``: values a command's write replaced by markers, counted on stderr (spec §18.1)."""
    _safe.write_lines(sys.stderr, [f"jsonl-store: note: {redaction}"])


def heading(text: str) -> Styled:
    """A section's heading: bold on a terminal, the same words in a pipe."""
    return Styled(((text, "bold magenta"),))


class _NoBar:
    """The progress of a command that is over before a bar would say anything."""

    def advance(self, steps: int = 1) -> None:
        pass

    def describe(self, label: str) -> None:
        pass


#: A bar over fewer sessions than this would only flash by: each takes milliseconds.
BAR_FROM = 20


def over_sessions(label: str, total: int) -> AbstractContextManager[_progress.Progress]:
    """A progress bar (`_progress.progress`) over ``total`` sessions, when there are many."""
    if total < BAR_FROM:
        return nullcontext(_NoBar())
    return _progress.progress(label, total)


def root_of(args: argparse.Namespace) -> str:
    root: str | None = getattr(args, "root", None)
    return root or os.environ.get(ROOT_ENV) or DEFAULT_ROOT


def open_store(args: argparse.Namespace, on_problem: Callable[[Problem], None] | None = None) -> SessionStore:
    """The store at ``--root``; a missing root is an error, not an empty store.

    (`SessionStore` reads a missing root as "no sessions", which would make a mistyped
    ``--root`` look like a clean, empty store to ``list`` and ``verify``.) Problems go to
    `warn` unless ``on_problem`` is given.
    """
    root = root_of(args)
    if not os.path.isdir(root):
        state = "does not exist" if not os.path.exists(root) else "is not a directory"
        raise CliError(
            f"no session store at '{_safe.escape(root)}': it {state} (use --root DIR or set {ROOT_ENV})"
        )
    return SessionStore(root, on_problem=warn if on_problem is None else on_problem, on_redact=told)


def existing(store: SessionStore, session_id: str) -> SessionSummary:
    summary = store.get_session(session_id)
    if summary is None:
        raise SessionNotFound(
            f"session {session_id!r} does not exist in {store.root!r} (`jsonl-store ls` lists its sessions)",
            session_id=session_id,
        )
    return summary


def problems_exit(problems: Sequence[Problem]) -> int:
    if any(problem.kind in UNUSABLE_KINDS for problem in problems):
        return 2
    return 1 if problems else 0


# ---------------------------------------------------------------------------------------
# Commands
# ---------------------------------------------------------------------------------------


def demo(args: argparse.Namespace) -> int:
    from . import _demo  # imported by demo only: it brings orjson and the demo's messages

    directory: str = args.directory or DEMO_DIR
    store = SessionStore(directory, on_problem=warn)
    with store:
        ids = _demo.write_demo(store)
        view = store.load(ids.main)
        closed = view.model_context(close_last=True)
        sessions = store.list_sessions()
        usage = [(sid, list(store.usage(sid)), store.usage_totals(sid)) for sid in (ids.main, ids.child)]
    snapshot = view.snapshot
    assert snapshot is not None
    shown = shlex.quote(directory)
    lines: list[Block] = [
        f"Wrote two sessions into {directory}{os.sep} through the public API (jsonl_store.SessionStore):",
        "a coding agent fixes a bug, compacts its history into a snapshot, hands a question",
        "to a sub-agent (a child session) and is killed while one of its tool calls runs.",
        "",
        heading(f"== Restored context of {ids.main} =="),
        "   view = store.load(session_id); view.model_context(close_last=True)",
        (
            f"   (snapshot {snapshot.version} replaces records #1-#{snapshot.compacted_through_sequence}; "
            f"{_format.plural(len(view.raw_tail), 'record')} follow it in the tail)"
        ),
        "",
        *_messages.render_context(
            view, closed, added_note="added on restore: the call was interrupted", width=width()
        ),
        "",
        f"The process was killed while {', '.join(_messages.open_calls(view, closed))} ran. view.messages",
        "keeps that last tool batch open; model_context(close_last=True) answers each open call",
        "with an error result, so a provider accepts the context and the model knows the call",
        "may have run in part.",
        "",
        heading("== Sessions: store.list_sessions() =="),
        _format.render_sessions(sessions),
        "",
        heading("== Token usage: store.usage_totals(session_id) =="),
        _format.table(
            (
                "SESSION",
                "CALLS",
                *(f.replace("_tokens", "").replace("_", " ").upper() for f in _format.USAGE_FIELDS),
            ),
            [
                (sid, str(len(items)), *(_format.count(getattr(totals, f)) for f in _format.USAGE_FIELDS))
                for sid, items, totals in usage
            ],
            right=range(1, 7),
            wrap=(0,),
        ),
        "",
        heading("== Files =="),
        *_demo.tree(directory),
        "",
        heading("Look closer:"),
        f"  cat {shlex.quote(os.path.join(directory, ids.main, LOG_NAME))} | jq .",
        f"  jsonl-store --root {shown} show {ids.main}",
        f"  jsonl-store --root {shown} show {ids.main} --context",
        f"  jsonl-store --root {shown} usage",
        f"  jsonl-store --root {shown} verify",
    ]
    emit(lines)
    return 0


def cat(args: argparse.Namespace) -> int:
    store = open_store(args)
    existing(store, args.session_id)
    out = sys.stdout
    for record in store.records(args.session_id, after=args.after):
        # Always escaped, on a terminal or not: the escapes decode to the same strings, so
        # `jq` sees no difference, and `cat ... | less` or `| head` cannot run a stored ESC.
        out.write(_safe.json_text(_format.dumps(record), out))
    return 0


def verify(args: argparse.Namespace) -> int:
    store = open_store(args)
    if args.session_id is None:
        # Session by session, so a bar can count them: verify(id) over session_ids() is
        # what verify() does, in the same order.
        ids = store.session_ids()
        problems: list[Problem] = []
        with over_sessions("verify", len(ids)) as bar:
            for session_id in ids:
                bar.describe(session_id)
                problems.extend(store.verify(session_id))
                bar.advance()
    else:
        problems = store.verify(args.session_id)
    if not problems and args.session_id is not None:
        existing(store, args.session_id)  # an unknown session has no problems, and is no session
    where = f"session {args.session_id}" if args.session_id else store.root
    if args.json:
        emit_json(problems)
    elif problems:
        emit(_format.render_problem(p, done=False) for p in problems)
        emit(
            [
                f"{_format.plural(len(problems), 'problem')} in {where}; `jsonl-store repair ID` fixes what can be fixed"
            ]
        )
    else:
        emit([f"no problems in {where}"])
    return problems_exit(problems)


def repair(args: argparse.Namespace) -> int:
    store = open_store(args)
    problems = store.repair(args.session_id)
    if not problems:
        existing(store, args.session_id)
    if args.json:
        emit_json(problems)
    elif problems:
        emit(_format.render_problem(p, done=True) for p in problems)
        emit([f"{_format.plural(len(problems), 'problem')} in session {args.session_id}"])
    else:
        emit([f"nothing to repair in session {args.session_id}"])
    return problems_exit(problems)


def delete(args: argparse.Namespace) -> int:
    store = open_store(args)
    summary = existing(store, args.session_id)
    if not args.yes:
        if not sys.stdin.isatty():
            raise CliError("not deleting without confirmation: stdin is not a terminal (pass --yes)")
        title = f" {summary.title!r}" if summary.title else ""
        records = _format.plural(summary.message_count, "record")
        question = f"Delete session {args.session_id}{title} ({records})? [y/N] "
        answer = input(_safe.encodable(_safe.escape(question), sys.stdout))
        if answer.strip().lower() not in ("y", "yes"):
            emit(["not deleted"])
            return 1
    store.delete_session(args.session_id)
    emit([f"deleted session {args.session_id}"])
    children = store.list_sessions(parent_session_id=args.session_id)
    if children:
        emit([f"its child sessions are kept: {', '.join(c.session_id for c in children)}"])
    return 0


def rename(args: argparse.Namespace) -> int:
    store = open_store(args)
    existing(store, args.session_id)
    summary = store.update_session(args.session_id, title=args.title)
    emit([f"session {summary.session_id} is now titled {summary.title!r}"])
    return 0


def fork(args: argparse.Namespace) -> int:
    store = open_store(args)
    existing(store, args.session_id)
    new = store.fork(args.session_id, args.sequence, args.new_id)
    emit([f"forked session {args.session_id} at #{args.sequence} into {new}"])
    return 0


Command = Callable[[argparse.Namespace], int]

__all__ = [
    "BAR_FROM",
    "DEFAULT_ROOT",
    "DEMO_DIR",
    "ROOT_ENV",
    "CliError",
    "Command",
    "cat",
    "delete",
    "demo",
    "fork",
    "rename",
    "repair",
    "verify",
]
