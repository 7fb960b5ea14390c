"""The flat path of a plain ``append`` writes exactly what the general append path writes."""

from __future__ import annotations

import itertools
import tempfile
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from helpers import examples, read_tree
from hypothesis import given, settings
from hypothesis import strategies as st

from jsonl_store import AssistantMessage, JsonlStoreError, SessionStore, UserMessage
from jsonl_store.testing.strategies import messages, usages


def _sources() -> tuple[Callable[[], datetime], Callable[[], str]]:
    """A fixed clock ticking a millisecond per call, and counted UUIDs."""
    start = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
    ticks: Iterator[int] = itertools.count()
    counter: Iterator[int] = itertools.count(1)
    return (lambda: start + timedelta(milliseconds=next(ticks))), (lambda: str(uuid.UUID(int=next(counter))))


def _run(root: Path, calls: list[tuple[Any, Any]], *, flat: bool) -> list[object]:
    """Each call as a plain ``append`` (the flat path) or with an option that takes the general path.

    The option is ``expected_last_sequence`` set to the sequence the log ends at, which
    changes nothing written; what each call returned or raised is the outcome.
    """
    clock, ids = _sources()
    outcomes: list[object] = []
    last = 0
    with SessionStore(root, durability="none", clock=clock, ids=ids, blob_threshold=64) as store:
        for message, usage in calls:
            try:
                if flat:
                    outcome: object = store.append("s", message, usage=usage)
                else:
                    outcome = store.append("s", message, usage=usage, expected_last_sequence=last)
                last = outcome or last  # type: ignore[assignment]
            except JsonlStoreError as exc:
                outcome = type(exc).__name__
            outcomes.append(outcome)
    return outcomes


#: What the flat path must treat as the general path does: a secret, a long string
#: (spilled to a blob at this threshold), a "$" (the blob marker's first byte), no id.
_EDGES = st.sampled_from(
    [
        # A fake key id (AWS's documentation one, ...EXAMPLE, is a sample redaction keeps).
        UserMessage(content="my key is AKIA" + "QZ7XW3VT9RK2MP5L, keep it"),
        UserMessage(content="x" * 200),
        UserMessage(content="costs $5"),
        {"role": "user", "content": "a plain dict"},
        {"role": "user", "content": "not stored", "persist": False},
        UserMessage(content="not stored", persist=False),
        AssistantMessage(content=float("nan")),  # type: ignore[arg-type]
    ]
)


@given(
    calls=st.lists(
        st.tuples(st.one_of(messages(), _EDGES), st.none() | usages()),
        min_size=1,
        max_size=6,
    )
)
@settings(max_examples=examples(150), deadline=None)
def test_a_plain_append_writes_the_bytes_the_general_path_writes(calls: list[tuple[Any, Any]]) -> None:
    """Same clock and ids: both paths give the same sequences, the same errors and the same files."""
    with tempfile.TemporaryDirectory() as flat_root, tempfile.TemporaryDirectory() as general_root:
        flat = _run(Path(flat_root), calls, flat=True)
        general = _run(Path(general_root), calls, flat=False)
        assert flat == general
        assert read_tree(Path(flat_root)) == read_tree(Path(general_root))
