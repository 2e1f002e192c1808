"""Small helpers for the detector tests."""

from __future__ import annotations

import random
import threading
from collections.abc import Sequence
from typing import Any

from loopguard import TextConfig, TextLoopDetector

#: A small config: every window, ring and buffer boundary is crossed by short texts (the parity
#: tests and ``benchmarks/fuzz_core.py``).
TINY = TextConfig(
    "default",
    check_every=7,
    min_chars=40,
    window=40,
    history=90,
    lowdiv_window=60,
    ngram=3,
    lowdiv_max_unique=12,
    lowdiv_min_repeat=4,
    slide_window=20,
    slide_step=6,
    slide_max_unique=8,
    slide_min_repeat=2,
    cycle_min_period=2,
    cycle_max_period=60,
    cycle_min_copies=2,
    cycle_min_chars=12,
    cycle_scan_chars=150,
    pool_window=6,
    pool_max_phrase_chars=10,
    pool_min_occurrences=2,
)


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


def hold_feeds(stream: Any) -> tuple[threading.Event, threading.Event]:
    """Make the reference ``ChannelStream``'s feeds wait inside the stream (its ``_take``) until
    ``release`` is set; ``started`` is set when one is waiting.  Returns ``(started, release)``."""
    started, release = threading.Event(), threading.Event()
    original = stream._take

    def slow_take(pos: Any, ch: Any, out: Any) -> Any:
        started.set()
        release.wait(5)
        return original(pos, ch, out)

    stream._take = slow_take
    return started, release
