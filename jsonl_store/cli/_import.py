"""``jsonl-store import claude-code|codex|pi [PATH...]``: other tools' transcripts as sessions.

A thin layer over `jsonl_store.importers`: it picks the importer, draws a progress bar
on a terminal (`_progress`), and prints the `ImportReport`, as text (escaped: file names
and reasons may hold anything) or as JSON with ``--json``. Exit codes: 0 when every
file was imported (lines skipped as not understood are normal), 1 when a line was
damaged or a file could not be imported, 2 for a path that does not exist or an
unusable store.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING

from .. import SessionStore
from .._text.redactions import summary

if TYPE_CHECKING:
    from ..importers import FileReport, ImportReport
from . import _commands as c
from . import _format
from ._progress import progress

#: The tools, and the importer function of each (`jsonl_store.importers`, imported when a
#: command imports: every other command starts without the importers).
_IMPORTERS = {"claude-code": "import_claude_code", "codex": "import_codex", "pi": "import_pi"}

HELP = "import Claude Code, Codex or pi transcripts as sessions"
EPILOG = """\
With no PATH, the tool's own folder: ~/.claude/projects ($CLAUDE_CONFIG_DIR/projects),
~/.codex/sessions ($CODEX_HOME/sessions) or ~/.pi/agent/sessions ($PI_CODING_AGENT_DIR/sessions).
Importing again adds only what is new. Secrets are replaced by markers as every write of
the store does, and each file's line counts the values replaced per kind (never the
values); --no-redact stores the transcripts as written. Exit codes: 0 imported; 1 damaged
lines or files that could not be imported; 2 no such path, or an unusable store.

example:
  jsonl-store --root sessions import claude-code ~/.claude/projects/-home-me-project
"""


def configure(sub: argparse.ArgumentParser) -> None:
    """The ``import`` subcommand's arguments (registered by `_main.build_parser`)."""
    sub.epilog = EPILOG
    sub.formatter_class = argparse.RawDescriptionHelpFormatter
    sub.add_argument("tool", choices=sorted(_IMPORTERS), metavar="TOOL", help="claude-code, codex or pi")
    sub.add_argument(
        "paths", nargs="*", metavar="PATH", help="transcript files, or folders to search for *.jsonl"
    )
    sub.add_argument("--json", action="store_true", help="print the import report as JSON")
    sub.add_argument(
        "--no-redact",
        action="store_true",
        help="store the transcripts as written: no secret is replaced by a marker (scan finds them later)",
    )


def run(args: argparse.Namespace) -> int:
    root = c.root_of(args)
    if os.path.exists(root) and not os.path.isdir(root):
        raise c.CliError(f"the session store '{root}' is not a directory (use --root DIR)")
    from .. import importers

    importer: Callable[..., ImportReport] = getattr(importers, _IMPORTERS[args.tool])
    redact = not args.no_redact
    with (
        SessionStore(root, on_problem=c.warn, on_redact=c.told, redact=redact) as store,
        progress(f"importing {args.tool}", None) as bar,
    ):

        def report_progress(done: int, total: int, path: str) -> None:
            if done:
                bar.advance()
            bar.describe(f"importing {os.path.basename(path)} ({min(done + 1, total)}/{total})")

        report = importer(store, args.paths or None, progress=report_progress)
    if args.json:
        c.emit_json(report.to_dict())
    else:
        c.emit(_lines(report, root, redact))
    return 0 if report.ok else 1


def _redacted(counts: Mapping[str, int]) -> str:
    """``3 values redacted (github-token 2, env-secret 1)``: kinds and counts, never a value."""
    total = sum(counts.values())
    if not total:
        return "0 redacted"
    return f"{_format.plural(total, 'value')} redacted ({summary(counts)})"


def _file_line(f: FileReport, redact: bool) -> str:
    if f.problem is not None:
        return f"{f.path}: not imported: {f.problem}"
    parts = [f"{f.added} added", f"{f.present} already present", f"{f.skipped} skipped"]
    if f.damaged_count:
        parts.append(f"{f.damaged_count} damaged")
    if f.snapshots:
        parts.append(_format.plural(f.snapshots, "snapshot"))
    if f.children:
        parts.append(_format.plural(len(f.children), "sub-agent session"))
    if redact:
        parts.append(_redacted(f.redacted))
    return f"{f.path} -> {f.session_id}: {', '.join(parts)}"


def _lines(report: ImportReport, root: str, redact: bool) -> Iterator[str]:
    for f in report.files:
        yield _file_line(f, redact)
        for damaged in f.damaged:
            yield f"  {damaged}"
        if f.damaged_count > len(f.damaged):
            yield f"  ... and {f.damaged_count - len(f.damaged)} more damaged lines"
    refused = sum(1 for f in report.files if f.problem is not None)
    if report.files and refused == len(report.files):
        return  # nothing imported: each file's own line says why (one line for one file)
    files = _format.plural(len(report.files) - refused, "file")
    yield (
        f"{files} imported into {root}: {report.added} records added, {report.present} already present, "
        f"{report.skipped} lines skipped, {report.damaged_count} damaged, "
        + (_redacted(report.redacted) if redact else "stored as written (--no-redact)")
        + (f"; {_format.plural(refused, 'file')} not imported" if refused else "")
    )
