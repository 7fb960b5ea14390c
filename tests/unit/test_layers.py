"""The package's floors (CONTRIBUTING, "Where things are"): imports point down, upper floors use public names, the map names every module."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import jsonl_store

PACKAGE = Path(jsonl_store.__file__).parent
CONTRIBUTING = PACKAGE.parent / "CONTRIBUTING.md"

#: The floors, lowest first: a module may import its own unit (a sub-package, or a
#: top-level module) and any unit on a lower floor, never one beside it or above it.
#: Each unit is named relative to ``jsonl_store``; this is the one list of them.
FLOORS: tuple[frozenset[str], ...] = (
    frozenset({"_errors", "_process"}),  # the error tree; process-wide state, imports nothing
    frozenset({"_text"}),
    frozenset({"_format"}),
    frozenset({"_io"}),
    frozenset({"_log"}),
    frozenset({"_context"}),
    frozenset({"_session"}),
    frozenset({"_ops"}),
    frozenset({"store"}),  # the facade
    frozenset({"aio"}),  # the asyncio facade, over the store
    frozenset({""}),  # the package's __init__: re-exports only (never checked as an importer)
    frozenset({"_prices"}),
    frozenset({"_usage_report"}),
    frozenset({"export", "importers", "search", "sql", "adapters", "testing"}),
    frozenset({"cli"}),
)
#: The upper floors: over the facade, they use only public names of the floors below.
UPPER = frozenset(
    {"_prices", "_usage_report", "export", "importers", "search", "sql", "adapters", "testing", "cli"}
)


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _unit(module: str) -> str:
    return module.split(".", maxsplit=1)[0]


def _floor(unit: str) -> int:
    for index, floor in enumerate(FLOORS):
        if unit in floor:
            return index
    raise AssertionError(f"{unit!r} is on no floor: add it to FLOORS in {__file__}")


def _imports(path: Path, name: str) -> list[tuple[int, str, list[tuple[str, str]]]]:
    """(line, the package module imported from, each name taken and the name it is bound
    to) of each import of the package in ``path`` (the module ``name``), function bodies
    included; modules named relative to ``jsonl_store``."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".") if package else []
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            elif node.module == "jsonl_store" or (node.module or "").startswith("jsonl_store."):
                target = (node.module or "").removeprefix("jsonl_store").lstrip(".")
            else:
                continue
            found.append((node.lineno, target, [(a.name, a.asname or a.name) for a in node.names]))
        elif isinstance(node, ast.Import):
            found += [
                (node.lineno, a.name.removeprefix("jsonl_store."), [])
                for a in node.names
                if a.name.startswith("jsonl_store.")
            ]
    return found


def _join(target: str, name: str) -> str:
    return f"{target}.{name}" if target else name


def _is_module(dotted: str) -> bool:
    where = PACKAGE / Path(*dotted.split("."))
    return where.with_suffix(".py").exists() or (where / "__init__.py").exists()


def _upward(path: Path, name: str) -> list[str]:
    """Each import in ``path`` (the module ``name``) of a unit on a higher floor, or beside it on the same one."""
    here = _unit(name)
    wrong = []
    for line, target, names in _imports(path, name):
        modules = [_join(target, taken) for taken, _ in names if _is_module(_join(target, taken))]
        wrong += [
            f"{name}:{line} imports {module or 'jsonl_store'}"
            for module in modules or [target]
            if _unit(module) != here and _floor(_unit(module)) >= _floor(here)
        ]
    return wrong


def _private_names(path: Path, name: str) -> list[str]:
    """Each underscored name an upper-floor module takes from a floor below the facade:
    imported (``from .._format.codec import _encoder``) or read off an imported module
    (``codec._encoder``)."""
    here = _unit(name)
    below: set[str] = set()  # the names lower-floor modules are bound to
    wrong = []
    facade = _floor("store")

    def lower(module: str) -> bool:
        return _unit(module) != here and _floor(_unit(module)) < facade

    for line, target, names in _imports(path, name):
        for taken, bound in names:
            if _is_module(_join(target, taken)):
                if lower(_join(target, taken)):
                    below.add(bound)  # a module, private or not: what is read off it is checked below
            elif lower(target) and taken.startswith("_"):
                wrong.append(f"{name}:{line} imports {taken} from {target}")
    wrong += [
        f"{name}:{node.lineno} reads {node.value.id}.{node.attr}"
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id in below
        and node.attr.startswith("_")
        and not node.attr.startswith("__")
    ]
    return wrong


def test_every_unit_of_the_package_is_on_a_floor() -> None:
    """Each sub-package and top-level module of jsonl_store is named in FLOORS, so a new one must be placed."""
    units = {_unit(_module_name(p)) for p in PACKAGE.rglob("*.py")}
    assert {u for u in units if not any(u in floor for floor in FLOORS)} == set()


def test_no_module_imports_a_floor_above_its_own() -> None:
    """Imports point down the floors (FLOORS), also inside functions: no module imports a unit above or beside its own."""
    wrong = [line for path in sorted(PACKAGE.rglob("*.py")) if path.parent != PACKAGE or path.name != "__init__.py"
             for line in _upward(path, _module_name(path))]  # fmt: skip
    assert wrong == []


def test_the_floor_check_sees_an_upward_import(tmp_path: Path) -> None:
    """The check above can fail: a module of _format importing the store, or beside it _io, is reported with its line."""
    module = tmp_path / "probe.py"
    module.write_text("from ..store import SessionStore\n\n\ndef f():\n    from .._io import fs\n")
    assert _upward(module, "_format.probe") == [
        "_format.probe:1 imports store",
        "_format.probe:5 imports _io.fs",
    ]


def test_upper_floors_take_no_underscored_name_from_below() -> None:
    """cli, export, importers, adapters, search, sql, testing take only public (non-underscored) names from the floors below them."""
    wrong = [line for path in sorted(PACKAGE.rglob("*.py")) if _unit(_module_name(path)) in UPPER
             for line in _private_names(path, _module_name(path))]  # fmt: skip
    assert wrong == []


def test_the_private_name_check_sees_an_underscored_name(tmp_path: Path) -> None:
    """The check above can fail: an exporter importing _encoder, or reading codec._encoder, is reported."""
    module = tmp_path / "probe.py"
    module.write_text(
        "from .._format import codec\nfrom .._format.codec import _encoder\n\nENCODER = codec._encoder\n"
    )
    assert _private_names(module, "export.probe") == [
        "export.probe:2 imports _encoder from _format.codec",
        "export.probe:4 reads codec._encoder",
    ]


def _map_rows() -> dict[str, str]:
    """CONTRIBUTING's "Where things are" table: the first cell's name (``_format/``,
    ``store.py``) -> the row."""
    text = CONTRIBUTING.read_text()
    section = text[text.index("## Where things are") :]
    rows = {}
    for line in section.splitlines():
        match = re.match(r"\| `([^`]+)` \|", line)
        if match:
            rows[match.group(1)] = line
    return rows


def test_contributing_names_every_module_in_its_floor_row() -> None:
    """CONTRIBUTING's map has a row per sub-package naming each of its modules, and a row per top-level module."""
    rows = _map_rows()
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        if len(relative.parts) == 1:
            if relative.name not in rows:
                missing.append(str(relative))
            continue
        row = rows.get(relative.parts[0] + "/")
        stem = path.stem
        if row is None or (not stem.startswith("__") and len(relative.parts) == 2 and f"`{stem}`" not in row):
            missing.append(str(relative))
    assert missing == []
