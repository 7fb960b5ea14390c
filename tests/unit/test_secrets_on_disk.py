"""No secret reaches a file: every write path redacts, and ``redact`` rewrites what is already stored.

Each test greps the bytes of every file under the store root, leftovers included.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from fake_secrets import body
from helpers import as_class

from jsonl_store import (
    AssistantMessage,
    CompactedMessage,
    ModelUsage,
    SessionStore,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from jsonl_store.testing.damage import add_bom, crlf

#: The random part of the fake token: what must not be in any file.
BODY = body(36)
TOKEN = "ghp_" + BODY
MARK = b"[REDACTED:github-token]"


def files_holding(root: Path, needle: bytes) -> list[str]:
    """Every file below ``root`` (hidden ones and leftovers too) whose bytes contain ``needle``."""
    found = []
    for directory, _, names in os.walk(root):
        for name in names:
            path = os.path.join(directory, name)
            with open(path, "rb") as file:
                if needle in file.read():
                    found.append(os.path.relpath(path, root))
    return sorted(found)


def _append(store: SessionStore) -> None:
    store.append(
        "s",
        UserMessage(content=f"my token is {TOKEN}"),
        title=f"about {TOKEN}",
        agent_name=f"agent {TOKEN}",
        metadata={"k": TOKEN},
        tags={"t": [TOKEN]},
        request_id=f"req {TOKEN}",
    )


def _append_many(store: SessionStore) -> None:
    call = ToolCall(id="c1", name="env", arguments={"header": f"Authorization: Bearer {TOKEN}"})
    store.append_many(
        "s",
        [
            AssistantMessage(content="reading", tool_calls=[call]),
            ToolMessage(tool_call_id="c1", name="env", content=f"GITHUB_TOKEN={TOKEN}\n"),
            {"role": "user", "content": [{"type": "text", "text": TOKEN}]},
        ],
        usage=[ModelUsage(input_tokens=1), None, None],
    )


def _checkpoint(store: SessionStore) -> None:
    store.checkpoint("s", [UserMessage(content="first", id="m1")])
    # A rewrite (a compaction of the caller's own) goes through a snapshot.
    store.checkpoint(
        "s", [CompactedMessage(content=f"summary with {TOKEN}", id="c"), UserMessage(content=TOKEN, id="m2")]
    )


def _snapshot(store: SessionStore) -> None:
    sequence = store.append("s", UserMessage(content="hello"))
    store.snapshot("s", CompactedMessage(content=f"the user gave {TOKEN}"), sequence, 0)


def _update_session(store: SessionStore) -> None:
    store.append("s", UserMessage(content="hello"))
    store.update_session("s", title=f"renamed {TOKEN}", metadata={TOKEN: TOKEN}, agent_name=TOKEN)


def _record_usage(store: SessionStore) -> None:
    store.record_usage(
        "s", {"input_tokens": 3, "model": TOKEN, "request_id": f"r {TOKEN}", "note": {"x": TOKEN}}
    )


def _create_session(store: SessionStore) -> None:
    store.create_session("s", title=TOKEN, agent_name=TOKEN, metadata={"a": TOKEN})


WRITES: dict[str, Callable[[SessionStore], None]] = {
    "append": _append,
    "append_many": _append_many,
    "checkpoint": _checkpoint,
    "snapshot": _snapshot,
    "update_session": _update_session,
    "record_usage": _record_usage,
    "create_session": _create_session,
}


@pytest.mark.parametrize("write", list(WRITES.values()), ids=list(WRITES))
def test_no_write_path_puts_a_secret_in_a_file(tmp_path: Path, write: Callable[[SessionStore], None]) -> None:
    """Whatever the method, the secret is in no file under the root and its marker is."""
    with SessionStore(tmp_path) as store:
        write(store)
    assert files_holding(tmp_path, BODY.encode()) == []
    assert files_holding(tmp_path, MARK) != []


def test_redaction_off_stores_the_text_unchanged(tmp_path: Path) -> None:
    """``redact=False`` stores exactly what it is given (the test below needs that, and so may a user)."""
    with SessionStore(tmp_path, redact=False) as store:
        _append(store)
        (stored,) = store.load("s").messages
        assert as_class(stored) == UserMessage(content=f"my token is {TOKEN}", id=as_class(stored).id)
    assert files_holding(tmp_path, BODY.encode()) == ["s/messages.jsonl", "s/meta.json"]


def test_what_append_returns_and_load_reads_is_the_redacted_message(tmp_path: Path) -> None:
    """The stored record (and the snapshot `snapshot` returns) hold the marker, not the secret."""
    with SessionStore(tmp_path) as store:
        sequence = store.append("s", {"role": "user", "content": TOKEN})
        made = store.snapshot("s", CompactedMessage(content=TOKEN), sequence, 0)
        assert as_class(made.compacted_message).content == MARK.decode()
        assert [r.message for r in store.records("s")] == [{"role": "user", "content": MARK.decode()}]


def _stored_with_secrets(root: Path) -> None:
    """A session written without redaction: secrets in the log, a snapshot, meta, usage, a cut tail, a leftover."""
    with SessionStore(root, redact=False) as store:
        store.append("s", UserMessage(content=f"token {TOKEN}"), title=f"title {TOKEN}")
        second = store.append("s", AssistantMessage(content=f"stored {TOKEN}"))
        store.snapshot("s", CompactedMessage(content=f"summary {TOKEN}"), second, 0)
        store.append("s", UserMessage(content="after the snapshot"))
        store.record_usage("s", {"input_tokens": 1, "model": TOKEN})
        store.update_session("s", metadata={"m": TOKEN})
    directory = root / "s"
    # A torn, damaged tail holding the secret: the next append cuts it into a sidecar.
    with open(directory / "messages.jsonl", "ab") as log:
        log.write(b'{"sequence":4,"junk":"' + TOKEN.encode() + b'"')
    with SessionStore(root, redact=False) as store:
        store.append("s", UserMessage(content="the last one"))
    # What an atomic write that died leaves behind.
    (directory / f"meta.json.{'0' * 12}.tmp").write_bytes(TOKEN.encode())
    assert len(files_holding(root, BODY.encode())) == 6


def _command(root: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "jsonl_store.cli", "--root", str(root), *argv],
        capture_output=True,
        text=True,
        check=False,
    )


def test_redact_leaves_no_copy_of_a_secret_in_any_file(tmp_path: Path) -> None:
    """After ``jsonl-store redact``, no file under the root holds the secret; the session verifies clean."""
    _stored_with_secrets(tmp_path)
    done = _command(tmp_path, "redact", "s")
    assert done.returncode == 1, done.stderr  # something was redacted
    assert BODY not in done.stdout + done.stderr
    assert "[REDACTED:github-token]" in done.stdout
    assert files_holding(tmp_path, BODY.encode()) == []
    assert not [name for name in os.listdir(tmp_path / "s") if name.endswith(".tmp")]
    with SessionStore(tmp_path) as store:
        assert store.verify("s") == []
        view = store.load("s")
        assert view.snapshot is not None and view.snapshot.version == 1  # still trusted: new offsets
        assert [m.content for m in view.messages] == [  # type: ignore[union-attr]
            "summary [REDACTED:github-token]",
            "after the snapshot",
            "the last one",
        ]
        assert [r.sequence for r in store.records("s")] == [1, 2, 3, 4]
        assert store.get_session("s").title == "title [REDACTED:github-token]"  # type: ignore[union-attr]
    again = _command(tmp_path, "redact", "s")
    assert again.returncode == 0, again.stdout
    assert _command(tmp_path, "scan").returncode == 0


def test_a_writer_open_before_the_redact_appends_to_the_new_log(tmp_path: Path) -> None:
    """A store holding the old log open finds it replaced and appends to the rewritten one."""
    _stored_with_secrets(tmp_path)
    with SessionStore(tmp_path) as writer:
        writer.append("s", UserMessage(content="before"))  # its descriptor is on the old file
        SessionStore(tmp_path).redact_session("s")
        writer.append("s", UserMessage(content="after"))
        assert [r.message.content for r in writer.records("s")][-2:] == ["before", "after"]  # type: ignore[union-attr]
        assert writer.verify("s") == []
    assert files_holding(tmp_path, BODY.encode()) == []


def test_scan_reports_where_and_what_but_never_the_secret(tmp_path: Path) -> None:
    """``jsonl-store scan`` names session, file, sequence and kind with a masked preview; exit 1."""
    _stored_with_secrets(tmp_path)
    done = _command(tmp_path, "scan", "s")
    assert done.returncode == 1, done.stderr
    assert BODY not in done.stdout
    assert (
        "s: messages.jsonl:2 sequence 2 $.message.content: [REDACTED:github-token] ghp_…(40 chars)"
        in done.stdout
    )
    assert "usage.jsonl" in done.stdout and "meta.json" in done.stdout and ".cut-" in done.stdout
    listed = _command(tmp_path, "scan", "--json")
    assert listed.returncode == 1 and '"kind": "github-token"' in listed.stdout and BODY not in listed.stdout


def test_scan_of_a_clean_store_and_of_a_missing_session(tmp_path: Path) -> None:
    """A clean store scans with exit 0; an unknown session is an error (exit 2), not 'clean'."""
    with SessionStore(tmp_path) as store:
        store.append("s", UserMessage(content=f"redacted on the way in: {TOKEN}"))
    assert _command(tmp_path, "scan").returncode == 0
    missing = _command(tmp_path, "scan", "nope")
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert _command(tmp_path, "redact", "nope").returncode == 2


def test_scan_output_is_escaped_for_the_terminal(tmp_path: Path) -> None:
    """A stored value with terminal control characters reaches stdout escaped, never raw."""
    with SessionStore(tmp_path, redact=False) as store:
        # ESC c, BEL, BS: a value no rule reads as code (an ESC [ sequence holds a bracket).
        store.append("s", UserMessage(content="DB_PASSWORD=\x1bc\x07\x08Xk9mP2qR7vL4"))
    done = _command(tmp_path, "scan")
    assert done.returncode == 1
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout


def test_redact_keeps_a_converted_log_readable(tmp_path: Path) -> None:
    """A log whose lines git turned into CRLF (and gave a BOM) keeps every record through a redact."""
    with SessionStore(tmp_path, redact=False) as store:
        for n in range(3):
            store.append("s", UserMessage(content=f"{n}: {TOKEN}"))
    log = tmp_path / "s" / "messages.jsonl"
    log.write_bytes(add_bom(crlf(log.read_bytes())))
    with SessionStore(tmp_path) as store:
        assert len(store.redact_session("s")) == 3
        assert [as_class(r.message).content for r in store.records("s")] == [
            f"{n}: [REDACTED:github-token]" for n in range(3)
        ]
    assert files_holding(tmp_path, BODY.encode()) == []


def test_a_secret_in_a_blob_is_found_and_redacted_into_a_new_blob(tmp_path: Path) -> None:
    """A long tool output spilled to a blob with a secret in it: scan names the blob; redact leaves no copy."""
    output = "x" * 300 + f" token={TOKEN} " + "y" * 300
    with SessionStore(tmp_path, redact=False, blob_threshold=256) as store:
        store.append("b", UserMessage(content="run it"))
        store.append("b", ToolMessage(tool_call_id="c1", content=output))
        store.append("b", ToolMessage(tool_call_id="c2", content=output))  # the same blob, twice
    assert files_holding(tmp_path, BODY.encode()) == [
        os.path.join("b", "blobs", blob) for blob in os.listdir(tmp_path / "b" / "blobs")
    ]
    with SessionStore(tmp_path) as store:
        (finding,) = store.scan("b")
        assert (
            finding.file.startswith("blobs/") and finding.where == "blob" and finding.kind == "github-token"
        )
        assert BODY not in str(finding)
        store.redact_session("b")
        assert store.scan("b") == [] and store.verify("b") == []
        contents = [str(as_class(r.message).content) for r in store.records("b")]
        assert contents[1] == contents[2] == output.replace(TOKEN, "[REDACTED:github-token]")
    assert files_holding(tmp_path, BODY.encode()) == []
    assert len(os.listdir(tmp_path / "b" / "blobs")) == 1
