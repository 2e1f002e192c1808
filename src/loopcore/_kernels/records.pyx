# cython: language_level=3
"""Structure classification of lines: records (``loopcore._reference.records``).

A *record* line is a line of data rather than prose: JSON, a table row, a ``key: value``
line, a diff, a path, a number, an offset, a time.  N holds back on windows made mostly
of records (``near_max_record_share``): a listing repeats its shape, not its content.
"""

from libc.stdint cimport int64_t

from loopcore._kernels.buffer cimport Buffer, buf_at
from loopcore._kernels.common cimport cp_t

from loopcore import _reference

cdef Py_ssize_t RECORD_MAX_LINE = _reference.RECORD_MAX_LINE


cdef bint is_record(const Buffer* bf, Py_ssize_t a, Py_ssize_t e) noexcept nogil:
    """_reference.is_record_line over buffer indices ``[a, e)`` (a line without its newline)."""
    cdef Py_ssize_t length = e - a, s = a, j
    cdef cp_t c
    if length > RECORD_MAX_LINE:
        return False
    s = skip_blanks(bf, s, e)
    if s == e:
        return False
    c = buf_at(bf, s)
    if c == 123 or c == 91 or c == 124:  # { [ |
        return True
    if c == 34 and json_string_item(bf, s, e):  # "
        return True
    j = s
    if c == 45 and s + 1 < e and buf_at(bf, s + 1) == 32:  # "- "
        j = s + 2
    if j < e and ((97 <= buf_at(bf, j) <= 122) or buf_at(bf, j) == 95):
        j += 1
        while j < e:
            c = buf_at(bf, j)
            if (48 <= c <= 57) or (65 <= c <= 90) or (97 <= c <= 122) or c == 95 or c == 46 or c == 45:
                j += 1
            else:
                break
        if j < e and buf_at(bf, j) == 58 and (j + 1 == e or buf_at(bf, j + 1) == 32 or buf_at(bf, j + 1) == 9):
            return True
    if starts(bf, s, e, b"@@") or starts(bf, s, e, b"+++") or starts(bf, s, e, b"---") \
            or starts(bf, s, e, b"diff ") or starts(bf, s, e, b"index "):
        return True
    c = buf_at(bf, a)
    if (c == 43 or c == 45) and (length == 1 or (buf_at(bf, a + 1) != 32 and buf_at(bf, a + 1) != 9)
                                 or (length > 2 and (buf_at(bf, a + 2) == 32 or buf_at(bf, a + 2) == 9))):
        return True
    j = s
    while j < e:
        c = buf_at(bf, j)
        if c == 32 or c == 9:
            break
        if c == 47 or c == 92:  # / \
            return True
        if c == 58 and j + 1 < e and buf_at(bf, j + 1) == 58:  # ::
            return True
        j += 1
    return is_offset(bf, s, first_field(bf, s, j))

cdef inline Py_ssize_t skip_blanks(const Buffer* bf, Py_ssize_t j, Py_ssize_t e) noexcept nogil:
    """The first index in ``[j, e)`` that is not a blank or tab (``e``: none)."""
    while j < e and (buf_at(bf, j) == 32 or buf_at(bf, j) == 9):
        j += 1
    return j

