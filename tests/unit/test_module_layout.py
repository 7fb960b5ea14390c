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
    writers = {"jsonl_store._session.handles", "jsonl_store._ops.append", "jsonl_store._ops.compact", "jsonl_store.store",
               "jsonl_store._log.blob_writes"}  # fmt: skip
    for reader in (
        "jsonl_store._log.reader",
        "jsonl_store._session.summary",
        "jsonl_store._context.view",
        "jsonl_store._log.snapshots",
    ):
        assert not graph[reader] & writers, reader


def _callers(module: str, names: set[str]) -> set[str]:
    """The package modules that use ``names`` of ``jsonl_store.<module>`` (``module.name``, or imported by name)."""
    found = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            used = (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == module
                and node.attr in names
            ) or (
                isinstance(node, ast.ImportFrom)
                and (node.module or "").rpartition(".")[2] == module
                and any(alias.name in names for alias in node.names)
            )
            if used:
                found.add(_module_name(path))
    found.discard(f"jsonl_store.{module}")
    return found


def test_the_facade_reads_and_writes_no_file_format_itself() -> None:
    """store.py imports none of the modules that read or write the files: it checks arguments and delegates."""
    files = {
        f"jsonl_store.{name}"
        for name in ("_atomic", "_checkpoint", "_codec", "_dirs", "_forks", "_history", "_lines", "_log",
                     "_reader", "_session", "_session_dir", "_snapshots")
    }  # fmt: skip
    assert not _graph()["jsonl_store.store"] & files


def test_records_are_encoded_on_the_one_append_path() -> None:
    """Only the append path encodes records (and a save's check of the append it will make, which it drops)."""
    assert _callers("_append", {"encode", "encode_one"}) == {
        "jsonl_store._ops.appending",
        "jsonl_store._ops.saves",
    }


def test_a_fork_chain_is_read_only_by_history_and_verify() -> None:
    """History is the one reader of a fork's chain and its sources' records; verify checks the same chain."""
    assert _callers("_forks", {"chain", "link_records"}) == {
        "jsonl_store._session.history",
        "jsonl_store._ops.recovery",
    }


def test_the_caller_search_finds_a_use() -> None:
    """The search above can fail: the append path is found using the encoder."""
    assert "jsonl_store._ops.appending" in _callers("_append", {"encode"})


#: What CONTRIBUTING promises of the package's size: the facade, each module, each function.
FACADE_LINES, MODULE_LINES, FUNCTION_LINES = 450, 600, 80
#: The only places over those bounds, each with why: the crash simulator models a whole
#: file system in one piece; the argument parser is one declaration per command.
OVER_MODULE_LINES = {"jsonl_store.testing._simfs"}
OVER_FUNCTION_LINES = {"jsonl_store.cli._main:build_parser"}


def _long_functions(source: str, module: str, bound: int) -> set[str]:
    """The functions (nested ones included) of ``source`` longer than ``bound`` lines, by qualified name."""
    found: set[str] = set()

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
                is_function = not isinstance(child, ast.ClassDef)
                if is_function and (child.end_lineno or child.lineno) - child.lineno + 1 > bound:
                    found.add(name)
                walk(child, name + ".")

    walk(ast.parse(source), f"{module}:")
    return found


def test_the_facade_modules_and_functions_stay_within_their_lengths() -> None:
    """store.py is at most 450 lines, every other module 600 and every function 80, but the two named exceptions."""
    modules = sorted(PACKAGE.rglob("*.py"))
    assert len((PACKAGE / "store.py").read_text().splitlines()) <= FACADE_LINES
    long_modules = {_module_name(p) for p in modules if len(p.read_text().splitlines()) > MODULE_LINES}
    assert long_modules == OVER_MODULE_LINES
    long_functions = set().union(
        *(_long_functions(p.read_text(), _module_name(p), FUNCTION_LINES) for p in modules)
    )
    assert long_functions == OVER_FUNCTION_LINES


def test_the_length_check_finds_a_long_function_in_a_class_and_spares_one_at_the_bound() -> None:
    """The function-length check sees a method of 81 lines and lets one of 80 pass."""

    def method(name: str, lines: int) -> str:
        return f"    def {name}(self) -> None:\n" + "".join(f"        x{i} = {i}\n" for i in range(lines - 1))

    source = "class C:\n" + method("long", 81) + method("fits", 80)
    assert _long_functions(source, "m", FUNCTION_LINES) == {"m:C.long"}
