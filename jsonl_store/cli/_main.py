"""The ``jsonl-store`` command line: the parser, and `main`, which turns errors into exit codes."""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .. import JsonlStoreError
from . import _catalog, _export, _git, _import, _search, _secrets, _sessions, _show, _sql, _tail, _tokens
from . import _commands as c
from ._safe import encodable, escape

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

#: Arguments that become stored text or a session's file name. (--root and DIR stay
#: free: a directory name with bytes that are not UTF-8 is a valid path.)
_TEXT_ARGUMENTS = {"session_id": "ID", "title": "TITLE", "parent": "--parent ID", "new_id": "--id NEW"}
_SURROGATE = re.compile("[\ud800-\udfff]")


def _version() -> str:
    # Imported here, for --version only: importlib.metadata costs every command ~25 ms.
    from importlib import metadata

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


#: The top-level help's closing words: how to read the exit codes, and a first example.
_EPILOG = """\
exit codes:
  0  success (verify, repair: no problems)
  1  problems found or fixed (verify, repair), nothing matched (search), or a declined delete
  2  bad input: a usage error, an unknown session, an unusable session or store

examples:
  jsonl-store demo                  write a demo store and show what restoring it gives
  jsonl-store ls --pinned           the sessions, pinned ones first
  jsonl-store show chat-1           a session's transcript (paged on a terminal)
  jsonl-store tail -f chat-1        follow a session while an agent writes it
  jsonl-store search 'week 53'      every session's messages, tool calls and titles

Run 'jsonl-store COMMAND --help' for a command's options and an example.
"""


