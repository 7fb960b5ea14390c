"""Process-wide state lives in `jsonl_store._process`: one at-fork hook, one reset, every cache registered."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from jsonl_store import SessionStore, UserMessage, _process
from jsonl_store._format import depth as _depth
from jsonl_store._format import ids as _ids
from jsonl_store._session.forks import SHARED_ABSENCES
from jsonl_store._session.handles import SHARED_LISTINGS
from jsonl_store.testing import _simfs

PACKAGE = Path(_process.__file__).parent
#: Cached functions not registered with `_process`, each saying why: what they hold is
#: compiled from constants or is what an import found, the same in every process and
#: after every fork, so neither a child nor `reset` has anything to renew.
UNREGISTERED_CACHES = {
    ("_text/redact.py", "_builtin"),  # the built-in redaction patterns, compiled on first use
    ("_prices.py", "_module"),  # genai-prices, or None when the cost extra is not installed
    ("export/_markup.py", "_renderer"),  # the Markdown renderer of the html extra, or None
    ("export/_markup.py", "code_css"),  # Pygments' stylesheet text, or "" without it
}


def _registered_caches(tree: ast.AST) -> set[str]:
    """The cached functions whose ``cache_clear`` ``tree`` hands to `_process.register`."""
    return {arg.value.id for node in ast.walk(tree) if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute) and node.func.attr == "register"
            for arg in node.args if isinstance(arg, ast.Attribute) and arg.attr == "cache_clear"
            and isinstance(arg.value, ast.Name)}  # fmt: skip


def _process_state(source: str) -> set[str]:
    """What ``source`` does that only `_process` may: an at-fork hook, a weak set, an unregistered cached function."""
    tree = ast.parse(source)
    registered = _registered_caches(tree)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ("register_at_fork", "WeakSet"):
            found.add(node.attr)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for decorator in node.decorator_list:
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                cached = isinstance(target, ast.Attribute) and target.attr in ("cache", "lru_cache")
                if cached and node.name not in registered:
                    found.add(node.name)
    return found


def test_no_module_but_the_process_module_keeps_fork_hooks_or_weak_sets() -> None:
    """No other module registers an at-fork hook or keeps a weak set; a cached function is registered or listed with why."""
    found: set[tuple[str, str]] = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        if module != "_process.py":
            found.update((module, what) for what in _process_state(path.read_text()))
    assert found == UNREGISTERED_CACHES


def test_the_process_state_scan_finds_hooks_weak_sets_and_caches() -> None:
    """The check above can fail: a hook, a weak set and an unregistered lru_cache are found, a registered one is not."""
    source = (
        "import os, weakref, functools\n"
        "os.register_at_fork(after_in_child=f)\n"
        "live = weakref.WeakSet()\n"
        "@functools.lru_cache(maxsize=8)\n"
        "def parse(x): return x\n"
        "@functools.cache\n"
        "def table(): return []\n"
        "_process.register('table', table.cache_clear)\n"
    )
    assert _process_state(source) == {"register_at_fork", "WeakSet", "parse"}


def test_reset_empties_every_registered_cache_and_renews_its_locks(tmp_path: Path) -> None:
    """After `reset`, the uuid7 tails and the path cache are empty, the deep-stack lock is new and the store still works."""
    store = SessionStore(tmp_path, durability="none")
    store.append("s", UserMessage(content="before"))
    _simfs._normalize("/x/./y")
    lock = _depth._DeepStack.mutex
    assert _ids._tails and _simfs._normalized
    _process.reset()
    assert not _ids._tails and not _simfs._normalized
    assert _depth._DeepStack.mutex is not lock
    store.append("s", UserMessage(content="after"))
    assert len(list(store.records("s"))) == 2


def test_reset_forgets_the_shared_snapshot_listings_and_fork_less_directories(tmp_path: Path) -> None:
    """The caches every store on the real file system shares are registered, and `reset` empties them."""
    assert {"snapshot listings", "fork-less directories"} <= set(_process.registered())
    SHARED_LISTINGS._entries[str(tmp_path)] = ((0, 0, 0, 0), (1,), False)
    SHARED_ABSENCES._keys[str(tmp_path)] = (0, 0, 0, 0)
    _process.reset()
    assert str(tmp_path) not in SHARED_LISTINGS._entries
    assert str(tmp_path) not in SHARED_ABSENCES._keys


def test_a_module_registering_again_replaces_its_reset_in_place(monkeypatch: pytest.MonkeyPatch) -> None:
    """A name registered twice (a reloaded module) keeps one entry, in its place, calling the newer function."""
    monkeypatch.setattr(_process, "_registered", list(_process._registered))
    calls: list[str] = []
    _process.register("a test's cache", lambda: calls.append("old"))
    _process.register("another test's cache", lambda: calls.append("other"))
    _process.register("a test's cache", lambda: calls.append("new"))
    assert _process.registered()[-2:] == ("a test's cache", "another test's cache")
    _process.reset()
    assert calls == ["new", "other"]
