"""An in-memory POSIX file system that records every change it makes.

`SimulatedFileSystem` implements `jsonl_store._io.fs.FileSystem`: inodes, hard links,
directories, descriptors with the ``os.O_*`` flags, and the same ``OSError`` subclasses
and ``errno`` values ``os`` raises. Each mutating call appends a `TraceEntry` to
`SimulatedFileSystem.trace`, and each entry carries the *effects* of the call on the disk
(bytes written at an offset, a directory entry set or removed, an inode made durable).
`jsonl_store.testing.crash_states` replays those effects with a durability model to build
the states a crash could leave behind; the live file system itself only ever holds the
state a running process sees.

What this does not model: permissions, symlinks, timestamps other than a logical clock,
``O_DIRECT``, memory maps, and more than one process (``flock`` is a per-inode lock shared
by the threads of this one).
"""

from __future__ import annotations

import dataclasses
import errno
import fcntl
import os
import posixpath
import stat as stat_module
import threading
import time
from collections.abc import Sequence
from typing import Final, Self, TypeAlias

from .. import _process
from ._image import ROOT_INO, Image, image_tree, materialize_image
from ._trace import (
    DirOp,
    Effect,
    NewInode,
    SetEntry,
    SyncDir,
    SyncFile,
    TraceEntry,
    Truncate,
    WriteData,
)

# ---------------------------------------------------------------------------------------
# Inodes and images
# ---------------------------------------------------------------------------------------

_BASE_TIME_NS: Final = 1_700_000_000 * 10**9


@dataclasses.dataclass(slots=True)
class _File:
    data: bytearray = dataclasses.field(default_factory=bytearray)
    mtime_ns: int = _BASE_TIME_NS


@dataclasses.dataclass(slots=True)
class _Dir:
    entries: dict[str, int] = dataclasses.field(default_factory=dict)
    mtime_ns: int = _BASE_TIME_NS


_Inode: TypeAlias = _File | _Dir


@dataclasses.dataclass(frozen=True, slots=True)
class SimStat:
    """What `SimulatedFileSystem.stat` and ``fstat`` return (``os.stat_result``'s fields)."""

    st_mode: int
    st_ino: int
    st_dev: int
    st_nlink: int
    st_size: int
    st_mtime_ns: int

    @property
    def st_mtime(self) -> float:
        return self.st_mtime_ns / 1e9


@dataclasses.dataclass(slots=True)
class _Open:
    ino: int
    path: str
    readable: bool
    writable: bool
    append: bool
    sync: bool
    pos: int = 0


@dataclasses.dataclass(frozen=True, slots=True)
class Fault:
    """An I/O error to inject: call ``after + 1`` of method ``op`` fails with ``error``.

    ``short_write=n`` (``op="write"`` only) makes that write store ``n`` bytes and
    return ``n`` instead, the way ``write(2)`` reports a disk that filled up part-way.
    """

    op: str
    error: int = errno.EIO
    after: int = 0
    short_write: int | None = None
    path: str | None = None


@dataclasses.dataclass(slots=True)
class _Fault:
    op: str
    error: int
    path: str | None
    short_write: int | None
    count: int
    skip: int


def _oserror(code: int, path: str | None = None, path2: str | None = None) -> OSError:
    # OSError(errno, ...) returns the matching subclass (FileNotFoundError, ...), as os does.
    if path2 is not None:
        return OSError(code, os.strerror(code), path, None, path2)
    if path is not None:
        return OSError(code, os.strerror(code), path)
    return OSError(code, os.strerror(code))


def _normalize(path: str) -> str:
    if path in _normalized:
        return _normalized[path]
    norm = _normalize_uncached(path)
    if len(_normalized) < 10_000:
        _normalized[path] = norm
    return norm


_normalized: dict[str, str] = {}
# A pure cache (the same path always normalises the same way), registered so that
# `_process.reset` hands a test a process with nothing cached.
_process.register("simulated path normalisation", _normalized.clear)


def _normalize_uncached(path: str) -> str:
    if not isinstance(path, str):
        raise TypeError(f"path must be str, not {type(path).__name__}")
    if "\0" in path:
        raise ValueError("embedded null byte")
    if not path:
        raise _oserror(errno.ENOENT, path)
    # The simulated process's working directory is "/". normpath keeps a leading "//".
    norm = posixpath.normpath(posixpath.join("/", path))
    return "/" + norm.lstrip("/")


