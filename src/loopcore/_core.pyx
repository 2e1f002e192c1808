# cython: freethreading_compatible = False
"""Compiled stream core of loopguard (spec §1, §2): the owner of one channel's detectors.

One :class:`ChannelStream` is the detector state of one channel of one attempt.
``feed`` reads the PEP 393 buffer of each ``str`` delta directly (1-, 2- or 4-byte kinds,
never encoded) and runs the per-character work without the GIL: fence masking
(``_kernels.fences``), the masked text's buffer (``_kernels.buffer``), E's rolling hash,
the sentence step of P and L's window counts.  Every ``check_every`` code points a
checkpoint runs each enabled detector's ``check`` in kind order, each a module of
``loopcore._kernels`` with its own state struct:

* E ``exact`` -- the tail repeated verbatim;
* L, S ``lowdiv`` -- low diversity of the tail and of sliding windows;
* C ``cycle`` -- a verbatim cycle (prefilter, then a Z-function);
* P ``pool`` -- a pool of recurring phrases;
* N ``near`` -- a near-verbatim cycle (anchor chains, lag votes, coverage walk);
* T ``salad`` -- salads of symbols or words.

``_kernels.table`` is the one counting table, ``_kernels.records`` the structure
classification of lines.  The fixed-size tables of all detectors live in one arena.
Results are identical to :mod:`loopcore._reference` (the same modules, in Python) for every
input and every chunking (the test-suite proves it on fixtures and hypothesis streams).
"""

from cpython.unicode cimport PyUnicode_DATA, PyUnicode_GET_LENGTH, PyUnicode_KIND
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memset
cimport cython

from loopcore._kernels.buffer cimport (Buffer, buf_append, buf_bytes, buf_compact, buf_extend, buf_free,
                                       buf_init, buf_map, buf_push_breakpoint, buf_widen, data_max)
from loopcore._kernels.chars cimport cu_t, read_char
from loopcore._kernels.common cimport (Arena, Event, K_C, K_E, K_L, K_N, K_P, K_S, K_T, N_KINDS, Params, cp_t,
                                       pow2_at_least)
from loopcore._kernels.cycle cimport CycleState, cycle_check, cycle_free, cycle_init
from loopcore._kernels.exact cimport ExactState, exact_check, exact_init, exact_step
from loopcore._kernels.fences cimport (FENCE_EMIT, FENCE_FLUSH, FENCE_LINE, FenceState, fence_init, fence_line_reset,
                                       fence_step)
from loopcore._kernels.lowdiv cimport (LowdivState, lowdiv_count, lowdiv_free, lowdiv_init, lowdiv_sliding,
                                       lowdiv_tail, lowdiv_window)
from loopcore._kernels.near cimport NearState, near_check, near_free, near_init
from loopcore._kernels.pool cimport (PoolState, pool_bytes, pool_check, pool_free, pool_init,
                                     rec_at, save_open_sentence, sentence_run, sentence_step, widen_records)
from loopcore._kernels.salad cimport SaladState, salad_check, salad_init
from loopcore._kernels.table cimport DistinctCounter, ct_free, ct_init

from . import _params, _reference, _tokens

cdef extern from "Python.h":
    object PyUnicode_FromKindAndData(int kind, const void* buffer, Py_ssize_t size)

cdef enum:
    MAX_EVENTS = 24  # >= 3 emits per original character x 7 kinds
    MIN_RUN = 4  # code points: shorter stretches go one by one (callgrind: a run of 4 costs less than 4 steps)

cdef Py_ssize_t GIL_KEPT_BELOW = 64  # deltas up to this many code points run with the GIL held

KINDS = _reference.KINDS


