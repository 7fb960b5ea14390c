"""zett-agent's session management calls, run on zett's own SQLite storage and on ours.

zett-agent's sdist ships no tests (0.2.1: only ``src/``), so these are ours, of each call
``SQLSessionStorage`` and ``SQLSessionExtension`` offer (``zett_agent/_sql_storage.py``,
``zett_agent/extensions/sql.py``; the SQLite classes, which are all 0.1.17 and 0.2.0 have,
inherit them): its results, page by page, and its errors. Every test
runs against both storages (the ``backend`` parameter), so what it expects is what zett's
own storage does, not our reading of it.

Not applicable, so not compared (`NOT_APPLICABLE`): the SQL storage's database calls and
fields. Where the two differ on purpose, the test says so (`test_zett.py` has the rest).
"""

from __future__ import annotations

import asyncio
import inspect
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import pytest

zett_agent = pytest.importorskip("zett_agent")

from zett_agent.agent import Agent, AgentRunConfig  # noqa: E402
from zett_agent.extensions.compaction import CompactedMessage  # noqa: E402
from zett_agent.extensions.persistence import RawMessageRecord, SessionSummary, SessionView  # noqa: E402
from zett_agent.extensions.sqlite import SQLiteSessionExtension  # noqa: E402
from zett_agent.messages import AssistantMessage, UserMessage  # noqa: E402
from zett_agent.model import ModelEvent, ModelRequest, ModelResponse, RetryOptions  # noqa: E402
from zett_agent.storage import SQLiteSessionStorage  # noqa: E402

from jsonl_store import InvalidMessage, SessionStore, encode_session_id  # noqa: E402
from jsonl_store.adapters.zett import JsonlSessionExtension, JsonlSessionStorage, ZettCompatError  # noqa: E402
from jsonl_store.importers import import_claude_code  # noqa: E402

T = TypeVar("T")

#: What zett's SQL classes offer that is about the database, with why ours has none
#: (zett-agent 0.2.1; the SQLite-only 0.1.17 and 0.2.0 have none of them).
NOT_APPLICABLE = {
    "build_url": "a SQLAlchemy URL from connection parameters: the store is a directory",
    "for_sqlite": "opens a SQLite file: JsonlSessionStorage(root) opens a store",
    "for_mysql": "opens a MySQL server: no server",
    "for_postgres": "opens a PostgreSQL server: no server",
}
#: Instance fields of the SQL storage, database ones all: ``url``, ``dialect`` (0.2.1),
#: ``path`` (the SQLite file) and ``engine`` (SQLAlchemy's). Ours has ``store`` instead.
NOT_APPLICABLE_FIELDS = ("url", "dialect", "path", "engine")

CONFLICT = "Snapshot conflict; reload the session"
OUTSIDE = "Snapshot boundary must identify an existing Raw Log message"
BEHIND = "Snapshot boundary must advance beyond the previous checkpoint"


@pytest.fixture(params=["sqlite", "jsonl"])
def backend(request: pytest.FixtureRequest) -> str:
    """Which storage a test runs on: zett's SQLite storage, or ours."""
    name: str = request.param
    return name


def open_storage(backend: str, tmp_path: Path) -> Any:
    if backend == "sqlite":
        return SQLiteSessionStorage(tmp_path / "sessions.sqlite3")
    return JsonlSessionStorage(tmp_path / "jsonl", durability="none")


def on(backend: str, tmp_path: Path, scenario: Callable[[Any], Awaitable[T]]) -> T:
    """``scenario(storage)`` on a new storage of ``backend``, closed afterwards."""

    async def run() -> T:
        storage = open_storage(backend, tmp_path)
        try:
            return await scenario(storage)
        finally:
            await storage.close()

    return asyncio.run(run())


async def refusal(storage: Any, call: Awaitable[object]) -> str:
    """The text of the ``ValueError`` a call raises: exactly a ValueError from zett's storage,
    exactly a `ZettCompatError` (a ValueError with zett's text, and a JsonlStoreError) from ours."""
    with pytest.raises(ValueError) as caught:
        await call
    expected = (
        ZettCompatError if isinstance(storage, JsonlSessionStorage | JsonlSessionExtension) else ValueError
    )
    assert type(caught.value) is expected, type(caught.value)
    return str(caught.value)


