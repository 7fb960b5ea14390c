"""Property tests of merges (spec §17): any two divergent histories merge into both, each record once.

Each example writes a base session through the public API, copies it twice, appends to each
copy (single records and batches, with times that may tie across the sides), optionally
compacts one side, and merges the three logs both ways round.
"""

from __future__ import annotations

import shutil
import tempfile
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

from helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from jsonl_store import (
    CompactedMessage,
    MergeResult,
    RawMessageRecord,
    SessionStore,
    UserMessage,
    merge_logs,
    merge_meta,
)
from jsonl_store._ops.merge import conflict_markers
from jsonl_store._session.meta import decode

SID = "s"
T0 = datetime(2026, 1, 1, tzinfo=UTC)

#: One append: how many records (1: `append`, more: one `append_many` batch), and how
#: many seconds pass before it (0 makes times tie, across the sides too).
appends = st.lists(st.tuples(st.integers(1, 3), st.integers(0, 2)), max_size=4)


class Writer:
    """A side's store, with times and ids from counters, so an example is the same bytes every run."""

    def __init__(self, root: Path, side: int, start: datetime) -> None:
        self.side = side
        self.now = start
        self.count = 0
        self.store = SessionStore(root, durability="none", clock=lambda: self.now, ids=self.new_id)

    def new_id(self) -> str:
        self.count += 1
        return f"{self.side:08x}-0000-7000-8000-{self.count:012x}"

    def write(self, plan: list[tuple[int, int]]) -> list[list[str]]:
        """Run ``plan``; the record ids of each append, in order."""
        written = []
        for size, step in plan:
            self.now += timedelta(seconds=step)
            messages = [
                UserMessage(id=self.new_id(), content=f"side {self.side} #{self.count}") for _ in range(size)
            ]
            sequences = self.store.append_many(SID, messages)
            records = {r.sequence: r.id for r in self.store.tail(SID, size)}
            written.append([records[s] for s in sequences])
        return written


def _records(directory: Path) -> list[RawMessageRecord]:
    with SessionStore(directory) as store:
        assert store.verify() == [], store.verify()
        return list(store.records(SID))


def _snapshots(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in (directory / SID).glob("snapshot-*.json")}


def _log(directory: Path) -> bytes:
    return (directory / SID / "messages.jsonl").read_bytes()


@settings(max_examples=examples(40))
@given(base=appends, ours=appends, theirs=appends, compact=st.sampled_from([None, "ours", "theirs"]))
def test_divergent_appends_merge_into_the_prefix_and_both_sides_once(
    base: list[tuple[int, int]],
    ours: list[tuple[int, int]],
    theirs: list[tuple[int, int]],
    compact: str | None,
) -> None:
    """Prefix + each side's records exactly once, gap-free, batches whole, verify clean, same bytes both ways."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        Writer(root / "base", 0, T0).write([(1, 0), *base])
        shutil.copytree(root / "base", root / "ours")
        shutil.copytree(root / "base", root / "theirs")
        start = T0 + timedelta(seconds=sum(step for _, step in base))
        appended = {"ours": Writer(root / "ours", 1, start), "theirs": Writer(root / "theirs", 2, start)}
        batches = {"ours": appended["ours"].write(ours), "theirs": appended["theirs"].write(theirs)}
        if compact is not None and batches[compact]:
            store = appended[compact].store
            last = store.tail(SID, 1)[0].sequence
            store.snapshot(SID, CompactedMessage(content=f"{compact} compacted"), last, 0)
        snaps = {name: _snapshots(root / name) for name in ("ours", "theirs")}
        logs = {name: _log(root / name) for name in ("base", "ours", "theirs")}

        merged = merge_logs(
            logs["base"],
            logs["ours"],
            logs["theirs"],
            ours_snapshots=snaps["ours"],
            theirs_snapshots=snaps["theirs"],
        )
        flipped = merge_logs(
            logs["base"],
            logs["theirs"],
            logs["ours"],
            ours_snapshots=snaps["theirs"],
            theirs_snapshots=snaps["ours"],
        )
        assert merged.clean and flipped.clean, (merged.conflict, flipped.conflict)
        assert merged.data == flipped.data  # the rule never depends on which side is "ours"

        _write_merged(root, merged, snaps)
        records = _records(root / "merged")
        ids = [r.id for r in records]
        base_ids = [r.id for r in _records(root / "base")]
        new = {name: [i for batch in batches[name] for i in batch] for name in batches}
        assert Counter(ids) == Counter(base_ids + new["ours"] + new["theirs"])  # each record exactly once
        assert ids[: len(base_ids)] == base_ids
        assert [r.sequence for r in records] == list(range(1, len(records) + 1))
        rest = ids[len(base_ids) :]
        assert rest in (
            new["ours"] + new["theirs"],
            new["theirs"] + new["ours"],
        )  # each side in its own order
        if compact is not None and new[compact]:
            assert rest[: len(new[compact])] == new[compact]  # the side that compacted keeps its places
            view = SessionStore(root / "merged").load(SID)
            assert view.snapshot is not None
        elif new["ours"] and new["theirs"]:
            first = {name: _first(root / name, new[name][0]) for name in new}
            leader = min(first, key=lambda name: first[name])
            assert rest[: len(new[leader])] == new[leader]  # the older first record leads
        position = {r.id: r for r in records}
        for batch in (b for name in batches for b in batches[name] if len(b) > 1):
            sequences = [position[i].sequence for i in batch]
            assert sequences == list(range(sequences[0], sequences[0] + len(batch)))  # together, in order
            assert {position[i].batch_end for i in batch} == {sequences[-1]}


def _write_merged(root: Path, merged: MergeResult, snaps: dict[str, dict[str, bytes]]) -> None:
    """The merged session beside the sides: the merged log and every side's snapshot files."""
    target = root / "merged" / SID
    shutil.copytree(root / "ours" / SID, target)
    (target / "messages.jsonl").write_bytes(merged.data)
    for files in snaps.values():
        for name, data in files.items():
            (target / name).write_bytes(data)


