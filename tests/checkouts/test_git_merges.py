"""Two branches that wrote to one session merge with real git and lose nothing (spec §17).

Each test makes a repository whose ``sessions/`` store is written through the public API on
two branches, runs the real ``jsonl-store git setup`` and ``git merge`` (which runs the real
``jsonl-store git merge-driver``), and then reads the merged store.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import classes

from jsonl_store import CompactedMessage, SessionStore, UserMessage, install_gitattributes
from jsonl_store._format.names import GITATTRIBUTES_TEXT

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs the git command")

SID = "chat"
GIT = shutil.which("git") or "git"
#: git's PATH in every merge here: git's own directory and the system's, never this
#: environment's bin, so the driver runs whatever PATH git has (an IDE's, a GUI client's).
PATH = os.pathsep.join(dict.fromkeys([os.path.dirname(GIT), "/usr/bin", "/bin"]))


@pytest.fixture(autouse=True)
def _home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every git run here has an empty HOME, so no user's config takes part."""
    monkeypatch.setenv("HOME", str(tmp_path_factory.mktemp("home")))


def _env() -> dict[str, str]:
    return {
        **os.environ,
        "PATH": PATH,
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }  # fmt: skip


def run(*argv: str, cwd: Path, ok: bool = True) -> subprocess.CompletedProcess[str]:
    """Run ``argv``; ``jsonl-store`` is this environment's, by its interpreter (it is not on PATH)."""
    if argv[0] == "jsonl-store":
        argv = (sys.executable, "-m", "jsonl_store.cli", *argv[1:])
    done = subprocess.run(list(argv), cwd=cwd, env=_env(), capture_output=True, text=True, check=False)
    if ok:
        assert done.returncode == 0, (argv, done.stdout, done.stderr)
    return done


def git(*args: str, cwd: Path, ok: bool = True) -> subprocess.CompletedProcess[str]:
    return run("git", *args, cwd=cwd, ok=ok)


def commit(repo: Path, message: str) -> None:
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", message, cwd=repo)


def contents(store: SessionStore, session_id: str = SID) -> list[str]:
    """The content of every record of the session's raw log, in order."""
    return [
        str(message.content) for message in classes(record.message for record in store.records(session_id))
    ]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with a set-up store whose session has two records, committed on main."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git("init", "-q", "-b", "main", cwd=repo)
    with SessionStore(repo / "sessions") as store:
        store.append(SID, UserMessage(content="base 1"), title="Generated", agent_name="agent")
        store.append(SID, UserMessage(content="base 2"))
    run("jsonl-store", "--root", "sessions", "git", "setup", cwd=repo)
    commit(repo, "base")
    return repo


def branch(repo: Path, name: str, *, start: str = "main") -> SessionStore:
    git("checkout", "-q", "-B", name, start, cwd=repo)
    return SessionStore(repo / "sessions")


