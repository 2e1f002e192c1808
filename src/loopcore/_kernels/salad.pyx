# cython: language_level=3
"""T: a window of ``salad_window`` code points made of few symbols and almost no words (a
symbol salad), or a long run of words picked at random from at most ``salad_max_words``
(a word salad) -- see ``salad.pxd``."""

from libc.stdint cimport int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memset

from loopcore._kernels.buffer cimport Buffer, buf_at, buf_map, buf_same
from loopcore._kernels.chars cimport (Py_UNICODE_ISALNUM, Py_UNICODE_ISDIGIT, cu_t, is_alnum, is_cjk_ideograph,
                                      is_item_marker,
                                      is_sentence_mark, is_space, is_wide_stop)
from loopcore._kernels.common cimport Event, HB, Params, check, cp_t, popcount64
from loopcore._kernels.table cimport DistinctCounter, distinct

from loopcore import _reference

cdef Py_ssize_t SALAD_WORD = _reference.SALAD_WORD
cdef Py_ssize_t SALAD_GATE = _reference.SALAD_GATE
cdef double SALAD_MAX_DIGITS = _reference.SALAD_MAX_DIGITS
cdef int64_t SALAD_WORD_WINDOW = _reference.SALAD_WORD_WINDOW
cdef Py_ssize_t SALAD_WORD_REPEAT = _reference.SALAD_WORD_REPEAT
cdef Py_ssize_t SALAD_PAIRS_PER_WORD = _reference.SALAD_PAIRS_PER_WORD
cdef int64_t SALAD_MAX_ITEM_LINE = _reference.SALAD_MAX_ITEM_LINE
cdef int64_t SALAD_BRACKET_REACH = _reference.SALAD_BRACKET_REACH
cdef enum:
    SALAD_MAX_TOKENS = 608  # > SALAD_WORD_WINDOW // 2: a token and its separator are >= 2 code points
assert SALAD_MAX_TOKENS > SALAD_WORD_WINDOW // 2


cdef Py_ssize_t salad_init(SaladState* st, const Params* p, DistinctCounter* ds) noexcept nogil:
    """Set up T; the look-back it needs (code points): its window, and the word window with
    how far back it looks for an open bracket."""
    st.p = p
    st.ds = ds
    if p.salad_max_words:
        return max(p.salad_window + 1, <Py_ssize_t>(SALAD_WORD_WINDOW + SALAD_BRACKET_REACH) + 1)
    return p.salad_window + 1


cdef bint salad_check(SaladState* st, const Buffer* bf, Event* ev) noexcept nogil:
    """_reference.salad.Salad.check: a salad of symbols, else of words."""
    if symbol_salad(st, bf, ev):
        return True
    return st.p.salad_max_words != 0 and word_salad(st, bf, ev)

cdef bint inside_brackets(SaladState* st, const Buffer* bf, int64_t end) noexcept nogil:
    """_reference._inside_brackets(t, end)."""
    cdef int64_t k, stop = end - SALAD_BRACKET_REACH
    cdef Py_ssize_t depth = 0
    cdef bint after_newline = False
    cdef cp_t c
    if stop < 0:
        stop = 0
    check(stop >= bf.base)
    k = end - 1
    while k >= stop:
        c = buf_at(bf, <Py_ssize_t>(k - bf.base))
        k -= 1
        if c == 10:
            if after_newline:
                return False
            after_newline = True
        elif not (c == 32 or c == 9 or c == 13):
            after_newline = False
            if c == 41 or c == 93 or c == 125:
                depth += 1
            elif c == 40 or c == 91 or c == 123:
                if not depth:
                    return True
                depth -= 1
    return False

cdef bint item_start(SaladState* st, const Buffer* bf, int64_t i, int64_t end) noexcept nogil:
    """_reference._item_start(t, i, end)."""
    cdef int64_t k = i
    cdef cp_t c
    while k > 0 and i - k < SALAD_MAX_ITEM_LINE:
        c = buf_at(bf, <Py_ssize_t>(k - 1 - bf.base))
        if c != 32 and c != 9:
            break
        k -= 1
    if k > 0 and buf_at(bf, <Py_ssize_t>(k - 1 - bf.base)) != 10:
        return False
    return item_line(st, bf, k, end)

