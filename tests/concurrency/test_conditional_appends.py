"""Conditional appends (``expected_last_sequence``) and `create_session` across real processes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jsonl_store import SessionStore

SID = "stack"


def test_four_processes_popping_one_stack_each_take_a_different_record(tmp_path: Path, children: Any) -> None:
    """Pops built on expected_last_sequence never take one record twice (no m7, m6, m6, m6)."""
    store = SessionStore(tmp_path, durability="none")
    store.append_many(SID, [{"role": "user", "content": f"push {i}"} for i in range(40)])
    pops = [
        children.start("pop_rounds", root=str(tmp_path), sid=SID, name=f"p{k}", count=8, durability="none")
        for k in range(4)
    ]
    children.go(*pops)
    results = [p.result() for p in pops]
    popped = [seq for r in results for seq in r["popped"]]
    assert len(popped) == 32
    assert len(set(popped)) == 32  # every record taken once
    assert sorted(popped) == list(range(9, 41))  # the top 32 of the stack
    records = list(SessionStore(tmp_path).records(SID))
    assert [r.sequence for r in records] == list(range(1, 73))  # 40 pushes and 32 pops, no gap
    assert SessionStore(tmp_path).verify(SID) == []


def test_two_processes_creating_one_session_agree_on_one_metadata_file(tmp_path: Path, children: Any) -> None:
    """Concurrent create_session calls make one session: both get the same creation time and title."""
    makers = [
        children.start("create", root=str(tmp_path), sid="fresh", title=f"by {k}", durability="none")
        for k in range(2)
    ]
    children.go(*makers)
    first, second = (m.result() for m in makers)
    assert first == second
    summary = SessionStore(tmp_path).get_session("fresh")
    assert summary is not None
    assert summary.title == first["title"]
    assert summary.message_count == 0
