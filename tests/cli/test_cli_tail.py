"""``tail``: the last records, and ``-f`` following a session another process writes, until Ctrl-C.

The follower is the real command in a child process with its output piped; the writer is
another child process using the public API, so the two share nothing but the files. The
test waits for what the follower prints (with a generous limit so a broken follower fails
instead of hanging), never for a time.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import orjson
import pytest
from helpers import readable

from jsonl_store import SessionStore, UserMessage
from jsonl_store.cli import _tail, main

SESSION = "live"
HEADER = re.compile(r"^ *#(\d+) (\w+)", re.MULTILINE)

#: The writer: a snapshot, a torn tail left by a "crash", then the next writer's appends
#: (which cut the torn tail first), one record at a time and then a batch.
WRITER = textwrap.dedent(
    """
    import sys
    from jsonl_store import CompactedMessage, SessionStore, UserMessage

    root, session = sys.argv[1], sys.argv[2]
    with SessionStore(root) as store:
        store.append(session, UserMessage(content="fourth"))
        store.snapshot(session, CompactedMessage(content="summary of 1-4"), 4, 0)
        store.append(session, UserMessage(content="fifth, after the snapshot"))
    with open(f"{root}/{session}/messages.jsonl", "ab") as log:
        log.write(b'{"sequence":6,"id":"torn')  # a writer died mid-line
    with SessionStore(root) as store:
        store.append(session, UserMessage(content="sixth, after the cut"))
        store.append_many(session, [UserMessage(content="seventh"), UserMessage(content="eighth")])
    """
)


def command() -> list[str]:
    """The installed ``jsonl-store`` next to this Python, else ``python -m jsonl_store.cli``."""
    script = Path(sys.executable).with_name("jsonl-store")
    return [str(script)] if script.exists() else [sys.executable, "-m", "jsonl_store.cli"]


def environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("JSONL_STORE_ROOT", "PYTHONIOENCODING")}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A store whose session ``live`` has three records."""
    path = tmp_path / "sessions"
    with SessionStore(path) as store:
        for word in ("first", "second", "third"):
            store.append(SESSION, UserMessage(content=word))
    return path


def read_until(fd: int, done: re.Pattern[str], seen: bytearray) -> str:
    """Read ``fd`` into ``seen`` until its text matches ``done``; fail after 60 s of silence."""
    while not done.search(seen.decode("utf-8", "replace")):
        assert readable(fd, 60), f"the follower printed nothing more for 60 s; so far: {seen.decode()!r}"
        data = os.read(fd, 1 << 16)
        assert data, f"the follower closed its output; so far: {seen.decode()!r}"
        seen.extend(data)
    return seen.decode("utf-8")


