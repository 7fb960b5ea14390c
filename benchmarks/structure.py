"""The package's shape in figures: module sizes, the longest functions, the import layers.

Run ``python benchmarks/structure.py`` from the repository root; issue 22 asks for these
figures before and after each structural step, so they are measured by one script.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "jsonl_store"


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _functions(path: Path) -> list[tuple[int, str]]:
    """(lines, qualified name) of every function in ``path``, nested ones included."""
    found: list[tuple[int, str]] = []

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{child.name}"
                found.append(((child.end_lineno or child.lineno) - child.lineno + 1, name))
                walk(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                walk(child, f"{prefix}{child.name}.")

    walk(ast.parse(path.read_text()), f"{_module(path)}:")
    return found


def _imports(path: Path, modules: set[str]) -> set[str]:
    """The package modules ``path`` imports (relative imports resolved, functions included)."""
    name = _module(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            target = (
                ".".join([*base, node.module] if node.module else base) if node.level else node.module or ""
            )
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return (found & modules) - {name}


def _layers(graph: dict[str, set[str]]) -> dict[str, int]:
    """Each module's floor: 0 for a module importing no other, else one above its highest import."""
    floor: dict[str, int] = {}

    def visit(node: str, path: tuple[str, ...]) -> int:
        if node not in floor:
            below = [visit(t, (*path, node)) for t in graph[node] if t not in path]
            floor[node] = 1 + max(below) if below else 0
        return floor[node]

    for node in graph:
        visit(node, ())
    return floor


def main() -> None:
    paths = sorted(PACKAGE.rglob("*.py"))
    sizes = sorted(((len(p.read_text().splitlines()), _module(p)) for p in paths), reverse=True)
    functions = sorted((f for p in paths for f in _functions(p)), reverse=True)
    modules = {_module(p) for p in paths}
    graph = {_module(p): _imports(p, modules) for p in paths}
    floors = _layers(graph)
    out = sys.stdout
    out.write(f"modules: {len(paths)}, lines: {sum(s for s, _ in sizes)}\n")
    out.write(f"modules over 600 lines: {sum(1 for s, _ in sizes if s > 600)}\n")
    for size, name in sizes[:10]:
        out.write(f"  {size:5d}  {name}\n")
    out.write(f"functions: {len(functions)}, over 80 lines: {sum(1 for n, _ in functions if n > 80)}\n")
    for length, name in functions[:10]:
        out.write(f"  {length:5d}  {name}\n")
    out.write(f"import layers: {max(floors.values()) + 1}\n")


if __name__ == "__main__":
    main()
