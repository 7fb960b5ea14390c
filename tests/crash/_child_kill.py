"""The process `test_kill.py` kills: it writes to one session and reports what was acknowledged.

Run as ``python _child_kill.py ROLE JSON_ARGS``. It prints ``ready``, waits for ``go`` on
stdin, then writes until it is killed, flushing one report line per finished call:

- ``try ID COUNT`` before an append of COUNT messages whose ids are ``ID-0`` ...;
  ``ack SEQ SHA`` for each message once `append`/`append_many` returned (SHA: sha256 of
  the message as canonical JSON);
- ``try-snap VERSION THROUGH ID`` / ``ack-snap VERSION THROUGH ID`` around `snapshot`;
- ``try-meta TITLE`` / ``ack-meta VERSION TITLE`` around `update_session`.

Every message carries ``digest``, the sha256 of its ``content``, so any record found on
disk can be checked on its own, acknowledged or not.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
import time
from typing import Any

from jsonl_store import CompactedMessage, SessionStore

#: A child nobody kills stops by itself (the parent died or forgot it).
MAX_SECONDS = 60.0


def say(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def sha(message: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(message, sort_keys=True).encode()).hexdigest()


def make(message_id: str, size: int, rng: random.Random) -> dict[str, Any]:
    content = rng.randbytes(size // 2 + 1).hex()[:size]
    return {
        "role": "user",
        "id": message_id,
        "content": content,
        "digest": hashlib.sha256(content.encode()).hexdigest(),
    }


def append_loop(store: SessionStore, args: dict[str, Any], rng: random.Random) -> None:
    """Append (one message, or a large batch) until killed; report each acknowledged sequence."""
    sid, many = args["sid"], args["role"] == "append_many"
    deadline = time.monotonic() + MAX_SECONDS
    call = 0
    while time.monotonic() < deadline:
        prefix = f"r{args['round']}c{call}"
        call += 1
        if many:
            batch = [make(f"{prefix}-{i}", rng.randint(500, 4000), rng) for i in range(rng.randint(50, 300))]
            say(f"try {prefix} {len(batch)}")
            sequences = store.append_many(sid, batch)
        else:
            batch = [make(f"{prefix}-0", rng.randint(10, 3000), rng)]
            say(f"try {prefix} 1")
            sequences = [store.append(sid, batch[0])]
        say("\n".join(f"ack {s} {sha(m)}" for s, m in zip(sequences, batch, strict=True)))


def meta_loop(store: SessionStore, args: dict[str, Any], rng: random.Random) -> None:
    """Alternate appends, snapshots and metadata updates until killed; report each one acknowledged."""
    sid, round_ = args["sid"], args["round"]
    view = store.load(sid)
    version = view.snapshot.version if view.snapshot is not None else 0
    deadline = time.monotonic() + MAX_SECONDS
    step = 0
    while time.monotonic() < deadline:
        prefix = f"r{round_}s{step}"
        batch = [make(f"{prefix}-{i}", rng.randint(10, 500), rng) for i in range(rng.randint(1, 3))]
        say(f"try {prefix} {len(batch)}")
        sequences = store.append_many(sid, batch)
        say("\n".join(f"ack {s} {sha(m)}" for s, m in zip(sequences, batch, strict=True)))
        summary_id = f"snap-{prefix}"
        say(f"try-snap {version + 1} {sequences[-1]} {summary_id}")
        snapshot = store.snapshot(
            sid, CompactedMessage(id=summary_id, content=f"summary {prefix}"), sequences[-1], version
        )
        version = snapshot.version
        say(f"ack-snap {version} {sequences[-1]} {summary_id}")
        title = f"title-{prefix}"
        say(f"try-meta {title}")
        summary = store.update_session(sid, title=title, metadata={f"r{round_}": step})
        say(f"ack-meta {summary.version} {title}")
        step += 1


def main() -> None:
    args = json.loads(sys.argv[2])
    args["role"] = sys.argv[1]
    store = SessionStore(args["root"], durability="fsync")
    rng = random.Random(args["seed"])
    say("ready")
    if sys.stdin.readline().strip() != "go":
        return
    if args["role"] == "meta":
        meta_loop(store, args, rng)
    else:
        append_loop(store, args, rng)


if __name__ == "__main__":
    main()
