"""jsonl_store measured through its public API, on the same records as the baselines."""

from __future__ import annotations

import itertools
import os
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

from jsonl_store.testing.damage import damage_file, tear_last_line

from . import floor, procs, workload
from .config import Context
from .timing import Block, Contender, Row, calibrate, first_ops, no_gc, per_op, race, time_once

GROUP = floor.GROUP


def file_names() -> tuple[str, str]:
    """(log, metadata) file names inside a session directory, as the store names them."""
    try:
        from jsonl_store._format.names import LOG_NAME, META_NAME
    except ImportError:  # the names the format documents, should the module move
        return "messages.jsonl", "meta.json"
    return LOG_NAME, META_NAME


def log_path(root: str, session_id: str) -> str:
    return os.path.join(root, session_id, file_names()[0])


def missing() -> str | None:
    """None when jsonl_store imports, else why its measures are skipped."""
    try:
        from jsonl_store import SessionStore  # noqa: F401
    except ImportError as exc:
        return f"skipped: jsonl_store does not import ({exc})"
    return None


def open_store(root: str, durability: str, *, redact: bool = True) -> Any:
    from jsonl_store import SessionStore

    assert durability in ("fsync", "none"), durability
    if not redact:
        # A store from before redaction has no such argument: it never redacts anyway.
        try:
            return SessionStore(root, durability=durability, redact=False)  # type: ignore[arg-type]
        except TypeError:
            pass
    # Each append that redacts tells `on_redact` (spec §18.1), else logs a warning: a
    # callback that keeps nothing, so a run of secrets measures redaction, not stderr.
    try:
        return SessionStore(root, durability=durability, on_redact=_ignore)  # type: ignore[arg-type]
    except TypeError:  # a store from before on_redact
        return SessionStore(root, durability=durability)  # type: ignore[arg-type]


def _ignore(notice: object) -> None:
    """An ``on_redact`` that keeps nothing."""


def append_one(store: Any, session_id: str, item: tuple[Any, Any]) -> None:
    """One ``append`` of a workload item (message, usage or None)."""
    message, usage = item
    if usage is None:
        store.append(session_id, message)
    else:
        store.append(session_id, message, usage=usage)


def build(store: Any, session_id: str, start: int, count: int, batch: int, *, mixed: bool = False) -> None:
    """Add ``count`` records with append_many in big batches (set-up, not measured)."""
    done = 0
    while done < count:
        n = min(batch, count - done)
        first = start + done
        if mixed:
            messages = [
                workload.store_message(workload.turn(workload.mixed_kind(i), i))[0]
                for i in range(first, first + n)
            ]
        else:
            messages = [m for m, _ in workload.store_messages(workload.ASSISTANT, first, n)]
        store.append_many(session_id, messages)
        done += n


def appender(store: Any, session_id: str, kind: str, total: int) -> Block:
    """Per op: one ``append`` (with usage for an assistant message)."""
    items: Iterator[tuple[Any, Any]] = iter(workload.store_messages(kind, 0, total))

    def block(n: int) -> None:
        for _ in range(n):
            append_one(store, session_id, next(items))

    return block


def secret_appender(store: Any, session_id: str, kind: str, total: int) -> Block:
    """Per op: one ``append`` of a workload message whose text ends with a (fake) AWS key id,
    so redaction takes its slow path: decode, search every string, re-encode."""
    import msgspec

    key = "AKIA" + "QZ7XW3VT9RK2MP5L"
    items = [
        (msgspec.structs.replace(m, content=f"{m.content} {key}"), usage)
        for m, usage in workload.store_messages(kind, 0, total)
    ]
    iterator = iter(items)

    def block(n: int) -> None:
        for _ in range(n):
            append_one(store, session_id, next(iterator))

    return block


def code_output_appender(store: Any, session_id: str, total: int) -> Block:
    """Per op: one ``append`` of a 1 MB code output (`workload.code_output`), made in advance."""
    messages = iter([workload.code_output(i) for i in range(total)])

    def block(n: int) -> None:
        for _ in range(n):
            store.append(session_id, next(messages))

    return block


