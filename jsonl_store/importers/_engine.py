"""The one way every importer writes: a format's parser turns lines into entries, this stores them.

A *format* (Claude Code, Codex, pi) reads its own lines and says what they mean: an
`Entry` (one message for one session), a `Compaction` (a summary that replaces what came
before), or nothing (the line is counted as skipped). The engine owns the rest, the same
for all three:

- **When.** A source line's ``timestamp`` is the record's ``created_at`` (`SessionStore.append`'s
  ``created_at``); one that does not parse stays in the record's metadata as it was. A
  session the import makes has its first record's source time as its ``created_at``
  (`SessionStore.create_session`'s ``created_at``), so a listing sorts it by when the
  conversation happened; its ``updated_at`` is its last record's, also the source's.
- **Where it got to.** Every imported record's metadata holds ``source_line`` and
  ``source_end`` (the byte offset after its last source line), written in the same
  append as the record, so the raw log itself says how far each session got, also after
  a crash between two appends. The main session's metadata holds ``import``: the offset
  and line to read on from and the parser's state (cumulative token counts, open
  sub-agent chains), written after the records. A later import reads on from there and
  stores only entries that end past what each session already holds, so importing a
  file twice changes nothing and a file that grew adds only its new part.
- **Conditional appends.** Each record is appended with ``expected_last_sequence`` (spec
  §9.10): if another writer appended to the session meanwhile, the file's import stops
  with a problem instead of interleaving.
- **Redaction, visible.** What the store's redactor replaces (`SessionStore.redactor`) is
  replaced here, before each append, by a `Tally` that counts it per kind (spec §18.1),
  so the report says how many values of which kinds every file lost
  (`FileReport.redacted`); the store then finds nothing more to replace.
- **Compactions.** A hidden marker record (``include_in_messages=False``), then
  `SessionStore.snapshot` through it with the summary as the compacted message, as
  `checkpoint` does for a rewrite. The marker's metadata keeps the summary, so a crash
  between the two (the marker last in the log, no snapshot through it) is finished by the
  next import. A compaction whose source says what the context became (Codex's
  ``replacement_history``) stores those messages after the snapshot as one batch; the
  marker counts them (``compaction_replacement``), so a crash before the batch is
  finished the same way.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from types import MappingProxyType
from typing import Any

import msgspec

from .. import (
    CompactedMessage,
    InvalidArgument,
    InvalidMessage,
    JsonlStoreError,
    ModelUsage,
    Redactor,
    SequenceConflict,
    SessionStore,
    SessionSummary,
    StorageError,
    UnsupportedValue,
)
from .._text.redactions import Tally
from . import _source
from ._events import (
    Collector,
    Compaction,
    Entry,
    Event,
    Format,
    Parsed,
    StoredLines,
    Target,
    UsageUpdate,
    as_written,
    clean_title,
    nothing_stored,
    source_time,
)
from ._report import MAX_LISTED_DAMAGE, DamagedLine, FileReport, ImportReport

#: How many lines `Format.identify` may look at to find the transcript's own id.
HEAD_LINES = 64

# ---------------------------------------------------------------------------------------
# Reading one file
# ---------------------------------------------------------------------------------------


#: How much of a first line `_FileRun.first_line_digest` reads (a longer one counts by its start).
FIRST_LINE_BYTES = 1 << 16


class _FileRun:
    """One file being imported: its lines, the damage met, and how far it was read."""

    def __init__(self, path: str, fd: int, size: int) -> None:
        self.path = path
        self.fd = fd
        self.size = size
        self.damaged: list[DamagedLine] = []
        self.damaged_count = 0
        self.offset = 0
        self.next_line = 1

    def head(self) -> list[dict[str, Any]]:
        found = []
        for line in _source.lines(self.fd, 0, 1, self.size):
            value, _ = line.parse()
            if value is not None:
                found.append(value)
            if line.number >= HEAD_LINES:
                break
        return found

    def first_line_digest(self) -> str | None:
        """A digest of the file's first line, what tells this file from another naming the
        same session (a file that grew keeps its first line); None while it is incomplete."""
        start = os.pread(self.fd, FIRST_LINE_BYTES, 0)
        end = start.find(b"\n")
        if end < 0:
            return None if len(start) < FIRST_LINE_BYTES else hashlib.sha256(start).hexdigest()[:32]
        return hashlib.sha256(start[:end]).hexdigest()[:32]

    def parsed(self, offset: int, number: int) -> Iterator[Parsed]:
        """The JSON objects from ``offset`` on; damaged lines are reported, not given."""
        self.offset, self.next_line = offset, number
        for line in _source.lines(self.fd, offset, number, self.size):
            value, why = line.parse()
            if value is None and not line.terminated:
                return  # a write in progress: read it next time, once it is whole
            # A whole last line without its newline yet: the newline, when it comes, is
            # read as the rest of this line, so the next line keeps its own number.
            self.offset, self.next_line = line.end, line.number + 1 if line.terminated else line.number
            if value is None:
                if line.data is not None and not line.data.strip():
                    continue  # an empty line: nothing there, nothing damaged
                self.damage(line.number, why or "damaged")
                continue
            yield line, value

    def damage(self, line: int, reason: str) -> None:
        self.damaged_count += 1
        if len(self.damaged) < MAX_LISTED_DAMAGE:
            self.damaged.append(DamagedLine(self.path, line, reason))


# ---------------------------------------------------------------------------------------
# Writing one file's events
# ---------------------------------------------------------------------------------------


def _tally(store: SessionStore) -> Tally | None:
    """What counts the values the store's redactor replaces in a file's writes (None: it keeps them)."""
    redactor: Redactor | None = store.redactor
    return Tally(redactor) if redactor is not None else None


class _Writer:
    """Stores the events of one target session, each once."""

    def __init__(self, store: SessionStore, session_id: str, run: _FileRun, tally: Tally | None) -> None:
        self.store = store
        self.session_id = session_id
        self.run = run
        self.tally = tally
        self.added = 0
        self.present = 0
        self.snapshots = 0
        #: The largest count the usage log holds per request id, read when first needed.
        self.logged: dict[str, int] | None = None
        tail = store.tail(session_id, 1)
        self.last = tail[0].sequence if tail else 0
        self.done = 0
        if tail:
            metadata = tail[0].metadata
            done = metadata.get("source_end")
            if type(done) is not int:
                raise InvalidArgument(
                    f"session {session_id!r} was written to after its import (its last record was not "
                    "imported): not importing into it",
                    session_id=session_id,
                )
            self.done = done
            self._finish_compaction(tail[0].sequence, metadata)
        #: The source position of a compaction whose replacement messages a crash kept from
        #: being stored after its marker (the marker is still the last record), else None.
        self.open_replacement = (
            self.done if tail and type(tail[0].metadata.get("compaction_replacement")) is int else None
        )

    def _finish_compaction(self, sequence: int, metadata: Mapping[str, Any]) -> None:
        """Make the snapshot a crash kept from being made after its marker record."""
        summary = metadata.get("compaction_summary")
        if not isinstance(summary, str):
            return
        view = self.store.load(self.session_id)
        if view.snapshot is None or view.snapshot.compacted_through_sequence < sequence:
            self._snapshot(summary, sequence, view.snapshot.version if view.snapshot else 0)

    def _snapshot(self, summary: str, through: int, version: int) -> None:
        self.store.snapshot(self.session_id, CompactedMessage(content=summary), through, version)
        self.snapshots += 1

    def write(self, event: Event) -> None:
        if isinstance(event, UsageUpdate):
            self._update_usage(event)
            return
        if event.end <= self.done:
            if isinstance(event, Compaction) and event.replacement and event.end == self.open_replacement:
                self._append(event.replacement, event, event.metadata, None, None)
            else:
                self.present += 1
            return
        if isinstance(event, Entry):
            self._append([event.message], event, event.metadata, event.usage, event.request_id)
            return
        # The summary is the marker's text too, not only its snapshot's: a later compaction's
        # snapshot takes the place of this one as the context's start, and the summary must
        # stay readable and searchable in the raw log (show, search and export read records).
        # It is the source's text as written: what marks it a compaction is its metadata
        # (``compaction_summary``), never words of ours that a search would then find.
        marker = {"role": "system", "content": event.summary, "include_in_messages": False}
        metadata = {**event.metadata, "compaction_summary": event.summary}
        if event.replacement:
            metadata["compaction_replacement"] = len(event.replacement)
        if self._append([marker], event, metadata, None, None):
            view = self.store.load(self.session_id)
            self._snapshot(event.summary, self.last, view.snapshot.version if view.snapshot else 0)
            if event.replacement:
                # What the context became, after the summary: one batch, all or nothing.
                self._append(event.replacement, event, event.metadata, None, None)

    def _update_usage(self, event: UsageUpdate) -> None:
        """Log the larger counts once: a usage line for the request id with at least these
        counts (an import that stopped before saving its position wrote it) is enough."""
        if self.logged is None:
            self.logged = {}
            for item in self.store.usage(self.session_id):
                request_id = item.get("request_id")
                if isinstance(request_id, str):
                    counted = _count(item, "input_tokens") + _count(item, "output_tokens")  # total_tokens
                    self.logged[request_id] = max(self.logged.get(request_id, 0), counted)
        total = event.usage.total_tokens
        if self.logged.get(event.request_id, -1) >= total:
            self.present += 1
            return
        counts = {k: v for k, v in msgspec.structs.asdict(event.usage).items() if v is not None}
        self.store.record_usage(
            self.session_id,
            {**counts, **event.metadata, "request_id": event.request_id, "source_line": event.line},
        )
        self.logged[event.request_id] = total

    def _append(
        self,
        messages: list[dict[str, Any]],
        event: Event,
        metadata: Mapping[str, Any],
        usage: ModelUsage | None,
        request_id: str | None,
    ) -> bool:
        """Store ``messages`` as one conditional append (a batch when there are several)."""
        fields = {**metadata, "source_line": event.line, "source_end": event.end}
        created_at = source_time(fields.get("timestamp"))
        if created_at is not None:
            del fields["timestamp"]  # it is the record's created_at
        # What the store would replace is replaced here, counted, and added to the file's
        # count once the append succeeded (a refused message stored nothing).
        counted = _tally(self.store) if self.tally is not None else None
        if counted is not None:
            messages = [_pre_redacted(counted, message) for message in messages]
            fields = _pre_redacted(counted, fields)
            request_id = _redacted(counted, request_id)
        options: dict[str, Any] = {
            "usage": usage,
            "request_id": request_id,
            "metadata": fields,
            "expected_last_sequence": self.last,
            "created_at": created_at,
        }
        try:
            if len(messages) == 1:
                sequence = self.store.append(self.session_id, messages[0], **options)
            else:
                sequence = max(self.store.append_many(self.session_id, messages, **options))
        except (InvalidMessage, UnsupportedValue, InvalidArgument) as exc:
            self.run.damage(event.line, f"cannot be stored: {exc}")
            return False
        self.last = sequence
        self.done = event.end
        self.open_replacement = None
        self.added += len(messages)
        if counted is not None and self.tally is not None:
            self.tally.add(counted.kinds)
        return True


def _other_file(summary: SessionSummary | None, fmt: Format, head: str | None, path: str) -> str | None:
    """The problem of a file naming a session another file was imported into, else None.

    Its records' positions are byte offsets in that other file: reading on from them would
    silently skip this file's first part, so nothing of it is imported.
    """
    if summary is None:
        return None
    origin = summary.metadata.get("imported_from")
    if not isinstance(origin, dict) or origin.get("tool") != fmt.tool:
        return None
    recorded = origin.get("head")
    if not isinstance(recorded, str) or head is None or recorded == head:
        return None
    other = origin.get("file")
    return (
        f"session {summary.session_id!r} holds an import of another file"
        + (f" ({other!r})" if isinstance(other, str) else "")
        + f" whose first line differs from this one's: not importing {os.path.basename(path)!r} into it"
        " (import it into another store, or delete the session to import this file instead)"
    )


def _pre_redacted(tally: Tally, value: dict[str, Any]) -> dict[str, Any]:
    """``value`` as the store would keep it, counted: through the encoded bytes, as the store
    redacts (the cheap pre-filter first); a value JSON cannot hold is left for the store to
    refuse with its reason."""
    try:
        data = msgspec.json.encode(value)
    except (TypeError, OverflowError, ValueError, RecursionError):
        return value
    redacted = tally.redact_json(data)
    return value if redacted is data else msgspec.json.decode(redacted)


def _stored_form(store: SessionStore) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """What the store would keep of a value: redacted by its redactor, nothing counted."""
    redactor = store.redactor
    if redactor is None:
        return as_written
    return lambda value: _pre_redacted(Tally(redactor), value)


def _redacted(tally: Tally | None, text: str | None) -> str | None:
    """``text`` as the store would keep it, counted (only what is written is counted)."""
    return tally.redact(text) if tally is not None and text is not None else text


def _create(
    store: SessionStore,
    fmt: Format,
    target: Target,
    path: str,
    head: str | None,
    tally: Tally | None,
    began: datetime | None,
) -> None:
    summary = store.get_session(target.session_id)
    title = clean_title(target.title)
    if summary is not None:
        if title is not None and title != summary.title and (summary.title is None or target.renamed):
            # The title line came after the session was made (a file that grew), or the
            # source renamed the session: a runtime title, so a user's rename is never undone.
            store.update_session(target.session_id, title=_redacted(tally, title), origin="runtime")
        return
    store.create_session(
        target.session_id,
        title=_redacted(tally, title),
        agent_name=_redacted(tally, clean_title(target.agent_name)),
        parent_session_id=target.parent,
        created_at=began,
        metadata={
            **({"cwd": _redacted(tally, target.cwd)} if target.cwd else {}),
            "dialect": fmt.dialect,
            "imported_from": {
                "tool": fmt.tool,
                "file": os.path.basename(path),
                **({"head": head} if head is not None else {}),
            },
        },
    )


#: The record metadata keys that hold the ids of the source lines a record was made from.
LINE_ID_KEYS = ("uuid", "uuids")


def _stored_lines(store: SessionStore) -> StoredLines:
    """The source line ids (`LINE_ID_KEYS`) each session holds, with their records' messages,
    read once per session when asked.

    Asked only when an import reads on from a saved position: the lines before it are
    not read again, so a line repeated after it (a resumed or concatenated transcript)
    is known only by what its first copy left in the records.
    """
    cache: dict[str, dict[str, object]] = {}

    def stored(session_id: str) -> Mapping[str, object]:
        if session_id not in cache:
            found: dict[str, object] = {}
            if store.get_session(session_id) is not None:
                for record in store.records(session_id):
                    for key in LINE_ID_KEYS:
                        value = record.metadata.get(key)
                        for line_id in value if isinstance(value, list) else [value]:
                            if isinstance(line_id, str):
                                found[line_id] = record.message
            cache[session_id] = found
        return cache[session_id]

    return stored


def _saved_position(
    summary: SessionSummary | None, fmt: Format, size: int
) -> tuple[int, int, dict[str, Any]]:
    """Where the last import of the session's file stopped: ``(offset, next line, state)``."""
    saved = summary.metadata.get("import") if summary is not None else None
    if not isinstance(saved, dict) or saved.get("tool") != fmt.tool:
        return 0, 1, {}
    offset, line, state = saved.get("offset"), saved.get("line"), saved.get("state")
    if (
        type(offset) is not int
        or type(line) is not int
        or not isinstance(state, dict)
        or not 0 <= offset <= size
    ):
        # A file shorter than what was imported was replaced: read it all again (the
        # records' own positions still keep what is stored from being stored twice).
        return 0, 1, {}
    return offset, line, state


