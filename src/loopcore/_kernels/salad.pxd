# cython: language_level=3
"""T, salads of symbols or of words (loopguard's own; ``salad.pyx``,
``loopcore._reference.salad``)."""

from loopcore._kernels.buffer cimport Buffer
from loopcore._kernels.common cimport Event, Params
from loopcore._kernels.table cimport DistinctCounter


cdef struct SaladState:
    const Params* p
    DistinctCounter* ds  # shared with L and S


cdef Py_ssize_t salad_init(SaladState* st, const Params* p, DistinctCounter* ds) noexcept nogil
cdef bint salad_check(SaladState* st, const Buffer* bf, Event* ev) noexcept nogil
