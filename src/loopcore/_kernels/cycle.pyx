# cython: language_level=3
"""C: the tail is ``cycle_min_copies`` or more whole copies of a period ``p`` in
[``cycle_min_period``, ``cycle_max_period``], covering ``cycle_min_chars`` or more, within the
last ``cycle_scan_chars`` (see ``cycle.pxd``).

A prefilter over a ring of ck-gram hash tags; only when some shift ``p`` could be a
cycle, a Z-function over the reversed tail gives the reach of every period and the
largest valid suffix.  A held cycle is verified with one comparison per block.
"""

from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc

from loopcore._kernels.buffer cimport Buffer, buf_at, buf_map, buf_same
from loopcore._kernels.chars cimport cu_t
from loopcore._kernels.common cimport (Arena, Event, HB, SCAN_BLOCK, Params, arena_take, check, ipow, pow2_at_least,
                                       ring_has)


cdef Py_ssize_t cycle_init(CycleState* st, const Params* p, Arena* a) noexcept nogil:
    """Set up C in arena ``a``; the look-back it needs (code points)."""
    cdef Py_ssize_t best = 32, p_star, cand, need, size, r
    cdef Py_ssize_t cands[4]
    st.p = p
    # ck: the shortest match length any valid period p needs
    # (need(p) = max(min_chars, copies*p) - p), capped to 32.
    p_star = p.cycle_min_chars // p.cycle_min_copies
    cands[0] = p.cycle_min_period
    cands[1] = p.cycle_max_period
    cands[2] = p_star
    cands[3] = p_star + 1
    for r in range(4):
        cand = cands[r]
        if p.cycle_min_period <= cand <= p.cycle_max_period:
            need = max(p.cycle_min_chars, p.cycle_min_copies * cand) - cand
            best = min(best, need)
    st.ck = max(1, best)
    size = pow2_at_least(p.cycle_max_period + 2)
    st.ring = <uint16_t*>arena_take(a, size * sizeof(uint16_t))
    st.mask = size - 1
    st.hc_out = ipow(HB, st.ck)
    return max(p.cycle_scan_chars + 1, st.ck + p.check_every + 1)


cdef void cycle_free(CycleState* st) noexcept nogil:
    free(st.zbuf)
    st.zbuf = NULL


cdef inline void cycle_hash_chunk(const cu_t* buf, Py_ssize_t idx, Py_ssize_t count, CycleState* st) noexcept nogil:
    """C's rolling hash over ``count`` positions from buffer index ``idx``: the tag of the
    ck-gram ending at each position into the ring."""
    cdef uint64_t h = st.hc, out = st.hc_out
    cdef int64_t i = st.done, ck = st.ck
    cdef Py_ssize_t x, mask = st.mask
    cdef uint16_t* ring = st.ring
    for x in range(count):
        h = h * HB + buf[idx + x]
        if i + x >= ck:
            h -= buf[idx + x - ck] * out
        ring[(i + x) & mask] = <uint16_t>(h >> 48)
    st.hc = h


cdef void cycle_catch_up(CycleState* st, const Buffer* bf) noexcept nogil:
    """Tag the ck-grams ending at the positions appended since the last checkpoint
    (C reads its ring only at checkpoints, so it is filled per block)."""
    cdef Py_ssize_t idx = <Py_ssize_t>(st.done - bf.base), count = <Py_ssize_t>(bf.n - st.done)
    check(idx >= 0 and idx + count <= bf.blen)
    if bf.width == 1:
        cycle_hash_chunk(<const uint8_t*>bf.data, idx, count, st)
    elif bf.width == 2:
        cycle_hash_chunk(<const uint16_t*>bf.data, idx, count, st)
    else:
        cycle_hash_chunk(<const uint32_t*>bf.data, idx, count, st)
    st.done = bf.n

