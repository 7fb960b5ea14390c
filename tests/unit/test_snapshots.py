"""Scenario tests for snapshots: versions by compare-and-swap, boundaries, reading only the tail."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers import log_path, read_tree, snapshot_path, tree_without_locks

from jsonl_store import (
    CompactedMessage,
    ContextSnapshot,
    InvalidArgument,
    InvalidMessage,
    JsonlStoreError,
    Problem,
    SessionNotFound,
    SessionStore,
    SnapshotConflict,
    UserMessage,
)
from jsonl_store._format.names import snapshot_name
from jsonl_store._io.fs import OS_FS
from jsonl_store._io.session_dir import SessionDir
from jsonl_store._log import snapshots as _snapshots
from jsonl_store.testing.damage import damage_file, flip, garbage, tear, zero_fill


def user(text: str) -> UserMessage:
    """A user turn."""
    return UserMessage(content=text)


def filled(store: SessionStore, count: int, session_id: str = "s") -> list[UserMessage]:
    """Append ``count`` user messages ("1", "2", ...) and return them."""
    messages = [user(str(i)) for i in range(1, count + 1)]
    store.append_many(session_id, messages)
    return messages


# ---------------------------------------------------------------------------------------
# Creating snapshots
# ---------------------------------------------------------------------------------------


def test_snapshot_creates_version_expected_plus_one(store: SessionStore, root: Path) -> None:
    """snapshot(expected_version=n) creates version n + 1 as its own numbered file."""
    filled(store, 5)
    summary = CompactedMessage(content="1 and 2")
    first = store.snapshot("s", summary, 2, 0)
    assert isinstance(first, ContextSnapshot)
    assert (first.version, first.compacted_through_sequence, first.session_id) == (1, 2, "s")
    assert first.compacted_message == summary
    assert snapshot_path(root, "s", 1).is_file()
    second = store.snapshot("s", CompactedMessage(content="1 to 4"), 4, 1)
    assert second.version == 2
    assert snapshot_path(root, "s", 2).is_file()
    assert snapshot_path(root, "s", 1).is_file()  # never rewritten nor removed


def test_snapshot_files_are_never_rewritten(store: SessionStore, root: Path) -> None:
    """A later snapshot leaves the earlier snapshot files byte-identical."""
    filled(store, 4)
    store.snapshot("s", CompactedMessage(content="a"), 1, 0)
    first = snapshot_path(root, "s", 1).read_bytes()
    store.snapshot("s", CompactedMessage(content="b"), 3, 1)
    assert snapshot_path(root, "s", 1).read_bytes() == first


def test_stale_expected_version_raises_snapshot_conflict(store: SessionStore, root: Path) -> None:
    """A writer whose context came from an older snapshot version gets SnapshotConflict."""
    filled(store, 5)
    store.snapshot("s", CompactedMessage(content="a"), 2, 0)
    before = read_tree(root)
    with pytest.raises(SnapshotConflict) as info:
        store.snapshot("s", CompactedMessage(content="stale"), 3, 0)
    assert isinstance(info.value, JsonlStoreError) and info.value.session_id == "s"
    with pytest.raises(SnapshotConflict):
        store.snapshot("s", CompactedMessage(content="from the future"), 3, 7)
    assert read_tree(root) == before


def test_two_stores_race_for_one_version_and_one_wins(root: Path) -> None:
    """Two writers expecting the same version: the second gets SnapshotConflict."""
    a = SessionStore(root, durability="none")
    b = SessionStore(root, durability="none")
    filled(a, 4)
    a.snapshot("s", CompactedMessage(content="from a"), 2, 0)
    with pytest.raises(SnapshotConflict):
        b.snapshot("s", CompactedMessage(content="from b"), 3, 0)
    view = b.load("s")
    assert view.snapshot is not None and view.snapshot.compacted_message.content == "from a"


@pytest.mark.parametrize("through", [1, 2])
def test_boundary_must_advance_past_the_previous_snapshot(store: SessionStore, through: int) -> None:
    """A boundary at or before the previous snapshot's is refused."""
    filled(store, 4)
    store.snapshot("s", CompactedMessage(content="a"), 2, 0)
    with pytest.raises(InvalidArgument):
        store.snapshot("s", CompactedMessage(content="b"), through, 1)


