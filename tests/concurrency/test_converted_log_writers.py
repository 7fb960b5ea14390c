"""Writers of several processes meeting a converted log: one restores it, none loses a record (§9.3)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from jsonl_store import SessionStore
from jsonl_store._format.names import LOG_NAME
from jsonl_store.testing.damage import crlf

SID = "converted"


def test_processes_appending_to_a_crlf_log_at_once_keep_every_record(tmp_path: Path, children: Any) -> None:
    """Three processes race their first appends into a log git converted: nothing cut, nothing lost."""
    store = SessionStore(tmp_path)
    for n in range(50):
        store.append(SID, {"role": "user", "id": f"old:{n}", "content": f"before the clone {n}"})
    store.close()
    log = tmp_path / SID / LOG_NAME
    written = log.read_bytes()
    log.write_bytes(crlf(written))
    writers = [
        children.start(
            "append", root=str(tmp_path), sid=SID, writers=[name], count=40, batch_max=4, seed=name,
            shared_store=False,
        )
        for name in ("a", "b", "c")
    ]  # fmt: skip
    children.go(*writers)
    results = [writer.result() for writer in writers]
    data = log.read_bytes()
    assert data.startswith(written) and b"\r" not in data  # restored once, then appended to
    assert not [name for name in os.listdir(tmp_path / SID) if ".cut-" in name]
    ids = [r.message["id"] for r in SessionStore(tmp_path).records(SID)]  # type: ignore[index]
    assert ids[:50] == [f"old:{n}" for n in range(50)]
    assert sorted(ids[50:]) == sorted(f"{w}:{n}" for w in "abc" for n in range(40))
    returned = sorted(s for result in results for sequences in result.values() for s in sequences)
    assert returned == list(range(51, 51 + 120))
    assert SessionStore(tmp_path).verify(SID) == []
