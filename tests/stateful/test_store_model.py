"""The store against an in-memory model: two SessionStore objects on one directory.

Every rule runs through one of the two stores (they share nothing but the files) and
updates the model; after every step the invariants read through both stores and compare
with the model: the session context (snapshot + tail), the whole raw log, the summaries
and list order, and the usage totals.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from typing import Any

import pytest
from helpers import examples
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from jsonl_store import (
    AssistantMessage,
    CompactedMessage,
    InvalidArgument,
    Message,
    MetadataConflict,
    ModelUsage,
    ParentMismatch,
    SessionNotFound,
    SessionStore,
    SnapshotConflict,
    UserMessage,
)
from jsonl_store._ids import new_uuid7

SESSIONS = ["a", "b", "c"]
#: "c" is always appended to as a child of "a".
PARENTS = {"c": "a"}

short_text = st.text(st.characters(codec="utf-8"), max_size=8)


def _dict_message(role: str, content: str, include: bool) -> dict[str, Any]:
    message: dict[str, Any] = {"role": role, "content": content, "id": new_uuid7()}
    if not include:
        message["include_in_messages"] = False
    return message


#: Messages a provider accepts in any order (no tool calls), so the repaired context is
#: the context itself; some are hidden from it, a few are never persisted.
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


def _persisted(message: Message) -> bool:
    return message.get("persist", True) if isinstance(message, dict) else message.persist


def _included(message: Message) -> bool:
    return (
        message.get("include_in_messages", True) if isinstance(message, dict) else message.include_in_messages
    )


@dataclass
class ModelSession:
    """What the model knows of one session."""

    parent: str | None
    title: str | None
    activity: int
    log: list[Message] = field(default_factory=list)
    #: (version, compacted message, boundary sequence), oldest first
    snapshots: list[tuple[int, Message, int]] = field(default_factory=list)
    pinned: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)
    owned: set[str] = field(default_factory=set)
    version: int = 0
    usage: ModelUsage = field(default_factory=ModelUsage)

    @property
    def snapshot_version(self) -> int:
        return self.snapshots[-1][0] if self.snapshots else 0

    @property
    def boundary(self) -> int:
        return self.snapshots[-1][2] if self.snapshots else 0

    def context(self) -> list[Message]:
        out = [self.snapshots[-1][1]] if self.snapshots else []
        return [m for m in [*out, *self.log[self.boundary :]] if _included(m)]


class StoreModel(RuleBasedStateMachine):
    """Two stores on one directory, checked against `ModelSession`s."""

    def __init__(self) -> None:
        super().__init__()
        self.root = tempfile.mkdtemp(prefix="jsonl-store-model-")
        self.stores = [self._open(), self._open()]
        self.model: dict[str, ModelSession] = {}
        self.clock = 0

    def _open(self) -> SessionStore:
        return SessionStore(self.root, durability="none", on_problem=self._problem)

    def _problem(self, problem: object) -> None:
        raise AssertionError(f"a healthy store reported a problem: {problem}")

    def teardown(self) -> None:
        for store in self.stores:
            store.close()
        shutil.rmtree(self.root, ignore_errors=True)

    def _tick(self) -> int:
        self.clock += 1
        return self.clock

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
            session = self.model[session_id] = ModelSession(parent=parent, title=title, activity=0)
        expected = []
        for message in batch:
            if _persisted(message):
                session.log.append(message)
                expected.append(len(session.log))
            else:
                expected.append(0)
        session.activity = self._tick()
        return expected

    @rule(
        which=st.integers(0, 1),
        session_id=st.sampled_from(SESSIONS),
        message=messages,
        title=st.none() | st.just("t"),
    )
    def append(self, which: int, session_id: str, message: Message, title: str | None) -> None:
        expected = self._expect_append(session_id, [message], title)

        def call() -> int:
            return self.stores[which].append(
                session_id, message, parent_session_id=PARENTS.get(session_id), title=title
            )

        if isinstance(expected, list):
            assert call() == expected[0]
        else:
            with pytest.raises(expected):
                call()

    @rule(
        which=st.integers(0, 1),
        session_id=st.sampled_from(SESSIONS),
        batch=st.lists(messages, min_size=1, max_size=4),
    )
    def append_many(self, which: int, session_id: str, batch: list[Message]) -> None:
        expected = self._expect_append(session_id, batch, None)

        def call() -> list[int]:
            return self.stores[which].append_many(
                session_id, batch, parent_session_id=PARENTS.get(session_id)
            )

        if isinstance(expected, list):
            assert call() == expected
        else:
            with pytest.raises(expected):
                call()

    @rule(
        which=st.integers(0, 1),
        session_id=st.sampled_from(SESSIONS),
        forget=st.integers(0, 3),
        new=st.lists(persisted_messages, min_size=1, max_size=3),
    )
    def checkpoint_stale_list(self, which: int, session_id: str, forget: int, new: list[Message]) -> None:
        """A runner's list that lacks the last ``forget`` stored messages plus new ones: only new ones land."""
        session = self.model.get(session_id)
        known = session.log[session.boundary :] if session else []
        runner = [*known[: max(0, len(known) - forget)], *new]
        if session is not None and session.snapshots:
            runner.insert(0, session.snapshots[-1][1])
        start = len(session.log) if session else 0
        result = self.stores[which].checkpoint(session_id, runner)
        assert result == list(range(start + 1, start + 1 + len(new)))
        if session is None:
            session = self.model[session_id] = ModelSession(parent=None, title=None, activity=0)
        session.log.extend(new)
        session.activity = self._tick()

    # -- rules: snapshots ---------------------------------------------------------------------

    @rule(which=st.integers(0, 1), session_id=st.sampled_from(SESSIONS), data=st.data())
    def snapshot(self, which: int, session_id: str, data: st.DataObject) -> None:
        session = self.model.get(session_id)
        summary = CompactedMessage(
            content=data.draw(short_text), include_in_messages=data.draw(st.booleans())
        )
        if session is None or len(session.log) <= session.boundary:
            through = (session.boundary if session else 0) + 1
            with pytest.raises((InvalidArgument, SessionNotFound)):
                self.stores[which].snapshot(
                    session_id, summary, through, session.snapshot_version if session else 0
                )
            return
        through = data.draw(st.integers(session.boundary + 1, len(session.log)))
        made = self.stores[which].snapshot(session_id, summary, through, session.snapshot_version)
        assert made.version == session.snapshot_version + 1
        assert made.compacted_through_sequence == through
        session.snapshots.append((made.version, summary, through))

    @precondition(lambda self: any(s.snapshots for s in self.model.values()))
    @rule(which=st.integers(0, 1), data=st.data())
    def stale_snapshot(self, which: int, data: st.DataObject) -> None:
        session_id = data.draw(st.sampled_from(sorted(k for k, s in self.model.items() if s.snapshots)))
        session = self.model[session_id]
        stale = data.draw(st.integers(0, session.snapshot_version - 1))
        with pytest.raises(SnapshotConflict):
            self.stores[which].snapshot(
                session_id, CompactedMessage(content="stale"), len(session.log), stale
            )

    # -- rules: metadata and usage ----------------------------------------------------------------

    @rule(
        which=st.integers(0, 1),
        session_id=st.sampled_from(SESSIONS),
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
                self.stores[which].update_session(session_id, **options)
            return
        summary = self.stores[which].update_session(session_id, **options)
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
    @rule(which=st.integers(0, 1), data=st.data(), off_by=st.sampled_from([-1, 1, 5]))
    def stale_update_session(self, which: int, data: st.DataObject, off_by: int) -> None:
        session_id = data.draw(st.sampled_from(sorted(self.model)))
        expected = self.model[session_id].version + off_by
        with pytest.raises(MetadataConflict):
            self.stores[which].update_session(session_id, title="stale", expected_version=expected)

    @rule(which=st.integers(0, 1), session_id=st.sampled_from(SESSIONS), usage=usages)
    def record_usage(self, which: int, session_id: str, usage: ModelUsage) -> None:
        session = self.model.get(session_id)
        self.stores[which].record_usage(session_id, usage)
        if session is None:
            session = self.model[session_id] = ModelSession(parent=None, title=None, activity=self._tick())
        session.usage = session.usage + usage

    # -- rules: deleting and reopening ------------------------------------------------------------

    @rule(which=st.integers(0, 1), session_id=st.sampled_from(SESSIONS))
    def delete_session(self, which: int, session_id: str) -> None:
        assert self.stores[which].delete_session(session_id) is (session_id in self.model)
        self.model.pop(session_id, None)

    @rule(which=st.integers(0, 1), replace=st.booleans())
    def reopen(self, which: int, replace: bool) -> None:
        self.stores[which].close()
        if replace:
            self.stores[which] = self._open()

    # -- invariants -----------------------------------------------------------------------------

    @invariant()
    def every_session_matches_the_model(self) -> None:
        for session_id in SESSIONS:
            session = self.model.get(session_id)
            for store in self.stores:
                view = store.load(session_id)
                records = list(store.records(session_id))
                if session is None:
                    assert not view.exists and records == []
                    continue
                assert [r.sequence for r in records] == list(range(1, len(session.log) + 1))
                assert [r.message for r in records] == session.log
                assert [type(r.message) for r in records] == [type(m) for m in session.log]
                if session.snapshots:
                    assert view.snapshot is not None
                    assert view.snapshot.version == session.snapshot_version
                    assert view.snapshot.compacted_message == session.snapshots[-1][1]
                else:
                    assert view.snapshot is None
                assert [r.sequence for r in view.raw_tail] == list(
                    range(session.boundary + 1, len(session.log) + 1)
                )
                assert view.messages == session.context()
                assert view.parent_session_id == session.parent
                assert view.title == session.title

    @invariant()
    def summaries_and_list_order_match_the_model(self) -> None:
        newest_first = sorted(self.model, key=lambda k: self.model[k].activity, reverse=True)
        store = self.stores[self.clock % 2]
        listed = store.list_sessions()
        assert [s.session_id for s in listed] == newest_first
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
        children = [k for k in newest_first if self.model[k].parent == "a"]
        assert [s.session_id for s in store.list_sessions(parent_session_id="a")] == children
        for session_id in SESSIONS:
            if session_id not in self.model:
                assert store.get_session(session_id) is None

    @invariant()
    def usage_totals_match_the_model(self) -> None:
        for session_id in SESSIONS:
            session = self.model.get(session_id)
            expected = session.usage if session else ModelUsage()
            for store in self.stores:
                assert store.usage_totals(session_id) == expected


StoreModel.TestCase.settings = settings(
    max_examples=examples(40),
    stateful_step_count=25,
    deadline=None,
)


# hypothesis serves TestCase through a descriptor, which mypy does not take for a class.
class TestStoreAgainstTheModel(StoreModel.TestCase):  # type: ignore[valid-type,misc]
    """Two stores on one directory behave like the in-memory model, step after step."""
