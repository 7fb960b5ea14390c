"""Same inputs, same bytes: with a fixed clock and id source, a session's files come out identical."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jsonl_store import (
    AssistantMessage,
    CompactedMessage,
    InvalidArgument,
    MessageTiming,
    ModelUsage,
    SessionStore,
    ToolCall,
    ToolMessage,
    UserMessage,
)


def fixed_sources() -> tuple[Callable[[], datetime], Callable[[], str]]:
    """A clock that ticks one millisecond per call from a fixed start, and counted UUIDs."""
    start = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
    ticks: Iterator[int] = itertools.count()
    counter: Iterator[int] = itertools.count(1)

    def clock() -> datetime:
        return start + timedelta(milliseconds=next(ticks))

    def ids() -> str:
        return str(uuid.UUID(int=next(counter)))

    return clock, ids


def write_session(root: Path) -> None:
    """One session through every writing call: appends, a batch, usage, a snapshot, metadata, a child."""
    clock, ids = fixed_sources()
    store = SessionStore(root, clock=clock, ids=ids)
    store.append("s", UserMessage(id="m1", content="List the files, then read one."), title="files")
    store.append_many(
        "s",
        [
            AssistantMessage(
                id="m2",
                content="Reading.",
                tool_calls=[ToolCall(id="c1", name="ls", arguments={"path": ".", "all": True, "depth": 1.5})],
            ),
            ToolMessage(id="m3", tool_call_id="c1", content="a.py\nb.py"),
        ],
        usage=[ModelUsage(input_tokens=120, output_tokens=8, cache_read_tokens=64), None],
        timing=MessageTiming(
            started_at=datetime(2026, 12, 1, 9, 0, 1, tzinfo=UTC),
            completed_at=datetime(2026, 12, 1, 9, 0, 2, tzinfo=UTC),
            duration_ns=1_000_000_000,
        ),
        request_id="req-1",
        metadata={"model": "m", "z": 1, "a": [1, 2]},
    )
    store.append("s", {"role": "user", "id": "m3b", "content": "é😀\u202e", "extra": {"b": 2, "a": 1}})
    store.record_usage("s", {"input_tokens": 5, "output_tokens": 1, "model": "m", "phase": "plan"})
    store.snapshot("s", CompactedMessage(id="m4", content="Listed two files."), 3, 0)
    store.append("s", AssistantMessage(id="m5", content="Done."))
    store.update_session("s", title="Files, read", pinned=True, metadata={"ticket": "T-1"})
    store.append(
        "s-child", UserMessage(id="m6", content="sub-task"), parent_session_id="s", agent_name="helper"
    )
    store.checkpoint("s", [*store.load("s").messages, UserMessage(id="m7", content="Next?")])
    store.close()


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_the_same_inputs_write_the_same_bytes(tmp_path: Path) -> None:
    """Two stores fed the same calls with a fixed clock and ids: every file is equal, byte for byte."""
    write_session(tmp_path / "one")
    write_session(tmp_path / "two")
    one, two = files(tmp_path / "one"), files(tmp_path / "two")
    assert one.keys() == two.keys()
    assert {name for name in one if name.endswith((".json", ".jsonl"))} >= {
        "s/messages.jsonl",
        "s/meta.json",
        "s/usage.jsonl",
        "s-child/messages.jsonl",
    }
    for name in one:
        assert one[name] == two[name], name


def test_the_fixed_sources_are_what_is_written(tmp_path: Path) -> None:
    """The records' ids and times are the given ones (so the test above can fail when they are not used)."""
    write_session(tmp_path)
    records = list(SessionStore(tmp_path).records("s"))
    assert records[0].id == str(uuid.UUID(int=1))
    start = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
    assert all(start <= r.created_at < start + timedelta(seconds=1) for r in records)
    assert [r.created_at for r in records] == sorted(r.created_at for r in records)
    view = SessionStore(tmp_path).load("s")
    assert view.snapshot is not None and uuid.UUID(view.snapshot.id).int < 100


def test_a_clock_in_another_zone_is_written_in_utc(tmp_path: Path) -> None:
    """An aware time in UTC+2 is stored as the same instant in UTC."""
    plus_two = timezone(timedelta(hours=2))
    store = SessionStore(tmp_path, clock=lambda: datetime(2026, 12, 1, 11, 0, tzinfo=plus_two))
    store.append("s", UserMessage(content="hi"))
    assert b'"created_at":"2026-12-01T09:00:00Z"' in (tmp_path / "s" / "messages.jsonl").read_bytes()


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"clock": lambda: datetime(2026, 1, 1)}, "timezone-aware"),
        ({"clock": lambda: "2026-01-01"}, "timezone-aware"),
        ({"ids": lambda: "not-a-uuid"}, "UUID"),
        ({"ids": lambda: '0000"}'}, "UUID"),
        ({"ids": lambda: str(uuid.uuid4()).upper()}, "UUID"),
    ],
)
def test_bad_sources_are_refused_before_anything_is_written(
    tmp_path: Path, options: dict[str, object], match: str
) -> None:
    """A naive time or an id that is not a canonical UUID raises InvalidArgument and writes no record."""
    store = SessionStore(tmp_path, **options)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match=match):
        store.append("s", UserMessage(content="hi"))
    assert list(SessionStore(tmp_path).records("s")) == []


def test_sources_that_are_not_callable_are_refused(tmp_path: Path) -> None:
    """clock= and ids= must be callables."""
    with pytest.raises(InvalidArgument):
        SessionStore(tmp_path, clock=datetime.now(UTC))  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument):
        SessionStore(tmp_path, ids="x")  # type: ignore[arg-type]


@settings(max_examples=40, deadline=None)
@given(
    texts=st.lists(st.text(max_size=40), min_size=1, max_size=5),
    extra=st.dictionaries(
        st.text(max_size=5),
        st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.booleans(),
        max_size=4,
    ),
)
def test_any_messages_encode_the_same_every_time(
    tmp_path_factory: pytest.TempPathFactory, texts: list[str], extra: dict[str, object]
) -> None:
    """Any text and any JSON keys (in any order) give identical logs from identical calls."""
    logs = []
    for _ in range(2):
        root = tmp_path_factory.mktemp("d")
        clock, ids = fixed_sources()
        store = SessionStore(root, clock=clock, ids=ids)
        for index, text in enumerate(texts):
            store.append(
                "s",
                {
                    "role": "user",
                    "content": text,
                    **{f"k{key}": value for key, value in extra.items()},
                    "n": index,
                },
            )
        logs.append((root / "s" / "messages.jsonl").read_bytes())
    assert logs[0] == logs[1]
