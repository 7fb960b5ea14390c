"""How the command lays a record's parts out (`jsonl_store.cli._messages`): results under their
calls, a result printed later named after its call, reasoning labelled and dimmed, long
arguments cut with an ellipsis unless ``--full``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from jsonl_store import RawMessageRecord
from jsonl_store.cli import _messages
from jsonl_store.cli._blocks import Styled, plain_lines

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def record(sequence: int, message: dict[str, Any], **fields: Any) -> RawMessageRecord:
    """A raw-log record holding ``message`` as a plain dict."""
    return RawMessageRecord(
        sequence=sequence, id=f"r{sequence}", created_at=NOW, plain=True, message=message, **fields
    )


CALL = {
    "type": "function_call",
    "role": "assistant",
    "call_id": "c1",
    "name": "shell",
    "arguments": '{"cmd":"ls"}',
}
OUTPUT = {"type": "function_call_output", "role": "tool", "call_id": "c1", "output": "README.md"}


def test_a_result_printed_after_its_call_in_another_poll_is_named_after_the_call() -> None:
    """tail -f prints a result that comes in a later poll as ← result of shell [c1], not as an anonymous tool message."""
    names: dict[Any, str | None] = {}
    first = plain_lines(
        _messages.render_records([record(1, CALL)], None, dialect="openai-responses", full=False, names=names)
    )
    later = plain_lines(
        _messages.render_records(
            [record(2, OUTPUT)], None, dialect="openai-responses", full=False, names=names
        )
    )
    assert any(line.strip().startswith("→ shell(") for line in first)
    assert any(line.strip() == "← result of shell [c1]" for line in later) and "       README.md" in later


def test_a_record_of_results_shown_under_their_calls_is_not_shown_again_but_keeps_its_facts() -> None:
    """A result record folded under its call is not a card of its own; its run time shows beside ← #2."""
    lines = plain_lines(
        _messages.render_records(
            [record(1, CALL), record(2, OUTPUT, duration_ns=1_500_000_000)],
            None,
            dialect="openai-responses",
            full=False,
        )
    )
    assert not any(line.lstrip().startswith("#2 ") for line in lines)
    assert any(line.strip() == "← #2 · 1.5 s" for line in lines)


def test_reasoning_is_labelled_and_dimmed_and_encrypted_reasoning_says_so() -> None:
    """Reasoning reads (reasoning) ... in a dim style; an encrypted item says no text is stored."""
    blocks = _messages.render_records(
        [
            record(
                1,
                {
                    "type": "reasoning",
                    "role": "assistant",
                    "summary": [{"type": "summary_text", "text": "plan"}],
                },
            ),
            record(2, {"type": "reasoning", "role": "assistant", "encrypted_content": "gAAA"}),
        ],
        None,
        dialect="openai-responses",
        full=False,
    )
    reasoning = [b for b in blocks if isinstance(b, Styled) and "reasoning" in b.plain and "#" not in b.plain]
    assert [b.plain.strip() for b in reasoning] == [
        "(reasoning) plan",
        "(reasoning: encrypted by the provider, no text stored)",
    ]
    assert all(style == "dim" for b in reasoning for _, style in b.parts)


def test_long_arguments_are_cut_with_an_ellipsis_and_whole_with_full() -> None:
    """A call's 5,000-character arguments end in … after ARGUMENT_CHARS; --full prints every character."""
    call = {**CALL, "arguments": '{"content":"' + "x" * 5_000 + '"}'}
    cut = "".join(
        line.strip() for line in plain_lines(_messages.render_message(call, dialect="openai-responses"))
    )
    whole = "".join(
        line.strip()
        for line in plain_lines(_messages.render_message(call, dialect="openai-responses", full=True))
    )
    assert "x…)" in cut and cut.count("x") < _messages.ARGUMENT_CHARS
    assert "x" * 5_000 in whole


def test_an_anthropic_error_result_is_marked_under_its_call() -> None:
    """An is_error tool_result in the next user message shows as ← #2 error under its tool_use."""
    lines = plain_lines(
        _messages.render_records(
            [
                record(
                    1,
                    {
                        "role": "assistant",
                        "content": [{"type": "tool_use", "id": "t", "name": "Bash", "input": {}}],
                    },
                ),
                record(
                    2,
                    {
                        "role": "user",
                        "content": [
                            {"type": "tool_result", "tool_use_id": "t", "content": "no", "is_error": True}
                        ],
                    },
                ),
            ],
            None,
            dialect="anthropic",
            full=False,
        )
    )
    at = next(i for i, line in enumerate(lines) if "→ Bash({})" in line)
    assert lines[at + 1].strip() == "← #2 error" and lines[at + 2].strip() == "no"