def test_setup_writes_the_driver_and_attributes_once(tmp_path: Path) -> None:
    """git setup sets the three config keys and the merge lines; a second run changes nothing."""
    repo = tmp_path / "repo"
    (repo / "sessions").mkdir(parents=True)
    git("init", "-q", cwd=repo)
    (repo / "sessions" / ".gitattributes").write_text("# mine\n/*/** -text\n")  # an older store's file
    first = run("jsonl-store", "--root", "sessions", "git", "setup", cwd=repo)
    driver = git("config", "--local", "--get", "merge.jsonl-store.driver", cwd=repo).stdout.rstrip("\n")
    # This interpreter by its absolute path, not a name git would look up on its PATH.
    assert driver.startswith(f"{sys.executable} -m jsonl_store.cli git merge-driver %O %A %B %P || ")
    assert f"set merge.jsonl-store.driver = {driver}" in first.stdout.splitlines()
    config = git("config", "--local", "--get-regexp", r"^merge\.jsonl-store\.", cwd=repo).stdout.splitlines()
    assert config == [
        "merge.jsonl-store.name jsonl_store sessions: keep both branches' records",
        f"merge.jsonl-store.driver {driver}",
        "merge.jsonl-store.recursive binary",
    ]
    attributes = (repo / "sessions" / ".gitattributes").read_text()
    assert attributes.startswith("# mine\n/*/** -text\n")  # the user's lines stay
    for line in GITATTRIBUTES_TEXT.splitlines():
        if line and not line.startswith("#"):
            assert line in attributes.splitlines()
    check = git("check-attr", "merge", "text", "--", "sessions/s/messages.jsonl", cwd=repo).stdout
    assert check.splitlines() == [
        "sessions/s/messages.jsonl: merge: jsonl-store",
        "sessions/s/messages.jsonl: text: unset",
    ]
    again = run("jsonl-store", "--root", "repo/sessions", "git", "setup", "repo", cwd=tmp_path)
    assert again.stdout.startswith("the merge driver is already set up")
    assert (repo / "sessions" / ".gitattributes").read_text() == attributes
    assert install_gitattributes(repo / "sessions") == []


def test_setup_refuses_a_store_outside_the_repository(tmp_path: Path) -> None:
    """A store git would never see, or no repository at all, is one error line and exit code 2."""
    (tmp_path / "repo").mkdir()
    (tmp_path / "elsewhere").mkdir()
    git("init", "-q", cwd=tmp_path / "repo")
    outside = run("jsonl-store", "--root", "elsewhere", "git", "setup", "repo", cwd=tmp_path, ok=False)
    assert outside.returncode == 2 and "outside the repository" in outside.stderr
    none = run("jsonl-store", "--root", "elsewhere", "git", "setup", cwd=tmp_path, ok=False)
    assert none.returncode == 2 and "not inside a git repository" in none.stderr
    missing = run("jsonl-store", "--root", "nowhere", "git", "setup", cwd=tmp_path / "repo", ok=False)
    assert missing.returncode == 2 and "no session store" in missing.stderr
    assert "Traceback" not in outside.stderr + none.stderr + missing.stderr


def test_appends_and_renames_on_two_branches_merge_clean(repo: Path) -> None:
    """Both branches' records are there once, renumbered gap-free, and the user's rename wins."""
    with branch(repo, "side") as side:
        side.append(SID, UserMessage(content="side 1"))
        side.append_many(SID, [UserMessage(content="side 2"), UserMessage(content="side 3")])
        side.update_session(SID, title="Runtime title", origin="runtime", metadata={"side": 1})
        side.record_usage(SID, {"input_tokens": 5, "output_tokens": 1})
    commit(repo, "side")
    with branch(repo, "main") as main:
        main.append(SID, UserMessage(content="main 1"))
        main.update_session(SID, title="Named by the user", metadata={"main": 2})
        main.record_usage(SID, {"input_tokens": 7, "output_tokens": 2})
    commit(repo, "main")
    merge = git("merge", "-q", "side", "-m", "merge side", cwd=repo)
    assert "CONFLICT" not in merge.stdout + merge.stderr
    store = SessionStore(repo / "sessions")
    assert store.verify() == []
    # side's first own record is the older one, so side's records come first.
    assert contents(store) == ["base 1", "base 2", "side 1", "side 2", "side 3", "main 1"]
    assert [r.sequence for r in store.records(SID)] == [1, 2, 3, 4, 5, 6]
    assert [r.batch_end for r in store.records(SID)] == [0, 0, 0, 5, 5, 0]
    [summary] = store.list_sessions()
    assert summary.title == "Named by the user" and summary.metadata == {"main": 2, "side": 1}
    assert store.usage_totals(SID).input_tokens == 12
    view = store.load(SID)
    assert [m.content for m in classes(view.messages)] == contents(store)
    assert git("status", "--porcelain", cwd=repo).stdout == ""


