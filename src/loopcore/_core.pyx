# cython: freethreading_compatible = False
"""Compiled stream core of loopguard (SPEC §1, §2).

One :class:`ChannelStream` is the detector state of one channel of one attempt.
``feed`` reads the PEP 393 buffer of each ``str`` delta directly (1-, 2- or
4-byte kinds, never encoded) and runs the per-character work without the GIL:
fence masking, a linear code-point buffer, two rolling hashes, sentence
segmentation and the sliding low-diversity windows.  Every ``check_every``
characters a checkpoint evaluates the five detectors with bounded work:

* E -- candidates from a ring of 16-bit ``window``-gram hashes, verified with
  ``memcmp``, counted greedily (non-overlapping);
* L, S -- distinct code points counted with an early exit at the threshold;
  the n-gram maximum only for windows that pass it;
* C -- a prefilter over a ring of k-gram hashes; only when some shift ``p``
  could be a cycle, a Z-function over the reversed tail gives the reach of
  every period and the largest valid suffix;
* P -- per-sentence group counts maintained incrementally.

Results are identical to :mod:`loopcore._reference` for every input and every
chunking (the test-suite proves it on fixtures and hypothesis streams).
"""

from cpython.unicode cimport PyUnicode_DATA, PyUnicode_GET_LENGTH, PyUnicode_KIND
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint16_t, uint32_t, uint64_t, uint8_t
from libc.stdlib cimport calloc, free, malloc, realloc
from libc.string cimport memcmp, memcpy, memmove, memset
cimport cython

ctypedef uint32_t cp_t  # one Unicode code point

from . import _params, _reference, _tokens

cdef extern from "<assert.h>" nogil:
    # compiled out in release builds (NDEBUG); LOOPCORE_DEBUG=1 builds check every buffer access
    void check "assert"(bint condition)

cdef extern from "Python.h":
    bint Py_UNICODE_ISALNUM(Py_UCS4 ch) nogil
    bint Py_UNICODE_ISDIGIT(Py_UCS4 ch) nogil
    object PyUnicode_FromKindAndData(int kind, const void* buffer, Py_ssize_t size)

# ------------------------------------------------------------------ constants
cdef enum:
    K_E = 0
    K_L = 1
    K_S = 2
    K_C = 3
    K_P = 4
    K_N = 5
    K_T = 6
    N_KINDS = 7
    MAX_EVENTS = 24  # >= 3 emits per original character x 7 kinds
    MAX_PHR = 8
    SCAN_BLOCK = 64

# line classes for the phrase pool (SPEC §2.5); the undecided ones come before LC_NORMAL
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

# characters of hex/byte dumps (_reference.DATA_CHARS): hex digits, blanks, '.', ':'
cdef bint DATA_CHAR[128]
for _c in range(128):
    DATA_CHAR[_c] = chr(_c) in _reference.DATA_CHARS
cdef Py_ssize_t DATA_MIN_DISTINCT = _reference.DATA_MIN_DISTINCT
cdef Py_ssize_t ART_MIN_SYMBOLS = _reference.ART_MIN_SYMBOLS
assert ART_MIN_SYMBOLS <= 4  # the symbol array of _art_run holds 4

cdef Py_ssize_t RECORD_MAX_LINE = _reference.RECORD_MAX_LINE
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
cdef int64_t NEAR_WHOLE_CAP = _reference.NEAR_WHOLE_CAP
cdef int64_t NEAR_WHOLE_MIN = _reference.NEAR_WHOLE_MIN
cdef Py_ssize_t FENCE_MIN_CHARS = _reference.FENCE_MIN_CHARS
cdef Py_ssize_t FENCE_MIN_LETTERS = _reference.FENCE_MIN_LETTERS
cdef enum:
    FENCE_MAX_LINE = 256  # the code-line buffers; _reference.FENCE_MAX_LINE
assert FENCE_MAX_LINE == _reference.FENCE_MAX_LINE
# N's constants (_reference.NEAR_*; checked equal below)
cdef enum:
    NEAR_CHUNK = 256  # positions N hashes before linking their anchors
    NEAR_GAP = 8
    NEAR_WINNOW = 6
    NEAR_MIN_TOL = 2
    NEAR_SHORT_TOL = 4
    NEAR_CANDIDATES = 3
    NEAR_VOTES = 4
    NEAR_SEED_COST = 2
    NEAR_MULTIPLES = 4
cdef double NEAR_VOTE_GATE = _reference.NEAR_VOTE_GATE
cdef double NEAR_PENDING_KEEP = _reference.NEAR_PENDING_KEEP
cdef Py_ssize_t NEAR_LONG_VOTE = _reference.NEAR_LONG_VOTE
cdef double NEAR_LONG_VOTE_GATE = _reference.NEAR_LONG_VOTE_GATE
assert (NEAR_GAP, NEAR_WINNOW, NEAR_MIN_TOL, NEAR_SHORT_TOL, NEAR_CANDIDATES, NEAR_VOTES, NEAR_SEED_COST,
        NEAR_MULTIPLES) == (
    _reference.NEAR_GAP, _reference.NEAR_WINNOW, _reference.NEAR_MIN_TOL, _reference.NEAR_SHORT_TOL,
    _reference.NEAR_CANDIDATES, _reference.NEAR_VOTES, _reference.NEAR_SEED_COST, _reference.NEAR_MULTIPLES)
cdef Py_ssize_t GIL_KEPT_BELOW = 64  # deltas up to this many code points run with the GIL held
cdef uint64_t HB = 0x9E3779B97F4A7C15ULL  # odd multiplier of the rolling hashes
cdef uint64_t NGB = 0x0A2F6B3D91C4E5F7ULL  # base of the n-gram hashes (mod 2^61 - 1, < the modulus)

KINDS = _reference.KINDS


cdef extern from *:
    """
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
    """
    uint64_t lg_mulmod61(uint64_t a, uint64_t b) nogil


cdef uint64_t M61 = 0x1FFFFFFFFFFFFFFFULL


cdef inline uint64_t mulmod61(uint64_t a, uint64_t b) noexcept nogil:
    return lg_mulmod61(a, b)


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


cdef struct Event:
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


cdef inline cp_t read_char(int kind, const void* data, Py_ssize_t i) noexcept nogil:
    if kind == 1:
        return (<const uint8_t*>data)[i]
    if kind == 2:
        return (<const uint16_t*>data)[i]
    return (<const uint32_t*>data)[i]


cdef inline bint is_space(cp_t c) noexcept nogil:
    """Exactly ``str.isspace`` (the set is tested against Python in the suite)."""
    if c < 128:
        return c == 32 or (9 <= c <= 13) or (28 <= c <= 31)
    if c < 0x2000:
        return c == 0x85 or c == 0xA0 or c == 0x1680
    if c <= 0x200A:
        return True
    return c == 0x2028 or c == 0x2029 or c == 0x202F or c == 0x205F or c == 0x3000


cdef inline bint is_alnum(cp_t c) noexcept nogil:
    if c < 128:
        return (48 <= c <= 57) or (65 <= c <= 90) or (97 <= c <= 122)
    return Py_UNICODE_ISALNUM(<Py_UCS4>c)


cdef extern from *:
    """
    static inline int loopcore_popcount64(unsigned long long x) { return __builtin_popcountll(x); }
    """
    int popcount64 "loopcore_popcount64"(uint64_t x) nogil


cdef inline bint is_sentence_mark(cp_t c) noexcept nogil:
    """``c in _reference._SENTENCE_MARKS`` (T's word salad: what may separate its words)."""
    if c < 128:
        return c == 44 or c == 46 or c == 59 or c == 58 or c == 33 or c == 63 or c == 39 \
            or c == 34 or c == 45
    return c == 0x2026 or c == 0x2018 or c == 0x2019 or c == 0x201C or c == 0x201D \
        or c == 0x2013 or c == 0x2014


cdef inline bint is_wide_stop(cp_t c) noexcept nogil:
    """``c in _reference._WIDE_STOPS`` (CJK full-width stops)."""
    return c == 0xFF0C or c == 0x3002 or c == 0xFF1B or c == 0xFF1A or c == 0xFF01 \
        or c == 0xFF1F or c == 0x3001


cdef inline bint is_item_marker(cp_t c) noexcept nogil:
    """``c in _reference._ITEM_MARKERS``."""
    return c == 45 or c == 42 or c == 43 or c == 0x2022 or c == 62


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


cdef inline bint any_equal_u16(const uint16_t* a, Py_ssize_t n, uint16_t x) noexcept nogil:
    """Whether ``x`` occurs in ``a[0:n]`` (branch-free blocks so the compiler vectorises)."""
    cdef Py_ssize_t i = 0, k
    cdef int acc
    while i + SCAN_BLOCK <= n:
        acc = 0
        for k in range(SCAN_BLOCK):
            acc |= a[i + k] == x
        if acc:
            return True
        i += SCAN_BLOCK
    while i < n:
        if a[i] == x:
            return True
        i += 1
    return False


