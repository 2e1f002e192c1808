"""Small helpers for the detector tests."""

from __future__ import annotations

import random
from collections.abc import Sequence

from loopguard import TextConfig, TextLoopDetector


def detect(
    text: str,
    config: TextConfig | str = "default",
    impl: str | None = None,
    *,
    channel: str = "text",
    cuts: Sequence[int] | None = None,
) -> list[dict]:
    """Detections (as dicts) of ``text`` fed in pieces split at ``cuts`` (sorted offsets)."""
    det = TextLoopDetector(config, implementation=impl)
    found = []
    last = 0
    for cut in cuts or ():
        found += det.feed(text[last:cut], channel)
        last = cut
    found += det.feed(text[last:], channel)
    found += det.finish()
    return [_as_dict(d) for d in found]


def _as_dict(d) -> dict:
    """``Detection.to_dict()`` without ``strength`` when it is ``"strong"`` (every kind but a
    weak ``near_cycle``: tests of the other rules compare whole dicts)."""
    out = d.to_dict()
    if out["strength"] == "strong":
        del out["strength"]
    return out


def random_cuts(length: int, seed: int, mean: int = 5) -> list[int]:
    rng = random.Random(seed)
    cuts, at = [], 0
    while True:
        at += rng.randint(1, 2 * mean)
        if at >= length:
            return cuts
        cuts.append(at)


def noise_cjk(n: int, seed: int) -> str:
    """High-diversity text with no repeats worth the name: random CJK ideographs."""
    rng = random.Random(seed)
    return "".join(chr(0x4E00 + rng.randrange(20000)) for _ in range(n))


def letters(n: int, alphabet: str, seed: int) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice(alphabet) for _ in range(n))


def smallest_period(s: str) -> int:
    """By definition: the smallest p >= 1 with s[i] == s[i+p] for all i."""
    for p in range(1, len(s) + 1):
        if all(s[i] == s[i + p] for i in range(len(s) - p)):
            return p
    return len(s)
