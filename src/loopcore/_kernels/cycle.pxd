# cython: language_level=3
"""C, the verbatim cycle (seed 003; ``cycle.pyx``, ``loopcore._reference.cycle``)."""

from libc.stdint cimport int32_t, int64_t, uint16_t, uint64_t

from loopcore._kernels.buffer cimport Buffer
from loopcore._kernels.common cimport Arena, Event, Params


cdef struct CycleState:
    const Params* p
    Py_ssize_t ck  # the k-gram length of the prefilter's tags
    uint64_t hc, hc_out  # the rolling hash of the last ck code points; HB^ck
    uint16_t* ring  # the top 16 bits of the ck-gram hash ending at each t offset
    Py_ssize_t mask
    int64_t done  # positions tagged in the ring so far (C runs in blocks at checkpoints)
    int64_t held_n  # the checkpoint at which C last held, at period held_p (0: none)
    Py_ssize_t held_p
    int32_t* zbuf  # the Z array, allocated on first need
    Py_ssize_t lazy_bytes
    bint failed


cdef Py_ssize_t cycle_init(CycleState* st, const Params* p, Arena* a) noexcept nogil
cdef void cycle_free(CycleState* st) noexcept nogil
cdef bint cycle_check(CycleState* st, const Buffer* bf, Event* ev, bint holding) noexcept nogil