@pytest.mark.parametrize("through", [0, 4, 100])
def test_boundary_must_not_pass_the_last_sequence(store: SessionStore, root: Path, through: int) -> None:
    """A boundary of 0 or beyond the last sequence is refused, and no file is made."""
    filled(store, 3)
    before = tree_without_locks(root)
    with pytest.raises(InvalidArgument):
        store.snapshot("s", CompactedMessage(content="x"), through, 0)
    assert tree_without_locks(root) == before


def test_boundary_may_be_the_last_sequence(store: SessionStore) -> None:
    """Compacting the whole log leaves an empty tail and the summary as the only message."""
    filled(store, 3)
    summary = CompactedMessage(content="everything")
    store.snapshot("s", summary, 3, 0)
    view = store.load("s")
    assert view.raw_tail == [] and view.messages == [summary]
    assert view.last_sequence == 3 and view.exists


@pytest.mark.parametrize(
    ("through", "expected"),
    [(-1, 0), (1, -1), ("1", 0), (1, "0"), (1.0, 0), (1, None)],
)
def test_bad_boundary_or_version_types_raise_invalid_argument(
    store: SessionStore, through: object, expected: object
) -> None:
    """Boundary and expected version must be non-negative ints."""
    filled(store, 2)
    with pytest.raises(InvalidArgument):
        store.snapshot("s", CompactedMessage(content="x"), through, expected)  # type: ignore[arg-type]


@pytest.mark.parametrize("message", [UserMessage(content="x"), {"role": "user", "content": "x"}])
def test_snapshot_message_must_be_a_compacted_message(store: SessionStore, message: object) -> None:
    """Only a CompactedMessage (or a dict with role 'compacted') can stand for a prefix."""
    filled(store, 2)
    with pytest.raises(InvalidArgument):
        store.snapshot("s", message, 1, 0)  # type: ignore[arg-type]


def test_unencodable_snapshot_message_raises_and_writes_nothing(store: SessionStore, root: Path) -> None:
    """A compacted message that cannot round-trip is refused before any file is made."""
    filled(store, 2)
    before = read_tree(root)
    with pytest.raises(InvalidMessage):
        store.snapshot("s", {"role": "compacted", "content": "x", "v": float("nan")}, 1, 0)
    assert read_tree(root) == before


def test_snapshot_of_an_unknown_session_raises(store: SessionStore) -> None:
    """A session with no records has nothing to compact."""
    store.append("other", user("x"))
    with pytest.raises((InvalidArgument, SessionNotFound)):
        store.snapshot("nobody", CompactedMessage(content="x"), 1, 0)


def test_snapshot_of_an_unknown_session_creates_nothing(store: SessionStore, root: Path) -> None:
    """A snapshot refused because the session does not exist leaves no directory behind."""
    store.append("other", user("x"))
    with pytest.raises(JsonlStoreError):
        store.snapshot("nobody", CompactedMessage(content="x"), 1, 0)
    assert not (root / "nobody").exists()


def test_dict_compacted_message_comes_back_as_a_dict(store: SessionStore, root: Path) -> None:
    """A plain-dict compacted message is given back as an equal dict by load()."""
    filled(store, 2)
    summary = {"role": "compacted", "content": "x", "vendor": {"n": 2**90}}
    store.snapshot("s", summary, 1, 0)
    view = SessionStore(root, durability="none").load("s")
    assert view.snapshot is not None and view.snapshot.compacted_message == summary
    assert type(view.snapshot.compacted_message) is dict
    assert view.messages[0] == summary


# ---------------------------------------------------------------------------------------
# Loading after snapshots
# ---------------------------------------------------------------------------------------


