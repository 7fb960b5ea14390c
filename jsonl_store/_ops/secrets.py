"""Secrets already stored: found in every file of a session, and redacted by a rewrite.

`scan` reads every file of a session directory (the logs, snapshots, metadata, and the
sidecars and leftovers a reader never looks at) and reports each secret once, never its
text: with its fingerprint, whether it is certain or a guess, and whether the store's
allowlist clears it (spec §18.2). `redact` rewrites only certain findings the allowlist
does not clear; it is the one rewrite this library ever makes of stored bytes (spec §18): each
file that holds a secret is written anew without it (new checksums, the snapshots'
offsets into the new raw log) and renamed over the old one, under the session lock and
the logs' append locks, so no writer appends to a file being replaced; a leftover
temporary file is deleted. The old bytes live on only in blocks the file system has freed.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Final, NamedTuple

import msgspec

from .._errors import InvalidArgument, LockTimeout, UnsafePath
from .._format import codec as _codec
from .._format.names import (
    ALLOW_NAME,
    BLOBS_DIR,
    LOCK_NAME,
    LOG_NAME,
    META_NAME,
    USAGE_NAME,
    FileKind,
    classify,
    is_blob_name,
    snapshot_name,
    snapshot_versions,
)
from .._io import atomic as _atomic
from .._io.fs import FileSystem, open_regular
from .._io.session_dir import SessionDir
from .._log import blob_writes as _blob_writes
from .._log import blobs as _blobs
from .._log import modes as _log_modes
from .._log.scan import FLAGS_READ
from .._text.redact import Found, Redactor, _walk, mask, strings

_decoder = msgspec.json.Decoder()
_encoder = msgspec.json.Encoder()


class SecretFinding(NamedTuple):
    """One secret stored in a session, described without its text.

    ``file`` is the file's name in the session directory, ``line`` its line (1-based; 0
    for a file read whole), ``sequence`` the record's sequence (raw log and snapshot
    boundary lines; None elsewhere), ``where`` the JSON path of the string
    (``$.message.content``; ``raw`` for a line that is not JSON), ``kind`` the pattern's
    kind and ``preview`` a masked hint: at most 4 leading characters and the length.
    ``fingerprint`` names the value without showing it (`fingerprint`), ``certain`` is
    False for a guess (reported, never rewritten) and ``allowed`` True when the store's
    allowlist clears it (spec §18.2).
    """

    session_id: str
    file: str
    line: int
    sequence: int | None
    where: str
    kind: str
    preview: str
    fingerprint: str = ""
    certain: bool = True
    allowed: bool = False

    @property
    def blocking(self) -> bool:
        """Whether `redact_session` rewrites it: certain, and not cleared by the allowlist."""
        return self.certain and not self.allowed


# -- fingerprints and the allowlist (spec §18.2) -------------------------------------------

#: Hex digits of a fingerprint: 64 bits, so two different values share one by chance
#: about once in 2**32 allowlisted values, and the value is not in it.
FINGERPRINT_DIGITS: Final = 16
FINGERPRINT_RE: Final = re.compile(f"[0-9a-f]{{{FINGERPRINT_DIGITS}}}")
#: The largest allowlist read: a file that large is no list a person keeps.
_ALLOW_LIMIT: Final = 1 << 20


def fingerprint(kind: str, value: str) -> str:
    """A finding's name in the allowlist: the first 16 hex digits of SHA-256 of ``kind:value``.

    Per value, not per place: the same value of the same kind has the same fingerprint in
    every file, line and session, so one allowlist entry clears it everywhere. The value
    cannot be read back from it, but a short value can be found by trying candidates:
    allowlist only what is no secret.
    """
    return hashlib.sha256(f"{kind}:{value}".encode("utf-8", "surrogateescape")).hexdigest()[
        :FINGERPRINT_DIGITS
    ]


def _allow_lines(data: bytes, path: str) -> Iterator[str]:
    """The fingerprints of an allowlist's text: one a line, ``#`` starts a comment."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidArgument(f"{path} is not UTF-8 text") from None
    for number, line in enumerate(text.splitlines(), 1):
        entry = line.partition("#")[0].strip()
        if not entry:
            continue
        if not FINGERPRINT_RE.fullmatch(entry):
            shown = entry[:40].encode("ascii", "backslashreplace").decode("ascii")
            raise InvalidArgument(
                f"{path}:{number}: {shown!r} is not a fingerprint ({FINGERPRINT_DIGITS} lower-case hex digits)"
            )
        yield entry


