# cython: language_level=3
"""Shared C declarations of the compiled core's kernels (no runtime module).

``cp_t`` (one code point or token symbol), :c:type:`Params` (every detector key of
``loopcore._params.PARAMS`` under its one name; ``tests/test_params.py`` keeps them in
line), :c:type:`Event` (one detector's finding at a checkpoint), the detector kinds in
evaluation order, the hashes' arithmetic and the debug-build bounds check.
"""

from libc.stdint cimport int32_t, int64_t, uint16_t, uint32_t, uint64_t

ctypedef uint32_t cp_t  # one Unicode code point (or a token id's symbol)

cdef extern from "<assert.h>" nogil:
    # compiled out in release builds (NDEBUG); LOOPCORE_DEBUG=1 builds check every buffer access
    void check "assert"(bint condition)

# detector kinds, in evaluation order (loopcore._reference.KINDS)
cdef enum:
    K_E = 0
    K_L = 1
    K_S = 2
    K_C = 3
    K_P = 4
    K_N = 5
    K_T = 6
    N_KINDS = 7
    MAX_PHR = 8  # phrases kept as P's evidence
    SCAN_BLOCK = 64


cdef struct Params:
    # the parameters of loopcore._params.PARAMS, in order, under the same names
    bint skip_code_blocks
    Py_ssize_t fence_repeat_lines
    Py_ssize_t check_every
    bint exact_tail
    Py_ssize_t min_chars
    Py_ssize_t window
    Py_ssize_t history
    Py_ssize_t repeats
    bint lowdiv_tail
    Py_ssize_t lowdiv_window
    Py_ssize_t ngram
    Py_ssize_t lowdiv_max_unique
    Py_ssize_t lowdiv_min_repeat
    double lowdiv_max_data_share
    double lowdiv_art_max_alnum
    bint lowdiv_sliding
    Py_ssize_t slide_window
    Py_ssize_t slide_step
    Py_ssize_t slide_max_unique
    Py_ssize_t slide_min_repeat
    bint cycle
    Py_ssize_t cycle_min_period
    Py_ssize_t cycle_max_period
    Py_ssize_t cycle_min_copies
    Py_ssize_t cycle_min_chars
    Py_ssize_t cycle_scan_chars
    bint pool
    Py_ssize_t pool_window
    double pool_min_coverage
    Py_ssize_t pool_max_phrase_chars
    Py_ssize_t pool_min_occurrences
    Py_ssize_t pool_min_distinct
    Py_ssize_t pool_max_distinct
    bint pool_skip_key_value
    bint near_cycle
    Py_ssize_t near_ngram
    Py_ssize_t near_min_period
    Py_ssize_t near_max_period
    Py_ssize_t near_min_window
    Py_ssize_t near_tolerance
    double near_min_lag_share
    double near_min_coverage
    double near_max_record_share
    Py_ssize_t near_recurrence_window
    double near_min_recurrence
    bint salad
    Py_ssize_t salad_window
    Py_ssize_t salad_max_unique
    double salad_max_alnum
    double salad_max_space
    Py_ssize_t salad_max_words
    Py_ssize_t salad_min_words


cdef struct Event:
    # one detector's finding at a checkpoint; positions are original code points
    int kind
    int64_t position
    int64_t start
    int64_t cut
    int64_t ev0
    int64_t ev1
    int64_t ev2
    int64_t ev3
    bint strong  # the evidence is strong (N: an exact copy; the other kinds always)
    double coverage
    int nphr
    int32_t phr_slot[MAX_PHR]


