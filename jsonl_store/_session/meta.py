"""The metadata file: what a session is (title, parent, type, ...), merged under the lock.

``meta.json`` is small, pretty-printed with a fixed key order and a final newline, so a
rename shows in ``git diff`` as one changed line. It is replaced atomically; every
change goes through `merge`, which applies only the fields a caller named.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final, Literal

import msgspec

from .._errors import InvalidArgument, MetadataConflict, ReadOnlySession, UnsupportedFormat
from .._format import codec as _codec
from .._format import depth as _depth
from .._format import roundtrip as _roundtrip
from .._format.names import META_NAME
from .._io import atomic as _atomic
from .._io.session_dir import SessionDir
from .._text.redact import Redactor

#: Format version this library writes, and the oldest reader version that can read it.
FORMAT_VERSION: Final = 1
READ_VERSION: Final = 1

MAX_TITLE = 200
MAX_AGENT_NAME = 64

Origin = Literal["user", "runtime"]


class SessionMeta(msgspec.Struct, kw_only=True):
    """The contents of ``meta.json`` (key order on disk is the order below)."""

    #: The format version of the writer that last wrote this session.
    format: int = FORMAT_VERSION
    #: A reader older than this version must refuse the session (SQLite's read version).
    read_format: int = READ_VERSION
    created_at: datetime
    parent_session_id: str | None = None
    session_type: int = 0
    agent_name: str | None = None
    title: str | None = None
    pinned: bool = False
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)
    #: Bumped by every accepted update; what ``expected_version`` compares with.
    version: int = 0
    title_version: int = 0
    metadata_version: int = 0
    #: Fields (``title``, ``pinned``, ``metadata.<key>``) a user set: runtime updates skip them.
    user_fields: list[str] = msgspec.field(default_factory=list)


#: Spec §7: meta.json is read whole, so it is capped; a larger file is `bad-meta`.
MAX_META_BYTES: Final = 16 << 20

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(SessionMeta)


def encode(meta: SessionMeta) -> bytes:
    return msgspec.json.format(_encoder.encode(meta), indent=2) + b"\n"


def decode(data: bytes) -> SessionMeta:
    try:
        return _decoder.decode(data)
    except RecursionError:  # metadata a writer accepted, read from a deeper stack
        return _depth.in_deep_stack(_decoder.decode, data)


def read(where: SessionDir) -> SessionMeta | None:
    """The session's metadata, None when absent; raises msgspec errors when damaged."""
    try:
        data = _atomic.read_whole(where.fs, where.file(META_NAME), MAX_META_BYTES)
    except _atomic.FileTooLarge as exc:
        raise msgspec.DecodeError(f"{META_NAME} is {exc}") from None
    return None if data is None else decode(data)


def check_readable(meta: SessionMeta, session_id: str) -> None:
    if meta.read_format > READ_VERSION:
        raise UnsupportedFormat(
            f"session {session_id!r} needs a reader of format {meta.read_format}; this is format {READ_VERSION}",
            session_id=session_id,
        )


def check_writable(meta: SessionMeta, session_id: str) -> None:
    check_readable(meta, session_id)
    if meta.format > FORMAT_VERSION:
        raise ReadOnlySession(
            f"session {session_id!r} was written by format {meta.format}; this library writes "
            f"format {FORMAT_VERSION} and opens it read-only",
            session_id=session_id,
        )


def write(where: SessionDir, meta: SessionMeta, *, durable: bool) -> None:
    data = encode(meta)
    if len(data) > MAX_META_BYTES:
        # Refused before writing: a reader would take a larger file for damage (spec §7).
        raise InvalidArgument(
            f"{META_NAME} would be {len(data)} bytes; the metadata of a session is capped at "
            f"{MAX_META_BYTES >> 20} MiB (keep large data in records)"
        )
    _atomic.replace(where.fs, where.path, META_NAME, data, durable=durable)


def create(where: SessionDir, meta: SessionMeta, *, durable: bool) -> bool:
    """Write the first metadata file unless another writer did; False if it existed."""
    return _atomic.create_exclusive(where.fs, where.path, META_NAME, encode(meta), durable=durable)


def check_title(title: str | None) -> None:
    if title is not None:
        if not isinstance(title, str) or not 1 <= len(title) <= MAX_TITLE:
            raise InvalidArgument(f"title must be a str of 1 to {MAX_TITLE} characters, got {title!r}"[:300])
        _roundtrip.check_label(title, "title")


def check_agent_name(name: str | None) -> None:
    if name is not None:
        if not isinstance(name, str) or not 1 <= len(name) <= MAX_AGENT_NAME:
            raise InvalidArgument(
                f"agent_name must be a str of 1 to {MAX_AGENT_NAME} characters, got {name!r}"
            )
        _roundtrip.check_label(name, "agent_name")


_UNSET: Any = object()


