"""Properties of `resume` and conditional appends over generated sessions."""

from __future__ import annotations

import tempfile
from typing import Any

from helpers import as_class, examples
from hypothesis import given, settings
from hypothesis import strategies as st

from jsonl_store import (
    INTERRUPTED_NOTICE,
    Message,
    SequenceConflict,
    SessionStore,
    UserMessage,
    is_provider_valid,
    repair_context,
)
from jsonl_store.testing.strategies import tool_batches


@st.composite
def sessions(draw: st.DrawFn) -> list[Message]:
    """Whole tool batches and user turns, then a last batch that may have been interrupted."""
    plain = draw(st.booleans())
    history: list[Message] = []
    for _ in range(draw(st.integers(0, 3))):
        if draw(st.booleans()):
            history.append({"role": "user", "content": "go on"} if plain else UserMessage(content="go on"))
        else:
            history.extend(draw(tool_batches(plain=plain, complete=True)))
    history.extend(draw(tool_batches(plain=plain, complete=None)))
    return history


def _without_ids(messages: list[Message]) -> list[Any]:
    out = []
    for message in messages:
        data = (
            dict(message)
            if isinstance(message, dict)
            else {f: getattr(message, f) for f in message.__struct_fields__}
        )
        data.pop("id", None)
        if isinstance(message, dict):
            data.pop("is_error", None)  # stored dict results also say they failed; chat dicts do not
        out.append(data)
    return out


@settings(max_examples=examples(60))
@given(sessions())
def test_resume_closes_what_repair_would_close_and_keeps_every_record(history: list[Message]) -> None:
    """After resume: the old records are untouched, the context is provider-valid and is the repaired one."""
    with tempfile.TemporaryDirectory() as root:
        store = SessionStore(root, durability="none")
        store.append_many("s", history)
        before = list(store.records("s"))
        view = store.resume("s")
        after = list(store.records("s"))
        assert after[: len(before)] == before
        added = [r.message for r in after[len(before) :]]
        assert all(
            (m["content"] if isinstance(m, dict) else as_class(m).content) == INTERRUPTED_NOTICE
            for m in added
        )
        assert is_provider_valid(view.messages)
        assert _without_ids(view.messages) == _without_ids(repair_context(history, close_last=True))


@settings(max_examples=examples(60))
@given(sessions())
def test_resume_twice_is_resume_once(history: list[Message]) -> None:
    """A second resume appends nothing and gives the same view."""
    with tempfile.TemporaryDirectory() as root:
        store = SessionStore(root, durability="none")
        store.append_many("s", history)
        first = store.resume("s")
        assert store.resume("s") == first


@settings(max_examples=examples(100))
@given(st.lists(st.integers(0, 6), min_size=1, max_size=12))
def test_a_conditional_append_succeeds_exactly_when_the_expectation_is_the_last_sequence(
    guesses: list[int],
) -> None:
    """Each guess writes one record iff it equals the current last sequence; otherwise nothing changes."""
    with tempfile.TemporaryDirectory() as root:
        store = SessionStore(root, durability="none")
        last = 0
        for guess in guesses:
            try:
                sequence = store.append("s", UserMessage(content=str(guess)), expected_last_sequence=guess)
            except SequenceConflict as exc:
                assert guess != last and (exc.expected, exc.actual) == (guess, last)
            else:
                assert guess == last and sequence == last + 1
                last = sequence
        assert [r.sequence for r in store.records("s")] == list(range(1, last + 1))