cdef extern from *:
    """
    #define LG_HB 0x9E3779B97F4A7C15ULL  /* odd multiplier of the rolling hashes */
    #define LG_NGB 0x0A2F6B3D91C4E5F7ULL  /* base of the n-gram hashes (mod 2^61 - 1) */
    #define LG_M61 0x1FFFFFFFFFFFFFFFULL
    static inline uint64_t lg_mulmod61(uint64_t a, uint64_t b) {
    #if defined(__SIZEOF_INT128__)
        unsigned __int128 r = (unsigned __int128)a * b;
        uint64_t lo = (uint64_t)r & LG_M61, hi = (uint64_t)(r >> 61);
    #else
        uint64_t a_lo = a & 0xFFFFFFFFULL, a_hi = a >> 32, b_lo = b & 0xFFFFFFFFULL, b_hi = b >> 32;
        uint64_t p0 = a_lo * b_lo, p1 = a_lo * b_hi, p2 = a_hi * b_lo, p3 = a_hi * b_hi;
        uint64_t mid = (p0 >> 32) + (p1 & 0xFFFFFFFFULL) + (p2 & 0xFFFFFFFFULL);
        uint64_t r_lo = (p0 & 0xFFFFFFFFULL) | (mid << 32);
        uint64_t r_hi = p3 + (p1 >> 32) + (p2 >> 32) + (mid >> 32);
        uint64_t lo = r_lo & LG_M61, hi = (r_lo >> 61) | (r_hi << 3);
    #endif
        uint64_t s = lo + hi;
        return s >= LG_M61 ? s - LG_M61 : s;
    }
    static inline int lg_popcount64(unsigned long long x) { return __builtin_popcountll(x); }
    /* whether x occurs in a[0:n]: SSE2 (every x86-64) compares 8 tags at a time, 64 per test */
    #if defined(__SSE2__)
    #include <emmintrin.h>
    static inline int lg_any_equal_u16(const uint16_t* a, Py_ssize_t n, uint16_t x) {
        Py_ssize_t i = 0;
        __m128i v = _mm_set1_epi16((short)x);
        for (; i + 64 <= n; i += 64) {
            __m128i acc = _mm_cmpeq_epi16(_mm_loadu_si128((const __m128i*)(a + i)), v);
            for (int k = 8; k < 64; k += 8)
                acc = _mm_or_si128(acc, _mm_cmpeq_epi16(_mm_loadu_si128((const __m128i*)(a + i + k)), v));
            if (_mm_movemask_epi8(acc)) return 1;
        }
        for (; i < n; i++) if (a[i] == x) return 1;
        return 0;
    }
    #else
    static inline int lg_any_equal_u16(const uint16_t* a, Py_ssize_t n, uint16_t x) {
        for (Py_ssize_t i = 0; i < n; i++) if (a[i] == x) return 1;
        return 0;
    }
    #endif
    """
    const uint64_t HB "LG_HB"
    const uint64_t NGB "LG_NGB"
    const uint64_t M61 "LG_M61"
    uint64_t mulmod61 "lg_mulmod61"(uint64_t a, uint64_t b) nogil
    int popcount64 "lg_popcount64"(uint64_t x) nogil
    bint any_equal_u16 "lg_any_equal_u16"(const uint16_t* a, Py_ssize_t n, uint16_t x) nogil


cdef inline uint64_t addmod61(uint64_t a, uint64_t b) noexcept nogil:
    """``(a + b) mod (2^61 - 1)`` for ``a < 2^61 - 1`` and ``b < 2^32``."""
    a += b
    return a - M61 if a >= M61 else a


cdef inline uint64_t submod61(uint64_t a, uint64_t b) noexcept nogil:
    return a - b if a >= b else a + M61 - b


cdef inline uint64_t powmod61(uint64_t b, Py_ssize_t e) noexcept nogil:
    cdef uint64_t r = 1
    while e > 0:
        if e & 1:
            r = mulmod61(r, b)
        b = mulmod61(b, b)
        e >>= 1
    return r


cdef inline uint64_t ipow(uint64_t b, Py_ssize_t e) noexcept nogil:
    cdef uint64_t r = 1
    while e > 0:
        if e & 1:
            r *= b
        b *= b
        e >>= 1
    return r


cdef inline Py_ssize_t pow2_at_least(Py_ssize_t x) noexcept nogil:
    cdef Py_ssize_t r = 1
    while r < x:
        r <<= 1
    return r


cdef inline bint ring_has(const uint16_t* ring, Py_ssize_t mask, int64_t lo, int64_t hi,
                          uint16_t x) noexcept nogil:
    """Whether ``x`` is stored for some t offset in ``[lo, hi)`` of a hash ring."""
    cdef int64_t seg_end
    while lo < hi:
        seg_end = lo + (mask + 1 - (lo & mask))
        if seg_end > hi:
            seg_end = hi
        if any_equal_u16(&ring[lo & mask], <Py_ssize_t>(seg_end - lo), x):
            return True
        lo = seg_end
    return False


cdef struct Arena:
    # one allocation for a stream's fixed-size tables: measured in a first pass (``base``
    # NULL: every take returns NULL), then carved in a second
    char* base
    Py_ssize_t used


cdef inline void* arena_take(Arena* a, Py_ssize_t nbytes) noexcept nogil:
    """``nbytes`` of the arena, in whole 16-byte units (aligned; NULL while measuring)."""
    cdef Py_ssize_t at = a.used
    a.used = at + ((nbytes + 15) & ~(<Py_ssize_t>15))
    return NULL if a.base == NULL else a.base + at
