# cython: language_level=3
"""N, the near-verbatim cycle (see ``near.pxd``)."""

from libc.stdint cimport int64_t, uint8_t, uint16_t, uint32_t, uint64_t

from loopcore._kernels.buffer cimport Buffer, buf_at, buf_map
from loopcore._kernels.chars cimport cu_t
from loopcore._kernels.common cimport Arena, Event, HB, Params, arena_take, check, cp_t, pow2_at_least
from loopcore._kernels.records cimport record_chars
from loopcore._kernels.table cimport ct_add, ct_clear, ct_free, ct_init

from loopcore import _reference

cdef enum:
    NEAR_CHUNK = 256  # positions N hashes before linking their anchors
    NEAR_GAP = 8
    NEAR_MIN_TOL = 2
    NEAR_SHORT_TOL = 4
    NEAR_CANDIDATES = 3
    NEAR_VOTES = 4
    NEAR_SEED_COST = 2
    NEAR_MULTIPLES = 4
assert (NEAR_GAP, NEAR_WINNOW, NEAR_MIN_TOL, NEAR_SHORT_TOL, NEAR_CANDIDATES, NEAR_VOTES, NEAR_SEED_COST,
        NEAR_MULTIPLES) == (
    _reference.NEAR_GAP, _reference.NEAR_WINNOW, _reference.NEAR_MIN_TOL, _reference.NEAR_SHORT_TOL,
    _reference.NEAR_CANDIDATES, _reference.NEAR_VOTES, _reference.NEAR_SEED_COST, _reference.NEAR_MULTIPLES)
cdef double NEAR_VOTE_GATE = _reference.NEAR_VOTE_GATE
cdef double NEAR_PENDING_KEEP = _reference.NEAR_PENDING_KEEP
cdef Py_ssize_t NEAR_LONG_VOTE = _reference.NEAR_LONG_VOTE
cdef double NEAR_LONG_VOTE_GATE = _reference.NEAR_LONG_VOTE_GATE
cdef int64_t NEAR_WHOLE_CAP = _reference.NEAR_WHOLE_CAP
cdef int64_t NEAR_WHOLE_MIN = _reference.NEAR_WHOLE_MIN
cdef Py_ssize_t RECORD_MAX_LINE = _reference.RECORD_MAX_LINE


