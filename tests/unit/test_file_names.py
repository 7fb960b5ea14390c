"""One module owns every file name (CONTRIBUTING, "Where things are"; LevelDB's filename.cc).

`jsonl_store._format.names` builds, parses and classifies the names of a session directory and
of the store root; no other module of the package spells one.
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

import jsonl_store
from jsonl_store import CompactedMessage, SessionStore, UserMessage
from jsonl_store._format.names import (
    ALLOW_NAME,
    BLOBS_DIR,
    CATALOG_DIR,
    CATALOG_NAME,
    CUT_INFIX,
    DAMAGED_SUFFIX,
    DELETED_SUFFIX,
    FORK_NAME,
    GITATTRIBUTES_NAME,
    GITIGNORE_NAME,
    LOCK_NAME,
    LOG_NAME,
    MERGE_TMP_SUFFIX,
    META_NAME,
    SNAPSHOT_PREFIX,
    TMP_SUFFIX,
    USAGE_NAME,
    FileKind,
    blob_aside_name,
    classify,
    classify_root,
    cut_name,
    damaged_name,
    deleted_name,
    numbered_name,
    snapshot_name,
    tmp_name,
)
from jsonl_store.importers import import_claude_code

PACKAGE = Path(jsonl_store.__file__).parent
#: Real Claude Code transcripts, committed with their attribution (tests/importers/data/README.md).
TRANSCRIPTS = Path(__file__).resolve().parents[1] / "importers" / "data" / "claude-code"

_WHOLE = (LOG_NAME, META_NAME, USAGE_NAME, FORK_NAME, LOCK_NAME, BLOBS_DIR, ALLOW_NAME, GITIGNORE_NAME,
          GITATTRIBUTES_NAME, CATALOG_DIR, CATALOG_NAME)  # fmt: skip
_PARTS = (SNAPSHOT_PREFIX, CUT_INFIX, TMP_SUFFIX, DAMAGED_SUFFIX, DELETED_SUFFIX, MERGE_TMP_SUFFIX)
#: A store file name, or a piece of one, in a string: a whole name stands alone (so Claude
#: Code's own ``agent-x.meta.json`` or an attribute ``store_blobs`` is none of the store's).
STORE_NAME = re.compile(
    "|".join([*(rf"(?<![\w.-]){re.escape(name)}(?![\w-])" for name in _WHOLE), *map(re.escape, _PARTS)])
)

#: (module, string) pairs that look like a store name and are none, each saying why.
ALLOWED = {
    # An HTML anchor of an exported page, not a file.
    ("export/_html.py", '<div class="boundary" id="snapshot-'),
    # The temporary file an export writes beside the page or file the user named,
    # outside any store: not one of the store's names.
    ("export/_site.py", ".tmp"),
    ("cli/_export.py", ".tmp"),
}


def _docstrings(tree: ast.AST) -> set[int]:
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _slots(tree: ast.AST) -> set[int]:
    """String constants that name a class's attributes (``__slots__``), not files."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__slots__" for t in node.targets
        ):
            found.update(id(c) for c in ast.walk(node.value) if isinstance(c, ast.Constant))
    return found


def spelled_names(source: str) -> list[str]:
    """The string constants of ``source`` (f-string pieces included, docstrings not) that spell a store name."""
    tree = ast.parse(source)
    skip = _docstrings(tree) | _slots(tree)
    return [node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip
            and STORE_NAME.search(node.value)]  # fmt: skip


def test_no_module_but_the_names_module_spells_a_store_file_name() -> None:
    """Every string in the package that spells a session or root file name is in _paths (or allowed, with why)."""
    found: set[tuple[str, str]] = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        if module != "_format/names.py":
            found.update((module, text) for text in spelled_names(path.read_text()))
    assert found - ALLOWED == set()


def test_the_name_scan_finds_names_spelled_in_strings_and_f_strings() -> None:
    """The check above can fail: a spelled log name, a `.tmp` in an f-string and a snapshot prefix are found."""
    source = '"""meta.json in a docstring"""\nx = "messages.jsonl"\ny = f"{name}.tmp"\nz = "snapshot-" + v\n'
    assert spelled_names(source) == ["messages.jsonl", ".tmp", "snapshot-"]
    assert spelled_names('a = "agent-1.meta.json"\nclass C:\n    __slots__ = ("blobs",)\n') == []