def test_tail_n_prints_the_last_records(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """tail -n 2 prints records #2 and #3 and nothing before them; the default prints up to 10."""
    assert main(["--root", str(root), "tail", SESSION, "-n", "2"]) == 0
    out = capsys.readouterr().out
    assert [int(n) for n, _ in HEADER.findall(out)] == [2, 3]
    assert "second" in out and "first" not in out
    assert main(["--root", str(root), "tail", SESSION]) == 0
    assert [int(n) for n, _ in HEADER.findall(capsys.readouterr().out)] == [1, 2, 3]


@pytest.mark.parametrize(
    "argv", [["tail", SESSION, "-n", "-1"], ["tail", "nobody"], ["tail", SESSION, "-n", "x"]]
)
def test_tail_with_bad_input_is_one_line_and_exit_2(
    root: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    """A negative or non-numeric -n, or an unknown session, is exit code 2 and no traceback."""
    assert main(["--root", str(root), *argv]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.strip()


def test_tail_f_follows_appends_across_a_snapshot_and_a_tail_cut_and_ctrl_c_exits_0(root: Path) -> None:
    """tail -f prints #4 to #8 as another process appends them, each once and in order, also
    after a snapshot and after a torn tail that the next writer cut; SIGINT ends it with 0."""
    follower = subprocess.Popen(
        [*command(), "--root", str(root), "tail", SESSION, "-n", "1", "-f"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environment(),
    )
    assert follower.stdout is not None and follower.stderr is not None
    seen = bytearray()
    try:
        read_until(follower.stdout.fileno(), re.compile("third"), seen)
        writer = subprocess.run(
            [sys.executable, "-c", WRITER, str(root), SESSION], capture_output=True, text=True, check=False
        )
        assert writer.returncode == 0, writer.stderr
        text = read_until(follower.stdout.fileno(), re.compile("eighth"), seen)
        follower.send_signal(signal.SIGINT)
        assert follower.wait(timeout=60) == 0
        errors = follower.stderr.read()
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait()
        follower.stdout.close()
        follower.stderr.close()
    assert [int(n) for n, _ in HEADER.findall(text)] == [3, 4, 5, 6, 7, 8]
    for word in ("fourth", "fifth, after the snapshot", "sixth, after the cut", "seventh", "eighth"):
        assert text.count(word) == 1
    assert "torn" not in text and errors == b""
    assert any(name.startswith("messages.jsonl.cut") for name in os.listdir(root / SESSION))  # it was cut


def test_tail_f_of_a_quiet_session_ends_with_0_on_ctrl_c(root: Path) -> None:
    """Following a session nobody writes: the last records, then nothing, and Ctrl-C is exit 0."""
    follower = subprocess.Popen(
        [*command(), "--root", str(root), "tail", "-f", SESSION],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environment(),
    )
    err = b""
    try:
        assert follower.stdout is not None
        read_until(follower.stdout.fileno(), re.compile("third"), bytearray())
        follower.send_signal(signal.SIGINT)
        _, err = follower.communicate(timeout=60)
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.communicate()
    assert follower.returncode == 0 and b"Traceback" not in err and err == b""


def test_tail_json_prints_one_record_per_line(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """tail --json -n 2 prints records #2 and #3 as JSON lines, as cat does."""
    assert main(["--root", str(root), "tail", SESSION, "-n", "2", "--json"]) == 0
    records = [orjson.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["sequence"], r["message"]["content"]) for r in records] == [(2, "second"), (3, "third")]


def test_tail_f_into_head_ends_with_0_without_waiting_for_a_record(root: Path) -> None:
    """`tail -f ID | head -1` under pipefail: the follow notices the reader left, on a quiet session."""
    line = shlex.join([*command(), "--root", str(root), "tail", "-f", SESSION])
    result = subprocess.run(
        ["bash", "-o", "pipefail", "-c", f"{line} | head -1"],
        capture_output=True,
        env=environment(),
        timeout=60,  # a follower that never notices fails here instead of hanging
        check=False,
    )
    assert (result.returncode, result.stderr) == (0, b"")
    assert result.stdout.count(b"\n") == 1


def read_stderr_until(follower: subprocess.Popen[bytes], done: re.Pattern[str], seen: bytearray) -> str:
    """What the follower wrote to stderr, read until it matches ``done`` (60 s of silence fails)."""
    assert follower.stderr is not None
    return read_until(follower.stderr.fileno(), done, seen)


def test_tail_f_of_a_fork_keeps_following_when_its_source_is_emptied_replaced_or_cut_short(
    root: Path,
) -> None:
    """A fork followed while its source's log is emptied, replaced by a shorter one and cut
    short: each record the fork appends is printed once, the damage is one warning, no
    traceback, and SIGINT still ends it with 0."""
    source_log = root / SESSION / "messages.jsonl"
    other = root.parent / "other"
    with SessionStore(root) as store:
        store.fork(SESSION, 3, "branch")
    with SessionStore(other) as store:
        store.append_many("o", [UserMessage(content="other one"), UserMessage(content="other two")])
    follower = subprocess.Popen(
        [*command(), "--root", str(root), "tail", "-f", "branch"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environment(),
    )
    assert follower.stdout is not None and follower.stderr is not None
    out, err = bytearray(), bytearray()
    try:
        read_until(follower.stdout.fileno(), re.compile("third"), out)
        source_log.write_bytes(b"")
        # The follower has looked at the fork's history since the source went empty: it says so.
        read_stderr_until(follower, re.compile("bad-fork"), err)
        steps = [
            (None, "fourth, the fork's own"),
            ((other / "o" / "messages.jsonl").read_bytes(), "fifth, on a replaced source"),
            (b"".join((other / "o" / "messages.jsonl").read_bytes().splitlines(keepends=True)[:1]), "sixth"),
        ]
        for log, word in steps:
            if log is not None:
                source_log.write_bytes(log)
            with SessionStore(root) as store:
                store.append("branch", UserMessage(content=word))
            text = read_until(follower.stdout.fileno(), re.compile(word), out)
        follower.send_signal(signal.SIGINT)
        assert follower.wait(timeout=60) == 0
        err.extend(follower.stderr.read())
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait()
        follower.stdout.close()
        follower.stderr.close()
    assert [int(n) for n, _ in HEADER.findall(text)] == [1, 2, 3, 4, 5, 6]
    for word in ("fourth, the fork's own", "fifth, on a replaced source", "sixth"):
        assert text.count(word) == 1
    warnings = err.decode().splitlines()
    assert b"Traceback" not in err and "OverflowError" not in err.decode()
    assert warnings and len(warnings) == len(set(warnings))  # each problem said once, not at every poll


def test_tail_f_of_a_fork_whose_source_is_emptied_reads_a_bounded_number_of_times_per_poll(
    root: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """In process with a fake sleep: between two polls the follow asks for the fork's last
    records at most three times, also after the source emptied and the fork appended."""
    with SessionStore(root) as store:
        store.fork(SESSION, 3, "branch")
    calls: list[int] = [0]
    real_tail = SessionStore.tail

    def counting_tail(self: SessionStore, session_id: str, n: int) -> list[Any]:
        calls[-1] += 1
        return real_tail(self, session_id, n)

    def fake_sleep(seconds: float) -> None:
        polls = len(calls)
        if polls == 1:
            (root / SESSION / "messages.jsonl").write_bytes(b"")
        elif polls == 3:
            with SessionStore(root) as writer:
                writer.append("branch", UserMessage(content="fourth, the fork's own"))
        elif polls == 6:
            raise KeyboardInterrupt
        calls.append(0)

    monkeypatch.setattr(SessionStore, "tail", counting_tail)
    monkeypatch.setattr(_tail, "time", SimpleNamespace(sleep=fake_sleep))
    assert main(["--root", str(root), "tail", "-f", "branch"]) == 0
    captured = capsys.readouterr()
    assert captured.out.count("fourth, the fork's own") == 1 and "Traceback" not in captured.err
    assert len(calls) == 6 and max(calls) <= 3, calls
