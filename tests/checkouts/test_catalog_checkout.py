"""A ``git checkout`` that rewrites sessions under a built catalog: the next answers are the checked-out files'."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from jsonl_store import OsFileSystem, SessionStore, UserMessage
from jsonl_store._format.names import CATALOG_DIR
from jsonl_store.search import search_ranked

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs the git command")


def git(*args: str, cwd: Path) -> str:
    """Run git with no user's or system's config taking part."""
    env = {
        **os.environ,
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }  # fmt: skip
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def commit(repo: Path, message: str) -> None:
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", message, cwd=repo)


def scanned(root: Path) -> list[object]:
    with SessionStore(root, fs=OsFileSystem()) as store:
        return list(store.list_sessions())


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository whose store has two sessions committed on main."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git("init", "-q", "-b", "main", cwd=repo)
    with SessionStore(repo / "sessions") as store:
        store.append("chat", UserMessage(content="the base of the chat"), title="Base")
        store.append("other", UserMessage(content="another base session"))
    commit(repo, "base")
    return repo


def test_the_catalog_is_never_committed(repo: Path) -> None:
    """After a listing and a ranked search built it, git sees nothing new: ``.catalog`` ignores itself."""
    with SessionStore(repo / "sessions") as store:
        store.list_sessions()
        assert search_ranked(store, "base")
    assert (repo / "sessions" / CATALOG_DIR / "catalog.sqlite3").exists()
    assert git("status", "--porcelain", "--ignored=no", cwd=repo) == ""
    git("add", "-A", cwd=repo)
    assert CATALOG_DIR not in git("ls-files", cwd=repo)


def test_a_checkout_that_rewrites_sessions_is_seen(repo: Path) -> None:
    """A branch appends, retitles, adds and removes sessions; checking out main then gives main's answers."""
    root = repo / "sessions"
    git("checkout", "-q", "-b", "feature", cwd=repo)
    with SessionStore(root) as store:
        store.append("chat", UserMessage(content="a zebra crossed on the feature branch"))
        store.update_session("chat", title="Feature")
        store.append("new", UserMessage(content="only on the feature branch"))
        store.delete_session("other")
    commit(repo, "feature")
    with SessionStore(root) as store:
        store.list_sessions()
        assert [hit.session_id for hit in search_ranked(store, "zebra")] == ["chat"]
        git("checkout", "-q", "main", cwd=repo)
        listed = store.list_sessions()
        assert listed == scanned(root)
        assert {s.session_id for s in listed} == {"chat", "other"}
        assert {s.title for s in listed} == {"Base", None}
        assert search_ranked(store, "zebra") == []
        assert [hit.session_id for hit in search_ranked(store, "another")] == ["other"]
        git("checkout", "-q", "feature", cwd=repo)
        assert store.list_sessions() == scanned(root)
        assert [hit.session_id for hit in search_ranked(store, "zebra")] == ["chat"]
