"""The store's own oracle: does a fresh store keep its promises in every crash state?

This is how jsonl_store tests itself (tests/crash, fuzz/crash_fuzz.py), public so that
anyone can run the same checks, on a new platform or against a change to the store. It
checks the store's promises, not your code's: to crash-test your own resume code, take
`crash_states` from `jsonl_store.testing` and assert what your code promises.

A workload is a list of operations (`Append`, `AppendMany`, `Snapshot`, `UpdateSession`,
`RecordUsage`; `jsonl_store.testing.strategies.workloads` draws them). `run_workload`
runs one on a store and keeps what each operation got back (`WorkloadResult`, one `Ack`
per operation); `check_crash_state` checks one crash state of that run with a fresh
store, `verify_recovery` every state of the trace, and `check_workload` does it all from
the workload on a fresh `SimulatedFileSystem`. The checks are listed in `_check`'s
docstring; a failure raises `RecoveryFailure` (an ``AssertionError``) naming the state
and its trace. Example::

    from jsonl_store import UserMessage
    from jsonl_store.testing.oracle import Append, Snapshot, check_workload

    workload = [Append("s", UserMessage(content="hi")), Snapshot("s", summary="Said hi.")]
    counts = check_workload(workload)  # raises RecoveryFailure for a state it fails
    assert counts.states > 0
"""

from ._check import CheckCounts, RecoveryFailure, check_crash_state, check_workload, verify_recovery
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

__all__ = [
    "Ack",
    "Append",
    "AppendMany",
    "CheckCounts",
    "Operation",
    "RecordUsage",
    "RecoveryFailure",
    "Snapshot",
    "UpdateSession",
    "WorkloadResult",
    "check_crash_state",
    "check_workload",
    "run_workload",
    "verify_recovery",
]
