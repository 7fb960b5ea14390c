"""Every file name the store uses, built and parsed in one place.

A session is one directory below the store root, named by its session id::

    <root>/.gitignore                      lock and temporary files stay out of git
    <root>/.gitattributes                  git keeps every file's bytes (no CRLF conversion)
    <root>/.jsonl-store-allow              fingerprints of scan findings that are no secret
    <root>/.catalog/catalog.sqlite3        the derived catalog (spec §21): never committed
    <root>/.catalog/.gitignore             ``*``: git ignores the whole catalog directory
    <root>/<session_id>/messages.jsonl     the raw log
    <root>/<session_id>/snapshot-00000001.json
    <root>/<session_id>/meta.json
    <root>/<session_id>/usage.jsonl        the token-usage log
    <root>/<session_id>/.lock              the session's lock file (never committed)
    <root>/<session_id>/blobs/<sha256>     a large string value, by content (spec §5.1)
    <root>/<session_id>/fork.json          where a fork branched from (spec §8.10)

and the names writers and repairs leave beside them: ``<name>.<token>.tmp`` (a whole-file
write or a restore not yet renamed), ``<log>.cut-<offset>`` (a damaged tail cut off),
``<name>.damaged`` (a file moved aside), ``blobs-<sha256>.damaged`` (a blob moved aside)
and ``<root>/.<session_id>.deleted/`` (a session being deleted, spec §9.5). A name already
taken gets a number before its last suffix (``.2.damaged``, ``.cut-<offset>.2``).
`classify` tells which of them a name in a session directory is, as LevelDB's
``ParseFileName`` does for its own (https://github.com/google/leveldb/blob/main/db/filename.cc).

Only relative names are ever written into a file, so a session directory can be moved,
copied or committed anywhere.
"""

from __future__ import annotations

import enum
import os
import re
from bisect import bisect_left
from collections.abc import Iterable, Iterator

from .._errors import InvalidSessionId

LOG_NAME = "messages.jsonl"
META_NAME = "meta.json"
USAGE_NAME = "usage.jsonl"
LOCK_NAME = ".lock"
GITIGNORE_NAME = ".gitignore"
GITATTRIBUTES_NAME = ".gitattributes"
FORK_NAME = "fork.json"
#: The store root's allowlist of scan findings that are no secret, one fingerprint a line (spec §18.2).
ALLOW_NAME = ".jsonl-store-allow"

SNAPSHOT_PREFIX = "snapshot-"
SNAPSHOT_SUFFIX = ".json"
SNAPSHOT_DIGITS = 8
CUT_INFIX = ".cut-"
TMP_SUFFIX = ".tmp"
DAMAGED_SUFFIX = ".damaged"
#: What `delete_session` appends to a session directory's name (after a dot) before removing it.
DELETED_SUFFIX = ".deleted"
#: The directory inside a session that holds its blob files, one per SHA-256 (spec §5.1).
BLOBS_DIR = "blobs"
#: What the git merge driver appends to the file git hands it before renaming its result
#: over it: a name git never makes, so the driver's half-written result is never mistaken
#: for one of git's files.
MERGE_TMP_SUFFIX = ".jsonl-store.tmp"
_BLOB_NAME = re.compile(r"[0-9a-f]{64}")
#: The derived catalog (spec §21): a directory below the root whose name starts with a dot,
#: as no session id does, so every walk of the root that looks for sessions passes it by.
CATALOG_DIR = ".catalog"
CATALOG_NAME = "catalog.sqlite3"
#: SQLite's own files beside the database while it is open (https://www.sqlite.org/tempfiles.html).
CATALOG_SIDECARS = ("-journal", "-wal", "-shm")
#: The catalog directory's own ignore file: everything in it, itself included, stays out of
#: git without a line in the user's root `.gitignore` (gitignore(5): a pattern in a
#: directory's `.gitignore` applies to the paths below it).
CATALOG_GITIGNORE_TEXT = (
    "# Written by jsonl_store: the catalog is derived from the sessions; never commit it.\n*\n"
)

GITIGNORE_TEXT = (
    "# Written by jsonl_store: lock files, unfinished temporary files and the bytes\n"
    "# cut from a damaged log tail are local state, never part of a session's history.\n"
    "# Patterns are anchored one level down (inside session directories), so a session\n"
    "# whose id happens to end in .tmp is never ignored itself.\n"
    f"/*/{LOCK_NAME}\n"
    f"/*/*{TMP_SUFFIX}\n"
    f"/*/*{CUT_INFIX}*\n"
    f"/*/*{DAMAGED_SUFFIX}\n"
    f"/{GITIGNORE_NAME}.*{TMP_SUFFIX}\n"
    f"/{GITATTRIBUTES_NAME}.*{TMP_SUFFIX}\n"
    f"/{ALLOW_NAME}.*{TMP_SUFFIX}\n"
    # A session directory a crashed delete renamed away (spec §9.5): its bytes were
    # deleted on purpose and must not reach a commit.
    f"/.*{DELETED_SUFFIX}/\n"
)

