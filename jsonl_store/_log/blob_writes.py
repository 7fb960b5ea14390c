"""Writing blob files (spec §9.14), and what verify, repair and delete do with them (§12).

`spill` replaces a message's large strings by markers (`_log.blobs`) and collects their bytes;
`store` makes them durable files right before their record; `check` is verify's and
repair's look at ``blobs/``; `deletable` is what `delete_session` removes.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable
from typing import Any, Final

import msgspec

from .._errors import InvalidArgument, InvalidMessage, RecordTooLarge, UnsafePath
from .._format.depth import with_deep_stack
from .._format.names import BLOBS_DIR, blob_aside_name, damaged_name, is_blob_name
from .._io import atomic as _atomic
from .._io import dirs as _dirs
from .._io.fs import FileSystem, describe_mode
from .._io.session_dir import SessionDir
from .blobs import (
    DEFAULT_MAX_RECORD_BYTES,
    DEFAULT_THRESHOLD,
    DIGEST_PREFIX,
    KEEP,
    LOOKALIKE_BYTES,
    MARKER_KEY,
    NUMBERS_ROOM,
    read_blob,
    walk,
)
from .problems import DELETE, LEAVE_UNSAFE, MOVE_ASIDE, PUT_BLOB_BACK, Problem

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder()


class Sizes:
    """A store's two size options and what writes its blobs: one argument for `_ops.append.encode`."""

    __slots__ = ("max_record_bytes", "record_room", "store", "threshold")

    def __init__(
        self,
        threshold: object,
        max_record_bytes: object,
        store: Callable[[SessionDir, dict[str, bytes]], None] | None = None,
    ) -> None:
        for name, value in (("blob_threshold", threshold), ("max_record_bytes", max_record_bytes)):
            if type(value) is not int or value < 1:
                raise InvalidArgument(f"{name} must be a positive int, got {value!r}")
        assert isinstance(threshold, int) and isinstance(max_record_bytes, int)
        self.threshold = threshold
        self.max_record_bytes = max_record_bytes
        #: How long a record may be before the numbers a writer adds under the lock.
        self.record_room = max_record_bytes - NUMBERS_ROOM
        self.store = store


DEFAULT_SIZES: Final = Sizes(DEFAULT_THRESHOLD, DEFAULT_MAX_RECORD_BYTES)


def marker(digest: str, size: int) -> dict[str, Any]:
    return {MARKER_KEY: DIGEST_PREFIX + digest, "size": size}


# ---------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------


def prepare(
    payload: bytes, threshold: int, blobs: dict[str, bytes] | None
) -> tuple[bytes, dict[str, bytes] | None]:
    """A message's payload as a record holds it, and the blobs its batch needs so far.

    Called only for a payload holding a ``$`` or longer than ``threshold``: refuses a
    marker look-alike, then spills the strings over the threshold.
    """
    refuse_lookalike(payload)
    if len(payload) > threshold:
        if blobs is None:
            blobs = {}
        payload = spill(payload, threshold, blobs)
    return payload, blobs


def refuse_lookalike(payload: bytes) -> None:
    """A message may not hold an object with the key ``$blob``: a reader would take it for a marker.

    Called only for a payload holding a ``$`` (the append path looks for that byte alone).
    """
    if LOOKALIKE_BYTES in payload:
        raise InvalidMessage(
            f'a message must not hold an object with the key "{MARKER_KEY}": it is reserved for '
            "blob markers (spec §5.1)"
        )


@with_deep_stack  # a message up to MAX_DEPTH deep, from an append on any stack (spec §4)
def spill(payload: bytes, threshold: int, blobs: dict[str, bytes]) -> bytes:
    """``payload`` with every string over ``threshold`` UTF-8 bytes replaced by its marker.

    The strings' bytes are added to ``blobs`` by digest (in the order met, so the same
    message writes its blobs in the same order; a second run adds the same). Keys are
    never spilled.
    """
    tree = _decoder.decode(payload)
    spilled: list[str] = []

    def fix(value: Any) -> Any:
        # A string of n code points has at most 4n UTF-8 bytes: most are too short to look at.
        if type(value) is not str or len(value) * 4 <= threshold:
            return KEEP
        data = value.encode()  # `encode_message` refused lone surrogates already
        if len(data) <= threshold:
            return KEEP
        digest = hashlib.sha256(data).hexdigest()
        blobs[digest] = data
        spilled.append(digest)
        return marker(digest, len(data))

    walk(tree, fix)
    return _encoder.encode(tree) if spilled else payload


def check_size(head: bytes, trailer: bytes, limit: int) -> None:
    """Refuse a record whose line could be longer than ``limit`` bytes, before anything is written."""
    size = len(head) + len(trailer) + NUMBERS_ROOM
    if size > limit:
        raise RecordTooLarge(
            f"the record would be about {size} bytes with its large strings in blob files, "
            f"more than the store's max_record_bytes ({limit}); nothing was written",
            size=size,
            limit=limit,
        )


