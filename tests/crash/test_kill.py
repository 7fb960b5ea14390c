"""Real processes killed with SIGKILL mid-write: nothing acknowledged is ever lost (issue 3).

A child (`_child_kill.py`) writes to one session with ``durability="fsync"`` and prints
each acknowledged sequence, flushed, to a pipe; the test kills it at a random moment,
reopens the session with a fresh store and checks the disk against everything any child
acknowledged so far. The next child is started while the current one runs, so a round
costs about one kill, not one interpreter start-up.

What a SIGKILL can leave is what the kernel had been given: a torn last record when it
lands inside ``write(2)``, a temporary file when it lands inside an atomic replace. What
it can never leave is a lost acknowledged record, a gap, or a metadata or snapshot file
that is half old and half new.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import pytest
from helpers import plain, readable

from jsonl_store import SessionStore

CHILD = Path(__file__).with_name("_child_kill.py")
SID = "killed-session"
#: Safety net for any single wait on a child; far above what a healthy run needs.
DEADLINE = 60.0
#: What a kill may leave that `verify` reports: a torn tail, an unfinished temporary file.
CRASH_REMAINS = {"torn-tail", "leftover-temp"}


def sha(message: Any) -> str:
    """The digest `_child_kill.py` reports for a message (sha256 of canonical JSON)."""
    return hashlib.sha256(json.dumps(message, sort_keys=True).encode()).hexdigest()


def parent_message(name: str) -> dict[str, Any]:
    """A message the test itself appends, self-describing like the child's."""
    content = f"appended by the test after {name}"
    return {
        "role": "user",
        "id": name,
        "content": content,
        "digest": hashlib.sha256(content.encode()).hexdigest(),
    }


