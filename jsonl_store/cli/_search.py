"""``jsonl-store search``: the hits of `jsonl_store.search.search`, one line each, or JSON.

Exit codes as ``grep``'s (https://www.gnu.org/software/grep/manual/grep.html#Exit-Status):
0 when something matched, 1 when nothing did, 2 for an error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from .. import SessionSummary
from .._format.names import CATALOG_DIR
from ..search import CONTENT, Hit, search
from . import _commands as c
from . import _safe
from ._progress import Progress, progress, wanted
from ._term import screen

#: `_main.build_parser`'s ``command(name, handler, help, example)``, which adds one subcommand.
Register = Callable[[str, c.Command, str, str], argparse.ArgumentParser]
#: SGR bold red around a match, then a reset (ECMA-48 §8.3.117).
_MARK_ON = "\x1b[1;31m"
_MARK_OFF = "\x1b[0m"

#: Hit lines written in one call into a pipe or file: a ``write`` per hit cost about as
#: much as formatting it. On a terminal each line is written as it is found.
_BATCH = 256

EXAMPLE = """jsonl-store search 'week 53'
jsonl-store search --regex 'week 5[23]' --role tool --session chat-1   # needs jsonl_store[regex]
jsonl-store search README --json | jq '.[].sequence'
jsonl-store search --rank 'date parsing fix'   # best matches first, from the catalog"""
EXIT_CODES = "exit codes: 0 something matched; 1 nothing matched (as grep); 2 bad input or an unusable store."


def step(bar: Progress) -> Callable[[SessionSummary], None]:
    """An ``on_session`` that names the session now read and counts it on ``bar``."""

    def started(summary: SessionSummary) -> None:
        bar.describe(summary.session_id)
        bar.advance()

    return started


def hit_line(hit: Hit, *, colour: bool) -> str:
    """One hit as a line: where it is, what matched (`label`), then its snippet with the match
    marked (in colour) or plain.

    The three parts of the snippet are escaped one by one (`_safe.escape`), so a stored
    control character cannot end or fake the highlight.
    """
    before = hit.snippet[: hit.start]
    match = hit.snippet[hit.start : hit.end]
    after = hit.snippet[hit.end :]
    lead = "…" if hit.offset > hit.start else ""
    shown = _safe.escape(match)
    if colour:
        shown = f"{_MARK_ON}{shown}{_MARK_OFF}"
    where = f"{hit.session_id} title" if hit.sequence == 0 else f"{hit.session_id} #{hit.sequence} {hit.role}"
    return f"{_safe.escape(where)} ({label(hit)}): {lead}{_safe.escape(before)}{shown}{_safe.escape(after)}"


def label(hit: Hit) -> str:
    """What matched: the part's kind, and the field when it is not the part's own text
    (``tool_call name``, ``tool_call arguments``, ``image url``)."""
    if hit.field in (CONTENT, hit.kind):
        return hit.kind
    return f"{hit.kind} {hit.field}"


def run(args: argparse.Namespace) -> int:
    if args.rank:
        if args.regex:
            raise c.CliError("--rank and --regex do not go together: a ranked search matches words")
        from ._catalog import run_ranked

        return run_ranked(args)
    text: str = args.text
    if any("\ud800" <= char <= "\udfff" for char in text):
        # Bytes of argv that are not UTF-8 (Python decodes them to lone surrogates): no
        # stored text can hold them, so say so instead of finding nothing.
        raw = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        raise c.CliError(f"TEXT is not valid UTF-8 text: '{raw}'")
    store = c.open_store(args)
    with store:
        # The count is the bar's only use: without a bar (a pipe) the sessions are listed
        # once, by search() itself, not a second time here.
        total = 1 if args.session else len(store.list_sessions()) if wanted() else None
        found = 0
        hits: list[Hit] = []
        lines: list[str] = []
        # Colour as every command decides it (`_term.screen`): a terminal, not TERM=dumb,
        # NO_COLOR unset (https://no-color.org/), rich installed.
        shown = screen(sys.stdout)
        colour, batch = shown.colour, 1 if shown.tty else _BATCH
        with progress("searching", total) as bar:
            try:
                for hit in search(
                    store,
                    args.text,
                    regex=args.regex,
                    session_id=args.session,
                    role=args.role,
                    on_session=step(bar),
                ):
                    found += 1
                    if args.json:
                        hits.append(hit)
                        continue
                    lines.append(hit_line(hit, colour=colour))
                    if len(lines) >= batch:
                        _write(lines)
            finally:
                _write(lines)  # the hits found before an error are printed, as before
        if args.json:
            c.emit_json([hit.to_dict() for hit in hits])
    return 0 if found else 1


def _write(lines: list[str]) -> None:
    """Write the pending hit lines in one call, and forget them."""
    if lines:
        sys.stdout.write(_safe.encodable("\n".join(lines) + "\n", sys.stdout))
        lines.clear()


def register(command: Register) -> None:
    """Add ``search`` to the parser (called by `_main.build_parser`)."""
    sub = command(
        "search", run, "find a text in every session's messages, tool calls, results and titles", EXAMPLE
    )
    sub.epilog = f"{sub.epilog}\n\n{EXIT_CODES}"
    sub.add_argument("text", metavar="TEXT", help="the text to find (an RE2 regular expression with --regex)")
    sub.add_argument(
        "--regex",
        action="store_true",
        help="read TEXT as an RE2 regular expression, matched in linear time (the regex extra: google-re2)",
    )
    sub.add_argument(
        "--rank",
        action="store_true",
        help=f"the best matches of TEXT's words first (bm25), from the catalog in ROOT/{CATALOG_DIR} (built on first use)",
    )
    sub.add_argument(
        "--limit", metavar="N", type=int, default=10, help="with --rank, how many hits to show (default: 10)"
    )
    sub.add_argument("--session", metavar="ID", help="search only the session ID")
    sub.add_argument(
        "--role",
        choices=["system", "developer", "user", "assistant", "tool", "compacted"],
        help="only messages of this role (titles are then not searched)",
    )
    sub.add_argument("--json", action="store_true", help="print the hits as a JSON array")
