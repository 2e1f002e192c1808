"""The reference stream of one channel: feeding, the checkpoints and the reports (spec §2).

:class:`ChannelStream` owns the parameters (:class:`.params.Params`), the masked text ``t``
(:class:`.buffer.Buffer`), the fence masking (:class:`.fences.Fences`) and one object per
detector, each holding its own state across checkpoints.  The original text comes in one code
point at a time; whenever ``len(t)`` reaches a multiple of ``check_every`` -- and once more at
:meth:`ChannelStream.finish` when it did not end on one -- a checkpoint calls each enabled
detector's ``check(t, final)`` in :data:`.chars.KINDS` order and reports a detection at the
first checkpoint of each episode (a run of checkpoints at which the detector holds).

>>> from loopcore import _params
>>> stream = ChannelStream(**{**_params.defaults(), "cycle": True})  # C alone
>>> stream.feed("The cache is stale, so I flush it and check again. " * 40) + stream.finish()
[('cycle', 600, 0, 51, {'period': 51, 'copies': 11, 'length': 600})]
"""

from __future__ import annotations

import threading
from typing import Any

from .. import _tokens
from .buffer import Buffer
from .chars import KINDS, Found, RawDetection
from .cycle import Cycle
from .exact import ExactTail
from .fences import Fences
from .lowdiv import LowdivSliding, LowdivTail
from .near import NearCycle
from .params import Params
from .pool import Pool
from .salad import Salad