def read_allowlist(fs: FileSystem, root: str) -> frozenset[str]:
    """The fingerprints in the store root's allowlist (none when it is missing)."""
    path = os.path.join(root, ALLOW_NAME)
    try:
        data = _atomic.read_whole(fs, path, _ALLOW_LIMIT)
    except _atomic.FileTooLarge as exc:
        raise InvalidArgument(f"{path} is {exc.size} bytes, more than an allowlist may be") from None
    return frozenset(_allow_lines(data, path)) if data else frozenset()


def add_to_allowlist(fs: FileSystem, root: str, fingerprints: Iterable[str], *, durable: bool) -> list[str]:
    """Add ``fingerprints`` to the allowlist (a new file, written whole); the ones not there yet."""
    wanted = list(dict.fromkeys(fingerprints))
    for entry in wanted:
        if not isinstance(entry, str) or not FINGERPRINT_RE.fullmatch(entry):
            raise InvalidArgument(
                f"{entry!r} is not a fingerprint ({FINGERPRINT_DIGITS} lower-case hex digits)"
            )
    path = os.path.join(root, ALLOW_NAME)
    data = _atomic.read_whole(fs, path, _ALLOW_LIMIT) or b""
    present = set(_allow_lines(data, path))
    added = [entry for entry in wanted if entry not in present]
    if added:
        head = data if not data or data.endswith(b"\n") else data + b"\n"
        if not head:
            head = _ALLOW_HEADER
        _atomic.replace(
            fs, root, ALLOW_NAME, head + "".join(f"{e}\n" for e in added).encode(), durable=durable
        )
    return added


_ALLOW_HEADER: Final = (
    b"# Fingerprints of jsonl-store scan findings that are no secret (spec 18.2), one a line.\n"
    b"# Each clears one value of one kind in every session; commit this file with the store.\n"
)


class _Rewrite(Redactor):
    """What `redact` rewrites with: the store's redactor, without guesses and allowlisted values.

    Where it would rewrite all it found, its own `redact` runs (a user's function too);
    otherwise only the kept findings are replaced, each by its marker.
    """

    def __init__(self, inner: Redactor, allowed: frozenset[str]) -> None:  # delegates: no super().__init__
        self._inner = inner
        self._allowed = allowed

    def find(self, text: str) -> list[Found]:
        return [f for f in self._inner.find(text) if self._kept(f, text)]

    def _kept(self, found: Found, text: str) -> bool:
        return found.certain and fingerprint(found.kind, text[found.start : found.end]) not in self._allowed

    def redact(self, text: str) -> str:
        found = self._inner.find(text)
        kept = [f for f in found if self._kept(f, text)]
        if len(kept) == len(found):
            return self._inner.redact(text) if found else text
        return Redactor._redact(text, kept)

    def redact_value(self, value: Any) -> Any:
        return _walk(value, self.redact)

    def might_hold(self, data: bytes) -> bool:
        return self._inner.might_hold(data)


def _decode(data: bytes) -> Any:
    try:
        return _decoder.decode(data)
    except _codec.DECODE_ERRORS:
        return _NOT_JSON


_NOT_JSON: Any = object()


def _text(data: bytes) -> str:
    # surrogateescape: any byte comes back as it was when the text is encoded again.
    return data.decode("utf-8", "surrogateescape")


class _Place(NamedTuple):
    """Where a text was found: what every finding in it shares."""

    session_id: str
    file: str
    line: int
    sequence: int | None
    where: str


def _found_in(
    redactor: Redactor, place: _Place, text: str, allowed: frozenset[str]
) -> Iterator[SecretFinding]:
    for kind, start, end, certain in redactor.find(text):
        value = text[start:end]
        mark = fingerprint(kind, value)
        yield SecretFinding(*place, kind, mask(value), mark, certain, mark in allowed)


