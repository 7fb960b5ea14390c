"""`jsonl_store.search.search`: what it looks at, its filters, and its errors."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from helpers import fails_after, needs_re2

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
from jsonl_store.search import CONTEXT, Hit, needle_bytes, search


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
    return [(h.session_id, h.sequence, h.field) for h in hits]


def test_text_with_quotes_and_newlines_is_found_as_decoded(store: SessionStore) -> None:
    """A needle holding a quote and a newline matches the decoded text, not its JSON escape."""
    hits = list(search(store, '"grep me"\nthen'))
    assert where(hits) == [("a", 1, "content")]
    assert hits[0].snippet[hits[0].start : hits[0].end] == '"grep me"\nthen'


def test_tool_names_arguments_results_reasoning_and_titles_are_searched(store: SessionStore) -> None:
    """Each searchable field is found: arguments' strings, a structured result, reasoning, tool names, titles."""
    assert where(list(search(store, "naïve"))) == [
        ("a", 2, "reasoning"),
        ("a", 2, "arguments"),
        ("a", 3, "content"),
    ]
    assert where(list(search(store, "read_file"))) == [("a", 2, "tool name"), ("a", 3, "tool name")]
    assert where(list(search(store, "title"))) == [("a", 0, "title")]
    assert where(list(search(store, "tab\there"))) == [("b", 1, "content")]


def test_role_and_session_filters_keep_only_what_they_name(store: SessionStore) -> None:
    """``role`` keeps that role's messages (no titles); ``session_id`` keeps one session."""
    assert where(list(search(store, "naïve", role="tool"))) == [("a", 3, "content")]
    assert where(list(search(store, "ta", session_id="b"))) == [("b", 0, "title"), ("b", 1, "content")]
    assert where(list(search(store, "ta"))) == [("b", 0, "title"), ("b", 1, "content")]


@needs_re2
def test_regex_matches_decoded_text(store: SessionStore) -> None:
    """``regex=True`` reads the text as an RE2 regular expression."""
    hits = list(search(store, r"naïve\(\)", regex=True))
    assert where(hits) == [("a", 3, "content")]


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


def test_needle_bytes_is_the_longest_run_without_controls_json_escaped() -> None:
    """The prefilter looks for the encoded form of the longest control-free run."""
    assert needle_bytes('ab\ncd"e') == b'cd\\"e'
    assert needle_bytes("é\\") == "é\\\\".encode()
    assert needle_bytes("\n\t") == b""


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
        assert where(list(search(fifo_store, "e", role="user"))) == [("a", 1, "content")]
    assert any(p.kind == "unsafe-path" for p in problems)


def test_a_fork_is_searched_through_the_history_it_shares(store: SessionStore) -> None:
    """A needle only in the source's part of a fork's history is found in the fork too."""
    store.fork("a", 1, "a-fork")
    store.append("a-fork", UserMessage(content="only in the fork"))
    assert where(list(search(store, "grep me", role="user"))) == [
        ("a-fork", 1, "content"),
        ("a", 1, "content"),
    ]
    assert where(list(search(store, "only in the fork"))) == [("a-fork", 2, "content")]


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