async def say(storage: Any, session_id: str, text: str, **options: Any) -> int:
    sequence: int = await storage.append(session_id, "req-1", UserMessage(content=text), **options)
    return sequence


def same_moment(summary: SessionSummary) -> bool:
    return summary.created_at == summary.updated_at and summary.created_at.utcoffset() == timedelta(0)


# -- the classes ----------------------------------------------------------------------------


def signature(member: Callable[..., object]) -> inspect.Signature:
    """The signature with its annotations as types, so the two modules' spellings compare."""
    try:
        return inspect.signature(member, eval_str=True)
    except NameError:  # a hook both inherit from zett's AgentExtension, typed under TYPE_CHECKING
        return inspect.signature(member)


def public_calls(cls: type) -> dict[str, inspect.Signature]:
    return {
        name: signature(member)
        for name, member in inspect.getmembers(cls, callable)
        if not name.startswith("_")
    }


@pytest.mark.parametrize(
    ("theirs", "ours"),
    [(SQLiteSessionStorage, JsonlSessionStorage), (SQLiteSessionExtension, JsonlSessionExtension)],
)
def test_every_call_of_zetts_sql_classes_is_on_ours_with_its_signature(theirs: type, ours: type) -> None:
    """Each public method of zett's SQLite storage and extension is on ours, parameters and types alike."""
    # Since zett-agent 0.2.1 the SQLite classes inherit every call from SQLSessionStorage and
    # SQLSessionExtension; 0.1.17 and 0.2.0 have the SQLite classes only.
    expected = public_calls(theirs)
    wanted = {name: signature for name, signature in expected.items() if name not in NOT_APPLICABLE}
    assert {"create_session", "list_sessions", "get_session", "update_session", "delete_session"} <= set(
        wanted
    )
    found = public_calls(ours)
    assert {name: found.get(name) for name in wanted} == wanted


def test_the_sql_storages_own_fields_are_database_ones(tmp_path: Path) -> None:
    """The instance fields zett's SQLite storage has beyond ours are among its database ones."""
    sql = SQLiteSessionStorage(tmp_path / "sessions.sqlite3")
    ours = JsonlSessionStorage(tmp_path / "jsonl")
    public = {name for name in vars(sql) if not name.startswith("_")}
    extra = public - {name for name in vars(ours) if not name.startswith("_")}
    assert {"path", "engine"} <= extra <= set(NOT_APPLICABLE_FIELDS)
    asyncio.run(sql.close())


def test_the_extension_is_a_drop_in_for_sqlite_session_extension() -> None:
    """JsonlSessionExtension has every public call SQLiteSessionExtension has, and nothing it lacks."""
    assert set(public_calls(SQLiteSessionExtension)) == set(public_calls(JsonlSessionExtension))


# -- create_session ---------------------------------------------------------------------------


def test_create_session_makes_an_empty_session_with_stripped_fields(backend: str, tmp_path: Path) -> None:
    """create_session returns zett's SessionSummary, get_session and load give it back as made."""

    async def scenario(storage: Any) -> tuple[SessionSummary, SessionSummary | None, SessionView]:
        made = await storage.create_session(
            session_id="user:42/chat 1",
            parent_session_id="root-1",
            title="  Plan the trip ",
            agent_name=" planner ",
            session_type=7,
        )
        return made, await storage.get_session("user:42/chat 1"), await storage.load("user:42/chat 1")

    made, got, view = on(backend, tmp_path, scenario)
    assert type(made) is SessionSummary and got == made and same_moment(made)
    assert made.model_dump(exclude={"created_at", "updated_at"}) == {
        "session_id": "user:42/chat 1", "parent_session_id": "root-1", "session_type": 7,
        "title": "Plan the trip", "agent_name": "planner", "message_count": 0,
    }  # fmt: skip
    assert view == SessionView(
        parent_session_id="root-1", session_type=7, title="Plan the trip", agent_name="planner"
    )