def _findings_in(
    redactor: Redactor, place: _Place, value: Any, raw: bytes, allowed: frozenset[str]
) -> Iterator[SecretFinding]:
    if value is _NOT_JSON:
        yield from _found_in(redactor, place._replace(where="raw"), _text(raw), allowed)
        return
    sequence = value.get("sequence") if isinstance(value, dict) else None
    if not isinstance(sequence, int) or isinstance(sequence, bool):
        sequence = value.get("compacted_through_sequence") if isinstance(value, dict) else None
        sequence = sequence if isinstance(sequence, int) and not isinstance(sequence, bool) else None
    for where, text in strings(value):
        yield from _found_in(redactor, place._replace(sequence=sequence, where=where), text, allowed)


def _pieces(name: str, data: bytes) -> Iterator[tuple[int, Any, bytes]]:
    """A file's JSON values with their line: ``meta.json`` is one value (line 0), any other
    file one per line (a line that is not JSON comes as `_NOT_JSON`)."""
    if name == META_NAME:
        yield 0, _decode(data), data
        return
    for piece in _log_modes.read(_log_modes.Source.of(data), _log_modes.Mode.EVERY_BYTE):
        if piece.raw:
            yield piece.number, _decode(piece.raw), piece.raw


def _files(where: SessionDir) -> list[str]:
    try:
        return sorted(name for name in where.fs.listdir(where.path) if name != LOCK_NAME)
    except FileNotFoundError:
        return []


def _read_all(fs: FileSystem, fd: int) -> bytes:
    """Every byte of an open file (no cap: a damaged file larger than readers take is scanned too)."""
    size = fs.fstat(fd).st_size
    chunks, read = [], 0
    while read < size:
        chunk = fs.pread(fd, min(size - read, 1 << 24), read)
        if not chunk:
            break
        chunks.append(chunk)
        read += len(chunk)
    return b"".join(chunks)


def _read(fs: FileSystem, path: str) -> bytes | None:
    try:
        fd = open_regular(fs, path, FLAGS_READ)
    except (FileNotFoundError, UnsafePath):
        return None  # gone, or a symlink or directory: never followed, never read
    try:
        return _read_all(fs, fd)
    finally:
        fs.close(fd)


def _blob_files(where: SessionDir) -> list[str]:
    """The blob files of a session (spec §5.1): names in ``blobs/`` that are SHA-256 digests."""
    try:
        names = _blobs.listing(where)
    except UnsafePath:
        return []  # a symlink in place of blobs/: never followed (verify reports it)
    return [name for name in names or () if is_blob_name(name)]


def scan(where: SessionDir, redactor: Redactor, allowed: frozenset[str] = frozenset()) -> list[SecretFinding]:
    """Every secret and guess in every file of one session directory, file by file, line by line.

    A blob file (a long string a record names, spec §5.1) is one string: its findings
    name it ``blobs/<hex>``, line 0, ``where`` ``"blob"``. ``allowed``: the allowlist's
    fingerprints (`read_allowlist`), which mark a finding ``allowed``.
    """
    fs, session_id, directory = where.fs, where.session_id, where.path
    found: list[SecretFinding] = []
    for name in _files(where):
        data = _read(fs, os.path.join(directory, name))
        if data is None:
            continue
        for line, value, raw in _pieces(name, data):
            found.extend(
                _findings_in(redactor, _Place(session_id, name, line, None, ""), value, raw, allowed)
            )
    for name in _blob_files(where):
        data = _read(fs, os.path.join(directory, BLOBS_DIR, name))
        if data is not None:
            place = _Place(session_id, f"{BLOBS_DIR}/{name}", 0, None, "blob")
            found.extend(_found_in(redactor, place, _text(data), allowed))
    return found


# -- the rewrite -----------------------------------------------------------------------


_BOM = b"\xef\xbb\xbf"


#: Blobs written anew without their secrets: old digest -> the new blob's marker.
Renamed = dict[str, dict[str, Any]]


