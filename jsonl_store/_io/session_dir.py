"""`SessionDir`: one session's directory as a value, in place of ``(fs, directory, ...)``.

A session is read and written through the file system a store was given (the real one,
or the crash simulator in `jsonl_store.testing`), at a path below the store root that
its id names (spec §3), with the snapshot listings that store keeps. Those travel
together, so they are one frozen value: a function takes a `SessionDir` and cannot be
handed one session's path with another's id. The file names inside it are `_format.names`'s.

It sits on the `_io` floor, below the logs, so that the snapshot, blob and metadata
functions of every floor above can take it; the listings it carries are typed by what
they do (`SnapshotListings`), the cache itself being `_log.snapshots.Listings`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from typing import Protocol

from .._format.names import LOG_NAME, session_dir, validate_session_id
from .fs import FileSystem


class SnapshotListings(Protocol):
    """A cache of the snapshot versions in session directories (`_log.snapshots.Listings`)."""

    def descending(self, where: SessionDir) -> Iterator[int]:
        """Every snapshot version present in the session directory, highest first."""
        ...


@dataclasses.dataclass(frozen=True, slots=True)
class SessionDir:
    """One session's directory: the file system it is reached through, its id, its path.

    ``listings`` is the store's cache of snapshot listings (`SnapshotListings`), or None
    to list the directory on every read. Nothing here touches the disk. Readers open
    ``LogReader(where, ...)`` themselves: a helper method would add a frame to every
    append and load, which a caller with few frames left to its recursion limit may not
    have (``tests/unit/test_nesting_depth.py``).
    """

    fs: FileSystem
    session_id: str
    path: str
    listings: SnapshotListings | None = None

    def file(self, name: str) -> str:
        """The path of the file ``name`` (one of `_format.names`'s names) inside the directory."""
        return os.path.join(self.path, name)

    @property
    def log_path(self) -> str:
        """The raw log's path."""
        return os.path.join(self.path, LOG_NAME)

    def sibling(self, session_id: str) -> SessionDir:
        """Another session of the same store root (a fork's source, spec §8.10)."""
        root = os.path.dirname(self.path)
        return SessionDir(
            self.fs, session_id, session_dir(root, validate_session_id(session_id)), self.listings
        )


__all__ = ["SessionDir", "SnapshotListings"]