@pytest.mark.parametrize("given", [None, ""])
def test_create_session_without_an_id_makes_a_uuid7(backend: str, tmp_path: Path, given: str | None) -> None:
    """No id (or an empty one) gets a new UUIDv7, as zett's own sessions have."""

    async def scenario(storage: Any) -> tuple[SessionSummary, SessionSummary | None]:
        made = await storage.create_session(session_id=given)
        return made, await storage.get_session(made.session_id)

    made, got = on(backend, tmp_path, scenario)
    assert uuid.UUID(made.session_id).version == 7 and str(uuid.UUID(made.session_id)) == made.session_id
    assert got == made and made.session_type == 0 and made.title is None


def test_create_session_refuses_an_id_in_use(backend: str, tmp_path: Path) -> None:
    """A session made by create_session or by an append exists: creating it again is refused."""

    async def scenario(storage: Any) -> list[str]:
        await storage.create_session(session_id="made")
        await say(storage, "written", "hi")
        return [
            await refusal(storage, storage.create_session(session_id="made", title="Again")),
            await refusal(storage, storage.create_session(session_id="written")),
        ]

    assert on(backend, tmp_path, scenario) == [
        "Session already exists: made",
        "Session already exists: written",
    ]


BAD_FIELDS = [
    ({"session_id": "   "}, "session_id cannot be empty"),
    ({"parent_session_id": ""}, "parent_session_id cannot be empty"),
    ({"session_id": "a", "parent_session_id": "a"}, "parent_session_id must differ from session_id"),
    ({"title": " \t "}, "Session title must contain between 1 and 200 characters"),
    ({"title": "t" * 201}, "Session title must contain between 1 and 200 characters"),
    ({"agent_name": ""}, "Agent name must contain between 1 and 64 characters"),
    ({"agent_name": "a" * 65}, "Agent name must contain between 1 and 64 characters"),
    ({"session_type": -1}, "session_type cannot be negative"),
    ({"session_type": True}, "session_type must be an integer code"),
    ({"session_type": "1"}, "session_type must be an integer code"),
]


@pytest.mark.parametrize(("fields", "message"), BAD_FIELDS)
def test_create_session_refuses_bad_fields_in_zetts_words(
    backend: str, tmp_path: Path, fields: dict[str, Any], message: str
) -> None:
    """Each bad field of create_session is a ValueError with zett's text, and nothing is made."""

    async def scenario(storage: Any) -> tuple[str, list[SessionSummary]]:
        return await refusal(storage, storage.create_session(**fields)), await storage.list_sessions()

    assert on(backend, tmp_path, scenario) == (message, [])


def test_an_appends_parent_must_be_the_created_sessions(backend: str, tmp_path: Path) -> None:
    """A session created with a parent takes appends with that parent only, as its first append would."""

    async def scenario(storage: Any) -> tuple[str, int, SessionSummary | None]:
        await storage.create_session(session_id="child", parent_session_id="root")
        error = await refusal(storage, say(storage, "child", "hi"))
        return (
            error,
            await say(storage, "child", "hi", parent_session_id="root"),
            await storage.get_session("child"),
        )

    error, sequence, summary = on(backend, tmp_path, scenario)
    assert (error, sequence) == ("Session parent cannot change after creation", 1)
    assert summary is not None and (summary.parent_session_id, summary.message_count) == ("root", 1)


def test_an_append_naming_its_own_session_as_parent_is_refused_in_zetts_words(tmp_path: Path) -> None:
    """SQL's append stores a session as its own parent; ours refuses, with zett's create_session text."""

    async def scenario(storage: Any) -> tuple[str, SessionSummary | None]:
        return await refusal(
            storage, say(storage, "s", "hi", parent_session_id="s")
        ), await storage.get_session("s")

    assert on("jsonl", tmp_path, scenario) == ("parent_session_id must differ from session_id", None)
    sql = on("sqlite", tmp_path, lambda storage: say(storage, "s", "hi", parent_session_id="s"))
    assert sql == 1  # the difference, kept in view: should zett refuse it too, this fails


def test_a_session_another_process_deleted_and_made_again_takes_its_new_parent(
    backend: str, tmp_path: Path
) -> None:
    """After another storage deleted a session and made it anew without a parent, appends take none."""

    async def scenario(storage: Any) -> tuple[int, str, SessionSummary | None]:
        other = open_storage(backend, tmp_path)
        try:
            await say(storage, "s", "first", parent_session_id="p")
            await other.delete_session("s")
            await say(other, "s", "anew")
            sequence = await say(storage, "s", "from the first storage")
            error = await refusal(storage, say(storage, "s", "with the old parent", parent_session_id="p"))
            return sequence, error, await storage.get_session("s")
        finally:
            await other.close()

    sequence, error, summary = on(backend, tmp_path, scenario)
    assert (sequence, error) == (2, "Session parent cannot change after creation")
    assert summary is not None and (summary.parent_session_id, summary.message_count) == (None, 2)


