"""LangGraph's own checkpointer conformance suite (langgraph-checkpoint-conformance) run against ours.

The suite is LangGraph's, installed from PyPI with the ``langgraph`` extra's test
dependencies (.ci/run), never copied here: ``validate`` runs each capability's tests on a
fresh saver and reports which passed. Every base capability must pass whole.

The extended capability ``copy_thread`` is offered and must pass too. Not applicable, by
design (the suite skips a capability whose method is not overridden): ``prune`` and
``delete_for_runs``. Both drop some checkpoints of a thread and keep others, which an
append-only raw log (spec §9) cannot do without rewriting it, and a rewrite that a crash
could leave half done is what the store never does; ``delete_thread`` deletes a thread whole.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

pytest.importorskip(
    "langgraph.checkpoint.conformance",
    reason='needs: pip install -e ".[langgraph]" langgraph-checkpoint-conformance',
)

from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import BASE_CAPABILITIES, EXTENDED_CAPABILITIES, Capability

from jsonl_store.adapters.langgraph import JsonlCheckpointSaver

#: Extended capabilities this adapter does not offer (the module docstring says why).
NOT_APPLICABLE = {"prune", "delete_for_runs"}


def test_the_saver_passes_every_base_capability_of_langgraphs_conformance_suite_and_copy_thread(
    tmp_path: Path,
) -> None:
    """put, put_writes, get_tuple, list, delete_thread and copy_thread pass all their tests."""
    runs = iter(range(1_000))

    @checkpointer_test(name="JsonlCheckpointSaver")
    async def saver() -> AsyncIterator[JsonlCheckpointSaver]:
        root = tmp_path / f"store-{next(runs)}"  # a fresh store for each capability's suite
        yield JsonlCheckpointSaver(str(root))

    report = asyncio.run(validate(saver))
    failures = {name: result.failures for name, result in report.results.items() if result.failures}
    assert failures == {}
    for capability in [*BASE_CAPABILITIES, Capability.COPY_THREAD]:
        result = report.results[capability.value]
        assert result.detected and result.passed and result.tests_passed > 0, (capability, result)
    skipped = {c.value for c in EXTENDED_CAPABILITIES if not report.results[c.value].detected}
    assert skipped == NOT_APPLICABLE
