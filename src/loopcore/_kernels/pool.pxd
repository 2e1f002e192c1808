# cython: language_level=3
"""P, the phrase pool (seed 003; ``pool.pyx``, ``loopcore._reference.pool``): sentences
are segmented as t grows (``sentence_step``, per code point), each becomes a record, and
records with the same text form a group; P holds when the groups recurring
``pool_min_occurrences`` times cover ``pool_min_coverage`` of the last ``pool_window``
sentences with ``pool_min_distinct``..``pool_max_distinct`` phrases."""

from libc.stdint cimport int32_t, int64_t, uint64_t

from loopcore._kernels.buffer cimport Buffer
from loopcore._kernels.chars cimport cu_t, is_alnum, is_cjk_ideograph, is_space
from loopcore._kernels.common cimport Arena, Event, Params, cp_t

# line classes (spec §2.5); the undecided ones come before LC_NORMAL
cdef enum:
    LC_START = 0
    LC_BULLET = 1
    LC_DIGITS = 2
    LC_DPUNCT = 3
    LC_GT = 4
    LC_KEY = 5  # an identifier at the line start: maybe ``key: value`` (pool_skip_key_value)
    LC_KEYCOLON = 6  # ``key:`` read: a blank or the line end makes it a data line
    LC_NORMAL = 7
    LC_EXCLUDED = 8


cdef struct PoolState:
    const Params* p
    # the open sentence: t offsets of its first and last code point (-1: none)
    int64_t s_begin, s_last
    cp_t* s_text  # its text, saved when compaction would drop it
    bint s_saved, s_alnum, s_pending
    int s_line, s_digits
    # the records: a ring of rec_cap sentences
    Py_ssize_t rec_cap
    int64_t rec_total
    int64_t* rec_start
    int32_t* rec_len
    uint64_t* rec_hash
    int32_t* rec_grp
    void* rec_text  # each record's text, rec_width bytes per code point (the buffer's width)
    int rec_width
    # groups of records with the same text
    int32_t* grp_rep
    int32_t* grp_count
    int32_t* grp_active
    int32_t* grp_free
    Py_ssize_t grp_nactive, grp_nfree
    bint failed


cdef Py_ssize_t pool_init(PoolState* st, const Params* p, Arena* a) noexcept nogil
cdef void pool_free(PoolState* st) noexcept nogil
cdef Py_ssize_t pool_bytes(const PoolState* st) noexcept nogil
cdef void complete_sentence(PoolState* st, const Buffer* bf) noexcept nogil
cdef void widen_records(PoolState* st, int width) noexcept nogil
cdef void save_open_sentence(PoolState* st, const Buffer* bf, int64_t new_base) noexcept nogil
cdef bint pool_check(PoolState* st, const Buffer* bf, Event* ev, bint holding) noexcept nogil


cdef inline const char* rec_at(const PoolState* st, Py_ssize_t slot) noexcept nogil:
    """The text of the record in ``slot`` (``rec_width`` bytes per code point)."""
    return <const char*>st.rec_text + slot * st.p.pool_max_phrase_chars * st.rec_width