# -- get_session, count_messages --------------------------------------------------------------


def test_an_unknown_session_is_none_zero_and_empty_everywhere(backend: str, tmp_path: Path) -> None:
    """get_session None, count_messages 0, no raw messages, delete False: for ids never written and ''."""

    async def scenario(storage: Any) -> list[object]:
        found: list[object] = []
        for session_id in ("nobody", ""):
            found += [
                await storage.get_session(session_id),
                await storage.count_messages(session_id),
                await storage.list_raw_messages(session_id),
                await storage.update_session(session_id, title="T"),
                await storage.delete_session(session_id),
                await storage.load(session_id),
            ]
        return found

    assert on(backend, tmp_path, scenario) == [None, 0, [], None, False, SessionView(session_type=0)] * 2


def test_get_session_of_appended_messages_counts_the_raw_log(backend: str, tmp_path: Path) -> None:
    """Appends make the session (title, agent, parent from the first); a snapshot leaves the count alone."""

    async def scenario(storage: Any) -> tuple[list[int], SessionSummary | None]:
        counts = []
        await say(storage, "s", "one", title="First", agent_name="planner", parent_session_id="p")
        counts.append(await storage.count_messages("s"))
        for text in ("two", "three"):
            await say(storage, "s", text, parent_session_id="p")
        counts.append(await storage.count_messages("s"))
        await storage.snapshot("s", CompactedMessage(content="Said one and two."), 2, 0)
        counts.append(await storage.count_messages("s"))
        return counts, await storage.get_session("s")

    counts, summary = on(backend, tmp_path, scenario)
    assert counts == [1, 3, 3]
    assert summary is not None and summary.model_dump(exclude={"created_at", "updated_at"}) == {
        "session_id": "s", "parent_session_id": "p", "session_type": 0,
        "title": "First", "agent_name": "planner", "message_count": 3,
    }  # fmt: skip
    assert summary.updated_at > summary.created_at


# -- update_session -----------------------------------------------------------------------------


def test_update_session_sets_the_given_fields_stripped(backend: str, tmp_path: Path) -> None:
    """update_session changes the named fields only, strips them, and returns what get_session gives."""

    async def scenario(storage: Any) -> list[SessionSummary | None]:
        await storage.create_session(session_id="s", title="Old", agent_name="planner")
        seen = [await storage.update_session("s", title="  New title ")]
        seen.append(await storage.update_session("s", agent_name=" coder"))
        seen.append(await storage.get_session("s"))
        return seen

    renamed, reassigned, got = on(backend, tmp_path, scenario)
    assert renamed is not None and (renamed.title, renamed.agent_name) == ("New title", "planner")
    assert reassigned is not None and (reassigned.title, reassigned.agent_name) == ("New title", "coder")
    assert got == reassigned


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({}, "At least one session field must be supplied"),
        ({"title": None, "agent_name": None}, "At least one session field must be supplied"),
        ({"title": "  "}, "Session title must contain between 1 and 200 characters"),
        ({"title": "x" * 201}, "Session title must contain between 1 and 200 characters"),
        ({"agent_name": "a" * 65}, "Agent name must contain between 1 and 64 characters"),
    ],
)
def test_update_session_refuses_bad_fields_in_zetts_words(
    backend: str, tmp_path: Path, fields: dict[str, Any], message: str
) -> None:
    """Bad update_session arguments are ValueErrors with zett's text, for known and unknown sessions alike."""

    async def scenario(storage: Any) -> list[object]:
        await storage.create_session(session_id="s", title="Kept")
        errors: list[object] = [
            await refusal(storage, storage.update_session(session_id, **fields))
            for session_id in ("s", "nobody")
        ]
        return [*errors, await storage.get_session("s")]

    first, second, summary = on(backend, tmp_path, scenario)
    assert first == second == message
    assert isinstance(summary, SessionSummary) and summary.title == "Kept"


