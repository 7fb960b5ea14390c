"""A UI renaming a session while its runtime appends and keeps its bookkeeping (issue 4)."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path
from typing import Any

from helpers import plain

from jsonl_store import SessionStore

SID = "busy-session"
UI_UPDATES = 40
RUNTIME_STEPS = 60


def test_ui_renaming_while_runtime_appends_and_updates_metadata_clobbers_nothing(
    tmp_path: Path, children: Any
) -> None:
    """The UI's last title, pin and colour win; every runtime key and message survives; versions only grow."""
    store = SessionStore(tmp_path)
    store.append(SID, {"role": "user", "content": "hello"})
    stop = tmp_path / "stop"
    ui = children.start("ui", root=str(tmp_path), sid=SID, count=UI_UPDATES)
    runtime = children.start("runtime", root=str(tmp_path), sid=SID, count=RUNTIME_STEPS)
    reader = children.start("meta_reader", root=str(tmp_path), sid=SID, stop=str(stop))
    children.go(ui, runtime, reader)
    ui_seen, runtime_seen = ui.result(), runtime.result()
    stop.touch()
    reader_seen = reader.result()

    summary = SessionStore(tmp_path).get_session(SID)
    assert summary is not None
    last = UI_UPDATES - 1
    assert summary.title == f"UI title {last}"
    assert summary.pinned == (last % 2 == 0)
    assert summary.metadata == {"color": f"ui-{last}", **{f"step.{s}": s for s in range(RUNTIME_STEPS)}}
    # Every UI update changed something, so each one bumped the version once.
    assert [v for v, _, _ in ui_seen] == sorted({v for v, _, _ in ui_seen})
    assert summary.version >= UI_UPDATES + RUNTIME_STEPS
    # What each process saw only ever moved forward, field by field.
    for seen in (ui_seen, runtime_seen, reader_seen["raw"], reader_seen["summary"]):
        for before, after in pairwise(seen):
            assert all(a <= b for a, b in zip(before, after, strict=True)), (before, after)
    assert all(b[0] <= summary.version for b in reader_seen["raw"])
    # The file on disk is whole and says the same.
    meta = json.loads((tmp_path / SID / "meta.json").read_bytes())
    assert (meta["version"], meta["title"], meta["metadata"]) == (
        summary.version,
        summary.title,
        summary.metadata,
    )
    # The runtime's messages are all there, once, in order.
    messages = [plain(r.message) for r in SessionStore(tmp_path).records(SID)]
    ids = [m["id"] for m in messages if "id" in m]
    assert ids == [f"runtime:{s}" for s in range(RUNTIME_STEPS)]
    assert SessionStore(tmp_path).verify(SID) == []


def test_two_processes_updating_with_the_same_expected_version_one_wins_the_other_gets_a_conflict(
    tmp_path: Path, children: Any
) -> None:
    """Of two update_session(expected_version=v) calls, one wins; the other gets MetadataConflict."""
    SessionStore(tmp_path).append(SID, {"role": "user", "content": "hello"})
    racers = [
        children.start("meta_cas_rounds", root=str(tmp_path), sid=SID, name=name) for name in ("a", "b")
    ]
    children.ready(*racers)
    titles = []
    for round_ in range(30):
        for racer in racers if round_ % 2 else racers[::-1]:
            racer.send(f"{round_} {round_}")
        answers = {name: racer.readline() for name, racer in zip("ab", racers, strict=True)}
        assert sorted(answers.values()) == ["conflict", f"won {round_ + 1}"], f"round {round_}: {answers}"
        titles.append(next(f"{name} {round_}" for name, answer in answers.items() if answer != "conflict"))
    for racer in racers:
        racer.finish()
    summary = SessionStore(tmp_path).get_session(SID)
    assert summary is not None and (summary.version, summary.title) == (30, titles[-1])