cdef Py_ssize_t near_init(NearState* st, const Params* p, Arena* a) noexcept nogil:
    """Set up N in arena ``a`` (its lag table apart); the look-back it needs (code points),
    -1 when out of memory."""
    cdef Py_ssize_t span, reach, size, r
    st.p = p
    for r in range(NEAR_WINNOW - 1):
        st.nkeys[r] = 0x10000
    st.n_lim = p.near_max_period + ntol(st, p.near_max_period)
    st.n_link = st.n_lim + ntol(st, st.n_lim)
    # text compares reach lim + k back; the record scan a window plus one line, the
    # extension a window plus a lag; a window may end up to a block before the checkpoint
    span = max(2 * st.n_lim, p.near_min_window, p.near_recurrence_window)  # the longest window
    reach = st.n_link  # a lag within tolerance
    size = pow2_at_least(st.n_link + 1)
    st.n_sprev = <uint16_t*>arena_take(a, size * sizeof(uint16_t))
    st.n_smask = size - 1
    # hash heads: an eighth as many slots as positions in the link window (winnowing keeps
    # about 2 positions in 7, so ~2.3 anchors a slot).  A chain walks every anchor of its slot
    # back to ``link``, so fewer slots cost longer walks, never other results (12 KiB less than
    # half as many slots, for ~1 % more work)
    size = max(256, min(1 << 16, size // 8))
    st.n_head = <uint32_t*>arena_take(a, size * sizeof(uint32_t))
    st.n_hbits = 0
    while (<Py_ssize_t>1 << st.n_hbits) < size:
        st.n_hbits += 1
    size = pow2_at_least(span + reach + p.check_every + 2)
    st.n_last = <uint16_t*>arena_take(a, size * sizeof(uint16_t))
    st.n_lmask = size - 1
    st.n_pmask = (<uint64_t>1 << (8 * p.near_ngram)) - 1 if p.near_ngram < 8 else <uint64_t>0xFFFFFFFFFFFFFFFF
    if a.base != NULL:
        # a block has at most min(check_every, lim) distinct nearest lags, and the votes
        # are capped at as many distinct lags: half-full at worst
        if ct_init(&st.lags, pow2_at_least(2 * min(p.check_every, st.n_lim) + 2), True) != 0:
            return -1
    return max(st.n_link + p.near_ngram + p.check_every + 1, span + p.check_every + RECORD_MAX_LINE + 3,
               span + p.check_every + reach + 1)


cdef void near_free(NearState* st) noexcept nogil:
    ct_free(&st.lags)


cdef void near_catch_up(NearState* st, const Buffer* bf) noexcept nogil:
    """Chain the k-grams ending at the positions appended since the last checkpoint.

    N is read only at checkpoints, so it runs per block in two tight loops: the first
    hashes every position and lists the anchors (_reference.near_anchors) without a
    branch, the second links each anchor to the previous anchor of the same k-gram
    and counts its lag."""
    cdef int64_t i = st.n_done, stop
    cdef Py_ssize_t idx
    while i < bf.n:
        stop = min(bf.n, i + NEAR_CHUNK)
        idx = <Py_ssize_t>(i - bf.base)
        check(idx - st.n_link - st.p.near_ngram >= 0 or bf.base == 0)
        check(idx >= 0 and stop - bf.base <= bf.blen)
        if bf.width == 1:
            near_chunk(<const uint8_t*>bf.data, idx, stop - i, i, st, bf)
        elif bf.width == 2:
            near_chunk(<const uint16_t*>bf.data, idx, stop - i, i, st, bf)
        else:
            near_chunk(<const uint32_t*>bf.data, idx, stop - i, i, st, bf)
        i = stop
    st.n_done = bf.n

cdef bint near_recurrence(NearState* st, const Buffer* bf, Event* ev) noexcept nogil:
    """_reference.near.NearCycle._near_recurrence: restarts, copies of varying length."""
    cdef int64_t n = bf.n, i, lo, s, e, done, cut = -1, q, lag = 0, base = bf.base, exact = 0
    cdef Py_ssize_t k = st.p.near_ngram, w = st.p.near_recurrence_window, covered = 0
    cdef bint strong = False
    if n < w or n < k or st.n_anchors == 0:
        return False
    if <double>st.n_recurring < st.p.near_min_recurrence * <double>st.n_anchors:
        return False  # the gate: the block's anchors nearly all occurred before
    lo = n - w
    done = lo
    for i in range(max(lo, k - 1), n):
        if i < done:
            continue
        q = st.n_last[i & st.n_lmask]
        if q == 0:
            continue
        if st.n_last[(i - q) & st.n_lmask] == 0:
            continue  # the copied k-gram occurred once before: two copies are not a loop
        s = max(lo, i - k + 1)
        while s > done and s - 1 - q >= 0 and buf_at(bf, <Py_ssize_t>(s - 1 - base)) == \
                buf_at(bf, <Py_ssize_t>(s - 1 - q - base)):
            s -= 1
        e = i + 1
        while e < n and buf_at(bf, <Py_ssize_t>(e - base)) == buf_at(bf, <Py_ssize_t>(e - q - base)):
            e += 1
        if e - s < 2 * k:
            continue
        if cut < 0:
            cut = s
            lag = q
        covered += e - max(s, done)
        if e - s > exact:
            exact = e - s
        if e - s >= q:
            strong = True
        done = e
    if cut < 0 or <double>covered < st.p.near_min_recurrence * <double>w:
        return False
    if <double>record_chars(bf, lo, n) >= st.p.near_max_record_share * <double>w:
        return False
    near_report(st, bf, ev, cut, lag, covered, w, exact, strong)
    return True

cdef void near_report(
    NearState* st, const Buffer* bf, Event* ev, int64_t cut, int64_t period, Py_ssize_t covered,
    Py_ssize_t w, int64_t exact, bint strong,
) noexcept nogil:
    """N's detection: one copy kept before ``cut``; evidence period, coverage, exact, strong."""
    ev.start = buf_map(bf, cut - period if cut > period else 0)
    ev.cut = buf_map(bf, cut)
    ev.ev0 = period
    ev.ev1 = covered
    ev.ev2 = w
    ev.ev3 = exact
    ev.strong = strong
    ev.coverage = <double>covered / <double>w

cdef int64_t near_walk_back(NearState* st, const Buffer* bf, int64_t cut, Py_ssize_t p) noexcept nogil:
    """_reference.near_walk_back down to ``n - span - link`` (what the buffer keeps)."""
    cdef int64_t floor = bf.n - max(2 * st.n_lim, st.p.near_min_window, st.p.near_recurrence_window) - st.n_link
    cdef int64_t base = bf.base
    if floor < 0:
        floor = 0
    while (cut - 1 - p >= floor
           and buf_at(bf, <Py_ssize_t>(cut - 1 - base)) == buf_at(bf, <Py_ssize_t>(cut - 1 - p - base))):
        cut -= 1
    return cut

cdef int64_t near_extend(
    NearState* st, const Buffer* bf, int64_t e, int64_t n, int64_t q, int64_t c, Py_ssize_t p, Py_ssize_t tol,
    int64_t* gaps, int64_t* run,
) noexcept nogil:
    """_reference.near_extend from ``e`` up to ``n`` at lag ``q``, comparing at lag ``c``
    first; returns the end, sets ``gaps``; ``run`` is ``[piece start, longest exact piece,
    a piece as long as its lag]``."""
    if bf.width == 1:
        return near_extend_chunk(<const uint8_t*>bf.data, st, bf, e, n, q, c, p, tol, gaps, run)
    if bf.width == 2:
        return near_extend_chunk(<const uint16_t*>bf.data, st, bf, e, n, q, c, p, tol, gaps, run)
    return near_extend_chunk(<const uint32_t*>bf.data, st, bf, e, n, q, c, p, tol, gaps, run)

cdef bint digits_back(NearState* st, const Buffer* bf, int64_t e, int64_t c) noexcept nogil:
    """Whether ``[e - c, e)`` is all ASCII digits (_reference.near_extend: the copy is itself
    a number).  Cached over one window walk, where ``e`` only grows: each position is read
    at most once per walk."""
    cdef int64_t x, base = bf.base
    cdef cp_t ch
    if st.n_dend < 0:
        st.n_dlo = e
        st.n_dend = e
        st.n_dexact = False
    else:
        x = st.n_dend
        while x < e:
            ch = buf_at(bf, <Py_ssize_t>(x - base))
            if not (48 <= ch <= 57):
                st.n_dlo = x + 1
                st.n_dexact = True
            x += 1
        st.n_dend = e
    while not st.n_dexact and st.n_dlo > e - c:
        ch = buf_at(bf, <Py_ssize_t>(st.n_dlo - 1 - base))
        if 48 <= ch <= 57:
            st.n_dlo -= 1
        else:
            st.n_dexact = True
    return st.n_dlo <= e - c

cdef inline Py_ssize_t ntol(NearState* st, Py_ssize_t p) noexcept nogil:
    """_reference.near_tolerance(p, near_tolerance)."""
    return max(NEAR_MIN_TOL, min(NEAR_SHORT_TOL, p // 4), p // st.p.near_tolerance)

cdef inline int64_t near_lag(const NearState* st, int64_t i, Py_ssize_t p, Py_ssize_t tol) noexcept nogil:
    """The distance ``q`` to the nearest earlier anchor ending the same k-gram as anchor
    ``i`` with ``|q - p| <= tol``, 0 when there is none."""
    cdef int64_t dist = 0
    cdef uint16_t d = st.n_last[i & st.n_lmask]
    while d != 0:
        dist += d
        if dist > p + tol:
            return 0
        if dist >= p - tol:
            return dist
        d = st.n_last[(i - dist) & st.n_lmask]
    return 0


cdef bint near_check(NearState* st, const Buffer* bf, Event* ev) noexcept nogil:
    """N at a checkpoint; starts the next block's lag histogram."""
    cdef bint held = False, whole
    cdef int r
    cdef Py_ssize_t pend = st.n_pend
    near_catch_up(st, bf)
    st.n_pend = 0
    if 0 < st.n_hold <= st.n_lim and bf.n >= st.p.near_min_window and bf.n >= st.p.near_ngram:
        # a loop N holds on: its window at the same period, first
        held = near_window(st, bf, ev, st.n_hold, ntol(st, st.n_hold)) == 1
    if not held and 0 < pend <= st.n_lim and pend != st.n_hold and bf.n >= st.p.near_min_window \
            and bf.n >= st.p.near_ngram:
        # a period whose window fell short at the previous checkpoint (a noisy loop's
        # lags scatter; its window may pass one block later)
        r = near_window(st, bf, ev, pend, ntol(st, pend))
        held = r == 1
        if r == 0 and <double>st.n_covered >= pending_min(st, pend):
            st.n_pend = pend  # a loop still growing into its window: once more
    if not held and bf.n >= st.p.near_min_window and bf.n >= st.p.near_ngram:
        held = near_eval(st, bf, ev) or near_recurrence(st, bf, ev)
    st.n_hold = <Py_ssize_t>ev.ev0 if held else 0
    # strong: a whole copy equal to the one before it, at this checkpoint and the previous one
    whole = held and ev.strong
    if held:  # a block of new text confirms (not the end of the stream)
        ev.strong = whole and st.n_whole_prev and bf.n % st.p.check_every == 0
    st.n_whole_prev = whole
    near_table_clear(st)
    st.n_best = 0
    st.n_mode = 0
    st.n_anchors = 0
    st.n_recurring = 0
    return held

cdef inline double pending_min(NearState* st, Py_ssize_t p) noexcept nogil:
    """_reference.near.NearCycle._pending_min."""
    cdef double w = <double>max(2 * p, st.p.near_min_window)
    return max(NEAR_PENDING_KEEP * w, st.p.near_min_coverage * w - <double>st.p.check_every)

cdef bint near_eval(NearState* st, const Buffer* bf, Event* ev) noexcept nogil:
    """N's periodic check (_reference.near.NearCycle._near_periodic): the most frequent
    nearest lag, then, when its window fails, the most voted other lags."""
    cdef int64_t n = bf.n, i, b0
    cdef Py_ssize_t k = st.p.near_ngram, p, tol, within, r, j, slot, lag
    cdef Py_ssize_t cand[NEAR_CANDIDATES]
    cdef uint32_t votes[NEAR_CANDIDATES]
    cdef Py_ssize_t ncand, p1, m
    cdef int64_t d, d2, sum_c, sum_cd
    if n < st.p.near_min_window or n < k or st.n_best == 0:
        return False
    # the first: the most frequent nearest lag (ties: the smallest), its share counted
    # from the histogram
    # the period: the mean (rounded, halves up) of the nearest lags within the mode's
    # tolerance of the most frequent one (insertions and deletions scatter a noisy loop's lags)
    p = st.n_mode
    tol = ntol(st, p)
    sum_c = 0
    sum_cd = 0
    for j in range(st.lags.nused):
        slot = st.lags.used[j]
        lag = <Py_ssize_t>st.lags.keys[slot]
        if p - tol <= lag <= p + tol:
            sum_c += st.lags.counts[slot]
            sum_cd += <int64_t>st.lags.counts[slot] * lag
    p = <Py_ssize_t>((2 * sum_cd + sum_c) // (2 * sum_c))
    tol = ntol(st, p)
    within = 0
    for j in range(st.lags.nused):
        slot = st.lags.used[j]
        lag = <Py_ssize_t>st.lags.keys[slot]
        for m in range(1, NEAR_MULTIPLES + 1):  # where copies were edited: m periods back
            if m * p - tol <= lag <= m * p + tol:
                within += st.lags.counts[slot]
                break
    if <double>within >= st.p.near_min_lag_share * <double>st.n_anchors:
        r = near_window(st, bf, ev, p, tol)
        if r != 0:
            return r == 1
        if <double>st.n_covered >= pending_min(st, p):
            st.n_pend = p  # close: the loop may be growing into its window
    if <double>st.n_recurring < NEAR_VOTE_GATE * <double>st.n_anchors:
        return False  # the votes only where the block's k-grams mostly repeat
    # the first failed its window: a lag of a repeat inside the unit?  The next ones come
    # from votes: each anchor votes for the lags of its first NEAR_VOTES earlier
    # occurrences (a unit's inner repeat hides the whole period from the nearest lags);
    # their share counts any earlier occurrence
    p1 = p
    b0 = n - (n % st.p.check_every or st.p.check_every)
    if b0 < k - 1:
        b0 = k - 1
    near_table_clear(st)
    for i in range(b0, n):
        d = st.n_last[i & st.n_lmask]
        r = 0
        while d != 0 and d <= st.n_lim and r < NEAR_VOTES:
            if d >= st.p.near_min_period and d != p1:
                near_table_add(st, <Py_ssize_t>d)
            d2 = st.n_last[(i - d) & st.n_lmask]
            if d2 == 0:
                break
            d += d2
            r += 1
    ncand = near_top(st, cand, votes)
    for j in range(ncand):
        p = cand[j]
        if p > NEAR_LONG_VOTE and <double>st.n_recurring < NEAR_LONG_VOTE_GATE * <double>st.n_anchors:
            continue  # a long period's window (2p) is walked only where the block all repeats
        tol = ntol(st, p)
        within = 0
        for i in range(b0, n):
            if st.n_last[i & st.n_lmask] != 0 and near_lag(st, i, p, tol) != 0:
                within += 1
        if <double>within >= st.p.near_min_lag_share * <double>st.n_anchors:
            r = near_window(st, bf, ev, p, tol)
            if r == 1:
                return True
            if r == 0 and st.n_pend == 0 and \
                    <double>st.n_covered >= pending_min(st, p):
                st.n_pend = p
    return False

cdef Py_ssize_t near_top(NearState* st, Py_ssize_t* cand, uint32_t* votes) noexcept nogil:
    """The NEAR_CANDIDATES - 1 lags of the table with the most votes (ties: the smallest),
    into ``cand``/``votes`` in that order; returns how many."""
    cdef Py_ssize_t ncand = 0, j, r, j2, slot, p, lag
    cdef uint32_t c
    for j in range(st.lags.nused):
        slot = st.lags.used[j]
        lag = <Py_ssize_t>st.lags.keys[slot]
        c = st.lags.counts[slot]
        p = lag
        r = ncand
        while r > 0 and (votes[r - 1] < c or (votes[r - 1] == c and cand[r - 1] > p)):
            r -= 1
        if r >= NEAR_CANDIDATES - 1:
            continue
        if ncand < NEAR_CANDIDATES - 1:
            ncand += 1
        j2 = ncand - 1
        while j2 > r:
            cand[j2] = cand[j2 - 1]
            votes[j2] = votes[j2 - 1]
            j2 -= 1
        cand[r] = p
        votes[r] = c
    return ncand

cdef void near_table_clear(NearState* st) noexcept nogil:
    """Empty the block's lag table."""
    ct_clear(&st.lags)


cdef void near_table_add(NearState* st, Py_ssize_t d) noexcept nogil:
    """One more vote for lag ``d`` in the block's lag table (a new lag only while the table
    holds fewer than min(check_every, lim): _reference's vote cap)."""
    ct_add(&st.lags, <uint64_t>d, min(st.p.check_every, st.n_lim))


cdef int near_window(NearState* st, const Buffer* bf, Event* ev, Py_ssize_t p, Py_ssize_t tol) noexcept nogil:
    """N's window at period ``p``: coverage by copies one period back, records
    (_reference.near.NearCycle._near_window).
    Returns 1 when it fires, 2 when the window is record lines, 0 otherwise."""
    cdef int64_t n = bf.n, hi = bf.n, cut = -1, end = 0
    cdef Py_ssize_t w, covered
    cdef double need, floor
    w = max(2 * p, st.p.near_min_window)
    st.n_covered = 0
    if n < w:
        return 0
    need = st.p.near_min_coverage * <double>w
    floor = need - <double>st.p.check_every  # <= the pending minimum too
    covered = near_cover(st, bf, p, tol, n, w, &cut, &end, floor)
    if <double>covered < need and 2 * st.p.near_ngram <= n - end < st.p.check_every and end >= w and \
            <double>(covered + (n - end)) >= need:
        # the copies ended inside the last block: the window that ends with them
        hi = end
        covered = near_cover(st, bf, p, tol, hi, w, &cut, &end, floor)
    st.n_covered = covered
    if cut < 0 or <double>covered < need:
        return 0
    if <double>record_chars(bf, hi - w, hi) >= st.p.near_max_record_share * <double>w:
        return 2
    cut = near_walk_back(st, bf, cut, p)
    near_report(st, bf, ev, cut, p, covered, w, st.n_exact, st.n_whole)
    return 1

cdef Py_ssize_t near_cover(
    NearState* st, const Buffer* bf, Py_ssize_t p, Py_ssize_t tol, int64_t hi, Py_ssize_t w,
    int64_t* cut_out, int64_t* end_out, double floor,
) noexcept nogil:
    """_reference.near.NearCycle._near_cover: the coverage walk over ``[hi - w, hi)``;
    returns the covered code points (after the seed costs), sets the cut (the first
    segment of at least 2k; -1: none) and the end (of the last such segment).  It stops
    (cut -1) once ``covered + (hi - done)`` is below ``floor``."""
    cdef int64_t i, lo = hi - w, s, e, done, cut = -1, q, c, gaps, last = hi - w
    cdef int64_t run[3]
    cdef Py_ssize_t k = st.p.near_ngram, covered = 0
    run[0] = lo
    run[1] = 0
    run[2] = 0
    done = lo
    st.n_dend = -1  # a new walk: no digits seen
    i = max(lo, k - 1) - 1
    while True:
        i += 1
        if i < done:
            i = done  # inside the last segment: nothing to seed
        if i >= hi:
            break
        if st.n_last[i & st.n_lmask] == 0:
            continue
        if <double>(covered + (hi - done)) < floor:
            cut = -1
            last = lo
            break
        c = near_lag(st, i, p, tol)
        q = c
        if c == 0:  # the copy one period back was edited here: two periods back
            c = near_lag(st, i, 2 * p, 2 * tol)
            if c > st.n_link:
                c = 0
            q = c // 2
        if c == 0:
            continue
        s = max(lo, i - k + 1)
        while s > done and s - 1 - c >= 0 and buf_at(bf, <Py_ssize_t>(s - 1 - bf.base)) == \
                buf_at(bf, <Py_ssize_t>(s - 1 - c - bf.base)):
            s -= 1
        run[0] = s
        e = near_extend(st, bf, i + 1, hi, q, c, p, tol, &gaps, run)
        if cut < 0 and e - s >= 2 * k:  # a k-gram alone recurs by chance (" the ")
            cut = s
        covered += e - max(s, done) - gaps - NEAR_SEED_COST  # a seed's cost: see _reference
        if e - s >= 2 * k:
            last = e
        done = e
    cut_out[0] = cut
    end_out[0] = last
    st.n_exact = run[1]
    st.n_whole = run[2] != 0
    return covered


cdef inline int64_t near_extend_chunk(const cu_t* buf, NearState* st, const Buffer* bf, int64_t e, int64_t n, int64_t q,
                                      int64_t c, Py_ssize_t p, Py_ssize_t tol, int64_t* gaps,
                                      int64_t* run) noexcept nogil:
    """ChannelStream._near_extend over the buffer's code units (``buf[x - base]`` is t[x])."""
    cdef int64_t a = 0, L = 0, hit, base = bf.base, link = st.n_link
    cdef Py_ssize_t g, j, r, k = st.p.near_ngram, nt
    cdef int64_t tries[10]
    cdef int64_t valid[10]
    cdef uint32_t c1, c2
    check(e - c - base >= 0 and n - base <= bf.blen)
    gaps[0] = 0
    while e < n:
        c1 = buf[e - base]
        c2 = buf[e - c - base]
        if c1 == c2:
            e += 1
            continue
        if e - run[0] > run[1]:  # an exact piece ends here
            run[1] = e - run[0]
        if e - run[0] >= max(min(c, NEAR_WHOLE_CAP), NEAR_WHOLE_MIN):
            run[2] = 1
        if (48 <= c1 <= 57) and (48 <= c2 <= 57) and not digits_back(st, bf, e, c):
            return e  # a number that changes: an enumeration, not noise
        tries[0] = q
        tries[1] = q + 1
        tries[2] = q - 1
        tries[3] = q + 2
        tries[4] = q - 2
        tries[5] = q + p
        tries[6] = q + p + 1
        tries[7] = q + p - 1
        tries[8] = q + p + 2
        tries[9] = q + p - 2
        # the lags worth a try, in order (the same for every gap but the first's lag c)
        nt = 0
        for r in range(10):
            L = tries[r]
            if not ((p - tol <= L <= p + tol) or (2 * (p - tol) <= L <= 2 * (p + tol) and L <= link)):
                continue
            if L < 1:
                continue
            valid[nt] = L
            nt += 1
        hit = 0
        for g in range(NEAR_GAP + 1):
            a = e + g
            if a + k > n:
                break  # (every later gap fails this too)
            for r in range(nt):
                L = valid[r]
                if (g == 0 and L == c) or a - L < 0:
                    continue
                j = 0
                while j < k and buf[a + j - base] == buf[a + j - L - base]:
                    j += 1
                if j == k:
                    hit = L
                    break
            if hit:
                break
        if not hit:
            return e
        gaps[0] += g
        e = a + k
        c = hit
        run[0] = a  # the next exact piece begins at the resynchronisation
        if p - tol <= hit <= p + tol:
            q = hit
    if e - run[0] > run[1]:
        run[1] = e - run[0]
    if e - run[0] >= max(min(c, NEAR_WHOLE_CAP), NEAR_WHOLE_MIN):
        run[2] = 1
    return e


cdef inline void near_chunk(const cu_t* buf, Py_ssize_t idx, Py_ssize_t count, int64_t i,
                            NearState* st, const Buffer* bf) noexcept nogil:
    """N over ``count`` positions from position ``i`` (buffer index ``idx``).

    First loop, without a branch: the packed k-gram ending at each position
    (_reference.near_packed), its key and whether it is an anchor.  Second loop: each
    anchor is linked to the previous anchor ending the same k-gram within ``n_link``
    (hash-slot chains, verified by comparing code points) and its lag counted."""
    cdef uint64_t h = st.hn, pmask = st.n_pmask, mix
    cdef uint32_t prev[NEAR_WINNOW - 1]
    cdef uint32_t key, low, stored
    cdef uint16_t* last = st.n_last
    cdef uint16_t* sprev = st.n_sprev
    cdef uint32_t* head = st.n_head
    cdef uint32_t cnt
    cdef Py_ssize_t slot
    cdef Py_ssize_t lmask = st.n_lmask, smask = st.n_smask, m = 0, x, j, at
    cdef Py_ssize_t k = st.p.near_ngram, best = st.n_best, mode = st.n_mode, recurring = 0
    cdef int64_t first = st.p.near_ngram - 1, pos, d, found, head_d, lim = st.n_lim, link = st.n_link
    cdef int64_t min_p = st.p.near_min_period
    cdef int shift = 48 - st.n_hbits
    cdef uint64_t smask_h = (<uint64_t>1 << st.n_hbits) - 1
    cdef uint16_t sd
    cdef int r
    cdef Py_ssize_t listed[NEAR_CHUNK]
    cdef uint64_t mixed[NEAR_CHUNK]
    for r in range(NEAR_WINNOW - 1):
        prev[r] = st.nkeys[r]
    for x in range(count):
        h = ((h << 8) + buf[idx + x]) & pmask
        last[(i + x) & lmask] = 0
        if i + x < first:
            continue
        mix = h * HB
        key = <uint32_t>(mix >> 48)
        low = prev[0]
        for r in range(1, NEAR_WINNOW - 1):
            low = low if low < prev[r] else prev[r]
        for r in range(NEAR_WINNOW - 2, 0, -1):
            prev[r] = prev[r - 1]
        prev[0] = key
        listed[m] = x
        mixed[m] = mix
        m += key <= low
    st.hn = h
    for r in range(NEAR_WINNOW - 1):
        st.nkeys[r] = prev[r]
    st.n_anchors += m
    for j in range(m):
        x = listed[j]
        pos = i + x
        at = idx + x
        slot = <Py_ssize_t>((mixed[j] >> shift) & smask_h)
        stored = head[slot]
        head[slot] = <uint32_t>(pos + 1)
        head_d = 0
        if stored != 0:
            head_d = <int64_t>(<uint32_t>(pos + 1) - stored)
            if head_d > link:
                head_d = 0
        sprev[pos & smask] = <uint16_t>head_d
        found = 0
        d = head_d
        while d != 0:
            if pos - d >= first:
                r = 0
                while r < k and buf[at - d - r] == buf[at - r]:
                    r += 1
                if r == k:
                    found = d
                    break
            sd = sprev[(pos - d) & smask]
            if sd == 0:
                break
            d += sd
            if d > link:
                break
        last[pos & lmask] = <uint16_t>found
        recurring += found != 0
        if found >= min_p and found <= lim:
            cnt = ct_add(&st.lags, <uint64_t>found, st.lags.mask)
            if cnt > best or (cnt == best and found < mode):
                best = cnt
                mode = found
    st.n_best = best
    st.n_mode = mode
    st.n_recurring += recurring
