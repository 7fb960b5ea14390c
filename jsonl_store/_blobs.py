"""Large string values kept in content-addressed blob files, out of the raw log (spec §5.1).

A writer replaces every string inside a message whose UTF-8 form is longer than the
store's threshold by a *marker*, ``{"$blob":"sha256:<hex>","size":N}``, and writes the
string's UTF-8 bytes to ``<session>/blobs/<hex>`` before the record (§9.13); a reader
puts the string back before it decodes the record, so callers never see a marker. The
blob files live inside the session directory, not at the store root: deleting,
verifying, copying or committing one session then concerns one directory, and no
session can lose a blob another one still needs. Identical payloads within a session
are stored once; across sessions they are not shared.

Only a message longer than the threshold can hold such a string (a JSON string is at
least as long as its UTF-8 bytes), so the append path of an ordinary message pays one
length comparison and one byte search (`KEY_BYTES`) and nothing else.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Iterable
from typing import Any, Final

import msgspec

from . import _atomic, _codec, _dirs
from ._errors import InvalidArgument, InvalidMessage, RecordTooLarge, UnsafePath
from ._fs import FileSystem, check_directory, describe_mode
from ._paths import BLOBS_DIR, DAMAGED_SUFFIX, blob_aside_name, is_blob_name
from ._problems import DELETE, LEAVE_UNSAFE, MOVE_ASIDE, PLACEHOLDER, PUT_BLOB_BACK, Problem, Reporter

#: Strings longer than this many UTF-8 bytes go to blob files (`SessionStore(blob_threshold=)`).
DEFAULT_THRESHOLD: Final = 64 * 1024
#: The longest record line a writer writes, blobs spilled (`SessionStore(max_record_bytes=)`).
DEFAULT_MAX_RECORD_BYTES: Final = 16 * 1024 * 1024
MARKER_KEY: Final = "$blob"
#: The marker key as JSON: what a reader looks for before it parses a line for markers (a
#: string value ``"$blob"`` matches too; parsing then finds no marker, at some cost).
KEY_BYTES: Final = b'"$blob"'
#: The key followed by its colon. Inside an encoded string every ``"`` is escaped as
#: ``\\"``, and after a string value comes ``,``, ``]`` or ``}``: in the compact JSON a
#: writer encodes, these bytes occur only where an object has the key ``$blob``.
LOOKALIKE_BYTES: Final = b'"$blob":'
DIGEST_PREFIX: Final = "sha256:"
#: What `encode` cannot know yet and the writer adds under the lock: ``{"sequence":N,``,
#: ``"batch_end":N,`` (20 digits each at most) and the checksum suffix, with room to spare.
NUMBERS_ROOM: Final = 96

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder()
_KEEP: Final = object()


class Sizes:
    """A store's two size options and what writes its blobs: one argument for `_append.encode`."""

    __slots__ = ("max_record_bytes", "record_room", "store", "threshold")

    def __init__(
        self,
        threshold: object,
        max_record_bytes: object,
        store: Callable[[str, dict[str, bytes]], None] | None = None,
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


def placeholder(digest: str, reason: str) -> str:
    """What a reader gives back for a string whose blob it cannot read (spec §8.8)."""
    return f"[jsonl_store: blob sha256:{digest} unavailable: {reason}]"


def _walk(root: dict[str, Any] | list[Any], fix: Callable[[Any], Any]) -> None:
    """Replace, below ``root``, every value for which ``fix`` returns something but `_KEEP`.

    Iterative: a message may be nested about a thousand levels deep (`_codec.MAX_DEPTH`),
    deeper than a recursive walk could go from an arbitrary caller's stack.
    """
    stack: list[Any] = [root]
    while stack:
        node = stack.pop()
        pairs: Iterable[tuple[Any, Any]] = node.items() if type(node) is dict else enumerate(node)
        changes = []
        for key, value in pairs:
            new = fix(value)
            if new is not _KEEP:
                changes.append((key, new))
            elif type(value) is dict or type(value) is list:
                stack.append(value)
        for key, new in changes:
            node[key] = new


# ---------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------


def refuse_lookalike(payload: bytes) -> None:
    """A message may not hold an object with the key ``$blob``: a reader would take it for a marker.

    Called only for a payload holding a ``$`` (the append path looks for that byte alone).
    """
    if LOOKALIKE_BYTES in payload:
        raise InvalidMessage(
            f'a message must not hold an object with the key "{MARKER_KEY}": it is reserved for '
            "blob markers (spec §5.1)"
        )


def spill(payload: bytes, threshold: int, blobs: dict[str, bytes]) -> bytes:
    """``payload`` with every string over ``threshold`` UTF-8 bytes replaced by its marker.

    The strings' bytes are added to ``blobs`` by digest (in the order met, so the same
    message writes its blobs in the same order). Keys are never spilled.
    """
    tree = _decoder.decode(payload)

    def fix(value: Any) -> Any:
        # A string of n code points has at most 4n UTF-8 bytes: most are too short to look at.
        if type(value) is not str or len(value) * 4 <= threshold:
            return _KEEP
        data = value.encode()  # `encode_message` refused lone surrogates already
        if len(data) <= threshold:
            return _KEEP
        digest = hashlib.sha256(data).hexdigest()
        blobs[digest] = data
        return marker(digest, len(data))

    _walk(tree, fix)
    return _encoder.encode(tree) if blobs else payload


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


def store(fs: FileSystem, directory: str, blobs: dict[str, bytes], *, durable: bool) -> None:
    """Make each blob a complete, durable file before the record that names it is written (§9.13).

    Temporary file beside the log (so a crash leaves only a `leftover-temp`), fdatasync,
    rename into ``blobs/``, then one fsync of ``blobs/``. A blob already there with the
    right bytes is kept (identical payloads are stored once); one whose bytes are wrong is
    replaced, since the rename is atomic.
    """
    folder = os.path.join(directory, BLOBS_DIR)
    _dirs.makedirs(fs, folder, durable=durable, session_id=os.path.basename(directory))
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
# Reading
# ---------------------------------------------------------------------------------------


def read_blob(fs: FileSystem, directory: str, digest: str, size: int) -> tuple[str | None, str]:
    """The blob's string, or None and why it cannot be read (missing, damaged, unsafe)."""
    path = os.path.join(directory, BLOBS_DIR, digest)
    try:
        data = _atomic.read_whole(fs, path, size)
    except _atomic.FileTooLarge as exc:
        return None, f"the file has {exc.size} bytes, not {size}"
    except UnsafePath as exc:
        return None, exc.message
    except (FileNotFoundError, NotADirectoryError):
        data = None
    if data is None:
        return None, "the file is missing"
    if len(data) != size:
        return None, f"the file has {len(data)} bytes, not {size}"
    if hashlib.sha256(data).hexdigest() != digest:
        return None, "the file's bytes do not match its SHA-256 (damaged)"
    try:
        return data.decode(), ""
    except UnicodeDecodeError:
        return None, "the file is not UTF-8"


def parse_marker(value: dict[str, Any]) -> tuple[str, int] | None:
    """A marker's digest and size, or None when it is not exactly a marker (§5.1)."""
    reference, size = value.get(MARKER_KEY), value.get("size")
    if len(value) != 2 or type(reference) is not str or type(size) is not int or size < 0:
        return None
    digest = reference[len(DIGEST_PREFIX) :]
    if not reference.startswith(DIGEST_PREFIX) or not is_blob_name(digest):
        return None
    return digest, size


def restore(fs: FileSystem, directory: str, body: bytes, reporter: Reporter) -> bytes:
    """A record line's JSON with every marker in its message replaced by the blob's string.

    A blob that cannot be read (or a malformed marker) becomes `placeholder` text and a
    `bad-blob` problem; reading goes on. Raises what decoding raises
    (`_codec.DECODE_ERRORS`) for a line that is not JSON.
    """
    try:
        return _restore(fs, directory, body, reporter)
    except RecursionError:
        return _codec._in_deep_stack(_restore, fs, directory, body, reporter)


def _restore(fs: FileSystem, directory: str, body: bytes, reporter: Reporter) -> bytes:
    tree = _decoder.decode(body)
    message = tree.get("message") if type(tree) is dict else None
    if type(message) is not dict:
        return body
    sequence = tree.get("sequence")
    read: dict[str, tuple[str | None, str]] = {}
    folder_checked: list[str] = []  # why the blobs directory cannot be read, once looked at

    def fix(value: Any) -> Any:
        if type(value) is not dict or MARKER_KEY not in value:
            return _KEEP
        parsed = parse_marker(value)
        folder = os.path.join(directory, BLOBS_DIR)
        if parsed is None:
            reason = f"record {sequence} holds a malformed blob marker"
            reporter.report(Problem(folder, "bad-blob", reason, PLACEHOLDER))
            return placeholder("?", "malformed marker")
        digest, size = parsed
        if not folder_checked:
            try:
                check_directory(fs, folder)
                folder_checked.append("")
            except UnsafePath as exc:
                folder_checked.append(exc.message)
        if folder_checked[0]:
            found: tuple[str | None, str] = (None, folder_checked[0])
        else:
            found = read.get(digest) or read.setdefault(digest, read_blob(fs, directory, digest, size))
        text, reason = found
        if text is None:
            reporter.report(
                Problem(os.path.join(folder, digest), "bad-blob", f"record {sequence}: {reason}", PLACEHOLDER)
            )
            return placeholder(digest, reason)
        return text

    _walk(message, fix)
    return _encoder.encode(tree)


def references(body: bytes) -> list[tuple[str, int]]:
    """The blobs a record line's message names (digest, size), for verify and repair."""
    if KEY_BYTES not in body:
        return []
    try:
        tree = _decoder.decode(body)
    except _codec.DECODE_ERRORS:
        return []
    message = tree.get("message") if type(tree) is dict else None
    if type(message) is not dict:
        return []
    found: list[tuple[str, int]] = []

    def fix(value: Any) -> Any:
        if type(value) is dict and MARKER_KEY in value:
            parsed = parse_marker(value)
            if parsed is not None:
                found.append(parsed)
            return value  # not descended into: a marker holds no marker
        return _KEEP

    _walk(message, fix)
    return found


# ---------------------------------------------------------------------------------------
# Verify, repair, delete
# ---------------------------------------------------------------------------------------


def listing(fs: FileSystem, directory: str) -> list[str] | None:
    """The names in the session's ``blobs/`` (None when there is none); `UnsafePath` if no directory."""
    folder = os.path.join(directory, BLOBS_DIR)
    if not check_directory(fs, folder):
        return None
    return sorted(fs.listdir(folder))


def check(
    fs: FileSystem, directory: str, names: list[str], referenced: dict[str, int], *, fix: bool
) -> list[Problem]:
    """Problems of the blob files (spec §12): referenced but unreadable, or referenced by no record.

    ``names`` is `listing`; ``referenced`` maps each digest the log's records name to its
    size. With ``fix`` (the caller holds the log's append lock, so no writer is between a
    blob and its record): a damaged blob is moved aside as ``blobs-<hex>.damaged`` beside
    the log, an orphan is deleted; a referenced blob that reads back is never touched.
    """
    folder = os.path.join(directory, BLOBS_DIR)
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
            problems.append(Problem(path, "bad-blob", "referenced by a record; the file is missing", PUT_BLOB_BACK))
            continue
        if any(p.path == path for p in problems):
            continue  # an unsafe path, reported above
        text, reason = read_blob(fs, directory, digest, size)
        if text is None:
            problems.append(Problem(path, "bad-blob", f"referenced by a record; {reason}", MOVE_ASIDE))
            if fix:
                _move_aside(fs, directory, digest)
                changed = True
    if changed:
        fs.fsync_dir(folder)
    return problems


def _move_aside(fs: FileSystem, directory: str, digest: str) -> None:
    base = blob_aside_name(digest)
    existing = set(fs.listdir(directory))
    target, counter = base + DAMAGED_SUFFIX, 1
    while target in existing:
        counter += 1
        target = f"{base}.{counter}{DAMAGED_SUFFIX}"
    fs.rename(os.path.join(directory, BLOBS_DIR, digest), os.path.join(directory, target))
    fs.fsync_dir(directory)


def deletable(fs: FileSystem, folder: str, session_id: str) -> list[str]:
    """The names in ``blobs/`` a delete removes; `UnsafePath` (nothing deleted) for anything not a regular file."""
    names = fs.listdir(folder)
    for name in names:
        path = os.path.join(folder, name)
        mode = fs.lstat(path).st_mode
        if not stat.S_ISREG(mode):
            raise UnsafePath(
                f"{BLOBS_DIR}/{name} is {describe_mode(mode)}, not a regular file; nothing was deleted",
                filename=path, session_id=session_id, path=path,
            )  # fmt: skip
    return names
