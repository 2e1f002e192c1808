"""Issue 6's properties of the ``default`` profile, on the generators of ``benchmarks/quality.py``.

* Loops injected into prose at a random offset -- period 1-4000 code points, ASCII and CJK, with
  or without recovery prose after them -- are caught (fire after ``first_repeat``, before the loop
  ends): verbatim ones (hypothesis) and, on a fixed sample of 400, ones with up to 2 % character
  noise (substitutions, insertions, deletions over every copy after the first); with 2-5 % noise
  a floor on the same kind of sample.
* Generated legitimate texts -- prose (English, Chinese), Python and Go code, Markdown tables,
  CSV, logs, YAML, hex dumps, numbered lists, JSON Lines -- are never flagged.

The generators are checked on their own in ``tests/test_quality_probe.py``; the measured rates
for 3-5 % noise (where these loops, only three copies long, are not all caught) are in
``docs/detection.md``.
"""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, note, strategies as st

import loopcore
from loopguard import TextConfig
from test_quality_probe import quality

pytestmark = pytest.mark.skipif(
    "cython" not in loopcore.implementations(), reason="the compiled core is not built"
)

DEFAULT = TextConfig()

periods = st.floats(0.0, math.log(4000)).map(lambda x: max(1, min(4000, round(math.exp(x)))))  # log-uniform
families = st.sampled_from(quality.LOOPS)
seeds = st.sampled_from([1, 2, 3])  # each seed builds its prose pools once (cached); texts vary by index
indices = st.integers(0, 10**9)


def _judge(sample: object) -> object:
    result = quality.judge(sample, DEFAULT)
    note(f"period={sample.period} noise={sample.noise:.4f} start={sample.loop_start} "  # type: ignore[attr-defined]
         f"end={sample.loop_end} len={len(sample.text)} -> {result}")  # type: ignore[attr-defined]
    return result


@given(family=families, index=indices, seed=seeds, period=periods)
def test_verbatim_loops_are_caught(family: str, index: int, seed: int, period: int) -> None:
    sample = quality.make_loop(family, index, seed, period=period, noise=0.0)
    assert _judge(sample).outcome == "caught"  # type: ignore[attr-defined]


def _noisy_sample(low: float, high: float) -> list[object]:
    """400 loops of the probe (seeds 1 and 2, 100 per script each), noise uniform in [low, high)."""
    out = []
    for seed in (1, 2):
        for family in quality.LOOPS:
            for index in range(100):
                noise = random.Random(f"{seed}-{family}-{index}").uniform(low, high)
                out.append(quality.make_loop(family, index, seed, noise=noise))
    return out


def test_noisy_loops_up_to_2_percent_are_caught() -> None:
    missed = [(s.family, s.index, s.period, round(s.noise, 4))  # type: ignore[attr-defined]
              for s in _noisy_sample(0.001, 0.02) if quality.judge(s, DEFAULT).outcome != "caught"]
    assert missed == []


def test_noisy_loops_of_2_to_5_percent_floor() -> None:
    """Not all are caught yet (issue 6 asks for all): 376 of these 400 were when this was written
    -- the misses are loops only three copies long at 4-5 % noise, and units with an inner repeat
    ("the the the") whose nearest lag is the inner one.  The floor keeps that from getting worse."""
    caught = sum(quality.judge(s, DEFAULT).outcome == "caught" for s in _noisy_sample(0.02, 0.05))
    assert caught >= 376


@given(family=st.sampled_from(sorted(quality.LEGIT)), index=indices, seed=seeds)
def test_legitimate_texts_are_not_flagged(family: str, index: int, seed: int) -> None:
    sample = quality.make_legit(family, index, seed)
    assert _judge(sample).outcome == "clean"  # type: ignore[attr-defined]
