"""``jsonl-store demo``: a realistic agent session written through the public API.

A coding agent fixes a failing test. On the way it makes parallel tool calls, records
timing and token usage, gets a title, compacts its history into a snapshot, hands a
question to a sub-agent (a child session) and is killed in the middle of a tool batch,
so the restored context shows the repair of an interrupted batch.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from .. import (
    AssistantMessage,
    CompactedMessage,
    MessageTiming,
    ModelUsage,
    SessionStore,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from .._format.names import FileKind, classify_root

MODEL = "example-model"
SMALL_MODEL = "example-model-mini"
#: What the demo's application means by ``session_type`` (an int the application defines).
SUB_AGENT = 1


class _Clock:
    """Made-up but consistent timings: each operation starts where the last one ended."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def span(self, seconds: float, *, reasoning: float = 0.0) -> MessageTiming:
        start = self.now
        end = start + timedelta(seconds=seconds)
        self.now = end + timedelta(milliseconds=40)
        if not reasoning:
            return MessageTiming(started_at=start, completed_at=end, duration_ns=int(seconds * 1e9))
        thought = start + timedelta(seconds=reasoning)
        return MessageTiming(
            started_at=start,
            completed_at=end,
            duration_ns=int(seconds * 1e9),
            reasoning_started_at=start,
            reasoning_completed_at=thought,
            reasoning_duration_ns=int(reasoning * 1e9),
            content_started_at=thought,
            content_completed_at=end,
            content_duration_ns=int((seconds - reasoning) * 1e9),
        )


@dataclass(frozen=True)
class DemoSessions:
    """The ids the demo wrote."""

    main: str
    child: str


