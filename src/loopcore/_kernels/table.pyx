# cython: language_level=3
"""The one counting table (see ``table.pxd``)."""

from libc.stdint cimport int32_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memset

from loopcore._kernels.buffer cimport Buffer, buf_at
from loopcore._kernels.common cimport NGB, addmod61, cp_t, mulmod61, submod61


cdef int ct_init(CountTable* t, Py_ssize_t slots, bint listed) noexcept nogil:
    """``slots`` (a power of two) empty slots; ``listed``: keep the list of filled slots.
    -1 when out of memory."""
    t.mask = slots - 1
    t.nused = 0
    t.keys = <uint64_t*>malloc(slots * sizeof(uint64_t))
    t.counts = <uint32_t*>calloc(slots, sizeof(uint32_t))
    t.used = <int32_t*>malloc(slots * sizeof(int32_t)) if listed else NULL
    t.bytes = slots * (sizeof(uint64_t) + sizeof(uint32_t) + (sizeof(int32_t) if listed else 0))
    if t.keys == NULL or t.counts == NULL or (listed and t.used == NULL):
        return -1
    return 0


cdef void ct_free(CountTable* t) noexcept nogil:
    free(t.keys)
    free(t.counts)
    free(t.used)
    t.keys = NULL
    t.counts = NULL
    t.used = NULL


cdef void ct_clear(CountTable* t) noexcept nogil:
    """Empty the table: only the filled slots when they are listed."""
    cdef Py_ssize_t j
    if t.used != NULL and t.nused <= (t.mask + 1) // 8:
        for j in range(t.nused):
            t.counts[t.used[j]] = 0
    else:
        memset(t.counts, 0, (t.mask + 1) * sizeof(uint32_t))
    t.nused = 0


cdef uint32_t ct_remove(CountTable* t, uint64_t key) noexcept nogil:
    """One fewer of ``key`` (present); at 0 its slot is freed by backward-shift deletion,
    which keeps linear probing exact without tombstones (the filled-slot list is not kept).
    Returns the count before."""
    cdef Py_ssize_t slot = ct_slot(t, key), i, j, home
    cdef uint32_t c
    while t.keys[slot] != key or t.counts[slot] == 0:
        slot = (slot + 1) & t.mask
    c = t.counts[slot]
    if c > 1:
        t.counts[slot] = c - 1
        return c
    i = slot
    j = slot
    while True:
        j = (j + 1) & t.mask
        if t.counts[j] == 0:
            break
        home = ct_slot(t, t.keys[j])
        if (i <= j and (home <= i or home > j)) or (i > j and home <= i and home > j):
            t.keys[i] = t.keys[j]
            t.counts[i] = t.counts[j]
            i = j
    t.counts[i] = 0
    t.nused -= 1
    return c


cdef Py_ssize_t distinct(DistinctCounter* d, const Buffer* bf, int64_t lo, int64_t hi,
                         Py_ssize_t limit) noexcept nogil:
    """Distinct code points of ``t[lo:hi]``; counting stops at ``limit``."""
    cdef Py_ssize_t count = 0, i
    cdef cp_t c
    cdef uint32_t gen
    d.gen += 1
    if d.gen == 0:
        memset(d.small, 0, sizeof(d.small))
        d.gen = 1
    gen = d.gen
    ct_clear(&d.big)
    i = <Py_ssize_t>(hi - bf.base)
    while i > lo - bf.base:
        i -= 1
        c = buf_at(bf, i)
        if c < 256:
            if d.small[c] == gen:
                continue
            d.small[c] = gen
        elif ct_add(&d.big, c, limit) != 1:
            continue
        count += 1
        if count >= limit:
            return count
    return count


cdef Py_ssize_t max_gram_count(CountTable* t, const Buffer* bf, int64_t lo, int64_t hi, Py_ssize_t k,
                               uint64_t pow_k) noexcept nogil:
    """Largest count of one ``k``-gram of ``t[lo:hi]`` (overlapping; ``pow_k`` = NGB^k
    mod 2^61 - 1: the n-gram hash, ``gram_hashes``)."""
    cdef Py_ssize_t i, a = <Py_ssize_t>(lo - bf.base), b = <Py_ssize_t>(hi - bf.base)
    cdef uint64_t h = 0
    cdef uint32_t top = 0, cnt
    if b - a < k:
        return 0
    ct_clear(t)
    for i in range(a, b):
        h = addmod61(mulmod61(h, NGB), buf_at(bf, i))
        if i - a >= k:
            h = submod61(h, mulmod61(buf_at(bf, i - k), pow_k))
        if i - a >= k - 1:
            cnt = ct_add(t, h, t.mask + 1)
            if cnt > top:
                top = cnt
    return top
