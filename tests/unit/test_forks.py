"""Forks: a session's history begins with another's up to a sequence, and nothing is copied."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jsonl_store import (
    AssistantMessage,
    CompactedMessage,
    CorruptSession,
    InvalidArgument,
    InvalidSessionId,
    Problem,
    SequenceConflict,
    SessionHasForks,
    SessionNotFound,
    SessionStore,
    UnsupportedFormat,
    UserMessage,
)
from jsonl_store._format import codec as _codec
from jsonl_store._format.names import FORK_NAME
from jsonl_store._io.fs import OS_FS
from jsonl_store._io.session_dir import SessionDir
from jsonl_store._log import snapshots as _snapshots
from jsonl_store._session import forks as _forks
from jsonl_store.export import to_markdown
from jsonl_store.search import search
from jsonl_store.testing import SimulatedFileSystem, crash_states


def contents(store: SessionStore, sid: str) -> list[str]:
    return [str(m.content) for m in store.load(sid).messages]  # type: ignore[union-attr]


def record_texts(store: SessionStore, sid: str) -> list[tuple[int, str]]:
    return [(r.sequence, str(r.message.content)) for r in store.records(sid)]  # type: ignore[union-attr]


@pytest.fixture
def source(store: SessionStore) -> SessionStore:
    for i in range(1, 7):
        store.append("a", UserMessage(id=f"a{i}", content=f"a{i}"))
    return store


def test_a_fork_reads_the_source_up_to_the_branch_then_its_own(source: SessionStore) -> None:
    """fork(a, 4): load, records and tail give a1..a4 then the fork's own records, numbered on."""
    assert source.fork("a", 4, "b") == "b"
    assert contents(source, "b") == ["a1", "a2", "a3", "a4"]
    assert source.append("b", UserMessage(content="b5")) == 5
    source.append("a", UserMessage(content="a7"))  # the source goes on; the fork keeps its branch
    assert record_texts(source, "b") == [(1, "a1"), (2, "a2"), (3, "a3"), (4, "a4"), (5, "b5")]
    assert [str(r.message.content) for r in source.tail("b", 3)] == ["a3", "a4", "b5"]  # type: ignore[union-attr]
    assert [r.sequence for r in source.records("b", after=3)] == [4, 5]
    assert contents(source, "a")[-1] == "a7"


def test_summaries_name_the_branch_and_count_the_history(source: SessionStore) -> None:
    """A fork's summary has its ForkPoint and the last sequence of its history, before and after its appends."""
    source.fork("a", 3, "b")
    summary = source.get_session("b")
    assert summary is not None and summary.fork is not None
    assert (summary.fork.session_id, summary.fork.sequence, summary.message_count) == ("a", 3, 3)
    assert summary.fork.record_id == next(r.id for r in source.records("a") if r.sequence == 3)
    source.append("b", UserMessage(content="b4"))
    after = source.get_session("b")
    assert after is not None and after.message_count == 4
    assert source.get_session("a") is not None and source.get_session("a").fork is None  # type: ignore[union-attr]


def test_forks_of_forks_and_a_branch_before_the_sources_own_records(source: SessionStore) -> None:
    """A fork of a fork reads both; one branching inside the first source skips the middle fork."""
    source.fork("a", 4, "b")
    source.append("b", UserMessage(content="b5"))
    source.fork("b", 5, "c")
    source.append("c", UserMessage(content="c6"))
    assert contents(source, "c") == ["a1", "a2", "a3", "a4", "b5", "c6"]
    source.fork("b", 2, "d")
    assert contents(source, "d") == ["a1", "a2"]
    assert source.verify() == []


