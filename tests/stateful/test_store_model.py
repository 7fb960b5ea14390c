"""The store against an in-memory model: two long-lived stores and a fresh one on one root.

Every rule runs through one of the stores (they share nothing but the files), or through a
store opened for that one call, and updates the model: appends of plain messages and of
tool-call batches (parallel calls, results out of order, calls never answered),
conditional appends, `checkpoint` (extending, stale and rewriting lists), `resume`,
snapshots, forks and forks of forks, deletes and re-creation, metadata and usage. After
every step the invariants read through every store and compare with the model: the raw
log (a fork's shared records too), the session context, the summaries and list order,
and the usage totals.

`TestStoreOnTheSimulator` runs the same machine on the crash simulator
(`jsonl_store.testing`) under ``durability="fsync"``, and at random steps crashes it: a
crash state at a random point of what was written since the last crash (a process crash
or a power loss) must read as a state the model went through, at the step in progress or
the one before, so no acknowledged append is lost; the machine then goes on on that disk.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from helpers import examples
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from jsonl_store import (
    INTERRUPTED_NOTICE,
    AssistantMessage,
    CompactedMessage,
    InvalidArgument,
    Message,
    MetadataConflict,
    ModelUsage,
    ParentMismatch,
    SequenceConflict,
    SessionHasForks,
    SessionNotFound,
    SessionStore,
    SnapshotConflict,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from jsonl_store._context.tool_batches import provider_violation
from jsonl_store._format.ids import new_uuid7
from jsonl_store.testing import SimulatedFileSystem, crash_points, crash_states

#: Sessions the rules append to; "c" is always appended to as a child of "a".
SESSIONS = ["a", "b", "c"]
PARENTS = {"c": "a"}
#: Sessions forks are made into (and appended to, deleted and made again like the others).
FORKS = ["f1", "f2"]
ALL = [*SESSIONS, *FORKS]
#: Which store a rule goes through: the two long-lived ones, or 2: one opened for the call.
WHICH = st.integers(0, 2)
FRESH = 2

short_text = st.text(st.characters(codec="utf-8"), max_size=8)
counter = itertools.count()


def _dict_message(role: str, content: str, include: bool) -> dict[str, Any]:
    message: dict[str, Any] = {"role": role, "content": content, "id": new_uuid7()}
    if not include:
        message["include_in_messages"] = False
    return message


#: Messages without tool calls; some hidden from the context, a few never persisted.
persisted_messages = st.one_of(
    st.builds(UserMessage, content=short_text, include_in_messages=st.booleans()),
    st.builds(AssistantMessage, content=short_text),
    st.builds(_dict_message, st.sampled_from(["user", "assistant"]), short_text, st.booleans()),
)
messages = st.one_of(
    persisted_messages,
    st.builds(UserMessage, content=short_text, persist=st.just(False)),
)
usages = st.builds(
    ModelUsage,
    input_tokens=st.integers(0, 1000),
    output_tokens=st.integers(0, 1000),
    cache_read_tokens=st.integers(0, 100),
)


@st.composite
def tool_batches(draw: st.DrawFn) -> list[Message]:
    """An assistant message with 1-3 parallel calls, then results for some (all, none) of them in any order."""
    as_dict = draw(st.booleans())
    calls = [f"call_{next(counter)}" for _ in range(draw(st.integers(1, 3)))]
    answered = draw(st.permutations(calls))[: draw(st.integers(0, len(calls)))]
    assistant: Message
    results: list[Message]
    if as_dict:
        assistant = {
            "role": "assistant",
            "content": None,
            "id": new_uuid7(),
            "tool_calls": [
                {"id": i, "type": "function", "function": {"name": "bash", "arguments": "{}"}} for i in calls
            ],
        }
        results = [{"role": "tool", "tool_call_id": i, "content": "ok", "id": new_uuid7()} for i in answered]
    else:
        assistant = AssistantMessage(tool_calls=[ToolCall(id=i, name="bash") for i in calls])
        results = [ToolMessage(tool_call_id=i, content="ok", name="bash") for i in answered]
    return [assistant, *results]


#: What a runner adds in one turn: plain messages, or a tool-call batch.
turns = st.one_of(st.lists(persisted_messages, min_size=1, max_size=3), tool_batches())


def _persisted(message: Message) -> bool:
    return message.get("persist", True) if isinstance(message, dict) else message.persist


def _included(message: Message) -> bool:
    return (
        message.get("include_in_messages", True) if isinstance(message, dict) else message.include_in_messages
    )


def _id(message: Message) -> Any:
    return message.get("id") if isinstance(message, dict) else message.id


def _calls(message: Message) -> list[str]:
    """The ids of the tool calls a message makes."""
    if isinstance(message, dict):
        return (
            [call["id"] for call in message.get("tool_calls") or []]
            if message.get("role") == "assistant"
            else []
        )
    return [call.id for call in message.tool_calls] if isinstance(message, AssistantMessage) else []


def _answer(message: Message) -> str | None:
    """The call a tool result answers; None for any other message."""
    if isinstance(message, dict):
        return message.get("tool_call_id") if message.get("role") == "tool" else None
    return message.tool_call_id if isinstance(message, ToolMessage) else None


def _tool_part(message: Message) -> bool:
    return bool(_calls(message)) or _answer(message) is not None


def open_calls(context: list[Message]) -> list[str]:
    """The calls of the context's last batch that have no result (spec §9.9): what `resume` closes."""
    end = len(context)
    start = end
    while start > 0 and _answer(context[start - 1]) is not None:
        start -= 1
    if start == 0 or not _calls(context[start - 1]):
        return []
    open_ = list(_calls(context[start - 1]))
    for message in context[start:end]:
        if _answer(message) in open_:
            open_.remove(_answer(message))  # type: ignore[arg-type]
    return open_


