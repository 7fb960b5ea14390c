"""jsonl_store against the same work done by hand on a plain JSONL file, raced.

Two operations where a store's bookkeeping is all there is between it and the bare file:

- restoring a whole context: ``load(sid).messages`` on a session with no snapshot (every
  record is in the tail) against opening the store's own log, reading it, and parsing each
  line with ``orjson.loads`` into its message dict;
- a durable batch of 64 messages: ``append_many`` with ``durability="fsync"`` against
  encoding 64 records with ``orjson`` into one buffer, one ``write`` and one ``fdatasync``
  (the flush the store makes).

The hand-written rows check nothing (no checksum, no sequence order, no tool-batch repair,
no lock): they are what a user who writes JSONL themselves would run.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

import orjson

from . import floor, jsonl, workload
from .config import Context
from .timing import Block, Contender, Row, calibrate, race

GROUP = floor.GROUP


def run(ctx: Context) -> None:
    root = ctx.scratch("plain")
    with contextlib.ExitStack() as stack:
        for count in ctx.sizes.context_lengths:
            _race(
                ctx,
                f"whole context of {count:,}: load().messages vs read + parse",
                _context(ctx, count, root),
            )
        ctx.settle()
        _race(
            ctx, f"durable batch of {GROUP}: append_many vs one write + fdatasync", _batch(ctx, root, stack)
        )


def _race(ctx: Context, title: str, contenders: list[Contender]) -> None:
    ctx.log(f"race: {title} ({', '.join(c.row.key for c in contenders)})")
    race(contenders, ctx.sizes.race_repeats)
    for contender in contenders:
        ctx.results.add(contender.row)


def pairs(count: int) -> list[Any]:
    """``count`` messages of an agent's loop: an assistant message with one call, its result."""
    out = []
    for i in range(count // 2):
        call, _ = workload.store_message(workload.turn(workload.ASSISTANT, i))
        result, _ = workload.store_message(workload.turn(workload.TOOL, i))
        # The workload's results answer calls of their own pool: answer this one.
        answer = type(result)(tool_call_id=call.tool_calls[0].id, name=result.name, content=result.content)
        out += [call, answer]
    return out


#: Each sample of a context race lasts about this long (several loads of a short context):
#: a sample of a millisecond is at the mercy of one context switch.
SAMPLE_SECONDS = 0.05


def _context(ctx: Context, count: int, root: str) -> list[Contender]:
    session_id = f"context-{count}"
    messages = pairs(count)
    with jsonl.open_store(root, "none") as store:
        for first in range(0, len(messages), ctx.sizes.build_batch):
            store.append_many(session_id, messages[first : first + ctx.sizes.build_batch])
        assert len(store.load(session_id).messages) == len(messages)
    path = jsonl.log_path(root, session_id)
    size = os.path.getsize(path) / 2**20
    what = f"{len(messages):,} messages (0.8 KB calls, 10 KB results), {size:,.1f} MiB"
    by_hand, loads = _by_hand(path), _messages(root, session_id)
    ops = calibrate(by_hand, SAMPLE_SECONDS, 1_000)
    key = f"plain.load_messages.{count}"
    return [
        Contender(Row(key, "by hand", f"read + orjson.loads each line, {what}", [], op="load"), by_hand, ops),
        Contender(
            Row(
                f"jsonl.load_messages.{count}",
                "jsonl_store",
                f"open + load().messages, {what}",
                [],
                floor=key,
                op="load",
            ),
            loads,
            ops,
        ),
    ]


def _by_hand(path: str) -> Block:
    """Per op: the log read whole and each line parsed, its message kept."""

    def block(n: int) -> None:
        for _ in range(n):
            with open(path, "rb") as f:
                data = f.read()
            [orjson.loads(line)["message"] for line in data.splitlines()]

    return block


def _messages(root: str, session_id: str) -> Block:
    """Per op: a new store object, ``load`` and its provider-safe ``messages``."""

    def block(n: int) -> None:
        for _ in range(n):
            with jsonl.open_store(root, "none") as store:
                store.load(session_id).messages  # noqa: B018 (the property does the work)

    return block


def _batch(ctx: Context, root: str, stack: contextlib.ExitStack) -> list[Contender]:
    groups = max(1, ctx.sizes.sync_ops // 8)
    total = groups * (ctx.sizes.race_repeats + 2) + 1
    store = stack.enter_context(jsonl.open_store(os.path.join(root, "store"), "fsync"))
    label = f"{GROUP} × 0.8 KB, per record"
    return [
        Contender(
            Row(
                "plain.group64",
                "by hand",
                f"encode {GROUP} with orjson + 1 write + 1 fdatasync, {label}",
                [],
                op="record",
            ),
            _hand_batches(os.path.join(root, "plain.jsonl"), total, stack),
            groups,
            per=GROUP,
        ),
        Contender(
            Row(
                "jsonl.append_many64.durable",
                "jsonl_store",
                f'append_many({GROUP}), durability="fsync", {label}',
                [],
                floor="plain.group64",
                op="record",
            ),
            jsonl.many_appender(store, "batch", total),
            groups,
            per=GROUP,
        ),
    ]


def _hand_batches(path: str, total_groups: int, stack: contextlib.ExitStack) -> Block:
    """Per op: 64 records encoded into one buffer, one write, one fdatasync."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    stack.callback(os.close, fd)
    records = iter(workload.record_dicts(workload.ASSISTANT, 0, total_groups * GROUP))
    dumps, newline = orjson.dumps, orjson.OPT_APPEND_NEWLINE

    def block(groups: int) -> None:
        for _ in range(groups):
            os.write(fd, b"".join([dumps(next(records), option=newline) for _ in range(GROUP)]))
            os.fdatasync(fd)

    return block
