"""Three-way merges of one session's files, as a git merge driver needs them (spec §17).

Two branches that both appended to a session hold two logs with a common prefix. A merge
keeps every record of both exactly once: the prefix, then one side's log as it is (the
*leading* side), then the other side's own records renumbered after it, batches whole.
One side's bytes never move, so every snapshot of the leading side stays trusted; the
leading side is the only one that compacted past the prefix, or else the one whose first
own record is older (time, then record id), so the result does not depend on which side
is "ours". What cannot be made safe (both sides compacted past the prefix, a side that
dropped or changed a record, damage) is a conflict that keeps both versions.

Everything here is bytes in, bytes out: no file is read or written, so git, a test or
another tool can call it on any three versions.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from typing import Any, Final, NamedTuple

import msgspec

from .._format import codec as _codec
from .._format.names import LOG_NAME, META_NAME, USAGE_NAME, parse_snapshot_name
from .._format.records import ForkPoint, RawMessageRecord
from .._log import modes as _log_modes
from .._session import meta as _meta

#: Git's default conflict-marker length (gitattributes(5), ``conflict-marker-size``).
MARKER_SIZE: Final = 7
# A record's numbering is its first keys, in the order of spec §4: everything after them
# is the same bytes on both sides, so renumbering rewrites only this part and the checksum.
_NUMBERING: Final = re.compile(rb'\{"sequence":([0-9]+),(?:"batch_end":([0-9]+),)?')


class MergeResult(NamedTuple):
    """What a merge of one file gives: the merged bytes, or both versions and the reason why not."""

    #: The merged file; on a conflict, ours and theirs between git's conflict markers.
    data: bytes
    #: None for a clean merge, else why the file could not be merged safely.
    conflict: str | None = None

    @property
    def clean(self) -> bool:
        """True when ``data`` is the merged file (no conflict)."""
        return self.conflict is None


class _Unsafe(Exception):
    """A merge that would lose, duplicate or misplace a record: leave a conflict (the message says why)."""


class _Unit(NamedTuple):
    """A record written alone, or a whole batch: what a merge never splits."""

    ids: tuple[str, ...]
    #: Each record's bytes after its numbering keys (``"id":...}``), without the checksum.
    rests: tuple[bytes, ...]
    lines: tuple[bytes, ...]
    batch: bool
    created_at: datetime


class _Log(NamedTuple):
    units: list[_Unit]
    #: The sequence of the first record: 1, or one past the branch point of a fork (spec §8.9).
    first: int
    #: Record id -> its bytes after the numbering, for every record of the log.
    rests: dict[str, bytes]


def _read_record(line: bytes, number: int, side: str) -> tuple[RawMessageRecord, bytes]:
    """One line's record and its bytes after the numbering keys; `_Unsafe` for anything else."""
    body = _codec.unseal(line)
    if body is None:
        raise _Unsafe(f"line {number} of {side}'s log is damaged or not a record")
    try:
        record = _codec.decode_record(body, "")
    except _codec.DECODE_ERRORS as exc:
        raise _Unsafe(f"line {number} of {side}'s log is not a record: {exc}") from None
    match = _NUMBERING.match(body)
    if (
        match is None
        or int(match.group(1)) != record.sequence
        or int(match.group(2) or 0) != record.batch_end
    ):
        raise _Unsafe(f"line {number} of {side}'s log does not start with its sequence")
    return record, body[match.end() :]


def _strict_lines(data: bytes, damaged: str) -> Iterator[tuple[int, bytes]]:
    """Each line of a log (numbered from 1, without its newline); `_Unsafe` (``damaged``
    with the line's number) at the first that is not a record line exactly as written
    (`_log.modes.Mode.STRICT`)."""
    lines = _log_modes.read(_log_modes.Source.of(data), _log_modes.Mode.STRICT)
    try:
        for number, line in enumerate(lines, 1):
            yield number, line.body
    except _log_modes.DamagedLine as exc:
        raise _Unsafe(damaged.format(exc.line)) from None


#: Lines already read, with what `_read_record` found: the three versions share most lines.
_Seen = dict[bytes, tuple[RawMessageRecord, bytes]]


