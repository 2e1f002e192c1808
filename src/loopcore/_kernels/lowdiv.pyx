# cython: language_level=3
"""L and S: low diversity of the tail and of sliding windows (see ``lowdiv.pxd``).

L (``lowdiv_tail``): the last ``lowdiv_window`` code points hold fewer than
``lowdiv_max_unique`` distinct code points and one ``ngram``-gram ``lowdiv_min_repeat``
times.  S (``lowdiv_sliding``): the same in windows of ``slide_window`` every
``slide_step``; the first window that fires is kept.  Both hold back on hex-dump data runs
(``lowdiv_max_data_share``) and ASCII-art runs (``lowdiv_art_max_alnum``).
"""

from libc.stdint cimport int64_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free
from libc.string cimport memset

from loopcore._kernels.buffer cimport Buffer, buf_at, buf_map
from loopcore._kernels.chars cimport is_alnum, is_space
from loopcore._kernels.common cimport Event, NGB, Params, addmod61, cp_t, mulmod61, pow2_at_least, powmod61, submod61
from loopcore._kernels.table cimport (DistinctCounter, ct_add, ct_clear, ct_free, ct_init, ct_remove,
                                      distinct, max_gram_count)

from loopcore import _reference

# characters of hex/byte dumps (_reference.DATA_CHARS): hex digits, blanks, '.', ':'
cdef bint DATA_CHAR[128]
for _c in range(128):
    DATA_CHAR[_c] = chr(_c) in _reference.DATA_CHARS
cdef Py_ssize_t DATA_MIN_DISTINCT = _reference.DATA_MIN_DISTINCT
cdef Py_ssize_t ART_MIN_SYMBOLS = _reference.ART_MIN_SYMBOLS
assert ART_MIN_SYMBOLS <= 4  # the symbol array of art_run holds 4


cdef Py_ssize_t lowdiv_init(LowdivState* st, const Params* p, DistinctCounter* ds) noexcept nogil:
    """Set up L and S for ``p``; the look-back they need (code points)."""
    cdef Py_ssize_t keep = 0
    st.p = p
    st.ds = ds
    st.ng_pow = powmod61(NGB, p.ngram)
    st.next_win = p.slide_window if p.lowdiv_sliding else -1
    if p.lowdiv_tail:
        keep = max(keep, p.lowdiv_window + 1)
        st.lg_slots = pow2_at_least(2 * max(1, p.lowdiv_window - p.ngram + 1) + 2)
    if p.lowdiv_sliding:
        keep = max(keep, p.slide_window + 1)
        st.ng_slots = pow2_at_least(2 * max(1, p.slide_window - p.ngram + 1) + 2)
    return keep


cdef void lowdiv_free(LowdivState* st) noexcept nogil:
    ct_free(&st.lg)
    ct_free(&st.ng)
    free(st.lg_hist)
    st.lg_hist = NULL


cdef bint data_run(const LowdivState* st, const Buffer* bf, int64_t lo, int64_t hi) noexcept nogil:
    """Whether the share of hex-dump characters in ``t[lo:hi]`` exceeds ``lowdiv_max_data_share``."""
    cdef Py_ssize_t count = 0, kinds = 0
    cdef int64_t i
    cdef cp_t c
    cdef bint seen[128]
    if st.p.lowdiv_max_data_share >= 1.0:
        return False
    memset(seen, 0, sizeof(seen))
    for i in range(lo, hi):
        c = buf_at(bf, <Py_ssize_t>(i - bf.base))
        if c < 128 and DATA_CHAR[c]:
            count += 1
            if not seen[c]:
                seen[c] = True
                kinds += 1
    return <double>count > st.p.lowdiv_max_data_share * <double>(hi - lo) and kinds >= DATA_MIN_DISTINCT


cdef bint art_run(const LowdivState* st, const Buffer* bf, int64_t lo, int64_t hi) noexcept nogil:
    """Whether ``t[lo:hi]`` is an art run (_reference.art_run)."""
    cdef Py_ssize_t alnum = 0, nsym = 0, k
    cdef int64_t i
    cdef cp_t c
    cdef cp_t sym[4]  # ART_MIN_SYMBOLS <= 4
    cdef bint known
    if st.p.lowdiv_art_max_alnum <= 0.0:
        return False
    for i in range(lo, hi):
        c = buf_at(bf, <Py_ssize_t>(i - bf.base))
        if is_alnum(c):
            alnum += 1
        elif nsym < ART_MIN_SYMBOLS and not is_space(c):
            known = False
            for k in range(nsym):
                if sym[k] == c:
                    known = True
                    break
            if not known:
                sym[nsym] = c
                nsym += 1
    return <double>alnum < st.p.lowdiv_art_max_alnum * <double>(hi - lo) and nsym >= ART_MIN_SYMBOLS