def _first(directory: Path, record_id: str) -> tuple[datetime, str]:
    with SessionStore(directory) as store:
        record = next(r for r in store.records(SID) if r.id == record_id)
    return record.created_at, record.id


@settings(max_examples=examples(20))
@given(ours=appends.filter(bool), theirs=appends.filter(bool))
def test_both_sides_compacted_is_a_conflict_that_keeps_every_line(
    ours: list[tuple[int, int]], theirs: list[tuple[int, int]]
) -> None:
    """Two compactions past the fork: a conflict, and every line of both sides is in the file."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        Writer(root / "base", 0, T0).write([(1, 0)])
        logs = {"base": _log(root / "base")}
        snaps = {}
        for side, plan in ((1, ours), (2, theirs)):
            name = "ours" if side == 1 else "theirs"
            shutil.copytree(root / "base", root / name)
            writer = Writer(root / name, side, T0)
            writer.write(plan)
            writer.store.snapshot(
                SID, CompactedMessage(content="summary"), writer.store.tail(SID, 1)[0].sequence, 0
            )
            logs[name], snaps[name] = _log(root / name), _snapshots(root / name)
        result = merge_logs(
            logs["base"],
            logs["ours"],
            logs["theirs"],
            ours_snapshots=snaps["ours"],
            theirs_snapshots=snaps["theirs"],
        )
        assert not result.clean and result.conflict is not None
        kept = set(result.data.splitlines())
        assert set(logs["ours"].splitlines()) <= kept and set(logs["theirs"].splitlines()) <= kept


def test_unknown_snapshots_on_one_side_make_that_side_lead() -> None:
    """A side whose snapshots are not known keeps its places; the known side's records follow."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        Writer(root / "base", 0, T0).write([(1, 0)])
        shutil.copytree(root / "base", root / "ours")
        shutil.copytree(root / "base", root / "theirs")
        Writer(root / "ours", 1, T0).write([(1, 1)])  # the older record
        Writer(root / "theirs", 2, T0).write([(2, 5)])
        logs = {name: _log(root / name) for name in ("base", "ours", "theirs")}
        result = merge_logs(
            logs["base"], logs["ours"], logs["theirs"], ours_snapshots={}, theirs_snapshots=None
        )
        assert result.clean and result.data.startswith(logs["theirs"])
        both_unknown = merge_logs(
            logs["base"], logs["ours"], logs["theirs"], ours_snapshots=None, theirs_snapshots=None
        )
        assert not both_unknown.clean


