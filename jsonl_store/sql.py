"""SQL over a whole store with DuckDB (the ``sql`` extra): `connect` and its views.

The views (``sessions``, ``records``, ``parts``, ``usage``, ``snapshots``) and their
columns are README's "SQL over the store". A raw or usage log whose every line is valid
(spec §3: checksum, sequence one above the last, no ``\\r`` or BOM to tolerate, no blob
marker to resolve, §5.1) is read by DuckDB's own JSON reader, straight from the file; any
other log is read through `SessionStore` (the reader rules of spec §8), so a damaged line
is left out and reported to ``on_problem`` as every reader does, and its rows are written
to a private scratch directory that a view reads. Checking a log costs one CRC-32 per line,
no JSON parsing.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import msgspec
import orjson

from ._context.dialects import message_parts
from ._context.parts import ImagePart, OtherPart, Part, ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from ._context.view import SessionSummary
from ._errors import InvalidArgument
from ._format.names import LOG_NAME, USAGE_NAME, snapshot_name
from ._log.modes import as_written
from ._log.problems import UNUSABLE_KINDS, Problem
from .store import SessionStore

try:
    import duckdb
except ImportError as exc:  # pragma: no cover - the extra is missing
    raise ImportError("jsonl_store.sql needs DuckDB: pip install 'jsonl_store[sql]'") from exc

__all__ = ["VIEWS", "connect"]

#: The views `connect` defines, in the order README describes them.
VIEWS = ("sessions", "records", "parts", "usage", "snapshots")

#: The two streams a record may time apart from the whole operation (spec §4).
_STREAMS = ("reasoning", "content")
_TOKENS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")

#: A raw-log line's columns as DuckDB reads them (spec §4; absent keys are their defaults).
_RECORD_COLUMNS = {
    "sequence": "BIGINT",
    "batch_end": "BIGINT",
    "id": "VARCHAR",
    "created_at": "TIMESTAMPTZ",
    "plain": "BOOLEAN",
    "message": "JSON",
    "request_id": "VARCHAR",
    "metadata": "JSON",
    "tags": "JSON",
    "started_at": "TIMESTAMPTZ",
    "completed_at": "TIMESTAMPTZ",
    "duration_ns": "BIGINT",
    **{f"{stream}_{end}": "TIMESTAMPTZ" for stream in _STREAMS for end in ("started_at", "completed_at")},
    **{f"{stream}_duration_ns": "BIGINT" for stream in _STREAMS},
    **dict.fromkeys(_TOKENS, "BIGINT"),
}
#: A usage line's columns (spec §7).
_USAGE_COLUMNS = {
    "recorded_at": "TIMESTAMPTZ",
    **dict.fromkeys(_TOKENS, "BIGINT"),
    "model": "VARCHAR",
    "request_id": "VARCHAR",
    "extra": "JSON",
}
_SESSION_COLUMNS = {
    "session_id": "VARCHAR",
    "title": "VARCHAR",
    "agent_name": "VARCHAR",
    "parent_session_id": "VARCHAR",
    "session_type": "BIGINT",
    "pinned": "BOOLEAN",
    "fork_session_id": "VARCHAR",
    "fork_sequence": "BIGINT",
    "created_at": "TIMESTAMPTZ",
    "updated_at": "TIMESTAMPTZ",
    "message_count": "BIGINT",
    "dialect": "VARCHAR",
    "metadata": "JSON",
}
_PART_COLUMNS = {
    "session_id": "VARCHAR",
    "sequence": "BIGINT",
    "part_index": "BIGINT",
    "kind": "VARCHAR",
    "tool_name": "VARCHAR",
    "tool_call_id": "VARCHAR",
    "arguments": "JSON",
    "content": "VARCHAR",
    "is_error": "BOOLEAN",
    "media_type": "VARCHAR",
    "url": "VARCHAR",
}
_SNAPSHOT_COLUMNS = {
    "session_id": "VARCHAR",
    "version": "BIGINT",
    "id": "VARCHAR",
    "created_at": "TIMESTAMPTZ",
    "compacted_through_sequence": "BIGINT",
    "boundary_offset": "BIGINT",
    "tail_offset": "BIGINT",
    "boundary_record_id": "VARCHAR",
}

#: The longest line DuckDB reads straight from a log: this library's record cap (spec §5.1);
#: a log with a longer line (another writer's) is read through the library.
_LONGEST_DIRECT = 16 * 1024 * 1024 + 1


def connect(
    root: str | os.PathLike[str],
    *,
    parts: bool = True,
    on_problem: Callable[[Problem], None] | None = None,
) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with the store at ``root`` as the views in `VIEWS`.

    Every log is checked before it is read (see the module's text); damage goes to
    ``on_problem``. ``parts=False`` leaves the ``parts`` view empty: it is the one view
    built in Python, by `jsonl_store.message_parts`, reading every message. The views read
    the clean logs again at each query, so what was appended since is seen too (unchecked).
    Raises `InvalidArgument` when ``root`` is not a directory.
    """
    if not os.path.isdir(root):
        raise InvalidArgument(f"no session store at {os.fspath(root)!r}: not a directory")
    store = SessionStore(root, on_problem=_once(on_problem or _warn))
    con = duckdb.connect()
    # What is read through Python stays on disk as newline-delimited JSON, read by views, so
    # memory does not grow with the store; the files go with the connection. mkdtemp makes
    # the directory 0700: the rows are transcripts (spec §2, "Files and permissions").
    scratch = tempfile.mkdtemp(prefix="jsonl-store-sql.")
    weakref.finalize(con, shutil.rmtree, scratch, ignore_errors=True)
    try:
        _build(con, _Loader(con, scratch), store, parts=parts)
    except BaseException:
        con.close()
        raise
    return con