class _Demo:
    """The demo's sessions written step by step: one method per step of the story, in order."""

    def __init__(self, store: SessionStore, main: str, child: str, clock: _Clock) -> None:
        self.store = store
        self.main = main
        self.child = child
        self.clock = clock

    def model_call(
        self, request_id: str, usage: ModelUsage, model: str = MODEL, *, session: str | None = None
    ) -> ModelUsage:
        # The token-usage log has one line per model call, also for calls whose output
        # is not a message of the session (the title and the compaction summary).
        record = {**_usage_dict(usage), "model": model, "request_id": request_id}
        self.store.record_usage(self.main if session is None else session, record)
        return usage

    def first_look(self) -> None:
        """Turn 1 begins: the user's report, two parallel tool calls and their results, a title."""
        store, main, clock, model_call = self.store, self.main, self.clock, self.model_call
        store.append(
            main,
            UserMessage(
                content="The date tests started failing after yesterday's merge. Can you find out why and fix it?"
            ),
            agent_name="coder",
        )
        store.append(
            main,
            AssistantMessage(
                reasoning="Run the failing tests and look at the recent commits to app/dates.py at the same time.",
                content="I'll run the date tests and check the recent commits.",
                tool_calls=[
                    ToolCall(id="call_01", name="run_tests", arguments={"path": "tests/test_dates.py"}),
                    ToolCall(
                        id="call_02", name="git_log", arguments={"path": "app/dates.py", "max_count": 3}
                    ),
                ],
            ),
            request_id="req_01",
            timing=clock.span(2.4, reasoning=0.9),
            usage=model_call(
                "req_01",
                ModelUsage(
                    input_tokens=1_840, output_tokens=96, cache_write_tokens=1_536, reasoning_tokens=31
                ),
            ),
        )
        # Both results in one write and one fsync (group commit).
        store.append_many(
            main,
            [
                ToolMessage(
                    tool_call_id="call_01",
                    name="run_tests",
                    content="FAILED tests/test_dates.py::test_parse_week - ValueError: week 53 is out of range\n"
                    "1 failed, 41 passed in 0.84s",
                ),
                ToolMessage(
                    tool_call_id="call_02",
                    name="git_log",
                    content="9f3c2e1 dates: validate ISO week numbers\n4b7a0d9 dates: add parse_week\n"
                    "1c9e8f2 dates: move helpers out of utils",
                ),
            ],
            timing=[clock.span(1.3), clock.span(0.1)],
        )
        store.update_session(main, title="Fix week-53 parsing in app/dates.py", origin="runtime")
        model_call("req_title", ModelUsage(input_tokens=212, output_tokens=11), SMALL_MODEL)

    def fix(self) -> int:
        """Turn 1 ends: the agent reads the check and fixes it; the sequence of its last record."""
        store, main, clock, model_call = self.store, self.main, self.clock, self.model_call
        store.append(
            main,
            AssistantMessage(
                content="Commit 9f3c2e1 rejects week 53, but ISO years such as 2020 and 2026 have 53 weeks. "
                "Let me read the check.",
                tool_calls=[
                    ToolCall(
                        id="call_03", name="read_file", arguments={"path": "app/dates.py", "lines": "40-46"}
                    )
                ],
            ),
            request_id="req_02",
            timing=clock.span(1.8),
            usage=model_call(
                "req_02", ModelUsage(input_tokens=2_310, output_tokens=74, cache_read_tokens=1_536)
            ),
        )
        store.append(
            main,
            ToolMessage(
                tool_call_id="call_03",
                name="read_file",
                content="def parse_week(text: str) -> tuple[int, int]:\n"
                '    year, week = map(int, text.split("-W"))\n'
                "    if not 1 <= week <= 52:\n"
                '        raise ValueError(f"week {week} is out of range")\n'
                "    return year, week",
            ),
            timing=clock.span(0.05),
        )
        store.append(
            main,
            AssistantMessage(
                tool_calls=[
                    ToolCall(
                        id="call_04",
                        name="edit_file",
                        arguments={
                            "path": "app/dates.py",
                            "old": "if not 1 <= week <= 52:",
                            "new": "if not 1 <= week <= iso_weeks_in_year(year):",
                        },
                    )
                ],
            ),
            request_id="req_03",
            timing=clock.span(1.6),
            usage=model_call(
                "req_03", ModelUsage(input_tokens=2_498, output_tokens=88, cache_read_tokens=2_304)
            ),
        )
        store.append(
            main,
            ToolMessage(
                tool_call_id="call_04", name="edit_file", content="Edited app/dates.py: 1 line changed."
            ),
            timing=clock.span(0.02),
        )
        end_of_turn = store.append(
            main,
            AssistantMessage(
                content="Fixed: `parse_week` now accepts week 53 in the years that have one "
                "(`iso_weeks_in_year`). One line changed in app/dates.py."
            ),
            request_id="req_04",
            timing=clock.span(1.2),
            usage=model_call(
                "req_04", ModelUsage(input_tokens=2_611, output_tokens=41, cache_read_tokens=2_496)
            ),
        )
        return end_of_turn

    def compact(self, end_of_turn: int) -> None:
        """Turn 2 begins: a new question, and turn 1 compacted into a snapshot."""
        store, main, model_call = self.store, self.main, self.model_call
        store.append(main, UserMessage(content="Thanks! Is the CLI affected too?"))
        # The runtime compacts turn 1 before the next model call: a summary replaces
        # records 1..end_of_turn in the session context; the raw log keeps them all.
        model_call("req_compact", ModelUsage(input_tokens=2_702, output_tokens=120), SMALL_MODEL)
        store.snapshot(
            main,
            CompactedMessage(
                content="Summary so far: the user reported failing date tests after a merge. Commit 9f3c2e1 made "
                "parse_week reject week 53; the agent changed the check in app/dates.py to "
                "`week <= iso_weeks_in_year(year)` and the fix is in place."
            ),
            compacted_through_sequence=end_of_turn,
            expected_version=0,
        )

    def delegate(self) -> None:
        """The main session hands a question to a sub-agent (a tool call)."""
        store, main, clock, model_call = self.store, self.main, self.clock, self.model_call
        store.append(
            main,
            AssistantMessage(
                content="I'll ask a researcher sub-agent to look through cli/.",
                tool_calls=[
                    ToolCall(
                        id="call_05",
                        name="task",
                        arguments={
                            "agent": "researcher",
                            "prompt": "Find every place in cli/ that parses ISO weeks.",
                        },
                    )
                ],
            ),
            request_id="req_05",
            timing=clock.span(1.4),
            usage=model_call("req_05", ModelUsage(input_tokens=1_020, output_tokens=63)),
        )

    def research(self) -> str:
        """The sub-agent's own session, a child of the main one; its answer."""
        store, main, child, clock, model_call = self.store, self.main, self.child, self.clock, self.model_call
        store.append(
            child,
            UserMessage(content="Find every place in cli/ that parses ISO weeks."),
            parent_session_id=main,
            session_type=SUB_AGENT,
            agent_name="researcher",
            title="Find ISO-week parsing in cli/",
        )
        store.append(
            child,
            AssistantMessage(
                tool_calls=[
                    ToolCall(
                        id="call_r1", name="grep", arguments={"pattern": "parse_week|%V", "path": "cli/"}
                    )
                ]
            ),
            request_id="req_r1",
            timing=clock.span(0.9),
            usage=model_call(
                "req_r1", ModelUsage(input_tokens=640, output_tokens=38), SMALL_MODEL, session=child
            ),
        )
        store.append(
            child,
            ToolMessage(
                tool_call_id="call_r1",
                name="grep",
                content='cli/report.py:88:    week = parse_week(args.week)\ncli/export.py:41:    stamp = day.strftime("%G-W%V")',
            ),
            timing=clock.span(0.03),
        )
        answer = (
            "Two places: cli/report.py:88 calls parse_week (covered by the fix); "
            "cli/export.py:41 only formats weeks. Nothing else to change."
        )
        store.append(
            child,
            AssistantMessage(content=answer),
            request_id="req_r2",
            timing=clock.span(1.1),
            usage=model_call(
                "req_r2", ModelUsage(input_tokens=742, output_tokens=35), SMALL_MODEL, session=child
            ),
        )
        return answer

    def report(self, answer: str) -> None:
        """The sub-agent's answer back in the main session, and turn 2's reply."""
        store, main, child, clock, model_call = self.store, self.main, self.child, self.clock, self.model_call
        store.append(
            main,
            ToolMessage(tool_call_id="call_05", name="task", content={"session_id": child, "answer": answer}),
            timing=clock.span(0.02),
        )
        store.append(
            main,
            AssistantMessage(
                content="The CLI only parses weeks in cli/report.py:88, which goes through the fixed parse_week."
            ),
            request_id="req_06",
            timing=clock.span(1.3),
            usage=model_call(
                "req_06", ModelUsage(input_tokens=1_233, output_tokens=29, cache_read_tokens=1_020)
            ),
        )

    def interrupted(self) -> None:
        """Turn 3: killed in the middle of a tool batch; one of two calls has its result."""
        store, main, clock, model_call = self.store, self.main, self.clock, self.model_call
        store.append(main, UserMessage(content="Great. Run the whole test suite and the linter."))
        store.append(
            main,
            AssistantMessage(
                content="Running both.",
                tool_calls=[
                    ToolCall(id="call_06", name="run_tests", arguments={"path": "tests/"}),
                    ToolCall(id="call_07", name="run_linter", arguments={"path": "."}),
                ],
            ),
            request_id="req_07",
            timing=clock.span(0.9),
            usage=model_call(
                "req_07", ModelUsage(input_tokens=1_301, output_tokens=52, cache_read_tokens=1_232)
            ),
        )
        store.append(
            main,
            ToolMessage(tool_call_id="call_07", name="run_linter", content="All checks passed."),
            timing=clock.span(0.7),
        )
        # ... and here the process was killed: run_tests (call_06) never reported back.