class _Version(argparse.Action):
    """``--version``, which looks the version up only when asked (argparse's looks it up at build)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        parser._print_message(f"{parser.prog} {_version()}\n", sys.stdout)
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    """The parser of every subcommand (tests/unit/test_readme.py and the docs' CLI reference read its subcommands and options)."""
    root_help = f"the session store (default: ${c.ROOT_ENV}, else ./{c.DEFAULT_ROOT})"
    # --root is accepted before and after the subcommand; SUPPRESS keeps an absent one
    # from overwriting a given one.
    with_root = _Parser(add_help=False)
    with_root.add_argument("--root", metavar="DIR", default=argparse.SUPPRESS, help=root_help)

    parser = _Parser(
        prog="jsonl-store",
        parents=[with_root],
        description="Read, follow, check and repair jsonl_store sessions (LLM-agent sessions stored as plain files).",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action=_Version, nargs=0, help="show the version and exit")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=_Parser)

    def command(
        name: str,
        handler: c.Command,
        help: str,
        example: str,
        *,
        root: bool = True,
        aliases: Sequence[str] = (),
    ) -> argparse.ArgumentParser:
        sub = commands.add_parser(
            name,
            help=help,
            description=help,
            epilog="example:\n" + "\n".join(f"  {line}" for line in example.splitlines()),
            formatter_class=argparse.RawDescriptionHelpFormatter,
            parents=[with_root] if root else [],
            aliases=list(aliases),
        )
        sub.set_defaults(handler=handler)
        return sub

    sub = command(
        "demo",
        c.demo,
        "write a realistic demo session into DIR and print what restoring it gives",
        "jsonl-store demo /tmp/demo && jsonl-store --root /tmp/demo ls",
        root=False,
    )
    sub.add_argument(
        "directory", metavar="DIR", nargs="?", help=f"where to write it (default: ./{c.DEMO_DIR})"
    )

    sub = command(
        "list",
        _sessions.list_,
        "list sessions, newest activity first",
        "jsonl-store ls --pinned\njsonl-store list --parent chat-1 --json",
        aliases=["ls"],
    )
    sub.add_argument("--parent", metavar="ID", help="only the child sessions of ID")
    sub.add_argument("--pinned", action="store_true", help="pinned sessions first, marked with *")
    sub.add_argument("--json", action="store_true", help="print a JSON array")

    sub = command(
        "show",
        _show.show,
        "print a session's transcript, its model context (--context) or its raw records (--raw)",
        "jsonl-store show chat-1\njsonl-store show chat-1 --context --close --no-pager",
    )
    sub.add_argument("session_id", metavar="ID")
    mode = sub.add_mutually_exclusive_group()
    mode.add_argument("--raw", action="store_true", help="every raw-log record with its stored fields, whole")
    mode.add_argument("--context", action="store_true", help="what load() hands the model (view.messages)")
    sub.add_argument(
        "--close",
        action="store_true",
        help="the context with an interrupted last tool batch closed (model_context); implies --context",
    )
    sub.add_argument("--full", action="store_true", help="do not shorten long messages and tool results")
    sub.add_argument("--no-pager", action="store_true", help="never page the output on a terminal")
    sub.add_argument("--json", action="store_true", help="print one JSON document")

    sub = command(
        "tail",
        _tail.tail,
        "print a session's last records; with -f, follow it as records are appended (Ctrl-C ends)",
        "jsonl-store tail -n 20 chat-1\njsonl-store tail -f chat-1",
    )
    sub.add_argument("session_id", metavar="ID")
    sub.add_argument(
        "-n",
        "--lines",
        metavar="N",
        type=int,
        default=10,
        help="how many records to start with (default: 10)",
    )
    sub.add_argument("-f", "--follow", action="store_true", help="keep printing records as they are appended")
    sub.add_argument("--full", action="store_true", help="do not shorten long messages and tool results")
    sub.add_argument("--json", action="store_true", help="print each record as a JSON line, as cat does")

    sub = command(
        "cat", c.cat, "print the raw log's records as JSON lines", "jsonl-store cat chat-1 --after 9 | jq ."
    )
    sub.add_argument("session_id", metavar="ID")
    sub.add_argument(
        "--after", metavar="SEQ", type=int, default=0, help="only records with a sequence above SEQ"
    )

    sub = command(
        "usage",
        _tokens.usage,
        "print token totals per session, per model and overall; with ID, that session's model calls;"
        " with --by, tokens and cost per session, day, month, model or project",
        "jsonl-store usage\njsonl-store usage chat-1 --json\njsonl-store usage --by day --since 2026-01-01"
        "\njsonl-store usage --by model --json",
    )
    sub.add_argument("session_id", metavar="ID", nargs="?")
    sub.add_argument("--json", action="store_true", help="print one JSON document")
    _tokens.add_report_arguments(sub)

    sub = command(
        "pin", _sessions.pin, "pin a session (ls --pinned shows it first)", "jsonl-store pin chat-1"
    )
    sub.add_argument("session_id", metavar="ID")
    sub = command("unpin", _sessions.unpin, "unpin a session", "jsonl-store unpin chat-1")
    sub.add_argument("session_id", metavar="ID")

    sub = command(
        "verify",
        c.verify,
        "check one session, or every session, and change nothing",
        "jsonl-store verify || jsonl-store verify --json",
    )
    sub.add_argument("session_id", metavar="ID", nargs="?")
    sub.add_argument("--json", action="store_true", help="print the problems as a JSON array")

    sub = command("repair", c.repair, "fix what verify finds in one session", "jsonl-store repair chat-1")
    sub.add_argument("session_id", metavar="ID")
    sub.add_argument("--json", action="store_true", help="print the problems as a JSON array")

    sub = command("delete", c.delete, "delete a session's files", "jsonl-store delete chat-3 --yes")
    sub.add_argument("session_id", metavar="ID")
    sub.add_argument("--yes", action="store_true", help="do not ask for confirmation")

    sub = command("rename", c.rename, "set a session's title", "jsonl-store rename chat-2 'Async greeting'")
    sub.add_argument("session_id", metavar="ID")
    sub.add_argument("title", metavar="TITLE")

    sub = command(
        "fork",
        c.fork,
        "make a session whose history is ID's up to #SEQ, without copying it",
        "jsonl-store fork chat-1 4 --id chat-1-retry",
    )
    sub.add_argument("session_id", metavar="ID")
    sub.add_argument("sequence", metavar="SEQ", type=int, help="the last record of ID the fork keeps")
    sub.add_argument("--id", dest="new_id", metavar="NEW", help="the fork's session id (default: a new UUID)")

    # The example is the import command's own epilog (configure sets it, with the defaults).
    _import.configure(command("import", _import.run, _import.HELP, ""))

    for module in (
        _search,
        _export,
        _git,
        _secrets,
        _sql,
        _catalog,
    ):  # commands whose module adds its own parser
        module.register(command)
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