def _build(con: duckdb.DuckDBPyConnection, loader: _Loader, store: SessionStore, *, parts: bool) -> None:
    summaries = store.list_sessions()
    _report_unlisted(store, summaries)
    loader.table("_sessions", _SESSION_COLUMNS, map(_session_row, summaries), view=False)
    _records_view(con, loader, store, summaries)
    _usage_view(con, loader, store, summaries)
    loader.table("snapshots", _SNAPSHOT_COLUMNS, _snapshot_rows(store, summaries), view=False)
    loader.table("parts", _PART_COLUMNS, _part_rows(store, summaries if parts else []))
    con.execute(_SESSIONS_VIEW)


def _report_unlisted(store: SessionStore, summaries: list[SessionSummary]) -> None:
    """A session `list_sessions` leaves out (a newer format, an unsafe path: README
    "list_sessions") is in no view: say so, with verify's reason, rather than hide it."""
    listed = {summary.session_id for summary in summaries}
    for name in store.session_ids():
        if name not in listed:
            for problem in store.verify(name):
                if problem.kind in UNUSABLE_KINDS and problem.kind != "unsafe-path":  # listed already
                    store._sink(problem)


def _warn(problem: Problem) -> None:
    """What `SessionStore` does with a problem when no ``on_problem`` is given."""
    logging.getLogger("jsonl_store").warning("%s", problem)


def _once(on_problem: Callable[[Problem], None]) -> Callable[[Problem], None]:
    """``on_problem`` told of each problem once: the records and parts views read a damaged
    log each, and the damage is one."""
    seen: set[str] = set()

    def report(problem: Problem) -> None:
        if str(problem) not in seen:
            seen.add(str(problem))
            on_problem(problem)

    return report


