"""Crash-test your own code against every state a crash can leave on disk.

`SimulatedFileSystem` stands in for the operating system and records each change;
`crash_states` turns that record into the states a process crash or a power loss can
leave behind (each one a fresh file system, or a real directory via ``materialize``);
`run_workload` runs a list of store operations and keeps what was acknowledged;
`check_crash_state`, `verify_recovery` and `check_workload` check that a fresh store
recovers from each state. Hypothesis strategies (`workloads`, `messages`, ...) are in
`jsonl_store.testing.strategies`, which needs ``hypothesis``. Example::

    from jsonl_store import SessionStore, UserMessage
    from jsonl_store.testing import SimulatedFileSystem, crash_states

    fs = SimulatedFileSystem()
    store = SessionStore("/store", fs=fs)
    store.append("s", UserMessage(content="hello"))
    for state in crash_states(fs):
        resumed = SessionStore("/store", fs=state.filesystem())
        my_resume_code(resumed)  # must cope with every state
"""

from ._check import CheckCounts, RecoveryFailure, check_crash_state, check_workload, verify_recovery
from ._crash import CrashKind, CrashState, crash_points, crash_states
from ._simfs import Fault, SimStat, SimulatedFileSystem, load_directory
from ._trace import TraceEntry, format_trace
from ._workload import (
    Ack,
    Append,
    AppendMany,
    Operation,
    RecordUsage,
    Snapshot,
    UpdateSession,
    WorkloadResult,
    run_workload,
)
from .strategies import faults, json_values, messages, session_ids, texts, tool_batches, usages, workloads

__all__ = [
    "Ack",
    "Append",
    "AppendMany",
    "CheckCounts",
    "CrashKind",
    "CrashState",
    "Fault",
    "Operation",
    "RecordUsage",
    "RecoveryFailure",
    "SimStat",
    "SimulatedFileSystem",
    "Snapshot",
    "TraceEntry",
    "UpdateSession",
    "WorkloadResult",
    "check_crash_state",
    "check_workload",
    "crash_points",
    "crash_states",
    "faults",
    "format_trace",
    "json_values",
    "load_directory",
    "messages",
    "run_workload",
    "session_ids",
    "texts",
    "tool_batches",
    "usages",
    "verify_recovery",
    "workloads",
]