@dataclass
class ModelSession:
    """What the model knows of one session: its whole history, a fork's included."""

    parent: str | None
    title: str | None
    activity: int
    #: Every record's message, sequence 1 first (a fork's shared records too).
    log: list[Message] = field(default_factory=list)
    #: Its own snapshots (version, compacted message, boundary sequence), oldest first.
    snapshots: list[tuple[int, Message, int]] = field(default_factory=list)
    #: A fork's source and branch sequence.
    source: str | None = None
    base: int = 0
    pinned: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)
    owned: set[str] = field(default_factory=set)
    version: int = 0
    usage: ModelUsage = field(default_factory=ModelUsage)
    #: Which making of this id it is: a session deleted and made again is another one.
    incarnation: int = field(default_factory=lambda: next(counter))


Model = dict[str, ModelSession]


def start_of(model: Model, session_id: str, upto: int | None = None) -> tuple[int, Message, int] | None:
    """The snapshot a history starts at (spec §8.10): the session's newest up to ``upto``, else its source's."""
    session = model[session_id]
    own = [s for s in session.snapshots if upto is None or s[2] <= upto]
    if own:
        return own[-1]
    if session.source is None:
        return None
    return start_of(model, session.source, session.base if upto is None else min(upto, session.base))


def context_of(model: Model, session_id: str) -> list[Message]:
    """The session context as `SessionView.context` gives it: start snapshot, then the records after it."""
    session = model[session_id]
    start = start_of(model, session_id)
    head = [start[1]] if start else []
    return [m for m in [*head, *session.log[start[2] if start else 0 :]] if _included(m)]


def context_version(model: Model, session_id: str) -> int:
    start = start_of(model, session_id)
    return start[0] if start else 0


def copied(model: Model) -> Model:
    """A copy of the model that later steps leave as it is (messages are never changed in place)."""
    return {
        key: dataclasses.replace(
            session,
            log=list(session.log),
            snapshots=list(session.snapshots),
            metadata=dict(session.metadata),
            owned=set(session.owned),
        )
        for key, session in model.items()
    }


def _field(message: Message, name: str) -> Any:
    return message.get(name) if isinstance(message, dict) else getattr(message, name, None)


class UnexpectedProblem(Exception):
    """A store reported damage where there is none (not an AssertionError: no model state explains it)."""


@dataclass
class Step:
    """One rule run on the simulator: the model after it, and where the trace was."""

    trace_end: int
    model: Model
    #: Model states the step may leave when a crash cuts it short, besides before and after.
    between: list[Model] = field(default_factory=list)
    #: The session a rewriting checkpoint saved (a crash inside it may leave its snapshot untrusted).
    rewritten: str | None = None


