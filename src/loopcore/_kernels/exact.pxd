# cython: language_level=3
"""E, the exact tail repeat (seed 002 ①a; ``exact.pyx``, ``loopcore._reference.exact``)."""

from libc.stdint cimport uint16_t, uint64_t

from loopcore._kernels.buffer cimport Buffer, buf_at
from loopcore._kernels.common cimport Arena, Event, HB, Params, cp_t


cdef struct ExactState:
    const Params* p
    uint64_t he, he_out  # the rolling hash of the last ``window`` code points; HB^window
    uint16_t* ring  # its top 16 bits at each t offset (mod ring size)
    Py_ssize_t mask


cdef Py_ssize_t exact_init(ExactState* st, const Params* p, Arena* a) noexcept nogil
cdef bint exact_check(ExactState* st, const Buffer* bf, Event* ev) noexcept nogil


cdef inline void exact_step(ExactState* st, const Buffer* bf, cp_t c, Py_ssize_t idx) noexcept nogil:
    """Roll E's hash over ``c``, appended at buffer index ``idx`` (t offset ``base + idx``)."""
    st.he = st.he * HB + c
    if bf.base + idx >= st.p.window:
        st.he -= buf_at(bf, idx - st.p.window) * st.he_out
    st.ring[(bf.base + idx) & st.mask] = <uint16_t>(st.he >> 48)