def test_load_after_snapshot_gives_the_compacted_message_and_the_tail_only(store: SessionStore) -> None:
    """load() returns the summary first, then only the records after the boundary."""
    messages = filled(store, 5)
    summary = CompactedMessage(content="1 to 3")
    store.snapshot("s", summary, 3, 0)
    view = store.load("s")
    assert view.snapshot is not None and view.snapshot.version == 1
    assert [r.sequence for r in view.raw_tail] == [4, 5]
    assert view.messages == [summary, *messages[3:]]
    assert view.last_sequence == 5
    assert store.append("s", user("6")) == 6
    assert [r.sequence for r in store.load("s").raw_tail] == [4, 5, 6]


def test_hidden_compacted_message_is_left_out_of_the_context(store: SessionStore) -> None:
    """A compacted message with include_in_messages=False does not appear in view.messages."""
    messages = filled(store, 3)
    store.snapshot("s", CompactedMessage(content="x", include_in_messages=False), 1, 0)
    assert store.load("s").messages == messages[1:]


def test_load_reads_from_the_tail_offset_not_the_start(
    store: SessionStore, root: Path, problems: list[Problem]
) -> None:
    """Bytes before the snapshot's boundary record are never read: damaging them changes nothing."""
    messages = filled(store, 6)
    snapshot = store.snapshot("s", CompactedMessage(content="1 to 4"), 4, 0)
    expected = store.load("s")
    assert snapshot.boundary_offset > 0
    damage_file(log_path(root, "s"), zero_fill, 0, snapshot.boundary_offset)
    view = store.load("s")
    assert view.problems == [] and problems == []
    assert view.raw_tail == expected.raw_tail
    assert view.messages == [snapshot.compacted_message, *messages[4:]]
    # The bytes really are damaged: a full scan reports them.
    assert [r.sequence for r in store.records("s")] == [4, 5, 6]
    assert any(p.kind == "damaged-line" for p in problems)


def test_snapshot_offsets_point_at_the_boundary_record(store: SessionStore, root: Path) -> None:
    """boundary_offset..tail_offset is exactly the boundary record's line."""
    filled(store, 4)
    snapshot = store.snapshot("s", CompactedMessage(content="x"), 2, 0)
    data = log_path(root, "s").read_bytes()
    line = data[snapshot.boundary_offset : snapshot.tail_offset]
    assert line.startswith(b'{"sequence":2,') and line.endswith(b"\n") and line.count(b"\n") == 1
    assert snapshot.boundary_record_id.encode() in line


def test_snapshot_past_the_end_of_the_log_is_skipped_for_an_older_one(
    store: SessionStore, root: Path, problems: list[Problem]
) -> None:
    """A snapshot whose boundary the log no longer holds (lost log tail) falls back to an older snapshot."""
    for i in range(1, 7):  # one append each: cutting into one batch would drop the whole batch
        store.append("s", user(str(i)))
    store.snapshot("s", CompactedMessage(content="old"), 2, 0)
    newer = store.snapshot("s", CompactedMessage(content="new"), 5, 1)
    # Power loss under durability="none": the log lost records 5 and 6, the snapshot survived.
    damage_file(log_path(root, "s"), tear, newer.boundary_offset)
    view = SessionStore(root, durability="none").load("s")
    assert view.snapshot is not None and view.snapshot.version == 1
    assert [r.sequence for r in view.raw_tail] == [3, 4]
    assert [p.kind for p in view.problems] == ["bad-snapshot"]
    assert view.problems[0].path.endswith(snapshot_name(2))


