"""Token totals of every shared transcript (tests/importers/data) as the source tool counts them.

Each expected figure is computed here from the source file with plain ``json``, following
the documented rules, not the importer's code:

- Claude Code, ccusage's rule (https://github.com/ryoppippi/ccusage, the Claude loader's
  ``createUniqueHash``): one call per ``message.id`` + ``requestId`` (``message.id`` alone
  when there is no ``requestId``), except that we take the line with the largest counts
  where ccusage keeps the first (https://github.com/ccusage/ccusage/issues/901).
- Codex, ccusage's Codex loader: ``last_token_usage`` per ``token_count`` event, the
  difference of ``total_token_usage`` only for an event without it, and an event whose
  total repeats the one before is no call (https://github.com/ccusage/ccusage/issues/884).
  For a real rollout that is also Codex's own count: its last ``total_token_usage``.
- pi: each assistant message's ``usage`` once.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from source_usage import Totals, claude_code_calls, codex_calls, lines, totals

from jsonl_store import ModelUsage, SessionStore
from jsonl_store.importers import ImportReport, import_claude_code, import_codex, import_pi

DATA = Path(__file__).parent / "data"


def stored(store: SessionStore, report: ImportReport) -> Totals:
    """The totals of every session one file fed (its own and its sub-agents')."""
    [file] = report.files
    sessions = [str(file.session_id), *file.children]
    total = ModelUsage()
    calls = 0
    for sid in sessions:
        found = store.model_calls(sid)
        calls += len(found)
        for call in found:
            total = ModelUsage(
                input_tokens=total.input_tokens + call["input_tokens"],
                output_tokens=total.output_tokens + call["output_tokens"],
                cache_read_tokens=(total.cache_read_tokens or 0) + (call["cache_read_tokens"] or 0),
                cache_write_tokens=(total.cache_write_tokens or 0) + (call["cache_write_tokens"] or 0),
                reasoning_tokens=(total.reasoning_tokens or 0) + (call["reasoning_tokens"] or 0),
            )
    return (total.input_tokens, total.output_tokens, total.cache_read_tokens or 0,
            total.cache_write_tokens or 0, total.reasoning_tokens or 0, calls)  # fmt: skip


def claude_code_totals(path: Path) -> Totals:
    """One call per message id and request id: the line with the largest counts (`source_usage`)."""
    return totals(claude_code_calls(path))


def codex_totals(path: Path) -> Totals:
    """Each token_count event whose total is new: its last_token_usage, else the total's increase."""
    return totals(codex_calls(path))


def pi_totals(path: Path) -> Totals:
    """Each assistant message's usage once."""
    usages = [
        d["message"]["usage"]
        for d in lines(path)
        if d.get("type") == "message"
        and d["message"].get("role") == "assistant"
        and d["message"].get("usage")
    ]
    read, write = sum(u.get("cacheRead", 0) for u in usages), sum(u.get("cacheWrite", 0) for u in usages)
    fresh, output = sum(u.get("input", 0) for u in usages), sum(u.get("output", 0) for u in usages)
    return fresh + read + write, output, read, write, 0, len(usages)


TOOLS: dict[str, tuple[Callable[..., ImportReport], Callable[[Path], Totals]]] = {
    "claude-code": (import_claude_code, claude_code_totals),
    "codex": (import_codex, codex_totals),
    "pi": (import_pi, pi_totals),
}


@pytest.mark.parametrize("path", sorted(DATA.glob("*/*.jsonl")), ids=lambda p: p.name)
def test_a_shared_transcripts_totals_are_the_source_tools(tmp_path: Path, path: Path) -> None:
    """usage_totals and model_calls over the sessions a transcript fed equal the totals its tool's rules give."""
    importer, expected = TOOLS[path.parent.name]
    store = SessionStore(tmp_path / "s", durability="none")
    assert stored(store, importer(store, path)) == expected(path)


@pytest.mark.parametrize(
    "name", ["codex-0.58.0-rollout-shell-calls-truncated.jsonl", "codex-0.135.0-exec-redacted-minimal.jsonl"]
)
def test_a_real_rollouts_totals_are_its_last_cumulative_total(tmp_path: Path, name: str) -> None:
    """The per-call counts of a real rollout add up to the total_token_usage Codex itself wrote last."""
    path = DATA / "codex" / name
    last = [d["payload"]["info"]["total_token_usage"] for d in lines(path)
            if d.get("type") == "event_msg" and d["payload"].get("type") == "token_count" and d["payload"]["info"]][-1]  # fmt: skip
    store = SessionStore(tmp_path / "s", durability="none")
    totals = stored(store, import_codex(store, path))
    assert totals[:3] == (last["input_tokens"], last["output_tokens"], last["cached_input_tokens"])
    assert totals[4] == last["reasoning_output_tokens"]