@cython.final
cdef class ChannelStream:
    """Detector state for one channel of one attempt (compiled).

    All parameters are keyword-only and required; they are the detector keys
    of SPEC §2 (:class:`loopguard.TextConfig` documents and validates them).
    Their names, types, defaults and bounds are ``loopcore._params.PARAMS`` (the one
    schema): ``skip_code_blocks`` removes fenced code from what the detectors see
    (SPEC §2.6); ``exact_tail`` … ``salad`` (the kind names) enable E, L, S, C, P, N, T.

    Memory is bounded by the config (:attr:`memory_bytes`), allocated when the first
    code point or token arrives (before that, only the object: 8.3 KiB): a linear buffer
    of ``keep + slack`` code points (``keep`` = the longest look-back of the enabled
    detectors, 12,251 at the ``default`` profile) stored with 1, 2 or 4 bytes per code
    point like PEP 393 (widened when a wider code point arrives), two rings of 16-bit
    gram hashes (E, C), the pool's sentence records (P; at the buffer's width), N's slot
    chains, hash heads, distance ring and lag table (68 KiB at the defaults), T's
    distinct-count table, and scratch allocated once on first need (the n-gram table of
    L/S, the Z array of C).  At the ``default`` profile: 115.9 KiB for Latin-1 text,
    142.8 KiB once a BMP code point arrives, 196.5 KiB once an astral one does, and at
    most about 213 KiB with the scratch.

    Raises
    ------
    TypeError
        from :meth:`feed` when ``delta`` is not a ``str``.
    RuntimeError
        from :meth:`feed`/:meth:`finish` after :meth:`finish`.
    MemoryError
        when the buffers cannot be allocated.
    """

    # ---- config
    cdef bint skip_code_blocks, exact_tail, lowdiv_tail, lowdiv_sliding, cycle, pool, pool_skip_key_value, near_cycle, salad
    cdef Py_ssize_t salad_window, salad_max_unique, salad_max_words, salad_min_words
    cdef double salad_max_alnum, salad_max_space
    cdef Py_ssize_t check_every, min_chars, window, history, repeats
    cdef int64_t next_cp, next_win  # t lengths of the next checkpoint / S window
    cdef Py_ssize_t lowdiv_window, ngram, lowdiv_max_unique, lowdiv_min_repeat
    cdef Py_ssize_t slide_window, slide_step, slide_max_unique, slide_min_repeat
    cdef Py_ssize_t cycle_min_period, cycle_max_period, cycle_min_copies, cycle_min_chars, cycle_scan_chars, ck
    cdef Py_ssize_t pool_window, pool_max_phrase_chars, pool_min_occurrences, pool_min_distinct, pool_max_distinct
    cdef double pool_min_coverage
    cdef double lowdiv_max_data_share  # L/S hold back on data runs (lowdiv_max_data_share)
    cdef double lowdiv_art_max_alnum  # L/S hold back on art runs (lowdiv_art_max_alnum)
    # ---- N (near_cycle): chains of 16-bit distances between anchor k-grams
    cdef Py_ssize_t near_ngram, near_min_period, near_max_period, near_min_window, near_tolerance, n_lim, near_recurrence_window, n_link
    cdef double near_min_lag_share, near_min_coverage, near_max_record_share, near_min_recurrence
    cdef uint64_t hn  # the packed k-gram ending at n_done - 1
    cdef uint32_t nkeys[NEAR_WINNOW - 1]  # anchor keys of the previous k-grams, newest first (0x10000 = none)
    cdef uint32_t* n_head  # per hash slot: 1 + the last anchor hashed there (mod 2^32; 0 = none)
    cdef uint16_t* n_sprev  # per position: distance to the previous anchor of its slot (0 = none)
    cdef uint16_t* n_last  # per position: distance to the previous anchor of the same k-gram (0 = none)
    cdef uint16_t* n_lag  # lag histogram of the anchors since the last checkpoint: open addressing,
    cdef uint32_t* n_count  # lag (0 = empty slot) -> count
    cdef Py_ssize_t n_tmask, n_nused
    cdef int32_t* n_used  # the slots filled in this block
    cdef uint64_t n_pmask  # the packed k-gram's bits: 8k of them, at most 64
    cdef Py_ssize_t n_hbits, n_smask, n_lmask, n_best, n_mode, n_anchors, n_recurring
    cdef Py_ssize_t n_hold  # the period N held at the previous checkpoint (0: it did not)
    cdef Py_ssize_t n_pend  # a period whose window fell short at the previous checkpoint (0: none)
    cdef Py_ssize_t n_covered  # the covered code points of N's last window walk
    cdef int64_t n_exact  # the longest exact piece of N's last window walk
    cdef bint n_whole  # ... and whether one was a whole copy (as long as its lag)
    cdef bint n_whole_prev  # N held with a whole copy at the previous checkpoint
    # the digits seen by N's extension in the current window walk (positions only grow in a
    # walk): [n_dlo, n_dend) are all ASCII digits; n_dexact: n_dlo - 1 is not (else unknown)
    cdef int64_t n_dlo, n_dend
    cdef bint n_dexact
    cdef int64_t n_done  # positions chained so far (N runs in blocks at checkpoints)
    # ---- buffer of t (the masked text)
    cdef void* buf  # code points, ``width`` bytes each (1, 2, 4: widened like PEP 393)
    cdef int width
    cdef cp_t wmax  # largest code point the current width holds
    cdef Py_ssize_t cap, blen, keep
    cdef int64_t base, n, orig_len
    # ---- original-offset breakpoints: from t offset bp_t[i] on, orig = t + bp_d[i]
    cdef int64_t* bp_t
    cdef int64_t* bp_d
    cdef Py_ssize_t bp_head, bp_len, bp_cap
    # ---- rolling hashes
    cdef uint64_t he, he_out, hc, hc_out
    cdef uint16_t* ring_e
    cdef uint16_t* ring_c
    cdef int64_t c_done  # positions tagged in ring_c so far (C runs in blocks at checkpoints)
    cdef int64_t c_held_n  # the checkpoint at which C last held, at period c_held_p (0: none)
    cdef Py_ssize_t c_held_p
    cdef Py_ssize_t emask, cmask
    # ---- fence masking
    cdef bint m_line_start, m_opening, m_opening_run, m_in_code
    cdef int m_pending
    cdef int64_t m_pending_pos
    cdef cp_t m_pending_char, m_fence_char
    cdef Py_ssize_t m_fence_len, cl_run
    # repeated code lines inside a fence (_reference.fence_line_counts, fence_repeat_lines)
    cdef cp_t fl_line[FENCE_MAX_LINE]
    cdef cp_t fl_prev[FENCE_MAX_LINE]
    cdef Py_ssize_t fl_len, fl_prev_len, fl_blank, fl_letters, fl_run, fence_repeat_lines
    cdef bint fl_over
    cdef int64_t fl_start
    cdef int cl_state
    # ---- sentences and the phrase pool
    cdef int64_t s_begin, s_last
    cdef cp_t* s_text  # the open sentence's text, saved when compaction would drop it
    cdef bint s_saved
    cdef bint s_alnum, s_pending
    cdef int s_line, s_digits
    cdef Py_ssize_t rec_cap
    cdef int64_t rec_total
    cdef int64_t* rec_start
    cdef int32_t* rec_len
    cdef uint64_t* rec_hash
    cdef int32_t* rec_grp
    cdef void* rec_text  # each record's text, rec_width bytes per code point (the buffer's width)
    cdef int rec_width
    cdef int32_t* grp_rep
    cdef int32_t* grp_count
    cdef int32_t* grp_active
    cdef int32_t* grp_free
    cdef Py_ssize_t grp_nactive, grp_nfree
    # ---- S state
    cdef bint s_fired
    cdef int64_t s_unique, s_top, s_start
    # ---- scratch: distinct counting and n-gram counting
    cdef uint32_t* ds_keys
    cdef uint32_t* ds_stamp
    cdef uint32_t ds_small[256]
    cdef uint32_t ds_gen
    cdef Py_ssize_t ds_mask
    cdef uint64_t* ng_keys
    cdef uint32_t* ng_count
    cdef uint16_t* ng_stamp
    cdef uint16_t ng_gen
    cdef Py_ssize_t ng_mask
    cdef uint64_t ng_pow
    cdef int32_t* zbuf
    # L's n-gram counts, kept across checkpoints: grams starting in [lg_lo, lg_hi)
    cdef uint64_t* lg_keys
    cdef uint32_t* lg_count  # 0 = empty slot
    cdef uint32_t* lg_hist  # lg_hist[c] = how many distinct grams occur c times
    cdef Py_ssize_t lg_mask
    cdef uint32_t lg_max
    cdef bint lg_valid
    cdef int64_t lg_lo, lg_hi
    cdef Py_ssize_t lazy_bytes  # scratch allocated on first need (n-gram table, Z array)
    cdef uint32_t lw_small[256]  # counts of code points < 256 in the L window
    cdef Py_ssize_t lw_distinct, lw_big  # distinct small code points; code points >= 256
    # ---- episodes and events
    cdef bint holding[N_KINDS]
    cdef bint reported_strong[N_KINDS]  # the strength of each episode's last report
    cdef int64_t hit_count[N_KINDS]
    cdef int64_t fuse_cp
    cdef Event events[MAX_EVENTS]
    cdef int nev
    cdef bint finished_, failed, busy
    cdef bint allocated  # the buffers exist (from the first code point or token on)
    cdef int mode  # 0: nothing fed yet, 1: text, 2: token ids
    cdef Py_ssize_t mem

    def __cinit__(self, **params):
        self.buf = NULL
        self.bp_t = NULL
        self.bp_d = NULL
        self.ring_e = NULL
        self.ring_c = NULL
        self.rec_start = NULL
        self.rec_len = NULL
        self.rec_hash = NULL
        self.rec_grp = NULL
        self.rec_text = NULL
        self.s_text = NULL
        self.grp_rep = NULL
        self.grp_count = NULL
        self.grp_active = NULL
        self.grp_free = NULL
        self.ds_keys = NULL
        self.ds_stamp = NULL
        self.ng_keys = NULL
        self.ng_count = NULL
        self.ng_stamp = NULL
        self.zbuf = NULL
        self.lg_keys = NULL
        self.lg_count = NULL
        self.lg_hist = NULL
        self.n_head = NULL
        self.n_sprev = NULL
        self.n_last = NULL
        self.n_count = NULL
        self.n_lag = NULL
        self.n_used = NULL
        for k in range(NEAR_WINNOW - 1):
            self.nkeys[k] = 0x10000
        _params.check(params)
        self.skip_code_blocks = params["skip_code_blocks"]
        self.fence_repeat_lines = params["fence_repeat_lines"]
        self.check_every = params["check_every"]
        self.exact_tail = params["exact_tail"]
        self.min_chars = params["min_chars"]
        self.window = params["window"]
        self.history = params["history"]
        self.repeats = params["repeats"]
        self.lowdiv_tail = params["lowdiv_tail"]
        self.lowdiv_window = params["lowdiv_window"]
        self.ngram = params["ngram"]
        self.lowdiv_max_unique = params["lowdiv_max_unique"]
        self.lowdiv_min_repeat = params["lowdiv_min_repeat"]
        self.lowdiv_max_data_share = params["lowdiv_max_data_share"]
        self.lowdiv_art_max_alnum = params["lowdiv_art_max_alnum"]
        self.lowdiv_sliding = params["lowdiv_sliding"]
        self.slide_window = params["slide_window"]
        self.slide_step = params["slide_step"]
        self.slide_max_unique = params["slide_max_unique"]
        self.slide_min_repeat = params["slide_min_repeat"]
        self.cycle = params["cycle"]
        self.cycle_min_period = params["cycle_min_period"]
        self.cycle_max_period = params["cycle_max_period"]
        self.cycle_min_copies = params["cycle_min_copies"]
        self.cycle_min_chars = params["cycle_min_chars"]
        self.cycle_scan_chars = params["cycle_scan_chars"]
        self.pool = params["pool"]
        self.pool_window = params["pool_window"]
        self.pool_min_coverage = params["pool_min_coverage"]
        self.pool_max_phrase_chars = params["pool_max_phrase_chars"]
        self.pool_min_occurrences = params["pool_min_occurrences"]
        self.pool_min_distinct = params["pool_min_distinct"]
        self.pool_max_distinct = params["pool_max_distinct"]
        self.pool_skip_key_value = params["pool_skip_key_value"]
        self.near_cycle = params["near_cycle"]
        self.near_ngram = params["near_ngram"]
        self.near_min_period = params["near_min_period"]
        self.near_max_period = params["near_max_period"]
        self.near_min_window = params["near_min_window"]
        self.near_tolerance = params["near_tolerance"]
        self.near_min_lag_share = params["near_min_lag_share"]
        self.near_min_coverage = params["near_min_coverage"]
        self.near_max_record_share = params["near_max_record_share"]
        self.near_recurrence_window = params["near_recurrence_window"]
        self.near_min_recurrence = params["near_min_recurrence"]
        self.salad = params["salad"]
        self.salad_window = params["salad_window"]
        self.salad_max_unique = params["salad_max_unique"]
        self.salad_max_alnum = params["salad_max_alnum"]
        self.salad_max_space = params["salad_max_space"]
        self.salad_max_words = params["salad_max_words"]
        self.salad_min_words = params["salad_min_words"]
        # the buffers are allocated when the first code point or token arrives: an open
        # channel that never receives anything costs only the object itself

    cdef void* _alloc(self, Py_ssize_t nbytes) except NULL:
        cdef void* p = PyMem_Malloc(nbytes if nbytes > 0 else 1)
        if p == NULL:
            raise MemoryError("loopcore: cannot allocate the stream buffers")
        memset(p, 0, nbytes)
        self.mem += nbytes
        return p

    cdef int _allocate(self) except -1:
        cdef Py_ssize_t keep = 64, slack, size, grams, cap_u, span, reach
        cdef Py_ssize_t p_star, cand, best, need
        self.allocated = True
        self.mem = 0
        if self.exact_tail:
            keep = max(keep, self.window + self.history + 1)
            size = pow2_at_least(self.history + 2)
            self.ring_e = <uint16_t*>self._alloc(size * sizeof(uint16_t))
            self.emask = size - 1
            self.he_out = ipow(HB, self.window)
        if self.lowdiv_tail:
            keep = max(keep, self.lowdiv_window + 1)
        if self.lowdiv_sliding:
            keep = max(keep, self.slide_window + 1)
        if self.cycle:
            keep = max(keep, self.cycle_scan_chars + 1)
            # k: the shortest match length any valid period p needs
            # (need(p) = max(min_chars, copies*p) - p), capped to 32.
            best = 32
            p_star = self.cycle_min_chars // self.cycle_min_copies
            for cand in (self.cycle_min_period, self.cycle_max_period, p_star, p_star + 1):
                if self.cycle_min_period <= cand <= self.cycle_max_period:
                    need = max(self.cycle_min_chars, self.cycle_min_copies * cand) - cand
                    best = min(best, need)
            self.ck = max(1, best)
            keep = max(keep, self.ck + self.check_every + 1)
            size = pow2_at_least(self.cycle_max_period + 2)
            self.ring_c = <uint16_t*>self._alloc(size * sizeof(uint16_t))
            self.cmask = size - 1
            self.hc_out = ipow(HB, self.ck)
        if self.pool:
            keep = max(keep, self.pool_max_phrase_chars + 2)
            self.rec_cap = 4 * self.pool_window
            self.rec_start = <int64_t*>self._alloc(self.rec_cap * sizeof(int64_t))
            self.rec_len = <int32_t*>self._alloc(self.rec_cap * sizeof(int32_t))
            self.rec_hash = <uint64_t*>self._alloc(self.rec_cap * sizeof(uint64_t))
            self.rec_grp = <int32_t*>self._alloc(self.rec_cap * sizeof(int32_t))
            # records are stored 1, 2 or 4 bytes per code point like the buffer (widened with it)
            self.rec_text = calloc(self.rec_cap * self.pool_max_phrase_chars, 1)
            if self.rec_text == NULL:
                raise MemoryError("loopcore: cannot allocate the stream buffers")
            self.rec_width = 1
            self.mem += self.rec_cap * self.pool_max_phrase_chars
            self.s_text = <cp_t*>self._alloc(self.pool_max_phrase_chars * sizeof(cp_t))
            self.grp_rep = <int32_t*>self._alloc(self.pool_window * sizeof(int32_t))
            self.grp_count = <int32_t*>self._alloc(self.pool_window * sizeof(int32_t))
            self.grp_active = <int32_t*>self._alloc(self.pool_window * sizeof(int32_t))
            self.grp_free = <int32_t*>self._alloc(self.pool_window * sizeof(int32_t))
            for size in range(self.pool_window):
                self.grp_free[size] = <int32_t>(self.pool_window - 1 - size)
            self.grp_nfree = self.pool_window
        if self.near_cycle:
            self.n_lim = self.near_max_period + self._ntol(self.near_max_period)
            # anchors are linked this far back: a lag up to lim within its tolerance
            self.n_link = self.n_lim + self._ntol(self.n_lim)
            # text compares reach lim + k back; the record scan a window plus one line, the
            # extension a window plus a lag; a window may end up to a block before the checkpoint
            span = max(2 * self.n_lim, self.near_min_window, self.near_recurrence_window)  # the longest window
            reach = self.n_link  # a lag within tolerance
            keep = max(keep, self.n_link + self.near_ngram + self.check_every + 1,
                       span + self.check_every + RECORD_MAX_LINE + 3, span + self.check_every + reach + 1)
            size = pow2_at_least(self.n_link + 1)
            self.n_sprev = <uint16_t*>self._alloc(size * sizeof(uint16_t))
            self.n_smask = size - 1
            # about one anchor in NEAR_WINNOW positions: half as many slots as positions
            size = max(256, min(1 << 16, size // 2))
            self.n_head = <uint32_t*>self._alloc(size * sizeof(uint32_t))
            self.n_hbits = 0
            while (<Py_ssize_t>1 << self.n_hbits) < size:
                self.n_hbits += 1
            size = pow2_at_least(span + reach + self.check_every + 2)
            self.n_last = <uint16_t*>self._alloc(size * sizeof(uint16_t))
            self.n_lmask = size - 1
            # a block has at most min(check_every, lim) distinct nearest lags, and the votes
            # are capped at as many distinct lags: half-full at worst
            size = pow2_at_least(2 * min(self.check_every, self.n_lim) + 2)
            self.n_lag = <uint16_t*>self._alloc(size * sizeof(uint16_t))
            self.n_count = <uint32_t*>self._alloc(size * sizeof(uint32_t))
            self.n_tmask = size - 1
            self.n_used = <int32_t*>self._alloc((size // 2) * sizeof(int32_t))
            self.n_pmask = (<uint64_t>1 << (8 * self.near_ngram)) - 1 if self.near_ngram < 8 else <uint64_t>0xFFFFFFFFFFFFFFFF
        if self.salad:
            keep = max(keep, self.salad_window + 1)
            if self.salad_max_words:  # the word window, and how far back it looks for an open bracket
                keep = max(keep, <Py_ssize_t>(SALAD_WORD_WINDOW + SALAD_BRACKET_REACH) + 1)
        if self.lowdiv_tail or self.lowdiv_sliding or self.salad:
            cap_u = 1
            grams = 1
            if self.salad:
                cap_u = max(cap_u, min(self.salad_max_unique, self.salad_window))
            if self.lowdiv_tail:
                cap_u = max(cap_u, min(self.lowdiv_max_unique, self.lowdiv_window))
                self.lg_mask = pow2_at_least(2 * max(1, self.lowdiv_window - self.ngram + 1) + 2) - 1
            if self.lowdiv_sliding:
                cap_u = max(cap_u, min(self.slide_max_unique, self.slide_window))
                grams = max(grams, self.slide_window - self.ngram + 1)
            size = pow2_at_least(2 * cap_u + 2)
            self.ds_keys = <uint32_t*>self._alloc(size * sizeof(uint32_t))
            self.ds_stamp = <uint32_t*>self._alloc(size * sizeof(uint32_t))
            self.ds_mask = size - 1
            size = pow2_at_least(2 * grams + 2)
            self.ng_mask = size - 1  # the table itself is allocated on first need
            self.ng_pow = powmod61(NGB, self.ngram)
        slack = max(1024, keep // 2)
        self.keep = keep
        self.cap = keep + slack
        self.buf = malloc(self.cap)
        if self.buf == NULL:
            raise MemoryError("loopcore: cannot allocate the stream buffers")
        self.width = 1
        self.wmax = 0xFF
        self.mem += self.cap
        self.bp_cap = 16
        self.bp_t = <int64_t*>malloc(self.bp_cap * sizeof(int64_t))
        self.bp_d = <int64_t*>malloc(self.bp_cap * sizeof(int64_t))
        if self.bp_t == NULL or self.bp_d == NULL:
            raise MemoryError("loopcore: cannot allocate the stream buffers")
        self.mem += 2 * self.bp_cap * sizeof(int64_t)
        self.bp_t[0] = 0
        self.bp_d[0] = 0
        self.bp_len = 1
        self.m_line_start = True
        self.s_begin = -1
        self.s_line = LC_START
        self.next_cp = self.check_every
        self.next_win = self.slide_window if self.lowdiv_sliding else -1
        return 0

    def __dealloc__(self):
        free(self.buf)
        free(self.bp_t)
        free(self.bp_d)
        PyMem_Free(self.ring_e)
        PyMem_Free(self.ring_c)
        PyMem_Free(self.rec_start)
        PyMem_Free(self.rec_len)
        PyMem_Free(self.rec_hash)
        PyMem_Free(self.rec_grp)
        free(self.rec_text)
        PyMem_Free(self.s_text)
        PyMem_Free(self.grp_rep)
        PyMem_Free(self.grp_count)
        PyMem_Free(self.grp_active)
        PyMem_Free(self.grp_free)
        PyMem_Free(self.ds_keys)
        PyMem_Free(self.ds_stamp)
        free(self.ng_keys)
        free(self.ng_count)
        free(self.ng_stamp)
        free(self.zbuf)
        free(self.lg_keys)
        free(self.lg_count)
        free(self.lg_hist)
        PyMem_Free(self.n_head)
        PyMem_Free(self.n_sprev)
        PyMem_Free(self.n_last)
        PyMem_Free(self.n_count)
        PyMem_Free(self.n_lag)
        PyMem_Free(self.n_used)

    # ------------------------------------------------------------ Python API
    @property
    def length(self):
        """Original characters fed so far (code points)."""
        return self.orig_len

    @property
    def masked_length(self):
        """Length of ``t``, the text the detectors have seen (code points)."""
        return self.n

    @property
    def hits(self):
        """Checkpoints at which each detector held, by kind."""
        return {KINDS[k]: self.hit_count[k] for k in range(N_KINDS)}

    @property
    def fuse_checkpoints(self):
        """Checkpoints at which at least one of exact_tail/lowdiv_tail/lowdiv_sliding held."""
        return self.fuse_cp

    @property
    def finished(self):
        """Whether :meth:`finish` has been called."""
        return self.finished_

    @property
    def memory_bytes(self):
        """Bytes allocated for this stream.

        Only the object itself until the first code point or token arrives; then
        the buffers the config needs, fixed from there on, plus scratch allocated once on first need (the
        n-gram table of L/S when a low-diversity window appears, the Z array of
        C when a cycle candidate appears) and the offset map of masked code.
        """
        if not self.allocated:
            return type(self).__basicsize__
        return (type(self).__basicsize__ + self.mem + self.lazy_bytes
                + 2 * (self.bp_cap - 16) * sizeof(int64_t))

    def feed(self, delta):
        """Append ``delta`` (a ``str``) and return the detections reported meanwhile.

        Each detection is ``(kind, position, start, cut, evidence)`` with
        positions in code points of the original channel text.  The GIL is
        released while the characters are processed.
        """
        if not isinstance(delta, str):
            raise TypeError(f"delta must be str, not {type(delta).__name__}")
        return self._feed_str(delta)

    cdef list _feed_str(self, object delta):  # a str (or a subclass: numpy.str_)
        cdef Py_ssize_t size
        if self.finished_:
            raise RuntimeError("this stream is finished; start a new one")
        size = PyUnicode_GET_LENGTH(delta)
        if size and self.mode == 2:
            raise RuntimeError("this stream holds token ids: feed it with feed_tokens() only")
        self._enter()
        try:
            if size:
                self.mode = 1
                if not self.allocated:
                    self._allocate()
            return self._run(PyUnicode_DATA(delta), PyUnicode_KIND(delta), size)
        finally:
            self.busy = False

    cdef list _run(self, const void* data, int kind, Py_ssize_t size):
        """Consume ``size`` code points of ``kind`` at ``data``; the detections reported meanwhile."""
        cdef Py_ssize_t i = 0
        out = []
        while i < size:
            if size - i <= GIL_KEPT_BELOW:  # a short delta: releasing the GIL costs more than the work
                i = self._consume(data, kind, i, size)
            else:
                with nogil:
                    i = self._consume(data, kind, i, size)
            if self.failed:
                raise MemoryError("loopcore: out of memory in the stream buffers")
            if self.nev:
                self._drain(out)
        return out

    def feed_tokens(self, ids):
        """Append token ids and return the detections reported meanwhile.

        ``ids``: a 1-D buffer of integers (``array.array``, a numpy integer array,
        ``bytes``) read in place, or a list/tuple of ints; each id (0 to 1,114,111) is
        one symbol and positions count tokens (``loopcore._tokens``).  The GIL is
        released while the ids are processed.

        Raises
        ------
        TypeError
            for something that is not integers (``str``, floats, objects).
        ValueError
            for a buffer that is not 1-D, or an id out of range (nothing is consumed).
        RuntimeError
            after :meth:`finish`, or on a stream that was fed text.
        """
        cdef const unsigned char[::1] raw
        cdef const unsigned char* p
        cdef Py_ssize_t n, i = 0, bad = -1
        cdef int size
        cdef bint signed
        cdef uint32_t* symbols
        cdef int64_t v = 0
        view = _tokens.token_view(ids)
        if self.finished_:
            raise RuntimeError("this stream is finished; start a new one")
        n = len(view)
        if n == 0:
            return []
        size = view.itemsize
        signed = view.format in ("b", "h", "i", "l", "q", "n")
        raw = view.cast("B")
        p = &raw[0]
        symbols = <uint32_t*>malloc(n * sizeof(uint32_t))
        if symbols == NULL:
            raise MemoryError("loopcore: cannot allocate the token buffer")
        try:
            with nogil:
                for i in range(n):
                    v = _token_at(p, i, size, signed)
                    if v < 0 or v > 0x10FFFF:
                        bad = i
                        break
                    symbols[i] = <uint32_t>((v + _tokens_shift) % 0x110000)
            if bad >= 0:
                raise _tokens.bad_token(bad, view[bad])
            if self.mode == 1:
                raise RuntimeError("this stream holds text: feed it with feed() only")
            self._enter()
            try:
                self.mode = 2
                self.skip_code_blocks = False  # ids are symbols: there is no fenced code to mask
                if not self.allocated:
                    self._allocate()
                return self._run(symbols, 4, n)
            finally:
                self.busy = False
        finally:
            free(symbols)

    def finish(self):
        """End of stream: release held characters and run the last checkpoint."""
        if self.finished_:
            raise RuntimeError("this stream is finished; start a new one")
        self._enter()
        self.finished_ = True
        try:
            self._finish_nogil()
        finally:
            self.busy = False
        if self.failed:
            raise MemoryError("loopcore: out of memory in the stream buffers")
        out = []
        self._drain(out)
        return out

    cdef void _finish_nogil(self) noexcept:
        cdef int k
        with nogil:
            if self.m_pending:
                for k in range(self.m_pending):
                    self._emit(self.m_pending_char, self.m_pending_pos + k)
                self.m_pending = 0
            if self.n > 0 and self.n % self.check_every != 0:
                if (self.lowdiv_sliding and not self.s_fired and self.n >= self.slide_window
                        and (self.n - self.slide_window) % self.slide_step != 0):
                    self._eval_window(self.n)
                self._checkpoint()

    cdef int _enter(self) except -1:
        """Refuse a second feeder: the GIL is released while one feed runs."""
        if self.busy:
            raise RuntimeError(
                "ChannelStream is being fed by another thread; use one stream per thread"
            )
        self.busy = True
        return 0

    cdef void _drain(self, list out):
        cdef int i, j, slot, ln
        cdef Event* ev
        for i in range(self.nev):
            ev = &self.events[i]
            if ev.kind == K_E:
                evidence = {"count": ev.ev0}
            elif ev.kind == K_L:
                evidence = {"unique": ev.ev0, "max_ngram": ev.ev1}
            elif ev.kind == K_S:
                evidence = {"unique": ev.ev0, "max_ngram": ev.ev1, "window_start": ev.ev2}
            elif ev.kind == K_C:
                evidence = {"period": ev.ev0, "copies": ev.ev1, "length": ev.ev2}
            elif ev.kind == K_N:
                evidence = {"period": ev.ev0, "coverage": ev.coverage, "exact": ev.ev3,
                            "strong": bool(ev.strong)}
            elif ev.kind == K_T and ev.ev3:
                evidence = {"unit": "word", "unique": ev.ev0, "tokens": ev.ev1}
            elif ev.kind == K_T:
                evidence = {"unit": "symbol", "unique": ev.ev0, "alnum": <double>ev.ev1 / <double>ev.ev2}
            else:
                phrases = []
                for j in range(ev.nphr):
                    slot = ev.phr_slot[j]
                    ln = self.rec_len[slot]
                    phrases.append(PyUnicode_FromKindAndData(
                        self.rec_width, self._rec_at(slot), ln))
                evidence = {"coverage": ev.coverage, "phrases": tuple(phrases)}
            out.append((KINDS[ev.kind], ev.position, ev.start, ev.cut, evidence))
        self.nev = 0

    # ------------------------------------------------------- per character
    cdef Py_ssize_t _consume(self, const void* data, int kind, Py_ssize_t i,
                             Py_ssize_t end) noexcept nogil:
        """Process characters from ``i``; stop after one that produced events."""
        cdef cp_t c
        while i < end:
            c = read_char(kind, data, i)
            i += 1
            self._step(c, self.orig_len)
            self.orig_len += 1
            if self.nev or self.failed:
                break
        return i

    cdef inline void _step(self, cp_t c, int64_t pos) noexcept nogil:
        """Fence masking (SPEC §2.6), one original character at a time."""
        cdef int k
        if not self.skip_code_blocks:
            self._emit(c, pos)
            return
        if self.m_opening:
            if c == 10:
                self.m_opening = False
                self.m_in_code = True
                self.cl_state = 0
                self.cl_run = 0
                self._fence_line_reset(pos + 1)
                self.fl_prev_len = -1
                self.fl_run = 0
            elif self.m_opening_run and c == self.m_fence_char:
                self.m_fence_len += 1
            else:
                self.m_opening_run = False
            return
        if self.m_in_code:
            if c == 10:
                if (self.cl_state == 1 or self.cl_state == 2) and self.cl_run >= self.m_fence_len:
                    self.m_in_code = False
                    self.m_line_start = True
                else:
                    self._fence_line_end(pos)
                self.cl_state = 0
                self.cl_run = 0
                return
            if self.fl_len < FENCE_MAX_LINE:
                self.fl_line[self.fl_len] = c
                self.fl_len += 1
            else:
                self.fl_over = True
            if is_space(c):
                self.fl_blank += 1
            elif is_alnum(c) and not (48 <= c <= 57):
                self.fl_letters += 1
            if self.cl_state == 0:
                if c == self.m_fence_char:
                    self.cl_state = 1
                    self.cl_run = 1
                elif c != 32 and c != 9:
                    self.cl_state = 3
            elif self.cl_state == 1:
                if c == self.m_fence_char:
                    self.cl_run += 1
                elif is_space(c):
                    self.cl_state = 2
                else:
                    self.cl_state = 3
            elif self.cl_state == 2 and not is_space(c):
                self.cl_state = 3
            return
        if self.m_pending:
            if c == self.m_pending_char:
                self.m_pending += 1
                if self.m_pending == 3:
                    self.m_pending = 0
                    self.m_opening = True
                    self.m_opening_run = True
                    self.m_fence_char = c
                    self.m_fence_len = 3
                return
            for k in range(self.m_pending):
                self._emit(self.m_pending_char, self.m_pending_pos + k)
            self.m_pending = 0
            self.m_line_start = False
        elif self.m_line_start and (c == 96 or c == 126):
            self.m_pending = 1
            self.m_pending_char = c
            self.m_pending_pos = pos
            return
        self._emit(c, pos)
        if c == 10:
            self.m_line_start = True
        elif c != 32 and c != 9:
            self.m_line_start = False

    cdef inline void _fence_line_reset(self, int64_t start) noexcept nogil:
        self.fl_len = 0
        self.fl_blank = 0
        self.fl_letters = 0
        self.fl_over = False
        self.fl_start = start

    cdef void _fence_line_end(self, int64_t pos) noexcept nogil:
        """A code line ended at ``pos`` (its newline), not the closing fence: a line repeated
        ``fence_repeat_lines`` times in a row is emitted, with its newline (_reference._take)."""
        cdef Py_ssize_t j
        cdef bint counts = (not self.fl_over and self.fl_len - self.fl_blank >= FENCE_MIN_CHARS
                            and self.fl_letters >= FENCE_MIN_LETTERS)
        if counts and self.fl_prev_len == self.fl_len and \
                memcmp(self.fl_line, self.fl_prev, <size_t>self.fl_len * sizeof(cp_t)) == 0:
            self.fl_run += 1
        else:
            self.fl_run = 1 if counts else 0
            if counts:
                memcpy(self.fl_prev, self.fl_line, <size_t>self.fl_len * sizeof(cp_t))
            self.fl_prev_len = self.fl_len if counts else -1
        if 0 < self.fence_repeat_lines <= self.fl_run:
            for j in range(self.fl_len):
                self._emit(self.fl_line[j], self.fl_start + j)
            self._emit(10, pos)
        self._fence_line_reset(pos + 1)

    cdef inline void _emit(self, cp_t c, int64_t pos) noexcept nogil:
        """Append one character to ``t`` and run the per-character detectors."""
        cdef int64_t d = pos - self.n
        cdef Py_ssize_t idx
        if d != self.bp_d[self.bp_len - 1]:
            self._push_breakpoint(d)
        if self.blen == self.cap:
            self._compact()
        idx = self.blen
        if c > self.wmax:
            self._widen(c)
            if self.failed:
                return
        if self.width == 1:
            (<uint8_t*>self.buf)[idx] = <uint8_t>c
        elif self.width == 2:
            (<uint16_t*>self.buf)[idx] = <uint16_t>c
        else:
            (<uint32_t*>self.buf)[idx] = c
        self.blen += 1
        self.n += 1
        if self.exact_tail:
            self.he = self.he * HB + c
            if self.n > self.window:
                self.he -= self._at(idx - self.window) * self.he_out
            self.ring_e[(self.n - 1) & self.emask] = <uint16_t>(self.he >> 48)
        if self.pool:
            self._sentence_step(c, self.n - 1)
        if self.lowdiv_tail:
            self._lowdiv_count(c, idx)
        if self.n == self.next_win:
            self.next_win += self.slide_step
            if not self.s_fired:
                self._eval_window(self.n)
        if self.n == self.next_cp:
            self.next_cp += self.check_every
            self._checkpoint()

    cdef inline void _lowdiv_count(self, cp_t c, Py_ssize_t idx) noexcept nogil:
        """Keep the L window's small-code-point counts as t[n-lowdiv_window:n]."""
        cdef cp_t out
        if c < 256:
            self.lw_small[c] += 1
            if self.lw_small[c] == 1:
                self.lw_distinct += 1
        else:
            self.lw_big += 1
        if self.n > self.lowdiv_window:
            out = self._at(idx - self.lowdiv_window)
            if out < 256:
                self.lw_small[out] -= 1
                if self.lw_small[out] == 0:
                    self.lw_distinct -= 1
            else:
                self.lw_big -= 1

    cdef void _push_breakpoint(self, int64_t d) noexcept nogil:
        cdef Py_ssize_t live
        cdef int64_t* nt
        cdef int64_t* nd
        # forget breakpoints that only cover offsets older than the look-back
        while (self.bp_len - self.bp_head >= 2
               and self.bp_t[self.bp_head + 1] <= self.n - self.keep):
            self.bp_head += 1
        if self.bp_len == self.bp_cap:
            live = self.bp_len - self.bp_head
            if self.bp_head >= self.bp_cap // 2:
                memmove(self.bp_t, self.bp_t + self.bp_head, live * sizeof(int64_t))
                memmove(self.bp_d, self.bp_d + self.bp_head, live * sizeof(int64_t))
            else:
                nt = <int64_t*>realloc(self.bp_t, 2 * self.bp_cap * sizeof(int64_t))
                if nt == NULL:
                    self.failed = True
                    return
                self.bp_t = nt
                nd = <int64_t*>realloc(self.bp_d, 2 * self.bp_cap * sizeof(int64_t))
                if nd == NULL:
                    self.failed = True
                    return
                self.bp_d = nd
                self.bp_cap *= 2
                memmove(self.bp_t, self.bp_t + self.bp_head, live * sizeof(int64_t))
                memmove(self.bp_d, self.bp_d + self.bp_head, live * sizeof(int64_t))
            self.bp_head = 0
            self.bp_len = live
        self.bp_t[self.bp_len] = self.n
        self.bp_d[self.bp_len] = d
        self.bp_len += 1

    cdef int64_t _map(self, int64_t k) noexcept nogil:
        """Original offset of ``t`` offset ``k`` (``k == n`` maps just past t[n-1])."""
        cdef Py_ssize_t lo, hi, mid
        if k >= self.n:
            if self.n == 0:
                return 0
            return self._map(self.n - 1) + 1
        lo = self.bp_head
        hi = self.bp_len - 1
        while lo < hi:
            mid = (lo + hi + 1) >> 1
            if self.bp_t[mid] <= k:
                lo = mid
            else:
                hi = mid - 1
        return k + self.bp_d[lo]

    cdef inline cp_t _at(self, Py_ssize_t i) noexcept nogil:
        """The code point at buffer index ``i``."""
        check(i >= 0 and i < self.blen)
        if self.width == 1:
            return (<const uint8_t*>self.buf)[i]
        if self.width == 2:
            return (<const uint16_t*>self.buf)[i]
        return (<const uint32_t*>self.buf)[i]

    cdef inline const char* _ptr(self, Py_ssize_t i) noexcept nogil:
        return <const char*>self.buf + i * self.width

    cdef inline bint _same(self, Py_ssize_t a, Py_ssize_t b, Py_ssize_t count) noexcept nogil:
        """Whether buffer ranges ``[a, a+count)`` and ``[b, b+count)`` hold the same code points."""
        check(a >= 0 and b >= 0 and a + count <= self.blen and b + count <= self.blen)
        return memcmp(self._ptr(a), self._ptr(b), <size_t>count * self.width) == 0

    cdef void _widen(self, cp_t c) noexcept nogil:
        """Grow the bytes per code point so that ``c`` fits (at most twice per stream)."""
        cdef int width = 2 if c <= 0xFFFF else 4
        cdef void* wider = malloc(<size_t>self.cap * width)
        cdef Py_ssize_t i
        if wider == NULL:
            self.failed = True
            return
        for i in range(self.blen):
            if width == 2:
                (<uint16_t*>wider)[i] = <uint16_t>self._at(i)
            else:
                (<uint32_t*>wider)[i] = self._at(i)
        free(self.buf)
        self.buf = wider
        self.mem += self.cap * (width - self.width)
        self.width = width
        self.wmax = 0xFFFF if width == 2 else 0xFFFFFFFF
        if self.rec_text != NULL:
            self._widen_records(width)

    cdef void _widen_records(self, int width) noexcept nogil:
        """Store the pool's records ``width`` bytes per code point, as the buffer now is."""
        cdef Py_ssize_t n = self.rec_cap * self.pool_max_phrase_chars, i
        cdef void* wider = malloc(<size_t>n * width)
        cdef cp_t c
        if wider == NULL:
            self.failed = True
            return
        for i in range(n):
            if self.rec_width == 1:
                c = (<const uint8_t*>self.rec_text)[i]
            else:
                c = (<const uint16_t*>self.rec_text)[i]
            if width == 2:
                (<uint16_t*>wider)[i] = <uint16_t>c
            else:
                (<uint32_t*>wider)[i] = c
        free(self.rec_text)
        self.rec_text = wider
        self.mem += n * (width - self.rec_width)
        self.rec_width = width

    cdef void _compact(self) noexcept nogil:
        cdef Py_ssize_t shift = self.blen - self.keep, i, ln
        # an open short sentence followed by a long run of whitespace may start
        # before the new base: keep its text (any later non-blank character
        # would make it longer than a phrase, so the copy stays exact)
        if self.pool and self.s_begin >= 0 and not self.s_saved and self.s_begin < self.base + shift:
            ln = <Py_ssize_t>(self.s_last - self.s_begin + 1)
            if ln <= self.pool_max_phrase_chars:
                for i in range(ln):
                    self.s_text[i] = self._at(<Py_ssize_t>(self.s_begin - self.base) + i)
                self.s_saved = True
        memmove(self.buf, self._ptr(shift), self.keep * self.width)
        self.base += shift
        self.blen = self.keep

    # --------------------------------------------------------- sentences (P)
    cdef inline void _sentence_step(self, cp_t c, int64_t at) noexcept nogil:
        cdef int st = self.s_line
        # fast path: the line class is decided, no terminal pending, an ASCII letter,
        # digit or blank (most characters of most text)
        if st >= LC_NORMAL and not self.s_pending and c < 128:
            if (48 <= c <= 57) or (65 <= c <= 90) or (97 <= c <= 122):
                if self.s_begin < 0:
                    self.s_begin = at
                self.s_last = at
                self.s_alnum = True
                return
            if c == 32 or c == 9:
                return
        if c == 10:
            if st == LC_KEYCOLON:
                self.s_line = LC_EXCLUDED  # ``key:`` at the end of the line
            self._complete_sentence()
            self.s_line = LC_START
            self.s_digits = 0
            self.s_pending = False
            return
        # line class (list item, table row, quote) from the first characters
        if st == LC_START:
            if c == 32 or c == 9:
                pass
            elif c == 45 or c == 42 or c == 43:
                self.s_line = LC_BULLET
            elif 48 <= c <= 57:
                self.s_line = LC_DIGITS
                self.s_digits = 1
            elif c == 124:
                self.s_line = LC_EXCLUDED
            elif c == 62:
                self.s_line = LC_GT
            elif self.pool_skip_key_value and ((97 <= c <= 122) or c == 95):  # a lower-case key: YAML, not a label
                self.s_line = LC_KEY
            else:
                self.s_line = LC_NORMAL
        elif st == LC_KEY:
            if (48 <= c <= 57) or (65 <= c <= 90) or (97 <= c <= 122) or c == 95 or c == 46 or c == 45:
                pass
            elif c == 58:
                self.s_line = LC_KEYCOLON
            else:
                self.s_line = LC_NORMAL
        elif st == LC_KEYCOLON:
            self.s_line = LC_EXCLUDED if (c == 32 or c == 9) else LC_NORMAL
        elif st == LC_BULLET or st == LC_DPUNCT or st == LC_GT:
            self.s_line = LC_EXCLUDED if (c == 32 or c == 9) else LC_NORMAL
        elif st == LC_DIGITS:
            if 48 <= c <= 57:
                self.s_digits += 1
                if self.s_digits > 9:
                    self.s_line = LC_NORMAL
            elif c == 46 or c == 41:
                self.s_line = LC_DPUNCT
            else:
                self.s_line = LC_NORMAL
        # sentence boundaries
        if self.s_pending:
            if is_space(c):
                self._complete_sentence()
                return
            self.s_pending = False
        if is_space(c):
            return
        if self.s_begin < 0:
            self.s_begin = at
        self.s_last = at
        if not self.s_alnum and is_alnum(c):
            self.s_alnum = True
        if c == 0x3002 or c == 0xFF01 or c == 0xFF1F:
            self._complete_sentence()
        elif c == 46 or c == 33 or c == 63 or c == 0x2026:
            self.s_pending = True

    cdef void _complete_sentence(self) noexcept nogil:
        cdef int64_t begin = self.s_begin, total
        cdef Py_ssize_t ln, slot, i, g, old, j, gi
        cdef uint64_t h
        cdef cp_t c
        cdef bint saved = self.s_saved
        self.s_begin = -1
        self.s_pending = False
        self.s_saved = False
        if begin < 0:
            self.s_alnum = False
            return
        if not self.s_alnum or self.s_line == LC_EXCLUDED:
            self.s_alnum = False
            return
        self.s_alnum = False
        ln = <Py_ssize_t>(self.s_last - begin + 1)
        total = self.rec_total
        slot = <Py_ssize_t>(total % self.rec_cap)
        # the record leaving the window gives up its group membership
        if total >= self.pool_window:
            old = <Py_ssize_t>((total - self.pool_window) % self.rec_cap)
            g = self.rec_grp[old]
            self.rec_grp[old] = -1
            if g >= 0:
                self.grp_count[g] -= 1
                if self.grp_count[g] == 0:
                    for gi in range(self.grp_nactive):
                        if self.grp_active[gi] == g:
                            self.grp_active[gi] = self.grp_active[self.grp_nactive - 1]
                            self.grp_nactive -= 1
                            break
                    self.grp_free[self.grp_nfree] = <int32_t>g
                    self.grp_nfree += 1
        self.rec_start[slot] = self._map(begin)
        self.rec_len[slot] = <int32_t>ln
        self.rec_grp[slot] = -1
        if ln <= self.pool_max_phrase_chars:
            h = <uint64_t>ln
            for i in range(ln):
                c = self.s_text[i] if saved else self._at(<Py_ssize_t>(begin - self.base) + i)
                h = h * HB + c
                self._rec_put(slot, i, c)
            self.rec_hash[slot] = h
            g = -1
            for gi in range(self.grp_nactive):
                j = self.grp_rep[self.grp_active[gi]]
                if self._same_text(j, slot):
                    g = self.grp_active[gi]
                    break
            if g < 0:
                self.grp_nfree -= 1
                g = self.grp_free[self.grp_nfree]
                self.grp_count[g] = 0
                self.grp_active[self.grp_nactive] = <int32_t>g
                self.grp_nactive += 1
            self.grp_count[g] += 1
            self.grp_rep[g] = <int32_t>slot
            self.rec_grp[slot] = <int32_t>g
        self.rec_total = total + 1

    cdef inline bint _same_text(self, Py_ssize_t a, Py_ssize_t b) noexcept nogil:
        return (self.rec_len[a] == self.rec_len[b] and self.rec_hash[a] == self.rec_hash[b]
                and memcmp(self._rec_at(a), self._rec_at(b), self.rec_len[a] * self.rec_width) == 0)

    cdef inline const char* _rec_at(self, Py_ssize_t slot) noexcept nogil:
        """The text of the record in ``slot`` (``rec_width`` bytes per code point)."""
        return <const char*>self.rec_text + slot * self.pool_max_phrase_chars * self.rec_width

    cdef inline void _rec_put(self, Py_ssize_t slot, Py_ssize_t i, cp_t c) noexcept nogil:
        cdef Py_ssize_t at = slot * self.pool_max_phrase_chars + i
        check(c <= self.wmax)
        if self.rec_width == 1:
            (<uint8_t*>self.rec_text)[at] = <uint8_t>c
        elif self.rec_width == 2:
            (<uint16_t*>self.rec_text)[at] = <uint16_t>c
        else:
            (<uint32_t*>self.rec_text)[at] = c

    # ------------------------------------------------------- scratch kernels
    cdef Py_ssize_t _distinct(self, int64_t lo, int64_t hi, Py_ssize_t limit) noexcept nogil:
        """Distinct code points of ``t[lo:hi]``, counting stops at ``limit``."""
        cdef Py_ssize_t count = 0, i, slot
        cdef cp_t c
        cdef uint32_t gen
        self.ds_gen += 1
        if self.ds_gen == 0:
            memset(self.ds_stamp, 0, (self.ds_mask + 1) * sizeof(uint32_t))
            memset(self.ds_small, 0, sizeof(self.ds_small))
            self.ds_gen = 1
        gen = self.ds_gen
        i = <Py_ssize_t>(hi - self.base)
        while i > lo - self.base:
            i -= 1
            c = self._at(i)
            if c < 256:
                if self.ds_small[c] == gen:
                    continue
                self.ds_small[c] = gen
            else:
                slot = <Py_ssize_t>((c * <uint32_t>2654435761U) >> 7) & self.ds_mask
                while self.ds_stamp[slot] == gen and self.ds_keys[slot] != c:
                    slot = (slot + 1) & self.ds_mask
                if self.ds_stamp[slot] == gen:
                    continue
                self.ds_stamp[slot] = gen
                self.ds_keys[slot] = c
            count += 1
            if count >= limit:
                return count
        return count

    cdef Py_ssize_t _max_ngram(self, int64_t lo, int64_t hi) noexcept nogil:
        """Largest count of one ``ngram``-gram of ``t[lo:hi]`` (overlapping)."""
        cdef Py_ssize_t k = self.ngram, i, a = <Py_ssize_t>(lo - self.base)
        cdef Py_ssize_t b = <Py_ssize_t>(hi - self.base), slot
        cdef uint64_t h = 0, key
        cdef uint16_t gen
        cdef uint32_t top = 0, cnt
        cdef size_t slots = self.ng_mask + 1
        if b - a < k:
            return 0
        if self.ng_keys == NULL:
            self.ng_keys = <uint64_t*>malloc(slots * sizeof(uint64_t))
            self.ng_count = <uint32_t*>malloc(slots * sizeof(uint32_t))
            self.ng_stamp = <uint16_t*>calloc(slots, sizeof(uint16_t))
            if self.ng_keys == NULL or self.ng_count == NULL or self.ng_stamp == NULL:
                self.failed = True
                return 0
            self.lazy_bytes += slots * (sizeof(uint64_t) + sizeof(uint32_t) + sizeof(uint16_t))
        self.ng_gen += 1
        if self.ng_gen == 0:
            memset(self.ng_stamp, 0, slots * sizeof(uint16_t))
            self.ng_gen = 1
        gen = self.ng_gen
        for i in range(a, b):
            h = addmod61(mulmod61(h, NGB), self._at(i))
            if i - a >= k:
                h = submod61(h, mulmod61(self._at(i - k), self.ng_pow))
            if i - a >= k - 1:
                key = h ^ (h >> 29)
                slot = <Py_ssize_t>((key * 0x9E3779B97F4A7C15ULL) >> 40) & self.ng_mask
                while self.ng_stamp[slot] == gen and self.ng_keys[slot] != h:
                    slot = (slot + 1) & self.ng_mask
                if self.ng_stamp[slot] != gen:
                    self.ng_stamp[slot] = gen
                    self.ng_keys[slot] = h
                    self.ng_count[slot] = 0
                cnt = self.ng_count[slot] + 1
                self.ng_count[slot] = cnt
                if cnt > top:
                    top = cnt
        return top

    cdef inline Py_ssize_t _lg_slot(self, uint64_t h) noexcept nogil:
        cdef uint64_t key = h ^ (h >> 29)
        return <Py_ssize_t>((key * 0x9E3779B97F4A7C15ULL) >> 40) & self.lg_mask

    cdef void _lg_add(self, uint64_t h) noexcept nogil:
        cdef Py_ssize_t slot = self._lg_slot(h)
        cdef uint32_t c
        while self.lg_count[slot] != 0 and self.lg_keys[slot] != h:
            slot = (slot + 1) & self.lg_mask
        c = self.lg_count[slot]
        self.lg_keys[slot] = h
        self.lg_count[slot] = c + 1
        if c:
            self.lg_hist[c] -= 1
        self.lg_hist[c + 1] += 1
        if c + 1 > self.lg_max:
            self.lg_max = c + 1

    cdef void _lg_remove(self, uint64_t h) noexcept nogil:
        cdef Py_ssize_t slot = self._lg_slot(h), i, j, home
        cdef uint32_t c
        while self.lg_keys[slot] != h or self.lg_count[slot] == 0:
            slot = (slot + 1) & self.lg_mask
        c = self.lg_count[slot]
        self.lg_hist[c] -= 1
        if c > 1:
            self.lg_count[slot] = c - 1
            self.lg_hist[c - 1] += 1
        else:
            # backward-shift deletion keeps linear probing exact without tombstones
            i = slot
            j = slot
            while True:
                j = (j + 1) & self.lg_mask
                if self.lg_count[j] == 0:
                    break
                home = self._lg_slot(self.lg_keys[j])
                if (i <= j and (home <= i or home > j)) or (i > j and home <= i and home > j):
                    self.lg_keys[i] = self.lg_keys[j]
                    self.lg_count[i] = self.lg_count[j]
                    i = j
            self.lg_count[i] = 0
        while self.lg_max > 0 and self.lg_hist[self.lg_max] == 0:
            self.lg_max -= 1

    cdef void _lg_grams(self, int64_t a, int64_t b, bint add) noexcept nogil:
        """Add (or remove) the grams of ``t`` starting in ``[a, b)``."""
        cdef Py_ssize_t k = self.ngram, i, off = <Py_ssize_t>(a - self.base)
        cdef Py_ssize_t count = <Py_ssize_t>(b - a), s
        cdef uint64_t h = 0
        if count <= 0:
            return
        for i in range(k - 1):
            h = addmod61(mulmod61(h, NGB), self._at(off + i))
        for s in range(count):
            h = addmod61(mulmod61(h, NGB), self._at(off + s + k - 1))
            if s:
                h = submod61(h, mulmod61(self._at(off + s - 1), self.ng_pow))
            if add:
                self._lg_add(h)
            else:
                self._lg_remove(h)

    cdef Py_ssize_t _lowdiv_max_ngram(self, int64_t lo, int64_t n) noexcept nogil:
        """Largest count of one ``ngram``-gram in ``t[lo:n]``, updated incrementally.

        The counts of the previous evaluation are moved to the new window by
        removing the grams that left and adding the ones that came (at most
        2 x ``check_every`` grams instead of ``lowdiv_window``); a far jump rebuilds.
        """
        cdef int64_t hi = n - self.ngram + 1
        cdef size_t slots = self.lg_mask + 1
        if hi <= lo:
            return 0
        if self.lg_keys == NULL:
            self.lg_keys = <uint64_t*>malloc(slots * sizeof(uint64_t))
            self.lg_count = <uint32_t*>calloc(slots, sizeof(uint32_t))
            self.lg_hist = <uint32_t*>calloc(self.lowdiv_window + 2, sizeof(uint32_t))
            if self.lg_keys == NULL or self.lg_count == NULL or self.lg_hist == NULL:
                self.failed = True
                return 0
            self.lazy_bytes += slots * (sizeof(uint64_t) + sizeof(uint32_t))
            self.lazy_bytes += (self.lowdiv_window + 2) * sizeof(uint32_t)
        if (self.lg_valid and lo >= self.lg_lo and hi >= self.lg_hi and self.lg_lo >= self.base
                and (lo - self.lg_lo) + (hi - self.lg_hi) < hi - lo):
            self._lg_grams(self.lg_lo, lo if lo < self.lg_hi else self.lg_hi, False)
            self._lg_grams(self.lg_hi if self.lg_hi > lo else lo, hi, True)
        else:
            memset(self.lg_count, 0, slots * sizeof(uint32_t))
            memset(self.lg_hist, 0, (self.lg_max + 2) * sizeof(uint32_t))
            self.lg_max = 0
            self._lg_grams(lo, hi, True)
        self.lg_lo = lo
        self.lg_hi = hi
        self.lg_valid = True
        return self.lg_max

    cdef bint _data_run(self, int64_t lo, int64_t hi) noexcept nogil:
        """Whether the share of hex-dump characters in ``t[lo:hi]`` exceeds ``lowdiv_max_data_share``."""
        cdef Py_ssize_t count = 0, distinct = 0
        cdef int64_t i
        cdef cp_t c
        cdef bint seen[128]
        if self.lowdiv_max_data_share >= 1.0:
            return False
        memset(seen, 0, sizeof(seen))
        for i in range(lo, hi):
            c = self._at(<Py_ssize_t>(i - self.base))
            if c < 128 and DATA_CHAR[c]:
                count += 1
                if not seen[c]:
                    seen[c] = True
                    distinct += 1
        return <double>count > self.lowdiv_max_data_share * <double>(hi - lo) and distinct >= DATA_MIN_DISTINCT

    cdef bint _art_run(self, int64_t lo, int64_t hi) noexcept nogil:
        """Whether ``t[lo:hi]`` is an art run (_reference.art_run)."""
        cdef Py_ssize_t alnum = 0, nsym = 0, k
        cdef int64_t i
        cdef cp_t c
        cdef cp_t sym[4]  # ART_MIN_SYMBOLS <= 4
        cdef bint known
        if self.lowdiv_art_max_alnum <= 0.0:
            return False
        for i in range(lo, hi):
            c = self._at(<Py_ssize_t>(i - self.base))
            if is_alnum(c):
                alnum += 1
            elif nsym < ART_MIN_SYMBOLS and not is_space(c):
                known = False
                for k in range(nsym):
                    if sym[k] == c:
                        known = True
                        break
                if not known:
                    sym[nsym] = c
                    nsym += 1
        return <double>alnum < self.lowdiv_art_max_alnum * <double>(hi - lo) and nsym >= ART_MIN_SYMBOLS

    cdef void _eval_window(self, int64_t end) noexcept nogil:
        """S: evaluate the sliding window ``t[end-slide_window:end]``."""
        cdef int64_t lo = end - self.slide_window
        cdef Py_ssize_t unique = self._distinct(lo, end, self.slide_max_unique), top
        if unique >= self.slide_max_unique:
            return
        top = self._max_ngram(lo, end)
        if top >= self.slide_min_repeat and not self._data_run(lo, end) and not self._art_run(lo, end):
            self.s_fired = True
            self.s_unique = unique
            self.s_top = top
            self.s_start = self._map(lo)

    # ------------------------------------------------------------ detectors
    cdef bint _ring_has(self, const uint16_t* ring, Py_ssize_t mask, int64_t lo, int64_t hi,
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

    cdef bint _exact_tail(self, Event* ev) noexcept nogil:
        cdef int64_t n = self.n, w = self.window, lo, j, s, first = -1, second = -1
        cdef int64_t last, next_ok, seg_end
        cdef Py_ssize_t count = 0
        cdef uint16_t x
        cdef Py_ssize_t tail
        if n < self.min_chars or w < 40 or n < w:
            return False
        lo = n - w - self.history
        if lo < 0:
            lo = 0
        x = self.ring_e[(n - 1) & self.emask]
        tail = <Py_ssize_t>(n - w - self.base)
        j = lo + w - 1
        last = n - w - 1
        next_ok = lo
        while j <= last:
            # skip blocks without a hash match (vectorised), ring-segment by segment
            seg_end = j + (self.emask + 1 - (j & self.emask))
            if seg_end > last + 1:
                seg_end = last + 1
            if not any_equal_u16(&self.ring_e[j & self.emask], <Py_ssize_t>(seg_end - j), x):
                j = seg_end
                continue
            while j < seg_end:
                if self.ring_e[j & self.emask] == x:
                    s = j - w + 1
                    if s >= next_ok and self._same(<Py_ssize_t>(s - self.base), tail, w):
                        count += 1
                        if first < 0:
                            first = s
                        elif second < 0:
                            second = s
                        next_ok = s + w
                j += 1
        if count < self.repeats - 1:
            return False
        ev.start = self._map(first)
        ev.cut = self._map(second if second >= 0 else n - w)
        ev.ev0 = count
        return True

    cdef bint _lowdiv_tail(self, Event* ev) noexcept nogil:
        cdef int64_t n = self.n, lo
        cdef Py_ssize_t unique, top
        if n < self.min_chars:
            return False
        lo = n - self.lowdiv_window
        if lo < 0:
            lo = 0
        if self.lw_distinct >= self.lowdiv_max_unique:
            return False
        if self.lw_big == 0:
            unique = self.lw_distinct  # exact: every code point is < 256
        else:
            unique = self._distinct(lo, n, self.lowdiv_max_unique)
        if unique >= self.lowdiv_max_unique:
            return False
        top = self._lowdiv_max_ngram(lo, n)
        if top < self.lowdiv_min_repeat:
            return False
        if self._data_run(lo, n) or self._art_run(lo, n):
            return False
        ev.start = ev.cut = self._map(lo)
        ev.ev0 = unique
        ev.ev1 = top
        return True

    cdef void _cycle_catch_up(self) noexcept nogil:
        """Tag the ck-grams ending at the positions appended since the last checkpoint
        (C reads its ring only at checkpoints, so it is filled per block)."""
        cdef Py_ssize_t idx = <Py_ssize_t>(self.c_done - self.base), count = <Py_ssize_t>(self.n - self.c_done)
        check(idx >= 0 and idx + count <= self.blen)
        if self.width == 1:
            cycle_hash_chunk(<const uint8_t*>self.buf, idx, count, self)
        elif self.width == 2:
            cycle_hash_chunk(<const uint16_t*>self.buf, idx, count, self)
        else:
            cycle_hash_chunk(<const uint32_t*>self.buf, idx, count, self)
        self.c_done = self.n

    cdef bint _cycle(self, Event* ev) noexcept nogil:
        cdef int64_t n = self.n
        cdef Py_ssize_t span = <Py_ssize_t>(n if n < self.cycle_scan_chars else self.cycle_scan_chars)
        cdef Py_ssize_t top_p = span // self.cycle_min_copies, p, need, lim, e0, i, z, l, r
        cdef Py_ssize_t reach, small, best_len = 0, best_p = 0
        cdef uint16_t x
        cdef bint candidate = False
        cdef int32_t* Z = self.zbuf
        self._cycle_catch_up()
        if top_p > self.cycle_max_period:
            top_p = self.cycle_max_period
        if top_p < self.cycle_min_period or n < self.ck:
            return False
        e0 = <Py_ssize_t>(n - 1 - self.base)
        # a held cycle whose period the new text continues still holds: one comparison of the
        # block (with 3+ copies a stretch that keeps period p cannot come to hold only for a
        # smaller shift, Fine and Wilf; the episode's report is out already, so only "holds" counts)
        p = self.c_held_p
        if self.holding[K_C] and p and self.cycle_min_copies >= 3 and self.c_held_n < n and p <= top_p:
            need = <Py_ssize_t>(n - self.c_held_n)
            if self._same(e0 - need + 1, e0 - need + 1 - p, need):
                self.c_held_n = n
                return True
        self.c_held_p = 0
        # prefilter: some p whose needed match length holds (one memcmp each)
        x = self.ring_c[(n - 1) & self.cmask]
        if not self._ring_has(self.ring_c, self.cmask, n - 1 - top_p, n - self.cycle_min_period, x):
            return False
        for p in range(self.cycle_min_period, top_p + 1):
            if self.ring_c[(n - 1 - p) & self.cmask] != x:
                continue
            lim = self.cycle_min_copies * p
            if lim < self.cycle_min_chars:
                lim = self.cycle_min_chars
            if lim > span:
                continue
            need = lim - p
            if self._same(e0 - need + 1, e0 - p - need + 1, need):
                candidate = True
                break
        if not candidate:
            return False
        if Z == NULL:
            Z = self.zbuf = <int32_t*>malloc((self.cycle_max_period + 2) * sizeof(int32_t))
            if Z == NULL:
                self.failed = True
                return False
            self.lazy_bytes += (self.cycle_max_period + 2) * sizeof(int32_t)
        # Z-function of the reversed tail r[k] = t[n-1-k], for shifts 1..top_p
        l = 0
        r = 0
        small = 0
        for i in range(1, top_p + 1):
            z = 0
            if i < r:
                z = r - i
                if Z[i - l] < z:
                    z = Z[i - l]
            if i + z >= r:
                # extend in blocks of 16 with memcmp, then one by one
                while i + z + 16 <= span and self._same(e0 - z - 15, e0 - i - z - 15, 16):
                    z += 16
                while i + z < span and self._at(e0 - z) == self._at(e0 - i - z):
                    z += 1
                if i + z > r:
                    l = i
                    r = i + z
            Z[i] = <int32_t>z
            reach = z + i
            if reach > small:
                if (i >= self.cycle_min_period and reach >= self.cycle_min_chars
                        and reach >= self.cycle_min_copies * i):
                    best_len = reach
                    best_p = i
                small = reach
        if best_p == 0:
            return False
        self.c_held_p, self.c_held_n = best_p, n
        ev.start = self._map(n - best_len)
        ev.cut = self._map(n - best_len + best_p)
        ev.ev0 = best_p
        ev.ev1 = best_len // best_p
        ev.ev2 = best_len
        return True

    # ------------------------------------------------------ near cycle (N)
    cdef void _near_catch_up(self) noexcept nogil:
        """Chain the k-grams ending at the positions appended since the last checkpoint.

        N is read only at checkpoints, so it runs per block in two tight loops: the first
        hashes every position and lists the anchors (_reference.near_anchors) without a
        branch, the second links each anchor to the previous anchor of the same k-gram
        and counts its lag."""
        cdef int64_t i = self.n_done, stop
        cdef Py_ssize_t idx
        while i < self.n:
            stop = min(self.n, i + NEAR_CHUNK)
            idx = <Py_ssize_t>(i - self.base)
            check(idx - self.n_link - self.near_ngram >= 0 or self.base == 0)
            check(idx >= 0 and stop - self.base <= self.blen)
            if self.width == 1:
                near_chunk(<const uint8_t*>self.buf, idx, stop - i, i, self)
            elif self.width == 2:
                near_chunk(<const uint16_t*>self.buf, idx, stop - i, i, self)
            else:
                near_chunk(<const uint32_t*>self.buf, idx, stop - i, i, self)
            i = stop
        self.n_done = self.n

    cdef bint _near_recurrence(self, Event* ev) noexcept nogil:
        """_reference.ChannelStream._near_recurrence: restarts, copies of varying length."""
        cdef int64_t n = self.n, i, lo, s, e, done, cut = -1, q, lag = 0, base = self.base, exact = 0
        cdef Py_ssize_t k = self.near_ngram, w = self.near_recurrence_window, covered = 0
        cdef bint strong = False
        if n < w or n < k or self.n_anchors == 0:
            return False
        if <double>self.n_recurring < self.near_min_recurrence * <double>self.n_anchors:
            return False  # the gate: the block's anchors nearly all occurred before
        lo = n - w
        done = lo
        for i in range(max(lo, k - 1), n):
            if i < done:
                continue
            q = self.n_last[i & self.n_lmask]
            if q == 0:
                continue
            if self.n_last[(i - q) & self.n_lmask] == 0:
                continue  # the copied k-gram occurred once before: two copies are not a loop
            s = max(lo, i - k + 1)
            while s > done and s - 1 - q >= 0 and self._at(<Py_ssize_t>(s - 1 - base)) == \
                    self._at(<Py_ssize_t>(s - 1 - q - base)):
                s -= 1
            e = i + 1
            while e < n and self._at(<Py_ssize_t>(e - base)) == self._at(<Py_ssize_t>(e - q - base)):
                e += 1
            if e - s < 2 * k:
                continue
            if cut < 0:
                cut = s
                lag = q
            covered += e - max(s, done)
            if e - s > exact:
                exact = e - s
            if e - s >= q:
                strong = True
            done = e
        if cut < 0 or <double>covered < self.near_min_recurrence * <double>w:
            return False
        if <double>self._record_chars(lo, n) >= self.near_max_record_share * <double>w:
            return False
        self._near_report(ev, cut, lag, covered, w, exact, strong)
        return True

    cdef void _near_report(self, Event* ev, int64_t cut, int64_t period, Py_ssize_t covered,
                           Py_ssize_t w, int64_t exact, bint strong) noexcept nogil:
        """N's detection: one copy kept before ``cut``; evidence period, coverage, exact, strong."""
        ev.start = self._map(cut - period if cut > period else 0)
        ev.cut = self._map(cut)
        ev.ev0 = period
        ev.ev1 = covered
        ev.ev2 = w
        ev.ev3 = exact
        ev.strong = strong
        ev.coverage = <double>covered / <double>w

    cdef int64_t _near_walk_back(self, int64_t cut, Py_ssize_t p) noexcept nogil:
        """_reference.near_walk_back down to ``n - span - link`` (what the buffer keeps)."""
        cdef int64_t floor = self.n - max(2 * self.n_lim, self.near_min_window, self.near_recurrence_window) - self.n_link
        cdef int64_t base = self.base
        if floor < 0:
            floor = 0
        while cut - 1 - p >= floor and self._at(<Py_ssize_t>(cut - 1 - base)) == self._at(<Py_ssize_t>(cut - 1 - p - base)):
            cut -= 1
        return cut

    cdef int64_t _near_extend(self, int64_t e, int64_t n, int64_t q, int64_t c, Py_ssize_t p, Py_ssize_t tol,
                              int64_t* gaps, int64_t* run) noexcept nogil:
        """_reference.near_extend from ``e`` up to ``n`` at lag ``q``, comparing at lag ``c``
        first; returns the end, sets ``gaps``; ``run`` is ``[piece start, longest exact piece,
        a piece as long as its lag]``."""
        if self.width == 1:
            return near_extend_chunk(<const uint8_t*>self.buf, self, e, n, q, c, p, tol, gaps, run)
        if self.width == 2:
            return near_extend_chunk(<const uint16_t*>self.buf, self, e, n, q, c, p, tol, gaps, run)
        return near_extend_chunk(<const uint32_t*>self.buf, self, e, n, q, c, p, tol, gaps, run)

    cdef bint _digits_back(self, int64_t e, int64_t c) noexcept nogil:
        """Whether ``[e - c, e)`` is all ASCII digits (_reference.near_extend: the copy is itself
        a number).  Cached over one window walk, where ``e`` only grows: each position is read
        at most once per walk."""
        cdef int64_t x, base = self.base
        cdef cp_t ch
        if self.n_dend < 0:
            self.n_dlo = e
            self.n_dend = e
            self.n_dexact = False
        else:
            x = self.n_dend
            while x < e:
                ch = self._at(<Py_ssize_t>(x - base))
                if not (48 <= ch <= 57):
                    self.n_dlo = x + 1
                    self.n_dexact = True
                x += 1
            self.n_dend = e
        while not self.n_dexact and self.n_dlo > e - c:
            ch = self._at(<Py_ssize_t>(self.n_dlo - 1 - base))
            if 48 <= ch <= 57:
                self.n_dlo -= 1
            else:
                self.n_dexact = True
        return self.n_dlo <= e - c

    cdef inline Py_ssize_t _ntol(self, Py_ssize_t p) noexcept nogil:
        """_reference.near_tolerance(p, near_tolerance)."""
        return max(NEAR_MIN_TOL, min(NEAR_SHORT_TOL, p // 4), p // self.near_tolerance)

    cdef inline int64_t _near_lag(self, int64_t i, Py_ssize_t p, Py_ssize_t tol) noexcept nogil:
        """The distance ``q`` to the nearest earlier anchor ending the same k-gram as anchor
        ``i`` with ``|q - p| <= tol``, 0 when there is none."""
        cdef int64_t dist = 0
        cdef uint16_t d = self.n_last[i & self.n_lmask]
        while d != 0:
            dist += d
            if dist > p + tol:
                return 0
            if dist >= p - tol:
                return dist
            d = self.n_last[(i - dist) & self.n_lmask]
        return 0

    cdef bint _is_record(self, Py_ssize_t a, Py_ssize_t e) noexcept nogil:
        """_reference.is_record_line over buffer indices ``[a, e)`` (a line without its newline)."""
        cdef Py_ssize_t length = e - a, s = a, j
        cdef cp_t c
        if length > RECORD_MAX_LINE:
            return False
        s = self._skip_blanks(s, e)
        if s == e:
            return False
        c = self._at(s)
        if c == 123 or c == 91 or c == 124:  # { [ |
            return True
        if c == 34 and self._json_string_item(s, e):  # "
            return True
        j = s
        if c == 45 and s + 1 < e and self._at(s + 1) == 32:  # "- "
            j = s + 2
        if j < e and ((97 <= self._at(j) <= 122) or self._at(j) == 95):
            j += 1
            while j < e:
                c = self._at(j)
                if (48 <= c <= 57) or (65 <= c <= 90) or (97 <= c <= 122) or c == 95 or c == 46 or c == 45:
                    j += 1
                else:
                    break
            if j < e and self._at(j) == 58 and (j + 1 == e or self._at(j + 1) == 32 or self._at(j + 1) == 9):
                return True
        if self._starts(s, e, b"@@") or self._starts(s, e, b"+++") or self._starts(s, e, b"---") \
                or self._starts(s, e, b"diff ") or self._starts(s, e, b"index "):
            return True
        c = self._at(a)
        if (c == 43 or c == 45) and (length == 1 or (self._at(a + 1) != 32 and self._at(a + 1) != 9)
                                     or (length > 2 and (self._at(a + 2) == 32 or self._at(a + 2) == 9))):
            return True
        j = s
        while j < e:
            c = self._at(j)
            if c == 32 or c == 9:
                break
            if c == 47 or c == 92:  # / \
                return True
            if c == 58 and j + 1 < e and self._at(j + 1) == 58:  # ::
                return True
            j += 1
        return self._is_offset(s, self._first_field(s, j))

    cdef inline Py_ssize_t _skip_blanks(self, Py_ssize_t j, Py_ssize_t e) noexcept nogil:
        """The first index in ``[j, e)`` that is not a blank or tab (``e``: none)."""
        while j < e and (self._at(j) == 32 or self._at(j) == 9):
            j += 1
        return j

    cdef Py_ssize_t _first_field(self, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
        """The end of the token ``[s, e)``'s first comma-separated field: its first comma not
        between two digits (_reference._first_field)."""
        cdef Py_ssize_t j
        for j in range(s, e):
            if self._at(j) == 44 and not (s < j < e - 1 and 48 <= self._at(j - 1) <= 57
                                          and 48 <= self._at(j + 1) <= 57):
                return j
        return e

    cdef bint _json_string_item(self, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
        """_reference._json_string_item over buffer indices ``[s, e)`` (``s`` is the ``"``)."""
        cdef Py_ssize_t j = s + 1
        cdef cp_t c
        while j < e:
            c = self._at(j)
            if c == 92:  # backslash: the next code point is escaped
                j += 2
                continue
            if c == 34:
                j += 1
                j = self._skip_blanks(j, e)
                if j == e:
                    return False
                c = self._at(j)
                if c != 44:
                    return c == 58 or c == 93 or c == 125  # : ] }
                j += 1  # a comma: then the end, a field with no blank before it, or a JSON value
                if j == e or (self._at(j) != 32 and self._at(j) != 9):
                    return True
                j = self._skip_blanks(j, e)
                if j == e:
                    return False
                c = self._at(j)
                return c == 34 or c == 123 or c == 91 or c == 45 or (48 <= c <= 57)  # " { [ - digit
            j += 1
        return False

    cdef bint _is_offset(self, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
        """Whether the token ``[s, e)`` is a number or an offset (_reference.is_record_line)."""
        cdef Py_ssize_t j, digits = 0, body
        cdef cp_t c
        cdef bint digit = False, number = True, inner = False
        if e > s and self._at(e - 1) == 58:  # one trailing ':'
            e -= 1
        body = e
        if e - s > 1 and self._at(e - 1) == 90 and 48 <= self._at(e - 2) <= 57:  # ISO 8601's final Z
            body = e - 1
        body = self._utc_offset(s, body)
        for j in range(s, body):
            c = self._at(j)
            if 48 <= c <= 57:
                digits += 1
            elif c == 58 or c == 46 or c == 45 or c == 44 or c == 84:  # : . - , T
                if s < j < body - 1 and 48 <= self._at(j - 1) <= 57 and 48 <= self._at(j + 1) <= 57:
                    inner = True
                elif c == 84:
                    number = False
            else:
                number = False
        if number and inner and digits >= 3:
            return True  # a time, date or version
        if e - s >= 2 and self._at(s) == 48 and (self._at(s + 1) == 120 or self._at(s + 1) == 88):  # 0x
            s += 2
        if e - s < 6:
            return False
        for j in range(s, e):
            c = self._at(j)
            if 48 <= c <= 57:
                digit = True
            elif not ((97 <= c <= 102) or (65 <= c <= 70)):
                return False
        return digit

    cdef Py_ssize_t _utc_offset(self, Py_ssize_t s, Py_ssize_t body) noexcept nogil:
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
            if o <= s or self._at(o) != 43 or not (48 <= self._at(o - 1) <= 57):  # +
                continue
            for j in range(o + 1, body):
                if size == 6 and j == o + 3:
                    if self._at(j) != 58:  # :
                        break
                elif not (48 <= self._at(j) <= 57):
                    break
            else:
                return o
        return body

    cdef inline bint _starts(self, Py_ssize_t s, Py_ssize_t e, const char* prefix) noexcept nogil:
        cdef Py_ssize_t j = 0
        while prefix[j] != 0:
            if s + j >= e or self._at(s + j) != <cp_t>(<unsigned char>prefix[j]):
                return False
            j += 1
        return True

    cdef int64_t _record_chars(self, int64_t lo, int64_t n) noexcept nogil:
        """_reference.record_chars over t[lo:n]."""
        cdef Py_ssize_t a = <Py_ssize_t>(lo - self.base), end_i = <Py_ssize_t>(n - self.base)
        cdef Py_ssize_t floor_i = <Py_ssize_t>(0 - self.base), steps = 0, b, e
        cdef bint long_first = False
        cdef int64_t total = 0, stop
        while a > floor_i and self._at(a - 1) != 10:
            if steps > RECORD_MAX_LINE:
                long_first = True
                break
            a -= 1
            steps += 1
        while a < end_i:
            b = a
            while b < end_i and self._at(b) != 10:
                b += 1
            e = b
            stop = (b + 1) if b < end_i else end_i
            if not long_first and self._is_record(a, e):
                total += stop - (a if a > lo - self.base else lo - self.base)
            long_first = False
            a = e + 1
        return total

    cdef bint _near(self, Event* ev) noexcept nogil:
        """N at a checkpoint; starts the next block's lag histogram."""
        cdef bint held = False, whole
        cdef int r
        cdef Py_ssize_t pend = self.n_pend
        self._near_catch_up()
        self.n_pend = 0
        if 0 < self.n_hold <= self.n_lim and self.n >= self.near_min_window and self.n >= self.near_ngram:
            # a loop N holds on: its window at the same period, first
            held = self._near_window(ev, self.n_hold, self._ntol(self.n_hold)) == 1
        if not held and 0 < pend <= self.n_lim and pend != self.n_hold and self.n >= self.near_min_window \
                and self.n >= self.near_ngram:
            # a period whose window fell short at the previous checkpoint (a noisy loop's
            # lags scatter; its window may pass one block later)
            r = self._near_window(ev, pend, self._ntol(pend))
            held = r == 1
            if r == 0 and <double>self.n_covered >= self._pending_min(pend):
                self.n_pend = pend  # a loop still growing into its window: once more
        if not held and self.n >= self.near_min_window and self.n >= self.near_ngram:
            held = self._near_eval(ev) or self._near_recurrence(ev)
        self.n_hold = <Py_ssize_t>ev.ev0 if held else 0
        # strong: a whole copy equal to the one before it, at this checkpoint and the previous one
        whole = held and ev.strong
        if held:  # a block of new text confirms (not the end of the stream)
            ev.strong = whole and self.n_whole_prev and self.n % self.check_every == 0
        self.n_whole_prev = whole
        self._near_table_clear()
        self.n_best = 0
        self.n_mode = 0
        self.n_anchors = 0
        self.n_recurring = 0
        return held

    cdef inline double _pending_min(self, Py_ssize_t p) noexcept nogil:
        """_reference.ChannelStream._pending_min."""
        cdef double w = <double>max(2 * p, self.near_min_window)
        return max(NEAR_PENDING_KEEP * w, self.near_min_coverage * w - <double>self.check_every)

    cdef bint _near_eval(self, Event* ev) noexcept nogil:
        """N's periodic check (_reference.ChannelStream._near_periodic): the most frequent
        nearest lag, then, when its window fails, the most voted other lags."""
        cdef int64_t n = self.n, i, b0
        cdef Py_ssize_t k = self.near_ngram, p, tol, within, r, j, slot
        cdef Py_ssize_t cand[NEAR_CANDIDATES]
        cdef uint32_t votes[NEAR_CANDIDATES]
        cdef Py_ssize_t ncand, p1, m
        cdef int64_t d, d2, sum_c, sum_cd
        if n < self.near_min_window or n < k or self.n_best == 0:
            return False
        # the first: the most frequent nearest lag (ties: the smallest), its share counted
        # from the histogram
        # the period: the mean (rounded, halves up) of the nearest lags within the mode's
        # tolerance of the most frequent one (insertions and deletions scatter a noisy loop's lags)
        p = self.n_mode
        tol = self._ntol(p)
        sum_c = 0
        sum_cd = 0
        for j in range(self.n_nused):
            slot = self.n_used[j]
            if p - tol <= self.n_lag[slot] <= p + tol:
                sum_c += self.n_count[slot]
                sum_cd += <int64_t>self.n_count[slot] * self.n_lag[slot]
        p = <Py_ssize_t>((2 * sum_cd + sum_c) // (2 * sum_c))
        tol = self._ntol(p)
        within = 0
        for j in range(self.n_nused):
            slot = self.n_used[j]
            for m in range(1, NEAR_MULTIPLES + 1):  # where copies were edited: m periods back
                if m * p - tol <= self.n_lag[slot] <= m * p + tol:
                    within += self.n_count[slot]
                    break
        if <double>within >= self.near_min_lag_share * <double>self.n_anchors:
            r = self._near_window(ev, p, tol)
            if r != 0:
                return r == 1
            if <double>self.n_covered >= self._pending_min(p):
                self.n_pend = p  # close: the loop may be growing into its window
        if <double>self.n_recurring < NEAR_VOTE_GATE * <double>self.n_anchors:
            return False  # the votes only where the block's k-grams mostly repeat
        # the first failed its window: a lag of a repeat inside the unit?  The next ones come
        # from votes: each anchor votes for the lags of its first NEAR_VOTES earlier
        # occurrences (a unit's inner repeat hides the whole period from the nearest lags);
        # their share counts any earlier occurrence
        p1 = p
        b0 = n - (n % self.check_every or self.check_every)
        if b0 < k - 1:
            b0 = k - 1
        self._near_table_clear()
        for i in range(b0, n):
            d = self.n_last[i & self.n_lmask]
            r = 0
            while d != 0 and d <= self.n_lim and r < NEAR_VOTES:
                if d >= self.near_min_period and d != p1:
                    self._near_table_add(<Py_ssize_t>d)
                d2 = self.n_last[(i - d) & self.n_lmask]
                if d2 == 0:
                    break
                d += d2
                r += 1
        ncand = self._near_top(cand, votes)
        for j in range(ncand):
            p = cand[j]
            if p > NEAR_LONG_VOTE and <double>self.n_recurring < NEAR_LONG_VOTE_GATE * <double>self.n_anchors:
                continue  # a long period's window (2p) is walked only where the block all repeats
            tol = self._ntol(p)
            within = 0
            for i in range(b0, n):
                if self.n_last[i & self.n_lmask] != 0 and self._near_lag(i, p, tol) != 0:
                    within += 1
            if <double>within >= self.near_min_lag_share * <double>self.n_anchors:
                r = self._near_window(ev, p, tol)
                if r == 1:
                    return True
                if r == 0 and self.n_pend == 0 and \
                        <double>self.n_covered >= self._pending_min(p):
                    self.n_pend = p
        return False

    cdef Py_ssize_t _near_top(self, Py_ssize_t* cand, uint32_t* votes) noexcept nogil:
        """The NEAR_CANDIDATES - 1 lags of the table with the most votes (ties: the smallest),
        into ``cand``/``votes`` in that order; returns how many."""
        cdef Py_ssize_t ncand = 0, j, r, j2, slot, p
        cdef uint32_t c
        for j in range(self.n_nused):
            slot = self.n_used[j]
            c = self.n_count[slot]
            p = self.n_lag[slot]
            r = ncand
            while r > 0 and (votes[r - 1] < c or (votes[r - 1] == c and cand[r - 1] > p)):
                r -= 1
            if r >= NEAR_CANDIDATES - 1:
                continue
            if ncand < NEAR_CANDIDATES - 1:
                ncand += 1
            j2 = ncand - 1
            while j2 > r:
                cand[j2] = cand[j2 - 1]
                votes[j2] = votes[j2 - 1]
                j2 -= 1
            cand[r] = p
            votes[r] = c
        return ncand

    cdef void _near_table_clear(self) noexcept nogil:
        """Empty the block's lag table (only the slots it used)."""
        cdef Py_ssize_t j
        for j in range(self.n_nused):
            self.n_lag[self.n_used[j]] = 0
        self.n_nused = 0

    cdef void _near_table_add(self, Py_ssize_t d) noexcept nogil:
        """One more vote for lag ``d`` in the block's lag table (a new lag only while the table
        holds fewer than min(check_every, lim): _reference's vote cap)."""
        cdef Py_ssize_t t = <Py_ssize_t>((<uint32_t>d * 0x9E3779B1U) >> 16) & self.n_tmask
        while self.n_lag[t] != 0 and self.n_lag[t] != d:
            t = (t + 1) & self.n_tmask
        if self.n_lag[t] == 0:
            if self.n_nused >= min(self.check_every, self.n_lim):
                return
            self.n_lag[t] = <uint16_t>d
            self.n_count[t] = 0
            self.n_used[self.n_nused] = <int32_t>t
            self.n_nused += 1
        self.n_count[t] += 1

    cdef int _near_window(self, Event* ev, Py_ssize_t p, Py_ssize_t tol) noexcept nogil:
        """N's window at period ``p``: coverage by copies one period back, records
        (_reference.ChannelStream._near_window).
        Returns 1 when it fires, 2 when the window is record lines, 0 otherwise."""
        cdef int64_t n = self.n, hi = self.n, cut = -1, end = 0
        cdef Py_ssize_t w, covered
        cdef double need, floor
        w = max(2 * p, self.near_min_window)
        self.n_covered = 0
        if n < w:
            return 0
        need = self.near_min_coverage * <double>w
        floor = need - <double>self.check_every  # <= the pending minimum too
        covered = self._near_cover(p, tol, n, w, &cut, &end, floor)
        if <double>covered < need and 2 * self.near_ngram <= n - end < self.check_every and end >= w and \
                <double>(covered + (n - end)) >= need:
            # the copies ended inside the last block: the window that ends with them
            hi = end
            covered = self._near_cover(p, tol, hi, w, &cut, &end, floor)
        self.n_covered = covered
        if cut < 0 or <double>covered < need:
            return 0
        if <double>self._record_chars(hi - w, hi) >= self.near_max_record_share * <double>w:
            return 2
        cut = self._near_walk_back(cut, p)
        self._near_report(ev, cut, p, covered, w, self.n_exact, self.n_whole)
        return 1

    cdef Py_ssize_t _near_cover(self, Py_ssize_t p, Py_ssize_t tol, int64_t hi, Py_ssize_t w,
                                int64_t* cut_out, int64_t* end_out, double floor) noexcept nogil:
        """_reference.ChannelStream._near_cover: the coverage walk over ``[hi - w, hi)``;
        returns the covered code points (after the seed costs), sets the cut (the first
        segment of at least 2k; -1: none) and the end (of the last such segment).  It stops
        (cut -1) once ``covered + (hi - done)`` is below ``floor``."""
        cdef int64_t i, lo = hi - w, s, e, done, cut = -1, q, c, gaps, last = hi - w
        cdef int64_t run[3]
        cdef Py_ssize_t k = self.near_ngram, covered = 0
        run[0] = lo
        run[1] = 0
        run[2] = 0
        done = lo
        self.n_dend = -1  # a new walk: no digits seen
        i = max(lo, k - 1) - 1
        while True:
            i += 1
            if i < done:
                i = done  # inside the last segment: nothing to seed
            if i >= hi:
                break
            if self.n_last[i & self.n_lmask] == 0:
                continue
            if <double>(covered + (hi - done)) < floor:
                cut = -1
                last = lo
                break
            c = self._near_lag(i, p, tol)
            q = c
            if c == 0:  # the copy one period back was edited here: two periods back
                c = self._near_lag(i, 2 * p, 2 * tol)
                if c > self.n_link:
                    c = 0
                q = c // 2
            if c == 0:
                continue
            s = max(lo, i - k + 1)
            while s > done and s - 1 - c >= 0 and self._at(<Py_ssize_t>(s - 1 - self.base)) == \
                    self._at(<Py_ssize_t>(s - 1 - c - self.base)):
                s -= 1
            run[0] = s
            e = self._near_extend(i + 1, hi, q, c, p, tol, &gaps, run)
            if cut < 0 and e - s >= 2 * k:  # a k-gram alone recurs by chance (" the ")
                cut = s
            covered += e - max(s, done) - gaps - NEAR_SEED_COST  # a seed's cost: see _reference
            if e - s >= 2 * k:
                last = e
            done = e
        cut_out[0] = cut
        end_out[0] = last
        self.n_exact = run[1]
        self.n_whole = run[2] != 0
        return covered

    cdef bint _salad(self, Event* ev) noexcept nogil:
        """_reference.ChannelStream._salad: a salad of symbols, else of words."""
        if self._symbol_salad(ev):
            return True
        return self.salad_max_words != 0 and self._word_salad(ev)

    cdef bint _inside_brackets(self, int64_t end) noexcept nogil:
        """_reference._inside_brackets(t, end)."""
        cdef int64_t k, stop = end - SALAD_BRACKET_REACH
        cdef Py_ssize_t depth = 0
        cdef bint after_newline = False
        cdef cp_t c
        if stop < 0:
            stop = 0
        check(stop >= self.base)
        k = end - 1
        while k >= stop:
            c = self._at(<Py_ssize_t>(k - self.base))
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

    cdef bint _item_start(self, int64_t i, int64_t end) noexcept nogil:
        """_reference._item_start(t, i, end)."""
        cdef int64_t k = i
        cdef cp_t c
        while k > 0 and i - k < SALAD_MAX_ITEM_LINE:
            c = self._at(<Py_ssize_t>(k - 1 - self.base))
            if c != 32 and c != 9:
                break
            k -= 1
        if k > 0 and self._at(<Py_ssize_t>(k - 1 - self.base)) != 10:
            return False
        return self._item_line(k, end)

    cdef inline bint _item_line(self, int64_t start, int64_t end) noexcept nogil:
        """_reference._item_line over t[start:end]."""
        cdef int64_t k = start
        if end - start > SALAD_MAX_ITEM_LINE:
            return False
        while k < end and (self._at(<Py_ssize_t>(k - self.base)) == 32 or self._at(<Py_ssize_t>(k - self.base)) == 9):
            k += 1
        if k + 1 >= end or not is_item_marker(self._at(<Py_ssize_t>(k - self.base))):
            return False
        return self._at(<Py_ssize_t>(k + 1 - self.base)) == 32 or self._at(<Py_ssize_t>(k + 1 - self.base)) == 9

    cdef bint _word_salad(self, Event* ev) noexcept nogil:
        """_reference.ChannelStream._word_salad: random picks from a handful of words."""
        if self.width == 1:
            return word_salad_walk(<const uint8_t*>self.buf, self, ev)
        if self.width == 2:
            return word_salad_walk(<const uint16_t*>self.buf, self, ev)
        return word_salad_walk(<const uint32_t*>self.buf, self, ev)

    cdef bint _symbol_salad(self, Event* ev) noexcept nogil:
        """_reference.ChannelStream._symbol_salad: a window of few symbols and no words."""
        cdef int64_t n = self.n, lo, i, cut
        cdef Py_ssize_t w = self.salad_window, alnum = 0, space = 0, digits = 0, unique, run = 0
        cdef double max_alnum = self.salad_max_alnum * <double>w, max_space = self.salad_max_space * <double>w
        cdef cp_t c
        if n < w:
            return False
        lo = n - w
        # the gate (part of the rule): the last SALAD_GATE code points alone; prose fails it
        # within a few words
        for i in range(n - min(<int64_t>SALAD_GATE, w), n):
            if is_alnum(self._at(<Py_ssize_t>(i - self.base))):
                alnum += 1
                if <double>alnum >= self.salad_max_alnum * <double>min(<int64_t>SALAD_GATE, w):
                    return False
        alnum = 0
        for i in range(lo, n):
            c = self._at(<Py_ssize_t>(i - self.base))
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
        unique = self._distinct(lo, n, self.salad_max_unique)
        if unique >= self.salad_max_unique:
            return False
        cut = lo
        for i in range(lo, n):
            c = self._at(<Py_ssize_t>(i - self.base))
            if is_alnum(c):
                run += 1
                if run >= SALAD_WORD:
                    cut = i + 1
            else:
                run = 0
        ev.start = ev.cut = self._map(cut)
        ev.ev0 = unique
        ev.ev1 = alnum
        ev.ev2 = w
        return True

    cdef bint _is_phrase_group(self, Py_ssize_t g) noexcept nogil:
        return self.grp_count[g] >= self.pool_min_occurrences

    cdef bint _pool(self, Event* ev) noexcept nogil:
        cdef Py_ssize_t gi, g, covered = 0, distinct = 0, m, j, slot, members, before, k
        cdef int64_t first, rec
        cdef Py_ssize_t phr_groups[MAX_PHR]
        cdef bint member, seen
        if self.rec_total < self.pool_window:
            return False
        for gi in range(self.grp_nactive):
            g = self.grp_active[gi]
            if self._is_phrase_group(g):
                covered += self.grp_count[g]
                distinct += 1
        if <double>covered < self.pool_min_coverage * <double>self.pool_window:
            return False
        if distinct < self.pool_min_distinct or distinct > self.pool_max_distinct:
            return False
        if self.holding[K_P]:
            return True  # same episode: nothing is reported, skip the details
        # evidence: the phrases in order of first occurrence in the window
        ev.nphr = 0
        for rec in range(self.rec_total - self.pool_window, self.rec_total):
            slot = <Py_ssize_t>(rec % self.rec_cap)
            g = self.rec_grp[slot]
            if g < 0 or not self._is_phrase_group(g):
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
        ev.coverage = <double>covered / <double>self.pool_window
        ev.ev0 = covered
        # cut: the first retained sentence S_j in P whose suffix keeps the coverage
        m = <Py_ssize_t>(self.rec_total if self.rec_total < self.rec_cap else self.rec_cap)
        first = self.rec_total - m
        members = 0
        for rec in range(first, self.rec_total):
            if self._in_pool(<Py_ssize_t>(rec % self.rec_cap)):
                members += 1
        before = 0
        for j in range(m):
            slot = <Py_ssize_t>((first + j) % self.rec_cap)
            if self._in_pool(slot):
                if <double>(members - before) >= self.pool_min_coverage * <double>(m - j):
                    ev.start = ev.cut = self.rec_start[slot]
                    return True
                before += 1
        return True  # unreachable: the window itself keeps the coverage

    cdef bint _in_pool(self, Py_ssize_t slot) noexcept nogil:
        """Whether the record in ``slot`` is one of the current phrases."""
        cdef Py_ssize_t gi, g
        if self.rec_len[slot] > self.pool_max_phrase_chars:
            return False
        for gi in range(self.grp_nactive):
            g = self.grp_active[gi]
            if self._is_phrase_group(g) and self._same_text(self.grp_rep[g], slot):
                return True
        return False

    cdef void _checkpoint(self) noexcept nogil:
        cdef Event found[N_KINDS]
        cdef bint holds[N_KINDS]
        cdef int k
        cdef int64_t position
        memset(found, 0, sizeof(found))
        holds[K_E] = self.exact_tail and self._exact_tail(&found[K_E])
        holds[K_L] = self.lowdiv_tail and self._lowdiv_tail(&found[K_L])
        holds[K_S] = self.lowdiv_sliding and self.s_fired and self.n >= self.min_chars
        if holds[K_S]:
            found[K_S].start = found[K_S].cut = self.s_start
            found[K_S].ev0 = self.s_unique
            found[K_S].ev1 = self.s_top
            found[K_S].ev2 = self.s_start
        holds[K_C] = self.cycle and self._cycle(&found[K_C])
        holds[K_P] = self.pool and self._pool(&found[K_P])
        holds[K_N] = self.near_cycle and self._near(&found[K_N])
        holds[K_T] = self.salad and self._salad(&found[K_T])
        if holds[K_E] or holds[K_L] or holds[K_S]:
            self.fuse_cp += 1
        position = self._map(self.n)
        for k in range(N_KINDS):
            if holds[k]:
                self.hit_count[k] += 1
                if k != K_N:
                    found[k].strong = True
                # a report per episode, and one more when a weak episode turns strong
                if (not self.holding[k] or (found[k].strong and not self.reported_strong[k])) \
                        and self.nev < MAX_EVENTS:
                    found[k].kind = k
                    found[k].position = position
                    self.events[self.nev] = found[k]
                    self.nev += 1
                    self.reported_strong[k] = found[k].strong
            self.holding[k] = holds[k]


ctypedef fused cu_t:
    uint8_t
    uint16_t
    uint32_t


cdef inline void cycle_hash_chunk(const cu_t* buf, Py_ssize_t idx, Py_ssize_t count, ChannelStream st) noexcept nogil:
    """C's rolling hash over ``count`` positions from buffer index ``idx``: the tag of the
    ck-gram ending at each position into ``ring_c``."""
    cdef uint64_t h = st.hc, out = st.hc_out
    cdef int64_t i = st.c_done, ck = st.ck
    cdef Py_ssize_t x, mask = st.cmask
    cdef uint16_t* ring = st.ring_c
    for x in range(count):
        h = h * HB + buf[idx + x]
        if i + x >= ck:
            h -= buf[idx + x - ck] * out
        ring[(i + x) & mask] = <uint16_t>(h >> 48)
    st.hc = h


cdef inline int64_t near_extend_chunk(const cu_t* buf, ChannelStream st, int64_t e, int64_t n, int64_t q,
                                      int64_t c, Py_ssize_t p, Py_ssize_t tol, int64_t* gaps,
                                      int64_t* run) noexcept nogil:
    """ChannelStream._near_extend over the buffer's code units (``buf[x - base]`` is t[x])."""
    cdef int64_t a = 0, L = 0, hit, base = st.base, link = st.n_link
    cdef Py_ssize_t g, j, r, k = st.near_ngram, nt
    cdef int64_t tries[10]
    cdef int64_t valid[10]
    cdef uint32_t c1, c2
    check(e - c - base >= 0 and n - base <= st.blen)
    gaps[0] = 0
    while e < n:
        c1 = buf[e - base]
        c2 = buf[e - c - base]
        if c1 == c2:
            e += 1
            continue
        if e - run[0] > run[1]:  # an exact piece ends here
            run[1] = e - run[0]
        if e - run[0] >= max(min(c, NEAR_WHOLE_CAP), NEAR_WHOLE_MIN):
            run[2] = 1
        if (48 <= c1 <= 57) and (48 <= c2 <= 57) and not st._digits_back(e, c):
            return e  # a number that changes: an enumeration, not noise
        tries[0] = q
        tries[1] = q + 1
        tries[2] = q - 1
        tries[3] = q + 2
        tries[4] = q - 2
        tries[5] = q + p
        tries[6] = q + p + 1
        tries[7] = q + p - 1
        tries[8] = q + p + 2
        tries[9] = q + p - 2
        # the lags worth a try, in order (the same for every gap but the first's lag c)
        nt = 0
        for r in range(10):
            L = tries[r]
            if not ((p - tol <= L <= p + tol) or (2 * (p - tol) <= L <= 2 * (p + tol) and L <= link)):
                continue
            if L < 1:
                continue
            valid[nt] = L
            nt += 1
        hit = 0
        for g in range(NEAR_GAP + 1):
            a = e + g
            if a + k > n:
                break  # (every later gap fails this too)
            for r in range(nt):
                L = valid[r]
                if (g == 0 and L == c) or a - L < 0:
                    continue
                j = 0
                while j < k and buf[a + j - base] == buf[a + j - L - base]:
                    j += 1
                if j == k:
                    hit = L
                    break
            if hit:
                break
        if not hit:
            return e
        gaps[0] += g
        e = a + k
        c = hit
        run[0] = a  # the next exact piece begins at the resynchronisation
        if p - tol <= hit <= p + tol:
            q = hit
    if e - run[0] > run[1]:
        run[1] = e - run[0]
    if e - run[0] >= max(min(c, NEAR_WHOLE_CAP), NEAR_WHOLE_MIN):
        run[2] = 1
    return e


cdef inline bint word_salad_walk(const cu_t* buf, ChannelStream st, Event* ev) noexcept nogil:
    """ChannelStream._word_salad over the buffer's code units (``buf[x - base]`` is t[x])."""
    cdef int64_t n = st.n, lo, i, j, line_end, base = st.base
    cdef int64_t tok_start[SALAD_MAX_TOKENS]
    cdef uint8_t tok_id[SALAD_MAX_TOKENS]
    cdef int64_t w_start[16]
    cdef uint64_t w_hash[16]
    cdef uint64_t h
    cdef Py_ssize_t w_len[16]
    cdef Py_ssize_t counts[16]
    cdef uint64_t pairs[4]
    cdef uint32_t seen = 0
    cdef Py_ssize_t ntok = 0, nw = 0, mark = 0, gap = 0, q, k, wid, ln, unique, npairs, b, m
    cdef bint spaced = False, digit, quoted = False, glued
    cdef uint32_t c
    lo = n - SALAD_WORD_WINDOW
    if lo < 0:
        lo = 0
    check(lo >= st.base)
    line_end = n
    i = n
    while i > lo and is_alnum(buf[i - 1 - base]):
        i -= 1  # the last word may go on
    while True:
        if i <= lo:
            if (line_end - lo <= SALAD_MAX_ITEM_LINE) if lo else st._item_line(0, line_end):
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
                if w_hash[k] == h and w_len[k] == ln and st._same(<Py_ssize_t>(w_start[k] - base),
                                                                  <Py_ssize_t>(j - base), ln):
                    wid = k
                    break
            if wid < 0:
                if nw == st.salad_max_words:
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
            if st._item_start(i, line_end):
                ntok = mark
            break
        if is_space(c) or is_wide_stop(c):
            spaced = True
        elif c == 39 or c == 34 or c == 0x2018 or c == 0x2019 or c == 0x201C or c == 0x201D:
            quoted = True
        gap += 1
        if c == 10:
            if ntok - mark == 1 or st._item_line(i + 1, line_end):
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
    if q + 1 < st.salad_min_words:
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
    if st._inside_brackets(tok_start[q]):
        return False
    ev.start = ev.cut = st._map(tok_start[q])
    ev.ev0 = unique
    ev.ev1 = q + 1
    ev.ev3 = 1
    return True


cdef inline void near_chunk(const cu_t* buf, Py_ssize_t idx, Py_ssize_t count, int64_t i,
                            ChannelStream st) noexcept nogil:
    """N over ``count`` positions from position ``i`` (buffer index ``idx``).

    First loop, without a branch: the packed k-gram ending at each position
    (_reference.near_packed), its key and whether it is an anchor.  Second loop: each
    anchor is linked to the previous anchor ending the same k-gram within ``n_link``
    (hash-slot chains, verified by comparing code points) and its lag counted."""
    cdef uint64_t h = st.hn, pmask = st.n_pmask, mix
    cdef uint32_t prev[NEAR_WINNOW - 1]
    cdef uint32_t key, low, stored
    cdef uint16_t* last = st.n_last
    cdef uint16_t* sprev = st.n_sprev
    cdef uint32_t* head = st.n_head
    cdef uint32_t* cnt = st.n_count
    cdef uint16_t* lags = st.n_lag
    cdef Py_ssize_t tmask = st.n_tmask, t
    cdef Py_ssize_t lmask = st.n_lmask, smask = st.n_smask, m = 0, x, j, at
    cdef Py_ssize_t k = st.near_ngram, best = st.n_best, mode = st.n_mode, recurring = 0
    cdef int64_t first = st.near_ngram - 1, pos, d, found, head_d, lim = st.n_lim, link = st.n_link
    cdef int64_t min_p = st.near_min_period
    cdef int shift = 48 - st.n_hbits
    cdef uint64_t smask_h = (<uint64_t>1 << st.n_hbits) - 1
    cdef uint16_t sd
    cdef int r
    cdef Py_ssize_t listed[NEAR_CHUNK]
    cdef uint64_t mixed[NEAR_CHUNK]
    for r in range(NEAR_WINNOW - 1):
        prev[r] = st.nkeys[r]
    for x in range(count):
        h = ((h << 8) + buf[idx + x]) & pmask
        last[(i + x) & lmask] = 0
        if i + x < first:
            continue
        mix = h * HB
        key = <uint32_t>(mix >> 48)
        low = prev[0]
        for r in range(1, NEAR_WINNOW - 1):
            low = low if low < prev[r] else prev[r]
        for r in range(NEAR_WINNOW - 2, 0, -1):
            prev[r] = prev[r - 1]
        prev[0] = key
        listed[m] = x
        mixed[m] = mix
        m += key <= low
    st.hn = h
    for r in range(NEAR_WINNOW - 1):
        st.nkeys[r] = prev[r]
    st.n_anchors += m
    for j in range(m):
        x = listed[j]
        pos = i + x
        at = idx + x
        slot = <Py_ssize_t>((mixed[j] >> shift) & smask_h)
        stored = head[slot]
        head[slot] = <uint32_t>(pos + 1)
        head_d = 0
        if stored != 0:
            head_d = <int64_t>(<uint32_t>(pos + 1) - stored)
            if head_d > link:
                head_d = 0
        sprev[pos & smask] = <uint16_t>head_d
        found = 0
        d = head_d
        while d != 0:
            if pos - d >= first:
                r = 0
                while r < k and buf[at - d - r] == buf[at - r]:
                    r += 1
                if r == k:
                    found = d
                    break
            sd = sprev[(pos - d) & smask]
            if sd == 0:
                break
            d += sd
            if d > link:
                break
        last[pos & lmask] = <uint16_t>found
        recurring += found != 0
        if found >= min_p and found <= lim:
            t = <Py_ssize_t>((<uint32_t>found * 0x9E3779B1U) >> 16) & tmask
            while lags[t] != 0 and lags[t] != found:
                t = (t + 1) & tmask
            if lags[t] == 0:
                lags[t] = <uint16_t>found
                cnt[t] = 0
                st.n_used[st.n_nused] = <int32_t>t
                st.n_nused += 1
            cnt[t] += 1
            if cnt[t] > best or (cnt[t] == best and found < mode):
                best = cnt[t]
                mode = found
    st.n_best = best
    st.n_mode = mode
    st.n_recurring += recurring


cdef class FeedBase:
    """Base class of a policy object whose ``feed(delta, channel="text")`` hot path is compiled.

    The subclass keeps its open streams by channel in :attr:`_streams` and defines
    ``_wrap(channel, raw)`` (raw detections to its own records) and ``_feed(delta,
    channel)`` (everything else: validation, a channel's first delta; it raises on bad
    input).  ``feed`` sends a ``str`` delta for a channel with an open compiled stream
    straight to :meth:`ChannelStream.feed`, and the raw detections, when there are any,
    to ``_wrap``; anything else to ``_feed``.  It knows nothing of what they do
    (``loopguard.TextLoopDetector``).
    """

    cdef public dict _streams

    def __cinit__(self, *args, **kwargs):
        self._streams = {}

    def feed(self, delta, channel="text"):
        """Append ``delta`` (a ``str``) to ``channel`` (``"reasoning"`` or ``"text"``) and return
        the detections it revealed (a list, in order; positions in code points).

        Raises
        ------
        TypeError
            when ``delta`` is not a ``str`` (nothing is consumed).
        ValueError
            for a channel other than ``"reasoning"`` / ``"text"``.
        RuntimeError
            after ``finish()``.
        """
        cdef object stream
        if type(delta) is str:
            try:
                stream = self._streams.get(channel)
            except TypeError:  # an unhashable channel
                stream = None
            if stream is not None and type(stream) is ChannelStream:
                raw = (<ChannelStream>stream)._feed_str(delta)
                if not raw:
                    return raw
                return self._wrap(channel, raw)
        return self._feed(delta, channel)


cdef int64_t _tokens_shift = _tokens.TOKEN_SHIFT


cdef inline int64_t _token_at(const unsigned char* p, Py_ssize_t i, int size, bint signed) noexcept nogil:
    """Item ``i`` of a native integer buffer of ``size``-byte items, sign-extended when
    ``signed`` (a uint64 above 2^63 reads as negative: out of range either way)."""
    if size == 1:
        if signed:
            return <int64_t>(<const int8_t*>p)[i]
        return <int64_t>(<const uint8_t*>p)[i]
    if size == 2:
        if signed:
            return <int64_t>(<const int16_t*>p)[i]
        return <int64_t>(<const uint16_t*>p)[i]
    if size == 4:
        if signed:
            return <int64_t>(<const int32_t*>p)[i]
        return <int64_t>(<const uint32_t*>p)[i]
    return (<const int64_t*>p)[i]
