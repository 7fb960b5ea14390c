"""`search` on real transcripts (tests/importers/data): what ``grep -F`` finds in a tool call or output, search finds.

The expected hits are built from the source file with plain ``json`` parsing: each Codex
``function_call``'s arguments (decoded), ``custom_tool_call``'s input and each output, each
Claude Code ``tool_use`` input and ``tool_result`` content. From each such item one word
is taken that ``grep -F`` finds in the file as it is (no character JSON escapes); `search`
must give a hit of the part kind the item is (``tool_call`` or ``tool_result``) in a
session that file fed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jsonl_store import SessionStore
from jsonl_store.importers import import_claude_code, import_codex
from jsonl_store.search import search

DATA = Path(__file__).parent / "data"
#: A word a person would search for, which JSON writes as it is (no escape, no space).
WORD = re.compile(r"[A-Za-z0-9_./-]{5,60}")


def strings(value: Any) -> Iterator[str]:
    """Every string inside a JSON value (keys too), depth first."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, inner in value.items():
            yield key
            yield from strings(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from strings(inner)


def decoded(text: Any) -> Any:
    """A JSON string's value, or the string itself when it is no JSON."""
    if isinstance(text, str):
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


def output(value: Any) -> Any:
    """A tool output as a person reads it: content blocks as their text (an image as its URL)."""
    if not isinstance(value, (list, dict)) or (isinstance(value, dict) and "type" not in value):
        return value
    return [readable(block) for block in (value if isinstance(value, list) else [value])]


def readable(block: Any) -> Any:
    if isinstance(block, dict) and isinstance(block.get("text"), str):
        return block["text"]
    if isinstance(block, dict) and block.get("type") == "input_image":
        return block.get("image_url")
    return block


def codex_items(line: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    payload = line.get("payload")
    if line.get("type") != "response_item" or not isinstance(payload, dict):
        return
    kind = payload.get("type")
    if kind == "function_call":
        yield "tool_call", decoded(payload["arguments"])
    elif kind == "custom_tool_call":
        yield "tool_call", payload.get("input")
    elif kind in ("function_call_output", "custom_tool_call_output"):
        yield "tool_result", output(decoded(payload.get("output")))


def claude_items(line: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    message = line.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, dict):
            continue
        if block.get("type") == "tool_use" and line.get("type") == "assistant":
            yield "tool_call", block.get("input")
        elif block.get("type") == "tool_result" and line.get("type") == "user":
            yield "tool_result", output(block.get("content"))


def expected(path: Path) -> list[tuple[str, str]]:
    """``(part kind, word)``: for each tool call and output of the file, its longest word ``grep -F`` finds."""
    raw = path.read_bytes()
    items = codex_items if path.parent.name == "codex" else claude_items
    out: list[tuple[str, str]] = []
    for text in raw.decode("utf-8").splitlines():
        for kind, value in items(json.loads(text)):
            words = [w for s in strings(value) for w in WORD.findall(s) if w.encode() in raw]
            if words:
                out.append((kind, max(words, key=len)))
    return out


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> tuple[SessionStore, dict[str, list[str]]]:
    """Both tools' transcripts in one store, and the sessions each file fed (its own and its sub-agents')."""
    store = SessionStore(tmp_path_factory.mktemp("search-real"), durability="none")
    fed: dict[str, list[str]] = {}
    for report in (import_claude_code(store, DATA / "claude-code"), import_codex(store, DATA / "codex")):
        for file in report.files:
            fed[Path(file.path).name] = [s for s in (file.session_id, *file.children) if s is not None]
    return store, fed


FILES = sorted(p for tool in ("claude-code", "codex") for p in (DATA / tool).glob("*.jsonl"))


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_every_tool_call_and_output_grep_finds_is_found_with_its_kind(
    imported: tuple[SessionStore, dict[str, list[str]]], path: Path
) -> None:
    """For each tool call and output of a real transcript, a word of it grep -F finds is a hit of that part kind."""
    store, fed = imported
    wanted = expected(path)
    missed = []
    for kind, word in wanted:
        kinds = {hit.kind for sid in fed[path.name] for hit in search(store, word, session_id=sid)}
        if kind not in kinds:
            missed.append((kind, word, sorted(kinds)))
    assert missed == []
