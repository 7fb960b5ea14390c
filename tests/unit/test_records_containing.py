"""`SessionStore.records(containing=...)`: the records whose line holds some bytes, nothing else read."""

from __future__ import annotations

from pathlib import Path

import pytest

from jsonl_store import AsyncSessionStore, InvalidArgument, SessionStore, UserMessage


def test_only_the_records_whose_line_holds_the_bytes_are_given(tmp_path: Path) -> None:
    """Of 300 records, the 30 holding the needle come back, in order, with their sequences."""
    with SessionStore(tmp_path, durability="none") as store:
        store.append_many(
            "s", [UserMessage(content=f"n{i} {'needle' if i % 10 == 0 else 'hay'}") for i in range(300)]
        )
        found = [r.sequence for r in store.records("s", containing=b"needle")]
        assert found == list(range(1, 301, 10))
        assert [r.sequence for r in store.records("s", after=150, containing=b"needle")] == list(
            range(151, 301, 10)
        )
        assert list(store.records("s", containing=b"nowhere")) == []


def test_a_gap_between_the_records_given_is_not_a_problem(tmp_path: Path) -> None:
    """Skipping lines is what the filter is for: no "gap" problem is reported for them."""
    problems: list[object] = []
    with SessionStore(tmp_path, durability="none", on_problem=problems.append) as store:
        store.append_many("s", [UserMessage(content="x"), UserMessage(content="y"), UserMessage(content="x")])
        assert [r.sequence for r in store.records("s", containing=b'"x"')] == [1, 3]
    assert problems == []


def test_async_records_take_the_filter_too(tmp_path: Path) -> None:
    """`AsyncSessionStore.records` passes ``containing`` on."""
    import asyncio

    async def collect() -> list[int]:
        store = AsyncSessionStore(tmp_path, durability="none")
        await store.append("s", UserMessage(content="a"))
        await store.append("s", UserMessage(content="b"))
        return [r.sequence async for r in store.records("s", containing=b'"b"')]

    assert asyncio.run(collect()) == [2]


@pytest.mark.parametrize("containing", [b"", "text", 7])
def test_a_filter_that_is_not_bytes_is_refused(tmp_path: Path, containing: object) -> None:
    """Empty bytes, a str or a number: `InvalidArgument`, before anything is read."""
    with SessionStore(tmp_path) as store, pytest.raises(InvalidArgument):
        store.records("s", containing=containing)  # type: ignore[arg-type]
