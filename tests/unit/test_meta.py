"""Scenario tests for session metadata: update_session merges, origins, compare-and-swap."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest
from helpers import log_path, meta_path, read_tree

from jsonl_store import (
    InvalidArgument,
    InvalidMessage,
    MetadataConflict,
    ReadOnlySession,
    SessionNotFound,
    SessionStore,
    SessionSummary,
    UnsupportedFormat,
    UserMessage,
)
from jsonl_store._session import meta as _meta
from jsonl_store._session.meta import SessionMeta
from jsonl_store.testing import SimulatedFileSystem


def user(text: str = "hi") -> UserMessage:
    """A user turn."""
    return UserMessage(content=text)


def fresh_meta(**fields: object) -> SessionMeta:
    """A metadata record as a new session has it."""
    return SessionMeta(created_at=datetime(2024, 1, 1, tzinfo=UTC), **fields)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------
# update_session through the store
# ---------------------------------------------------------------------------------------


def test_update_title_changes_only_the_title(store: SessionStore) -> None:
    """A rename leaves pinned, metadata, agent, parent and type as they were."""
    store.append("p", user())
    store.append("s", user(), title="old", agent_name="bot", parent_session_id="p", session_type=2)
    store.update_session("s", pinned=True, metadata={"a": 1})
    summary = store.update_session("s", title="new")
    assert summary.title == "new"
    assert (summary.pinned, summary.metadata, summary.agent_name) == (True, {"a": 1}, "bot")
    assert (summary.parent_session_id, summary.session_type) == ("p", 2)
    assert summary.title_version == 1


def test_update_metadata_merges_keys(store: SessionStore) -> None:
    """Metadata updates merge key by key; keys not named stay."""
    store.append("s", user())
    store.update_session("s", metadata={"a": 1, "b": 2})
    summary = store.update_session("s", metadata={"b": 3, "c": {"deep": [1, 2**80]}})
    assert summary.metadata == {"a": 1, "b": 3, "c": {"deep": [1, 2**80]}}
    assert summary.title is None and summary.pinned is False


def test_remove_metadata_deletes_only_named_keys(store: SessionStore) -> None:
    """remove_metadata drops the named keys and leaves the rest."""
    store.append("s", user())
    store.update_session("s", metadata={"a": 1, "b": 2})
    summary = store.update_session("s", remove_metadata=["a", "missing"])
    assert summary.metadata == {"b": 2}


def test_two_stores_updating_different_fields_never_clobber_each_other(root: Path) -> None:
    """A UI rename and a runtime metadata update through different stores both survive."""
    ui = SessionStore(root, durability="none")
    runtime = SessionStore(root, durability="none")
    ui.append("s", user())
    ui.update_session("s", title="renamed by user")
    runtime.update_session("s", metadata={"turns": 3}, origin="runtime")
    ui.update_session("s", pinned=True)
    summary = runtime.get_session("s")
    assert summary is not None
    assert (summary.title, summary.metadata, summary.pinned) == ("renamed by user", {"turns": 3}, True)


def _fresh_summary(root: Path, session_id: str) -> SessionSummary:
    """The session's summary as a store that never wrote it reads it from the files."""
    with SessionStore(root, durability="none") as reader:
        summary = reader.get_session(session_id)
    assert summary is not None
    return summary


def test_update_summary_is_what_a_fresh_reader_sees(store: SessionStore, root: Path) -> None:
    """The summary update_session returns equals the one read from the files by another store."""
    store.append("s", user("one"))
    store.append_many("s", [user("two"), user("three")])
    summary = store.update_session("s", title="t")
    assert summary.message_count == 3
    assert summary == _fresh_summary(root, "s")


