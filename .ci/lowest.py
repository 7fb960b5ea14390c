"""The lowest versions ``pyproject.toml`` declares for the runtime dependencies.

The project promises that its declared floors are true, so CI installs exactly these
versions and runs the tests. The list is read from ``[project].dependencies`` every
time, so a dependency added (or removed) there is covered without editing CI.

    python3 .ci/lowest.py            # one ``name==floor`` line per runtime dependency
    python3 .ci/lowest.py --verify   # exit 1 unless the running environment has exactly those
    python3 .ci/lowest.py --extra openai-agents --extra zett [--verify]
                                     # the same, with those extras' requirements too (also --extra cost)

An adapter's extra names the framework it needs (``openai-agents>=0.21``): with
``--extra``, its floor is pinned and verified like a runtime dependency's, so CI runs the
adapter's tests against the oldest framework release the extra allows.

A dependency without a floor (``>=``, ``~=`` or ``==``) is an error: CI could not test
the lowest version it allows.
"""

from __future__ import annotations

import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"
_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(.*)")


def floors(extras: list[str] | None = None) -> list[tuple[str, str, str]]:
    """``(name, floor, marker)`` for each runtime dependency and each requirement of
    ``extras``, in the order pyproject lists them."""
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    requirements = list(project.get("dependencies", []))
    optional = project.get("optional-dependencies", {})
    for extra in extras or []:
        if extra not in optional:
            sys.exit(f"{PYPROJECT}: no extra named {extra!r}")
        requirements += optional[extra]
    out = []
    for requirement in requirements:
        spec, _, marker = requirement.partition(";")  # a marker does not change the floor
        match = _NAME.fullmatch(spec)
        if match is None:
            sys.exit(f"{PYPROJECT}: cannot read the requirement {requirement!r}")
        name, clauses = match.group(1), match.group(3).strip("() ")
        floor = None
        for clause in filter(None, (c.strip() for c in clauses.split(","))):
            for operator in ("==", ">=", "~="):
                if clause.startswith(operator) and not clause.startswith("==="):
                    floor = clause[len(operator):].strip()
        if not floor or "*" in floor:
            sys.exit(f"{PYPROJECT}: {requirement!r} declares no floor (>=, ~= or ==); CI tests the lowest")
        out.append((name, floor, marker.strip()))
    return out


def _applies(marker: str) -> bool:
    """Whether an environment marker holds here (``packaging`` comes with pytest)."""
    try:
        from packaging.markers import Marker
    except ImportError:
        return True
    return Marker(marker).evaluate()


def _release(version: str) -> tuple[int | str, ...]:
    """``3.9`` and ``3.9.0`` are the same version (PEP 440 pads with zeros)."""
    match = re.match(r"\d+(?:\.\d+)*", version)
    parts = [int(p) for p in match.group().split(".")] if match else []
    while parts and parts[-1] == 0:
        parts.pop()
    return (*parts, version[match.end() if match else 0 :])


def main(argv: list[str]) -> int:
    extras, rest = [], []
    args = iter(argv)
    for arg in args:
        if arg == "--extra":
            extras.append(next(args, ""))
        else:
            rest.append(arg)
    argv = rest
    pins = floors(extras)
    if argv == ["--verify"]:
        wrong, here = [], []
        for name, floor, marker in pins:
            if marker and not _applies(marker):
                continue
            try:
                installed = metadata.version(name)
            except metadata.PackageNotFoundError:
                installed = "not installed"
            here.append(f"{name} {installed}")
            if installed == "not installed" or _release(installed) != _release(floor):
                wrong.append(f"{name}: declared floor {floor}, installed {installed}")
        if wrong:
            print("not at the declared floors:\n  " + "\n  ".join(wrong), file=sys.stderr)
            return 1
        print("installed: " + (" ".join(here) or "nothing to pin"))
        return 0
    if argv:
        print(__doc__, file=sys.stderr)
        return 2
    for name, floor, _ in pins:
        print(f"{name}=={floor}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
