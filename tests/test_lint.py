"""The lint gates: ``ruff check``, ``ruff format --check``, ``cython-lint`` over ``src/loopcore``,
``mypy --strict`` over both packages and ``stubtest`` of ``loopcore``'s stubs against the compiled
module.  Each runs when its tool is installed (the ``test`` extra installs them all) and fails the
test with the tool's report when it finds anything; without the tool it is skipped, saying so.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import loopcore

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"


def _tool(name: str) -> str:
    """The command ``name`` beside this Python (a virtual environment's bin), else on PATH."""
    here = Path(sys.executable).parent / name
    found = str(here) if here.exists() else shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (pip install -e '.[test]')")
    return found


def _module(name: str) -> None:
    if importlib.util.find_spec(name) is None:
        pytest.skip(f"{name} is not installed (pip install -e '.[test]')")


def _run(args: list[str], env: dict[str, str] | None = None) -> None:
    out = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, env=env)
    assert out.returncode == 0, f"{' '.join(args)} failed ({out.returncode}):\n{out.stdout}{out.stderr}"


def test_ruff_check() -> None:
    _run([_tool("ruff"), "check", "--no-cache", "."])


def test_ruff_format() -> None:
    _run([_tool("ruff"), "format", "--check", "--no-cache", "."])


def test_cython_lint() -> None:
    tool = _tool("cython-lint")
    # cython-lint runs pycodestyle as a command: the one beside it, when not on PATH
    env = dict(os.environ, PATH=os.pathsep.join([str(Path(tool).parent), os.environ.get("PATH", "")]))
    _run([tool, "src/loopcore"], env=env)  # settings: [tool.cython-lint] in pyproject.toml


def test_mypy_strict_on_both_packages() -> None:
    _module("mypy")
    _run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(SRC / "loopguard"), str(SRC / "loopcore")])


@pytest.mark.skipif(loopcore.IMPLEMENTATION != "cython", reason="stubtest checks the compiled core: it is not built")
def test_stubtest_loopcore() -> None:
    _module("mypy")
    allowlist = SRC / "loopcore" / "stubtest-allowlist.txt"
    # the loopcore that this test run imports (an installed one or src/ on PYTHONPATH)
    where = str(Path(loopcore.__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([where, os.environ.get("PYTHONPATH", "")]))
    _run([sys.executable, "-m", "mypy.stubtest", "loopcore", "--allowlist", str(allowlist)], env=env)