class _Loader:
    """Rows from Python into DuckDB, through newline-delimited JSON files in ``scratch``
    (DuckDB's JSON reader ingests them in bulk; no pyarrow or pandas needed)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, scratch: str) -> None:
        self.con, self.scratch, self.count = con, scratch, 0
        #: The longest line written: a record whose blobs were read back in may be longer
        #: than any raw-log line, and DuckDB's reader needs to be told.
        self.longest = 0

    def file(self, lines: Iterable[bytes]) -> str | None:
        self.count += 1
        path = os.path.join(self.scratch, f"{self.count}.jsonl")
        written = False
        with open(path, "wb") as out:
            for line in lines:
                out.write(line)
                out.write(b"\n")
                self.longest = max(self.longest, len(line) + 1)
                written = True
        return path if written else None

    def table(
        self, name: str, columns: dict[str, str], rows: Iterable[dict[str, Any]], *, view: bool = True
    ) -> None:
        """``rows`` as ``name``: a view reading them from disk, or (``view=False``, for the
        small ones queries join on) a table."""
        path = self.file(orjson.dumps(row, default=_json_default) for row in rows)
        source = _read_json([path], columns, longest=self.longest) if path else _empty(columns)
        self.con.execute(f"CREATE {'VIEW' if view else 'TABLE'} {name} AS SELECT * FROM {source}")


def _json_default(value: object) -> object:
    if isinstance(value, bytes):
        return None
    return msgspec.to_builtins(value)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _struct(columns: dict[str, str]) -> str:
    return "{" + ", ".join(f"{_quote(k)}: {_quote(v)}" for k, v in columns.items()) + "}"


def _read_json(paths: list[str], columns: dict[str, str], *, filename: bool = False, longest: int = 0) -> str:
    files = "[" + ", ".join(_quote(p) for p in paths) + "]"
    return (
        f"read_json({files}, format='newline_delimited', columns={_struct(columns)}, "
        f"filename={str(filename).lower()}, maximum_object_size={max(_LONGEST_DIRECT, longest)})"
    )


def _empty(columns: dict[str, str]) -> str:
    nulls = ", ".join(f"CAST(NULL AS {t}) AS {c}" for c, t in columns.items())
    return f"(SELECT {nulls} LIMIT 0)"


# -- the logs -------------------------------------------------------------------------


def _direct(root: str) -> bool:
    """Whether DuckDB can be given paths below ``root``: it reads every path it is given as
    a glob pattern (https://duckdb.org/docs/stable/data/multiple_files/overview), so a root
    whose name holds a glob character is read through the library instead."""
    return not any(char in root for char in "*?[]{}")


def _records_view(
    con: duckdb.DuckDBPyConnection, loader: _Loader, store: SessionStore, summaries: list[SessionSummary]
) -> None:
    clean, checked = [], []
    for summary in summaries:
        base = summary.fork.sequence if summary.fork is not None else 0
        path = os.path.join(store.root, summary.session_id, LOG_NAME)
        if _direct(store.root) and as_written(path, base, _LONGEST_DIRECT):
            clean.append(path)
        elif os.path.lexists(path):
            checked.append((summary.session_id, base))
    rows = (
        msgspec.json.encode(record)
        for session_id, base in checked
        for record in store.records(session_id, after=base)
    )
    kept = loader.file(rows)
    columns = {"session_id": "VARCHAR", **_RECORD_COLUMNS}
    source = _read_json([kept], columns, longest=loader.longest) if kept else _empty(columns)
    con.execute(f"CREATE VIEW _records_checked AS SELECT * FROM {source}")
    direct = (
        f"SELECT {_DIRECTORY_NAME} AS session_id, * EXCLUDE (filename) FROM {_read_json(clean, _RECORD_COLUMNS, filename=True)}"
        if clean
        else None
    )
    union = "SELECT * FROM _records_checked" + (f" UNION ALL BY NAME {direct}" if direct else "")
    con.execute(f"CREATE VIEW records AS SELECT {_RECORD_SELECT} FROM ({union})")


def _usage_view(
    con: duckdb.DuckDBPyConnection, loader: _Loader, store: SessionStore, summaries: list[SessionSummary]
) -> None:
    clean, checked = [], []
    for summary in summaries:
        path = os.path.join(store.root, summary.session_id, USAGE_NAME)
        if _direct(store.root) and as_written(path, None, _LONGEST_DIRECT):
            clean.append(path)
        elif os.path.lexists(path):
            checked.append(summary.session_id)
    rows = (_usage_row(session_id, line) for session_id in checked for line in store.usage(session_id))
    loader.table("_usage_checked", {"session_id": "VARCHAR", **_USAGE_COLUMNS}, rows)
    direct = (
        f"SELECT {_DIRECTORY_NAME} AS session_id, * EXCLUDE (filename) FROM {_read_json(clean, _USAGE_COLUMNS, filename=True)}"
        if clean
        else None
    )
    union = "SELECT * FROM _usage_checked" + (f" UNION ALL BY NAME {direct}" if direct else "")
    con.execute(f"CREATE VIEW _usage_log AS {union}")
    con.execute(_USAGE_VIEW)


def _usage_row(session_id: str, line: dict[str, Any]) -> dict[str, Any]:
    known = {key: line.get(key) for key in _USAGE_COLUMNS if key != "extra"}
    extra = {key: value for key, value in line.items() if key not in _USAGE_COLUMNS and key != "crc"}
    extra.update(line.get("extra") or {})
    return {"session_id": session_id, **known, "extra": extra}


#: The session id of a file read straight from disk: its directory's name (spec §2).
_DIRECTORY_NAME = r"regexp_extract(filename, '([^/\\]+)[/\\][^/\\]+$', 1)"

_RECORD_SELECT = ", ".join(
    (
        "session_id",
        "sequence",
        "id",
        "message->>'role' AS role",
        "created_at",
        "coalesce(started_at, created_at) AS started_at",
        "coalesce(completed_at, created_at) AS completed_at",
        "coalesce(duration_ns, 0) AS duration_ns",
        *(f"{stream}_{end}" for stream in _STREAMS for end in ("started_at", "completed_at", "duration_ns")),
        *_TOKENS,
        "coalesce(batch_end, 0) AS batch_end",
        "request_id",
        "coalesce(plain, false) AS plain",
        "message",
        # §5: a string content is the text; a list's items give their `text` strings; other
        # JSON (a tool's object result) is its JSON text; no content, no text.
        "CASE json_type(message, '$.content') WHEN 'VARCHAR' THEN message->>'$.content' "
        "WHEN 'ARRAY' THEN nullif(array_to_string(json_extract_string(message, '$.content[*].text'), chr(10)), '') "
        "WHEN 'NULL' THEN NULL ELSE json_extract(message, '$.content')::VARCHAR END AS text",
        "coalesce(metadata, '{}') AS metadata",
        "coalesce(tags, '{}') AS tags",
    )
)

_TOKEN_SUM = " + ".join(f"coalesce({t}, 0)" for t in _TOKENS[:2])
_TOKEN_COLUMNS = ", ".join(f"coalesce({t}, 0) AS {t}" for t in _TOKENS)
#: One row per model call, each counted once, by `SessionStore.model_calls`' rule: the
#: usage log's lines, then the usage given with records whose request the log does not name.
_USAGE_VIEW = f"""
CREATE VIEW usage AS
SELECT session_id, 'usage log' AS source, recorded_at, model, request_id, {_TOKEN_COLUMNS},
       {_TOKEN_SUM} AS total_tokens, coalesce(extra, '{{}}') AS extra
FROM _usage_log
UNION ALL
SELECT session_id, 'record ' || sequence, created_at, metadata->>'model', request_id, {_TOKEN_COLUMNS},
       {_TOKEN_SUM}, '{{}}'
FROM records r
WHERE ({" OR ".join(f"{t} IS NOT NULL" for t in _TOKENS)})
  AND (request_id IS NULL OR NOT EXISTS (
      SELECT 1 FROM _usage_log l WHERE l.session_id = r.session_id AND l.request_id = r.request_id))
"""

_SESSIONS_VIEW = f"""
CREATE VIEW sessions AS
SELECT s.*, coalesce(u.calls, 0) AS calls,
       {", ".join(f"coalesce(u.{t}, 0) AS {t}" for t in _TOKENS)},
       coalesce(u.input_tokens, 0) + coalesce(u.output_tokens, 0) AS total_tokens
FROM _sessions s LEFT JOIN (
    SELECT session_id, count(*) AS calls, {", ".join(f"sum({t}) AS {t}" for t in _TOKENS)}
    FROM usage GROUP BY session_id
) u USING (session_id)
"""


# -- rows built in Python ---------------------------------------------------------------


def _session_row(summary: SessionSummary) -> dict[str, Any]:
    fork = summary.fork
    return {
        "session_id": summary.session_id,
        "title": summary.title,
        "agent_name": summary.agent_name,
        "parent_session_id": summary.parent_session_id,
        "session_type": summary.session_type,
        "pinned": summary.pinned,
        "fork_session_id": None if fork is None else fork.session_id,
        "fork_sequence": None if fork is None else fork.sequence,
        "created_at": summary.created_at,
        "updated_at": summary.updated_at,
        "message_count": summary.message_count,
        "dialect": summary.dialect,
        "metadata": summary.metadata,
    }


def _snapshot_rows(store: SessionStore, summaries: list[SessionSummary]) -> Iterator[dict[str, Any]]:
    from ._io.fs import OS_FS
    from ._io.session_dir import SessionDir
    from ._log import snapshots as _snapshots  # the read side's own snapshot reading (spec §6, §8)

    for summary in summaries:
        directory = os.path.join(store.root, summary.session_id)
        where = SessionDir(OS_FS, summary.session_id, directory)
        for version in _snapshots.versions(where):
            try:
                snapshot = _snapshots.read(where, version)
            except _snapshots.DamagedSnapshot as exc:
                path = os.path.join(directory, snapshot_name(version))
                store._sink(Problem(path, "bad-snapshot", str(exc), "left out of the snapshots view"))
                continue
            yield {
                "session_id": summary.session_id,
                **{
                    column: getattr(snapshot, column)
                    for column in _SNAPSHOT_COLUMNS
                    if column != "session_id"
                },
            }


def _part_rows(store: SessionStore, summaries: list[SessionSummary]) -> Iterator[dict[str, Any]]:
    for summary in summaries:
        base = summary.fork.sequence if summary.fork is not None else 0
        dialect = summary.dialect
        for record in store.records(summary.session_id, after=base):
            for index, part in enumerate(message_parts(record.message, dialect)):
                yield {
                    "session_id": summary.session_id,
                    "sequence": record.sequence,
                    "part_index": index,
                    **_part(part),
                }


def _part(part: Part) -> dict[str, Any]:
    """One part's columns (README: the ``parts`` view); what a part has no column for is
    in ``content`` as JSON text, so no stored value is left out."""
    if isinstance(part, (TextPart, ReasoningPart)):
        return {"kind": "text" if isinstance(part, TextPart) else "reasoning", "content": part.text}
    if isinstance(part, ToolCallPart):
        return {
            "kind": "tool_call",
            "tool_name": part.name,
            "tool_call_id": _text(part.id),
            "arguments": part.arguments,
        }
    if isinstance(part, ToolResultPart):
        content = part.content if isinstance(part.content, str) else _result_text(part.content)
        return {
            "kind": "tool_result",
            "tool_call_id": _text(part.tool_call_id),
            "content": content,
            "is_error": part.is_error,
        }
    if isinstance(part, ImagePart):
        return {"kind": "image", "media_type": part.media_type, "url": part.url}
    assert isinstance(part, OtherPart)
    return {"kind": "other", "content": orjson.dumps(part.raw, default=_json_default).decode()}


def _text(value: object) -> str | None:
    return value if isinstance(value, str) or value is None else orjson.dumps(value).decode()


def _result_text(items: list[Part]) -> str:
    texts = [item.text for item in items if isinstance(item, TextPart)]
    if len(texts) == len(items):
        return "\n".join(texts)
    return orjson.dumps(items, default=_json_default).decode()
