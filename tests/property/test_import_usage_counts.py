"""Claude Code usage is counted once per message, its largest, however its lines are spread.

Any conversation of assistant messages, each written as several lines whose usage grows
while it streams (as Claude Code writes them), with parallel tool results between the
lines of one message, imports to one model call per message holding that message's
largest counts; importing the file again adds nothing.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from jsonl_store import SessionStore
from jsonl_store.importers import import_claude_code

SID = "11111111-2222-3333-4444-555555555555"
#: Per message, the output tokens each of its lines reports, in the order written.
messages = st.lists(st.lists(st.integers(0, 5000), min_size=1, max_size=4), min_size=1, max_size=5)


def _transcript(outputs: list[list[int]], results_between: list[bool]) -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = [{"type": "user", "sessionId": SID, "uuid": "u0",
                                    "message": {"role": "user", "content": "go"}}]  # fmt: skip
    flags = iter(results_between)
    for m, counts in enumerate(outputs):
        for n, output in enumerate(counts):
            call = f"c{m}-{n}"
            usage = {"input_tokens": 3, "cache_read_input_tokens": 100 * (m + 1), "output_tokens": output}
            message = {"id": f"msg{m}", "role": "assistant", "model": "claude-x", "usage": usage,
                       "content": [{"type": "tool_use", "id": call, "name": "Bash", "input": {}}]}  # fmt: skip
            lines.append({"type": "assistant", "sessionId": SID, "uuid": f"a{m}-{n}",
                          "requestId": f"req{m}", "message": message})  # fmt: skip
            if next(flags, False):  # this call's result comes before the message's next line
                result = [{"type": "tool_result", "tool_use_id": call, "content": "ok"}]
                lines.append({"type": "user", "sessionId": SID, "uuid": f"r{m}-{n}",
                              "message": {"role": "user", "content": result}})  # fmt: skip
    return lines


@settings(max_examples=examples(40))
@given(outputs=messages, results_between=st.lists(st.booleans(), max_size=20))
def test_each_message_counts_its_largest_usage_once(
    outputs: list[list[int]], results_between: list[bool]
) -> None:
    """model_calls has one call per message id with its largest output; a second import adds nothing."""
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch, f"{SID}.jsonl")
        path.write_text("".join(json.dumps(d) + "\n" for d in _transcript(outputs, results_between)))
        store = SessionStore(Path(scratch, "store"), durability="none")
        import_claude_code(store, path)
        calls = store.model_calls(f"claude-code-{SID}")
        expected = [(max(c), 3 + 100 * (m + 1)) for m, c in enumerate(outputs)]
        assert sorted((c["output_tokens"], c["input_tokens"]) for c in calls) == sorted(expected)
        assert import_claude_code(store, path).added == 0
