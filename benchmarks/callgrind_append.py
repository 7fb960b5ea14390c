"""Instructions per buffered append, counted by callgrind: run with N = 0 and N = 2000.

    PYTHONHASHSEED=0 valgrind --tool=callgrind --callgrind-out-file=cg.0 python benchmarks/callgrind_append.py 0
    PYTHONHASHSEED=0 valgrind --tool=callgrind --callgrind-out-file=cg.2000 python benchmarks/callgrind_append.py 2000

(summary of cg.2000 - summary of cg.0) / 2000 is the cost of one append of the benchmark's
0.8 KB assistant message with usage, ``durability="none"``: start-up and the session's
first append are in both runs and cancel out.
"""

from __future__ import annotations

import sys
import tempfile

from jsonl_store import AssistantMessage, ModelUsage, SessionStore, ToolCall


def main(count: int) -> None:
    store = SessionStore(tempfile.mkdtemp(), durability="none")
    call = ToolCall(id="c1", name="read_file", arguments={"path": "README.md"})
    message = AssistantMessage(content="x" * 600, tool_calls=[call])
    usage = ModelUsage(input_tokens=1200, output_tokens=40)
    store.append("s", message, usage=usage)  # the session exists before counting
    for _ in range(count):
        store.append("s", message, usage=usage)


if __name__ == "__main__":
    main(int(sys.argv[1]))