def test_update_summary_counts_what_another_process_appended(store: SessionStore, root: Path) -> None:
    """Records another process appended after this store's last append are in the summary."""
    store.append("s", user("mine"))
    code = (
        "import sys; from jsonl_store import SessionStore, UserMessage;"
        "SessionStore(sys.argv[1], durability='none').append_many('s', [UserMessage(content='a'), UserMessage(content='b')])"
    )
    subprocess.run([sys.executable, "-c", code, str(root)], check=True, timeout=120)
    summary = store.update_session("s", title="t")
    assert summary.message_count == 3
    assert summary == _fresh_summary(root, "s")


def _delete(root: Path, other: SessionStore) -> None:
    """Another store deletes the session."""
    assert other.delete_session("s")


def _move_aside(root: Path, other: SessionStore) -> None:
    """The session's directory is moved aside, its log still linked there."""
    (root / "s").rename(root / "s-old")


def _link_then_delete(root: Path, other: SessionStore) -> None:
    """A hard link to the log is kept elsewhere (a backup), then another store deletes the session."""
    os.link(log_path(root, "s"), root.parent / "backup.jsonl")
    assert other.delete_session("s")


@pytest.mark.parametrize("gone", [_delete, _move_aside, _link_then_delete])
def test_update_summary_of_a_session_made_anew_under_the_open_writer(
    store: SessionStore, root: Path, gone: Callable[[Path, SessionStore], None]
) -> None:
    """A log deleted, moved aside or kept only by a hard link, and the session made anew, is read, not remembered."""
    for text in ("a", "b", "c"):
        store.append("s", user(text))
    with SessionStore(root, durability="none") as other:
        gone(root, other)
        other.append("s", user("new"))
    summary = store.update_session("s", title="t")
    assert summary.message_count == 1
    assert summary == _fresh_summary(root, "s")


def test_update_summary_reads_the_log_when_looking_at_it_fails() -> None:
    """An error of the writer's look at the log's path (ESTALE) falls back to reading it, not to raising."""
    fs = SimulatedFileSystem()
    store = SessionStore("/store", fs=fs, durability="none")
    store.append("s", user("a"))
    store.append("s", user("b"))
    fs.fail_next("stat", errno.ESTALE, path="/store/s/messages.jsonl")
    summary = store.update_session("s", title="t")
    assert fs.faults_fired == 1
    assert (summary.title, summary.message_count) == ("t", 2)


def test_update_summary_leaves_out_a_torn_tail_written_after_this_store(
    store: SessionStore, root: Path
) -> None:
    """Bytes a crashed writer left after this store's last append do not count as a record."""
    store.append("s", user("a"))
    store.append("s", user("b"))
    with open(log_path(root, "s"), "ab") as log:
        log.write(b'{"sequence":3,"id":"01')  # what a crash mid-write leaves
    summary = store.update_session("s", title="t")
    assert summary.message_count == 2
    assert summary == _fresh_summary(root, "s")


def test_runtime_update_never_overwrites_what_a_user_set(store: SessionStore) -> None:
    """origin='runtime' leaves a user's title, pin and metadata keys alone, and sets the rest."""
    store.append("s", user())
    store.update_session("s", title="user title", pinned=True, metadata={"owned": "by user"})
    summary = store.update_session(
        "s", title="derived title", pinned=False, metadata={"owned": "by agent", "free": 1}, origin="runtime"
    )
    assert summary.title == "user title"
    assert summary.pinned is True
    assert summary.metadata == {"owned": "by user", "free": 1}


def test_runtime_title_applies_until_a_user_renames(store: SessionStore) -> None:
    """A runtime title is replaced by later runtime titles, but not after a user rename."""
    store.append("s", user())
    assert store.update_session("s", title="t1", origin="runtime").title == "t1"
    assert store.update_session("s", title="t2", origin="runtime").title == "t2"
    assert store.update_session("s", title="mine").title == "mine"
    assert store.update_session("s", title="t3", origin="runtime").title == "mine"


