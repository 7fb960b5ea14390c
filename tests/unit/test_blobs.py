"""Large strings in blob files (spec §5.1, §8 rule 11, §9.14): threshold edges, dedup, look-alikes, the cap, damage."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from helpers import as_class, gitignored, log_path, plain

from jsonl_store import (
    CompactedMessage,
    CorruptSession,
    InvalidArgument,
    InvalidMessage,
    Message,
    Problem,
    RecordTooLarge,
    SessionStore,
    ToolMessage,
    UserMessage,
)

THRESHOLD = 100


def _text(message: Message) -> Any:
    """The content of a message read back as its class."""
    return as_class(message).content


def _store(root: Path, **options: Any) -> SessionStore:
    return SessionStore(root, blob_threshold=THRESHOLD, durability="none", **options)


def _blobs(root: Path, sid: str = "s") -> list[str]:
    folder = root / sid / "blobs"
    return sorted(os.listdir(folder)) if folder.exists() else []


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _stored_message(root: Path, sid: str = "s", line: int = 0) -> Any:
    return json.loads(log_path(root, sid).read_bytes().splitlines()[line])["message"]


# -- the threshold --------------------------------------------------------------------------


def test_a_string_of_exactly_the_threshold_stays_in_the_record(tmp_path: Path) -> None:
    """A string of THRESHOLD UTF-8 bytes is written inline and no blob directory is made."""
    store = _store(tmp_path)
    store.append("s", UserMessage(content="x" * THRESHOLD))
    assert _stored_message(tmp_path)["content"] == "x" * THRESHOLD
    assert not (tmp_path / "s" / "blobs").exists()


def test_one_byte_over_the_threshold_goes_to_a_blob_named_by_its_sha256(tmp_path: Path) -> None:
    """A string of THRESHOLD + 1 bytes becomes a marker; the blob file holds exactly its UTF-8 bytes."""
    store = _store(tmp_path)
    text = "y" * (THRESHOLD + 1)
    store.append("s", UserMessage(content=text))
    digest = _digest(text)
    assert _stored_message(tmp_path)["content"] == {"$blob": f"sha256:{digest}", "size": THRESHOLD + 1}
    assert (tmp_path / "s" / "blobs" / digest).read_bytes() == text.encode()
    back = as_class(store.load("s").context[0])
    assert back == UserMessage(content=text, id=back.id)


def test_the_threshold_counts_utf8_bytes_not_characters(tmp_path: Path) -> None:
    """50 two-byte characters (100 bytes) stay inline; 51 (102 bytes) are spilled."""
    store = _store(tmp_path)
    store.append("s", {"role": "user", "content": "é" * 50})
    store.append("s", {"role": "user", "content": "é" * 51})
    assert _stored_message(tmp_path, line=0)["content"] == "é" * 50
    assert _stored_message(tmp_path, line=1)["content"]["size"] == 102
    assert [plain(r.message)["content"] for r in store.records("s")] == ["é" * 50, "é" * 51]


def test_strings_anywhere_in_a_message_are_spilled_but_keys_never(tmp_path: Path) -> None:
    """A long string deep in lists and dicts is spilled; a long key stays a key; small neighbours stay."""
    store = _store(tmp_path)
    key, deep = "k" * 200, "d" * 300
    message = {"role": "tool", "content": [{"type": "text", "text": deep}, "small"], key: [[{"x": deep}]]}
    store.append("s", message)
    stored = _stored_message(tmp_path)
    assert key in stored and stored[key][0][0]["x"]["size"] == 300
    assert stored["content"][1] == "small" and stored["content"][0]["text"]["size"] == 300
    assert _blobs(tmp_path) == [_digest(deep)]  # the same string twice: one file
    assert next(iter(store.records("s"))).message == message


def test_a_message_persist_false_writes_no_blob(tmp_path: Path) -> None:
    """A long message that is not persisted leaves no blob behind."""
    store = _store(tmp_path)
    assert store.append("s", UserMessage(content="z" * 500, persist=False)) == 0
    assert _blobs(tmp_path) == []


# -- identical payloads ---------------------------------------------------------------------


def test_identical_payloads_are_stored_once_across_records_and_batches(tmp_path: Path) -> None:
    """The same tool output in three records (two in one batch) is one blob file."""
    store = _store(tmp_path)
    output = "line\n" * 100
    store.append("s", ToolMessage(tool_call_id="c1", content=output))
    store.append_many("s", [ToolMessage(tool_call_id="c2", content=output), UserMessage(content=output)])
    assert _blobs(tmp_path) == [_digest(output)]
    assert [_text(r.message) for r in store.records("s")] == [output] * 3


def test_a_damaged_blob_is_replaced_when_the_same_payload_is_written_again(tmp_path: Path) -> None:
    """Writing a payload whose blob file was damaged puts the right bytes back (the rename is atomic)."""
    store = _store(tmp_path)
    text = "p" * 400
    store.append("s", UserMessage(content=text))
    blob = tmp_path / "s" / "blobs" / _digest(text)
    blob.write_bytes(b"p" * 399 + b"q")
    store.append("s", UserMessage(content=text))
    assert blob.read_bytes() == text.encode()
    assert [_text(r.message) for r in store.records("s")] == [text, text]


# -- markers and their look-alikes ----------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [{"$blob": "sha256:" + "0" * 64, "size": 3}, {"$blob": 1}, [{"a": {"$blob": None, "other": 2}}]],
    ids=["exact-marker", "partial", "nested"],
)
def test_a_dict_with_the_key_blob_is_refused_before_anything_is_written(tmp_path: Path, value: Any) -> None:
    """An object keyed "$blob" anywhere in a message raises InvalidMessage; the store stays empty."""
    store = _store(tmp_path)
    with pytest.raises(InvalidMessage, match=r"\$blob"):
        store.append("s", {"role": "user", "content": "hi", "extra": value})
    assert not (tmp_path / "s").exists()


def test_strings_that_mention_the_marker_key_are_ordinary_values(tmp_path: Path) -> None:
    """The string "$blob", a key "x$blob" and a quoted marker inside a string round-trip unchanged."""
    store = _store(tmp_path)
    message = {
        "role": "user",
        "content": '{"$blob":"sha256:' + "0" * 64 + '","size":3}',
        "x$blob": "$blob",
        "list": ["$blob", {"$blobs": 1}],
    }
    store.append("s", message)
    assert next(iter(store.records("s"))).message == message
    assert store.verify("s") == []


# -- the cap --------------------------------------------------------------------------------


def test_a_record_over_the_cap_raises_record_too_large_and_writes_nothing(tmp_path: Path) -> None:
    """Many strings each under the threshold make a record over max_record_bytes: refused, no file made."""
    store = _store(tmp_path, max_record_bytes=2000)
    with pytest.raises(RecordTooLarge) as raised:
        store.append("s", {"role": "user", "content": ["w" * 90] * 30})
    assert isinstance(raised.value, InvalidMessage) and isinstance(raised.value, ValueError)
    assert raised.value.limit == 2000 and raised.value.size > 2000
    assert not (tmp_path / "s").exists()


def test_a_batch_with_one_record_over_the_cap_writes_no_record_and_no_blob(tmp_path: Path) -> None:
    """append_many is all or nothing for the cap too: the blob of its first message is not written."""
    store = _store(tmp_path, max_record_bytes=2000)
    store.append("s", UserMessage(content="first"))
    with pytest.raises(RecordTooLarge):
        store.append_many(
            "s", [UserMessage(content="b" * 5000), {"role": "user", "content": ["w" * 90] * 30}]
        )
    assert _blobs(tmp_path) == [] and [r.sequence for r in store.records("s")] == [1]


def test_a_message_larger_than_the_cap_is_accepted_once_its_strings_are_spilled(tmp_path: Path) -> None:
    """The cap is on the record after spilling: a 10 kB string fits a 2 kB record as a marker."""
    store = _store(tmp_path, max_record_bytes=2000)
    text = "t" * 10_000
    store.append("s", UserMessage(content=text))
    assert len(log_path(tmp_path, "s").read_bytes()) < 2000
    assert _text(store.tail("s", 1)[0].message) == text


@pytest.mark.parametrize("name", ["blob_threshold", "max_record_bytes"])
@pytest.mark.parametrize("value", [0, -1, 1.5, "64", True, None])
def test_size_options_must_be_positive_ints(tmp_path: Path, name: str, value: object) -> None:
    """A size option that is not a positive int raises InvalidArgument at construction."""
    with pytest.raises(InvalidArgument, match=name):
        SessionStore(tmp_path, **{name: value})  # type: ignore[arg-type]


def test_defaults_are_64_kib_and_16_mib(tmp_path: Path) -> None:
    """The documented defaults: blobs over 64 KiB, records of at most 16 MiB."""
    store = SessionStore(tmp_path)
    assert (store.blob_threshold, store.max_record_bytes) == (64 * 1024, 16 * 1024 * 1024)


# -- missing and damaged blobs on reading ---------------------------------------------------


def _session_with_blob(root: Path) -> tuple[SessionStore, Path, list[Problem], str]:
    seen: list[Problem] = []
    store = _store(root, on_problem=seen.append)
    text = "m" * 300
    store.append("s", UserMessage(content="before"))
    store.append("s", UserMessage(content=text))
    return store, root / "s" / "blobs" / _digest(text), seen, text


@pytest.mark.parametrize("damage", ["missing", "flipped", "truncated", "longer"])
def test_an_unreadable_blob_reads_as_a_placeholder_and_a_bad_blob_problem(
    tmp_path: Path, damage: str
) -> None:
    """load, records and tail give the record back with placeholder text and report bad-blob; nothing raises."""
    store, blob, seen, text = _session_with_blob(tmp_path)
    data = blob.read_bytes()
    if damage == "missing":
        blob.unlink()
    else:
        blob.write_bytes({"flipped": b"n" + data[1:], "truncated": data[:-1], "longer": data + b"m"}[damage])
    view = store.load("s")
    content = _text(view.context[1])
    assert content.startswith(f"[jsonl_store: blob sha256:{blob.name} unavailable: ") and text not in content
    assert [p.kind for p in view.problems] == ["bad-blob"] and view.problems[0].path == str(blob)
    read = [_text(r.message) for r in store.records("s")]  # all of them: the second reports
    assert read[0] == "before" and read[1] == content
    assert _text(store.tail("s", 1)[0].message) == content
    assert {p.kind for p in seen} == {"bad-blob"} and len(seen) == 3  # load, records, tail


def test_strict_load_raises_corrupt_session_for_a_missing_blob(tmp_path: Path) -> None:
    """load(strict=True) raises CorruptSession naming the blob."""
    store, blob, _, _ = _session_with_blob(tmp_path)
    blob.unlink()
    with pytest.raises(CorruptSession) as raised:
        store.load("s", strict=True)
    assert [p.kind for p in raised.value.problems] == ["bad-blob"] and blob.name in str(raised.value)


def test_a_malformed_marker_written_by_hand_reads_as_a_placeholder(tmp_path: Path) -> None:
    """A marker with a bad digest (made by a foreign writer) is a bad-blob, not a crash."""
    from jsonl_store._format import codec as _codec

    store = _store(tmp_path)
    store.append("s", UserMessage(content="first"))
    line = json.loads(log_path(tmp_path, "s").read_bytes())
    line.pop("crc")
    line["sequence"] = 2
    line["message"]["content"] = {"$blob": "sha256:XYZ", "size": 3}
    with log_path(tmp_path, "s").open("ab") as out:
        out.write(_codec.seal(json.dumps(line, separators=(",", ":")).encode()))
    view = store.load("s")
    assert _text(view.context[1]) == "[jsonl_store: blob sha256:? unavailable: malformed marker]"
    assert [p.kind for p in view.problems] == ["bad-blob"]


def test_a_symlinked_blobs_directory_is_never_followed(tmp_path: Path) -> None:
    """blobs/ as a symlink: readers give placeholders, verify reports unsafe-path and reads nothing else."""
    store, _, _, text = _session_with_blob(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    (tmp_path / "s" / "blobs").rename(elsewhere)
    (tmp_path / "s" / "blobs").symlink_to(elsewhere)
    assert text not in _text(store.load("s").context[1])
    assert [p.kind for p in store.verify("s")] == ["unsafe-path"]


# -- snapshots and checkpoints ---------------------------------------------------------------


def test_checkpoint_spills_and_load_restores(tmp_path: Path) -> None:
    """A runner's checkpoint of a long tool output stores a blob; the next checkpoint appends nothing."""
    store = _store(tmp_path)
    messages = [
        UserMessage(id="u", content="run it"),
        ToolMessage(id="t", tool_call_id="c", content="o" * 999),
    ]
    assert store.checkpoint("s", messages) == [1, 2]
    assert store.checkpoint("s", messages) == []
    assert _blobs(tmp_path) == [_digest("o" * 999)]
    assert [_text(m) for m in store.load("s").context] == ["run it", "o" * 999]


