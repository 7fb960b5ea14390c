"""The processes the concurrency tests start: one role per function, driven over pipes.

Run as ``python _child.py ROLE JSON_ARGS``. Every role prints ``ready`` once its store is
made, then follows its protocol on stdin/stdout (a ``go`` line starts free-running roles;
round-driven roles answer one line per line until ``quit``), and ends with
``result <json>`` where it has something to report. An error goes to stderr with a
non-zero exit status, which the parent shows in its failure.
"""

from __future__ import annotations

import json
import os
import random
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from jsonl_store import (
    CompactedMessage,
    Message,
    MetadataConflict,
    ParentMismatch,
    SequenceConflict,
    SessionStore,
    SnapshotConflict,
)
from jsonl_store._io.fs import OsFileSystem

Args = dict[str, Any]

#: A child never outlives a test that forgot it: the parent's pipes close, or this passes.
STALL_SECONDS = 120.0


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def listen() -> str:
    line = sys.stdin.readline()
    if not line:  # the parent is gone
        sys.exit(3)
    return line.strip()


def result(value: object) -> None:
    say("result " + json.dumps(value))


def store_of(args: Args, **options: Any) -> SessionStore:
    return SessionStore(
        args["root"],
        durability=args.get("durability", "fsync"),
        lock_timeout=args.get("lock_timeout", 30.0),
        **options,
    )


def message(writer: str, counter: int) -> dict[str, Any]:
    """A plain message tagged with its writer and that writer's counter."""
    return {"role": "user", "id": f"{writer}:{counter}", "content": f"writer {writer} message {counter}"}


def shared_message(index: int) -> dict[str, Any]:
    """Message ``index`` of the runner list every checkpointing process holds."""
    return {"role": "user", "id": f"m{index}", "content": f"shared message {index}"}


# -- appends ------------------------------------------------------------------------------


def role_append(args: Args) -> None:
    """Threads (one per writer id) append ``count`` tagged messages each in random batches.

    With ``shared_store`` the threads share one `SessionStore`, otherwise each has its own.
    Result: each writer's returned sequences, in call order.
    """
    sid, count, batch_max = args["sid"], args["count"], args["batch_max"]
    shared = store_of(args)
    stores = {w: shared if args["shared_store"] else store_of(args) for w in args["writers"]}
    sequences: dict[str, list[int]] = {}
    errors: list[Exception] = []

    def run(writer: str) -> None:
        try:
            store = stores[writer]
            rng = random.Random(f"{args['seed']}:{writer}")
            done: list[int] = []
            counter = 0
            while counter < count:
                size = min(rng.randint(1, batch_max), count - counter)
                batch = [message(writer, counter + k) for k in range(size)]
                if size == 1 and rng.random() < 0.5:
                    done.append(store.append(sid, batch[0]))
                else:
                    done.extend(store.append_many(sid, batch))
                counter += size
            sequences[writer] = done
        except Exception as exc:  # noqa: BLE001 (re-raised in the main thread)
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(w,)) for w in args["writers"]]
    say("ready")
    listen()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    result(sequences)


def role_delete_rounds(args: Args) -> None:
    """Delete the session over and over while others write to it, until the stop file appears.

    Result: how many deletes found a session to delete.
    """
    store = store_of(args)
    say("ready")
    listen()
    found = 0
    deadline = time.monotonic() + STALL_SECONDS
    while not os.path.exists(args["stop"]) and time.monotonic() < deadline:
        found += store.delete_session(args["sid"])
    result(found)


def role_update_rounds(args: Args) -> None:
    """Set the session's title ``count`` times (under its lock), remaking the session when it is gone.

    Goes on past ``count`` (up to 20 times as many, and `STALL_SECONDS`) until one update
    has found the session deleted: the deleter runs until the test stops it, so the calls
    overlap however the scheduler orders the processes (with fsyncs, the appenders' own
    re-creations could hide every delete from 150 updates).
    Result: how many updates found the session deleted.
    """
    from jsonl_store import SessionNotFound

    store = store_of(args)
    say("ready")
    listen()
    missing = 0
    deadline = time.monotonic() + STALL_SECONDS
    for index in range(20 * args["count"]):
        if index >= args["count"] and (missing or time.monotonic() > deadline):
            break
        try:
            store.update_session(args["sid"], title=f"title {index}")
        except SessionNotFound:
            missing += 1
            try:
                store.create_session(args["sid"])
            except SessionNotFound:
                pass  # deleted again before its summary was read: the next round makes it
    result(missing)


