# cython: language_level=3
"""The masked text's buffer and offset map (see ``buffer.pxd``)."""

from libc.stdint cimport int64_t, uint8_t, uint16_t, uint32_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy, memmove

from loopcore._kernels.chars cimport cu_t
from loopcore._kernels.common cimport check, cp_t


cdef int buf_init(Buffer* b, Py_ssize_t keep, Py_ssize_t slack) noexcept nogil:
    """Allocate ``keep + slack`` code points at 1 byte each and the offset map; -1 when out
    of memory (whatever was allocated is freed by :func:`buf_free`)."""
    b.keep = keep
    b.cap = keep + slack
    b.data = malloc(b.cap)
    b.width = 1
    b.wmax = 0xFF
    b.bp_cap = 16
    b.bp_t = <int64_t*>malloc(b.bp_cap * sizeof(int64_t))
    b.bp_d = <int64_t*>malloc(b.bp_cap * sizeof(int64_t))
    if b.data == NULL or b.bp_t == NULL or b.bp_d == NULL:
        return -1
    b.bp_t[0] = 0
    b.bp_d[0] = 0
    b.bp_len = 1
    return 0


cdef void buf_free(Buffer* b) noexcept nogil:
    free(b.data)
    free(b.bp_t)
    free(b.bp_d)
    b.data = NULL
    b.bp_t = NULL
    b.bp_d = NULL


cdef Py_ssize_t buf_bytes(const Buffer* b) noexcept nogil:
    """Bytes held: the code points and the offset map."""
    return b.cap * b.width + 2 * b.bp_cap * sizeof(int64_t)


cdef bint buf_widen(Buffer* b, cp_t c) noexcept nogil:
    """Grow the bytes per code point so that ``c`` fits (at most twice per stream); False
    when out of memory."""
    cdef int width = 2 if c <= 0xFFFF else 4
    cdef void* wider = malloc(<size_t>b.cap * width)
    cdef Py_ssize_t i
    if wider == NULL:
        return False
    for i in range(b.blen):
        if width == 2:
            (<uint16_t*>wider)[i] = <uint16_t>buf_at(b, i)
        else:
            (<uint32_t*>wider)[i] = buf_at(b, i)
    free(b.data)
    b.data = wider
    b.width = width
    b.wmax = 0xFFFF if width == 2 else 0xFFFFFFFF
    return True


cdef void buf_compact(Buffer* b) noexcept nogil:
    """Keep the last ``keep`` code points at the front."""
    cdef Py_ssize_t shift = b.blen - b.keep
    memmove(b.data, buf_ptr(b, shift), b.keep * b.width)
    b.base += shift
    b.blen = b.keep


cdef bint buf_push_breakpoint(Buffer* b, int64_t d) noexcept nogil:
    """From t offset ``n`` on, original = t + ``d``; False when out of memory."""
    cdef Py_ssize_t live
    cdef int64_t* nt
    cdef int64_t* nd
    # forget breakpoints that only cover offsets older than the look-back
    while b.bp_len - b.bp_head >= 2 and b.bp_t[b.bp_head + 1] <= b.n - b.keep:
        b.bp_head += 1
    if b.bp_len == b.bp_cap:
        live = b.bp_len - b.bp_head
        if b.bp_head < b.bp_cap // 2:
            nt = <int64_t*>realloc(b.bp_t, 2 * b.bp_cap * sizeof(int64_t))
            if nt == NULL:
                return False
            b.bp_t = nt
            nd = <int64_t*>realloc(b.bp_d, 2 * b.bp_cap * sizeof(int64_t))
            if nd == NULL:
                return False
            b.bp_d = nd
            b.bp_cap *= 2
        memmove(b.bp_t, b.bp_t + b.bp_head, live * sizeof(int64_t))
        memmove(b.bp_d, b.bp_d + b.bp_head, live * sizeof(int64_t))
        b.bp_head = 0
        b.bp_len = live
    b.bp_t[b.bp_len] = b.n
    b.bp_d[b.bp_len] = d
    b.bp_len += 1
    return True


cdef int64_t buf_map(const Buffer* b, int64_t k) noexcept nogil:
    """Original offset of ``t`` offset ``k`` (``k == n`` maps just past t[n-1])."""
    cdef Py_ssize_t lo, hi, mid
    if k >= b.n:
        if b.n == 0:
            return 0
        return buf_map(b, b.n - 1) + 1
    lo = b.bp_head
    hi = b.bp_len - 1
    while lo < hi:
        mid = (lo + hi + 1) >> 1
        if b.bp_t[mid] <= k:
            lo = mid
        else:
            hi = mid - 1
    return k + b.bp_d[lo]


ctypedef fused cv_t:  # a code unit of the destination (a second fused type: every pair)
    uint8_t
    uint16_t
    uint32_t


cdef inline cp_t max_of(const cu_t* src, Py_ssize_t count) noexcept nogil:
    cdef cp_t m = 0
    cdef Py_ssize_t i
    for i in range(count):
        if src[i] > m:
            m = src[i]
    return m


cdef cp_t data_max(const void* data, int kind, Py_ssize_t count) noexcept nogil:
    """The largest code point of ``count`` code points of PEP 393 ``kind`` at ``data``."""
    if kind == 1:
        return max_of(<const uint8_t*>data, count)
    if kind == 2:
        return max_of(<const uint16_t*>data, count)
    return max_of(<const uint32_t*>data, count)


cdef inline void copy_units(const cu_t* src, cv_t* dst, Py_ssize_t count) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(count):
        dst[i] = <cv_t>src[i]


cdef inline void extend_from(const cu_t* src, Buffer* b, Py_ssize_t count) noexcept nogil:
    if b.width == 1:
        copy_units(src, <uint8_t*>b.data + b.blen, count)
    elif b.width == 2:
        copy_units(src, <uint16_t*>b.data + b.blen, count)
    else:
        copy_units(src, <uint32_t*>b.data + b.blen, count)


cdef void buf_extend(Buffer* b, const void* data, int kind, Py_ssize_t count) noexcept nogil:
    """Append ``count`` code points of PEP 393 ``kind`` at ``data`` (room and width were made
    by the caller: every one fits)."""
    check(b.blen + count <= b.cap)
    if kind == b.width:
        memcpy(<char*>b.data + b.blen * b.width, data, <size_t>count * kind)
    elif kind == 1:
        extend_from(<const uint8_t*>data, b, count)
    elif kind == 2:
        extend_from(<const uint16_t*>data, b, count)
    else:
        extend_from(<const uint32_t*>data, b, count)
    b.blen += count
    b.n += count
