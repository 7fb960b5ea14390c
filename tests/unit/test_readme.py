"""README.md and the docs pages are executed: their examples run, and every CLI command is documented.

The ```python blocks and the ``$ jsonl-store ...`` lines of the ```console blocks of each
document (README.md, each page under docs/) run in document order, in one namespace, in
one temporary folder, so each example may build on the ones above it (as a reader would
run them). A page whose examples go on from another page's says so to its reader and
holds a ``<!-- continues: PAGE -->`` line (PAGE relative to docs/): that page's examples
run first, in the same namespace and folder. A console command must exit 0, or the
code its ``# exits N`` comment names, and print what the README shows below it, where
``...`` stands for any text. A block right below a ``<!-- needs: MODULE -->`` line
(an adapter's example) runs only where MODULE is installed, as with its extra; so does a
Python block that imports an adapter
(``jsonl_store.adapters.*``) runs only where everything it imports can be imported: without
its framework's extra it is skipped, and the blocks after it must not depend on it.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

from jsonl_store._context import dialects as _dialects
from jsonl_store.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
#: Every document whose examples run: the README and each docs page (the hooks folder holds code).
DOCUMENTS = [README, *sorted(p for p in DOCS.rglob("*.md") if "hooks" not in p.parts)]
_CONTINUES = re.compile(r"^<!-- continues: ([\w./-]+) -->$", re.MULTILINE)
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
_NEEDS = re.compile(r"<!-- needs: ([\w.]+) -->\n\Z")


@dataclass(frozen=True)
class Block:
    language: str
    code: str
    line: int
    #: The module the block needs (an optional extra's), from a ``<!-- needs: ... -->`` line above it.
    needs: str | None = None
    #: The document's path relative to the repository, for messages (``docs/guides/store.md``).
    document: str = "README.md"

    @property
    def runnable(self) -> bool:
        try:
            return self.needs is None or importlib.util.find_spec(self.needs) is not None
        except ModuleNotFoundError:  # a submodule's package (``langgraph`` of ``langgraph.graph``) is missing
            return False


def blocks(document: Path = README) -> list[Block]:
    """The fenced blocks of ``document``, in order."""
    text = document.read_text(encoding="utf-8")
    out = []
    for m in _FENCE.finditer(text):
        needs = _NEEDS.search(text, max(0, m.start() - 200), m.start())
        line = text.count("\n", 0, m.start()) + 2
        name = document.relative_to(ROOT).as_posix()
        out.append(Block(m.group(1), m.group(2), line, needs.group(1) if needs else None, name))
    return out


def unavailable(block: Block) -> list[str]:
    """What an adapter's example imports but cannot here (its extra is not installed)."""
    modules = set()
    for node in ast.walk(ast.parse(block.code)):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            modules.add(node.module)
        elif isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
    if not any(m.startswith("jsonl_store.adapters.") for m in modules):
        return []
    missing = []
    for module in sorted(modules):
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append(module)
    return missing


@dataclass(frozen=True)
class Command:
    argv: list[str]
    exit_code: int
    expected: str
    line: int


def commands(block: Block) -> list[Command]:
    """The ``$ jsonl-store`` lines of a console block, each with the output shown after it."""
    out: list[Command] = []
    lines = block.code.splitlines()
    for index, line in enumerate(lines):
        if not line.startswith("$ "):
            continue
        words = shlex.split(line[2:], comments=True)
        if not words or words[0] != "jsonl-store":
            continue
        exits = re.search(r"#\s*exits (\d+)", line)
        expected = []
        for following in lines[index + 1 :]:
            if following.startswith("$ "):
                break
            expected.append(following)
        out.append(
            Command(words[1:], int(exits.group(1)) if exits else 0, "\n".join(expected), block.line + index)
        )
    return out


def matches(expected: str, actual: str) -> bool:
    """True when ``actual`` is ``expected`` with each ``...`` standing for any text."""
    pattern = ".*?".join(re.escape(part) for part in expected.strip().split("..."))
    return re.fullmatch(pattern, actual.strip(), re.DOTALL) is not None


def subcommands() -> dict[str, argparse.ArgumentParser]:
    """Every name the command answers to, aliases (``ls``) included, with its parser."""
    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("the parser has no subcommands")


def with_predecessors(document: Path, seen: tuple[Path, ...] = ()) -> list[Path]:
    """``document`` after the pages its examples continue from (``<!-- continues: ... -->``), in order."""
    assert document not in seen, f"{document} continues from itself through {seen}"
    earlier: list[Path] = []
    for name in _CONTINUES.findall(document.read_text(encoding="utf-8")):
        page = DOCS / name
        assert page.is_file(), f"{document.name} continues from {name}, which is not in docs/"
        earlier += [p for p in with_predecessors(page, (*seen, document)) if p not in earlier]
    return [*earlier, document]