def test_snapshot_whose_boundary_record_changed_is_skipped(store: SessionStore, root: Path) -> None:
    """A snapshot is trusted only while the log holds that exact boundary record."""
    filled(store, 4)
    store.snapshot("s", CompactedMessage(content="x"), 2, 0)
    # The session is deleted and rebuilt with the same number of records: a different log.
    snap = snapshot_path(root, "s", 1).read_bytes()
    store.delete_session("s")
    filled(store, 4)
    snapshot_path(root, "s", 1).write_bytes(snap)
    view = store.load("s")
    assert view.snapshot is None
    assert [r.sequence for r in view.raw_tail] == [1, 2, 3, 4]
    assert [p.kind for p in view.problems] == ["bad-snapshot"]


@pytest.mark.parametrize(
    ("how", "args"),
    [(flip, (30,)), (tear, (-1,)), (tear, (10,)), (zero_fill, (0, 40)), (garbage, (5,))],
    ids=["flipped", "no-final-newline", "torn", "zero-filled", "garbage"],
)
def test_damaged_newest_snapshot_is_skipped_for_an_older_one(
    store: SessionStore, root: Path, how: object, args: tuple[int, ...]
) -> None:
    """A damaged snapshot file is reported and skipped; the older intact one is used."""
    filled(store, 5)
    store.snapshot("s", CompactedMessage(content="old"), 2, 0)
    store.snapshot("s", CompactedMessage(content="new"), 4, 1)
    damage_file(snapshot_path(root, "s", 2), how, *args)  # type: ignore[arg-type]
    view = store.load("s")
    assert view.snapshot is not None and view.snapshot.version == 1
    assert [r.sequence for r in view.raw_tail] == [3, 4, 5]
    assert [p.kind for p in view.problems] == ["bad-snapshot"]


def test_next_snapshot_numbers_above_a_damaged_one(store: SessionStore, root: Path) -> None:
    """A damaged snapshot keeps its number: the next snapshot takes the version above it."""
    filled(store, 5)
    store.snapshot("s", CompactedMessage(content="a"), 2, 0)
    store.snapshot("s", CompactedMessage(content="b"), 3, 1)
    damage_file(snapshot_path(root, "s", 2), flip, 20)
    made = store.snapshot("s", CompactedMessage(content="c"), 4, 1)
    assert made.version == 3
    view = store.load("s")
    assert view.snapshot is not None and view.snapshot.version == 3


def test_snapshot_version_in_the_file_must_match_its_name(store: SessionStore, root: Path) -> None:
    """A snapshot file copied under another version's name is not trusted."""
    filled(store, 4)
    store.snapshot("s", CompactedMessage(content="a"), 2, 0)
    os.link(snapshot_path(root, "s", 1), snapshot_path(root, "s", 5))
    view = store.load("s")
    assert view.snapshot is not None and view.snapshot.version == 1
    assert any(p.kind == "bad-snapshot" and p.path.endswith(snapshot_name(5)) for p in view.problems)


# ---------------------------------------------------------------------------------------
# The _snapshots module
# ---------------------------------------------------------------------------------------


def test_versions_lists_only_snapshot_files_ascending(tmp_path: Path) -> None:
    """versions() parses snapshot file names and ignores every other name."""
    for name in [
        snapshot_name(10),
        snapshot_name(2),
        "snapshot-1.json",
        "snapshot-00000003.json.damaged",
        "meta.json",
    ]:
        (tmp_path / name).write_bytes(b"")
    assert _snapshots.versions(SessionDir(OS_FS, "s", str(tmp_path))) == [2, 10]
    assert _snapshots.versions(SessionDir(OS_FS, "s", str(tmp_path / "missing"))) == []


def test_create_is_a_compare_and_swap(store: SessionStore, root: Path) -> None:
    """_snapshots.create refuses to replace an existing version and leaves no temporary file."""
    filled(store, 2)
    made = store.snapshot("s", CompactedMessage(content="x"), 1, 0)
    before = snapshot_path(root, "s", 1).read_bytes()
    assert _snapshots.create(SessionDir(OS_FS, "s", str(root / "s")), made, durable=False) is False
    assert snapshot_path(root, "s", 1).read_bytes() == before
    assert not any(name.endswith(".tmp") for name in os.listdir(root / "s"))
