"""A LangGraph thread continued on two git branches merges with real git into one thread holding both (spec §17, §20).

The store's merge driver (``jsonl-store git setup``, then ``git merge``) keeps both
branches' records; the thread then holds both continuations as LangGraph holds a forked
thread: every checkpoint of each branch readable by its id, with its own messages, and
the newest one the thread's head.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph.checkpoint.base", reason='needs the extra: pip install -e ".[langgraph]"')

from langchain_core.messages import HumanMessage
from langgraph_agent import question, tool_loop

from jsonl_store import SessionStore
from jsonl_store.adapters.langgraph import JsonlCheckpointSaver

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs the git command")

CONFIG: Any = {"configurable": {"thread_id": "chat"}, "recursion_limit": 100}


def run(*argv: str, cwd: Path, home: Path) -> str:
    """Run git or the store's command (by this interpreter) with no user's git config."""
    if argv[0] == "jsonl-store":
        argv = (sys.executable, "-m", "jsonl_store.cli", *argv[1:])
    env = {
        **os.environ,
        "HOME": str(home),
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    done = subprocess.run(list(argv), cwd=cwd, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, (argv, done.stdout, done.stderr)
    return done.stdout + done.stderr


def turn(repo: Path, text: str) -> list[str]:
    """One more turn on the thread in ``repo``'s store; the thread's message contents after it."""
    graph = tool_loop(JsonlCheckpointSaver(str(repo / "threads")), calls=3)
    graph.invoke({"messages": [HumanMessage(content=text)]}, CONFIG)
    return [str(m.content) for m in graph.get_state(CONFIG).values["messages"]]


def checkpoints(repo: Path) -> int:
    return len(list(JsonlCheckpointSaver(str(repo / "threads")).list(CONFIG)))


def test_a_thread_continued_on_two_branches_merges_into_both_continuations(tmp_path: Path) -> None:
    """After git merge, each branch's last checkpoint reads as that branch left it, and the head is the newer."""
    repo, home = tmp_path / "repo", tmp_path / "home"
    repo.mkdir()
    home.mkdir()
    run("git", "init", "-q", "-b", "main", cwd=repo, home=home)
    tool_loop(JsonlCheckpointSaver(str(repo / "threads")), calls=2).invoke(question(), CONFIG)
    run("jsonl-store", "--root", "threads", "git", "setup", cwd=repo, home=home)
    run("git", "add", "-A", cwd=repo, home=home)
    run("git", "commit", "-qm", "base", cwd=repo, home=home)
    base = checkpoints(repo)

    run("git", "checkout", "-q", "-b", "side", cwd=repo, home=home)
    side = turn(repo, "asked on side")
    side_head = JsonlCheckpointSaver(str(repo / "threads")).get_tuple(CONFIG)
    side_new = checkpoints(repo) - base
    run("git", "add", "-A", cwd=repo, home=home)
    run("git", "commit", "-qm", "side", cwd=repo, home=home)
    run("git", "checkout", "-q", "main", cwd=repo, home=home)
    main = turn(repo, "asked on main")
    main_new = checkpoints(repo) - base
    run("git", "add", "-A", cwd=repo, home=home)
    run("git", "commit", "-qm", "main", cwd=repo, home=home)

    out = run("git", "merge", "-q", "side", "-m", "merge side", cwd=repo, home=home)
    assert "CONFLICT" not in out
    assert SessionStore(str(repo / "threads")).verify() == []
    saver = JsonlCheckpointSaver(str(repo / "threads"))
    graph = tool_loop(saver, calls=3)
    assert side_head is not None
    side_config: Any = {**CONFIG, "configurable": side_head.config["configurable"]}
    assert [str(m.content) for m in graph.get_state(side_config).values["messages"]] == side
    assert [str(m.content) for m in graph.get_state(CONFIG).values["messages"]] == main  # main's is newer
    assert checkpoints(repo) == base + side_new + main_new  # every checkpoint of both branches
    assert side_new > 0 and main_new > 0
