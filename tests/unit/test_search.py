"""`jsonl_store.search.search`: what it looks at, its filters, and its errors."""

from __future__ import annotations

import ast
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import fails_after, needs_re2

import jsonl_store
from jsonl_store import (
    AssistantMessage,
    InvalidArgument,
    Problem,
    RegexUnavailable,
    SessionNotFound,
    SessionStore,
    ToolCall,
    ToolMessage,
    UnsupportedRegex,
    UserMessage,
)
from jsonl_store.search import CONTEXT, Hit, needle_bytes, needs_escapes, search


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    """Two sessions: text with quotes and newlines, a tool call and its result, titles."""
    store = SessionStore(tmp_path / "sessions", durability="none")
    store.append("a", UserMessage(content='He said "grep me"\nthen left'), title="Alpha title")
    call = ToolCall(id="c1", name="read_file", arguments={"path": "src/naïve.py", "lines": [1, 2]})
    store.append("a", AssistantMessage(content="Reading.", reasoning="think about naïve", tool_calls=[call]))
    store.append("a", ToolMessage(tool_call_id="c1", name="read_file", content={"text": "def naïve(): pass"}))
    store.append("b", {"role": "user", "content": [{"type": "text", "text": "the tab\there"}]}, title="Beta")
    return store


def where(hits: list[Hit]) -> list[tuple[str, int, str]]:
    """Each hit's session, sequence and what matched: the part kind, with the field when it is not the part's text."""
    return [
        (h.session_id, h.sequence, h.kind if h.field in ("content", h.kind) else f"{h.kind} {h.field}")
        for h in hits
    ]


def test_text_with_quotes_and_newlines_is_found_as_decoded(store: SessionStore) -> None:
    """A needle holding a quote and a newline matches the decoded text, not its JSON escape."""
    hits = list(search(store, '"grep me"\nthen'))
    assert where(hits) == [("a", 1, "text")]
    assert hits[0].snippet[hits[0].start : hits[0].end] == '"grep me"\nthen'


def test_tool_names_arguments_results_reasoning_and_titles_are_searched(store: SessionStore) -> None:
    """Each part is found, with its kind: arguments' strings, a structured result, reasoning, tool names, titles."""
    assert where(list(search(store, "naïve"))) == [
        ("a", 2, "reasoning"),
        ("a", 2, "tool_call arguments"),
        ("a", 3, "tool_result"),
    ]
    # A tool result's own ``name`` is no part of the message model: its call names the tool.
    assert where(list(search(store, "read_file"))) == [("a", 2, "tool_call name")]
    assert where(list(search(store, "title"))) == [("a", 0, "title")]
    assert where(list(search(store, "tab\there"))) == [("b", 1, "text")]


def test_role_and_session_filters_keep_only_what_they_name(store: SessionStore) -> None:
    """``role`` keeps that role's messages (no titles); ``session_id`` keeps one session."""
    assert where(list(search(store, "naïve", role="tool"))) == [("a", 3, "tool_result")]
    assert where(list(search(store, "ta", session_id="b"))) == [("b", 0, "title"), ("b", 1, "text")]
    assert where(list(search(store, "ta"))) == [("b", 0, "title"), ("b", 1, "text")]


@needs_re2
def test_regex_matches_decoded_text(store: SessionStore) -> None:
    """``regex=True`` reads the text as an RE2 regular expression."""
    hits = list(search(store, r"naïve\(\)", regex=True))
    assert where(hits) == [("a", 3, "tool_result")]


def test_snippet_keeps_context_on_each_side(tmp_path: Path) -> None:
    """A long string is cut to `CONTEXT` characters around the match; ``offset`` is its place in the string."""
    with SessionStore(tmp_path, durability="none") as store:
        store.append("s", UserMessage(content="x" * 100 + "NEEDLE" + "y" * 100))
        (hit,) = search(store, "NEEDLE")
    assert hit.snippet == "x" * CONTEXT + "NEEDLE" + "y" * CONTEXT
    assert (hit.start, hit.end, hit.offset) == (CONTEXT, CONTEXT + 6, 100)


def test_a_path_works_as_well_as_a_store(store: SessionStore) -> None:
    """``search(root, ...)`` opens the store at ``root`` itself."""
    assert where(list(search(store.root, "Beta"))) == [("b", 0, "title")]