def store(where: SessionDir, blobs: dict[str, bytes], *, durable: bool) -> None:
    """Make each blob a complete, durable file before the record that names it is written (§9.14).

    Temporary file beside the log (so a crash leaves only a `leftover-temp`), fdatasync,
    rename into ``blobs/``, then one fsync of ``blobs/``. A blob already there with the
    right bytes is kept (identical payloads are stored once); one whose bytes are wrong is
    replaced, since the rename is atomic.
    """
    fs, directory = where.fs, where.path
    folder = where.file(BLOBS_DIR)
    _dirs.makedirs(fs, folder, durable=durable, session_id=where.session_id)
    wrote = False
    for digest, data in blobs.items():
        path = os.path.join(folder, digest)
        try:
            existing = _atomic.read_whole(fs, path, len(data))
        except _atomic.FileTooLarge:
            existing = None
        if existing == data:
            continue
        temp = _atomic.write_temp(fs, directory, blob_aside_name(digest), data, durable=durable)
        try:
            fs.rename(temp, path)
        except BaseException:
            try:
                fs.unlink(temp)
            except FileNotFoundError:
                pass
            raise
        wrote = True
    if wrote and durable:
        fs.fsync_dir(folder)


# ---------------------------------------------------------------------------------------
# Verify, repair, delete
# ---------------------------------------------------------------------------------------


def check(where: SessionDir, names: list[str], referenced: dict[str, int], *, fix: bool) -> list[Problem]:
    """Problems of the blob files (spec §12): referenced but unreadable, or referenced by no record.

    ``names`` is `listing`; ``referenced`` maps each digest the log's records name to its
    size. With ``fix`` (the caller holds the log's append lock, so no writer is between a
    blob and its record): a damaged blob is moved aside as ``blobs-<hex>.damaged`` beside
    the log, an orphan is deleted; a referenced blob that reads back is never touched.
    """
    fs = where.fs
    folder = where.file(BLOBS_DIR)
    problems: list[Problem] = []
    present = set()
    changed = False
    for name in names:
        path = os.path.join(folder, name)
        mode = fs.lstat(path).st_mode
        if not stat.S_ISREG(mode):
            reason = f"{name} is {describe_mode(mode)}, not a regular file"
            problems.append(Problem(path, "unsafe-path", reason, LEAVE_UNSAFE))
            present.add(name)
            continue
        if not is_blob_name(name):
            continue  # not the store's: left alone, like any unknown file
        present.add(name)
        if name not in referenced:
            problems.append(Problem(path, "orphan-blob", "no record references this blob", DELETE))
            if fix:
                fs.unlink(path)
                changed = True
    for digest, size in sorted(referenced.items()):
        path = os.path.join(folder, digest)
        if digest not in present:
            problems.append(
                Problem(path, "bad-blob", "referenced by a record; the file is missing", PUT_BLOB_BACK)
            )
            continue
        if any(p.path == path for p in problems):
            continue  # an unsafe path, reported above
        text, reason = read_blob(where, digest, size)
        if text is None:
            problems.append(Problem(path, "bad-blob", f"referenced by a record; {reason}", MOVE_ASIDE))
            if fix:
                _move_aside(where, digest)
                changed = True
    if changed:
        fs.fsync_dir(folder)
    return problems


def _move_aside(where: SessionDir, digest: str) -> None:
    fs, directory = where.fs, where.path
    base = blob_aside_name(digest)
    existing = set(fs.listdir(directory))
    counter = 1
    while (target := damaged_name(base, counter)) in existing:
        counter += 1
    fs.rename(os.path.join(directory, BLOBS_DIR, digest), os.path.join(directory, target))
    fs.fsync_dir(directory)


def deletable(where: SessionDir) -> list[str] | None:
    """The names in the session's ``blobs/`` a delete removes, or None when it is no directory.

    Raises `UnsafePath` (so nothing is deleted) for an entry in it that is not a regular
    file. A ``blobs`` that is a symlink or a file is left to the caller's check of the
    session directory's names.
    """
    fs, folder = where.fs, where.file(BLOBS_DIR)
    try:
        if not stat.S_ISDIR(fs.lstat(folder).st_mode):
            return None
    except FileNotFoundError:
        return None
    names = fs.listdir(folder)
    only_regular_files(fs, folder, names, where.session_id, shown=f"{BLOBS_DIR}/")
    return names


def only_regular_files(
    fs: FileSystem, folder: str, names: list[str], session_id: str, *, shown: str = ""
) -> None:
    """`UnsafePath` for the first of ``names`` in ``folder`` that is not a regular file.

    What a delete checks before it changes anything: anything else is not the store's,
    and a person must look at it. ``shown`` is put before a name in the message.
    """
    for name in names:
        path = os.path.join(folder, name)
        mode = fs.lstat(path).st_mode
        if not stat.S_ISREG(mode):
            raise UnsafePath(
                f"{shown}{name} is {describe_mode(mode)}, not a regular file; nothing was deleted",
                filename=path, session_id=session_id, path=path,
            )  # fmt: skip
