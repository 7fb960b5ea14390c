"""Any message with large and small strings comes back exactly, however its strings are split into blobs."""

from __future__ import annotations

import tempfile
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jsonl_store import SessionStore

THRESHOLD = 16

# Strings around the threshold (ASCII and multi-byte, so characters and bytes differ),
# nested in lists and dicts whose keys may be long too.
_text = st.one_of(
    st.text(max_size=8),
    st.text(alphabet=st.characters(codec="utf-8"), min_size=4, max_size=40),
    st.integers(min_value=1, max_value=3).map(lambda n: "é" * (THRESHOLD // 2 + n - 2)),
)
_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | _text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_text, inner, max_size=4),
    max_leaves=12,
)
_messages = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "tool"]), "content": _values},
    optional={"extra": st.dictionaries(_text, _values, max_size=3)},
).filter(lambda m: "$blob" not in repr(m))


@settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(batches=st.lists(st.lists(_messages, min_size=1, max_size=3), min_size=1, max_size=4))
def test_messages_round_trip_through_append_load_records_and_tail(
    batches: list[list[dict[str, Any]]],
) -> None:
    """append/append_many then load().context, records() and tail() give every message back equal."""
    with tempfile.TemporaryDirectory() as root:
        store = SessionStore(root, blob_threshold=THRESHOLD, durability="none")
        for batch in batches:
            if len(batch) == 1:
                store.append("s", batch[0])
            else:
                store.append_many("s", batch)
        expected = [message for batch in batches for message in batch]
        view = store.load("s")
        assert view.problems == []
        assert view.context == expected
        assert [r.message for r in store.records("s")] == expected
        assert [r.message for r in store.tail("s", len(expected))] == expected
        assert store.verify("s") == []