class ChannelStream(Params):
    """Reference detector state for one channel of one attempt.

    Parameters are the detector keys of spec §2 (``loopcore._params.PARAMS``, the one
    schema: names, types, defaults, bounds and docs); all are keyword-only and
    required, and validated by ``loopcore._params.check``; each is an attribute of the stream
    (:class:`.params.Params`).

    Raises
    ------
    TypeError, ValueError
        from the constructor, for invalid parameters (``loopcore._params.check``).
    TypeError
        from :meth:`feed` when ``delta`` is not a ``str``.
    RuntimeError
        from :meth:`feed` or :meth:`finish` after :meth:`finish`.
    """

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self._text = Buffer()  # t, the masked text, and the original offset of each of its code points
        self._fences = Fences(self.fence_repeat_lines)
        self._length = 0  # original characters consumed
        self._finished = False
        self._mode = ""  # "text" or "tokens" once anything was fed
        self._busy = threading.Lock()  # one feeder at a time, as in the compiled core
        # the detectors, in KINDS order
        self._exact = ExactTail(self, self._text)
        self._lowdiv = LowdivTail(self, self._text)
        self._sliding = LowdivSliding(self, self._text)
        self._cycle = Cycle(self, self._text)
        self._pool = Pool(self, self._text)
        self._near = NearCycle(self, self._text)
        self._salad = Salad(self, self._text)
        # the reports
        self._holding = dict.fromkeys(KINDS, False)
        self._reported_strong = dict.fromkeys(KINDS, True)  # the strength of each episode's last report
        self._hits = dict.fromkeys(KINDS, 0)
        self._fuse_checkpoints = 0

    # ------------------------------------------------------------------ input
    @property
    def length(self) -> int:
        """Original characters fed so far (code points)."""
        return self._length

    @property
    def masked_length(self) -> int:
        """Length of ``t``, the text the detectors have seen (code points)."""
        return len(self._text)

    @property
    def hits(self) -> dict[str, int]:
        """Checkpoints at which each detector held, by kind."""
        return dict(self._hits)

    @property
    def fuse_checkpoints(self) -> int:
        """Checkpoints at which at least one of exact_tail/lowdiv_tail/lowdiv_sliding held."""
        return self._fuse_checkpoints

    @property
    def finished(self) -> bool:
        """Whether :meth:`finish` has been called."""
        return self._finished

    @property
    def memory_bytes(self) -> int:
        """Bytes held by this reference stream (it keeps the whole text: unbounded)."""
        return self._text.memory_bytes

    def feed(self, delta: str) -> list[tuple[str, int, int, int, dict[str, Any]]]:
        """Append ``delta`` and return the detections reported meanwhile."""
        if not isinstance(delta, str):
            raise TypeError(f"delta must be str, not {type(delta).__name__}")
        if self._finished:
            raise RuntimeError("this stream is finished; start a new one")
        if delta and self._mode == "tokens":
            raise RuntimeError("this stream holds token ids: feed it with feed_tokens() only")
        if delta:
            self._mode = "text"
        return self._feed(delta)

    def feed_tokens(self, ids: Any) -> list[tuple[str, int, int, int, dict[str, Any]]]:
        """Append token ids (one symbol each; positions count tokens) and return the
        detections reported meanwhile (see ``loopcore._tokens``)."""
        view = _tokens.token_view(ids)
        if self._finished:
            raise RuntimeError("this stream is finished; start a new one")
        symbols = _tokens.token_symbols(view)
        if symbols and self._mode == "text":
            raise RuntimeError("this stream holds text: feed it with feed() only")
        if symbols:
            self._mode = "tokens"
            self.skip_code_blocks = False  # ids are symbols: there is no fenced code to mask
        return self._feed(symbols)

    def _feed(self, delta: str) -> list[tuple[str, int, int, int, dict[str, Any]]]:
        if not self._busy.acquire(blocking=False):
            raise RuntimeError("ChannelStream is being fed by another thread; use one stream per thread")
        try:
            out: list[tuple[str, int, int, int, dict[str, Any]]] = []
            for ch in delta:
                self._take(self._length, ch, out)
                self._length += 1
            return out
        finally:
            self._busy.release()

    def finish(self) -> list[tuple[str, int, int, int, dict[str, Any]]]:
        """End of stream: release held characters and run the last checkpoint.

        Raises
        ------
        RuntimeError
            when finished already, or while another thread feeds this stream (then
            nothing changes: the stream stays open).
        """
        if self._finished:
            raise RuntimeError("this stream is finished; start a new one")
        if not self._busy.acquire(blocking=False):
            raise RuntimeError("ChannelStream is being fed by another thread; use one stream per thread")
        try:
            return self._finish()
        finally:
            self._busy.release()

    def _finish(self) -> list[tuple[str, int, int, int, dict[str, Any]]]:
        self._finished = True
        out: list[tuple[str, int, int, int, dict[str, Any]]] = []
        for pos, ch in self._fences.flush():  # held fence characters that opened no fence
            self._emit(pos, ch, out)
        n = len(self._text)
        if n and n % self.check_every:
            self._checkpoint(out, final=True)
        return out

    def _take(self, pos: int, ch: str, out: list[RawDetection]) -> None:
        """Fence masking, one original character at a time (spec §2.6)."""
        if not self.skip_code_blocks:
            self._emit(pos, ch, out)
            return
        for p, c in self._fences.take(pos, ch):
            self._emit(p, c, out)

    def _emit(self, pos: int, ch: str, out: list[RawDetection]) -> None:
        self._text.append(pos, ch)
        n = len(self._text)
        if n % self.check_every == 0:
            self._checkpoint(out, final=False)

    # ------------------------------------------------------------ checkpoints
    def _checkpoint(self, out: list[RawDetection], final: bool) -> None:
        t = self._text.text()
        n = len(t)
        results: dict[str, Found | None] = {
            "exact_tail": self._exact.check(t, final) if self.exact_tail else None,
            "lowdiv_tail": self._lowdiv.check(t, final) if self.lowdiv_tail else None,
            "lowdiv_sliding": self._sliding.check(t, final) if self.lowdiv_sliding else None,
            "cycle": self._cycle.check(t, final) if self.cycle else None,
            "pool": self._pool.check(t, final) if self.pool else None,
            "near_cycle": self._near.check(t, final) if self.near_cycle else None,
            "salad": self._salad.check(t, final) if self.salad else None,
        }
        position = self._text.map(n)
        if any(results[kind] is not None for kind in KINDS[:3]):
            self._fuse_checkpoints += 1
        for kind in KINDS:
            found = results[kind]
            holds = found is not None
            if found is not None:
                self._hits[kind] += 1
                start, cut, evidence = found
                strong = evidence.get("strong", True)
                # a report per episode, and one more when a weak episode turns strong
                if not self._holding[kind] or (strong and not self._reported_strong[kind]):
                    out.append((kind, position, start, cut, evidence))
                    self._reported_strong[kind] = strong
            self._holding[kind] = holds


def finish_streams(streams: list[ChannelStream]) -> list[list[tuple[str, int, int, int, dict[str, Any]]]]:
    """Finish every stream of ``streams``, all or none: the twin of ``loopcore._core.finish_streams``.

    Every stream's feed lock is taken before any is finished, so a feed of another thread
    either ran before (its input is in the last checkpoint) or raises after.

    Raises
    ------
    RuntimeError
        when one of them is finished already or being fed by another thread: then none is
        finished (each stays open, exactly as it was).
    TypeError
        for an item that is not a reference :class:`ChannelStream` (nothing changes).
    """
    items = list(streams)
    for item in items:
        if type(item) is not ChannelStream:
            raise TypeError(f"finish_streams() takes ChannelStream objects, not {type(item).__name__}")
    entered: list[ChannelStream] = []
    try:
        for stream in items:
            if stream._finished:
                raise RuntimeError("this stream is finished; start a new one")
            if not stream._busy.acquire(blocking=False):
                raise RuntimeError("ChannelStream is being fed by another thread; use one stream per thread")
            entered.append(stream)
    except BaseException:
        for stream in entered:
            stream._busy.release()
        raise
    try:
        return [stream._finish() for stream in items]
    finally:
        for stream in items:
            stream._busy.release()
