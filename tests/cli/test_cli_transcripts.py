"""show and tail on real transcripts (tests/importers/data, MIT, see its README): every record read
through the message model, every call and result on screen, no empty card.

Each shared transcript of Claude Code, Codex and pi is imported, then printed by ``show``
and ``tail``; the calls and results expected on screen are counted from the stored
messages' parts (`jsonl_store.message_parts` in the session's dialect).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from jsonl_store import SessionStore, ToolCallPart, ToolResultPart, message_parts
from jsonl_store.cli import main
from jsonl_store.importers import import_claude_code, import_codex, import_pi

DATA = Path(__file__).parent.parent / "importers" / "data"
#: A record's header: its label (``#12``, ``--`` for a snapshot's compacted message)
#: right-aligned in four columns, then the role.
HEADER = re.compile(r"^ {0,3}(#\d+|--|\+) \S")


#: Every transcript file, by its folder (the importer's tool) and name.
FILES = sorted(f"{path.parent.name}/{path.name}" for path in DATA.glob("*/*.jsonl"))
IMPORTERS = {"claude-code": import_claude_code, "codex": import_codex, "pi": import_pi}


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, list[str]]]:
    """A store holding every shared transcript, imported as the ``import`` command does, and
    the sessions each file became (its own and its sub-agents')."""
    root = tmp_path_factory.mktemp("transcripts") / "store"
    sessions: dict[str, list[str]] = {}
    with SessionStore(root, durability="none") as store:
        for folder, importer in IMPORTERS.items():
            report = importer(store, DATA / folder)
            assert report.ok
            for file in report.files:
                name = f"{folder}/{Path(file.path).name}"
                sessions[name] = [str(file.session_id), *(str(child) for child in file.children)]
    return root, sessions


def session(imported: tuple[Path, dict[str, list[str]]], name: str) -> str:
    """The session a transcript file became."""
    return imported[1][name][0]


def printed(capsys: pytest.CaptureFixture[str], *argv: str) -> list[str]:
    """The lines a command prints, after checking it succeeded."""
    assert main(list(argv)) == 0
    return capsys.readouterr().out.splitlines()


def cards(lines: list[str]) -> list[tuple[str, list[str]]]:
    """Each record's header with the lines printed under it."""
    out: list[tuple[str, list[str]]] = []
    for line in lines:
        if HEADER.match(line):
            out.append((line, []))
        elif out and line.startswith(" " * 5):
            out[-1][1].append(line)
    return out


def expected_parts(root: Path, session_id: str, *, compacted: bool) -> tuple[int, int]:
    """The tool calls and results among the session's records (and the latest snapshot's
    compacted message when ``compacted``), read in its dialect."""
    store = SessionStore(root)
    summary = store.get_session(session_id)
    assert summary is not None
    messages = [record.message for record in store.records(session_id)]
    snapshot = store.load(session_id).snapshot
    if compacted and snapshot is not None:
        messages.append(snapshot.compacted_message)
    parts = [part for message in messages for part in message_parts(message, summary.dialect)]
    return (
        sum(isinstance(part, ToolCallPart) for part in parts),
        sum(isinstance(part, ToolResultPart) for part in parts),
    )


@pytest.mark.parametrize("name", FILES)
@pytest.mark.parametrize("command", ["show", "tail"])
def test_every_record_of_a_real_transcript_shows_its_calls_results_and_no_empty_card(
    imported: tuple[Path, dict[str, list[str]]], capsys: pytest.CaptureFixture[str], name: str, command: str
) -> None:
    """show and tail print every call and result of each session a real file became, and no record as a header with nothing under it."""
    root, sessions = imported
    assert sessions[name]
    for session_id in sessions[name]:
        argv = ["--root", str(root), command, session_id, "--full"]
        lines = printed(capsys, *(argv + (["--no-pager"] if command == "show" else ["-n", "100000"])))
        for header, body in cards(lines):
            # A record with nothing to show is one line of facts (its tokens), never a bare role.
            assert body or "tokens" in header or "no content" in header, header
            assert "[?]" not in header and "()" not in header, header
        calls, results = expected_parts(root, session_id, compacted=command == "show")
        assert sum(line.lstrip().startswith("→ ") for line in lines) == calls
        assert sum(line.lstrip().startswith("← ") for line in lines) == results
        assert not any(line.rstrip().endswith("← result") for line in lines)  # a result names its call id


def test_a_codex_rollout_shows_each_shell_call_with_its_output_under_it(
    imported: tuple[Path, dict[str, list[str]]], capsys: pytest.CaptureFixture[str]
) -> None:
    """The 39 calls of the Codex 0.58 rollout (37 shell, 2 update_plan) each print as → name(...) with its result right under it."""
    lines = printed(
        capsys,
        "--root",
        str(imported[0]),
        "show",
        session(imported, "codex/codex-0.58.0-rollout-shell-calls-truncated.jsonl"),
        "--no-pager",
    )
    calls = [i for i, line in enumerate(lines) if line.lstrip().startswith("→ ")]
    assert len(calls) == 39 and sum(lines[i].lstrip().startswith("→ shell(") for i in calls) == 37
    for at in calls:
        following = next(line for line in lines[at + 1 :] if not line.startswith(" " * 9))
        assert following.lstrip().startswith("← #"), following


def test_a_pasted_image_is_one_line_with_its_type_and_size(
    imported: tuple[Path, dict[str, list[str]]], capsys: pytest.CaptureFixture[str]
) -> None:
    """The Claude Code image paste shows as [image: image/png, N bytes], never as base64."""
    lines = printed(
        capsys,
        "--root",
        str(imported[0]),
        "show",
        session(imported, "claude-code/cc-1.0.128-image-paste.jsonl"),
        "--no-pager",
        "--full",
    )
    images = [line.strip() for line in lines if "[image:" in line]
    assert images == ["[image: image/png, 395,728 bytes]"]
    assert not any("iVBORw0KGgo" in line for line in lines)  # a PNG's base64 signature


def test_a_codex_token_count_is_one_line_with_its_tokens(
    imported: tuple[Path, dict[str, list[str]]], capsys: pytest.CaptureFixture[str]
) -> None:
    """A Codex token_count record (no content, tokens) is its header line alone, saying its tokens."""
    lines = printed(
        capsys,
        "--root",
        str(imported[0]),
        "show",
        session(imported, "codex/codex-0.58.0-rollout-shell-calls-truncated.jsonl"),
        "--no-pager",
    )
    [(header, body)] = [(h, b) for h, b in cards(lines) if "10,128 in / 37 out tokens" in h]
    assert body == [] and header.lstrip().startswith("#5 ")
