"""``jsonl-store catalog rebuild|drop|status`` and ``search --rank``: the derived catalog (spec §21).

The catalog is ``<root>/.catalog/``: session summaries and a full-text index built from
the files by the readers that use it, never committed (its own ``.gitignore`` holds
``*``). Dropping it loses nothing; the next listing or ranked search builds it again.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
from collections.abc import Callable

from .. import CatalogUnavailable, SessionStore
from .._format.names import CATALOG_DIR, catalog_path
from .._session.catalog import BUILD_AT
from .._session.catalog_schema import discard, has_fts5
from ..search import RankedHit, search_ranked
from . import _commands as c
from . import _safe
from ._progress import progress
from ._term import screen

#: SGR bold red around a matched word, then a reset (ECMA-48 §8.3.117), as `search` marks a match.
_MARK_ON = "\x1b[1;31m"
_MARK_OFF = "\x1b[0m"

EXAMPLE = """jsonl-store catalog status
jsonl-store catalog rebuild
jsonl-store catalog drop"""


def _indexed(store: SessionStore, label: str, query: str | None = None) -> list[RankedHit]:
    """Bring the catalog up to date under a progress bar (MB of logs), then run ``query``."""
    with progress(label, None) as bar:
        seen = [0]

        def advanced(done: int, total: int) -> None:
            if done == 0:
                bar.describe(f"{label} ({total / 1e6:.1f} MB of logs)")
            bar.advance(done - seen[0])
            seen[0] = done

        return search_ranked(store, query or "x", on_progress=advanced) if query else _build(store, advanced)


def _build(store: SessionStore, advanced: Callable[[int, int], None]) -> list[RankedHit]:
    try:
        store._searching.index(advanced)
    except CatalogUnavailable:  # a store the command opens is always on the real file system
        raise c.CliError("the catalog needs a store on the real file system") from None
    return []


def hit_line(hit: RankedHit, *, colour: bool) -> str:
    """One ranked hit as a line: where it is, the part's kind, and its snippet with the matched
    words marked (in colour) or plain; every stored piece escaped (`_safe.escape`)."""
    pieces, last = [], 0
    for start, end in hit.marks:
        pieces.append(_safe.escape(hit.snippet[last:start]))
        word = _safe.escape(hit.snippet[start:end])
        pieces.append(f"{_MARK_ON}{word}{_MARK_OFF}" if colour else word)
        last = end
    pieces.append(_safe.escape(hit.snippet[last:]))
    where = f"{hit.session_id} title" if hit.sequence == 0 else f"{hit.session_id} #{hit.sequence} {hit.role}"
    kind = hit.kind if hit.field in ("content", hit.kind) else f"{hit.kind} {hit.field}"
    return f"{_safe.escape(where)} ({_safe.escape(kind)}): {''.join(pieces)}"


def run_ranked(args: argparse.Namespace) -> int:
    """``search --rank``: the best ``--limit`` hits, best first; exit 1 when none."""
    store = c.open_store(args)
    with store, progress("indexing", None) as bar:
        seen = [0]

        def advanced(done: int, total: int) -> None:
            bar.advance(done - seen[0])
            seen[0] = done

        hits = search_ranked(
            store, args.text, limit=args.limit, session_id=args.session, role=args.role, on_progress=advanced
        )
    if args.json:
        c.emit_json([hit.to_dict() for hit in hits])
    else:
        colour = screen(sys.stdout).colour
        for hit in hits:
            sys.stdout.write(_safe.encodable(hit_line(hit, colour=colour) + "\n", sys.stdout))
    return 0 if hits else 1


def _status(root: str) -> None:
    path = catalog_path(root)
    if not os.path.exists(path):
        print(
            f"no catalog yet in {_safe.escape(os.path.join(root, CATALOG_DIR))}: the next search --rank "
            f"or catalog rebuild builds it, and ls does once the store holds {BUILD_AT} sessions"
        )
        return
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        (sessions,) = connection.execute("SELECT count(*) FROM sessions").fetchone()
        (indexed,) = connection.execute("SELECT coalesce(sum(log_offset), 0) FROM sessions").fetchone()
    except sqlite3.DatabaseError as exc:
        print(f"the catalog {_safe.escape(path)} is unreadable ({exc}): the next use builds it again")
        return
    finally:
        connection.close()
    size = sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p))
    print(f"catalog: {_safe.escape(path)} ({size / 1e6:.1f} MB, derived from the files, never committed)")
    print(f"sessions: {sessions}; logs indexed: {indexed / 1e6:.1f} MB")
    print(
        f"SQLite {sqlite3.sqlite_version}, FTS5 {'available' if has_fts5() else 'missing: no ranked search'}"
    )


def catalog(args: argparse.Namespace) -> int:
    root = c.root_of(args)
    if args.catalog_command == "drop":
        if not os.path.exists(catalog_path(root)):
            print(f"no catalog in {_safe.escape(os.path.join(root, CATALOG_DIR))}: nothing to drop")
            return 0
        discard(root)
        print(
            f"dropped the catalog in {_safe.escape(os.path.join(root, CATALOG_DIR))}: nothing stored is lost"
        )
        return 0
    if args.catalog_command == "status":
        _status(root)
        return 0
    store = c.open_store(args)
    with store:
        discard(root)
        _indexed(store, "building the catalog")
    print(f"built the catalog in {_safe.escape(os.path.join(root, CATALOG_DIR))}")
    return 0


def register(command: Callable[..., argparse.ArgumentParser]) -> None:
    """Add ``catalog rebuild|drop|status`` to the parser (``command`` is `build_parser`'s)."""
    sub = command(
        "catalog",
        catalog,
        f"the derived catalog in ROOT/{CATALOG_DIR} (listing and ranked search): rebuild, drop or show it",
        EXAMPLE,
    )
    actions = sub.add_subparsers(
        dest="catalog_command", metavar="ACTION", required=True, parser_class=type(sub)
    )
    for name, about in (
        ("rebuild", "build the catalog again from the files (summaries and the full-text index)"),
        ("drop", "delete the catalog; nothing stored is lost, the next listing builds it again"),
        ("status", "where the catalog is, its size, and how much of the logs it indexes"),
    ):
        action = actions.add_parser(name, help=about, description=about)
        action.add_argument(
            "--root",
            metavar="DIR",
            default=argparse.SUPPRESS,
            help=f"the session store (default: ${c.ROOT_ENV})",
        )
