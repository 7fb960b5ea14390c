"""The error tree: one base class, each subclass also the fitting built-in error.

Every error carries the fields a caller needs to act on it (the session, the path, the
line or byte offset) and pickles, so it survives a trip through ``multiprocessing``.
Every ``OSError`` the file system raises reaches the caller as a `StorageError` (see
`storage_error`), which is still an ``OSError`` with the original ``errno``.
"""

from __future__ import annotations

import errno as _errno
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
        fields = self.__dict__.copy()
        if isinstance(self, OSError):
            # OSError keeps these in C slots, not in __dict__: copy them explicitly, or
            # an error that crossed a process boundary would lose its errno.
            fields.update(errno=self.errno, strerror=self.strerror, filename=self.filename)
        if isinstance(self, ImportError):
            fields["path"] = self.path  # a C slot of ImportError too
        return (_rebuild, (type(self), self.message, fields))

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
    for name, value in fields.items():
        setattr(error, name, value)  # setattr, not __dict__: OSError's fields are slots
    return error


class InvalidSessionId(JsonlStoreError, ValueError):
    """A session id is empty, too long, or holds a character outside the safe alphabet."""


class InvalidMessage(JsonlStoreError, ValueError):
    """A message or value cannot be stored as given (wrong role, NaN, lone surrogate, ...)."""


class RecordTooLarge(InvalidMessage):
    """A record would be longer than the store's ``max_record_bytes`` even with its large strings spilled.

    ``size`` is the record's length in bytes as it would be written (an upper bound: the
    sequence and checksum are counted at their longest), ``limit`` the store's cap.
    """

    def __init__(self, message: str, *, size: int = 0, limit: int = 0, **where: Any) -> None:
        super().__init__(message, **where)
        self.size = size
        self.limit = limit


class UnsupportedValue(JsonlStoreError, TypeError):
    """A message holds a value of a type that JSON cannot carry back unchanged."""


class InvalidArgument(JsonlStoreError, ValueError):
    """An argument is out of range or contradicts what the session already holds."""


class UnsupportedRegex(InvalidArgument):
    """A regular expression uses what RE2 cannot match in linear time (a backreference, lookaround).

    See https://github.com/google/re2/wiki/Syntax for what RE2 accepts.
    """


class RegexUnavailable(JsonlStoreError, ImportError):
    """A regular expression search needs RE2 (the ``regex`` extra: ``google-re2``), which is not installed."""


class CatalogUnavailable(JsonlStoreError, RuntimeError):
    """Ranked search needs the catalog (spec §21), which cannot be used here: this Python's SQLite
    has no FTS5, or the store root cannot hold ``.catalog/`` (read-only) or its database."""


class ParentMismatch(InvalidArgument):
    """A session already has a different parent; a parent never changes."""


class SnapshotConflict(JsonlStoreError):
    """Another writer created the snapshot version this writer expected to create."""


class MetadataConflict(JsonlStoreError):
    """``update_session(expected_version=...)`` saw a newer metadata version."""


class SequenceConflict(JsonlStoreError, ValueError):
    """``append(expected_last_sequence=...)`` found another last sequence; nothing was written.

    ``expected`` is what the caller gave, ``actual`` the log's last sequence under the lock.
    """

    def __init__(self, message: str, *, expected: int = 0, actual: int = 0, **where: Any) -> None:
        super().__init__(message, **where)
        self.expected = expected
        self.actual = actual


class CorruptSession(JsonlStoreError):
    """``load(strict=True)`` met damage: mid-log lines, or an unreadable snapshot or metadata file.

    ``problems`` lists what was met, as `load` reports it. A torn last line, the normal
    remains of a crash, is never corruption.
    """

    def __init__(self, message: str, *, problems: Any = (), **where: Any) -> None:
        super().__init__(message, **where)
        self.problems = list(problems)


class LockTimeout(JsonlStoreError, TimeoutError):
    """A session's lock was not acquired within the store's lock timeout."""


class StorageError(JsonlStoreError, OSError):
    """The file system refused an operation: disk full, an I/O error, no permission, ...

    ``errno``, ``strerror`` and ``filename`` are those of the ``OSError`` that caused it,
    which is also its ``__cause__``; ``except OSError`` code keeps working unchanged.
    """

    def __init__(
        self,
        message: str,
        *,
        errno: int | None = None,
        strerror: str | None = None,
        filename: str | None = None,
        session_id: str | None = None,
        path: str | None = None,
        line: int | None = None,
        offset: int | None = None,
    ) -> None:
        super().__init__(message, session_id=session_id, path=path, line=line, offset=offset)
        self.errno = errno
        self.strerror = strerror
        self.filename = filename


