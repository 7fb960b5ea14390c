"""Screenshots of every real transcript's exported page, for a person to look at.

    python benchmarks/screenshots.py [--out DIR] [--transcripts DIR] [--height PIXELS]

Imports every transcript under ``--transcripts`` (default: ``tests/importers/data``, the
real Claude Code, Codex and pi transcripts the tests use; README there says where each
comes from) into a fresh store, writes the store as HTML pages (`export_html`, as
``jsonl-store export --all`` does) into ``DIR/site`` and renders the index and every page
with headless chromium into ``DIR/<page>.png``. Needs Debian's ``chromium`` and, for
rendered Markdown and highlighted code, the ``html`` extra. Prints each file written.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from jsonl_store import SessionStore
from jsonl_store.export import export_html
from jsonl_store.importers import import_claude_code, import_codex, import_pi

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "tests" / "importers" / "data"
IMPORTERS = {"claude-code": import_claude_code, "codex": import_codex, "pi": import_pi}


def build_site(transcripts: Path, root: Path, site: Path) -> list[Path]:
    """Import every transcript folder's files into ``root`` and export them into ``site``."""
    with SessionStore(root, durability="none") as store:
        for tool, importer in IMPORTERS.items():
            folder = transcripts / tool
            if folder.is_dir():
                importer(store, folder)
        return [Path(path) for path in export_html(store, site) if path.endswith(".html")]


def screenshot(chromium: str, page: Path, png: Path, height: int) -> None:
    """One page rendered to ``png``, 1200 pixels wide and ``height`` tall."""
    subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--hide-scrollbars",
            f"--screenshot={png}",
            f"--window-size=1200,{height}",
            page.as_uri(),
        ],
        capture_output=True,
        timeout=120,
        check=True,
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("screenshots"), help="where the site and PNGs go")
    parser.add_argument("--transcripts", type=Path, default=DATA, help="folders claude-code/, codex/, pi/")
    parser.add_argument("--height", type=int, default=2400, help="the window's height in pixels")
    args = parser.parse_args(argv)
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("needs chromium (apt-get install chromium)", file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        pages = build_site(args.transcripts, Path(scratch) / "store", args.out / "site")
    for page in pages:
        png = args.out / f"{page.stem}.png"
        screenshot(chromium, page, png, args.height)
        print(png)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
