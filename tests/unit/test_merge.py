"""Merges of one session file (spec §17): what merges, what conflicts, and what a conflict keeps."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from jsonl_store import (
    ForkPoint,
    MergeResult,
    SessionStore,
    UserMessage,
    merge_logs,
    merge_meta,
    merge_session_file,
    merge_usage,
)
from jsonl_store._session.meta import decode as decode_meta
from jsonl_store.testing.damage import flip, tear

SID = "s"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


class Sides:
    """A base session and two copies of it, each written through its own store with fixed times and ids."""

    def __init__(self, root: Path, setup: Callable[[SessionStore], object] | None = None) -> None:
        self.root = root
        self.stores: dict[str, SessionStore] = {}
        self.counter = 0
        self.now = T0
        base = self.store("base")
        base.append(SID, UserMessage(id="b1", content="base 1"), title="Start")
        base.append(SID, UserMessage(id="b2", content="base 2"))
        if setup is not None:
            setup(base)
        base.close()
        for side in ("ours", "theirs"):
            shutil.copytree(root / "base", root / side)

    def new_id(self) -> str:
        self.counter += 1
        return f"00000000-0000-7000-8000-{self.counter:012x}"

    def clock(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now

    def store(self, side: str) -> SessionStore:
        if side not in self.stores:
            self.stores[side] = SessionStore(
                self.root / side, durability="none", clock=self.clock, ids=self.new_id
            )
        return self.stores[side]

    def file(self, side: str, name: str = "messages.jsonl") -> bytes:
        path = self.root / side / SID / name
        return path.read_bytes() if path.exists() else b""

    def merge(self, name: str = "messages.jsonl", **changed: bytes) -> MergeResult:
        data = {side: changed.get(side, self.file(side, name)) for side in ("base", "ours", "theirs")}
        return merge_session_file(
            name, data["base"], data["ours"], data["theirs"], ours_files={}, theirs_files={}
        )

    def contents(self, data: bytes) -> list[str]:
        """The contents of a log's records, read by a store from a session holding ``data``."""
        target = self.root / "check"
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(self.root / "ours", target)
        (target / SID / "messages.jsonl").write_bytes(data)
        with SessionStore(target) as store:
            assert store.verify() == []
            return [str(r.message.content) for r in store.records(SID)]  # type: ignore[union-attr]


@pytest.fixture
def sides(tmp_path: Path) -> Sides:
    return Sides(tmp_path)


def test_a_side_that_appended_nothing_gives_the_other_side_unchanged(sides: Sides) -> None:
    """Only theirs appended: the merge is their file, byte for byte."""
    sides.store("theirs").append(SID, UserMessage(content="theirs 1"))
    assert sides.merge() == MergeResult(sides.file("theirs"))


def test_an_earlier_merge_brings_no_record_twice(sides: Sides) -> None:
    """Ours already holds theirs' first record from an earlier merge: it appears once, ours' places kept."""
    sides.store("ours").append(SID, UserMessage(id="o1", content="ours 1"))
    sides.store("theirs").append(SID, UserMessage(id="t1", content="theirs 1"))
    first = sides.merge()
    assert sides.contents(first.data) == ["base 1", "base 2", "ours 1", "theirs 1"]
    sides.stores.pop("ours").close()
    (sides.root / "ours" / SID / "messages.jsonl").write_bytes(first.data)  # the merge commit
    fork = sides.file("theirs")  # the base of the next merge: theirs as it was merged
    sides.store("ours").append(SID, UserMessage(id="o2", content="ours 2"))
    sides.store("theirs").append(SID, UserMessage(id="t2", content="theirs 2"))
    result = sides.merge(base=fork)
    assert result.clean, result.conflict
    assert sides.contents(result.data) == ["base 1", "base 2", "ours 1", "theirs 1", "ours 2", "theirs 2"]


def fork_point(store: SessionStore, fork_id: str) -> ForkPoint:
    """The fork point of a new fork ``fork_id`` of the session at its sequence 3."""
    summary = store.get_session(store.fork(SID, 3, fork_id))
    assert summary is not None and summary.fork is not None
    return summary.fork


