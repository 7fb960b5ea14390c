"""Shared fixtures, the ``--long`` switch and the hypothesis profiles.

Profiles: ``ci`` (derandomized, no example database: the same examples on every run),
``dev`` (random, with the local database) and ``long`` (many more examples, for
``--long`` runs). ``HYPOTHESIS_PROFILE`` picks one; otherwise ``ci`` when the ``CI``
variable is set, else ``dev``. Tests scale their ``max_examples`` with
``helpers.examples(n)``, so ``--long`` makes every property test run longer.
"""

from __future__ import annotations

import asyncio
import os
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from jsonl_store import Problem, SessionStore

_QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large]
settings.register_profile(
    "ci", deadline=None, derandomize=True, print_blob=True, suppress_health_check=_QUIET
)
settings.register_profile("dev", deadline=None, suppress_health_check=_QUIET)
settings.register_profile("long", deadline=None, max_examples=2000, suppress_health_check=_QUIET)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev"))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--long", action="store_true", help="also run tests marked slow, with many more examples"
    )


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--long"):
        settings.load_profile("long")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--long"):
        return
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        (drop if item.get_closest_marker("slow") else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """The store root: a directory below ``tmp_path`` that does not exist yet."""
    return tmp_path / "store"


@pytest.fixture
def problems() -> list[Problem]:
    """Every problem the ``store`` fixture reported through ``on_problem``."""
    return []


@pytest.fixture
def store(root: Path, problems: list[Problem]) -> Iterator[SessionStore]:
    """A store on ``root`` without fsync (tests that are about fsync make their own)."""
    with SessionStore(root, durability="none", on_problem=problems.append) as opened:
        yield opened


@pytest.fixture
def sync_event_loop() -> Iterator[asyncio.AbstractEventLoop]:
    """An event loop that a framework's ``run_sync`` finds, closed when the test ends.

    pydantic-ai's ``run_sync`` runs on ``asyncio.get_event_loop()``, which makes a loop and
    leaves it open; its ``ResourceWarning`` would surface in whichever later test the
    garbage collector happens to run (warnings are errors here).
    """
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    yield loop
    loop.close()
    # An asyncio.run() in the test unsets the loop, and a run_sync after it makes another:
    # close whichever is current now too.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            current = asyncio.get_event_loop_policy().get_event_loop()
        except RuntimeError:  # none is current
            current = None
    if current is not None and not current.is_running():
        current.close()
    asyncio.set_event_loop(None)
