"""C -- verbatim cycle (spec §2.4; seed 003 cycle).

For each suffix of the last ``cycle_scan_chars`` code points of ``t``, its smallest period
(:func:`smallest_periods`).  C holds on the longest suffix of at least ``cycle_min_chars`` code
points whose smallest period ``p`` lies in ``[cycle_min_period, cycle_max_period]``, with at
least ``cycle_min_copies`` whole copies of it.  A suffix of a smaller period (``"-----"``,
``"ha ha ha"``) is not a cycle: L and S handle it.

>>> smallest_periods("xabab")  # the suffixes "", "b", "ab", "bab", "abab", "xabab"
[0, 1, 2, 2, 2, 5]
"""

from __future__ import annotations

from .buffer import Buffer
from .chars import Found
from .params import Params


def smallest_periods(s: str) -> list[int]:
    """``q[L]`` = smallest period of the suffix of ``s`` of length ``L``.

    Computed with the prefix function of the reversed string: the suffix of
    length ``L`` reversed is the prefix of length ``L`` of ``s[::-1]``, whose
    smallest period is ``L - pi[L-1]``.  ``q[0]`` is 0.
    """
    r = s[::-1]
    pi = [0] * len(r)
    for i in range(1, len(r)):
        k = pi[i - 1]
        while k and r[i] != r[k]:
            k = pi[k - 1]
        if r[i] == r[k]:
            k += 1
        pi[i] = k
    return [0] + [length - pi[length - 1] for length in range(1, len(r) + 1)]


class Cycle:
    """C: ``start`` = the suffix's start, ``cut`` = one period later (the first copy is kept).
    Evidence: ``period``, ``copies``, ``length``."""

    def __init__(self, params: Params, buffer: Buffer) -> None:
        self.params, self.buffer = params, buffer

    def check(self, t: str, final: bool) -> Found | None:
        n = len(t)
        span = min(n, self.params.cycle_scan_chars)
        q = smallest_periods(t[n - span :])
        for length in range(span, 0, -1):
            p = q[length]
            if (
                length >= self.params.cycle_min_chars
                and self.params.cycle_min_period <= p <= self.params.cycle_max_period
                and length >= self.params.cycle_min_copies * p
            ):
                start = n - length
                evidence = {"period": p, "copies": length // p, "length": length}
                return self.buffer.map(start), self.buffer.map(start + p), evidence
        return None
