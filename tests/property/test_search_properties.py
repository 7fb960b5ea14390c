"""`search` finds exactly what decoding every record and matching it finds (the prefilter loses nothing)."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from jsonl_store import AssistantMessage, SessionStore, ToolCall, ToolMessage, UserMessage
from jsonl_store._text.find import find
from jsonl_store.search import naive_search, search
from jsonl_store.testing.damage import crlf, flip, tear

# Characters a writer escapes (quote, backslash, controls), writes raw (non-ASCII, U+2028)
# or that are plain: the needle must be found whichever form its line holds.
ALPHABET = st.sampled_from(list('ab "\\\n\t\x00\x1b\x7fé東\u2028\u202e😀{}:,/<&'))
TEXT = st.text(ALPHABET, max_size=12)
#: A title may not hold a NUL (docs/guides/store.md, `append`); messages may.
TITLE = TEXT.map(lambda text: text.replace("\x00", ""))


#: How a message's JSON-string arguments or output may be written: compact, as ``json.dumps``
#: writes by default (non-ASCII as ``\\uXXXX``, spaces after ``:`` and ``,``), indented, or
#: with ``/`` escaped (PHP's default) or ``<`` and ``&`` as ``\\u003c`` and ``\\u0026`` (Go's default),
#: or after leading whitespace, all valid JSON a source may store.
Encoder = Callable[[Any], str]
ENCODERS: st.SearchStrategy[Encoder] = st.sampled_from(
    [
        lambda value: json.dumps(value, ensure_ascii=False, separators=(",", ":")),
        json.dumps,
        lambda value: json.dumps(value, indent=2),
        lambda value: json.dumps(value).replace("/", "\\/"),
        lambda value: json.dumps(value, ensure_ascii=False).replace("/", "\\/"),
        lambda value: json.dumps(value, ensure_ascii=False).replace("<", "\\u003c").replace("&", "\\u0026"),
        lambda value: "\r\n\t " + json.dumps(value),
    ]
)
VALUES = st.recursive(
    st.none() | st.integers(-(2**63), 2**63 - 1) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=6,
)


@st.composite
def json_text_messages(draw: st.DrawFn) -> Any:
    """Messages whose parts come from JSON held as text or shown as indented text (read in the
    session's dialect): chat-call arguments, a structured result, Responses call and output items."""
    encode = draw(ENCODERS)
    kind = draw(st.sampled_from(["chat-call", "structured", "responses-call", "responses-output"]))
    if kind == "chat-call":
        call = {
            "id": "c",
            "type": "function",
            "function": {"name": draw(TEXT), "arguments": encode(draw(VALUES))},
        }
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    if kind == "structured":
        return {
            "role": "tool",
            "tool_call_id": "c",
            "content": draw(st.dictionaries(TEXT, VALUES, max_size=3)),
        }
    if kind == "responses-call":
        arguments = encode(draw(VALUES))
        return {
            "type": "function_call",
            "role": "assistant",
            "call_id": "c",
            "name": "f",
            "arguments": arguments,
        }
    output = encode({"output": draw(TEXT), "metadata": {"exit_code": 0}})
    return {"type": "function_call_output", "role": "tool", "call_id": "c", "output": output}


@st.composite
def messages(draw: st.DrawFn) -> Any:
    kind = draw(st.sampled_from(["user", "assistant", "tool", "dict", "json-text"]))
    if kind == "json-text":
        return draw(json_text_messages())
    text = draw(TEXT)
    if kind == "user":
        return UserMessage(content=text)
    if kind == "assistant":
        calls = [ToolCall(id="c", name=draw(TEXT), arguments={draw(TEXT): [draw(TEXT)]})]
        return AssistantMessage(content=text, reasoning=draw(TEXT) or None, tool_calls=calls)
    if kind == "tool":
        return ToolMessage(tool_call_id="c", name=draw(TEXT) or None, content=text)
    return {"role": "user", "content": [{"type": "text", "text": text}]}


@given(
    sessions=st.lists(st.lists(messages(), min_size=1, max_size=5), min_size=1, max_size=3),
    titles=st.lists(TITLE, min_size=3, max_size=3),
    needle=TEXT.filter(bool),
    pick=st.booleans(),
)
@settings(max_examples=examples(150))
def test_search_finds_what_a_decode_everything_search_finds(
    sessions: list[list[Any]], titles: list[str], needle: str, pick: bool
) -> None:
    """The (session, sequence, field) triples of `search` and of `naive_search` are the same."""
    with tempfile.TemporaryDirectory() as root, SessionStore(root, durability="none") as store:
        # s1 is read as Responses items: an output's JSON text is matched on its decoded strings.
        store.create_session("s1", metadata={"dialect": "openai-responses"})
        for index, batch in enumerate(sessions):
            store.append_many(f"s{index}", batch, title=titles[index] or None)
        # A fork reads its first records from s0's log: its own log may lack the needle.
        store.fork("s0", 1, "fork")
        store.append("fork", sessions[-1][-1])
        if pick:  # a needle that surely occurs: a piece of a stored text
            first = sessions[0][0]
            content = getattr(first, "content", None)
            if isinstance(first, dict):
                content = (
                    first["content"][0]["text"] if first.get("role") == "user" else first.get("arguments")
                )
            if isinstance(content, str) and content:
                needle = content[len(content) // 3 :] or needle
        fast = [(h.session_id, h.sequence, h.kind, h.field, h.offset) for h in search(store, needle)]
        slow = [(h.session_id, h.sequence, h.kind, h.field, h.offset) for h in naive_search(store, needle)]
        assert fast == slow


@given(data=st.binary(max_size=300), needle=st.binary(min_size=1, max_size=6))
@settings(max_examples=examples(300))
def test_rarest_byte_find_agrees_with_bytes_find(data: bytes, needle: bytes) -> None:
    """`find` gives the index `bytes.find` gives, for any haystack and needle."""
    assert find(data, needle) == data.find(needle)
    assert find(data + needle, needle) == (data + needle).find(needle)
    for start in range(len(data) + 1):
        assert find(data, needle, start) == data.find(needle, start)


@given(
    batch=st.lists(messages(), min_size=2, max_size=8),
    damage=st.lists(
        st.tuples(st.sampled_from(["flip", "tear", "crlf"]), st.integers(0, 1 << 16)), max_size=3
    ),
    needle=TEXT.filter(bool),
)
@settings(max_examples=examples(150))
def test_search_and_naive_search_agree_on_a_damaged_log(
    batch: list[Any], damage: list[tuple[str, int]], needle: str
) -> None:
    """Bit flips, a torn end and converted line ends change what both read the same way."""
    with tempfile.TemporaryDirectory() as root:
        with SessionStore(root, durability="none") as store:
            for message in batch:  # one record per append: damage may split any of them
                store.append("s", message)
        log = Path(root) / "s" / "messages.jsonl"
        data = log.read_bytes()
        for kind, at in damage:
            if kind == "flip":
                data = flip(data, at % len(data))
            elif kind == "tear":
                data = tear(data, at % len(data))
            else:
                data = crlf(data)
            if not data:
                break
        log.write_bytes(data)
        with SessionStore(root, on_problem=lambda problem: None) as store:
            fast = [(h.session_id, h.sequence, h.field, h.offset) for h in search(store, needle)]
            slow = [(h.session_id, h.sequence, h.field, h.offset) for h in naive_search(store, needle)]
        assert fast == slow


#: Text around a needle: what a writer escapes (quote, backslash, controls), what a nested
#: JSON writer may write as ``\\uXXXX`` (non-ASCII, U+2028, ``<&/``) and plain letters, which
#: most often make up a needle found on many lines (`_find`'s frequent-byte path).
AROUND = st.text(st.sampled_from(list('fun ction"\\\n\x01é東\u2028😀</&')), max_size=10)


@st.composite
def carriers(draw: st.DrawFn, needle: str) -> Any:
    """A message holding ``needle`` (or a near miss) in a string of one of its searched places."""
    text = draw(AROUND) + draw(st.sampled_from([needle, needle[:-1], needle[1:]])) + draw(AROUND)
    encode = draw(ENCODERS)
    kind = draw(st.sampled_from(["user", "reasoning", "call", "result", "chat-call", "json-output"]))
    if kind == "user":
        return UserMessage(content=text)
    if kind == "reasoning":
        return AssistantMessage(content=None, reasoning=text)
    if kind == "call":
        return AssistantMessage(
            content=None, tool_calls=[ToolCall(id="c", name="f", arguments={text: [text]})]
        )
    if kind == "result":
        return ToolMessage(tool_call_id="c", content=text)
    if kind == "chat-call":
        call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": encode({"q": text})}}
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    return {"role": "tool", "tool_call_id": "c", "content": encode({"output": text})}


@given(
    data=st.data(),
    needle=st.text(st.sampled_from(list('fun ction"\\\n\x01é東\u2028😀</&')), min_size=1, max_size=6),
)
@settings(max_examples=examples(150))
def test_search_gives_the_hits_of_a_decode_everything_search_field_by_field(
    data: st.DataObject, needle: str
) -> None:
    """Every field of every hit (snippet and offsets too) is `naive_search`'s, for needles across escapes on many lines."""
    batches = data.draw(st.lists(st.lists(carriers(needle), min_size=1, max_size=12), min_size=1, max_size=3))
    with tempfile.TemporaryDirectory() as root, SessionStore(root, durability="none") as store:
        for index, batch in enumerate(batches):
            store.append_many(f"s{index}", batch)
        assert list(search(store, needle)) == list(naive_search(store, needle))


@given(
    filler=st.binary(min_size=1, max_size=40),
    needle=st.sampled_from([b"function", b"unction", b"KeyError", b"q}z", b"xq"]),
    every=st.integers(1, 200),
    count=st.integers(1, 400),
)
@settings(max_examples=examples(100))
def test_find_agrees_with_bytes_find_where_the_needle_is_on_many_lines(
    filler: bytes, needle: bytes, every: int, count: int
) -> None:
    """Over many kilobytes where the needle (or its rarest byte alone) recurs, `find` finds each occurrence in turn."""
    pieces = [filler + (needle if i % every == 0 else needle[:1] + needle[-1:]) for i in range(count)]
    data = b"\n".join(pieces)
    at = expected = -1
    while True:
        at, expected = find(data, needle, at + 1), data.find(needle, expected + 1)
        assert at == expected
        if at < 0:
            break


#: What can happen to a blob file after its record was written.
BLOB_FATES = st.sampled_from(["kept", "missing", "flipped", "short", "not-utf8", "bigger"])
#: Needles: in a blob's string, in a placeholder's fixed text (`_blobs.placeholder`), or nowhere.
BLOB_NEEDLES = ["week 53", "week", "unavailable", "damaged", "not UTF-8", "sha256:", "é東", "zzz"]


@given(
    texts=st.lists(
        st.tuples(st.text(st.sampled_from(list("abc 5é")), max_size=8), st.sampled_from(BLOB_NEEDLES)),
        min_size=1,
        max_size=4,
    ),
    fates=st.lists(BLOB_FATES, min_size=1, max_size=4),
    needle=st.sampled_from(BLOB_NEEDLES),
    inline=st.lists(st.sampled_from(BLOB_NEEDLES), max_size=3),
)
@settings(max_examples=examples(150))
def test_search_finds_what_naive_search_finds_in_blob_files_and_their_placeholders(
    texts: list[tuple[str, str]], fates: list[str], needle: str, inline: list[str]
) -> None:
    """A needle in a blob file only, or in the placeholder of a missing, damaged or resized one, is found as a full read finds it."""
    with tempfile.TemporaryDirectory() as root:
        with SessionStore(root, durability="none", blob_threshold=64) as store:
            store.append("plain", UserMessage(content="nothing large here"))
            for around, piece in texts:  # each string over the threshold: a blob file per distinct text
                store.append("large", UserMessage(content=around + piece + "x" * 65))
            for piece in inline:  # short strings in the log itself, beside lines naming blobs
                store.append("large", UserMessage(content=piece))
        blobs = sorted((Path(root) / "large" / "blobs").iterdir())
        for path, fate in zip(blobs, fates, strict=False):
            data = path.read_bytes()
            if fate == "missing":
                path.unlink()
            elif fate == "flipped":
                path.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
            elif fate == "short":
                path.write_bytes(data[:-1])
            elif fate == "not-utf8":
                path.write_bytes(b"\xff" + data[1:])
            elif fate == "bigger":
                path.write_bytes(data + b"week 53")
        with SessionStore(root, on_problem=lambda problem: None) as store:
            assert list(search(store, needle)) == list(naive_search(store, needle))


@given(
    data=st.data(),
    encode=ENCODERS,
    value=st.dictionaries(TEXT, VALUES, min_size=1, max_size=3),
    responses=st.booleans(),
)
@settings(max_examples=examples(150))
def test_search_finds_a_needle_spanning_the_json_text_of_stored_arguments(
    data: st.DataObject, encode: Encoder, value: Any, responses: bool
) -> None:
    """A needle cut from arguments stored as JSON text (across quotes, brackets, leading whitespace) gives `naive_search`'s hits."""
    arguments = encode(value)
    start = data.draw(st.integers(0, len(arguments) - 1))
    needle = arguments[start : data.draw(st.integers(start + 1, min(len(arguments), start + 8)))]
    if responses:
        message: Any = {"type": "function_call", "role": "assistant", "call_id": "c", "name": "f"}
        message["arguments"] = arguments
    else:
        call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": arguments}}
        message = {"role": "assistant", "content": "function", "tool_calls": [call]}
    with tempfile.TemporaryDirectory() as root, SessionStore(root, durability="none") as store:
        store.create_session("s", metadata={"dialect": "openai-responses" if responses else "neutral"})
        store.append("s", message)
        assert list(search(store, needle)) == list(naive_search(store, needle))
