"""``jsonl-store git``: the merge driver git calls for session files, and its setup (spec §17).

``git setup`` writes the driver into a repository's config and the merge lines into the
store root's ``.gitattributes``; ``git merge-driver %O %A %B %P`` is what git runs for a
file both branches changed (gitattributes(5), "Defining a custom merge driver"): it leaves
the result in %A and exits 0, or leaves both versions there and exits 1.

The merge itself is `jsonl_store.merge_session_file`. What git does not hand a driver is
the rest of each side's session directory and the forks of the session beside it, which a
log merge needs (a side's snapshots and forks decide whose records may move), so this
module looks them up: ours is ``HEAD``'s tree, and
theirs is the commit git names in ``GITHEAD_<commit>`` (``git merge`` sets it for each
merged head) or in ``MERGE_HEAD``/``CHERRY_PICK_HEAD``/``REVERT_HEAD``/``REBASE_HEAD``.
A side counts as found only when that commit's blob at %P is exactly the file git handed
over; otherwise its snapshots are unknown and the merge plays safe.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import NamedTuple

from .. import ForkPoint, install_gitattributes
from .._format.names import FORK_NAME, GITATTRIBUTES_NAME, LOG_NAME, MERGE_TMP_SUFFIX, merge_tmp_name
from . import _commands as c
from . import _safe

DRIVER = "jsonl-store"
#: The driver's arguments: %O base, %A ours (and the result), %B theirs, %P the path in the repository.
DRIVER_ARGS = "git merge-driver %O %A %B %P"
#: The first line of the conflict the driver writes (`_merge.conflict_markers`), which the
#: fallback below looks for to tell "the driver wrote a conflict" from "it never ran".
_OURS_MARKER = "<<<<<<< ours"
# What runs when the driver did not finish (its interpreter or package is gone, it crashed):
# git counts any non-zero exit as a conflict but keeps %A as the driver left it, which is
# ours untouched, a valid file that one `git add` would commit as the merge. So unless the
# driver wrote its conflict, this writes ours and theirs whole between git's markers, in
# POSIX sh with grep, cat, tail and mv only (git runs drivers with the shell, gitattributes(5)),
# so `verify` fails and nothing of theirs is lost. %A's quoting is git's own.
_WHY_FALLBACK = (
    "jsonl-store: the merge driver did not finish (run jsonl-store git setup again if "
    "jsonl_store was moved or removed); both versions are kept in the file as a conflict"
)
_FALLBACK = " ".join(
    (
        f"{{ grep -qx '{_OURS_MARKER}' %A || {{",
        # A side's last line may lack its newline; a marker must still start a line.
        f"{{ echo '{_OURS_MARKER}'; cat %A; [ -z \"$(tail -c 1 %A)\" ] || echo;",
        "echo '======='; cat %B; [ -z \"$(tail -c 1 %B)\" ] || echo; echo '>>>>>>> theirs'; }",
        f"> %A{MERGE_TMP_SUFFIX} && mv %A{MERGE_TMP_SUFFIX} %A;",
        f"echo '{_WHY_FALLBACK}' >&2; }}; exit 1; }}",
    )
)
DRIVER_HELP = (
    "merge one session file: git runs this with %O %A %B %P; the result goes into OURS "
    "(exit 0), or both versions between conflict markers (exit 1)"
)
#: Refs that may name the commit being merged in, besides git merge's GITHEAD_<commit>.
_THEIR_REFS = ("MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "REBASE_HEAD")


def driver_command(executable: str) -> str:
    """The driver command `setup` writes: ``executable -m jsonl_store.cli`` by absolute path.

    git runs it with its own ``PATH`` (an IDE's, a GUI client's, one without the virtual
    environment), so the command names this interpreter instead of looking ``jsonl-store``
    up, quoted for the shell git runs drivers with (gitattributes(5)); `_FALLBACK` makes a
    driver that cannot run a visible conflict.
    """
    return f"{shlex.quote(executable)} -m jsonl_store.cli {DRIVER_ARGS} || {_FALLBACK}"


def config(executable: str) -> dict[str, str]:
    """The repository config `setup` writes, for the interpreter at ``executable``."""
    return {
        f"merge.{DRIVER}.name": "jsonl_store sessions: keep both branches' records",
        f"merge.{DRIVER}.driver": driver_command(executable),
        # For the internal merge of several merge bases, take their own common ancestor's
        # version (the "binary" driver's choice for a virtual ancestor): a valid log that
        # both sides hold, never one with conflict markers in it.
        f"merge.{DRIVER}.recursive": "binary",
    }


def register(command: Callable[..., argparse.ArgumentParser]) -> None:
    """Add ``git setup`` and ``git merge-driver`` to the parser (``command`` is `build_parser`'s)."""
    sub = command(
        "git",
        git,
        "let git merge sessions: set up the merge driver, or run it",
        "jsonl-store --root sessions git setup && git merge feature",
    )
    # The actions' parsers are the command's own class, so their messages are escaped too.
    actions = sub.add_subparsers(dest="git_command", metavar="ACTION", required=True, parser_class=type(sub))
    about = f"define the merge driver in REPO's config and add the merge lines to the store's {GITATTRIBUTES_NAME}"
    setup_parser = actions.add_parser("setup", help=about, description=about)
    # --root after the action too, as every command takes it (SUPPRESS: an absent one
    # leaves one given before the action alone).
    setup_parser.add_argument(
        "--root", metavar="DIR", default=argparse.SUPPRESS, help=f"the session store (default: ${c.ROOT_ENV})"
    )
    setup_parser.add_argument(
        "repo", metavar="REPO", nargs="?", help="the git repository (default: the one holding the store)"
    )
    driver = actions.add_parser(
        "merge-driver", help="merge one session file (git runs this)", description=DRIVER_HELP
    )
    for name, shown in (("base", "BASE"), ("ours", "OURS"), ("theirs", "THEIRS")):
        driver.add_argument(name, metavar=shown)
    driver.add_argument("path", metavar="PATH", help="the file's path in the repository (%%P)")


def git(args: argparse.Namespace) -> int:
    return setup(args) if args.git_command == "setup" else merge_driver(args)


def _run_git(*argv: str, cwd: str | None = None, data: bytes | None = None) -> bytes | None:
    """``git argv`` 's output, or None when it fails (an unknown ref, not a repository)."""
    try:
        done = subprocess.run(["git", *argv], cwd=cwd, input=data, capture_output=True, check=False)
    except OSError as exc:
        raise c.CliError(f"cannot run git: {exc.strerror or exc}") from None
    return done.stdout if done.returncode == 0 else None


# ---------------------------------------------------------------------------------------
# git setup
# ---------------------------------------------------------------------------------------


def setup(args: argparse.Namespace) -> int:
    root = c.root_of(args)
    if not os.path.isdir(root):
        raise c.CliError(f"no session store at '{_safe.escape(root)}' (use --root DIR or set {c.ROOT_ENV})")
    where = args.repo if args.repo is not None else root
    top = _run_git("rev-parse", "--show-toplevel", cwd=where) if os.path.isdir(where) else None
    if top is None:
        raise c.CliError(f"'{_safe.escape(where)}' is not inside a git repository")
    repo = os.fsdecode(top.rstrip(b"\n"))
    if os.path.relpath(os.path.realpath(root), os.path.realpath(repo)).startswith(os.pardir):
        raise c.CliError(
            f"the store '{_safe.escape(root)}' is outside the repository '{_safe.escape(repo)}': "
            f"git would never read its {GITATTRIBUTES_NAME}"
        )
    if not sys.executable or not os.path.isabs(sys.executable):
        raise c.CliError("cannot tell this Python interpreter's path, which the merge driver must name")
    lines = []
    for key, value in config(sys.executable).items():
        if _run_git("config", "--local", "--get", key, cwd=repo) != (value + "\n").encode():
            if _run_git("config", "--local", key, value, cwd=repo) is None:
                raise c.CliError(f"git could not set {key} in '{_safe.escape(repo)}'")
            lines.append(f"set {key} = {value}")
    added = install_gitattributes(root)
    lines.extend(f"added to {os.path.join(root, GITATTRIBUTES_NAME)}: {line}" for line in added)
    if not lines:
        lines.append(f"the merge driver is already set up for {root} in {repo}")
    c.emit(lines)
    return 0


# ---------------------------------------------------------------------------------------
# git merge-driver
# ---------------------------------------------------------------------------------------


class _TreeFiles(Mapping[str, bytes]):
    """The files of one directory of a commit's tree, read from git when asked for."""

    def __init__(self, commit: str, directory: str, names: Sequence[str]) -> None:
        self._commit = commit
        self._directory = directory
        self._names = list(names)

    def __getitem__(self, name: str) -> bytes:
        if name not in self._names:
            raise KeyError(name)
        path = f"{self._directory}/{name}" if self._directory else name
        data = _run_git("cat-file", "blob", f"{self._commit}:{path}")
        if data is None:
            raise c.CliError(f"git cannot read {path} of {self._commit}")
        return data

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


class _Side(NamedTuple):
    """What a merge of a raw log needs of one side besides the file: its session directory and its forks."""

    files: Mapping[str, bytes]
    forks: list[ForkPoint]


def _side(path: str, data: bytes, commits: Sequence[str]) -> _Side | None:
    """The session directory and forks of the first commit whose ``path`` is exactly ``data``; None if none is."""
    wanted = _run_git("hash-object", "--no-filters", "--stdin", data=data)
    if wanted is None:
        return None
    directory = os.path.dirname(path)
    for commit in commits:
        if _run_git("rev-parse", "-q", "--verify", f"{commit}:{path}") != wanted:
            continue
        listing = _run_git(
            "ls-tree", "-z", "--name-only", commit, "--", f"{directory}/" if directory else "."
        )
        forks = _forks_of(commit, directory)
        if listing is None or forks is None:
            return None
        names = [os.path.basename(os.fsdecode(n)) for n in listing.split(b"\0") if n]
        return _Side(_TreeFiles(commit, directory, names), forks)
    return None


def _forks_of(commit: str, directory: str) -> list[ForkPoint] | None:
    """The fork points, in ``commit``, of the store's sessions that fork from the one in ``directory``.

    A fork lives in a sibling directory (``<root>/<fork>/fork.json``, spec §2) and names its
    source by id, so every fork file of the store root is read, in one ``git cat-file``.
    None when git cannot list them.
    """
    from .._session import forks as _forks

    root, session_id = os.path.split(directory)
    listing = _run_git("ls-tree", "-r", "-z", "--full-tree", commit, "--", f"{root}/" if root else ".")
    if listing is None:
        return None
    blobs = []
    for entry in filter(None, listing.split(b"\0")):
        info, _, name = entry.partition(b"\t")
        parts = os.fsdecode(name).split("/")[len(root.split("/")) if root else 0 :]
        if info.startswith(b"100") and parts[1:] == [FORK_NAME]:  # a regular file, not a symlink
            blobs.append(info.split()[2])
    if not blobs:
        return []
    out = _run_git("cat-file", "--batch", data=b"".join(blob + b"\n" for blob in blobs))
    if out is None:
        return None
    points = []
    for data in _batch_contents(out):
        try:
            point = _forks.parse(data)
        except _forks.DamagedFork:
            continue  # a reader reports it as `bad-fork`; where it branches is unknown
        if point.session_id == session_id:
            points.append(point)
    return points


def _batch_contents(out: bytes) -> Iterator[bytes]:
    """Each object's bytes in ``git cat-file --batch`` output (``<oid> <type> <size>\\n<bytes>\\n``)."""
    at = 0
    while at < len(out):
        header_end = out.index(b"\n", at)
        header = out[at:header_end].split()
        if len(header) != 3:  # "<oid> missing"
            at = header_end + 1
            continue
        size = int(header[2])
        yield out[header_end + 1 : header_end + 1 + size]
        at = header_end + 1 + size + 1


def _their_commits() -> list[str]:
    commits = [name[len("GITHEAD_") :] for name in sorted(os.environ) if name.startswith("GITHEAD_")]
    for ref in _THEIR_REFS:
        found = _run_git("rev-parse", "-q", "--verify", f"{ref}^{{commit}}")
        if found is not None:
            commits.append(found.decode().strip())
    return commits


def _read(path: str) -> bytes:
    with open(path, "rb") as file:
        return file.read()


def merge_driver(args: argparse.Namespace) -> int:
    base, ours, theirs = _read(args.base), _read(args.ours), _read(args.theirs)
    path = args.path.replace(os.sep, "/")
    name = os.path.basename(path)
    mine = other = None
    if name == LOG_NAME:
        mine = _side(path, ours, ["HEAD"])
        other = _side(path, theirs, _their_commits())
    # Imported here: every other command starts without the merge code.
    from .._ops.merge import MergeResult, merge_session_file

    result: MergeResult = merge_session_file(
        name,
        base,
        ours,
        theirs,
        ours_files=mine.files if mine else None,
        theirs_files=other.files if other else None,
        ours_forks=mine.forks if mine else (),
        theirs_forks=other.forks if other else (),
    )
    temporary = merge_tmp_name(args.ours)
    with open(temporary, "wb") as file:
        file.write(result.data)
    os.replace(temporary, args.ours)
    if result.conflict is not None:
        _safe.write_lines(
            sys.stderr,
            [f"jsonl-store: conflict in {path}: {result.conflict}; both versions are kept in the file"],
        )
        return 1
    return 0
