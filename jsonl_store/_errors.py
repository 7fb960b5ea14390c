"""The error tree: one base class, each subclass also the fitting built-in error.

Every error carries the fields a caller needs to act on it (the session, the path, the
line or byte offset) and pickles, so it survives a trip through ``multiprocessing``.
"""

from __future__ import annotations

from typing import Any


class JsonlStoreError(Exception):
    """Base class of every error this library raises on purpose."""

    def __init__(
        self,
        message: str,
        *,
        session_id: str | None = None,
        path: str | None = None,
        line: int | None = None,
        offset: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.session_id = session_id
        self.path = path
        self.line = line
        self.offset = offset

    def __reduce__(self) -> tuple[Any, ...]:
        # Exceptions with keyword-only fields do not pickle by default (their args hold
        # only the message); rebuild through a helper that restores every field.
        return (_rebuild, (type(self), self.message, self.__dict__.copy()))

    def __str__(self) -> str:
        where = []
        if self.path is not None:
            where.append(self.path)
        if self.line is not None:
            where.append(f"line {self.line}")
        if self.offset is not None:
            where.append(f"offset {self.offset}")
        return f"{self.message} ({', '.join(where)})" if where else self.message


def _rebuild(cls: type[JsonlStoreError], message: str, fields: dict[str, Any]) -> JsonlStoreError:
    error = cls.__new__(cls)
    Exception.__init__(error, message)
    error.__dict__.update(fields)
    return error


class InvalidSessionId(JsonlStoreError, ValueError):
    """A session id is empty, too long, or holds a character outside the safe alphabet."""


class InvalidMessage(JsonlStoreError, ValueError):
    """A message or value cannot be stored as given (wrong role, NaN, lone surrogate, ...)."""


class UnsupportedValue(JsonlStoreError, TypeError):
    """A message holds a value of a type that JSON cannot carry back unchanged."""


class InvalidArgument(JsonlStoreError, ValueError):
    """An argument is out of range or contradicts what the session already holds."""


class ParentMismatch(InvalidArgument):
    """A session already has a different parent; a parent never changes."""


class SnapshotConflict(JsonlStoreError):
    """Another writer created the snapshot version this writer expected to create."""


class MetadataConflict(JsonlStoreError):
    """``update_session(expected_version=...)`` saw a newer metadata version."""


class LockTimeout(JsonlStoreError, TimeoutError):
    """A session's lock was not acquired within the store's lock timeout."""


class DurabilityError(JsonlStoreError, OSError):
    """A write or fsync failed; the session's writer refuses appends until reopened."""


class UnsafePath(JsonlStoreError, OSError):
    """A name inside a session is a symlink, a directory, a FIFO, a socket or a device.

    The store never follows or opens such a name (spec/FORMAT.md §2, "Files and
    permissions"): a person must look at it and put a regular file (or, for a session, a
    directory) in its place. ``path`` names it.
    """


class UnsupportedFormat(JsonlStoreError):
    """A session was written in a format version this reader does not understand."""


class ReadOnlySession(JsonlStoreError, PermissionError):
    """A session was written by a newer format version: it can be read but not written."""


class SessionNotFound(JsonlStoreError, KeyError):
    """The session was never written (or was deleted)."""

    def __str__(self) -> str:
        # KeyError's own __str__ would print the message with quotes around it.
        return JsonlStoreError.__str__(self)