def test_update_session_is_activity_that_moves_the_session_first(backend: str, tmp_path: Path) -> None:
    """A renamed session's updated_at moves on, and list_sessions then lists it first."""

    async def scenario(storage: Any) -> tuple[list[str], SessionSummary, list[str], SessionSummary]:
        before = await storage.create_session(session_id="older")
        await storage.create_session(session_id="newer")
        order = [s.session_id for s in await storage.list_sessions()]
        after = await storage.update_session("older", title="Renamed")
        return order, before, [s.session_id for s in await storage.list_sessions()], after

    order, before, reordered, after = on(backend, tmp_path, scenario)
    assert order == ["newer", "older"] and reordered == ["older", "newer"]
    assert after.created_at == before.created_at and after.updated_at > before.updated_at


# -- list_sessions ---------------------------------------------------------------------------------


async def five_sessions(storage: Any) -> None:
    """s0..s4 of types 0, 0, 1, 2, 1, one message each in that order, then one more in s1."""
    for index, kind in enumerate((0, 0, 1, 2, 1)):
        await storage.create_session(session_id=f"s{index}", session_type=kind, title=f"Chat {index}")
        await say(storage, f"s{index}", "hello")
    await say(storage, "s1", "again")


def test_list_sessions_pages_by_latest_activity(backend: str, tmp_path: Path) -> None:
    """Pages of limit/offset split one order, latest activity first, with each session's count."""

    async def scenario(storage: Any) -> tuple[list[SessionSummary], list[list[SessionSummary]]]:
        await five_sessions(storage)
        pages = [await storage.list_sessions(limit=2, offset=offset) for offset in (0, 2, 4, 5, 50)]
        return await storage.list_sessions(), pages

    everything, pages = on(backend, tmp_path, scenario)
    assert [(s.session_id, s.message_count) for s in everything] == [
        ("s1", 2), ("s4", 1), ("s3", 1), ("s2", 1), ("s0", 1),
    ]  # fmt: skip
    assert all(type(s) is SessionSummary and s.title == f"Chat {s.session_id[1]}" for s in everything)
    assert [len(page) for page in pages] == [2, 2, 1, 0, 0]
    assert [s for page in pages for s in page] == everything
    assert [s.updated_at for s in everything] == sorted((s.updated_at for s in everything), reverse=True)


@pytest.mark.parametrize(
    ("session_types", "expected"),
    [(None, ["s1", "s4", "s3", "s2", "s0"]), ([], ["s1", "s4", "s3", "s2", "s0"]), ([1], ["s4", "s2"]),
     ((2, 0), ["s1", "s3", "s0"]), ([5], [])],
)  # fmt: skip
def test_list_sessions_of_some_types(
    backend: str, tmp_path: Path, session_types: list[int] | None, expected: list[str]
) -> None:
    """session_types keeps the sessions of those type codes; none or an empty list keeps all."""

    async def scenario(storage: Any) -> list[str]:
        await five_sessions(storage)
        return [s.session_id for s in await storage.list_sessions(session_types=session_types)]

    assert on(backend, tmp_path, scenario) == expected


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"limit": 0}, "limit must be positive"),
        ({"offset": -1}, "offset cannot be negative"),
        ({"limit": 0, "offset": -1}, "limit must be positive"),
        ({"session_types": [1, -2]}, "session_type cannot be negative"),
        ({"session_types": [False]}, "session_type must be an integer code"),
        ({"offset": -1, "session_types": [-1]}, "offset cannot be negative"),
    ],
)
def test_list_sessions_refuses_bad_pages_in_zetts_words(
    backend: str, tmp_path: Path, query: dict[str, Any], message: str
) -> None:
    """A bad limit, offset or type code is a ValueError with zett's text, checked in zett's order."""

    async def scenario(storage: Any) -> str:
        await storage.create_session(session_id="s")
        return await refusal(storage, storage.list_sessions(**query))

    assert on(backend, tmp_path, scenario) == message


# -- delete_session -----------------------------------------------------------------------------------