def test_the_tail_after_a_snapshot_is_restored(tmp_path: Path) -> None:
    """Records after a snapshot's boundary come back whole; the compacted message itself stays inline."""
    store = _store(tmp_path)
    first = store.append("s", UserMessage(content="a" * 500))
    store.snapshot(
        "s", CompactedMessage(content="c" * 500), compacted_through_sequence=first, expected_version=0
    )
    store.append("s", UserMessage(content="b" * 500))
    assert [_text(m) for m in store.load("s").messages] == ["c" * 500, "b" * 500]
    assert _blobs(tmp_path) == sorted([_digest("a" * 500), _digest("b" * 500)])


# -- verify, repair, delete -------------------------------------------------------------------


def test_verify_names_orphan_damaged_and_missing_blobs_with_repairs_actions(tmp_path: Path) -> None:
    """An orphan is deleted, a damaged blob moved aside, a missing one reported; intact ones untouched."""
    store = _store(tmp_path)
    kept, damaged, missing = "k" * 300, "d" * 300, "m" * 300
    for text in (kept, damaged, missing):
        store.append("s", UserMessage(content=text))
    folder = tmp_path / "s" / "blobs"
    orphan = folder / ("0" * 64)
    orphan.write_bytes(b"left by a crash")
    (folder / _digest(damaged)).write_bytes(b"x" * 300)
    (folder / _digest(missing)).unlink()
    found = {(Path(p.path).name, p.kind, p.action) for p in store.verify("s")}
    assert found == {
        (orphan.name, "orphan-blob", "delete"),
        (_digest(damaged), "bad-blob", "move aside"),
        (
            _digest(missing),
            "bad-blob",
            "none: put the blob file back (from git or a copy); readers show a placeholder",
        ),
    }
    assert {(Path(p.path).name, p.kind) for p in store.repair("s")} == {(n, k) for n, k, _ in found}
    assert _blobs(tmp_path) == [_digest(kept)]
    assert (tmp_path / "s" / f"blobs-{_digest(damaged)}.damaged").read_bytes() == b"x" * 300
    after = [(Path(p.path).name, p.kind) for p in store.verify("s")]
    assert sorted(after) == sorted([(_digest(damaged), "bad-blob"), (_digest(missing), "bad-blob")])
    assert [(Path(p.path).name, p.kind) for p in store.repair("s")] == after  # idempotent
    assert _text(store.load("s").context[0]) == kept


