"""Does a store recover from a crash state? The promises of docs/guides/agent-loop.md, "Crash safety and durability", checked one state at a time.

For a crash after trace prefix ``p`` of a workload run on a `SimulatedFileSystem`, a
fresh `SessionStore` on the crashed disk must show, for every session the workload used:

- every record acknowledged by ``p`` (under ``durability="fsync"``, or after a process
  crash), with identical content; the raw log read back is a prefix of what was written,
  sequences 1..n without a gap, and no `append_many` batch is present in part;
- the snapshot and the metadata as one version that was written (never a mix), not older
  than the newest acknowledged one; token-usage records as a prefix of those written;
- no problem reported for what a crash normally leaves (torn or filled tails);
- a model context (``load(...).model_context(close_last=True)``) a provider accepts;
- `SessionStore.repair` run twice equals run once: the second finds nothing, changes no
  byte, and what readers see is the same before and after repair;
- a resumed session (a snapshot of what was recovered, then an append) works: the append
  gets the next sequence, after the recovered records;
- and all of the above again after the recovery itself (a repair, or the resumed session)
  is crashed at sampled points. After a process crash, what the dead process wrote but
  never synced is still volatile when the next one starts, so a power loss during the
  recovery can still lose it (`CrashState.filesystem`): the store must not build anything
  it acknowledges on top of it without syncing it first.
"""

from __future__ import annotations

import dataclasses
import random
import traceback
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, Self

from .._format.records import CompactedMessage, Message, UserMessage
from ._crash import CrashState, crash_points, crash_states
from ._session_checks import Expect, Failed, Seen, check_session, fail
from ._simfs import Fault, SimulatedFileSystem
from ._workload import (
    Operation,
    UpdateSession,
    WorkloadResult,
    run_workload,
)

if TYPE_CHECKING:
    from ..store import SessionStore

Durability = Literal["fsync", "none"]


class RecoveryFailure(AssertionError):
    """A crash state the store did not recover from: what failed, the state, and its trace."""

    def __init__(self, reason: str, state: CrashState, recovery_state: CrashState | None = None) -> None:
        self.reason = reason
        self.state = state
        self.recovery_state = recovery_state
        super().__init__(reason)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.reason, self.state, self.recovery_state))

    def __str__(self) -> str:
        text = f"{self.reason}\n\n{self.state.report()}"
        if self.recovery_state is not None:
            text += "\n\nwhile recovering, crashed again: " + self.recovery_state.report()
        return text


@dataclasses.dataclass(slots=True)
class CheckCounts:
    """How much `verify_recovery` checked."""

    #: Crash states of the workload checked.
    states: int = 0
    #: Crash states of interrupted recoveries checked on top.
    recovery_states: int = 0
    #: Trace prefixes (crash points) those states came from.
    prefixes: int = 0

    @property
    def total(self) -> int:
        return self.states + self.recovery_states

    def __iadd__(self, other: CheckCounts) -> Self:
        self.states += other.states
        self.recovery_states += other.recovery_states
        self.prefixes += other.prefixes
        return self


def _store(fs: SimulatedFileSystem, root: str, durability: Durability) -> SessionStore:
    from ..store import SessionStore

    return SessionStore(root, durability=durability, fs=fs, on_problem=lambda problem: None)


def _check_all(store: SessionStore, expect: Expect) -> dict[str, Seen]:
    result = expect.result
    seen = {sid: check_session(store, sid, expect) for sid in result.session_ids}
    listed = {s.session_id for s in store.list_sessions()}
    for sid in result.session_ids:
        if expect.acked and result.acknowledged(sid, expect.prefix):
            fail(sid in listed, f"{sid}: missing from list_sessions()")
    store.verify()
    return seen


