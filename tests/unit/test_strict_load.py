"""``load(strict=True)`` raises `CorruptSession` for damage, never for what a crash leaves."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import log_path

from jsonl_store import CompactedMessage, CorruptSession, InvalidArgument, SessionStore, UserMessage
from jsonl_store._format.names import META_NAME, snapshot_name
from jsonl_store.testing.damage import damage_file, flip, garbage


def three(store: SessionStore) -> None:
    """A session of three one-line records."""
    for text in ("a", "b", "c"):
        store.append("s", UserMessage(content=text))


def test_damage_in_the_middle_of_the_log_raises_with_the_problems(store: SessionStore, root: Path) -> None:
    """A flipped byte in the second of three records: strict raises, carrying the damaged-line problem."""
    three(store)
    lines = log_path(root, "s").read_bytes().split(b"\n")
    damage_file(log_path(root, "s"), flip, len(lines[0]) + 10)
    with pytest.raises(CorruptSession) as caught:
        store.load("s", strict=True)
    assert [p.kind for p in caught.value.problems] == ["damaged-line", "gap"]  # record 2 is missing
    assert caught.value.session_id == "s"
    assert [r.message.content for r in store.load("s").raw_tail] == ["a", "c"]  # type: ignore[union-attr]


def test_a_torn_last_line_is_no_corruption(store: SessionStore, root: Path) -> None:
    """Garbage after the last record (a crash's remains) loads strictly, with every record."""
    three(store)
    damage_file(log_path(root, "s"), garbage)
    assert len(store.load("s", strict=True).raw_tail) == 3


def test_an_unreadable_snapshot_raises(store: SessionStore, root: Path) -> None:
    """A damaged snapshot file is corruption for a strict load (a plain load falls back to the log)."""
    three(store)
    store.snapshot("s", CompactedMessage(content="a and b"), 2, 0)
    damage_file(root / "s" / snapshot_name(1), flip, 5)
    assert store.load("s").snapshot is None
    with pytest.raises(CorruptSession) as caught:
        store.load("s", strict=True)
    assert [p.kind for p in caught.value.problems] == ["bad-snapshot"]


def test_unreadable_metadata_raises(store: SessionStore, root: Path) -> None:
    """meta.json that is not JSON is corruption for a strict load."""
    three(store)
    (root / "s" / META_NAME).write_bytes(b"{not json")
    with pytest.raises(CorruptSession) as caught:
        store.load("s", strict=True)
    assert [p.kind for p in caught.value.problems] == ["bad-meta"]


def test_a_crlf_converted_log_loads_strictly(store: SessionStore, root: Path) -> None:
    """Line ends a git checkout converted are read as written: no corruption."""
    three(store)
    path = log_path(root, "s")
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    view = store.load("s", strict=True)
    assert len(view.raw_tail) == 3
    assert [p.kind for p in view.problems] == ["text-conversion"]


def test_strict_must_be_a_bool(store: SessionStore) -> None:
    """strict takes True or False only."""
    with pytest.raises(InvalidArgument):
        store.load("s", strict="yes")  # type: ignore[arg-type]