def test_delete_session_removes_the_session_and_its_history(backend: str, tmp_path: Path) -> None:
    """delete_session is True once, then the session is gone from every call; its id can be used again."""

    async def scenario(storage: Any) -> list[object]:
        await storage.create_session(session_id="empty")
        for text in ("one", "two", "three"):
            await say(storage, "full", text, parent_session_id="p")
        await storage.snapshot("full", CompactedMessage(content="Earlier."), 2, 0)
        await say(storage, "kept", "hi")
        seen: list[object] = [await storage.delete_session("empty"), await storage.delete_session("full")]
        seen += [await storage.delete_session("full"), await storage.get_session("full")]
        seen += [await storage.count_messages("full"), await storage.list_raw_messages("full")]
        seen += [await storage.load("full"), [s.session_id for s in await storage.list_sessions()]]
        seen.append(await say(storage, "full", "anew", parent_session_id="other"))
        seen.append((await storage.load("full")).parent_session_id)
        return seen

    assert on(backend, tmp_path, scenario) == [
        True, True, False, None, 0, [], SessionView(session_type=0), ["kept"], 1, "other",
    ]  # fmt: skip


# -- list_raw_messages --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"after_sequence": -1}, "after_sequence cannot be negative"),
        ({"through_sequence": 0}, "through_sequence must be positive"),
        ({"limit": 0}, "limit must be positive"),
        ({"offset": -1}, "offset cannot be negative"),
    ],
)
def test_list_raw_messages_refuses_bad_pages_in_zetts_words(
    backend: str, tmp_path: Path, query: dict[str, Any], message: str
) -> None:
    """A bad bound or page of list_raw_messages is a ValueError with zett's text."""

    async def scenario(storage: Any) -> str:
        await say(storage, "s", "hi")
        return await refusal(storage, storage.list_raw_messages("s", **query))

    assert on(backend, tmp_path, scenario) == message


def test_list_raw_messages_pages_the_whole_log_past_snapshots(backend: str, tmp_path: Path) -> None:
    """Pages of the raw log split it in sequence order, compacted records included, bounds applied first."""

    async def scenario(storage: Any) -> list[list[int]]:
        for n in range(1, 8):
            await say(storage, "s", f"m{n}")
        await storage.snapshot("s", CompactedMessage(content="m1 to m5."), 5, 0)
        queries: list[dict[str, Any]] = [
            {"limit": 3}, {"limit": 3, "offset": 3}, {"limit": 3, "offset": 6}, {"offset": 7},
            {"after_sequence": 5}, {"through_sequence": 2}, {"after_sequence": 2, "through_sequence": 6, "limit": 2,
            "offset": 1}, {"after_sequence": 7}, {"through_sequence": 99},
        ]  # fmt: skip
        return [[r.sequence for r in await storage.list_raw_messages("s", **query)] for query in queries]

    assert on(backend, tmp_path, scenario) == [
        [1, 2, 3], [4, 5, 6], [7], [], [6, 7], [1, 2], [4, 5], [], [1, 2, 3, 4, 5, 6, 7],
    ]  # fmt: skip


# -- snapshot ---------------------------------------------------------------------------------------


SNAPSHOT_REFUSALS = [
    # (snapshot through 2 first?, compacted_through_sequence, expected_version, zett's text)
    (False, 0, 0, OUTSIDE),
    (False, -1, 0, OUTSIDE),
    (False, 4, 0, OUTSIDE),
    (False, 2, 1, CONFLICT),
    (False, 9, 1, CONFLICT),  # the version is checked first
    (False, 2, -1, CONFLICT),
    (True, 2, 1, BEHIND),
    (True, 1, 1, BEHIND),
    (True, 4, 1, OUTSIDE),
    (True, 0, 1, OUTSIDE),
    (True, 3, 0, CONFLICT),
    (True, 0, 0, CONFLICT),
]


@pytest.mark.parametrize(("compacted", "through", "version", "message"), SNAPSHOT_REFUSALS)
def test_a_snapshot_refusal_is_zetts_value_error(
    backend: str, tmp_path: Path, compacted: bool, through: int, version: int, message: str
) -> None:
    """A stale version, a boundary outside the log or one not past the last: zett's ValueError, nothing written."""
    summary = CompactedMessage(content="Earlier.")

    async def scenario(storage: Any) -> tuple[str, SessionView]:
        for text in ("one", "two", "three"):
            await say(storage, "s", text)
        if compacted:
            await storage.snapshot("s", summary, 2, 0)
        error = await refusal(storage, storage.snapshot("s", summary, through, version))
        return error, await storage.load("s")

    error, view = on(backend, tmp_path, scenario)
    assert error == message
    assert (view.snapshot.version if view.snapshot else 0) == (1 if compacted else 0)