class SimulatedFileSystem:
    """An in-memory `jsonl_store._io.fs.FileSystem` that records a trace of every change.

    ``SimulatedFileSystem()`` starts with an empty root directory ``/``. Paths are
    absolute or relative to ``/``. Everything on the starting image is durable; what
    happens after is recorded in `trace` (the image is ``base_image``) for
    `jsonl_store.testing.crash_states` to crash. ``volatile`` are changes already made
    but not yet durable (what a process crash leaves in the page cache): they are
    applied, and they open the trace (`inherited` entries), so a later power loss can
    still lose them.

    Raises the same ``OSError`` subclasses with the same ``errno`` as ``os`` would.
    """

    def __init__(self, image: Image | None = None, *, volatile: Sequence[TraceEntry] = ()) -> None:
        self._inodes: dict[int, _Inode] = {}
        if image is None:
            image = {ROOT_INO: {}}
        for ino, content in image.items():
            if isinstance(content, bytes | bytearray):
                self._inodes[ino] = _File(bytearray(content))
            else:
                self._inodes[ino] = _Dir(dict(content))
        if not isinstance(self._inodes.get(ROOT_INO), _Dir):
            raise TypeError("an image needs a directory as inode 1")
        self._base: dict[int, bytes | dict[str, int]] = {
            ino: bytes(node.data) if isinstance(node, _File) else dict(node.entries)
            for ino, node in self._inodes.items()
        }
        self._next_ino = max(self._inodes) + 1
        self._fds: dict[int, _Open] = {}
        self._links: dict[int, int] | None = None
        self._trace: list[TraceEntry] = []
        self._clock = 0
        self._faults: list[_Fault] = []
        #: How many calls an injected fault (`fail_next`) has made fail.
        self.faults_fired = 0
        # flock: ino -> fds holding it and whether the hold is exclusive.
        self._locks: dict[int, tuple[bool, set[int]]] = {}
        self._mutex = threading.RLock()
        self._lock_released = threading.Condition(self._mutex)
        #: Seconds a blocking flock waits before it fails with EDEADLK instead of hanging.
        self.lock_wait = 10.0
        for entry in volatile:
            self._replay(entry)
        #: How many entries at the start of `trace` came in as ``volatile``.
        self.inherited = len(self._trace)

    # -----------------------------------------------------------------------------------
    # Inspection
    # -----------------------------------------------------------------------------------

    @property
    def trace(self) -> Sequence[TraceEntry]:
        """Every mutating call so far, in order (a live view; do not modify)."""
        return self._trace

    @property
    def base_image(self) -> Image:
        """The durable image this file system started from (what `trace` applies to)."""
        return self._base

    def image(self) -> dict[int, bytes | dict[str, int]]:
        """The current state (what a process sees), reachable inodes only."""
        with self._mutex:
            out: dict[int, bytes | dict[str, int]] = {}
            stack = [ROOT_INO]
            while stack:
                ino = stack.pop()
                if ino in out:
                    continue
                node = self._inodes[ino]
                if isinstance(node, _File):
                    out[ino] = bytes(node.data)
                else:
                    out[ino] = dict(node.entries)
                    stack.extend(node.entries.values())
            return out

    def tree(self) -> dict[str, bytes | None]:
        """Every path below ``/`` mapped to its bytes (None for a directory)."""
        return image_tree(self.image())

    def read_bytes(self, path: str) -> bytes:
        """The whole content of the file at ``path`` (not recorded)."""
        with self._mutex:
            node = self._node(_normalize(path))
            if isinstance(node, _Dir):
                raise _oserror(errno.EISDIR, path)
            return bytes(node.data)

    def exists(self, path: str) -> bool:
        """Whether ``path`` names a file or directory."""
        try:
            self.stat(path)
        except OSError:
            return False
        return True

    def open_fds(self) -> dict[int, str]:
        """Descriptors still open, with the path each was opened by (to find leaks)."""
        with self._mutex:
            return {fd: handle.path for fd, handle in self._fds.items()}

    def materialize(self, path: str | os.PathLike[str]) -> None:
        """Write the current state into the real directory ``path`` (created if missing)."""
        materialize_image(self.image(), path)

    # -----------------------------------------------------------------------------------
    # Conveniences (recorded like any other call)
    # -----------------------------------------------------------------------------------

    def makedirs(self, path: str) -> None:
        """``mkdir -p`` that also makes each new directory's entry durable."""
        parts = [p for p in _normalize(path).split("/") if p]
        current = "/"
        for part in parts:
            parent, current = current, posixpath.join(current, part)
            if not self.exists(current):
                self.mkdir(current)
                self.fsync_dir(parent)

    def write_file(self, path: str, data: bytes, *, durable: bool = True) -> None:
        """Create or replace ``path`` with ``data``; ``durable`` also fsyncs it and its directory."""
        fd = self.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            self.write(fd, data)
            if durable:
                self.fsync(fd)
        finally:
            self.close(fd)
        if durable:
            self.fsync_dir(posixpath.dirname(_normalize(path)))

    def fail_next(
        self,
        op: str,
        error: int = errno.EIO,
        *,
        path: str | None = None,
        short_write: int | None = None,
        count: int = 1,
        after: int = 0,
    ) -> None:
        """Make ``count`` calls of method ``op`` (on ``path``, if given) fail, after ``after`` succeed.

        They raise ``OSError(error)`` and change nothing. For ``op="write"``,
        ``short_write=n`` instead writes only the first ``n`` bytes and returns ``n``, the
        way ``write(2)`` reports a disk that filled up part-way. `faults_fired` counts
        the calls that failed so far.
        """
        if short_write is not None and op != "write":
            raise ValueError("short_write only applies to write")
        with self._mutex:
            norm = _normalize(path) if path is not None else None
            self._faults.append(_Fault(op, error, norm, short_write, count, after))

    def inject(self, fault: Fault) -> None:
        """Arm ``fault`` (see `fail_next`)."""
        self.fail_next(
            fault.op, fault.error, path=fault.path, short_write=fault.short_write, after=fault.after
        )

    # -----------------------------------------------------------------------------------
    # The FileSystem protocol
    # -----------------------------------------------------------------------------------

    def open(self, path: str, flags: int, mode: int = 0o666) -> int:
        with self._mutex:
            norm = _normalize(path)
            self._fault("open", norm)
            access = flags & os.O_ACCMODE
            if access == os.O_ACCMODE:
                raise _oserror(errno.EINVAL, path)
            readable = access in (os.O_RDONLY, os.O_RDWR)
            writable = access in (os.O_WRONLY, os.O_RDWR)
            parent_ino, name, ino = self._lookup(norm)
            effects: list[Effect] = []
            if ino is None:
                if not flags & os.O_CREAT:
                    raise _oserror(errno.ENOENT, path)
                if flags & getattr(os, "O_DIRECTORY", 0) or norm.endswith("/") or path.endswith("/"):
                    raise _oserror(errno.EISDIR, path)
                assert parent_ino is not None  # "/" always exists, so ino is None only below it
                ino = self._new_inode(_File())
                self._dir(parent_ino).entries[name] = ino
                self._touch(parent_ino)
                effects += [NewInode(ino, False), DirOp((SetEntry(parent_ino, name, ino),))]
            else:
                if flags & os.O_CREAT and flags & os.O_EXCL:
                    raise _oserror(errno.EEXIST, path)
                node = self._inodes[ino]
                if isinstance(node, _Dir):
                    if writable or flags & os.O_CREAT:
                        raise _oserror(errno.EISDIR, path)
                elif flags & getattr(os, "O_DIRECTORY", 0):
                    raise _oserror(errno.ENOTDIR, path)
                elif flags & os.O_TRUNC and writable and node.data:
                    del node.data[:]
                    self._touch(ino)
                    effects.append(Truncate(ino, 0))
            sync = bool(flags & (os.O_SYNC | getattr(os, "O_DSYNC", 0)))
            fd = self._new_fd(_Open(ino, norm, readable, writable, bool(flags & os.O_APPEND), sync))
            if effects:
                self._record("open", f"{norm!r}, {_flag_names(flags)}", effects, result=str(fd))
            return fd

    def close(self, fd: int) -> None:
        with self._mutex:
            self._handle(fd)
            del self._fds[fd]
            self._unlock(fd)

    def write(self, fd: int, data: bytes) -> int:
        with self._mutex:
            handle = self._handle(fd)
            view = bytes(data)
            fault = self._fault("write", handle.path)
            if fault is not None:
                view = view[: fault.short_write]
            if not handle.writable:
                raise _oserror(errno.EBADF)
            node = self._file(handle.ino)
            offset = len(node.data) if handle.append else handle.pos
            if view:
                if offset > len(node.data):
                    node.data.extend(bytes(offset - len(node.data)))
                node.data[offset : offset + len(view)] = view
                self._touch(handle.ino)
                effects: list[Effect] = [WriteData(handle.ino, offset, view)]
                if handle.sync:
                    effects.append(SyncFile(handle.ino))
                short = f" (short write of {len(data)})" if len(view) < len(data) else ""
                self._record("write", f"{fd} {handle.path!r}, {len(view)} bytes @ {offset}{short}", effects)
            handle.pos = offset + len(view)
            return len(view)

    def pread(self, fd: int, length: int, offset: int) -> bytes:
        with self._mutex:
            handle = self._handle(fd)
            if length < 0 or offset < 0:
                raise _oserror(errno.EINVAL)
            if not handle.readable:
                raise _oserror(errno.EBADF)
            node = self._inodes[handle.ino]
            if isinstance(node, _Dir):
                raise _oserror(errno.EISDIR)
            return bytes(node.data[offset : offset + length])

    def fstat(self, fd: int) -> SimStat:
        with self._mutex:
            return self._stat(self._handle(fd).ino)

    def ftruncate(self, fd: int, length: int) -> None:
        with self._mutex:
            handle = self._handle(fd)
            self._fault("ftruncate", handle.path)
            if length < 0 or not handle.writable or isinstance(self._inodes[handle.ino], _Dir):
                raise _oserror(errno.EINVAL)
            node = self._file(handle.ino)
            if length != len(node.data):
                if length < len(node.data):
                    del node.data[length:]
                else:
                    node.data.extend(bytes(length - len(node.data)))
                self._touch(handle.ino)
                self._record("ftruncate", f"{fd} {handle.path!r}, {length}", [Truncate(handle.ino, length)])

    def fsync(self, fd: int) -> None:
        self._sync("fsync", fd)

    def fdatasync(self, fd: int) -> None:
        self._sync("fdatasync", fd)

    def flock(self, fd: int, operation: int) -> None:
        with self._mutex:
            handle = self._handle(fd)
            self._fault("flock", handle.path)
            if operation & fcntl.LOCK_UN:
                self._unlock(fd)
                return
            exclusive = bool(operation & fcntl.LOCK_EX)
            if not exclusive and not operation & fcntl.LOCK_SH:
                raise _oserror(errno.EINVAL)
            ino = handle.ino
            while True:
                held = self._locks.get(ino)
                others = held[1] - {fd} if held else set()
                if not others or (not exclusive and held is not None and not held[0]):
                    break
                if operation & fcntl.LOCK_NB:
                    raise BlockingIOError(errno.EWOULDBLOCK, os.strerror(errno.EWOULDBLOCK))
                if not self._lock_released.wait(self.lock_wait):
                    # One thread waiting on a lock it (or a thread that will never run) holds.
                    raise _oserror(errno.EDEADLK, handle.path)
            holders = (held[1] if held and not exclusive else set()) | {fd}
            self._locks[ino] = (exclusive, holders)

    def stat(self, path: str) -> SimStat:
        with self._mutex:
            norm = _normalize(path)
            self._fault("stat", norm)
            _, _, ino = self._lookup(norm)
            if ino is None:
                raise _oserror(errno.ENOENT, path)
            return self._stat(ino)

    def lstat(self, path: str) -> SimStat:
        """``stat``: this file system has no symlinks, so nothing is ever followed."""
        return self.stat(path)

    def rename(self, src: str, dst: str) -> None:
        with self._mutex:
            nsrc, ndst = _normalize(src), _normalize(dst)
            self._fault("rename", nsrc)
            sparent, sname, sino = self._lookup(nsrc)
            dparent, dname, dino = self._lookup(ndst)
            if sino is None:
                raise _oserror(errno.ENOENT, src, dst)
            if sparent is None or dparent is None:
                raise _oserror(errno.EBUSY, src, dst)
            if sino == dino:
                return  # POSIX: renaming a file onto another name of itself does nothing
            snode = self._inodes[sino]
            if isinstance(snode, _Dir):
                if ndst.startswith(nsrc + "/"):
                    raise _oserror(errno.EINVAL, src, dst)
                if dino is not None:
                    dnode = self._inodes[dino]
                    if isinstance(dnode, _File):
                        raise _oserror(errno.ENOTDIR, src, dst)
                    if dnode.entries:
                        raise _oserror(errno.ENOTEMPTY, src, dst)
            elif dino is not None and isinstance(self._inodes[dino], _Dir):
                raise _oserror(errno.EISDIR, src, dst)
            del self._dir(sparent).entries[sname]
            self._dir(dparent).entries[dname] = sino
            self._touch(sparent)
            self._touch(dparent)
            effects = DirOp((SetEntry(sparent, sname, None), SetEntry(dparent, dname, sino)))
            self._record("rename", f"{nsrc!r}, {ndst!r}", [effects])

    def link(self, src: str, dst: str) -> None:
        with self._mutex:
            nsrc, ndst = _normalize(src), _normalize(dst)
            self._fault("link", nsrc)
            _, _, sino = self._lookup(nsrc)
            dparent, dname, dino = self._lookup(ndst)
            if sino is None:
                raise _oserror(errno.ENOENT, src, dst)
            if dino is not None:
                raise _oserror(errno.EEXIST, src, dst)
            if isinstance(self._inodes[sino], _Dir):
                raise _oserror(errno.EPERM, src, dst)
            assert dparent is not None
            self._dir(dparent).entries[dname] = sino
            self._touch(dparent)
            self._record("link", f"{nsrc!r}, {ndst!r}", [DirOp((SetEntry(dparent, dname, sino),))])

    def unlink(self, path: str) -> None:
        with self._mutex:
            norm = _normalize(path)
            self._fault("unlink", norm)
            parent, name, ino = self._lookup(norm)
            if ino is None:
                raise _oserror(errno.ENOENT, path)
            if isinstance(self._inodes[ino], _Dir):
                raise _oserror(errno.EISDIR, path)
            assert parent is not None
            del self._dir(parent).entries[name]
            self._touch(parent)
            self._record("unlink", repr(norm), [DirOp((SetEntry(parent, name, None),))])

    def mkdir(self, path: str, mode: int = 0o777) -> None:
        with self._mutex:
            norm = _normalize(path)
            self._fault("mkdir", norm)
            parent, name, ino = self._lookup(norm)
            if ino is not None:
                raise _oserror(errno.EEXIST, path)
            assert parent is not None
            new = self._new_inode(_Dir())
            self._dir(parent).entries[name] = new
            self._touch(parent)
            self._record("mkdir", repr(norm), [NewInode(new, True), DirOp((SetEntry(parent, name, new),))])

    def rmdir(self, path: str) -> None:
        with self._mutex:
            norm = _normalize(path)
            self._fault("rmdir", norm)
            parent, name, ino = self._lookup(norm)
            if ino is None:
                raise _oserror(errno.ENOENT, path)
            node = self._inodes[ino]
            if isinstance(node, _File):
                raise _oserror(errno.ENOTDIR, path)
            if parent is None:
                raise _oserror(errno.EBUSY, path)
            if node.entries:
                raise _oserror(errno.ENOTEMPTY, path)
            del self._dir(parent).entries[name]
            self._touch(parent)
            self._record("rmdir", repr(norm), [DirOp((SetEntry(parent, name, None),))])

    def listdir(self, path: str) -> list[str]:
        with self._mutex:
            norm = _normalize(path)
            self._fault("listdir", norm)
            _, _, ino = self._lookup(norm)
            if ino is None:
                raise _oserror(errno.ENOENT, path)
            node = self._inodes[ino]
            if isinstance(node, _File):
                raise _oserror(errno.ENOTDIR, path)
            return sorted(node.entries)

    def fsync_dir(self, path: str) -> None:
        with self._mutex:
            norm = _normalize(path)
            self._fault("fsync_dir", norm)
            _, _, ino = self._lookup(norm)
            if ino is None:
                raise _oserror(errno.ENOENT, path)
            if isinstance(self._inodes[ino], _File):
                raise _oserror(errno.ENOTDIR, path)
            self._record("fsync_dir", repr(norm), [SyncDir(ino)])

    def lock(self, path: str, timeout: float) -> _SimFileLock:
        """A lock on the file ``path`` (created if missing), like the store's own ``FileLock``.

        Re-entrant within a thread; threads exclude each other. Raises ``TimeoutError``
        when not acquired within ``timeout`` seconds, ``FileNotFoundError`` when the
        directory is missing.
        """
        return _SimFileLock(self, _normalize(path), timeout)

    # -----------------------------------------------------------------------------------
    # Internals
    # -----------------------------------------------------------------------------------

    def _replay(self, entry: TraceEntry) -> None:
        """Apply a change made before this file system existed, and record it as volatile."""
        for effect in entry.effects:
            if isinstance(effect, NewInode):
                self._inodes.setdefault(effect.ino, _Dir() if effect.is_dir else _File())
                self._next_ino = max(self._next_ino, effect.ino + 1)
            elif isinstance(effect, DirOp):
                for change in effect.entries:
                    entries = self._dir(change.dir_ino).entries
                    if change.target is None:
                        entries.pop(change.name, None)
                    else:
                        entries[change.name] = change.target
                    self._touch(change.dir_ino)
            elif isinstance(effect, WriteData):
                data = self._file(effect.ino).data
                if effect.offset > len(data):
                    data.extend(bytes(effect.offset - len(data)))
                data[effect.offset : effect.offset + len(effect.data)] = effect.data
            elif isinstance(effect, Truncate):
                data = self._file(effect.ino).data
                del data[effect.length :]
                data.extend(bytes(effect.length - len(data)))
        self._record(entry.op, entry.detail, entry.effects)

    def _sync(self, op: str, fd: int) -> None:
        with self._mutex:
            handle = self._handle(fd)
            self._fault(op, handle.path)
            is_dir = isinstance(self._inodes[handle.ino], _Dir)
            effect: Effect = SyncDir(handle.ino) if is_dir else SyncFile(handle.ino)
            self._record(op, f"{fd} {handle.path!r}", [effect])

    def _record(self, op: str, detail: str, effects: Sequence[Effect], *, result: str = "") -> None:
        self._trace.append(TraceEntry(len(self._trace), op, detail, tuple(effects), result))

    def _fault(self, op: str, path: str) -> _Fault | None:
        for fault in self._faults:
            if fault.op == op and (fault.path is None or fault.path == path):
                if fault.skip > 0:
                    fault.skip -= 1
                    return None
                self.faults_fired += 1
                fault.count -= 1
                if fault.count <= 0:
                    self._faults.remove(fault)
                if fault.short_write is None:
                    raise _oserror(fault.error, path)
                return fault
        return None

    def _lookup(self, norm: str) -> tuple[int | None, str, int | None]:
        """(parent inode, last name, inode or None); raise for a missing or file parent."""
        if norm == "/":
            return None, "", ROOT_INO
        parts = norm.strip("/").split("/")
        ino = ROOT_INO
        for part in parts[:-1]:
            node = self._inodes[ino]
            if isinstance(node, _File):
                raise _oserror(errno.ENOTDIR, norm)
            child = node.entries.get(part)
            if child is None:
                raise _oserror(errno.ENOENT, norm)
            ino = child
        node = self._inodes[ino]
        if isinstance(node, _File):
            raise _oserror(errno.ENOTDIR, norm)
        return ino, parts[-1], node.entries.get(parts[-1])

    def _node(self, norm: str) -> _Inode:
        _, _, ino = self._lookup(norm)
        if ino is None:
            raise _oserror(errno.ENOENT, norm)
        return self._inodes[ino]

    def _dir(self, ino: int) -> _Dir:
        node = self._inodes[ino]
        assert isinstance(node, _Dir), ino
        return node

    def _file(self, ino: int) -> _File:
        node = self._inodes[ino]
        if isinstance(node, _Dir):
            raise _oserror(errno.EISDIR)
        return node

    def _handle(self, fd: int) -> _Open:
        handle = self._fds.get(fd)
        if handle is None:
            raise _oserror(errno.EBADF)
        return handle

    def _new_inode(self, node: _Inode) -> int:
        ino = self._next_ino
        self._next_ino += 1
        self._inodes[ino] = node
        self._touch(ino)
        return ino

    def _new_fd(self, handle: _Open) -> int:
        fd = 3  # 0, 1 and 2 belong to the standard streams, as in a real process
        while fd in self._fds:
            fd += 1
        self._fds[fd] = handle
        return fd

    def _touch(self, ino: int) -> None:
        if isinstance(self._inodes[ino], _Dir):
            self._links = None
        self._clock += 1
        self._inodes[ino].mtime_ns = _BASE_TIME_NS + self._clock * 1000

    def _stat(self, ino: int) -> SimStat:
        node = self._inodes[ino]
        if isinstance(node, _Dir):
            subdirs = sum(isinstance(self._inodes[c], _Dir) for c in node.entries.values())
            return SimStat(stat_module.S_IFDIR | 0o755, ino, 1, 2 + subdirs, 4096, node.mtime_ns)
        return SimStat(stat_module.S_IFREG | 0o644, ino, 1, self._nlink(ino), len(node.data), node.mtime_ns)

    def _nlink(self, ino: int) -> int:
        if self._links is None:
            # Counted in one pass and kept until a directory changes (see `_touch`).
            self._links = {}
            for node in self._inodes.values():
                if isinstance(node, _Dir):
                    for target in node.entries.values():
                        self._links[target] = self._links.get(target, 0) + 1
        return self._links.get(ino, 0)

    def _unlock(self, fd: int) -> None:
        for ino, (_exclusive, holders) in list(self._locks.items()):
            if fd in holders:
                holders.discard(fd)
                if not holders:
                    del self._locks[ino]
                self._lock_released.notify_all()


