# cython: language_level=3
"""Fence masking (spec §2.6; ``fences.pyx``, ``loopcore._reference.fences``): fenced code
blocks are removed from what the detectors see, one original code point at a time.

:func:`fence_step` returns what the owner must emit for the code point: nothing, the code
point, the held-back fence characters and then the code point, or a repeated code line.
"""

from libc.stdint cimport int64_t

from loopcore._kernels.chars cimport is_alnum, is_space
from loopcore._kernels.common cimport cp_t

cdef enum:
    FENCE_MAX_LINE = 256  # the code-line buffers; _reference.FENCE_MAX_LINE
    FENCE_DROP = 0  # nothing to emit
    FENCE_EMIT = 1  # emit the code point
    FENCE_FLUSH = 2  # emit the ``flush`` held-back fence characters (from ``pending_pos``), then the code point
    # emit the repeated code line (``line``, from ``line_start``) and its newline, then call fence_line_reset
    FENCE_LINE = 3


cdef struct FenceState:
    Py_ssize_t repeat_lines  # fence_repeat_lines
    bint line_start, opening, opening_run, in_code
    int pending, flush
    int64_t pending_pos
    cp_t pending_char, fence_char
    Py_ssize_t fence_len, cl_run
    int cl_state
    # repeated code lines inside a fence (_reference.fence_line_counts, fence_repeat_lines)
    cp_t line[FENCE_MAX_LINE]
    cp_t prev[FENCE_MAX_LINE]
    Py_ssize_t line_len, prev_len, blank, letters, run
    bint over
    int64_t line_begin


cdef void fence_init(FenceState* st, Py_ssize_t repeat_lines) noexcept nogil
cdef bint fence_line_end(FenceState* st) noexcept nogil


cdef inline void fence_line_reset(FenceState* st, int64_t start) noexcept nogil:
    st.line_len = 0
    st.blank = 0
    st.letters = 0
    st.over = False
    st.line_begin = start


cdef inline void fence_after_emit(FenceState* st, cp_t c) noexcept nogil:
    if c == 10:
        st.line_start = True
    elif c != 32 and c != 9:
        st.line_start = False


cdef inline int fence_code_step(FenceState* st, cp_t c, int64_t pos) noexcept nogil:
    """A code point inside a fence: the closing fence, or one more of a code line."""
    if c == 10:
        if (st.cl_state == 1 or st.cl_state == 2) and st.cl_run >= st.fence_len:
            st.in_code = False
            st.line_start = True
            st.cl_state = 0
            st.cl_run = 0
            return FENCE_DROP
        st.cl_state = 0
        st.cl_run = 0
        if fence_line_end(st):
            return FENCE_LINE
        fence_line_reset(st, pos + 1)
        return FENCE_DROP
    if st.line_len < FENCE_MAX_LINE:
        st.line[st.line_len] = c
        st.line_len += 1
    else:
        st.over = True
    if is_space(c):
        st.blank += 1
    elif is_alnum(c) and not (48 <= c <= 57):
        st.letters += 1
    if st.cl_state == 0:
        if c == st.fence_char:
            st.cl_state = 1
            st.cl_run = 1
        elif c != 32 and c != 9:
            st.cl_state = 3
    elif st.cl_state == 1:
        if c == st.fence_char:
            st.cl_run += 1
        elif is_space(c):
            st.cl_state = 2
        else:
            st.cl_state = 3
    elif st.cl_state == 2 and not is_space(c):
        st.cl_state = 3
    return FENCE_DROP


cdef inline int fence_step(FenceState* st, cp_t c, int64_t pos) noexcept nogil:
    """One original code point at ``pos``: what to emit (``FENCE_*``)."""
    if st.opening:
        if c == 10:
            st.opening = False
            st.in_code = True
            st.cl_state = 0
            st.cl_run = 0
            fence_line_reset(st, pos + 1)
            st.prev_len = -1
            st.run = 0
        elif st.opening_run and c == st.fence_char:
            st.fence_len += 1
        else:
            st.opening_run = False
        return FENCE_DROP
    if st.in_code:
        return fence_code_step(st, c, pos)
    if st.pending:
        if c == st.pending_char:
            st.pending += 1
            if st.pending == 3:
                st.pending = 0
                st.opening = True
                st.opening_run = True
                st.fence_char = c
                st.fence_len = 3
            return FENCE_DROP
        st.flush = st.pending
        st.pending = 0
        st.line_start = False
        fence_after_emit(st, c)
        return FENCE_FLUSH
    if st.line_start and (c == 96 or c == 126):
        st.pending = 1
        st.pending_char = c
        st.pending_pos = pos
        return FENCE_DROP
    fence_after_emit(st, c)
    return FENCE_EMIT