def test_a_clean_session_with_blobs_verifies_clean(tmp_path: Path) -> None:
    """Blobs that every record can read are no problem at all."""
    store = _store(tmp_path)
    store.append_many("s", [UserMessage(content="q" * 500), ToolMessage(tool_call_id="c", content="r" * 500)])
    assert store.verify("s") == [] and store.repair("s") == []


def test_blobs_of_a_torn_batch_are_orphans(tmp_path: Path) -> None:
    """A batch cut short by a crash is not part of the session: its blobs are orphans, repair deletes them."""
    store = _store(tmp_path)
    store.append("s", UserMessage(content="kept"))
    store.append_many("s", [UserMessage(content="g" * 500), UserMessage(content="h" * 500)])
    data = log_path(tmp_path, "s").read_bytes()
    log_path(tmp_path, "s").write_bytes(data[: data.rindex(b"\n", 0, len(data) - 1) + 1])
    kinds = sorted(p.kind for p in store.verify("s"))
    assert kinds == ["orphan-blob", "orphan-blob", "torn-tail"]
    store.repair("s")
    assert _blobs(tmp_path) == [] and store.verify("s") == []


def test_delete_session_removes_the_blobs(tmp_path: Path) -> None:
    """delete_session removes blobs/ and its files; the session is gone and can be made anew."""
    store = _store(tmp_path)
    store.append("s", UserMessage(content="v" * 500))
    assert store.delete_session("s") is True
    assert not (tmp_path / "s").exists()  # the whole directory, renamed away then removed
    assert store.append("s", UserMessage(content="v" * 500)) == 1 and len(_blobs(tmp_path)) == 1


