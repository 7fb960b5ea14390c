"""Whole-list saves from several processes: `checkpoint` appends only what is new (issue 4).

The runner lists are built as in `_child.py`: ``m0, m1, ...`` is the list every runner
shares; ``name:i`` are one writer's own messages, which no runner but that one ever sees.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from jsonl_store import SessionStore

SID = "checkpointed-session"


def shared(index: int) -> dict[str, Any]:
    """Message ``index`` of the shared runner list (the same as `_child.shared_message`)."""
    return {"role": "user", "id": f"m{index}", "content": f"shared message {index}"}


def ids_in_log(root: Path) -> list[str]:
    """The message ids of the raw log, in file order (records without an id left out)."""
    return [r.message["id"] for r in SessionStore(root).records(SID) if isinstance(r.message, dict)]


def context_ids(root: Path) -> list[str]:
    """The message ids of the session context a model would be given."""
    return [m["id"] for m in SessionStore(root).load(SID).context if isinstance(m, dict)]


def sequences(line: str) -> list[int]:
    """A child's answer: the JSON list of sequences one checkpoint appended."""
    value = json.loads(line)
    assert isinstance(value, list) and all(isinstance(v, int) for v in value), line
    return value


def test_two_processes_checkpointing_the_same_list_store_each_message_once(
    tmp_path: Path, children: Any
) -> None:
    """Two runners saving the same growing list at the same moments never store a message twice."""
    runners = [children.start("checkpoint_rounds", root=str(tmp_path), sid=SID) for _ in range(2)]
    children.ready(*runners)
    rng = random.Random(4)
    length = 0
    for round_ in range(30):
        previous, length = length, length + rng.randint(0, 5)
        for runner in runners if round_ % 2 else runners[::-1]:
            runner.send(str(length))
        appended = [sequence for runner in runners for sequence in sequences(runner.readline())]
        assert sorted(appended) == list(range(previous + 1, length + 1)), f"round {round_}"
    for runner in runners:
        runner.finish()
    assert ids_in_log(tmp_path) == [f"m{i}" for i in range(length)]
    view = SessionStore(tmp_path).load(SID)
    assert view.snapshot is None and view.problems == []


def test_stale_runner_lists_never_remove_messages_appended_by_other_processes(
    tmp_path: Path, children: Any
) -> None:
    """Runners saving lists that miss each other's messages, beside an appender, lose and double nothing."""
    prefix = 3
    SessionStore(tmp_path).checkpoint(SID, [shared(i) for i in range(prefix)])
    runner_a = children.start(
        "checkpoint_own", root=str(tmp_path), sid=SID, name="a", prefix=prefix, count=40
    )
    runner_b = children.start(
        "checkpoint_own", root=str(tmp_path), sid=SID, name="b", prefix=prefix, count=40
    )
    appender = children.start("append_plain", root=str(tmp_path), sid=SID, name="c", count=80)
    children.go(runner_a, runner_b, appender)
    for child in (runner_a, runner_b, appender):
        child.result()

    ids = ids_in_log(tmp_path)
    assert len(ids) == len(set(ids)), "a message was stored twice"
    assert ids[:prefix] == [f"m{i}" for i in range(prefix)]
    for name, count in (("a", 40), ("b", 40), ("c", 80)):
        assert [i for i in ids if i.startswith(f"{name}:")] == [f"{name}:{n}" for n in range(count)], name
    assert len(ids) == prefix + 160
    # Nothing was rewritten: no snapshot hides another process's messages from the context.
    view = SessionStore(tmp_path).load(SID)
    assert view.snapshot is None and view.problems == []
    assert context_ids(tmp_path) == ids


def test_stale_runner_list_that_edits_history_keeps_messages_appended_by_another_process(
    tmp_path: Path, children: Any
) -> None:
    """A stale runner list that edits history keeps another process's newer messages in the context."""
    runner = SessionStore(tmp_path)
    runner.checkpoint(SID, [shared(0), shared(1), shared(2)])
    appender = children.start("append_plain", root=str(tmp_path), sid=SID, name="c", count=2)
    children.go(appender)
    appender.result()
    # The runner never saw c:0 and c:1; it replaces m1 by an edited message and adds m3.
    edited = {"role": "user", "id": "m1-edited", "content": "edited"}
    runner.checkpoint(SID, [shared(0), edited, shared(2), shared(3)])
    assert {"c:0", "c:1"} <= set(ids_in_log(tmp_path))
    context = context_ids(tmp_path)
    assert [context.count(i) for i in ("c:0", "c:1")] == [1, 1], context
    assert [i for i in context if not i.startswith("c:")] == ["m0", "m1-edited", "m2", "m3"]