def write_demo(store: SessionStore) -> DemoSessions:
    """Write the demo sessions into ``store``; return their ids."""
    stamp = datetime.now(UTC)
    main = f"{stamp:%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"
    child = f"{main}-researcher"
    demo = _Demo(store, main, child, _Clock(stamp - timedelta(minutes=3)))
    demo.first_look()
    demo.compact(demo.fix())
    demo.delegate()
    demo.report(demo.research())
    demo.interrupted()
    return DemoSessions(main=main, child=child)


def _usage_dict(usage: ModelUsage) -> dict[str, int]:
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
        "reasoning_tokens": usage.reasoning_tokens,
    }


def tree(root: str) -> list[str]:
    """The files below ``root`` as an indented tree with their sizes in bytes."""
    lines = [root.rstrip(os.sep) + os.sep]
    entries: list[tuple[str, int | None]] = []

    def walk(directory: str, depth: int) -> None:
        for name in sorted(os.listdir(directory)):
            if depth == 1 and classify_root(name) is FileKind.CATALOG:
                continue  # derived from the files shown, never committed (spec §21)
            path = os.path.join(directory, name)
            if os.path.isdir(path):
                entries.append(("    " * depth + name + os.sep, None))
                walk(path, depth + 1)
            else:
                entries.append(("    " * depth + name, os.path.getsize(path)))

    walk(root, 1)
    width = max((len(name) for name, _ in entries), default=0)
    for name, size in entries:
        lines.append(name if size is None else f"{name:<{width}}  {size:>7,} B")
    return lines
