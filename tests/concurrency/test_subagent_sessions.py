"""Sub-agents in their own processes: child sessions name their parent, which never changes (issue 4)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import plain

from jsonl_store import ParentMismatch, SessionStore

PARENT = "parent-session"
SUBAGENTS = [f"sub-{n}" for n in range(3)]


def ids_in(root: Path, sid: str) -> list[str]:
    """The message ids of one session's raw log, in file order; sequences must be 1..n."""
    records = list(SessionStore(root).records(sid))
    assert [r.sequence for r in records] == list(range(1, len(records) + 1)), sid
    return [plain(r.message)["id"] for r in records]


def test_subagents_appending_while_their_parent_appends_are_listed_as_its_children(
    tmp_path: Path, children: Any
) -> None:
    """Sub-agent processes fill their sessions and report to the appending parent; all is listed and kept."""
    SessionStore(tmp_path).append(PARENT, {"role": "user", "id": "start", "content": "start"})
    agents = [
        children.start("subagent", root=str(tmp_path), sid=sid, parent=PARENT, count=40) for sid in SUBAGENTS
    ]
    parent = children.start("append_plain", root=str(tmp_path), sid=PARENT, name="parent", count=120)
    children.go(parent, *agents)
    for child in (parent, *agents):
        child.result()

    store = SessionStore(tmp_path)
    listed = store.list_sessions(parent_session_id=PARENT)
    assert sorted(s.session_id for s in listed) == SUBAGENTS
    for summary in listed:
        assert summary.parent_session_id == PARENT
        assert (summary.message_count, summary.agent_name) == (40, "helper")
        assert summary.title == f"Sub-agent {summary.session_id}"
        assert ids_in(tmp_path, summary.session_id) == [f"{summary.session_id}:{i}" for i in range(40)]
    assert store.list_sessions(parent_session_id=SUBAGENTS[0]) == []
    parent_ids = ids_in(tmp_path, PARENT)
    assert [i for i in parent_ids if i.startswith("parent:")] == [f"parent:{i}" for i in range(120)]
    assert sorted(i for i in parent_ids if i.endswith(":result")) == [f"{sid}:result" for sid in SUBAGENTS]
    assert len(parent_ids) == 1 + 120 + len(SUBAGENTS)
    assert store.verify() == []


def test_a_child_session_refuses_a_different_parent_from_another_process(
    tmp_path: Path, children: Any
) -> None:
    """Naming another parent for a sub-agent's session raises ParentMismatch and writes nothing."""
    agent = children.start("subagent", root=str(tmp_path), sid=SUBAGENTS[0], parent=PARENT, count=3)
    children.go(agent)
    agent.result()
    store = SessionStore(tmp_path)
    with pytest.raises(ParentMismatch) as caught:
        store.append(
            SUBAGENTS[0], {"role": "user", "content": "adopted?"}, parent_session_id="another-parent"
        )
    assert caught.value.session_id == SUBAGENTS[0]
    # A session made without a parent does not gain one later either.
    with pytest.raises(ParentMismatch):
        store.append(PARENT, {"role": "user", "content": "adopted?"}, parent_session_id="another-parent")
    summary = store.get_session(SUBAGENTS[0])
    assert summary is not None and (summary.parent_session_id, summary.message_count) == (PARENT, 3)
    assert store.get_session(PARENT).parent_session_id is None  # type: ignore[union-attr]
    assert store.list_sessions(parent_session_id="another-parent") == []


def test_two_processes_creating_one_session_under_different_parents_agree_on_one_parent(
    tmp_path: Path, children: Any
) -> None:
    """Two processes creating one session under different parents: one wins, the other gets ParentMismatch."""
    claimants = {
        parent: children.start("claim_parent_rounds", root=str(tmp_path), parent=parent)
        for parent in ("parent-a", "parent-b")
    }
    children.ready(*claimants.values())
    won: dict[str, list[str]] = {"parent-a": [], "parent-b": []}
    for round_ in range(25):
        sid = f"contested-{round_}"
        order = list(claimants.items()) if round_ % 2 else list(claimants.items())[::-1]
        for _, claimant in order:
            claimant.send(sid)
        answers = {parent: claimant.readline() for parent, claimant in order}
        assert sorted(answers.values()) == ["mismatch", "ok"], f"{sid}: {answers}"
        won[next(parent for parent, answer in answers.items() if answer == "ok")].append(sid)
    for claimant in claimants.values():
        claimant.finish()
    store = SessionStore(tmp_path)
    for parent, sids in won.items():
        assert sorted(s.session_id for s in store.list_sessions(parent_session_id=parent)) == sorted(sids)
        for sid in sids:
            assert ids_in(tmp_path, sid) == [f"{parent}:0"]
    assert store.verify() == []
