"""Head-to-head appends: each store raced against its floor and SQLite, turn by turn.

The targets of issue 5 are ratios between these rows, so the rows of one comparison are
measured interleaved (see `timing.race`) rather than section after section.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

from . import floor, jsonl, sqlite_baseline, workload
from .config import Context
from .timing import Contender, Row, race

KINDS = ((workload.ASSISTANT, "", "0.8 KB"), (workload.TOOL, ".tool", "10 KB"))
GROUP = floor.GROUP


def run(ctx: Context) -> None:
    missing = jsonl.missing()
    if missing:
        ctx.results.skipped["jsonl_store appends"] = missing
        print(f"  jsonl_store: {missing}")
    d = ctx.scratch("appends")
    with contextlib.ExitStack() as stack:
        stores: dict[str, Any] = {}
        if not missing:
            for durability in ("fsync", "none"):
                stores[durability] = stack.enter_context(
                    jsonl.open_store(os.path.join(d, "jsonl"), durability)
                )
        cons = {}
        for mode in sqlite_baseline.MODES:
            cons[mode] = sqlite_baseline.connect(os.path.join(d, f"{mode.lower()}.db"), mode)
            stack.callback(cons[mode].close)
        for kind, suffix, what in KINDS:
            _run_race(
                ctx,
                f"durable appends, {what}",
                _durable(ctx, kind, suffix, what, cons["FULL"], stores.get("fsync"), stack),
            )
            _run_race(
                ctx,
                f"buffered appends, {what}",
                _buffered(ctx, kind, suffix, what, cons["NORMAL"], stores.get("none"), stack),
            )
            if not missing:
                _run_race(
                    ctx,
                    f"append with redaction vs without, {what}",
                    _redaction(ctx, kind, suffix, what, stack),
                )
        if not missing:
            _run_race(ctx, "append with redaction vs without, 1 MB code output", _code_output(ctx, stack))
        _run_race(ctx, "group commit", _group(ctx, stores.get("fsync"), stack))
        _run_race(ctx, "metadata update", _metadata(ctx, stores.get("fsync")))
        if not missing:
            for durability in ("none", "fsync"):
                _run_race(ctx, f"round robin, {durability}", _round_robin(ctx, durability, stack))
    _note_line_sizes(ctx, os.path.join(d, "jsonl"))


def _run_race(ctx: Context, title: str, contenders: list[Contender]) -> None:
    ctx.log(f"race: {title} ({', '.join(c.row.key for c in contenders)})")
    ctx.settle()
    race(contenders, ctx.sizes.race_repeats)
    for contender in contenders:
        ctx.results.add(contender.row)


def _total(ctx: Context, ops: int) -> int:
    """Records a block needs: every repeat, the warm-up, and one spare repeat."""
    return ops * (ctx.sizes.race_repeats + 2) + 1


def _durable(
    ctx: Context, kind: str, suffix: str, what: str, con: Any, store: Any, stack: contextlib.ExitStack
) -> list[Contender]:
    ops, d = ctx.sizes.sync_ops, ctx.scratch("appends")
    total = _total(ctx, ops)
    floor_key = f"floor.fdatasync{suffix}"
    contenders = [
        Contender(
            Row(floor_key, "floor", f"encode + write + fdatasync, {what}", [], op="append"),
            floor.appender(os.path.join(d, f"sync{suffix}.jsonl"), kind, total, sync=True, stack=stack),
            ops,
        ),
        Contender(
            Row(
                f"sqlite.full{suffix}",
                "SQLite",
                f"INSERT autocommit, synchronous=FULL, {what}",
                [],
                floor=floor_key,
                op="append",
            ),
            sqlite_baseline.Appender(con, f"full{suffix}", 0, kind, total),
            ops,
        ),
    ]
    if store is not None:
        contenders.append(
            Contender(
                Row(
                    f"jsonl.append.fsync{suffix}",
                    "jsonl_store",
                    f'append, durability="fsync", {what}',
                    [],
                    floor=floor_key,
                    sqlite=f"sqlite.full{suffix}",
                    op="append",
                ),
                jsonl.appender(store, f"fsync{suffix}", kind, total),
                ops,
            )
        )
    return contenders


def _buffered(
    ctx: Context, kind: str, suffix: str, what: str, con: Any, store: Any, stack: contextlib.ExitStack
) -> list[Contender]:
    ops, d = ctx.sizes.fast_ops, ctx.scratch("appends")
    total = _total(ctx, ops)
    floor_key = f"floor.write{suffix}"
    contenders = [
        Contender(
            Row(floor_key, "floor", f"encode + write, {what}", [], op="append"),
            floor.appender(os.path.join(d, f"write{suffix}.jsonl"), kind, total, sync=False, stack=stack),
            ops,
        ),
        Contender(
            Row(
                f"floor.locked_write{suffix}",
                "floor",
                f"encode + flock + fstat + write + unlock, {what}",
                [],
                floor=floor_key,
                op="append",
            ),
            floor.locked_appender(os.path.join(d, f"locked{suffix}.jsonl"), kind, total, stack=stack),
            ops,
        ),
        Contender(
            Row(
                f"sqlite.normal{suffix}",
                "SQLite",
                f"INSERT autocommit, synchronous=NORMAL, {what}",
                [],
                floor=floor_key,
                op="append",
            ),
            sqlite_baseline.Appender(con, f"normal{suffix}", 0, kind, total),
            ops,
        ),
    ]
    if store is not None:
        contenders.append(
            Contender(
                Row(
                    f"jsonl.append.none{suffix}",
                    "jsonl_store",
                    f'append, durability="none", {what}',
                    [],
                    floor=floor_key,
                    sqlite=f"sqlite.normal{suffix}",
                    op="append",
                ),
                jsonl.appender(store, f"none{suffix}", kind, total),
                ops,
            )
        )
        if kind == workload.ASSISTANT:
            groups = max(1, ops // GROUP)
            contenders.append(
                Contender(
                    Row(
                        "jsonl.append_many64.none",
                        "jsonl_store",
                        f'append_many({GROUP}), durability="none", per record',
                        [],
                        floor=floor_key,
                        sqlite="sqlite.normal",
                        op="record",
                    ),
                    jsonl.many_appender(store, "many-none", _total(ctx, groups)),
                    groups,
                    per=GROUP,
                )
            )
    return contenders


def _redaction(
    ctx: Context, kind: str, suffix: str, what: str, stack: contextlib.ExitStack
) -> list[Contender]:
    """Appends with redaction (the default) raced against appends without it.

    durability="none", so what redaction costs is not hidden behind an fsync; the third
    row is the slow path, a message that holds a secret in every append.
    """
    ops, d = ctx.sizes.fast_ops, ctx.scratch("appends-redact")
    total = _total(ctx, ops)
    plain = stack.enter_context(jsonl.open_store(os.path.join(d, "plain"), "none", redact=False))
    redacting = stack.enter_context(jsonl.open_store(os.path.join(d, "redacting"), "none"))
    base = f"jsonl.append.none.unredacted{suffix}"
    contenders = [
        Contender(
            Row(base, "jsonl_store", f'append, durability="none", redact=False, {what}', [], op="append"),
            jsonl.appender(plain, f"plain{suffix}", kind, total),
            ops,
        ),
        Contender(
            Row(
                f"jsonl.append.none.redacted{suffix}",
                "jsonl_store",
                f'append, durability="none", redact=True (no secret), {what}',
                [],
                floor=base,
                op="append",
            ),
            jsonl.appender(redacting, f"redacting{suffix}", kind, total),
            ops,
        ),
    ]
    if kind == workload.ASSISTANT:
        contenders.append(
            Contender(
                Row(
                    "jsonl.append.none.secret",
                    "jsonl_store",
                    f'append, durability="none", redact=True, a secret in each, {what}',
                    [],
                    floor=base,
                    op="append",
                ),
                jsonl.secret_appender(redacting, "secret", kind, total),
                ops,
            )
        )
    return contenders


def _code_output(ctx: Context, stack: contextlib.ExitStack) -> list[Contender]:
    """1 MB of source code as a tool's output, appended with redaction and without (issue 20:
    within 1.5x). Code is redaction's hardest common case: '=' and ':' everywhere, and names
    like token and password in front of them. durability="none", as in `_redaction`."""
    ops, d = max(1, ctx.sizes.fast_ops // 500), ctx.scratch("appends-redact-code")
    total = _total(ctx, ops)
    plain = stack.enter_context(jsonl.open_store(os.path.join(d, "plain"), "none", redact=False))
    redacting = stack.enter_context(jsonl.open_store(os.path.join(d, "redacting"), "none"))
    base = "jsonl.append.none.unredacted.code"
    what = "1 MB code output"
    return [
        Contender(
            Row(base, "jsonl_store", f'append, durability="none", redact=False, {what}', [], op="append"),
            jsonl.code_output_appender(plain, "plain-code", total),
            ops,
        ),
        Contender(
            Row(
                "jsonl.append.none.redacted.code",
                "jsonl_store",
                f'append, durability="none", redact=True, {what}',
                [],
                floor=base,
                op="append",
            ),
            jsonl.code_output_appender(redacting, "redacting-code", total),
            ops,
        ),
    ]


def _group(ctx: Context, store: Any, stack: contextlib.ExitStack) -> list[Contender]:
    groups = max(1, ctx.sizes.sync_ops // 8)
    total = _total(ctx, groups)
    contenders = [
        Contender(
            Row(
                "floor.group64",
                "floor",
                f"{GROUP} × (encode + write) + 1 fdatasync, per record",
                [],
                op="record",
            ),
            floor.group_appender(os.path.join(ctx.scratch("appends"), "group.jsonl"), total, stack=stack),
            groups,
            per=GROUP,
        )
    ]
    if store is not None:
        contenders.append(
            Contender(
                Row(
                    "jsonl.append_many64.fsync",
                    "jsonl_store",
                    f'append_many({GROUP}), durability="fsync", per record',
                    [],
                    floor="floor.group64",
                    sqlite="sqlite.full",
                    op="record",
                ),
                jsonl.many_appender(store, "many-fsync", total),
                groups,
                per=GROUP,
            )
        )
    return contenders


def _metadata(ctx: Context, store: Any) -> list[Contender]:
    ops = ctx.sizes.sync_ops
    contenders = [
        Contender(
            Row(
                "floor.replace",
                "floor",
                f"tmp file + fsync + rename + dir fsync ({len(floor.META_LIKE)} B)",
                [],
                op="save",
            ),
            floor.replacer(os.path.join(ctx.scratch("appends-meta"), "meta.json")),
            ops,
        )
    ]
    if store is not None:
        jsonl.build(store, "meta", 0, 3, 3)
        contenders.append(
            Contender(
                Row(
                    "jsonl.update_session",
                    "jsonl_store",
                    'update_session(title=...), durability="fsync"',
                    [],
                    floor="floor.replace",
                    op="update",
                ),
                jsonl.title_updater(store, "meta"),
                ops,
            )
        )
    return contenders


def _round_robin(ctx: Context, durability: str, stack: contextlib.ExitStack) -> list[Contender]:
    """One store appending to many sessions in turn, raced with a store appending to one.

    More sessions than a store keeps open means every append meets a session whose
    descriptors were let go; issue 9 wants that to cost at most 1.3× an append to one.
    Each contender has a store of its own, so neither evicts the other's session.
    """
    s, root = ctx.sizes, ctx.scratch("appends-round-robin")
    ops = s.sync_ops if durability == "fsync" else s.fast_ops
    sessions = [f"rr-{durability}-{i:04d}" for i in range(s.round_robin_sessions)]
    one = f"one-{durability}"
    with jsonl.open_store(root, "none") as builder:
        for sid in (*sessions, one):
            jsonl.build(builder, sid, 0, 10, 10)  # existing sessions: no append creates one
    many_store = stack.enter_context(jsonl.open_store(root, durability))
    one_store = stack.enter_context(jsonl.open_store(root, durability))
    # Steady state, untimed: each store has appended to its sessions once, so the race
    # measures appends to sessions a store already uses (what a cache that is too small
    # makes expensive), not the first open of each session.
    warm = iter(workload.store_messages(workload.ASSISTANT, 0, len(sessions) + 1))
    for sid in sessions:
        jsonl.append_one(many_store, sid, next(warm))
    jsonl.append_one(one_store, one, next(warm))
    what = f'durability="{durability}", 0.8 KB'
    floor_key = "floor.fdatasync" if durability == "fsync" else "floor.write"
    return [
        Contender(
            Row(
                f"jsonl.round_robin.{durability}",
                "jsonl_store",
                f"append to {len(sessions):,} sessions in turn, one store, {what}",
                [],
                floor=floor_key,
                op="append",
            ),
            jsonl.round_robin_appender(many_store, sessions, workload.ASSISTANT, _total(ctx, ops)),
            ops,
        ),
        Contender(
            Row(
                f"jsonl.one_session.{durability}",
                "jsonl_store",
                f"append to one session, raced with the row above, {what}",
                [],
                floor=floor_key,
                op="append",
            ),
            jsonl.appender(one_store, one, workload.ASSISTANT, _total(ctx, ops)),
            ops,
        ),
    ]


def _note_line_sizes(ctx: Context, root: str) -> None:
    """Record the store's real bytes per line, to set beside the baselines' line sizes."""
    for key, sid in (("jsonl.append.fsync", "fsync"), ("jsonl.append.fsync.tool", "fsync.tool")):
        row = ctx.results.rows.get(key)
        if row is not None:
            row.extra["bytes_per_record"] = jsonl.bytes_per_line(jsonl.log_path(root, sid))