def _check_repair(fs: SimulatedFileSystem, root: str, durability: Durability, expect: Expect) -> None:
    store = _store(fs, root, durability)
    before = _check_all(store, expect)
    for sid in expect.result.session_ids:
        store.repair(sid)
    once = fs.tree()
    for sid in expect.result.session_ids:
        again = store.repair(sid)
        fail(not again, f"{sid}: a second repair still finds {[str(p) for p in again]}")
    twice = fs.tree()
    if once != twice:
        changed = sorted(
            set(once) ^ set(twice) | {p for p in once.keys() & twice.keys() if once[p] != twice[p]}
        )
        raise Failed(f"a second repair changed files: {changed}")
    left = store.verify()
    fail(not left, f"verify() after repair reports {[str(p) for p in left]}")
    store.close()
    after = _check_all(_store(fs, root, durability), expect)
    for sid, seen in before.items():
        wanted = seen
        if seen.meta_version is None:
            # Unreadable metadata is rebuilt with defaults: the documented repair.
            wanted = dataclasses.replace(seen, meta_version=after[sid].meta_version)
        fail(wanted == after[sid], f"{sid}: repair changed what readers see: {seen} -> {after[sid]}")


@dataclasses.dataclass(frozen=True, slots=True)
class _Resumed:
    """One session resumed after the crash: an append and a snapshot, and when each was acknowledged."""

    before: list[Message]
    #: How many of ``before`` the original run had acknowledged (they must stay).
    least: int
    message: Message
    appended_at: int
    old_version: int
    new_version: int
    snapshot_at: int


def _check_resume(
    fs: SimulatedFileSystem, root: str, durability: Durability, expect: Expect
) -> dict[str, _Resumed]:
    """Resume each session after the crash: compact what was recovered, then append."""
    store = _store(fs, root, durability)
    resumed = {}
    for sid in expect.result.session_ids:
        before = [r.message for r in store.records(sid)]
        least = (
            sum(len(a.records) for a in expect.result.acknowledged(sid, expect.prefix)) if expect.acked else 0
        )
        # A snapshot first: it must not outlive the records it stands for, even when they
        # were only in the page cache when the process died.
        current = store.load(sid).snapshot
        old_version = new_version = current.version if current else 0
        if len(before) > (current.compacted_through_sequence if current else 0):
            summary = CompactedMessage(content="compacted after the crash")
            new_version = store.snapshot(sid, summary, len(before), old_version).version
        snapshot_at = len(fs.trace)
        message: Message = UserMessage(content="appended after the crash")
        sequence = store.append(sid, message)
        fail(
            sequence == len(before) + 1,
            f"{sid}: append after the crash got {sequence}, expected {len(before) + 1}",
        )
        after = [r.message for r in store.records(sid)]
        fail(
            after == [*before, message],
            f"{sid}: append after the crash did not land after the recovered records",
        )
        resumed[sid] = _Resumed(before, least, message, len(fs.trace), old_version, new_version, snapshot_at)
    store.close()
    return resumed


def _check_resume_crashed(
    state: CrashState, root: str, durability: Durability, resumed: dict[str, _Resumed], volatile: bool
) -> None:
    """A crash while resuming (a snapshot, then an append that cuts a damaged tail) loses nothing."""
    fs = state.filesystem(volatile=volatile)
    store = _store(fs, root, durability)
    expect_new = durability == "fsync" or state.kind == "process"
    for sid, resume in resumed.items():
        records = list(store.records(sid))
        sequences = [r.sequence for r in records]
        fail(sequences == list(range(1, len(records) + 1)), f"{sid}: raw log sequences are {sequences}")
        messages = [r.message for r in records]
        whole = [*resume.before, resume.message]
        fail(
            messages == whole[: len(messages)] and len(messages) >= (resume.least if expect_new else 0),
            f"{sid}: records recovered before the append were changed or lost",
        )
        if expect_new and state.prefix >= resume.appended_at:
            fail(messages == whole, f"{sid}: the acknowledged append after the crash was lost")
        view = store.load(sid)
        version = view.snapshot.version if view.snapshot else 0
        # Only a snapshot the resume itself made was acknowledged to it; one it merely saw
        # (made by the crashed process, its name never fsynced) may still be lost.
        if expect_new and state.prefix >= resume.snapshot_at and resume.new_version != resume.old_version:
            fail(
                version == resume.new_version,
                f"{sid}: snapshot {resume.new_version}, acknowledged after the crash, was lost "
                f"(load() shows {version or 'none'}; problems: {[str(p) for p in view.problems]})",
            )
        store.repair(sid)
        again = store.repair(sid)
        fail(not again, f"{sid}: a second repair still finds {[str(p) for p in again]}")
        fail([r.message for r in store.records(sid)] == messages, f"{sid}: repair changed the records")
    store.close()