@cython.final
cdef class ChannelStream:
    """Detector state for one channel of one attempt (compiled).

    All parameters are keyword-only and required; they are the detector keys
    of spec §2 (:class:`loopguard.TextConfig` documents and validates them).
    Their names, types, defaults and bounds are ``loopcore._params.PARAMS`` (the one
    schema): ``skip_code_blocks`` removes fenced code from what the detectors see
    (spec §2.6); ``exact_tail`` … ``salad`` (the kind names) enable E, L, S, C, P, N, T.

    Memory is bounded by the config (:attr:`memory_bytes`), allocated when the first
    code point or token arrives (before that, only the object): a linear buffer of
    ``keep + slack`` code points (``keep`` = the longest look-back of the enabled
    detectors) stored with 1, 2 or 4 bytes per code point like PEP 393 (widened when a
    wider code point arrives), one arena holding the fixed-size tables of the enabled
    detectors (the hash rings of E and C, the pool's records, N's slot chains, hash heads
    and distance ring), the pool's record text (at the buffer's width), N's lag table, the
    distinct-count table of L, S and T, and scratch allocated once on first need (the n-gram
    tables of L/S, the Z array of C).

    Raises
    ------
    TypeError
        from :meth:`feed` when ``delta`` is not a ``str``.
    RuntimeError
        from :meth:`feed`/:meth:`finish` after :meth:`finish`.
    MemoryError
        when the buffers cannot be allocated.
    """

    cdef Params p
    cdef Buffer b
    cdef FenceState fence
    cdef ExactState ex
    cdef LowdivState ld
    cdef CycleState cy
    cdef PoolState pl
    cdef NearState nr
    cdef SaladState sd
    cdef DistinctCounter ds  # distinct code points of a window: L, S and T
    cdef char* arena
    cdef Py_ssize_t arena_bytes
    cdef int64_t next_cp  # the t length of the next checkpoint
    cdef int64_t orig_len
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

    def __cinit__(self, **params):
        _params.check(params)
        self.p.skip_code_blocks = params["skip_code_blocks"]
        self.p.fence_repeat_lines = params["fence_repeat_lines"]
        self.p.check_every = params["check_every"]
        self.p.exact_tail = params["exact_tail"]
        self.p.min_chars = params["min_chars"]
        self.p.window = params["window"]
        self.p.history = params["history"]
        self.p.repeats = params["repeats"]
        self.p.lowdiv_tail = params["lowdiv_tail"]
        self.p.lowdiv_window = params["lowdiv_window"]
        self.p.ngram = params["ngram"]
        self.p.lowdiv_max_unique = params["lowdiv_max_unique"]
        self.p.lowdiv_min_repeat = params["lowdiv_min_repeat"]
        self.p.lowdiv_max_data_share = params["lowdiv_max_data_share"]
        self.p.lowdiv_art_max_alnum = params["lowdiv_art_max_alnum"]
        self.p.lowdiv_sliding = params["lowdiv_sliding"]
        self.p.slide_window = params["slide_window"]
        self.p.slide_step = params["slide_step"]
        self.p.slide_max_unique = params["slide_max_unique"]
        self.p.slide_min_repeat = params["slide_min_repeat"]
        self.p.cycle = params["cycle"]
        self.p.cycle_min_period = params["cycle_min_period"]
        self.p.cycle_max_period = params["cycle_max_period"]
        self.p.cycle_min_copies = params["cycle_min_copies"]
        self.p.cycle_min_chars = params["cycle_min_chars"]
        self.p.cycle_scan_chars = params["cycle_scan_chars"]
        self.p.pool = params["pool"]
        self.p.pool_window = params["pool_window"]
        self.p.pool_min_coverage = params["pool_min_coverage"]
        self.p.pool_max_phrase_chars = params["pool_max_phrase_chars"]
        self.p.pool_min_occurrences = params["pool_min_occurrences"]
        self.p.pool_min_distinct = params["pool_min_distinct"]
        self.p.pool_max_distinct = params["pool_max_distinct"]
        self.p.pool_skip_key_value = params["pool_skip_key_value"]
        self.p.near_cycle = params["near_cycle"]
        self.p.near_ngram = params["near_ngram"]
        self.p.near_min_period = params["near_min_period"]
        self.p.near_max_period = params["near_max_period"]
        self.p.near_min_window = params["near_min_window"]
        self.p.near_tolerance = params["near_tolerance"]
        self.p.near_min_lag_share = params["near_min_lag_share"]
        self.p.near_min_coverage = params["near_min_coverage"]
        self.p.near_max_record_share = params["near_max_record_share"]
        self.p.near_recurrence_window = params["near_recurrence_window"]
        self.p.near_min_recurrence = params["near_min_recurrence"]
        self.p.salad = params["salad"]
        self.p.salad_window = params["salad_window"]
        self.p.salad_max_unique = params["salad_max_unique"]
        self.p.salad_max_alnum = params["salad_max_alnum"]
        self.p.salad_max_space = params["salad_max_space"]
        self.p.salad_max_words = params["salad_max_words"]
        self.p.salad_min_words = params["salad_min_words"]
        # the buffers are allocated when the first code point or token arrives: an open
        # channel that never receives anything costs only the object itself

    cdef Py_ssize_t _layout(self, Arena* a) noexcept nogil:
        """Set up every enabled detector in arena ``a``; the look-back they need (-1: out
        of memory).  Run twice: to measure (``a.base`` NULL), then to carve."""
        cdef Py_ssize_t keep = 64, need
        cdef const Params* p = &self.p
        if p.exact_tail:
            keep = max(keep, exact_init(&self.ex, p, a))
        if p.lowdiv_tail or p.lowdiv_sliding:
            keep = max(keep, lowdiv_init(&self.ld, p, &self.ds))
        if p.cycle:
            keep = max(keep, cycle_init(&self.cy, p, a))
        if p.pool:
            need = pool_init(&self.pl, p, a)
            if need < 0:
                return -1
            keep = max(keep, need)
        if p.near_cycle:
            need = near_init(&self.nr, p, a)
            if need < 0:
                return -1
            keep = max(keep, need)
        if p.salad:
            keep = max(keep, salad_init(&self.sd, p, &self.ds))
        return keep

    cdef int _allocate(self) except -1:
        cdef Arena a
        cdef Py_ssize_t keep, cap_u = 1
        cdef const Params* p = &self.p
        self.allocated = True
        self.ld.next_win = -1  # S is off unless lowdiv_init says otherwise
        a.base = NULL
        a.used = 0
        self._layout(&a)
        self.arena_bytes = a.used
        self.arena = <char*>calloc(a.used if a.used > 0 else 1, 1)
        if self.arena == NULL:
            raise MemoryError("loopcore: cannot allocate the stream buffers")
        a.base = self.arena
        a.used = 0
        keep = self._layout(&a)
        if keep < 0:
            raise MemoryError("loopcore: cannot allocate the stream buffers")
        if p.lowdiv_tail or p.lowdiv_sliding or p.salad:
            if p.salad:
                cap_u = max(cap_u, min(p.salad_max_unique, p.salad_window))
            if p.lowdiv_tail:
                cap_u = max(cap_u, min(p.lowdiv_max_unique, p.lowdiv_window))
            if p.lowdiv_sliding:
                cap_u = max(cap_u, min(p.slide_max_unique, p.slide_window))
            if ct_init(&self.ds.big, pow2_at_least(2 * cap_u + 2), True) != 0:
                raise MemoryError("loopcore: cannot allocate the stream buffers")
        # a quarter of the look-back as slack: compaction moves ``keep`` code points every
        # ``slack`` appended, 4 per code point
        if buf_init(&self.b, keep, max(1024, keep // 4)) != 0:
            raise MemoryError("loopcore: cannot allocate the stream buffers")
        fence_init(&self.fence, p.fence_repeat_lines)
        self.next_cp = p.check_every
        return 0

    def __dealloc__(self):
        buf_free(&self.b)
        lowdiv_free(&self.ld)
        cycle_free(&self.cy)
        pool_free(&self.pl)
        near_free(&self.nr)
        ct_free(&self.ds.big)
        free(self.arena)

    # ------------------------------------------------------------ Python API
    @property
    def length(self):
        """Original characters fed so far (code points)."""
        return self.orig_len

    @property
    def masked_length(self):
        """Length of ``t``, the text the detectors have seen (code points)."""
        return self.b.n

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
        the buffers the config needs, fixed from there on, plus scratch allocated once on
        first need (the n-gram tables of L/S when a low-diversity window appears, the Z
        array of C when a cycle candidate appears) and the offset map of masked code.
        """
        if not self.allocated:
            return type(self).__basicsize__
        return (type(self).__basicsize__ + self.arena_bytes + buf_bytes(&self.b) + pool_bytes(&self.pl)
                + self.ds.big.bytes + self.nr.lags.bytes + self.ld.lazy_bytes + self.cy.lazy_bytes)

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
            if size - i < MIN_RUN:  # a few code points: one by one, no run to look for
                i = self._consume_each(data, kind, i, size)
            elif size - i <= GIL_KEPT_BELOW:  # a short delta: releasing the GIL costs more than the work
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
                self.p.skip_code_blocks = False  # ids are symbols: there is no fenced code to mask
                if not self.allocated:
                    self._allocate()
                return self._run(symbols, 4, n)
            finally:
                self.busy = False
        finally:
            free(symbols)

    def finish(self):
        """End of stream: release held characters and run the last checkpoint.

        Raises
        ------
        RuntimeError
            when finished already, or while another thread feeds this stream (then
            nothing changes: the stream stays open).
        """
        if self.finished_:
            raise RuntimeError("this stream is finished; start a new one")
        self._enter()
        return self._finish_entered()

    cdef list _finish_entered(self):
        """Finish a stream this thread has entered (``busy`` set); leaves it."""
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
            if self.fence.pending:
                for k in range(self.fence.pending):
                    self._emit(self.fence.pending_char, self.fence.pending_pos + k)
                self.fence.pending = 0
            if self.b.n > 0 and self.b.n % self.p.check_every != 0:
                if (self.p.lowdiv_sliding and not self.ld.s_fired and self.b.n >= self.p.slide_window
                        and (self.b.n - self.p.slide_window) % self.p.slide_step != 0):
                    lowdiv_window(&self.ld, &self.b, self.b.n)
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
        cdef int i, j, slot
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
                    phrases.append(PyUnicode_FromKindAndData(
                        self.pl.rec_width, rec_at(&self.pl, slot), self.pl.rec_len[slot]))
                evidence = {"coverage": ev.coverage, "phrases": tuple(phrases)}
            out.append((KINDS[ev.kind], ev.position, ev.start, ev.cut, evidence))
        self.nev = 0

    # ------------------------------------------------------- per character
    cdef Py_ssize_t _consume(self, const void* data, int kind, Py_ssize_t i,
                             Py_ssize_t end) noexcept nogil:
        """Process characters from ``i``; stop after one that produced events.

        Runs of at least ``MIN_RUN`` code points that the fences leave as they are (no
        fence open or pending, no ``` or ``~`` in the run) go to :meth:`_emit_run` in one
        piece: one copy into the buffer, then each per-character detector over the run."""
        cdef Py_ssize_t run
        cdef FenceState* f = &self.fence
        while i < end:
            if end - i >= MIN_RUN and (not self.p.skip_code_blocks
                                       or not (f.pending or f.opening or f.in_code)):
                run = self._run_length(data, kind, i, end)
                if run >= MIN_RUN:
                    self._emit_run(data, kind, i, run)
                    i += run
                    if self.nev or self.failed:
                        break
                    continue
            i = self._consume_each(data, kind, i, i + 1)
            if self.nev or self.failed:
                break
        return i

    cdef inline Py_ssize_t _consume_each(self, const void* data, int kind, Py_ssize_t i,
                                         Py_ssize_t end) noexcept nogil:
        """Process characters from ``i`` one by one; stop after one that produced events."""
        cdef cp_t c
        while i < end:
            c = read_char(kind, data, i)
            i += 1
            self._step(c, self.orig_len)
            self.orig_len += 1
            if self.nev or self.failed:
                break
        return i

    cdef Py_ssize_t _run_length(self, const void* data, int kind, Py_ssize_t i, Py_ssize_t end) noexcept nogil:
        """How many code points from ``i`` can be appended as one run: up to the next
        checkpoint, S window or compaction, and before any fence character."""
        cdef Py_ssize_t run = end - i, j
        cdef Buffer* b = &self.b
        cdef cp_t c
        run = min(run, <Py_ssize_t>(self.next_cp - b.n))
        if self.ld.next_win >= 0:
            run = min(run, <Py_ssize_t>(self.ld.next_win - b.n))
        run = min(run, b.cap - b.blen if b.blen < b.cap else b.cap - b.keep)
        if self.p.skip_code_blocks:
            for j in range(run):
                c = read_char(kind, data, i + j)
                if c == 96 or c == 126:
                    return j
        return run

    cdef void _emit_run(self, const void* data, int kind, Py_ssize_t i, Py_ssize_t run) noexcept nogil:
        """Append ``run`` code points of ``data`` from ``i`` to ``t`` as :meth:`_emit` would
        one by one (positions follow each other, so the offset map changes at most once)."""
        cdef Buffer* b = &self.b
        cdef int64_t pos = self.orig_len
        cdef Py_ssize_t idx0, j
        cdef cp_t c
        cdef const char* src = <const char*>data + i * kind
        if not self._make_room(pos, data_max(src, kind, run) if kind > b.width else 0):
            return
        idx0 = b.blen
        buf_extend(b, src, kind, run)
        self.orig_len += run
        if kind == 1:
            run_steps(<const uint8_t*>src, run, idx0, b, &self.p, &self.ex, &self.pl, &self.ld)
        elif kind == 2:
            run_steps(<const uint16_t*>src, run, idx0, b, &self.p, &self.ex, &self.pl, &self.ld)
        else:
            run_steps(<const uint32_t*>src, run, idx0, b, &self.p, &self.ex, &self.pl, &self.ld)
        if self.p.skip_code_blocks:  # the fences' line start, as the last code point left it
            j = run
            while j > 0:
                j -= 1
                c = read_char(kind, src, j)
                if c != 32 and c != 9:
                    self.fence.line_start = c == 10
                    break
        self._appended()

    cdef inline void _step(self, cp_t c, int64_t pos) noexcept nogil:
        """Fence masking (spec §2.6), one original character at a time."""
        cdef int action, k
        cdef Py_ssize_t j
        if not self.p.skip_code_blocks:
            self._emit(c, pos)
            return
        action = fence_step(&self.fence, c, pos)
        if action == FENCE_EMIT:
            self._emit(c, pos)
        elif action == FENCE_FLUSH:
            for k in range(self.fence.flush):
                self._emit(self.fence.pending_char, self.fence.pending_pos + k)
            self._emit(c, pos)
        elif action == FENCE_LINE:
            for j in range(self.fence.line_len):
                self._emit(self.fence.line[j], self.fence.line_begin + j)
            self._emit(10, pos)
            fence_line_reset(&self.fence, pos + 1)

    cdef inline void _emit(self, cp_t c, int64_t pos) noexcept nogil:
        """Append one character to ``t`` and run the per-character detectors."""
        cdef Buffer* b = &self.b
        cdef Py_ssize_t idx
        if not self._make_room(pos, c):
            return
        idx = b.blen
        buf_append(b, c)
        if self.p.exact_tail:
            exact_step(&self.ex, b, c, idx)
        if self.p.pool:
            sentence_step(&self.pl, b, c, b.n - 1)
        if self.p.lowdiv_tail:
            lowdiv_count(&self.ld, b, c, idx)
        self._appended()

    cdef inline bint _make_room(self, int64_t pos, cp_t top) noexcept nogil:
        """Before code points from original offset ``pos`` (the largest ``top``) are appended:
        the offset map, compaction (the pool keeps an open sentence's text), the width.
        False when out of memory (``failed`` is set)."""
        cdef Buffer* b = &self.b
        if pos - b.n != b.bp_d[b.bp_len - 1] and not buf_push_breakpoint(b, pos - b.n):
            self.failed = True
            return False
        if b.blen == b.cap:
            if self.p.pool:
                save_open_sentence(&self.pl, b, b.base + b.blen - b.keep)
            buf_compact(b)
        if top > b.wmax:
            if not buf_widen(b, top):
                self.failed = True
                return False
            if self.p.pool:
                widen_records(&self.pl, b.width)
                if self.pl.failed:
                    self.failed = True
                    return False
        return True

    cdef inline void _appended(self) noexcept nogil:
        """After an append: S's window and the checkpoint, when t reached them."""
        cdef Buffer* b = &self.b
        if b.n == self.ld.next_win:
            self.ld.next_win += self.p.slide_step
            if not self.ld.s_fired:
                lowdiv_window(&self.ld, b, b.n)
        if b.n == self.next_cp:
            self.next_cp += self.p.check_every
            self._checkpoint()

    cdef void _checkpoint(self) noexcept nogil:
        cdef Event found[N_KINDS]
        cdef bint holds[N_KINDS]
        cdef int k
        cdef int64_t position
        cdef const Params* p = &self.p
        cdef Buffer* b = &self.b
        memset(found, 0, sizeof(found))
        holds[K_E] = p.exact_tail and exact_check(&self.ex, b, &found[K_E])
        holds[K_L] = p.lowdiv_tail and lowdiv_tail(&self.ld, b, &found[K_L])
        holds[K_S] = p.lowdiv_sliding and lowdiv_sliding(&self.ld, b, &found[K_S])
        holds[K_C] = p.cycle and cycle_check(&self.cy, b, &found[K_C], self.holding[K_C])
        holds[K_P] = p.pool and pool_check(&self.pl, b, &found[K_P], self.holding[K_P])
        holds[K_N] = p.near_cycle and near_check(&self.nr, b, &found[K_N])
        holds[K_T] = p.salad and salad_check(&self.sd, b, &found[K_T])
        if self.ld.failed or self.cy.failed:
            self.failed = True
        if holds[K_E] or holds[K_L] or holds[K_S]:
            self.fuse_cp += 1
        position = buf_map(b, b.n)
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


cdef inline void run_steps(const cu_t* src, Py_ssize_t run, Py_ssize_t idx0, Buffer* b, const Params* p,
                           ExactState* ex, PoolState* pl, LowdivState* ld) noexcept nogil:
    """The per-character detectors over a run just appended at buffer index ``idx0``, each
    over the whole run in turn (they are independent of each other)."""
    cdef Py_ssize_t j
    if p.exact_tail:
        for j in range(run):
            exact_step(ex, b, src[j], idx0 + j)
    if p.pool:
        sentence_run(pl, b, src, run, b.base + idx0)
    if p.lowdiv_tail:
        for j in range(run):
            lowdiv_count(ld, b, src[j], idx0 + j)


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


def finish_streams(streams):
    """Finish every stream of ``streams`` (a list of :class:`ChannelStream`), all or none.

    Returns one list of raw detections per stream, in order.  Every stream is entered
    (its ``busy`` flag set) before any is finished, with the GIL held throughout, so a
    feed of another thread either ran before (its input is in the last checkpoint) or
    raises after; none interleaves.

    Raises
    ------
    RuntimeError
        when one of them is finished already or being fed by another thread: then
        none is finished (each stays open, exactly as it was).
    TypeError
        for an item that is not a compiled :class:`ChannelStream` (nothing changes).
    """
    cdef list items = list(streams)
    cdef ChannelStream stream
    cdef Py_ssize_t i, n = len(items), entered = 0
    for item in items:
        if type(item) is not ChannelStream:
            raise TypeError(f"finish_streams() takes ChannelStream objects, not {type(item).__name__}")
    try:
        for i in range(n):
            stream = <ChannelStream>items[i]
            if stream.finished_:
                raise RuntimeError("this stream is finished; start a new one")
            stream._enter()
            entered += 1
    except BaseException:
        for i in range(entered):
            (<ChannelStream>items[i]).busy = False
        raise
    out = []
    error = None
    for i in range(n):
        try:
            out.append((<ChannelStream>items[i])._finish_entered())
        except MemoryError as exc:  # finished all the same: finish the others, then raise
            out.append([])
            error = exc
    if error is not None:
        raise error
    return out


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
