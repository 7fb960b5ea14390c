"""Everything the store creates is private: directories 0700, files 0600, whatever the umask.

Transcripts hold private data, so no file the store makes (logs, snapshots, metadata,
the lock file, ``.gitignore``, cut sidecars, files moved aside, temporary files) is
readable by other users, also under ``umask 0``.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from jsonl_store import CompactedMessage, ModelUsage, SessionStore, UserMessage
from jsonl_store._io.atomic import write_temp
from jsonl_store._io.fs import OS_FS


@pytest.fixture(params=[0o000, 0o022], ids=["umask-000", "umask-022"])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    """Runs the test under umask 0 and under the common 022."""
    previous = os.umask(request.param)
    yield request.param
    os.umask(previous)


def _modes(root: Path) -> dict[str, int]:
    found = {".": stat.S_IMODE(root.stat().st_mode)}
    for path in root.rglob("*"):
        found[str(path.relative_to(root))] = stat.S_IMODE(path.lstat().st_mode)
    return found


def test_every_directory_and_file_the_store_creates_is_private(tmp_path: Path, umask: int) -> None:
    """Root (and its new parents), session directories, logs, snapshot, meta, lock, .gitignore, sidecars: 0700/0600."""
    root = tmp_path / "new-parent" / "store"
    store = SessionStore(root)
    store.append("s", UserMessage(content="one"), title="t")
    two = store.append("s", UserMessage(content="two"))
    store.snapshot("s", CompactedMessage(content="summary"), two, 0)
    store.update_session("s", title="renamed")
    store.record_usage("s", ModelUsage(input_tokens=1))
    store.append("child", UserMessage(content="c"), parent_session_id="s")
    store.close()
    # A torn tail and torn metadata: repair cuts the one into a sidecar and moves the other aside.
    with open(root / "s" / "messages.jsonl", "ab") as log:
        log.write(b'{"torn')
    (root / "s" / "meta.json").write_bytes(b"{not json")
    os.chmod(root / "s" / "meta.json", 0o600)  # written by this test, not by the store
    kinds = {p.kind for p in SessionStore(root).repair("s")}
    assert {"torn-tail", "bad-meta"} <= kinds
    modes = _modes(root)
    assert {name for name in modes if ".cut-" in name} and {
        name for name in modes if name.endswith(".damaged")
    }
    assert stat.S_IMODE((tmp_path / "new-parent").stat().st_mode) == 0o700
    for name, mode in modes.items():
        path = root / name
        expected = 0o700 if path.is_dir() else 0o600
        assert mode == expected, f"{name}: {oct(mode)} under umask {oct(umask)}"


def test_temporary_files_are_private(tmp_path: Path, umask: int) -> None:
    """The temporary file behind every atomic replace or create is 0600 from the moment it exists."""
    path = write_temp(OS_FS, str(tmp_path), "meta.json", b"{}", durable=False)
    assert stat.S_IMODE(os.lstat(path).st_mode) == 0o600
