"""Streaming text loop detection: ``TextLoopDetector``, ``Detection``, ``scan_text`` (spec §2, §8)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import loopcore
from loopcore._tokens import cast_items, integer_code, token_symbols, token_view

from .config import TextConfig

__all__ = ["CHANNELS", "STRENGTHS", "Detection", "TextLoopDetector", "scan_text", "scan_tokens"]

#: The two channels of an attempt (spec §0).
CHANNELS = ("reasoning", "text")
#: How strong a detection's evidence is (spec §2.7): ``"strong"`` is acted on (a cut),
#: ``"weak"`` is a notice until a strong detection of the same loop confirms it.
STRENGTHS = ("strong", "weak")
_FUSE_KINDS = frozenset({"exact_tail", "lowdiv_tail", "lowdiv_sliding"})
#: Detectors that read sentences, words and character classes: not for token ids.
_TEXT_SHAPED = frozenset({"pool", "salad"})


@dataclass(frozen=True)
class Detection:
    """A record that a text detector fired (spec §0, §2).

    Attributes
    ----------
    kind : str
        ``exact_tail`` (E), ``lowdiv_tail`` (L), ``lowdiv_sliding`` (S),
        ``cycle`` (C) or ``pool`` (P).
    channel : str
        ``"reasoning"`` or ``"text"``.
    position : int
        Where it was seen: the checkpoint, as an offset into the original
        channel text (code points).
    start : int
        Where the loop begins (code points, original text).
    cut : int
        Where to prune: keep ``text[:cut]``.
    evidence : dict
        The numbers behind it: E ``count``; L ``unique``, ``max_ngram``; S
        ``unique``, ``max_ngram``, ``window_start``; C ``period``, ``copies``,
        ``length``; P ``coverage``, ``phrases``; N (``near_cycle``) ``period``,
        ``coverage``, ``exact`` (the longest stretch of its window equal to the text
        one lag back, code points); T (``salad``) ``unique``, ``alnum``.
    strength : str
        ``"strong"`` (acted on: a :class:`~loopguard.Session` cuts) or ``"weak"``
        (a notice; a later strong detection of the same loop cuts).  Every kind is
        strong but ``near_cycle``, which is strong once a whole copy of its
        window equals the one before it (the copies stopped changing: up to
        ``NEAR_WHOLE_CAP`` = 300 code points of it) at two checkpoints in a row;
        a weak N episode that turns strong is reported again (spec §2.7).
    """

    kind: str
    channel: str
    position: int
    start: int
    cut: int
    evidence: dict[str, Any] = field(default_factory=dict)
    strength: str = "strong"

    def __hash__(self) -> int:
        return hash((self.kind, self.channel, self.position, self.start, self.cut, self.strength))

    def __post_init__(self) -> None:
        if self.strength not in STRENGTHS:
            raise ValueError(f"strength must be 'strong' or 'weak', not {self.strength!r}")

    @property
    def strong(self) -> bool:
        """Whether the evidence is strong enough to act on (``strength == "strong"``)."""
        return self.strength == "strong"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``phrases`` as a list)."""
        evidence = {k: list(v) if isinstance(v, tuple) else v for k, v in self.evidence.items()}
        return {
            "kind": self.kind,
            "channel": self.channel,
            "position": self.position,
            "start": self.start,
            "cut": self.cut,
            "evidence": evidence,
            "strength": self.strength,
        }


def _check_channel(channel: object) -> str:
    if not isinstance(channel, str) or channel not in CHANNELS:
        raise ValueError(f"channel must be 'reasoning' or 'text', not {channel!r}")
    return channel


