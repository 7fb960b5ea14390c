"""`checkpoint`: saving a runner's whole message list by appending only what is new.

The session context's message ids are cached as of a log offset (`CheckpointCache`), so
an extending save reads only the bytes appended since. The caller's list is cached too,
as it was last saved: a list that only grew since is recognised by one comparison of
references done in C (`saved_part`), and only its new messages are looked at (spec
§10, "Saving a whole message list": a save costs O(new messages), and the comparison about a nanosecond per message).
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, NamedTuple, Protocol

from .._context.tool_batches import includes
from .._errors import InvalidArgument, InvalidMessage, UnsupportedValue
from .._format import codec as _codec
from .._format.records import MESSAGE_TYPES, CompactedMessage, ContextSnapshot, Message, RawMessageRecord
from .._io.fs import FileSystem
from .._io.session_dir import SessionDir
from .._log import snapshots as _snapshots
from .._log.problems import Reporter
from .._log.reader import LogReader
from .history import History


def message_id(message: Message) -> Any:
    return message.get("id") if isinstance(message, dict) else message.id


def persisted(message: Message) -> bool:
    if isinstance(message, dict):
        return message.get("persist", True) is not False
    return message.persist


def is_compacted(message: Message) -> bool:
    if isinstance(message, dict):
        return message.get("role") == "compacted"
    return isinstance(message, CompactedMessage)


class CheckpointCache:
    """Ids of the session context as of a log offset, so a checkpoint reads only new bytes."""

    __slots__ = (
        "boundary", "context_version", "ids", "last_id", "last_offset", "last_sequence", "log_end",
        "origin", "saved", "saved_count", "saved_ids", "saved_idset", "saved_mutex", "snapshot_version",
        "top_id",
    )  # fmt: skip

    def __init__(self, snapshot_version: int, log_end: int, ids: dict[Any, int], last_sequence: int) -> None:
        #: Where the last record read starts, and its id: the log is still the one this
        #: cache was read from only if that record is still there (a deleted and re-made
        #: session has a new log that may be just as long).
        self.last_offset = log_end
        self.last_id = ""
        self.boundary = last_sequence
        #: The version of the session's own newest snapshot (0 for none).
        self.snapshot_version = snapshot_version
        #: The version of the snapshot the session context starts at, which a fork may
        #: inherit from its source (spec §8.10): what `snapshot()` expects.
        self.context_version = snapshot_version
        #: What a fork's history before its own log was read from (`Prefix.origin`);
        #: None when the ids come from the session alone.
        self.origin: object = None
        #: The id of the record at ``last_sequence`` ("" when not known), wherever it is:
        #: what a caller handed this state has seen.
        self.top_id = ""
        self.log_end = log_end
        self.ids = ids
        self.last_sequence = last_sequence
        #: The caller's list as last saved against this cache (its references), and the
        #: ids of its persisted messages in order: a list that starts with it needs only
        #: its new part looked at.
        self.saved: list[Message] = []
        #: How many of ``saved`` were saved: `saved_part` grows the list for a moment.
        self.saved_count = 0
        self.saved_ids: list[str] = []
        self.saved_idset: set[str] = set()
        #: Held by `saved_part` while it has ``saved`` grown, and by `remember` to grow it
        #: for good; never waited for (see `saved_part`).
        self.saved_mutex = threading.Lock()


class Store(Protocol):
    """The store methods a checkpoint is made of."""

    def append(self, session_id: str, message: Message) -> int: ...
    @property
    def append_many(self) -> Callable[..., list[int]]:
        """``append_many(session_id, messages, **append_options)``"""

    def records(self, session_id: str, *, after: int = 0) -> Iterator[RawMessageRecord]: ...
    def snapshot(
        self,
        session_id: str,
        compacted_message: Message,
        compacted_through_sequence: int,
        expected_version: int,
    ) -> ContextSnapshot: ...


class Rewrite(Protocol):
    """A rewrite's one write (`_ops.saves.rewrite_context` of the store that saves)."""

    def __call__(
        self,
        session_id: str,
        batch: list[Message],
        compacted: Message,
        expected_version: int,
        append_options: dict[str, Any],
    ) -> list[int]:
        """Append ``batch`` in one write, right after the snapshot through its first record."""
        ...


