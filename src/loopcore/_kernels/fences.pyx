# cython: language_level=3
"""Fence masking (see ``fences.pxd``)."""

from libc.string cimport memcmp, memcpy

from loopcore._kernels.common cimport cp_t

from loopcore import _reference

cdef Py_ssize_t FENCE_MIN_CHARS = _reference.FENCE_MIN_CHARS
cdef Py_ssize_t FENCE_MIN_LETTERS = _reference.FENCE_MIN_LETTERS
assert FENCE_MAX_LINE == _reference.FENCE_MAX_LINE


cdef void fence_init(FenceState* st, Py_ssize_t repeat_lines) noexcept nogil:
    st.repeat_lines = repeat_lines
    st.line_start = True


cdef bint fence_line_end(FenceState* st) noexcept nogil:
    """A code line ended (its newline), not the closing fence: whether it is the
    ``fence_repeat_lines``-th or later identical counting line in a row, to be emitted with
    its newline (_reference.fences.Fences.take)."""
    cdef bint counts = (not st.over and st.line_len - st.blank >= FENCE_MIN_CHARS
                        and st.letters >= FENCE_MIN_LETTERS)
    if counts and st.prev_len == st.line_len and \
            memcmp(st.line, st.prev, <size_t>st.line_len * sizeof(cp_t)) == 0:
        st.run += 1
    else:
        st.run = 1 if counts else 0
        if counts:
            memcpy(st.prev, st.line, <size_t>st.line_len * sizeof(cp_t))
        st.prev_len = st.line_len if counts else -1
    return 0 < st.repeat_lines <= st.run