def import_file(store: SessionStore, fmt: Format, path: str) -> FileReport:
    """Import one transcript file; every problem goes into the report, none is raised."""
    try:
        fd = _source.open_source(path)
    except _source.NotRegular:
        return FileReport(path, None, problem="not a regular file (a FIFO, a device or a directory)")
    except OSError as exc:
        return FileReport(path, None, problem=f"cannot open it: {exc.strerror or exc}")
    try:
        return _import_open(store, fmt, path, fd)
    except StorageError:
        raise  # the store failed (a full disk, a read-only store): no other file would fare better
    except OSError as exc:
        return FileReport(path, None, problem=f"cannot read it: {exc.strerror or exc}")
    finally:
        os.close(fd)


def _import_open(store: SessionStore, fmt: Format, path: str, fd: int) -> FileReport:
    run = _FileRun(path, fd, _source.size_of(fd))
    try:
        main = fmt.identify(path, run.head())
    except JsonlStoreError as exc:  # an id too long for a session id
        return FileReport(path, None, problem=str(exc))
    if main is None:
        return FileReport(
            path, None, problem=f"not {fmt.expected}: none of its first {HEAD_LINES} lines is one"
        )
    head = run.first_line_digest()
    before = store.get_session(main.session_id)
    problem = _other_file(before, fmt, head, path)
    if problem is not None:
        return FileReport(path, main.session_id, problem=problem)
    try:
        offset, number, state = _saved_position(before, fmt, run.size)
        out = Collector(main, state, _stored_lines(store) if offset else nothing_stored, _stored_form(store))
        fmt.parse(path, run.parsed(offset, number), out)
        tally = _tally(store)
        writers = _write(store, fmt, path, out, run, head, tally)
    except StorageError:
        raise
    except SequenceConflict as exc:
        problem = f"another writer appended to the session while importing ({exc}); import again to go on"
        return FileReport(path, main.session_id, problem=problem, damaged=tuple(run.damaged),
                          damaged_count=run.damaged_count)  # fmt: skip
    except JsonlStoreError as exc:  # a session written to after its import, an id too long
        return FileReport(path, main.session_id, problem=str(exc), damaged=tuple(run.damaged),
                          damaged_count=run.damaged_count)  # fmt: skip
    saved = {"tool": fmt.tool, "offset": run.offset, "line": run.next_line, "state": out.state}
    summary = store.get_session(main.session_id)
    if summary is not None and summary.metadata.get("import") != saved:
        store.update_session(main.session_id, metadata={"import": saved}, origin="runtime")
    return FileReport(
        path,
        main.session_id,
        added=sum(w.added for w in writers),
        present=sum(w.present for w in writers),
        skipped=sum(out.skipped.values()),
        skipped_types=MappingProxyType(dict(sorted(out.skipped.items()))),
        in_meta=MappingProxyType(dict(sorted(out.in_meta.items()))),
        reasons=MappingProxyType({kind: out.reasons[kind] for kind in sorted({*out.skipped, *out.in_meta})}),
        damaged=tuple(run.damaged),
        damaged_count=run.damaged_count,
        snapshots=sum(w.snapshots for w in writers),
        children=tuple(sid for sid in out.targets if sid != main.session_id),
        redacted=MappingProxyType(dict(tally.kinds) if tally is not None else {}),
    )