# Git may change a file's bytes on checkout and commit in four ways a parent repository's
# attributes can ask for: end-of-line conversion (`text`, core.autocrlf), `$Id$` expansion
# (`ident`), clean/smudge filters such as Git LFS (`filter`) and re-encoding
# (`working-tree-encoding`); see https://git-scm.com/docs/gitattributes. Unsetting all four
# for every path inside a session directory keeps the bytes every checksum covers, so a
# clone holds exactly what the store wrote. Diffs stay textual. The root's own .gitignore and
# .gitattributes are left to git's usual handling; the store never reads them.
#
# The raw log, the usage log and meta.json merge with the `jsonl-store` merge driver (spec
# §17), which `jsonl-store git setup` defines in a repository's config. Where it is not
# defined, git falls back to its built-in text merge (gitattributes(5), "merge": a string
# naming an undefined driver), so the lines cost nothing in a repository without it.
MERGE_DRIVER = "jsonl-store"
GITATTRIBUTES_TEXT = (
    "# Written by jsonl_store: git must keep session files' bytes exactly as written.\n"
    "# A line-end conversion, an $Id$ expansion, a filter or a re-encoding would change\n"
    "# what every checksum covers. `jsonl-store git setup` defines the merge driver that\n"
    "# keeps both branches' records when two branches appended to one session.\n"
    "/*/** -text -ident -filter -working-tree-encoding\n"
    f"/*/{LOG_NAME} merge={MERGE_DRIVER}\n"
    f"/*/{USAGE_NAME} merge={MERGE_DRIVER}\n"
    f"/*/{META_NAME} merge={MERGE_DRIVER}\n"
)

MAX_SESSION_ID_LENGTH = 128
# The safe alphabet: ASCII letters, digits, '_', '-' and '.', not starting with '.' or '-'
# (no hidden files, no '.'/'..', nothing a shell or a CLI mistakes for an option).
_SESSION_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,127}")
# ASCII digits only: `\d` also matches other scripts' digits, which `int` would read as a
# version whose file has another name.
_SNAPSHOT_NAME = re.compile(rf"{SNAPSHOT_PREFIX}([0-9]{{{SNAPSHOT_DIGITS}}}){re.escape(SNAPSHOT_SUFFIX)}")
# Every name that starts with SNAPSHOT_PREFIX sorts in [SNAPSHOT_PREFIX, _AFTER_PREFIX).
_AFTER_PREFIX = SNAPSHOT_PREFIX[:-1] + chr(ord(SNAPSHOT_PREFIX[-1]) + 1)


def validate_session_id(session_id: object) -> str:
    """Return ``session_id`` unchanged, or raise `InvalidSessionId` saying why it is unsafe."""
    if not isinstance(session_id, str):
        raise InvalidSessionId(f"session id must be a str, not {type(session_id).__name__}")
    if _SESSION_ID.fullmatch(session_id) is None:
        if not session_id:
            reason = "is empty"
        elif len(session_id) > MAX_SESSION_ID_LENGTH:
            reason = f"is longer than {MAX_SESSION_ID_LENGTH} characters"
        elif session_id[0] in ".-":
            reason = "starts with '.' or '-'"
        else:
            reason = "holds a character outside [A-Za-z0-9_.-]"
        raise InvalidSessionId(f"session id {session_id!r} {reason}", session_id=session_id)
    return session_id


#: Characters `encode_session_id` keeps as they are; every other one is escaped.
_KEPT = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_ESCAPE = "."
_ESCAPED = re.compile(r"\.([0-9a-f]{2})")


