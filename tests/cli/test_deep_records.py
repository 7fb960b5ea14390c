"""Whatever ``append`` accepts, every command prints: records nested exactly `_depth.MAX_DEPTH` deep, through each printer."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import cli
from helpers import nested_lists as lists
from helpers import nested_objects as objects

from jsonl_store import AssistantMessage, SessionStore, ToolCall
from jsonl_store._format.depth import MAX_DEPTH
from jsonl_store.export import html_extra_available

#: The innermost part of the deepest value as compact JSON: the string, then MAX_DEPTH - 1 brackets.
INNERMOST = '"deep"' + "]" * (MAX_DEPTH - 1)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One session of records at the limit: content, a message class's tool arguments, a tool result, metadata."""
    root = tmp_path_factory.mktemp("deep") / "s"
    with SessionStore(root, durability="none") as store:
        store.append("deep", {"role": "user", "content": lists(MAX_DEPTH - 1)})
        call = ToolCall(id="c1", name="probe", arguments=objects(MAX_DEPTH - 4))
        store.append("deep", AssistantMessage(content="calling", tool_calls=[call]))
        store.append("deep", {"role": "tool", "tool_call_id": "c1", "content": [objects(MAX_DEPTH - 3)]},
                     metadata={"m": objects(MAX_DEPTH - 1)})  # fmt: skip
    return root


@pytest.mark.parametrize(
    "argv",
    [
        ["tail", "deep"],
        ["tail", "deep", "--full"],
        ["tail", "deep", "--json"],
        ["show", "deep"],
        ["show", "deep", "--raw"],
        ["show", "deep", "--json"],
        ["cat", "deep"],
        ["export", "deep", "--format", "md"],
        ["export", "deep", "--format", "html"],
        ["export", "deep", "--format", "json"],
    ],
    ids=" ".join,
)
def test_every_printer_prints_records_at_the_depth_limit(root: Path, argv: list[str]) -> None:
    """Each command exits 0 on records MAX_DEPTH deep, without a word on stderr; JSON output holds the deepest value whole."""
    done = cli("--root", str(root), *argv, cwd=root.parent)
    stderr = done.stderr
    if "html" in argv and not html_extra_available():
        # Without the html extra an HTML export says so, one line; nothing else may be said.
        note = "jsonl-store: note: message text is shown as written, not rendered as Markdown"
        assert stderr.startswith(note) and stderr.count("\n") == 1, stderr
        stderr = ""
    assert (done.returncode, stderr) == (0, ""), done.stderr
    assert "probe" in done.stdout
    if "--json" in argv or argv[0] == "cat" or "json" in argv:
        assert INNERMOST in "".join(done.stdout.split())
