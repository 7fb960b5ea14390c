"""Every rewrite is visible: a write that replaced values says how many and of which kinds (spec §18.1)."""

from __future__ import annotations

import asyncio
import logging
import pickle
from pathlib import Path

import pytest
from fake_secrets import body

from jsonl_store import (
    AssistantMessage,
    AsyncSessionStore,
    CompactedMessage,
    InvalidArgument,
    ModelUsage,
    Redaction,
    SessionStore,
    UserMessage,
)

TOKEN = "ghp_" + body(36)
AWS_ID = "AKIA" + "QZ7XW3VT9RK2MP5L"


def _store(root: Path, **options: object) -> tuple[SessionStore, list[Redaction]]:
    seen: list[Redaction] = []
    return SessionStore(root, on_redact=seen.append, **options), seen  # type: ignore[arg-type]


def test_an_append_that_redacts_reports_its_sequence_and_counts_per_kind(tmp_path: Path) -> None:
    """append() of a message holding two GitHub tokens and an AWS key id reports 2 + 1, never the values."""
    store, seen = _store(tmp_path)
    sequence = store.append("s", UserMessage(content=f"{TOKEN} and {TOKEN}, id {AWS_ID}"))
    assert seen == [Redaction("s", "append", (sequence,), {"github-token": 2, "aws-access-key": 1})]
    assert seen[0].count == 3
    assert TOKEN not in str(seen[0]) and AWS_ID not in str(seen[0])
    assert (
        str(seen[0])
        == "session 's': 3 values redacted by append, sequence 1 (github-token 2, aws-access-key 1)"
    )


def test_an_append_with_options_counts_metadata_tags_and_request_id_too(tmp_path: Path) -> None:
    """The options' strings are redacted on the same append, and counted in its one notice."""
    store, seen = _store(tmp_path)
    store.append(
        "s",
        UserMessage(content="hello"),
        request_id=TOKEN,
        metadata={"note": f"key {AWS_ID}"},
        tags={"t": TOKEN},
    )
    assert [(r.operation, dict(r.kinds)) for r in seen] == [
        ("append", {"github-token": 2, "aws-access-key": 1})
    ]


def test_an_append_many_reports_its_batch_once_with_every_sequence(tmp_path: Path) -> None:
    """A batch is one notice: the records it wrote and the sum of what each lost."""
    store, seen = _store(tmp_path)
    store.append("s", UserMessage(content="first"))
    sequences = store.append_many(
        "s",
        [UserMessage(content=TOKEN), AssistantMessage(content="nothing here"), UserMessage(content=AWS_ID)],
    )
    assert seen == [Redaction("s", "append_many", tuple(sequences), {"github-token": 1, "aws-access-key": 1})]


def test_a_clean_append_reports_nothing(tmp_path: Path) -> None:
    """Nothing replaced, nothing said: a message with '=' signs and ids is no redaction."""
    store, seen = _store(tmp_path)
    store.append("s", UserMessage(content="x = 1; id 0f8e2d3c-1b2a-4c5d-8e9f-001122334455"))
    store.append_many("s", [UserMessage(content="a"), UserMessage(content="b")])
    assert seen == []


def test_a_marker_already_in_the_text_is_not_counted_again(tmp_path: Path) -> None:
    """Counting is of markers the write added: a stored marker that came in with the message is none."""
    store, seen = _store(tmp_path)
    store.append("s", UserMessage(content=f"was [REDACTED:github-token], now {TOKEN}"))
    assert [dict(r.kinds) for r in seen] == [{"github-token": 1}]


def test_a_function_redactor_is_counted_by_the_markers_it_writes(tmp_path: Path) -> None:
    """redact=callable: what the function changed is counted by the markers it wrote, per kind."""

    def hide_tickets(text: str) -> str:
        return text.replace("TICKET-1", "[REDACTED:ticket]").replace("TICKET-2", "[REDACTED:ticket]")

    store, seen = _store(tmp_path, redact=hide_tickets)
    store.append("s", UserMessage(content="TICKET-1 and TICKET-2"))
    assert [dict(r.kinds) for r in seen] == [{"ticket": 2}]


def test_user_patterns_are_counted_under_their_kind(tmp_path: Path) -> None:
    """redact=[(kind, pattern)]: each value a user's pattern replaced counts under its kind."""
    store, seen = _store(tmp_path, redact=[("ticket", r"TICKET-(?P<secret>\d{6})"), r"internal-\d+"])
    store.append("s", UserMessage(content="TICKET-123456, TICKET-654321, internal-7"))
    assert [dict(r.kinds) for r in seen] == [{"ticket": 2, "custom": 1}]


