# cython: language_level=3
"""The masked text ``t`` of one channel, as the kernels read it (``buffer.pyx``).

A linear buffer of the last ``keep``..``cap`` code points of ``t`` stored like PEP 393
(1, 2 or 4 bytes per code point, widened when a wider code point arrives), compacted
by moving its last ``keep`` code points to the front when it is full, and the map from
``t`` offsets back to original offsets (breakpoints: from ``t`` offset ``bp_t[i]`` on,
original = t + ``bp_d[i]``).  Buffer index ``i`` holds t offset ``base + i``.
"""

from libc.stdint cimport int64_t, uint8_t, uint16_t, uint32_t
from libc.string cimport memcmp

from loopcore._kernels.common cimport cp_t, check


cdef struct Buffer:
    void* data  # code points, ``width`` bytes each
    int width
    cp_t wmax  # the largest code point the current width holds
    Py_ssize_t cap, blen, keep  # capacity, used, kept on compaction (code points)
    int64_t base  # the t offset of data[0]
    int64_t n  # the length of t
    int64_t* bp_t
    int64_t* bp_d
    Py_ssize_t bp_head, bp_len, bp_cap


cdef int buf_init(Buffer* b, Py_ssize_t keep, Py_ssize_t slack) noexcept nogil
cdef void buf_free(Buffer* b) noexcept nogil
cdef Py_ssize_t buf_bytes(const Buffer* b) noexcept nogil
cdef bint buf_widen(Buffer* b, cp_t c) noexcept nogil
cdef void buf_compact(Buffer* b) noexcept nogil
cdef bint buf_push_breakpoint(Buffer* b, int64_t d) noexcept nogil
cdef int64_t buf_map(const Buffer* b, int64_t k) noexcept nogil
cdef cp_t data_max(const void* data, int kind, Py_ssize_t count) noexcept nogil
cdef void buf_extend(Buffer* b, const void* data, int kind, Py_ssize_t count) noexcept nogil


cdef inline cp_t buf_at(const Buffer* b, Py_ssize_t i) noexcept nogil:
    """The code point at buffer index ``i``."""
    check(i >= 0 and i < b.blen)
    if b.width == 1:
        return (<const uint8_t*>b.data)[i]
    if b.width == 2:
        return (<const uint16_t*>b.data)[i]
    return (<const uint32_t*>b.data)[i]


cdef inline cp_t buf_t(const Buffer* b, int64_t x) noexcept nogil:
    """The code point at t offset ``x`` (``base <= x < n``)."""
    return buf_at(b, <Py_ssize_t>(x - b.base))


cdef inline const char* buf_ptr(const Buffer* b, Py_ssize_t i) noexcept nogil:
    return <const char*>b.data + i * b.width


cdef inline bint buf_same(const Buffer* b, Py_ssize_t x, Py_ssize_t y, Py_ssize_t count) noexcept nogil:
    """Whether buffer ranges ``[x, x+count)`` and ``[y, y+count)`` hold the same code points."""
    check(x >= 0 and y >= 0 and x + count <= b.blen and y + count <= b.blen)
    return memcmp(buf_ptr(b, x), buf_ptr(b, y), <size_t>count * b.width) == 0


cdef inline void buf_append(Buffer* b, cp_t c) noexcept nogil:
    """Store ``c`` at the end (room and width were made by the caller)."""
    check(b.blen < b.cap and c <= b.wmax)
    if b.width == 1:
        (<uint8_t*>b.data)[b.blen] = <uint8_t>c
    elif b.width == 2:
        (<uint16_t*>b.data)[b.blen] = <uint16_t>c
    else:
        (<uint32_t*>b.data)[b.blen] = c
    b.blen += 1
    b.n += 1
