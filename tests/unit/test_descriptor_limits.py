"""A store works within a small descriptor limit (``ulimit -n 64``), whatever it is asked to touch.

Its cache of open sessions takes at most a quarter of ``RLIMIT_NOFILE``, and when the
process runs out anyway (``EMFILE``: the program's own files, a limit lowered later) the
store closes its cached descriptors and retries instead of failing. Each test runs a real
child interpreter started with the low limit.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

LIMIT = 64


def _run_limited(script: str, root: Path, limit: int = LIMIT) -> Any:
    """Run ``script`` in a child whose RLIMIT_NOFILE is ``limit``; return the JSON it prints last."""

    def lower() -> None:
        _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))

    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), str(root)],
        preexec_fn=lower,  # set in the child, before its interpreter starts
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_500_sessions_through_one_store_under_ulimit_64(tmp_path: Path) -> None:
    """Appending to, recording usage for and reading back 500 sessions under ulimit -n 64 never fails."""
    result = _run_limited(
        """
        import json, resource, sys
        from jsonl_store import ModelUsage, SessionStore, UserMessage
        assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == 64
        store = SessionStore(sys.argv[1], durability="none")  # fsync costs time, not descriptors
        failures = []
        for i in range(500):
            try:
                store.append(f"s{i}", UserMessage(content=f"first {i}"), title=f"t{i}")
                store.append(f"s{i}", UserMessage(content=f"second {i}"))
                store.record_usage(f"s{i}", ModelUsage(input_tokens=i))
            except Exception as exc:
                failures.append(f"{i}: {exc!r}")
        read_back = 0
        for i in range(500):
            view = store.load(f"s{i}")
            assert [m.content for m in view.messages] == [f"first {i}", f"second {i}"], i
            assert store.usage_totals(f"s{i}").input_tokens == i
            read_back += 1
        listed = len(store.list_sessions())
        print(json.dumps({"failures": failures[:5], "failed": len(failures), "read": read_back, "listed": listed}))
        """,
        tmp_path / "store",
    )
    assert result == {"failures": [], "failed": 0, "read": 500, "listed": 500}


def test_open_descriptors_stay_within_a_quarter_of_the_limit(tmp_path: Path) -> None:
    """After touching 100 sessions under ulimit -n 64, the store holds at most 16 of the 64 descriptors."""
    result = _run_limited(
        """
        import json, os, sys
        from jsonl_store import ModelUsage, SessionStore, UserMessage
        before = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else -1
        store = SessionStore(sys.argv[1], durability="none")
        for i in range(100):
            store.append(f"s{i}", UserMessage(content="x"))
            store.record_usage(f"s{i}", ModelUsage(input_tokens=1))
        after = len(os.listdir("/proc/self/fd")) if before >= 0 else -1
        print(json.dumps({"held": after - before}))
        """,
        tmp_path / "store",
    )
    assert result["held"] <= LIMIT // 4


def test_out_of_descriptors_the_store_closes_its_cache_and_retries(tmp_path: Path) -> None:
    """When the program has used every other descriptor, a new session's append still succeeds (EMFILE retried)."""
    result = _run_limited(
        """
        import errno, json, os, sys
        from jsonl_store import SessionStore, UserMessage
        store = SessionStore(sys.argv[1])  # fsync: directory fsyncs need descriptors too
        for i in range(8):
            store.append(f"cached-{i}", UserMessage(content="x"))  # the cache now holds descriptors
        hogged = []
        try:
            while True:
                hogged.append(os.open(os.devnull, os.O_RDONLY))
        except OSError as exc:
            assert exc.errno == errno.EMFILE
        # Not one descriptor left but the store's own: a new session needs several.
        sequence = store.append("new", UserMessage(content="made with the cache's descriptors"))
        loaded = [m.content for m in store.load("new").messages]
        again = store.append("cached-0", UserMessage(content="reopened"))
        for fd in hogged:
            os.close(fd)
        print(json.dumps({"sequence": sequence, "loaded": loaded, "again": again}))
        """,
        tmp_path / "store",
    )
    assert result == {"sequence": 1, "loaded": ["made with the cache's descriptors"], "again": 2}


def test_round_robin_over_200_sessions_reopens_nothing_under_the_common_limit(tmp_path: Path) -> None:
    """Under ulimit -n 1024, a store appending to 200 sessions in turn keeps every log open: no reopen per append."""
    result = _run_limited(
        """
        import json, os, sys
        from jsonl_store import OsFileSystem, SessionStore, UserMessage

        class Counting(OsFileSystem):
            opened = 0
            def open(self, path, flags, mode=0o777):
                if path.endswith("messages.jsonl"):
                    Counting.opened += 1
                return super().open(path, flags, mode)

        store = SessionStore(sys.argv[1], durability="none", fs=Counting())
        sessions = [f"s{i:03d}" for i in range(200)]
        for sid in sessions:
            store.append(sid, UserMessage(content="first"))
        first = Counting.opened
        for _ in range(3):
            for sid in sessions:
                store.append(sid, UserMessage(content="again"))
        print(json.dumps({"first": first, "again": Counting.opened - first}))
        """,
        tmp_path / "store",
        limit=1024,
    )
    assert result["first"] >= 200  # each log opened (a summary may open it for reading too)
    assert result["again"] == 0