def _parse_log(data: bytes, side: str, seen: _Seen) -> _Log:
    """A log's units; `_Unsafe` unless every line is a whole record, numbered on from the first one's.

    The first is 1, or for a fork the sequence after its branch point (spec §8.9): a fork's
    own log starts there.
    """
    if data and not data.endswith(b"\n"):
        raise _Unsafe(f"{side}'s log does not end in a whole line (a torn write: run repair first)")
    units: list[_Unit] = []
    rests: dict[str, bytes] = {}
    pending: list[tuple[str, bytes, bytes]] = []
    first = batch_end = 0
    created = datetime.min
    for number, line in _strict_lines(data, "line {} of " + side + "'s log is damaged or not a record"):
        found = seen.get(line)
        if found is None:
            found = seen[line] = _read_record(line, number, side)
        record, rest = found
        first = first or record.sequence
        if record.sequence != first + number - 1:
            raise _Unsafe(
                f"line {number} of {side}'s log holds sequence {record.sequence}, not {first + number - 1}"
            )
        if record.id in rests:
            raise _Unsafe(f"record id {record.id} appears twice in {side}'s log")
        rests[record.id] = rest
        if not pending:
            batch_end, created = record.batch_end, record.created_at
        elif record.batch_end != batch_end:
            raise _Unsafe(f"the batch ending at {batch_end} in {side}'s log is not whole (line {number})")
        pending.append((record.id, rest, line + b"\n"))
        if record.batch_end <= record.sequence:  # the record written alone, or a batch's last
            if record.batch_end and record.batch_end != record.sequence:
                raise _Unsafe(f"line {number} of {side}'s log closes a batch it is not the end of")
            ids, unit_rests, unit_lines = zip(*pending, strict=True)
            units.append(_Unit(ids, unit_rests, unit_lines, batch_end != 0, created))
            pending = []
    if pending:
        raise _Unsafe(f"{side}'s log ends inside a batch (a torn batch: run repair first)")
    return _Log(units, first or 1, rests)


def _boundaries(files: Mapping[str, bytes] | None, side: str) -> list[tuple[int, str]] | None:
    """The ``(sequence, record id)`` boundary of each snapshot among a side's files; None: unknown."""
    if files is None:
        return None
    found = []
    for name in sorted(files):
        if parse_snapshot_name(name) is None:
            continue
        data = files[name]
        body = _codec.unseal(data[:-1]) if data.endswith(b"\n") else None
        if body is None:
            raise _Unsafe(f"{side}'s {name} is damaged, so where its boundary lies is unknown")
        try:
            snapshot = _codec.decode_snapshot(body, "")
        except _codec.DECODE_ERRORS as exc:
            raise _Unsafe(f"{side}'s {name} is not a snapshot: {exc}") from None
        found.append((snapshot.compacted_through_sequence, snapshot.boundary_record_id))
    return found


def _renumber(unit: _Unit, first: int) -> bytes:
    """The unit's lines numbered from ``first``, with new checksums and nothing else changed."""
    last = first + len(unit.rests) - 1
    out = []
    for offset, rest in enumerate(unit.rests):
        head = b'{"sequence":%d,' % (first + offset)
        if unit.batch:
            head += b'"batch_end":%d,' % last
        out.append(_codec.seal(head + rest))
    return b"".join(out)


def _order_key(unit: _Unit) -> tuple[datetime, str]:
    return unit.created_at, unit.ids[0]


def _must_lead(boundaries: list[tuple[int, str]] | None, log: _Log, prefix_end: int) -> bool:
    """Whether a side's records must keep their places: a snapshot's boundary or a fork's branch lies past the prefix.

    Unknown snapshots (None) may lie anywhere, so such a side must lead too.
    """
    if boundaries is None:
        return True
    return any(sequence > prefix_end and record_id in log.rests for sequence, record_id in boundaries)


def _pinned(
    snapshots: Mapping[str, bytes] | None, forks: Iterable[ForkPoint], side: str
) -> list[tuple[int, str]] | None:
    """The ``(sequence, record id)`` pairs a side's files point at: its snapshots' boundaries and its forks' branches.

    A fork names its branch by sequence (spec §6.1), so a fork made on a side reads
    someone else's records once that side's records are renumbered: like a snapshot's
    boundary, its branch point keeps the side's records in place. None: not known.
    """
    boundaries = _boundaries(snapshots, side)
    if boundaries is None:
        return None
    return boundaries + [(point.sequence, point.record_id) for point in forks]


def _check_kept(base: _Log, side: _Log, name: str, other: _Log) -> None:
    """Every base record is in ``side`` unchanged, and so is every record both sides hold."""
    for record_id, rest in base.rests.items():
        if side.rests.get(record_id) != rest:
            how = "dropped" if record_id not in side.rests else "changed"
            raise _Unsafe(f"{name} {how} record {record_id} of the common base (the history was rewritten)")
    for record_id, rest in side.rests.items():
        theirs = other.rests.get(record_id)
        if theirs is not None and theirs != rest:
            raise _Unsafe(f"record {record_id} differs between the two sides")