def test_every_name_the_store_builds_is_classified_as_its_kind() -> None:
    """Each builder's names, numbered ones included, classify as what they are; a stranger's name is OTHER."""
    digest = "ab" * 32
    cases = {
        LOG_NAME: FileKind.LOG, USAGE_NAME: FileKind.USAGE, META_NAME: FileKind.META,
        FORK_NAME: FileKind.FORK, LOCK_NAME: FileKind.LOCK, BLOBS_DIR: FileKind.BLOBS,
        snapshot_name(1): FileKind.SNAPSHOT, snapshot_name(99_999_999): FileKind.SNAPSHOT,
        tmp_name(META_NAME, "0123abcd"): FileKind.TEMPORARY,
        tmp_name(snapshot_name(3), "t"): FileKind.TEMPORARY,
        tmp_name(cut_name(LOG_NAME, 7), "t"): FileKind.TEMPORARY,
        cut_name(LOG_NAME, 12): FileKind.CUT, numbered_name(cut_name(USAGE_NAME, 0), 3): FileKind.CUT,
        damaged_name(META_NAME): FileKind.DAMAGED, damaged_name(snapshot_name(2), 4): FileKind.DAMAGED,
        damaged_name(blob_aside_name(digest), 2): FileKind.DAMAGED,
        "notes.txt": FileKind.OTHER, "snapshot-1.json": FileKind.OTHER, "snapshot-00000001.json.bak": FileKind.OTHER,
    }  # fmt: skip
    assert {name: classify(name) for name in cases} == cases
    assert damaged_name(META_NAME, 2) == f"{META_NAME}.2{DAMAGED_SUFFIX}"
    assert numbered_name(LOG_NAME, 1) == LOG_NAME


def test_every_root_entry_the_store_makes_is_classified_as_its_kind() -> None:
    """Root names classify: sessions (even one whose id ends in .tmp), deleted ones, the three files and their temporaries."""
    cases = {
        "chat-1": FileKind.SESSION, "backup.tmp": FileKind.SESSION, deleted_name("chat-1"): FileKind.DELETED,
        GITIGNORE_NAME: FileKind.GITIGNORE, GITATTRIBUTES_NAME: FileKind.GITATTRIBUTES,
        ALLOW_NAME: FileKind.ALLOWLIST, tmp_name(ALLOW_NAME, "t"): FileKind.TEMPORARY,
        tmp_name(GITIGNORE_NAME, "t"): FileKind.TEMPORARY, ".DS_Store": FileKind.OTHER, ".x.tmp": FileKind.OTHER,
    }  # fmt: skip
    assert {name: classify_root(name) for name in cases} == cases


def test_every_file_a_store_made_from_real_transcripts_has_a_kind(tmp_path: Path) -> None:
    """Real Claude Code transcripts imported, forked, snapshotted, damaged and repaired: no file the store made is OTHER."""
    store = SessionStore(tmp_path / "store", durability="none")
    transcripts = sorted(TRANSCRIPTS.glob("cc-*.jsonl"))
    assert len(transcripts) >= 5, TRANSCRIPTS
    report = import_claude_code(store, transcripts)
    sessions = [s.session_id for s in store.list_sessions()]
    assert len(sessions) >= 5, report
    first = sessions[0]
    store.snapshot(first, CompactedMessage(content="the first steps"), 3, 0)
    store.fork(first, 2, "forked")
    store.append("forked", UserMessage(content="after the fork"))
    store.close()
    directory = tmp_path / "store" / first
    with (directory / LOG_NAME).open("ab") as log:
        log.write(b'{"sequence": 99999, "torn')  # a writer that died mid-line
    (directory / META_NAME).write_bytes(b"{not json")
    store = SessionStore(tmp_path / "store", durability="none")
    store.repair(first)
    store.append(first, UserMessage(content="after the repair"))
    store.close()
    kinds = {classify_root(name) for name in os.listdir(tmp_path / "store")}
    for session in [*sessions, "forked"]:
        names = os.listdir(tmp_path / "store" / session)
        assert [name for name in names if classify(name) is FileKind.OTHER] == [], session
        kinds.update(map(classify, names))
    assert FileKind.OTHER not in kinds
    expected = {FileKind.SESSION, FileKind.GITIGNORE, FileKind.GITATTRIBUTES, FileKind.LOG, FileKind.META,
                FileKind.LOCK, FileKind.SNAPSHOT, FileKind.FORK, FileKind.CUT, FileKind.DAMAGED}  # fmt: skip
    assert expected <= kinds, expected - kinds
