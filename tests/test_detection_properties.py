"""Issue 6's properties of the ``default`` profile, on the generators of ``benchmarks/quality.py``.

* Loops injected into prose at a random offset -- period 1-4000 code points, ASCII and CJK, with
  or without recovery prose after them -- are caught (fire after ``first_repeat``, before the loop
  ends): verbatim ones and ones with up to 5 % character noise (substitutions, insertions,
  deletions over every copy after the first) on hypothesis examples, and every loop of a fixed
  sample with 2-5 % noise.
* Generated legitimate texts -- prose (English, Chinese), Python and Go code, Markdown tables,
  CSV, logs, YAML, hex dumps, numbered lists, JSON Lines -- are never flagged.

The generators are checked on their own in ``tests/test_quality_probe.py``; the probe's
rates over nine seeds are in ``docs/detection.md``.  The loops are short (three copies, at
least 600 code points, plus 200-600): at 5 % noise a loop's window of two copies is about
80-90 % covered, at the edge of N's coverage rule (0.82).
Measured with the compiled core: 0 missed of 24,000 random loops at 4-5 % noise, of 6,000 at
0.1-4 % and of 40,000 hypothesis examples at 0.1-5 % (docs/detection.md).
"""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, note
from hypothesis import strategies as st

import loopcore
from loopguard import TextConfig
from test_quality_probe import quality

pytestmark = pytest.mark.skipif("cython" not in loopcore.implementations(), reason="the compiled core is not built")

DEFAULT = TextConfig()

periods = st.floats(0.0, math.log(4000)).map(lambda x: max(1, min(4000, round(math.exp(x)))))  # log-uniform
families = st.sampled_from(quality.LOOPS)
seeds = st.sampled_from([1, 2, 3])  # each seed builds its prose pools once (cached); texts vary by index
indices = st.integers(0, 10**9)


def _judge(sample: object) -> object:
    result = quality.judge(sample, DEFAULT)
    note(
        f"period={sample.period} noise={sample.noise:.4f} start={sample.loop_start} "  # type: ignore[attr-defined]
        f"end={sample.loop_end} len={len(sample.text)} -> {result}"
    )  # type: ignore[attr-defined]
    return result


@given(family=families, index=indices, seed=seeds, period=periods)
def test_verbatim_loops_are_caught(family: str, index: int, seed: int, period: int) -> None:
    sample = quality.make_loop(family, index, seed, period=period, noise=0.0)
    assert _judge(sample).outcome == "caught"  # type: ignore[attr-defined]


@given(family=families, index=indices, seed=seeds, period=periods, noise=st.floats(0.001, 0.05))
def test_noisy_loops_up_to_5_percent_are_caught(family: str, index: int, seed: int, period: int, noise: float) -> None:
    sample = quality.make_loop(family, index, seed, period=period, noise=noise)
    assert _judge(sample).outcome == "caught"  # type: ignore[attr-defined]


def test_noisy_loops_of_2_to_5_percent_fixed_sample() -> None:
    """All of these 400 loops (the probe's, seeds 1 and 2, 100 per script each, noise uniform in
    [2 %, 5 %)) are caught.  Before N's two-periods-back seeds, pending period, mean period,
    short-period tolerance and digit-against-digit stop, 3 of them were missed (noisy windows
    just under 82 % coverage); these are the loops hypothesis found first."""
    missed = []
    for seed in (1, 2):
        for family in quality.LOOPS:
            for index in range(100):
                noise = random.Random(f"{seed}-{family}-{index}").uniform(0.02, 0.05)
                sample = quality.make_loop(family, index, seed, noise=noise)
                if quality.judge(sample, DEFAULT).outcome != "caught":
                    missed.append((seed, family, index))
    assert missed == []


@given(family=st.sampled_from(sorted(quality.LEGIT)), index=indices, seed=seeds)
def test_legitimate_texts_are_not_flagged(family: str, index: int, seed: int) -> None:
    sample = quality.make_legit(family, index, seed)
    assert _judge(sample).outcome == "clean"  # type: ignore[attr-defined]
