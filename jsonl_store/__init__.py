"""jsonl_store: LLM-agent sessions as plain, crash-safe, git-friendly files.

Re-exports only. What most programs never call (the asyncio store, the git merges, the
provider request shapes, the scan of stored secrets) is imported on first use (PEP 562's module ``__getattr__``), so
``import jsonl_store`` and every ``jsonl-store`` command start without asyncio and the
merge code: the command's start-up is most of a small search's time.
"""

from typing import TYPE_CHECKING, Any

from ._context.dialect_neutral import Dialect
from ._context.dialects import message_parts, register_dialect
from ._context.parts import ImagePart, OtherPart, Part, ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from ._context.tool_batches import (
    INTERRUPTED_NOTICE,
    close_interrupted,
    is_provider_valid,
    provider_safe,
    provider_violation,
    repair_context,
)
from ._context.view import SessionSummary, SessionView
from ._errors import (
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
    SnapshotConflict,
    StorageError,
    StorageFileNotFoundError,
    StoragePermissionError,
    UnrecognizedRecords,
    UnsafePath,
    UnsupportedFormat,
    UnsupportedRegex,
    UnsupportedValue,
)
from ._format.names import decode_session_id, encode_session_id
from ._format.records import (
    AnyMessage,
    AssistantMessage,
    CompactedMessage,
    ContextSnapshot,
    ForkPoint,
    Message,
    MessageTiming,
    ModelUsage,
    RawMessageRecord,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from ._io.fs import FileSystem, OsFileSystem
from ._log.problems import Problem, ProblemKind
from ._ops.gitattributes import install_gitattributes
from ._text.redact import BUILTIN_KINDS as REDACTION_KINDS
from ._text.redact import Redactor, redact_text
from ._text.redactions import Redaction
from ._usage_report import UsageRow, usage_report
from .store import SessionStore

if TYPE_CHECKING:
    from ._context.providers import to_anthropic, to_openai_chat, to_openai_responses
    from ._ops.merge import MergeResult, merge_logs, merge_meta, merge_session_file, merge_usage
    from ._ops.secrets import SecretFinding
    from .aio import AsyncSessionStore

#: The names imported on first use, and the module each comes from.
_LAZY = {
    "AsyncSessionStore": "aio",
    "MergeResult": "_ops.merge",
    "SecretFinding": "_ops.secrets",
    "merge_logs": "_ops.merge",
    "merge_meta": "_ops.merge",
    "merge_session_file": "_ops.merge",
    "merge_usage": "_ops.merge",
    "to_anthropic": "_context.providers",
    "to_openai_chat": "_context.providers",
    "to_openai_responses": "_context.providers",
}

__all__ = [
    "INTERRUPTED_NOTICE",
    "REDACTION_KINDS",
    "AnyMessage",
    "AssistantMessage",
    "AsyncSessionStore",
    "CatalogUnavailable",
    "CompactedMessage",
    "ContextSnapshot",
    "CorruptSession",
    "Dialect",
    "DurabilityError",
    "FileSystem",
    "ForkPoint",
    "ImagePart",
    "InvalidArgument",
    "InvalidMessage",
    "InvalidSessionId",
    "JsonlStoreError",
    "LockTimeout",
    "MergeResult",
    "Message",
    "MessageTiming",
    "MetadataConflict",
    "ModelUsage",
    "OsFileSystem",
    "OtherPart",
    "ParentMismatch",
    "Part",
    "Problem",
    "ProblemKind",
    "RawMessageRecord",
    "ReadOnlySession",
    "ReasoningPart",
    "RecordTooLarge",
    "Redaction",
    "Redactor",
    "RegexUnavailable",
    "SecretFinding",
    "SequenceConflict",
    "SessionHasForks",
    "SessionNotFound",
    "SessionStore",
    "SessionSummary",
    "SessionView",
    "SnapshotConflict",
    "StorageError",
    "StorageFileNotFoundError",
    "StoragePermissionError",
    "SystemMessage",
    "TextPart",
    "ToolCall",
    "ToolCallPart",
    "ToolMessage",
    "ToolResultPart",
    "UnrecognizedRecords",
    "UnsafePath",
    "UnsupportedFormat",
    "UnsupportedRegex",
    "UnsupportedValue",
    "UsageRow",
    "UserMessage",
    "close_interrupted",
    "decode_session_id",
    "encode_session_id",
    "install_gitattributes",
    "is_provider_valid",
    "merge_logs",
    "merge_meta",
    "merge_session_file",
    "merge_usage",
    "message_parts",
    "provider_safe",
    "provider_violation",
    "redact_text",
    "register_dialect",
    "repair_context",
    "to_anthropic",
    "to_openai_chat",
    "to_openai_responses",
    "usage_report",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'jsonl_store' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # the next lookup is an ordinary one
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