def test_merging_either_way_gives_the_same_bytes(repo: Path) -> None:
    """main into side and side into main make the same log, byte for byte."""
    with branch(repo, "side") as side:
        side.append(SID, UserMessage(content="side 1"))
    commit(repo, "side")
    with branch(repo, "main") as main:
        main.append(SID, UserMessage(content="main 1"))
    commit(repo, "main")
    git("checkout", "-q", "-b", "other", "side", cwd=repo)
    git("merge", "-q", "main", "-m", "main into side", cwd=repo)
    one = (repo / "sessions" / SID / "messages.jsonl").read_bytes()
    git("checkout", "-q", "main", cwd=repo)
    git("merge", "-q", "side", "-m", "side into main", cwd=repo)
    assert (repo / "sessions" / SID / "messages.jsonl").read_bytes() == one
    assert contents(SessionStore(repo / "sessions")) == ["base 1", "base 2", "side 1", "main 1"]


def test_the_branch_that_compacted_keeps_its_records_in_place(repo: Path) -> None:
    """Only side compacted past the fork: its records stay put, main's follow, its snapshot stays trusted."""
    with branch(repo, "main") as main:
        main.append(SID, UserMessage(content="main 1"))  # the older record: main would lead
    commit(repo, "main")
    with branch(repo, "side", start="main~1") as side:
        side.append(SID, UserMessage(content="side 1"))
        side.snapshot(SID, CompactedMessage(content="summary of side"), 3, 0)
        side.append(SID, UserMessage(content="side 2"))
    commit(repo, "side")
    git("checkout", "-q", "main", cwd=repo)
    git("merge", "-q", "side", "-m", "merge side", cwd=repo)
    store = SessionStore(repo / "sessions")
    assert store.verify() == []
    assert contents(store) == ["base 1", "base 2", "side 1", "side 2", "main 1"]
    view = store.load(SID)
    assert view.snapshot is not None and view.snapshot.compacted_through_sequence == 3
    assert [m.content for m in classes(view.messages)] == ["summary of side", "side 2", "main 1"]


def test_both_branches_compacted_leave_a_conflict_that_keeps_everything(repo: Path) -> None:
    """Two compactions past the fork cannot both hold: git reports a conflict, and no record is lost."""
    with branch(repo, "side") as side:
        side.append(SID, UserMessage(content="side 1"))
        side.snapshot(SID, CompactedMessage(content="side's summary"), 3, 0)
    commit(repo, "side")
    with branch(repo, "main") as main:
        main.append(SID, UserMessage(content="main 1"))
        main.snapshot(SID, CompactedMessage(content="main's summary"), 3, 0)
    commit(repo, "main")
    merge = git("merge", "side", "-m", "merge side", cwd=repo, ok=False)
    assert merge.returncode == 1
    assert "CONFLICT (content): Merge conflict in sessions/chat/messages.jsonl" in merge.stdout
    assert "both sides may have compacted" in merge.stderr
    log = (repo / "sessions" / SID / "messages.jsonl").read_bytes()
    for stage in (":2:", ":3:"):  # git keeps both versions; the file holds every line of both
        version = git("show", f"{stage}sessions/{SID}/messages.jsonl", cwd=repo).stdout.encode()
        assert all(line in log.splitlines() for line in version.splitlines())
    assert b"<<<<<<< ours\n" in log and b">>>>>>> theirs\n" in log
    unmerged = git("diff", "--name-only", "--diff-filter=U", cwd=repo).stdout.split()
    assert f"sessions/{SID}/messages.jsonl" in unmerged