def check_messages(messages: object) -> None:
    """Refuse what is no list of messages, before anything is read or made."""
    if isinstance(messages, (dict, str, bytes)) or not isinstance(messages, Sequence):
        raise InvalidArgument("checkpoint takes a sequence of messages")


def saved_part(messages: Sequence[Message], cache: CheckpointCache | None) -> int:
    """How many leading messages are the list the last save against ``cache`` stored, unchanged.

    The first ``cache.saved_count`` items of a ``cache.saved`` list never change: a
    comparison grows the list and shrinks it back, `remember` grows it, and anything
    else puts a new list in its place.
    """
    if cache is None or not cache.saved_count:
        return 0
    mutex = cache.saved_mutex
    # Not waited for: a message's __eq__ runs during the comparison, and one that used
    # the store would otherwise wait for itself. Busy means the comparison by slices.
    if not isinstance(messages, list) or not mutex.acquire(blocking=False):
        count, saved = cache.saved_count, cache.saved
        if len(messages) < count:
            return 0
        if isinstance(messages, list):
            prefix = list.__getitem__(messages, slice(0, count))
        else:
            prefix = list(messages[:count])
        return count if prefix == saved[:count] else 0
    try:
        count, saved = cache.saved_count, cache.saved
        if len(messages) < count:
            return 0
        # A slice of the caller's list would touch (incref) every message, about 4 ns each
        # at 100,000 messages, in memory scattered over the heap. Comparing two whole lists
        # whose items are the same objects reads only the two arrays of references
        # (CPython's list_richcompare skips identical items without touching them): so our
        # copy grows by the new part for the comparison (O(new)) and shrinks back. Both
        # through `list` itself: a list subclass's own methods have no say in this.
        tail = list.__getitem__(messages, slice(count, None))
        try:
            saved.extend(tail)
            same = list.__eq__(saved, messages) is True
        finally:
            del saved[count:]
        return count if same else 0
    finally:
        mutex.release()


def ids_of(messages: Sequence[Message], start: int) -> list[str]:
    """The ids of the persisted messages from ``start`` on; refuses what cannot be saved."""
    ids = []
    for index in range(start, len(messages)):
        message = messages[index]
        if not isinstance(message, (dict, *MESSAGE_TYPES)):
            raise UnsupportedValue(
                f"a message must be a dict with 'role' or one of the message classes, not {type(message).__name__}"
            )
        if not persisted(message):
            continue
        identifier = message_id(message)
        if not isinstance(identifier, str) or not identifier:
            raise InvalidMessage(f"checkpoint needs an 'id' on every message; message {index} has none")
        ids.append(identifier)
    return ids


def check_unique(fresh_ids: list[str], cache: CheckpointCache | None, saved: int) -> None:
    """Refuse a list naming one id twice (the saved part was checked when it was saved)."""
    unique = set(fresh_ids)
    if len(unique) != len(fresh_ids) or (
        saved and cache is not None and not unique.isdisjoint(cache.saved_idset)
    ):
        raise InvalidMessage("checkpoint got two messages with the same id")


class Before(NamedTuple):
    """A fork's history before its own log (spec §8.10), as a checkpoint counts it."""

    #: The ids of the context's messages there, with their sequences.
    ids: dict[Any, int]
    #: The branch sequence, and the id of the source's record there.
    sequence: int
    record_id: str
    #: The version of the snapshot the context starts at (0 for none).
    version: int
    origin: object


class Prefix(NamedTuple):
    """A session's history before its own log: nothing unless it is a fork."""

    #: What that history is read from (the chain of fork files and the snapshot it starts
    #: at; None for no fork), found without reading a record: compared on every save of a
    #: fork, it tells when the source compacted the shared part or the fork was made anew.
    origin: Callable[[], object]
    read: Callable[[], Before]