def check_crash_state(
    state: CrashState,
    result: WorkloadResult,
    *,
    root: str = "/store",
    durability: Durability = "fsync",
    recovery_states: int = 3,
    atomic_batches: bool = True,
    volatile_restart: bool = True,
    seed: int = 0,
) -> int:
    """Check that a fresh store recovers from ``state``; return how many states were checked.

    ``result`` is what `run_workload` returned for the run ``state`` was made from.
    Acknowledged records are required when ``durability="fsync"`` or the crash was a
    process crash; the other checks hold for every state. Then the recovery is itself
    crashed at up to ``recovery_states`` sampled points, twice over: a `repair` run
    (each such state checked the same way), and a resumed session (an append, which cuts
    a damaged tail, after a snapshot of what was recovered): records recovered before must stay, and
    what the resumed run had acknowledged must be there. After a process crash, what was
    not yet synced stays volatile through the restart (`CrashState.filesystem`).
    ``volatile_restart=False`` makes a process crash's state all durable at the restart
    (a weaker model); ``atomic_batches=False`` tolerates an `append_many` batch present
    in part.

    Raises `RecoveryFailure` saying what failed, with the state and its trace.
    """
    acked = durability == "fsync" or state.kind == "process"
    expect = Expect(result, state.prefix, acked, atomic_batches)
    current: CrashState | None = None
    try:
        recovery = state.filesystem(volatile=volatile_restart)
        _check_repair(recovery, root, durability, expect)
        resumed = state.filesystem(volatile=volatile_restart)
        sessions = _check_resume(resumed, root, durability, expect)
        checked = 1
        for current in _sample(recovery, recovery_states, seed):
            # Under durability="none" a power loss after the restart may lose what the
            # process crash had kept.
            again = expect.acked and (durability == "fsync" or current.kind == "process")
            nested = current.filesystem(volatile=volatile_restart)
            _check_repair(nested, root, durability, dataclasses.replace(expect, acked=again))
            checked += 1
        for current in _sample(resumed, recovery_states, seed + 1):
            _check_resume_crashed(current, root, durability, sessions, volatile_restart)
            checked += 1
    except Failed as exc:
        raise RecoveryFailure(str(exc), state, current) from None
    except Exception as exc:
        detail = "".join(traceback.format_exception(exc)[-6:])
        raise RecoveryFailure(f"the store raised {exc!r}\n{detail}", state, current) from exc
    return checked


def _sample(fs: SimulatedFileSystem, k: int, seed: int) -> list[CrashState]:
    """Crash states at ``k`` crash points of ``fs.trace`` chosen at random, one state each."""
    points = crash_points(fs)[1:]  # prefix 0 is the state itself, already checked
    if k <= 0 or not points:
        return []
    rng = random.Random(seed)
    chosen = set(rng.sample(points, min(k, len(points))))
    by_prefix: dict[int, list[CrashState]] = {}
    for state in crash_states(fs, prefixes=chosen, max_states_per_prefix=3, seed=seed):
        by_prefix.setdefault(state.prefix, []).append(state)
    return [rng.choice(by_prefix[p]) for p in sorted(by_prefix)]


