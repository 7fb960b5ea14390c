"""Crash safety on the simulated disk: every crash point of a workload recovers (issue 3).

The fast slice of ``fuzz/crash_fuzz.py``: scripted agent sessions and a few dozen
hypothesis workloads, each crashed after every file-system call (process crash and power
loss) and checked with a fresh store by `jsonl_store.testing.oracle.check_crash_state`.
"""

from __future__ import annotations

import errno
from pathlib import Path

import pytest
from helpers import as_class
from hypothesis import HealthCheck, given, settings

from jsonl_store import (
    AssistantMessage,
    CompactedMessage,
    DurabilityError,
    JsonlStoreError,
    ModelUsage,
    SessionStore,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from jsonl_store.testing import CrashState, Fault, SimulatedFileSystem, crash_states
from jsonl_store.testing.oracle import (
    Append,
    AppendMany,
    Operation,
    RecordUsage,
    RecoveryFailure,
    Snapshot,
    UpdateSession,
    WorkloadResult,
    check_crash_state,
    check_workload,
    run_workload,
    verify_recovery,
)
from jsonl_store.testing.strategies import workloads

ROOT = "/store"
FAST = settings(max_examples=15, deadline=None, database=None, suppress_health_check=list(HealthCheck))
#: Whether a process crash's unsynced changes stay volatile through the restart (the full
#: model: the next process must make durable what the crashed one left in the page cache).
VOLATILE_RESTART = True


def _agent_turns(sid: str = "chat") -> list[Operation]:
    """A realistic session: a turn, a tool batch one append at a time, a batch, a compaction."""
    call = AssistantMessage(
        id="a1", tool_calls=[ToolCall(id="c1", name="bash"), ToolCall(id="c2", name="read")]
    )
    return [
        Append(sid, UserMessage(id="u1", content="list the files\nplease"), title="files", request_id="r1"),
        Append(sid, call, request_id="r1", usage=ModelUsage(input_tokens=10, output_tokens=5)),
        Append(sid, ToolMessage(id="t1", tool_call_id="c1", content="a.txt\nb.txt")),
        Append(sid, ToolMessage(id="t2", tool_call_id="c2", content="\u2028\x00")),
        AppendMany(
            sid,
            (
                {"role": "assistant", "content": None, "tool_calls": [{"id": "c3", "type": "function"}]},
                {"role": "tool", "tool_call_id": "c3", "content": "ok", "big": 2**80},
            ),
        ),
        RecordUsage(sid, ModelUsage(input_tokens=10, output_tokens=5), model="m-1"),
        Snapshot(sid, "the user listed files", through=0.5),
        UpdateSession(sid, title="renamed", metadata={"k": 1}),
        Append(sid, AssistantMessage(id="a2", content="done")),
    ]


def _run(
    workload: list[Operation], durability: str = "fsync"
) -> tuple[SimulatedFileSystem, int, WorkloadResult]:
    """Run ``workload`` on a fresh simulated disk; return it, where the run began, and the acks."""
    fs = SimulatedFileSystem()
    fs.makedirs(ROOT)
    start = len(fs.trace)
    store = SessionStore(ROOT, durability="fsync" if durability == "fsync" else "none", fs=fs)
    result = run_workload(store, workload, fs=fs)
    store.close()
    assert all(ack.ok for ack in result.acks), [ack.error for ack in result.acks]
    return fs, start, result


# ---------------------------------------------------------------------------------------
# Scripted sessions
# ---------------------------------------------------------------------------------------


def test_agent_session_recovers_from_every_power_loss() -> None:
    """Every crash point of a tool-using session keeps all acknowledged records and a valid context."""
    counts = check_workload(_agent_turns(), max_states_per_prefix=12, volatile_restart=VOLATILE_RESTART)
    assert counts.states > 3 * counts.prefixes > 100 and counts.recovery_states > 0


def test_agent_session_without_fsync_survives_every_process_crash() -> None:
    """durability='none' loses nothing acknowledged when only the process dies."""
    counts = check_workload(_agent_turns(), durability="none", volatile_restart=VOLATILE_RESTART)
    assert counts.states == counts.prefixes > 20


def test_two_sessions_interleaved_recover_independently() -> None:
    """Crashes in one session's write never cost the other session an acknowledged record."""
    one, two = _agent_turns("one"), _agent_turns("two")
    interleaved = [op for pair in zip(one, two, strict=True) for op in pair]
    check_workload(interleaved, max_states_per_prefix=4, recovery_states=1, volatile_restart=VOLATILE_RESTART)


def test_recovery_interrupted_by_a_second_crash_still_recovers() -> None:
    """A torn tail is cut by repair; crashing that repair at every call still recovers."""
    fs, start, result = _run(_agent_turns()[:3])
    torn = [
        s
        for s in crash_states(fs, start=start, max_states_per_prefix=20)
        if s.kind == "power" and "torn" in s.description
    ]
    assert torn
    checked = sum(
        check_crash_state(s, result, recovery_states=50, volatile_restart=VOLATILE_RESTART) for s in torn[-3:]
    )
    assert checked > 3 * 5


def test_append_many_is_all_or_nothing_after_power_loss() -> None:
    """A batch torn by a power loss is read back whole or not at all."""
    batch = AppendMany("s", (UserMessage(id="u", content="q"), AssistantMessage(id="a", content="a")))
    workload: list[Operation] = [Append("s", UserMessage(id="u0", content="first")), batch]
    check_workload(workload, atomic_batches=True, volatile_restart=VOLATILE_RESTART)


def test_torn_metadata_does_not_block_the_next_append() -> None:
    """After a power loss tears meta.json, appending to the session still works."""
    fs, start, _ = _run([Append("s", UserMessage(id="u", content="hi"))], durability="none")
    for state in crash_states(fs, start=start, process=False, max_states_per_prefix=30):
        store = SessionStore(ROOT, durability="none", fs=state.filesystem())
        sequence = store.append("s", UserMessage(id="after", content="again"))
        records = list(store.records("s"))
        assert [r.sequence for r in records] == list(range(1, sequence + 1)), state.description
        assert as_class(records[-1].message).id == "after" and store.get_session("s") is not None


# ---------------------------------------------------------------------------------------
# Store bugs the simulator found, kept as regression tests
# ---------------------------------------------------------------------------------------


def _records_after_power_loss(fs: SimulatedFileSystem, start: int, sid: str = "s") -> list[list[int]]:
    """The sequences a fresh store reads in each power-loss state after trace prefix ``start``."""
    return [
        [r.sequence for r in SessionStore(ROOT, fs=state.filesystem()).records(sid)]
        for state in crash_states(fs, start=start, process=False, max_states_per_prefix=30)
    ]


def test_log_created_just_before_a_process_crash_is_durable_after_the_restart() -> None:
    """Appends acknowledged after a restart survive a power loss, however the last run died."""
    fs, _, _ = _run([Append("s", UserMessage(id="u0", content="first"))])
    created = next(e.index for e in fs.trace if e.op == "open" and "messages.jsonl" in e.detail)
    state = next(s for s in crash_states(fs, prefixes={created + 1}) if s.kind == "process")
    restarted = state.filesystem()  # the new entry is still only in the page cache
    assert SessionStore(ROOT, fs=restarted).append("s", UserMessage(id="u1", content="again")) == 1
    assert [] not in _records_after_power_loss(restarted, len(restarted.trace))


@pytest.mark.parametrize("directory", [ROOT, ROOT + "/s"], ids=["session-dir", "log-file"])
def test_failed_directory_fsync_is_not_forgotten_by_later_appends(directory: str) -> None:
    """After a failed directory fsync, what later appends acknowledge survives a power loss."""
    fs = SimulatedFileSystem()
    fs.makedirs(ROOT)
    store = SessionStore(ROOT, fs=fs)
    # /store: .gitignore, then the new session directory; /store/s: meta.json, then the log.
    fs.inject(Fault("fsync_dir", errno.EIO, after=1, path=directory))
    with pytest.raises(OSError):
        store.append("s", UserMessage(id="u0", content="lost with the failed fsync"))
    acknowledged = [store.append("s", UserMessage(id=f"u{i}", content="kept")) for i in (1, 2)]
    store.close()
    assert acknowledged == [1, 2]
    assert all(seen == [1, 2] for seen in _records_after_power_loss(fs, len(fs.trace)))


def test_snapshot_never_outlives_its_boundary_record() -> None:
    """A snapshot acknowledged after a failed append fsync survives a power loss."""
    fs = SimulatedFileSystem()
    store = SessionStore(ROOT, fs=fs)
    fs.inject(Fault("fdatasync", errno.EIO, path=ROOT + "/s/messages.jsonl"))
    with pytest.raises(DurabilityError):
        store.append("s", UserMessage(id="u0", content="written, fsync failed"))
    store.close()  # reopen, as the DurabilityError asks
    version = store.snapshot("s", CompactedMessage(id="c", content="summary"), 1, 0).version
    start = len(fs.trace)
    for state in crash_states(fs, start=start, process=False, max_states_per_prefix=30):
        view = SessionStore(ROOT, fs=state.filesystem()).load("s")
        assert view.snapshot is not None and view.snapshot.version == version, state.description


def test_failed_log_creation_leaks_no_descriptor() -> None:
    """A log creation that fails on the directory fsync leaves no descriptor open."""
    fs = SimulatedFileSystem()
    store = SessionStore(ROOT, fs=fs)
    fs.inject(Fault("fsync_dir", errno.EIO, after=1, path=ROOT + "/s"))
    with pytest.raises(OSError):
        store.append("s", UserMessage(id="u0", content="x"))
    store.close()
    assert fs.open_fds() == {}


# ---------------------------------------------------------------------------------------
# Random workloads
# ---------------------------------------------------------------------------------------


@FAST
@given(workloads(max_steps=6))
def test_random_workloads_recover_from_every_power_loss(workload: list[Operation]) -> None:
    """Any workload, crashed anywhere under fsync durability, recovers every acknowledged thing."""
    check_workload(
        workload,
        max_states_per_prefix=4,
        max_tear_points=2,
        recovery_states=1,
        volatile_restart=VOLATILE_RESTART,
    )


@FAST
@given(workloads(max_steps=8))
def test_random_workloads_without_fsync_survive_process_crashes(workload: list[Operation]) -> None:
    """Any workload under durability='none' loses nothing acknowledged to a process crash."""
    check_workload(workload, durability="none", recovery_states=1, volatile_restart=VOLATILE_RESTART)


# ---------------------------------------------------------------------------------------
# The checker has teeth
# ---------------------------------------------------------------------------------------


class _LyingDisk(SimulatedFileSystem):
    """A disk whose fdatasync returns at once without syncing (what some USB drives do)."""

    def fdatasync(self, fd: int) -> None:
        self.fstat(fd)


class _ForgetfulDirectories(SimulatedFileSystem):
    """A file system on which the store's directory fsyncs do nothing."""

    def fsync_dir(self, path: str) -> None:
        self.stat(path)


@pytest.mark.parametrize("disk", [_LyingDisk, _ForgetfulDirectories])
def test_checker_catches_a_store_whose_syncs_do_nothing(disk: type[SimulatedFileSystem]) -> None:
    """With syncs that do nothing, the checker reports a power loss the store does not survive."""
    fs = disk()
    fs.makedirs(ROOT)
    start = len(fs.trace)
    workload = _agent_turns()[:2]
    result = run_workload(SessionStore(ROOT, fs=fs), workload, fs=fs)
    with pytest.raises(RecoveryFailure) as failure:
        verify_recovery(fs, result, start=start, volatile_restart=VOLATILE_RESTART)
    # A power loss straight away, or one after a process crash (whose unsynced changes the
    # restart model keeps volatile): either way the lie is caught, with the trace.
    assert failure.value.state.kind in ("power", "process")
    assert "power" in str(failure.value) and "trace:" in str(failure.value)


def test_checker_catches_a_record_changed_after_it_was_acknowledged() -> None:
    """A record changed on disk after it was acknowledged is reported with its sequence."""
    fs, start, result = _run(_agent_turns()[:2])
    state = next(s for s in crash_states(fs, start=start) if s.prefix == len(fs.trace))
    crashed = state.filesystem()
    log = ROOT + "/chat/messages.jsonl"
    data = crashed.read_bytes(log).replace(b"list the files", b"list the filez")
    crashed.write_file(log, data)
    tampered = CrashState(state.prefix, state.kind, "tampered", crashed.image(), state.trace)
    with pytest.raises(RecoveryFailure, match="sequences are \\[2\\]"):
        check_crash_state(tampered, result, volatile_restart=VOLATILE_RESTART)


# ---------------------------------------------------------------------------------------
# The simulator as a product: crash states on a real disk
# ---------------------------------------------------------------------------------------


def test_crash_state_materialized_on_disk_opens_with_the_real_store(tmp_path: Path) -> None:
    """A torn-tail crash state written to a real directory reads back with the os file system."""
    fs, start, _ = _run(_agent_turns()[:4])
    state = next(
        s
        for s in crash_states(fs, start=start, max_states_per_prefix=20)
        if "messages.jsonl: last of" in s.description and "torn" in s.description
    )
    state.materialize(tmp_path / "disk")
    real = SessionStore(tmp_path / "disk" / ROOT.strip("/"))
    simulated = SessionStore(ROOT, fs=state.filesystem())
    assert [r.message for r in real.records("chat")] == [r.message for r in simulated.records("chat")]
    assert (
        [p.kind for p in real.repair("chat")] == [p.kind for p in simulated.repair("chat")] == ["torn-tail"]
    )
    assert real.verify("chat") == []


def test_store_reports_a_failed_fsync_and_refuses_further_appends() -> None:
    """An fsync that fails raises, and the session's writer refuses appends until reopened."""
    from jsonl_store import DurabilityError

    fs = SimulatedFileSystem()
    store = SessionStore(ROOT, fs=fs)
    store.append("s", UserMessage(id="u1", content="one"))
    fs.fail_next("fdatasync", errno.EIO)
    with pytest.raises(DurabilityError):
        store.append("s", UserMessage(id="u2", content="two"))
    with pytest.raises(DurabilityError):
        store.append("s", UserMessage(id="u3", content="three"))
    store.close()
    assert store.append("s", UserMessage(id="u4", content="four")) >= 2


def test_store_leaves_nothing_half_written_when_the_disk_fills() -> None:
    """A short write (disk full) mid-record leaves no partial line for a later reader or writer."""
    fs = SimulatedFileSystem()
    store = SessionStore(ROOT, fs=fs)
    store.append("s", UserMessage(id="u1", content="one"))
    fs.fail_next("write", short_write=7)
    with pytest.raises(JsonlStoreError):
        store.append("s", UserMessage(id="u2", content="two"))
    assert fs.read_bytes(ROOT + "/s/messages.jsonl").endswith(b"\n")
    store.close()
    assert store.append("s", UserMessage(id="u3", content="three")) == 2
    assert [r.sequence for r in SessionStore(ROOT, fs=fs).records("s")] == [1, 2]


@pytest.mark.parametrize("durability", ["fsync", "none"])
def test_store_closes_every_descriptor_it_opens(durability: str) -> None:
    """After a workload and close(), no descriptor is left open on the simulated disk."""
    fs = SimulatedFileSystem()
    store = SessionStore(ROOT, durability="fsync" if durability == "fsync" else "none", fs=fs)
    run_workload(store, _agent_turns(), fs=fs)
    store.close()
    assert fs.open_fds() == {}
