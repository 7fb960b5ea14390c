"""Shared fixtures, the ``--long`` switch and the hypothesis profiles.

Profiles: ``ci`` (derandomized, no example database: the same examples on every run),
``dev`` (random, with the local database) and ``long`` (many more examples, for
``--long`` runs). ``HYPOTHESIS_PROFILE`` picks one; otherwise ``ci`` when the ``CI``
variable is set, else ``dev``. Tests scale their ``max_examples`` with
``helpers.examples(n)``, so ``--long`` makes every property test run longer.
"""

from __future__ import annotations

import os
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