def role_log_reader(args: Args) -> None:
    """Load the session over and over while others append, until after the stop file appears.

    Result: how many views were read, their record counts, and every view that was not
    a clean prefix (damage reported, a gap, or fewer records than an earlier view).
    """
    store = store_of(args)
    say("ready")
    listen()
    counts: list[int] = []
    bad: list[str] = []
    deadline = time.monotonic() + STALL_SECONDS
    last = False
    while not last and time.monotonic() < deadline:
        last = os.path.exists(args["stop"])  # one more view after it, seeing every append
        view = store.load(args["sid"])
        sequences = [record.sequence for record in view.raw_tail]
        if view.problems:
            bad.append(f"problems {view.problems}")
        if sequences != list(range(1, len(sequences) + 1)):
            bad.append(f"not 1..n: {sequences}")
        if counts and len(sequences) < counts[-1]:
            bad.append(f"{len(sequences)} records after {counts[-1]}")
        counts.append(len(sequences))
    result({"counts": counts, "bad": bad[:10]})


# -- snapshots ----------------------------------------------------------------------------


def role_snapshot_rounds(args: Args) -> None:
    """Per line ``round expected through``: try that snapshot; answer ``won V`` or ``conflict``."""
    store = store_of(args)
    say("ready")
    while (line := listen()) != "quit":
        round_, expected, through = map(int, line.split())
        summary = CompactedMessage(
            id=f"{args['name']}:{round_}", content=f"{args['name']} won round {round_}"
        )
        try:
            snapshot = store.snapshot(args["sid"], summary, through, expected)
        except SnapshotConflict:
            say("conflict")
        else:
            say(f"won {snapshot.version}")


def role_compacting_writer(args: Args) -> None:
    """Append and snapshot, over and over, until the stop file appears.

    Every ``every`` appends it compacts through its latest record, as an agent loop does.
    Result: how many snapshots it made.
    """
    store = store_of(args)
    sid = args["sid"]
    store.append(sid, message("w", 0))
    say("ready")
    listen()
    made, counter = 0, 0
    deadline = time.monotonic() + STALL_SECONDS
    while not os.path.exists(args["stop"]) and time.monotonic() < deadline:
        counter += 1
        through = store.append(sid, message("w", counter))
        if counter % args["every"] == 0:
            store.snapshot(sid, CompactedMessage(content=f"through {through}"), through, made)
            made += 1
    result({"snapshots": made})


def role_snapshot_reader(args: Args) -> None:
    """Load the session over and over while a writer compacts it, until the stop file appears.

    Result: how many views were read and every view that reported a problem, went back
    to an older snapshot, or whose tail does not continue right after its boundary.
    """
    store = store_of(args)
    say("ready")
    listen()
    views, newest = 0, 0
    bad: list[str] = []
    deadline = time.monotonic() + STALL_SECONDS
    last = False
    while not last and time.monotonic() < deadline:
        last = os.path.exists(args["stop"])
        view = store.load(args["sid"])
        views += 1
        version = view.snapshot.version if view.snapshot else 0
        if view.problems:
            bad.append(f"problems {[(p.kind, p.reason) for p in view.problems]}")
        if version < newest:
            bad.append(f"snapshot {version} after snapshot {newest}")
        newest = max(newest, version)
        boundary = view.snapshot.compacted_through_sequence if view.snapshot else 0
        sequences = [record.sequence for record in view.raw_tail]
        if sequences != list(range(boundary + 1, boundary + 1 + len(sequences))):
            bad.append(f"tail {sequences[:5]}... after boundary {boundary}")
    result({"views": views, "newest": newest, "bad": bad[:10]})


# -- metadata -----------------------------------------------------------------------------


def role_ui(args: Args) -> None:
    """A UI renaming, pinning and colouring the session ``count`` times (origin user).

    Result: the (version, title_version, metadata_version) each update returned.
    """
    store = store_of(args)
    say("ready")
    listen()
    seen = []
    for i in range(args["count"]):
        summary = store.update_session(
            args["sid"], title=f"UI title {i}", pinned=i % 2 == 0, metadata={"color": f"ui-{i}"}
        )
        seen.append([summary.version, summary.title_version, summary.metadata_version])
    result(seen)


def role_runtime(args: Args) -> None:
    """An agent runtime appending and recording its own bookkeeping (origin runtime).

    Each step appends a message and sets metadata key ``step.N`` and ``color``; every few
    steps it also derives a title. Result: the versions each update returned.
    """
    store = store_of(args)
    sid = args["sid"]
    say("ready")
    listen()
    seen = []
    for step in range(args["count"]):
        store.append(sid, message("runtime", step))
        summary = store.update_session(
            sid, metadata={f"step.{step}": step, "color": "runtime"}, origin="runtime"
        )
        seen.append([summary.version, summary.title_version, summary.metadata_version])
        if step % 4 == 0:
            summary = store.update_session(sid, title=f"Runtime title {step}", pinned=False, origin="runtime")
            seen.append([summary.version, summary.title_version, summary.metadata_version])
    result(seen)