class StoragePermissionError(StorageError, PermissionError):
    """The file system denied access (EACCES, EPERM) or is mounted read-only (EROFS).

    EROFS is a plain ``OSError`` in Python; it is a permission error here because to a
    caller both mean the same thing: this store cannot be written, fix its permissions.
    """


class StorageFileNotFoundError(StorageError, FileNotFoundError):
    """A file or directory the store needed vanished or was never there (ENOENT).

    A session that does not exist is `SessionNotFound`; this is a path removed under the
    store by someone else while it worked (or a root whose parent is missing).
    """


class DurabilityError(StorageError):
    """A write or fsync of a log failed, with its errno (a short write is ENOSPC).

    A failed write was taken back, so the next append may succeed; after a failed fsync
    (or a write that could not be taken back) the session's writer refuses appends until
    the store is closed, because what the kernel kept of them is unknown.
    """


class UnsafePath(StorageError):
    """A name inside a session is a symlink, a directory, a FIFO, a socket or a device.

    The store never follows or opens such a name (spec/FORMAT.md §2, "Files and
    permissions"): a person must look at it and put a regular file (or, for a session, a
    directory) in its place. ``path`` names it; ``errno`` is that of the refused
    ``open`` (``ELOOP`` for a symlink, ...) or None when ``fstat`` or ``lstat`` refused it.
    """


class UnrecognizedRecords(JsonlStoreError, ValueError):
    """A log ends in lines that look like records but fail their checksums: never cut.

    Lines a crash leaves are torn, zeroed or garbage; several whole lines that carry a
    checksum key yet fail it are more likely records changed by a tool this version does
    not know how to undo. Writers refuse to cut them away; a person restores the bytes.
    """


class UnsupportedFormat(JsonlStoreError):
    """A session was written in a format version this reader does not understand."""


class ReadOnlySession(JsonlStoreError, PermissionError):
    """A session was written by a newer format version: it can be read but not written."""


class SessionHasForks(JsonlStoreError, OSError):
    """``delete_session`` of a session that forks read their history from; nothing was deleted.

    ``forks`` names them: delete them first (their history starts with this session's).
    """

    def __init__(self, message: str, *, forks: Any = (), **where: Any) -> None:
        super().__init__(message, **where)
        self.forks: list[str] = list(forks)


class SessionNotFound(JsonlStoreError, KeyError):
    """The session was never written (or was deleted)."""

    def __str__(self) -> str:
        # KeyError's own __str__ would print the message with quotes around it.
        return JsonlStoreError.__str__(self)


_PERMISSION_ERRNOS = frozenset({_errno.EACCES, _errno.EPERM, _errno.EROFS})


def storage_error(
    exc: OSError, doing: str, *, session_id: str | None = None, where: str | None = None
) -> StorageError:
    """The `StorageError` that stands for ``exc``; the caller raises it ``from exc``.

    ``doing`` says what failed (``"update_session('s1')"``); the message adds the
    system's reason. ``filename`` is the OSError's, else ``where``: calls on a
    descriptor (write, fsync, pread) name no file, and a caller must still learn where
    the failure was. The class keeps the built-in a caller would catch.
    """
    if isinstance(exc, PermissionError) or exc.errno in _PERMISSION_ERRNOS:
        cls: type[StorageError] = StoragePermissionError
    elif isinstance(exc, FileNotFoundError) or exc.errno == _errno.ENOENT:
        cls = StorageFileNotFoundError
    else:
        cls = StorageError
    filename = exc.filename if isinstance(exc.filename, str) else where
    reason = exc.strerror or str(exc) or type(exc).__name__
    return cls(
        f"{doing} failed: {reason}",
        errno=exc.errno,
        strerror=exc.strerror,
        filename=filename,
        session_id=session_id,
        path=filename,
    )


def name_file(exc: OSError, path: str) -> None:
    """Give an OSError from a call on a descriptor (no file name of its own) the file's path."""
    if exc.filename is None:
        exc.filename = path
