#!/usr/bin/env python3
"""Build the merge vectors of spec/FORMAT.md §17 from fixed ids and timestamps.

    python spec/vectors/make_merge_vectors.py          # rewrite merge/
    python spec/vectors/make_merge_vectors.py --check  # exit 1 if the committed files differ

Each case is a directory ``merge/<case>/`` with ``base/``, ``ours/`` and ``theirs/``
(session directories), maybe ``ours-forks/`` and ``theirs-forks/`` (the ``fork.json`` files
of a side's forks of the session), ``case.json`` and, for a clean merge, ``expected/<file>``. Lines
are made as make_vectors.py makes them (the library's Structs, `_codec.seal`); the
expected log is written out here record by record, in the order §17 says, not produced by
the merge code, so tests/vectors/test_merge_vectors.py checks the code against the spec.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jsonl_store import CompactedMessage, ForkPoint, UserMessage
from jsonl_store._session import forks as _forks
from jsonl_store.testing.damage import flip

HERE = Path(__file__).resolve().parent
GROUP = "merge"

_spec = importlib.util.spec_from_file_location("make_vectors", HERE / "make_vectors.py")
assert _spec is not None and _spec.loader is not None
mv = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mv)

Files = dict[str, bytes]
Case = tuple[dict[str, Files], dict[str, Any], bytes | None]
CASES: dict[str, Callable[[], Case]] = {}


def case(name: str) -> Callable[[Callable[[], Case]], Callable[[], Case]]:
    def register(build: Callable[[], Case]) -> Callable[[], Case]:
        CASES[name] = build
        return build

    return register


def message(n: int) -> UserMessage:
    return UserMessage(id=mv.message_id(n), content=f"record {n}")


def log(*records: tuple[int, int, int] | tuple[int, int, int, int]) -> bytes:
    """Lines for ``(sequence, n, seconds[, batch_end])``: record ``n`` (its id, its message) at ``sequence``."""
    built = mv.Log()
    for sequence, n, seconds, *end in records:
        fields = {"batch_end": end[0]} if end else {}
        built.add(message(n), sequence=sequence, n=n, seconds=seconds, **fields)
    data: bytes = built.data()
    return data


def snapshot(log_data: bytes, through: int, version: int = 1) -> bytes:
    """A snapshot of ``log_data`` whose boundary is the record at sequence ``through``."""
    built = mv.Log()
    built.lines = log_data.splitlines(keepends=True)
    boundary = built.lines[through - 1]
    n = int(boundary.split(b'"id":"')[1][24:36], 16)
    line: bytes = mv.snapshot_line(built, version, through, CompactedMessage(id=mv.message_id(900 + version), content="summary"),
                            boundary_id=mv.record_id(n))  # fmt: skip
    return line


def about(text: str, file: str = "messages.jsonl", *, conflict: bool = False, known: tuple[bool, bool] = (True, True)) -> dict[str, Any]:  # fmt: skip
    return {
        "about": text,
        "file": file,
        "conflict": conflict,
        "known": {"ours": known[0], "theirs": known[1]},
    }


BASE = ((1, 1, 1), (2, 2, 2))


@case("both-appended")
def _() -> Case:
    base = log(*BASE)
    ours = log(*BASE, (3, 3, 3))
    theirs = log(*BASE, (3, 4, 4), (4, 5, 5, 5), (5, 6, 5, 5))
    expected = log(*BASE, (3, 3, 3), (4, 4, 4), (5, 5, 5, 6), (6, 6, 5, 6))
    sides = {
        "base": {"messages.jsonl": base},
        "ours": {"messages.jsonl": ours},
        "theirs": {"messages.jsonl": theirs},
    }
    return (
        sides,
        about("ours' first own record is older: ours leads; theirs' batch is renumbered whole"),
        expected,
    )


@case("older-theirs-leads")
def _() -> Case:
    ours = log(*BASE, (3, 3, 10))
    theirs = log(*BASE, (3, 4, 5))
    expected = log(*BASE, (3, 4, 5), (4, 3, 10))
    sides = {
        "base": {"messages.jsonl": log(*BASE)},
        "ours": {"messages.jsonl": ours},
        "theirs": {"messages.jsonl": theirs},
    }
    return (
        sides,
        about("theirs' first own record is older: theirs' file stays, ours' record follows"),
        expected,
    )


@case("tie-broken-by-id")
def _() -> Case:
    ours = log(*BASE, (3, 4, 3))
    theirs = log(*BASE, (3, 3, 3))
    expected = log(*BASE, (3, 3, 3), (4, 4, 3))
    sides = {
        "base": {"messages.jsonl": log(*BASE)},
        "ours": {"messages.jsonl": ours},
        "theirs": {"messages.jsonl": theirs},
    }
    return sides, about("both first own records have one time: the smaller record id leads"), expected


@case("compacted-side-leads")
def _() -> Case:
    ours = log(*BASE, (3, 3, 3))
    theirs = log(*BASE, (3, 4, 4), (4, 5, 5))
    sides = {
        "base": {"messages.jsonl": log(*BASE)},
        "ours": {"messages.jsonl": ours},
        "theirs": {"messages.jsonl": theirs, "snapshot-00000001.json": snapshot(theirs, 3)},
    }
    expected = log(*BASE, (3, 4, 4), (4, 5, 5), (5, 3, 3))
    return (
        sides,
        about("only theirs compacted past the fork: theirs leads though ours' record is older"),
        expected,
    )


@case("both-compacted")
def _() -> Case:
    ours = log(*BASE, (3, 3, 3))
    theirs = log(*BASE, (3, 4, 4))
    sides = {
        "base": {"messages.jsonl": log(*BASE)},
        "ours": {"messages.jsonl": ours, "snapshot-00000001.json": snapshot(ours, 3)},
        "theirs": {"messages.jsonl": theirs, "snapshot-00000001.json": snapshot(theirs, 3)},
    }
    return sides, about("both sides compacted past the fork", conflict=True), None


@case("compacted-in-the-prefix")
def _() -> Case:
    base = log(*BASE)
    ours = log(*BASE, (3, 4, 4))
    theirs = log(*BASE, (3, 3, 3))
    sides = {
        "base": {"messages.jsonl": base, "snapshot-00000001.json": snapshot(base, 2)},
        "ours": {"messages.jsonl": ours, "snapshot-00000001.json": snapshot(base, 2)},
        "theirs": {"messages.jsonl": theirs, "snapshot-00000001.json": snapshot(base, 2)},
    }
    expected = log(*BASE, (3, 3, 3), (4, 4, 4))
    return sides, about("a snapshot of the common prefix moves nothing: the older record leads"), expected


@case("unknown-snapshots-lead")
def _() -> Case:
    ours = log(*BASE, (3, 3, 3))
    theirs = log(*BASE, (3, 4, 4))
    sides = {
        "base": {"messages.jsonl": log(*BASE)},
        "ours": {"messages.jsonl": ours},
        "theirs": {"messages.jsonl": theirs},
    }
    expected = log(*BASE, (3, 4, 4), (4, 3, 3))
    return sides, about("theirs' snapshots are not known: theirs must lead", known=(True, False)), expected


def fork_file(log_data: bytes, at: int) -> bytes:
    """A ``fork.json`` of a fork branched from ``log_data``'s session at the record at sequence ``at``."""
    n = int(log_data.splitlines()[at - 1].split(b'"id":"')[1][24:36], 16)
    point = ForkPoint(session_id="s", sequence=at, record_id=mv.record_id(n), created_at=mv.at(20))
    return _forks.encode(point)