def test_delete_session_refuses_a_symlink_inside_blobs_and_deletes_nothing(tmp_path: Path) -> None:
    """A symlink in blobs/ is not the store's: delete raises UnsafePath before removing any file."""
    from jsonl_store import UnsafePath

    store = _store(tmp_path)
    store.append("s", UserMessage(content="v" * 500))
    (tmp_path / "s" / "blobs" / ("1" * 64)).symlink_to(tmp_path / "nowhere")
    with pytest.raises(UnsafePath):
        store.delete_session("s")
    assert log_path(tmp_path, "s").exists()


def test_record_too_large_pickles_with_its_size_and_limit(tmp_path: Path) -> None:
    """The error keeps .size and .limit across a pickle round trip (multiprocessing)."""
    import pickle

    store = _store(tmp_path, max_record_bytes=500)
    with pytest.raises(RecordTooLarge) as raised:
        store.append("s", {"role": "user", "content": ["w" * 90] * 10})
    back = pickle.loads(pickle.dumps(raised.value))
    assert (type(back), back.size, back.limit, str(back)) == (
        RecordTooLarge,
        raised.value.size,
        500,
        str(raised.value),
    )


def test_the_async_store_takes_the_size_options(tmp_path: Path) -> None:
    """AsyncSessionStore(blob_threshold=..., max_record_bytes=...) configures the store it wraps."""
    import asyncio

    from jsonl_store.aio import AsyncSessionStore

    async def run() -> str:
        store = AsyncSessionStore(tmp_path, blob_threshold=THRESHOLD, max_record_bytes=5000)
        await store.append("s", UserMessage(content="a" * 300))
        return str(_text((await store.load("s")).context[0]))

    assert asyncio.run(run()) == "a" * 300
    assert _blobs(tmp_path) == [_digest("a" * 300)]