cdef bint cycle_check(CycleState* st, const Buffer* bf, Event* ev, bint holding) noexcept nogil:
    """C at a checkpoint; ``holding``: C held at the previous one."""
    cdef int64_t n = bf.n
    cdef Py_ssize_t span = <Py_ssize_t>(n if n < st.p.cycle_scan_chars else st.p.cycle_scan_chars)
    cdef Py_ssize_t top_p = span // st.p.cycle_min_copies, p, need, lim, e0, i, z, zl, r
    cdef Py_ssize_t reach, small, best_len = 0, best_p = 0, p0, p1
    cdef uint16_t x
    cdef bint candidate = False
    cdef int32_t* Z = st.zbuf
    cycle_catch_up(st, bf)
    if top_p > st.p.cycle_max_period:
        top_p = st.p.cycle_max_period
    if top_p < st.p.cycle_min_period or n < st.ck:
        return False
    e0 = <Py_ssize_t>(n - 1 - bf.base)
    # a held cycle whose period the new text continues still holds: one comparison of the
    # block (with 3+ copies a stretch that keeps period p cannot come to hold only for a
    # smaller shift, Fine and Wilf; the episode's report is out already, so only "holds" counts)
    p = st.held_p
    if holding and p and st.p.cycle_min_copies >= 3 and st.held_n < n and p <= top_p:
        need = <Py_ssize_t>(n - st.held_n)
        if buf_same(bf, e0 - need + 1, e0 - need + 1 - p, need):
            st.held_n = n
            return True
    st.held_p = 0
    # prefilter: the smallest p whose tag matches and whose needed match length holds (one
    # memcmp each); the tags are scanned a block of periods at a time (vectorised), and
    # one by one only inside a block that holds the tag
    x = st.ring[(n - 1) & st.mask]
    p0 = st.p.cycle_min_period
    while p0 <= top_p and not candidate:
        p1 = min(p0 + SCAN_BLOCK, top_p + 1)
        if ring_has(st.ring, st.mask, n - p1, n - p0, x):
            for p in range(p0, p1):
                if st.ring[(n - 1 - p) & st.mask] != x:
                    continue
                lim = st.p.cycle_min_copies * p
                if lim < st.p.cycle_min_chars:
                    lim = st.p.cycle_min_chars
                if lim > span:
                    continue
                need = lim - p
                if buf_same(bf, e0 - need + 1, e0 - p - need + 1, need):
                    candidate = True
                    break
        p0 = p1
    if not candidate:
        return False
    if Z == NULL:
        Z = st.zbuf = <int32_t*>malloc((st.p.cycle_max_period + 2) * sizeof(int32_t))
        if Z == NULL:
            st.failed = True
            return False
        st.lazy_bytes += (st.p.cycle_max_period + 2) * sizeof(int32_t)
    # Z-function of the reversed tail r[k] = t[n-1-k], for shifts 1..top_p
    zl = 0
    r = 0
    small = 0
    for i in range(1, top_p + 1):
        z = 0
        if i < r:
            z = r - i
            if Z[i - zl] < z:
                z = Z[i - zl]
        if i + z >= r:
            # extend in blocks of 16 with memcmp, then one by one
            while i + z + 16 <= span and buf_same(bf, e0 - z - 15, e0 - i - z - 15, 16):
                z += 16
            while i + z < span and buf_at(bf, e0 - z) == buf_at(bf, e0 - i - z):
                z += 1
            if i + z > r:
                zl = i
                r = i + z
        Z[i] = <int32_t>z
        reach = z + i
        if reach > small:
            if (i >= st.p.cycle_min_period and reach >= st.p.cycle_min_chars
                    and reach >= st.p.cycle_min_copies * i):
                best_len = reach
                best_p = i
            small = reach
    if best_p == 0:
        return False
    st.held_p, st.held_n = best_p, n
    ev.start = buf_map(bf, n - best_len)
    ev.cut = buf_map(bf, n - best_len + best_p)
    ev.ev0 = best_p
    ev.ev1 = best_len // best_p
    ev.ev2 = best_len
    return True