def encode_session_id(text: str) -> str:
    """A valid session id for any non-empty string without NUL, reversed by `decode_session_id`.

    Letters, digits, ``_`` and ``-`` stay; every other character becomes ``.`` and two
    lowercase hex digits per byte of its UTF-8 (``user:42/chat 1`` ->
    ``user.3a42.2fchat.201``). A leading ``_`` is escaped too, and an id that would then
    start with ``.`` or ``-`` gets a ``_`` in front, which only such ids have. So a valid
    id without ``.`` that does not start with ``_`` is its own encoding. Raises
    `InvalidSessionId` for an empty string, a NUL, a lone surrogate, and a string whose
    encoding is longer than 128 characters (nothing is truncated or hashed: an id that
    does not fit is refused, never made to collide with another).
    """
    if not isinstance(text, str):
        raise InvalidSessionId(f"a session name must be a str, not {type(text).__name__}")
    if not text or "\x00" in text:
        raise InvalidSessionId(f"a session name must be non-empty and hold no NUL, got {text!r}")
    parts = []
    for index, char in enumerate(text):
        if char in _KEPT and not (index == 0 and char == "_"):
            parts.append(char)
            continue
        try:
            data = char.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidSessionId(
                f"a session name must be valid Unicode, got a lone surrogate in {text!r}"
            ) from None
        parts.extend(f"{_ESCAPE}{byte:02x}" for byte in data)
    encoded = "".join(parts)
    if encoded[0] in ".-":
        encoded = "_" + encoded
    if len(encoded) > MAX_SESSION_ID_LENGTH:
        raise InvalidSessionId(
            f"{text[:40]!r}... encodes to {len(encoded)} characters, more than a session id holds "
            f"({MAX_SESSION_ID_LENGTH})"
        )
    return encoded


def decode_session_id(session_id: str) -> str:
    """The string `encode_session_id` made ``session_id`` from; `InvalidSessionId` for no such string."""
    validate_session_id(session_id)
    body = session_id[1:] if session_id.startswith(("_" + _ESCAPE, "_-")) else session_id
    data = bytearray()
    position = 0
    for match in _ESCAPED.finditer(body):
        data += body[position : match.start()].encode("ascii")
        data.append(int(match.group(1), 16))
        position = match.end()
    data += body[position:].encode("ascii")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = ""
    # Only the one encoding of a string decodes: `.` not followed by two hex digits, an
    # escaped character that needed none, or broken UTF-8 is no encoded name.
    if not text or "\x00" in text or encode_session_id(text) != session_id:
        raise InvalidSessionId(
            f"session id {session_id!r} is not one encode_session_id makes", session_id=session_id
        )
    return text


def is_session_id(name: str) -> bool:
    """Tell whether a directory entry below the root can be a session directory."""
    return _SESSION_ID.fullmatch(name) is not None


def session_dir(root: str, session_id: str) -> str:
    return os.path.join(root, session_id)


def session_id_of(directory: str) -> str | None:
    """The session id a session directory's path names (None when it names none)."""
    name = os.path.basename(directory)
    return name if is_session_id(name) else None


def snapshot_name(version: int) -> str:
    assert 0 < version < 10**SNAPSHOT_DIGITS, version
    return f"{SNAPSHOT_PREFIX}{version:0{SNAPSHOT_DIGITS}d}{SNAPSHOT_SUFFIX}"


def parse_snapshot_name(name: str) -> int | None:
    """Return the version a snapshot file name carries, or None for any other name."""
    match = _SNAPSHOT_NAME.fullmatch(name)
    return int(match.group(1)) if match else None


def snapshot_versions(names: Iterable[str]) -> Iterator[int]:
    """The versions the snapshot file names among ``names`` carry, highest first.

    Lazy: names are zero-padded to one width, so sorting them sorts the versions, and
    only the names a caller goes on to ask for are parsed (the newest one, usually).
    """
    ordered = sorted(names)
    low = bisect_left(ordered, SNAPSHOT_PREFIX)
    for index in range(bisect_left(ordered, _AFTER_PREFIX, low) - 1, low - 1, -1):
        version = parse_snapshot_name(ordered[index])
        if version is not None:
            yield version


def cut_name(log_name: str, offset: int) -> str:
    """Name of the sidecar holding the damaged tail cut from ``log_name`` at ``offset``."""
    return f"{log_name}{CUT_INFIX}{offset:012d}"


def is_blob_name(name: str) -> bool:
    """Whether ``name`` is a blob file's name: the 64 lowercase hex digits of a SHA-256."""
    return _BLOB_NAME.fullmatch(name) is not None


def blob_aside_name(digest: str) -> str:
    """Where a damaged blob is moved aside: beside the log, so the root's `.gitignore` covers it."""
    return f"{BLOBS_DIR}-{digest}"


def tmp_name(final_name: str, token: str) -> str:
    """The temporary file a whole-file write of ``final_name`` writes first (``token`` makes it unique)."""
    return f"{final_name}.{token}{TMP_SUFFIX}"


def is_tmp_name(name: str) -> bool:
    """Whether ``name`` is a temporary file's name (`tmp_name`): a write that was never renamed."""
    return name.endswith(TMP_SUFFIX)


