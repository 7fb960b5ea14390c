"""The public API's types: natural user code passes ``mypy --strict``, and mistakes do not.

`natural_use.py` is code written the way the docs show it; `mistakes.py` holds lines
that must stay type errors, each asserted by a ``# type: ignore[code]`` that
``warn_unused_ignores`` turns into a failure once it is no longer needed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
REPO = HERE.parent.parent


def test_user_code_type_checks_and_mistakes_stay_type_errors() -> None:
    """mypy --strict on tests/typing (this project's mypy settings) finds no issue in any file."""
    files = sorted(HERE.glob("*.py"))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--warn-unused-ignores",
            "--config-file",
            str(REPO / "pyproject.toml"),
            str(HERE),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    report = result.stdout + result.stderr
    assert result.returncode == 0, report
    # The count proves mypy read every file here, not an empty or misspelt directory.
    assert f"no issues found in {len(files)} source files" in report, report
