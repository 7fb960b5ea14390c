"""The ``jsonl-store`` command line: the parser, and `main`, which turns errors into exit codes."""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Sequence
from importlib import metadata
from typing import TYPE_CHECKING

from .. import JsonlStoreError
from . import _commands as c
from . import _secrets
from ._safe import encodable, escape

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

#: Arguments that become stored text or a session's file name. (--root and DIR stay
#: free: a directory name with bytes that are not UTF-8 is a valid path.)
_TEXT_ARGUMENTS = {"session_id": "ID", "title": "TITLE", "parent": "--parent ID"}
_SURROGATE = re.compile("[\ud800-\udfff]")


def _version() -> str:
    try:
        return metadata.version("jsonl_store")
    except metadata.PackageNotFoundError:  # running from a checkout that is not installed
        return "unknown"


class _Parser(argparse.ArgumentParser):
    """argparse, with its messages escaped: a usage error quotes the user's argv as given."""

    def _print_message(self, message: str, file: SupportsWrite[str] | None = None) -> None:
        if message:
            stream = file or sys.stderr
            # Help and usage text are several lines: escape each, keep the newlines.
            text = "\n".join(escape(line) for line in message.split("\n"))
            try:
                stream.write(encodable(text, stream))
            except (AttributeError, OSError):  # as argparse does: no stream, or a closed one
                pass


def build_parser() -> argparse.ArgumentParser:
    """The parser of every subcommand (the README test reads its subcommands and options)."""
    root_help = f"the session store (default: ${c.ROOT_ENV}, else ./{c.DEFAULT_ROOT})"
    # --root is accepted before and after the subcommand; SUPPRESS keeps an absent one
    # from overwriting a given one.
    with_root = _Parser(add_help=False)
    with_root.add_argument("--root", metavar="DIR", default=argparse.SUPPRESS, help=root_help)

    parser = _Parser(
        prog="jsonl-store",
        parents=[with_root],
        description="Read, check and repair jsonl_store sessions (LLM-agent sessions stored as plain files).",
        epilog="Exit codes: 0 ok; 1 problems found or fixed (verify, repair); 2 bad input or unusable.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=_Parser)

    def command(name: str, handler: c.Command, help: str, *, root: bool = True) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help, description=help, parents=[with_root] if root else [])
        sub.set_defaults(handler=handler)
        return sub

    sub = command(
        "demo",
        c.demo,
        "write a realistic demo session into DIR and print what restoring it gives",
        root=False,
    )
    sub.add_argument(
        "directory", metavar="DIR", nargs="?", help=f"where to write it (default: ./{c.DEMO_DIR})"
    )

    sub = command("list", c.list_, "list sessions, newest activity first")
    sub.add_argument("--parent", metavar="ID", help="only the child sessions of ID")
    sub.add_argument("--json", action="store_true", help="print a JSON array")

    sub = command("show", c.show, "print a session's metadata and its restored model context")
    sub.add_argument("session_id", metavar="ID")
    sub.add_argument("--raw", action="store_true", help="print every raw-log record instead of the context")
    sub.add_argument(
        "--close", action="store_true", help="close an interrupted last tool batch (model_context)"
    )
    sub.add_argument("--full", action="store_true", help="do not shorten long messages")
    sub.add_argument("--json", action="store_true", help="print one JSON document")

    sub = command("cat", c.cat, "print the raw log's records as JSON lines")
    sub.add_argument("session_id", metavar="ID")
    sub.add_argument(
        "--after", metavar="SEQ", type=int, default=0, help="only records with a sequence above SEQ"
    )

    sub = command("usage", c.usage, "print a session's token-usage log and its totals")
    sub.add_argument("session_id", metavar="ID")
    sub.add_argument("--json", action="store_true", help="print one JSON document")

    sub = command("verify", c.verify, "check one session, or every session, and change nothing")
    sub.add_argument("session_id", metavar="ID", nargs="?")
    sub.add_argument("--json", action="store_true", help="print the problems as a JSON array")

    sub = command("repair", c.repair, "fix what verify finds in one session")
    sub.add_argument("session_id", metavar="ID")
    sub.add_argument("--json", action="store_true", help="print the problems as a JSON array")

    sub = command("delete", c.delete, "delete a session's files")
    sub.add_argument("session_id", metavar="ID")
    sub.add_argument("--yes", action="store_true", help="do not ask for confirmation")

    sub = command("rename", c.rename, "set a session's title")
    sub.add_argument("session_id", metavar="ID")
    sub.add_argument("title", metavar="TITLE")

    _secrets.register(command)
    return parser


def _fail(message: str) -> int:
    stream = sys.stderr
    stream.write(encodable(f"jsonl-store: error: {escape(message)}\n", stream))
    return 2


def _os_error(exc: OSError) -> str:
    if exc.strerror and exc.filename is not None:
        return f"{exc.strerror}: {exc.filename!r}"
    return str(exc)


def _check_text(args: argparse.Namespace) -> None:
    """Refuse an argument holding bytes that are not UTF-8, before the store sees it.

    Python decodes such argv bytes to lone surrogates (``$'\\xff'`` becomes ``'\\udcff'``),
    which no JSON file can hold; the store may raise `UnicodeEncodeError` or
    `InvalidArgument` for them, and this says which argument and which bytes.
    """
    for name, shown in _TEXT_ARGUMENTS.items():
        value = getattr(args, name, None)
        if isinstance(value, str) and _SURROGATE.search(value):
            raw = value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            raise c.CliError(f"{shown} is not valid UTF-8 text: '{raw}'")


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so flushing it at exit cannot raise `BrokenPipeError` again.

    This is the recipe of https://docs.python.org/3/library/signal.html#note-on-sigpipe.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no real descriptor (stdout replaced in-process)
        pass


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``jsonl-store`` with ``argv`` (default: ``sys.argv[1:]``); return the exit code.

    Bad input never ends in a traceback: the store's errors and the operating system's
    errors are printed as one line on stderr, with exit code 2.
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, and usage errors (argparse prints them)
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    try:
        _check_text(args)
        code: int = args.handler(args)
        # Flush inside the try, so a reader that went away is noticed here, not at exit.
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        # The reader went away (`jsonl-store show ID | head`): it took what it wanted, so
        # stop quietly with 0, like a pipeline the user meant (the docs' recipe exits 1;
        # under `set -o pipefail` that would fail every `| head`).
        _quiet_stdout()
        return 0
    except (JsonlStoreError, c.CliError) as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(_os_error(exc))
    except UnicodeError as exc:
        # Text the store cannot encode (a lone surrogate reaching it some other way).
        return _fail(f"not valid UTF-8 text: {exc}")
    except RecursionError:
        # Not swallowed: the command fails, but with one line instead of a screen of frames.
        return _fail("a stored value is nested too deeply to read (RecursionError)")
    except KeyboardInterrupt:
        sys.stderr.write("\n")
        return 130