def role_meta_cas_rounds(args: Args) -> None:
    """Per line ``round expected``: retitle with that expected version; answer ``won V`` or ``conflict``."""
    store = store_of(args)
    say("ready")
    while (line := listen()) != "quit":
        round_, expected = map(int, line.split())
        try:
            summary = store.update_session(
                args["sid"], title=f"{args['name']} {round_}", expected_version=expected
            )
        except MetadataConflict:
            say("conflict")
        else:
            say(f"won {summary.version}")


def role_meta_reader(args: Args) -> None:
    """Poll ``meta.json`` (raw) and `get_session` until the stop file appears.

    Result: every (version, title_version, metadata_version) seen, in order, from both
    views; a raw file that does not parse makes this child fail.
    """
    store = store_of(args)
    path = os.path.join(args["root"], args["sid"], "meta.json")
    say("ready")
    listen()
    raw_seen, summary_seen = [], []
    deadline = time.monotonic() + STALL_SECONDS
    while not os.path.exists(args["stop"]) and time.monotonic() < deadline:
        with open(path, "rb") as f:
            meta = json.loads(f.read())  # a torn or mixed file fails here
        raw_seen.append([meta["version"], meta["title_version"], meta["metadata_version"]])
        summary = store.get_session(args["sid"])
        assert summary is not None
        summary_seen.append([summary.version, summary.title_version, summary.metadata_version])
    result({"raw": raw_seen, "summary": summary_seen})


# -- locks --------------------------------------------------------------------------------


def role_hold_session_lock(args: Args) -> None:
    """Enter the session's lock, say ``locked``, and never leave it."""
    store = store_of(args)
    with store._handles.lock(args["sid"]):
        say("locked")
        time.sleep(STALL_SECONDS)


