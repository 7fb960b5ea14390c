"""Unit tests for `_paths`: session-id validation and every file name, built and parsed."""

from __future__ import annotations

import string

import pytest
from helpers import gitignored

from jsonl_store import InvalidSessionId
from jsonl_store._format import names as _paths


@pytest.mark.parametrize(
    "session_id",
    [
        "a",
        "Z",
        "0",
        "_",
        "abc-DEF_123.json",
        "a.b.c",
        "x" * 128,
        "2024-05-01T12.00",
        "a-",
        "a.",
        "_-.",
        "session..x",
    ],
)
def test_safe_session_ids_are_accepted_unchanged(session_id: str) -> None:
    """Ids made of [A-Za-z0-9_.-], 1 to 128 characters, not starting with '.' or '-', are valid."""
    assert _paths.validate_session_id(session_id) is session_id
    assert _paths.is_session_id(session_id)


@pytest.mark.parametrize(
    ("session_id", "reason"),
    [
        ("", "empty"),
        (".", "starts with"),
        ("..", "starts with"),
        (".git", "starts with"),
        ("-rf", "starts with"),
        ("x" * 129, "longer than 128"),
        ("a/b", "outside"),
        ("a\\b", "outside"),
        ("a\x00", "outside"),
        ("a\n", "outside"),
        ("a b", "outside"),
        ("ä", "outside"),
        ("a:b", "outside"),
        ("a*", "outside"),
    ],
)
def test_unsafe_session_ids_raise_with_the_reason(session_id: str, reason: str) -> None:
    """An unsafe id raises InvalidSessionId saying why, and carries the id."""
    with pytest.raises(InvalidSessionId, match=reason) as info:
        _paths.validate_session_id(session_id)
    assert info.value.session_id == session_id
    assert not _paths.is_session_id(session_id)


@pytest.mark.parametrize("session_id", [None, 1, b"abc", ["a"]])
def test_non_str_session_ids_raise(session_id: object) -> None:
    """Only a str can be a session id."""
    with pytest.raises(InvalidSessionId, match="must be a str"):
        _paths.validate_session_id(session_id)


def test_trailing_newline_is_not_accepted_by_the_pattern() -> None:
    """'abc\\n' is refused (a regex '$' would let it through; fullmatch does not)."""
    with pytest.raises(InvalidSessionId):
        _paths.validate_session_id("abc\n")


@pytest.mark.parametrize("version", [1, 2, 42, 99_999_999])
def test_snapshot_names_are_zero_padded_and_parse_back(version: int) -> None:
    """snapshot_name pads to 8 digits (names sort by version) and parse_snapshot_name inverts it."""
    name = _paths.snapshot_name(version)
    assert name == f"snapshot-{version:08d}.json"
    assert _paths.parse_snapshot_name(name) == version


def test_snapshot_names_sort_in_version_order() -> None:
    """Sorting the names sorts the versions."""
    versions = [1, 9, 10, 11, 100, 2]
    assert sorted(_paths.snapshot_name(v) for v in versions) == [
        _paths.snapshot_name(v) for v in sorted(versions)
    ]


def test_snapshot_versions_come_newest_first_and_skip_other_names() -> None:
    """snapshot_versions gives the versions of snapshot names only, highest first."""
    names = [
        "meta.json",
        _paths.snapshot_name(3),
        "snapshot-00000009.json.damaged",
        _paths.snapshot_name(12),
        "snapshot-1.json",
        "usage.jsonl",
        _paths.snapshot_name(1),
        "snapshot.json",
        "snapshotz",
    ]
    assert list(_paths.snapshot_versions(names)) == [12, 3, 1]
    assert list(_paths.snapshot_versions([])) == []


@pytest.mark.parametrize(
    "name",
    [
        "snapshot-1.json",
        "snapshot-00000001.json.tmp",
        "snapshot-00000001.json.damaged",
        "snapshot-0000000a.json",
        "meta.json",
        "snapshot-000000001.json",
        "snapshot-\u0660\u0660\u0660\u0660\u0660\u0660\u0660\u0661.json",  # Arabic-Indic digits
    ],
)
def test_other_names_are_not_snapshots(name: str) -> None:
    """Only the exact snapshot pattern parses."""
    assert _paths.parse_snapshot_name(name) is None


@pytest.mark.parametrize("session_id", ["s", "x.tmp", "a.cut-1", "b.damaged", "lock"])
def test_cut_and_tmp_names_are_covered_by_the_gitignore(session_id: str) -> None:
    """Sidecar, temporary and lock files are git-ignored; history files and session directories are not."""
    patterns = _paths.GITIGNORE_TEXT.splitlines()
    local = [
        _paths.cut_name(_paths.LOG_NAME, 1234),
        _paths.cut_name(_paths.USAGE_NAME, 5),
        _paths.tmp_name(_paths.META_NAME, "abc"),
        _paths.tmp_name(_paths.snapshot_name(3), "abc"),
        _paths.LOCK_NAME,
        _paths.snapshot_name(2) + _paths.DAMAGED_SUFFIX,
        _paths.META_NAME + _paths.DAMAGED_SUFFIX,
    ]
    for name in local:
        assert gitignored(patterns, f"{session_id}/{name}"), name
    history = [_paths.LOG_NAME, _paths.META_NAME, _paths.USAGE_NAME, _paths.snapshot_name(1)]
    for name in history:
        assert not gitignored(patterns, f"{session_id}/{name}"), name
    assert not gitignored(patterns, session_id)
    assert not gitignored(patterns, _paths.GITIGNORE_NAME)


def test_cut_name_holds_the_offset_zero_padded() -> None:
    """A sidecar's name says where the cut was made, padded so names sort by offset."""
    assert _paths.cut_name("messages.jsonl", 609) == "messages.jsonl.cut-000000000609"


def test_every_safe_alphabet_character_is_accepted_after_the_first() -> None:
    """Each character of the documented alphabet is valid inside an id."""
    for char in string.ascii_letters + string.digits + "_.-":
        _paths.validate_session_id("a" + char)