class _SimFileLock:
    """What `SimulatedFileSystem.lock` returns: open + ``flock`` on the lock file, polled."""

    def __init__(self, fs: SimulatedFileSystem, path: str, timeout: float) -> None:
        self._fs = fs
        self._path = path
        self._timeout = timeout
        self._held = threading.local()

    def __enter__(self) -> Self:
        depth: int = getattr(self._held, "depth", 0)
        if depth == 0:
            fd = self._fs.open(self._path, os.O_RDWR | os.O_CREAT, 0o644)
            deadline = time.monotonic() + self._timeout
            while True:
                try:
                    self._fs.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    if self._still_named(fd):
                        break
                    # Renamed away while we waited (a delete): lock the file now at the path,
                    # as the store's own lock does (`jsonl_store._io.lock`).
                    self._fs.flock(fd, fcntl.LOCK_UN)
                    self._fs.close(fd)
                    fd = self._fs.open(self._path, os.O_RDWR | os.O_CREAT, 0o644)
                    continue
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        self._fs.close(fd)
                        raise TimeoutError(f"could not lock {self._path} within {self._timeout} s") from None
                    time.sleep(0.001)
            self._held.fd = fd
        self._held.depth = depth + 1
        return self

    def _still_named(self, fd: int) -> bool:
        try:
            return self._fs.stat(self._path).st_ino == self._fs.fstat(fd).st_ino
        except FileNotFoundError:
            return False

    def __exit__(self, *exc: object) -> None:
        self._held.depth -= 1
        if self._held.depth == 0:
            fd: int = self._held.fd
            self._fs.flock(fd, fcntl.LOCK_UN)
            self._fs.close(fd)