def _merge_log_units(
    base: _Log,
    ours: _Log,
    theirs: _Log,
    ours_boundaries: list[tuple[int, str]] | None,
    theirs_boundaries: list[tuple[int, str]] | None,
    data: tuple[bytes, bytes],
) -> bytes:
    _check_kept(base, ours, "ours", theirs)
    _check_kept(base, theirs, "theirs", ours)
    common = 0
    for mine, other in zip(ours.units, theirs.units, strict=False):
        if mine.lines != other.lines:
            break
        common += 1
    starts = {log.first for log in (base, ours, theirs) if log.units}
    if len(starts) > 1:
        raise _Unsafe(
            f"the versions' logs start at different sequences ({sorted(starts)}): not one session's"
        )
    if common == len(theirs.units):
        return data[0]
    if common == len(ours.units):
        return data[1]
    # The last sequence of the common prefix.
    prefix_end = ours.first - 1 + sum(len(unit.ids) for unit in ours.units[:common])
    ours_leads = _must_lead(ours_boundaries, ours, prefix_end)
    theirs_leads = _must_lead(theirs_boundaries, theirs, prefix_end)
    if ours_leads and theirs_leads:
        raise _Unsafe(
            "both sides may have compacted or forked past their common records (a snapshot or a fork "
            "on each side, or snapshots that could not be read): renumbering either side would move "
            "a snapshot's boundary or a fork's branch point"
        )
    if not ours_leads and not theirs_leads:
        ours_leads = _order_key(ours.units[common]) < _order_key(theirs.units[common])
    lead, follow, lead_data = (ours, theirs, data[0]) if ours_leads else (theirs, ours, data[1])
    out = [lead_data]
    sequence = lead.first + sum(len(unit.ids) for unit in lead.units)
    for unit in follow.units[common:]:
        held = [record_id in lead.rests for record_id in unit.ids]
        if all(held):
            continue  # the leading side holds it already (an earlier merge brought it over)
        if any(held):
            raise _Unsafe(f"the batch of record {unit.ids[0]} is whole on one side and split on the other")
        out.append(_renumber(unit, sequence))
        sequence += len(unit.ids)
    return b"".join(out)


def merge_logs(
    base: bytes,
    ours: bytes,
    theirs: bytes,
    *,
    ours_snapshots: Mapping[str, bytes] | None,
    theirs_snapshots: Mapping[str, bytes] | None,
    ours_forks: Iterable[ForkPoint] = (),
    theirs_forks: Iterable[ForkPoint] = (),
    marker_size: int = MARKER_SIZE,
) -> MergeResult:
    """Merge three versions of a raw log (``messages.jsonl``) as spec §17 says.

    ``ours_snapshots`` and ``theirs_snapshots`` are the files of each side's session
    directory by name (only ``snapshot-*.json`` ones are read), or None when they are not
    known: a side whose snapshots are unknown may have compacted anywhere, so its records
    must keep their places. ``ours_forks`` and ``theirs_forks`` are the fork points
    (``fork.json``) of each side's sessions that fork from this one: a fork that branched
    at one of a side's own records keeps that side's records in place too. The result is
    the merged log, or a conflict holding both versions (`MergeResult.conflict` says why).
    """
    try:
        seen: _Seen = {}
        merged = _merge_log_units(
            _parse_log(base, "the base", seen),
            _parse_log(ours, "ours", seen),
            _parse_log(theirs, "theirs", seen),
            _pinned(ours_snapshots, ours_forks, "ours"),
            _pinned(theirs_snapshots, theirs_forks, "theirs"),
            (ours, theirs),
        )
    except _Unsafe as exc:
        return MergeResult(conflict_markers(ours, theirs, marker_size), str(exc))
    return MergeResult(merged)


# ---------------------------------------------------------------------------------------
# The token-usage log
# ---------------------------------------------------------------------------------------


def _usage_lines(data: bytes, side: str) -> list[tuple[datetime, bytes]]:
    if data and not data.endswith(b"\n"):
        raise _Unsafe(f"{side}'s usage log does not end in a whole line (run repair first)")
    lines = []
    for number, line in _strict_lines(data, "line {} of " + side + "'s usage log is damaged"):
        body = _codec.unseal(line)
        if body is None:
            raise _Unsafe(f"line {number} of {side}'s usage log is damaged")
        try:
            recorded = _codec.decode_usage(body).recorded_at
        except _codec.DECODE_ERRORS as exc:
            raise _Unsafe(f"line {number} of {side}'s usage log is not a usage line: {exc}") from None
        lines.append((recorded, line + b"\n"))
    return lines


