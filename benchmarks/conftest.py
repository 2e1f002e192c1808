"""Benchmark fixtures: seeded corpora and the real-text stream, sliced before timing (see corpus.py)."""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import corpus


@cache
def stream(name: str, size: int) -> str:
    """``size`` code points of ``en``, ``zh``, ``late`` (seeded) or ``real`` (``corpus.real_stream``:
    skips the test when ``../shared/data`` is not checked out)."""
    if name == "real":
        if not corpus.real_available():
            import pytest

            pytest.skip(corpus.real_missing_reason())
        return corpus.real_stream(size)
    make = {"en": corpus.english, "zh": corpus.chinese, "late": corpus.late_loop}[name]
    return make(size)


@cache
def pieces(name: str, size: int, delta: int) -> tuple[str, ...]:
    return tuple(corpus.fixed_deltas(stream(name, size), delta))