def fork_prefix(history_of: Callable[[Reporter], History]) -> Prefix:
    """What a session's history holds before its own log, as a save counts it: nothing for
    a session that is not a fork. ``history_of`` gives the session's `History`.

    Read when the checkpoint cache is built (the first save, or after a new snapshot or
    log); its origin is looked at again by the saves of a fork without a snapshot of its
    own (or of a session with no record yet), never by other saves.
    """

    def origin() -> object:
        return history_of(Reporter()).origin()

    def read() -> Before:
        ids: dict[Any, int] = {}
        history = history_of(Reporter())
        links = history.links
        point = links[-2].check if len(links) > 1 else None
        if point is None:
            # not a fork (or one whose fork.json the next append refuses)
            return Before(ids, 0, "", 0, None)
        key = history.origin()
        snapshot, tail = history.before_own()
        if snapshot is not None:
            ids[message_id(snapshot.compacted_message)] = 0
        for record in tail:
            ids.setdefault(message_id(record.message), record.sequence)
        version = snapshot.version if snapshot is not None else 0
        return Before(ids, links[-1].base, point.record_id, version, key)

    return Prefix(origin, read)


def state(where: SessionDir, cache: CheckpointCache | None, prefix: Prefix | None = None) -> CheckpointCache:
    """The cache brought up to the log's end: rebuilt when a snapshot or a new log made it stale.

    ``prefix`` gives a fork's context before its own log, for a fork without a snapshot of
    its own: its messages count as stored, and the own log is read after the branch.
    """
    with LogReader(where, listings=True) as log:
        snapshot = log.latest_snapshot()
        version = snapshot.version if snapshot else 0
        if cache is None or _stale(where.fs, log, cache, version, None if snapshot else prefix):
            cache = _built(snapshot, prefix)
        if log.size > cache.log_end:
            for line, record in log.records(cache.log_end, cache.last_sequence):
                cache.ids.setdefault(message_id(record.message), record.sequence)
                cache.last_sequence = record.sequence
                cache.last_offset, cache.last_id = line.offset, record.id
                cache.top_id = record.id
                # Only up to the last complete record: a batch still being written
                # (or torn) is read again next time.
                cache.log_end = line.end
        return cache


def _stale(
    fs: FileSystem, log: LogReader, cache: CheckpointCache, version: int, prefix: Prefix | None
) -> bool:
    """Whether ``cache`` was read from other files than the session's now.

    Its own log is the same while the last record read is still where it was. A fork
    without a snapshot of its own also reads its source's: the source may have compacted
    the shared part since, or the fork may have been deleted and made again from another.
    """
    if cache.snapshot_version != version or cache.log_end > log.size:
        return True
    if log.fd is not None and not _still_holds(fs, log.fd, cache):
        return True
    if prefix is not None and (cache.origin is not None or not cache.last_id):
        return bool(prefix.origin() != cache.origin)
    return False


def _built(snapshot: ContextSnapshot | None, prefix: Prefix | None) -> CheckpointCache:
    """A new cache, from the session's newest snapshot, else from what a fork reads before its own log."""
    if snapshot is not None:
        cache = CheckpointCache(
            snapshot.version,
            snapshot.tail_offset,
            {message_id(snapshot.compacted_message): 0},
            snapshot.compacted_through_sequence,
        )
        # Anchored at the boundary record, so a log made anew is not taken for this one
        # before a record is read after it.
        cache.last_offset, cache.last_id = snapshot.boundary_offset, snapshot.boundary_record_id
        cache.top_id = snapshot.boundary_record_id
        return cache
    if prefix is None:
        return CheckpointCache(0, 0, {}, 0)
    before = prefix.read()
    cache = CheckpointCache(0, 0, before.ids, before.sequence)
    cache.context_version, cache.origin, cache.top_id = before.version, before.origin, before.record_id
    return cache


def still_seen(store: Store, session_id: str, sequence: int, record_id: str) -> int:
    """``sequence`` while the session holds the record the caller was handed there, else 0.

    A session deleted and made again numbers its records from 1 anew: none of them
    was seen, however many there are.
    """
    if not sequence or not record_id:
        return 0
    record = next(iter(store.records(session_id, after=sequence - 1)), None)
    return sequence if record is not None and (record.sequence, record.id) == (sequence, record_id) else 0


