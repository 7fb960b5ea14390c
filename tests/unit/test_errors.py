"""Unit tests for the error tree: built-in bases, fields, messages, pickling."""

from __future__ import annotations

import builtins
import inspect
import pickle
from pathlib import Path

import pytest

import jsonl_store
from jsonl_store import (
    CatalogUnavailable,
    CorruptSession,
    DurabilityError,
    InvalidArgument,
    InvalidMessage,
    InvalidSessionId,
    JsonlStoreError,
    LockTimeout,
    MetadataConflict,
    ParentMismatch,
    ReadOnlySession,
    RecordTooLarge,
    RegexUnavailable,
    SequenceConflict,
    SessionHasForks,
    SessionNotFound,
    SessionStore,
    SnapshotConflict,
    StorageError,
    StorageFileNotFoundError,
    StoragePermissionError,
    UnrecognizedRecords,
    UnsafePath,
    UnsupportedFormat,
    UnsupportedRegex,
    UnsupportedValue,
    UserMessage,
)

ERRORS: list[tuple[type[JsonlStoreError], type[BaseException] | None]] = [
    (InvalidSessionId, ValueError),
    (InvalidMessage, ValueError),
    (RecordTooLarge, ValueError),
    (UnsupportedValue, TypeError),
    (InvalidArgument, ValueError),
    (ParentMismatch, ValueError),
    (SnapshotConflict, None),
    (MetadataConflict, None),
    (SequenceConflict, ValueError),
    (CorruptSession, None),
    (LockTimeout, TimeoutError),
    (StorageError, OSError),
    (StoragePermissionError, PermissionError),
    (StorageFileNotFoundError, FileNotFoundError),
    (DurabilityError, StorageError),
    (UnsafePath, StorageError),
    (UnrecognizedRecords, ValueError),
    (UnsupportedFormat, None),
    (ReadOnlySession, PermissionError),
    (SessionNotFound, KeyError),
    (SessionHasForks, OSError),
    (UnsupportedRegex, ValueError),
    (RegexUnavailable, ImportError),
    (CatalogUnavailable, RuntimeError),
]


def test_every_exported_error_is_listed_here() -> None:
    """The table above covers every error class the package exports."""
    exported = {
        obj for obj in vars(jsonl_store).values() if inspect.isclass(obj) and issubclass(obj, JsonlStoreError)
    }
    assert exported == {JsonlStoreError, *(cls for cls, _ in ERRORS)}


@pytest.mark.parametrize(("cls", "builtin"), ERRORS, ids=[c.__name__ for c, _ in ERRORS])
def test_error_subclasses_the_base_and_its_builtin(
    cls: type[JsonlStoreError], builtin: type[BaseException] | None
) -> None:
    """Each error is a JsonlStoreError and, where one fits, the matching built-in error."""
    assert issubclass(cls, JsonlStoreError)
    if builtin is not None:
        assert issubclass(cls, builtin)


@pytest.mark.parametrize(("cls", "builtin"), ERRORS, ids=[c.__name__ for c, _ in ERRORS])
def test_error_pickles_with_every_field(cls: type[JsonlStoreError], builtin: object) -> None:
    """An error survives pickling: same type, message, fields and str."""
    error = cls("went wrong", session_id="s1", path="s1/messages.jsonl", line=3, offset=120)
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is cls
    assert (back.message, back.session_id, back.path, back.line, back.offset) == (
        "went wrong",
        "s1",
        "s1/messages.jsonl",
        3,
        120,
    )
    assert str(back) == str(error)
    assert back.args == error.args


def test_error_str_says_where() -> None:
    """The message is followed by the path, line and offset that are known."""
    assert str(JsonlStoreError("bad", path="p", line=2, offset=9)) == "bad (p, line 2, offset 9)"
    assert str(JsonlStoreError("bad", offset=9)) == "bad (offset 9)"
    assert str(JsonlStoreError("bad")) == "bad"


def test_session_not_found_str_has_no_key_error_quotes() -> None:
    """SessionNotFound reads like the other errors, not like KeyError's repr of its argument."""
    assert str(SessionNotFound("session 's' does not exist")) == "session 's' does not exist"


def test_error_raised_by_the_store_pickles(tmp_path: Path) -> None:
    """A real error from the store crosses a process boundary intact."""
    store = SessionStore(tmp_path, durability="none")
    with pytest.raises(InvalidSessionId) as info:
        store.append("../x", UserMessage(content="x"))
    back = pickle.loads(pickle.dumps(info.value))
    assert type(back) is InvalidSessionId and back.session_id == "../x" and str(back) == str(info.value)
    with pytest.raises(SessionNotFound) as missing:
        store.update_session("nobody", title="t")
    back2 = pickle.loads(pickle.dumps(missing.value))
    assert type(back2) is SessionNotFound and back2.session_id == "nobody"


def test_package_all_is_sorted_and_complete() -> None:
    """__init__ re-exports a sorted __all__ (isort style: CONSTANTS, Classes, functions) with every fixed name."""

    def isort_key(name: str) -> tuple[int, str]:
        return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)

    assert jsonl_store.__all__ == sorted(jsonl_store.__all__, key=isort_key)
    fixed = {
        "SessionStore", "AsyncSessionStore", "SessionView", "RawMessageRecord", "ContextSnapshot",
        "SessionSummary", "SystemMessage", "UserMessage", "AssistantMessage", "ToolCall", "ToolMessage",
        "CompactedMessage", "MessageTiming", "ModelUsage", "JsonlStoreError", "SnapshotConflict",
        "InvalidSessionId",
    }  # fmt: skip
    assert fixed <= set(jsonl_store.__all__)
    for name in jsonl_store.__all__:
        assert hasattr(jsonl_store, name)


def test_storage_error_pickles_its_os_fields() -> None:
    """errno, strerror and filename live in OSError's slots; they survive pickling too."""
    error = DurabilityError(
        "append failed",
        errno=28,
        strerror="No space left on device",
        filename="/s/messages.jsonl",
        session_id="s",
    )
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is DurabilityError and isinstance(back, StorageError)
    assert (back.errno, back.strerror, back.filename, back.session_id) == (
        28,
        "No space left on device",
        "/s/messages.jsonl",
        "s",
    )
    assert str(back) == str(error) == "append failed"


def test_docs_error_table_lists_every_error_class_with_its_bases() -> None:
    """The store guide's Errors table has one row per exported error, naming the built-in it also is."""
    readme = (Path(__file__).parents[2] / "docs" / "guides" / "store.md").read_text()
    table = readme[readme.index("| Error | Also a | Raised when |") :].split("\n\n")[0]
    rows = {}
    for row in table.splitlines()[2:]:
        name, bases = (cell.strip().strip("`") for cell in row.split("|")[1:3])
        rows[name] = bases
    assert set(rows) == {cls.__name__ for cls, _ in ERRORS} | {"JsonlStoreError"}
    for cls, builtin in ERRORS:
        named = [
            getattr(jsonl_store, n, None) or getattr(builtins, n)
            for n in rows[cls.__name__].split("`, `")
            if n
        ]
        assert all(issubclass(cls, base) for base in named), cls
        if builtin is not None:  # the built-in it also is, or a library class that is one
            assert any(issubclass(base, builtin) for base in named), cls
