"""What `jsonl_store.search` asks of a store beyond its public methods: `Searching`.

Search sits on an upper floor and uses public names only; what it needs of a store's
insides (where a session's records are read from, the catalog brought up to date) is
asked here, through `SessionStore._searching`, so search never reaches into a store's
state. A fork's chain is `_session.history.History`'s, the one place that knows forks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from .._context.view import SessionSummary
from .._errors import CatalogUnavailable, JsonlStoreError, SessionNotFound
from .._format.records import RawMessageRecord
from .._log.problems import DISCARD
from .._session.catalog import Catalog, RankedHit
from . import listing as _listing
from . import reading as _reading
from .store_state import StoreState, failure


class Searching:
    """One store's answers to `jsonl_store.search`; ``get_session`` is the store's own method."""

    __slots__ = ("_get_session", "_state")

    def __init__(self, state: StoreState, get_session: Callable[[str], SessionSummary | None]) -> None:
        self._state = state
        self._get_session = get_session

    def logs(self, summary: SessionSummary) -> list[str]:
        """The raw logs a session's records are read from: its own, and for a fork its sources'.

        The chain is `History.links` (spec §8.10), so it is the one `records` reads: a
        source that cannot be read, or whose records the fork does not share, is not in it.
        Paths on the store's file system; a prefilter that cannot open one lets `records`
        decide. Damage is not reported here: `records` meets and reports the same.
        """
        state = self._state
        where = state.where(summary.session_id)
        if summary.fork is None:
            return [where.log_path]  # no fork file seen by the listing: no chain to read
        links = state.history(where, DISCARD).links
        return [state.where(link.session_id).log_path for link in reversed(links)]

    def records(self, session_id: str, containing: bytes, *, in_blobs: bool) -> Iterator[RawMessageRecord]:
        """`SessionStore.records(session_id, containing=containing)`, where ``in_blobs=False``
        says that no string in a blob file can hold ``containing`` (`LogReader.records`): a
        session with blob files then decodes only the lines holding it, as one without."""
        state = self._state
        try:
            where = state.readable(session_id)
        except JsonlStoreError:
            raise
        except OSError as exc:
            raise failure(state.root, exc, "records", session_id) from exc
        return _reading.records(state, where, 0, containing, in_blobs=in_blobs)

    def index(
        self, on_progress: Callable[[int, int], None] | None, names: list[str] | None = None
    ) -> Catalog:
        """The catalog, brought up to date with the files of ``names`` (every session's: the
        default); ``on_progress(done, total)`` counts the bytes read.

        Raises `CatalogUnavailable` (a `RuntimeError`) for a store on a simulated file system.
        """
        state = self._state
        catalog = state.catalog
        if catalog is None:
            raise CatalogUnavailable("ranked search needs the catalog, which a simulated file system has not")
        names = _listing.candidates(state) if names is None else names
        catalog.index_text(names, lambda name, path: state.summary(state.entry(name, path)), on_progress)
        return catalog

    def ranked(
        self,
        query: str,
        limit: int,
        session_id: str | None,
        role: str | None,
        on_progress: Callable[[int, int], None] | None,
    ) -> list[RankedHit]:
        """`jsonl_store.search_ranked` once its arguments are checked: the catalog's best hits."""
        state = self._state
        if state.catalog is None:
            raise CatalogUnavailable("ranked search needs the catalog, which a simulated file system has not")
        if session_id is not None and self._get_session(session_id) is None:
            raise SessionNotFound(
                f"session {session_id!r} does not exist in {state.root!r}", session_id=session_id
            )
        names = _listing.candidates(state)
        if not names:
            return []  # no session (or no root yet): nothing to find, and no catalog to make
        return self.index(on_progress, names).ranked(query, limit, session_id, role)


__all__ = ["Searching"]