def test_a_fork_at_a_sides_own_record_keeps_that_side_in_place(sides: Sides) -> None:
    """Theirs forked at its own record: theirs leads though ours' record is older, and forks on both sides conflict."""
    sides.store("ours").append(SID, UserMessage(id="o1", content="ours 1"))  # the older: ours would lead
    sides.store("theirs").append(SID, UserMessage(id="t1", content="theirs 1"))
    point = fork_point(sides.store("theirs"), "f")
    assert point.record_id == list(sides.store("theirs").records(SID))[2].id  # theirs' own record
    data = [sides.file(side) for side in ("base", "ours", "theirs")]
    unforked = merge_logs(*data, ours_snapshots={}, theirs_snapshots={})
    assert sides.contents(unforked.data) == ["base 1", "base 2", "ours 1", "theirs 1"]
    result = merge_logs(*data, ours_snapshots={}, theirs_snapshots={}, theirs_forks=[point])
    assert result.clean, result.conflict
    assert sides.contents(result.data) == ["base 1", "base 2", "theirs 1", "ours 1"]
    assert result.data.startswith(sides.file("theirs"))  # the fork's branch point did not move
    ours_point = fork_point(sides.store("ours"), "g")
    both = merge_logs(
        *data, ours_snapshots={}, theirs_snapshots={}, ours_forks=[ours_point], theirs_forks=[point]
    )
    assert both.conflict is not None and "forked" in both.conflict
    assert all(line in both.data.splitlines() for side in data[1:] for line in side.splitlines())


def test_a_batch_split_between_the_sides_is_a_conflict(sides: Sides) -> None:
    """A record ours holds alone but theirs holds in a batch cannot be placed once and whole."""
    sides.store("ours").append(SID, UserMessage(content="ours 1"))  # the older: ours leads
    sides.store("theirs").append_many(
        SID, [UserMessage(id="x", content="x"), UserMessage(id="y", content="y")]
    )
    theirs = sides.file("theirs").splitlines(keepends=True)
    from jsonl_store._format.codec import seal, unseal

    alone = unseal(theirs[2].rstrip(b"\n"))
    assert alone is not None
    # ours holds theirs' first batch record (renumbered, without batch_end) after its own.
    rest = alone[alone.index(b'"id":') :]
    ours = sides.file("ours") + seal(b'{"sequence":4,' + rest)
    result = sides.merge(ours=ours, base=sides.file("base"))
    assert result.conflict is not None and "split" in result.conflict


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda data: flip(data, 30), "damaged or not a record"),
        (lambda data: tear(data, len(data) - 5), "does not end in a whole line"),
        (lambda data: data + b"\n", "damaged or not a record"),
    ],
    ids=["flipped-byte", "torn-tail", "blank-line"],
)
def test_damaged_input_is_a_conflict_that_keeps_both(
    sides: Sides, damage: Callable[[bytes], bytes], reason: str
) -> None:
    """A log a reader would have to skip or cut is never merged: both versions stay, and why is said."""
    sides.store("ours").append(SID, UserMessage(content="ours 1"))
    sides.store("theirs").append(SID, UserMessage(content="theirs 1"))
    damaged = damage(sides.file("theirs"))
    result = sides.merge(theirs=damaged)
    assert result.conflict is not None and reason in result.conflict
    assert sides.file("ours") in result.data or set(sides.file("ours").splitlines()) <= set(
        result.data.splitlines()
    )


def test_a_rewritten_base_record_is_a_conflict(sides: Sides) -> None:
    """A side whose copy of a base record changed (an edit, a redaction) cannot be merged blindly."""
    sides.store("theirs").append(SID, UserMessage(content="theirs 1"))
    sides.store("ours").append(SID, UserMessage(content="ours 1"))
    log = sides.file("ours")
    first = log.splitlines(keepends=True)[0]
    edited = first.replace(b"base 1", b"BASE 1")
    from jsonl_store._format.codec import seal

    resealed = seal(edited[: edited.rindex(b',"crc":')] + b"}")
    result = sides.merge(ours=resealed + log[len(first) :])
    assert result.conflict is not None and "changed record" in result.conflict


def test_a_torn_batch_at_the_end_is_a_conflict(sides: Sides) -> None:
    """A batch whose last record is missing (cut short by a crash) is not merged."""
    sides.store("ours").append_many(SID, [UserMessage(content="a"), UserMessage(content="b")])
    sides.store("theirs").append(SID, UserMessage(content="theirs 1"))
    log = sides.file("ours")
    short = log[: len(log) - len(log.splitlines(keepends=True)[-1])]
    result = sides.merge(ours=short)
    assert result.conflict is not None and "inside a batch" in result.conflict


def test_the_conflict_keeps_the_common_lines_outside_the_markers(sides: Sides) -> None:
    """Both versions after the lines they share, between git's markers of the given size."""
    sides.store("ours").append(SID, UserMessage(content="ours 1"))
    sides.store("theirs").append(SID, UserMessage(content="theirs 1"))
    ours, theirs = sides.file("ours"), sides.file("theirs")
    result = merge_logs(
        sides.file("base"), ours, theirs, ours_snapshots=None, theirs_snapshots=None, marker_size=9
    )
    base = sides.file("base")
    assert result.data == (
        base
        + b"<<<<<<<<< ours\n"
        + ours[len(base) :]
        + b"=========\n"
        + theirs[len(base) :]
        + b">>>>>>>>> theirs\n"
    )


