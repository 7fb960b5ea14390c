"""The states a crash can leave on disk, built from a `SimulatedFileSystem`'s trace.

The durability model is the one the SQLite crash-test VFS and the ALICE study
(Pillai et al., OSDI 2014) use, kept to what POSIX promises:

- Bytes written to a file are *volatile* until an fsync or fdatasync of that file. On a
  power loss the unsynced writes of a file survive as an in-order prefix: the last one
  kept may be torn at any byte, and a region a write appended may hold zeros or garbage
  (the size reached the disk, the data did not).
- A directory entry that a create, mkdir, rename, link, unlink or rmdir set is volatile
  until that directory is fsynced. An fsync of a file makes its data durable, not its
  name: a new file fsynced but never given a durable entry is gone after the crash.
  Each call's entry changes reach the disk together (a rename is atomic) or not at all.
- A process crash (``kill -9``) loses nothing that was written: the kernel keeps its
  page cache. That is the only crash ``durability="none"`` promises to survive.

For each prefix of the trace (each boundary between two mutating calls) `crash_states`
yields the process-crash state and a bounded set of power-loss states: all volatile
changes lost, all kept, directory changes kept as an in-order prefix or with one rename
lost, and for each file with unsynced data each prefix of its writes, the last kept write
torn at sampled bytes, and its unsynced region zero-filled or garbage-filled.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import random
from collections.abc import Callable, Container, Iterator, Mapping, Sequence
from typing import Literal, TypeAlias

from ._image import ROOT_INO, Image, image_tree, materialize_image
from ._simfs import SimulatedFileSystem
from ._trace import (
    DataOp,
    DirOp,
    NewInode,
    SetEntry,
    SyncDir,
    SyncFile,
    TraceEntry,
    Truncate,
    WriteData,
    format_trace,
)

CrashKind: TypeAlias = Literal["process", "power"]


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class CrashState:
    """One state the disk can be in after a crash that came right after ``trace[prefix - 1]``.

    ``prefix`` calls of the trace ran (``prefix == 0``: none did). ``kind`` is
    ``"process"`` (the page cache survived) or ``"power"``. ``description`` says which
    volatile changes were kept, lost, torn or filled.
    """

    prefix: int
    kind: CrashKind
    description: str
    image: Image
    trace: Sequence[TraceEntry]
    #: For a process crash: what is durable, and the changes still only in the page cache.
    durable: Image | None = None
    volatile: tuple[TraceEntry, ...] = ()

    @property
    def last_op(self) -> TraceEntry | None:
        """The last call that ran before the crash, or None for the starting image."""
        return self.trace[self.prefix - 1] if self.prefix else None

    def filesystem(self, *, volatile: bool = True) -> SimulatedFileSystem:
        """A fresh `SimulatedFileSystem` holding this state, as a restarted process finds it.

        After a power loss everything on it is durable. After a process crash, what was
        not yet synced is still volatile (it opens the new trace), so a power loss after
        the restart can still lose it; ``volatile=False`` makes it all durable instead.
        """
        if volatile and self.durable is not None:
            return SimulatedFileSystem(self.durable, volatile=self.volatile)
        return SimulatedFileSystem(self.image)

    def materialize(self, path: str | os.PathLike[str]) -> None:
        """Write this state into the real, empty directory ``path`` (``/`` becomes ``path``)."""
        materialize_image(self.image, path)

    def tree(self) -> dict[str, bytes | None]:
        """Every path mapped to its bytes (None for a directory)."""
        return image_tree(self.image)

    def report(self) -> str:
        """The state and the calls that led to it, for a failure message."""
        return (
            f"{self.kind} crash after {self.prefix} of {len(self.trace)} calls: {self.description}\n"
            f"trace:\n{format_trace(self.trace[: self.prefix])}"
        )

    def __repr__(self) -> str:
        return f"CrashState(prefix={self.prefix}, kind={self.kind!r}, description={self.description!r})"


# ---------------------------------------------------------------------------------------
# Replaying the trace with durable and volatile state kept apart
# ---------------------------------------------------------------------------------------


@dataclasses.dataclass(slots=True)
class _PendingDirOp:
    index: int
    op: str
    entries: list[SetEntry]


def _apply(data: bytes, ops: Sequence[DataOp]) -> bytes:
    out = bytearray(data)
    for op in ops:
        if isinstance(op, Truncate):
            if op.length < len(out):
                del out[op.length :]
            else:
                out.extend(bytes(op.length - len(out)))
        else:
            if op.offset > len(out):
                out.extend(bytes(op.offset - len(out)))
            out[op.offset : op.offset + len(op.data)] = op.data
    return bytes(out)


class _Disk:
    """Durable state plus the volatile changes since each file's or directory's last sync."""

    def __init__(self, image: Image) -> None:
        self.files: dict[int, bytes] = {}
        self.dirs: dict[int, dict[str, int]] = {}
        for ino, content in image.items():
            if isinstance(content, bytes | bytearray):
                self.files[ino] = bytes(content)
            else:
                self.dirs[ino] = dict(content)
        self.pending_data: dict[int, list[DataOp]] = {}
        self.pending_dirs: list[_PendingDirOp] = []

    def apply(self, entry: TraceEntry) -> None:
        for effect in entry.effects:
            if isinstance(effect, NewInode):
                if effect.is_dir:
                    self.dirs[effect.ino] = {}
                else:
                    self.files[effect.ino] = b""
            elif isinstance(effect, DirOp):
                self.pending_dirs.append(_PendingDirOp(entry.index, entry.op, list(effect.entries)))
            elif isinstance(effect, WriteData | Truncate):
                self.pending_data.setdefault(effect.ino, []).append(effect)
            elif isinstance(effect, SyncFile):
                ops = self.pending_data.pop(effect.ino, [])
                self.files[effect.ino] = _apply(self.files[effect.ino], ops)
            else:
                assert isinstance(effect, SyncDir)
                self._sync_dir(effect.ino)

    def durable_image(self) -> Image:
        """Every inode's durable content, reachable or not (a restarted process's base)."""
        image: dict[int, bytes | dict[str, int]] = dict(self.files)
        image.update((ino, dict(entries)) for ino, entries in self.dirs.items())
        return image

    def volatile_entries(self) -> tuple[TraceEntry, ...]:
        """The changes not yet durable, as trace entries to replay on `durable_image`."""
        out: list[TraceEntry] = []
        for op in self.pending_dirs:
            detail = f"#{op.index}, still volatile"
            out.append(TraceEntry(len(out), op.op, detail, (DirOp(tuple(op.entries)),)))
        for ino, ops in sorted(self.pending_data.items()):
            for data_op in ops:
                if isinstance(data_op, WriteData):
                    detail = f"inode {ino}, {len(data_op.data)} bytes @ {data_op.offset}, still volatile"
                    out.append(TraceEntry(len(out), "write", detail, (data_op,)))
                else:
                    detail = f"inode {ino}, {data_op.length}, still volatile"
                    out.append(TraceEntry(len(out), "ftruncate", detail, (data_op,)))
        return tuple(out)

    def _sync_dir(self, ino: int) -> None:
        entries = self.dirs[ino]
        for op in self.pending_dirs:
            for change in [c for c in op.entries if c.dir_ino == ino]:
                _set(entries, change)
                op.entries.remove(change)
        self.pending_dirs = [op for op in self.pending_dirs if op.entries]

    def build(
        self, data: Callable[[int, bytes, list[DataOp]], bytes], dir_ops: Sequence[_PendingDirOp]
    ) -> Image:
        """The image with ``dir_ops`` kept and each file's content chosen by ``data``."""
        dirs = {ino: dict(entries) for ino, entries in self.dirs.items()}
        for op in dir_ops:
            for change in op.entries:
                _set(dirs[change.dir_ino], change)
        image: dict[int, bytes | dict[str, int]] = {}
        stack = [ROOT_INO]
        while stack:
            ino = stack.pop()
            if ino in image:
                continue
            if ino in dirs:
                image[ino] = dirs[ino]
                stack.extend(dirs[ino].values())
            else:
                image[ino] = data(ino, self.files[ino], self.pending_data.get(ino, []))
        return image


