"""The stubs (``loopcore/*.pyi``), the reference and schema modules of loopcore, and the
annotations of loopguard type-check under ``mypy --strict``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_mypy_strict_on_examples_and_package() -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            str(ROOT / "tests" / "typing_examples.py"),
            str(ROOT / "src" / "loopguard"),
            str(ROOT / "src" / "loopcore"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Success: no issues found" in out.stdout