def test_usage_lines_of_both_sides_are_kept_once_in_time_order(sides: Sides) -> None:
    """Both sides' usage lines, each once, the common ones first and the rest by recorded_at."""
    sides.store("base").record_usage(SID, {"input_tokens": 1})
    sides.stores.pop("base").close()
    for side in ("ours", "theirs"):
        shutil.copyfile(sides.root / "base" / SID / "usage.jsonl", sides.root / side / SID / "usage.jsonl")
    sides.store("theirs").record_usage(SID, {"input_tokens": 2})
    sides.store("ours").record_usage(SID, {"input_tokens": 3})
    sides.store("theirs").record_usage(SID, {"input_tokens": 4})
    result = sides.merge("usage.jsonl")
    assert result.clean
    base = sides.file("base", "usage.jsonl")
    theirs = sides.file("theirs", "usage.jsonl").splitlines(keepends=True)
    ours = sides.file("ours", "usage.jsonl").splitlines(keepends=True)
    assert result.data == base + theirs[1] + ours[1] + theirs[2]
    assert merge_usage(base, sides.file("theirs", "usage.jsonl"), sides.file("ours", "usage.jsonl")) == result
    assert not merge_usage(base, flip(sides.file("ours", "usage.jsonl"), 5), base).clean


def test_a_user_rename_wins_over_a_runtime_title_and_counters_take_the_max(sides: Sides) -> None:
    """User title on ours, runtime title and metadata on theirs: the user's title, theirs' metadata."""
    sides.store("ours").update_session(SID, title="Named by a user")
    sides.store("theirs").update_session(SID, title="Generated", origin="runtime")
    sides.store("theirs").update_session(SID, metadata={"k": 1}, origin="runtime")
    sides.store("theirs").update_session(SID, pinned=True)
    result = sides.merge("meta.json")
    assert result.clean
    merged = decode_meta(result.data)
    ours, theirs = (
        decode_meta(sides.file("ours", "meta.json")),
        decode_meta(sides.file("theirs", "meta.json")),
    )
    assert (merged.title, merged.metadata, merged.pinned) == ("Named by a user", {"k": 1}, True)
    assert merged.title_version == max(ours.title_version, theirs.title_version)
    assert merged.metadata_version == theirs.metadata_version
    assert merged.version == max(ours.version, theirs.version) + 1  # neither side's file
    assert merged.user_fields == ["pinned", "title"]
    flipped = merge_meta(
        sides.file("base", "meta.json"), sides.file("theirs", "meta.json"), sides.file("ours", "meta.json")
    )
    assert flipped == result


def test_two_user_renames_end_with_the_one_renamed_more_often(sides: Sides) -> None:
    """Both sides renamed: the side whose title changed more often wins, in either order."""
    sides.store("ours").update_session(SID, title="Once")
    sides.store("theirs").update_session(SID, title="First")
    sides.store("theirs").update_session(SID, title="Twice")
    result = sides.merge("meta.json")
    assert decode_meta(result.data).title == "Twice"
    flipped = merge_meta(
        sides.file("base", "meta.json"), sides.file("theirs", "meta.json"), sides.file("ours", "meta.json")
    )
    assert flipped == result


def test_meta_json_a_side_cannot_read_is_a_conflict(sides: Sides) -> None:
    """A damaged meta.json, or one of a newer format, is left as a conflict."""
    sides.store("ours").update_session(SID, title="Renamed")
    damaged = sides.merge("meta.json", theirs=b"{not json")
    assert damaged.conflict is not None and "cannot be read" in damaged.conflict
    newer = sides.file("theirs", "meta.json").replace(b'"format": 1', b'"format": 2')
    refused = sides.merge("meta.json", theirs=newer)
    assert refused.conflict is not None and "newer" in refused.conflict


def test_two_snapshot_files_of_one_name_are_a_conflict() -> None:
    """Snapshots are never rewritten: two versions of one are two compactions."""
    result = merge_session_file("snapshot-00000002.json", b"", b'{"a":1}\n', b'{"a":2}\n')
    assert result.conflict is not None and "two different compactions" in result.conflict
    assert merge_session_file("notes.txt", b"", b"same\n", b"same\n") == MergeResult(b"same\n")