def test_a_rebase_keeps_the_replayed_records_in_place(repo: Path) -> None:
    """In a rebase git names no commit for the replayed side: its records lead, though main's are older."""
    with branch(repo, "main") as main:
        main.append(SID, UserMessage(content="main 1"))
    commit(repo, "main")
    with branch(repo, "side", start="main~1") as side:
        side.append(SID, UserMessage(content="side 1"))
    commit(repo, "side")
    git("checkout", "-q", "side", cwd=repo)
    git("rebase", "-q", "main", cwd=repo)
    store = SessionStore(repo / "sessions")
    assert store.verify() == []
    # The replayed commit's snapshots are not known, so its records keep their places.
    assert contents(store) == ["base 1", "base 2", "side 1", "main 1"]


def test_the_driver_run_by_hand_merges_three_files(tmp_path: Path) -> None:
    """Outside git (no commits to look at) the driver still merges meta.json and leaves a usable file."""
    stores = {}
    for name in ("base", "ours", "theirs"):
        with SessionStore(tmp_path / name) as store:
            store.append(SID, UserMessage(id="m1", content="hello"), title="T")
            if name == "ours":
                store.update_session(SID, pinned=True)
            if name == "theirs":
                store.update_session(SID, metadata={"k": "v"})
        stores[name] = tmp_path / name / SID / "meta.json"
    # The three sessions were created apart, so copy one base for all three meta files.
    done = run(
        "jsonl-store", "git", "merge-driver",
        str(stores["base"]), str(stores["ours"]), str(stores["theirs"]), f"sessions/{SID}/meta.json",
        cwd=tmp_path, ok=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = SessionStore(tmp_path / "ours").get_session(SID)
    assert summary is not None and summary.pinned and summary.metadata == {"k": "v"}


def test_without_setup_git_falls_back_to_its_text_merge(tmp_path: Path) -> None:
    """The store's merge lines name a driver this repository lacks: git merges as text, no error."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git("init", "-q", "-b", "main", cwd=repo)
    with SessionStore(repo / "sessions") as store:
        store.append(SID, UserMessage(content="base 1"))
    assert "merge=jsonl-store" in (repo / "sessions" / ".gitattributes").read_text()
    commit(repo, "base")
    with branch(repo, "side") as side:
        side.append(SID, UserMessage(content="side 1"))
    commit(repo, "side")
    with branch(repo, "main") as main:
        main.append(SID, UserMessage(content="main 1"))
    commit(repo, "main")
    merge = git("merge", "side", "-m", "merge side", cwd=repo, ok=False)
    assert merge.returncode == 1 and "CONFLICT (content)" in merge.stdout  # git's own line merge
    assert "fatal" not in merge.stderr and "jsonl-store" not in merge.stderr


def test_every_git_action_has_a_docs_section() -> None:
    """The command line guide documents `git setup` and `git merge-driver` under their own headings."""
    import argparse

    from jsonl_store.cli import build_parser

    readme = (Path(__file__).resolve().parents[2] / "docs" / "guides" / "command-line.md").read_text(
        encoding="utf-8"
    )
    [commands] = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    [actions] = [a for a in commands.choices["git"]._actions if isinstance(a, argparse._SubParsersAction)]
    assert sorted(actions.choices) == ["merge-driver", "setup"]
    for name in actions.choices:
        assert f"### `jsonl-store git {name}" in readme


def test_a_fork_appended_on_two_branches_merges_clean(repo: Path) -> None:
    """A fork's own log starts after its branch point; both branches' records of it merge once."""
    with SessionStore(repo / "sessions") as store:
        store.fork(SID, 1, "forked")
        store.append("forked", UserMessage(content="fork 1"))
    commit(repo, "fork")
    with branch(repo, "side") as side:
        side.append("forked", UserMessage(content="fork side"))
    commit(repo, "side")
    with branch(repo, "main") as main:
        main.append("forked", UserMessage(content="fork main"))
    commit(repo, "main")
    git("merge", "-q", "side", "-m", "merge side", cwd=repo)
    store = SessionStore(repo / "sessions")
    assert store.verify() == []
    assert contents(store, "forked") == ["base 1", "fork 1", "fork side", "fork main"]
    assert [r.sequence for r in store.records("forked")] == [1, 2, 3, 4]


def test_a_criss_cross_merge_keeps_every_record_once(repo: Path) -> None:
    """Two branches that merged each other, then wrote more, merge again: two merge bases, no duplicate."""
    with branch(repo, "side") as side:
        side.append(SID, UserMessage(content="side 1"))
    commit(repo, "side")
    with branch(repo, "main") as main:
        main.append(SID, UserMessage(content="main 1"))
    commit(repo, "main")
    git("checkout", "-q", "-b", "main-merged", "main", cwd=repo)
    git("merge", "-q", "side", "-m", "side into main", cwd=repo)
    git("checkout", "-q", "-b", "side-merged", "side", cwd=repo)
    git("merge", "-q", "main", "-m", "main into side", cwd=repo)
    with branch(repo, "side-merged", start="side-merged") as side:
        side.append(SID, UserMessage(content="side 2"))
    commit(repo, "side 2")
    with branch(repo, "main-merged", start="main-merged") as main:
        main.append(SID, UserMessage(content="main 2"))
    commit(repo, "main 2")
    bases = git("merge-base", "--all", "main-merged", "side-merged", cwd=repo).stdout.split()
    assert len(bases) == 2  # a criss-cross: git merges the two bases first
    git("merge", "-q", "side-merged", "-m", "again", cwd=repo)
    store = SessionStore(repo / "sessions")
    assert store.verify() == []
    assert contents(store) == ["base 1", "base 2", "side 1", "main 1", "side 2", "main 2"]


def test_the_driver_reports_a_conflict_escaped_and_a_missing_file_as_an_error(tmp_path: Path) -> None:
    """A conflict is exit 1 with both versions kept and the path escaped; a missing file is exit 2."""
    (tmp_path / "base").write_bytes(b"")
    (tmp_path / "ours").write_bytes(b"not a record\n")
    (tmp_path / "theirs").write_bytes(b"nor this\n")
    path = "sessions/\x1b[2J/messages.jsonl"
    done = run("jsonl-store", "git", "merge-driver", "base", "ours", "theirs", path, cwd=tmp_path, ok=False)
    assert done.returncode == 1
    assert "\x1b" not in done.stderr and "sessions/\\x1b[2J/messages.jsonl" in done.stderr
    assert (tmp_path / "ours").read_bytes() == (
        b"<<<<<<< ours\nnot a record\n=======\nnor this\n>>>>>>> theirs\n"
    )
    missing = run(
        "jsonl-store", "git", "merge-driver", "nope", "ours", "theirs", path, cwd=tmp_path, ok=False
    )
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert missing.stderr.startswith("jsonl-store: error:")


def venv(where: Path) -> Path:
    """A second environment at ``where`` that imports this jsonl_store: its interpreter's path.

    It stands for another install of the package (a reinstall, another virtual environment):
    a plain venv whose ``.pth`` file names this checkout and the site-packages of its
    dependencies (removing that file uninstalls the package from it).
    """
    import msgspec
    import orjson

    import jsonl_store

    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    python = where / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    found = [Path(module.__file__ or "").resolve().parents[1] for module in (jsonl_store, orjson, msgspec)]
    (Path(purelib) / "jsonl_store_test.pth").write_text("".join(f"{path}\n" for path in dict.fromkeys(found)))
    return python


def setup_with(python: Path, repo: Path) -> str:
    """Run ``git setup`` with ``python``'s jsonl_store; its output."""
    command = [str(python), "-m", "jsonl_store.cli", "--root", "sessions", "git", "setup"]
    done = subprocess.run(command, cwd=repo, env=_env(), capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def diverge(repo: Path) -> None:
    """One record on a branch ``side`` and one on ``main``, each committed; ``main`` checked out."""
    with branch(repo, "side") as side:
        side.append(SID, UserMessage(content="side 1"))
    commit(repo, "side")
    with branch(repo, "main") as main:
        main.append(SID, UserMessage(content="main 1"))
    commit(repo, "main")


def test_a_merge_with_no_jsonl_store_on_gits_path_runs_the_driver(repo: Path) -> None:
    """git's PATH lacks this environment's bin (an IDE, a GUI client): the driver still runs and merges."""
    assert shutil.which("jsonl-store", path=PATH) is None
    diverge(repo)
    merge = git("merge", "side", "-m", "merge side", cwd=repo)
    assert "CONFLICT" not in merge.stdout + merge.stderr
    store = SessionStore(repo / "sessions")
    assert store.verify() == []
    assert contents(store) == ["base 1", "base 2", "side 1", "main 1"]


def test_setup_again_after_a_reinstall_names_the_new_interpreter(repo: Path, tmp_path: Path) -> None:
    """Setup from another install (a path with spaces and quotes) names it; setup from this one again updates it."""
    other = venv(tmp_path / 'my env\'s "copy" $HOME')
    out = setup_with(other, repo)
    driver = git("config", "--get", "merge.jsonl-store.driver", cwd=repo).stdout.rstrip("\n")
    assert f"set merge.jsonl-store.driver = {driver}" in out.splitlines()
    assert driver.startswith(shlex.quote(str(other)) + " -m jsonl_store.cli git merge-driver ")
    diverge(repo)
    git("merge", "-q", "side", "-m", "merge side", cwd=repo)  # the quoted path survives git's shell
    assert SessionStore(repo / "sessions").verify() == []
    out = run("jsonl-store", "--root", "sessions", "git", "setup", cwd=repo).stdout
    again = git("config", "--get", "merge.jsonl-store.driver", cwd=repo).stdout.rstrip("\n")
    assert again.startswith(shlex.quote(sys.executable) + " -m jsonl_store.cli ")
    assert out.splitlines() == [f"set merge.jsonl-store.driver = {again}"]


@pytest.mark.parametrize("gone", ["interpreter removed", "package uninstalled"])
def test_a_driver_that_cannot_run_leaves_a_conflict_verify_reports(
    repo: Path, tmp_path: Path, gone: str
) -> None:
    """The driver's install is gone: git reports a conflict, the file holds both sides, verify fails."""
    other = venv(tmp_path / "env")
    setup_with(other, repo)
    if gone == "interpreter removed":
        shutil.rmtree(tmp_path / "env")
    else:
        [pth] = (tmp_path / "env").rglob("jsonl_store_test.pth")
        pth.unlink()
    diverge(repo)
    path = f"sessions/{SID}/messages.jsonl"
    ours = git("show", f"main:{path}", cwd=repo).stdout
    theirs = git("show", f"side:{path}", cwd=repo).stdout
    merge = git("merge", "side", "-m", "merge side", cwd=repo, ok=False)
    assert merge.returncode == 1 and f"CONFLICT (content): Merge conflict in {path}" in merge.stdout
    assert "the merge driver did not finish" in merge.stderr
    # Both versions whole, between git's markers: not "ours" alone, which would look merged.
    assert (repo / path).read_text() == f"<<<<<<< ours\n{ours}=======\n{theirs}>>>>>>> theirs\n"
    assert SessionStore(repo / "sessions").verify(SID) != []
    assert run("jsonl-store", "--root", "sessions", "verify", SID, cwd=repo, ok=False).returncode == 1
    assert f"UU {path}" in git("status", "--porcelain", cwd=repo).stdout.splitlines()


def fork_view(store: SessionStore, session_id: str) -> tuple[list[str], list[str]]:
    """What a fork reads: its records' contents, and its session context's."""
    return contents(store, session_id), [str(m.content) for m in classes(store.load(session_id).messages)]


@pytest.mark.parametrize("into", ["main", "side"])
@pytest.mark.parametrize("forked_on", ["main", "side"])
def test_a_fork_made_on_a_branch_reads_the_same_records_after_the_merge(
    repo: Path, forked_on: str, into: str
) -> None:
    """A fork branched at a branch's own record reads what it read before, whichever way the branches merge."""
    base = git("rev-parse", "HEAD", cwd=repo).stdout.strip()
    other = "side" if forked_on == "main" else "main"
    # The other branch's record is older, so without the fork that branch would lead and
    # the forked branch's records would be renumbered after it.
    with branch(repo, other, start=base) as store:
        store.append(SID, UserMessage(content=f"{other} 1"))
    commit(repo, other)
    with branch(repo, forked_on, start=base) as store:
        store.append(SID, UserMessage(content=f"{forked_on} 1"))
        store.fork(SID, 3, "forked")
        store.append("forked", UserMessage(content="fork's own"))
        store.append(SID, UserMessage(content=f"{forked_on} 2"))
        before = fork_view(store, "forked")
    commit(repo, forked_on)
    assert before == (["base 1", "base 2", f"{forked_on} 1", "fork's own"],) * 2
    git("checkout", "-q", into, cwd=repo)
    merge = git("merge", "side" if into == "main" else "main", "-m", "merge", cwd=repo)
    assert "CONFLICT" not in merge.stdout + merge.stderr
    store = SessionStore(repo / "sessions")
    assert store.verify() == []
    assert fork_view(store, "forked") == before
    assert contents(store) == ["base 1", "base 2", f"{forked_on} 1", f"{forked_on} 2", f"{other} 1"]


def test_forks_made_on_both_branches_leave_a_conflict_that_keeps_everything(repo: Path) -> None:
    """Each branch forked at its own record: no order keeps both branch points, so git reports a conflict."""
    for name in ("side", "main"):
        with branch(repo, name) as store:
            store.append(SID, UserMessage(content=f"{name} 1"))
            store.fork(SID, 3, f"fork-{name}")
            store.append(SID, UserMessage(content=f"{name} 2"))
        commit(repo, name)
    path = f"sessions/{SID}/messages.jsonl"
    sides = [git("show", f"{name}:{path}", cwd=repo).stdout for name in ("main", "side")]
    merge = git("merge", "side", "-m", "merge side", cwd=repo, ok=False)
    assert merge.returncode == 1 and f"CONFLICT (content): Merge conflict in {path}" in merge.stdout
    assert "forked past their common records" in merge.stderr
    merged = (repo / path).read_text().splitlines()
    assert all(line in merged for side in sides for line in side.splitlines())
    assert SessionStore(repo / "sessions").verify(SID) != []


def test_the_fallback_keeps_both_files_whole_when_a_last_line_lacks_its_newline(tmp_path: Path) -> None:
    """The driver's interpreter is missing: each marker still starts a line, and both files are kept byte for byte."""
    from jsonl_store.cli._git import driver_command

    files = {"base": b"", "ours": b"ours 1\nours 2 torn", "theirs": b"theirs 1\n"}
    for name, data in files.items():
        (tmp_path / f"{name} it's").write_bytes(data)
    command = driver_command(str(tmp_path / "gone" / "python"))
    # git puts each placeholder in single quotes (gitattributes(5)); these names need the escaping.
    for placeholder, name in (("%O", "base"), ("%A", "ours"), ("%B", "theirs")):
        command = command.replace(placeholder, shlex.quote(f"{name} it's"))
    command = command.replace("%P", shlex.quote("sessions/s/messages.jsonl"))
    done = subprocess.run(["sh", "-c", command], cwd=tmp_path, env=_env(), capture_output=True, check=False)
    assert done.returncode == 1 and b"the merge driver did not finish" in done.stderr
    assert (tmp_path / "ours it's").read_bytes() == (
        b"<<<<<<< ours\nours 1\nours 2 torn\n=======\ntheirs 1\n>>>>>>> theirs\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["base it's", "ours it's", "theirs it's"]
