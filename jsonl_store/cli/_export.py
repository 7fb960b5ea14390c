"""``jsonl-store export``: one session as Markdown, HTML or JSON, or every session as HTML pages."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys

from . import _commands as c
from . import _safe
from ._progress import progress
from ._search import Register, step

FORMATS = ("md", "html", "json")

EXAMPLE = """jsonl-store export chat-1 --format md -o chat-1.md
jsonl-store export chat-1 --format html -o chat-1.html
jsonl-store export --all --format html -o site/"""
EXIT_CODES = "exit codes: 0 written; 2 bad input, an unknown session or a file that cannot be written."


def _write_file(path: str, data: bytes) -> None:
    # Beside the target first, then renamed over it: no half-written export is left behind.
    temporary = f"{path}.tmp"
    try:
        with open(temporary, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _plain_note() -> None:
    """Say on stderr that pages show text as written, when the ``html`` extra is missing."""
    from .. import export

    if not export.html_extra_available():
        _safe.write_lines(
            sys.stderr,
            [
                "jsonl-store: note: message text is shown as written, not rendered as Markdown: "
                "pip install 'jsonl_store[html]' renders it (markdown-it-py, nh3, Pygments)"
            ],
        )


def _one(args: argparse.Namespace, fmt: str) -> int:
    from .. import export  # here: every other command starts without the exporters

    store = c.open_store(args)
    with store:
        c.existing(store, args.session_id)
        if fmt == "json":
            data = export.to_json(store, args.session_id)
        elif fmt == "html":
            data = export.to_html(store, args.session_id).encode("utf-8", "surrogateescape")
            _plain_note()
        else:
            data = export.to_markdown(store, args.session_id).encode("utf-8", "surrogateescape")
    if args.output is None:
        text = data.decode("utf-8", "surrogateescape")
        if fmt == "json":
            sys.stdout.write(_safe.json_text(data, sys.stdout))
        else:
            # The renderers already show every control and bidi character as an escape.
            sys.stdout.write(_safe.encodable(text, sys.stdout))
        return 0
    _write_file(args.output, data)
    c.emit([f"exported session {args.session_id} as {fmt} to {args.output}"])
    return 0


def _all(args: argparse.Namespace) -> int:
    from .. import export  # here: every other command starts without the exporters

    store = c.open_store(args)
    with store:
        total = len(store.list_sessions())
        with progress("exporting", total) as bar:
            written = export.export_html(
                store,
                args.output,
                on_session=step(bar),
            )
    _plain_note()
    pages = sum(path.endswith(".html") for path in written) - 1
    c.emit([f"exported {pages} session{'' if pages == 1 else 's'} to {written[0]}"])
    return 0


def run(args: argparse.Namespace) -> int:
    if args.all:
        if args.session_id is not None:
            raise c.CliError("give either ID or --all, not both")
        if args.format not in (None, "html"):
            raise c.CliError("--all writes HTML pages only: use --format html")
        if args.output is None:
            raise c.CliError("--all needs -o DIR, the directory to write the pages into")
        return _all(args)
    if args.session_id is None:
        raise c.CliError("give the ID of the session to export, or --all")
    return _one(args, args.format or "md")


def register(command: Register) -> None:
    """Add ``export`` to the parser (called by `_main.build_parser`)."""
    sub = command("export", run, "write a session as a Markdown, HTML or JSON transcript", EXAMPLE)
    sub.epilog = f"{sub.epilog}\n\n{EXIT_CODES}"
    sub.add_argument("session_id", metavar="ID", nargs="?", help="the session to export")
    sub.add_argument("--format", choices=FORMATS, help="md (the default), html or json")
    sub.add_argument("-o", "--output", metavar="FILE", help="write to FILE (with --all: the directory DIR)")
    sub.add_argument("--all", action="store_true", help="every session as HTML pages into -o DIR")