def verify_recovery(
    fs: SimulatedFileSystem,
    result: WorkloadResult,
    *,
    root: str = "/store",
    durability: Durability = "fsync",
    start: int = 0,
    max_states_per_prefix: int = 8,
    max_tear_points: int = 3,
    recovery_states: int = 2,
    power: bool = True,
    atomic_batches: bool = True,
    volatile_restart: bool = True,
    seed: int = 0,
    on_state: Callable[[CrashState], None] | None = None,
) -> CheckCounts:
    """Check every crash state of ``fs.trace`` from prefix ``start`` with `check_crash_state`.

    ``fs`` is the simulated file system ``result``'s workload ran on. The bounds are
    `crash_states`'s; ``recovery_states`` is how many crashes of each recovery are
    checked on top. Returns the counts; raises `RecoveryFailure` at the first failure.
    """
    counts = CheckCounts()
    last_prefix = -1
    states = crash_states(
        fs,
        start=start,
        max_states_per_prefix=max_states_per_prefix,
        max_tear_points=max_tear_points,
        power=power,
        seed=seed,
    )
    for index, state in enumerate(states):
        if on_state is not None:
            on_state(state)
        checked = check_crash_state(
            state,
            result,
            root=root,
            durability=durability,
            recovery_states=recovery_states,
            atomic_batches=atomic_batches,
            volatile_restart=volatile_restart,
            seed=seed * 1_000_003 + index,
        )
        counts.states += 1
        counts.recovery_states += checked - 1
        if state.prefix != last_prefix:
            counts.prefixes += 1
            last_prefix = state.prefix
    return counts


def check_workload(
    workload: Sequence[Operation],
    *,
    root: str = "/store",
    durability: Durability = "fsync",
    max_states_per_prefix: int = 8,
    max_tear_points: int = 3,
    recovery_states: int = 2,
    power: bool | None = None,
    atomic_batches: bool = True,
    fault: Fault | None = None,
    continue_after_fault: bool = False,
    volatile_restart: bool = True,
    seed: int = 0,
) -> CheckCounts:
    """Run ``workload`` on a fresh simulated disk, then check every crash state of the run.

    The store root is created (and made durable) first; crashes are taken from the
    store's first call on. ``power`` defaults to checking power losses only under
    ``durability="fsync"`` (``"none"`` promises to survive process crashes only).
    With ``fault``, that I/O error is injected into the run, which stops at the first
    operation that fails (an agent that dies on an error); what the failed operation
    wrote may or may not be on disk, everything acknowledged before it must be. With
    ``continue_after_fault`` the run instead reopens the store and goes on, and what is
    acknowledged after the failure must be durable too.

    Raises `RecoveryFailure` for a state the store does not recover from, and
    ``AssertionError`` when an operation fails that should not (only `update_session`
    of a session never written may, and any operation once the fault fired).
    """
    from .._errors import SessionNotFound

    fs = SimulatedFileSystem()
    fs.makedirs(root)
    start = len(fs.trace)
    store = _store(fs, root, durability)
    if fault is not None:
        fs.inject(fault)
    result = run_workload(
        store,
        workload,
        fs=fs,
        stop_on_error=fault is not None and not continue_after_fault,
        reopen_on_error=continue_after_fault,
    )
    store.close()
    blamed = False
    for ack in result.acks:
        if ack.error is None or (
            isinstance(ack.op, UpdateSession) and isinstance(ack.error, SessionNotFound)
        ):
            continue
        if fs.faults_fired and not blamed:
            blamed = True  # the first failure is the injected fault's
            continue
        raise AssertionError(f"operation {ack.index} {ack.op!r} failed without a crash: {ack.error!r}")
    return verify_recovery(
        fs,
        result,
        root=root,
        durability=durability,
        start=start,
        max_states_per_prefix=max_states_per_prefix,
        max_tear_points=max_tear_points,
        recovery_states=recovery_states,
        power=durability == "fsync" if power is None else power,
        atomic_batches=atomic_batches,
        volatile_restart=volatile_restart,
        seed=seed,
    )
