"""``scan`` and ``redact``: secrets already stored, reported (never shown) and rewritten away.

Both are thin layers over `SessionStore.scan` and `SessionStore.redact_session`. What
they print comes from stored files, so every line goes through `_safe` like any other
output; a finding holds a masked preview and a fingerprint only, never the secret.
``scan`` fails (exit 1) only for certain secrets the allowlist does not clear, so a
pre-commit hook built on it never blocks a commit over a guess (spec §18.2).
"""

from __future__ import annotations

import argparse
import os
from collections import Counter
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from .._format.names import ALLOW_NAME
from .._text.redactions import summary
from . import _commands as c

if TYPE_CHECKING:
    from .. import SecretFinding, SessionStore
from . import _format

#: `build_parser`'s helper that adds one subcommand: name, handler, help, example -> its parser.
Register = Callable[[str, c.Command, str, str], argparse.ArgumentParser]
SCAN_EXAMPLE = """jsonl-store scan
jsonl-store scan chat-1 --json
jsonl-store scan --allow 3f2a9c0d1e4b5a67"""
REDACT_EXAMPLE = "jsonl-store redact chat-1"
SCAN_EXIT_CODES = (
    "exit codes: 0 nothing to act on (no finding, or only guesses and allowlisted values); "
    "1 a certain secret is stored (with --strict: also a guess); 2 bad input or an unusable store."
)
REDACT_EXIT_CODES = "exit codes: 0 nothing rewritten; 1 secrets redacted; 2 bad input or an unusable store."
ALLOW_HELP = (
    "add the fingerprints of findings that are no secret to the store's allowlist "
    f"({ALLOW_NAME}, to commit with the store); nothing stored changes"
)


def _line(finding: SecretFinding) -> str:
    where = f"{finding.file}:{finding.line}" if finding.line else finding.file
    sequence = f" sequence {finding.sequence}" if finding.sequence is not None else ""
    notes = ("" if finding.certain else " (unsure: reported only)") + (
        " (allowed)" if finding.allowed else ""
    )
    # A guess is shown by its kind's name alone: a marker there would read as if the value
    # had been replaced, and a guess never is (spec §18.2).
    label = f"[REDACTED:{finding.kind}]" if finding.certain else f"{finding.kind}?"
    return f"{finding.session_id}: {where}{sequence} {finding.where}: {label} {finding.preview} {finding.fingerprint}{notes}"


def _report(found: Iterable[SecretFinding], as_json: bool) -> list[SecretFinding]:
    found = list(found)
    if as_json:
        c.emit_json([finding._asdict() for finding in found])
    else:
        c.emit(_line(finding) for finding in found)
    return found


def _kinds(found: Iterable[SecretFinding]) -> str:
    """`` (github-token 2, env-secret 1)``: counts per kind, never a value; empty for none."""
    counts = Counter(finding.kind for finding in found)
    return f" ({summary(counts)})" if counts else ""


def _scan_summary(found: list[SecretFinding], where: str) -> str:
    if not found:
        return f"no secrets in {where}"
    certain = [f for f in found if f.blocking]
    guesses = sum(1 for f in found if not f.certain and not f.allowed)
    allowed = sum(1 for f in found if f.allowed)
    parts = [f"{_format.plural(len(certain), 'secret')}{_kinds(certain)}"]
    if guesses:
        parts.append(f"{guesses} unsure (reported only, never rewritten)")
    if allowed:
        parts.append(f"{allowed} allowed")
    advice = []
    if certain:
        advice.append("`jsonl-store redact ID` removes the secrets")
    advice.append("`jsonl-store scan --allow FINGERPRINT` clears a finding that is no secret")
    return f"{', '.join(parts)} in {where}; {'; '.join(advice)}"


def scan(args: argparse.Namespace) -> int:
    """Exit 1 when a certain secret is stored that the allowlist does not clear (a
    pre-commit hook fails the commit), or with ``--strict`` a guess too; else 0."""
    store = c.open_store(args)
    if args.allow:
        return _allow(store, args)
    if args.session_id is not None:
        c.existing(store, args.session_id)
    found = _report(store.scan(args.session_id), args.json)
    where = f"session {args.session_id}" if args.session_id else store.root
    if not args.json:
        c.emit([_scan_summary(found, where)])
    blocking = [f for f in found if not f.allowed and (f.certain or args.strict)]
    return 1 if blocking else 0


def _allow(store: SessionStore, args: argparse.Namespace) -> int:
    if args.session_id is not None or args.strict:
        raise c.CliError("scan --allow takes fingerprints only (no ID, no --strict)")
    added = store.allow_findings(args.allow)
    if args.json:
        # "already": the ones the text calls "already there", so the JSON says all it does.
        already = sorted(set(args.allow) - set(added))
        c.emit_json({"added": added, "already": already, "allowlist": os.path.join(store.root, ALLOW_NAME)})
    else:
        known = len(args.allow) - len(added)
        c.emit(
            [
                f"{_format.plural(len(added), 'fingerprint')} added to {os.path.join(store.root, ALLOW_NAME)}"
                + (f" ({known} already there)" if known else "")
                + "; commit it with the store"
            ]
        )
    return 0


def redact(args: argparse.Namespace) -> int:
    """Exit 1 when secrets were redacted (something changed), 0 when there were none."""
    store = c.open_store(args)
    c.existing(store, args.session_id)
    found = _report(store.redact_session(args.session_id), args.json)
    if not args.json:
        c.emit(
            [
                f"{_format.plural(len(found), 'secret')} redacted in session {args.session_id}{_kinds(found)}; "
                "guesses and allowlisted values left as they are"
            ]
        )
    return 1 if found else 0


def _fingerprint(text: str) -> str:
    from .._ops.secrets import FINGERPRINT_RE  # here: the other commands start without it

    if not FINGERPRINT_RE.fullmatch(text):
        # Not echoed: what was pasted here by mistake may be the secret itself.
        raise argparse.ArgumentTypeError("not a fingerprint (16 lower-case hex digits, as scan prints them)")
    return text


def register(command: Register) -> None:
    """Add ``scan`` and ``redact`` to the parser (`_main.build_parser`)."""
    sub = command(
        "scan",
        scan,
        "report secrets stored in one session, or every session (exit 1: a certain one found)",
        SCAN_EXAMPLE,
    )
    sub.epilog = f"{sub.epilog}\n\n{SCAN_EXIT_CODES}"
    sub.add_argument("session_id", metavar="ID", nargs="?")
    sub.add_argument("--json", action="store_true", help="print the findings as a JSON array")
    sub.add_argument("--strict", action="store_true", help="exit 1 for guesses too, not only certain secrets")
    sub.add_argument("--allow", nargs="+", metavar="FINGERPRINT", type=_fingerprint, help=ALLOW_HELP)
    sub = command(
        "redact", redact, "rewrite a session without the certain secrets scan finds in it", REDACT_EXAMPLE
    )
    sub.epilog = f"{sub.epilog}\n\n{REDACT_EXIT_CODES}"
    sub.add_argument("session_id", metavar="ID")
    sub.add_argument("--json", action="store_true", help="print what was redacted as a JSON array")
