"""Making the store's directories: mode 0700, durable names, never through a symlink."""

from __future__ import annotations

import errno
import os
import stat

from .._errors import StorageError, UnsafePath, storage_error
from .fs import DIR_MODE, FileSystem, check_directory


def makedirs(fs: FileSystem, path: str, *, durable: bool, session_id: str | None = None) -> list[str]:
    """Make ``path`` and its missing parents (mode 0700); with ``durable``, make each name durable.

    The directory holding ``path`` is fsynced even when ``path`` already existed: the
    process that made it may have crashed (or failed its fsync) before doing so.
    Returns the directories this call made, parents first.
    With ``session_id``, ``path`` is a session directory and must not be a symlink
    (`UnsafePath`); the root and its parents may be (a user's ``~/sessions ->
    /data/sessions``). Every error but "exists" is raised, never retried: a name that
    exists but is no directory (a dangling symlink) or a file system that makes no
    directories (``/proc``) would otherwise send this walk up and down forever.
    """
    made: list[str] = []
    missing: list[str] = []
    while True:  # up, to the nearest directory that exists
        try:
            fs.mkdir(path, DIR_MODE)
            created = True
            break
        except FileExistsError:
            created = False
            break
        except FileNotFoundError as exc:
            parent = os.path.dirname(path)
            if not parent or parent == path:
                raise _cannot_make(path, exc) from exc
            missing.append(path)
            path = parent
        except OSError as exc:
            raise _cannot_make(path, exc) from exc
    while True:  # and down again, making each missing one
        if created:
            made.append(path)
        else:
            # Made by us before, or by another process just now (which may not have
            # fsynced its parent yet): it must be a directory, and its name durable.
            _check_existing(fs, path, session_id if not missing else None)
        if durable:
            fs.fsync_dir(os.path.dirname(path) or ".")
        if not missing:
            return made
        path = missing.pop()
        try:
            fs.mkdir(path, DIR_MODE)
            created = True
        except FileExistsError:
            created = False
        except OSError as exc:
            raise _cannot_make(path, exc) from exc


def exists(fs: FileSystem, path: str) -> bool:
    """Whether a name exists (``lstat``: a symlink is a name, never followed)."""
    try:
        fs.lstat(path)
    except FileNotFoundError:
        return False
    return True


def _check_existing(fs: FileSystem, path: str, session_id: str | None) -> None:
    """Refuse a name ``mkdir`` found taken by something that is not a directory."""
    if session_id is not None:
        check_directory(fs, path, session_id=session_id)  # never through a symlink
        return
    try:
        mode = fs.stat(path).st_mode  # the root and its parents may be symlinks
    except FileNotFoundError as exc:
        message = f"{os.path.basename(path) or path} is a dangling symlink; no store can be made below it"
        raise UnsafePath(message, filename=path, path=path) from exc
    if not stat.S_ISDIR(mode):
        message = f"{os.path.basename(path) or path} is not a directory; a store cannot be made below it"
        raise UnsafePath(message, filename=path, path=path)


def _cannot_make(path: str, exc: OSError) -> StorageError:
    """The typed error for a directory ``mkdir`` refused, keeping ``errno``."""
    if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
        reason = exc.strerror or str(exc)
        return UnsafePath(
            f"cannot make directory {os.path.basename(path)}: {reason} (a dangling symlink or a file in "
            "the way, or a file system that holds no new directories, such as /proc)",
            errno=exc.errno,
            strerror=exc.strerror,
            filename=path,
            path=path,
        )
    return storage_error(exc, f"making directory {os.path.basename(path)}", where=path)