def test_a_torn_last_line_is_not_a_hit(store: SessionStore) -> None:
    """Half a record a crash left at the end holds the needle but is no record, so no hit."""
    with open(Path(store.root) / "b" / "messages.jsonl", "ab") as log:
        log.write(b'{"sequence":2,"id":"x","message":{"role":"user","content":"torn-needle')
    assert list(search(store, "torn-needle")) == []


def test_needle_bytes_is_the_longest_run_every_json_form_writes_raw() -> None:
    """The prefilter looks for the longest plain ASCII run; without one, the longest run without controls, quotes, backslashes or spaces."""
    assert needle_bytes("KeyError: 'week 53'") == b"KeyError:"
    assert needle_bytes("src/pkg/module_7.py") == b"module_7.py"
    assert needle_bytes('ab\ncde"f') == b"cde"
    assert needle_bytes("naïve café") == b"caf"
    assert needle_bytes("é\\") == "é".encode()
    assert needle_bytes('\n\t" ') == b""
    # Only a needle with no plain run needs the lines holding a nested optional escape too.
    assert not needs_escapes(needle_bytes("naïve café"))
    assert needs_escapes(needle_bytes("東京"))


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"text": ""}, InvalidArgument),
        pytest.param({"text": "("}, InvalidArgument, marks=needs_re2),
        ({"text": "x", "role": "robot"}, InvalidArgument),
        ({"text": "x", "session_id": "missing"}, SessionNotFound),
    ],
)
def test_bad_arguments_raise_typed_errors(store: SessionStore, kwargs: dict[str, str], error: type) -> None:
    """An empty text, a bad regex, an unknown role or session raise the store's typed errors."""
    regex = kwargs.get("text") == "("
    with pytest.raises(error):
        list(search(store, regex=regex, **kwargs))  # type: ignore[arg-type]
    assert issubclass(error, (ValueError, KeyError))


def test_something_that_is_not_a_store_or_path_is_refused() -> None:
    """Neither a store nor a path: `InvalidArgument`."""
    with pytest.raises(InvalidArgument):
        list(search(42, "x"))  # type: ignore[arg-type]


def test_a_fifo_in_place_of_a_log_neither_hangs_nor_hits(store: SessionStore) -> None:
    """A FIFO named messages.jsonl is not opened for reading (it would block): that session has no hit."""
    log = Path(store.root) / "b" / "messages.jsonl"
    log.unlink()
    os.mkfifo(log)
    problems: list[Problem] = []
    fifo_store = SessionStore(store.root, on_problem=problems.append)
    with fails_after(30, "search opened the FIFO and blocked"):
        assert where(list(search(fifo_store, "e", role="user"))) == [("a", 1, "text")]
    assert any(p.kind == "unsafe-path" for p in problems)


def test_the_logs_a_search_reads_are_the_chain_its_history_reads(store: SessionStore) -> None:
    """The prefilter reads the raw logs of `History`'s chain: own first, and no source the fork shares nothing with."""
    store.append("a", UserMessage(content="third"))
    store.fork("a", 2, "b-fork")  # b-fork: a's records 1..2, then its own
    store.append("b-fork", UserMessage(content="b's own"))
    store.fork("b-fork", 3, "c-fork")  # c-fork: a's 1..2, b-fork's 3, then its own
    store.fork("b-fork", 1, "d-fork")  # d-fork: a's 1 only; none of b-fork's own records

    def logs(session_id: str) -> list[str]:
        summary = store.get_session(session_id)
        assert summary is not None
        return [os.path.relpath(path, store.root) for path in store._searching.logs(summary)]

    assert logs("a") == [os.path.join("a", "messages.jsonl")]
    assert logs("b-fork") == [os.path.join(sid, "messages.jsonl") for sid in ("b-fork", "a")]
    assert logs("c-fork") == [os.path.join(sid, "messages.jsonl") for sid in ("c-fork", "b-fork", "a")]
    assert logs("d-fork") == [os.path.join(sid, "messages.jsonl") for sid in ("d-fork", "a")]
    assert where(list(search(store, "b's own"))) == [("c-fork", 3, "text"), ("b-fork", 3, "text")]


