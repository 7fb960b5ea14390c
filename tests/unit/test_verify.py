"""Scenario tests for verify() (changes nothing) and repair() (idempotent) on a damaged store."""

from __future__ import annotations

import os
from pathlib import Path

from helpers import (
    line_starts,
    log_path,
    meta_path,
    read_tree,
    snapshot_path,
    usage_path,
)

from jsonl_store import CompactedMessage, ModelUsage, SessionStore, UserMessage
from jsonl_store._format.names import DAMAGED_SUFFIX, snapshot_name
from jsonl_store.testing.damage import damage_file, flip, garbage, tear


def user(text: str) -> UserMessage:
    """A user turn."""
    return UserMessage(content=text)


def damaged_store(root: Path) -> SessionStore:
    """A store with every kind of damage: torn tails, mid-log damage, bad snapshot, bad meta, temp files."""
    store = SessionStore(root, durability="none", on_problem=lambda p: None)
    for i in range(1, 7):
        store.append("s", user(str(i)))
    store.snapshot("s", CompactedMessage(content="a"), 2, 0)
    store.snapshot("s", CompactedMessage(content="b"), 4, 1)
    store.record_usage("s", ModelUsage(input_tokens=1))
    store.record_usage("s", ModelUsage(input_tokens=2))
    store.append("t", user("x"), title="t")
    store.append("healthy", user("fine"))
    log = log_path(root, "s").read_bytes()
    damage_file(log_path(root, "s"), flip, line_starts(log)[4] + 30)  # mid-log: record 5
    damage_file(log_path(root, "s"), garbage)  # torn tail
    damage_file(usage_path(root, "s"), tear, -5)  # torn usage tail
    damage_file(snapshot_path(root, "s", 2), flip, 40)  # bad snapshot
    (root / "s" / "meta.json.0123abcd.tmp").write_bytes(b"half a meta")  # leftover temp file
    damage_file(meta_path(root, "t"), tear, 20)  # damaged metadata
    store.close()
    return SessionStore(root, durability="none", on_problem=lambda p: None)


def test_verify_reports_every_problem_and_changes_nothing(root: Path) -> None:
    """verify() names each problem with its action, and leaves every byte and name as it was."""
    store = damaged_store(root)
    before = read_tree(root)
    problems = store.verify()
    assert read_tree(root) == before
    kinds = {(os.path.basename(p.path), p.kind) for p in problems}
    assert ("messages.jsonl", "damaged-line") in kinds
    assert ("messages.jsonl", "torn-tail") in kinds
    assert ("usage.jsonl", "torn-tail") in kinds
    assert (snapshot_name(2), "bad-snapshot") in kinds
    assert ("meta.json.0123abcd.tmp", "leftover-temp") in kinds
    assert ("meta.json", "bad-meta") in kinds
    assert not any("healthy" in p.path for p in problems)
    assert store.verify("s") == [p for p in problems if f"{os.sep}s{os.sep}" in p.path]
    assert store.verify("healthy") == []
    assert read_tree(root) == before


def test_verify_reports_the_offset_of_mid_log_damage(root: Path) -> None:
    """The damaged line is reported with its byte offset and line number."""
    store = SessionStore(root, durability="none")
    for i in range(3):
        store.append("s", user(str(i)))
    starts = line_starts(log_path(root, "s").read_bytes())
    damage_file(log_path(root, "s"), flip, starts[1] + 5)
    (problem,) = [p for p in store.verify("s") if p.kind == "damaged-line"]
    assert (problem.offset, problem.line) == (starts[1], 2)
    assert problem.action.startswith("none")


def test_verify_of_an_empty_or_missing_root_is_empty(root: Path) -> None:
    """Nothing to check is no problem, and creates nothing."""
    store = SessionStore(root, durability="none")
    assert store.verify() == []
    assert store.verify("nobody") == []
    assert not root.exists()


def test_repair_twice_is_the_same_as_once(root: Path) -> None:
    """repair() fixes what it can; a second run changes no byte and has nothing left to fix."""
    store = damaged_store(root)
    first = [*store.repair("s"), *store.repair("t")]
    assert first
    after_once = read_tree(root)
    second = [*store.repair("s"), *store.repair("t")]
    assert read_tree(root) == after_once
    # What stays is what repair never touches: damage in the middle of the log.
    assert {p.kind for p in second} <= {"damaged-line", "gap"}
    assert all(p.action.startswith("none") for p in second)
    assert store.verify() == second


def test_repair_moves_damage_aside_and_keeps_the_bytes(root: Path) -> None:
    """Torn tails go into sidecars, bad snapshots and metadata are renamed, temp files are deleted."""
    store = damaged_store(root)
    tail = log_path(root, "s").read_bytes()
    bad_snapshot = snapshot_path(root, "s", 2).read_bytes()
    store.repair("s")
    store.repair("t")
    names = set(os.listdir(root / "s"))
    assert snapshot_name(2) + DAMAGED_SUFFIX in names
    assert (root / "s" / (snapshot_name(2) + DAMAGED_SUFFIX)).read_bytes() == bad_snapshot
    assert "meta.json.0123abcd.tmp" not in names
    (log_sidecar,) = [n for n in names if n.startswith("messages.jsonl.cut-")]
    offset = int(log_sidecar.rsplit("-", 1)[1])
    assert (root / "s" / log_sidecar).read_bytes() == tail[offset:]
    assert log_path(root, "s").read_bytes() == tail[:offset]
    assert "meta.json" + DAMAGED_SUFFIX in os.listdir(root / "t")
    view = store.load("s")
    assert view.snapshot is not None and view.snapshot.version == 1
    assert [r.sequence for r in store.load("t").raw_tail] == [1]


def test_repaired_session_takes_appends_and_snapshots(root: Path) -> None:
    """After repair the session works normally: next sequence, next snapshot version."""
    store = damaged_store(root)
    store.repair("s")
    assert store.append("s", user("7")) == 7
    made = store.snapshot("s", CompactedMessage(content="c"), 6, 1)
    assert made.version == 2  # the damaged version 2 was moved aside, freeing its number
    assert [r.sequence for r in store.records("s", after=5)] == [6, 7]


def test_repair_of_an_unknown_session_is_empty_and_creates_nothing(root: Path) -> None:
    """repair() of a session that does not exist reports nothing and makes nothing."""
    store = SessionStore(root, durability="none")
    assert store.repair("nobody") == []
    assert not root.exists()
