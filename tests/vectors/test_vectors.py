"""The spec's test vectors (spec/vectors/) and its worked example, checked against the store.

Every directory ``spec/vectors/<group>/<name>/`` holding an ``expected.json`` is a case;
a new directory is picked up without touching this file. Its ``session/`` directory is
copied to ``<tmp>/root/session`` and opened with a fresh `SessionStore`. Keys of
``expected.json`` (all optional except ``description``):

- ``load``: ``{"raises": ErrorName}`` or ``snapshot_version``, ``records`` (the raw tail:
  sequence, id, message class name as ``type``, message, and any further record fields),
  ``messages`` (the session context), ``problems`` and ``reasons``.
- ``records``: sequences streamed by ``records()``, or ``{"raises": ErrorName}`` (raised
  by the call itself, before any iteration); ``records_after``: ``{"after": n, "sequences": [...]}``.
- ``verify`` / ``repair``: problems as ``{kind, file, offset, line, action}``, in order
  (``repair`` may be ``{"raises": ErrorName}``). The action is checked by a test of its
  own, so a wrong word does not hide the rest.
- ``after_repair``: ``files`` left in the session directory (the lock file aside), ``cut``
  (sidecar name and offset), ``moved`` (file -> name it was moved aside to), ``restored``
  (file -> its exact text after repair gave back the bytes a text conversion changed), ``verify``
  (what stays reported; a second repair must report the same and change no byte),
  ``load_sequences``, ``snapshot_version``, ``summary``.
- ``append``: ``{"sequence": n}`` or ``{"raises": ErrorName}``, both before and after repair
  (``append_before_repair`` overrides it for the append on the damaged copy). For that
  first append also: ``args`` (keyword arguments of the call), ``problems`` it reports
  (``on_problem``), ``moved`` files, ``restored`` (the text the raw log starts with after
  it: the bytes as written, before a text conversion), and the ``summary`` after it.
- ``snapshot``: ``{"expected_version", "through"}`` and ``version`` or ``raises``.
- ``summary``, ``usage``, ``usage_totals``: subsets of what the store reports, or
  ``{"raises": ErrorName}``; ``update``: a list of ``update_session`` calls and their result.
- ``checkpoint``: steps, each on a fresh copy: after a ``load``, ``other`` (a message another
  store appends), then ``checkpoint(list)`` must return ``appended`` and leave
  ``snapshot_version`` and the session context ``messages``; a step may carry its own
  ``xfail`` reason.
- ``scan``: the secrets `scan` reports (each finding without its session id), in order;
  ``redact``: the ``messages`` (contents) and record ``ids`` of the records after
  `redact_session`, which must then verify clean and scan clean (spec §18).
- ``xfail``: aspect -> reason, for a known gap between the code and the spec (strict).
  Aspects: ``records``, ``verify``, ``repair``, ``actions``, ``append``,
  ``append_after_repair``, ``append_summary``, ``snapshot``, ``summary``.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

import jsonl_store
from jsonl_store import CompactedMessage, SessionStore, UserMessage
from jsonl_store._format import codec as _codec
from jsonl_store._format.names import GITATTRIBUTES_TEXT, GITIGNORE_TEXT, LOCK_NAME
from jsonl_store._log.problems import Problem
from jsonl_store._session import meta as _meta

REPO = Path(__file__).resolve().parents[2]
VECTORS = REPO / "spec" / "vectors"
FORMAT_MD = REPO / "spec" / "FORMAT.md"
SESSION = "session"

CASES = sorted(path.parent for path in VECTORS.glob("*/*/expected.json"))


def _expected(case: Path) -> dict[str, Any]:
    return json.loads((case / "expected.json").read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def _cases(*keys: str, having: Any = None) -> list[Any]:
    """Every case whose expected.json has all ``keys`` (and passes ``having``), as pytest params."""
    return [
        pytest.param(case, id=f"{case.parent.name}/{case.name}")
        for case in CASES
        if all(key in _expected(case) for key in keys) and (having is None or having(_expected(case)))
    ]


def _first_append(expected: dict[str, Any]) -> dict[str, Any]:
    """What the first append on the case's (possibly damaged) copy must do."""
    return expected.get("append_before_repair", expected.get("append", {}))  # type: ignore[no-any-return]


def _xfail(request: pytest.FixtureRequest, expected: dict[str, Any], *aspects: str) -> None:
    for aspect in aspects:
        reason = expected.get("xfail", {}).get(aspect)
        if reason is not None:
            request.applymarker(pytest.mark.xfail(reason=reason, strict=True))
            return