def test_search_asks_a_store_only_through_its_internal_entry_point() -> None:
    """`search` and the catalog command reach no private part of a store but `SessionStore._searching`."""
    package = Path(jsonl_store.__file__).parent
    for path in (package / "search.py", package / "cli" / "_catalog.py"):
        reached = {
            node.attr
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "store"
            and node.attr.startswith("_")
        }
        assert reached == {"_searching"}, path


def test_a_fork_is_searched_through_the_history_it_shares(store: SessionStore) -> None:
    """A needle only in the source's part of a fork's history is found in the fork too."""
    store.fork("a", 1, "a-fork")
    store.append("a-fork", UserMessage(content="only in the fork"))
    assert where(list(search(store, "grep me", role="user"))) == [("a-fork", 1, "text"), ("a", 1, "text")]
    assert where(list(search(store, "only in the fork"))) == [("a-fork", 2, "text")]


@needs_re2
def test_a_nested_quantifier_that_backtracks_forever_in_re_returns_at_once(tmp_path: Path) -> None:
    """``(a+)+$`` on 34 a's and a b (about 2**34 backtracking steps in Python's re) finds nothing; ``(a+)+b$`` finds it."""
    with SessionStore(tmp_path, durability="none") as store:
        store.append("s", UserMessage(content="a" * 34 + "b"))
        assert list(search(store, "(a+)+$", regex=True)) == []
        (hit,) = search(store, "(a+)+b$", regex=True)
    assert (hit.start, hit.end) == (0, 35)


@needs_re2
@pytest.mark.parametrize("pattern", [r"(a)\1", r"a(?=b)", r"(?<!x)a", r"(?>a+)"])
def test_what_re2_cannot_match_in_linear_time_is_refused_by_name(store: SessionStore, pattern: str) -> None:
    """A backreference, lookaround or atomic group (valid for Python's re) is `UnsupportedRegex`, naming RE2's syntax page."""
    with pytest.raises(UnsupportedRegex, match="RE2 does not accept this pattern") as info:
        list(search(store, pattern, regex=True))
    assert "https://github.com/google/re2/wiki/Syntax" in str(info.value)
    assert isinstance(info.value, InvalidArgument)


