"""Checking request shapes against the providers' own type definitions, offline.

The ``openai`` and ``anthropic`` packages (the ``providers`` extra) define every request
as TypedDicts. A pydantic ``TypeAdapter`` validates a value against them, but it leaves
``Iterable`` fields unchecked until they are iterated and silently drops keys a TypedDict
does not define. `conforms` therefore iterates everything and compares the result with
the value: a key the provider does not define, or a value of the wrong type, fails.
A test that needs a package skips when it is not installed.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable, Mapping
from typing import Any

import pytest


def _materialize(value: Any) -> Any:
    """``value`` with every lazily validated iterable run to the end (raising what it finds)."""
    if isinstance(value, Mapping):
        return {key: _materialize(item) for key, item in value.items()}
    if isinstance(value, (str, bytes, int, float, bool)) or value is None:
        return value
    if isinstance(value, Iterable):
        return [_materialize(item) for item in value]
    return value


@functools.cache
def _adapter(type_: Any) -> Any:
    # Kept alive: a lazily validated iterable still needs its adapter's schema when it is
    # iterated (pydantic-core panics if the adapter was collected meanwhile).
    from pydantic import TypeAdapter

    return TypeAdapter(type_)


def conforms(type_: Any, value: Any) -> None:
    """Fail unless ``value`` is exactly an instance of the provider type ``type_``."""
    validated = _materialize(_adapter(type_).validate_python(value))
    assert validated == value, (
        f"the provider's type drops or changes something:\n{validated!r}\n!=\n{value!r}"
    )


def openai_chat(messages: list[dict[str, Any]]) -> None:
    """Fail unless ``messages`` is a valid Chat Completions ``messages`` list."""
    pytest.importorskip("openai")
    from openai.types.chat import ChatCompletionMessageParam

    for message in messages:
        conforms(ChatCompletionMessageParam, message)
        if message["role"] == "assistant":  # the API's rule, which the types cannot say
            assert message.get("content") or message.get("tool_calls") or message.get("refusal"), message


def openai_responses(items: list[dict[str, Any]]) -> None:
    """Fail unless ``items`` is a valid Responses API ``input`` list."""
    pytest.importorskip("openai")
    from openai.types.responses import ResponseInputParam

    conforms(ResponseInputParam, items)


def anthropic_request(system: str | None, messages: list[dict[str, Any]]) -> None:
    """Fail unless ``system`` and ``messages`` are a valid Messages API request's."""
    pytest.importorskip("anthropic")
    from anthropic.types import MessageParam

    assert system is None or (isinstance(system, str) and system)
    for message in messages:
        # Newer SDKs also define a system message; the request's `system` is the one
        # every version (and every Anthropic model) takes.
        assert message["role"] in ("user", "assistant"), message
        conforms(MessageParam, message)
        # The API's rules, which the types cannot say: no empty message or text block,
        # and in a user message the tool_result blocks first.
        blocks = message["content"]
        assert blocks and all(b.get("text") != "" for b in blocks if isinstance(b, dict)), message
        kinds = [isinstance(b, dict) and b.get("type") == "tool_result" for b in blocks]
        assert kinds == sorted(kinds, reverse=True), f"a tool_result after other content: {message}"
    for before, after in itertools.pairwise(messages):
        assert before["role"] != after["role"], "consecutive messages of one role"