cdef inline bint item_line(SaladState* st, const Buffer* bf, int64_t start, int64_t end) noexcept nogil:
    """_reference._item_line over t[start:end]."""
    cdef int64_t k = start
    if end - start > SALAD_MAX_ITEM_LINE:
        return False
    while k < end and (buf_at(bf, <Py_ssize_t>(k - bf.base)) == 32 or buf_at(bf, <Py_ssize_t>(k - bf.base)) == 9):
        k += 1
    if k + 1 >= end or not is_item_marker(buf_at(bf, <Py_ssize_t>(k - bf.base))):
        return False
    return buf_at(bf, <Py_ssize_t>(k + 1 - bf.base)) == 32 or buf_at(bf, <Py_ssize_t>(k + 1 - bf.base)) == 9

cdef bint word_salad(SaladState* st, const Buffer* bf, Event* ev) noexcept nogil:
    """_reference.salad.Salad._word_salad: random picks from a handful of words."""
    if bf.width == 1:
        return word_salad_walk(<const uint8_t*>bf.data, st, bf, ev)
    if bf.width == 2:
        return word_salad_walk(<const uint16_t*>bf.data, st, bf, ev)
    return word_salad_walk(<const uint32_t*>bf.data, st, bf, ev)

cdef bint symbol_salad(SaladState* st, const Buffer* bf, Event* ev) noexcept nogil:
    """_reference.salad.Salad._symbol_salad: a window of few symbols and no words."""
    cdef int64_t n = bf.n, lo, i, cut
    cdef Py_ssize_t w = st.p.salad_window, alnum = 0, space = 0, digits = 0, unique, run = 0
    cdef double max_alnum = st.p.salad_max_alnum * <double>w, max_space = st.p.salad_max_space * <double>w
    cdef cp_t c
    if n < w:
        return False
    lo = n - w
    # the gate (part of the rule): the last SALAD_GATE code points alone; prose fails it
    # within a few words
    for i in range(n - min(<int64_t>SALAD_GATE, w), n):
        if is_alnum(buf_at(bf, <Py_ssize_t>(i - bf.base))):
            alnum += 1
            if <double>alnum >= st.p.salad_max_alnum * <double>min(<int64_t>SALAD_GATE, w):
                return False
    alnum = 0
    for i in range(lo, n):
        c = buf_at(bf, <Py_ssize_t>(i - bf.base))
        if is_alnum(c):
            alnum += 1
            if <double>alnum >= max_alnum:
                return False
            digits += 48 <= c <= 57
        elif is_space(c):
            space += 1
    if <double>space >= max_space:
        return False
    if <double>digits >= SALAD_MAX_DIGITS * <double>w:
        return False  # numbers: an enumeration, not a salad
    unique = distinct(st.ds, bf, lo, n, st.p.salad_max_unique)
    if unique >= st.p.salad_max_unique:
        return False
    cut = lo
    for i in range(lo, n):
        c = buf_at(bf, <Py_ssize_t>(i - bf.base))
        if is_alnum(c):
            run += 1
            if run >= SALAD_WORD:
                cut = i + 1
        else:
            run = 0
    ev.start = ev.cut = buf_map(bf, cut)
    ev.ev0 = unique
    ev.ev1 = alnum
    ev.ev2 = w
    return True


