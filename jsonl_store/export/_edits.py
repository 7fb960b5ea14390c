"""A tool call that edits files, as the diff it makes: what a reader of a transcript wants to see.

Two shapes are known. Claude Code's file tools state the text before and after:
``Edit`` (``file_path``, ``old_string``, ``new_string``), ``MultiEdit`` (``file_path``,
``edits``: a list of those pairs) and ``Write`` (``file_path``, ``content``: a whole new
file); their diff is computed with `difflib.unified_diff`. Codex's ``apply_patch``
already is a patch (https://github.com/openai/codex/blob/main/codex-rs/apply-patch/apply_patch_tool_instructions.md:
``*** Begin Patch`` … ``*** End Patch``), passed as a custom tool's input or inside a
shell command; it is shown as it is. The call's arguments are always shown too: a diff
is a reading aid, never the only copy. Likewise a shell result stored as JSON is shown as
its output text with its metadata beside it (`result_metadata`).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from typing import Any

from .._context.parts import ToolCallPart, result_metadata

_BEGIN = "*** Begin Patch"
_END = "*** End Patch"


def edit_diff(call: ToolCallPart) -> str | None:
    """The diff ``call`` makes, as unified-diff (or Codex patch) text, or None for any other call."""
    arguments = call.arguments
    if isinstance(arguments, dict):
        made = _file_tool_diff(call.name or "", arguments)
        if made is not None:
            return made
    return _patch_in(arguments)


def _file_tool_diff(name: str, arguments: dict[str, Any]) -> str | None:
    path = arguments.get("file_path")
    if not isinstance(path, str):
        return None
    if name == "Edit":
        return _pair_diff(path, arguments.get("old_string"), arguments.get("new_string"))
    if name == "MultiEdit" and isinstance(arguments.get("edits"), list):
        diffs = [
            _pair_diff(path, e.get("old_string"), e.get("new_string"))
            for e in arguments["edits"]
            if isinstance(e, dict)
        ]
        shown = [diff for diff in diffs if diff is not None]
        return "\n".join(shown) if shown else None
    if name == "Write":
        return _pair_diff(path, "", arguments.get("content"))
    return None


def _pair_diff(path: str, old: object, new: object) -> str | None:
    if not isinstance(old, str) or not isinstance(new, str):
        return None
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=path if old else "/dev/null",
        tofile=path,
    )
    # A line without its newline (the last of a text) still ends its own diff line.
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines).rstrip("\n") or None


def _patch_in(value: object) -> str | None:
    """The first ``*** Begin Patch`` … ``*** End Patch`` text among the strings of ``value``."""
    for text in _strings(value, depth=0):
        start = text.find(_BEGIN)
        if start < 0:
            continue
        end = text.find(_END, start)
        return text[start : end + len(_END)] if end >= 0 else text[start:]
    return None


def _strings(value: object, depth: int) -> Iterator[str]:
    # A shell call holds the patch in its command list, a custom tool call as its input:
    # a few levels are enough, and a hostile nesting costs nothing.
    if isinstance(value, str):
        yield value
    elif depth < 4 and isinstance(value, dict):
        for item in value.values():
            yield from _strings(item, depth + 1)
    elif depth < 4 and isinstance(value, list):
        for item in value:
            yield from _strings(item, depth + 1)


def line_kind(line: str) -> str:
    """How a diff line reads: ``"add"``, ``"del"``, ``"hunk"`` (``@@``, file headers) or ``""``."""
    if line.startswith(("+++", "---", "***")):
        return "hunk"
    if line.startswith("+"):
        return "add"
    if line.startswith("-"):
        return "del"
    if line.startswith("@@"):
        return "hunk"
    return ""


__all__ = ["edit_diff", "line_kind", "result_metadata"]
