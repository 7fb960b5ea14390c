"""A LangGraph run killed with SIGKILL mid-step resumes, in a new process, from its last checkpoint.

The child (`langgraph_agent.py`) runs a graph whose super-steps hold two parallel tasks on
``JsonlCheckpointSaver``; in round 2 the fast task finishes (LangGraph saves its writes
with ``put_writes``) while the slow one is still running, and the test kills the process
there. LangGraph's contract for a resume: start from the last committed checkpoint, and
do not run again a task whose writes were saved (``pending_writes``), only the ones that
did not finish. A second test kills the usual tool loop three times at random points (a
step, a put, an fsync) and resumes it each time in a new process.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph.checkpoint.base", reason='needs the extra: pip install -e ".[langgraph]"')

from langgraph.checkpoint.memory import InMemorySaver
from langgraph_agent import fan_out, question, tool_loop

from jsonl_store import SessionStore
from jsonl_store.adapters.langgraph import JsonlCheckpointSaver

CHILD = Path(__file__).parents[1] / "langgraph_agent.py"
ROUNDS = 4
#: Safety net for a child that never reaches the kill point; far above a healthy run.
DEADLINE = 120


def child(root: Path, marks: Path, mode: str, rounds: int = ROUNDS) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(CHILD), str(root), "thread-k", str(marks), str(rounds), mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_a_run_killed_mid_step_resumes_from_its_last_checkpoint_keeping_the_finished_tasks_writes(
    tmp_path: Path,
) -> None:
    """After SIGKILL inside a step, the resumed run skips the task whose writes were saved and ends as an uninterrupted run."""
    root, marks = tmp_path / "store", tmp_path / "marks"
    with child(root, marks, "start") as victim:
        try:
            assert victim.stdout is not None
            line = victim.stdout.readline()  # blocks until the slow task of round 2 is running
        finally:
            victim.send_signal(signal.SIGKILL)
            _, err = victim.communicate(timeout=DEADLINE)
    assert line == "in-slow\n", err
    assert victim.returncode == -signal.SIGKILL

    latest = JsonlCheckpointSaver(str(root)).get_tuple({"configurable": {"thread_id": "thread-k"}})
    assert latest is not None
    saved = [(channel, value) for _, channel, value in latest.pending_writes or () if channel == "messages"]
    assert [m.content for _, messages in saved for m in messages] == ["fast 2"]

    with child(root, marks, "resume") as resumed:
        out, err = resumed.communicate(timeout=DEADLINE)
    assert resumed.returncode == 0, err
    runs = marks.read_text(encoding="utf-8").splitlines()
    assert runs.count("fast 2") == 1  # its writes were kept: not run again
    assert runs.count("slow 2") == 2  # killed once, run again on resume
    assert runs.count("agent 2") == 1  # the step before the kill is not redone

    def nothing(name: str, made: int) -> None:
        del name, made

    expected: Any = fan_out(InMemorySaver(), ROUNDS, nothing).invoke(
        question(), {"configurable": {"thread_id": "x"}, "recursion_limit": 100}
    )
    assert json.loads(out) == [m.content for m in expected["messages"]]
    # What the kill left is the normal remains of a crash at most, never damage.
    problems = SessionStore(str(root)).verify("thread-k")
    assert {p.kind for p in problems} <= {"torn-tail", "leftover-temp"}


def test_a_tool_loop_killed_at_random_moments_ends_as_an_uninterrupted_run(tmp_path: Path) -> None:
    """Killed three times at random points (inside writes too), each time resumed in a new process: the same messages as one run."""
    root, marks = tmp_path / "store", tmp_path / "marks"
    rng = random.Random(2026)
    calls = 60
    config: Any = {"configurable": {"thread_id": "thread-k"}, "recursion_limit": 1000}
    expected = [m.content for m in tool_loop(InMemorySaver(), calls).invoke(question(), config)["messages"]]
    for _ in range(3):
        with child(root, marks, "loop", calls) as victim:
            try:
                assert victim.stdout is not None
                line = victim.stdout.readline()
                time.sleep(
                    rng.uniform(0.3, 0.9)
                )  # after start-up (about 0.3 s here): a step, a put, an fsync
            finally:
                victim.send_signal(signal.SIGKILL)
                _, err = victim.communicate(timeout=DEADLINE)
        assert line == "started\n", err
        # What a kill leaves is the state of a committed checkpoint: a prefix of the run.
        saved = tool_loop(JsonlCheckpointSaver(str(root)), calls).get_state(config).values
        contents = [m.content for m in saved.get("messages", [])]
        assert contents == expected[: len(contents)]
    with child(root, marks, "loop", calls) as resumed:
        out, err = resumed.communicate(timeout=DEADLINE)
    assert resumed.returncode == 0, err
    assert json.loads(out.splitlines()[-1]) == expected
    problems = SessionStore(str(root)).verify("thread-k")
    assert {p.kind for p in problems} <= {"torn-tail", "leftover-temp"}