def test_user_update_overwrites_a_runtime_value(store: SessionStore) -> None:
    """A user update always wins over what the runtime set."""
    store.append("s", user())
    store.update_session("s", metadata={"k": "runtime"}, origin="runtime")
    assert store.update_session("s", metadata={"k": "user"}).metadata == {"k": "user"}


def test_runtime_cannot_remove_a_user_key(store: SessionStore) -> None:
    """remove_metadata with origin='runtime' skips keys a user set."""
    store.append("s", user())
    store.update_session("s", metadata={"u": 1})
    store.update_session("s", metadata={"r": 2}, origin="runtime")
    summary = store.update_session("s", remove_metadata=["u", "r"], origin="runtime")
    assert summary.metadata == {"u": 1}


def test_expected_version_is_a_compare_and_swap(store: SessionStore, root: Path) -> None:
    """update_session(expected_version=) succeeds at the current version and conflicts otherwise."""
    store.append("s", user())
    version = store.get_session("s").version  # type: ignore[union-attr]
    summary = store.update_session("s", title="a", expected_version=version)
    assert summary.version == version + 1
    before = read_tree(root)
    with pytest.raises(MetadataConflict) as info:
        store.update_session("s", title="b", expected_version=version)
    assert info.value.session_id == "s"
    assert read_tree(root) == before
    assert store.update_session("s", title="b", expected_version=version + 1).title == "b"


def test_update_that_changes_nothing_keeps_the_file_and_version(store: SessionStore, root: Path) -> None:
    """Setting fields to the values they already have writes nothing and bumps no version."""
    store.append("s", user())
    first = store.update_session("s", title="t", metadata={"a": 1})
    before = meta_path(root, "s").read_bytes()
    again = store.update_session("s", title="t", metadata={"a": 1})
    assert again.version == first.version
    assert meta_path(root, "s").read_bytes() == before


def test_update_of_an_unknown_session_raises_session_not_found(store: SessionStore, root: Path) -> None:
    """update_session never creates a session: SessionNotFound (a KeyError) and no files."""
    with pytest.raises(SessionNotFound) as info:
        store.update_session("nobody", title="t")
    assert isinstance(info.value, KeyError)
    assert "nobody" in str(info.value) and not str(info.value).startswith("'")
    assert not root.exists()
    store.append("other", user())
    with pytest.raises(SessionNotFound):
        store.update_session("nobody", title="t")
    assert not (root / "nobody").exists()


def test_update_of_a_deleted_session_raises_session_not_found(store: SessionStore) -> None:
    """A deleted session cannot be updated."""
    store.append("s", user())
    store.delete_session("s")
    with pytest.raises(SessionNotFound):
        store.update_session("s", title="t")


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"title": ""}, InvalidArgument),
        ({"title": "x" * 201}, InvalidArgument),
        ({"title": 5}, InvalidArgument),
        ({"pinned": 1}, InvalidArgument),
        ({"pinned": "yes"}, InvalidArgument),
        ({"metadata": ["a"]}, InvalidArgument),
        ({"metadata": {"v": float("nan")}}, InvalidMessage),
        ({"origin": "admin"}, InvalidArgument),
    ],
)
def test_bad_update_raises_and_writes_nothing(
    store: SessionStore, root: Path, fields: dict[str, object], error: type[Exception]
) -> None:
    """Out-of-range update arguments are refused before the metadata file is touched."""
    store.append("s", user())
    before = read_tree(root)
    with pytest.raises(error):
        store.update_session("s", **fields)  # type: ignore[arg-type]
    assert read_tree(root) == before


def test_title_none_clears_the_title(store: SessionStore) -> None:
    """title=None is a real value: it clears the title."""
    store.append("s", user(), title="t")
    assert store.update_session("s", title=None).title is None