class StoreModel(RuleBasedStateMachine):
    """Two stores and a fresh one on one directory, checked against `ModelSession`s."""

    def __init__(self) -> None:
        super().__init__()
        self.model: Model = {}
        self.clock = 0
        self.times = itertools.count()
        self.root = self._make_root()
        self.stores = [self._open(), self._open()]
        self.reader = self._open()
        self.fresh: SessionStore | None = None
        #: What each long-lived store last handed its caller, per session: (sequence,
        #: the incarnation it was of) (spec §10, checkpoint's rewrite rule).
        self.seen: list[dict[str, tuple[int, int]]] = [{}, {}]
        #: Model states a crash inside the step under way may leave, and the session a
        #: rewriting checkpoint under way saves.
        self.between: list[Model] = []
        self.rewritten: str | None = None
        #: Sessions a crash cut a rewriting checkpoint of short: their snapshot may stand
        #: without its whole batch, which readers report as `bad-snapshot` and skip, and
        #: which a new snapshot's number still goes past (spec §10). Only the simulator's.
        self.untrusted: set[str] = set()

    # -- the stores ---------------------------------------------------------------------

    def _make_root(self) -> str:
        return tempfile.mkdtemp(prefix="jsonl-store-model-")

    def _options(self) -> dict[str, Any]:
        return {"durability": "none"}

    def _time(self) -> datetime:
        # One clock for every store: each write is later than the one before, so the
        # list order is the order of the steps.
        return datetime(2026, 1, 1, tzinfo=UTC) + timedelta(milliseconds=next(self.times))

    def _open(self) -> SessionStore:
        return SessionStore(self.root, on_problem=self._problem, clock=self._time, **self._options())

    def _problem(self, problem: object) -> None:
        raise UnexpectedProblem(f"a healthy store reported a problem: {problem}")

    def store(self, which: int) -> SessionStore:
        if which < FRESH:
            return self.stores[which]
        if self.fresh is not None:
            self.fresh.close()
        self.fresh = self._open()
        return self.fresh

    def teardown(self) -> None:
        for store in [*self.stores, self.reader, self.fresh]:
            if store is not None:
                store.close()
        shutil.rmtree(self.root, ignore_errors=True)

    def _meta_on_disk(self, session_id: str) -> bool:
        return os.path.exists(os.path.join(self.root, session_id, "meta.json"))

    def _tick(self) -> int:
        self.clock += 1
        return self.clock

    def _saw(self, which: int, session_id: str) -> None:
        if which < FRESH and session_id in self.model:
            session = self.model[session_id]
            self.seen[which][session_id] = (len(session.log), session.incarnation)

    def _new(self, session_id: str, parent: str | None = None, title: str | None = None) -> ModelSession:
        session = self.model[session_id] = ModelSession(parent=parent, title=title, activity=0)
        return session

    # -- rules: appending -------------------------------------------------------------------

    def _expect_append(
        self, session_id: str, batch: list[Message], title: str | None
    ) -> list[int] | type[Exception]:
        """The sequences an append of ``batch`` must return, or the error it must raise."""
        persisted = [m for m in batch if _persisted(m)]
        session = self.model.get(session_id)
        if not persisted:
            return [0] * len(batch)
        parent = PARENTS.get(session_id)
        if session is not None and parent is not None and session.parent != parent:
            return ParentMismatch
        if session is None:
            session = self._new(session_id, parent, title)
        elif title is not None and not self._meta_on_disk(session_id):
            # A fork a crash left without meta.json gets one from this append's own values
            # (spec §7, §9.13): its title names it.
            session.title = title
        expected = []
        for message in batch:
            if _persisted(message):
                session.log.append(message)
                expected.append(len(session.log))
            else:
                expected.append(0)
        session.activity = self._tick()
        return expected

    @rule(which=WHICH, session_id=st.sampled_from(ALL), message=messages, title=st.none() | st.just("t"))
    def append(self, which: int, session_id: str, message: Message, title: str | None) -> None:
        expected = self._expect_append(session_id, [message], title)

        def call() -> int:
            return self.store(which).append(
                session_id, message, parent_session_id=PARENTS.get(session_id), title=title
            )

        if isinstance(expected, list):
            assert call() == expected[0]
        else:
            with pytest.raises(expected):
                call()

    @rule(
        which=WHICH, session_id=st.sampled_from(ALL), batch=turns | st.lists(messages, min_size=1, max_size=4)
    )
    def append_many(self, which: int, session_id: str, batch: list[Message]) -> None:
        expected = self._expect_append(session_id, batch, None)

        def call() -> list[int]:
            return self.store(which).append_many(session_id, batch, parent_session_id=PARENTS.get(session_id))

        if isinstance(expected, list):
            assert call() == expected
        else:
            with pytest.raises(expected):
                call()

    @rule(which=WHICH, session_id=st.sampled_from(ALL), batch=turns, off_by=st.sampled_from([0, 0, -1, 1, 3]))
    def conditional_append(self, which: int, session_id: str, batch: list[Message], off_by: int) -> None:
        """``expected_last_sequence``: the batch lands only when the log still ends there."""
        session = self.model.get(session_id)
        length = len(session.log) if session else 0
        expected = length + off_by
        if expected < 0:
            return
        if session_id in PARENTS:
            return  # a child is appended to with its parent by the other rules
        store = self.store(which)
        if off_by:
            with pytest.raises(SequenceConflict):
                store.append_many(session_id, batch, expected_last_sequence=expected)
            return
        assert self._expect_append(session_id, batch, None) == store.append_many(
            session_id, batch, expected_last_sequence=expected
        )

    # -- rules: checkpoints and resume --------------------------------------------------------

    def _stored_context(self, session_id: str) -> list[Message]:
        """What a runner that loaded the session holds: the start snapshot's message and every stored message after it."""
        session = self.model[session_id]
        start = start_of(self.model, session_id)
        return [*([start[1]] if start else []), *session.log[start[2] if start else 0 :]]

    @rule(which=WHICH, session_id=st.sampled_from(ALL), forget=st.integers(0, 3), new=turns)
    def checkpoint_stale_list(self, which: int, session_id: str, forget: int, new: list[Message]) -> None:
        """A runner's list that lacks the last ``forget`` stored messages plus new ones: only new ones land."""
        session = self.model.get(session_id)
        known = self._stored_context(session_id) if session else []
        runner = [*known[: max(0, len(known) - forget)], *new]
        start = len(session.log) if session else 0
        result = self.store(which).checkpoint(session_id, runner)
        assert result == list(range(start + 1, start + 1 + len(new)))
        if session is None:
            session = self._new(session_id)
        session.log.extend(new)
        session.activity = self._tick()
        self._saw(which, session_id)

    def _unseen(self, which: int, session_id: str, kept: list[Message], floor: int) -> list[Message]:
        """The stored messages a rewrite keeps after the list: newer than anything the caller saw (spec §10)."""
        session = self.model[session_id]
        seen, incarnation = self.seen[which].get(session_id, (0, -1)) if which < FRESH else (0, -1)
        if incarnation != session.incarnation:
            seen = 0
        named = {_id(m) for m in kept}
        start = start_of(self.model, session_id)
        first = start[2] if start else 0
        # Where the store's cache of the context finds them: from the start snapshot on.
        positions = [first + i + 1 for i, m in enumerate(session.log[first:]) if _id(m) in named]
        after = max([seen, floor, *positions])
        return [m for m in session.log[after:] if _id(m) not in named and _included(m)]

    @precondition(lambda self: any(s.log for s in self.model.values()))
    @rule(which=WHICH, data=st.data(), new=turns)
    def checkpoint_rewrite(self, which: int, data: st.DataObject, new: list[Message]) -> None:
        """A caller's compaction: a marker, a snapshot of its summary, its list, then what it had not seen."""
        session_id = data.draw(st.sampled_from(sorted(k for k, s in self.model.items() if s.log)))
        session = self.model[session_id]
        start = start_of(self.model, session_id)
        tail = session.log[start[2] if start else 0 :]
        plain = [m for m in tail if not _tool_part(m)]
        choice = data.draw(st.lists(st.booleans(), min_size=len(plain), max_size=len(plain)))
        kept = [m for m, keep in zip(plain, choice, strict=True) if keep]
        summary = CompactedMessage(
            content=data.draw(short_text), include_in_messages=data.draw(st.booleans())
        )
        own = session.snapshots[-1][2] if session.snapshots else session.base
        unseen = self._unseen(which, session_id, kept, own)
        length = len(session.log)
        result = self.store(which).checkpoint(session_id, [summary, *kept, *new])
        assert result == list(range(length + 2, length + 2 + len(kept) + len(new)))
        written = [r.message for r in self.reader.records(session_id, after=length)]
        marker = written[0]
        assert isinstance(marker, CompactedMessage) and not marker.include_in_messages
        assert written[1:] == [*kept, *new, *unseen]
        session.activity = self._tick()
        middle = copied(self.model)
        middle[session_id].log.append(marker)
        self.between.append(middle)
        self.rewritten = session_id
        session.log.extend(written)
        made = self.reader.load(session_id).snapshot
        assert made is not None
        version = self._new_version(session_id, context_version(self.model, session_id), made.version)
        session.snapshots.append((version, summary, length + 1))
        self._saw(which, session_id)

    @precondition(lambda self: bool(self.model))
    @rule(which=WHICH, data=st.data())
    def resume(self, which: int, data: st.DataObject) -> None:
        """`resume` closes the last batch's open calls once, with one error result each."""
        session_id = data.draw(st.sampled_from(sorted(self.model)))
        session = self.model[session_id]
        missing = open_calls(context_of(self.model, session_id))
        length = len(session.log)
        view = self.store(which).resume(session_id)
        added = [r.message for r in self.reader.records(session_id, after=length)]
        assert sorted(str(_answer(m)) for m in added) == sorted(missing)
        for message in added:
            assert _field(message, "is_error") is True
            assert INTERRUPTED_NOTICE in str(_field(message, "content"))
        assert view.last_sequence == length + len(added)
        if added:
            session.log.extend(added)
            session.activity = self._tick()
        self._saw(which, session_id)

    @precondition(lambda self: bool(self.model))
    @rule(which=st.integers(0, 1), data=st.data())
    def load(self, which: int, data: st.DataObject) -> None:
        """A runner loads a session: from now on its store counts what it got as seen."""
        session_id = data.draw(st.sampled_from(sorted(self.model)))
        assert self.stores[which].load(session_id).last_sequence == len(self.model[session_id].log)
        self._saw(which, session_id)

    # -- rules: snapshots ---------------------------------------------------------------------

    @rule(which=WHICH, session_id=st.sampled_from(ALL), data=st.data())
    def snapshot(self, which: int, session_id: str, data: st.DataObject) -> None:
        """A compaction with the version `load` gives: a fork's first one is one above its source's."""
        session = self.model.get(session_id)
        summary = CompactedMessage(
            content=data.draw(short_text), include_in_messages=data.draw(st.booleans())
        )
        version = context_version(self.model, session_id) if session else 0
        floor = max(session.snapshots[-1][2] if session.snapshots else 0, session.base) if session else 0
        if session is None or len(session.log) <= floor:
            with pytest.raises((InvalidArgument, SessionNotFound)):
                self.store(which).snapshot(session_id, summary, floor + 1, version)
            return
        through = data.draw(st.integers(floor + 1, len(session.log)))
        made = self.store(which).snapshot(session_id, summary, through, version)
        self._new_version(session_id, version, made.version)
        assert made.compacted_through_sequence == through
        session.snapshots.append((made.version, summary, through))

    def _new_version(self, session_id: str, expected: int, made: int) -> int:
        """A new snapshot's version: one above ``expected``, or above an untrusted file a crash left too (spec §10)."""
        if session_id in self.untrusted:
            assert made > expected
        else:
            assert made == expected + 1
        return made

    def _compacted(self) -> list[str]:
        """Sessions with a snapshot in their context and records of their own."""
        return sorted(
            k for k, s in self.model.items() if context_version(self.model, k) and len(s.log) > s.base
        )

    @precondition(lambda self: bool(self._compacted()))
    @rule(which=WHICH, data=st.data())
    def stale_snapshot(self, which: int, data: st.DataObject) -> None:
        session_id = data.draw(st.sampled_from(self._compacted()))
        session = self.model[session_id]
        stale = data.draw(st.integers(0, context_version(self.model, session_id) - 1))
        with pytest.raises(SnapshotConflict):
            self.store(which).snapshot(session_id, CompactedMessage(content="stale"), len(session.log), stale)

    # -- rules: forks ------------------------------------------------------------------------

    @precondition(lambda self: any(s.log for s in self.model.values()))
    @rule(which=WHICH, fork_id=st.sampled_from(FORKS), data=st.data())
    def fork(self, which: int, fork_id: str, data: st.DataObject) -> None:
        """A fork (of a fork too) reads its source's records up to the branch, then its own."""
        sources = sorted(k for k, s in self.model.items() if s.log and k != fork_id)
        if not sources:
            return
        source_id = data.draw(st.sampled_from(sources))
        source = self.model[source_id]
        at = data.draw(st.integers(1, len(source.log)))
        made = self.model.get(fork_id)
        if made is not None:
            if (made.source, made.base) == (source_id, at):  # the same fork, asked for again
                assert self.store(which).fork(source_id, at, fork_id) == fork_id
                return
            with pytest.raises(InvalidArgument):
                self.store(which).fork(source_id, at, fork_id)
            return
        assert self.store(which).fork(source_id, at, fork_id) == fork_id
        session = self._new(fork_id)
        session.log, session.source, session.base = list(source.log[:at]), source_id, at
        session.activity = self._tick()

    # -- rules: metadata and usage ----------------------------------------------------------------

    @rule(
        which=WHICH,
        session_id=st.sampled_from(ALL),
        title=st.none() | st.sampled_from(["x", "y"]),
        pinned=st.none() | st.booleans(),
        metadata=st.none()
        | st.dictionaries(st.sampled_from(["k1", "k2", "k3"]), st.integers() | short_text, max_size=2),
        origin=st.sampled_from(["user", "runtime"]),
        use_version=st.booleans(),
    )
    def update_session(
        self,
        which: int,
        session_id: str,
        title: str | None,
        pinned: bool | None,
        metadata: dict[str, Any] | None,
        origin: str,
        use_version: bool,
    ) -> None:
        options: dict[str, Any] = {"origin": origin}
        if title is not None:
            options["title"] = title
        if pinned is not None:
            options["pinned"] = pinned
        if metadata is not None:
            options["metadata"] = metadata
        session = self.model.get(session_id)
        if use_version:
            options["expected_version"] = session.version if session else 0
        if session is None:
            with pytest.raises(SessionNotFound):
                self.store(which).update_session(session_id, **options)
            return
        summary = self.store(which).update_session(session_id, **options)
        self._merge(session, title, pinned, metadata, origin == "user")
        assert (summary.title, summary.pinned, summary.metadata, summary.version) == (
            session.title,
            session.pinned,
            session.metadata,
            session.version,
        )
        # The log's end as the summary sees it, whichever store last appended or deleted.
        assert summary.message_count == len(session.log)

    @staticmethod
    def _merge(
        session: ModelSession,
        title: str | None,
        pinned: bool | None,
        metadata: dict[str, Any] | None,
        user: bool,
    ) -> None:
        """The model of a metadata merge: runtime updates skip what a user set."""
        changed = False
        owned = set(session.owned)
        if title is not None:
            if (user or "title" not in owned) and title != session.title:
                session.title, changed = title, True
            if user:
                owned.add("title")
        if pinned is not None:
            if (user or "pinned" not in owned) and pinned != session.pinned:
                session.pinned, changed = pinned, True
            if user:
                owned.add("pinned")
        if StoreModel._merge_metadata(session, metadata or {}, user, owned):
            changed = True
        if owned != session.owned:
            session.owned, changed = owned, True
        if changed:
            session.version += 1

    @staticmethod
    def _merge_metadata(session: ModelSession, metadata: dict[str, Any], user: bool, owned: set[str]) -> bool:
        """The metadata keys of a merge (``owned`` gains what a user sets); True if one changed."""
        changed = False
        for key, value in metadata.items():
            if not user and f"metadata.{key}" in owned:
                continue
            if user:
                owned.add(f"metadata.{key}")
            if key not in session.metadata or session.metadata[key] != value:
                session.metadata[key], changed = value, True
        return changed

    @precondition(lambda self: bool(self.model))
    @rule(which=WHICH, data=st.data(), off_by=st.sampled_from([-1, 1, 5]))
    def stale_update_session(self, which: int, data: st.DataObject, off_by: int) -> None:
        session_id = data.draw(st.sampled_from(sorted(self.model)))
        expected = self.model[session_id].version + off_by
        with pytest.raises(MetadataConflict):
            self.store(which).update_session(session_id, title="stale", expected_version=expected)

    @rule(which=WHICH, session_id=st.sampled_from(ALL), usage=usages)
    def record_usage(self, which: int, session_id: str, usage: ModelUsage) -> None:
        session = self.model.get(session_id)
        self.store(which).record_usage(session_id, usage)
        if session is None:
            session = self._new(session_id)
            session.activity = self._tick()
        session.usage = session.usage + usage

    # -- rules: deleting and reopening ------------------------------------------------------------

    @rule(which=WHICH, session_id=st.sampled_from(ALL))
    def delete_session(self, which: int, session_id: str) -> None:
        forks = sorted(k for k, s in self.model.items() if s.source == session_id)
        if forks:
            with pytest.raises(SessionHasForks) as raised:
                self.store(which).delete_session(session_id)
            assert sorted(raised.value.forks) == forks
            return
        assert self.store(which).delete_session(session_id) is (session_id in self.model)
        self.model.pop(session_id, None)

    @rule(which=st.integers(0, 1), replace=st.booleans())
    def reopen(self, which: int, replace: bool) -> None:
        """Closing gives back descriptors and forgets nothing the caller saw; a new store saw nothing."""
        self.stores[which].close()
        if replace:
            self.stores[which] = self._open()
            self.seen[which].clear()

    # -- invariants -----------------------------------------------------------------------------

    def _check_session(self, store: SessionStore, session_id: str, model: Model) -> None:
        """One session as ``store`` reads it against ``model`` (AssertionError when it differs)."""
        session = model.get(session_id)
        records = list(store.records(session_id))
        if session is None:
            assert records == [] and not store.load(session_id).exists
            assert store.get_session(session_id) is None
            return
        summary = store.get_session(session_id)
        assert summary is not None and summary.message_count == len(session.log)
        # The version too: an update that only marks a field as the user's changes nothing
        # else, and a crash state must match the model on it as the listing does.
        assert (summary.title, summary.pinned, summary.metadata, summary.version) == (
            session.title,
            session.pinned,
            session.metadata,
            session.version,
        )
        view = store.load(session_id)
        assert [r.sequence for r in records] == list(range(1, len(session.log) + 1))
        assert [r.message for r in records] == session.log
        assert [type(r.message) for r in records] == [type(m) for m in session.log]
        start = start_of(model, session_id)
        if start is None:
            assert view.snapshot is None
        else:
            assert view.snapshot is not None
            assert (view.snapshot.version, view.snapshot.compacted_message) == start[:2]
        assert view.last_sequence == len(session.log)
        assert view.context == context_of(model, session_id)
        assert provider_violation(view.model_context(close_last=True)) is None
        assert view.parent_session_id == session.parent
        assert view.title == session.title

    @invariant()
    def every_session_matches_the_model(self) -> None:
        for session_id in ALL:
            self._check_session(self.reader, session_id, self.model)
            for store in self.stores:
                assert [r.message for r in store.records(session_id)] == (
                    self.model[session_id].log if session_id in self.model else []
                )

    @invariant()
    def summaries_and_list_order_match_the_model(self) -> None:
        newest_first = sorted(self.model, key=lambda k: self.model[k].activity, reverse=True)
        store = self.stores[self.clock % 2]
        listed = store.list_sessions()
        assert sorted(s.session_id for s in listed) == sorted(self.model)
        # A session a crash left made but empty (activity 0) has no time of its own to sort by.
        assert [s.session_id for s in listed if self.model[s.session_id].activity] == [
            k for k in newest_first if self.model[k].activity
        ]
        for summary in listed:
            session = self.model[summary.session_id]
            assert summary.message_count == len(session.log)
            assert (summary.title, summary.pinned, summary.metadata, summary.version) == (
                session.title,
                session.pinned,
                session.metadata,
                session.version,
            )
            assert summary.parent_session_id == session.parent
            assert (summary.fork.session_id if summary.fork else None) == session.source
        children = [k for k in newest_first if self.model[k].parent == "a"]
        assert [s.session_id for s in store.list_sessions(parent_session_id="a")] == children
        for session_id in ALL:
            if session_id not in self.model:
                assert store.get_session(session_id) is None

    @invariant()
    def usage_totals_match_the_model(self) -> None:
        for session_id in ALL:
            session = self.model.get(session_id)
            expected = session.usage if session else ModelUsage()
            assert self.reader.usage_totals(session_id) == expected


