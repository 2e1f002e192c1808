# cython: language_level=3
"""N, the near-verbatim cycle (loopguard's own; ``near.pyx``, ``loopcore._reference.near``):
copies of a unit with small edits, found from chains of 16-bit distances between anchor
k-grams (winnowing), a lag histogram per block, and a coverage walk over the window."""

from libc.stdint cimport int64_t, uint16_t, uint32_t, uint64_t

from loopcore._kernels.buffer cimport Buffer
from loopcore._kernels.common cimport Arena, Event, Params
from loopcore._kernels.table cimport CountTable

cdef enum:
    NEAR_WINNOW = 6  # an anchor: a k-gram whose key is the smallest of NEAR_WINNOW in a row


cdef struct NearState:
    const Params* p
    Py_ssize_t n_lim  # the longest lag within tolerance of the longest period
    Py_ssize_t n_link  # anchors are linked this far back
    uint64_t hn  # the packed k-gram ending at n_done - 1
    uint32_t nkeys[NEAR_WINNOW - 1]  # anchor keys of the previous k-grams, newest first (0x10000 = none)
    uint32_t* n_head  # per hash slot: 1 + the last anchor hashed there (mod 2^32; 0 = none)
    uint16_t* n_sprev  # per position: distance to the previous anchor of its slot (0 = none)
    uint16_t* n_last  # per position: distance to the previous anchor of the same k-gram (0 = none)
    CountTable lags  # lag votes of the anchors since the last checkpoint
    uint64_t n_pmask  # the packed k-gram's bits: 8k of them, at most 64
    Py_ssize_t n_hbits, n_smask, n_lmask, n_best, n_mode, n_anchors, n_recurring
    Py_ssize_t n_hold  # the period N held at the previous checkpoint (0: it did not)
    Py_ssize_t n_pend  # a period whose window fell short at the previous checkpoint (0: none)
    Py_ssize_t n_covered  # the covered code points of N's last window walk
    int64_t n_exact  # the longest exact piece of N's last window walk
    bint n_whole  # ... and whether one was a whole copy (as long as its lag)
    bint n_whole_prev  # N held with a whole copy at the previous checkpoint
    # the digits seen by N's extension in the current window walk (positions only grow in a
    # walk): [n_dlo, n_dend) are all ASCII digits; n_dexact: n_dlo - 1 is not (else unknown)
    int64_t n_dlo, n_dend
    bint n_dexact
    int64_t n_done  # positions chained so far (N runs in blocks at checkpoints)


cdef Py_ssize_t near_init(NearState* st, const Params* p, Arena* a) noexcept nogil
cdef void near_free(NearState* st) noexcept nogil
cdef bint near_check(NearState* st, const Buffer* bf, Event* ev) noexcept nogil