def merge_usage(base: bytes, ours: bytes, theirs: bytes, *, marker_size: int = MARKER_SIZE) -> MergeResult:
    """Merge three versions of a token-usage log (``usage.jsonl``): both sides' lines, each once.

    The lines both sides start with stay first; every other line follows in the order of
    its ``recorded_at``, then its bytes. A line both sides added counts once (as often as
    the side that holds it more often). The base matters only for being valid.
    """
    try:
        _usage_lines(base, "the base")
        mine, other = _usage_lines(ours, "ours"), _usage_lines(theirs, "theirs")
    except _Unsafe as exc:
        return MergeResult(conflict_markers(ours, theirs, marker_size), str(exc))
    common = 0
    for a, b in zip(mine, other, strict=False):
        if a != b:
            break
        common += 1
    counts = Counter(mine[common:]) | Counter(other[common:])
    rest = sorted(counts.elements())
    return MergeResult(b"".join(line for _, line in mine[:common] + rest))


# ---------------------------------------------------------------------------------------
# meta.json
# ---------------------------------------------------------------------------------------

_ABSENT: Final[Any] = object()


def _read_meta(data: bytes, side: str) -> _meta.SessionMeta:
    try:
        meta = _meta.decode(data)
    except _codec.DECODE_ERRORS as exc:
        raise _Unsafe(f"{side}'s {META_NAME} cannot be read: {exc}") from None
    if meta.format > _meta.FORMAT_VERSION or meta.read_format > _meta.READ_VERSION:
        raise _Unsafe(f"{side}'s {META_NAME} was written by a newer jsonl_store (format {meta.format})")
    return meta


def _pick(values: tuple[Any, Any, Any], owners: tuple[bool, bool], counters: tuple[int, int]) -> Any:
    """One field's merged value: the side that changed it; when both did, the user's, then the later.

    "Later" is the side whose counter for the field is higher, then the larger JSON value:
    a rule both orders of the sides agree on, as concurrent writers under the lock end
    with one value.
    """
    base, ours, theirs = values
    if theirs in (ours, base):
        return ours
    if ours == base:
        return theirs
    if owners[0] != owners[1]:
        return ours if owners[0] else theirs
    if counters[0] != counters[1]:
        return ours if counters[0] > counters[1] else theirs
    encoded = [b"" if value is _ABSENT else msgspec.json.encode(value) for value in (ours, theirs)]
    return ours if encoded[0] > encoded[1] else theirs


#: The plain fields of meta.json and the counter that says how often each side changed it.
_FIELDS: Final = (
    ("parent_session_id", "version"),
    ("session_type", "version"),
    ("agent_name", "version"),
    ("title", "title_version"),
    ("pinned", "version"),
)


def _merge_meta(base: _meta.SessionMeta | None, ours: _meta.SessionMeta, theirs: _meta.SessionMeta) -> bytes:
    created = min(ours.created_at, theirs.created_at)
    # A session both sides created has no base: every field starts from its default.
    origin = base if base is not None else _meta.SessionMeta(created_at=created)
    sides = (ours, theirs)
    for field in ("parent_session_id", "session_type"):
        first, second = (getattr(side, field) for side in sides)
        if first != second and getattr(origin, field) not in (first, second):
            raise _Unsafe(f"the two sides gave the session different {field} values")
    owned = (set(ours.user_fields), set(theirs.user_fields))
    merged = msgspec.structs.replace(ours, created_at=created, metadata={}, user_fields=[])
    for field, counter in _FIELDS:
        values = (getattr(origin, field), getattr(ours, field), getattr(theirs, field))
        owners = (field in owned[0], field in owned[1])
        setattr(merged, field, _pick(values, owners, (getattr(ours, counter), getattr(theirs, counter))))
    for key in sorted({*origin.metadata, *ours.metadata, *theirs.metadata}):
        name = f"metadata.{key}"
        value = _pick(
            (
                origin.metadata.get(key, _ABSENT),
                ours.metadata.get(key, _ABSENT),
                theirs.metadata.get(key, _ABSENT),
            ),
            (name in owned[0], name in owned[1]),
            (ours.metadata_version, theirs.metadata_version),
        )
        if value is not _ABSENT:
            merged.metadata[key] = value
    base_owned = set(origin.user_fields)
    for name in sorted(owned[0] | owned[1] | base_owned):
        if _pick((name in base_owned, name in owned[0], name in owned[1]), (False, False), (0, 0)):
            merged.user_fields.append(name)
    for counter in ("version", "title_version", "metadata_version"):
        setattr(merged, counter, max(getattr(ours, counter), getattr(theirs, counter)))
    data = _meta.encode(merged)
    if data not in (_meta.encode(ours), _meta.encode(theirs)):
        # The merged file is neither side's: a writer holding either side's `version` for a
        # compare-and-swap (`update_session(expected_version=...)`) must see a change.
        merged.version += 1
        data = _meta.encode(merged)
    return data


