"""A store keeps working when another process removes its session directory or its root.

The removal is done by a real other process (``rm -rf``) or by a second store, while the
first store holds its descriptors and caches open.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from helpers import meta_path, usage_path

from jsonl_store import AssistantMessage, ModelUsage, ParentMismatch, SessionStore, UserMessage
from jsonl_store._format.names import GITIGNORE_NAME, GITIGNORE_TEXT


def _remove_in_another_process(path: Path) -> None:
    subprocess.run(["rm", "-rf", "--", str(path)], check=True)
    assert not path.exists()


@pytest.mark.parametrize("durability", ["fsync", "none"])
def test_record_usage_after_another_process_removed_the_session_remakes_it(
    root: Path, durability: str
) -> None:
    """record_usage on a session whose directory was removed makes the session again, as append does."""
    store = SessionStore(root, durability="fsync" if durability == "fsync" else "none")
    store.append("s", UserMessage(content="hello"), title="first life")
    store.record_usage("s", ModelUsage(input_tokens=1))  # the usage log is open now
    _remove_in_another_process(root / "s")
    store.record_usage("s", {"input_tokens": 7, "model": "m"})
    assert meta_path(root, "s").exists() and usage_path(root, "s").exists()
    fresh = SessionStore(root)
    assert fresh.usage_totals("s") == ModelUsage(input_tokens=7)
    summary = fresh.get_session("s")
    assert summary is not None and summary.title is None  # a new session: defaults, not the old title
    assert store.append("s", UserMessage(content="again")) == 1
    store.close()


def test_record_usage_after_another_store_deleted_the_session_remakes_it(root: Path) -> None:
    """After delete_session by another store, record_usage makes a new session with its metadata."""
    store = SessionStore(root, durability="none")
    store.append("s", UserMessage(content="hello"))
    store.record_usage("s", ModelUsage(input_tokens=1))
    assert SessionStore(root).delete_session("s")
    store.record_usage("s", ModelUsage(output_tokens=2))
    assert meta_path(root, "s").exists()
    assert SessionStore(root).usage_totals("s") == ModelUsage(output_tokens=2)
    store.close()


@pytest.mark.parametrize("next_call", ["append-same", "append-other", "record_usage"])
def test_store_whose_root_was_removed_writes_its_gitignore_again(root: Path, next_call: str) -> None:
    """When a store has to make its root again, the root gets its .gitignore again."""
    store = SessionStore(root, durability="none")
    store.append("s", UserMessage(content="hello"))
    store.record_usage("s", ModelUsage(input_tokens=1))
    _remove_in_another_process(root)
    if next_call == "append-same":
        assert store.append("s", UserMessage(content="again")) == 1
    elif next_call == "append-other":
        assert store.append("t", UserMessage(content="new")) == 1
    else:
        store.record_usage("s", ModelUsage(input_tokens=2))
    assert (root / GITIGNORE_NAME).read_text() == GITIGNORE_TEXT
    store.close()


def test_a_store_that_knew_the_session_before_it_was_made_anew_with_a_parent_appends(tmp_path: Path) -> None:
    """Store 1 made 'c' (usage only, no parent); store 0 deleted it and made it anew with parent 'a': store 1 appends."""
    one, two = SessionStore(tmp_path, durability="none"), SessionStore(tmp_path, durability="none")
    two.record_usage("c", ModelUsage(input_tokens=1))
    one.delete_session("c")
    one.append("c", AssistantMessage(content="x"), parent_session_id="a")
    assert two.append_many("c", [AssistantMessage(content="y")], parent_session_id="a") == [2]
    with pytest.raises(ParentMismatch):
        two.append("c", AssistantMessage(content="z"), parent_session_id="b")  # a real mismatch stays one
    summary = SessionStore(tmp_path).get_session("c")
    assert summary is not None and summary.parent_session_id == "a" and summary.message_count == 2


def test_fork_into_an_id_another_store_deleted_gives_the_fork_its_metadata(tmp_path: Path) -> None:
    """A store that wrote a session another store then deleted makes a complete fork under that id."""
    one, two = SessionStore(tmp_path, durability="none"), SessionStore(tmp_path, durability="none")
    one.append_many("src", [UserMessage(content="a"), AssistantMessage(content="b")])
    one.append("f", UserMessage(content="first life"), title="old")
    assert two.delete_session("f")
    assert one.fork("src", 2, "f") == "f"
    assert meta_path(tmp_path, "f").exists()
    summary = two.get_session("f")
    assert summary is not None and summary.fork is not None and summary.title is None
    assert "f" in [s.session_id for s in two.list_sessions()]


def test_create_session_of_an_id_another_store_deleted_makes_it_again(tmp_path: Path) -> None:
    """create_session through a store that knew a session another store deleted makes it, with its arguments."""
    one, two = SessionStore(tmp_path, durability="none"), SessionStore(tmp_path, durability="none")
    one.append("s", UserMessage(content="first life"), title="old")
    assert two.delete_session("s")
    summary = one.create_session("s", title="new")
    assert summary.title == "new" and summary.message_count == 0
    again = two.get_session("s")
    assert again is not None and again.title == "new"


def test_checkpoint_after_another_store_deleted_the_session_makes_it_again(tmp_path: Path) -> None:
    """A store's checkpoint of a session another store deleted (lock file and all) stores the list anew."""
    one, two = SessionStore(tmp_path, durability="none"), SessionStore(tmp_path, durability="none")
    first = [UserMessage(id="u1", content="a")]
    one.checkpoint("s", first)
    assert two.delete_session("s")
    assert one.checkpoint("s", [*first, AssistantMessage(id="a1", content="b")]) == [1, 2]
    assert [r.message.id for r in two.records("s")] == ["u1", "a1"]  # type: ignore[union-attr]


def test_checkpoint_remaking_a_session_another_store_deleted_keeps_none_of_its_old_labels(
    tmp_path: Path,
) -> None:
    """A store's checkpoint of a session another store deleted makes it with the save's labels, not an earlier append's title."""
    one, two = SessionStore(tmp_path, durability="none"), SessionStore(tmp_path, durability="none")
    one.append("s", UserMessage(id="u0", content="old"), title="old title", agent_name="old agent")
    assert two.delete_session("s")
    assert one.checkpoint("s", [UserMessage(id="u1", content="a")]) == [1]
    made = two.get_session("s")
    assert made is not None and (made.title, made.agent_name) == (None, None)
    assert two.delete_session("s")
    assert one.checkpoint("s", [UserMessage(id="u2", content="b")], title="new title") == [1]
    made = two.get_session("s")
    assert made is not None and made.title == "new title"
