"""The records a session is made of, as msgspec Structs.

Schema evolution rules (they keep old files readable and old readers working):
a new field always has a default; a field's type never changes; a field is never
renamed or reused. Fields are written in the order they are declared here, and fields
equal to their default are left out, so lines stay short and diffs stay small.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeAlias

import msgspec

from .ids import new_uuid7

JsonValue: TypeAlias = Any
"""Any value JSON can carry: dict (str keys), list, str, int, float (finite), bool, None."""


# ---------------------------------------------------------------------------------------
# Messages
# ---------------------------------------------------------------------------------------


# gc=False: these records never take part in reference cycles, and untracked objects keep
# the garbage collector from rescanning a long tail again and again while it loads.
class _Message(msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="role", gc=False):
    #: Stable identity; `SessionStore.checkpoint` uses it to tell stored messages from new.
    id: str = msgspec.field(default_factory=new_uuid7)
    #: False: the message lives only in the caller's context and is never written.
    persist: bool = True
    #: False: stored in the raw log but left out of the model context.
    include_in_messages: bool = True

    @property
    def role(self) -> str:
        """The message's role, as on disk and in a plain dict (``"user"``, ``"tool"``, ...)."""
        return self.__struct_config__.tag  # type: ignore[return-value]  # every subclass has a str tag


class SystemMessage(_Message, tag="system"):
    """Instructions to the model."""

    content: str


class UserMessage(_Message, tag="user"):
    """A user's turn: text, or a list of content parts (text, images, ...)."""

    content: str | list[JsonValue]


class ToolCall(msgspec.Struct, kw_only=True, omit_defaults=True, gc=False):
    """One tool call requested by the model; ``arguments`` is a JSON object or a JSON string."""

    id: str
    name: str
    arguments: JsonValue = msgspec.field(default_factory=dict)


class AssistantMessage(_Message, tag="assistant"):
    """A model response: text, optional reasoning, and the tool calls it asked for."""

    content: str | list[JsonValue] | None = None
    reasoning: str | None = None
    tool_calls: list[ToolCall] = msgspec.field(default_factory=list)


class ToolMessage(_Message, tag="tool"):
    """The result of one tool call, answering `ToolCall.id`."""

    tool_call_id: str
    content: JsonValue = ""
    name: str | None = None
    is_error: bool = False


class CompactedMessage(_Message, tag="compacted"):
    """A summary that replaces the raw-log prefix a snapshot covers."""

    content: str


AnyMessage: TypeAlias = SystemMessage | UserMessage | AssistantMessage | ToolMessage | CompactedMessage
# `_Message` is here for mypy: it types a list of mixed classes, `[UserMessage(...),
# AssistantMessage(...)]` kept in a variable, as `list[_Message]` (their join), which a
# `Sequence[AnyMessage | dict[str, Any]]` parameter would refuse. Every message class is
# one of AnyMessage's, so this admits nothing more at run time.
Message: TypeAlias = AnyMessage | _Message | dict[str, Any]
"""What `append` takes: a message class instance or a plain dict with a ``"role"`` key."""

ROLES: frozenset[str] = frozenset({"system", "user", "assistant", "tool", "compacted"})
MESSAGE_TYPES: tuple[type[_Message], ...] = (
    SystemMessage,
    UserMessage,
    AssistantMessage,
    ToolMessage,
    CompactedMessage,
)


# ---------------------------------------------------------------------------------------
# Timing and usage
# ---------------------------------------------------------------------------------------


class MessageTiming(msgspec.Struct, kw_only=True, frozen=True):
    """When the operation that produced a message ran (UTC wall clock, monotonic durations)."""

    started_at: datetime
    completed_at: datetime
    duration_ns: int
    reasoning_started_at: datetime | None = None
    reasoning_completed_at: datetime | None = None
    reasoning_duration_ns: int | None = None
    content_started_at: datetime | None = None
    content_completed_at: datetime | None = None
    content_duration_ns: int | None = None


