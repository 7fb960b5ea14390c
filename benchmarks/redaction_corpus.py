"""Default redaction on real text that holds no secret, and on a labelled set of fake ones.

    python benchmarks/redaction_corpus.py                 # corpus and labelled set
    python benchmarks/redaction_corpus.py --compare       # also detect-secrets and gitleaks, when installed

The corpus is built from what is installed here: this interpreter's standard library, the
site-packages of the packages listed in `PACKAGES`, every `node_modules` folder found in
`NODE_MODULES`, the output of ``pip list``, ``env`` and ``git log``, this project's own
docs and the real agent transcripts under ``/work/shared/transcripts`` when present. Each
file is stored the way an agent's tool output is (`Redactor.redact_json` of a tool
message): the requirement is that none comes back changed (spec §18). Changed files are
printed with their changed lines *after* redaction, so no value is ever printed.

The labelled set is `fake_secrets.labelled()`: realistic fake secrets, each kind in each
context; the requirement is that at least 95% are removed whole and none in part. Recall
is printed per kind and per context. ``--compare`` runs detect-secrets (``pip install
detect-secrets==1.5.0``) and gitleaks (a binary on ``PATH``) over the same labelled set
and a fixed sample of the corpus, and prints precision and recall side by side.
"""

from __future__ import annotations

import argparse
import collections
import glob
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Callable, Iterator, Sequence
from typing import NamedTuple

import msgspec

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(_HERE)
# The store under test is this checkout; the labelled set lives with the tests.
sys.path[:0] = [p for p in (_ROOT, os.path.join(_ROOT, "tests")) if p not in sys.path]

from fake_secrets import Labelled, labelled, removed_whole  # noqa: E402

from jsonl_store._text.redact import DEFAULT  # noqa: E402

#: Installed packages whose sources join the corpus (those missing are skipped).
PACKAGES = (
    "pip", "pydantic", "openai", "anthropic", "hypothesis", "pygments", "mypy", "_pytest", "httpx2",
    "django", "flask", "werkzeug", "jinja2", "click", "requests", "urllib3", "black",
)  # fmt: skip
#: Where npm packages are looked for (``npm install --prefix /tmp/x some-package`` adds more).
NODE_MODULES = (
    "/usr/lib/node_modules",
    "/usr/local/lib/node_modules",
    "/tmp/redaction-corpus-npm/node_modules",
)
#: The file names taken from a package folder.
SUFFIXES = (
    ".py",
    ".pyi",
    ".js",
    ".mjs",
    ".cjs",
    ".ts",
    ".json",
    ".md",
    ".txt",
    ".rst",
    ".yml",
    ".yaml",
    ".toml",
    ".cfg",
    ".ini",
    ".sh",
)
#: Largest file read (a few generated files are bigger; they add nothing new).
MAX_BYTES = 2 << 20
TRANSCRIPTS = "/work/shared/transcripts"


class Item(NamedTuple):
    """One corpus text: where it came from and its text."""

    source: str
    name: str
    text: str


def _files(root: str, skip: Sequence[str] = ()) -> Iterator[str]:
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in skip and d != "__pycache__")
        for name in sorted(names):
            if name.endswith(SUFFIXES):
                yield os.path.join(folder, name)


def _read(path: str) -> str | None:
    try:
        if os.path.getsize(path) > MAX_BYTES:
            return None
        with open(path, "rb") as file:
            return file.read().decode("utf-8", "replace")
    except OSError:
        return None


def _from_files(source: str, paths: Iterator[str], base: str) -> Iterator[Item]:
    for path in paths:
        text = _read(path)
        if text:
            yield Item(source, os.path.relpath(path, base), text)