def test_a_sources_snapshot_before_the_branch_is_used_and_one_after_it_is_not(source: SessionStore) -> None:
    """The fork's context starts at the source's newest snapshot whose boundary is at or before the branch."""
    source.fork("a", 4, "b")
    source.append("b", UserMessage(content="b5"))
    source.snapshot("a", CompactedMessage(content="a1-a3"), 3, 0)
    assert contents(source, "b") == ["a1-a3", "a4", "b5"]
    source.snapshot("a", CompactedMessage(content="a1-a6"), 6, 1)  # past the branch: not the fork's
    assert contents(source, "b") == ["a1-a3", "a4", "b5"]
    assert contents(source, "a") == ["a1-a6"]


def test_a_forks_own_snapshot_and_checkpoint(source: SessionStore) -> None:
    """A fork compacts its own records (not the source's), and checkpoint counts the history as stored."""
    source.fork("a", 4, "b")
    with pytest.raises(InvalidArgument):
        source.snapshot(
            "b", CompactedMessage(content="x"), 3, 0
        )  # a source record: not the fork's to compact
    assert source.checkpoint("b", [*source.load("b").messages, UserMessage(id="b5", content="b5")]) == [5]
    assert source.checkpoint("b", [*source.load("b").messages, AssistantMessage(id="b6", content="b6")]) == [
        6
    ]
    source.snapshot("b", CompactedMessage(content="a1-b5"), 5, 0)
    assert contents(source, "b") == ["a1-b5", "b6"]


def test_conditional_appends_count_the_history(source: SessionStore) -> None:
    """expected_last_sequence on a fresh fork is its branch sequence."""
    source.fork("a", 2, "b")
    with pytest.raises(SequenceConflict):
        source.append("b", UserMessage(content="x"), expected_last_sequence=0)
    assert source.append("b", UserMessage(content="y"), expected_last_sequence=2) == 3


def test_deleting_a_source_with_forks_is_refused(source: SessionStore) -> None:
    """delete_session of a fork's source raises SessionHasForks naming it; after the fork goes, it works."""
    source.fork("a", 2, "b")
    with pytest.raises(SessionHasForks) as refused:
        source.delete_session("a")
    assert refused.value.forks == ["b"] and isinstance(refused.value, OSError)
    assert contents(source, "b") == ["a1", "a2"]
    assert source.delete_session("b")
    assert source.delete_session("a")


@pytest.mark.parametrize(
    ("source_id", "at", "new", "error"),
    [
        ("nobody", 1, "x", SessionNotFound),
        ("a", 0, "x", InvalidArgument),
        ("a", 7, "x", InvalidArgument),
        ("a", True, "x", InvalidArgument),
        ("a", 2, "a", InvalidArgument),
        ("a", 2, "../x", InvalidSessionId),
    ],
)
def test_bad_forks_are_refused_and_make_nothing(
    source: SessionStore, root: Path, source_id: str, at: int, new: str, error: type[Exception]
) -> None:
    """An unknown source, a sequence outside its history or a bad new id: a typed error, no directory."""
    before = sorted(p.name for p in root.iterdir())
    with pytest.raises(error):
        source.fork(source_id, at, new)
    assert sorted(p.name for p in root.iterdir()) == before


def test_an_existing_id_is_refused_and_the_same_fork_again_is_the_same(source: SessionStore) -> None:
    """Forking into a session that exists fails; asking for the same fork again returns it."""
    source.append("taken", UserMessage(content="t"))
    with pytest.raises(InvalidArgument, match="exists"):
        source.fork("a", 2, "taken")
    source.fork("a", 2, "b")
    assert source.fork("a", 2, "b") == "b"
    with pytest.raises(InvalidArgument):
        source.fork("a", 3, "b")


def test_a_default_id_is_new_each_time(source: SessionStore) -> None:
    """Without new_session_id each fork gets a new id."""
    first, second = source.fork("a", 1), source.fork("a", 1)
    assert first != second and contents(source, first) == ["a1"]