class ModelUsage(msgspec.Struct, kw_only=True, frozen=True):
    """Provider-reported token counts for one model call (or a sum of several)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def __add__(self, other: ModelUsage) -> ModelUsage:
        if not isinstance(other, ModelUsage):
            return NotImplemented
        return ModelUsage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
        )


# ---------------------------------------------------------------------------------------
# Raw log records and snapshots (the on-disk records; see spec/FORMAT.md)
# ---------------------------------------------------------------------------------------


class RawMessageRecord(msgspec.Struct, kw_only=True, frozen=True, omit_defaults=True, gc=False):
    """One immutable line of the raw log: a message and what is known about how it was made."""

    #: Position in the raw log: 1, 2, 3, ... with no gaps. Always the first key on disk.
    sequence: int
    #: For a record written by `append_many` with others: the batch's last sequence. A
    #: reader gives back a batch only whole (a power loss may tear one write).
    batch_end: int = 0
    #: UUIDv7 of this record (not of the message).
    id: str
    created_at: datetime
    #: True when the message was appended as a plain dict (it is given back as one).
    plain: bool = False
    #: The message exactly as appended: a message class instance, or a dict if ``plain``
    #: (or if its role is one this version does not know).
    if TYPE_CHECKING:
        # `Message`, not a narrower union: what users collect from records then fits the
        # `list[Message]` they keep and pass back (a list's item type must match exactly).
        message: Message
    else:
        # Any at run time: msgspec must not decode by this annotation (a plain dict with
        # a known role would come back as a class); `_format.codec` picks the decoder instead.
        message: Any
    request_id: str | None = None
    #: Request-scoped application data captured independently of model messages.
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)
    #: Request-scoped classifications captured independently of model messages.
    tags: dict[str, Any] = msgspec.field(default_factory=dict)
    started_at: datetime | None = None
    completed_at: datetime | None = None
    duration_ns: int = 0
    reasoning_started_at: datetime | None = None
    reasoning_completed_at: datetime | None = None
    reasoning_duration_ns: int | None = None
    content_started_at: datetime | None = None
    content_completed_at: datetime | None = None
    content_duration_ns: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None
    #: Not written to disk: the session directory's name is the session id.
    session_id: str = ""

    @property
    def updated_at(self) -> datetime:
        """Records are immutable, so this is always ``created_at``."""
        return self.created_at

    @property
    def total_tokens(self) -> int | None:
        """Input plus output tokens when provider usage was recorded."""
        if self.input_tokens is None or self.output_tokens is None:
            return None
        return self.input_tokens + self.output_tokens

    @property
    def cache_hit_rate(self) -> float | None:
        """Share of input tokens served from the provider cache (0 to 1), or None."""
        if not self.input_tokens or self.cache_read_tokens is None:
            return None
        return self.cache_read_tokens / self.input_tokens

    @property
    def usage(self) -> ModelUsage | None:
        """The record's token counts as a `ModelUsage`, or None when none were recorded."""
        if self.input_tokens is None and self.output_tokens is None:
            return None
        return ModelUsage(
            input_tokens=self.input_tokens or 0,
            output_tokens=self.output_tokens or 0,
            cache_read_tokens=self.cache_read_tokens or 0,
            cache_write_tokens=self.cache_write_tokens or 0,
            reasoning_tokens=self.reasoning_tokens or 0,
        )


class ContextSnapshot(msgspec.Struct, kw_only=True, frozen=True, omit_defaults=True, gc=False):
    """One immutable checkpoint: a compacted message that replaces the raw log up to a boundary."""

    version: int
    id: str
    created_at: datetime
    #: Last raw-log sequence the compacted message stands for (the boundary).
    compacted_through_sequence: int
    #: Byte offset in the raw log where the boundary record starts.
    boundary_offset: int
    #: Byte offset in the raw log where the tail (sequence boundary + 1) starts.
    tail_offset: int
    #: Record id of the boundary record, so a snapshot never pairs with a different log.
    boundary_record_id: str
    plain: bool = False
    compacted_message: Any
    session_id: str = ""

    @property
    def updated_at(self) -> datetime:
        """Snapshots are immutable, so this is always ``created_at``."""
        return self.created_at


class UsageRecord(msgspec.Struct, kw_only=True, frozen=True, omit_defaults=True):
    """One line of the token-usage log: one model call."""

    recorded_at: datetime
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    model: str | None = None
    request_id: str | None = None
    extra: dict[str, Any] = msgspec.field(default_factory=dict)


class ForkPoint(msgspec.Struct, kw_only=True, frozen=True):
    """Where a fork branched (``fork.json``, spec §6.1): the source, its sequence, that record's id."""

    #: The session the fork's history begins with.
    session_id: str
    #: The source's last record in the fork's history; the fork's own records follow it.
    sequence: int
    #: The id of that record, so a reader can tell the source's history is still the one branched from.
    record_id: str
    #: When the fork was made.
    created_at: datetime
