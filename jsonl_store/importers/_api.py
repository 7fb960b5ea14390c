"""The public functions: one per tool, each a thin call of the engine with that tool's format."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

from .. import InvalidArgument, SessionStore
from . import _claude_code, _codex, _pi
from ._engine import import_paths
from ._events import Format
from ._report import ImportReport, ImportSourceError

#: ``progress(files done, files in all, the file being imported)``, called before each file and once at the end.
ProgressCallback = Callable[[int, int, str], None]


def _run(
    store: SessionStore,
    fmt: Format,
    default: str,
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]] | None,
    progress: ProgressCallback | None,
) -> ImportReport:
    if not isinstance(store, SessionStore):
        raise InvalidArgument(f"store must be a SessionStore, got {type(store).__name__}")
    if paths is None:
        if not os.path.isdir(default):
            raise ImportSourceError(
                f"no {fmt.tool} transcripts at the default location {default!r}", path=default
            )
        names = [default]
    elif isinstance(paths, (str, os.PathLike)):
        names = [os.fspath(paths)]
    else:
        names = [os.fspath(p) for p in paths]
    for name in names:
        if not isinstance(name, str) or "\x00" in name:
            raise InvalidArgument(f"a path must be a str without NUL, got {name!r}")
    return import_paths(store, fmt, names, progress)


def import_claude_code(
    store: SessionStore,
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]] | None = None,
    *,
    progress: ProgressCallback | None = None,
) -> ImportReport:
    """Import Claude Code transcripts: ``paths`` (files, or folders searched for ``*.jsonl``), else
    ``$CLAUDE_CONFIG_DIR/projects`` or ``~/.claude/projects``.

    Raises `ImportSourceError` (a `FileNotFoundError`) for a path that does not exist,
    `InvalidArgument` for arguments of the wrong type, and the store's `StorageError` when
    the store cannot be written (a full disk, a read-only store); every problem of a
    source file is in the report.
    """
    return _run(store, _claude_code.ClaudeCode(), _claude_code.default_location(), paths, progress)


def import_codex(
    store: SessionStore,
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]] | None = None,
    *,
    progress: ProgressCallback | None = None,
) -> ImportReport:
    """Import Codex rollouts: ``paths``, else ``$CODEX_HOME/sessions`` or ``~/.codex/sessions``.

    Raises as `import_claude_code` does.
    """
    return _run(store, _codex.Codex(), _codex.default_location(), paths, progress)


def import_pi(
    store: SessionStore,
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]] | None = None,
    *,
    progress: ProgressCallback | None = None,
) -> ImportReport:
    """Import pi sessions: ``paths``, else ``$PI_CODING_AGENT_DIR/sessions`` or ``~/.pi/agent/sessions``.

    Raises as `import_claude_code` does.
    """
    return _run(store, _pi.Pi(), _pi.default_location(), paths, progress)
