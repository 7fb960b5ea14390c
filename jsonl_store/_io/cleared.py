"""Emptying a session directory that a delete renamed away (spec §9.5).

A delete renames the directory to a name no session id can have first, so no reader or
writer finds a half-deleted session; what is left is cleared here, by the delete itself or
by whichever store meets the leftover next.
"""

from __future__ import annotations

import errno
import os
import stat

from .._format.names import BLOBS_DIR, LOG_NAME
from .fs import FileSystem


def clear_deleted(fs: FileSystem, path: str) -> None:
    """Empty and remove a session directory a delete renamed away (`deleted_name`).

    The log goes first, so a writer waiting for its append lock finds it unlinked at once.
    Names another process removed meanwhile (a store clearing the same leftovers) are
    skipped; a directory other than ``blobs`` is not the store's and stays, with its parent.
    """
    try:
        names = sorted(fs.listdir(path), key=lambda name: name != LOG_NAME)
    except FileNotFoundError:
        return
    for name in names:
        entry = os.path.join(path, name)
        try:
            if name == BLOBS_DIR and stat.S_ISDIR(fs.lstat(entry).st_mode):
                for blob in fs.listdir(entry):
                    _unlink_if_there(fs, os.path.join(entry, blob))
                fs.rmdir(entry)
            else:
                fs.unlink(entry)
        except FileNotFoundError:
            continue
        except IsADirectoryError:
            return
    try:
        fs.rmdir(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        # Another delete of the same id renamed its directory onto this one once it was
        # empty: what is there now is that delete's to clear.
        if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
            raise


def _unlink_if_there(fs: FileSystem, path: str) -> None:
    try:
        fs.unlink(path)
    except FileNotFoundError:
        pass