@pytest.mark.parametrize(("version", "message"), [(0, OUTSIDE), (1, CONFLICT)])
def test_a_snapshot_of_an_unknown_or_empty_session_is_refused(
    backend: str, tmp_path: Path, version: int, message: str
) -> None:
    """A session without records has no boundary to compact: zett's words, the version checked first."""

    async def scenario(storage: Any) -> list[str]:
        await storage.create_session(session_id="empty")
        summary = CompactedMessage(content="Nothing.")
        return [
            await refusal(storage, storage.snapshot(name, summary, 1, version))
            for name in ("nobody", "empty")
        ]

    assert on(backend, tmp_path, scenario) == [message, message]


# -- sessions a real agent wrote, through the extensions -------------------------------------------


class EchoModel:
    """An offline model, as zett's docs write one: it answers with the last message's text."""

    retry = RetryOptions(max_retries=0)

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        last = request.messages[-1]
        text = last.text if isinstance(last, UserMessage) else ""
        yield ModelEvent.completed(ModelResponse(AssistantMessage(content=f"Echo: {text}")))


async def chat(extension: Any, session_id: str, *prompts: str, parent: str | None = None) -> None:
    config = AgentRunConfig(session_id=session_id, parent_session_id=parent)
    agent = await Agent.create(EchoModel(), config=config, extensions=[extension])
    for prompt in prompts:
        await agent.run(prompt)


def calls_on_agent_sessions(extension_type: type, root: Path) -> list[object]:
    """Every session call of an extension, on a parent and a child session an agent wrote through it."""

    async def scenario() -> list[object]:
        extension = extension_type(root)
        try:
            await chat(extension, "chat-1", "Hello.", "And again.")
            await chat(extension, "chat-1/review", "Check it.", parent="chat-1")
            made = await extension.create_session(session_id="later", title="Later")
            seen: list[object] = [
                made,
                await extension.list_sessions(),
                await extension.get_session("chat-1"),
            ]
            seen += [await extension.list_raw_messages("chat-1", after_sequence=1, limit=2)]
            seen += [await extension.update_session("chat-1/review", title="Review")]
            seen += [
                await extension.list_sessions(limit=1, offset=1),
                await extension.delete_session("chat-1"),
            ]
            seen += [await extension.list_sessions(), await extension.storage.count_messages("chat-1/review")]
            return seen
        finally:
            await extension.close()

    return asyncio.run(scenario())


def without_times(value: object) -> object:
    """Summaries and records without the ids and times each storage makes up for itself."""
    if isinstance(value, list):
        return [without_times(item) for item in value]
    if isinstance(value, SessionSummary):
        return value.model_dump(exclude={"created_at", "updated_at"})
    if isinstance(value, RawMessageRecord):
        return (value.sequence, value.message, value.metadata, value.tags, value.input_tokens)
    return value


def test_sessions_an_agent_wrote_give_what_sqlite_session_extension_gives(tmp_path: Path) -> None:
    """A parent and a child session written by zett's runtime: every session call returns what SQL returns."""
    ours = calls_on_agent_sessions(JsonlSessionExtension, tmp_path / "jsonl")
    theirs = calls_on_agent_sessions(SQLiteSessionExtension, tmp_path / "sessions.sqlite3")
    assert without_times(ours) == without_times(theirs)
    listed = ours[1]
    assert isinstance(listed, list) and [s.session_id for s in listed] == ["later", "chat-1/review", "chat-1"]
    assert [s.message_count for s in listed] == [0, 3, 6] and listed[1].parent_session_id == "chat-1"
    assert ours[-1] == 3 and [s.session_id for s in ours[-2]] == ["chat-1/review", "later"]  # type: ignore[attr-defined]


# -- zett's blocking view --------------------------------------------------------------------------------


