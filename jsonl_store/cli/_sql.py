"""``sql QUERY``: a DuckDB query over the whole store's views (`jsonl_store.sql`), printed
as a table, as ``--json`` (a list of row objects) or as ``--csv``."""

from __future__ import annotations

import argparse
import csv
import io
import json
import re
import sys
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

import msgspec

from .._format.depth import with_deep_stack
from . import _commands as c
from . import _format, _safe

Register = Callable[[str, c.Command, str, str], argparse.ArgumentParser]
HELP = "run a DuckDB SQL query over every session (views: sessions, records, parts, usage, snapshots)"
EXAMPLE = """jsonl-store sql "SELECT session_id, title, message_count FROM sessions ORDER BY updated_at DESC LIMIT 5"
jsonl-store sql "SELECT tool_name, count(*) AS calls FROM parts WHERE kind = 'tool_call' GROUP BY ALL" --json"""
#: The ``parts`` view is the one built in Python (spec §5.2's reading of every message):
#: built only for a query that names it.
_NAMES_PARTS = re.compile(r"\bparts\b", re.IGNORECASE)


def run(args: argparse.Namespace) -> int:
    try:
        from .. import sql
    except ImportError as exc:
        raise c.CliError(f"{exc}") from None
    import duckdb

    store = c.open_store(args)  # a missing root is a usage error, as for every command
    connection = sql.connect(store.root, parts=bool(_NAMES_PARTS.search(args.query)), on_problem=c.warn)
    try:
        result = connection.execute(args.query)
        if not result.description:  # a statement that returns no rows (SET, CREATE)
            return 0
        names = [column[0] for column in result.description]
        kinds = [str(column[1]) for column in result.description]
        rows = result.fetchall()
    except duckdb.Error as exc:
        raise c.CliError(f"the query failed: {_safe.escape(str(exc))}") from None
    finally:
        connection.close()
    values = [[_value(v, kind) for v, kind in zip(row, kinds, strict=True)] for row in rows]
    if args.json:
        c.emit_json([dict(zip(names, row, strict=True)) for row in values])
    elif args.csv:
        _emit_csv(names, values)
    else:
        c.emit([_table(names, values)])
    return 0


def _value(value: Any, kind: str) -> Any:
    """A DuckDB value as JSON can hold it, the same for all three outputs: a JSON column
    parsed, a decimal as a number; times in RFC 3339, intervals in ISO 8601, bytes in base64
    and UUIDs as text (msgspec's builtins: https://jcristharif.com/msgspec/supported-types.html)."""
    if kind == "JSON" and isinstance(value, str):
        return _json(value)
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    return msgspec.to_builtins(value)


@with_deep_stack
def _json(text: str) -> Any:
    # The standard library, not orjson: a stored integer may be beyond 64 bits, and a
    # message 1000 levels deep (spec §5) needs the deeper stack.
    return json.loads(text)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{value:,}" if isinstance(value, int) else repr(value)
    return _format.dumps(value).decode().rstrip("\n")


def _table(names: Sequence[str], rows: list[list[Any]]) -> Any:
    numeric = {
        i
        for i in range(len(names))
        if rows and all(isinstance(row[i], (int, float)) and not isinstance(row[i], bool) for row in rows)
    }
    wrap = set(range(len(names))) - numeric
    header = [name.upper() for name in names]
    return _format.table(header, ([_cell(v) for v in row] for row in rows), right=numeric, wrap=wrap)


def _emit_csv(names: Sequence[str], rows: list[list[Any]]) -> None:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(names)
    for row in rows:
        writer.writerow([_csv_cell(v) for v in row])
    text = out.getvalue()
    # The exact bytes in a pipe; on a terminal, nothing stored is written raw (`_safe`).
    if sys.stdout.isatty():
        text = "\n".join(_safe.escape(line) for line in text.split("\n"))
    sys.stdout.write(_safe.encodable(text, sys.stdout))


def _csv_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (dict, list, bool)):
        return _format.dumps(value).decode().rstrip("\n")
    return str(value)


def register(command: Register) -> None:
    """Add ``sql`` to the parser (called by `_main.build_parser`)."""
    sub = command("sql", run, HELP, EXAMPLE)
    sub.add_argument("query", metavar="QUERY", help="the SQL query (DuckDB's dialect)")
    output = sub.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print the rows as a JSON list of objects")
    output.add_argument("--csv", action="store_true", help="print the rows as CSV with a header line")
