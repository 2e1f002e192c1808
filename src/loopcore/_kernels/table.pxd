# cython: language_level=3
"""The one counting table of the kernels (``table.pyx``): open addressing over 64-bit keys
with linear probing, a count per key (0: an empty slot), and optionally the list of the
slots filled since the last clear (to iterate them, and to clear in O(filled)).

Used for the distinct code points of a window (L, S, T), the n-gram counts of L
(with removal: backward-shift deletion, no tombstones) and of S, and N's lag votes.
"""

from libc.stdint cimport int32_t, uint32_t, uint64_t

from libc.stdint cimport int64_t

from loopcore._kernels.buffer cimport Buffer
from loopcore._kernels.common cimport HB


cdef struct CountTable:
    uint64_t* keys
    uint32_t* counts  # 0: an empty slot
    int32_t* used  # the slots filled since the last clear, in order (NULL: not listed)
    Py_ssize_t mask, nused, bytes


cdef int ct_init(CountTable* t, Py_ssize_t slots, bint listed) noexcept nogil
cdef void ct_free(CountTable* t) noexcept nogil
cdef void ct_clear(CountTable* t) noexcept nogil
cdef uint32_t ct_remove(CountTable* t, uint64_t key) noexcept nogil


cdef inline Py_ssize_t ct_slot(const CountTable* t, uint64_t key) noexcept nogil:
    return <Py_ssize_t>(((key ^ (key >> 29)) * HB) >> 40) & t.mask


cdef inline uint32_t ct_add(CountTable* t, uint64_t key, Py_ssize_t max_keys) noexcept nogil:
    """One more of ``key``; its new count (0: a new key refused, the table holds ``max_keys``)."""
    cdef Py_ssize_t slot = ct_slot(t, key)
    while t.counts[slot] != 0 and t.keys[slot] != key:
        slot = (slot + 1) & t.mask
    if t.counts[slot] == 0:
        if t.nused >= max_keys:
            return 0
        t.keys[slot] = key
        if t.used != NULL:
            t.used[t.nused] = <int32_t>slot
        t.nused += 1
    t.counts[slot] += 1
    return t.counts[slot]


cdef struct DistinctCounter:
    # distinct code points of a window: stamps for code points < 256, a table for the rest
    uint32_t small[256]
    uint32_t gen
    CountTable big


cdef Py_ssize_t distinct(DistinctCounter* d, const Buffer* bf, int64_t lo, int64_t hi,
                         Py_ssize_t limit) noexcept nogil
cdef Py_ssize_t max_gram_count(CountTable* t, const Buffer* bf, int64_t lo, int64_t hi, Py_ssize_t k,
                               uint64_t pow_k) noexcept nogil