def is_tmp_name_of(name: str, final_name: str) -> bool:
    """Whether ``name`` is a temporary file `tmp_name` made for ``final_name``."""
    return name.startswith(final_name + ".") and name.endswith(TMP_SUFFIX)


def numbered_name(name: str, attempt: int) -> str:
    """``name`` for the first attempt, ``<name>.<attempt>`` after it: a free name for a sidecar."""
    assert attempt >= 1, attempt
    return name if attempt == 1 else f"{name}.{attempt}"


def damaged_name(name: str, attempt: int = 1) -> str:
    """Where a damaged file ``name`` is moved aside: ``<name>.damaged``, then ``<name>.2.damaged``..."""
    return numbered_name(name, attempt) + DAMAGED_SUFFIX


def merge_tmp_name(path: str) -> str:
    """Where the git merge driver writes its result before renaming it over ``path``."""
    return path + MERGE_TMP_SUFFIX


class FileKind(enum.Enum):
    """What a name in a session directory is (`classify`)."""

    LOG = "raw log"
    USAGE = "usage log"
    META = "metadata"
    FORK = "fork point"
    LOCK = "lock file"
    SNAPSHOT = "snapshot"
    BLOBS = "blob directory"
    TEMPORARY = "temporary file"
    CUT = "cut tail"
    DAMAGED = "damaged file"
    SESSION = "session directory"
    DELETED = "session being deleted"
    GITIGNORE = "git ignore rules"
    GITATTRIBUTES = "git attributes"
    ALLOWLIST = "scan allowlist"
    CATALOG = "derived catalog"
    OTHER = "not the store's"


_FIXED_KINDS = {
    LOG_NAME: FileKind.LOG,
    USAGE_NAME: FileKind.USAGE,
    META_NAME: FileKind.META,
    FORK_NAME: FileKind.FORK,
    LOCK_NAME: FileKind.LOCK,
    BLOBS_DIR: FileKind.BLOBS,
}


def classify(name: str) -> FileKind:
    """The kind of file ``name`` is in a session directory (`FileKind.OTHER` for a name the store never makes).

    A temporary file's name wins over every other suffix in it: whatever it was going to
    be, it was never renamed, so only its ``.tmp`` tells what it is now.
    """
    if (kind := _FIXED_KINDS.get(name)) is not None:
        return kind
    if parse_snapshot_name(name) is not None:
        return FileKind.SNAPSHOT
    if is_tmp_name(name):
        return FileKind.TEMPORARY
    if name.endswith(DAMAGED_SUFFIX):
        return FileKind.DAMAGED
    if CUT_INFIX in name:
        return FileKind.CUT
    return FileKind.OTHER


#: What a session directory is renamed to before its files are deleted (spec §9.5): a
#: hidden name below the root that no session id can have, so no reader, listing or
#: writer ever takes what is left of it for a session. One name per session id, so the
#: next write or delete of that id finds what a crash left without listing the root.
_DELETED_NAME = re.compile(rf"\.{_SESSION_ID.pattern}{re.escape(DELETED_SUFFIX)}")


def deleted_name(session_id: str) -> str:
    """The name a session directory is renamed to while `delete_session` removes it."""
    return f".{session_id}{DELETED_SUFFIX}"


def is_deleted_name(name: str) -> bool:
    """Whether a root entry is a session directory renamed away by a delete (`deleted_name`)."""
    return _DELETED_NAME.fullmatch(name) is not None


_ROOT_FILES = {
    GITIGNORE_NAME: FileKind.GITIGNORE,
    GITATTRIBUTES_NAME: FileKind.GITATTRIBUTES,
    ALLOW_NAME: FileKind.ALLOWLIST,
}


def catalog_path(root: str) -> str:
    """Where the catalog's database is below ``root``."""
    return os.path.join(root, CATALOG_DIR, CATALOG_NAME)


def classify_root(name: str) -> FileKind:
    """The kind of entry ``name`` is in the store root (`FileKind.OTHER` for one the store never makes).

    The root's own temporaries are those of its three files, which start with a dot as no
    session id does: a session whose id ends in ``.tmp`` is a session (the root's
    `.gitignore` is anchored the same way).
    """
    if (kind := _ROOT_FILES.get(name)) is not None:
        return kind
    if name == CATALOG_DIR:
        return FileKind.CATALOG
    if is_session_id(name):
        return FileKind.SESSION
    if is_deleted_name(name):
        return FileKind.DELETED
    if any(is_tmp_name_of(name, final) for final in _ROOT_FILES):
        return FileKind.TEMPORARY
    return FileKind.OTHER
