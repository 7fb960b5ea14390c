"""Dialects: where one message format keeps its tool calls and their results.

Tool-batch repair (`_tool_batches`) applies one rule to every format. A *dialect* answers
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
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from ._errors import InvalidArgument
from ._records import AssistantMessage, ToolMessage

#: ``(call id, tool name)`` of one tool call; the name is None when the message has none.
Call = tuple[Any, str | None]


@runtime_checkable
class Dialect(Protocol):
    """What tool-batch repair needs to know about a message format (README, "Dialects").

    A *batch* is a run of messages that make calls (one message, unless `joins` links the
    next ones to it) plus the run of messages right after it that carry results. None of
    the methods may change the message it is given.
    """

    def calls(self, message: Any) -> Sequence[Call]:
        """The ``(call id, tool name)`` of each tool call ``message`` makes, in order; empty for none."""
        ...

    def answers(self, message: Any) -> Sequence[Any]:
        """The call id each tool result in ``message`` answers, in order; empty for none.

        Asked only of messages that make no call.
        """
        ...

    def keep_answers(self, message: Any, keep: Sequence[bool]) -> Any | None:
        """``message`` with only the results whose flag in ``keep`` is True, or None if nothing is left.

        ``keep`` has one flag per entry of ``answers(message)``, at least one of them False.
        Content that is no tool result stays (a user's text beside Anthropic results).
        """
        ...

    def joins(self, previous: Any, message: Any) -> bool:
        """True when ``message``, right after ``previous``, belongs to the same batch's calls.

        A run of joined messages is cut back to end at a message that makes calls.
        """
        ...

    def notices(self, unanswered: Sequence[tuple[Any, Any, str | None]], notice: str) -> list[Any]:
        """New messages with an error result saying ``notice`` for each unanswered call.

        Each entry is ``(the message that made the call, call id, tool name)``, in call
        order. The messages go right after the batch's results, in the order returned.
        """
        ...


# ---------------------------------------------------------------------------------------
# neutral: this library's classes and OpenAI chat dicts
# ---------------------------------------------------------------------------------------


_NONE: Sequence[Any] = ()


def _calls(message: Any) -> Sequence[Call]:
    """The ``(id, name)`` of each tool call an assistant message made; empty for other roles."""
    if isinstance(message, AssistantMessage):
        return [(call.id, call.name) for call in message.tool_calls]
    if isinstance(message, dict) and message.get("role") == "assistant":
        # A call is OpenAI-shaped ({"id", "type", "function": {"name", ...}}) or flat.
        return [
            (call["id"], call.get("name") or (call.get("function") or {}).get("name"))
            for call in message.get("tool_calls") or ()
        ]
    return _NONE


def _is_result(message: Any) -> bool:
    """True for a tool result."""
    if isinstance(message, dict):
        return message.get("role") == "tool"
    return isinstance(message, ToolMessage)


def _answers(result: Any) -> Any:
    """The call id a tool result answers (None for a dict that names none)."""
    if isinstance(result, dict):
        return result.get("tool_call_id")
    assert isinstance(result, ToolMessage)
    return result.tool_call_id


def _neutral_answers(message: Any) -> Sequence[Any]:
    """``[the call id]`` for a tool result, empty for anything else."""
    if isinstance(message, ToolMessage):
        return [message.tool_call_id]
    if isinstance(message, dict) and message.get("role") == "tool":
        return [message.get("tool_call_id")]
    return _NONE


def _notice(assistant: Any, call_id: Any, name: str | None, notice: str) -> Any:
    """An error result for one unanswered call, of the same kind as the assistant message."""
    if isinstance(assistant, dict):
        result: dict[str, Any] = {"role": "tool", "tool_call_id": call_id, "content": notice}
        if name is not None:
            result["name"] = name
        return result
    return ToolMessage(tool_call_id=call_id, name=name, content=notice, is_error=True)


class NeutralDialect:
    """This library's message classes and OpenAI chat dicts: one result per message."""

    # Plain functions, not methods: repair asks these of every message in the context.
    calls = staticmethod(_calls)
    answers = staticmethod(_neutral_answers)

    def keep_answers(self, message: Any, keep: Sequence[bool]) -> Any | None:
        return message if keep[0] else None

    def joins(self, previous: Any, message: Any) -> bool:
        # Each assistant message is a batch of its own: two in a row are two batches.
        return False

    def notices(self, unanswered: Sequence[tuple[Any, Any, str | None]], notice: str) -> list[Any]:
        return [_notice(caller, call_id, name, notice) for caller, call_id, name in unanswered]


NEUTRAL = NeutralDialect()


# ---------------------------------------------------------------------------------------
# openai-responses: one item per call, one item per result, by call_id
# ---------------------------------------------------------------------------------------

#: The client-run call items and the output item that answers each, by ``call_id``. Other
#: tool items (computer, shell, apply_patch, hosted tools) are not paired: their outputs
#: are no text a notice could stand in for, or the provider runs them itself.
RESPONSES_OUTPUTS = {"function_call": "function_call_output", "custom_tool_call": "custom_tool_call_output"}
_RESPONSES_RESULTS = frozenset(RESPONSES_OUTPUTS.values())


def _item_type(message: Any) -> Any:
    return message.get("type") if isinstance(message, dict) else None


def _says_nothing(message: Any) -> bool:
    """True for a message whose only content is its calls (it converts to call items alone)."""
    if isinstance(message, AssistantMessage):
        return not message.content
    return isinstance(message, dict) and (
        message.get("type") in RESPONSES_OUTPUTS or not message.get("content")
    )


class OpenAIResponsesDialect:
    """OpenAI Responses API items (``function_call`` / ``function_call_output`` by ``call_id``)."""

    def calls(self, message: Any) -> Sequence[Call]:
        if _item_type(message) in RESPONSES_OUTPUTS:
            return [(message.get("call_id"), message.get("name"))]
        return _calls(message)

    def answers(self, message: Any) -> Sequence[Any]:
        if _item_type(message) in _RESPONSES_RESULTS:
            return [message.get("call_id")]
        return _neutral_answers(message)

    def keep_answers(self, message: Any, keep: Sequence[bool]) -> Any | None:
        return message if keep[0] else None

    def joins(self, previous: Any, message: Any) -> bool:
        # The API stores a parallel batch one call per item: [fc a, fc b, out b, out a] is
        # one batch. A message that says something besides its calls starts a new one.
        opens = bool(self.calls(previous)) or _item_type(previous) == "reasoning"
        follows = (bool(self.calls(message)) and _says_nothing(message)) or _item_type(message) == "reasoning"
        return opens and follows

    def notices(self, unanswered: Sequence[tuple[Any, Any, str | None]], notice: str) -> list[Any]:
        out: list[Any] = []
        for caller, call_id, name in unanswered:
            if (kind := _item_type(caller)) in RESPONSES_OUTPUTS:
                item = {"type": RESPONSES_OUTPUTS[kind], "call_id": call_id, "output": notice}
                if "role" in caller:
                    # Items stored with a role (as SessionStore needs to append them, e.g. by
                    # jsonl_store.importers) get one, so resume() can append the notice too.
                    item["role"] = "tool"
                out.append(item)
            else:
                out.append(_notice(caller, call_id, name, notice))
        return out


# ---------------------------------------------------------------------------------------
# anthropic: tool_use blocks, answered by tool_result blocks in the next user message
# ---------------------------------------------------------------------------------------


def _blocks(message: Any, role: str) -> list[Any] | None:
    """The content blocks of an Anthropic-shaped dict of ``role``, or None."""
    if isinstance(message, dict) and message.get("role") == role:
        content = message.get("content")
        if isinstance(content, list):
            return content
    return None


def _block_type(block: Any) -> Any:
    return block.get("type") if isinstance(block, dict) else None


class AnthropicDialect:
    """Anthropic Messages (``tool_use`` blocks, then ``tool_result`` blocks by ``tool_use_id``)."""

    def calls(self, message: Any) -> Sequence[Call]:
        blocks = _blocks(message, "assistant")
        uses = [(b.get("id"), b.get("name")) for b in blocks or () if _block_type(b) == "tool_use"]
        return uses or _calls(message)

    def answers(self, message: Any) -> Sequence[Any]:
        blocks = _blocks(message, "user")
        if blocks is not None:
            return [b.get("tool_use_id") for b in blocks if _block_type(b) == "tool_result"]
        return _neutral_answers(message)

    def keep_answers(self, message: Any, keep: Sequence[bool]) -> Any | None:
        blocks = _blocks(message, "user")
        if blocks is None:
            return message if keep[0] else None
        flags = iter(keep)
        content = [b for b in blocks if _block_type(b) != "tool_result" or next(flags)]
        return {**message, "content": content} if content else None

    def joins(self, previous: Any, message: Any) -> bool:
        return False

    def notices(self, unanswered: Sequence[tuple[Any, Any, str | None]], notice: str) -> list[Any]:
        out: list[Any] = []
        blocks: list[Any] | None = None  # the tool_result blocks of the user message being built
        for caller, call_id, name in unanswered:
            if any(_block_type(b) == "tool_use" for b in _blocks(caller, "assistant") or ()):
                if blocks is None:
                    blocks = []
                    out.append({"role": "user", "content": blocks})
                blocks.append(
                    {"type": "tool_result", "tool_use_id": call_id, "content": notice, "is_error": True}
                )
            else:
                blocks = None
                out.append(_notice(caller, call_id, name, notice))
        return out


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
