# cython: language_level=3
"""L and S, low diversity of the tail and of sliding windows (seed 002 ①b, ①b-2;
``lowdiv.pyx``, ``loopcore._reference.lowdiv``)."""

from libc.stdint cimport int64_t, uint32_t, uint64_t

from loopcore._kernels.buffer cimport Buffer, buf_at
from loopcore._kernels.common cimport Event, Params, cp_t
from loopcore._kernels.table cimport CountTable, DistinctCounter


cdef struct LowdivState:
    const Params* p
    DistinctCounter* ds  # shared with T
    # L: counts of code points < 256 in the tail window; code points >= 256 in it
    uint32_t lw_small[256]
    Py_ssize_t lw_distinct, lw_big
    # L's n-gram counts, kept across checkpoints: grams starting in [lg_lo, lg_hi)
    CountTable lg
    uint32_t* lg_hist  # lg_hist[c] = how many distinct grams occur c times
    uint32_t lg_max
    bint lg_valid
    int64_t lg_lo, lg_hi
    Py_ssize_t lg_slots
    uint64_t ng_pow  # NGB^ngram mod 2^61 - 1
    # S: its n-gram table, and the first window that fired
    CountTable ng
    Py_ssize_t ng_slots
    bint s_fired
    int64_t s_unique, s_top, s_start
    int64_t next_win  # the t length of the next S window (-1: S is off)
    Py_ssize_t lazy_bytes
    bint failed


cdef Py_ssize_t lowdiv_init(LowdivState* st, const Params* p, DistinctCounter* ds) noexcept nogil
cdef void lowdiv_free(LowdivState* st) noexcept nogil
cdef bint lowdiv_tail(LowdivState* st, const Buffer* bf, Event* ev) noexcept nogil
cdef void lowdiv_window(LowdivState* st, const Buffer* bf, int64_t end) noexcept nogil
cdef bint lowdiv_sliding(LowdivState* st, const Buffer* bf, Event* ev) noexcept nogil


cdef inline void lowdiv_count(LowdivState* st, const Buffer* bf, cp_t c, Py_ssize_t idx) noexcept nogil:
    """Keep L's tail counts as t[n-lowdiv_window:n] after ``c`` was appended at buffer index
    ``idx`` (``n`` = base + idx + 1)."""
    cdef cp_t out
    if c < 256:
        st.lw_small[c] += 1
        if st.lw_small[c] == 1:
            st.lw_distinct += 1
    else:
        st.lw_big += 1
    if bf.base + idx >= st.p.lowdiv_window:
        out = buf_at(bf, idx - st.p.lowdiv_window)
        if out < 256:
            st.lw_small[out] -= 1
            if st.lw_small[out] == 0:
                st.lw_distinct -= 1
        else:
            st.lw_big -= 1
