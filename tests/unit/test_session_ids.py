"""`SessionStore.session_ids`: every entry that may be a session, which is what `verify()` goes through."""

from __future__ import annotations

import os
from pathlib import Path

from jsonl_store import SessionStore, UserMessage


def test_session_ids_names_listed_and_unlisted_sessions(tmp_path: Path) -> None:
    """session_ids names every session directory, one list_sessions leaves out (a symlink) too,
    and verify over them is verify()."""
    store = SessionStore(tmp_path)
    store.append("b", UserMessage(content="x"))
    store.append("a", UserMessage(content="y"))
    (tmp_path / "README.md").write_text("not a session")
    os.symlink(tmp_path / "a", tmp_path / "link")
    assert store.session_ids() == ["a", "b", "link"]
    assert [s.session_id for s in store.list_sessions()] == ["a", "b"]
    assert [p for sid in store.session_ids() for p in store.verify(sid)] == store.verify()
    assert store.verify() and SessionStore(tmp_path / "missing").session_ids() == []
