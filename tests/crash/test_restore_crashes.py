"""A writer restoring a converted log (spec §9.3) can crash at any step and lose no record.

The restore is a whole-file rewrite: a new file, synced, renamed over the log. Every state
a process crash or a power loss can leave during it, and during the append after it, is
built by the crash simulator; in each one a fresh store must read every record that was
there before, and its own first append must keep them all.
"""

from __future__ import annotations

from jsonl_store import SessionStore, UserMessage
from jsonl_store._format.names import LOG_NAME
from jsonl_store.testing import SimulatedFileSystem, crash_states
from jsonl_store.testing.damage import crlf

SID = "s"
LOG = f"/store/{SID}/{LOG_NAME}"


def _converted_store() -> tuple[SimulatedFileSystem, list[str]]:
    fs = SimulatedFileSystem()
    store = SessionStore("/store", fs=fs)
    ids = [f"m{n}" for n in range(5)]
    for message_id in ids:
        store.append(SID, UserMessage(id=message_id, content=f"text {message_id}"))
    store.close()
    # A git checkout with core.autocrlf=true: the file is replaced, durably, with CRLF ends.
    fs.write_file(LOG, crlf(fs.read_bytes(LOG)), durable=True)
    return SimulatedFileSystem(fs.image()), ids


def test_every_crash_state_of_a_restore_and_append_keeps_every_record() -> None:
    """Crash anywhere in the restoring append: every earlier record survives, and recovery keeps them."""
    fs, ids = _converted_store()
    store = SessionStore("/store", fs=fs, on_problem=lambda problem: None)
    store.append(SID, UserMessage(id="new", content="after the restore"))
    states = 0
    for state in crash_states(fs):
        states += 1
        resumed = SessionStore("/store", fs=state.filesystem(), on_problem=lambda problem: None)
        found = [r.message.id for r in resumed.records(SID)]  # type: ignore[union-attr]
        assert found[: len(ids)] == ids, state.description
        assert found[len(ids) :] in ([], ["new"]), state.description
        # Recovery: the next writer restores (or finds restored) and keeps everything.
        resumed.append(SID, UserMessage(id="later", content="after the crash"))
        again = [r.message.id for r in resumed.records(SID)]  # type: ignore[union-attr]
        assert again == [*found, "later"], state.description
    assert states > 10