def test_a_fork_is_a_few_hundred_bytes_in_git(source: SessionStore, root: Path) -> None:
    """git stores a fork (fork.json and meta.json) in well under a kilobyte, whatever the source's size."""
    for i in range(200):
        source.append("a", AssistantMessage(content=f"a long answer {i} " * 20))
    source.fork("a", 150, "b")
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@e"]
    subprocess.run([*git[:3], "init", "-q"], check=True)
    subprocess.run([*git, "add", "b"], check=True)
    listed = subprocess.run([*git, "ls-files", "-s", "b"], capture_output=True, text=True, check=True)
    sizes = []
    for line in listed.stdout.splitlines():
        blob = line.split()[1]
        sizes.append(
            int(
                subprocess.run(
                    [*git, "cat-file", "-s", blob], capture_output=True, text=True, check=True
                ).stdout
            )
        )
    assert sorted(Path(line.split("\t")[1]).name for line in listed.stdout.splitlines()) == [
        "fork.json",
        "meta.json",
    ]
    assert sum(sizes) < 600
    assert (root / "a" / "messages.jsonl").stat().st_size > 100_000


def test_a_rewritten_source_is_reported_and_strict_load_raises(source: SessionStore, root: Path) -> None:
    """When the source's record at the branch is no longer the one branched from, verify and strict load say so."""
    source.fork("a", 3, "b")
    log = root / "a" / "messages.jsonl"
    log.write_bytes(b"".join(log.read_bytes().splitlines(keepends=True)[:2]))  # the source lost #3..#6
    problems = source.verify("b")
    assert [p.kind for p in problems] == ["bad-fork"]
    with pytest.raises(CorruptSession):
        source.load("b", strict=True)
    assert contents(source, "b") == ["a1", "a2"]  # what can be read is read


def test_a_damaged_fork_file_is_reported_and_blocks_appends(source: SessionStore, root: Path) -> None:
    """A fork.json that fails its checksum: verify reports bad-fork, and an append is refused rather than misnumbered."""
    source.fork("a", 3, "b")
    path = root / "b" / "fork.json"
    path.write_bytes(path.read_bytes().replace(b'"sequence":3', b'"sequence":4'))
    assert [p.kind for p in source.verify("b")] == ["bad-fork"]
    fresh = SessionStore(root)
    with pytest.raises(UnsupportedFormat, match=r"fork\.json"):
        fresh.append("b", UserMessage(content="x"))


