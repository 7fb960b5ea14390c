"""``ls``/``list``, ``pin``/``unpin`` and ``usage`` over the whole store.

In-process runs of `main` with stdout captured (not a terminal, so plain text); the
totals are checked against the counts the test itself recorded.
"""

from __future__ import annotations

import contextlib
import io
import tempfile
from pathlib import Path

import orjson
import pytest
from helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from jsonl_store import AssistantMessage, ModelUsage, SessionStore, UserMessage
from jsonl_store.cli import main


def run(*argv: str) -> tuple[int, str, str]:
    """``jsonl-store argv`` in-process; its exit code, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """Three sessions, oldest first: ``a`` (with usage), ``b``, ``c``."""
    path = tmp_path / "sessions"
    with SessionStore(path) as store:
        store.append("a", UserMessage(content="hi"), title="first")
        store.append(
            "a",
            AssistantMessage(content="hello"),
            usage=ModelUsage(input_tokens=100, output_tokens=20, cache_read_tokens=40),
        )
        store.record_usage("a", {"input_tokens": 10, "output_tokens": 5, "model": "m-small"})
        store.append("b", UserMessage(content="hi"))
        store.append("c", UserMessage(content="hi"), parent_session_id="a")
    return path


def test_ls_is_list_newest_first_with_tokens(root: Path) -> None:
    """ls and list print the same table, newest first, with each session's tokens."""
    code, out, _ = run("--root", str(root), "ls")
    assert (code, out) == (0, run("--root", str(root), "list")[1])
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["SESSION", "RECORDS", "TOKENS"]
    assert [line.split()[0] for line in lines[1:]] == ["c", "b", "a"]
    assert lines[3].split()[2] == "135"  # 100 + 20 on the record, 10 + 5 in the usage log


def test_pin_puts_a_session_first_with_pinned_and_unpin_undoes_it(root: Path) -> None:
    """pin a: ls --pinned lists a first, marked; ls keeps the activity order; unpin a restores it."""
    assert run("--root", str(root), "pin", "a")[:2] == (0, "session a is pinned\n")
    assert SessionStore(root).get_session("a").pinned  # type: ignore[union-attr]
    _, out, _ = run("--root", str(root), "ls", "--pinned")
    rows = [line.split() for line in out.splitlines()[1:]]
    assert out.splitlines()[0].split()[:2] == ["PIN", "SESSION"]
    assert [row[0] for row in rows] == ["*", "c", "b"] and rows[0][1] == "a"
    _, out, _ = run("--root", str(root), "ls")
    assert [line.split()[0] for line in out.splitlines()[1:]] == ["c", "b", "a"]
    _, out, _ = run("--root", str(root), "ls", "--pinned", "--json")
    assert [(s["session_id"], s["pinned"]) for s in orjson.loads(out)] == [
        ("a", True),
        ("c", False),
        ("b", False),
    ]
    assert run("--root", str(root), "unpin", "a")[:2] == (0, "session a is no longer pinned\n")
    _, out, _ = run("--root", str(root), "ls", "--pinned", "--json")
    assert [s["session_id"] for s in orjson.loads(out)] == ["c", "b", "a"]


@pytest.mark.parametrize("command", ["pin", "unpin"])
def test_pin_of_an_unknown_session_exits_2_and_creates_nothing(root: Path, command: str) -> None:
    """pin nobody: one error line, exit 2, and no session directory appears."""
    code, _, err = run("--root", str(root), command, "nobody")
    assert code == 2 and err.startswith("jsonl-store: error: ") and err.count("\n") == 1
    assert not (root / "nobody").exists()


def test_usage_of_the_store_sums_sessions_and_models(root: Path) -> None:
    """usage without an ID: a row per session and per model, the totals and the cache hit rates."""
    code, out, _ = run("--root", str(root), "usage")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "Per session" and "HIT RATE" in lines[1]
    total = next(line for line in lines if line.startswith("total")).split()
    assert total == ["total", "2", "110", "25", "40", "0", "0", "36.4%"]
    per_model = out.split("Per model\n", 1)[1].splitlines()
    assert [line.split()[0] for line in per_model[1:]] == ["m-small", "(unknown)"]
    _, out, _ = run("--root", str(root), "usage", "--json")
    document = orjson.loads(out)
    assert document["totals"]["input_tokens"] == 110 and document["totals"]["cache_hit_rate"] == 40 / 110
    assert [(s["session_id"], s["calls"]) for s in document["sessions"]] == [("c", 0), ("b", 0), ("a", 2)]
    assert {m["model"]: m["total_tokens"] for m in document["models"]} == {"m-small": 15, "(unknown)": 120}


usages = st.lists(
    st.tuples(
        st.sampled_from(["s1", "s2", "s3"]),
        st.sampled_from(["m-a", "m-b", None]),
        st.integers(0, 10**6),
        st.integers(0, 10**6),
        st.integers(0, 10**6),
    ),
    max_size=12,
)


@given(usages)
@settings(max_examples=examples(30))
def test_usage_totals_are_the_sum_of_what_was_recorded(
    recorded: list[tuple[str, str | None, int, int, int]],
) -> None:
    """Whatever calls are recorded: the overall totals are their sum, and sessions and models each partition them."""
    with tempfile.TemporaryDirectory() as directory:
        with SessionStore(directory, durability="none") as store:
            store.create_session("s1")
            for session, model, input_tokens, output_tokens, cached in recorded:
                item: dict[str, object] = {"input_tokens": input_tokens, "output_tokens": output_tokens}
                item["cache_read_tokens"] = cached
                if model is not None:
                    item["model"] = model
                store.record_usage(session, item)
        code, out, _ = run("--root", directory, "usage", "--json")
    assert code == 0
    document = orjson.loads(out)
    sums = {
        "input_tokens": sum(call[2] for call in recorded),
        "output_tokens": sum(call[3] for call in recorded),
        "cache_read_tokens": sum(call[4] for call in recorded),
    }
    for field, expected in sums.items():
        assert document["totals"][field] == expected
        assert sum(s[field] for s in document["sessions"]) == expected
        assert sum(m[field] for m in document["models"]) == expected
    assert document["totals"]["calls"] == len(recorded)
    named = [call[1] or "(unknown)" for call in recorded]
    assert {m["model"]: m["calls"] for m in document["models"]} == {name: named.count(name) for name in named}
