"""Two processes racing `snapshot` with the same expected version: a cross-process CAS (issue 4)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jsonl_store import SessionStore

SID = "raced-session"
ROUNDS = 40


def test_two_processes_snapshotting_the_same_version_one_wins_the_other_gets_a_conflict(
    tmp_path: Path, children: Any
) -> None:
    """Of two racing snapshot() calls, exactly one wins each round; the other raises SnapshotConflict."""
    store = SessionStore(tmp_path)
    store.append(SID, {"role": "user", "content": "first"})
    racers = [
        children.start("snapshot_rounds", root=str(tmp_path), sid=SID, name=name) for name in ("a", "b")
    ]
    children.ready(*racers)
    winners = []
    for round_ in range(1, ROUNDS + 1):
        through = store.append(SID, {"role": "user", "content": f"round {round_}"})
        order = racers if round_ % 2 else racers[::-1]  # neither racer always hears first
        for racer in order:
            racer.send(f"{round_} {round_ - 1} {through}")
        answers = {name: racer.readline() for name, racer in zip("ab", racers, strict=True)}
        assert sorted(answers.values()) == ["conflict", f"won {round_}"], f"round {round_}: {answers}"
        winners.append(next(name for name, answer in answers.items() if answer != "conflict"))
    for racer in racers:
        racer.finish()
    # On disk: one snapshot file per round, each holding its winner's summary.
    for round_, winner in enumerate(winners, start=1):
        line = (tmp_path / SID / f"snapshot-{round_:08d}.json").read_bytes()
        assert json.loads(line)["compacted_message"]["id"] == f"{winner}:{round_}"
    view = SessionStore(tmp_path).load(SID)
    assert view.problems == []
    assert view.snapshot is not None and view.snapshot.version == ROUNDS
    assert view.snapshot.compacted_through_sequence == ROUNDS + 1
    assert view.raw_tail == []
    assert SessionStore(tmp_path).verify(SID) == []