cdef inline void sentence_step(PoolState* st, const Buffer* bf, cp_t c, int64_t at) noexcept nogil:
    """Sentence segmentation and line classes (spec §2.5), one code point of t at offset ``at``."""
    cdef int lc = st.s_line
    # fast path: the line class is decided and no terminal is pending; an ASCII code point
    # other than the newline, or a CJK ideograph (most code points of most text).  Exactly
    # the general path below for them: blanks end nothing, anything else extends the
    # sentence, letters and digits make it count, '.', '!' and '?' may end it.
    if lc >= LC_NORMAL and not st.s_pending:
        if c < 128 and c != 10:
            if c <= 32 and is_space(c):
                return
            if st.s_begin < 0:
                st.s_begin = at
            st.s_last = at
            if (48 <= c <= 57) or (65 <= c <= 90) or (97 <= c <= 122):
                st.s_alnum = True
            elif c == 46 or c == 33 or c == 63:
                st.s_pending = True
            return
        if is_cjk_ideograph(c):
            if st.s_begin < 0:
                st.s_begin = at
            st.s_last = at
            st.s_alnum = True
            return
    if c == 10:
        if lc == LC_KEYCOLON:
            st.s_line = LC_EXCLUDED  # ``key:`` at the end of the line
        complete_sentence(st, bf)
        st.s_line = LC_START
        st.s_digits = 0
        st.s_pending = False
        return
    # line class (list item, table row, quote) from the first characters
    if lc == LC_START:
        if c == 32 or c == 9:
            pass
        elif c == 45 or c == 42 or c == 43:
            st.s_line = LC_BULLET
        elif 48 <= c <= 57:
            st.s_line = LC_DIGITS
            st.s_digits = 1
        elif c == 124:
            st.s_line = LC_EXCLUDED
        elif c == 62:
            st.s_line = LC_GT
        elif st.p.pool_skip_key_value and ((97 <= c <= 122) or c == 95):  # a lower-case key: YAML, not a label
            st.s_line = LC_KEY
        else:
            st.s_line = LC_NORMAL
    elif lc == LC_KEY:
        if (48 <= c <= 57) or (65 <= c <= 90) or (97 <= c <= 122) or c == 95 or c == 46 or c == 45:
            pass
        elif c == 58:
            st.s_line = LC_KEYCOLON
        else:
            st.s_line = LC_NORMAL
    elif lc == LC_KEYCOLON:
        st.s_line = LC_EXCLUDED if (c == 32 or c == 9) else LC_NORMAL
    elif lc == LC_BULLET or lc == LC_DPUNCT or lc == LC_GT:
        st.s_line = LC_EXCLUDED if (c == 32 or c == 9) else LC_NORMAL
    elif lc == LC_DIGITS:
        if 48 <= c <= 57:
            st.s_digits += 1
            if st.s_digits > 9:
                st.s_line = LC_NORMAL
        elif c == 46 or c == 41:
            st.s_line = LC_DPUNCT
        else:
            st.s_line = LC_NORMAL
    # sentence boundaries
    if st.s_pending:
        if is_space(c):
            complete_sentence(st, bf)
            return
        st.s_pending = False
    if is_space(c):
        return
    if st.s_begin < 0:
        st.s_begin = at
    st.s_last = at
    if not st.s_alnum and is_alnum(c):
        st.s_alnum = True
    if c == 0x3002 or c == 0xFF01 or c == 0xFF1F:
        complete_sentence(st, bf)
    elif c == 46 or c == 33 or c == 63 or c == 0x2026:
        st.s_pending = True


cdef inline void sentence_run(PoolState* st, const Buffer* bf, const cu_t* src, Py_ssize_t run,
                              int64_t at0) noexcept nogil:
    """:func:`sentence_step` over ``run`` code points of ``src`` at t offsets from ``at0``: the
    plain ones (what the step's fast path takes, but the terminals '.', '!' and '?') in a
    tight loop with the open sentence in registers, the others through the step."""
    cdef Py_ssize_t j = 0
    cdef int64_t begin, last
    cdef bint alnum
    cdef cp_t c
    while j < run:
        if st.s_line >= LC_NORMAL and not st.s_pending:
            begin = st.s_begin
            last = st.s_last
            alnum = st.s_alnum
            while j < run:
                c = src[j]
                if c < 128:
                    if c == 10 or c == 46 or c == 33 or c == 63:
                        break
                    if c <= 32 and is_space(c):
                        j += 1
                        continue
                    if (48 <= c <= 57) or (65 <= c <= 90) or (97 <= c <= 122):
                        alnum = True
                elif is_cjk_ideograph(c):
                    alnum = True
                else:
                    break
                if begin < 0:
                    begin = at0 + j
                last = at0 + j
                j += 1
            st.s_begin = begin
            st.s_last = last
            st.s_alnum = alnum
            if j >= run:
                return
        sentence_step(st, bf, src[j], at0 + j)
        j += 1
