"""The token-usage log (``usage.jsonl``, spec §6): one line per model call, and its sums."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime
from typing import Any

import msgspec

from .._errors import InvalidArgument
from .._format import codec as _codec
from .._format import roundtrip as _roundtrip
from .._format.names import USAGE_NAME
from .._format.records import ModelUsage, RawMessageRecord, UsageRecord
from .._io.fs import open_regular
from .._io.session_dir import SessionDir
from .._log import modes as _log_modes
from .._log.problems import SKIPPED, Problem, Reporter
from .._log.reader import LogReader
from .._log.scan import FLAGS_READ, Line
from .._text.redact import Redactor
from .handles import now

_KNOWN = frozenset(f for f in UsageRecord.__struct_fields__ if f not in ("recorded_at", "extra"))


def encode(record: ModelUsage | Mapping[str, Any], clock: Callable[[], datetime] = now) -> bytes:
    """The checked line for one usage record: a `ModelUsage`, or a mapping of its keys and more."""
    if isinstance(record, ModelUsage):
        record = msgspec.structs.asdict(record)  # checked below like any mapping
    if not isinstance(record, Mapping):
        raise InvalidArgument(f"record must be a ModelUsage or a mapping, got {type(record).__name__}")
    fields = {k: v for k, v in record.items() if k in _KNOWN}
    extra = {k: v for k, v in record.items() if k not in _KNOWN}
    _codec.encode_json(extra, "record")
    try:
        usage = msgspec.convert({"recorded_at": clock(), **fields, "extra": extra}, UsageRecord)
    except msgspec.ValidationError as exc:
        raise InvalidArgument(f"bad usage record: {exc}") from None
    for name in ModelUsage.__struct_fields__:
        if getattr(usage, name) < 0:
            raise InvalidArgument(f"{name} must not be negative, got {getattr(usage, name)}")
    for name in ("model", "request_id"):
        if getattr(usage, name) is not None:
            _roundtrip.check_label(getattr(usage, name), name)
    return _codec.encode_usage(usage)


def redact(line: bytes, redactor: Redactor) -> bytes:
    """An encoded usage line with its strings (model, request id, extra keys) redacted."""
    body = _codec.unseal(line[:-1])
    assert body is not None  # made by `encode` just now
    redacted = redactor.redact_json(body)
    return line if redacted is body else _codec.seal(redacted)


def builder(line: bytes) -> Any:
    """What the writer appends: ``line`` as it is (usage lines carry no sequence)."""

    def build(last: Line | None) -> tuple[bytes, Line]:
        return line, Line(0, None, line[:-1], len(line))

    return build


def read(where: SessionDir, reporter: Reporter) -> Iterator[dict[str, Any]]:
    """Every usage record of the session, oldest first, as dicts; damage goes to ``reporter``.

    An ``OSError`` passes through, for the caller to name.
    """
    fs, path = where.fs, where.file(USAGE_NAME)
    try:
        fd = open_regular(fs, path, FLAGS_READ)
    except FileNotFoundError:
        return
    try:
        size = fs.fstat(fd).st_size
        for line in _log_modes.read(
            _log_modes.Source(fs, fd, size, path), _log_modes.Mode.TOLERANT, reporter
        ):
            try:
                item = _codec.decode_usage_dict(line.body)
            except _codec.DECODE_ERRORS as exc:
                reporter.report(
                    Problem(path, "bad-record", f"checksum holds but the line is not a usage record: {exc}",
                            SKIPPED, line.offset, line.number)
                )  # fmt: skip
                continue
            yield item
    finally:
        fs.close(fd)


def _counts(item: Mapping[str, Any]) -> dict[str, int]:
    # A line another program wrote may hold anything under these keys: only non-negative
    # integers are tokens.
    found = {}
    for name in ModelUsage.__struct_fields__:
        value = item.get(name, 0)
        found[name] = value if type(value) is int and value >= 0 else 0
    return found


def calls(records: Iterable[RawMessageRecord], logged: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every model call of a session once: its usage-log lines, then the usage on records.

    A record's usage counts unless the usage log has a line with the record's
    ``request_id`` (the same call recorded both ways). Each call is a dict of the token
    counts plus ``source`` (``"usage log"`` or ``"record <sequence>"``), ``recorded_at``,
    ``model`` (a usage line's, or a record's ``metadata["model"]``) and ``request_id``
    where known, oldest first within each source.
    """
    found: list[dict[str, Any]] = []
    requests: set[str] = set()
    for item in logged:
        request_id = item.get("request_id")
        if isinstance(request_id, str):
            requests.add(request_id)
        model = item.get("model")
        found.append({
            "source": "usage log",
            "recorded_at": item.get("recorded_at"),
            "model": model if isinstance(model, str) else None,
            "request_id": request_id if isinstance(request_id, str) else None,
            **_counts(item),
        })  # fmt: skip
    for record in records:
        usage = record.usage
        if usage is None or (record.request_id is not None and record.request_id in requests):
            continue
        # A record names its model in its metadata, as importers and adapters write it.
        model = record.metadata.get("model")
        found.append({
            "source": f"record {record.sequence}",
            "recorded_at": record.created_at,
            "model": model if isinstance(model, str) else None,
            "request_id": record.request_id,
            **msgspec.structs.asdict(usage),
        })  # fmt: skip
    return found


#: Bytes every record holding token counts has (spec §4): a line without them holds no call.
_TOKENS = b'_tokens"'


def record_calls(where: SessionDir, reporter: Reporter) -> Iterator[dict[str, Any]]:
    """The model calls recorded with the session's own raw-log records (a fork's inherited
    history is its source's), as `calls` gives them, without decoding any message.

    A line without token counts is stepped over by a byte search; the others are decoded
    into their sequence, time, request id, model and counts only (`_format.codec.call_fields`), so
    a usage report costs a pass over the log's bytes, not a decoding of every message.
    Records out of order are left out as `LogReader.records` leaves them out (§8.6).
    """
    with LogReader(where, reporter) as log:
        if log.fd is None:
            return
        end, _ = log.last_good()
        previous = 0
        for line in _log_modes.read(
            _log_modes.Source(where.fs, log.fd, end, log.path), _log_modes.Mode.TOLERANT, reporter
        ):
            if _TOKENS not in line.body:
                continue
            try:
                fields = _codec.call_fields(line.body)
            except _codec.DECODE_ERRORS:
                continue  # a record reader reports it; a report only leaves it out
            if fields.sequence <= previous or (fields.input_tokens is None and fields.output_tokens is None):
                continue
            previous = fields.sequence
            meta = fields.metadata
            model = meta.model if meta is not None else None
            yield {
                "source": f"record {fields.sequence}",
                "recorded_at": fields.created_at,
                "model": model if isinstance(model, str) else None,
                "request_id": fields.request_id if isinstance(fields.request_id, str) else None,
                **_counts(msgspec.structs.asdict(fields)),
            }


def own_calls(records: Iterable[dict[str, Any]], logged: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """`calls` over `record_calls`: the usage log's lines, then the records' calls whose
    request id the usage log does not name."""
    found = calls((), logged)
    requests = {item["request_id"] for item in found if item["request_id"] is not None}
    found.extend(item for item in records if item["request_id"] is None or item["request_id"] not in requests)
    return found


def total(items: Iterable[Mapping[str, Any]]) -> ModelUsage:
    """The sum of the token counts of ``items`` (usage lines or `calls`)."""
    sums = dict.fromkeys(ModelUsage.__struct_fields__, 0)
    for item in items:
        for name, value in _counts(item).items():
            sums[name] += value
    return ModelUsage(**sums)
