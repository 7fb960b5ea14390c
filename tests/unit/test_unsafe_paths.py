"""Files that are not what they seem: symlinks, FIFOs, sockets and directories inside a session.

No name inside a session is ever followed or opened unless it is a regular file (a
directory for the session itself): every call raises `UnsafePath` naming it, `verify`
and `repair` report it as `unsafe-path` and leave it alone, `list_sessions` skips it,
and the file a symlink points at, outside the store, keeps every byte. The store root
itself may be a symlink a user chose.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import classes, fails_after

from jsonl_store import (
    CompactedMessage,
    ModelUsage,
    Problem,
    SessionStore,
    UnsafePath,
    UserMessage,
)

SID = "s"
OUTSIDE = b"precious bytes that are not a session log\nline two, no newline at the end"


@pytest.fixture(autouse=True)
def no_hang() -> Iterator[None]:
    """Turns a blocking open (a FIFO read without O_NONBLOCK) into a failure, not a hung run."""
    with fails_after(20, "a call blocked on a special file"):
        yield


def _session(root: Path) -> Path:
    """A session with records, a snapshot, metadata, a usage line and a lock file."""
    store = SessionStore(root, durability="none")
    store.append(SID, UserMessage(content="one"), title="t")
    two = store.append(SID, UserMessage(content="two"))
    store.snapshot(SID, CompactedMessage(content="summary"), two, 0)
    store.record_usage(SID, ModelUsage(input_tokens=1))
    store.close()
    return root / SID


def _outside(tmp_path: Path) -> Path:
    target = tmp_path / "outside.txt"
    target.write_bytes(OUTSIDE)
    return target


def _replace_with_symlink(path: Path, target: Path) -> None:
    path.unlink()
    path.symlink_to(target)


def _every_call(store: SessionStore) -> list[tuple[str, Callable[[], object]]]:
    return [
        ("append", lambda: store.append(SID, UserMessage(content="three"))),
        ("append_many", lambda: store.append_many(SID, [UserMessage(content="a"), UserMessage(content="b")])),
        ("record_usage", lambda: store.record_usage(SID, ModelUsage(output_tokens=2))),
        ("load", lambda: store.load(SID)),
        ("records", lambda: list(store.records(SID))),
        ("usage", lambda: list(store.usage(SID))),
        ("get_session", lambda: store.get_session(SID)),
        ("update_session", lambda: store.update_session(SID, title="renamed")),
        ("snapshot", lambda: store.snapshot(SID, CompactedMessage(content="again"), 3, 1)),
        ("checkpoint", lambda: store.checkpoint(SID, [UserMessage(content="new")])),
        ("delete_session", lambda: store.delete_session(SID)),
    ]


@pytest.mark.parametrize(
    "name", ["messages.jsonl", "usage.jsonl", "meta.json", "snapshot-00000001.json", ".lock"]
)
def test_symlinked_session_file_is_refused_and_its_target_keeps_every_byte(tmp_path: Path, name: str) -> None:
    """A session file that is a symlink makes a call raise UnsafePath (or do nothing with it), never follow it."""
    directory = _session(tmp_path / "store")
    target = _outside(tmp_path)
    _replace_with_symlink(directory / name, target)
    store = SessionStore(tmp_path / "store")
    refused = []
    for call, action in _every_call(store):
        try:
            action()
        except UnsafePath as exc:
            assert exc.path == str(directory / name), call
            assert exc.session_id == SID, call
            assert isinstance(exc, OSError)
            refused.append(call)
        assert target.read_bytes() == OUTSIDE, f"{call} changed the file outside the store"
        assert (directory / name).is_symlink(), f"{call} replaced the symlink"
    # Each file is refused at least by the calls that read or write it.
    needs = {
        "messages.jsonl": {
            "append",
            "append_many",
            "load",
            "records",
            "snapshot",
            "checkpoint",
            "delete_session",
        },
        "usage.jsonl": {"record_usage", "usage", "delete_session"},
        "meta.json": {
            "load",
            "records",
            "usage",
            "get_session",
            "update_session",
            "snapshot",
            "delete_session",
        },
        "snapshot-00000001.json": {"load", "snapshot", "checkpoint", "delete_session"},
        ".lock": {"update_session", "snapshot", "checkpoint", "delete_session"},
    }[name]
    assert needs <= set(refused), needs - set(refused)


def test_first_append_through_a_symlinked_log_leaves_the_outside_file_untouched(tmp_path: Path) -> None:
    """The data-loss case of issue 8: a cloned symlink as messages.jsonl is never cut, truncated or written."""
    target = _outside(tmp_path)
    directory = tmp_path / "store" / SID
    directory.mkdir(parents=True)
    (directory / "messages.jsonl").symlink_to(target)
    with pytest.raises(UnsafePath):
        SessionStore(tmp_path / "store").append(SID, UserMessage(content="hello"))
    assert target.read_bytes() == OUTSIDE
    assert not any(p.name.startswith("messages.jsonl.cut-") for p in directory.iterdir())
    assert not any(p.name.startswith("outside.txt.") for p in tmp_path.iterdir())


def test_first_record_usage_through_a_symlinked_usage_log_leaves_the_outside_file_untouched(
    tmp_path: Path,
) -> None:
    """record_usage on a symlinked usage.jsonl raises UnsafePath; the target is byte-for-byte the same."""
    directory = _session(tmp_path / "store")
    target = _outside(tmp_path)
    _replace_with_symlink(directory / "usage.jsonl", target)
    with pytest.raises(UnsafePath):
        SessionStore(tmp_path / "store").record_usage(SID, ModelUsage(input_tokens=5))
    assert target.read_bytes() == OUTSIDE


def test_repair_reports_a_symlinked_log_and_neither_follows_nor_deletes_it(tmp_path: Path) -> None:
    """repair of a session whose log is a symlink reports unsafe-path and leaves link and target as they are."""
    directory = _session(tmp_path / "store")
    target = _outside(tmp_path)
    _replace_with_symlink(directory / "messages.jsonl", target)
    store = SessionStore(tmp_path / "store")
    for problems in (store.verify(SID), store.repair(SID), store.repair(SID)):
        assert [(p.kind, p.path) for p in problems] == [("unsafe-path", str(directory / "messages.jsonl"))]
        assert "repair never touches it" in problems[0].action
    assert target.read_bytes() == OUTSIDE
    assert (directory / "messages.jsonl").is_symlink()


def test_symlinked_session_directory_is_refused_and_nothing_outside_is_read_or_written(
    tmp_path: Path,
) -> None:
    """A session directory that is a symlink to a real session elsewhere raises UnsafePath for every call."""
    elsewhere = _session(tmp_path / "elsewhere")
    before = {p.name: p.read_bytes() for p in elsewhere.iterdir()}
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / SID).symlink_to(elsewhere, target_is_directory=True)
    store = SessionStore(tmp_path / "store")
    for call, action in _every_call(store):
        with pytest.raises(UnsafePath) as caught:
            action()
        assert caught.value.path == str(tmp_path / "store" / SID), call
    assert {p.name: p.read_bytes() for p in elsewhere.iterdir()} == before
    assert [(p.kind, p.path) for p in store.verify()] == [("unsafe-path", str(tmp_path / "store" / SID))]
    assert [p.kind for p in store.repair(SID)] == ["unsafe-path"]
    assert {p.name: p.read_bytes() for p in elsewhere.iterdir()} == before


def _make_fifo(path: Path) -> None:
    os.mkfifo(path)


def _make_socket(path: Path) -> None:
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(path))
    listener.close()  # the name stays, a socket nobody listens on


def _make_directory(path: Path) -> None:
    path.mkdir()


SPECIALS = {"fifo": _make_fifo, "socket": _make_socket, "directory": _make_directory}


@pytest.mark.parametrize("kind", sorted(SPECIALS))
@pytest.mark.parametrize("name", ["messages.jsonl", "usage.jsonl", "meta.json", "snapshot-00000001.json"])
def test_special_file_in_place_of_a_session_file_never_blocks_and_is_refused(
    tmp_path: Path, name: str, kind: str
) -> None:
    """A FIFO, socket or directory where a session file belongs raises UnsafePath at once, never blocks."""
    directory = _session(tmp_path / "store")
    (directory / name).unlink()
    SPECIALS[kind](directory / name)
    store = SessionStore(tmp_path / "store")
    reader = {"usage.jsonl": lambda: list(store.usage(SID))}.get(name, lambda: store.load(SID))
    with pytest.raises(UnsafePath) as caught:
        reader()
    assert caught.value.path == str(directory / name)
    writer = {
        "usage.jsonl": lambda: store.record_usage(SID, ModelUsage(input_tokens=1)),
        "meta.json": lambda: store.update_session(SID, title="x"),
        "snapshot-00000001.json": lambda: store.snapshot(SID, CompactedMessage(content="x"), 2, 1),
    }.get(name, lambda: store.append(SID, UserMessage(content="x")))
    with pytest.raises(UnsafePath):
        writer()
    problems = store.verify(SID)
    assert [(p.kind, p.path) for p in problems] == [("unsafe-path", str(directory / name))]
    assert store.repair(SID) == problems
    assert os.path.lexists(directory / name)  # repair never deletes it


def test_list_sessions_skips_a_broken_session_with_a_problem_and_lists_the_others(tmp_path: Path) -> None:
    """One symlinked and one FIFO-logged session are skipped (reported to on_problem); the healthy ones are listed."""
    root = tmp_path / "store"
    store = SessionStore(root, durability="none")
    for sid in ("good-1", "fifo-log", "good-2"):
        store.append(sid, UserMessage(content=sid))
    (root / "fifo-log" / "messages.jsonl").unlink()
    os.mkfifo(root / "fifo-log" / "messages.jsonl")
    (root / "linked").symlink_to(root / "good-1", target_is_directory=True)
    (root / "README.md").write_text("not a session, and not a problem either\n")
    seen: list[Problem] = []
    listing = SessionStore(root, on_problem=seen.append).list_sessions()
    assert sorted(s.session_id for s in listing) == ["good-1", "good-2"]
    assert sorted((p.kind, p.path) for p in seen) == [
        ("unsafe-path", str(root / "fifo-log" / "messages.jsonl")),
        ("unsafe-path", str(root / "linked")),
    ]
    assert sorted((p.kind, p.path) for p in store.verify()) == sorted((p.kind, p.path) for p in seen)


def test_a_session_directory_replaced_by_a_symlink_during_a_listing_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A directory swapped for a symlink while earlier sessions are summarised is seen as one: never read through."""
    root = tmp_path / "store"
    store = SessionStore(root, durability="none")
    for sid in ("a-first", "z-later"):
        store.append(sid, UserMessage(content=sid))
    seen: list[Problem] = []
    listing_store = SessionStore(root, on_problem=seen.append)
    real_summary = listing_store._summary

    def summary(session_id: str, *args: Any, **kwargs: Any) -> Any:
        if session_id == "a-first":  # the listing is made; z-later becomes a symlink to a-first
            os.rename(root / "z-later", tmp_path / "moved-away")
            (root / "z-later").symlink_to(root / "a-first", target_is_directory=True)
        return real_summary(session_id, *args, **kwargs)

    monkeypatch.setattr(listing_store, "_summary", summary)
    assert [s.session_id for s in listing_store.list_sessions()] == ["a-first"]
    assert [(p.kind, p.path) for p in seen] == [("unsafe-path", str(root / "z-later"))]


