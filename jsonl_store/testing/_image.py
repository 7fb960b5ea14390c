"""Disk images: inode number to file bytes or directory entries, and their real-disk form."""

from __future__ import annotations

import errno
import os
import posixpath
from collections.abc import Mapping
from typing import Final, TypeAlias

ROOT_INO: Final = 1
Image: TypeAlias = Mapping[int, "bytes | Mapping[str, int]"]
"""A disk image: inode number to file bytes or directory entries; inode 1 is ``/``."""


def image_tree(image: Image) -> dict[str, bytes | None]:
    """Every path reachable from ``/`` in ``image``, mapped to bytes (None for a directory)."""
    out: dict[str, bytes | None] = {}

    def walk(ino: int, path: str, seen: frozenset[int]) -> None:
        content = image[ino]
        if isinstance(content, bytes | bytearray):
            out[path] = bytes(content)
            return
        if path != "/":
            out[path] = None
        for name in sorted(content):
            child = content[name]
            if child not in seen:
                walk(child, posixpath.join(path, name), seen | {child})

    walk(ROOT_INO, "/", frozenset({ROOT_INO}))
    return out


def materialize_image(image: Image, path: str | os.PathLike[str]) -> None:
    """Write ``image`` into the real directory ``path``: ``/`` becomes ``path``.

    ``path`` is created if missing and must be empty. Hard links stay hard links.
    Raises ``FileExistsError`` when ``path`` is not empty.
    """
    root = os.fspath(path)
    os.makedirs(root, exist_ok=True)
    if os.listdir(root):
        raise FileExistsError(errno.EEXIST, "materialize needs an empty directory", root)
    first_path: dict[int, str] = {}

    def walk(ino: int, real: str) -> None:
        content = image[ino]
        assert not isinstance(content, bytes | bytearray)
        for name in sorted(content):
            child = content[name]
            target = os.path.join(real, name)
            data = image[child]
            if isinstance(data, bytes | bytearray):
                if child in first_path:
                    os.link(first_path[child], target)
                else:
                    with open(target, "wb") as file:
                        file.write(data)
                    first_path[child] = target
            elif child not in first_path:
                first_path[child] = target
                os.mkdir(target)
                walk(child, target)

    walk(ROOT_INO, root)
