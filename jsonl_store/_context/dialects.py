"""Dialects: where one message format keeps its tool calls and their results.

Tool-batch repair (`_context.tool_batches`) applies one rule to every format. A *dialect* answers
the few questions the rule asks of a message: which calls it makes, which calls its
results answer, what is left of it without some results, whether it belongs to the calls
of the message before it, and how to write the error results that close unanswered calls.

Three are built in; `register_dialect` adds one under a name:

- ``"neutral"``: this library's message classes and OpenAI chat dicts (``tool_calls`` on an
  assistant message, one ``role: "tool"`` message per result, by ``tool_call_id``).
- ``"openai-responses"``: OpenAI Responses API items: one ``function_call`` (or
  ``custom_tool_call``) item per call, answered by a ``function_call_output`` (or
  ``custom_tool_call_output``) item with the same ``call_id``. Consecutive call items are
  the calls of one batch, and a ``reasoning`` item right before them goes with them (the
  API refuses a reasoning item whose following item is missing).
- ``"anthropic"``: Anthropic Messages: ``tool_use`` blocks in an assistant message's
  content, answered by ``tool_result`` blocks (``tool_use_id``) in the next user message,
  which may also hold text.

Every dialect also reads what ``"neutral"`` reads, so the library's classes mean the same
in all of them; a dialect adds its own dict shapes. A dialect's methods never change the
message they are given.

Each built-in dialect also maps its shape to the message model every reader uses
(`_context.parts`): ``parts(message)`` gives a message's ordered parts and ``from_parts(parts,
role)`` builds one message of the dialect's shape from them. The mapping sits beside the
tool-batch rules it must agree with: the calls and results a message's parts name are the
ones ``calls`` and ``answers`` give (a property test holds the two readings equal).
A dialect registered without ``parts`` reads as ``"neutral"``, its own ``calls`` and
``answers`` deciding the calls and results (`message_parts`).
"""

from __future__ import annotations

from typing import Any

from .._errors import InvalidArgument
from .dialect_anthropic import AnthropicDialect
from .dialect_neutral import NEUTRAL, Dialect, neutral_parts
from .dialect_responses import OpenAIResponsesDialect
from .parts import OtherPart, Part, ToolCallPart, ToolResultPart

# ---------------------------------------------------------------------------------------
# The registry
# ---------------------------------------------------------------------------------------

_DIALECTS: dict[str, Dialect] = {
    "neutral": NEUTRAL,
    "openai-responses": OpenAIResponsesDialect(),
    "anthropic": AnthropicDialect(),
}


def register_dialect(name: str, dialect: Dialect) -> None:
    """Make ``dialect`` usable as ``dialect=name`` in every tool-batch function.

    Raises `InvalidArgument` when ``name`` is not a non-empty str, when ``dialect`` lacks a
    method of `Dialect`, or when another dialect already has that name (registering the
    same object again is allowed, so a module may be imported twice).
    """
    if not isinstance(name, str) or not name:
        raise InvalidArgument(f"a dialect's name must be a non-empty str, got {name!r}")
    if not isinstance(dialect, Dialect):
        raise InvalidArgument(
            f"{dialect!r} is no Dialect: it needs calls, answers, keep_answers, joins and notices"
        )
    if _DIALECTS.get(name, dialect) is not dialect:
        raise InvalidArgument(f"a different dialect is already registered as {name!r}")
    _DIALECTS[name] = dialect


def stored_dialect(metadata: dict[str, Any]) -> str:
    """The dialect a session's metadata names (``metadata["dialect"]``, as importers and
    adapters write it), when it is a registered one; else ``"neutral"``.

    A name this process has not registered reads as neutral rather than failing a load:
    the messages are still given back, only their tool batches are read the neutral way.
    """
    name = metadata.get("dialect")
    return name if isinstance(name, str) and name in _DIALECTS else "neutral"


def message_parts(message: Any, dialect: str | Dialect = "neutral") -> list[Part]:
    """``message``, stored in ``dialect`` (a registered name or a `Dialect`), as ordered parts.

    Every message gives a list (empty for a message with no content, such as an empty
    assistant turn); what the dialect does not map is an `OtherPart` holding the stored
    value, so nothing is left out. A registered dialect without a ``parts`` method reads as
    ``"neutral"``; where its own ``calls``/``answers`` disagree with that reading, the
    message is one `OtherPart` followed by a part naming each call (or result) they give.
    Raises `InvalidArgument` for an unknown dialect name.
    """
    reading = resolve(dialect)
    own = getattr(reading, "parts", None)
    if callable(own):
        return list(own(message))
    return _derived_parts(reading, message)


def _derived_parts(reading: Dialect, message: Any) -> list[Part]:
    parts = neutral_parts(message)
    calls = list(reading.calls(message))
    answers = [] if calls else list(reading.answers(message))
    seen_calls = [(p.id, p.name) for p in parts if isinstance(p, ToolCallPart)]
    seen_answers = [p.tool_call_id for p in parts if isinstance(p, ToolResultPart)]
    if calls == seen_calls and answers == seen_answers:
        return parts
    named: list[Part] = [ToolCallPart(call_id, name) for call_id, name in calls]
    named.extend(ToolResultPart(call_id) for call_id in answers)
    return [OtherPart(message), *named]


def resolve(dialect: str | Dialect) -> Dialect:
    """The dialect a ``dialect=`` argument names (a registered name, or a `Dialect` itself)."""
    if isinstance(dialect, str):
        try:
            return _DIALECTS[dialect]
        except KeyError:
            known = ", ".join(repr(name) for name in sorted(_DIALECTS))
            raise InvalidArgument(f"unknown dialect {dialect!r}; registered: {known}") from None
    if not isinstance(dialect, Dialect):
        raise InvalidArgument(f"dialect must be a registered name or a Dialect, got {dialect!r}")
    return dialect