cdef Py_ssize_t first_field(const Buffer* bf, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    """The end of the token ``[s, e)``'s first comma-separated field: its first comma not
    between two digits (_reference._first_field)."""
    cdef Py_ssize_t j
    for j in range(s, e):
        if buf_at(bf, j) == 44 and not (
            s < j < e - 1 and 48 <= buf_at(bf, j - 1) <= 57 and 48 <= buf_at(bf, j + 1) <= 57
        ):
            return j
    return e

cdef bint json_string_item(const Buffer* bf, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    """_reference._json_string_item over buffer indices ``[s, e)`` (``s`` is the ``"``)."""
    cdef Py_ssize_t j = s + 1
    cdef cp_t c
    while j < e:
        c = buf_at(bf, j)
        if c == 92:  # backslash: the next code point is escaped
            j += 2
            continue
        if c == 34:
            j += 1
            j = skip_blanks(bf, j, e)
            if j == e:
                return False
            c = buf_at(bf, j)
            if c != 44:
                return c == 58 or c == 93 or c == 125  # : ] }
            j += 1  # a comma: then the end, a field with no blank before it, or a JSON value
            if j == e or (buf_at(bf, j) != 32 and buf_at(bf, j) != 9):
                return True
            j = skip_blanks(bf, j, e)
            if j == e:
                return False
            c = buf_at(bf, j)
            return c == 34 or c == 123 or c == 91 or c == 45 or (48 <= c <= 57)  # " { [ - digit
        j += 1
    return False

cdef bint is_offset(const Buffer* bf, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    """Whether the token ``[s, e)`` is a number or an offset (_reference.is_record_line)."""
    cdef Py_ssize_t j, digits = 0, body
    cdef cp_t c
    cdef bint digit = False, number = True, inner = False
    if e > s and buf_at(bf, e - 1) == 58:  # one trailing ':'
        e -= 1
    body = e
    if e - s > 1 and buf_at(bf, e - 1) == 90 and 48 <= buf_at(bf, e - 2) <= 57:  # ISO 8601's final Z
        body = e - 1
    body = utc_offset(bf, s, body)
    for j in range(s, body):
        c = buf_at(bf, j)
        if 48 <= c <= 57:
            digits += 1
        elif c == 58 or c == 46 or c == 45 or c == 44 or c == 84:  # : . - , T
            if s < j < body - 1 and 48 <= buf_at(bf, j - 1) <= 57 and 48 <= buf_at(bf, j + 1) <= 57:
                inner = True
            elif c == 84:
                number = False
        else:
            number = False
    if number and inner and digits >= 3:
        return True  # a time, date or version
    if e - s >= 2 and buf_at(bf, s) == 48 and (buf_at(bf, s + 1) == 120 or buf_at(bf, s + 1) == 88):  # 0x
        s += 2
    if e - s < 6:
        return False
    for j in range(s, e):
        c = buf_at(bf, j)
        if 48 <= c <= 57:
            digit = True
        elif not ((97 <= c <= 102) or (65 <= c <= 70)):
            return False
    return digit

cdef Py_ssize_t utc_offset(const Buffer* bf, Py_ssize_t s, Py_ssize_t body) noexcept nogil:
    """``body`` without a final UTC offset ``+HH``, ``+HHMM`` or ``+HH:MM`` after a digit
    (_reference._UTC_OFFSET_RE)."""
    cdef Py_ssize_t o, j, size, r
    cdef Py_ssize_t sizes[3]
    sizes[0] = 3
    sizes[1] = 5
    sizes[2] = 6
    for r in range(3):
        size = sizes[r]
        o = body - size
        if o <= s or buf_at(bf, o) != 43 or not (48 <= buf_at(bf, o - 1) <= 57):  # +
            continue
        for j in range(o + 1, body):
            if size == 6 and j == o + 3:
                if buf_at(bf, j) != 58:  # :
                    break
            elif not (48 <= buf_at(bf, j) <= 57):
                break
        else:
            return o
    return body

cdef inline bint starts(const Buffer* bf, Py_ssize_t s, Py_ssize_t e, const char* prefix) noexcept nogil:
    cdef Py_ssize_t j = 0
    while prefix[j] != 0:
        if s + j >= e or buf_at(bf, s + j) != <cp_t>(<unsigned char>prefix[j]):
            return False
        j += 1
    return True

cdef int64_t record_chars(const Buffer* bf, int64_t lo, int64_t n) noexcept nogil:
    """_reference.record_chars over t[lo:n]."""
    cdef Py_ssize_t a = <Py_ssize_t>(lo - bf.base), end_i = <Py_ssize_t>(n - bf.base)
    cdef Py_ssize_t floor_i = <Py_ssize_t>(0 - bf.base), steps = 0, b, e
    cdef bint long_first = False
    cdef int64_t total = 0, stop
    while a > floor_i and buf_at(bf, a - 1) != 10:
        if steps > RECORD_MAX_LINE:
            long_first = True
            break
        a -= 1
        steps += 1
    while a < end_i:
        b = a
        while b < end_i and buf_at(bf, b) != 10:
            b += 1
        e = b
        stop = (b + 1) if b < end_i else end_i
        if not long_first and is_record(bf, a, e):
            total += stop - (a if a > lo - bf.base else lo - bf.base)
        long_first = False
        a = e + 1
    return total