def _set(entries: dict[str, int], change: SetEntry) -> None:
    if change.target is None:
        entries.pop(change.name, None)
    else:
        entries[change.name] = change.target


def _kept(ino: int, durable: bytes, ops: list[DataOp]) -> bytes:
    return _apply(durable, ops)


def _lost(ino: int, durable: bytes, ops: list[DataOp]) -> bytes:
    return durable


def _digest(image: Image) -> bytes:
    # Within one prefix inode numbers are stable, so the image itself names the state.
    h = hashlib.blake2b(digest_size=16)
    for ino in sorted(image):
        content = image[ino]
        if isinstance(content, bytes | bytearray):
            h.update(b"F%d:%d:" % (ino, len(content)) + content)
        else:
            h.update(b"D%d:" % ino + repr(sorted(content.items())).encode())
    return h.digest()


# ---------------------------------------------------------------------------------------
# Choosing the states
# ---------------------------------------------------------------------------------------

_Candidate: TypeAlias = tuple[str, Callable[[], Image]]


def _tear_points(data: bytes, limit: int, rng: random.Random) -> list[int]:
    """Byte counts at which to tear a write of ``data``: every one when few, else a sample."""
    inner = list(range(1, len(data)))
    if len(inner) <= limit:
        return inner
    # Tear right after the first byte, right before the last one and around line ends
    # first: that is where a line-oriented reader's edge cases are. Then at random.
    edges = {1, len(data) - 1}
    for i, byte in enumerate(data):
        if byte == 0x0A:
            edges.update(p for p in (i, i + 1) if 0 < p < len(data))
    chosen = [1, len(data) - 1][:limit]
    rest = sorted(edges - set(chosen))
    rng.shuffle(rest)
    chosen += rest[: limit - len(chosen)]
    while len(chosen) < limit:
        p = rng.randrange(1, len(data))
        if p not in chosen:
            chosen.append(p)
    return sorted(chosen)


