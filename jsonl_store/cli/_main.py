"""The ``jsonl-store`` command line: the parser, and `main`, which turns errors into exit codes."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from importlib import metadata

from .. import JsonlStoreError
from . import _commands as c


def _version() -> str:
    try:
        return metadata.version("jsonl_store")
    except metadata.PackageNotFoundError:  # running from a checkout that is not installed
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    """The parser of every subcommand (the README test reads its subcommands and options)."""
    root_help = f"the session store (default: ${c.ROOT_ENV}, else ./{c.DEFAULT_ROOT})"
    # --root is accepted before and after the subcommand; SUPPRESS keeps an absent one
    # from overwriting a given one.
    with_root = argparse.ArgumentParser(add_help=False)
    with_root.add_argument("--root", metavar="DIR", default=argparse.SUPPRESS, help=root_help)

    parser = argparse.ArgumentParser(
        prog="jsonl-store",
        parents=[with_root],
        description="Read, check and repair jsonl_store sessions (LLM-agent sessions stored as plain files).",
        epilog="Exit codes: 0 ok; 1 problems found or fixed (verify, repair); 2 bad input or unusable.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

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
    return parser


def _fail(message: str) -> int:
    sys.stderr.write(f"jsonl-store: error: {message}\n")
    return 2


def _os_error(exc: OSError) -> str:
    if exc.strerror and exc.filename is not None:
        return f"{exc.strerror}: {exc.filename!r}"
    return str(exc)


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
        code: int = args.handler(args)
        sys.stdout.flush()
        return code
    except (JsonlStoreError, c.CliError) as exc:
        return _fail(str(exc))
    except BrokenPipeError:
        # The reader went away (`jsonl-store cat ID | head`): stop quietly, like cat(1).
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 1
    except OSError as exc:
        return _fail(_os_error(exc))
    except KeyboardInterrupt:
        sys.stderr.write("\n")
        return 130
