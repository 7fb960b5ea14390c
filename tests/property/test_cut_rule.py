"""The cut rule (spec §9.3): a writer never cuts away a record a tolerant reader gives back.

Any log of valid records, converted by a text tool on any subset of its lines (``\\r\\n``
ends, a byte-order mark) and followed by any damaged tail: the first append keeps every
record a reader read before it, the cut sidecar holds no record at all, and the bytes
taken out of the log are only those a text conversion added.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from jsonl_store import SessionStore, UserMessage
from jsonl_store._format import codec as _codec
from jsonl_store._format import lines as _lines
from jsonl_store._format.names import LOG_NAME

SID = "s"

tails = st.one_of(
    st.just(b""),
    st.binary(max_size=80),
    st.binary(max_size=40).map(lambda junk: junk.replace(b"\n", b"") + b"\r\n"),
    st.integers(1, 200).map(lambda n: b"\x00" * n),
)


@st.composite
def converted_logs(draw: st.DrawFn) -> tuple[bytes, int, bytes]:
    """(a log's bytes after conversion and damage, its record count, the bytes as written)."""
    count = draw(st.integers(1, 8))
    with tempfile.TemporaryDirectory() as scratch:
        store = SessionStore(scratch, durability="none")
        for n in range(count):
            store.append(SID, UserMessage(id=f"m{n}", content=draw(st.text(max_size=20))))
        written = Path(scratch, SID, LOG_NAME).read_bytes()
    lines = written.split(b"\n")[:-1]
    crlf = draw(st.lists(st.booleans(), min_size=count, max_size=count))
    converted = b"".join(line + (b"\r\n" if c else b"\n") for line, c in zip(lines, crlf, strict=True))
    if draw(st.booleans()):
        converted = _lines.BOM + converted
    return converted + draw(tails), count, written


@settings(max_examples=examples(150))
@given(converted_logs())
def test_an_append_after_any_conversion_and_tail_keeps_every_record(case: tuple[bytes, int, bytes]) -> None:
    """Records read before the first append are all read after it; the sidecar holds no record."""
    data, count, written = case
    with tempfile.TemporaryDirectory() as root:
        directory = Path(root, SID)
        directory.mkdir()
        (directory / LOG_NAME).write_bytes(data)
        store = SessionStore(root, on_problem=lambda problem: None)
        before = [r.id for r in store.records(SID)]
        assert len(before) == count  # the tolerant reader reads every record
        store.append(SID, UserMessage(id="new", content="after"))
        after = [r.message.id for r in store.records(SID)]  # type: ignore[union-attr]
        assert after == [f"m{n}" for n in range(count)] + ["new"]
        log = (directory / LOG_NAME).read_bytes()
        # A conversion the writer sees (first or last line) is restored before it writes;
        # one only in the middle is left as it is (readers read it; repair restores it).
        assert log.removeprefix(_lines.BOM).replace(b"\r\n", b"\n").startswith(written)
        first, last = data.split(b"\n")[0], written.split(b"\n")[-2]
        if first.endswith(b"\r") or first.startswith(_lines.BOM) or last + b"\r\n" in data:
            assert log.startswith(written)  # exactly the bytes as written, then the new record
        for name in os.listdir(directory):
            if ".cut-" in name:
                cut = (directory / name).read_bytes()
                assert not any(_codec.is_sealed(raw.rstrip(b"\r")) for raw in cut.split(b"\n"))
