# cython: language_level=3
"""P, the phrase pool (see ``pool.pxd``)."""

from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memcmp

from loopcore._kernels.buffer cimport Buffer, buf_at, buf_map
from loopcore._kernels.common cimport Arena, Event, HB, MAX_PHR, Params, arena_take, check, cp_t


cdef Py_ssize_t pool_init(PoolState* st, const Params* p, Arena* a) noexcept nogil:
    """Set up P in arena ``a`` (the records' text apart: it widens with the buffer); the
    look-back it needs (code points).  -1 when out of memory."""
    cdef Py_ssize_t g
    st.p = p
    st.rec_cap = 4 * p.pool_window
    st.rec_start = <int64_t*>arena_take(a, st.rec_cap * sizeof(int64_t))
    st.rec_len = <int32_t*>arena_take(a, st.rec_cap * sizeof(int32_t))
    st.rec_hash = <uint64_t*>arena_take(a, st.rec_cap * sizeof(uint64_t))
    st.rec_grp = <int32_t*>arena_take(a, st.rec_cap * sizeof(int32_t))
    st.s_text = <cp_t*>arena_take(a, p.pool_max_phrase_chars * sizeof(cp_t))
    st.grp_rep = <int32_t*>arena_take(a, p.pool_window * sizeof(int32_t))
    st.grp_count = <int32_t*>arena_take(a, p.pool_window * sizeof(int32_t))
    st.grp_active = <int32_t*>arena_take(a, p.pool_window * sizeof(int32_t))
    st.grp_free = <int32_t*>arena_take(a, p.pool_window * sizeof(int32_t))
    st.s_begin = -1
    st.s_line = LC_START
    if a.base != NULL:
        for g in range(p.pool_window):
            st.grp_free[g] = <int32_t>(p.pool_window - 1 - g)
        st.grp_nfree = p.pool_window
        # records are stored 1, 2 or 4 bytes per code point like the buffer (widened with it)
        st.rec_text = calloc(st.rec_cap * p.pool_max_phrase_chars, 1)
        st.rec_width = 1
        if st.rec_text == NULL:
            return -1
    return p.pool_max_phrase_chars + 2


cdef void pool_free(PoolState* st) noexcept nogil:
    free(st.rec_text)
    st.rec_text = NULL


cdef Py_ssize_t pool_bytes(const PoolState* st) noexcept nogil:
    """Bytes held outside the arena: the records' text."""
    return st.rec_cap * st.p.pool_max_phrase_chars * st.rec_width if st.rec_text != NULL else 0


cdef void save_open_sentence(PoolState* st, const Buffer* bf, int64_t new_base) noexcept nogil:
    """The buffer is about to drop t before ``new_base``: an open short sentence followed by
    a long run of whitespace may start there, so its text is kept (any later non-blank code
    point would make it longer than a phrase, so the copy stays exact)."""
    cdef Py_ssize_t i, ln
    if st.s_begin >= 0 and not st.s_saved and st.s_begin < new_base:
        ln = <Py_ssize_t>(st.s_last - st.s_begin + 1)
        if ln <= st.p.pool_max_phrase_chars:
            for i in range(ln):
                st.s_text[i] = buf_at(bf, <Py_ssize_t>(st.s_begin - bf.base) + i)
            st.s_saved = True


cdef void complete_sentence(PoolState* st, const Buffer* bf) noexcept nogil:
    cdef int64_t begin = st.s_begin, total
    cdef Py_ssize_t ln, slot, i, g, old, j, gi
    cdef uint64_t h
    cdef cp_t c
    cdef bint saved = st.s_saved
    st.s_begin = -1
    st.s_pending = False
    st.s_saved = False
    if begin < 0:
        st.s_alnum = False
        return
    if not st.s_alnum or st.s_line == LC_EXCLUDED:
        st.s_alnum = False
        return
    st.s_alnum = False
    ln = <Py_ssize_t>(st.s_last - begin + 1)
    total = st.rec_total
    slot = <Py_ssize_t>(total % st.rec_cap)
    # the record leaving the window gives up its group membership
    if total >= st.p.pool_window:
        old = <Py_ssize_t>((total - st.p.pool_window) % st.rec_cap)
        g = st.rec_grp[old]
        st.rec_grp[old] = -1
        if g >= 0:
            st.grp_count[g] -= 1
            if st.grp_count[g] == 0:
                for gi in range(st.grp_nactive):
                    if st.grp_active[gi] == g:
                        st.grp_active[gi] = st.grp_active[st.grp_nactive - 1]
                        st.grp_nactive -= 1
                        break
                st.grp_free[st.grp_nfree] = <int32_t>g
                st.grp_nfree += 1
    st.rec_start[slot] = buf_map(bf, begin)
    st.rec_len[slot] = <int32_t>ln
    st.rec_grp[slot] = -1
    if ln <= st.p.pool_max_phrase_chars:
        h = <uint64_t>ln
        for i in range(ln):
            c = st.s_text[i] if saved else buf_at(bf, <Py_ssize_t>(begin - bf.base) + i)
            h = h * HB + c
            rec_put(st, slot, i, c)
        st.rec_hash[slot] = h
        g = -1
        for gi in range(st.grp_nactive):
            j = st.grp_rep[st.grp_active[gi]]
            if same_text(st, j, slot):
                g = st.grp_active[gi]
                break
        if g < 0:
            st.grp_nfree -= 1
            g = st.grp_free[st.grp_nfree]
            st.grp_count[g] = 0
            st.grp_active[st.grp_nactive] = <int32_t>g
            st.grp_nactive += 1
        st.grp_count[g] += 1
        st.grp_rep[g] = <int32_t>slot
        st.rec_grp[slot] = <int32_t>g
    st.rec_total = total + 1

