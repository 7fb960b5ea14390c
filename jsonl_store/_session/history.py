"""`History`: what a session's context is read from, the one place that knows forks.

A session's history is its own raw log, or for a fork the chain of sessions it branched
from, each up to its branch, then its own log (spec §8.10). What `load`, `records`,
`tail`, `checkpoint` and `snapshot` read is the newest usable snapshot of that history
and the records after it; the chain itself is `_session.forks.chain`, the one walk of fork files.
Damage met on the way goes to the reporter the history was made with; nothing is
written here.
"""

from __future__ import annotations

import collections
import functools
from collections.abc import Callable, Iterator

from .._format.names import FORK_NAME
from .._format.records import ContextSnapshot, RawMessageRecord
from .._io.session_dir import SessionDir
from .._log.problems import LEFT_FOR_READERS, Problem, Reporter
from .._log.reader import LogReader
from . import forks as _forks
from . import summary as _session


class History:
    """One session's history as its readers see it; reads happen when asked, not when made.

    ``dir_of`` gives the `SessionDir` of another session of the same store (a fork's
    sources); ``reporter`` collects the damage met, for the caller to report.
    """

    def __init__(self, where: SessionDir, dir_of: Callable[[str], SessionDir], reporter: Reporter) -> None:
        self.where = where
        self.dir_of = dir_of
        self.reporter = reporter

    @functools.cached_property
    def links(self) -> list[_forks.Link]:
        """The sessions this one's history is read from, oldest first, it last (spec §8.10).

        Itself alone unless a fork. A fork file that cannot be read, a source that is no
        session of this root, or a chain that loops or is too deep, is reported
        (``bad-fork``) and the session is read alone, from its own log. So are own records
        at or before the branch: they are read, after the sources' records before them.
        """
        where, found = self.where, self.reporter
        alone = [_forks.Link(where.session_id, 0, None)]
        path = where.file(FORK_NAME)
        try:
            point = _forks.read(where)
            if point is None:
                return alone
            first = _session.first_sequence(where)
            links = _forks.chain(self.dir_of, where.session_id, first)
        except _forks.DamagedFork as exc:
            found.report(Problem(path, "bad-fork", str(exc), LEFT_FOR_READERS))
            return alone
        if links[-1].base < point.sequence:
            found.report(Problem(path, "bad-fork", _forks.early_records(first, point), LEFT_FOR_READERS))
        return links

    @property
    def is_fork(self) -> bool:
        """Whether records before the session's own log are read from other sessions."""
        return len(self.links) > 1

    def context(self) -> tuple[ContextSnapshot | None, list[RawMessageRecord]]:
        """The newest usable snapshot and the records after its boundary: what `load` shows.

        A fork's snapshot is its own newest, else its sources' newest one before the
        branch, else none (spec §8.10).
        """
        where = self.where
        if not self.is_fork:
            with LogReader(where, self.reporter, listings=True) as log:
                snapshot = log.latest_snapshot()
                start, after = (
                    (snapshot.tail_offset, snapshot.compacted_through_sequence) if snapshot else (0, 0)
                )
                return snapshot, [record for _, record in log.records(start, after)]
        return self._context_of(self.links)

    def _context_of(self, links: list[_forks.Link]) -> tuple[ContextSnapshot | None, list[RawMessageRecord]]:
        """The snapshot and tail of a history made of ``links`` (a fork's, or its part before its own log)."""
        found, dir_of = self.reporter, self.dir_of
        start = self._start(links, found)
        tail: list[RawMessageRecord] = []
        if start is None:
            for link in links:
                tail.extend(_forks.link_records(dir_of(link.session_id), link, found))
            return None, tail
        index, snapshot = start
        link = links[index]
        tail.extend(
            _forks.link_records(
                dir_of(link.session_id), link, found,
                start=snapshot.tail_offset, after=snapshot.compacted_through_sequence, listings=True,
            )
        )  # fmt: skip
        for later in links[index + 1 :]:
            tail.extend(_forks.link_records(dir_of(later.session_id), later, found))
        return snapshot, tail

    def _start(self, links: list[_forks.Link], found: Reporter) -> tuple[int, ContextSnapshot] | None:
        """The newest snapshot a history made of ``links`` starts at, and its link's index (spec §8.10)."""
        for index in range(len(links) - 1, -1, -1):
            link = links[index]
            source = self.dir_of(link.session_id)
            with LogReader(source, found, listings=True) as log:
                snapshot = _forks.latest_snapshot_upto(log, link.upto)
            if snapshot is not None:
                return index, snapshot
        return None

    def records(
        self, after: int, containing: bytes | None = None, *, in_blobs: bool = True
    ) -> Iterator[RawMessageRecord]:
        """The records with a sequence above ``after``, oldest first, in constant memory.

        A fork's sources' records come first, up to the branch; the own log is read from
        the newest snapshot at or before ``after``. ``containing`` filters the own log's
        lines by bytes (`LogReader.records`, which says what ``in_blobs`` is); the sources'
        records are given whole.
        """
        links = self.links
        for link in links[:-1]:
            yield from _forks.link_records(self.dir_of(link.session_id), link, self.reporter, after=after)
        base, where = links[-1].base, self.where
        with LogReader(where, self.reporter, listings=True) as log:
            start, floor = 0, base
            if after > base:
                snapshot = log.latest_snapshot(at_most=after)
                if snapshot is not None:
                    start, floor = snapshot.tail_offset, snapshot.compacted_through_sequence
            for _, record in log.records(start, floor, containing, in_blobs=in_blobs):
                if record.sequence > after:
                    yield record

    def last(self, n: int) -> list[RawMessageRecord]:
        """The last ``n`` records, oldest first: read backwards from the own log's end.

        Costs O(n) whatever the log's length. Only when the own log is short of ``n`` is
        the fork's history before the branch read, forwards (O(that history)).
        """
        where = self.where
        with LogReader(where, self.reporter) as log:
            records = log.last_records(n)
        if len(records) == n or not self.is_fork:
            return records
        before: collections.deque[RawMessageRecord] = collections.deque(maxlen=n - len(records))
        for link in self.links[:-1]:
            before.extend(_forks.link_records(self.dir_of(link.session_id), link, self.reporter))
        return [*before, *records]

    def before_own(self) -> tuple[ContextSnapshot | None, list[RawMessageRecord]]:
        """A fork's context before its own log (its sources' snapshot and records); empty for no fork."""
        if not self.is_fork:
            return None, []
        return self._context_of(self.links[:-1])

    def inherited_version(self) -> int:
        """The version of the source snapshot a fork's context starts at (0: none, or no fork).

        Until a fork has a snapshot of its own, its context starts at its source's (spec
        §8.10), and that is the version `load` hands the caller to pass back.
        """
        start = self._start(self.links[:-1], Reporter())
        return start[1].version if start is not None else 0

    def origin(self) -> object:
        """What a fork's history before its own log is read from: its chain and the snapshot
        it starts at (None for no fork). Equal values mean the same history; no record is read."""
        links = self.links
        if len(links) == 1:
            return None
        start = self._start(links[:-1], Reporter())
        snapshot = start[1] if start is not None else None
        return (
            tuple((link.session_id, link.base, link.upto, link.check) for link in links),
            None if snapshot is None else (snapshot.session_id, snapshot.version, snapshot.id),
        )


__all__ = ["History"]
