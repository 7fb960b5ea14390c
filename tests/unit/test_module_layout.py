"""The package's shape (CONTRIBUTING, "Where things are"): no import cycle, a thin facade."""

from __future__ import annotations

import ast
from pathlib import Path

import jsonl_store

PACKAGE = Path(jsonl_store.__file__).parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """The package modules ``path`` imports, anywhere in it (function bodies included)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            if not target.startswith("jsonl_store"):
                continue
            found.add(target)
            for alias in node.names:  # `from . import _codec` imports a module
                candidate = f"{target}.{alias.name}"
                if (PACKAGE.parent / Path(*candidate.split("."))).with_suffix(".py").exists():
                    found.add(candidate)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("jsonl_store"))
    found.discard(name)
    return found


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    # A package's __init__ re-exports; importing a package's module runs it, but no
    # module below imports a package's __init__ for anything but re-exports, which are
    # checked separately. Edges to packages are left out so the cycle search sees modules.
    return {name: {t for t in _imports(path) if t in modules and not (PACKAGE.parent / Path(*t.split(".")) / "__init__.py").exists()}
            for name, path in modules.items()}  # fmt: skip


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                return [*stack[stack.index(target) :], target]
            if target not in state and (found := visit(target)) is not None:
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)) is not None:
            return found
    return None


def test_no_module_of_the_package_imports_itself_through_others() -> None:
    """The import graph of jsonl_store's modules has no cycle, also counting imports inside functions."""
    assert _cycle(_graph()) is None


def test_the_cycle_search_finds_a_cycle() -> None:
    """The check above can fail: a graph with a cycle is reported with the cycle's modules."""
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_the_read_side_never_imports_the_write_side() -> None:
    """Readers (_reader, _session, _view, _snapshots) import no writer module: a read opens nothing for writing."""
    graph = _graph()
    writers = {"jsonl_store._handles", "jsonl_store._append", "jsonl_store._compact", "jsonl_store.store",
               "jsonl_store._blob_writes"}  # fmt: skip
    for reader in (
        "jsonl_store._reader",
        "jsonl_store._session",
        "jsonl_store._view",
        "jsonl_store._snapshots",
    ):
        assert not graph[reader] & writers, reader
