"""A writer restoring a converted log (spec §9.3): what it keeps, what it cleans, what it refuses."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from jsonl_store import Problem, SessionStore, UnrecognizedRecords, UserMessage
from jsonl_store._format.names import LOG_NAME
from jsonl_store.testing.damage import crlf, damage_file

SID = "s"


def _log(root: Path, count: int = 4) -> Path:
    store = SessionStore(root)
    for n in range(count):
        store.append(SID, UserMessage(id=f"m{n}", content=f"message {n}"))
    store.close()
    return root / SID / LOG_NAME


@pytest.mark.parametrize(
    "ending", [b"\r\n", b"\r\r\n", b" \n", b"\t\r\n"], ids=["crlf", "crlf-twice", "blank", "tab-crlf"]
)
def test_every_line_end_a_text_tool_leaves_is_read_and_restored(root: Path, ending: bytes) -> None:
    """\\r\\n, \\r\\r\\n and trailing blanks: all records read, the append restores the bytes first."""
    log = _log(root)
    written = log.read_bytes()
    log.write_bytes(written.replace(b"\n", ending))
    reported: list[Problem] = []
    store = SessionStore(root, on_problem=reported.append)
    assert [r.message.id for r in store.records(SID)] == ["m0", "m1", "m2", "m3"]  # type: ignore[union-attr]
    assert store.append(SID, UserMessage(id="m4", content="after")) == 5
    assert log.read_bytes().startswith(written)
    assert not [name for name in os.listdir(log.parent) if ".cut-" in name]


def test_a_restore_removes_the_copy_a_crashed_restore_left(root: Path) -> None:
    """A leftover messages.jsonl.<token>.tmp (a restore killed before its rename) is removed by the next one."""
    log = _log(root)
    damage_file(log, crlf)
    leftover = log.parent / f"{LOG_NAME}.0123456789ab.tmp"
    leftover.write_bytes(log.read_bytes()[:100])
    SessionStore(root, on_problem=lambda problem: None).append(SID, UserMessage(content="after"))
    assert not leftover.exists()


def test_a_tail_of_reformatted_records_is_never_cut(root: Path) -> None:
    """Whole lines naming "crc" that fail their checksums: the append raises and changes no byte."""
    log = _log(root)
    lines = log.read_bytes().split(b"\n")[:-1]
    reformatted = b"\n".join(lines[:2] + [line.replace(b'":', b'": ') for line in lines[2:]]) + b"\n"
    log.write_bytes(reformatted)
    store = SessionStore(root, on_problem=lambda problem: None)
    with pytest.raises(UnrecognizedRecords) as info:
        store.append(SID, UserMessage(content="after"))
    assert isinstance(info.value, ValueError) and info.value.path == str(log)
    assert log.read_bytes() == reformatted
    assert not [name for name in os.listdir(log.parent) if ".cut-" in name]
    assert [p.kind for p in store.verify(SID)] == ["unrecognized-records"]
    assert [p.kind for p in store.repair(SID)] == ["unrecognized-records"]
    assert log.read_bytes() == reformatted


def test_one_bit_flipped_last_record_is_still_cut_as_a_torn_tail(root: Path) -> None:
    """The margin does not stop ordinary crash recovery: one damaged last line is cut as before."""
    log = _log(root)
    data = bytearray(log.read_bytes())
    data[-30] ^= 1
    log.write_bytes(bytes(data))
    store = SessionStore(root, on_problem=lambda problem: None)
    assert store.append(SID, UserMessage(content="after")) == 4
    assert [name for name in os.listdir(log.parent) if ".cut-" in name]