def _write(
    store: SessionStore,
    fmt: Format,
    path: str,
    out: Collector,
    run: _FileRun,
    head: str | None,
    tally: Tally | None,
) -> list[_Writer]:
    used = {event.session_id for event in out.events} | {out.main.session_id}
    began = _first_times(out.events)
    writers: dict[str, _Writer] = {}
    for session_id, target in out.targets.items():
        if session_id in used:
            first = head if session_id == out.main.session_id else None
            _create(store, fmt, target, path, first, tally, began.get(session_id))
            writers[session_id] = _Writer(store, session_id, run, tally)
    for event in out.events:
        writers[event.session_id].write(event)
    return list(writers.values())


def _count(item: Mapping[str, Any], key: str) -> int:
    """A token count of a usage-log line (one that is no int is 0)."""
    value = item.get(key, 0)
    return value if type(value) is int else 0


def _first_times(events: list[Event]) -> dict[str, datetime]:
    """Each session's first source time: the ``created_at`` of a session an import makes,
    so that a session began when its transcript did, not when it was imported."""
    found: dict[str, datetime] = {}
    for event in events:
        if event.session_id not in found:
            moment = source_time(event.metadata.get("timestamp"))
            if moment is not None:
                found[event.session_id] = moment
    return found


def import_paths(
    store: SessionStore,
    fmt: Format,
    paths: list[str],
    progress: Callable[[int, int, str], None] | None = None,
) -> ImportReport:
    """Import every transcript ``paths`` name (files, or folders searched for ``*.jsonl``)."""
    files, problems = _source.find(paths)
    reports = [FileReport(path, None, problem=problem) for path, problem in problems]
    for index, path in enumerate(files):
        if progress is not None:
            progress(index, len(files), path)
        reports.append(import_file(store, fmt, path))
    if progress is not None and files:
        progress(len(files), len(files), files[-1])
    return ImportReport(fmt.tool, tuple(reports))
