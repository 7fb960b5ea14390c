"""Tables on a terminal keep every digit: at 80 and 120 columns ``ls`` and ``usage`` wrap their
text columns (ids, agents, titles, models) and never cut, shorten or drop a number column.

The command runs on a pseudo-terminal of the given size (`terminal.on_pty`); a store with
long session ids, long titles and token counts in the millions makes each table wider
than the terminal.
"""

from __future__ import annotations

import re
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from terminal import command, environment, on_pty, visible

from jsonl_store import AssistantMessage, ModelUsage, SessionStore, UserMessage

#: Long enough that no table of three or more columns fits 80 columns unwrapped.
IDS = [f"claude-code-{n}a7da6a22-facc-4fcd-8bab-f83c87862004-agent-c8d9b115" for n in range(3)]
TITLE = "Claude Code warmup for the deep-manifest project, with a long title that has to wrap"
MODEL = "anthropic/claude-sonnet-4-5-20250929-with-a-long-provider-prefix"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three sessions with long ids and titles, 1,234 records or so each, and millions of tokens."""
    path = tmp_path_factory.mktemp("tables") / "store"
    with SessionStore(path, durability="none") as store:
        for n, session_id in enumerate(IDS):
            store.append_many(
                session_id,
                [UserMessage(content=f"m{i}") for i in range(1_233 + n)],
                title=TITLE,
                agent_name="general-purpose",
            )
            store.append(
                session_id,
                AssistantMessage(content="done"),
                usage=ModelUsage(
                    input_tokens=8_682_623 + n, output_tokens=31_430, cache_read_tokens=8_505_166
                ),
            )
            store.record_usage(
                session_id, {"input_tokens": 123_456_789, "output_tokens": 98_765, "model": MODEL}
            )
    return path


def numbers(text: str) -> list[str]:
    """Every number on screen, whole: each word that is digits with their thousands
    separators and decimals (a piece of a wrapped id or a time is no such word)."""
    return re.findall(r"(?<!\S)\d[\d,]*(?:\.\d+)?%?(?!\S)", text)


def expected_numbers(root: Path, argv: list[str]) -> list[str]:
    """The numbers the same command prints in a pipe, where no table is ever narrowed."""
    result = subprocess.run(
        [*command(), "--root", str(root), *argv],
        capture_output=True,
        text=True,
        env=environment(),
        check=True,
    )
    return numbers(result.stdout)


@pytest.mark.parametrize("cols", [80, 120])
@pytest.mark.parametrize("argv", [["ls"], ["ls", "--pinned"], ["usage"], ["usage", IDS[0]]], ids=" ".join)
def test_a_table_wider_than_the_terminal_keeps_every_number_whole(
    root: Path, cols: int, argv: list[str]
) -> None:
    """On a terminal narrower than the table, every number of every row is printed whole, and no line is wider than the terminal."""
    code, text = on_pty(["--root", str(root), *argv], cols=cols)
    assert code == 0
    shown = visible(text)
    assert max(len(line) for line in shown.splitlines()) <= cols, shown
    missing = Counter(expected_numbers(root, argv)) - Counter(numbers(shown))
    assert not missing, shown


def in_order(needle: str, haystack: str) -> bool:
    """Whether every character of ``needle`` is in ``haystack``, in order (wrapped text has
    other columns' cells between its pieces)."""
    rest = iter(haystack)
    return all(char in rest for char in needle)


@pytest.mark.parametrize("cols", [80, 120])
def test_ls_wraps_ids_and_titles_instead_of_cutting_them(root: Path, cols: int) -> None:
    """ls at 80 and 120 columns wraps each session's id and title over lines: not a character is dropped."""
    code, text = on_pty(["--root", str(root), "ls"], cols=cols)
    assert code == 0
    rows = "".join(visible(text).split())
    for session_id in IDS:
        start = rows.index(session_id[:8])
        assert in_order(session_id + TITLE.replace(" ", ""), rows[start:])