def _fill(op: DataOp, kind: str, rng: random.Random) -> DataOp:
    """The write with its bytes replaced: the size reached the disk, the data did not."""
    if isinstance(op, Truncate):
        return op
    if kind == "zeros":
        return WriteData(op.ino, op.offset, bytes(len(op.data)))
    return WriteData(op.ino, op.offset, rng.randbytes(len(op.data)))


def _data_candidates(disk: _Disk, ino: int, name: str, limit: int, rng: random.Random) -> list[_Candidate]:
    ops = disk.pending_data[ino]
    all_dirs = list(disk.pending_dirs)
    out: list[_Candidate] = []

    def variant(replacement: list[DataOp]) -> Callable[[], Image]:
        def data(i: int, durable: bytes, pending: list[DataOp]) -> bytes:
            return _apply(durable, replacement if i == ino else pending)

        return lambda: disk.build(data, all_dirs)

    n = len(ops)
    last = ops[-1]
    if isinstance(last, WriteData):
        for t in _tear_points(last.data, limit, rng):
            torn = WriteData(last.ino, last.offset, last.data[:t])
            out.append(
                (
                    f"{name}: last of {n} unsynced writes torn after {t} of {len(last.data)} bytes",
                    variant([*ops[:-1], torn]),
                )
            )
    out.extend((f"{name}: {k} of {n} unsynced writes kept", variant(ops[:k])) for k in range(n))
    for kind in ("zeros", "garbage"):
        out.append(
            (
                f"{name}: all {n} unsynced writes reached the disk as {kind}",
                variant([_fill(op, kind, rng) for op in ops]),
            )
        )
        if n > 1:
            out.append(
                (
                    f"{name}: {n - 1} of {n} unsynced writes kept, the last as {kind}",
                    variant([*ops[:-1], _fill(last, kind, rng)]),
                )
            )
    for k in range(n - 1):
        op = ops[k]
        if isinstance(op, WriteData) and len(op.data) > 1:
            t = rng.randrange(1, len(op.data))
            torn = WriteData(op.ino, op.offset, op.data[:t])
            out.append(
                (
                    f"{name}: {k} of {n} unsynced writes kept, the next torn after {t} bytes",
                    variant([*ops[:k], torn]),
                )
            )
    return out


def _builder(
    disk: _Disk, data: Callable[[int, bytes, list[DataOp]], bytes], dir_ops: Sequence[_PendingDirOp]
) -> Callable[[], Image]:
    return lambda: disk.build(data, dir_ops)


def _candidates(
    disk: _Disk, names: Mapping[int, str], limit: int, rng: random.Random
) -> list[list[_Candidate]]:
    """Power-loss states grouped by family, most telling first in each."""
    dir_ops = list(disk.pending_dirs)
    families: list[list[_Candidate]] = []
    dirs_family: list[_Candidate] = []
    for k in range(len(dir_ops)):
        kept = dir_ops[:k]
        ops = ", ".join(f"#{op.index} {op.op}" for op in dir_ops[k:])
        dirs_family.append((f"directory changes lost: {ops}; file data kept", _builder(disk, _kept, kept)))
    for op in dir_ops:
        if op.op == "rename":
            others = [o for o in dir_ops if o is not op]
            description = f"directory change #{op.index} rename lost, the others kept; file data kept"
            dirs_family.append((description, _builder(disk, _kept, others)))
    if disk.pending_data and dir_ops:
        dirs_family.append(
            ("directory changes kept, unsynced file data lost", lambda: disk.build(_lost, dir_ops))
        )
    families.append(dirs_family)
    families.extend(
        _data_candidates(disk, ino, names.get(ino, f"inode {ino}"), limit, rng)
        for ino in sorted(disk.pending_data)
    )
    return families