def test_meta_file_keeps_a_fixed_key_order(store: SessionStore, root: Path) -> None:
    """meta.json always lists its keys in the same order, whatever was updated."""
    store.append("s", user())
    first = list(orjson.loads(meta_path(root, "s").read_bytes()))
    store.update_session("s", metadata={"z": 1}, pinned=True, title="t")
    assert list(orjson.loads(meta_path(root, "s").read_bytes())) == first
    assert first[:3] == ["format", "read_format", "created_at"]


def test_damaged_meta_file_is_reported_and_the_session_still_loads(store: SessionStore, root: Path) -> None:
    """A metadata file that does not parse is a problem, not a crash: records still load."""
    store.append("s", user(), title="t")
    meta_path(root, "s").write_bytes(b'{"format": 1, "crea')
    view = store.load("s")
    assert len(view.raw_tail) == 1 and view.title is None
    assert [p.kind for p in view.problems] == ["bad-meta"]
    summary = store.get_session("s")
    assert summary is not None and summary.message_count == 1


def test_newer_read_format_refuses_and_newer_write_format_opens_read_only(
    store: SessionStore, root: Path
) -> None:
    """A session written by a newer format: newer read version refuses, newer write version is read-only."""
    store.append("s", user())
    meta = orjson.loads(meta_path(root, "s").read_bytes())
    meta["format"] = 2
    meta_path(root, "s").write_bytes(orjson.dumps(meta))
    fresh = SessionStore(root, durability="none")
    assert len(fresh.load("s").raw_tail) == 1
    with pytest.raises(ReadOnlySession) as info:
        fresh.append("s", user())
    assert isinstance(info.value, PermissionError)
    meta["read_format"] = 2
    meta_path(root, "s").write_bytes(orjson.dumps(meta))
    with pytest.raises(UnsupportedFormat):
        SessionStore(root, durability="none").load("s")
    assert [s.session_id for s in fresh.list_sessions()] == []


# ---------------------------------------------------------------------------------------
# The merge function
# ---------------------------------------------------------------------------------------


def test_merge_of_nothing_changes_nothing() -> None:
    """merge() with no named fields returns False and leaves the version."""
    meta = fresh_meta()
    assert _meta.merge(meta) is False
    assert meta.version == 0


def test_merge_bumps_the_versions_of_what_changed() -> None:
    """A title change bumps title_version; a metadata change bumps metadata_version; both bump version."""
    meta = fresh_meta()
    assert _meta.merge(meta, title="t") is True
    assert (meta.version, meta.title_version, meta.metadata_version) == (1, 1, 0)
    assert _meta.merge(meta, metadata={"k": 1}) is True
    assert (meta.version, meta.title_version, meta.metadata_version) == (2, 1, 1)
    assert meta.user_fields == ["metadata.k", "title"]


def test_merge_with_a_stale_expected_version_changes_nothing() -> None:
    """A MetadataConflict leaves the record untouched."""
    meta = fresh_meta(version=3)
    with pytest.raises(MetadataConflict):
        _meta.merge(meta, title="t", expected_version=2)
    assert meta.title is None and meta.version == 3


def test_encode_decode_round_trip() -> None:
    """The metadata file decodes back to an equal record."""
    meta = fresh_meta(title="t", parent_session_id="p", metadata={"k": [1, "x"]}, user_fields=["title"])
    data = _meta.encode(meta)
    assert data.endswith(b"\n") and data.count(b"\n") > 5
    assert _meta.decode(data) == meta


@pytest.mark.parametrize("title", [None, "x", "x" * 200])
def test_check_title_accepts_none_and_1_to_200_characters(title: str | None) -> None:
    """Titles of 1 to 200 characters, or None, are valid."""
    _meta.check_title(title)


@pytest.mark.parametrize("name", ["", "x" * 65, 3])
def test_check_agent_name_refuses_empty_long_and_non_str(name: object) -> None:
    """An agent name is a str of 1 to 64 characters."""
    with pytest.raises(InvalidArgument):
        _meta.check_agent_name(name)  # type: ignore[arg-type]