@case("forked-side-leads")
def _() -> Case:
    ours = log(*BASE, (3, 3, 3))
    theirs = log(*BASE, (3, 4, 4), (4, 5, 5))
    sides = {
        "base": {"messages.jsonl": log(*BASE)},
        "ours": {"messages.jsonl": ours},
        "theirs": {"messages.jsonl": theirs},
        "theirs-forks": {"f.json": fork_file(theirs, 3)},
    }
    expected = log(*BASE, (3, 4, 4), (4, 5, 5), (5, 3, 3))
    return (
        sides,
        about("theirs was forked at its own record 3: theirs leads though ours' record is older"),
        expected,
    )


@case("forked-in-the-prefix")
def _() -> Case:
    ours = log(*BASE, (3, 4, 4))
    theirs = log(*BASE, (3, 3, 3))
    sides = {
        "base": {"messages.jsonl": log(*BASE)},
        "ours": {"messages.jsonl": ours},
        "theirs": {"messages.jsonl": theirs},
        "ours-forks": {"f.json": fork_file(ours, 2)},
    }
    expected = log(*BASE, (3, 3, 3), (4, 4, 4))
    return sides, about("a fork at a common record moves nothing: the older record leads"), expected


@case("both-forked")
def _() -> Case:
    ours = log(*BASE, (3, 3, 3))
    theirs = log(*BASE, (3, 4, 4))
    sides = {
        "base": {"messages.jsonl": log(*BASE)},
        "ours": {"messages.jsonl": ours},
        "theirs": {"messages.jsonl": theirs, "snapshot-00000001.json": snapshot(theirs, 3)},
        "ours-forks": {"f.json": fork_file(ours, 3)},
    }
    return sides, about("ours forked and theirs compacted past the fork of the branches", conflict=True), None


