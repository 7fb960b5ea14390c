"""The docs site's sources: the CLI reference is rendered from the parser, and pages cite what a reader can open."""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType

import pytest

from jsonl_store import SessionStore, UserMessage
from jsonl_store._format.names import LOG_NAME
from jsonl_store.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = sorted(p for p in DOCS.rglob("*.md") if "hooks" not in p.parts)


def hook() -> ModuleType:
    """docs/hooks/cli_reference.py, loaded as MkDocs loads a hook: by its path."""
    spec = importlib.util.spec_from_file_location("cli_reference", DOCS / "hooks" / "cli_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def every_parser(parser: argparse.ArgumentParser, prefix: str = "") -> dict[str, argparse.ArgumentParser]:
    """Each subcommand's full name (``git setup``) with its parser, aliases left out."""
    out: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                if sub not in out.values():
                    out[prefix + name] = sub
                    out.update(every_parser(sub, f"{prefix}{name} "))
    return out


def test_cli_reference_shows_every_subcommand_and_option() -> None:
    """The generated CLI reference has a section per subcommand, nested ones too, naming each of its options."""
    text = hook().render()
    parsers = every_parser(build_parser())
    assert {"list", "git setup", "git merge-driver", "scan", "import"} <= set(parsers)
    for name, parser in parsers.items():
        heading = f"## `jsonl-store {name}`\n"
        assert heading in text, f"the CLI reference has no section for {name}"
        section = text.split(heading, 1)[1].split("\n## ", 1)[0]
        for action in parser._actions:
            for option in action.option_strings:
                assert option in section, f"the CLI reference's {name} section lacks {option}"


def test_the_cli_reference_page_is_the_rendered_one() -> None:
    """The CLI reference page holds only the hook's marker where the commands go: nothing copied by hand."""
    page = (DOCS / "reference" / "cli.md").read_text(encoding="utf-8")
    module = hook()
    assert page.count(module.MARKER) == 1
    assert "usage: jsonl-store" not in page
    assert "usage: jsonl-store" in module.on_page_markdown(page)


#: Files a page shows as they are (``--8<-- "spec/FORMAT.md"``, pymdownx.snippets): the site shows them too.
INCLUDED = sorted(
    {
        ROOT / name
        for page in PAGES
        for name in re.findall(r'^--8<-- "([^":]+)', page.read_text(), re.MULTILINE)
    }
)


def test_the_included_files_are_found() -> None:
    """The files the site includes are seen by the checks below: the spec and the benchmarks' README."""
    assert {ROOT / "spec" / "FORMAT.md", ROOT / "benchmarks" / "README.md"} <= set(INCLUDED)


@pytest.mark.parametrize(
    "page", [ROOT / "README.md", *PAGES, *INCLUDED], ids=lambda p: p.relative_to(ROOT).as_posix()
)
def test_docs_cite_no_internal_history(page: Path) -> None:
    """A page names no tracker issue or internal brief a reader cannot open; it cites a spec section or a URL."""
    text = page.read_text(encoding="utf-8")
    assert re.search(r"\b[Ii]ssues? #?\d+", text) is None
    assert re.search(r"\bthe (seed|seeds)\b|\bbamboo\b", text, re.IGNORECASE) is None


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_docs_page_is_in_the_site_nav(page: Path) -> None:
    """mkdocs.yml's nav lists every page under docs/, so none is built without a way to reach it."""
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8").split("\nnav:\n", 1)[1]
    assert re.search(rf":\s+{re.escape(page.relative_to(DOCS).as_posix())}\s*$", nav, re.MULTILINE)


def test_readme_is_a_short_front_page() -> None:
    """README.md is at most 250 lines: what it is, the Quickstart, three walkthroughs and links to the docs."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    for heading in (
        "## Quickstart",
        "## An agent loop",
        "## Importing and browsing",
        "## Committing transcripts",
    ):
        assert f"\n{heading}" in text


def test_readme_links_lead_to_files_of_the_repository() -> None:
    """Every relative link of README.md names a file that exists (the docs pages it points to, the spec)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = [t for t in re.findall(r"\]\(([^)\s]+)\)", text) if "://" not in t]
    assert len(targets) >= 10
    for target in targets:
        assert (ROOT / target.split("#", 1)[0]).is_file(), f"README links to {target}, which does not exist"


def test_the_spark_example_fits_the_files_the_store_writes(tmp_path: Path) -> None:
    """The one Python example no test runs (Spark needs a JVM) parses, names columns a raw log's
    lines have, and its path pattern gives back the session id."""
    page = (DOCS / "guides" / "sql.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```pyspark\n(.*?)^```", page, re.MULTILINE | re.DOTALL)
    assert len(blocks) == 1
    ast.parse(blocks[0])
    schema = re.search(r'\.schema\("([^"]+)"\)', blocks[0])
    pattern = re.search(r'input_file_name\(\), r"([^"]+)"', blocks[0])
    assert schema is not None and pattern is not None
    store = SessionStore(tmp_path, durability="none")
    store.append("chat-1", UserMessage(content="hi"))
    line = json.loads((tmp_path / "chat-1" / LOG_NAME).read_text(encoding="utf-8").splitlines()[0])
    assert {column.split()[0] for column in schema.group(1).split(",")} <= set(line)
    found = re.search(pattern.group(1), f"s3://bucket/sessions/chat-1/{LOG_NAME}")
    assert found is not None and found.group(1) == "chat-1"