class _FeedPath:
    """The hot path of :meth:`TextLoopDetector.feed` in Python (when the core is not built)."""

    _streams: dict[str, Any]

    def feed(self, delta: str, channel: str = "text") -> list[Detection]:
        """Append ``delta`` to ``channel`` and return the detections it revealed: the
        pure-Python twin of ``loopcore._core.FeedBase.feed`` (its docstring is the contract:
        the same results and errors), used when the compiled core is not built."""
        try:
            stream = self._streams.get(channel)
        except TypeError:  # an unhashable channel
            stream = None
        if stream is not None and delta.__class__ is str:  # the hot path
            raw = stream.feed(delta)
            return self._wrap(channel, raw) if raw else raw  # (a new empty list)
        return self._feed(delta, channel)

    if TYPE_CHECKING:  # TextLoopDetector's

        def _wrap(self, channel: str, raw: list[tuple[str, int, int, int, dict[str, Any]]]) -> list[Detection]: ...

        def _feed(self, delta: str, channel: str) -> list[Detection]: ...


if TYPE_CHECKING:
    _Base = _FeedPath
else:  # the compiled hot path (same behaviour, about 60 ns less per delta), else the Python one
    _Base = getattr(loopcore.implementations().get("cython"), "FeedBase", _FeedPath)