cdef inline bint same_text(PoolState* st, Py_ssize_t a, Py_ssize_t b) noexcept nogil:
    return (st.rec_len[a] == st.rec_len[b] and st.rec_hash[a] == st.rec_hash[b]
            and memcmp(rec_at(st, a), rec_at(st, b), st.rec_len[a] * st.rec_width) == 0)

cdef inline void rec_put(PoolState* st, Py_ssize_t slot, Py_ssize_t i, cp_t c) noexcept nogil:
    cdef Py_ssize_t at = slot * st.p.pool_max_phrase_chars + i
    check(st.rec_width == 4 or c < (<cp_t>1 << (8 * st.rec_width)))
    if st.rec_width == 1:
        (<uint8_t*>st.rec_text)[at] = <uint8_t>c
    elif st.rec_width == 2:
        (<uint16_t*>st.rec_text)[at] = <uint16_t>c
    else:
        (<uint32_t*>st.rec_text)[at] = c


cdef void widen_records(PoolState* st, int width) noexcept nogil:
    """Store the pool's records ``width`` bytes per code point, as the buffer now is."""
    cdef Py_ssize_t n = st.rec_cap * st.p.pool_max_phrase_chars, i
    cdef void* wider = malloc(<size_t>n * width)
    cdef cp_t c
    if wider == NULL:
        st.failed = True
        return
    for i in range(n):
        if st.rec_width == 1:
            c = (<const uint8_t*>st.rec_text)[i]
        else:
            c = (<const uint16_t*>st.rec_text)[i]
        if width == 2:
            (<uint16_t*>wider)[i] = <uint16_t>c
        else:
            (<uint32_t*>wider)[i] = c
    free(st.rec_text)
    st.rec_text = wider
    st.rec_width = width


cdef bint is_phrase_group(PoolState* st, Py_ssize_t g) noexcept nogil:
    return st.grp_count[g] >= st.p.pool_min_occurrences

cdef bint pool_check(PoolState* st, const Buffer* bf, Event* ev, bint holding) noexcept nogil:
    """P at a checkpoint; ``holding``: P held at the previous one (the details are skipped)."""
    cdef Py_ssize_t gi, g, covered = 0, distinct = 0, m, j, slot, members, before, k
    cdef int64_t first, rec
    cdef Py_ssize_t phr_groups[MAX_PHR]
    cdef bint seen
    if st.rec_total < st.p.pool_window:
        return False
    for gi in range(st.grp_nactive):
        g = st.grp_active[gi]
        if is_phrase_group(st, g):
            covered += st.grp_count[g]
            distinct += 1
    if <double>covered < st.p.pool_min_coverage * <double>st.p.pool_window:
        return False
    if distinct < st.p.pool_min_distinct or distinct > st.p.pool_max_distinct:
        return False
    if holding:
        return True  # same episode: nothing is reported, skip the details
    # evidence: the phrases in order of first occurrence in the window
    ev.nphr = 0
    for rec in range(st.rec_total - st.p.pool_window, st.rec_total):
        slot = <Py_ssize_t>(rec % st.rec_cap)
        g = st.rec_grp[slot]
        if g < 0 or not is_phrase_group(st, g):
            continue
        seen = False
        for k in range(ev.nphr):
            if phr_groups[k] == g:
                seen = True
                break
        if not seen and ev.nphr < MAX_PHR:
            phr_groups[ev.nphr] = g
            ev.phr_slot[ev.nphr] = <int32_t>slot
            ev.nphr += 1
    ev.coverage = <double>covered / <double>st.p.pool_window
    ev.ev0 = covered
    # cut: the first retained sentence S_j in P whose suffix keeps the coverage
    m = <Py_ssize_t>(st.rec_total if st.rec_total < st.rec_cap else st.rec_cap)
    first = st.rec_total - m
    members = 0
    for rec in range(first, st.rec_total):
        if in_pool(st, <Py_ssize_t>(rec % st.rec_cap)):
            members += 1
    before = 0
    for j in range(m):
        slot = <Py_ssize_t>((first + j) % st.rec_cap)
        if in_pool(st, slot):
            if <double>(members - before) >= st.p.pool_min_coverage * <double>(m - j):
                ev.start = ev.cut = st.rec_start[slot]
                return True
            before += 1
    return True  # unreachable: the window itself keeps the coverage

cdef bint in_pool(PoolState* st, Py_ssize_t slot) noexcept nogil:
    """Whether the record in ``slot`` is one of the current phrases."""
    cdef Py_ssize_t gi, g
    if st.rec_len[slot] > st.p.pool_max_phrase_chars:
        return False
    for gi in range(st.grp_nactive):
        g = st.grp_active[gi]
        if is_phrase_group(st, g) and same_text(st, st.grp_rep[g], slot):
            return True
    return False
