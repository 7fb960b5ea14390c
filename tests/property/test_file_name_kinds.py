"""The names module both ways: every name it builds parses and classifies back to what it was built as."""

from __future__ import annotations

from helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from jsonl_store._format.names import (
    FORK_NAME,
    LOG_NAME,
    META_NAME,
    USAGE_NAME,
    FileKind,
    classify,
    cut_name,
    damaged_name,
    is_tmp_name_of,
    numbered_name,
    parse_snapshot_name,
    snapshot_name,
    snapshot_versions,
    tmp_name,
)

versions = st.integers(1, 10**8 - 1)
tokens = st.text("0123456789abcdef", min_size=1, max_size=12)
session_files = st.sampled_from([LOG_NAME, USAGE_NAME, META_NAME, FORK_NAME]) | versions.map(snapshot_name)
attempts = st.integers(1, 1000)


@settings(max_examples=examples(300))
@given(
    st.lists(versions, unique=True, max_size=20), st.lists(st.sampled_from(["notes", "snapshot-", "x.json"]))
)
def test_snapshot_names_parse_back_and_list_newest_first(numbers: list[int], others: list[str]) -> None:
    """parse(snapshot_name(v)) == v, and a listing of such names among others yields the versions highest first."""
    names = [snapshot_name(v) for v in numbers]
    assert [parse_snapshot_name(name) for name in names] == numbers
    assert list(snapshot_versions([*others, *names])) == sorted(numbers, reverse=True)


@settings(max_examples=examples(300))
@given(session_files, tokens, attempts, st.integers(0, 10**12 - 1))
def test_what_writers_and_repairs_leave_beside_a_file_classifies_as_such(
    name: str, token: str, attempt: int, offset: int
) -> None:
    """A temporary, a numbered cut sidecar and a numbered damaged copy of any session file are what they are."""
    temporary = tmp_name(name, token)
    assert classify(temporary) is FileKind.TEMPORARY
    assert is_tmp_name_of(temporary, name)
    assert not any(is_tmp_name_of(temporary, other) for other in {LOG_NAME, USAGE_NAME, META_NAME} - {name})
    assert classify(numbered_name(cut_name(name, offset), attempt)) is FileKind.CUT
    assert classify(damaged_name(name, attempt)) is FileKind.DAMAGED
    assert classify(name) is not FileKind.OTHER