class StallingFileSystem(OsFileSystem):
    """The real file system, except that one chosen operation stops and never returns.

    ``write``: the first write to the raw log after `arm` writes half its bytes, then
    stalls (a writer that dies mid-record while holding the log's lock). ``rename`` /
    ``link``: the first one onto a name ending in ``target`` after `arm` stalls before it
    happens (a metadata or snapshot writer dying while holding the session lock).
    """

    def __init__(self, operation: str, target: str = "") -> None:
        self.operation = operation
        self.target = target
        self.armed = False
        self.log_fds: set[int] = set()

    def arm(self) -> None:
        self.armed = True

    def _stall(self) -> None:
        say("stalled")
        time.sleep(STALL_SECONDS)
        sys.exit(4)

    # The overrides take only what the store passes (str paths, bytes), hence the ignores.
    def open(self, path: str, flags: int, mode: int = 0o777) -> int:
        fd = os.open(path, flags, mode)
        if path.endswith("messages.jsonl") and flags & os.O_APPEND:
            self.log_fds.add(fd)
        return fd

    def write(self, fd: int, data: bytes) -> int:  # type: ignore[override]
        if self.armed and self.operation == "write" and fd in self.log_fds:
            os.write(fd, bytes(data[: len(data) // 2]))
            self._stall()
        return os.write(fd, data)

    def rename(self, src: str, dst: str) -> None:  # type: ignore[override]
        if self.armed and self.operation == "rename" and dst.endswith(self.target):
            self._stall()
        os.rename(src, dst)

    def link(self, src: str, dst: str) -> None:  # type: ignore[override]
        if self.armed and self.operation == "link" and dst.endswith(self.target):
            self._stall()
        os.link(src, dst)


def role_stall(args: Args) -> None:
    """Append ``before`` messages (``ack SEQ`` each), then stall inside ``operation``.

    ``write`` stalls in an append, ``rename`` in ``update_session(title=...)``, ``link``
    in a snapshot; the parent kills this process while it holds the lock.
    """
    fs = StallingFileSystem(args["operation"], args.get("target", ""))
    store = store_of(args, fs=fs)
    sid = args["sid"]
    say("ready")
    for counter in range(args["before"]):
        say(f"ack {store.append(sid, message('stall', counter))}")
    fs.arm()
    if args["operation"] == "write":
        store.append(sid, message("stall", args["before"]))
    elif args["operation"] == "rename":
        store.update_session(sid, title="title of a killed writer")
    else:
        store.snapshot(sid, CompactedMessage(content="snapshot of a killed writer"), args["before"], 0)
    raise AssertionError("the armed operation did not stall")


# -- checkpoints --------------------------------------------------------------------------


def role_checkpoint_rounds(args: Args) -> None:
    """Per line ``n``: checkpoint the shared runner list's first n messages; answer the sequences."""
    store = store_of(args)
    say("ready")
    while (line := listen()) != "quit":
        wanted = [shared_message(i) for i in range(int(line))]
        say(json.dumps(store.checkpoint(args["sid"], wanted)))


def role_checkpoint_own(args: Args) -> None:
    """A runner resumed from the shared prefix that never sees anyone else's messages.

    Step i checkpoints ``prefix + own[:i]``; now and then it checkpoints an older list of
    its own (a stale save). Result: the sequences each checkpoint returned.
    """
    store = store_of(args)
    rng = random.Random(args["name"])
    prefix = [shared_message(i) for i in range(args["prefix"])]
    own = [message(args["name"], i) for i in range(args["count"])]
    say("ready")
    listen()
    returned = []
    for step in range(1, args["count"] + 1):
        length = step if rng.random() < 0.8 else rng.randint(0, step)
        returned.append(store.checkpoint(args["sid"], prefix + own[:length]))
    # The last save holds the whole list, so every own message is stored at the end.
    returned.append(store.checkpoint(args["sid"], prefix + own))
    result(returned)


def role_append_plain(args: Args) -> None:
    """Append ``count`` tagged messages one by one (to ``sid``), then report their sequences."""
    store = store_of(args)
    say("ready")
    listen()
    result([store.append(args["sid"], message(args["name"], i)) for i in range(args["count"])])


# -- sub-agents ---------------------------------------------------------------------------


def role_subagent(args: Args) -> None:
    """A sub-agent: appends into its own session naming its parent, then its result upward.

    Result: the child-session sequences and the parent-session sequence of the result.
    """
    store = store_of(args)
    sid, parent = args["sid"], args["parent"]
    say("ready")
    listen()
    own = [
        store.append(
            sid, message(sid, i), parent_session_id=parent, agent_name="helper", title=f"Sub-agent {sid}"
        )
        for i in range(args["count"])
    ]
    up = store.append(parent, {"role": "user", "id": f"{sid}:result", "content": f"result of {sid}"})
    result({"own": own, "result": up})


def role_claim_parent_rounds(args: Args) -> None:
    """Per line ``sid``: create that session naming this child's parent; answer ``ok`` or ``mismatch``."""
    store = store_of(args)
    say("ready")
    while (line := listen()) != "quit":
        try:
            store.append(line, message(args["parent"], 0), parent_session_id=args["parent"])
        except ParentMismatch:
            say("mismatch")
        else:
            say("ok")


# -- conditional appends and empty sessions ------------------------------------------------


def _plain_content(message: Message) -> str:
    """The text of a message appended as a plain dict (every one on the shared stack is)."""
    assert isinstance(message, dict), message
    content: str = message["content"]
    return content


def role_pop_rounds(args: Args) -> None:
    """Pop ``count`` records off a shared stack: read the last record, then append a marker
    only if the log still ends there (``expected_last_sequence``), retrying on conflict.

    The stack is the records whose content starts with ``push``; each pop appends a
    ``pop <sequence>`` record naming the record it took. Result: the sequences popped and
    how many conflicts were met.
    """
    store = store_of(args)
    sid, name = args["sid"], args["name"]
    popped: list[int] = []
    conflicts = 0
    say("ready")
    listen()
    while len(popped) < args["count"]:
        records = list(store.records(sid))
        contents = [(r.sequence, _plain_content(r.message)) for r in records]
        taken = {int(content.split()[1]) for _, content in contents if content.startswith("pop ")}
        stack = [
            sequence for sequence, content in contents if content.startswith("push") and sequence not in taken
        ]
        top = stack[-1]
        try:
            store.append(
                sid,
                {"role": "user", "content": f"pop {top} by {name}"},
                expected_last_sequence=records[-1].sequence,
            )
        except SequenceConflict:
            conflicts += 1
            continue
        popped.append(top)
    result({"popped": popped, "conflicts": conflicts})


def role_create(args: Args) -> None:
    """Create the session ``sid`` (empty) once ``go`` comes; result: the summary's created_at and title."""
    store = store_of(args)
    say("ready")
    listen()
    summary = store.create_session(args["sid"], title=args["title"], parent_session_id=args.get("parent"))
    result({"created_at": summary.created_at.isoformat(), "title": summary.title})


def role_resume(args: Args) -> None:
    """Resume the session ``sid`` once ``go`` comes; result: the last sequence of the view it got."""
    store = store_of(args)
    say("ready")
    listen()
    result(store.resume(args["sid"]).last_sequence)


ROLES: dict[str, Callable[[Args], None]] = {
    name[len("role_") :]: function for name, function in list(globals().items()) if name.startswith("role_")
}

if __name__ == "__main__":
    ROLES[sys.argv[1]](json.loads(sys.argv[2]))
