"""Crash-test your own code against every state a crash can leave on disk.

`SimulatedFileSystem` stands in for the operating system (``SessionStore(root,
fs=SimulatedFileSystem())``) and records each change; `crash_states` turns that record
into the states a process crash or a power loss can leave behind; `run_workload` runs a
list of store operations and keeps what was acknowledged; `check_crash_state` and
`verify_recovery` check that a fresh store recovers from each state. Strategies for
hypothesis are in `jsonl_store.testing.strategies` (re-exported here).
"""

from ._check import CheckCounts, RecoveryFailure, check_crash_state, check_workload, verify_recovery
from ._crash import CrashKind, CrashState, crash_points, crash_states
from ._simfs import Fault, SimStat, SimulatedFileSystem, TraceEntry, format_trace, load_directory
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