def merge_meta(base: bytes, ours: bytes, theirs: bytes, *, marker_size: int = MARKER_SIZE) -> MergeResult:
    """Merge three versions of ``meta.json`` by the rules of concurrent updates (spec §7, §17).

    Each field takes the side that changed it from the base; when both changed it, a
    user's value wins over a runtime's, then the side with the higher counter, then the
    larger value. Counters take the larger of the two, and ``version`` one more when the
    result is neither side's file. An empty base is a session both sides created.
    """
    try:
        origin = _read_meta(base, "the base") if base.strip() else None
        merged = _merge_meta(origin, _read_meta(ours, "ours"), _read_meta(theirs, "theirs"))
    except _Unsafe as exc:
        return MergeResult(conflict_markers(ours, theirs, marker_size), str(exc))
    return MergeResult(merged)


# ---------------------------------------------------------------------------------------
# Any file of a session, and conflicts
# ---------------------------------------------------------------------------------------


def merge_session_file(
    name: str,
    base: bytes,
    ours: bytes,
    theirs: bytes,
    *,
    ours_files: Mapping[str, bytes] | None = None,
    theirs_files: Mapping[str, bytes] | None = None,
    ours_forks: Iterable[ForkPoint] = (),
    theirs_forks: Iterable[ForkPoint] = (),
    marker_size: int = MARKER_SIZE,
) -> MergeResult:
    """Merge three versions of the session file called ``name`` (what the git driver calls).

    ``messages.jsonl``, ``usage.jsonl`` and ``meta.json`` merge as `merge_logs`,
    `merge_usage` and `merge_meta` say (``ours_files``/``theirs_files`` are the sides'
    session files for `merge_logs`, None when unknown, and ``ours_forks``/``theirs_forks``
    the fork points of the sides' forks of this session); any other file, a snapshot
    included (they are never rewritten, so two versions of one are two compactions), is
    a conflict.
    """
    if name == LOG_NAME:
        return merge_logs(
            base,
            ours,
            theirs,
            ours_snapshots=ours_files,
            theirs_snapshots=theirs_files,
            ours_forks=ours_forks,
            theirs_forks=theirs_forks,
            marker_size=marker_size,
        )
    if name == USAGE_NAME:
        return merge_usage(base, ours, theirs, marker_size=marker_size)
    if name == META_NAME:
        return merge_meta(base, ours, theirs, marker_size=marker_size)
    if ours == theirs:
        return MergeResult(ours)
    reason = f"{name} is not a file jsonl_store merges"
    if parse_snapshot_name(name) is not None:
        reason = f"both sides wrote {name}: two different compactions of the session"
    return MergeResult(conflict_markers(ours, theirs, marker_size), reason)


def _every_line(data: bytes) -> list[bytes]:
    """Every line of ``data`` with its newline, the last one also without (`_log.modes.Mode.EVERY_BYTE`)."""
    return [piece.whole for piece in _log_modes.read(_log_modes.Source.of(data), _log_modes.Mode.EVERY_BYTE)]


def conflict_markers(ours: bytes, theirs: bytes, marker_size: int = MARKER_SIZE) -> bytes:
    """Both versions as git leaves a conflict: the lines they start with, then each side's rest.

    Nothing of either side is left out; the marker lines are never a valid record, so a
    reader skips them (and `verify` reports them) until a person resolves the conflict.
    """
    mine, other = _every_line(ours), _every_line(theirs)
    common = 0
    for a, b in zip(mine, other, strict=False):
        # Only a line whose one line end is its newline counts as shared: a lone carriage
        # return is a line end of its own to `bytes.splitlines` and to a text editor.
        if a != b or not a.endswith(b"\n") or b"\r" in a[:-2]:
            break
        common += 1

    def part(lines: list[bytes]) -> bytes:
        text = b"".join(lines)
        return text if not text or text.endswith(b"\n") else text + b"\n"

    size = max(marker_size, 1)
    return b"".join(
        (
            b"".join(mine[:common]),
            b"<" * size + b" ours\n",
            part(mine[common:]),
            b"=" * size + b"\n",
            part(other[common:]),
            b">" * size + b" theirs\n",
        )
    )
