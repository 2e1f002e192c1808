"""Stop hints and their pre-registered observation (seed 002, line ①c; ``SessionConfig(hint=...)``).

At a text loop that would stop the attempt, a :class:`~loopguard.Session` with ``hint`` set
first answers ``notice`` with ``kind="hint"``: ``verdict.reason`` is a short "you are repeating
yourself" message (English or Chinese, as the other messages; or the text given as ``hint``)
for the host to add to the conversation.  The cut is not given up: a second detection in the same
attempt stops it as without hints (the model reads the hint only in its next request).

Whether the hint helped is then measured the same way every time, with the rule fixed before
the data is seen (seed 002's lesson: without it "a good-looking measure can always be picked
afterwards"):

- **before**: the last ``hint_observe_chars`` code points of the channel up to the hint, and
  their *repeat statistic*: the highest count of any 24-code-point n-gram in them
  (:func:`max_ngram_repeat`);
- **after**: the first equally many code points of the same channel in the *later* requests
  (attempts) of the session — text of the hint's own request cannot have seen the hint and is
  only counted as ``blind_chars`` —, their repeat statistic, and whether a fresh text detector
  fed them fires (any detection);
- the outcome: ``ineffective`` when the detector fired again (also before the window filled);
  ``effective`` when it did not and the repeat statistic fell to at most
  ``(1 - hint_success_drop)`` of before; ``undetermined`` otherwise; ``interrupted`` when the
  turn ended, the session was reset or another hint was given before the window filled — a turn
  that ends before any later text was seen carries the observation into the next turn once (the
  host may add the hint to the next user turn).

Each hint and each outcome is a record of the decision log (:mod:`loopguard.observe`): event
``hint`` (action ``notice``, rule ``hint``) and event ``hint_observation`` (action
``observe``, rule ``hint``, ``kind`` = the outcome, the numbers and the settings in
``evidence``); ``loopguard stats`` counts them.  Hints are capped: one per request,
``hint_max_per_episode`` per loop episode (hints further apart than ``hint_episode_minutes``
start a new episode) and ``hint_max_per_session`` for the session's life; past a cap the loop is
cut as without hints (one ``hint_quota`` record per episode).
"""

from __future__ import annotations

import collections
from collections.abc import Iterable
from typing import Any

from .config import TextConfig
from .text import TextLoopDetector

__all__ = ["NGRAM", "OUTCOMES", "HintObservation", "Hints", "max_ngram_repeat"]

#: the n-gram length of the repeat statistic, in code points (seed 002's ``k24``)
NGRAM = 24
#: the outcomes of an observation
OUTCOMES = ("effective", "ineffective", "undetermined", "interrupted")
#: observations a session remembers (:attr:`loopguard.Session.hint_observations`)
KEEP_RESULTS = 32


def max_ngram_repeat(text: str, n: int = NGRAM) -> int:
    """The highest number of times any ``n``-code-point substring occurs in ``text``
    (overlapping occurrences count); 0 when ``text`` is shorter than ``n``.

    >>> max_ngram_repeat("abcabcabc", 3), max_ngram_repeat("abcdef", 3), max_ngram_repeat("ab", 3)
    (3, 1, 0)
    """
    if len(text) < n:
        return 0
    counts = collections.Counter(text[i : i + n] for i in range(len(text) - n + 1))
    return max(counts.values())


class HintObservation:
    """One hint's observation window (see the module).

    Attributes
    ----------
    channel : str
        ``"reasoning"`` or ``"text"``.
    at : tuple[int, int]
        The (turn, attempt) of the hint.
    before_repeat : int
        The repeat statistic of the window before the hint (-1: the attempt's text was not kept).
    window : int
        Code points to observe after the hint (the before window's length, at most
        ``hint_observe_chars``).
    """

    __slots__ = ("_parts", "at", "attempts", "before_repeat", "blind", "channel", "detector", "seen", "turns", "window")

    def __init__(self, channel: str, at: tuple[int, int], before: str, observe_chars: int, config: TextConfig) -> None:
        self.channel = channel
        self.at = at
        tail = before[-observe_chars:]
        self.before_repeat = max_ngram_repeat(tail) if tail else -1
        self.window = len(tail) if tail else observe_chars
        self.detector = TextLoopDetector(config)
        self._parts: list[str] = []
        self.seen = 0
        self.blind = 0
        self.attempts: set[tuple[int, int]] = set()
        self.turns = 0  # turns ended while observing (the carried-over one)

    def see(self, at: tuple[int, int], channel: str, text: str) -> bool:
        """Text of ``channel`` recorded at (turn, attempt) ``at``; ``True`` once the window is full."""
        if channel != self.channel or not text:
            return False
        if at <= self.at:
            self.blind += len(text)
            return False
        take = text[: self.window - self.seen]
        self._parts.append(take)
        self.seen += len(take)
        self.attempts.add(at)
        self.detector.feed(take, channel)
        return self.seen >= self.window

    def conclude(self, success_drop: float, interrupted: bool = False) -> tuple[str, dict[str, Any]]:
        """The outcome and its evidence (numbers only)."""
        if not interrupted:
            self.detector.finish()
        fired = bool(self.detector.detections)
        after = "".join(self._parts)
        after_repeat = max_ngram_repeat(after)
        if fired:  # looping again after the hint, whether or not the window filled
            outcome = "ineffective"
        elif interrupted:
            outcome = "interrupted"
        elif self.before_repeat > 0 and after_repeat <= self.before_repeat * (1.0 - success_drop):
            outcome = "effective"
        else:
            outcome = "undetermined"
        evidence = {
            "before_max_repeat": self.before_repeat,
            "after_max_repeat": after_repeat,
            "window_chars": self.window,
            "observed_chars": self.seen,
            "blind_chars": self.blind,
            "fired": fired,
            "attempts_spanned": len(self.attempts),
            "turns_spanned": self.turns,
            "ngram": NGRAM,
            "success_drop": success_drop,
        }
        return outcome, evidence


class Hints:
    """A session's hint quota and its open observation (internal to :class:`~loopguard.Session`)."""

    __slots__ = ("episode", "episode_quota_said", "last", "last_attempt", "observing", "results", "total")

    def __init__(self) -> None:
        self.total = 0  # hints in the session's life
        self.episode = 0  # hints in the current episode
        self.last = float("-inf")  # the clock at the last hint
        self.last_attempt: tuple[int, int] | None = None
        self.episode_quota_said = False
        self.observing: HintObservation | None = None
        self.results: collections.deque[dict[str, Any]] = collections.deque(maxlen=KEEP_RESULTS)

    def allowed(self, now: float, at: tuple[int, int], limits: Iterable[float]) -> str:
        """``"hint"`` when a hint may be given now at (turn, attempt) ``at``; ``"quota"`` the
        first time a cap refuses one in an episode; ``""`` otherwise.  ``limits``: (episode
        minutes, per episode, per session)."""
        minutes, per_episode, per_session = limits
        if at == self.last_attempt:
            return ""  # one hint per request: the second detection cuts
        if now - self.last > minutes * 60.0:
            self.episode = 0
            self.episode_quota_said = False
        if self.episode >= per_episode or self.total >= per_session:
            if self.episode_quota_said:
                return ""
            self.episode_quota_said = True
            return "quota"
        return "hint"

    def given(self, now: float, at: tuple[int, int]) -> None:
        """Count a hint given now at ``at``."""
        self.total += 1
        self.episode += 1
        self.last = now
        self.last_attempt = at