def _output(*command: str) -> str:
    try:
        return subprocess.run(
            command, capture_output=True, text=True, cwd=_ROOT, timeout=120, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def corpus() -> Iterator[Item]:
    """Every corpus text, source by source, in a fixed order."""
    stdlib = sysconfig.get_paths()["stdlib"]
    yield from _from_files("stdlib", _files(stdlib, skip=("site-packages", "dist-packages")), stdlib)
    site = sysconfig.get_paths()["purelib"]
    for package in PACKAGES:
        folder = os.path.join(site, package)
        if os.path.isdir(folder):
            yield from _from_files(f"site-packages/{package}", _files(folder), site)
    for root in NODE_MODULES:
        if os.path.isdir(root):
            yield from _from_files("node_modules", _files(root), root)
    for command in (
        (sys.executable, "-m", "pip", "list"),
        (sys.executable, "-m", "pip", "freeze"),
        ("env",),
        ("git", "log", "--stat", "-n", "300"),
        ("git", "log", "-p", "-n", "40", "--", "jsonl_store"),
    ):
        text = _output(*command)
        if text:
            yield Item("output", " ".join(os.path.basename(c) for c in command), text)
    docs = [os.path.join(_ROOT, name) for name in ("README.md", "CHANGELOG.md", "CONTRIBUTING.md")]
    docs += [os.path.join(_ROOT, "spec", "FORMAT.md")]
    # The README's sections moved into the docs site's pages (CONTRIBUTING.md, "The docs"):
    # the corpus keeps that prose and its examples.
    docs += sorted(glob.glob(os.path.join(_ROOT, "docs", "**", "*.md"), recursive=True))
    yield from _from_files("docs", iter(docs), _ROOT)
    if os.path.isdir(TRANSCRIPTS):
        yield from _from_files(
            "transcripts", iter(sorted(glob.glob(f"{TRANSCRIPTS}/**/*.jsonl", recursive=True))), TRANSCRIPTS
        )


def stored(text: str) -> str:
    """``text`` as the default redactor stores it in a tool message."""
    data = msgspec.json.encode({"role": "tool", "tool_call_id": "call_1", "content": text})
    redacted = DEFAULT.redact_json(data)
    if redacted is data:
        return text
    content: str = msgspec.json.decode(redacted)["content"]
    return content


def changed_lines(before: str, after: str) -> list[tuple[int, str]]:
    """(line number, the line after redaction) of each line redaction changed."""
    if before == after:
        return []
    old, new = before.splitlines(), after.splitlines()
    return [(n, b) for n, (a, b) in enumerate(zip(old, new, strict=False), 1) if a != b]


def run_corpus(show: int) -> tuple[int, int, int]:
    """Runs every corpus file through the default redactor; prints the changed ones."""
    files = size = changed = guesses = guessed_files = 0
    per_source: collections.Counter[str] = collections.Counter()
    for item in corpus():
        files += 1
        size += len(item.text)
        per_source[item.source] += 1
        lines = changed_lines(item.text, stored(item.text))
        found = [f for f in DEFAULT.find(item.text) if not f.certain]
        guesses += len(found)
        guessed_files += bool(found)
        if lines:
            changed += 1
            if changed <= show:
                print(f"CHANGED {item.source}: {item.name}")
                for number, line in lines[:5]:
                    print(f"  {number}: {line[:160]}")
    sources = ", ".join(f"{source} {count:,}" for source, count in per_source.items())
    print(f"corpus: {files:,} files, {size / 1e6:,.1f} MB ({sources})")
    print(f"  changed by the default redactor: {changed} files (required: 0)")
    print(f"  guesses reported only (Redactor.find, certain=False): {guesses:,} in {guessed_files:,} files")
    return files, size, changed


def run_labelled() -> float:
    """Redacts the labelled set; prints recall per kind and per context; returns the recall."""
    items = labelled()
    by_kind: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    by_context: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for item in items:
        verdict = removed_whole(item.secret, item.text, stored(item.text))
        outcome = "whole" if verdict else "missed" if verdict is False else "partial"
        by_kind[item.kind][outcome] += 1
        by_context[item.context.split("-", maxsplit=1)[0]][outcome] += 1
    whole = sum(c["whole"] for c in by_kind.values())
    partial = sum(c["partial"] for c in by_kind.values())
    print(f"labelled set: {len(items)} fake secrets, {len(by_kind)} kinds")
    print(
        f"  removed whole {whole} ({whole / len(items):.1%}, required: 95%), in part {partial} (required: 0)"
    )
    for title, table in (("kind", by_kind), ("context", by_context)):
        cells = [f"{name} {c['whole']}/{sum(c.values())}" for name, c in sorted(table.items())]
        print(f"  per {title}: " + ", ".join(cells))
    return whole / len(items)


# -- other scanners ------------------------------------------------------------------

_EXTENSIONS = {
    "json": ".json",
    "yaml": ".yaml",
    "env": ".env",
    "python": ".py",
    "ini": ".ini",
    "toml": ".toml",
}


def _suffix(context: str) -> str:
    return _EXTENSIONS.get(context.split("-", maxsplit=1)[0], ".txt")


def _detect_secrets(paths: list[str]) -> dict[str, list[str]] | None:
    """detect-secrets 1.5.0's default plugins: the secret values it reports per file."""
    try:
        from detect_secrets.core.secrets_collection import SecretsCollection
        from detect_secrets.settings import default_settings
    except ImportError:
        return None
    found: dict[str, list[str]] = {}
    with default_settings():
        for path in paths:
            collection = SecretsCollection()
            collection.scan_file(path)
            found[path] = [s.secret_value or "" for _, s in collection]
    return found


def _gitleaks(folder: str, paths: list[str]) -> dict[str, list[str]] | None:
    """gitleaks' default rules over a folder: the secrets it reports per file."""
    binary = shutil.which("gitleaks")
    if binary is None:
        return None
    report = os.path.join(folder, "gitleaks.json")
    subprocess.run(
        [
            binary,
            "detect",
            "--no-git",
            "--source",
            folder,
            "--report-format",
            "json",
            "--report-path",
            report,
            "--exit-code",
            "0",
        ],
        capture_output=True,
        check=False,
    )
    found: dict[str, list[str]] = {path: [] for path in paths}
    with open(report, encoding="utf-8") as file:
        for leak in json.load(file) or []:
            path = leak.get("File", "")
            path = path if os.path.isabs(path) else os.path.join(folder, path)
            found.setdefault(path, []).append(leak.get("Secret", ""))
    return found


def _write(folder: str, name: str, text: str) -> str:
    path = os.path.join(folder, name)
    with open(path, "w", encoding="utf-8") as file:
        file.write(text)
    return path


def compare(sample: int) -> None:
    """Precision and recall of this redactor, detect-secrets and gitleaks on the same data."""
    items = labelled()
    texts = [item for i, item in enumerate(corpus()) if len(item.text) < 200_000]
    step = max(1, len(texts) // sample)
    clean = texts[::step][:sample]
    with tempfile.TemporaryDirectory(prefix="redaction-compare-") as folder:
        secret_paths = [
            _write(folder, f"s{i}{_suffix(item.context)}", item.text) for i, item in enumerate(items)
        ]
        clean_paths = [
            _write(folder, f"c{i}{os.path.splitext(item.name)[1] or '.txt'}", item.text)
            for i, item in enumerate(clean)
        ]
        scanners: dict[str, Callable[[list[str]], dict[str, list[str]] | None]] = {
            "detect-secrets 1.5.0": _detect_secrets,
            "gitleaks": lambda paths: _gitleaks(folder, paths),
        }
        rows = [("jsonl_store (default, rewrites)", *_ours(items, clean))]
        for name, scan in scanners.items():
            found = scan(secret_paths + clean_paths)
            if found is None:
                print(f"{name}: not installed, skipped")
                continue
            rows.append((name, *_theirs(items, secret_paths, clean_paths, found)))
    print(f"\nlabelled set {len(items)}; clean sample {len(clean)} corpus files (every {step}th)")
    print(
        "| scanner | labelled found (this one: removed whole) | recall | findings in clean files | clean files flagged | precision |"
    )
    print("|---|---|---|---|---|---|")
    for name, hit, false_findings, flagged in rows:
        precision = hit / (hit + false_findings) if hit + false_findings else 1.0
        print(f"| {name} | {hit} | {hit / len(items):.1%} | {false_findings} | {flagged} | {precision:.1%} |")


def _ours(items: list[Labelled], clean: list[Item]) -> tuple[int, int, int]:
    hit = sum(bool(removed_whole(item.secret, item.text, stored(item.text))) for item in items)
    changes = [len(changed_lines(item.text, stored(item.text))) for item in clean]
    return hit, sum(changes), sum(bool(c) for c in changes)


def _theirs(
    items: list[Labelled], secret_paths: list[str], clean_paths: list[str], found: dict[str, list[str]]
) -> tuple[int, int, int]:
    """A scanner's hits on the labelled set: a reported value holding a piece of the secret
    (a private key's header line counts for its block), and its findings in clean files."""
    hit = 0
    for item, path in zip(items, secret_paths, strict=True):
        values = found.get(path, [])
        pieces = {item.secret[i : i + 8] for i in range(0, max(1, len(item.secret) - 7), 4)}
        hit += any(any(piece in value for piece in pieces) for value in values) or (
            item.kind == "private-key" and bool(values)
        )
    false_findings = sum(len(found.get(path, [])) for path in clean_paths)
    flagged = sum(bool(found.get(path)) for path in clean_paths)
    return hit, false_findings, flagged


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--compare", action="store_true", help="also run detect-secrets and gitleaks when installed"
    )
    parser.add_argument(
        "--sample", type=int, default=400, help="clean corpus files the other scanners get (default 400)"
    )
    parser.add_argument("--show", type=int, default=50, help="changed files printed (default 50)")
    args = parser.parse_args(argv)
    recall = run_labelled()
    _, _, changed = run_corpus(args.show)
    if args.compare:
        compare(args.sample)
    return 0 if changed == 0 and recall >= 0.95 else 1


if __name__ == "__main__":
    sys.exit(main())