def _install(
    case: Path, tmp_path: Path, name: str = "root", reported: list[Problem] | None = None
) -> tuple[SessionStore, Path]:
    """Copy the case's session below a fresh root; problems the store reports go to ``reported``."""
    root = tmp_path / name
    # The session, and any other session the vector holds beside it (a fork's source).
    for directory in sorted(p for p in case.iterdir() if p.is_dir()):
        shutil.copytree(directory, root / directory.name)
    sink = reported if reported is not None else []
    return SessionStore(root, on_problem=sink.append), root / SESSION


def _files(directory: Path) -> dict[str, bytes]:
    """Every file below the session directory (``blobs/<hex>`` too) by relative path, the lock file aside."""
    return {
        p.relative_to(directory).as_posix(): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file() and p.name != LOCK_NAME
    }


def _problems(problems: list[Problem], *, action: bool = False) -> list[dict[str, Any]]:
    out = [{"kind": p.kind, "file": Path(p.path).name, "offset": p.offset, "line": p.line} for p in problems]
    if action:
        for item, problem in zip(out, problems, strict=True):
            item["action"] = problem.action
    return out


def _where(expected: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Expected problems without their actions (checked on their own)."""
    return [{key: value for key, value in item.items() if key != "action"} for item in expected]


def _builtins(value: Any) -> Any:
    return value if isinstance(value, dict) else msgspec.to_builtins(value)


def _record(record: jsonl_store.RawMessageRecord, expected: dict[str, Any]) -> dict[str, Any]:
    """The record seen through the keys ``expected`` names."""
    out = {
        "sequence": record.sequence,
        "id": record.id,
        "type": type(record.message).__name__,
        "message": _builtins(record.message),
    }
    for key in expected.keys() - out.keys():
        out[key] = msgspec.to_builtins(getattr(record, key))
    return out


def _subset(actual: Any, expected: dict[str, Any]) -> dict[str, Any]:
    data = msgspec.to_builtins(actual)
    return {key: data[key] for key in expected}


def _error(name: str) -> type[BaseException]:
    error = getattr(jsonl_store, name)
    assert isinstance(error, type) and issubclass(error, BaseException)
    return error


# ---------------------------------------------------------------------------------------
# Vectors
# ---------------------------------------------------------------------------------------


def test_vectors_exist_in_every_group() -> None:
    """valid/, invalid/ and recover/ each hold at least one vector."""
    groups = {case.parent.name for case in CASES}
    assert groups == {"valid", "invalid", "recover"}


def _generator() -> Any:
    """spec/vectors/make_vectors.py, imported as a module."""
    spec = importlib.util.spec_from_file_location("make_vectors", VECTORS / "make_vectors.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    writes, sys.dont_write_bytecode = sys.dont_write_bytecode, True  # keep spec/ free of __pycache__
    try:
        spec.loader.exec_module(module)
    finally:
        sys.dont_write_bytecode = writes
    return module


def test_vectors_match_their_generator() -> None:
    """The committed vector files are byte for byte what make_vectors.py builds."""
    module = _generator()
    built, found = module.build(), module.on_disk()
    assert sorted(built) == sorted(found)
    stale = [path for path in built if built[path] != found[path]]
    assert stale == []


def test_vectors_stay_small() -> None:
    """All vectors and their generators together stay under 330 KB, so they can be read and diffed."""
    size = sum(path.stat().st_size for path in VECTORS.rglob("*") if path.is_file())
    # About 250 KB for the format's own, 31 KB the merge vectors (§17), 18 KB the blob ones (§5.1).
    assert size < 330_000


@pytest.mark.parametrize("case", _cases("scan"))
def test_scan_finds_the_stored_secrets_and_no_marker(case: Path, tmp_path: Path) -> None:
    """scan() reports each stored secret (file, line, sequence, path, kind, preview); a marker is none."""
    store, directory = _install(case, tmp_path)
    before = _files(directory)
    found = [{k: v for k, v in f._asdict().items() if k != "session_id"} for f in store.scan(SESSION)]
    assert found == _expected(case)["scan"]
    assert _files(directory) == before


@pytest.mark.parametrize("case", _cases("redact"))
def test_redact_replaces_the_secrets_by_markers_and_keeps_every_record(case: Path, tmp_path: Path) -> None:
    """redact_session() leaves markers where the secrets were, the same records, valid checksums."""
    expected = _expected(case)
    store, _ = _install(case, tmp_path)
    assert len(store.redact_session(SESSION)) == len(expected["scan"])
    records = list(store.records(SESSION))
    assert [r.message.content for r in records] == expected["redact"]["messages"]  # type: ignore[union-attr]
    assert [r.id for r in records] == expected["redact"]["ids"]
    assert store.verify(SESSION) == [] and store.scan(SESSION) == []


@pytest.mark.parametrize("case", _cases("load"))
def test_load_gives_the_expected_records_and_context(case: Path, tmp_path: Path) -> None:
    """load() returns the vector's snapshot, raw tail, session context and problems."""
    expected = _expected(case)["load"]
    store, _ = _install(case, tmp_path)
    if "raises" in expected:
        with pytest.raises(_error(expected["raises"])):
            store.load(SESSION)
        return
    view = store.load(SESSION)
    assert (view.snapshot.version if view.snapshot else None) == expected["snapshot_version"]
    assert len(view.raw_tail) == len(expected["records"])
    records = [_record(r, e) for r, e in zip(view.raw_tail, expected["records"], strict=True)]
    assert records == expected["records"]
    if "messages" in expected:
        assert [_builtins(m) for m in view.messages] == expected["messages"]
    assert _problems(view.problems) == expected["problems"]
    if "reasons" in expected:
        assert [p.reason for p in view.problems] == expected["reasons"]


@pytest.mark.parametrize("case", _cases("records"))
def test_records_streams_the_expected_sequences(
    case: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """records() streams every readable record of the raw log, or refuses the session."""
    expected = _expected(case)
    _xfail(request, expected, "records")
    store, _ = _install(case, tmp_path)
    if isinstance(expected["records"], dict):
        with pytest.raises(_error(expected["records"]["raises"])):
            store.records(SESSION)  # the call refuses, not the first next()
        return
    assert [r.sequence for r in store.records(SESSION)] == expected["records"]
    if "records_after" in expected:
        after = expected["records_after"]
        assert [r.sequence for r in store.records(SESSION, after=after["after"])] == after["sequences"]


@pytest.mark.parametrize("case", _cases("verify"))
def test_verify_reports_the_expected_problems_and_changes_nothing(
    case: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """verify() names each problem with its file, offset and line, and writes nothing."""
    expected = _expected(case)
    _xfail(request, expected, "verify")
    store, directory = _install(case, tmp_path)
    before = _files(directory)
    assert _problems(store.verify(SESSION)) == _where(expected["verify"])
    assert _problems(store.verify()) == _where(expected["verify"])
    assert _files(directory) == before


@pytest.mark.parametrize("case", _cases("repair"))
def test_repair_fixes_the_damage_and_a_second_repair_changes_nothing(
    case: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """repair() reports what it did, keeps every cut byte, and is idempotent."""
    expected = _expected(case)
    _xfail(request, expected, "repair")
    store, directory = _install(case, tmp_path)
    original = _files(directory)
    if "raises" in expected["repair"]:
        with pytest.raises(_error(expected["repair"]["raises"])):
            store.repair(SESSION)
        assert _files(directory) == original
        return
    assert _problems(store.repair(SESSION)) == _where(expected["repair"])
    after = expected.get("after_repair", {"files": sorted(original), "verify": []})
    repaired = _files(directory)
    assert sorted(repaired) == sorted(after["files"])
    if "cut" in after:
        log, sidecar, offset = (
            after["cut"].get("log", "messages.jsonl"),
            after["cut"]["file"],
            after["cut"]["offset"],
        )
        assert len(repaired[log]) == offset
        assert repaired[log] + repaired[sidecar] == original[log]  # no byte destroyed
    for source, target in after.get("moved", {}).items():
        assert repaired[target] == original[source]
    for name, text in after.get("restored", {}).items():
        assert repaired[name] == text.encode()  # the bytes as written, before a text conversion
    fresh = SessionStore(directory.parent, on_problem=lambda problem: None)
    assert _problems(fresh.verify(SESSION)) == _where(after["verify"])
    assert _problems(fresh.repair(SESSION)) == _where(after["verify"])
    assert _files(directory) == repaired
    if "load_sequences" in after:
        view = fresh.load(SESSION)
        assert [r.sequence for r in view.raw_tail] == after["load_sequences"]
        if "snapshot_version" in after:
            assert view.snapshot is not None and view.snapshot.version == after["snapshot_version"]
    if "summary" in after:
        assert _subset(fresh.get_session(SESSION), after["summary"]) == after["summary"]


@pytest.mark.parametrize("case", _cases("verify"))
def test_verify_and_repair_name_what_repair_does(
    case: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Each problem's action is the imperative of §12; repair returns the problems verify named."""
    expected = _expected(case)
    _xfail(request, expected, "actions")
    store, _ = _install(case, tmp_path)
    assert _problems(store.verify(SESSION), action=True) == expected["verify"]
    if isinstance(expected.get("repair"), list):
        assert _problems(store.repair(SESSION), action=True) == expected["repair"]
        assert expected["repair"] == expected["verify"]


def _check_append(
    store: SessionStore,
    expected: dict[str, Any],
    args: dict[str, Any] | None = None,
    reported: list[Problem] | None = None,
) -> list[Problem]:
    """Append one message as ``expected`` says; return what the append itself reported."""
    message = UserMessage(content="after recovery")
    before = len(reported) if reported is not None else 0
    if "raises" in expected:
        with pytest.raises(_error(expected["raises"])):
            store.append(SESSION, message, **(args or {}))
        return []
    sequence = store.append(SESSION, message, **(args or {}))
    during = list(reported[before:]) if reported is not None else []
    assert sequence == expected["sequence"]
    last = store.load(SESSION).raw_tail[-1]
    assert (last.sequence, _builtins(last.message)["content"]) == (sequence, "after recovery")
    data = (Path(store.root) / SESSION / "messages.jsonl").read_bytes()
    assert data.endswith(b"\n") and _codec.unseal(data[:-1].rsplit(b"\n", 1)[-1]) is not None  # no tail left
    return during


@pytest.mark.parametrize("case", _cases("append"))
def test_append_cuts_a_damaged_tail_and_continues_the_sequence(
    case: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The first append after opening cuts a damaged tail into a sidecar and numbers on from the last record."""
    expected = _expected(case)
    _xfail(request, expected, "append")
    reported: list[Problem] = []
    store, directory = _install(case, tmp_path, reported=reported)
    original = _files(directory)
    first = _first_append(expected)
    during = _check_append(store, first, first.get("args"), reported)
    assert _problems(during) == first.get("problems", [])
    cut = expected.get("after_repair", {}).get("cut")
    if cut is not None and cut.get("log", "messages.jsonl") == "messages.jsonl":
        assert _files(directory)[cut["file"]] == original["messages.jsonl"][cut["offset"] :]
    files = _files(directory)
    for source, target in first.get("moved", {}).items():
        assert files[target] == original[source]
    if "restored" in first:
        # The append restored the written bytes first, then wrote after them.
        assert files["messages.jsonl"].startswith(first["restored"].encode())
        assert b"\r" not in files["messages.jsonl"]


@pytest.mark.parametrize("case", _cases(having=lambda expected: "summary" in _first_append(expected)))
def test_append_writes_missing_or_damaged_metadata(
    case: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """An append to a session whose meta.json is missing or damaged writes one; the summary shows it."""
    expected = _expected(case)
    _xfail(request, expected, "append_summary")
    first = _first_append(expected)
    store, directory = _install(case, tmp_path)
    store.append(SESSION, UserMessage(content="after recovery"), **first.get("args", {}))
    assert _meta.decode((directory / "meta.json").read_bytes())  # present and readable
    assert _subset(store.get_session(SESSION), first["summary"]) == first["summary"]


@pytest.mark.parametrize("case", _cases("append", "repair"))
def test_append_after_repair_continues_the_sequence(
    case: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """After repair() the next append gets the next sequence and lands after the last record."""
    expected = _expected(case)
    _xfail(request, expected, "repair", "append_after_repair")
    store, _ = _install(case, tmp_path)
    if "raises" in expected["repair"]:
        with pytest.raises(_error(expected["repair"]["raises"])):
            store.repair(SESSION)
    else:
        store.repair(SESSION)
    _check_append(SessionStore(store.root, on_problem=lambda problem: None), expected["append"])


@pytest.mark.parametrize("case", _cases("snapshot"))
def test_snapshot_numbers_above_every_snapshot_file(
    case: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """snapshot() takes the version above every snapshot file present, or refuses."""
    expected = _expected(case)
    _xfail(request, expected, "snapshot")
    step = expected["snapshot"]
    store, _ = _install(case, tmp_path)

    def make() -> jsonl_store.ContextSnapshot:
        return store.snapshot(
            SESSION, CompactedMessage(content="summary"), step["through"], step["expected_version"]
        )

    if "raises" in step:
        with pytest.raises(_error(step["raises"])):
            make()
        return
    assert make().version == step["version"]
    assert store.load(SESSION).snapshot.version == step["version"]  # type: ignore[union-attr]


def _checkpoint_steps() -> list[Any]:
    return [
        pytest.param(case, index, id=f"{case.parent.name}/{case.name}/{step['name']}")
        for case in CASES
        for index, step in enumerate(_expected(case).get("checkpoint", []))
    ]


@pytest.mark.parametrize(("case", "index"), _checkpoint_steps())
def test_checkpoint_extends_or_rewrites_as_the_spec_says(
    case: Path, index: int, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A runner loads, maybe another writer appends, then checkpoint() saves the runner's list (§10)."""
    step = _expected(case)["checkpoint"][index]
    if "xfail" in step:
        request.applymarker(pytest.mark.xfail(reason=step["xfail"], strict=True))
    store, directory = _install(case, tmp_path)
    before = (directory / "messages.jsonl").read_bytes()
    store.load(SESSION)
    if "other" in step:
        SessionStore(store.root, on_problem=lambda problem: None).append(SESSION, step["other"])
    assert store.checkpoint(SESSION, step["list"]) == step["appended"]
    assert (directory / "messages.jsonl").read_bytes().startswith(before)  # the raw log is only appended to
    view = SessionStore(store.root).load(SESSION)
    assert (view.snapshot.version if view.snapshot else None) == step["snapshot_version"]
    assert [_builtins(m) for m in view.messages] == step["messages"]


@pytest.mark.parametrize("case", _cases("summary"))
def test_summary_reports_the_metadata(case: Path, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """get_session() reports the metadata file's fields (or defaults when it is absent)."""
    _xfail(request, _expected(case), "summary")
    expected = _expected(case)["summary"]
    store, _ = _install(case, tmp_path)
    if "raises" in expected:
        with pytest.raises(_error(expected["raises"])):
            store.get_session(SESSION)
        return
    assert _subset(store.get_session(SESSION), expected) == expected


@pytest.mark.parametrize("case", _cases("update"))
def test_update_session_merges_by_origin_and_version(case: Path, tmp_path: Path) -> None:
    """update_session() follows the user/runtime merge and expected_version rules step by step."""
    store, _ = _install(case, tmp_path)
    for step in _expected(case)["update"]:
        if "raises" in step:
            with pytest.raises(_error(step["raises"])):
                store.update_session(SESSION, **step["args"])
            continue
        assert _subset(store.update_session(SESSION, **step["args"]), step["summary"]) == step["summary"]


@pytest.mark.parametrize(
    "case", _cases(having=lambda expected: "usage" in expected or "usage_totals" in expected)
)
def test_usage_log_reads_back_and_sums(case: Path, tmp_path: Path) -> None:
    """usage() gives each readable usage line as a dict; usage_totals() sums them."""
    expected = _expected(case)
    store, _ = _install(case, tmp_path)
    if isinstance(expected.get("usage"), dict):
        with pytest.raises(_error(expected["usage"]["raises"])):
            store.usage(SESSION)  # the call refuses, not the first next()
        return
    if "usage" in expected:
        assert list(store.usage(SESSION)) == expected["usage"]
    totals = expected["usage_totals"]
    assert _subset(store.usage_totals(SESSION), totals) == totals


def test_every_problem_kind_in_the_vectors_is_in_the_spec() -> None:
    """Each problem kind a vector expects is named in FORMAT.md."""
    text = FORMAT_MD.read_text(encoding="utf-8")
    kinds = set()
    for case in CASES:
        for part in re.findall(r'"kind": "([a-z-]+)"', (case / "expected.json").read_text(encoding="utf-8")):
            kinds.add(part)
    assert kinds and {kind for kind in kinds if f"`{kind}`" not in text} == set()


# ---------------------------------------------------------------------------------------
# The worked example in FORMAT.md
# ---------------------------------------------------------------------------------------

_BLOCK = re.compile(r"^```\w* path=(\S+)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def _example() -> dict[str, bytes]:
    """The fenced blocks of FORMAT.md marked ``path=...``: file path -> exact bytes."""
    blocks = {
        path: body.encode("utf-8") for path, body in _BLOCK.findall(FORMAT_MD.read_text(encoding="utf-8"))
    }
    assert blocks, "FORMAT.md has no worked example"
    return blocks


def _write_example(root: Path) -> None:
    for path, data in _example().items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def test_worked_example_lines_carry_valid_checksums() -> None:
    """Every line of the example's logs and snapshots ends in a correct CRC-32 suffix."""
    checked = 0
    for path, data in _example().items():
        name = Path(path).name
        if not (name.endswith(".jsonl") or name.startswith("snapshot-")):
            continue
        assert data.endswith(b"\n")
        for line in data[:-1].split(b"\n"):
            assert _codec.unseal(line) is not None, f"{path}: bad checksum in {line[:60]!r}"
            checked += 1
    assert checked >= 5


def test_worked_example_files_are_in_canonical_form() -> None:
    """The example's meta.json, .gitignore and .gitattributes are byte for byte what a writer writes."""
    example = _example()
    metas = [data for path, data in example.items() if Path(path).name == "meta.json"]
    assert metas and all(_meta.encode(_meta.decode(data)) == data for data in metas)
    assert example[".gitignore"] == GITIGNORE_TEXT.encode()
    assert example[".gitattributes"] == GITATTRIBUTES_TEXT.encode()


def test_worked_example_is_read_by_the_store(tmp_path: Path) -> None:
    """The example directory verifies clean and loads as snapshot plus tail."""
    _write_example(tmp_path)
    store = SessionStore(tmp_path)
    assert store.verify() == []
    (session,) = [s.session_id for s in store.list_sessions()]
    view = store.load(session)
    assert view.problems == [] and view.snapshot is not None
    records = list(store.records(session))
    assert [r.sequence for r in records] == list(range(1, len(records) + 1))
    assert [r.sequence for r in view.raw_tail] == list(
        range(view.snapshot.compacted_through_sequence + 1, len(records) + 1)
    )
    assert jsonl_store.is_provider_valid(view.messages)
    assert store.append(session, UserMessage(content="next")) == len(records) + 1


# Ids, times, checksums and the snapshot's offsets differ from run to run; the rest of each
# byte (keys, their order, which fields are written, batch_end, plain) must not.
_VARYING = [
    (re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"), b"<uuid>"),
    (re.compile(rb'"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?Z"'), b'"<time>"'),
    (re.compile(rb'"crc":"[0-9a-f]{8}"'), b'"crc":"<crc>"'),
    (re.compile(rb'"(boundary_offset|tail_offset)":\d+'), rb'"\1":<offset>'),
]


def _shape(data: bytes) -> bytes:
    for pattern, placeholder in _VARYING:
        data = pattern.sub(placeholder, data)
    return data


def test_worked_example_is_what_the_store_writes_today(tmp_path: Path) -> None:
    """Running §14's calls (make_vectors.example) gives the example's files, ids and times aside."""
    made = _generator().example(tmp_path / "store")
    example = _example()
    assert sorted(made) == sorted(example)
    for path, data in example.items():
        assert _shape(made[path]) == _shape(data), path


def test_worked_example_prose_matches_its_files() -> None:
    """The offsets, sizes and checksum §14's prose quotes are those of the files it shows."""
    text = FORMAT_MD.read_text(encoding="utf-8")
    example = _example()
    log = example["demo/messages.jsonl"]
    lines = log.split(b"\n")[:-1]
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    quoted = re.search(r"lines start at bytes ([\d, and]+) \((\d+) bytes in all\)", text)
    assert quoted is not None
    assert [int(n) for n in re.findall(r"\d+", quoted.group(1))] == starts
    assert int(quoted.group(2)) == len(log)
    first = re.search(r"Line 1\s+is (\d+) bytes: its CRC covers the first (\d+)", text)
    assert first is not None and (int(first.group(1)), int(first.group(2))) == (
        len(lines[0]) + 1,
        len(lines[0]) - 18,
    )
    assert f"the 18 bytes `{lines[0][-18:].decode()}`" in text
    snapshot = json.loads(example["demo/snapshot-00000001.json"])
    boundary = re.search(r"record (\d+) at bytes (\d+)…(\d+)", text)
    assert boundary is not None
    assert [int(n) for n in boundary.groups()] == [
        snapshot["compacted_through_sequence"],
        snapshot["boundary_offset"],
        snapshot["tail_offset"] - 1,
    ]