@case("earlier-merge")
def _() -> Case:
    base = log(*BASE, (3, 4, 4))  # theirs as an earlier merge took it
    ours = log(*BASE, (3, 3, 3), (4, 4, 4), (5, 5, 5))
    theirs = log(*BASE, (3, 4, 4), (4, 6, 6))
    expected = log(*BASE, (3, 3, 3), (4, 4, 4), (5, 5, 5), (6, 6, 6))
    sides = {
        "base": {"messages.jsonl": base},
        "ours": {"messages.jsonl": ours},
        "theirs": {"messages.jsonl": theirs},
    }
    return sides, about("record 4 came into ours by an earlier merge: it is kept once"), expected


@case("fork-log")
def _() -> Case:
    base = log((3, 3, 3))  # a fork's own log, after its branch point at sequence 2
    ours = log((3, 3, 3), (4, 4, 4))
    theirs = log((3, 3, 3), (4, 5, 5), (5, 6, 6))
    expected = log((3, 3, 3), (4, 4, 4), (5, 5, 5), (6, 6, 6))
    sides = {
        "base": {"messages.jsonl": base},
        "ours": {"messages.jsonl": ours},
        "theirs": {"messages.jsonl": theirs},
    }
    return (
        sides,
        about("a fork's own log starts after its branch point, and is renumbered from there"),
        expected,
    )


@case("rewritten-base")
def _() -> Case:
    edited = mv.Log()
    edited.add(UserMessage(id=mv.message_id(1), content="edited"), sequence=1, n=1, seconds=1)
    ours = edited.data() + log(*BASE[1:], (3, 3, 3))
    sides = {
        "base": {"messages.jsonl": log(*BASE)},
        "ours": {"messages.jsonl": ours},
        "theirs": {"messages.jsonl": log(*BASE, (3, 4, 4))},
    }
    return sides, about("ours changed a base record", conflict=True), None


@case("damaged-side")
def _() -> Case:
    theirs = log(*BASE, (3, 4, 4))
    sides = {
        "base": {"messages.jsonl": log(*BASE)},
        "ours": {"messages.jsonl": log(*BASE, (3, 3, 3))},
        "theirs": {"messages.jsonl": flip(theirs, len(theirs) - 40)},
    }
    return sides, about("theirs' last line fails its checksum", conflict=True), None


@case("usage-both")
def _() -> Case:
    base = mv.usage_line(1, input_tokens=1)
    ours = base + mv.usage_line(5, input_tokens=5)
    theirs = base + mv.usage_line(3, input_tokens=3) + mv.usage_line(7, input_tokens=7)
    expected = (
        base
        + mv.usage_line(3, input_tokens=3)
        + mv.usage_line(5, input_tokens=5)
        + mv.usage_line(7, input_tokens=7)
    )
    sides = {"base": {"usage.jsonl": base}, "ours": {"usage.jsonl": ours}, "theirs": {"usage.jsonl": theirs}}
    return sides, about("both sides' usage lines once, by recorded_at", "usage.jsonl"), expected


@case("meta-user-wins")
def _() -> Case:
    base = mv.meta(title="Generated")
    ours = mv.meta(title="Named by a user", version=1, title_version=1, user_fields=["title"])
    theirs = mv.meta(
        title="Generated again", metadata={"k": 1}, version=2, title_version=1, metadata_version=1
    )
    expected = mv.meta(title="Named by a user", metadata={"k": 1}, version=3, title_version=1, metadata_version=1,
                       user_fields=["title"])  # fmt: skip
    sides = {"base": {"meta.json": base}, "ours": {"meta.json": ours}, "theirs": {"meta.json": theirs}}
    return (
        sides,
        about("a user's title beats a runtime title; counters take the max, version one more", "meta.json"),
        expected,
    )


def build(target: Path) -> None:
    for name, make in CASES.items():
        sides, info, expected = make()
        directory = target / name
        for side, files in sides.items():
            (directory / side).mkdir(parents=True)
            for file, data in files.items():
                (directory / side / file).write_bytes(data)
        if expected is not None:
            (directory / "expected").mkdir()
            (directory / "expected" / info["file"]).write_bytes(expected)
        (directory / "case.json").write_text(json.dumps(info, indent=2) + "\n")


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def main(argv: list[str]) -> int:
    target = HERE / GROUP
    if "--check" in argv:
        with tempfile.TemporaryDirectory() as tmp:
            build(Path(tmp))
            same = _tree(Path(tmp)) == _tree(target)
        print("merge vectors are up to date" if same else "merge vectors differ: run make_merge_vectors.py")
        return 0 if same else 1
    shutil.rmtree(target, ignore_errors=True)
    build(target)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
