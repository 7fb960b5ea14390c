"""What readers hand back: `SessionSummary` and `SessionView` (the model context)."""

from __future__ import annotations

import dataclasses
import operator
from datetime import datetime
from typing import Any

from .._format.records import CompactedMessage, ContextSnapshot, ForkPoint, Message, RawMessageRecord
from .._log.problems import Problem
from .dialects import message_parts, resolve, stored_dialect
from .parts import Part, TextPart
from .tool_batches import INTERRUPTED_NOTICE, ToolBatchPolicy, model_messages, repair, repair_context


def _summary_in_dialect(context: list[Message], dialect: str) -> list[Message]:
    """``context`` with a leading `CompactedMessage` as ``dialect``'s user message of its text
    (spec §5, "The model context"); a neutral session's context as it is."""
    if dialect == "neutral" or not context or not isinstance(context[0], CompactedMessage):
        return context
    # A dialect a program registers without a mapping reads as neutral: its summary stays the class.
    from_parts = getattr(resolve(dialect), "from_parts", None)
    if not callable(from_parts):
        return context
    summary: Message = from_parts([TextPart(context[0].content)], "user")
    return [summary, *context[1:]]


def shown_role(message: object) -> str | None:
    """The role a reader shows for a stored message, None when it states none.

    Its ``role``, except for a ``system`` message that keeps its source's own role as
    ``codex_role`` (a Codex ``developer`` message: a session stores only the roles its
    dialect sends, spec §19): a reader shows the source's role, and what a provider is
    sent (`SessionView.model_context`) stays the stored message.
    """
    if isinstance(message, dict):
        role, source = message.get("role"), message.get("codex_role")
    else:
        role, source = getattr(message, "role", None), None
    if role == "system" and isinstance(source, str) and source:
        return source
    return role if isinstance(role, str) and role else None


#: Where an imported record names the kind of source line it holds (spec §19).
_KIND_KEYS = ("claude_code_type", "codex_event", "codex_type", "pi_type")


def imported_kind(message: object) -> str | None:
    """The kind of source line an imported record holds when it is no plain message (a Claude
    Code ``summary`` or ``attachment:hook_success``, a Codex ``turn_aborted`` event), or None:
    what a reader labels such a record with, beside its role (spec §19)."""
    if not isinstance(message, dict):
        return None
    for key in _KIND_KEYS:
        kind = message.get(key)
        # A Codex token count is a model call's usage record, shown by its tokens.
        if isinstance(kind, str) and kind and (key, kind) != ("codex_event", "token_count"):
            return kind
    return None


@dataclasses.dataclass(frozen=True, slots=True)
class SessionSummary:
    """What `list_sessions` and `get_session` tell about one session."""

    session_id: str
    parent_session_id: str | None
    session_type: int
    title: str | None
    agent_name: str | None
    #: Number of raw-log records (the last sequence).
    message_count: int
    #: When the session was created (its first append).
    created_at: datetime
    #: When the latest raw-log record was appended (creation time for an empty log).
    updated_at: datetime
    pinned: bool = False
    metadata: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: Bumped by every `update_session`; what ``expected_version`` compares against.
    version: int = 0
    title_version: int = 0
    metadata_version: int = 0
    #: Where a fork branched (`SessionStore.fork`), None for a session that is not one.
    fork: ForkPoint | None = None

    @property
    def dialect(self) -> str:
        """The dialect the session's messages are in (``metadata["dialect"]`` when registered, else
        ``"neutral"``): pass it to `jsonl_store.message_parts` with the messages of `SessionStore.records`."""
        return stored_dialect(self.metadata)


#: A listing's order, newest activity first (sorted with ``reverse=True``): the key of
#: `SessionStore.list_sessions`, as a C-level getter, since a listing sorts thousands.
BY_ACTIVITY = operator.attrgetter("updated_at", "session_id")


@dataclasses.dataclass(frozen=True, slots=True)
class SessionView:
    """The latest snapshot plus the raw-log records after its boundary (the tail).

    ``messages`` is the session context a model is given: the compacted message first,
    then the tail's messages that have ``include_in_messages``, with interrupted tool
    batches repaired (see `jsonl_store.provider_safe`).
    """

    session_id: str
    parent_session_id: str | None = None
    session_type: int = 0
    title: str | None = None
    agent_name: str | None = None
    snapshot: ContextSnapshot | None = None
    raw_tail: list[RawMessageRecord] = dataclasses.field(default_factory=list)
    #: Damage met while reading (never the ordinary remains of a crash at the tail).
    problems: list[Problem] = dataclasses.field(default_factory=list)
    #: The dialect the session's messages are in (``metadata["dialect"]`` when registered,
    #: as an import of a Claude Code or Codex transcript sets it): how `messages` and
    #: `model_context` read its tool batches.
    dialect: str = "neutral"

    def parts(self, item: RawMessageRecord | Message) -> list[Part]:
        """A record's message (or a message of `context`/`messages`) as ordered parts, read in the
        session's `dialect` (`jsonl_store.message_parts`)."""
        message = item.message if isinstance(item, RawMessageRecord) else item
        return message_parts(message, self.dialect)

    @property
    def exists(self) -> bool:
        """False for a session that has never been written."""
        return self.snapshot is not None or bool(self.raw_tail)

    @property
    def last_sequence(self) -> int:
        """The last raw-log sequence this view knows of (0 for an empty session)."""
        if self.raw_tail:
            return self.raw_tail[-1].sequence
        return self.snapshot.compacted_through_sequence if self.snapshot else 0

    @property
    def context(self) -> list[Message]:
        """Compacted message and tail messages with ``include_in_messages``, unrepaired."""
        head = [self.snapshot.compacted_message] if self.snapshot is not None else []
        return model_messages([*head, *(r.message for r in self.raw_tail)])

    @property
    def messages(self) -> list[Message]:
        """The provider-safe model context (spec §5's tool-batch repair; last batch kept open), in the session's `dialect`."""
        # `provider_safe` without its `includes` pass: `context` has left those messages out.
        return repair(self.context, "drop", False, INTERRUPTED_NOTICE, resolve(self.dialect))

    def model_context(
        self, *, mid_history: ToolBatchPolicy = "drop", close_last: bool = True
    ) -> list[Message]:
        """The model context with interrupted tool batches closed for a provider.

        ``mid_history="drop"`` drops incomplete batches in the middle (the default rule);
        ``"close"`` keeps them and answers each missing call with an interruption notice.
        ``close_last`` does the same for the batch at the very end. Both in the session's
        `dialect`.

        Every message is in the session's dialect, so the list goes to its provider as it
        is: in a session of another dialect than ``"neutral"`` (an imported Claude Code or
        Codex transcript), a snapshot's `CompactedMessage` comes first as that dialect's
        user message holding the summary's text (spec §5, "The model context"), as the
        provider request shapes send it; `context` and `messages` keep the
        `CompactedMessage` itself.
        """
        context = repair_context(
            self.context, mid_history=mid_history, close_last=close_last, dialect=self.dialect
        )
        return _summary_in_dialect(context, self.dialect)
