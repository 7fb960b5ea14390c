"""Many writers, one session: every append lands exactly once, in order (issue 4).

Each writer tags its messages ``writer:counter``; afterwards the raw log is read line by
line, so the checks see the file as it is, not as a forgiving reader reports it.
"""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from jsonl_store import SessionStore

SID = "shared-session"


def log_lines(root: Path, sid: str) -> list[dict[str, Any]]:
    """Every line of the session's raw log as JSON; each must be one whole record."""
    data = (root / sid / "messages.jsonl").read_bytes()
    assert data.endswith(b"\n"), "the raw log ends in a partial line"
    return [json.loads(line) for line in data.split(b"\n")[:-1]]


def assert_exactly_once_in_order(root: Path, sid: str, returned: dict[str, list[int]], count: int) -> None:
    """The log holds each writer's ``count`` messages once, in its order, at the sequences returned."""
    lines = log_lines(root, sid)
    sequences = [line["sequence"] for line in lines]
    assert sequences == list(range(1, len(lines) + 1)), "sequences are not 1..n in file order"
    assert len(lines) == count * len(returned)
    by_writer: dict[str, list[tuple[int, int]]] = {writer: [] for writer in returned}
    for line in lines:
        writer, counter = line["message"]["id"].rsplit(":", 1)
        by_writer[writer].append((int(counter), line["sequence"]))
    for writer, found in by_writer.items():
        assert [counter for counter, _ in found] == list(range(count)), (
            f"writer {writer}: lost, doubled or reordered"
        )
        assert [sequence for _, sequence in found] == returned[writer], (
            f"writer {writer}: returned sequences differ"
        )
    # The writers really overlapped: otherwise this test proved nothing about contention.
    owners = [line["message"]["id"].rsplit(":", 1)[0] for line in lines]
    switches = sum(a != b for a, b in pairwise(owners))
    assert switches >= len(returned), "the writers never interleaved; the run did not exercise contention"
    store = SessionStore(root)
    view = store.load(sid)
    assert view.problems == []
    assert [record.sequence for record in view.raw_tail] == sequences
    assert store.verify(sid) == []
    assert store.get_session(sid).message_count == len(lines)  # type: ignore[union-attr]


@pytest.mark.parametrize("durability", ["fsync", "none"])
def test_processes_appending_random_batches_store_each_record_once_in_writer_order(
    tmp_path: Path, children: Any, durability: str
) -> None:
    """Four processes appending random batches (append, append_many) lose, double and reorder nothing."""
    count = 500 if durability == "fsync" else 4000
    writers = [
        children.start(
            "append",
            root=str(tmp_path),
            sid=SID,
            durability=durability,
            writers=[f"p{p}"],
            count=count,
            seed=p,
            batch_max=8,
            shared_store=True,
        )
        for p in range(4)
    ]
    children.go(*writers)
    returned: dict[str, list[int]] = {}
    for writer in writers:
        returned.update(writer.result())
    assert_exactly_once_in_order(tmp_path, SID, returned, count)


@pytest.mark.parametrize(
    ("shared_store", "durability"),
    [(True, "fsync"), (False, "none")],
    ids=["one-store-per-process-fsync", "one-store-per-thread-none"],
)
def test_threads_in_several_processes_appending_store_each_record_once_in_writer_order(
    tmp_path: Path, children: Any, shared_store: bool, durability: str
) -> None:
    """Two processes of three appending threads each lose, double and reorder nothing."""
    count = 250 if durability == "fsync" else 1500
    writers = [
        children.start(
            "append",
            root=str(tmp_path),
            sid=SID,
            durability=durability,
            writers=[f"p{p}t{t}" for t in range(3)],
            count=count,
            seed=p,
            batch_max=6,
            shared_store=shared_store,
        )
        for p in range(2)
    ]
    children.go(*writers)
    returned: dict[str, list[int]] = {}
    for writer in writers:
        returned.update(writer.result())
    assert_exactly_once_in_order(tmp_path, SID, returned, count)


def test_processes_creating_one_new_session_at_once_agree_on_one_session(
    tmp_path: Path, children: Any
) -> None:
    """Four processes creating the same session at once make one log and one metadata file."""
    writers = [
        children.start(
            "append",
            root=str(tmp_path),
            sid="new-0",
            durability="fsync",
            writers=[f"p{p}"],
            count=5,
            seed=p,
            batch_max=2,
            shared_store=True,
        )
        for p in range(4)
    ]
    children.go(*writers)
    returned: dict[str, list[int]] = {}
    for writer in writers:
        returned.update(writer.result())
    lines = log_lines(tmp_path, "new-0")
    assert [line["sequence"] for line in lines] == list(range(1, 21))
    assert sorted(s for seqs in returned.values() for s in seqs) == list(range(1, 21))
    names = {p.name for p in (tmp_path / "new-0").iterdir()}
    assert {"meta.json", "messages.jsonl"} <= names <= {"meta.json", "messages.jsonl", ".lock"}
    assert SessionStore(tmp_path).verify("new-0") == []


@pytest.mark.parametrize("durability", ["fsync", "none"])
def test_reader_loading_while_processes_append_always_sees_a_clean_growing_prefix(
    tmp_path: Path, children: Any, durability: str
) -> None:
    """A process loading during concurrent appends never sees damage, a gap, or records vanish."""
    count = 600 if durability == "fsync" else 3000
    stop = tmp_path / "stop"
    SessionStore(tmp_path).append(SID, {"role": "user", "id": "start:0", "content": "start"})
    writers = [
        children.start(
            "append",
            root=str(tmp_path),
            sid=SID,
            durability=durability,
            writers=[f"p{p}"],
            count=count,
            seed=p,
            batch_max=10,
            shared_store=True,
        )
        for p in range(2)
    ]
    reader = children.start("log_reader", root=str(tmp_path), sid=SID, stop=str(stop))
    children.go(reader, *writers)
    for writer in writers:
        writer.result()
    stop.touch()
    seen = reader.result()
    assert seen["bad"] == []
    assert seen["counts"], "the reader read nothing"
    assert seen["counts"][-1] == 1 + 2 * count