class SimulatedStoreModel(StoreModel):
    """The same machine on the crash simulator, under fsync, crashed at random steps."""

    def __init__(self) -> None:
        self.fs = SimulatedFileSystem()
        self.crashed = False
        #: Sessions of `untrusted` deleted since the last crash (which may undo the delete).
        self.deleted_untrusted: set[str] = set()
        super().__init__()
        self.steps: list[Step] = [Step(self.fs.inherited, copied(self.model))]

    def _make_root(self) -> str:
        return "/store"

    def _problem(self, problem: object) -> None:
        # A crash may leave a torn last batch; the next append cuts it into a sidecar
        # file and says so (spec §9, §12): no damage, and nothing acknowledged in it.
        if self.crashed and getattr(problem, "kind", None) == "torn-tail":
            return
        if self._untrusted_snapshot(problem):
            return
        super()._problem(problem)

    def _untrusted_snapshot(self, problem: object) -> bool:
        """A snapshot of a rewriting checkpoint a crash cut short, skipped (spec §10): the one problem that state may show."""
        if getattr(problem, "kind", None) != "bad-snapshot":
            return False
        path = str(getattr(problem, "path", ""))
        session_id = path.rsplit("/", 2)[-2] if path.count("/") >= 2 else ""
        return session_id in self.untrusted and path.rsplit("/", 1)[-1].startswith("snapshot-")

    @rule(which=WHICH, session_id=st.sampled_from(ALL))
    def delete_session(self, which: int, session_id: str) -> None:
        super().delete_session(which, session_id)
        if session_id not in self.model and session_id in self.untrusted:
            # Its files went with it, unless a crash takes the delete back.
            self.untrusted.discard(session_id)
            self.deleted_untrusted.add(session_id)

    def _options(self) -> dict[str, Any]:
        return {"durability": "fsync", "fs": self.fs}

    def _meta_on_disk(self, session_id: str) -> bool:
        try:
            return "meta.json" in self.fs.listdir(f"{self.root}/{session_id}")
        except FileNotFoundError:
            return False

    def teardown(self) -> None:
        for store in [*self.stores, self.reader, self.fresh]:
            if store is not None:
                store.close()

    @invariant()
    def step_is_recorded(self) -> None:
        """Where each step ended in the trace, and the model then (what a crash may show)."""
        if len(self.fs.trace) != self.steps[-1].trace_end:
            self.steps.append(Step(len(self.fs.trace), copied(self.model), self.between, self.rewritten))
        self.between, self.rewritten = [], None

    @rule(data=st.data(), power=st.booleans())
    def crash(self, data: st.DataObject, power: bool) -> None:
        """A crash at a random point since the last one reads as a state the model went through."""
        points = list(crash_points(self.fs))
        if not points:
            return
        prefix = data.draw(st.sampled_from(points))
        states = list(
            crash_states(self.fs, prefixes={prefix}, max_states_per_prefix=6, process=not power, power=power)
        )
        state = data.draw(st.sampled_from(states))
        candidates = self._candidates(prefix)
        self.untrusted |= self._cut_rewrite(prefix) | self.deleted_untrusted
        self.deleted_untrusted = set()
        for store in [*self.stores, self.reader, self.fresh]:
            if store is not None:
                store.close()
        # What a process crash left only in the page cache is made durable: the machine
        # goes on from the state it matched (a power loss that then drops what a step cut
        # short wrote is `jsonl_store.testing.oracle`'s to check).
        self.fs = state.filesystem(volatile=False)
        self.crashed = True
        self.reader = self._open()
        model: Model = {}
        for session_id in ALL:
            found = self._match(session_id, candidates)
            assert found is not None, (
                f"after a crash ({state.report()}), session {session_id!r} reads as no state the model went through: "
                f"{[r.message for r in self.reader.records(session_id)]}, {self.reader.get_session(session_id)}, "
                f"candidates {[m.get(session_id) for m in candidates]}"
            )
            if session_id in found:
                model[session_id] = found[session_id]
        self.model = model
        self.untrusted &= set(model)  # a session the crash state shows deleted took its files
        self.clock = max([0, *(s.activity for s in model.values())])
        self.stores = [self._open(), self._open()]
        self.fresh = None
        self.seen = [{}, {}]
        self.between = []
        self.steps = [Step(self.fs.inherited, copied(self.model))]

    def _step_at(self, prefix: int) -> int:
        """The index of the last step whose writes all came before ``prefix``."""
        index = 0
        for i, step in enumerate(self.steps):
            if step.trace_end <= prefix:
                index = i
        return index

    def _cut_rewrite(self, prefix: int) -> set[str]:
        """The session whose rewriting checkpoint a crash at ``prefix`` cuts short, if any."""
        index = self._step_at(prefix)
        if index + 1 >= len(self.steps) or self.steps[index].trace_end == prefix:
            return set()
        rewritten = self.steps[index + 1].rewritten
        return {rewritten} if rewritten is not None else set()

    def _candidates(self, prefix: int) -> list[Model]:
        """The model states a crash at ``prefix`` may show: the step done by then, the one under way and its middles."""
        index = self._step_at(prefix)
        before = self.steps[index].model
        found = [before]
        if index + 1 < len(self.steps) and self.steps[index].trace_end < prefix:
            after = self.steps[index + 1].model
            found += [after, *self.steps[index + 1].between]
            # A step that makes a session writes its directory and metadata before its
            # first record: a crash between them leaves the session made, and empty.
            made = copied(before)
            for key, session in after.items():
                if key not in before and session.source is None:
                    made[key] = dataclasses.replace(
                        session, log=[], snapshots=[], usage=ModelUsage(), activity=0
                    )
            found.append(made)
        return found

    def _match(self, session_id: str, candidates: list[Model]) -> Model | None:
        for model in candidates:
            try:
                self._check_session(self.reader, session_id, model)
                expected = model[session_id].usage if session_id in model else ModelUsage()
                assert self.reader.usage_totals(session_id) == expected
            except AssertionError:
                continue
            return model
        return None


#: ``--long`` (the ``long`` profile) runs many more examples, and longer ones.
STEPS = 25 if examples(100) <= 100 else 60
StoreModel.TestCase.settings = settings(max_examples=examples(100), stateful_step_count=STEPS, deadline=None)
SimulatedStoreModel.TestCase.settings = settings(
    max_examples=examples(100), stateful_step_count=STEPS, deadline=None
)


# hypothesis serves TestCase through a descriptor, which mypy does not take for a class.
class TestStoreAgainstTheModel(StoreModel.TestCase):  # type: ignore[valid-type,misc]
    """Two stores and a fresh one on one directory behave like the in-memory model, step after step."""


class TestStoreOnTheSimulator(SimulatedStoreModel.TestCase):  # type: ignore[valid-type,misc]
    """On the crash simulator, every crash state reads as a state the model went through."""