def round_robin_appender(store: Any, session_ids: list[str], kind: str, total: int) -> Block:
    """Per op: one ``append`` to the next session of ``session_ids``, in turn."""
    items: Iterator[tuple[Any, Any]] = iter(workload.store_messages(kind, 0, total))
    sessions = itertools.cycle(session_ids)

    def block(n: int) -> None:
        for _ in range(n):
            append_one(store, next(sessions), next(items))

    return block


def many_appender(store: Any, session_id: str, total_groups: int) -> Block:
    """Per op: one ``append_many`` of 64 assistant messages."""
    batches = iter(
        [
            [m for m, _ in workload.store_messages(workload.ASSISTANT, g * GROUP, GROUP)]
            for g in range(total_groups)
        ]
    )

    def block(groups: int) -> None:
        for _ in range(groups):
            store.append_many(session_id, next(batches))

    return block


def run(ctx: Context) -> None:
    measures = (
        (_append_curve, "jsonl-curve"),
        (_resume, "jsonl-resume"),
        (_snapshot_steps, "jsonl-snapshot-steps"),
        (_load_snapshot_files, "jsonl-snapshot-files"),
        (_checkpoint_growth, "jsonl-checkpoint"),
        (_scan, "jsonl-scan"),
        (_list_sessions, "jsonl-list"),
        (_torn_tail, "jsonl-torn"),
    )
    for measure, scratch in measures:
        name = f"jsonl: {measure.__name__.lstrip('_').replace('_', ' ')}"
        began = time.perf_counter()
        measure(ctx)
        ctx.release(name, scratch)
        ctx.log(f"{name}: {time.perf_counter() - began:,.1f} s")


def bytes_per_line(path: str) -> float:
    with open(path, "rb") as f:
        data = f.read()
    return len(data) / max(1, data.count(b"\n"))


def _append_curve(ctx: Context) -> None:
    """Append cost as the session grows: it should stay flat (the log is never reread)."""
    s, res, root = ctx.sizes, ctx.results, ctx.scratch("jsonl-curve")
    with open_store(root, "none") as builder, open_store(root, "fsync") as synced:
        for length in s.append_lengths:
            for durability, store in (("fsync", synced), ("none", builder)):
                ctx.log(f"jsonl_store: append durability={durability} at {length:,} records")
                sid = f"len-{length}-{durability}"
                build(builder, sid, 0, length, s.build_batch)
                ctx.settle()
                ops = s.sync_ops if durability == "fsync" else s.fast_ops
                samples = _curve_point(store, sid, length, ops, s.repeats)
                res.point(
                    "append", f'jsonl_store durability="{durability}"', length, statistics.median(samples)
                )


