"""A store dropped without close() gives its descriptors back: a process never runs out because of it."""

from __future__ import annotations

import gc
import os
from pathlib import Path

from jsonl_store import SessionStore, UserMessage


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_stores_dropped_without_close_release_their_descriptors(tmp_path: Path) -> None:
    """200 stores, each appending to 3 sessions and dropped unclosed: the descriptor count comes back."""
    before = open_descriptors()
    for n in range(200):
        store = SessionStore(tmp_path, durability="none")
        for sid in ("a", "b", "c"):
            store.append(f"{sid}{n % 7}", UserMessage(content="hi"))
            store.record_usage(f"{sid}{n % 7}", {"input_tokens": 1})
        del store
    gc.collect()
    assert open_descriptors() - before < 10


def test_a_closed_store_is_not_closed_twice(tmp_path: Path) -> None:
    """close() then finalization closes each descriptor once (a reused number is never closed by mistake)."""
    store = SessionStore(tmp_path, durability="none")
    store.append("s", UserMessage(content="hi"))
    store.close()
    keep = os.open(os.devnull, os.O_RDONLY)  # likely takes the number the log had
    try:
        del store
        gc.collect()
        os.fstat(keep)  # still open
    finally:
        os.close(keep)
