"""PydanticAIHistory against real pydantic-ai agents, offline (FunctionModel and TestModel).

No pydantic-ai part is mocked: agents run for real with pydantic-ai's own offline models,
histories are compared with the framework's objects by ``==``, and the crash is a real
process dying inside a tool (``os._exit``). Ran against pydantic-ai-slim 2.62.0.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pydantic_ai", reason='needs the extra: pip install -e ".[pydantic-ai]"')

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_ai import Agent
from pydantic_ai.exceptions import UserError
from pydantic_ai.messages import (
    BinaryContent,
    BinaryImage,
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
    repair_messages,
)
from pydantic_ai.models.test import TestModel

from jsonl_store import CorruptSession, SessionStore, is_provider_valid
from jsonl_store.adapters import _pydantic_ai_codec, _state_log
from jsonl_store.adapters.pydantic_ai import PYDANTIC_AI, PydanticAIHistory

pytestmark = pytest.mark.usefixtures("sync_event_loop")  # agent.run_sync's loop is closed after each test

CHILD = Path(__file__).parents[1] / "pydantic_ai_child.py"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256))


def child(mode: str, root: Path, sid: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(CHILD), mode, str(root), sid],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def calculator() -> Agent[None, str]:
    agent: Agent[None, str] = Agent(TestModel())

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    return agent


def log_bytes(root: Path, sid: str) -> bytes:
    return (root / sid / "messages.jsonl").read_bytes()


# ---------------------------------------------------------------------------------------
# Round trips
# ---------------------------------------------------------------------------------------


def test_a_saved_history_loads_equal_to_pydantic_ais_objects(tmp_path: Path) -> None:
    """Two runs with tool calls, saved and appended, load back == result.all_messages()."""
    agent, history = calculator(), PydanticAIHistory(str(tmp_path))
    first = agent.run_sync("add things")
    history.save("chat", first.all_messages())
    second = agent.run_sync("again", message_history=history.load("chat"))
    history.append("chat", second.new_messages())
    assert PydanticAIHistory(str(tmp_path)).load("chat") == second.all_messages()
    assert any(isinstance(p, ToolCallPart) for m in second.all_messages() for p in m.parts)


def test_binary_content_comes_back_as_the_class_it_was(tmp_path: Path) -> None:
    """A plain BinaryContent image stays BinaryContent (pydantic-ai's JSON alone reads a BinaryImage)."""
    plain = BinaryContent(data=PNG, media_type="image/png")
    narrowed = BinaryImage(data=PNG, media_type="image/png")
    other = BinaryContent(data=b"\x00\xff", media_type="application/octet-stream")
    messages: list[ModelMessage] = [
        ModelRequest(parts=[UserPromptPart(content=["look", plain, narrowed])]),
        ModelResponse(parts=[ToolCallPart("fetch", {}, tool_call_id="c")]),
        ModelRequest(parts=[ToolReturnPart("fetch", [other, plain], tool_call_id="c")]),
    ]
    # The premise: pydantic-ai's own JSON does not give the plain one back.
    assert ModelMessagesTypeAdapter.validate_json(ModelMessagesTypeAdapter.dump_json(messages)) != messages
    PydanticAIHistory(str(tmp_path)).save("s", messages)
    loaded = PydanticAIHistory(str(tmp_path)).load("s")
    assert loaded == messages
    prompt = loaded[0].parts[0]
    assert isinstance(prompt, UserPromptPart) and isinstance(prompt.content, list)
    content = prompt.content
    assert type(content[1]) is BinaryContent and type(content[2]) is BinaryImage


def test_a_new_process_reads_what_another_saved(tmp_path: Path) -> None:
    """A child runs two turns with parallel tools, saving each step; the parent loads it equal."""
    done = child("history-turns", tmp_path, "chat")
    assert done.returncode == 0, done.stderr
    expected = ModelMessagesTypeAdapter.validate_json(done.stdout)
    assert PydanticAIHistory(str(tmp_path)).load("chat", repair=False) == expected
    assert PydanticAIHistory(str(tmp_path)).load("chat") == expected  # complete: nothing to repair


def test_unknown_sessions_are_empty_and_free_form_ids_work(tmp_path: Path) -> None:
    """An id never saved loads as []; an id with '/' and ':' names an encoded directory."""
    history = PydanticAIHistory(str(tmp_path))
    assert history.load("nobody") == []
    result = calculator().run_sync("hi")
    history.save("user:42/chat 1", result.all_messages())
    assert history.load("user:42/chat 1") == result.all_messages()
    assert (tmp_path / history.store_session_id("user:42/chat 1")).is_dir()


def test_usage_of_each_response_is_counted_by_the_store(tmp_path: Path) -> None:
    """Each ModelResponse's tokens are its record's usage: usage_totals sums the run's usage."""
    history = PydanticAIHistory(str(tmp_path))
    result = calculator().run_sync("add things")
    history.save("s", result.all_messages())
    totals = history.store.usage_totals("s")
    responses = [m for m in result.all_messages() if isinstance(m, ModelResponse)]
    assert totals.input_tokens == sum(m.usage.input_tokens for m in responses)
    assert totals.output_tokens == sum(m.usage.output_tokens for m in responses)
    assert totals.input_tokens > 0


# ---------------------------------------------------------------------------------------
# Saves write what is new, never rewrite
# ---------------------------------------------------------------------------------------


def test_each_save_encodes_only_new_messages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ten turns saved with all_messages(): every save encodes just that turn's messages."""
    encoded: list[int] = []
    real = _pydantic_ai_codec.encode

    def counting(messages: Any) -> list[dict[str, Any]]:
        encoded.append(len(messages))
        return real(messages)

    history = PydanticAIHistory(str(tmp_path))
    monkeypatch.setattr(history._log, "_encode_messages", counting)
    agent, messages = calculator(), None
    for turn in range(10):
        result = agent.run_sync(f"turn {turn}", message_history=messages)
        history.save("s", result.all_messages())
        assert encoded[-1] == len(result.new_messages())
        messages = result.all_messages()
    assert history.load("s") == messages


def test_a_shortened_history_is_a_state_record_and_the_log_only_grows(tmp_path: Path) -> None:
    """A history processor's shorter history saves as one state record plus new messages; no byte is rewritten."""
    history = PydanticAIHistory(str(tmp_path))
    result = calculator().run_sync("add things")
    full = result.all_messages()
    history.save("s", full)
    before = log_bytes(tmp_path, "s")
    kept = [full[0], ModelResponse(parts=[TextPart("summary of the rest")])]
    history.save("s", kept)
    after = log_bytes(tmp_path, "s")
    assert after.startswith(before)
    added = [json.loads(line) for line in after[len(before) :].splitlines()]
    assert [line["message"]["format"] for line in added] == ["pydantic-ai-state", "pydantic-ai"]
    assert added[0]["message"]["content"] == {"messages": 1, "updates": 0, "model": None}
    assert PydanticAIHistory(str(tmp_path)).load("s") == kept


def test_the_last_save_wins_over_another_stores_different_save(tmp_path: Path) -> None:
    """Two stores alternate saving unrelated histories of one session: load gives the last one."""
    one, two = PydanticAIHistory(str(tmp_path)), PydanticAIHistory(str(tmp_path))
    agent = calculator()
    a, b = agent.run_sync("first").all_messages(), agent.run_sync("second").all_messages()
    one.save("s", a)
    two.save("s", b)
    assert one.load("s") == b
    one.save("s", a)  # its cache says "a" is stored: it must notice two's save
    assert two.load("s") == a
    one.append("s", b[-1:])
    assert two.load("s") == [*a, b[-1]]


def request(text: str) -> ModelRequest:
    return ModelRequest(parts=[UserPromptPart(content=text, timestamp=TIME)])


def response(text: str) -> ModelResponse:
    return ModelResponse(parts=[TextPart(text)], timestamp=TIME)


TIME = datetime(2026, 1, 1, tzinfo=UTC)
MESSAGES = [request(f"q{i}") if i % 2 == 0 else response(f"a{i}") for i in range(8)]

states = st.lists(st.sampled_from(MESSAGES), max_size=6)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(saves=st.lists(st.tuples(st.integers(0, 1), states), min_size=1, max_size=6))
def test_after_any_sequence_of_saves_from_two_stores_load_gives_the_last(
    tmp_path_factory: pytest.TempPathFactory, saves: list[tuple[int, list[ModelMessage]]]
) -> None:
    """Any states saved in any order by two stores: every load gives the last saved state exactly."""
    root = str(tmp_path_factory.mktemp("saves"))
    histories = [PydanticAIHistory(root), PydanticAIHistory(root)]
    for who, messages in saves:
        histories[who].save("s", messages)
        assert histories[1 - who].load("s", repair=False) == messages
        assert PydanticAIHistory(root).load("s", repair=False) == messages


# ---------------------------------------------------------------------------------------
# Crashes and corruption
# ---------------------------------------------------------------------------------------


def test_a_process_killed_inside_a_tool_leaves_a_history_pydantic_ai_accepts(tmp_path: Path) -> None:
    """Killed between the calls and their results: load() runs under a new prompt; the raw history does not."""
    done = child("history-kill", tmp_path, "chat")
    assert done.returncode == 17, done.stderr
    history = PydanticAIHistory(str(tmp_path))
    raw = history.load("chat", repair=False)
    assert isinstance(raw[-1], ModelResponse) and raw[-1].tool_calls  # the calls were saved, no results
    agent = calculator()
    with pytest.raises(UserError, match="unprocessed tool calls"):
        agent.run_sync("what happened?", message_history=raw)
    loaded = history.load("chat")
    assert is_provider_valid(loaded, dialect=PYDANTIC_AI)
    result = agent.run_sync("what happened?", message_history=loaded)
    assert result.output


def test_the_repair_is_the_one_pydantic_ai_makes(tmp_path: Path) -> None:
    """load()'s closing results are what repair_messages synthesises, so pydantic-ai finds nothing to repair."""
    assert child("history-kill", tmp_path, "chat").returncode == 17
    history = PydanticAIHistory(str(tmp_path))
    raw, loaded = history.load("chat", repair=False), history.load("chat")
    ours = [p for p in loaded[-1].parts if isinstance(p, ToolReturnPart)]
    theirs = [p for p in repair_messages(raw)[-1].parts if isinstance(p, ToolReturnPart)]
    assert ours == theirs and len(ours) == 2
    assert all(p.metadata == {_pydantic_ai_codec.SYNTHESIZED_KEY: True} for p in ours)
    assert repair_messages(loaded) == loaded  # idempotent under pydantic-ai's own repair


def test_a_torn_tail_is_not_corruption_but_mid_log_damage_is(tmp_path: Path) -> None:
    """A half-written last line loads the history before it; a damaged middle line raises CorruptSession."""
    history = PydanticAIHistory(str(tmp_path))
    result = calculator().run_sync("add things")
    history.save("s", result.all_messages())
    path = tmp_path / "s" / "messages.jsonl"
    good = path.read_bytes()
    path.write_bytes(good + b'{"sequence": 99, "half')
    assert PydanticAIHistory(str(tmp_path)).load("s") == result.all_messages()
    lines = good.splitlines(keepends=True)
    lines[1] = lines[1].replace(b'"role"', b'"rolf"')
    path.write_bytes(b"".join(lines))
    with pytest.raises(CorruptSession):
        PydanticAIHistory(str(tmp_path)).load("s")


def test_a_state_record_from_another_program_is_read_by_its_rule(tmp_path: Path) -> None:
    """A state record written through the store (not the adapter) cuts the history as the format says."""
    history = PydanticAIHistory(str(tmp_path))
    messages = MESSAGES[:4]
    history.save("s", messages)
    SessionStore(str(tmp_path)).append("s", _state_log.state_record(2, 0, None))
    assert PydanticAIHistory(str(tmp_path)).load("s", repair=False) == messages[:2]


def test_the_extra_is_named_when_pydantic_ai_is_missing() -> None:
    """Without pydantic-ai the adapter raises one ImportError line naming the extra."""
    code = (
        "import sys; sys.modules['pydantic_ai'] = None\n"
        "try:\n"
        "    import jsonl_store.adapters.pydantic_ai\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert (
        done.stdout
        == 'jsonl_store.adapters.pydantic_ai needs pydantic-ai: pip install "jsonl_store[pydantic-ai]"\n'
    )