class Victim:
    """One `_child_kill.py` process: started ahead, released with ``go``, killed mid-write."""

    def __init__(self, role: str, root: Path, round_: int) -> None:
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed in close())
        args = {"root": str(root), "sid": SID, "round": round_, "seed": round_}
        self.proc = subprocess.Popen(
            [sys.executable, str(CHILD), role, json.dumps(args)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
        )
        self.buffer = b""

    def _fail(self, why: str) -> NoReturn:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.stderr.seek(0)
        pytest.fail(f"{why} (exit {self.proc.returncode}):\n{self.stderr.read().decode(errors='replace')}")

    def readline(self) -> str | None:
        """The next line the child printed; None once it is dead and everything was read."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + DEADLINE
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not readable(fd, left):
                self._fail("the child printed nothing before the safety deadline")
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line.decode()

    def release(self) -> None:
        """Wait until the child has made its store, then let it write."""
        if self.readline() != "ready":
            self._fail("the child did not start")
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"go\n")
        self.proc.stdin.flush()

    def kill_during_call(self, calls: int, pause: float) -> list[str]:
        """Let ``calls`` calls begin, wait ``pause`` s, SIGKILL; return every line the child printed."""
        lines: list[str] = []
        begun = 0
        while begun < calls:
            line = self.readline()
            if line is None:
                self._fail("the child died before it was killed")
            lines.append(line)
            begun += line.startswith("try")
        time.sleep(pause)
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        while (line := self.readline()) is not None:  # what it printed before it died counts too
            lines.append(line)
        if self.proc.returncode != -signal.SIGKILL:
            self._fail("the child died on its own before it was killed")
        return lines

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                pipe.close()
        self.stderr.close()


@dataclass
class InFlight:
    """The calls a killed child had begun and not acknowledged, from its report."""

    #: (call prefix, records in it) of the last "try" line, and how many acks of it were read.
    tried: tuple[str, int] | None = None
    acked: int = 0
    #: The title of a metadata update, and the (version, through, summary id) of a snapshot.
    title: str | None = None
    snapshot: tuple[int, int, str] | None = None


@dataclass
class Ledger:
    """Everything that must survive: acknowledged records, and the metadata and snapshot states."""

    root: Path
    #: sequence -> digest of every record acknowledged (or found on disk and then built upon).
    kept: dict[int, str] = field(default_factory=dict)
    #: (version, title) of meta.json, and (version, through, summary id) of the newest snapshot.
    meta: tuple[int, str | None] = (0, None)
    snapshot: tuple[int, int, str] | None = None

    def read_report(self, lines: list[str]) -> InFlight:
        """Take in what the killed child acknowledged; return the calls it had not finished."""
        flight = InFlight()
        for line in lines:
            word, *rest = line.split(" ")
            if word == "try":
                flight.tried, flight.acked = (rest[0], int(rest[1])), 0
            elif word == "ack":
                flight.acked += 1
                sequence, digest = int(rest[0]), rest[1]
                assert self.kept.setdefault(sequence, digest) == digest, (
                    f"sequence {sequence} acknowledged twice, with different content"
                )
            elif word == "try-snap":
                flight.snapshot = (int(rest[0]), int(rest[1]), rest[2])
            elif word == "ack-snap":
                self.snapshot, flight.snapshot = (int(rest[0]), int(rest[1]), rest[2]), None
            elif word == "try-meta":
                flight.title = rest[0]
            elif word == "ack-meta":
                self.meta, flight.title = (int(rest[0]), rest[1]), None
            else:
                raise AssertionError(f"unexpected line {line!r}")
        return flight

    def check_after_kill(self, lines: list[str], round_: int) -> None:
        """Check a fresh store's view of the disk against what the killed child reported."""
        flight = self.read_report(lines)
        tried, acked_in_flight = flight.tried, flight.acked
        meta_try, snap_try = flight.title, flight.snapshot
        store = SessionStore(self.root, durability="fsync")
        records = list(store.records(SID))
        assert [r.sequence for r in records] == list(range(1, len(records) + 1)), "the log has a gap"
        for record in records:
            message = plain(record.message)
            assert hashlib.sha256(message["content"].encode()).hexdigest() == message["digest"], (
                record.sequence
            )
        for sequence, digest in self.kept.items():
            assert sequence <= len(records), f"acknowledged sequence {sequence} is lost"
            assert sha(records[sequence - 1].message) == digest, f"acknowledged sequence {sequence} changed"
        # Records past every acknowledged one can only be the call in flight: a prefix of it.
        unacknowledged = [plain(r.message)["id"] for r in records[max(self.kept) :]]
        if unacknowledged:
            # The call in flight: a prefix of it, after the acks of it that were read. A
            # kill can cut a batch's ack report short (one pipe write of many lines is not
            # atomic), so records of a call that returned may follow its last read ack.
            assert tried is not None
            first = acked_in_flight
            assert unacknowledged == [f"{tried[0]}-{i}" for i in range(first, first + len(unacknowledged))]
            assert first + len(unacknowledged) <= tried[1]

        view = store.load(SID)
        assert view.problems == [], "the remains of a crash were reported as damage"
        problems = store.verify(SID)
        assert {p.kind for p in problems} <= CRASH_REMAINS, problems

        # meta.json and the snapshot are the acknowledged state or the one in flight, whole.
        meta = json.loads((self.root / SID / "meta.json").read_bytes())
        on_disk = (meta["version"], meta["title"])
        assert on_disk == self.meta or (meta_try is not None and on_disk == (self.meta[0] + 1, meta_try)), (
            on_disk
        )
        summary = store.get_session(SID)
        assert summary is not None and (summary.version, summary.title) == on_disk
        self.meta = on_disk
        for path in (self.root / SID).glob("snapshot-*.json"):
            assert json.loads(path.read_bytes())["version"] == int(path.stem.split("-")[1])
        snapshot = None
        if view.snapshot is not None:
            snapshot = (
                view.snapshot.version,
                view.snapshot.compacted_through_sequence,
                view.snapshot.compacted_message.id,
            )
        assert snapshot == self.snapshot or (snap_try is not None and snapshot == snap_try), snapshot
        self.snapshot = snapshot

        # The next append continues right after the last record, whatever the tail held.
        message = parent_message(f"round-{round_}")
        assert store.append(SID, message) == len(records) + 1
        self.kept = {r.sequence: sha(r.message) for r in records}
        self.kept[len(records) + 1] = sha(message)


def kill_many_times(root: Path, role: str, rounds: int, max_calls: int, max_pause: float) -> None:
    """Run ``rounds`` children of ``role``, killing each during a random call, checking after each."""
    rng = random.Random(f"{role}:{rounds}")
    store = SessionStore(root, durability="fsync")
    store.append(SID, parent_message("start"))
    ledger = Ledger(root, kept={1: sha(parent_message("start"))})
    victim: Victim | None = Victim(role, root, 0)
    upcoming: Victim | None = None
    try:
        for round_ in range(rounds):
            assert victim is not None
            victim.release()
            # The next child starts up while this one runs, so a round costs no start-up.
            upcoming = Victim(role, root, round_ + 1) if round_ + 1 < rounds else None
            lines = victim.kill_during_call(rng.randint(0, max_calls), rng.uniform(0, max_pause))
            victim.close()
            ledger.check_after_kill(lines, round_)
            victim, upcoming = upcoming, None
    finally:
        for child in (victim, upcoming):
            if child is not None:
                child.close()
    # After all the kills, one repair leaves a clean session with every record still there.
    store = SessionStore(root, durability="fsync")
    assert {p.kind for p in store.repair(SID)} <= CRASH_REMAINS
    assert store.verify(SID) == []
    assert [r.sequence for r in store.records(SID)] == list(range(1, max(ledger.kept) + 1))


@pytest.fixture
def scale(pytestconfig: pytest.Config) -> int:
    """How many times more rounds to run: 10 with ``--long``, else 1."""
    return 10 if pytestconfig.getoption("--long", default=False) else 1


def test_writer_killed_at_random_moments_loses_no_acknowledged_append(tmp_path: Path, scale: int) -> None:
    """A child appending with fsync, SIGKILLed 40 times, never loses or alters an acknowledged record."""
    kill_many_times(tmp_path, "append", rounds=40 * scale, max_calls=30, max_pause=0.002)


def test_writer_killed_during_large_batches_loses_no_acknowledged_batch(tmp_path: Path, scale: int) -> None:
    """A child appending batches of up to 300 large messages, killed mid-batch, keeps acknowledged ones."""
    kill_many_times(tmp_path, "append_many", rounds=12 * scale, max_calls=3, max_pause=0.03)


def test_writer_killed_during_snapshots_and_metadata_updates_leaves_old_or_new_files(
    tmp_path: Path, scale: int
) -> None:
    """A child killed in snapshot() or update_session() leaves each file old or new; load() works."""
    kill_many_times(tmp_path, "meta", rounds=25 * scale, max_calls=12, max_pause=0.002)
