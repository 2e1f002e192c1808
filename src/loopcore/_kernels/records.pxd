# cython: language_level=3
"""Structure classification of lines (``records.pyx``)."""

from libc.stdint cimport int64_t

from loopcore._kernels.buffer cimport Buffer

cdef bint is_record(const Buffer* bf, Py_ssize_t a, Py_ssize_t e) noexcept nogil
cdef int64_t record_chars(const Buffer* bf, int64_t lo, int64_t n) noexcept nogil