def _flag_names(flags: int) -> str:
    names = [{os.O_RDONLY: "O_RDONLY", os.O_WRONLY: "O_WRONLY", os.O_RDWR: "O_RDWR"}.get(flags & 3, "?")]
    for name in ("O_CREAT", "O_EXCL", "O_TRUNC", "O_APPEND", "O_SYNC", "O_DSYNC", "O_DIRECTORY"):
        value = getattr(os, name, 0)
        if value and flags & value == value and not (name == "O_DSYNC" and flags & os.O_SYNC == os.O_SYNC):
            names.append(name)
    return "|".join(names)


def load_directory(path: str | os.PathLike[str]) -> SimulatedFileSystem:
    """A `SimulatedFileSystem` holding a copy of the real directory ``path`` as ``/``.

    Files and directories are copied (hard links kept); symlinks and special files are
    skipped. Raises ``NotADirectoryError`` when ``path`` is not a directory.
    """
    root = os.fspath(path)
    image: dict[int, bytes | dict[str, int]] = {}
    by_real_ino: dict[tuple[int, int], int] = {}

    def walk(real: str) -> int:
        ino = len(image) + 1
        entries: dict[str, int] = {}
        image[ino] = entries
        with os.scandir(real) as it:
            for entry in sorted(it, key=lambda e: e.name):
                if entry.is_dir(follow_symlinks=False):
                    entries[entry.name] = walk(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    st = entry.stat(follow_symlinks=False)
                    key = (st.st_dev, st.st_ino)
                    if key not in by_real_ino:
                        with open(entry.path, "rb") as file:
                            by_real_ino[key] = child = len(image) + 1
                            image[child] = file.read()
                    entries[entry.name] = by_real_ino[key]
        return ino

    if not os.path.isdir(root):
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), root)
    walk(root)
    return SimulatedFileSystem(image)
