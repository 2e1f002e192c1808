"""Benchmark fixtures: seeded corpora, sliced before timing (see corpus.py)."""

from __future__ import annotations

import sys
from functools import lru_cache
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import corpus  # noqa: E402


@lru_cache(maxsize=None)
def stream(name: str, size: int) -> str:
    make = {"en": corpus.english, "zh": corpus.chinese, "late": corpus.late_loop}[name]
    return make(size)


@lru_cache(maxsize=None)
def pieces(name: str, size: int, delta: int) -> tuple[str, ...]:
    return tuple(corpus.fixed_deltas(stream(name, size), delta))