cdef inline bint word_salad_walk(const cu_t* buf, SaladState* st, const Buffer* bf, Event* ev) noexcept nogil:
    """ChannelStream._word_salad over the buffer's code units (``buf[x - base]`` is t[x])."""
    cdef int64_t n = bf.n, lo, i, j, line_end, base = bf.base
    cdef int64_t tok_start[SALAD_MAX_TOKENS]
    cdef uint8_t tok_id[SALAD_MAX_TOKENS]
    cdef int64_t w_start[16]
    cdef uint64_t w_hash[16]
    cdef uint64_t h
    cdef Py_ssize_t w_len[16]
    cdef Py_ssize_t counts[16]
    cdef uint64_t pairs[4]
    cdef uint32_t seen = 0
    cdef Py_ssize_t ntok = 0, nw = 0, mark = 0, gap = 0, q, k, wid, ln, unique, npairs, b
    cdef bint spaced = False, digit, quoted = False, glued
    cdef uint32_t c
    lo = n - SALAD_WORD_WINDOW
    if lo < 0:
        lo = 0
    check(lo >= bf.base)
    line_end = n
    i = n
    while i > lo and is_alnum(buf[i - 1 - base]):
        i -= 1  # the last word may go on
    while True:
        if i <= lo:
            if (line_end - lo <= SALAD_MAX_ITEM_LINE) if lo else item_line(st, bf, 0, line_end):
                ntok = mark
            break
        c = buf[i - 1 - base]
        if is_alnum(c):
            glued = gap == 1 and (buf[i - base] == 39 or buf[i - base] == 45 or buf[i - base] == 0x2019)
            if ntok and not (spaced or glued):
                break  # words glued by symbols: code, a path, a formula
            if quoted and not glued:
                break  # quoted words: strings of data ("yes", "no", ...)
            # the word, read back once: its extent, a hash, whether it has a digit
            j = i
            h = 0
            digit = False
            while j > lo:
                c = buf[j - 1 - base]
                if c < 128:
                    if not ((48 <= c <= 57) or (65 <= c <= 90) or (97 <= c <= 122)):
                        break
                    digit = digit or c <= 57
                elif is_cjk_ideograph(c):
                    pass  # a letter, not a digit
                elif Py_UNICODE_ISALNUM(<Py_UCS4>c):
                    digit = digit or Py_UNICODE_ISDIGIT(<Py_UCS4>c)
                else:
                    break
                h = h * HB + c
                j -= 1
            ln = <Py_ssize_t>(i - j)
            i = j
            if j == lo and lo:
                continue  # the window cut it
            if digit:
                break
            gap = 0
            spaced = False
            quoted = False
            if ln == 1 and buf[j - base] < 0x250:
                continue  # one Latin letter is a symbol (a variable, a base, a move), not a word
            wid = -1
            for k in range(nw):
                if w_hash[k] == h and w_len[k] == ln and buf_same(bf, <Py_ssize_t>(w_start[k] - base),
                                                                  <Py_ssize_t>(j - base), ln):
                    wid = k
                    break
            if wid < 0:
                if nw == st.p.salad_max_words:
                    break
                wid = nw
                w_start[nw] = j
                w_len[nw] = ln
                w_hash[nw] = h
                nw += 1
            check(ntok < SALAD_MAX_TOKENS)
            tok_start[ntok] = j
            tok_id[ntok] = <uint8_t>wid
            ntok += 1
            continue
        i -= 1
        if c == 9 or not (is_space(c) or is_wide_stop(c) or is_sentence_mark(c)):
            # a symbol of code, markup, data or a table (a tab: a TSV); a list item's marker
            # drops its line
            if item_start(st, bf, i, line_end):
                ntok = mark
            break
        if is_space(c) or is_wide_stop(c):
            spaced = True
        elif c == 39 or c == 34 or c == 0x2018 or c == 0x2019 or c == 0x201C or c == 0x201D:
            quoted = True
        gap += 1
        if c == 10:
            if ntok - mark == 1 or item_line(st, bf, i + 1, line_end):
                ntok = mark  # a list item, or one word alone: a column of values
                break
            mark = ntok
            line_end = i
    # the counts of the tokens kept (a list line's or the window's first line's are not)
    for k in range(nw):
        counts[k] = 0
    for k in range(ntok):
        counts[tok_id[k]] += 1
    # tokens run back from the end: the run's first token is the last one kept
    q = ntok - 1
    while q >= 0 and counts[tok_id[q]] < SALAD_WORD_REPEAT:
        q -= 1
    if q + 1 < st.p.salad_min_words:
        return False
    memset(pairs, 0, sizeof(pairs))
    for k in range(q + 1):
        seen |= <uint32_t>1 << tok_id[k]
        if k < q:
            b = <Py_ssize_t>tok_id[k + 1] * 16 + tok_id[k]
            pairs[b >> 6] |= <uint64_t>1 << (b & 63)
    unique = 0
    for k in range(16):
        unique += (seen >> k) & 1
    npairs = 0
    for k in range(4):
        npairs += popcount64(pairs[k])
    if npairs < SALAD_PAIRS_PER_WORD * unique:
        return False
    if inside_brackets(st, bf, tok_start[q]):
        return False
    ev.start = ev.cut = buf_map(bf, tok_start[q])
    ev.ev0 = unique
    ev.ev1 = q + 1
    ev.ev3 = 1
    return True
