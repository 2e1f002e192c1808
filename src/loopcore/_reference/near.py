"""N -- near-verbatim cycle (spec §2.7 ``default``; loopguard's own detector).

Loops of real models are rarely verbatim: a counter changes, a word is swapped, punctuation
drifts.  N finds the period from repeated k-grams (*anchors*, chosen by content:
:func:`near_anchors`) and measures how much of the recent text is a copy of the text one
period earlier across small edits (:func:`near_extend`); it also catches restarts (copies of
varying length) and holds back on machine records (:mod:`.records`).  The full rule is
:meth:`NearCycle.check`'s docstring.

>>> near_tolerance(100, 10), near_multiple(61, 20, 2), near_multiple(70, 20, 2)
(10, True, False)
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from .buffer import Buffer
from .chars import _DIGITS, Found
from .params import Params
from .records import record_chars

#: N indexes a k-gram when its key is the smallest of the last ``NEAR_WINNOW`` keys
#: (winnowing): about one position in four on prose, at least one per copy of any
#: period up to four, and the same positions in every copy of a loop.
NEAR_WINNOW = 6
_HB = 0x9E3779B97F4A7C15
_M64 = (1 << 64) - 1


def near_packed(t: str, i: int, k: int) -> int:
    """The k-gram ending at ``i`` packed into an integer:
    ``sum(ord(t[i-j]) << 8*j for j < k) mod 2**min(8k, 64)`` (exact for Latin-1 and
    ``k <= 8``, a hash otherwise)."""
    h = 0
    for j in range(k):
        h += ord(t[i - j]) << (8 * j)
    return h & ((1 << min(8 * k, 64)) - 1)


def near_key(t: str, i: int, k: int) -> int:
    """The anchor key of the k-gram ending at ``i``: the top 16 bits of
    ``near_packed * HB mod 2**64`` (``HB`` = 0x9E3779B97F4A7C15)."""
    return ((near_packed(t, i, k) * _HB) & _M64) >> 48


def near_anchors(t: str, k: int, lo: int, n: int) -> list[int]:
    """The anchor positions ``i`` in ``[lo, n)`` (``i >= k - 1``) for N: ``near_key`` of
    ``i`` is at most that of each of the ``NEAR_WINNOW - 1`` previous positions that end
    a k-gram (ties count, so a period-1 flood anchors everywhere)."""
    start = max(k - 1, lo)
    keys = {j: near_key(t, j, k) for j in range(max(k - 1, start - NEAR_WINNOW + 1), n)}
    return [i for i in range(start, n) if all(keys[i] <= keys[j] for j in range(max(k - 1, i - NEAR_WINNOW + 1), i))]


#: N's right extension skips at most this many edited code points at a time.
NEAR_GAP = 8
#: An exact piece of N's walk this long (or as long as its lag, when that is shorter) is a whole
#: copy equal to the one before it: the copies stopped changing.
NEAR_WHOLE_CAP = 300
#: ... and at least this long, whatever the lag: for a short period a whole copy is many copies
#: in a row (a list of two values, ``true, false, true, ...``, repeats a short stretch by chance).
NEAR_WHOLE_MIN = 48

#: N's smallest lag tolerance: an insertion and a deletion between two copies.
NEAR_MIN_TOL = 2
#: ... and for periods of 16 or more (a quarter of the period below that) at least this much: a
#: cluster of insertions or deletions in a short noisy unit shifts its lag by a few code points.
NEAR_SHORT_TOL = 4
#: Each copy segment N's coverage walk finds from a new seed costs this many code points of
#: coverage: a template (code's switch arms, log lines) is many short copies between its
#: varying slots, a noisy loop a few long copies across small edits.
NEAR_SEED_COST = 2
#: A pending period whose window is at least this share covered stays pending one checkpoint
#: more (a short noisy loop grows into its window over two or three checkpoints).
NEAR_PENDING_KEEP = 0.5

#: N tries this many lags: the most frequent nearest lag, then the most voted others (a unit
#: with an inner repeat, "the the the", makes the inner lag the most frequent nearest one).
NEAR_CANDIDATES = 3
#: ... where each anchor votes for the lags of its first ``NEAR_VOTES`` earlier occurrences,
#: when at least ``NEAR_VOTE_GATE`` of the block's anchors occurred before (prose: about half).
NEAR_VOTES = 4
NEAR_VOTE_GATE = 0.7
#: A voted period above this many code points (its window, two periods, is long to walk) is
#: tried only when at least ``NEAR_LONG_VOTE_GATE`` of the block's anchors occurred before: a
#: long loop in full swing repeats all of its block; structured text (LaTeX, tables) repeats much
#: of it and voted long lags across it.
NEAR_LONG_VOTE = 500
NEAR_LONG_VOTE_GATE = 0.95


def near_extend(
    t: str, e: int, n: int, q: int, p: int, tol: int, k: int, link: int, c: int = 0, run: list[int] | None = None
) -> tuple[int, int]:
    """Extend a copy of ``t`` at lag ``q`` rightwards from ``e`` (``t[x] == t[x - q]``)
    across small edits, up to ``n``; returns ``(end, gaps)``.

    At a mismatch at ``x`` (compared at the current lag ``c``, first ``c`` if given, else
    ``q``) it resynchronises at the first ``(g, L)`` in the order ``g = 0, 1, ... NEAR_GAP``
    then ``L = q, q + 1, q - 1, q + 2, q - 2, q + p, q + p + 1, q + p - 1, q + p + 2,
    q + p - 2`` (not ``g = 0, L = c``; ``q ± 2``: two insertions or deletions close together;
    two periods back is this copy's lag ``q`` plus the previous copy's, about ``p``: ``2q``
    misses it when the previous copy's edits shifted ``q``) for which
    ``t[x+g : x+g+k] == t[x+g-L : x+g-L+k]``, with ``|L - p| <= tol`` (one period back: a
    substitution, insertion or deletion in either copy; ``q`` becomes ``L``) or
    ``|L - 2p| <= 2 tol`` and ``L <= link`` (two periods back: the copy one period back was
    edited there);
    ``L`` becomes the current lag.  The ``g`` skipped code points count as ``gaps`` (not
    covered).  It stops where no resynchronisation fits and at a mismatch of an ASCII digit
    against an ASCII digit (numbers that change make an enumeration -- a table, a counter --
    not a noisy copy; a digit against a letter is an edit) -- unless ``t[e - c:e]`` is all
    digits (the copy itself is a number, as in ``197197197``: a loop of digits, not a field).

    ``run``, when given, is ``[piece_start, longest, whole]``: the exact piece ending at the
    first mismatch started at ``piece_start``; ``longest`` becomes the longest exact piece (a
    stretch with ``t[x] == t[x - lag]`` throughout, at one lag) seen, ``whole`` true once a
    piece is at least as long as its lag (a whole copy equal to the one before it; at most
    :data:`NEAR_WHOLE_CAP`, at least :data:`NEAR_WHOLE_MIN` code points), and each
    resynchronisation starts a new piece where its k-gram begins.
    """
    gaps, c = 0, c or q
    while e < n:
        if t[e] == t[e - c]:
            e += 1
            continue
        if run is not None:  # an exact piece ends here
            run[1] = max(run[1], e - run[0])
            run[2] = run[2] or e - run[0] >= max(min(c, NEAR_WHOLE_CAP), NEAR_WHOLE_MIN)
        if t[e] in _DIGITS and t[e - c] in _DIGITS and not all(ch in _DIGITS for ch in t[e - c : e]):
            return e, gaps  # a number that changes: an enumeration, not noise
        for g in range(NEAR_GAP + 1):
            a = e + g
            hit = next(
                (
                    L
                    for L in (q, q + 1, q - 1, q + 2, q - 2, q + p, q + p + 1, q + p - 1, q + p + 2, q + p - 2)
                    if (g > 0 or L != c)
                    and (abs(L - p) <= tol or (abs(L - 2 * p) <= 2 * tol and L <= link))
                    and L >= 1
                    and a + k <= n
                    and a - L >= 0
                    and t[a : a + k] == t[a - L : a - L + k]
                ),
                0,
            )
            if hit:
                break
        else:
            return e, gaps
        gaps += g
        e, c = a + k, hit
        if run is not None:  # the next exact piece begins at the resynchronisation
            run[0] = a
        if abs(hit - p) <= tol:
            q = hit
    if run is not None:
        run[1] = max(run[1], e - run[0])
        run[2] = run[2] or e - run[0] >= max(min(c, NEAR_WHOLE_CAP), NEAR_WHOLE_MIN)
    return e, gaps


def near_walk_back(t: str, cut: int, p: int, floor: int) -> int:
    """N's cut moved back while the code point before it equals the one a period before that:
    ``cut -= 1`` while ``cut - 1 - p >= floor`` and ``t[cut - 1] == t[cut - 1 - p]`` (the loop
    began before the window N measured; the cut lands on the start of its second copy, so one
    copy is kept).  ``floor`` bounds the walk to the text both implementations keep (a window
    and a link before the checkpoint).

    >>> near_walk_back("x" + "ab" * 10, 15, 2, 0)
    3
    """
    while cut - 1 - p >= floor and t[cut - 1] == t[cut - 1 - p]:
        cut -= 1
    return cut


#: The lag share counts a nearest lag within the tolerance of up to this many periods: where a
#: copy was edited, the k-grams there (and the anchors they select) next occur one or more
#: copies further back.  A short unit at 5 % noise has an edit in most copies: about half of a
#: block's anchors recur at all, and only 0.1-0.3 of them at one period.
NEAR_MULTIPLES = 4


def near_multiple(d: int, p: int, tol: int) -> bool:
    """Whether the lag ``d`` is within ``tol`` of ``m * p`` for some ``1 <= m <=
    NEAR_MULTIPLES``."""
    return any(abs(d - m * p) <= tol for m in range(1, NEAR_MULTIPLES + 1))


def near_tolerance(period: int, divisor: int) -> int:
    """N's lag tolerance for ``period``: ``max(NEAR_MIN_TOL, min(NEAR_SHORT_TOL, period // 4),
    period // divisor)`` code points."""
    return max(NEAR_MIN_TOL, min(NEAR_SHORT_TOL, period // 4), period // divisor)


class NearCycle:
    """N's state across checkpoints: the period it holds, a pending period, and whether its
    last window walk found a whole copy (the strength of a detection)."""

    def __init__(self, params: Params, buffer: Buffer) -> None:
        self.params, self.buffer = params, buffer
        self._near_hold = 0  # the period N held at the previous checkpoint (0: it did not)
        self._near_pending = 0  # a period whose window fell short at the previous checkpoint
        self._near_covered = 0
        self._near_exact = 0  # the longest exact piece of the last window walk
        self._near_whole = False  # ... and whether one was a whole copy (as long as its lag)
        self._near_whole_prev = False  # N held with a whole copy at the previous checkpoint

    def check(self, t: str, final: bool) -> Found | None:
        """N -- a near-verbatim cycle: copies of a period p with small edits (spec §2.7 default).

        ``k = near_ngram``; the k-gram ending at ``i`` is ``t[i-k+1:i+1]``.  Only *anchor*
        k-grams are indexed (:func:`near_anchors`: about one position in
        :data:`NEAR_WINNOW`, chosen by content, so copies share their anchors).

        1. Lag: for each anchor ``i`` since the previous checkpoint (``b0 <= i < n``; the
           last ``check_every`` positions, fewer at the end of the stream),
           the distance to the most recent earlier anchor ending the same k-gram (at most
           ``link = lim + near_tolerance(lim)`` back, ``lim = near_max_period +
           near_tolerance(near_max_period)``), counted when
           within ``[near_min_period, lim]`` (a period of ``near_max_period`` with insertions
           has lags a little above it).  ``p`` = the most frequent counted
           lag (ties: the smallest), then ``p`` = the mean (rounded, halves up) of the counted lags
           within its tolerance (edits scatter a noisy loop's lags around the period);
           ``tol = near_tolerance(p)``.  Needs at least
           ``near_min_lag_share * anchors`` counted lags within ``tol`` of a multiple of ``p``
           (:func:`near_multiple`: up to :data:`NEAR_MULTIPLES` periods back).  When that
           ``p`` fails this or step 2 (not step 3) and at least :data:`NEAR_VOTE_GATE` of the
           block's anchors occurred before (within ``link``), :data:`NEAR_CANDIDATES` - 1 more
           lags are tried in turn: the most voted other lags, each anchor voting for the lags of its
           first :data:`NEAR_VOTES` earlier occurrences (each at most ``link`` before the
           next, within ``[near_min_period, lim]``; at most ``min(check_every, lim)``
           distinct lags, the first met; ties: the
           smallest), each
           needing ``near_min_lag_share`` of the block's anchors to occur earlier at a lag
           within its tolerance: a unit with an inner repeat ("the the the") makes the inner
           lag the most frequent nearest one.
        2. Coverage: the window ``t[n-w:n]``, ``w = max(2p, near_min_window)`` (two copies
           after the first).  An anchor ``i`` of the window *matches* at lag ``c`` when the
           nearest earlier anchor ``j`` ending the same k-gram with ``|i - j - p| <= tol``
           has ``c = i - j`` (an insertion or deletion shifts the lag a little; ``q = c``), or
           else, when the copy one period back was edited there, the nearest with
           ``|i - j - 2p| <= 2 tol`` and ``i - j <= link`` (``q = c // 2``).  Walking the
           matching anchors left to right, each one not yet covered *seeds* a segment: its
           k-gram extended left (down to what is covered already) while ``t[x] == t[x - c]``
           and right across small edits (:func:`near_extend` at lag ``q``, comparing at ``c``
           first).  Each segment adds its length less its skipped code points and
           :data:`NEAR_SEED_COST`.  Needs ``covered >= near_min_coverage * w``.  When it
           falls short, the last segment of at least ``2k`` ends at ``end`` with
           ``2k <= n - end < check_every`` (the copies stopped inside the last block) and
           ``covered + (n - end)`` could reach it, the window ``t[end-w:end]`` is walked
           instead (what a checkpoint at ``end`` would have seen).
        3. Records: holds back when ``record_chars >= near_max_record_share * w``
           (:func:`is_record_line`).

        ``cut`` = the start of the window's first segment at least ``2k`` long (the second
        copy: one copy is kept; a lone k-gram recurs by chance), ``start = max(0, cut - p)``.
        Evidence: ``period``, ``coverage``.

        Pending: when the first lag passes its share (or a voted one) but its window falls
        short (not records), the next checkpoint first tries the window at that period (after
        the held one): a noisy loop's lags scatter, so its block may not pass the share when
        its window would.  A pending window that falls short again but is at least
        :data:`NEAR_PENDING_KEEP` covered stays pending.

        Holding: when N held at the previous checkpoint with period ``p <= lim``, steps 2-3 at
        that ``p`` come first (a loop in progress stays one episode even when a block's anchors
        are few or its lags scattered).

        When that does not fire, the *recurrence* check (restarts: copies whose lengths vary,
        such as a sentence re-emitted cut at different words), if at least
        ``near_min_recurrence`` of the anchors since the previous checkpoint have an earlier
        anchor ending the same k-gram within ``link``: the window
        ``t[n-wr:n]``, ``wr = near_recurrence_window``, walked as above but each anchor
        extended exactly (no edits) at its own lag, the distance to the nearest earlier anchor
        ending the same k-gram (within ``link``); a segment counts when it is at least ``2k``
        long.  Fires when ``covered >= near_min_recurrence * wr`` and the window is not
        mostly record lines; ``period`` is then the lag of the first segment, which starts
        at ``cut``.
        """
        n, k = len(t), self.params.near_ngram
        if n < self.params.near_min_window or n < k:
            return None
        max_p, div = self.params.near_max_period, self.params.near_tolerance
        lim = max_p + near_tolerance(max_p, div)
        link = lim + near_tolerance(lim, div)  # how far back an anchor is linked
        # + 2 link: a recurrence seed's source anchor and the occurrence before it
        reach = (
            max(2 * lim, self.params.near_min_window, self.params.near_recurrence_window)
            + 2 * link
            + self.params.check_every
            + k
        )
        first = max(k - 1, n - reach)
        anchors = near_anchors(t, k, first, n)
        ends: dict[str, list[int]] = {}
        for i in anchors:
            ends.setdefault(t[i - k + 1 : i + 1], []).append(i)

        def before(i: int) -> list[int]:
            """Earlier anchors ending the k-gram that ends at anchor ``i``, nearest first."""
            return [j for j in reversed(ends[t[i - k + 1 : i + 1]]) if j < i]

        found: Found | None = None
        if 0 < self._near_hold <= lim:  # a loop N holds on: its window at the same period, first
            p = self._near_hold
            window = self._near_window(t, anchors, before, p, near_tolerance(p, div), link)
            found = None if isinstance(window, str) else window  # "no", "records": none
        pending, self._near_pending = self._near_pending, 0
        if found is None and 0 < pending <= lim and pending != self._near_hold:
            window = self._near_window(t, anchors, before, pending, near_tolerance(pending, div), link)
            if window == "no" and self._near_covered >= self._pending_min(pending):
                self._near_pending = pending  # a loop still growing into its window: once more
            found = None if isinstance(window, str) else window
        if found is None:
            found = self._near_periodic(t, anchors, before, lim, link) or self._near_recurrence(
                t, anchors, before, link
            )
        self._near_hold = found[2]["period"] if found else 0
        # strong: a whole copy equal to the one before it, at this checkpoint and the previous one
        whole = found is not None and found[2]["strong"]
        if found is not None:  # a block of new text confirms (not the end of the stream)
            found[2]["strong"] = whole and self._near_whole_prev and n % self.params.check_every == 0
        self._near_whole_prev = whole
        return found

    def _pending_min(self, p: int) -> float:
        """The coverage a window at period ``p`` needs to become or stay pending: half of it
        (:data:`NEAR_PENDING_KEEP`), and no less than one block short of passing (a window
        gains at most a block of coverage per checkpoint)."""
        w = max(2 * p, self.params.near_min_window)
        return float(max(NEAR_PENDING_KEEP * w, self.params.near_min_coverage * w - self.params.check_every))

    def _near_periodic(self, t: str, anchors: list[int], before: Any, lim: int, link: int) -> Found | None:
        n, k = len(t), self.params.near_ngram
        div = self.params.near_tolerance
        b0 = max(k - 1, n - (n % self.params.check_every or self.params.check_every))
        block = [i for i in anchors if i >= b0]
        lags = []
        for i in block:
            earlier = before(i)
            if earlier and i - earlier[0] <= link and self.params.near_min_period <= i - earlier[0] <= lim:
                lags.append(i - earlier[0])
        if not lags:
            return None
        counts = Counter(lags)
        mode = min(counts, key=lambda d: (-counts[d], d))
        near = [d for d in lags if abs(d - mode) <= near_tolerance(mode, div)]
        p = (2 * sum(near) + len(near)) // (2 * len(near))  # their mean, rounded (halves up)
        tol = near_tolerance(p, div)
        if sum(1 for d in lags if near_multiple(d, p, tol)) >= self.params.near_min_lag_share * len(block):
            found = self._near_window(t, anchors, before, p, tol, link)
            if found != "no":
                return None if isinstance(found, str) else found  # "records": held back
            if self._near_covered >= self._pending_min(p):
                self._near_pending = p  # close: the loop may be growing into its window
        recurring = sum(1 for i in block if before(i) and i - before(i)[0] <= link)
        if recurring < NEAR_VOTE_GATE * len(block):
            return None  # the votes only where the block's k-grams mostly repeat
        # each anchor: the lags of its first NEAR_VOTES earlier occurrences; at most ``cap``
        # distinct lags (the first met, anchors in order, nearest occurrence first)
        votes: dict[int, int] = {}
        cap = min(self.params.check_every, lim)
        for i in block:
            newer = i
            for j in before(i)[:NEAR_VOTES]:
                if newer - j > link or i - j > lim:
                    break
                d = i - j
                if d >= self.params.near_min_period and d != p and (d in votes or len(votes) < cap):
                    votes[d] = votes.get(d, 0) + 1
                newer = j
        for p in sorted(votes, key=lambda d: (-votes[d], d))[: NEAR_CANDIDATES - 1]:
            if p > NEAR_LONG_VOTE and recurring < NEAR_LONG_VOTE_GATE * len(block):
                continue  # a long period's window (2p) is walked only where the block all repeats
            tol = near_tolerance(p, div)
            within = sum(1 for i in block if any(abs(i - j - p) <= tol for j in before(i)))
            if within >= self.params.near_min_lag_share * len(block):
                found = self._near_window(t, anchors, before, p, tol, link)
                if not isinstance(found, str):  # not "no", not "records"
                    return found
                if found == "no" and not self._near_pending and self._near_covered >= self._pending_min(p):
                    self._near_pending = p
        return None

    def _near_window(self, t: str, anchors: list[int], before: Any, p: int, tol: int, link: int) -> Found | str:
        """Steps 2-3 at period ``p``: the detection, or ``"no"``, or ``"records"``."""
        n = len(t)
        w = max(2 * p, self.params.near_min_window)
        self._near_covered = 0  # the covered code points of the last walk (pending keeps on it)
        if n < w:
            return "no"
        need = self.params.near_min_coverage * w
        # below this the walk's exact coverage decides nothing (it fails here, the retry below
        # and the pending minimum, which is at least this): a walk that can no longer reach it
        # stops (the cost on prose)
        floor = need - self.params.check_every
        covered, cut, end = self._near_cover(t, anchors, before, p, tol, link, n, w, floor)
        hi = n
        k = self.params.near_ngram
        if covered < need and 2 * k <= n - end < self.params.check_every and end >= w and covered + (n - end) >= need:
            # the copies ended inside the last block: the window that ends with them
            hi = end
            covered, cut, end = self._near_cover(t, anchors, before, p, tol, link, hi, w, floor)
        self._near_covered = covered
        if cut < 0 or covered < need:
            return "no"
        if record_chars(t, hi - w, hi) >= self.params.near_max_record_share * w:
            return "records"
        max_p, div = self.params.near_max_period, self.params.near_tolerance
        lim = max_p + near_tolerance(max_p, div)
        span = max(2 * lim, self.params.near_min_window, self.params.near_recurrence_window)
        cut = near_walk_back(t, cut, p, max(0, n - span - link))
        return (
            self.buffer.map(max(0, cut - p)),
            self.buffer.map(cut),
            {"period": p, "coverage": covered / w, "exact": self._near_exact, "strong": self._near_whole},
        )

    def _near_cover(
        self, t: str, anchors: list[int], before: Any, p: int, tol: int, link: int, hi: int, w: int, floor: float = 0.0
    ) -> tuple[int, int, int]:
        """The coverage walk over the window ``t[hi-w:hi]``: ``(covered, cut, end)``: ``cut`` the
        start of the first segment at least ``2k`` long (-1: none), ``end`` the end of the last
        one (``hi - w``: none; shorter segments are chance k-grams, as in the prose after a
        loop).  The walk stops with ``(covered, -1, hi - w)`` as soon as ``covered + (hi -
        done)`` (what it can still reach: a segment walks back at most to ``done``) is below
        ``floor``.  Sets ``_near_exact``: the longest exact piece of the walk (a stretch equal to
        the text one lag back throughout: its segments split at each skipped edit)."""
        k = self.params.near_ngram
        lo = hi - w
        covered, done, cut, last = 0, lo, -1, lo
        run = [lo, 0, False]  # [the current exact piece's start, the longest exact piece, a whole copy]
        for i in anchors:
            if i >= hi:
                break
            if i < max(lo, done):
                continue
            if covered + (hi - done) < floor:
                self._near_exact, self._near_whole = run[1], bool(run[2])
                return covered, -1, lo
            c = next((i - j for j in before(i) if abs(i - j - p) <= tol), 0)
            q = c
            if c == 0:  # the copy one period back was edited here: two periods back
                c = next((i - j for j in before(i) if abs(i - j - 2 * p) <= 2 * tol and i - j <= link), 0)
                q = c // 2
            if c == 0:
                continue
            s = max(lo, i - k + 1)
            while s > max(lo, done) and s - 1 - c >= 0 and t[s - 1] == t[s - 1 - c]:
                s -= 1
            run[0] = s
            e, gaps = near_extend(t, i + 1, hi, q, p, tol, k, link, c, run)
            if cut < 0 and e - s >= 2 * k:  # a k-gram alone recurs by chance (" the ")
                cut = s
            covered += e - max(s, done) - gaps - NEAR_SEED_COST
            if e - s >= 2 * k:
                last = e
            done = e
        self._near_exact, self._near_whole = run[1], bool(run[2])
        return covered, cut, last

    def _near_recurrence(self, t: str, anchors: list[int], before: Any, link: int) -> Found | None:
        n, k, w = len(t), self.params.near_ngram, self.params.near_recurrence_window
        if n < w:
            return None
        b0 = max(k - 1, n - (n % self.params.check_every or self.params.check_every))
        block = [i for i in anchors if i >= b0]
        recurring = sum(1 for i in block if before(i) and i - before(i)[0] <= link)
        if not block or recurring < self.params.near_min_recurrence * len(block):
            return None  # the gate: the block's anchors nearly all occurred before
        lo = n - w
        covered, done, cut, lag, exact, strong = 0, lo, -1, 0, 0, False
        for i in anchors:
            if i < max(lo, done):
                continue
            earlier = before(i)
            if not earlier or i - earlier[0] > link:
                continue
            if len(earlier) < 2 or earlier[0] - earlier[1] > link:
                continue  # the copied k-gram occurred once before: two copies are not a loop
            q = i - earlier[0]
            s = max(lo, i - k + 1)
            while s > max(lo, done) and s - 1 - q >= 0 and t[s - 1] == t[s - 1 - q]:
                s -= 1
            e = i + 1
            while e < n and t[e] == t[e - q]:
                e += 1
            if e - s < 2 * k:
                continue
            if cut < 0:
                cut, lag = s, q
            covered += e - max(s, done)
            exact = max(exact, e - s)
            strong = strong or e - s >= q
            done = e
        if cut < 0 or covered < self.params.near_min_recurrence * w:
            return None
        if record_chars(t, lo, n) >= self.params.near_max_record_share * w:
            return None
        return (
            self.buffer.map(max(0, cut - lag)),
            self.buffer.map(cut),
            {"period": lag, "coverage": covered / w, "exact": exact, "strong": strong},
        )
