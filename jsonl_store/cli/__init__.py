"""The ``jsonl-store`` command: a thin layer over `jsonl_store.SessionStore`.

``main(argv)`` runs one subcommand and returns its exit code; ``python -m jsonl_store.cli``
and the ``jsonl-store`` script both call it.
"""

from ._main import build_parser, main

__all__ = ["build_parser", "main"]
