"""Large string values kept in content-addressed blob files, out of the raw log (spec §5.1): the read side.

A writer replaces every string inside a message whose UTF-8 form is longer than the
store's threshold by a *marker*, ``{"$blob":"sha256:<hex>","size":N}``, and writes the
string's UTF-8 bytes to ``<session>/blobs/<hex>`` before the record (§9.14); a reader
puts the string back before it decodes the record, so callers never see a marker. The
blob files live inside the session directory, not at the store root: deleting,
verifying, copying or committing one session then concerns one directory, and no
session can lose a blob another one still needs. Identical payloads within a session
are stored once; across sessions they are not shared. Writing them (and verify, repair
and delete) is `_log.blob_writes`: a reader imports nothing that writes.

Only a message longer than the threshold can hold such a string (a JSON string is at
least as long as its UTF-8 bytes), so the append path of an ordinary message pays a
length comparison and a memchr for ``$`` (the look-alike check) and nothing else.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Iterable
from typing import Any, Final

import msgspec

from .._errors import UnsafePath
from .._format import codec as _codec
from .._format import depth as _depth
from .._format.names import BLOBS_DIR, is_blob_name
from .._io import atomic as _atomic
from .._io.fs import check_directory
from .._io.session_dir import SessionDir
from .problems import PLACEHOLDER, Problem, Reporter

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
KEEP: Final = object()
#: Why an intact-looking blob file (a regular file of the size its marker names) cannot be
#: read: the only placeholders (`placeholder`) such a file can give, whose text `search`
#: checks a needle against without hashing the file.
DAMAGED: Final = "the file's bytes do not match its SHA-256 (damaged)"
NOT_UTF8: Final = "the file is not UTF-8"


def placeholder(digest: str, reason: str) -> str:
    """What a reader gives back for a string whose blob it cannot read (spec §8, rule 11)."""
    return f"[jsonl_store: blob sha256:{digest} unavailable: {reason}]"


def walk(root: dict[str, Any] | list[Any], fix: Callable[[Any], Any]) -> None:
    """Replace, below ``root``, every value for which ``fix`` returns something but `KEEP`.

    Iterative: a message may be nested about a thousand levels deep (`_format.depth.MAX_DEPTH`),
    deeper than a recursive walk could go from an arbitrary caller's stack.
    """
    stack: list[Any] = [root]
    while stack:
        node = stack.pop()
        pairs: Iterable[tuple[Any, Any]] = node.items() if type(node) is dict else enumerate(node)
        changes = []
        for key, value in pairs:
            new = fix(value)
            if new is not KEEP:
                changes.append((key, new))
            elif type(value) is dict or type(value) is list:
                stack.append(value)
        for key, new in changes:
            node[key] = new


# ---------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------


def read_blob(where: SessionDir, digest: str, size: int) -> tuple[str | None, str]:
    """The blob's string, or None and why it cannot be read (missing, damaged, unsafe)."""
    path = os.path.join(where.path, BLOBS_DIR, digest)
    try:
        data = _atomic.read_whole(where.fs, path, size)
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
        return None, DAMAGED
    try:
        return data.decode(), ""
    except UnicodeDecodeError:
        return None, NOT_UTF8


def parse_marker(value: dict[str, Any]) -> tuple[str, int] | None:
    """A marker's digest and size, or None when it is not exactly a marker (§5.1)."""
    reference, size = value.get(MARKER_KEY), value.get("size")
    if len(value) != 2 or type(reference) is not str or type(size) is not int or size < 0:
        return None
    digest = reference[len(DIGEST_PREFIX) :]
    if not reference.startswith(DIGEST_PREFIX) or not is_blob_name(digest):
        return None
    return digest, size


def restore(where: SessionDir, body: bytes, reporter: Reporter) -> bytes:
    """A record line's JSON with every marker in its message replaced by the blob's string.

    A blob that cannot be read (or a malformed marker) becomes `placeholder` text and a
    `bad-blob` problem; reading goes on. Raises what decoding raises
    (`_format.codec.DECODE_ERRORS`) for a line that is not JSON.
    """
    try:
        return _restore(where, body, reporter)
    except RecursionError:
        return _depth.in_deep_stack(_restore, where, body, reporter)


def _restore(where: SessionDir, body: bytes, reporter: Reporter) -> bytes:
    tree = _decoder.decode(body)
    message = tree.get("message") if type(tree) is dict else None
    if type(message) is not dict:
        return body
    sequence = tree.get("sequence")
    read: dict[str, tuple[str | None, str]] = {}
    folder_checked: list[str] = []  # why the blobs directory cannot be read, once looked at

    def fix(value: Any) -> Any:
        if type(value) is not dict or MARKER_KEY not in value:
            return KEEP
        parsed = parse_marker(value)
        folder = where.file(BLOBS_DIR)
        if parsed is None:
            reason = f"record {sequence} holds a malformed blob marker"
            reporter.report(Problem(folder, "bad-blob", reason, PLACEHOLDER))
            return placeholder("?", "malformed marker")
        digest, size = parsed
        if not folder_checked:
            try:
                check_directory(where.fs, folder)
                folder_checked.append("")
            except UnsafePath as exc:
                folder_checked.append(exc.message)
        if folder_checked[0]:
            found: tuple[str | None, str] = (None, folder_checked[0])
        else:
            found = read.get(digest) or read.setdefault(digest, read_blob(where, digest, size))
        text, reason = found
        if text is None:
            reporter.report(
                Problem(os.path.join(folder, digest), "bad-blob", f"record {sequence}: {reason}", PLACEHOLDER)
            )
            return placeholder(digest, reason)
        return text

    walk(message, fix)
    return _encoder.encode(tree)


def references(body: bytes) -> tuple[list[tuple[str, int]], int]:
    """The blobs a record line's message names (digest, size), and how many markers are malformed.

    For verify and repair: what no record names is an orphan, so a record nested too
    deeply for this stack is decoded in a deeper one rather than taken to name nothing.
    """
    if KEY_BYTES not in body:
        return [], 0
    try:
        try:
            tree = _decoder.decode(body)
        except RecursionError:
            tree = _depth.in_deep_stack(_decoder.decode, body)
    except _codec.DECODE_ERRORS:
        return [], 0  # not a record readers give back: it names nothing
    message = tree.get("message") if type(tree) is dict else None
    if type(message) is not dict:
        return [], 0
    found: list[tuple[str, int]] = []
    malformed = 0

    def fix(value: Any) -> Any:
        nonlocal malformed
        if type(value) is dict and MARKER_KEY in value:
            parsed = parse_marker(value)
            if parsed is None:
                malformed += 1
            else:
                found.append(parsed)
            return value  # not descended into: a marker holds no marker
        return KEEP

    walk(message, fix)
    return found, malformed


def has_blobs(where: SessionDir) -> bool:
    """Whether the session directory holds a ``blobs`` directory (never followed if a symlink)."""
    try:
        return stat.S_ISDIR(where.fs.lstat(where.file(BLOBS_DIR)).st_mode)
    except OSError:
        return False


def listing(where: SessionDir) -> list[str] | None:
    """The names in the session's ``blobs/`` (None when there is none); `UnsafePath` if no directory."""
    folder = where.file(BLOBS_DIR)
    if not check_directory(where.fs, folder):
        return None
    return sorted(where.fs.listdir(folder))
