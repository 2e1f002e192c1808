"""Cost of loopcore's result scans (``TokenFinder``, ``word_lines``) against their pure-Python
reference in the same run, on a 10 KB, 200-line tool result (the guard's ``guard_10k_result``).

Run: ``pytest benchmarks/test_bench_scan.py --benchmark-only``; group ``scan``.
"""

from __future__ import annotations

from typing import Any

import pytest

import loopcore
from loopcore import _scan_reference

RESULT = "".join(f"{i:4d}  line {i} of the file being read, with some ordinary code on it\n" for i in range(200))
WORDS = ("in", "took", "after", "elapsed", "duration", "this")
IMPLS = {"python": _scan_reference}
if "cython" in loopcore.implementations():
    from loopcore import _scan

    IMPLS["cython"] = _scan


@pytest.mark.benchmark(group="scan")
@pytest.mark.parametrize("impl", sorted(IMPLS))
def test_token_finder(benchmark: Any, impl: str) -> None:
    finder = IMPLS[impl].TokenFinder(WORDS)
    assert benchmark(finder.find, RESULT, True) == []  # "in" appears inside words only


@pytest.mark.benchmark(group="scan")
@pytest.mark.parametrize("impl", sorted(IMPLS))
def test_word_lines(benchmark: Any, impl: str) -> None:
    assert len(benchmark(IMPLS[impl].word_lines, RESULT, 512)) == 200
