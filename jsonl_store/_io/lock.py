"""The session lock: ``flock(2)`` on the session's ``.lock`` file, held by one thread at a time.

The store used ``filelock.FileLock`` until it met files that are not what they seem
and processes that fork. The Unix lock of filelock 3.x (https://github.com/tox-dev/filelock,
``src/filelock/_unix.py``, ``UnixFileLock._acquire``) opens the lock file with
``O_RDWR | O_TRUNC`` and without ``O_NOFOLLOW``, so a ``.lock`` that is a symlink
truncates the file it points to, outside the store; filelock 4.x refuses to be used in a
forked child (a ``RuntimeError``); and with 3.12.4 the store's first append raised
``TypeError`` (an old release meeting a newer Python). What the store needs is small enough to own:

- the file is opened ``O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC``, mode
  0600, never truncated, and must be a regular file (``opener`` checks with ``fstat``);
- ``flock(LOCK_EX | LOCK_NB)`` is polled with a growing pause until the timeout: the
  kernel releases a flock when its holder dies, so a crashed process never wedges a
  session, and waiting is bounded by live holders only;
- re-entrant within a thread, exclusive between threads (a flock belongs to an open
  file description, so two threads on one descriptor would both get it);
- the lock file is never deleted where it is: deleting it while another process waits
  on it would let two holders in at once. `delete_session` renames the whole session
  directory away instead (spec §9.5), so a waiter may end up holding the lock of a file
  that is no longer at ``path``: after each ``flock`` the lock checks that ``path``
  still names the file it locked (``lstat`` against ``fstat``) and otherwise starts
  again with the file now there (or fails with ``FileNotFoundError``: the session's
  directory is gone);
- after ``os.fork()`` the child starts with no lock held and no descriptor of its
  parent's: using the parent's descriptor would share the parent's flock (both would be
  "in"), and a lock a parent thread held at the fork is not the child's.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections.abc import Callable
from typing import Self

from .. import _process

#: The longest pause between two attempts; a session lock is held for milliseconds.
MAX_PAUSE = 0.005


class FileLock:
    """A cross-process, cross-thread lock on the file ``path``; see the module docstring.

    ``opener(path)`` returns a descriptor open for reading and writing on the lock file,
    creating it; it raises for a name that must not be used (a symlink, a FIFO ...).
    Raises ``TimeoutError`` when the lock is not acquired within ``timeout`` seconds.
    """

    def __init__(self, path: str, timeout: float, opener: Callable[[str], int]) -> None:
        self.path = path
        self.timeout = timeout
        self._opener = opener
        self._start_fresh()
        _process.FILE_LOCKS.add(self)

    def _start_fresh(self) -> None:
        self._mutex = threading.RLock()  # thread exclusion and re-entrancy in one
        self._depth = 0
        self._fd = -1

    def __enter__(self) -> Self:
        deadline = time.monotonic() + self.timeout
        if not self._mutex.acquire(timeout=min(self.timeout, threading.TIMEOUT_MAX)):
            raise TimeoutError(f"could not lock {self.path} within {self.timeout} s (held by another thread)")
        try:
            if self._depth == 0:
                self._fd = self._acquire(deadline)
            self._depth += 1
        except BaseException:
            self._mutex.release()
            raise
        return self

    def _acquire(self, deadline: float) -> int:
        fd = self._opener(self.path)
        try:
            pause = 0.0001
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    pass
                else:
                    if _still_named(fd, self.path):
                        return fd
                    # The directory was renamed away while we waited (a delete): this
                    # lock guards nothing any more; lock the file now at the path.
                    fcntl.flock(fd, fcntl.LOCK_UN)
                    os.close(fd)
                    fd = -1
                    fd = self._opener(self.path)
                    continue
                if time.monotonic() >= deadline:
                    raise TimeoutError(f"could not lock {self.path} within {self.timeout} s")
                time.sleep(pause)
                pause = min(pause * 2, MAX_PAUSE)
        except BaseException:
            if fd >= 0:
                os.close(fd)
            raise

    def __exit__(self, *exc: object) -> None:
        if self._depth == 0:
            return  # entered in a parent before fork: this process never held the lock
        self._depth -= 1
        if self._depth == 0:
            fd, self._fd = self._fd, -1
            try:
                # Unlock before closing: a child forked while we held the lock keeps a copy
                # of the descriptor, and close alone would release only with the last copy.
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)
        self._mutex.release()

    def _after_fork_in_child(self) -> None:
        """In a forked child: drop the parent's descriptor and state (never unlock it)."""
        if self._fd >= 0:
            try:
                os.close(self._fd)  # our copy only; the parent's lock stays held
            except OSError:
                pass
        self._start_fresh()


def _still_named(fd: int, path: str) -> bool:
    """Whether ``path`` names the file open on ``fd`` (one ``lstat``, one ``fstat``)."""
    try:
        named = os.lstat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)
