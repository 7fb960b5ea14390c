"""The one door between the store and the operating system's files.

Every file operation the store makes goes through a `FileSystem` object, so a test can
hand the store a simulated one that records each operation and builds the states a
crash could leave behind (see `jsonl_store.testing`), without monkeypatching ``os``.
The methods mirror the ``os`` functions of the same name; `OsFileSystem` *is* those
functions, so the real path costs one attribute lookup and nothing more (``open``,
``listdir`` and ``fsync_dir`` add a retry when the process is out of descriptors).
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeVar

from .._errors import UnsafePath
from .._format.names import session_id_of
from .._process import DESCRIPTOR_CACHES, DescriptorCache
from .lock import FileLock

#: Everything the store creates is private (transcripts hold private data): files 0600,
#: directories 0700, whatever the umask (a umask can only take permissions away).
FILE_MODE = 0o600
DIR_MODE = 0o700

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
#: What every open of a file inside a session adds (spec/FORMAT.md §2, "Files
#: and permissions"): never follow a symlink in the last component, never block on a FIFO or
#: a device (O_NONBLOCK has no effect on a regular file), never leak into a child program.
SAFE_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC

# What open(2) says when the name is not a regular file we may use. O_NOFOLLOW on a
# symlink gives ELOOP on Linux and macOS and EMLINK on FreeBSD; a FIFO without a reader
# opened for writing with O_NONBLOCK, and any socket, give ENXIO.
_REFUSED = {
    errno.ELOOP: "is a symbolic link",
    errno.EMLINK: "is a symbolic link",
    errno.ENXIO: "is a FIFO or a socket",
    errno.EISDIR: "is a directory",
    errno.ENOTDIR: "is below something that is not a directory",
}


class StatResult(Protocol):
    """The fields of ``os.stat_result`` the store reads."""

    @property
    def st_mode(self) -> int: ...
    @property
    def st_size(self) -> int: ...
    @property
    def st_nlink(self) -> int: ...


class FileSystem(Protocol):
    """The file operations the store uses; paths are ``str``, descriptors are ``int``."""

    def open(self, path: str, flags: int, mode: int = 0o666) -> int: ...
    def close(self, fd: int) -> None: ...
    def write(self, fd: int, data: bytes) -> int: ...
    def pread(self, fd: int, length: int, offset: int) -> bytes: ...
    def fstat(self, fd: int) -> StatResult: ...
    def ftruncate(self, fd: int, length: int) -> None: ...
    def fsync(self, fd: int) -> None: ...
    def fdatasync(self, fd: int) -> None: ...
    def flock(self, fd: int, operation: int) -> None: ...
    def stat(self, path: str) -> StatResult: ...
    def lstat(self, path: str) -> StatResult: ...
    def rename(self, src: str, dst: str) -> None: ...
    def link(self, src: str, dst: str) -> None: ...
    def unlink(self, path: str) -> None: ...
    def mkdir(self, path: str, mode: int = 0o777) -> None: ...
    def rmdir(self, path: str) -> None: ...
    def listdir(self, path: str) -> list[str]: ...
    def fsync_dir(self, path: str) -> None: ...
    def lock(self, path: str, timeout: float) -> AbstractContextManager[Any]:
        """A cross-process lock on the file ``path``, re-entrant within one thread.

        Raises ``TimeoutError`` when not acquired within ``timeout`` seconds. It must
        be released when its holder dies, its file must never be deleted, and it must
        refuse (raise `UnsafePath`) a lock file that is a symlink or not a regular file.
        """
        ...


def describe_mode(mode: int) -> str:
    """What a file of this ``st_mode`` is, in the words of an `UnsafePath` message."""
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a regular file" if stat.S_ISREG(mode) else "not a regular file"


def open_regular(
    fs: FileSystem, path: str, flags: int, mode: int = FILE_MODE, *, session_id: str | None = None
) -> int:
    """``fs.open`` of a file inside a session that must be a regular file, not a symlink.

    Raises `UnsafePath` naming ``path`` for a symlink, a directory, a FIFO, a socket or a
    device; the ``fstat`` of the opened descriptor is the check (no race with a rename).
    ``FileNotFoundError`` and other errors of ``open`` pass through.
    """
    return open_regular_stat(fs, path, flags, mode, session_id=session_id)[0]


def open_regular_stat(
    fs: FileSystem, path: str, flags: int, mode: int = FILE_MODE, *, session_id: str | None = None
) -> tuple[int, StatResult]:
    """`open_regular`, and the ``fstat`` it checked with (a reader wants the size: no second call)."""
    try:
        fd = fs.open(path, flags | SAFE_FLAGS, mode)
    except OSError as exc:
        what = _REFUSED.get(exc.errno or 0)
        if what is None:
            raise
        message = f"{os.path.basename(path)} {what}; the store never follows or opens it"
        raise UnsafePath(
            message,
            errno=exc.errno,
            strerror=exc.strerror,
            filename=path,
            session_id=_session_of(path, session_id),
            path=path,
        ) from exc
    try:
        st = fs.fstat(fd)
    except BaseException:
        fs.close(fd)
        raise
    if not stat.S_ISREG(st.st_mode):
        fs.close(fd)
        message = f"{os.path.basename(path)} is {describe_mode(st.st_mode)}, not a regular file; the store never opens it"
        raise UnsafePath(message, filename=path, session_id=_session_of(path, session_id), path=path)
    return fd, st


def _session_of(path: str, session_id: str | None) -> str | None:
    # Only an error names the session: working it out from the path on every open cost
    # list_sessions a tenth of its time.
    return session_id_of(os.path.dirname(path)) if session_id is None else session_id


def check_directory(fs: FileSystem, path: str, *, session_id: str | None = None) -> bool:
    """Whether the session directory ``path`` exists; `UnsafePath` when it is not a directory.

    ``lstat``, not ``stat``: a session directory that is a symlink is refused, never
    followed. (The store root itself may be a symlink a user chose; it is never checked.)
    """
    name = os.path.basename(path)
    if session_id is None:
        session_id = session_id_of(path)
    try:
        st_mode = fs.lstat(path).st_mode
    except FileNotFoundError:
        return False
    except NotADirectoryError as exc:
        message = f"{name} is below something that is not a directory"
        raise UnsafePath(
            message, errno=exc.errno, strerror=exc.strerror, filename=path, session_id=session_id, path=path
        ) from exc
    if not stat.S_ISDIR(st_mode):
        message = f"{name} is {describe_mode(st_mode)}, not a session directory; the store never follows it"
        raise UnsafePath(message, filename=path, session_id=session_id, path=path)
    return True


def _full_fsync(fd: int) -> None:
    # On macOS fsync(2) only hands data to the drive, which may keep it in a volatile cache;
    # F_FULLFSYNC asks the drive to flush too. Fall back to fsync where a file system
    # refuses it (some network and FUSE file systems do).
    try:
        fcntl.fcntl(fd, fcntl.F_FULLFSYNC)  # type: ignore[attr-defined]
    except OSError:
        os.fsync(fd)


def register_descriptor_cache(cache: DescriptorCache) -> None:
    """Let ``cache`` give descriptors back when the process runs out of them."""
    DESCRIPTOR_CACHES.add(cache)


_T = TypeVar("_T")


def _retry_out_of_descriptors(call: Callable[..., _T], *args: Any) -> _T:
    """``call(*args)``; on EMFILE/ENFILE, close every cache's idle descriptors and retry once.

    A store keeps a descriptor per open log, so a process whose limit is low (``ulimit
    -n 64``) or that opens many files of its own could run out because of the store's
    cache: the cache is an optimisation, and gives way before anything fails.
    """
    try:
        return call(*args)
    except OSError as exc:
        if exc.errno not in (errno.EMFILE, errno.ENFILE):
            raise
        if not sum(cache._release_descriptors() for cache in DESCRIPTOR_CACHES):
            raise
    return call(*args)


def _open(path: str, flags: int, mode: int = 0o777) -> int:
    return _retry_out_of_descriptors(os.open, path, flags, mode)


def _listdir(path: str) -> list[str]:
    return _retry_out_of_descriptors(os.listdir, path)


def _fsync_dir(path: str) -> None:
    # Followed if a symlink: the root may be one, and fsync of a directory reads and writes
    # nothing in it. O_NONBLOCK: a FIFO in its place must not block (O_DIRECTORY refuses it).
    fd = _open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | os.O_NONBLOCK | _CLOEXEC)
    try:
        os.fsync(fd)
    except OSError as exc:
        # A few file systems cannot fsync a directory (EINVAL); their renames are durable
        # by other means, and failing every create there would make the store unusable.
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP):
            raise
    finally:
        os.close(fd)


def _open_lock_file(path: str) -> int:
    # Never O_TRUNC: the lock file's bytes are nobody's business, and a lock is never a write.
    return open_regular(OS_FS, path, os.O_RDWR | os.O_CREAT, FILE_MODE)


def _file_lock(path: str, timeout: float) -> AbstractContextManager[Any]:
    return FileLock(path, timeout, _open_lock_file)


class OsFileSystem:
    """The real file system: each method is the ``os`` function of the same name.

    ``open``, ``listdir`` and ``fsync_dir`` (the calls that take a descriptor) retry once
    after the store's descriptor caches let go when the process is out of descriptors.
    """

    open = staticmethod(_open)
    close = staticmethod(os.close)
    write = staticmethod(os.write)
    pread = staticmethod(os.pread)
    fstat = staticmethod(os.fstat)
    ftruncate = staticmethod(os.ftruncate)
    fsync = staticmethod(_full_fsync if sys.platform == "darwin" else os.fsync)
    fdatasync = staticmethod(_full_fsync if sys.platform == "darwin" else os.fdatasync)
    flock = staticmethod(fcntl.flock)
    stat = staticmethod(os.stat)
    lstat = staticmethod(os.lstat)
    rename = staticmethod(os.rename)
    link = staticmethod(os.link)
    unlink = staticmethod(os.unlink)
    mkdir = staticmethod(os.mkdir)
    rmdir = staticmethod(os.rmdir)
    listdir = staticmethod(_listdir)
    fsync_dir = staticmethod(_fsync_dir)
    lock = staticmethod(_file_lock)


OS_FS: FileSystem = OsFileSystem()
