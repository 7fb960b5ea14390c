"""``jsonl-store scan`` fails a pre-commit hook only for certain secrets; ``--allow`` clears a finding; ``redact`` counts per kind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_secrets import body
from guessing import Guessing

from jsonl_store import SessionStore, UserMessage
from jsonl_store._text import redact as _redact
from jsonl_store.cli import main

TOKEN = "ghp_" + body(36)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run ``jsonl-store argv`` in-process; return its exit code, stdout and stderr."""
    capsys.readouterr()
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def guessing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The command's default redactor also guesses (``guess=<word>``): a double for the name-based rules."""
    monkeypatch.setattr(_redact, "DEFAULT", Guessing())


def _leaky(root: Path, *texts: str) -> None:
    with SessionStore(root, redact=False) as store:
        for text in texts:
            store.append("s", UserMessage(content=text))


@pytest.mark.usefixtures("guessing")
def test_scan_passes_with_only_guesses_and_fails_with_strict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A guess alone never blocks a commit (exit 0, reported as unsure); --strict counts it (exit 1)."""
    _leaky(tmp_path, "config guess=hunter22")
    code, out, _ = run(capsys, "--root", str(tmp_path), "scan")
    assert code == 0
    assert "password-guess? hu…(8 chars)" in out and "(unsure: reported only)" in out
    assert "[REDACTED:" not in out  # a guess is never shown as if it were replaced
    assert "0 secrets, 1 unsure (reported only, never rewritten)" in out and "hunter22" not in out
    assert run(capsys, "--root", str(tmp_path), "scan", "--strict")[0] == 1


def test_scan_prints_each_findings_fingerprint_and_counts_per_kind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every finding line ends with its fingerprint, the summary counts certain secrets per kind."""
    _leaky(tmp_path, f"{TOKEN} {TOKEN}", "id AKIA" + "QZ7XW3VT9RK2MP5L")
    code, out, _ = run(capsys, "--root", str(tmp_path), "scan")
    assert code == 1 and TOKEN not in out
    [finding, *_] = SessionStore(tmp_path).scan("s")
    assert f"[REDACTED:github-token] ghp_…(40 chars) {finding.fingerprint}\n" in out
    assert "3 secrets (github-token 2, aws-access-key 1) in " in out
    code, out, _ = run(capsys, "--root", str(tmp_path), "scan", "--json")
    assert code == 1 and {f["fingerprint"] for f in json.loads(out)} >= {finding.fingerprint}


def test_scan_allow_clears_a_finding_so_the_hook_passes_and_nothing_is_rewritten(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``scan --allow FINGERPRINT`` writes the allowlist; the next scan reports the value allowed and exits 0."""
    _leaky(tmp_path, f"test fixture {TOKEN}")
    log = (tmp_path / "s" / "messages.jsonl").read_bytes()
    [finding] = SessionStore(tmp_path).scan("s")
    code, out, _ = run(capsys, "--root", str(tmp_path), "scan", "--allow", finding.fingerprint)
    assert code == 0 and "1 fingerprint added to " in out and ".jsonl-store-allow" in out
    assert (
        run(capsys, "--root", str(tmp_path), "scan", "--allow", finding.fingerprint)[1].count("already there")
        == 1
    )
    code, out, _ = run(capsys, "--root", str(tmp_path), "scan")
    assert code == 0 and f"{finding.fingerprint} (allowed)" in out and "0 secrets, 1 allowed" in out
    assert run(capsys, "--root", str(tmp_path), "scan", "--strict")[0] == 0
    assert run(capsys, "--root", str(tmp_path), "redact", "s")[0] == 0
    assert (tmp_path / "s" / "messages.jsonl").read_bytes() == log


def test_scan_allow_refuses_what_is_not_a_fingerprint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A value that is not 16 lower-case hex digits is a usage error (exit 2), not echoed; no allowlist is made."""
    _leaky(tmp_path, "hello")
    code, out, err = run(capsys, "--root", str(tmp_path), "scan", "--allow", TOKEN)
    assert code == 2 and "not a fingerprint" in err
    assert TOKEN not in out + err  # what was pasted by mistake may be the secret itself
    assert not (tmp_path / ".jsonl-store-allow").exists()
    assert run(capsys, "--root", str(tmp_path), "scan", "s", "--allow", "0123456789abcdef")[0] == 2


@pytest.mark.usefixtures("guessing")
def test_redact_rewrites_certain_secrets_only_and_counts_them_per_kind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``redact`` says how many of each kind it rewrote; a guess stays as stored and scan still reports it."""
    _leaky(tmp_path, f"guess=hunter22 {TOKEN}", f"again {TOKEN}")
    code, out, _ = run(capsys, "--root", str(tmp_path), "redact", "s")
    assert code == 1
    assert "2 secrets redacted in session s (github-token 2); guesses and allowlisted values left" in out
    with SessionStore(tmp_path, redact=False) as store:
        assert store.load("s").messages[0].content == "guess=hunter22 [REDACTED:github-token]"  # type: ignore[union-attr]
    code, out, _ = run(capsys, "--root", str(tmp_path), "scan")
    assert code == 0 and "1 unsure" in out