def test_without_re2_a_regex_search_is_refused_naming_the_extra(
    store: SessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With google-re2 not importable, ``regex=True`` raises `RegexUnavailable` (an ImportError) naming the extra; plain search works."""
    monkeypatch.setitem(sys.modules, "re2", None)  # what an import of a missing module finds
    with pytest.raises(RegexUnavailable, match=r"jsonl_store\[regex\]") as info:
        list(search(store, "(a+)+$", regex=True))
    assert isinstance(info.value, ImportError)
    assert where(list(search(store, "Beta"))) == [("b", 0, "title")]


@pytest.fixture
def dialects(tmp_path: Path) -> SessionStore:
    """A Responses session (Codex-shaped items) and an Anthropic one (Claude Code-shaped blocks)."""
    store = SessionStore(tmp_path / "dialects", durability="none")
    arguments = json.dumps({"command": ["bash", "-lc", 'rg -n "ollama" src/'], "note": "café"})
    store.create_session("codex", metadata={"dialect": "openai-responses"})
    store.append_many(
        "codex",
        [
            {
                "type": "function_call",
                "role": "assistant",
                "call_id": "c1",
                "name": "shell",
                "arguments": arguments,
            },
            {
                "type": "function_call_output",
                "role": "tool",
                "call_id": "c1",
                "output": '{"output":"a.ts:3: \\"ollama\\"\\n"}',
            },
            {
                "type": "custom_tool_call",
                "role": "assistant",
                "call_id": "c2",
                "name": "apply_patch",
                "input": "*** Begin Patch",
            },
            {
                "type": "reasoning",
                "role": "assistant",
                "summary": [{"type": "summary_text", "text": "Thinking of ollama"}],
            },
            {"type": "web_search_call", "role": "assistant", "action": {"query": "ollama docs"}},
        ],
    )
    store.create_session("claude", metadata={"dialect": "anthropic"})
    store.append_many(
        "claude",
        [
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/x/ollama.md"}}
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": [{"type": "text", "text": "# ollama notes"}],
                    }
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "ollama again"},
                    {"type": "mystery", "note": "ollama"},
                ],
            },
        ],
    )
    return store


def test_every_part_of_a_responses_session_is_searched_with_its_kind(dialects: SessionStore) -> None:
    """Codex-shaped items: decoded arguments, a JSON-text output, reasoning and a hosted tool's item are found, each with its part kind."""
    assert where(list(search(dialects, "ollama", session_id="codex"))) == [
        ("codex", 1, "tool_call arguments"),
        ("codex", 2, "tool_result"),
        ("codex", 4, "reasoning"),
        ("codex", 5, "other"),
    ]
    assert where(list(search(dialects, "Begin Patch"))) == [("codex", 3, "tool_call arguments")]
    assert where(list(search(dialects, "apply_patch"))) == [("codex", 3, "tool_call name")]


def test_what_a_person_saw_of_json_text_is_found(dialects: SessionStore) -> None:
    """The arguments as stored (a JSON string) and a JSON output's decoded text (a quote, a newline) are found."""
    (raw,) = search(dialects, '"command": ["bash"')
    assert (raw.kind, raw.field, raw.snippet[raw.start : raw.end]) == (
        "tool_call",
        "arguments",
        '"command": ["bash"',
    )
    (decoded,) = search(dialects, 'a.ts:3: "ollama"\n')
    assert (decoded.kind, decoded.sequence, decoded.snippet) == ("tool_result", 2, 'a.ts:3: "ollama"\n')
    (quoted,) = search(dialects, 'rg -n "ollama"')
    assert (quoted.kind, quoted.field, quoted.sequence) == ("tool_call", "arguments", 1)


def test_every_block_of_an_anthropic_session_is_searched_with_its_kind(dialects: SessionStore) -> None:
    """Claude Code-shaped blocks: tool input, a list result, thinking and an unknown block are found, each with its kind."""
    assert where(list(search(dialects, "ollama", session_id="claude"))) == [
        ("claude", 1, "tool_call arguments"),
        ("claude", 2, "tool_result"),
        ("claude", 3, "reasoning"),
        ("claude", 3, "other"),
    ]


@pytest.mark.parametrize(
    "encode",
    [
        pytest.param(lambda value: json.dumps(value, ensure_ascii=True), id="ensure-ascii"),
        pytest.param(lambda value: json.dumps(value).replace("/", "\\/"), id="escaped-slash"),
        pytest.param(
            lambda value: json.dumps(value, ensure_ascii=False).replace("/", "\\/"), id="escaped-slash-utf8"
        ),
        pytest.param(
            lambda value: json.dumps(value, ensure_ascii=False).replace("<", "\\u003c"), id="go-html"
        ),
        pytest.param(lambda value: json.dumps(value, indent=2), id="indented"),
    ],
)
def test_arguments_a_json_string_escapes_optionally_are_still_found(
    tmp_path: Path, encode: Callable[[object], str]
) -> None:
    """Arguments whose JSON uses escapes no writer needs (``\\u00e9``, ``\\/``) or spaces are found: the prefilter keeps their lines."""
    with SessionStore(tmp_path, durability="none") as store:
        arguments = encode({"path": "src/naïve café.py", "cjk": "東京 <&>", "path-cjk": "東/京"})
        call = {"id": "c", "type": "function", "function": {"name": "read", "arguments": arguments}}
        store.append("chat", {"role": "assistant", "content": None, "tool_calls": [call]})
        store.append(
            "chat",
            {
                "role": "tool",
                "tool_call_id": "c",
                "content": {"path": "src/naïve café.py", "cjk": "東京 <&>", "path-cjk": "東/京"},
            },
        )
        for needle in ("src/naïve café", "naïve café.py", "東京 <&>", "東/京"):
            assert where(list(search(store, needle))) == [
                ("chat", 1, "tool_call arguments"),
                ("chat", 2, "tool_result"),
            ]
        # A structured result reads as indented JSON: what it shows is found, though its line
        # is compact; the arguments as stored hold it too where their JSON has the same spaces.
        shown = '"path": "src/naïve'
        stored = [("chat", 1, "tool_call arguments")] if shown in arguments else []
        assert where(list(search(store, shown))) == [*stored, ("chat", 2, "tool_result")]