def test_store_root_reached_through_a_symlink_is_used_as_the_user_chose(tmp_path: Path) -> None:
    """The root itself may be a symlink (~/sessions -> /data/sessions): only names inside it are checked."""
    real = tmp_path / "data" / "sessions"
    real.mkdir(parents=True)
    (tmp_path / "sessions").symlink_to(real, target_is_directory=True)
    store = SessionStore(tmp_path / "sessions")
    store.append(SID, UserMessage(content="through the link"))
    assert [m.content for m in classes(store.load(SID).messages)] == ["through the link"]
    assert store.update_session(SID, title="fine").title == "fine"
    assert store.verify() == []
    assert (real / SID / "messages.jsonl").is_file()


def test_symlink_to_a_device_as_the_log_is_refused(tmp_path: Path) -> None:
    """messages.jsonl -> /dev/zero is refused before a byte is read (a device would never end)."""
    directory = _session(tmp_path / "store")
    _replace_with_symlink(directory / "messages.jsonl", Path("/dev/zero"))
    with pytest.raises(UnsafePath):
        SessionStore(tmp_path / "store").load(SID)


def test_unsafe_path_pickles_with_its_fields(tmp_path: Path) -> None:
    """UnsafePath is a JsonlStoreError and an OSError, and survives pickling with its path."""
    import pickle

    directory = _session(tmp_path / "store")
    _replace_with_symlink(directory / "meta.json", _outside(tmp_path))
    with pytest.raises(UnsafePath) as caught:
        SessionStore(tmp_path / "store").load(SID)
    again = pickle.loads(pickle.dumps(caught.value))
    assert type(again) is UnsafePath and again.path == caught.value.path and str(again) == str(caught.value)


def test_directory_named_like_a_temporary_file_is_reported_not_deleted(tmp_path: Path) -> None:
    """A directory or symlink named like a leftover temporary file is unsafe-path: repair neither deletes nor fails on it."""
    directory = _session(tmp_path / "store")
    (directory / "meta.json.0123456789ab.tmp").mkdir()
    (directory / "messages.jsonl.ba9876543210.tmp").symlink_to(_outside(tmp_path))
    store = SessionStore(tmp_path / "store")
    expected = sorted(
        ("unsafe-path", str(directory / name))
        for name in ("meta.json.0123456789ab.tmp", "messages.jsonl.ba9876543210.tmp")
    )
    assert sorted((p.kind, p.path) for p in store.verify(SID)) == expected
    assert sorted((p.kind, p.path) for p in store.repair(SID)) == expected
    assert (directory / "meta.json.0123456789ab.tmp").is_dir()
    assert (directory / "messages.jsonl.ba9876543210.tmp").is_symlink()
    assert (tmp_path / "outside.txt").read_bytes() == OUTSIDE
