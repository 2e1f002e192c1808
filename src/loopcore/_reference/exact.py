"""E -- exact tail repeat (spec §2.1; seed 002 ①a): verbatim paragraph loops.

At a checkpoint with ``n >= min_chars`` and ``window >= 40``, the tail ``t[n-window:n]`` is
searched in the ``history`` code points before it, left to right, each occurrence counted
and the search going on after it (non-overlapping).  E holds when it occurs at least
``repeats - 1`` times there.

A 42-code-point sentence repeated: at the checkpoint at 200 the last 40 code points occur 3
times before them, at 34, 76 and 118; one copy is kept, so the cut is the second:

>>> from loopcore import _params
>>> from loopcore._reference import ChannelStream
>>> params = {**_params.defaults(), "exact_tail": True, "min_chars": 0, "window": 40,
...           "history": 400, "check_every": 100}
>>> stream = ChannelStream(**params)
>>> [(kind, start, cut, evidence) for kind, _, start, cut, evidence
...  in stream.feed("The same forty-odd characters, once more. " * 6)]
[('exact_tail', 34, 76, {'count': 3})]
"""

from __future__ import annotations

from .buffer import Buffer
from .chars import Found
from .params import Params


class ExactTail:
    """E: ``start`` = the first counted occurrence of the tail, ``cut`` = the second if any, else
    the tail's start (one copy is kept).  Evidence: ``count``."""

    def __init__(self, params: Params, buffer: Buffer) -> None:
        self.params, self.buffer = params, buffer

    def check(self, t: str, final: bool) -> Found | None:
        n, w = len(t), self.params.window
        if n < self.params.min_chars or w < 40 or n < w:
            return None
        tail = t[n - w :]
        lo = max(0, n - w - self.params.history)
        region = t[lo : n - w]
        found = []
        i = region.find(tail)
        while i != -1:
            found.append(lo + i)
            i = region.find(tail, i + w)
        if len(found) < self.params.repeats - 1:
            return None
        cut = found[1] if len(found) > 1 else n - w
        return self.buffer.map(found[0]), self.buffer.map(cut), {"count": len(found)}
