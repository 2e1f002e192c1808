"""The core's fuzz target (``benchmarks/fuzz_core.py``): compiled core vs the reference on random
texts and chunkings (issue 21).  A short seeded run by default, ~30 s of each engine with ``-m slow``."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import loopcore

pytestmark = pytest.mark.skipif("cython" not in loopcore.implementations(), reason="the compiled core is not built")

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "fuzz_core.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("loopguard_bench_fuzz_core", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


fuzz = _load()


def test_a_seeded_run_checks_every_input() -> None:
    stats = fuzz.run_random(0, seed=1, inputs=40)
    assert stats.inputs == 40
    assert stats.with_detections >= 5  # the shapes make loops: the comparison is not of empty lists


def test_a_mismatch_is_reported_with_its_input() -> None:
    case = fuzz.Case("abc" * 10, "fuse", "text", (3,), (5, 9))

    def lying(c: Any, impl: str, cuts: Any) -> list[dict[str, Any]]:
        return [{"kind": "cycle"}] if impl == "cython" else []

    with pytest.raises(
        AssertionError, match=r"parity: 30 code points, config fuse, channel text, cuts \[3\] / \[5, 9\]"
    ):
        fuzz.check(case, lying)
    assert fuzz.check(case) == 0  # the real implementations agree (nothing to find in 30 code points)


@pytest.mark.slow
def test_random_engine_30_seconds() -> None:
    stats = fuzz.run_random(30, seed=2)
    assert stats.inputs >= 100 and stats.with_detections >= 20


@pytest.mark.slow
def test_atheris_engine_30_seconds() -> None:
    if fuzz.atheris is None:
        if os.environ.get("LOOPGUARD_REQUIRE_ATHERIS") == "1":  # set by .ci/run, which installs it
            pytest.fail("atheris is not installed (the `fuzz` extra) but LOOPGUARD_REQUIRE_ATHERIS=1")
        pytest.skip("atheris is not installed (the `fuzz` extra): the random engine (above) runs instead")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SCRIPT.parents[1] / "src"), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--engine", "atheris", "--seconds", "30"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=SCRIPT.parent,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    runs = re.search(r"Done (\d+) runs", done.stderr)
    assert runs is not None and int(runs.group(1)) >= 500
