"""The append path's file operations, counted on the simulated file system's trace.

Issue 2's speed promises are structural, so they are tested as such (no timings): one
write(2) per append or batch, at most one fdatasync, and nothing synced under "none".
"""

from __future__ import annotations

from jsonl_store import AssistantMessage, ModelUsage, SessionStore, UserMessage
from jsonl_store.store import Durability
from jsonl_store.testing import SimulatedFileSystem

ROOT = "/store"


def _ops_of(fs: SimulatedFileSystem, action: object) -> list[str]:
    start = len(fs.trace)
    assert callable(action)
    action()
    return [entry.op for entry in fs.trace[start:]]


def _warm(durability: Durability) -> tuple[SimulatedFileSystem, SessionStore]:
    fs = SimulatedFileSystem()
    store = SessionStore(ROOT, durability=durability, fs=fs)
    store.append("s", UserMessage(content="first: creates the session"))
    return fs, store


def test_durable_append_on_an_open_session_is_one_write_and_one_fdatasync() -> None:
    """An acknowledged append costs one write(2) and one fdatasync, nothing else that changes the disk."""
    fs, store = _warm("fsync")
    ops = _ops_of(
        fs, lambda: store.append("s", AssistantMessage(content="a"), usage=ModelUsage(input_tokens=3))
    )
    assert ops == ["write", "fdatasync"]


def test_append_many_is_one_write_and_one_fdatasync_for_the_whole_batch() -> None:
    """A batch of 64 records is written by one write(2) and made durable by one fdatasync (group commit)."""
    fs, store = _warm("fsync")
    batch = [UserMessage(content=f"message {i}") for i in range(64)]
    ops = _ops_of(fs, lambda: store.append_many("s", batch))
    assert ops == ["write", "fdatasync"]
    assert [r.sequence for r in store.records("s")] == list(range(1, 66))


def test_buffered_append_writes_once_and_never_syncs() -> None:
    """Under durability="none" an append is one write(2) and no fsync of any kind."""
    fs, store = _warm("none")
    assert _ops_of(fs, lambda: store.append("s", UserMessage(content="b"))) == ["write"]
    assert _ops_of(fs, lambda: store.append_many("s", [UserMessage(content="c")] * 3)) == ["write"]


def test_append_of_only_unpersisted_messages_touches_nothing() -> None:
    """Messages with persist=False are not written: no write, no fsync."""
    fs, store = _warm("fsync")
    ops = _ops_of(fs, lambda: store.append("s", UserMessage(content="ephemeral", persist=False)))
    assert ops == []


class _CountingFileSystem(SimulatedFileSystem):
    """Counts the bytes read, to prove what a call does not read."""

    read_bytes_total = 0

    def pread(self, fd: int, length: int, offset: int) -> bytes:
        data = super().pread(fd, length, offset)
        self.read_bytes_total += len(data)
        return data


def test_checkpoint_that_extends_a_long_history_reads_only_the_new_bytes() -> None:
    """A checkpoint adding one message to 2,000 stored ones reads a few KiB, not the whole log (O(new))."""
    fs = _CountingFileSystem()
    store = SessionStore(ROOT, durability="none", fs=fs)
    history: list[UserMessage] = [UserMessage(content=f"message {i} " + "x" * 200) for i in range(2000)]
    store.checkpoint("s", history)
    log_size = fs.stat(ROOT + "/s/messages.jsonl").st_size
    history.append(UserMessage(content="one more"))
    before = fs.read_bytes_total
    assert store.checkpoint("s", history) == [2001]
    read = fs.read_bytes_total - before
    assert log_size > 400_000 and read < 20_000, (log_size, read)