def _still_holds(fs: FileSystem, fd: int, cache: CheckpointCache) -> bool:
    if not cache.last_id:
        return True
    raw = fs.pread(fd, cache.log_end - cache.last_offset, cache.last_offset)[:-1]
    if not _codec.is_sealed(raw):
        return False
    try:
        return bool(_codec.record_position(raw)[2] == cache.last_id)
    except _codec.DECODE_ERRORS:
        return False


class Plan:
    """What a save does: append ``new`` (an extending save), or rewrite the context."""

    __slots__ = ("consistent", "new", "seen")

    def __init__(self, new: list[Message], consistent: bool, seen: int) -> None:
        self.new = new
        self.consistent = consistent
        #: The highest stored sequence the caller's list names.
        self.seen = seen


def plan(
    messages: Sequence[Message],
    cache: CheckpointCache,
    saved: int,
    saved_ids: list[str],
    fresh_ids: list[str],
) -> Plan:
    """Match the caller's list against the stored context by id (spec §10, "Saving a whole message list").

    The stored messages the list names must keep their order, and a list that ends with
    new messages extends the context. With ``saved`` (the first messages are those the
    last save against this very cache stored, so they are known, in order), only the
    rest is matched, after the last of them.
    """
    known = cache.ids
    if saved:
        ids = fresh_ids
        candidates = [
            m for m in messages[saved:] if persisted(m)
        ]  # a slice: O(new), islice would skip one by one
    else:
        ids = saved_ids + fresh_ids
        candidates = [m for m in messages if persisted(m)]
    split = len(ids)
    while split > 0 and ids[split - 1] not in known:
        split -= 1
    positions = [known.get(i) for i in ids[:split]]
    if saved and saved_ids:
        positions.insert(0, known.get(saved_ids[-1]))
    consistent = all(p is not None for p in positions) and all(
        a < b  # type: ignore[operator]
        for a, b in itertools.pairwise(positions)
    )
    new = candidates[split:]
    if consistent and known and any(is_compacted(m) for m in new):
        consistent = False  # a caller's compaction of what is stored
    return Plan(new, consistent, max((p for p in positions if p is not None), default=0))


def remember(cache: CheckpointCache, messages: Sequence[Message], saved: int, fresh_ids: list[str]) -> None:
    """After an extending save: the caller's list as stored, for the next save to skip over."""
    if saved:
        new = (
            list.__getitem__(messages, slice(saved, None))
            if isinstance(messages, list)
            else list(messages[saved:])
        )
        if cache.saved_mutex.acquire(blocking=False):
            try:
                cache.saved.extend(new)
            finally:
                cache.saved_mutex.release()
        else:
            # A comparison has the list grown (another thread's, or one inside a message's
            # __eq__ in this thread): a new list takes its place, the rare O(list) case.
            cache.saved = cache.saved[:saved] + new
        cache.saved_ids.extend(fresh_ids)
        cache.saved_idset.update(fresh_ids)
        cache.saved_count = saved + len(new)
    else:
        whole = list(messages)
        cache.saved, cache.saved_ids, cache.saved_idset = whole, fresh_ids, set(fresh_ids)
        cache.saved_count = len(whole)


def forget_list(cache: CheckpointCache) -> None:
    """After a rewrite: the next save matches the caller's whole list again."""
    cache.saved_count = 0
    cache.saved, cache.saved_ids, cache.saved_idset = [], [], set()


class SessionState(Protocol):
    """What a store keeps for a session that a save reads and updates (`_session.handles.OpenSession`)."""

    session_id: str
    checkpoint: CheckpointCache | None
    #: The last sequence the store handed to its caller (load or checkpoint), and the id
    #: of the record there.
    seen: int
    seen_id: str