def run_block(block: Block, namespace: dict[str, object], capsys: pytest.CaptureFixture[str]) -> int:
    """Run one block (a Python block, or each command of a console block); how many things ran."""
    if not block.runnable:
        return 0  # its extra is not installed here; CI installs it
    if block.language == "python":
        if unavailable(block):
            return 0  # an adapter's example, without its extra
        exec(
            compile(block.code, f"{block.document}:{block.line}", "exec"), namespace
        )  # running it is the point
        return 1
    if block.language != "console":
        return 0
    for command in commands(block):
        capsys.readouterr()
        code = main(command.argv)
        captured = capsys.readouterr()
        output = captured.out + captured.err
        where = f"{block.document}:{command.line}: jsonl-store {shlex.join(command.argv)}"
        assert code == command.exit_code, f"{where} exited {code}\n{output}"
        if command.expected.strip():
            assert matches(command.expected, output), f"{where} printed:\n{output}"
    return len(commands(block))


@pytest.mark.usefixtures("sync_event_loop")  # the pydantic-ai example's run_sync
@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_examples_run_in_order(
    document: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every Python block and console command of a document runs, in order, and does what it shows."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("JSONL_STORE_ROOT", raising=False)
    # Each document starts as a fresh process would: a dialect one registers (the message
    # model page's) is not yet registered by another document that shows the same example.
    monkeypatch.setattr(_dialects, "_DIALECTS", dict(_dialects._DIALECTS))
    namespace: dict[str, object] = {"__name__": "readme"}
    ran = 0
    for page in with_predecessors(document):
        for block in blocks(page):
            ran += run_block(block, namespace, capsys)
    examples = [b for b in blocks(document) if b.language in ("python", "console") and b.runnable]
    assert ran > 0 or not examples, f"none of {document.name}'s examples ran"


def test_the_docs_examples_are_many() -> None:
    """The README and the docs hold at least ten Python examples and ten commands between them."""
    every = [b for document in DOCUMENTS for b in blocks(document)]
    assert sum(b.language == "python" for b in every) >= 10
    assert sum(len(commands(b)) for b in every if b.language == "console") >= 10


def test_a_needs_line_marks_only_the_block_right_below_it() -> None:
    """``<!-- needs: zett_agent -->`` is read for the zett-agent example and for no other block."""
    every = [b for document in DOCUMENTS[1:] for b in blocks(document)]  # the adapters page holds it
    zett = [b for b in every if b.needs == "zett_agent"]
    assert len(zett) == 1 and "jsonl_store.adapters.zett" in zett[0].code
    # Besides the adapters' examples, only the SQL section's blocks need an extra (duckdb,
    # polars) and the HTML export's (markdown_it: without the html extra it adds a note).
    sql = {"duckdb", "polars"}
    assert all(
        "jsonl_store.adapters" in b.code
        or (b.needs in sql and ("sql" in b.code or b.needs in b.code))
        or (b.needs == "markdown_it" and "export" in b.code)
        for b in every
        if b.needs is not None
    )


def test_readme_first_example_is_about_ten_lines() -> None:
    """The first-screen example stays short: append, snapshot, load in about ten lines."""
    first = next(b for b in blocks() if b.language == "python")
    code_lines = [line for line in first.code.splitlines() if line.strip()]
    assert len(code_lines) <= 12
    for call in ("append(", "snapshot(", "load("):
        assert call in first.code


def test_quickstart_has_exactly_two_commands() -> None:
    """Quickstart shows one command that runs the demo and one that runs the tests, nothing else."""
    text = README.read_text(encoding="utf-8")
    section = text.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    found = [m.group(2).strip() for m in _FENCE.finditer(section)]
    assert len(found) == 2
    # The demo's command installs the cli extra (rich), which the demo draws with on a terminal.
    assert found[0].endswith("jsonl-store demo") and "pip install -e '.[cli]'" in found[0]
    assert found[1].endswith("python -m pytest") and "pip install -e '.[test]'" in found[1]


def test_ci_runs_the_readme_test_command() -> None:
    """.ci/run runs the same test command as the README's Quickstart."""
    ci = (README.parent / ".ci" / "run").read_text(encoding="utf-8")
    assert "python -m pytest" in ci and "pip install -e '.[test]'" in ci


def canonical(name: str) -> str:
    """The name a subcommand was registered under (``list`` for ``ls``): the first of its names."""
    commands = subcommands()
    return next(other for other, parser in commands.items() if parser is commands[name])


@pytest.mark.parametrize("name", sorted(subcommands()))
def test_every_cli_command_is_documented(name: str) -> None:
    """Each subcommand has a docs heading, its aliases are named there, and every option is mentioned."""
    text = "\n".join(p.read_text(encoding="utf-8") for p in sorted((DOCS / "guides").glob("*.md")))
    main_name = canonical(name)
    heading = re.search(rf"^### `jsonl-store {main_name}\b[^`]*`", text, re.MULTILINE)
    assert heading is not None, f"docs/guides has no '### `jsonl-store {main_name} ...`' section"
    section = text[heading.start() :].split("\n### ", 1)[0].split("\n## ", 1)[0]
    assert f"`jsonl-store {name}" in section, f"the docs' section on {main_name} does not name {name}"
    for action in subcommands()[name]._actions:
        for option in action.option_strings:
            if option.startswith("--") and option not in ("--help", "--root"):
                assert option in section, f"the docs' section on {name} does not mention {option}"
    assert "--root" in text