def _names(disk: _Disk) -> dict[int, str]:
    """A path for each inode, from the current directory entries, for descriptions."""
    dirs = {ino: dict(entries) for ino, entries in disk.dirs.items()}
    for op in disk.pending_dirs:
        for change in op.entries:
            _set(dirs[change.dir_ino], change)
    names: dict[int, str] = {ROOT_INO: "/"}
    stack = [ROOT_INO]
    while stack:
        ino = stack.pop()
        for name, child in dirs.get(ino, {}).items():
            if child not in names:
                names[child] = names[ino].rstrip("/") + "/" + name
                stack.append(child)
    return names


def crash_states(
    fs: SimulatedFileSystem,
    *,
    start: int | None = None,
    stop: int | None = None,
    max_states_per_prefix: int = 16,
    max_tear_points: int = 4,
    process: bool = True,
    power: bool = True,
    prefixes: Container[int] | None = None,
    seed: int = 0,
) -> Iterator[CrashState]:
    """Yield the states a crash can leave after each prefix of ``fs.trace``.

    Prefixes run from ``start`` (default: after the entries ``fs`` inherited as volatile
    from an earlier crash) to ``stop`` (default: the whole trace) calls, or only
    those in ``prefixes`` when given; a prefix whose last call changed nothing on disk is
    skipped (see `crash_points`). For each, the process-crash state
    comes first (if ``process``), then at most ``max_states_per_prefix`` distinct
    power-loss states (if ``power``): all volatile changes lost and all kept always, the
    rest drawn in turn from each family of variants (directory changes, then each file's
    unsynced data), with up to ``max_tear_points`` tear positions per write. States
    identical to one already yielded for the same prefix are skipped. ``seed`` fixes
    the sampling and the garbage bytes, so a run can be repeated.

    Raises ``ValueError`` when ``start``/``stop`` are out of range.
    """
    trace = list(fs.trace)
    start = fs.inherited if start is None else start
    end = len(trace) if stop is None else stop
    if not 0 <= start <= end <= len(trace):
        raise ValueError(f"prefixes {start}..{end} are outside 0..{len(trace)}")
    disk = _Disk(fs.base_image)
    for prefix in range(end + 1):
        if prefix:
            disk.apply(trace[prefix - 1])
        if prefix < start or (prefix and not trace[prefix - 1].effects):
            continue
        if prefixes is not None and prefix not in prefixes:
            continue
        yield from _states_at(
            disk,
            prefix,
            trace,
            max_states_per_prefix,
            max_tear_points,
            process,
            power,
            random.Random(f"{seed}:{prefix}"),
        )


def crash_points(fs: SimulatedFileSystem, *, start: int | None = None) -> list[int]:
    """The prefixes `crash_states` crashes at: ``start`` and each later call that changed the disk."""
    start = fs.inherited if start is None else start
    return [start] + [e.index + 1 for e in fs.trace[start:] if e.effects]


def _round_robin(families: Sequence[Sequence[_Candidate]]) -> Iterator[_Candidate]:
    """Each family's first candidate, then each one's second, and so on: a small budget still sees each kind of damage."""
    left = [list(family) for family in families if family]
    while left:
        for family in list(left):
            yield family.pop(0)
            if not family:
                left.remove(family)


def _states_at(
    disk: _Disk,
    prefix: int,
    trace: Sequence[TraceEntry],
    budget: int,
    tear_points: int,
    process: bool,
    power: bool,
    rng: random.Random,
) -> Iterator[CrashState]:
    # States repeat within a kind only: the power loss that kept everything is the same
    # disk as the process crash, but a caller that asks for power losses expects it.
    seen: set[tuple[CrashKind, bytes]] = set()

    def emit(kind: CrashKind, description: str, image: Image) -> CrashState | None:
        key = (kind, _digest(image))
        if key in seen:
            return None
        seen.add(key)
        return CrashState(prefix, kind, description, image, trace)

    everything = disk.build(_kept, disk.pending_dirs)
    if process:
        yield CrashState(
            prefix,
            "process",
            "everything written kept (page cache survived)",
            everything,
            trace,
            disk.durable_image(),
            disk.volatile_entries(),
        )
    if not power or budget <= 0:
        return
    if not disk.pending_data and not disk.pending_dirs:
        state = emit("power", "nothing was volatile", everything)
        if state is not None:
            yield state
        return
    count = 0
    for description, image in [
        ("all volatile changes lost", disk.build(_lost, [])),
        ("all volatile changes kept", everything),
    ]:
        state = emit("power", description, image)
        if state is not None:
            count += 1
            yield state
    for description, build in _round_robin(_candidates(disk, _names(disk), tear_points, rng)):
        if count >= budget:
            break
        state = emit("power", description, build())
        if state is not None:
            count += 1
            yield state
