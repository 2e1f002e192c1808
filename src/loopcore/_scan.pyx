"""Compiled text scans over PEP 393 string data (no ``.encode()``): word tokens
from a set, and the distinct stripped lines of a text that hold a letter or digit.

The tool guard (:mod:`loopguard.results`) runs them over every tool result; the
literal pure-Python reference is :mod:`loopcore._scan_reference` (same results,
tests compare them).  Positions are Unicode code points.  Each scan is one pass
over the string's own code units (one loop per PEP 393 kind), ``nogil``, O(1)
work per code point; an ASCII class table answers for code points below 128.
"""

from cpython.unicode cimport PyUnicode_DATA, PyUnicode_GET_LENGTH, PyUnicode_KIND, PyUnicode_Substring
from libc.stdint cimport uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, realloc


cdef extern from "Python.h":
    ctypedef uint8_t Py_UCS1
    ctypedef unsigned short Py_UCS2
    bint Py_UNICODE_ISSPACE(Py_UCS4 ch) nogil
    bint Py_UNICODE_ISALNUM(Py_UCS4 ch) nogil
    bint Py_UNICODE_ISLINEBREAK(Py_UCS4 ch) nogil


ctypedef fused unit_t:
    Py_UCS1
    Py_UCS2
    Py_UCS4


cdef enum:
    WORD = 1      # ASCII letter, digit or "_" (\w under re.ASCII)
    LETTER = 2    # ASCII letter
    ALNUM = 4     # str.isalnum
    SPACE = 8     # str.isspace
    BREAK = 16    # a line break of str.splitlines

cdef uint8_t ASCII[128]


cdef void _init_table() noexcept:
    cdef int c
    for c in range(128):
        ASCII[c] = 0
        if (97 <= c <= 122) or (65 <= c <= 90):
            ASCII[c] |= WORD | LETTER | ALNUM
        elif 48 <= c <= 57:
            ASCII[c] |= WORD | ALNUM
        elif c == 95:
            ASCII[c] |= WORD
        if (9 <= c <= 13) or (28 <= c <= 32):
            ASCII[c] |= SPACE
        if (10 <= c <= 13) or (28 <= c <= 30):
            ASCII[c] |= BREAK


_init_table()


cdef inline uint8_t _cls(uint32_t ch) noexcept nogil:
    return ASCII[ch] if ch < 128 else 0


cdef inline uint64_t _fingerprint(uint32_t first, uint32_t second, uint32_t last, Py_ssize_t length) noexcept nogil:
    """A token's length and first, second and last ASCII code points (case-folded), mixed:
    cheap to take at the token's end, selective enough that a hit is rarely not a word."""
    cdef uint64_t fp = (<uint64_t> length << 21) | (<uint64_t> (first | 32) << 14) | (<uint64_t> (second | 32) << 7) \
        | <uint64_t> (last | 32)
    return (fp * 0x9E3779B97F4A7C15ULL) | 1


cdef struct Spans:
    Py_ssize_t *at    # start, end, start, end, ...
    Py_ssize_t count
    Py_ssize_t cap
    bint failed


cdef inline void _push(Spans *out, Py_ssize_t start, Py_ssize_t end) noexcept nogil:
    cdef Py_ssize_t *grown
    if out.count == out.cap:
        grown = <Py_ssize_t *> realloc(out.at, 4 * out.cap * sizeof(Py_ssize_t))
        if grown == NULL:
            out.failed = True
            return
        out.at, out.cap = grown, 2 * out.cap
    out.at[2 * out.count] = start
    out.at[2 * out.count + 1] = end
    out.count += 1


cdef int _open(Spans *out, Py_ssize_t cap) except -1:
    out.at = <Py_ssize_t *> malloc(2 * cap * sizeof(Py_ssize_t))
    if out.at == NULL:
        raise MemoryError()
    out.count, out.cap, out.failed = 0, cap, False
    return 0


