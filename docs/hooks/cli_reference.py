"""MkDocs hooks: the CLI reference rendered from the argument parser, and files from outside docs/.

The CLI reference is never written by hand: the page holds the marker below and this hook
replaces it with ``--help`` of ``jsonl-store`` and of each subcommand, from
``jsonl_store.cli.build_parser`` as installed, so the page cannot drift from the command.
Hooks are MkDocs' own extension point (https://www.mkdocs.org/user-guide/configuration/#hooks).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jsonl_store.cli import build_parser

if TYPE_CHECKING:  # MkDocs is the docs extra's; render() is tested without it
    from mkdocs.structure.files import Files

MARKER = "<!-- cli-reference -->"
#: Help is wrapped at this width (argparse reads $COLUMNS), so the page is the same on every machine.
WIDTH = "100"
#: Files the pages show that live outside docs/: (where they are in the repository, their URL in the site).
OUTSIDE = [("benchmarks/results/bench.png", "assets/bench.png")]


def subparsers(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Each subcommand's full name and parser, nested ones (``git setup``) included, once each."""
    seen: set[int] = set()
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        for name, sub in action.choices.items():
            if id(sub) in seen:
                continue  # an alias (ls for list) names a parser already rendered
            seen.add(id(sub))
            yield name, sub
            for inner, nested in subparsers(sub):
                yield f"{name} {inner}", nested


def help_text(parser: argparse.ArgumentParser) -> str:
    """What ``--help`` prints, at a fixed width."""
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        return parser.format_help()
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before


def render() -> str:
    """The reference: the command's own help, then a section per subcommand."""
    parser = build_parser()
    parts = ["## `jsonl-store`", "", "```text", help_text(parser).rstrip(), "```", ""]
    for name, sub in subparsers(parser):
        parts += [f"## `jsonl-store {name}`", "", "```text", help_text(sub).rstrip(), "```", ""]
    return "\n".join(parts)


def on_page_markdown(markdown: str, **_: Any) -> str:
    """Put the rendered reference where a page holds the marker."""
    return markdown.replace(MARKER, render()) if MARKER in markdown else markdown


def on_files(files: Files, config: Any, **_: Any) -> Files:
    """Add the repository files the pages show (the benchmark plot) to the site."""
    from mkdocs.structure.files import File

    root = Path(config["config_file_path"]).parent
    for source, url in OUTSIDE:
        files.append(File.generated(config, url, abs_src_path=str(root / source)))
    return files