def save(
    store: Store,
    session: SessionState,
    messages: Sequence[Message],
    append_options: dict[str, Any],
    *,
    reading: tuple[SessionDir, Prefix | None],
    lock: Callable[[], AbstractContextManager[Any]],
    make: Callable[[], object],
    rewrite_context: Rewrite,
) -> list[int]:
    """`SessionStore.checkpoint` once its arguments are checked: match, then extend or rewrite.

    ``reading`` is (the session's directory, a fork's prefix: `fork_prefix`);
    ``lock`` gives the session lock, ``make`` creates the session if it is new, and
    ``rewrite_context`` makes a rewrite's write.
    """
    where, prefix_of = reading
    session_id = session.session_id
    before = session.checkpoint
    saved = saved_part(messages, before)
    prefix_ids = before.saved_ids if saved and before is not None else []
    prefix_count = len(prefix_ids)
    fresh_ids = ids_of(messages, saved)
    check_unique(fresh_ids, before, saved)
    if not prefix_count and not fresh_ids:
        return []  # nothing to store, and a save never removes anything
    make()
    with lock():
        cache = state(where, before, prefix_of)
        session.checkpoint = cache
        # The saved part counts only against the very cache it was saved with, as saved
        # (another thread of this store may have saved meanwhile).
        if saved and (cache is not before or cache.saved_count != saved or len(prefix_ids) != prefix_count):
            saved = 0
        prefix = prefix_ids if saved else prefix_ids[:prefix_count]
        if not saved:
            fresh_ids = prefix + fresh_ids  # the whole list's ids: matched from the start
        found = plan(messages, cache, saved, prefix if saved else [], fresh_ids)
        if found.consistent:
            sequences = store.append_many(session_id, found.new, **append_options) if found.new else []
        else:
            wanted = [m for m in messages if persisted(m)]
            seen = max(still_seen(store, session_id, session.seen, session.seen_id), found.seen)
            sequences = rewrite(
                store, rewrite_context, session_id, wanted, {*prefix, *fresh_ids}, seen, cache, append_options
            )
        after = state(where, session.checkpoint, prefix_of)
        session.checkpoint = after
        if found.consistent and after is cache:
            remember(after, messages, saved, fresh_ids)
        else:
            forget_list(after)
        session.seen, session.seen_id = after.last_sequence, after.top_id
        return sequences


def rewrite(
    store: Store,
    rewrite_context: Rewrite,
    session_id: str,
    wanted: list[Message],
    wanted_ids: set[str],
    seen: int,
    cache: CheckpointCache,
    append_options: dict[str, Any],
) -> list[int]:
    """Store ``wanted`` as the new session context: a snapshot, then a new tail."""
    compacted: Message
    if wanted and is_compacted(wanted[0]):
        compacted, rest = wanted[0], wanted[1:]
    else:
        compacted = CompactedMessage(
            content="The history was rewritten by a checkpoint; the messages after this one replace it.",
            include_in_messages=False,
        )
        rest = wanted
    # Records newer than anything the caller has seen (its list, and what this store
    # last loaded or saved for it) were appended by another writer meanwhile: the
    # caller cannot have meant to drop them, so they stay, after the caller's list.
    unseen = [
        record.message
        for record in store.records(session_id, after=max(seen, cache.boundary))
        if message_id(record.message) not in wanted_ids and includes(record.message)
    ]
    for message in wanted:
        _codec.encode_message(message)  # refuse bad input before the marker is written
    _snapshots.check_size(_codec.encode_message(compacted)[0])
    # A marker record first: it always advances the boundary (even right after another
    # snapshot) and leaves a trace of the rewrite in the raw log. Marker and new tail are
    # one batch, written right after the snapshot through the marker: a snapshot is
    # trusted only once its boundary's batch is whole (spec §10), so a crash at any point
    # reads as the old context or the new one, never the summary without its tail.
    marker = CompactedMessage(
        content="checkpoint: the session context was rewritten here", include_in_messages=False
    )
    tail = [*rest, *unseen]
    sequences = rewrite_context(session_id, [marker, *tail], compacted, cache.context_version, append_options)
    return sequences[1 : 1 + len(rest)]
