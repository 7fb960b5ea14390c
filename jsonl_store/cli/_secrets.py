"""``scan`` and ``redact``: secrets already stored, reported (never shown) and rewritten away.

Both are thin layers over `SessionStore.scan` and `SessionStore.redact_session`. What
they print comes from stored files, so every line goes through `_safe` like any other
output; a finding holds a masked preview only, never the secret.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from . import _commands as c

if TYPE_CHECKING:
    from .. import SecretFinding
from . import _format

#: `build_parser`'s helper that adds one subcommand: name, handler, help, example -> its parser.
Register = Callable[[str, c.Command, str, str], argparse.ArgumentParser]
SCAN_EXAMPLE = """jsonl-store scan
jsonl-store scan chat-1 --json"""
REDACT_EXAMPLE = "jsonl-store redact chat-1"
EXIT_CODES = (
    "exit codes: 0 no secret; 1 secrets found (scan) or redacted (redact); 2 bad input or an unusable store."
)


def _line(finding: SecretFinding) -> str:
    where = f"{finding.file}:{finding.line}" if finding.line else finding.file
    sequence = f" sequence {finding.sequence}" if finding.sequence is not None else ""
    return (
        f"{finding.session_id}: {where}{sequence} {finding.where}: "
        f"[REDACTED:{finding.kind}] {finding.preview}"
    )


def _report(found: Iterable[SecretFinding], as_json: bool) -> list[SecretFinding]:
    found = list(found)
    if as_json:
        c.emit_json([finding._asdict() for finding in found])
    else:
        c.emit(_line(finding) for finding in found)
    return found


def scan(args: argparse.Namespace) -> int:
    """Exit 1 when a secret is stored (a pre-commit hook fails the commit), else 0."""
    store = c.open_store(args)
    if args.session_id is not None:
        c.existing(store, args.session_id)
    found = _report(store.scan(args.session_id), args.json)
    where = f"session {args.session_id}" if args.session_id else store.root
    if not args.json:
        if found:
            c.emit(
                [
                    f"{_format.plural(len(found), 'secret')} stored in {where}; `jsonl-store redact ID` removes them"
                ]
            )
        else:
            c.emit([f"no secrets in {where}"])
    return 1 if found else 0


def redact(args: argparse.Namespace) -> int:
    """Exit 1 when secrets were redacted (something changed), 0 when there were none."""
    store = c.open_store(args)
    c.existing(store, args.session_id)
    found = _report(store.redact_session(args.session_id), args.json)
    if not args.json:
        c.emit([f"{_format.plural(len(found), 'secret')} redacted in session {args.session_id}"])
    return 1 if found else 0


def register(command: Register) -> None:
    """Add ``scan`` and ``redact`` to the parser (`_main.build_parser`)."""
    sub = command(
        "scan", scan, "report secrets stored in one session, or every session (exit 1: found)", SCAN_EXAMPLE
    )
    sub.epilog = f"{sub.epilog}\n\n{EXIT_CODES}"
    sub.add_argument("session_id", metavar="ID", nargs="?")
    sub.add_argument("--json", action="store_true", help="print the findings as a JSON array")
    sub = command("redact", redact, "rewrite a session without the secrets scan finds in it", REDACT_EXAMPLE)
    sub.epilog = f"{sub.epilog}\n\n{EXIT_CODES}"
    sub.add_argument("session_id", metavar="ID")
    sub.add_argument("--json", action="store_true", help="print what was redacted as a JSON array")
