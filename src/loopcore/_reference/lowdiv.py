"""L and S -- low diversity, at the tail and sliding (spec §2.2, §2.3; seed 002 ①b and ①b-2).

A window of ``t`` holds when it has few distinct code points and one ``ngram``-gram recurs
often in it (:func:`max_ngram`): chants, short-sentence rotations, noisy loops -- unless it is a
data run (a hex dump: :func:`data_share_exceeds`) or an art run (a banner: :func:`art_run`).
L (:class:`LowdivTail`) looks at the last ``lowdiv_window`` code points, S
(:class:`LowdivSliding`) at every window of ``slide_window`` code points ending at a multiple
of ``slide_step``.

>>> max_ngram("abcabcabc", 3), art_run("=#=#=|=#=#=|", 0.5), art_run("!!!!!!", 0.5)
(3, True, False)
"""

from __future__ import annotations

from collections import Counter

from .buffer import Buffer
from .chars import Found
from .params import Params

#: Characters of hex/byte dumps (xxd, od, hexdump): hex digits, blanks, ``.`` and ``:``.
DATA_CHARS = frozenset("0123456789abcdefABCDEF \t\r\n.:")


#: A data run uses at least this many different :data:`DATA_CHARS` (a dump's offsets and bytes);
#: fewer is a flood of one or two symbols (``eeee``, ``3 3 3``), which stays a loop.
DATA_MIN_DISTINCT = 8


def data_share_exceeds(w: str, max_share: float) -> bool:
    """Whether ``w`` is a data run: more than ``max_share`` of it :data:`DATA_CHARS`, of at
    least :data:`DATA_MIN_DISTINCT` different ones (a hex dump).  L and S hold back on data
    runs; ``max_share`` 1.0 never holds back."""
    data = [ch for ch in w if ch in DATA_CHARS]
    return len(data) > max_share * len(w) and len(set(data)) >= DATA_MIN_DISTINCT


#: An art run uses at least this many different symbols (neither alphanumeric nor blank: a
#: banner's ``# = |``); fewer is a flood of one or two symbols (``!!!!``, ``. . .``), which stays
#: a loop.
ART_MIN_SYMBOLS = 3


def art_run(w: str, max_alnum: float) -> bool:
    """Whether ``w`` is an art run (ASCII art, banners, box drawing): fewer than ``max_alnum``
    of it alphanumeric and at least :data:`ART_MIN_SYMBOLS` different symbols.  L and S hold
    back on art runs; ``max_alnum`` 0 never holds back."""
    if max_alnum <= 0:
        return False
    alnum = sum(1 for ch in w if ch.isalnum())
    symbols = {ch for ch in w if not ch.isalnum() and not ch.isspace()}
    return alnum < max_alnum * len(w) and len(symbols) >= ART_MIN_SYMBOLS


def max_ngram(w: str, k: int) -> int:
    """How often the most frequent ``k``-gram of ``w`` occurs (all positions, overlapping)."""
    counts = Counter(w[i : i + k] for i in range(len(w) - k + 1))
    return max(counts.values(), default=0)


class LowdivTail:
    """L -- the last ``lowdiv_window`` code points, at a checkpoint with ``n >= min_chars``:
    fewer than ``lowdiv_max_unique`` distinct ones and an ``ngram``-gram at least
    ``lowdiv_min_repeat`` times, not a data run (``lowdiv_max_data_share``) nor an art run
    (``lowdiv_art_max_alnum``).  ``start = cut`` = the window's start.  Evidence: ``unique``,
    ``max_ngram``."""

    def __init__(self, params: Params, buffer: Buffer) -> None:
        self.params, self.buffer = params, buffer

    def check(self, t: str, final: bool) -> Found | None:
        n = len(t)
        if n < self.params.min_chars:
            return None
        lo = max(0, n - self.params.lowdiv_window)
        w = t[lo:]
        unique = len(set(w))
        if unique >= self.params.lowdiv_max_unique:
            return None
        top = max_ngram(w, self.params.ngram)
        if top < self.params.lowdiv_min_repeat:
            return None
        if data_share_exceeds(w, self.params.lowdiv_max_data_share) or art_run(w, self.params.lowdiv_art_max_alnum):
            return None
        at = self.buffer.map(lo)
        return at, at, {"unique": unique, "max_ngram": top}


class LowdivSliding:
    """S -- the windows ``t[e-slide_window:e]`` for ``e = slide_window, slide_window +
    slide_step, ...`` up to ``n``, and at the end of the stream one more ending at ``n`` when
    ``n`` is not on that grid: a window fires with fewer than ``slide_max_unique`` distinct code
    points and an ``ngram``-gram at least ``slide_min_repeat`` times, not a data run nor an art
    run (L's keys).  S holds at a checkpoint with ``n >= min_chars`` when any window fired (once
    a window fired S keeps holding); ``start = cut`` = the first firing window's start.
    Evidence: ``unique``, ``max_ngram``, ``window_start``."""

    def __init__(self, params: Params, buffer: Buffer) -> None:
        self.params, self.buffer = params, buffer
        self._windows: dict[int, tuple[bool, int, int]] = {}  # each window's result, by its end

    def _window_fires(self, t: str, end: int) -> tuple[bool, int, int]:
        if end not in self._windows:
            w = t[end - self.params.slide_window : end]
            unique = len(set(w))
            top = max_ngram(w, self.params.ngram) if unique < self.params.slide_max_unique else 0
            fires = (
                unique < self.params.slide_max_unique
                and top >= self.params.slide_min_repeat
                and not data_share_exceeds(w, self.params.lowdiv_max_data_share)
                and not art_run(w, self.params.lowdiv_art_max_alnum)
            )
            self._windows[end] = (fires, unique, top)
        return self._windows[end]

    def check(self, t: str, final: bool) -> Found | None:
        n, size, step = len(t), self.params.slide_window, self.params.slide_step
        ends = list(range(size, n + 1, step))
        if final and n >= size and (n - size) % step:
            ends.append(n)
        for end in ends:
            fires, unique, top = self._window_fires(t, end)
            if fires:
                if n < self.params.min_chars:
                    return None
                at = self.buffer.map(end - size)
                return at, at, {"unique": unique, "max_ngram": top, "window_start": at}
        return None
