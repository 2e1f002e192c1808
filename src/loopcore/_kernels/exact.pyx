# cython: language_level=3
"""E: the last ``window`` code points occur ``repeats - 1`` more times, without overlap, in
the ``history`` before them (see ``exact.pxd``).  Candidates come from a ring of 16-bit
hashes of every ``window``-gram, verified with ``memcmp`` and counted greedily."""

from libc.stdint cimport int64_t, uint16_t

from loopcore._kernels.buffer cimport Buffer, buf_map, buf_same
from loopcore._kernels.common cimport Arena, Event, HB, Params, any_equal_u16, arena_take, ipow, pow2_at_least


cdef Py_ssize_t exact_init(ExactState* st, const Params* p, Arena* a) noexcept nogil:
    """Set up E in arena ``a``; the look-back it needs (code points)."""
    cdef Py_ssize_t size = pow2_at_least(p.history + 2)
    st.p = p
    st.ring = <uint16_t*>arena_take(a, size * sizeof(uint16_t))
    st.mask = size - 1
    st.he_out = ipow(HB, p.window)
    return p.window + p.history + 1


cdef bint exact_check(ExactState* st, const Buffer* bf, Event* ev) noexcept nogil:
    """E at a checkpoint."""
    cdef int64_t n = bf.n, w = st.p.window, lo, j, s, first = -1, second = -1
    cdef int64_t last, next_ok, seg_end
    cdef Py_ssize_t count = 0
    cdef uint16_t x
    cdef Py_ssize_t tail
    if n < st.p.min_chars or w < 40 or n < w:
        return False
    lo = n - w - st.p.history
    if lo < 0:
        lo = 0
    x = st.ring[(n - 1) & st.mask]
    tail = <Py_ssize_t>(n - w - bf.base)
    j = lo + w - 1
    last = n - w - 1
    next_ok = lo
    while j <= last:
        # skip blocks without a hash match (vectorised), ring-segment by segment
        seg_end = j + (st.mask + 1 - (j & st.mask))
        if seg_end > last + 1:
            seg_end = last + 1
        if not any_equal_u16(&st.ring[j & st.mask], <Py_ssize_t>(seg_end - j), x):
            j = seg_end
            continue
        while j < seg_end:
            if st.ring[j & st.mask] == x:
                s = j - w + 1
                if s >= next_ok and buf_same(bf, <Py_ssize_t>(s - bf.base), tail, w):
                    count += 1
                    if first < 0:
                        first = s
                    elif second < 0:
                        second = s
                    next_ok = s + w
            j += 1
    if count < st.p.repeats - 1:
        return False
    ev.start = buf_map(bf, first)
    ev.cut = buf_map(bf, second if second >= 0 else n - w)
    ev.ev0 = count
    return True
