"""loopguard against the baselines it replaces, on the same text in one run (group ``baselines``).

Run: ``pytest benchmarks/test_bench_baselines.py --benchmark-only``.  The stream is healthy
English prose (``benchmarks/corpus.py``) fed in 16-code-point deltas, as a model streams it;
``extra_info["chars"]`` is each round's size, so divide for ns per character:

- ``loopguard_default`` / ``loopguard_fuse``: ``TextLoopDetector`` over 100,000 code points;
- ``seed002_rescan``: seed 002's checks recomputed from the whole text at every checkpoint --
  the literal reference (``loopcore._reference``, ``fuse`` profile) -- over 20,000 code points
  (it is quadratic);
- ``sha256_windows``: the content detector of Gemini CLI (every 50-character window hashed with
  SHA-256, a history of 5,000 characters, a loop at 10 equal windows), written here from its
  description in ``../shared/research/peers-text.md`` §1.2, over 20,000 code points (once its
  history is full, every delta shifts every stored position: O(5,000) per delta).
"""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from conftest import stream
from loopguard import TextLoopDetector

DELTA = 16


def deltas(size: int) -> list[str]:
    text = stream("en", size)
    return [text[i : i + DELTA] for i in range(0, len(text), DELTA)]


def run_loopguard(parts: list[str], profile: str, implementation: str | None = None) -> int:
    det = TextLoopDetector(profile, implementation=implementation)
    feed = det.feed
    found = sum(len(feed(part, "reasoning")) for part in parts)
    return found + len(det.finish())


class Sha256Windows:
    """Every 50-character window of the recent history hashed with SHA-256; a loop when one
    window recurs 10 times with a mean spacing of at most 250 characters."""

    WINDOW, THRESHOLD, HISTORY = 50, 10, 5000

    def __init__(self) -> None:
        self.history, self.next, self.seen = "", 0, {}  # type: ignore[var-annotated]

    def add(self, delta: str) -> bool:
        self.history += delta
        if len(self.history) > self.HISTORY:  # drop the front, shift every stored position
            cut = len(self.history) - self.HISTORY
            self.history, self.next = self.history[cut:], max(0, self.next - cut)
            self.seen = {k: kept for k, v in self.seen.items() if (kept := [i - cut for i in v if i >= cut])}
        while self.next + self.WINDOW <= len(self.history):
            i = self.next
            self.next += 1
            key = hashlib.sha256(self.history[i : i + self.WINDOW].encode("utf-8", "surrogatepass")).hexdigest()
            hits = self.seen.setdefault(key, [])
            hits.append(i)
            if len(hits) >= self.THRESHOLD and (hits[-1] - hits[-self.THRESHOLD]) / (self.THRESHOLD - 1) <= 250:
                return True
        return False


def run_sha256(parts: list[str]) -> int:
    detector = Sha256Windows()
    return sum(detector.add(part) for part in parts)


@pytest.mark.benchmark(group="baselines")
@pytest.mark.parametrize("profile", ["default", "fuse"])
def test_loopguard(benchmark: Any, profile: str) -> None:
    parts = deltas(100_000)
    benchmark.extra_info["chars"] = sum(map(len, parts))
    assert benchmark(run_loopguard, parts, profile) == 0  # healthy prose: nothing found


@pytest.mark.benchmark(group="baselines")
def test_seed002_rescan(benchmark: Any) -> None:
    parts = deltas(20_000)
    benchmark.extra_info["chars"] = sum(map(len, parts))
    assert benchmark.pedantic(run_loopguard, (parts, "fuse", "python"), rounds=1, iterations=1) == 0


@pytest.mark.benchmark(group="baselines")
def test_sha256_windows(benchmark: Any) -> None:
    parts = deltas(20_000)
    benchmark.extra_info["chars"] = sum(map(len, parts))
    assert benchmark.pedantic(run_sha256, (parts,), rounds=1, iterations=1) == 0


def test_the_sha256_baseline_finds_a_chant() -> None:
    """The baseline is a real detector: a 20-character chant is found within its 10th copy."""
    detector = Sha256Windows()
    assert not detector.add("An ordinary opening sentence. ")
    assert any(detector.add("Now. OK. Wait. Now. ") for _ in range(13))
