"""Whole-file writes that a reader sees entirely or not at all."""

from __future__ import annotations

import os

from .._errors import name_file
from .._format.ids import new_uuid7
from .._format.names import tmp_name
from .fs import FILE_MODE, SAFE_FLAGS, FileSystem, open_regular_stat

# O_EXCL makes a new regular file and fails on any name that exists, a symlink included.
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | SAFE_FLAGS


def write_all(fs: FileSystem, fd: int, data: bytes) -> None:
    """Write every byte of ``data`` to ``fd``, going on after short writes."""
    view = memoryview(data)
    while view:
        view = view[fs.write(fd, view) :]  # type: ignore[arg-type]


def write_temp(fs: FileSystem, directory: str, final_name: str, data: bytes, *, durable: bool) -> str:
    """Write ``data`` to a new temporary file beside ``final_name``; return its path."""
    path = os.path.join(directory, tmp_name(final_name, new_uuid7()[-12:]))
    fd = fs.open(path, _CREATE, FILE_MODE)
    try:
        write_all(fs, fd, data)
        if durable:
            # fdatasync is enough: it flushes the data and the size needed to read it back;
            # the name is made durable by the directory fsync after the rename or link.
            fs.fdatasync(fd)
    except BaseException as exc:
        if isinstance(exc, OSError):
            name_file(exc, path)  # write(2) and fsync(2) name no file; a disk-full caller wants it
        fs.close(fd)
        _unlink_quietly(fs, path)
        raise
    fs.close(fd)
    return path


def replace(fs: FileSystem, directory: str, name: str, data: bytes, *, durable: bool) -> None:
    """Replace ``directory/name`` atomically: temporary file, fsync, rename, directory fsync."""
    temp = write_temp(fs, directory, name, data, durable=durable)
    try:
        fs.rename(temp, os.path.join(directory, name))
    except BaseException:
        _unlink_quietly(fs, temp)
        raise
    if durable:
        fs.fsync_dir(directory)


def create_exclusive(fs: FileSystem, directory: str, name: str, data: bytes, *, durable: bool) -> bool:
    """Create ``directory/name`` with ``data`` unless it exists; False if it already did.

    ``link(2)`` of a complete temporary file is the compare-and-swap: it fails when the
    name exists, across processes, and the name never points at a partial file.
    """
    temp = write_temp(fs, directory, name, data, durable=durable)
    try:
        fs.link(temp, os.path.join(directory, name))
        created = True
    except FileExistsError:
        created = False
    finally:
        _unlink_quietly(fs, temp)
    if durable:
        fs.fsync_dir(directory)
    return created


class FileTooLarge(Exception):
    """Internal: a whole-file read refused a file above its cap, without reading it."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"{size} bytes, more than the {limit >> 20} MiB a reader reads whole")
        self.size = size
        self.limit = limit


def read_whole(fs: FileSystem, path: str, limit: int | None = None) -> bytes | None:
    """The file's bytes, or None when it does not exist.

    Raises `FileTooLarge` for a file over ``limit`` bytes before reading any of it, and
    `UnsafePath` when ``path`` is a symlink or not a regular file (never followed).
    """
    try:
        fd, st = open_regular_stat(fs, path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        size = st.st_size
        if limit is not None and size > limit:
            raise FileTooLarge(size, limit)
        data = fs.pread(fd, size, 0) if size else b""
        if len(data) < size:  # a short read: keep reading until the end
            parts = [data]
            offset = len(data)
            while chunk := fs.pread(fd, size - offset, offset):
                parts.append(chunk)
                offset += len(chunk)
            data = b"".join(parts)
        return data
    except OSError as exc:
        name_file(exc, path)
        raise
    finally:
        fs.close(fd)


def _unlink_quietly(fs: FileSystem, path: str) -> None:
    try:
        fs.unlink(path)
    except FileNotFoundError:
        pass