def test_the_sync_view_runs_the_session_calls(backend: str, tmp_path: Path) -> None:
    """storage.sync() is zett's blocking view: its session calls work from plain code."""
    storage = open_storage(backend, tmp_path)
    with storage.sync() as blocking:
        blocking.create_session(session_id="s", title="Blocking")
        blocking.append("s", "r", UserMessage(content="hi"))
        summary = blocking.get_session("s")
        counted = blocking.count_messages("s")
        blocking.close()
    assert (summary.title, summary.message_count, counted) == ("Blocking", 1, 1)


# -- what only our storage has to show --------------------------------------------------------------------


def test_sessions_the_store_wrote_itself_are_listed_under_their_zett_ids(tmp_path: Path) -> None:
    """Sessions made with SessionStore appear under the ids zett opens them by; a name no id encodes does not."""
    store = SessionStore(tmp_path, durability="none")
    store.append("native", {"role": "user", "content": "hi"})
    store.append(encode_session_id("user:1/chat"), {"role": "user", "content": "hi"})
    store.append("a.b", {"role": "user", "content": "hi"})  # zett's "a.b" is the directory a.2eb

    async def scenario() -> tuple[list[str], SessionSummary | None, SessionSummary | None]:
        storage = JsonlSessionStorage(tmp_path)
        listed = [s.session_id for s in await storage.list_sessions()]
        return listed, await storage.get_session("user:1/chat"), await storage.get_session("a.b")

    listed, encoded, unreachable = asyncio.run(scenario())
    assert sorted(listed) == ["native", "user:1/chat"] and unreachable is None
    assert encoded is not None and encoded.message_count == 1
    assert store.get_session("a.b") is not None  # still there for the store's own readers


def test_an_imported_claude_code_session_is_listed_and_its_records_refused_by_name(tmp_path: Path) -> None:
    """A real imported Claude Code session is listed; reading its messages raises InvalidMessage by record."""
    # Not pydantic's ValidationError, which quotes the stored text; InvalidMessage is a ValueError too.
    transcript = (
        Path(__file__).parents[1]
        / "importers"
        / "data"
        / "claude-code"
        / "cc-1.0.17-interrupted-tool-use.jsonl"
    )
    store = SessionStore(tmp_path, durability="none")
    [imported] = import_claude_code(store, transcript).files
    session_id = imported.session_id
    assert session_id is not None

    async def scenario() -> tuple[list[SessionSummary], list[str]]:
        storage = JsonlSessionStorage(tmp_path)
        listed = await storage.list_sessions()
        errors = []
        for call in (storage.list_raw_messages(session_id), storage.load(session_id)):
            with pytest.raises(InvalidMessage) as caught:
                await call
            errors.append(str(caught.value))
        return listed, errors

    listed, errors = asyncio.run(scenario())
    summary = store.get_session(session_id)
    assert summary is not None and summary.message_count > 1
    assert [(s.session_id, s.message_count) for s in listed] == [(session_id, summary.message_count)]
    assert all(
        error.startswith("record #") and "is not a message zett-agent can read" in error for error in errors
    )


def test_a_zett_update_is_a_users_change_kept_in_the_sessions_metadata(tmp_path: Path) -> None:
    """update_session through zett is origin="user" (a later append's title yields) and records its time."""
    fixed = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)

    async def scenario() -> SessionSummary | None:
        storage = JsonlSessionStorage(tmp_path, clock=lambda: fixed)
        await say(storage, "s", "hi", title="Generated")
        await storage.update_session("s", title="Chosen")
        await say(storage, "s", "more", title="Generated again")
        return await storage.get_session("s")

    summary = asyncio.run(scenario())
    assert summary is not None and summary.title == "Chosen" and summary.updated_at == fixed
    stored = SessionStore(tmp_path).get_session("s")
    assert stored is not None and stored.metadata == {"zett_updated_at": "2026-05-01T12:00:00+00:00"}


def test_sessions_with_one_activity_time_are_listed_by_id_descending(tmp_path: Path) -> None:
    """Ties in updated_at go by session id, highest first: SQL's ORDER BY updated_at DESC, id DESC."""
    fixed = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)

    async def scenario() -> list[str]:
        storage = JsonlSessionStorage(tmp_path, clock=lambda: fixed)
        for session_id in ("b:1", "c", "a/2", "b.0"):
            await storage.create_session(session_id=session_id)
        return [s.session_id for s in await storage.list_sessions()]

    assert asyncio.run(scenario()) == ["c", "b:1", "b.0", "a/2"]