def merge(
    meta: SessionMeta,
    *,
    title: str | None = _UNSET,
    pinned: bool = _UNSET,
    metadata: dict[str, Any] | None = _UNSET,
    remove_metadata: tuple[str, ...] = (),
    expected_version: int | None = None,
    origin: Origin = "user",
    session_id: str = "",
    agent_name: str | None = _UNSET,
) -> bool:
    """Apply the named fields to ``meta`` in place; return whether anything changed.

    A ``runtime`` update never overwrites a field or metadata key a ``user`` set: a
    title the agent derives must not undo a rename made in a UI (spec §7's
    ``title_version`` rule).
    """
    if expected_version is not None and expected_version != meta.version:
        raise MetadataConflict(
            f"session {session_id!r} metadata is at version {meta.version}, not {expected_version}",
            session_id=session_id,
        )
    user = origin == "user"
    owned = set(meta.user_fields)
    changed = False
    if title is not _UNSET and _claim("title", user, owned) and title != meta.title:
        meta.title = title
        meta.title_version += 1
        changed = True
    if pinned is not _UNSET and _claim("pinned", user, owned) and pinned != meta.pinned:
        meta.pinned = pinned
        changed = True
    if agent_name is not _UNSET and _claim("agent_name", user, owned) and agent_name != meta.agent_name:
        meta.agent_name = agent_name
        changed = True
    if _merge_metadata(meta, metadata if metadata is not _UNSET else None, remove_metadata, user, owned):
        meta.metadata_version += 1
        changed = True
    new_owned = sorted(owned)
    if new_owned != meta.user_fields:
        meta.user_fields = new_owned
        changed = True
    if changed:
        meta.version += 1
    return changed


def _claim(field: str, user: bool, owned: set[str]) -> bool:
    """Whether an update of ``origin`` may set ``field``; a user's update also takes it over."""
    if user:
        owned.add(field)
        return True
    return field not in owned


def _merge_metadata(
    meta: SessionMeta, metadata: dict[str, Any] | None, removed: tuple[str, ...], user: bool, owned: set[str]
) -> bool:
    """Set and remove metadata keys as `merge` says; whether any key changed."""
    changed = False
    for key, value in (metadata or {}).items():
        if _claim(f"metadata.{key}", user, owned) and (
            key not in meta.metadata or meta.metadata[key] != value
        ):
            meta.metadata[key] = value
            changed = True
    for key in removed:
        if not user and f"metadata.{key}" in owned:
            continue
        owned.discard(f"metadata.{key}")
        if key in meta.metadata:
            del meta.metadata[key]
            changed = True
    return changed


class Update:
    """One `update_session` call's fields, checked before the lock is taken."""

    __slots__ = ("agent_name", "expected_version", "metadata", "origin", "pinned", "removed", "title")

    def __init__(
        self,
        title: str | None,
        pinned: bool,
        metadata: dict[str, Any] | None,
        removed: tuple[str, ...],
        expected_version: int | None,
        origin: Origin,
        agent_name: str | None = _UNSET,
    ) -> None:
        self.agent_name = agent_name
        self.title = title
        self.pinned = pinned
        self.metadata = metadata
        self.removed = removed
        self.expected_version = expected_version
        self.origin = origin

    @classmethod
    def checked(
        cls,
        *,
        title: str | None,
        pinned: bool,
        metadata: Any,
        remove_metadata: Any,
        expected_version: int | None,
        origin: Origin,
        agent_name: str | None = _UNSET,
    ) -> Update:
        """The update, or `InvalidArgument` for a field that cannot be stored (nothing is read yet)."""
        if title is not _UNSET:
            check_title(title)
        if agent_name is not _UNSET:
            check_agent_name(agent_name)
        if pinned is not _UNSET and type(pinned) is not bool:
            raise InvalidArgument(f"pinned must be a bool, got {pinned!r}")
        if origin not in ("user", "runtime"):
            raise InvalidArgument(f"origin must be 'user' or 'runtime', got {origin!r}")
        merged = _UNSET
        if metadata is not _UNSET and metadata is not None:
            if not isinstance(metadata, Mapping):
                raise InvalidArgument(f"metadata must be a mapping, got {type(metadata).__name__}")
            merged = dict(metadata)
            _codec.encode_json(merged, "metadata")
        return cls(
            title, pinned, merged, _removed_keys(remove_metadata), expected_version, origin, agent_name
        )

    def redact(self, redactor: Redactor) -> None:
        """Redact the strings this update would store (title, agent name, metadata)."""
        if isinstance(self.title, str):
            self.title = redactor.redact(self.title)
        if isinstance(self.agent_name, str):
            self.agent_name = redactor.redact(self.agent_name)
        if isinstance(self.metadata, dict):
            self.metadata = redactor.redact_value(self.metadata)

    def apply(self, meta: SessionMeta, session_id: str) -> bool:
        """Merge into ``meta`` in place (`merge`); whether anything changed."""
        return merge(
            meta,
            title=self.title,
            pinned=self.pinned,
            metadata=self.metadata,
            remove_metadata=self.removed,
            expected_version=self.expected_version,
            origin=self.origin,
            session_id=session_id,
            agent_name=self.agent_name,
        )


def _removed_keys(remove_metadata: Any) -> tuple[str, ...]:
    if isinstance(remove_metadata, (str, bytes)):
        raise InvalidArgument(
            f"remove_metadata takes a list of keys, not one {type(remove_metadata).__name__}"
        )
    try:
        removed = tuple(remove_metadata)
    except TypeError:
        raise InvalidArgument(f"remove_metadata takes a list of keys, got {remove_metadata!r}") from None
    for key in removed:
        if not isinstance(key, str):
            raise InvalidArgument(f"remove_metadata takes metadata keys (str), got {key!r}")
        if not key.isascii():
            try:
                key.encode("utf-8")
            except UnicodeEncodeError:
                # Such a key can never have been stored; naming it is a caller's bug.
                raise InvalidArgument(f"remove_metadata key {key!r} holds a lone surrogate") from None
    return removed
