"""Stores in git checkouts that convert line endings lose nothing (spec §8.4, §9.3), with real git.

`core.autocrlf=true` is Git for Windows' default; on any platform it makes a checkout turn
every ``\\n`` of a text file into ``\\r\\n``. The store's own ``.gitattributes`` keeps that
from happening to new clones; a store committed before it existed is still read whole,
and its next writer restores the bytes instead of cutting the history away.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import classes

from jsonl_store import CompactedMessage, Problem, SessionStore, UserMessage
from jsonl_store._format.names import GITATTRIBUTES_NAME, GITATTRIBUTES_TEXT

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs the git command")

SID = "chat"
FILES = ("messages.jsonl", "usage.jsonl", "snapshot-00000001.json", "meta.json")


def git(*args: str, cwd: Path) -> str:
    env = {
        **os.environ,
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }  # fmt: skip
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def _repository(tmp_path: Path, *, attributes: bool) -> tuple[Path, dict[str, bytes]]:
    """A repository whose ``sessions/`` store holds one compacted session with usage."""
    repo = tmp_path / "origin"
    repo.mkdir()
    git("init", "-q", cwd=repo)
    store = SessionStore(repo / "sessions")
    for n in range(6):
        store.append(SID, UserMessage(id=f"m{n}", content=f"message {n}"), title="Line ends")
    store.snapshot(SID, CompactedMessage(id="c1", content="the first four"), 4, 0)
    store.record_usage(SID, {"input_tokens": 10, "output_tokens": 2, "model": "m"})
    store.close()
    if not attributes:  # a store written before jsonl_store wrote .gitattributes
        (repo / "sessions" / GITATTRIBUTES_NAME).unlink()
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "sessions", cwd=repo)
    written = {name: (repo / "sessions" / SID / name).read_bytes() for name in FILES}
    return repo, written


def _clone(repo: Path, target: Path) -> Path:
    git("-c", "core.autocrlf=true", "clone", "-q", str(repo), str(target), cwd=repo.parent)
    git("config", "core.autocrlf", "true", cwd=target)
    return target


def test_the_store_gitattributes_keeps_an_autocrlf_clone_byte_for_byte(tmp_path: Path) -> None:
    """A core.autocrlf=true clone of a store holds exactly the bytes the store wrote."""
    repo, written = _repository(tmp_path, attributes=True)
    clone = _clone(repo, tmp_path / "clone")
    for name, data in written.items():
        assert (clone / "sessions" / SID / name).read_bytes() == data
    assert SessionStore(clone / "sessions").verify() == []


def test_an_autocrlf_clone_without_gitattributes_reads_every_record(tmp_path: Path) -> None:
    """Every line ends in \\r\\n in the clone, yet load, records, usage and list give everything."""
    repo, _ = _repository(tmp_path, attributes=False)
    clone = _clone(repo, tmp_path / "clone")
    directory = clone / "sessions" / SID
    assert all(b"\r\n" in (directory / name).read_bytes() for name in FILES)  # git converted them
    reported: list[Problem] = []
    store = SessionStore(clone / "sessions", on_problem=reported.append)
    view = store.load(SID)
    assert view.snapshot is not None and view.snapshot.version == 1  # found by its boundary record
    assert [m.id for m in classes(view.messages)] == ["c1", "m4", "m5"]
    assert [r.sequence for r in store.records(SID)] == [1, 2, 3, 4, 5, 6]
    assert store.usage_totals(SID).input_tokens == 10
    [summary] = store.list_sessions()
    assert summary.message_count == 6
    assert {p.kind for p in reported} == {"text-conversion"}
    # verify names one problem per converted file, with what repair does about it.
    found = store.verify(SID)
    assert sorted((Path(p.path).name, p.kind) for p in found) == sorted((n, "text-conversion") for n in FILES)


def test_the_first_append_to_a_converted_log_restores_it_and_cuts_nothing(tmp_path: Path) -> None:
    """The append restores the written bytes and numbers on from 6; after repair git sees one added line."""
    repo, written = _repository(tmp_path, attributes=False)
    clone = _clone(repo, tmp_path / "clone")
    directory = clone / "sessions" / SID
    reported: list[Problem] = []
    store = SessionStore(clone / "sessions", on_problem=reported.append)
    assert store.append(SID, UserMessage(id="m6", content="from the clone")) == 7
    assert [p.kind for p in reported] == ["text-conversion"]
    assert not [name for name in os.listdir(directory) if ".cut-" in name]  # no sidecar
    data = (directory / "messages.jsonl").read_bytes()
    assert data.startswith(written["messages.jsonl"]) and b"\r" not in data
    assert [r.sequence for r in SessionStore(clone / "sessions").records(SID)] == [1, 2, 3, 4, 5, 6, 7]
    # The store root now has .gitattributes, so git keeps session files' bytes: the files
    # this checkout converted show as changed until repair restores them.
    store.repair(SID)
    git("add", "-A", cwd=clone)
    numstat = git("diff", "--cached", "--numstat", cwd=clone).split()
    attributes = str(len(GITATTRIBUTES_TEXT.splitlines()))
    assert numstat == [attributes, "0", "sessions/.gitattributes", "1", "0", f"sessions/{SID}/messages.jsonl"]


def test_repair_restores_every_converted_file_and_changes_no_record(tmp_path: Path) -> None:
    """repair gives back exactly the bytes that were committed, for the log, usage and snapshot."""
    repo, written = _repository(tmp_path, attributes=False)
    clone = _clone(repo, tmp_path / "clone")
    store = SessionStore(clone / "sessions", on_problem=lambda problem: None)
    before = [r.id for r in store.records(SID)]
    repaired = store.repair(SID)
    assert {p.kind for p in repaired} == {"text-conversion"}
    for name, data in written.items():
        assert (clone / "sessions" / SID / name).read_bytes() == data
    assert store.verify(SID) == []
    assert [r.id for r in store.records(SID)] == before
    assert store.repair(SID) == []  # idempotent


def test_a_store_root_without_gitattributes_gets_one_at_the_next_write(tmp_path: Path) -> None:
    """An existing store root gains .gitattributes the first time a store writes to it."""
    repo, _ = _repository(tmp_path, attributes=False)
    root = repo / "sessions"
    SessionStore(root).append(SID, UserMessage(content="one more"))
    lines = (root / GITATTRIBUTES_NAME).read_text().splitlines()
    assert "/*/** -text -ident -filter -working-tree-encoding" in lines
    assert "/*/messages.jsonl merge=jsonl-store" in lines
    # And git honours it: the log is no text file to convert.
    attributes = git("check-attr", "text", "--", f"sessions/{SID}/messages.jsonl", cwd=repo)
    assert attributes.strip().endswith("text: unset")


def test_a_parent_repository_filter_or_ident_never_touches_session_files(tmp_path: Path) -> None:
    """Parent attributes asking for $Id$ expansion, an eol and a filter do not reach session files."""
    repo = tmp_path / "origin"
    repo.mkdir()
    git("init", "-q", cwd=repo)
    (repo / ".gitattributes").write_text(
        "*.jsonl ident text eol=crlf filter=upper\n*.json ident text eol=crlf\n"
    )
    git("config", "filter.upper.clean", "tr a-z A-Z", cwd=repo)
    git("config", "filter.upper.smudge", "cat", cwd=repo)
    store = SessionStore(repo / "sessions")
    store.append(SID, UserMessage(content="$Id$ stays as it is"))
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "sessions", cwd=repo)
    for name in ("messages.jsonl", "meta.json"):
        path = f"sessions/{SID}/{name}"
        attributes = git(
            "check-attr", "text", "ident", "filter", "working-tree-encoding", "--", path, cwd=repo
        )
        assert attributes.count(": unset") == 4, attributes
        # What git stored is exactly what the store wrote.
        assert git("show", f"HEAD:{path}", cwd=repo).encode() == (repo / path).read_bytes()


def test_git_ignores_what_a_crashed_delete_or_allowlist_write_leaves_and_keeps_the_rest(
    tmp_path: Path,
) -> None:
    """Real git ignores a session renamed away by a crashed delete and the allowlist's temporaries."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git("init", "-q", cwd=repo)
    store = SessionStore(repo / "sessions")
    store.append(SID, UserMessage(id="m1", content="kept"))
    store.append("gone", UserMessage(id="m2", content="deleted on purpose"))
    store.close()
    sessions = repo / "sessions"
    # What a delete that crashed after its rename leaves (spec §9.5), and a torn allowlist write.
    (sessions / "gone").rename(sessions / ".gone.deleted")
    (sessions / ".jsonl-store-allow.0123456789ab.tmp").write_text("0123456789abcdef\n")
    (sessions / ".jsonl-store-allow").write_text("0123456789abcdef\n")
    status = git("status", "--porcelain", "--ignored", "--untracked-files=all", cwd=repo).splitlines()
    ignored = {line[3:] for line in status if line.startswith("!! ")}
    untracked = {line[3:] for line in status if line.startswith("?? ")}
    assert "sessions/.gone.deleted/messages.jsonl" in ignored
    assert not [path for path in untracked if ".deleted" in path]
    assert "sessions/.jsonl-store-allow.0123456789ab.tmp" in ignored
    assert {
        "sessions/.jsonl-store-allow",
        f"sessions/{SID}/messages.jsonl",
        f"sessions/{SID}/meta.json",
    } <= untracked