cdef void lg_grams(LowdivState* st, const Buffer* bf, int64_t a, int64_t b, bint add) noexcept nogil:
    """Add (or remove) the grams of ``t`` starting in ``[a, b)`` to L's counts."""
    cdef Py_ssize_t k = st.p.ngram, i, off = <Py_ssize_t>(a - bf.base)
    cdef Py_ssize_t count = <Py_ssize_t>(b - a), s
    cdef uint64_t h = 0
    cdef uint32_t c
    if count <= 0:
        return
    for i in range(k - 1):
        h = addmod61(mulmod61(h, NGB), buf_at(bf, off + i))
    for s in range(count):
        h = addmod61(mulmod61(h, NGB), buf_at(bf, off + s + k - 1))
        if s:
            h = submod61(h, mulmod61(buf_at(bf, off + s - 1), st.ng_pow))
        if add:
            c = ct_add(&st.lg, h, st.lg_slots)
            if c > 1:
                st.lg_hist[c - 1] -= 1
            st.lg_hist[c] += 1
            if c > st.lg_max:
                st.lg_max = c
        else:
            c = ct_remove(&st.lg, h)
            st.lg_hist[c] -= 1
            if c > 1:
                st.lg_hist[c - 1] += 1
            while st.lg_max > 0 and st.lg_hist[st.lg_max] == 0:
                st.lg_max -= 1


cdef Py_ssize_t lowdiv_max_ngram(LowdivState* st, const Buffer* bf, int64_t lo, int64_t n) noexcept nogil:
    """Largest count of one ``ngram``-gram in ``t[lo:n]``, updated incrementally.

    The counts of the previous evaluation are moved to the new window by removing the
    grams that left and adding the ones that came (at most 2 x ``check_every`` grams
    instead of ``lowdiv_window``); a far jump rebuilds.
    """
    cdef int64_t hi = n - st.p.ngram + 1
    if hi <= lo:
        return 0
    if st.lg_hist == NULL:
        st.lg_hist = <uint32_t*>calloc(st.p.lowdiv_window + 2, sizeof(uint32_t))
        if st.lg_hist == NULL or ct_init(&st.lg, st.lg_slots, False) != 0:
            st.failed = True
            return 0
        st.lazy_bytes += st.lg.bytes + (st.p.lowdiv_window + 2) * sizeof(uint32_t)
    if (st.lg_valid and lo >= st.lg_lo and hi >= st.lg_hi and st.lg_lo >= bf.base
            and (lo - st.lg_lo) + (hi - st.lg_hi) < hi - lo):
        lg_grams(st, bf, st.lg_lo, lo if lo < st.lg_hi else st.lg_hi, False)
        lg_grams(st, bf, st.lg_hi if st.lg_hi > lo else lo, hi, True)
    else:
        ct_clear(&st.lg)
        memset(st.lg_hist, 0, (st.lg_max + 2) * sizeof(uint32_t))
        st.lg_max = 0
        lg_grams(st, bf, lo, hi, True)
    st.lg_lo = lo
    st.lg_hi = hi
    st.lg_valid = True
    return st.lg_max


cdef bint lowdiv_tail(LowdivState* st, const Buffer* bf, Event* ev) noexcept nogil:
    """L at a checkpoint."""
    cdef int64_t n = bf.n, lo
    cdef Py_ssize_t unique, top
    if n < st.p.min_chars:
        return False
    lo = n - st.p.lowdiv_window
    if lo < 0:
        lo = 0
    if st.lw_distinct >= st.p.lowdiv_max_unique:
        return False
    if st.lw_big == 0:
        unique = st.lw_distinct  # exact: every code point is < 256
    else:
        unique = distinct(st.ds, bf, lo, n, st.p.lowdiv_max_unique)
    if unique >= st.p.lowdiv_max_unique:
        return False
    top = lowdiv_max_ngram(st, bf, lo, n)
    if top < st.p.lowdiv_min_repeat:
        return False
    if data_run(st, bf, lo, n) or art_run(st, bf, lo, n):
        return False
    ev.start = ev.cut = buf_map(bf, lo)
    ev.ev0 = unique
    ev.ev1 = top
    return True


cdef void lowdiv_window(LowdivState* st, const Buffer* bf, int64_t end) noexcept nogil:
    """S: evaluate the sliding window ``t[end-slide_window:end]``."""
    cdef int64_t lo = end - st.p.slide_window
    cdef Py_ssize_t unique = distinct(st.ds, bf, lo, end, st.p.slide_max_unique), top
    if unique >= st.p.slide_max_unique:
        return
    if st.ng.counts == NULL:
        if ct_init(&st.ng, st.ng_slots, True) != 0:
            st.failed = True
            return
        st.lazy_bytes += st.ng.bytes
    top = max_gram_count(&st.ng, bf, lo, end, st.p.ngram, st.ng_pow)
    if top >= st.p.slide_min_repeat and not data_run(st, bf, lo, end) and not art_run(st, bf, lo, end):
        st.s_fired = True
        st.s_unique = unique
        st.s_top = top
        st.s_start = buf_map(bf, lo)


cdef bint lowdiv_sliding(LowdivState* st, const Buffer* bf, Event* ev) noexcept nogil:
    """S at a checkpoint: a window fired and the stream is long enough."""
    if not st.s_fired or bf.n < st.p.min_chars:
        return False
    ev.start = ev.cut = st.s_start
    ev.ev0 = st.s_unique
    ev.ev1 = st.s_top
    ev.ev2 = st.s_start
    return True