def test_a_fork_reads_its_sources_blobs_and_keeps_its_own(tmp_path: Path) -> None:
    """A fork's history restores the source's strings from the source's blobs/; its own go to its own."""
    store = _store(tmp_path)
    store.append("s", UserMessage(content="p" * 300))
    store.append("s", UserMessage(content="after the branch"))
    child = store.fork("s", 1, "child")
    store.append(child, UserMessage(content="c" * 300))
    assert [_text(m) for m in store.load(child).context] == ["p" * 300, "c" * 300]
    assert _blobs(tmp_path, "child") == [_digest("c" * 300)]
    assert store.verify(child) == [] and store.verify("s") == []


def test_git_keeps_blob_files_and_ignores_their_temporaries_and_damaged_copies(tmp_path: Path) -> None:
    """The root's .gitignore ignores blobs-<hex>.<token>.tmp and blobs-<hex>.damaged, never blobs/<hex>."""
    store = _store(tmp_path)
    store.append("s", UserMessage(content="g" * 300))
    patterns = (tmp_path / ".gitignore").read_text().splitlines()
    digest = _digest("g" * 300)
    assert not gitignored(patterns, f"s/blobs/{digest}")
    assert gitignored(patterns, f"s/blobs-{digest}.0123456789ab.tmp")
    assert gitignored(patterns, f"s/blobs-{digest}.damaged")


def test_records_containing_and_search_find_text_that_is_in_a_blob(tmp_path: Path) -> None:
    """records(containing=) and search() look inside blob files: the needle is only in one there."""
    from jsonl_store.search import search

    store = _store(tmp_path)
    output = "collected 12 items\n" + "." * 200 + "\nneedle_in_a_blob FAILED"
    store.append("s", UserMessage(content="run the tests"))
    store.append("s", ToolMessage(tool_call_id="c1", content=output))
    store.append("s", UserMessage(content="and again"))
    assert b"needle_in_a_blob" not in log_path(tmp_path, "s").read_bytes()
    found = list(store.records("s", containing=b"needle_in_a_blob"))
    assert [r.sequence for r in found] == [2] and _text(found[0].message) == output
    assert [(h.session_id, h.sequence) for h in search(store, "needle_in_a_blob")] == [("s", 2)]
    assert [r.sequence for r in store.records("s", containing=b"again")] == [3]