def _remarked(value: Any, renamed: Renamed) -> Any:
    """``value`` with each marker of a renamed blob replaced by the new blob's (copies on the way)."""
    if isinstance(value, dict):
        found = _blobs.parse_marker(value) if _blobs.MARKER_KEY in value else None
        if found is not None and found[0] in renamed:
            return renamed[found[0]]
        items = {key: _remarked(item, renamed) for key, item in value.items()}
        return value if all(items[k] is value[k] for k in value) else items
    if isinstance(value, list):
        items_list = [_remarked(item, renamed) for item in value]
        return value if all(a is b for a, b in zip(items_list, value, strict=True)) else items_list
    return value


def _redact_blobs(where: SessionDir, redactor: Redactor) -> Renamed:
    """Each blob holding a secret, written anew without it under its new digest (durably).

    The old files stay until the records name the new ones (`redact` deletes them last),
    so a crash in between leaves every record readable.
    """
    renamed: Renamed = {}
    for name in _blob_files(where):
        data = _read(where.fs, os.path.join(where.path, BLOBS_DIR, name))
        if data is None:
            continue
        text = _text(data)
        clean = redactor.redact(text)
        if clean == text:
            continue
        new = clean.encode("utf-8", "surrogateescape")
        digest = hashlib.sha256(new).hexdigest()
        _blob_writes.store(where, {digest: new}, durable=True)
        renamed[name] = _blob_writes.marker(digest, len(new))
    return renamed


def _redact_line(redactor: Redactor, line: bytes, renamed: Renamed | None = None) -> bytes:
    """One line without its secrets: a checksummed line gets a new checksum, any other
    line (damage, a torn tail) has its text redacted as it is.

    A ``\r`` before the newline or a BOM in front, which a text conversion adds and
    readers tolerate (§8.4), stays where it was, outside what the checksum covers.
    """
    head = _BOM if line.startswith(_BOM) else b""
    tail = b"\r" if line.endswith(b"\r") else b""
    body = _codec.unseal(line[len(head) : len(line) - len(tail)])
    if body is not None:
        value = _decode(body)
        if value is not _NOT_JSON:
            redacted = redactor.redact_value(value)
            if renamed:
                redacted = _remarked(redacted, renamed)
            if redacted is value:
                return line
            return head + _codec.seal(_encoder.encode(redacted))[:-1] + tail
    text = _text(line)
    redacted_text = redactor.redact(text)
    return line if redacted_text == text else redacted_text.encode("utf-8", "surrogateescape")


class _Rewritten(NamedTuple):
    data: bytes
    #: sequence -> (offset, end) of its line in the new raw log.
    lines: dict[int, tuple[int, int]]


def _rewrite_log(redactor: Redactor, data: bytes, renamed: Renamed | None = None) -> _Rewritten:
    out: list[bytes] = []
    lines: dict[int, tuple[int, int]] = {}
    offset = 0
    # Every byte: a damaged line or a torn tail is redacted as text and kept where it was.
    for line in _log_modes.read(_log_modes.Source.of(data), _log_modes.Mode.EVERY_BYTE):
        new = _redact_line(redactor, line.raw, renamed) if line.raw else line.raw
        piece = new + b"\n" if line.terminated else new
        body = _codec.unseal(new.removeprefix(_BOM).removesuffix(b"\r"))
        if body is not None:
            try:
                sequence = _codec.record_position(body)[0]
            except _codec.DECODE_ERRORS:
                sequence = 0
            if sequence and sequence not in lines:
                lines[sequence] = (offset, offset + len(piece))
        out.append(piece)
        offset += len(piece)
    return _Rewritten(b"".join(out), lines)


def _snapshot_anew(redactor: Redactor, data: bytes, log: _Rewritten | None) -> bytes:
    """A snapshot file without secrets, its offsets those of its boundary in the new log."""
    body = _codec.unseal(data.rstrip(b"\n"))
    value = _decode(body) if body is not None else _NOT_JSON
    if not isinstance(value, dict):
        return _redact_raw(redactor, data)  # a damaged snapshot: redacted as text
    redacted = redactor.redact_value(value)
    redacted = dict(redacted) if redacted is value else redacted
    where = log.lines.get(redacted.get("compacted_through_sequence", -1)) if log is not None else None
    if where is not None:
        redacted["boundary_offset"], redacted["tail_offset"] = where
    return _codec.seal(_encoder.encode(redacted))