def test_writes_other_than_appends_report_what_they_redacted(tmp_path: Path) -> None:
    """create_session, update_session, record_usage and snapshot each report their own redaction."""
    store, seen = _store(tmp_path)
    store.create_session("s", title=f"deploy {AWS_ID}", metadata={"k": TOKEN})
    store.update_session("s", metadata={"again": TOKEN})
    store.record_usage("s", {"input_tokens": 1, "output_tokens": 1, "request_id": TOKEN})
    store.append("s", UserMessage(content="hello"))
    store.snapshot("s", CompactedMessage(content=f"summary with {TOKEN}"), 1, 0)
    assert [(r.operation, r.sequences, dict(r.kinds)) for r in seen] == [
        ("create_session", (), {"aws-access-key": 1, "github-token": 1}),
        ("update_session", (), {"github-token": 1}),
        ("record_usage", (), {"github-token": 1}),
        ("snapshot", (), {"github-token": 1}),
    ]


def test_without_on_redact_a_redaction_is_a_warning_in_the_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The default: one WARNING on the jsonl_store logger per write, naming counts and kinds, never the value."""
    store = SessionStore(tmp_path)
    with caplog.at_level(logging.WARNING, logger="jsonl_store"):
        store.append("s", UserMessage(content=TOKEN), usage=None)
        store.append("s", AssistantMessage(content="fine"), usage=ModelUsage(input_tokens=1, output_tokens=1))
    assert [r.getMessage() for r in caplog.records] == [
        "session 's': 1 value redacted by append, sequence 1 (github-token 1)"
    ]
    assert all(TOKEN not in r.getMessage() for r in caplog.records)


def test_a_store_without_redaction_reports_nothing(tmp_path: Path) -> None:
    """redact=False stores the text as given, and there is nothing to report."""
    store, seen = _store(tmp_path, redact=False)
    store.append("s", UserMessage(content=TOKEN))
    assert seen == []
    assert store.load("s").messages[0].content == TOKEN  # type: ignore[union-attr]


def test_a_notice_pickles_and_compares_by_value(tmp_path: Path) -> None:
    """A Redaction is plain data: it pickles (to another process) and equals an equal one."""
    store, seen = _store(tmp_path)
    store.append("s", UserMessage(content=TOKEN))
    assert (
        pickle.loads(pickle.dumps(seen[0])) == seen[0] == Redaction("s", "append", (1,), {"github-token": 1})
    )


def test_on_redact_must_be_callable(tmp_path: Path) -> None:
    """A value that cannot be called is refused when the store is made, like on_problem."""
    with pytest.raises(InvalidArgument, match="on_redact must be callable"):
        SessionStore(tmp_path, on_redact="print")  # type: ignore[arg-type]


def test_the_async_store_reports_through_the_same_callback(tmp_path: Path) -> None:
    """AsyncSessionStore(on_redact=...) hands the notice of an append made in its worker thread."""
    seen: list[Redaction] = []

    async def run() -> int:
        async with AsyncSessionStore(tmp_path, on_redact=seen.append) as store:
            return await store.append("s", UserMessage(content=TOKEN))

    sequence = asyncio.run(run())
    assert seen == [Redaction("s", "append", (sequence,), {"github-token": 1})]


def test_labels_are_counted_only_by_the_write_that_stores_them(tmp_path: Path) -> None:
    """A title or agent name holding a secret counts when its append makes the session, not after."""
    store, seen = _store(tmp_path)
    store.append("s", UserMessage(content="hello"), title=f"key {AWS_ID}", agent_name=f"a {TOKEN}")
    assert [dict(r.kinds) for r in seen] == [{"aws-access-key": 1, "github-token": 1}]
    store.append("s", UserMessage(content="again"), title=f"other {AWS_ID}")
    store.append_many("s", [UserMessage(content="more")], agent_name=f"b {TOKEN}")
    assert len(seen) == 1  # the later labels are not stored, so nothing was replaced
    summary = store.get_session("s")
    assert summary is not None and summary.title == "key [REDACTED:aws-access-key]"


def test_a_checkpoint_that_makes_its_session_counts_its_labels_once(tmp_path: Path) -> None:
    """checkpoint() makes the session with its title, and its one notice counts the title's secret."""
    store, seen = _store(tmp_path)
    store.checkpoint("s", [UserMessage(content="hello")], title=f"key {AWS_ID}")
    store.checkpoint("s", [UserMessage(content="hello")], title=f"key {AWS_ID}")
    assert [(r.operation, dict(r.kinds)) for r in seen] == [("append_many", {"aws-access-key": 1})]
