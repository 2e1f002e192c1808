# cython: language_level=3
"""Character classes of the kernels, exactly as ``loopcore._reference.chars`` (the suite
tests them against Python's own ``str`` methods)."""

from libc.stdint cimport uint8_t, uint16_t, uint32_t

from loopcore._kernels.common cimport cp_t

cdef extern from "Python.h":
    bint Py_UNICODE_ISALNUM(Py_UCS4 ch) nogil
    bint Py_UNICODE_ISDIGIT(Py_UCS4 ch) nogil


ctypedef fused cu_t:  # one code unit of a buffer stored 1, 2 or 4 bytes per code point
    uint8_t
    uint16_t
    uint32_t


cdef inline cp_t read_char(int kind, const void* data, Py_ssize_t i) noexcept nogil:
    """Code point ``i`` of PEP 393 data of ``kind`` (1, 2 or 4 bytes per code point)."""
    if kind == 1:
        return (<const uint8_t*>data)[i]
    if kind == 2:
        return (<const uint16_t*>data)[i]
    return (<const uint32_t*>data)[i]


cdef inline bint is_space(cp_t c) noexcept nogil:
    """Exactly ``str.isspace`` (the set is tested against Python in the suite)."""
    if c < 128:
        return c == 32 or (9 <= c <= 13) or (28 <= c <= 31)
    if c < 0x2000:
        return c == 0x85 or c == 0xA0 or c == 0x1680
    if c <= 0x200A:
        return True
    return c == 0x2028 or c == 0x2029 or c == 0x202F or c == 0x205F or c == 0x3000


cdef inline bint is_cjk_ideograph(cp_t c) noexcept nogil:
    """U+4E00..U+9FEF, CJK unified ideographs: all letters (``isalnum``), none a digit
    (``isdigit``) since Unicode 11 (``tests/test_parity.py`` checks it against this Python)."""
    return 0x4E00 <= c <= 0x9FEF


cdef inline bint is_alnum(cp_t c) noexcept nogil:
    """``str.isalnum`` of one code point."""
    if c < 128:
        return (48 <= c <= 57) or (65 <= c <= 90) or (97 <= c <= 122)
    if is_cjk_ideograph(c):
        return True
    return Py_UNICODE_ISALNUM(<Py_UCS4>c)


cdef inline bint is_ascii_digit(cp_t c) noexcept nogil:
    return 48 <= c <= 57


cdef inline bint is_blank(cp_t c) noexcept nogil:
    """A blank or a tab."""
    return c == 32 or c == 9


cdef inline bint is_sentence_mark(cp_t c) noexcept nogil:
    """``c in _reference._SENTENCE_MARKS`` (T's word salad: what may separate its words)."""
    if c < 128:
        return c == 44 or c == 46 or c == 59 or c == 58 or c == 33 or c == 63 or c == 39 \
            or c == 34 or c == 45
    return c == 0x2026 or c == 0x2018 or c == 0x2019 or c == 0x201C or c == 0x201D \
        or c == 0x2013 or c == 0x2014


cdef inline bint is_wide_stop(cp_t c) noexcept nogil:
    """``c in _reference._WIDE_STOPS`` (CJK full-width stops)."""
    return c == 0xFF0C or c == 0x3002 or c == 0xFF1B or c == 0xFF1A or c == 0xFF01 \
        or c == 0xFF1F or c == 0x3001


cdef inline bint is_item_marker(cp_t c) noexcept nogil:
    """``c in _reference._ITEM_MARKERS``."""
    return c == 45 or c == 42 or c == 43 or c == 0x2022 or c == 62
