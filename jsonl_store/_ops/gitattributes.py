"""The store root's ``.gitattributes``: bringing an existing one up to what the store writes.

A store writes ``.gitattributes`` only when it is missing (spec §2), so a user's edits stay;
a root made by an older version lacks the merge lines (spec §17). This adds the lines it
lacks and changes nothing else.
"""

from __future__ import annotations

import os

from .._errors import StorageError, storage_error
from .._format.names import GITATTRIBUTES_NAME, GITATTRIBUTES_TEXT
from .._io import atomic as _atomic
from .._io.fs import OS_FS


def install_gitattributes(root: str | os.PathLike[str]) -> list[str]:
    """Add to ``root``'s ``.gitattributes`` each attribute line of the store's it lacks.

    Writes the store's whole text when the file is missing. Returns the lines added
    (empty when there was nothing to do: running it again changes nothing). Raises
    `UnsafePath` when the file is a symlink or not a regular file, and `StorageError`
    when the file system refuses (the old file then stays as it was).
    """
    directory = os.fspath(root)
    path = os.path.join(directory, GITATTRIBUTES_NAME)
    wanted = [line for line in GITATTRIBUTES_TEXT.splitlines() if line and not line.startswith("#")]
    try:
        data = _atomic.read_whole(OS_FS, path)
        if data is None:
            _atomic.replace(OS_FS, directory, GITATTRIBUTES_NAME, GITATTRIBUTES_TEXT.encode(), durable=True)
            return wanted
        present = {line.strip() for line in data.decode("utf-8", "replace").splitlines()}
        missing = [line for line in wanted if line not in present]
        if missing:
            if data and not data.endswith(b"\n"):
                data += b"\n"
            data += "".join(f"{line}\n" for line in missing).encode()
            _atomic.replace(OS_FS, directory, GITATTRIBUTES_NAME, data, durable=True)
    except OSError as exc:
        if isinstance(exc, StorageError):
            raise
        raise storage_error(exc, f"install_gitattributes({directory!r})", where=path) from exc
    return missing
