"""``append(..., created_at=...)``: a record made elsewhere keeps its own time (an imported transcript's)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from jsonl_store import AsyncSessionStore, InvalidArgument, SessionStore, UserMessage


def test_created_at_is_the_records_time_in_utc(store: SessionStore) -> None:
    """The given time is stored (in UTC) instead of now, for append and for each record of a batch."""
    when = datetime(2025, 6, 10, 14, 36, 23, 208000, tzinfo=timezone(timedelta(hours=2)))
    store.append("s", UserMessage(content="one"), created_at=when)
    store.append_many(
        "s", [UserMessage(content="two"), UserMessage(content="three")], created_at=when + timedelta(hours=1)
    )
    store.append("s", UserMessage(content="now"))
    records = list(store.records("s"))
    assert [r.created_at for r in records[:3]] == [when, when + timedelta(hours=1), when + timedelta(hours=1)]
    assert records[0].created_at.tzinfo == UTC and records[0].created_at.hour == 12
    assert records[3].created_at > when + timedelta(days=365)
    summary = store.get_session("s")
    assert summary is not None and summary.created_at == when  # the first record's time


@pytest.mark.parametrize("bad", [datetime(2025, 1, 1), "2025-01-01T00:00:00Z", 0])
def test_a_naive_or_non_datetime_created_at_is_refused(store: SessionStore, bad: object) -> None:
    """A datetime without a time zone, a string or a number raises InvalidArgument and writes nothing."""
    with pytest.raises(InvalidArgument, match="created_at"):
        store.append("s", UserMessage(content="x"), created_at=bad)  # type: ignore[arg-type]
    assert list(store.records("s")) == []


def test_checkpoint_and_the_async_store_pass_created_at_on(store: SessionStore) -> None:
    """checkpoint takes created_at like append_many; AsyncSessionStore.append takes it like append."""
    import asyncio

    when = datetime(2024, 2, 29, 23, 59, tzinfo=UTC)
    store.checkpoint("c", [UserMessage(content="x")], created_at=when)

    async def run() -> None:
        async with AsyncSessionStore(store.root) as astore:
            await astore.append("c", UserMessage(content="y"), created_at=when + timedelta(minutes=1))

    asyncio.run(run())
    assert [r.created_at for r in store.records("c")] == [when, when + timedelta(minutes=1)]