class TextLoopDetector(_Base):
    """Loop detection over the streamed channels of one model attempt.

    Feed deltas as they arrive; detections come back from :meth:`feed` at the
    checkpoint that reveals them (every ``check_every`` characters of the text
    the detectors see) and from :meth:`finish` at the end of the stream.  The
    result never depends on how the text was split into deltas.  One detection
    is reported per loop episode and detector; positions are code points into
    that channel's original text.

    Parameters
    ----------
    config : TextConfig | str | None
        A config, a profile name (``"default"``, ``"fuse"``, ``"rescue"``) or
        ``None`` for ``TextConfig()``.
    implementation : str | None
        ``"cython"`` or ``"python"`` to force one loopcore implementation;
        ``None`` uses the live one (:data:`loopcore.IMPLEMENTATION`).

    Notes
    -----
    Memory is bounded per channel by the config (spec §1); nothing of the
    caller's text is kept beyond the detectors' windows.

    Use one detector per stream, fed by one thread at a time.  Concurrent use is
    refused, never lossy: a :meth:`feed` (or :meth:`feed_tokens`) of a channel that
    another thread is feeding, and a :meth:`finish` while another thread feeds,
    raise :class:`RuntimeError` and change nothing; every call that returns
    normally has its input counted (:meth:`length`).  Two threads making the
    first feed of a channel share one stream.  A refused :meth:`finish` leaves the
    detector open (``finished`` is ``False``; call it again once the feed returned);
    a feed racing a successful :meth:`finish` either ran before it (its text is in
    the last checkpoint) or raises.

    Examples
    --------
    >>> det = TextLoopDetector("rescue")
    >>> found = []
    >>> for _ in range(40):
    ...     found += det.feed("The cache is stale, so I flush it and check again. ")
    >>> found += det.finish()
    >>> [(d.kind, d.start, d.cut) for d in found][:1]
    [('cycle', 0, 51)]
    """

    def __init__(self, config: TextConfig | str | None = None, *, implementation: str | None = None) -> None:
        if config is None:
            config = TextConfig()
        elif isinstance(config, str):
            config = TextConfig(config)
        elif not isinstance(config, TextConfig):
            raise TypeError(f"config must be a TextConfig, a profile name or None, not {type(config).__name__}")
        self.config = config
        self._impl = loopcore.implementation(implementation)
        self._streams = {}  # (a field of the compiled base when the core is built)
        self._closed: dict[str, Any] = {}
        self._detections: list[Detection] = []
        self._strong: set[str] = set()  # channels with a strong near_cycle detection
        # per channel: the current weak near_cycle episode's report, N's hit count at it, and the
        # checkpoint count last looked at with the episode's length then
        self._weak: dict[str, list[Any]] = {}
        self._finished = False
        # serialises what creates or closes streams (a channel's first delta, finish); the hot
        # path of an open stream does not take it (the stream's own busy flag refuses a second feeder)
        self._lock = threading.Lock()

    @property
    def implementation(self) -> str:
        """``"cython"`` or ``"python"``: the loopcore implementation in use."""
        return "cython" if self._impl is not loopcore.implementation("python") else "python"

    @property
    def detections(self) -> list[Detection]:
        """Every detection reported so far, in order (a copy)."""
        return list(self._detections)

    @property
    def finished(self) -> bool:
        """Whether :meth:`finish` was called."""
        return self._finished

    def watches(self, channel: str) -> bool:
        """Whether ``channel`` is analysed under the config's ``watch``."""
        _check_channel(channel)
        return self.config.watch in ("both", channel)

    def _feed(self, delta: str, channel: str) -> list[Detection]:
        """Everything but the hot path: validation, a channel's first delta, a ``str`` subclass."""
        if not isinstance(delta, str):
            raise TypeError(f"delta must be str, not {type(delta).__name__}")
        _check_channel(channel)
        if self._finished:
            raise RuntimeError("TextLoopDetector.feed() after finish(): start a new detector per attempt")
        if not delta or not self.watches(channel):
            return []
        return self._wrap(channel, self._open(channel, "feed").feed(delta))

    def _open(self, channel: str, method: str) -> Any:
        """The open stream of ``channel``, made on its first input: one stream even when two
        threads bring the first input at once (a stream added after :meth:`finish` would lose it)."""
        with self._lock:
            if self._finished:
                raise RuntimeError(f"TextLoopDetector.{method}() after finish(): start a new detector per attempt")
            stream = self._streams.get(channel)
            if stream is None:
                stream = self._streams[channel] = self._impl.ChannelStream(**self.config.stream_params(channel))
            return stream

    def feed_tokens(self, ids: Any, channel: str = "text") -> list[Detection]:
        """Append token ids to ``channel`` and return the detections they revealed.

        Each id is one symbol; positions, starts and cuts count tokens (keep
        ``ids[:cut]``).  A channel holds either text or token ids.  Use a config
        made for tokens (``TextConfig("tokens")``: the symbol detectors, lengths in
        tokens); the text-shaped rules (fenced code, sentences, records, salads)
        see nothing in token ids (``loopcore._tokens``).

        Parameters
        ----------
        ids : buffer or sequence of int
            A 1-D ``array.array``, numpy integer array or other buffer of native
            integers (read in place), or a list/tuple of ints; ids from 0 to 1,114,111.

        Raises
        ------
        TypeError
            when ``ids`` is not integers (nothing is consumed).
        ValueError
            for a channel other than ``"reasoning"`` / ``"text"``, a buffer that is
            not 1-D, or an id out of range (nothing is consumed).
        RuntimeError
            after :meth:`finish`, or on a channel that was fed text.
        ValueError
            also when the config enables ``pool`` or ``salad`` (text-shaped rules).
        """
        _check_channel(channel)
        if self._finished:
            raise RuntimeError("TextLoopDetector.feed_tokens() after finish(): start a new detector per attempt")
        shaped = sorted(_TEXT_SHAPED & self.config.enabled)
        if shaped:
            raise ValueError(
                f"this config enables {', '.join(shaped)}, which read sentences and character classes that "
                "token ids do not have: use TextConfig('tokens') (or enabled= without them)"
            )
        stream = self._streams.get(channel)
        if stream is None:
            if not self.watches(channel):
                token_symbols(token_view(ids))  # still refuse what is not token ids (type, shape, range)
                return []
            stream = self._open(channel, "feed_tokens")
        raw = stream.feed_tokens(ids)
        return self._wrap(channel, raw) if raw else []

    def finish(self) -> list[Detection]:
        """End of the attempt: run the last checkpoint of every channel.

        All channels or none: every open stream is finished at once.

        Raises
        ------
        RuntimeError
            when called twice, or while another thread is feeding one of the channels:
            then nothing changes (``finished`` stays ``False``, the channels stay open);
            call it again once that feed returned.
        """
        with self._lock:
            if self._finished:
                raise RuntimeError("TextLoopDetector.finish() called twice")
            channels = list(self._streams)
            try:
                raws = self._impl.finish_streams([self._streams[name] for name in channels])
            except RuntimeError as exc:  # (another thread feeds a channel)
                raise RuntimeError(
                    f"TextLoopDetector.finish() refused ({exc}): nothing was finished; "
                    "call finish() again once that feed returned"
                ) from None
            finally:
                # (a MemoryError still finished every stream: the detector is finished too)
                self._finished = all(stream.finished for stream in self._streams.values())
            # finished streams move aside: feed() then takes the slow path, which raises
            self._closed = dict(self._streams)
            self._streams.clear()  # (in place: the compiled feeder reads this dict)
            out: list[Detection] = []
            for channel, raw in zip(channels, raws):
                out += self._wrap(channel, raw)
            return out

    def stream(self, channel: str) -> Any:
        """The ``loopcore`` ``ChannelStream`` of ``channel`` (open or finished); ``None`` before
        the channel's first delta and for a channel the config does not watch.

        For reading only (``length``, ``masked_length``, ``hits``, ``fuse_checkpoints``): a
        checkpoint falls every ``config.check_every`` code points of ``masked_length``, and
        :meth:`action_required`, :meth:`weak_episode` and :meth:`weak_checkpoints` change only
        there or with a reported detection.  Feeding it directly would bypass this detector.
        """
        return self._streams.get(channel) or self._closed.get(channel)

    def length(self, channel: str = "text") -> int:
        """Characters fed to ``channel`` so far (code points)."""
        _check_channel(channel)
        stream = self._streams.get(channel) or self._closed.get(channel)
        return stream.length if stream is not None else 0

    def hits(self, channel: str = "text") -> dict[str, int]:
        """Checkpoints at which each detector held on ``channel`` (by kind)."""
        _check_channel(channel)
        stream = self._streams.get(channel) or self._closed.get(channel)
        return stream.hits if stream is not None else dict.fromkeys(loopcore.KINDS, 0)

    def action_required(self, channel: str | None = None) -> bool:
        """Whether the detections call for action (spec §2.6).

        C/P (the 003 "rescue" family) and T (salad: of symbols or of a few words) call for action
        at their first hit; N (near_cycle) once one of its detections is strong (its
        weak ones are notices: :attr:`Detection.strength`); E/L/S (the 002 "fuse"
        family) once some fuse detector has held at ``fuse_hits_before_action``
        checkpoints of one attempt.
        """
        channels = CHANNELS if channel is None else (_check_channel(channel),)
        for name in channels:
            stream = self._streams.get(name) or self._closed.get(name)
            if stream is None:
                continue
            if stream.fuse_checkpoints >= self.config.fuse_hits_before_action:
                return True
            hits = stream.hits
            if hits["cycle"] or hits["pool"] or hits["salad"] or name in self._strong:
                return True
        return False

    def weak_episode(self, channel: str) -> Detection | None:
        """The report of ``channel``'s latest weak ``near_cycle`` episode, ``None`` when there is
        none or it was confirmed (strong)."""
        entry = self._weak.get(channel)
        return entry[0] if entry is not None else None

    def weak_checkpoints(self, channel: str) -> int:
        """How many consecutive checkpoints ``channel``'s latest weak ``near_cycle`` episode has
        held, its first report included (0: none).  It stops growing when the episode ends (a new
        episode is a new report)."""
        entry = self._weak.get(channel)
        if entry is None:
            return 0
        stream: Any = self._streams.get(channel) or self._closed.get(channel)
        mark = stream.masked_length // self.config.check_every
        if mark != entry[2]:  # the hit count moves only at checkpoints
            entry[2] = mark
            entry[3] = stream.hits["near_cycle"] - entry[1] + 1
        return int(entry[3])

    def _wrap(self, channel: str, raw: list[tuple[str, int, int, int, dict[str, Any]]]) -> list[Detection]:
        if not raw:
            return []
        found = []
        for kind, position, start, cut, evidence in raw:
            strong = evidence.pop("strong", True)
            d = Detection(kind, channel, position, start, cut, evidence, "strong" if strong else "weak")
            found.append(d)
            if kind == "near_cycle":
                if strong:
                    self._strong.add(channel)
                    self._weak.pop(channel, None)
                else:
                    stream: Any = self._streams.get(channel) or self._closed.get(channel)
                    self._weak[channel] = [d, stream.hits["near_cycle"], -1, 1]
        self._detections += found
        return found


