"""Process-wide state: every at-fork hook and module-level cache of the package, with one reset.

After ``os.fork()`` only the forking thread lives on in the child (fork(2) in POSIX;
https://docs.python.org/3/library/os.html#os.fork): a lock another thread held at the
fork stays held for good, descriptors and their ``flock`` are shared with the parent, and
random bytes made ahead are the parent's too. Each piece of state that must not cross a
fork is registered here, saying why it exists, and `reset` makes every one of them fresh.
The one at-fork hook runs `reset` in every child; a test that needs a clean process state
calls it too.

Live objects of a kind (writers, locks, stores) are kept in `Tracked` weak sets, so a
dropped object leaves its set; state a module keeps for its hot path (the UUIDv7 clock)
stays in that module and registers its reset function with `register`.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable, Iterator
from typing import Generic, Protocol, TypeVar


class Current:
    """This process's id, kept current across forks: a log writer compares it with the pid
    that opened its descriptor instead of calling getpid(2) on every append."""

    pid = os.getpid()


class ForkAware(Protocol):
    """An object holding state a forked child must renew (a mutex, a descriptor)."""

    def _after_fork_in_child(self) -> None:
        """Renew this object's process-bound state; runs in the child, in its only thread."""
        ...


class DescriptorCache(Protocol):
    """Something that keeps descriptors open for reuse and can close the idle ones."""

    def _release_descriptors(self) -> int:
        """Close every cached descriptor not in use right now; return how many."""
        ...


_T = TypeVar("_T")


class Tracked(Generic[_T]):
    """The live objects of one kind, held weakly; ``renew`` runs on each of them in `reset`."""

    def __init__(self, name: str, renew: Callable[[_T], None] | None) -> None:
        self.name = name
        self._live: weakref.WeakSet[_T] = weakref.WeakSet()
        self._renew = renew
        register(name, self._reset)

    def add(self, item: _T) -> None:
        self._live.add(item)

    def __iter__(self) -> Iterator[_T]:
        # A copy: a weak set changes size when the collector drops an object mid-loop.
        return iter(list(self._live))

    def _reset(self) -> None:
        if self._renew is not None:
            for item in self:
                self._renew(item)


# Appended to only while a module is imported (under the import lock), read by `reset`.
_registered: list[tuple[str, Callable[[], None]]] = []


def register(name: str, reset_one: Callable[[], None]) -> None:
    """Have `reset` (and so every forked child) call ``reset_one``; ``name`` says whose state it is.

    A name registered again (its module reloaded) replaces the earlier function in its place.
    """
    for index, (known, _) in enumerate(_registered):
        if known == name:
            _registered[index] = (name, reset_one)
            return
    _registered.append((name, reset_one))


def registered() -> tuple[str, ...]:
    """The names of every registered piece of process-wide state, in the order `reset` renews them."""
    return tuple(name for name, _ in _registered)


def reset() -> None:
    """Make every registered piece of process-wide state fresh, as in a new process.

    Runs in every child ``os.fork()`` makes. A test may call it for a clean process
    state, but never while another thread is inside the store: it replaces the locks
    that thread may hold, and a lock's descriptor is dropped without unlocking it (in a
    child that is the parent's lock, which must stay held).
    """
    Current.pid = os.getpid()
    for _, reset_one in _registered:
        reset_one()


def _renew(item: ForkAware) -> None:
    item._after_fork_in_child()


#: Every `LogWriter`: a child gives each a fresh mutex (another thread of the parent may
#: have held one); its descriptor is reopened on first use, since `pid` changed.
LOG_WRITERS: Tracked[ForkAware] = Tracked("log writers", _renew)
#: Every `FileLock`: a child closes its copy of the parent's descriptor without unlocking
#: (the parent's lock stays held) and starts unlocked, with a fresh mutex.
FILE_LOCKS: Tracked[ForkAware] = Tracked("file locks", _renew)
#: Every `SessionStore`: a child gives its handle cache fresh mutexes.
STORES: Tracked[ForkAware] = Tracked("stores", _renew)
#: What gives descriptors back when the process runs out of them (EMFILE): each store's
#: handle cache. Nothing to renew at a fork; the stores' own renewal covers them.
DESCRIPTOR_CACHES: Tracked[DescriptorCache] = Tracked("descriptor caches", None)

# The one at-fork hook of the package: every other module registers with `register`.
os.register_at_fork(after_in_child=reset)

__all__ = [
    "DESCRIPTOR_CACHES",
    "FILE_LOCKS",
    "LOG_WRITERS",
    "STORES",
    "Current",
    "DescriptorCache",
    "ForkAware",
    "Tracked",
    "register",
    "registered",
    "reset",
]
