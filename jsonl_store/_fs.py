"""The one door between the store and the operating system's files.

Every file operation the store makes goes through a `FileSystem` object, so a test can
hand the store a simulated one that records each operation and builds the states a
crash could leave behind (see `jsonl_store.testing`), without monkeypatching ``os``.
The methods mirror the ``os`` functions of the same name; `OsFileSystem` *is* those
functions, so the real path costs one attribute lookup and nothing more.
"""

from __future__ import annotations

import errno
import fcntl
import os
import sys
from contextlib import AbstractContextManager
from typing import Any, Protocol

import filelock


class StatResult(Protocol):
    """The fields of ``os.stat_result`` the store reads."""

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
        be released when its holder dies, and its file must never be deleted.
        """
        ...


def _full_fsync(fd: int) -> None:
    # On macOS fsync(2) only hands data to the drive, which may keep it in a volatile cache;
    # F_FULLFSYNC asks the drive to flush too. Fall back to fsync where a file system
    # refuses it (some network and FUSE file systems do).
    try:
        fcntl.fcntl(fd, fcntl.F_FULLFSYNC)  # type: ignore[attr-defined]
    except OSError:
        os.fsync(fd)


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    except OSError as exc:
        # A few file systems cannot fsync a directory (EINVAL); their renames are durable
        # by other means, and failing every create there would make the store unusable.
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP):
            raise
    finally:
        os.close(fd)


def _file_lock(path: str, timeout: float) -> AbstractContextManager[Any]:
    # filelock's Unix lock is flock(2): released by the kernel when its holder dies, so a
    # crashed process never wedges a session. The file itself is kept: deleting a lock
    # file while another process waits on it would let two holders in at once.
    # The session lock is held for milliseconds (a metadata merge, a snapshot), so a
    # waiter polls every 2 ms rather than filelock's default 50 ms.
    try:
        return filelock.FileLock(  # type: ignore[call-arg,unused-ignore]
            path, timeout=timeout, poll_interval=0.002, preserve_lock_file=True
        )
    except TypeError:  # filelock < 4 has no such option, and never deletes on Unix anyway
        return filelock.FileLock(path, timeout=timeout, poll_interval=0.002)


class OsFileSystem:
    """The real file system: each method is the ``os`` function of the same name."""

    open = staticmethod(os.open)
    close = staticmethod(os.close)
    write = staticmethod(os.write)
    pread = staticmethod(os.pread)
    fstat = staticmethod(os.fstat)
    ftruncate = staticmethod(os.ftruncate)
    fsync = staticmethod(_full_fsync if sys.platform == "darwin" else os.fsync)
    fdatasync = staticmethod(_full_fsync if sys.platform == "darwin" else os.fdatasync)
    flock = staticmethod(fcntl.flock)
    stat = staticmethod(os.stat)
    rename = staticmethod(os.rename)
    link = staticmethod(os.link)
    unlink = staticmethod(os.unlink)
    mkdir = staticmethod(os.mkdir)
    rmdir = staticmethod(os.rmdir)
    listdir = staticmethod(os.listdir)
    fsync_dir = staticmethod(_fsync_dir)
    lock = staticmethod(_file_lock)


OS_FS: FileSystem = OsFileSystem()