def _curve_point(store: Any, session_id: str, length: int, ops: int, repeats: int) -> list[float]:
    """Seconds per append to a session of ``length`` records (0: the append creating it)."""
    if length == 0:
        return first_ops(lambda r: appender(store, f"{session_id}-{r}", workload.ASSISTANT, 1), repeats)
    # Keep the point's own appends from growing the session by more than half its length.
    ops = max(1, min(ops, length // (2 * repeats)))
    return per_op(appender(store, session_id, workload.ASSISTANT, ops * (repeats + 1)), ops, repeats)


def _resume(ctx: Context) -> None:
    """load() = latest snapshot + a 100-record tail, as the log grows through resume_lengths.

    Each length is raced against a reference session of the smallest length, so the
    target's ratio (big log vs. small log) compares loads timed side by side.
    """
    s, res, root = ctx.sizes, ctx.results, ctx.scratch("jsonl-resume")
    small, big = s.resume_lengths[0], s.resume_lengths[-1]
    sid, have, version = "resume", 0, 0
    with open_store(root, "none") as builder:
        build(builder, "reference", 0, small, s.build_batch)
        _compact(builder, "reference", small, 0)
        for length in s.resume_lengths:
            ctx.log(f"jsonl_store: build to {length:,} records, snapshot, load")
            began = time.perf_counter()
            build(builder, sid, have, length - have, s.build_batch)
            built = time.perf_counter() - began
            have = length
            version, snap_seconds = _compact(builder, sid, length, version)
            row = Row(
                f"jsonl.load.{length}",
                "jsonl_store",
                f"open + load() at {length:,} records (snapshot + {_tail(root, sid)}-record tail)",
                [],
                sqlite=f"sqlite.resume.{length}",
                op="load",
                extra={"snapshot_seconds": snap_seconds, "build_seconds": built},
            )
            reference = Row(
                "jsonl.load.reference",
                "jsonl_store",
                f"open + load() at {small:,} records, raced with the row above",
                [],
                op="load",
            )
            race(
                [Contender(row, loader(root, sid), 1), Contender(reference, loader(root, "reference"), 1)],
                s.race_repeats,
            )
            res.add(row)
            if length == big:
                res.add(reference)
            res.point("resume", "jsonl_store load(): snapshot + 100 tail", length, row.median)
            res.add(
                Row(
                    f"jsonl.snapshot.{length}",
                    "jsonl_store",
                    f"snapshot() at {length:,} records",
                    [snap_seconds],
                    op="snapshot",
                )
            )
            ctx.settle()
            res.add(_first_append(root, sid, length, s.repeats))
            have += s.repeats + 1


def _compact(store: Any, session_id: str, length: int, version: int) -> tuple[int, float]:
    """Snapshot all but the last 100 records; return the new version and the seconds it took."""
    from jsonl_store import CompactedMessage

    summary = CompactedMessage(content=f"Summary of the first {length - 100:,} records.")
    began = time.perf_counter()
    snap = store.snapshot(session_id, summary, length - 100, version)
    return snap.version, time.perf_counter() - began


def _tail(root: str, session_id: str) -> int:
    with open_store(root, "none") as store:
        return len(store.load(session_id).raw_tail)


def loader(root: str, session_id: str) -> Block:
    """Per op: open a new store object and load the session, as a resuming process does."""

    def block(n: int) -> None:
        for _ in range(n):
            store = open_store(root, "none")
            try:
                store.load(session_id)
            finally:
                store.close()

    return block


def _first_append(root: str, session_id: str, length: int, repeats: int) -> Row:
    """Open a store and append once, fsync'd: what the first turn after a resume pays."""
    samples = []
    items = iter(workload.store_messages(workload.ASSISTANT, 0, repeats + 1))
    for _ in range(repeats + 1):
        store = open_store(root, "fsync")
        try:
            with no_gc():
                began = time.perf_counter()
                append_one(store, session_id, next(items))
                samples.append(time.perf_counter() - began)
        finally:
            store.close()
    return Row(
        f"jsonl.first_append.{length}",
        "jsonl_store",
        f"first append after opening, at {length:,} records (fsync)",
        samples[1:],
        floor="floor.fdatasync",
        op="append",
    )


#: Records between the previous boundary and the end of the log in the "late" rows.
LATE = 100
#: Where the previous boundary is in the "early" rows.
EARLY = 100
#: Snapshots per repeat of the snapshot() rows (one alone is below the timer's noise here).
STEPS = 5


def _snapshot_steps(ctx: Context) -> None:
    """snapshot() one record past the previous boundary, in a small and a big log, raced.

    Two places for the previous boundary: early (record 100, so the new boundary is far
    from the end) and late (a few hundred records before the end). Each op moves the
    boundary on by one record. The first snapshot of each session (no previous one, so
    reading starts at byte 0 or at the end) is timed once.
    """
    from jsonl_store import CompactedMessage

    s, res, root = ctx.sizes, ctx.results, ctx.scratch("jsonl-snapshot-steps")
    lengths = s.snapshot_lengths
    with open_store(root, "none") as store:
        for where in ("early", "late"):
            contenders = []
            for length in lengths:
                sid = f"{where}-{length}"
                ctx.log(f"jsonl_store: build {length:,} records, snapshot() {where}")
                build(store, sid, 0, length, s.build_batch)
                # Late: leave room for every repeat's steps before the end of the log.
                through = EARLY if where == "early" else length - LATE - STEPS * (s.race_repeats + 1)
                summary = CompactedMessage(content=f"through {through}")
                made: list[Any] = []
                first = time_once(lambda: made.append(store.snapshot(sid, summary, through, 0)))  # noqa: B023
                res.add(
                    Row(
                        f"jsonl.snapshot_first.{where}.{length}",
                        "jsonl_store",
                        f"first snapshot(), boundary {length - through:,} records before the end of {length:,} (once)",
                        [first],
                        op="snapshot",
                    )
                )
                row = Row(
                    f"jsonl.snapshot_step.{where}.{length}",
                    "jsonl_store",
                    f"snapshot() one record past {'an early' if where == 'early' else 'a late'} boundary, "
                    f"{length:,} records",
                    [],
                    op="snapshot",
                )
                contenders.append(Contender(row, _stepper(store, sid, made[0].version, through), STEPS))
            race(contenders, s.race_repeats)
            for contender in contenders:
                res.add(contender.row)


def _stepper(store: Any, session_id: str, version: int, through: int) -> Block:
    """Per op: a snapshot whose boundary is one record past the previous snapshot's."""
    from jsonl_store import CompactedMessage

    state = [version, through]

    def block(n: int) -> None:
        for _ in range(n):
            state[1] += 1
            summary = CompactedMessage(content=f"through {state[1]}")
            state[0] = store.snapshot(session_id, summary, state[1], state[0]).version

    return block


def _load_snapshot_files(ctx: Context) -> None:
    """load() of a session with many snapshot files against one with a single file, raced.

    Both sessions hold a 100-record tail after the newest snapshot. Three ways: one store
    loading again and again; a new store object per load (a process serving requests);
    and, by emptying the store's cache of directory listings, a process's first load.
    """
    s, res, root = ctx.sizes, ctx.results, ctx.scratch("jsonl-snapshot-files")
    counts = (1, s.snapshot_files)
    ctx.log(f"jsonl_store: sessions with {counts[0]} and {counts[1]:,} snapshot files")
    with open_store(root, "none") as store:
        for count in counts:
            sid = f"files-{count}"
            build(store, sid, 0, count + 100, s.build_batch)
            for version in range(count):
                _compact_through(store, sid, version + 1, version)
    _wait_until_settled([os.path.join(root, f"files-{count}") for count in counts])
    ops = max(1, s.fast_ops // 20)
    with open_store(root, "none") as store:
        ways: dict[str, tuple[str, Callable[[str], Block]]] = {
            "same_store": ("one store, again and again", lambda sid: _repeat_loader(store, sid)),
            "new_store": ("a new store object each", lambda sid: loader(root, sid)),
            "first": ("a process's first (no listing cached)", lambda sid: _first_loader(root, sid)),
        }
        for way, (text, make) in ways.items():
            contenders = []
            for count in counts:
                sid = f"files-{count}"
                block = make(sid)
                row = Row(
                    f"jsonl.load.snapshot_files.{way}.{count}",
                    "jsonl_store",
                    f"load() with {count:,} snapshot file{'s' if count > 1 else ''}, {text}",
                    [],
                    op="load",
                )
                contenders.append(Contender(row, block, ops))
            race(contenders, s.race_repeats)
            for contender in contenders:
                res.add(contender.row)


def _repeat_loader(store: Any, session_id: str) -> Block:
    """Per op: load() on one store that stays open."""

    def block(n: int) -> None:
        for _ in range(n):
            store.load(session_id)

    return block


def _compact_through(store: Any, session_id: str, through: int, version: int) -> None:
    from jsonl_store import CompactedMessage

    store.snapshot(session_id, CompactedMessage(content=f"through {through}"), through, version)


def _wait_until_settled(directories: list[str]) -> None:
    """Sleep until a listing of each directory may be kept (its last change a few seconds old)."""
    try:
        from jsonl_store._log.snapshots import SETTLED_NS
    except ImportError:  # a version without the listing cache: nothing to wait for
        return
    newest = max(max(st.st_mtime_ns, st.st_ctime_ns) for st in map(os.stat, directories))
    pause = (newest + SETTLED_NS) / 1e9 - time.time() + 0.05
    if pause > 0:
        time.sleep(pause)


def _first_loader(root: str, session_id: str) -> Block:
    """Per op: a new store's load() after forgetting every cached listing, as a new process."""
    try:
        from jsonl_store._session.handles import SHARED_LISTINGS

        forget = SHARED_LISTINGS._entries.clear
    except (ImportError, AttributeError):  # a version without the cache: every load lists

        def forget() -> None:
            pass

    load = loader(root, session_id)

    def block(n: int) -> None:
        for _ in range(n):
            forget()
            load(1)

    return block


def _checkpoint_growth(ctx: Context) -> None:
    """checkpoint() adding one message to a short and to a long list, raced.

    A runner keeps its whole message list and saves it after each turn; only the new
    message is stored, and issue 9 wants the cost to follow that, not the list's length.
    durability="none", so what is compared is CPU work and not the disk's flush. Each
    session is saved once before timing: a store's first save reads the tail, once.
    """
    s, res, root = ctx.sizes, ctx.results, ctx.scratch("jsonl-checkpoint")
    cap = max(1, s.fast_ops // 20)
    contenders = []
    with open_store(root, "none") as store:
        for length in s.checkpoint_lengths:
            sid = f"checkpoint-{length}"
            ctx.log(f"jsonl_store: build a {length:,}-message list, checkpoint() it")
            messages = built_list(store, sid, length, s.build_batch)
            store.checkpoint(sid, messages)
            fresh = iter(
                [
                    m
                    for m, _ in workload.store_messages(
                        workload.ASSISTANT, length, cap * (s.race_repeats + 3)
                    )
                ]
            )
            block = checkpointer(store, sid, messages, fresh)
            row = Row(
                f"jsonl.checkpoint.{length}",
                "jsonl_store",
                f'checkpoint() adding 1 message to a {length:,}-message list, durability="none"',
                [],
                op="save",
            )
            contenders.append(Contender(row, block, calibrate(block, 0.02, cap)))
        ctx.log("jsonl_store: checkpoint() one message more, long list raced with short")
        race(contenders, s.race_repeats)
    for contender in contenders:
        res.add(contender.row)


def built_list(store: Any, session_id: str, count: int, batch: int) -> list[Any]:
    """Store ``count`` messages with append_many in batches; return them as the runner's list."""
    messages: list[Any] = []
    while len(messages) < count:
        chunk = [
            m
            for m, _ in workload.store_messages(
                workload.ASSISTANT, len(messages), min(batch, count - len(messages))
            )
        ]
        store.append_many(session_id, chunk)
        messages += chunk
    return messages


def checkpointer(store: Any, session_id: str, messages: list[Any], fresh: Iterator[Any]) -> Block:
    """Per op: the runner's turn adds one message to its list, then saves the whole list."""

    def block(n: int) -> None:
        for _ in range(n):
            messages.append(next(fresh))
            store.checkpoint(session_id, messages)

    return block


def _scan(ctx: Context) -> None:
    """records() over a mixed log of scan_bytes: throughput vs msgspec, then peak memory."""
    s, res, root = ctx.sizes, ctx.results, ctx.scratch("jsonl-scan")
    sid, path = "scan", log_path(root, "scan")
    ctx.log(f"jsonl_store: build a {s.scan_bytes / 2**20:,.0f} MiB log")
    count = 0
    with open_store(root, "none") as builder:
        batch = max(64, s.build_batch // 4)
        while not os.path.exists(path) or os.path.getsize(path) < s.scan_bytes:
            build(builder, sid, count, batch, batch, mixed=True)
            count += batch
    size = os.path.getsize(path)
    scans = min(s.repeats, 3) if size > (256 << 20) else s.repeats
    ctx.log("jsonl_store: records() scan, raced with msgspec decoding the same lines")
    with open_store(root, "none") as store:
        seen = _count(store.records(sid))
        scan = Row(
            "jsonl.records",
            "jsonl_store",
            f"records() full scan, {size / 2**20:,.0f} MiB, {seen:,} records",
            [],
            floor="floor.decode",
            op="record",
        )
        decode = Row("floor.decode", "floor", "msgspec decode of the same lines", [], op="record")
        race(
            [
                Contender(scan, lambda n: [_count(store.records(sid)) for _ in range(n)], 1, per=seen),
                Contender(decode, lambda n: [floor.decode_lines(path) for _ in range(n)], 1, per=seen),
            ],
            scans,
            warmup=0,  # the build just wrote the log: it is in the page cache
        )
    scan.extra = {"mib_per_s": size / 2**20 / (scan.median * seen), "bytes": size, "records": seen}
    res.add(scan)
    res.add(decode)
    ctx.log("jsonl_store: peak memory of a records() scan (subprocess)")
    mem = procs.scan_memory(root, sid)
    res.add(
        Row(
            "jsonl.scan_memory",
            "jsonl_store",
            f"RSS growth while scanning {size / 2**20:,.0f} MiB",
            [mem["growth_bytes"] / 2**20],
            unit="MB",
            extra=mem,
        )
    )


def _count(records: Any) -> int:
    n = 0
    for _ in records:
        n += 1
    return n


def _list_sessions(ctx: Context) -> None:
    s, res, root = ctx.sizes, ctx.results, ctx.scratch("jsonl-list")
    ctx.log(f"jsonl_store: create {s.sessions:,} sessions")
    with open_store(root, "none") as builder:
        for i in range(s.sessions):
            sid = f"session-{i:06d}"
            build(builder, sid, 0, s.records_per_listed_session, s.build_batch)
            if i % 4 == 0:  # some titled by a UI, as real stores are
                builder.update_session(sid, title=f"Session {i}")
    ctx.log("jsonl_store: list_sessions(), raced with reading the same files")
    listed: list[int] = []

    def list_all(n: int) -> None:
        for _ in range(n):
            store = open_store(root, "none")
            try:
                listed.append(len(store.list_sessions()))
            finally:
                store.close()

    log_name, meta_name = file_names()
    listing = Row(
        "jsonl.list_sessions",
        "jsonl_store",
        f"list_sessions(), {s.sessions:,} sessions",
        [],
        floor="floor.list",
        op="listing",
    )
    reading = Row(
        "floor.list",
        "floor",
        f"read meta file + last 4 KiB of log, {s.sessions:,} sessions",
        [],
        op="listing",
    )
    race(
        [
            Contender(listing, list_all, 1),
            Contender(
                reading,
                lambda n: [floor.read_heads_and_tails(root, meta_name, log_name) for _ in range(n)],
                1,
            ),
        ],
        s.repeats,
    )
    listing.extra["listed"] = listed[-1]
    if listed[-1] != s.sessions:
        res.notes.append(f"list_sessions() returned {listed[-1]:,} sessions, {s.sessions:,} exist")
    res.add(reading)
    res.add(listing)


def title_updater(store: Any, session_id: str) -> Block:
    """Per op: one ``update_session`` setting a new title."""
    counter = iter(range(10**9))

    def block(n: int) -> None:
        for _ in range(n):
            store.update_session(session_id, title=f"Title {next(counter)}")

    return block


def _torn_tail(ctx: Context) -> None:
    """Cut the last line in half, as a crash mid-write leaves it; then load the session."""
    root = ctx.scratch("jsonl-torn")
    with open_store(root, "none") as store:
        # One append per record: a torn line of an append_many batch drops the whole batch
        # (it is all or nothing), which would hide what happens to the records before it.
        block = appender(store, "torn", workload.ASSISTANT, 5)
        block(5)
    damage_file(log_path(root, "torn"), tear_last_line)
    try:
        with open_store(root, "none") as store:
            view = store.load("torn")
        outcome = f"no error: {len(view.raw_tail)} of 5 records"
    except Exception as exc:  # noqa: BLE001 - whatever it raises is the finding
        outcome = f"raises {type(exc).__name__}: {exc}"
    ctx.results.add(
        Row("jsonl.torn_tail", "jsonl_store", "load() after a torn last line", [], unit="text", text=outcome)
    )
