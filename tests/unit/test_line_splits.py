"""No module outside `jsonl_store._log` cuts bytes into lines itself: logs are read through `_log.modes.read` (CONTRIBUTING, "Where things are")."""

from __future__ import annotations

import ast
from pathlib import Path

import jsonl_store

PACKAGE = Path(jsonl_store.__file__).parent

#: Calls that cut text or bytes into lines whatever their arguments.
ALWAYS_LINES = frozenset({"splitlines", "readline", "readlines"})
#: Calls that cut at a newline when it is their first argument (``data.find(b"\\n", at)``).
AT_NEWLINE = frozenset(
    {"split", "rsplit", "partition", "rpartition", "find", "rfind", "index", "rindex", "count"}
)

#: The places outside `_log` that cut at newlines, each as (module, function) with why its
#: text is no log: a log read there would bypass the reader's modes.
NOT_A_LOG: dict[tuple[str, str], str] = {
    ("_ops/appending.py", "_made_before.wrapped"): "the first line of the bytes an append is about to write",
    ("_ops/gitattributes.py", "install_gitattributes"): "the text of a .gitattributes file",
    ("_ops/secrets.py", "_allow_lines"): "the allowlist, text a person keeps (spec §18.2)",
    ("cli/_git.py", "_batch_contents"): "the output of git cat-file --batch",
    ("cli/_main.py", "_Parser._print_message"): "help text",
    ("cli/_main.py", "build_parser.command"): "a command's example text",
    ("cli/_messages.py", "_body"): "a message's text shown as a block",
    ("cli/_sql.py", "_emit_csv"): "CSV the command prints",
    ("cli/_term.py", "show"): "text handed to the pager",
    ("export/_edits.py", "_pair_diff"): "a file-editing call's old and new text",
    ("export/_html.py", "_diff"): "a diff's text",
    ("export/_html.py", "_folded"): "a message's text folded under its first line",
    ("export/_html.py", "_part"): "a message's text, its lines counted to fold it",
    ("importers/_engine.py", "_FileRun.first_line_digest"): "another tool's transcript",
    ("importers/_source.py", "lines"): "another tool's transcript, an untrusted file",
    ("testing/damage.py", "tear_last_line"): "bytes handed in to be damaged; no log is read",
}


def _at_newline(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value in ("\n", b"\n")


def line_cuts(source: str) -> list[tuple[str, str, int]]:
    """Each call in ``source`` that cuts at newlines: (the function it is in, the call, its line)."""
    found: list[tuple[str, str, int]] = []
    where: list[str] = []

    class Visitor(ast.NodeVisitor):
        def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
            where.append(node.name)
            self.generic_visit(node)
            where.pop()

        visit_AsyncFunctionDef = visit_FunctionDef
        visit_ClassDef = visit_FunctionDef

        def visit_Call(self, node: ast.Call) -> None:
            call = node.func
            if isinstance(call, ast.Attribute) and (
                call.attr in ALWAYS_LINES
                or (call.attr in AT_NEWLINE and node.args and _at_newline(node.args[0]))
            ):
                found.append((".".join(where), call.attr, node.lineno))
            self.generic_visit(node)

    Visitor().visit(ast.parse(source))
    return found


def _cuts_outside_the_log_floor() -> dict[tuple[str, str], list[str]]:
    cuts: dict[tuple[str, str], list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        if module.startswith("_log/"):
            continue
        for function, call, line in line_cuts(path.read_text()):
            cuts.setdefault((module, function), []).append(f"{module}:{line} {function}: .{call}(...)")
    return cuts


def test_no_module_outside_the_log_floor_splits_lines_but_text_that_is_no_log() -> None:
    """Every newline cut outside `_log` is in a function named with why its text is no log."""
    cuts = _cuts_outside_the_log_floor()
    unexplained = [call for place, calls in cuts.items() if place not in NOT_A_LOG for call in calls]
    assert unexplained == [], "read logs through jsonl_store._log.modes.read, or name the text here"


def test_every_place_excused_still_cuts_lines() -> None:
    """An entry of `NOT_A_LOG` whose function no longer cuts lines is removed, so the list stays true."""
    cuts = _cuts_outside_the_log_floor()
    assert sorted(place for place in NOT_A_LOG if place not in cuts) == []


def test_the_check_finds_a_log_split_by_hand() -> None:
    """The check is no test that cannot fail: each way of cutting a log into lines is found, where it is."""
    source = """
def merge(data: bytes) -> list[bytes]:
    return data.split(b"\\n")

class Scanner:
    def lines(self, text: str) -> list[str]:
        return text.splitlines()

def tail(file, data: bytes) -> bytes:
    file.readline()
    return data[data.rfind(b"\\n", 0, 10) :]

def fine(data: bytes) -> list[bytes]:
    return data.split(b",")
"""
    assert line_cuts(source) == [
        ("merge", "split", 3),
        ("Scanner.lines", "splitlines", 7),
        ("tail", "readline", 10),
        ("tail", "rfind", 11),
    ]