def scan_text(text: str, channel: str = "text", config: TextConfig | str | None = None) -> list[Detection]:
    """Detect loops in a complete text, as if it had been streamed (spec §8).

    Parameters
    ----------
    text : str
        The whole channel text.
    channel : str
        ``"text"`` (fenced code masked) or ``"reasoning"``.
    config : TextConfig | str | None
        Config or profile name; ``None`` = ``TextConfig()``.

    Returns
    -------
    list[Detection]
        In order of position.

    Raises
    ------
    TypeError
        when ``text`` is not a ``str``.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be str, not {type(text).__name__}")
    detector = TextLoopDetector(config)
    if not detector.watches(_check_channel(channel)):
        return []
    return detector.feed(text, channel) + detector.finish()


def scan_tokens(
    ids: Any, config: TextConfig | str | None = "tokens", *, channel: str = "text"
) -> list[Detection] | list[list[Detection]]:
    """Detect loops in complete sequences of token ids, as if they had been streamed.

    Parameters
    ----------
    ids : buffer or sequence of int
        One sequence (a 1-D integer buffer -- ``array.array``, a numpy array -- or
        a list of ints), or a batch: a 2-D integer buffer (one row per sequence,
        e.g. a numpy ``int32``/``int64`` array) or a list of sequences.
    config : TextConfig | str | None
        Config or profile name; ``"tokens"`` (lengths in tokens) by default and for ``None``.
    channel : str
        The channel the detections name (``"text"`` or ``"reasoning"``).

    Returns
    -------
    list[Detection] | list[list[Detection]]
        For one sequence, its detections in order of position (tokens); for a
        batch, one such list per row.

    Raises
    ------
    TypeError, ValueError
        as :meth:`TextLoopDetector.feed_tokens` (a row's error names the row).

    Examples
    --------
    >>> found = scan_tokens([7, 8, 9, 10] * 200)  # 800 tokens: a loop of period 4
    >>> [(d.kind, d.start, d.cut, d.evidence["period"]) for d in found][:1]
    [('cycle', 0, 4, 4)]
    """
    _check_channel(channel)
    if config is None or isinstance(config, str):
        config = TextConfig("tokens" if config is None else config)
    elif not isinstance(config, TextConfig):
        raise TypeError(f"config must be a TextConfig, a profile name or None, not {type(config).__name__}")
    rows = _rows(ids)
    if rows is None:
        return _scan_one(ids, config, channel)
    out: list[list[Detection]] = []
    for index, row in enumerate(rows):
        try:
            out.append(_scan_one(row, config, channel))
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"row {index}: {exc}") from None
    return out


def _sequence(x: Any) -> bool:
    """Whether ``x`` is a sequence of ids itself (a row), not one id (an int, a numpy scalar)."""
    if isinstance(x, (list, tuple)):
        return True
    try:
        return memoryview(x).ndim >= 1
    except TypeError:
        return False


def _rows(ids: Any) -> list[Any] | None:
    """The rows of a batch (a 2-D buffer or a list of sequences), ``None`` for one sequence."""
    if isinstance(ids, (list, tuple)):
        return list(ids) if ids and _sequence(ids[0]) else None
    try:
        view = memoryview(ids)
    except TypeError:
        return None
    if view.ndim != 2:
        return None
    code, _ = integer_code(view)
    rows, cols = view.shape or (0, 0)
    if rows == 0 or cols == 0:
        return [[] for _ in range(rows)]
    width = cols * view.itemsize
    flat = (view if view.c_contiguous else memoryview(view.tobytes())).cast("B")
    return [cast_items(flat[r * width : (r + 1) * width], code) for r in range(rows)]


def _scan_one(ids: Any, config: TextConfig, channel: str) -> list[Detection]:
    detector = TextLoopDetector(config)
    if not detector.watches(channel):
        return []
    return detector.feed_tokens(ids, channel) + detector.finish()