cdef class TokenFinder:
    """Find the word tokens of a text that are one of ``words``.

    A token is a maximal run of ASCII letters, digits and ``_`` (``\\w`` under
    ``re.ASCII``); tokens are compared with ASCII case folding, so ``words``
    must be lower case.  A token whose fingerprint (length, first, second and
    last code point) is in the set is confirmed against ``words`` (no false match).

    Parameters
    ----------
    words : iterable of str
        Lower-case ASCII words of letters, digits and ``_`` (others can never
        be a token and are dropped: see :attr:`words`).
    """

    cdef readonly frozenset words
    cdef uint64_t *slots
    cdef Py_ssize_t mask
    cdef Py_ssize_t min_len, max_len

    def __cinit__(self, words):
        cdef Py_ssize_t n, size = 8, i
        kept = frozenset(w for w in words if isinstance(w, str) and w and w.isascii() and w.islower()
                         and all(c.isalnum() or c == "_" for c in w))
        self.words = kept
        n = len(kept)
        while size < 2 * n + 2:
            size *= 2
        self.slots = <uint64_t *> malloc(size * sizeof(uint64_t))
        if self.slots == NULL:
            raise MemoryError()
        for i in range(size):
            self.slots[i] = 0
        self.mask = size - 1
        self.min_len = min((len(w) for w in kept), default=1)
        self.max_len = max((len(w) for w in kept), default=0)
        for w in kept:
            self._add(_fingerprint(ord(w[0]), ord(w[1]) if len(w) > 1 else 0, ord(w[-1]), len(w)))

    def __dealloc__(self):
        free(self.slots)

    cdef void _add(self, uint64_t h) noexcept:
        cdef Py_ssize_t i = <Py_ssize_t> ((h >> 40) & <uint64_t> self.mask)
        while self.slots[i] != 0 and self.slots[i] != h:
            i = (i + 1) & self.mask
        self.slots[i] = h

    cdef inline bint _has(self, uint64_t h) noexcept nogil:
        cdef Py_ssize_t i = <Py_ssize_t> ((h >> 40) & <uint64_t> self.mask)
        while self.slots[i] != 0:
            if self.slots[i] == h:
                return True
            i = (i + 1) & self.mask
        return False

    cdef void _scan(self, const unit_t *s, Py_ssize_t n, bint prefix, Spans *out) noexcept nogil:
        cdef Py_ssize_t i = 0, start, stop
        cdef uint8_t want = LETTER if prefix else WORD
        while i < n:
            if not (_cls(s[i]) & WORD):
                i += 1
                continue
            start = i
            while i < n and (_cls(s[i]) & want):
                i += 1
            stop = i
            while i < n and (_cls(s[i]) & WORD):  # the rest of the token (prefix mode)
                i += 1
            if self.min_len <= stop - start <= self.max_len \
                    and self._has(_fingerprint(s[start], s[start + 1] if stop - start > 1 else 0, s[stop - 1],
                                               stop - start)):
                _push(out, start, stop)
                if out.failed:
                    return

    def find(self, object text, bint prefix=False):
        """The ``(start, end)`` spans of the tokens of ``text`` that are one of the words.

        ``prefix=True`` compares the leading run of ASCII letters of each token
        instead (``in`` in ``in5s``); the span is that run.  Spans are in text
        order, never overlapping.
        """
        cdef Py_ssize_t n, i
        cdef int kind
        cdef const void *data
        cdef Spans out
        _check_text(text)
        n, kind, data = PyUnicode_GET_LENGTH(text), PyUnicode_KIND(text), PyUnicode_DATA(text)
        if self.max_len == 0 or n == 0:
            return []
        _open(&out, 16)
        try:
            with nogil:
                if kind == 1:
                    self._scan(<const Py_UCS1 *> data, n, prefix, &out)
                elif kind == 2:
                    self._scan(<const Py_UCS2 *> data, n, prefix, &out)
                else:
                    self._scan(<const Py_UCS4 *> data, n, prefix, &out)
            if out.failed:
                raise MemoryError()
            words = self.words
            found = []
            for i in range(out.count):
                span = (out.at[2 * i], out.at[2 * i + 1])
                if PyUnicode_Substring(text, span[0], span[1]).lower() in words:  # not a hash collision
                    found.append(span)
            return found
        finally:
            free(out.at)


cdef inline bint _alnum(uint32_t ch) noexcept nogil:
    return (ASCII[ch] & ALNUM) != 0 if ch < 128 else Py_UNICODE_ISALNUM(<Py_UCS4> ch)


cdef inline bint _space(uint32_t ch) noexcept nogil:
    return (ASCII[ch] & SPACE) != 0 if ch < 128 else Py_UNICODE_ISSPACE(<Py_UCS4> ch)


cdef inline bint _break(uint32_t ch) noexcept nogil:
    return (ASCII[ch] & BREAK) != 0 if ch < 128 else Py_UNICODE_ISLINEBREAK(<Py_UCS4> ch)


cdef void _lines(const unit_t *s, Py_ssize_t n, Py_ssize_t max_lines, Spans *out) noexcept nogil:
    cdef Py_ssize_t lines = 0, i = 0, start, end, a, b
    cdef bint word
    while i < n and lines < max_lines:
        start = i
        word = False
        while i < n and not _break(s[i]):
            if not word and _alnum(s[i]):
                word = True
            i += 1
        end = i
        if i < n:  # the line break: "\r\n" is one
            if s[i] == 13 and i + 1 < n and s[i + 1] == 10:
                i += 1
            i += 1
        lines += 1
        if not word:
            continue
        a, b = start, end
        while a < b and _space(s[a]):
            a += 1
        while b > a and _space(s[b - 1]):
            b -= 1
        _push(out, a, b)
        if out.failed:
            return


cdef int _check_text(object text) except -1:
    if not isinstance(text, str):
        raise TypeError(f"text must be str, not {type(text).__name__}")
    return 0


def word_lines(object text, object max_lines):
    """The distinct lines among the first ``max_lines`` lines of ``text`` (as
    ``str.splitlines``), each stripped (``str.strip``), that hold a letter or
    digit (``str.isalnum`` of one code point), as a frozenset.

    The same as ``frozenset(l for l in map(str.strip, text.splitlines()[:max_lines])
    if any(c.isalnum() for c in l))``, in one pass without the GIL.
    """
    cdef Py_ssize_t n, i, most
    cdef int kind
    cdef const void *data
    cdef Spans out
    _check_text(text)
    if isinstance(max_lines, bool) or not isinstance(max_lines, int):
        raise TypeError(f"max_lines must be an int, not {type(max_lines).__name__}")
    n, kind, data = PyUnicode_GET_LENGTH(text), PyUnicode_KIND(text), PyUnicode_DATA(text)
    if max_lines <= 0 or n == 0:
        return frozenset()
    most = min(max_lines, n)  # a text of n code points has at most n lines
    _open(&out, 64)
    try:
        with nogil:
            if kind == 1:
                _lines(<const Py_UCS1 *> data, n, most, &out)
            elif kind == 2:
                _lines(<const Py_UCS2 *> data, n, most, &out)
            else:
                _lines(<const Py_UCS4 *> data, n, most, &out)
        if out.failed:
            raise MemoryError()
        return frozenset([PyUnicode_Substring(text, out.at[2 * i], out.at[2 * i + 1]) for i in range(out.count)])
    finally:
        free(out.at)