def test_the_command_forks(source: SessionStore, root: Path) -> None:
    """jsonl-store fork ID SEQ --id NEW prints the new id; show then prints the source's records."""
    done = subprocess.run(
        [sys.executable, "-m", "jsonl_store.cli", "--root", str(root), "fork", "a", "2", "--id", "b"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("b")
    assert contents(source, "b") == ["a1", "a2"]
    again = subprocess.run(
        [sys.executable, "-m", "jsonl_store.cli", "--root", str(root), "fork", "a", "99"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert again.returncode == 2 and "99" in again.stderr


@settings(max_examples=30, deadline=None)
@given(
    plan=st.lists(st.tuples(st.integers(0, 3), st.integers(1, 8), st.integers(0, 3)), min_size=1, max_size=6)
)
def test_a_forks_history_is_its_sources_prefix_then_its_own(
    tmp_path_factory: pytest.TempPathFactory, plan: list[tuple[int, int, int]]
) -> None:
    """Random forks of forks with appends: every session's records are the source's prefix and then its own."""
    root = tmp_path_factory.mktemp("forks")
    store = SessionStore(root, durability="none")
    expected: dict[str, list[str]] = {"s0": [f"s0-{i}" for i in range(1, 5)]}
    for text in expected["s0"]:
        store.append("s0", UserMessage(content=text))
    for n, (pick, wanted, extra) in enumerate(plan, start=1):
        names = sorted(expected)
        source_id = names[pick % len(names)]
        history = expected[source_id]
        at = 1 + (wanted - 1) % len(history)
        new = f"s{n}"
        store.fork(source_id, at, new)
        expected[new] = history[:at] + [f"{new}-{i}" for i in range(extra)]
        for text in expected[new][at:]:
            store.append(new, UserMessage(content=text))
    for sid, texts in expected.items():
        assert [t for _, t in record_texts(store, sid)] == texts, sid
        assert [s for s, _ in record_texts(store, sid)] == list(range(1, len(texts) + 1)), sid
        assert contents(store, sid) == texts, sid
    assert store.verify() == []


def test_every_crash_state_of_a_fork_is_no_fork_or_a_whole_one() -> None:
    """Crash anywhere in fork(): the new session is absent or reads the source's prefix, and forking again completes it."""
    fs = SimulatedFileSystem()
    store = SessionStore("/store", fs=fs, on_problem=lambda problem: None)
    for i in range(1, 4):
        store.append("a", UserMessage(content=f"a{i}"))
    store.close()
    start = len(fs.trace)
    store = SessionStore("/store", fs=fs, on_problem=lambda problem: None)
    store.fork("a", 2, "b")
    states = 0
    for state in crash_states(fs, start=start):
        states += 1
        after = SessionStore("/store", fs=state.filesystem(), on_problem=lambda problem: None)
        summary = after.get_session("b")
        if summary is not None:
            assert [str(m.content) for m in after.load("b").messages] == ["a1", "a2"], state.description  # type: ignore[union-attr]
        assert [str(m.content) for m in after.load("a").messages] == ["a1", "a2", "a3"], state.description  # type: ignore[union-attr]
        assert after.fork("a", 2, "b") == "b", state.description
        assert after.append("b", UserMessage(content="b3")) == 3, state.description
        assert [str(m.content) for m in after.load("b").messages] == ["a1", "a2", "b3"], state.description  # type: ignore[union-attr]
    assert states > 5


def _dir(path: Path) -> SessionDir:
    """The session directory at ``path``, on the real file system."""
    return SessionDir(OS_FS, path.name, str(path))


def _dir_stat(mtime_ns: int, ino: int = 7) -> SimpleNamespace:
    """A directory's lstat as `_forks.Absences` reads it: device, inode, change times."""
    return SimpleNamespace(st_dev=1, st_ino=ino, st_mtime_ns=mtime_ns, st_ctime_ns=mtime_ns, st_mode=0o40700)


def test_a_settled_directory_without_a_fork_file_is_not_looked_in_again(tmp_path: Path) -> None:
    """Absence is kept while the directory's lstat is the same, and looked for again once it changes."""
    absences, now = _forks.Absences(), time.time_ns()
    old = _dir_stat(now - 10 * 10**9)
    assert absences.read(_dir(tmp_path), old, now) is None
    (tmp_path / FORK_NAME).write_bytes(b"not a fork line\n")  # made without the times moving
    assert absences.read(_dir(tmp_path), old, now) is None  # the same lstat: not read
    with pytest.raises(_forks.DamagedFork):
        absences.read(_dir(tmp_path), _dir_stat(now - 9 * 10**9), now)  # changed: read


def test_a_directory_changed_within_the_settling_time_is_always_looked_in(tmp_path: Path) -> None:
    """A change in the same clock tick as the look would leave the times as they were: not kept yet."""
    absences, now = _forks.Absences(), time.time_ns()
    recent = _dir_stat(now - _snapshots.SETTLED_NS // 2)
    assert absences.read(_dir(tmp_path), recent, now) is None
    (tmp_path / FORK_NAME).write_bytes(b"not a fork line\n")
    with pytest.raises(_forks.DamagedFork):
        absences.read(_dir(tmp_path), recent, now)


def test_a_fork_file_is_read_every_time(source: SessionStore, root: Path) -> None:
    """Only absence is kept: a fork's own file is read (and judged) on every listing."""
    source.fork("a", 2, "branch")
    absences, now = _forks.Absences(), time.time_ns()
    directory = root / "branch"
    old = _dir_stat(now - 10 * 10**9)
    point = absences.read(_dir(directory), old, now)
    assert point is not None and point.session_id == "a"
    (directory / FORK_NAME).write_bytes(b"damaged\n")
    with pytest.raises(_forks.DamagedFork):
        absences.read(_dir(directory), old, now)


def test_listing_twice_shows_a_fork_made_in_between(source: SessionStore) -> None:
    """list_sessions with its fork-less directories remembered still lists a new fork with its branch."""
    first = {s.session_id: s.fork for s in source.list_sessions()}
    source.fork("a", 2, "later")
    second = {s.session_id: s.fork for s in source.list_sessions()}
    assert "later" not in first and second["later"] is not None and second["later"].sequence == 2
    assert {sid: fork for sid, fork in second.items() if sid != "later"} == first


def test_fork_refuses_a_chain_longer_than_readers_follow(source: SessionStore, root: Path) -> None:
    """The longest chain readers follow reads whole; a fork one past it is refused and makes nothing."""
    tip = "a"
    for n in range(1, _forks.MAX_DEPTH):  # a and 63 forks of forks: 64 sessions, all followed
        branch = source.get_session(tip).message_count  # type: ignore[union-attr]
        tip = source.fork(tip, branch, f"f{n}")
        source.append(tip, UserMessage(content=f"f{n}"))
    assert contents(source, tip) == [f"a{i}" for i in range(1, 7)] + [
        f"f{n}" for n in range(1, _forks.MAX_DEPTH)
    ]
    before = sorted(p.name for p in root.iterdir())
    with pytest.raises(InvalidArgument, match="chain of forks"):
        source.fork(tip, 1, "one-too-many")
    assert sorted(p.name for p in root.iterdir()) == before


def test_a_fork_of_a_source_whose_fork_file_is_damaged_is_refused(source: SessionStore, root: Path) -> None:
    """A source whose own history cannot be followed cannot be forked: the fork would read nothing of it."""
    source.fork("a", 3, "b")
    source.append("b", UserMessage(content="b4"))
    (root / "b" / FORK_NAME).write_bytes(b"damaged\n")
    with pytest.raises(InvalidArgument, match="cannot be read"):
        source.fork("b", 4, "c")
    assert not (root / "c").exists()


def reseal_fork_file(directory: Path, body: bytes) -> None:
    """Write ``fork.json`` as ``body`` with a checksum that holds, as a careful hand or tool would."""
    (directory / FORK_NAME).write_bytes(_codec.seal(body))


def fork_body(directory: Path, **changes: object) -> bytes:
    """The fork file's JSON object without its checksum, with ``changes`` made."""
    fields = orjson.loads((directory / FORK_NAME).read_bytes())
    del fields["crc"]
    fields.update(changes)
    return orjson.dumps(fields)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A store beside the root whose session ``x`` holds records no reader of the root may show."""
    path = tmp_path / "outside"
    with SessionStore(path) as store:
        for i in range(1, 4):
            store.append("x", UserMessage(content=f"outside-{i}"))
    return path


def opened_paths(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every path given to ``os.open`` from now on (the store's file system and search's prefilter call it)."""
    paths: list[str] = []
    real_open = os.open

    def recording_open(path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        paths.append(os.fsdecode(path))
        return real_open(path, flags, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "open", recording_open)
    return paths


@pytest.mark.parametrize(
    "naming",
    ["parent", "absolute", "escaped parent", "root itself", "empty", "symlink to outside"],
)
def test_a_fork_file_naming_no_session_of_the_root_is_bad_fork_and_nothing_outside_is_opened(
    source: SessionStore, root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch, naming: str
) -> None:
    """A re-sealed fork.json naming ../x, an absolute path, a JSON-escaped ../x, '.', '' or a symlinked
    directory: load, records, tail, verify, list, search and export report bad-fork, open nothing
    outside the root, and still read the fork's own records."""
    source.fork("a", 2, "b")
    source.append("b", UserMessage(content="b3"))
    directory = root / "b"
    if naming == "symlink to outside":
        (root / "elsewhere").symlink_to(outside / "x", target_is_directory=True)
    names = {
        "parent": "../outside/x",
        "absolute": str(outside / "x"),
        "escaped parent": "@",  # replaced below by its JSON escapes, which decode to ../outside/x
        "root itself": ".",
        "empty": "",
        "symlink to outside": "elsewhere",
    }
    body = fork_body(directory, session_id=names[naming])
    if naming == "escaped parent":
        body = body.replace(b'"@"', b'"\\u002e\\u002e\\u002foutside\\u002fx"')
    reseal_fork_file(directory, body)
    paths = opened_paths(monkeypatch)
    found: list[Problem] = []
    store = SessionStore(root, on_problem=found.append)
    view = store.load("b")
    assert [str(m.content) for m in view.messages] == ["b3"]  # type: ignore[union-attr]
    assert "bad-fork" in [p.kind for p in view.problems]
    assert [str(r.message.content) for r in store.records("b")] == ["b3"]  # type: ignore[union-attr]
    assert [str(r.message.content) for r in store.tail("b", 5)] == ["b3"]  # type: ignore[union-attr]
    assert "bad-fork" in [p.kind for p in store.verify("b")]
    assert {s.session_id for s in store.list_sessions()} >= {"a", "b"}
    assert [hit.session_id for hit in search(store, "b3")] == ["b"]
    assert list(search(store, "outside-")) == []
    assert "outside-" not in to_markdown(store, "b") and "b3" in to_markdown(store, "b")
    inside = os.path.realpath(root) + os.sep
    assert paths and [p for p in paths if not os.path.realpath(p).startswith(inside)] == []


@pytest.mark.parametrize("branch", [6, 9])
def test_a_branch_at_or_past_the_sources_end_never_hides_the_forks_own_records(
    source: SessionStore, root: Path, branch: int
) -> None:
    """A fork.json naming a branch past its own first record (even past the source's end, 6):
    every record the fork acknowledged is read, after the source's records before it, and bad-fork is reported."""
    source.fork("a", 4, "b")
    assert [source.append("b", UserMessage(content=f"b{i}")) for i in (5, 6, 7)] == [5, 6, 7]
    reseal_fork_file(root / "b", fork_body(root / "b", sequence=branch))
    found: list[Problem] = []
    store = SessionStore(root, on_problem=found.append)
    expected = ["a1", "a2", "a3", "a4", "b5", "b6", "b7"]
    assert contents(store, "b") == expected
    assert record_texts(store, "b") == list(enumerate(expected, start=1))
    assert [str(r.message.content) for r in store.tail("b", 4)] == expected[-4:]  # type: ignore[union-attr]
    assert [r.sequence for r in store.records("b", after=5)] == [6, 7]
    assert "bad-fork" in [p.kind for p in found]
    assert [p.kind for p in store.verify("b")] == ["bad-fork"]


def test_a_fork_reads_its_records_in_its_sources_dialect(store: SessionStore) -> None:
    """A fork of a Codex-shaped session is read as Responses items: its calls are parts and search finds them."""
    call = {
        "type": "function_call",
        "call_id": "c1",
        "name": "shell",
        "arguments": '{"cmd": "ls -la"}',
        "role": "assistant",
    }
    output = {"type": "function_call_output", "call_id": "c1", "output": "total 0", "role": "tool"}
    store.create_session("codex", metadata={"dialect": "openai-responses"})
    store.append_many("codex", [{"role": "user", "content": "list"}, call, output])
    fork = store.fork("codex", 3, "branch")
    summary = store.get_session(fork)
    assert summary is not None and summary.dialect == "openai-responses"
    view = store.load(fork)
    assert [part.kind for record in view.raw_tail for part in view.parts(record)] == [
        "text",
        "tool_call",
        "tool_result",
    ]
    assert {(hit.session_id, hit.kind) for hit in search(store, "ls -la")} == {
        ("codex", "tool_call"),
        ("branch", "tool_call"),
    }
