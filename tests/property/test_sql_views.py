"""The SQL views hold what the library reads: for any messages in any sessions, with or
without a damaged byte, ``records`` has exactly `SessionStore.records`' rows and messages,
and ``parts`` the kinds `message_parts` reads from them."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import msgspec
import pytest
from helpers import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jsonl_store import SessionStore, message_parts
from jsonl_store.testing import strategies

pytest.importorskip("duckdb")  # the sql extra; with it, jsonl_store.sql must import

from jsonl_store import sql

SESSIONS = ("s0", "s1", "s2")


_KINDS = {"TextPart": "text", "ReasoningPart": "reasoning", "ToolCallPart": "tool_call"}
_KINDS |= {"ToolResultPart": "tool_result", "ImagePart": "image", "OtherPart": "other"}


def _library_rows(
    store: SessionStore,
) -> tuple[list[tuple[str, int, str, Any]], list[tuple[str, int, int, str]]]:
    rows, parts = [], []
    for session_id in store.session_ids():
        for record in store.records(session_id):
            message = json.loads(msgspec.json.encode(record.message))
            rows.append((session_id, record.sequence, record.id, message))
            for index, part in enumerate(message_parts(record.message)):
                parts.append((session_id, record.sequence, index, _KINDS[type(part).__name__]))
    return sorted(rows, key=lambda row: row[:2]), sorted(parts)


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    appends=st.lists(st.tuples(st.sampled_from(SESSIONS), strategies.messages()), min_size=1, max_size=8),
    damage=st.none() | st.tuples(st.sampled_from(SESSIONS), st.integers(0, 10**6)),
)
def test_records_view_is_what_the_library_reads(
    appends: list[tuple[str, Any]], damage: tuple[str, int] | None
) -> None:
    """Rows of records (session, sequence, id, message as JSON) equal records() of every
    session, and parts message_parts of them, a flipped byte anywhere in a log included."""
    with tempfile.TemporaryDirectory() as root:
        store = SessionStore(root, durability="none")
        for session_id, message in appends:
            store.append(session_id, message)
        if damage is not None:
            log = Path(root) / damage[0] / "messages.jsonl"
            if log.exists():
                data = bytearray(log.read_bytes())
                data[damage[1] % len(data)] ^= 0x04
                log.write_bytes(bytes(data))
        rows, parts = _library_rows(SessionStore(root, on_problem=lambda problem: None))
        con = sql.connect(root, on_problem=lambda problem: None)
        got = con.sql(
            "SELECT session_id, sequence, id, message FROM records ORDER BY session_id, sequence"
        ).fetchall()
        assert [(s, q, i, json.loads(m)) for s, q, i, m in got] == rows
        assert (
            con.sql("SELECT session_id, sequence, part_index, kind FROM parts ORDER BY ALL").fetchall()
            == parts
        )