#: One `update_session` call: which field, its value, and whether a user or the runtime made it.
updates = st.lists(
    st.tuples(
        st.sampled_from(["title", "pinned", "metadata", "remove"]),
        st.sampled_from(["a", "b", "c"]),
        st.sampled_from(["user", "runtime"]),
    ),
    max_size=4,
)


def _update(store: SessionStore, field: str, value: str, origin: str) -> None:
    if field == "title":
        store.update_session(SID, title=f"title {value}", origin=origin)  # type: ignore[arg-type]
    elif field == "pinned":
        store.update_session(SID, pinned=value == "a", origin=origin)  # type: ignore[arg-type]
    elif field == "metadata":
        store.update_session(SID, metadata={value: origin}, origin=origin)  # type: ignore[arg-type]
    else:
        store.update_session(SID, remove_metadata=[value], origin=origin)  # type: ignore[arg-type]


@settings(max_examples=examples(40))
@given(base=updates, ours=updates, theirs=updates)
def test_meta_merges_the_same_either_way_and_keeps_what_one_side_changed(
    base: list[tuple[str, str, str]], ours: list[tuple[str, str, str]], theirs: list[tuple[str, str, str]]
) -> None:
    """meta.json merges to the same bytes both ways; a field one side left alone takes the other's value."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        writer = Writer(root / "base", 0, T0)
        writer.write([(1, 0)])
        for change in base:
            _update(writer.store, *change)
        writer.store.close()
        files = {}
        for name, plan in (("ours", ours), ("theirs", theirs)):
            shutil.copytree(root / "base", root / name)
            with SessionStore(root / name) as store:
                for change in plan:
                    _update(store, *change)
            files[name] = (root / name / SID / "meta.json").read_bytes()
        original = (root / "base" / SID / "meta.json").read_bytes()
        merged = merge_meta(original, files["ours"], files["theirs"])
        assert merged.clean and merged == merge_meta(original, files["theirs"], files["ours"])
        result, first, second, start = (
            decode(d) for d in (merged.data, files["ours"], files["theirs"], original)
        )
        for field in ("title", "pinned"):
            values = {getattr(first, field), getattr(second, field)}
            assert getattr(result, field) in values
            if getattr(second, field) == getattr(start, field):
                assert getattr(result, field) == getattr(first, field)
            if getattr(first, field) == getattr(start, field):
                assert getattr(result, field) == getattr(second, field)
        assert result.version >= max(first.version, second.version)
        assert result.title_version == max(first.title_version, second.title_version)
        with SessionStore(root / "ours") as store:  # the merged file is one a store reads and updates
            (root / "ours" / SID / "meta.json").write_bytes(merged.data)
            assert store.update_session(SID, title="after the merge").title == "after the merge"


def _markers_by_splitlines(ours: bytes, theirs: bytes, size: int) -> bytes:
    """Conflict markers as `bytes.splitlines` cuts the two sides: the reference the reader's pieces must match."""
    mine, other = ours.splitlines(keepends=True), theirs.splitlines(keepends=True)
    common = 0
    for a, b in zip(mine, other, strict=False):
        if a != b or not a.endswith(b"\n"):
            break
        common += 1

    def part(lines: list[bytes]) -> bytes:
        text = b"".join(lines)
        return text if not text or text.endswith(b"\n") else text + b"\n"

    return b"".join(
        (
            b"".join(mine[:common]),
            b"<" * size + b" ours\n",
            part(mine[common:]),
            b"=" * size + b"\n",
            part(other[common:]),
            b">" * size + b" theirs\n",
        )
    )


_line_bytes = st.lists(st.sampled_from([b"a", b"b", b"\n", b"\r", b"\r\n", b"{}"]), max_size=12).map(b"".join)


@settings(max_examples=examples(300))
@given(_line_bytes, _line_bytes, _line_bytes, st.integers(1, 9))
def test_conflict_markers_share_the_lines_splitlines_shares(
    prefix: bytes, ours: bytes, theirs: bytes, size: int
) -> None:
    """Both sides' shared lines end where splitting at every line end (a lone ``\\r`` too) says, and no byte is lost."""
    mine, other = prefix + ours, prefix + theirs
    assert conflict_markers(mine, other, size) == _markers_by_splitlines(mine, other, size)