def _redact_raw(redactor: Redactor, data: bytes) -> bytes:
    text = _text(data)
    return redactor.redact(text).encode("utf-8", "surrogateescape")


def _meta_anew(redactor: Redactor, data: bytes) -> bytes:
    value = _decode(data)
    if value is _NOT_JSON:
        return _redact_raw(redactor, data)
    redacted = redactor.redact_value(value)
    if redacted is value:
        return data
    return msgspec.json.format(_encoder.encode(redacted), indent=2) + b"\n"


def _flock(fs: FileSystem, fd: int, timeout: float, path: str, session_id: str) -> None:
    """An append lock (``flock`` on the log itself, as writers take it), waited for up to ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            fs.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise LockTimeout(
                    f"could not lock {path} within {timeout} s", session_id=session_id, path=path
                ) from None
            time.sleep(0.002)


def _replace(where: SessionDir, name: str, data: bytes) -> None:
    # Always durable: a rewrite that the next power loss undoes would bring the secret back.
    _atomic.replace(where.fs, where.path, name, data, durable=True)


def _rewrite_under_lock(
    where: SessionDir, name: str, rewrite: Callable[[bytes], bytes], lock_timeout: float | None
) -> bytes | None:
    """Rewrite one file (holding its append lock, waiting at most ``lock_timeout``, unless
    that is None); the old bytes, or None."""
    fs, path = where.fs, where.file(name)
    try:
        fd = open_regular(fs, path, FLAGS_READ)
    except FileNotFoundError:
        return None
    try:
        if lock_timeout is not None:
            _flock(fs, fd, lock_timeout, path, where.session_id)
        data = _read_all(fs, fd)
        new = rewrite(data)
        if new != data:
            # Renamed over the old file while its lock is held: a writer waiting for that
            # lock finds the file unlinked and opens the new one (as after a delete).
            _replace(where, name, new)
        return data
    finally:
        fs.close(fd)


def redact(
    where: SessionDir,
    redactor: Redactor,
    *,
    lock_timeout: float,
    allowed: frozenset[str] = frozenset(),
) -> list[SecretFinding]:
    """Rewrite every file of the session that holds a certain secret the allowlist does not
    clear; the caller holds the session lock.

    Returns what was rewritten (the `SecretFinding.blocking` findings of `scan` before the
    rewrite); guesses and allowlisted values stay as they are, reported by `scan` only.
    Running it again rewrites nothing.
    """
    fs, directory = where.fs, where.path
    found = [f for f in scan(where, redactor, allowed) if f.blocking]
    redactor = _Rewrite(redactor, allowed)
    names = _files(where)
    log: list[_Rewritten] = []
    # Blobs first, the records that name them after: a record never names a missing blob.
    renamed = _redact_blobs(where, redactor)

    def log_anew(data: bytes) -> bytes:
        log.append(_rewrite_log(redactor, data, renamed))
        return log[0].data

    _rewrite_under_lock(where, LOG_NAME, log_anew, lock_timeout)
    rewritten = log[0] if log else None
    _rewrite_under_lock(where, USAGE_NAME, lambda data: _rewrite_log(redactor, data).data, lock_timeout)
    for version in snapshot_versions(names):
        _rewrite_under_lock(
            where, snapshot_name(version), lambda data: _snapshot_anew(redactor, data, rewritten), None
        )
    _rewrite_under_lock(where, META_NAME, lambda data: _meta_anew(redactor, data), None)
    for name in names:
        path = os.path.join(directory, name)
        kind = classify(name)
        if kind is FileKind.TEMPORARY:
            # Only writers holding the locks held now make these: any here is a leftover
            # of one that died, a copy of what it was writing.
            try:
                fs.unlink(path)
            except FileNotFoundError:
                pass
        elif kind in (FileKind.CUT, FileKind.DAMAGED):
            _rewrite_under_lock(where, name, lambda data: _redact_raw(redactor, data), None)
    # The records name the new blobs now (durably): the old ones, with the secrets, go.
    folder = os.path.join(directory, BLOBS_DIR)
    for old in renamed:
        try:
            fs.unlink(os.path.join(folder, old))
        except FileNotFoundError:
            pass
    if renamed:
        fs.fsync_dir(folder)
    return found
