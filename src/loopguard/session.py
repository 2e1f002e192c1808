"""The session state machine hosts drive: one :class:`Session` per agent conversation.

Behaviour contract: ``docs/spec.md`` §0 (vocabulary), §3 (text policy), §5.2 (tool guards),
§8 (public surface); ``docs/rules.md`` maps the rule names used here to the seed documents'
codes.  A host reports what happens in a conversation and gets a :class:`Verdict` back at
every step::

    session = Session("chat-42")
    session.start_turn()                      # a user message arrived
    session.start_attempt()                   # a model request (step or retry)
    for channel, delta in stream:             # "reasoning" / "text" deltas
        verdict = session.feed(delta, channel)
        if verdict.stop:                      # "cut" or "cancel": stop the stream
            break
    session.end_attempt()                     # replay bookkeeping
    verdict = session.tool_call(tool, args)   # before the tool runs
    if verdict.action in ("allow", "notice"):
        result = run(tool, args)
        verdict = session.tool_result(tool, args, result)
    ...
    verdict = session.end_turn()              # the empty_turn rule

Lifecycle (:class:`SessionState`, :attr:`Session.state`)::

    IDLE --start_turn--> TURN --start_attempt / feed--> ATTEMPT --stop verdict--> STOPPED
    ATTEMPT, STOPPED --end_attempt--> TURN --end_turn--> IDLE
    any --cancel / reset--> IDLE;  any --dispose--> DISPOSED (every call then raises)

What each call does and which rule owns it:

* **Text loops** (kind ``text_loop``; spec §2, §2.6): every attempt gets fresh
  :class:`~loopguard.text.TextLoopDetector` s, one per channel, created on the first delta
  of that channel.  :meth:`Session.feed` returns ``cut`` once
  :meth:`~loopguard.text.TextLoopDetector.action_required` says so (``cycle``, ``pool``,
  ``salad`` at their first hit, ``near_cycle`` at its first strong detection, the fuse
  kinds ``exact_tail`` / ``lowdiv_tail`` / ``lowdiv_sliding`` at their
  ``fuse_hits_before_action``-th hit in the attempt).  The detectors' state moves only at
  checkpoints and does not depend on the chunking, so a channel's deltas wait (in order, at
  most 1,024 code points) until the next checkpoint can fall, then go to the recorder, the
  language sample and the detector as one string; the session asks for a verdict only when
  that revealed a detection or crossed a checkpoint of a channel where some detector has
  held: every delta gets the verdict it would get alone.  That stop is recorded once per
  attempt as a ``strikes`` strike
  (``ToolGuard.strike(session_id, "text_loop")``, unless ``SessionConfig.text_strikes`` is
  off); when the strike completes ``strikes_before_cancel`` the verdict is ``cancel``
  instead.  Once an attempt is stopped every further :meth:`Session.feed` of it returns the
  same stop verdict.
* **Tool calls** (spec §5.2; rules ``repeat``, ``drift``, ``error_avoidance``,
  ``no_progress``, ``unscoped_search``, ``cycle``, ``circuit_breaker``, ``repeat_streak``):
  :meth:`Session.tool_call` / :meth:`Session.tool_result` wrap
  :meth:`ToolGuard.before_call` / :meth:`ToolGuard.after_call`.
* **Replay** (the ``repeat`` rule's replay mode): :meth:`Session.end_attempt` hands the
  attempt's reasoning, answer text and tool calls to :meth:`ToolGuard.observe_attempt`,
  which owns the rule.  To bound memory, the session keeps an attempt's text only while
  reasoning + text stay within :data:`MAX_ATTEMPT_CHARS` (1_000_000 code points) and its
  tool calls within :data:`MAX_ATTEMPT_CALLS` (1024) (an
  :class:`~loopguard.attempts.AttemptRecorder`); a longer attempt is **never treated as a
  replay** (it is reported to the guard as a unique attempt, which also ends any replay
  streak).
* **Stall nudge** (kind ``stall_nudge``): :meth:`Session.end_attempt` returns ``notice``
  after ``stall_calls`` reasoning-only attempts in a row, at most ``stall_nudge_max`` times
  per session.
* **stall** and **strikes**: :meth:`Session.check_stall`; progress events are
  :meth:`start_attempt`, every :meth:`feed` (at most one note a second),
  :meth:`end_attempt`, :meth:`tool_call` and :meth:`tool_result`.
* **empty_turn** (spec §3): :meth:`Session.end_turn` judges the turn by structure only:
  reasoning was streamed and the answer text has no non-whitespace character.
* Tool-guard state (``repeat`` counts, strikes, …) belongs to the session and survives
  :meth:`start_turn` (counts are not cleared by new user messages); :meth:`Session.reset`
  forgets it.

Implicit steps: :meth:`feed` and :meth:`start_attempt` start a turn when none is open;
:meth:`feed` starts an attempt when none is open (a tool call runs after its request ended
and belongs to the last attempt); :meth:`start_attempt` and :meth:`end_turn` end an open
attempt first (as :meth:`end_attempt`, its verdict is then only logged: call
:meth:`end_attempt` yourself to see it).

Not thread-safe: a session serves one conversation, driven by one task at a time.  Several
sessions may share one (thread-safe) :class:`ToolGuard`.  Positions are Unicode code points
(Python ``str`` indices) into the channel text of one attempt.  Logging goes to the
``"loopguard.session"`` logger; arguments, results and model text are never logged.
"""

from __future__ import annotations

import enum
import itertools
import logging
import os
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from . import messages
from .attempts import AttemptRecorder
from .config import TextConfig
from .errors import ConfigError
from .guard import Decision, Intervention, ToolGuard, ToolGuardConfig
from .hints import NGRAM, HintObservation, Hints
from .identity import session_key
from .observe import events
from .observe import log as obs_log
from .store import MemoryStore, RedisStore, StoreUnavailable
from .terminal import shown_name
from .text import CHANNELS, Detection, TextLoopDetector

__all__ = [
    "MAX_ATTEMPT_CALLS",
    "MAX_ATTEMPT_CHARS",
    "VERDICT_ACTIONS",
    "Session",
    "SessionConfig",
    "SessionState",
    "Verdict",
]

logger = logging.getLogger("loopguard.session")

#: The actions a :class:`Verdict` can carry, from mildest to strongest.
VERDICT_ACTIONS = ("allow", "notice", "deny", "cut", "cancel")

#: An attempt whose reasoning + text exceed this many code points is not kept
#: for the replay signature (and is never treated as a replay).
MAX_ATTEMPT_CHARS = 1_000_000

#: An attempt with more tool calls than this is not kept for the replay
#: signature (and is never treated as a replay).
MAX_ATTEMPT_CALLS = 1024

#: Code points per channel kept from the start of a turn to pick the language
#: of the session's own messages (``language="auto"``).
LANG_SAMPLE_CHARS = 2000

_BIG = 1_000_000
_RESCUE_KINDS = frozenset({"cycle", "pool", "near_cycle", "salad"})
_CHANNEL_NAMES = {"reasoning": ("reasoning", "推理"), "text": ("answer", "正文")}
_SERIAL = itertools.count(1)
_NEVER = 1 << 62
#: Code points a channel's deltas may wait, at most, before they go to the recorder, the
#: language sample and the detector (the next checkpoint usually comes first: ``check_every``).
_PENDING_CHARS = 1024
_NO_NOTE = float("-inf")  # feed_window's noted when the next delta must be fed at once


Action = Literal["allow", "notice", "deny", "cut", "cancel"]


@dataclass(frozen=True)
class SessionConfig:
    """Keys of the session state machine (spec §3: the ``strikes``, ``empty_turn`` and stall nudge rules).

    Parameters
    ----------
    empty_turn_limit : int
        ``empty_turn``: this many consecutive empty turns (reasoning, zero answer text)
        make a detection; a normal turn resets the count.  Default 1, an
        integer ``>= 1``.
    empty_turn_action : str
        ``"log"`` (default: the verdict is ``allow`` with
        ``kind="empty_turn"`` and a log line) or ``"steer"`` (the verdict is
        ``notice`` with the text for the model, see ``empty_turn_steer_max``).
    empty_turn_steer_max : int
        At most this many steers per session (default 3, an integer
        ``>= 0``); past it, empty turns are logged only.
    empty_turn_detect : bool
        The ``empty_turn`` rule on/off (default True).
    text_strikes : bool
        A text loop that stops an attempt counts as a ``strikes`` strike
        (``ToolGuard.strike(session_id, "text_loop")``).  Default True.
    stall_calls : int
        Seed 003 stall nudge: this many consecutive attempts with at least
        ``stall_min_reasoning_chars`` of reasoning, no answer text and no tool
        call → one nudge (:meth:`Session.end_attempt` returns ``notice`` with
        ``kind="stall_nudge"``); a normal attempt restarts the count.  Default
        3; 0 = off.
    stall_min_reasoning_chars : int
        Default 1024 (code points).
    stall_nudge_max : int
        At most this many nudges per session (default 3): the nudge must not
        become a loop of its own.
    text_notice_checkpoints : int
        A weak text-loop detection (spec §2.7: ``Detection.strength ==
        "weak"``) gives a ``notice`` once its episode has held at this many
        consecutive checkpoints (default 3: the near-copies went on over two
        more blocks of ``check_every`` code points; a trace or enumeration that
        looks like near-copies for a block or two ends first).  1 = at the
        detection itself.  A strong detection cuts whatever this says.
    hint : bool | str
        Stop hints (seed 002, line ①c; :mod:`loopguard.hints`): at a text loop that would stop
        the attempt, first a ``notice`` with ``kind="hint"`` whose ``reason`` the host adds to
        the conversation (``True``: the built-in English/Chinese message; a non-empty ``str``:
        that text), then a pre-registered observation of the model's next requests.  Default
        ``False`` (off: the hint speaks to the model for the user, so it is opt-in).
    hint_observe_chars : int
        The observation window, in code points (default 2,000).
    hint_success_drop : float
        ``effective`` needs the repeat statistic to fall by at least this fraction (default 0.5).
    hint_max_per_episode : int
        Hints per loop episode (default 2).
    hint_max_per_session : int
        Hints in the session's life (default 8).
    hint_episode_minutes : float
        Hints further apart than this start a new episode (default 10).

    Raises
    ------
    ConfigError
        (a ``ValueError``) naming the key, the value and the rule, at
        construction.

    Examples
    --------
    >>> SessionConfig().empty_turn_action, SessionConfig(empty_turn_limit=2).empty_turn_limit
    ('log', 2)
    >>> SessionConfig(empty_turn_action="shout")
    Traceback (most recent call last):
    ...
    loopguard.errors.ConfigError: SessionConfig: empty_turn_action='shout' is invalid: must be 'log' or 'steer'
    """

    empty_turn_limit: int = 1
    empty_turn_action: Literal["log", "steer"] = "log"
    empty_turn_steer_max: int = 3
    empty_turn_detect: bool = True
    text_strikes: bool = True
    stall_calls: int = 3
    stall_min_reasoning_chars: int = 1024
    stall_nudge_max: int = 3
    text_notice_checkpoints: int = 3
    hint: bool | str = False
    hint_observe_chars: int = 2000
    hint_success_drop: float = 0.5
    hint_max_per_episode: int = 2
    hint_max_per_session: int = 8
    hint_episode_minutes: float = 10.0

    def __post_init__(self) -> None:
        for key, lo in (
            ("empty_turn_limit", 1),
            ("empty_turn_steer_max", 0),
            ("stall_calls", 0),
            ("stall_min_reasoning_chars", 0),
            ("stall_nudge_max", 0),
            ("text_notice_checkpoints", 1),
            ("hint_observe_chars", NGRAM),
            ("hint_max_per_episode", 1),
            ("hint_max_per_session", 1),
        ):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= _BIG:
                raise ConfigError(key, value, f"an integer from {lo} to {_BIG}", owner="SessionConfig")
        if self.empty_turn_action not in ("log", "steer"):
            raise ConfigError("empty_turn_action", self.empty_turn_action, "'log' or 'steer'", owner="SessionConfig")
        for key in ("empty_turn_detect", "text_strikes"):
            value = getattr(self, key)
            if not isinstance(value, bool):
                raise ConfigError(key, value, "True or False", owner="SessionConfig")
        if (
            not isinstance(self.hint, (bool, str))
            or self.hint == ""
            or (isinstance(self.hint, str) and self.hint.isspace())
        ):
            raise ConfigError("hint", self.hint, "True, False or a non-empty message", owner="SessionConfig")
        for key, low, high in (("hint_success_drop", 0.0, 1.0), ("hint_episode_minutes", 0.0, float(_BIG))):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not low < value <= high:
                raise ConfigError(key, value, f"a number above {low:g} and at most {high:g}", owner="SessionConfig")


@dataclass(frozen=True)
class Verdict:
    """What the host should do after a :class:`Session` call (spec §0).

    Attributes
    ----------
    action : str
        ``"allow"`` (go on), ``"notice"`` (go on; add ``reason`` to the
        conversation), ``"deny"`` (do not run the tool; return ``reason`` as
        its result), ``"cut"`` (stop the stream and keep
        ``text[:detection.cut]`` of ``detection.channel``), ``"cancel"``
        (stop and cancel the turn).
    kind : str | None
        What decided: a guard kind (``"repeat"``, ``"repeat_streak"``,
        ``"stalled"``, ``"strikes"``, … see
        :data:`loopguard.guard.GUARD_KINDS`), ``"text_loop"``, ``"replay"``
        (the ``repeat`` rule's replay mode switched on, with ``allow``),
        ``"stall_nudge"`` or ``"empty_turn"``;
        ``None`` when nothing happened.  An ``allow`` with a kind is
        informational (logged, nothing to do).
    reason : str
        The text for the model (``[loopguard] …``) for ``notice``, ``deny``,
        ``cut`` and ``cancel``; ``""`` for ``allow``.
    detection : Detection | None
        The text detection behind a ``text_loop`` verdict (positions in code
        points of that channel's text in this attempt).
    interventions : tuple[Intervention, ...]
        The guard's interventions (after a tool result, a ``strikes`` strike, a ``stalled``
        stall).
    decision : Decision | None
        The guard's decision, for :meth:`Session.tool_call`.
    evidence : Mapping[str, Any]
        Numbers behind the verdict (never arguments, results or model text).
    """

    action: Action
    kind: str | None = None
    reason: str = ""
    detection: Detection | None = None
    interventions: tuple[Intervention, ...] = ()
    decision: Decision | None = None
    evidence: Mapping[str, Any] = field(default_factory=dict)

    @property
    def stop(self) -> bool:
        """True for ``cut`` and ``cancel``: the host must stop the stream / turn."""
        return self.action in ("cut", "cancel")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "action": self.action,
            "kind": self.kind,
            "reason": self.reason,
            "detection": self.detection.to_dict() if self.detection is not None else None,
            "interventions": [i.to_dict() for i in self.interventions],
            "decision": self.decision.to_dict() if self.decision is not None else None,
            "evidence": dict(self.evidence),
        }


_ALLOW = Verdict("allow")


def _check_channel(channel: object) -> str:
    if channel not in CHANNELS:
        raise ValueError(f"channel must be 'reasoning' or 'text', not {channel!r}")
    return str(channel)


class SessionState(enum.Enum):
    """Where a :class:`Session` is in its lifecycle (:attr:`Session.state`; spec §0).

    ``IDLE``: no turn open (before the first, after :meth:`~Session.end_turn`,
    :meth:`~Session.cancel` or :meth:`~Session.reset`).  ``TURN``: a turn is open and no
    attempt.  ``ATTEMPT``: an attempt (model request) is open and its deltas are analysed.
    ``STOPPED``: the open attempt was stopped (``cut`` / ``cancel``): every further delta of
    it gets that verdict again.  ``DISPOSED``: after :meth:`~Session.dispose`; every call
    raises ``RuntimeError``.
    """

    IDLE = "idle"
    TURN = "turn"
    ATTEMPT = "attempt"
    STOPPED = "stopped"
    DISPOSED = "disposed"


_IDLE, _TURN, _ATTEMPT, _STOPPED, _DISPOSED = SessionState
#: The legal moves: ``start_turn`` (IDLE/TURN → TURN), ``start_attempt`` and ``feed`` (TURN →
#: ATTEMPT), a stop verdict (ATTEMPT → STOPPED), ``end_attempt`` (ATTEMPT/STOPPED → TURN),
#: ``end_turn`` (TURN → IDLE), ``cancel`` / ``reset`` (any → IDLE), ``dispose`` (any → DISPOSED).
_MOVES: dict[SessionState, frozenset[SessionState]] = {
    _IDLE: frozenset({_IDLE, _TURN, _DISPOSED}),
    _TURN: frozenset({_IDLE, _TURN, _ATTEMPT, _DISPOSED}),
    _ATTEMPT: frozenset({_IDLE, _TURN, _STOPPED, _DISPOSED}),
    _STOPPED: frozenset({_IDLE, _TURN, _DISPOSED}),
    _DISPOSED: frozenset(),
}


class _Lane:
    """One channel of the open attempt: its detector, the detector's stream once it has one,
    the deltas not fed yet, and where the next checkpoint can fall.

    The detectors' verdict (:meth:`~loopguard.text.TextLoopDetector.action_required`, the
    weak episode and its checkpoints) changes only at checkpoints (every ``check_every`` code
    points of the masked text the detectors see, ``masked_length``; spec §2), and their
    results never depend on how the text was chunked.  The masked text never outgrows the
    original (masking only drops code points), so no checkpoint can pass while the code
    points fed stay below the next multiple of ``check_every`` (``due``): until then the
    deltas wait in ``pending`` and go to the recorder, the language sample and the detector
    as one string when ``fed`` reaches ``limit`` (``due``, or at most :data:`_PENDING_CHARS`
    past the last flush: an unwatched channel never has a checkpoint).
    """

    __slots__ = ("detector", "channel", "every", "stream", "mark", "fed", "due", "limit", "pending", "quiet")

    def __init__(self, detector: TextLoopDetector, channel: str) -> None:
        self.detector = detector
        self.channel = channel
        self.every = every = detector.config.check_every
        self.stream: Any = None
        self.mark = 0  # checkpoints passed at the last judgement (none yet: nothing can call for action)
        self.fed = 0  # code points given to the channel (pending ones included)
        self.due = every  # the next checkpoint falls at masked_length == due, so at fed >= due at the earliest
        self.limit = min(every, _PENDING_CHARS)  # flush the pending deltas once fed reaches this
        self.pending: list[str] = []  # deltas given since the last flush, in order
        # no detection reported yet, so no detector has held (spec §2: each episode's first hit
        # reports): the verdict stays allow, nothing to judge at a checkpoint
        self.quiet = True

    def take(self) -> str:
        """The pending deltas as one string (and none pending any more)."""
        pending = self.pending
        text = pending[0] if len(pending) == 1 else "".join(pending)
        pending.clear()
        return text

    def checkpoint(self) -> bool:
        """Whether a checkpoint passed since the last call (and remember it); call when
        ``fed >= due``."""
        stream = self.stream
        if stream is None:
            stream = self.stream = self.detector.stream(self.channel)
            if stream is None:  # a channel the config does not watch: never a checkpoint
                self.due = _NEVER
                return False
        mark = stream.masked_length // self.every
        self.due = (mark + 1) * self.every
        if mark == self.mark:
            return False
        self.mark = mark
        return True


class _Attempt:
    """The open (or last) attempt: its number, lanes, detections, weak episodes noticed, stop
    verdict and recorder."""

    __slots__ = ("number", "lanes", "detections", "noticed", "stopped", "record")

    def __init__(self, number: int) -> None:
        self.number = number
        self.lanes: dict[str, _Lane] = {}
        self.detections: list[Detection] = []
        self.noticed: dict[str, Detection] = {}  # per channel: the weak episode last noticed
        self.stopped: Verdict | None = None
        self.record = AttemptRecorder(MAX_ATTEMPT_CHARS, MAX_ATTEMPT_CALLS)


class _Turn:
    """The open (or last) turn: its number, the reasoning and answer text its ended attempts
    streamed (by structure only) and the language samples."""

    __slots__ = ("number", "reasoning", "wrote_text", "samples", "sampling")

    def __init__(self, number: int) -> None:
        self.number = number
        self.reasoning = 0  # code points of reasoning in the turn's ended attempts
        self.wrote_text = False  # some answer text had a non-whitespace character
        self.samples: dict[str, str] = {}  # per channel: the first LANG_SAMPLE_CHARS code points
        self.sampling = set(CHANNELS)  # the channels whose sample is not full yet

    def sample(self, channel: str, delta: str) -> None:
        kept = self.samples.get(channel, "")
        if delta:
            kept = self.samples[channel] = kept + delta[: LANG_SAMPLE_CHARS - len(kept)]
        if len(kept) >= LANG_SAMPLE_CHARS:
            self.sampling.discard(channel)

    def add(self, record: AttemptRecorder) -> None:
        """Count an ended attempt's text in the turn."""
        self.reasoning += record.reasoning_chars
        self.wrote_text = self.wrote_text or record.wrote_text


class _Tally:
    """Counts that span turns: empty turns and steers, reasoning-only attempts and nudges,
    rescues and retry requests left."""

    __slots__ = ("empty_streak", "steers", "stall_streak", "nudges", "rescues", "retry_left")

    def __init__(self) -> None:
        self.empty_streak = self.steers = self.stall_streak = self.nudges = 0
        self.rescues = self.retry_left = 0


class Session:
    """The state machine of one agent conversation (spec §0, §3, §5.2).

    Parameters
    ----------
    session_id : Any
        The conversation's id (``"default"``); the guard keys its state by
        :func:`loopguard.session_key` of it.
    text_config : TextConfig | str | None
        The text detectors' config or a profile name (``None`` =
        ``TextConfig()``, the ``"default"`` profile).
    guard : ToolGuard | None
        A guard to share between sessions; ``None`` = a new
        ``ToolGuard(guard_config, clock=clock)``.
    guard_config : ToolGuardConfig | Mapping | None
        Config of the new guard (only without ``guard``).
    config : SessionConfig | None
        ``None`` = ``SessionConfig()``.
    clock : callable returning seconds, optional
        Time source of the new guard (``stalled``, the ``strikes`` window); default
        ``time.monotonic`` (``time.time`` with a shared ``store``: :class:`~loopguard.ToolGuard`).
        Only without ``guard``.
    store : MemoryStore | RedisStore | None
        Where the new guard keeps its per-session state (tool-guard, strikes and stall state;
        ``None``: this process; see :class:`~loopguard.ToolGuard`).  Only without ``guard``.
        The session's rescues in a row go to the same store (:attr:`consecutive_rescues`); its
        turn counts and its stream text stay in this object.
    on_store_error : ``"open"`` | ``"closed"``
        The new guard's decision without its shared store (default ``"open"``).
    dump_dir : str | os.PathLike | None
        Where to write evidence samples (seed 002, line ④): one JSON file per verdict that is not
        ``allow`` (notice, cut, deny, cancel) of a text loop, a tool call, a tool result or a
        stall check, at most one per (turn, kind), written by a
        background thread (the stream never waits on the disk; a failed write is logged and
        counted).  ``None`` (default): no sample, no I/O.  See :mod:`loopguard.observe.samples`.
    dump_max_chars : int
        Code points of the channel's text kept per text-loop sample, the tail (default 8,000).
    dump_keep : int
        Samples the directory keeps, the newest (default 30).

    Raises
    ------
    TypeError
        for a config of the wrong type, or a ``dump_*`` argument of the wrong type.
    ValueError
        when ``guard`` is given together with ``guard_config``, ``clock`` or ``store``; for an
        empty ``dump_dir`` or a ``dump_*`` bound below 1.
    ConfigError
        for an invalid ``guard_config`` mapping.

    Notes
    -----
    Not thread-safe (one session per conversation).  Memory per session:
    the current attempt's detectors (bounded by the text config), at most
    :data:`MAX_ATTEMPT_CHARS` code points of the attempt's text and
    :data:`MAX_ATTEMPT_CALLS` tool-call references for the replay rule, and
    :data:`LANG_SAMPLE_CHARS` per channel of the turn's start for language
    picking; see :attr:`retained_chars`.  :attr:`state` is the lifecycle
    (:class:`SessionState`).

    Examples
    --------
    >>> s = Session("demo")
    >>> s.start_turn()
    >>> s.state
    <SessionState.TURN: 'turn'>
    >>> verdicts = [s.feed("Wait, let me recheck the sum. ", "reasoning") for _ in range(40)]
    >>> next(v for v in verdicts if v.stop).action, verdicts[-1].detection.kind, s.state.value
    ('cut', 'cycle', 'stopped')
    >>> s.end_attempt().action
    'cut'
    >>> s.tool_call("grep", {"pattern": "x", "path": "src"}).action
    'allow'
    """

    __slots__ = (
        "_attempt",
        "_clock",
        "_dump",
        "_guard",
        "_hints",
        "_label",
        "_live",
        "_progress_noted",
        "_sid",
        "_state",
        "_tally",
        "_turn",
        "config",
        "text_config",
    )

    def __init__(
        self,
        session_id: Any = "default",
        *,
        text_config: TextConfig | str | None = None,
        guard: ToolGuard | None = None,
        guard_config: ToolGuardConfig | Mapping[str, Any] | None = None,
        config: SessionConfig | None = None,
        clock: Callable[[], float] | None = None,
        store: MemoryStore | RedisStore | None = None,
        on_store_error: str = "open",
        dump_dir: str | os.PathLike[str] | None = None,
        dump_max_chars: int = 8000,
        dump_keep: int = 30,
    ) -> None:
        self._dump: Any = None
        if dump_dir is not None:  # imported only when asked for: without it the guard does no I/O
            from .observe.samples import SampleDump

            self._dump = SampleDump(dump_dir, dump_max_chars, dump_keep)
        self._sid = session_id
        self._label = obs_log.SessionLabel(session_id)  # the id in log lines (hashed when configured)
        self.text_config: TextConfig = _text_config(text_config)
        self.config: SessionConfig = _session_config(config)
        self._guard = _tool_guard(guard, guard_config, clock, store, on_store_error)
        self._clock = self._guard.clock
        self._state = _IDLE
        self._hints: Hints | None = None
        self._forget()

    def __repr__(self) -> str:
        return f"Session({self._sid!r}, turn={self._turn.number}, attempt={self._attempt.number})"

    # ---------------------------------------------------------------- state

    def _forget(self) -> None:
        """Reset every counter and buffer of this session (not the guard)."""
        self._turn = _Turn(0)
        self._attempt = _Attempt(0)
        self._tally = _Tally()
        self._live: Any = None  # the StreamGuard feeding this session (loopguard.stream)
        self._progress_noted = float("-inf")  # the guard's clock at the last progress note from feed()
        if self._hints is not None and self._hints.observing is not None:
            self._end_observation(interrupted=True)
        self._hints = Hints() if self.config.hint else None

    def _move(self, to: SessionState) -> None:
        """The one place the lifecycle state changes; refuses a move :data:`_MOVES` does not allow."""
        if to not in _MOVES[self._state]:
            if self._state is _DISPOSED:
                raise RuntimeError("session disposed")
            raise RuntimeError(f"session {self._sid!r}: no move from {self._state.value} to {to.value}")
        self._state = to

    def _alive(self) -> None:
        if self._state is _DISPOSED:
            raise RuntimeError("session disposed")

    @property
    def state(self) -> SessionState:
        """The lifecycle state (:class:`SessionState`)."""
        return self._state

    @property
    def session_id(self) -> Any:
        """The session id given at construction."""
        return self._sid

    @property
    def guard(self) -> ToolGuard:
        """The :class:`ToolGuard` holding this session's tool state."""
        return self._guard

    @property
    def detections(self) -> list[Detection]:
        """Text detections of the current (or last ended) attempt, in order (a copy)."""
        return list(self._attempt.detections)

    @property
    def turn(self) -> int:
        """Turns started in this session (explicitly or implicitly); 0 before the first."""
        return self._turn.number

    @property
    def attempt(self) -> int:
        """Attempts started in the current turn; 0 before the first."""
        return self._attempt.number

    @property
    def retained_chars(self) -> int:
        """Code points of caller text this session holds: the current attempt's
        text kept for the replay rule (``<= MAX_ATTEMPT_CHARS``, 0 once the attempt ended or
        overflowed) plus the language samples (``<= LANG_SAMPLE_CHARS`` per
        channel).  The detectors' own windows are bounded by the text config
        and not counted here."""
        record, samples = self._attempt.record, self._turn.samples
        pending = {lane.channel: sum(map(len, lane.pending)) for lane in self._attempt.lanes.values()}
        total = sum(pending.values())
        kept = 0 if record.overflowed or record.kept + total > MAX_ATTEMPT_CHARS else record.kept + total
        sampled = sum(
            min(LANG_SAMPLE_CHARS, len(samples.get(channel, "")) + pending.get(channel, 0)) for channel in CHANNELS
        )
        return kept + sampled

    # ------------------------------------------------------------- streams

    @property
    def live_stream(self) -> Any:
        """The :class:`~loopguard.StreamGuard` feeding this session now, else ``None``."""
        return self._live

    def attach_stream(self, stream: Any) -> Any:
        """Make ``stream`` (a :class:`~loopguard.StreamGuard`) the one feeding this session.

        Returns the stream it replaces (``None`` when none was attached); the caller decides
        what the older one does (a :class:`~loopguard.StreamGuard` stops feeding).
        """
        previous, self._live = self._live, stream
        return previous

    def detach_stream(self, stream: Any) -> None:
        """``stream`` ended: it no longer feeds this session (nothing when another one does)."""
        if self._live is stream:
            self._live = None

    # ---------------------------------------------------------------- turns

    def start_turn(self) -> None:
        """A new user message: a new turn (spec §0).

        An open attempt is ended first (as :meth:`end_attempt`); an open turn
        is abandoned without an ``empty_turn`` judgement.  The guard's state (``repeat``
        counts, locks, strikes, replay mode) is kept: counts are not cleared by new user
        messages.  The rescue count and retry requests start again (with a shared store, the
        stored rescue count too; a turn opened implicitly by :meth:`start_attempt` resets this
        object's counts only, so a replica resuming a conversation keeps the shared count).

        Raises
        ------
        RuntimeError
            after :meth:`dispose`.
        """
        self._open_turn("start_turn")
        self._rescues("zero")

    def _open_turn(self, by: str) -> None:
        """:meth:`start_turn` without the shared store (``by``: who opened it, for the log)."""
        self._alive()
        if self._state is _ATTEMPT or self._state is _STOPPED:
            self._implicit_end(by)
        self._move(_TURN)
        if self._hints is not None:
            self._hint_turn_end()
        self._turn = _Turn(self._turn.number + 1)
        if self._dump is not None:
            self._dump.new_turn()
        self._attempt.number = 0
        self._tally.rescues = self._tally.retry_left = 0  # a new user message: the rescue budget starts again

    def start_attempt(self) -> None:
        """A new model request (a step or a retry) of the current turn.

        Starts a turn if none is open, ends an open attempt first (as
        :meth:`end_attempt`), then gives the attempt fresh text detectors and
        an empty recorder.  A progress event (``stalled``).

        Raises
        ------
        RuntimeError
            after :meth:`dispose`.
        """
        self._alive()
        if self._state is _ATTEMPT or self._state is _STOPPED:
            self._implicit_end("start_attempt")
        if self._state is _IDLE:
            self._open_turn("start_attempt")  # the stored rescue count is kept (another replica's)
        self._move(_ATTEMPT)
        self._attempt = _Attempt(self._attempt.number + 1)
        self._guard.note_progress(self._sid)

    def _implicit_end(self, by: str) -> None:
        verdict = self.end_attempt()
        if verdict.kind is not None:
            logger.info(
                "session %r: %s ended the open attempt implicitly: %s %s", self._label, by, verdict.action, verdict.kind
            )

    # ----------------------------------------------------------------- text

    def feed(self, delta: str, channel: str = "text") -> Verdict:
        """Stream a delta of the current attempt's ``channel`` (spec §2, §2.6, §3).

        Parameters
        ----------
        delta : str
            A fragment of the channel text (any length, may be empty).
        channel : str
            ``"reasoning"`` or ``"text"``.

        Returns
        -------
        Verdict
            ``cut`` (kind ``"text_loop"``, with the acting :class:`~loopguard.Detection`) when
            the attempt's detectors call for action; ``cancel`` (kind ``"strikes"``) when that
            text loop's strike completes ``strikes_before_cancel``; once stopped, the same stop
            verdict on every further delta.  ``notice`` (kind ``"text_loop"``) once per weak
            ``near_cycle`` episode that held ``text_notice_checkpoints`` checkpoints.  Else ``allow``
            (kind ``"text_loop"`` and the detection when a detector reported, not yet acting).

        Raises
        ------
        TypeError, ValueError
            for a ``delta`` that is not a ``str``, a channel other than ``"reasoning"`` /
            ``"text"`` (nothing is recorded); ``RuntimeError`` after :meth:`dispose`.

        Starts an attempt (and a turn) if none is open.  A progress event.
        """
        if self._state is _ATTEMPT and delta.__class__ is str and channel.__class__ is str:
            lane = self._attempt.lanes.get(channel)
            if lane is not None:  # the common case: an open attempt's known channel
                now = self._clock()
                if now - self._progress_noted >= 1.0:  # stalled counts minutes: one note a second is plenty
                    self._progress_noted = now
                    self._guard.note_progress(self._sid)
                lane.pending.append(delta)
                fed = lane.fed = lane.fed + len(delta)
                if fed < lane.limit:
                    return _ALLOW  # no checkpoint can have passed: the verdict cannot have changed
                return self._flush(lane)
        return self._feed(delta, channel)

    def feed_window(self, channel: str) -> tuple[int, float]:
        """How much of ``channel`` may arrive before :meth:`feed` could do more than hold it:
        ``(code_points, noted)``.

        While fewer than ``code_points`` more code points of ``channel`` have been fed and the
        guard's clock (:attr:`ToolGuard.clock <loopguard.ToolGuard.clock>`, seconds) reads less
        than 1.0 past ``noted`` (the last progress note), :meth:`feed` only holds its deltas
        and returns ``allow``: feeding them one by one or joined in one string gives the same
        verdicts, records and progress notes.  An adapter may therefore hold consecutive deltas
        of one channel and feed them joined once the window closes (as
        :class:`~loopguard.stream.StreamGuard` does), provided nothing else reaches the session
        meanwhile.  ``(0, -inf)`` when the next delta must be fed at once: no open attempt, the
        attempt stopped, or the channel's first delta.
        """
        if self._state is _ATTEMPT:
            lane = self._attempt.lanes.get(channel)
            if lane is not None:
                return lane.limit - lane.fed, self._progress_noted
        return 0, _NO_NOTE

    def feed_held(self, text: str, channel: str = "text") -> Verdict:
        """:meth:`feed` for deltas held while :meth:`feed_window` was open, joined in ``text``
        and fed late (before another event reaches the session, or at the end): the same,
        except that it makes no progress note, since none was due when they arrived.  Same
        returns and errors as :meth:`feed`."""
        return self._feed(text, channel, note=False)

    def _feed(self, delta: Any, channel: Any, note: bool = True) -> Verdict:
        """:meth:`feed` outside its fast path (arguments checked, an attempt opened, a
        stopped attempt, a channel's first delta)."""
        state = self._state
        if (
            state is not _ATTEMPT
            or delta.__class__ is not str
            or channel.__class__ is not str
            or channel not in CHANNELS
        ):
            channel = self._open_for(delta, channel)
            state = self._state
        if note:
            now = self._clock()
            if now - self._progress_noted >= 1.0:
                self._progress_noted = now
                self._guard.note_progress(self._sid)
        attempt = self._attempt
        if state is _STOPPED:  # nothing is pending once stopped: the stop came at a flush
            self._keep(attempt, channel, delta)
            return attempt.stopped  # type: ignore[return-value]
        lane = attempt.lanes.get(channel)
        if lane is None:
            lane = attempt.lanes[channel] = _Lane(TextLoopDetector(self.text_config), channel)
        lane.pending.append(delta)
        lane.fed += len(delta)
        if lane.fed < lane.limit:
            return _ALLOW
        return self._flush(lane)

    def _keep(self, attempt: _Attempt, channel: str, text: str) -> None:
        """Record ``text`` for the replay rule, the language sample and an open hint observation."""
        if not attempt.record.add(channel, text):
            self._overflowed("text")
        if channel in self._turn.sampling:
            self._turn.sample(channel, text)
        hints = self._hints
        if hints is not None and hints.observing is not None:
            if hints.observing.see((self._turn.number, attempt.number), channel, text):
                self._end_observation()

    def _flush(self, lane: _Lane) -> Verdict:
        """Give the lane's pending deltas to the recorder, the sample and the detector as one
        string (identical detections: the detectors do not depend on the chunking), then judge
        when that revealed a detection or passed a checkpoint."""
        started = time.perf_counter() if obs_log.ON else 0.0
        attempt, channel = self._attempt, lane.channel
        text = lane.take()
        self._keep(attempt, channel, text)
        try:
            found = lane.detector.feed(text, channel)
            if found:
                attempt.detections += found
                lane.quiet = False
                if lane.fed >= lane.due:
                    lane.checkpoint()
            elif lane.fed < lane.due or not lane.checkpoint() or lane.quiet:
                return _ALLOW  # no detection, and no checkpoint or no detector ever held: nothing changed
        finally:
            lane.limit = min(lane.due, lane.fed + _PENDING_CHARS)
        verdict = self._judge(lane, channel, found)
        if started:
            events.metrics.seconds("text", started)
        return verdict

    def _flush_all(self) -> None:
        """Feed every lane's pending deltas (before the attempt's last checkpoint); none can
        pass a checkpoint, so nothing is judged."""
        for lane in self._attempt.lanes.values():
            if lane.pending:
                self._flush(lane)

    def _open_for(self, delta: Any, channel: Any) -> str:
        """:meth:`feed` outside its fast path: check the arguments, open an attempt if none is."""
        self._alive()
        if not isinstance(delta, str):
            raise TypeError(f"delta must be str, not {type(delta).__name__}")
        checked = _check_channel(channel)
        if self._state is _IDLE or self._state is _TURN:
            self.start_attempt()
        return checked

    def _overflowed(self, what: str) -> None:
        logger.info(
            "session %r: attempt %d/%d exceeds the replay bound (%s); not a replay candidate",
            self._label,
            self._turn.number,
            self._attempt.number,
            what,
        )

    def _judge(self, lane: _Lane, channel: str, found: list[Detection]) -> Verdict:
        detector = lane.detector
        if not detector.action_required(channel):
            weak = detector.weak_episode(channel)
            if (
                weak is not None
                and weak is not self._attempt.noticed.get(channel)
                and detector.weak_checkpoints(channel) >= self.config.text_notice_checkpoints
            ):
                self._attempt.noticed[channel] = weak  # one notice per weak episode
                return self._notice(weak, channel)
            if not found:
                return _ALLOW
            return Verdict("allow", "text_loop", detection=found[-1])
        candidates = [d for d in found if d.channel == channel] or [
            d for d in self._attempt.detections if d.channel == channel
        ]
        acting = next(
            (d for d in candidates if d.kind in _RESCUE_KINDS and d.strong), candidates[-1] if candidates else None
        )
        if self._hints is not None and acting is not None:
            hinted = self._hint(acting, channel)
            if hinted is not None:
                return hinted
        return self._stop(acting, lane, channel)

    # ------------------------------------------------------------ stop hints

    def _hint(self, detection: Detection, channel: str) -> Verdict | None:
        """The stop hint in place of the stop, when the caps allow one now (:mod:`loopguard.hints`)."""
        hints, cfg = self._hints, self.config
        assert hints is not None
        at, now = (self._turn.number, self._attempt.number), self._clock()
        said = hints.allowed(now, at, (cfg.hint_episode_minutes, cfg.hint_max_per_episode, cfg.hint_max_per_session))
        if said != "hint":
            if said == "quota":
                quota = {"episode_hints": hints.episode, "session_hints": hints.total}
                self._hint_record("hint_quota", "observe", "quota", channel, quota)
            return None
        if hints.observing is not None:  # a new hint ends the observation of the last one
            self._end_observation(interrupted=True)
        hints.given(now, at)
        before = self._attempt.record.text(channel)
        hints.observing = HintObservation(channel, at, before, cfg.hint_observe_chars, self.text_config)
        if isinstance(cfg.hint, str):
            reason = cfg.hint
        else:
            en, zh = _CHANNEL_NAMES[channel]
            reason = messages.render("loop_hint", self._language(channel), channel=en, channel_zh=zh)
        evidence = {
            "channel": channel,
            "position": detection.position,
            "cut": detection.cut,
            "observe_chars": cfg.hint_observe_chars,
            "success_drop": cfg.hint_success_drop,
            "episode_hints": hints.episode,
            "session_hints": hints.total,
        }
        verdict = Verdict("notice", "hint", reason, detection, evidence=evidence)
        self._hint_record("hint", "notice", str(detection.kind), channel, evidence)
        if self._dump is not None:
            self._sample(verdict, "hint", channel)
        return verdict

    def _hint_turn_end(self) -> None:
        """A turn ended while a hint is observed: carried into the next turn once when nothing
        of a later request was seen yet, else ``interrupted``."""
        hints = self._hints
        observing = hints.observing if hints is not None else None
        if observing is None or observing.turns > self._turn.number - observing.at[0]:
            return  # nothing observed, or this turn's end was counted already (end_turn, then start_turn)
        if observing.seen == 0 and observing.turns == 0:
            observing.turns = 1
        else:
            self._end_observation(interrupted=True)

    def _end_observation(self, interrupted: bool = False) -> None:
        """Conclude the open observation: keep its result and record it in the decision log."""
        hints = self._hints
        assert hints is not None and hints.observing is not None
        observing, hints.observing = hints.observing, None
        outcome, evidence = observing.conclude(self.config.hint_success_drop, interrupted)
        evidence["observe_chars"] = self.config.hint_observe_chars
        hints.results.append({"outcome": outcome, "channel": observing.channel, **evidence})
        self._hint_record("hint_observation", "observe", outcome, observing.channel, evidence)

    def _hint_record(self, event: str, action: str, kind: str, channel: str, evidence: dict[str, Any]) -> None:
        """A decision-log record of rule ``hint`` (not counted as a detection: its loop is)."""
        if events.wanted(action):
            fields = obs_log.decision_fields(
                event, "text", action, self._sid, rule="hint", kind=kind, channel=channel, evidence=evidence
            )
            events.emit(fields, detection=False)

    @property
    def hint_observations(self) -> list[dict[str, Any]]:
        """The outcomes of this session's last 32 hint observations, oldest first: ``outcome``
        (``effective`` | ``ineffective`` | ``undetermined`` | ``interrupted``), ``channel`` and
        the numbers of :class:`loopguard.hints.HintObservation` (empty without ``hint``)."""
        return list(self._hints.results) if self._hints is not None else []

    def _language(self, channel: str) -> str:
        return messages.pick_language(self._guard.config.language, self._turn.samples.get(channel, ""))

    def _notice(self, detection: Detection, channel: str) -> Verdict:
        """A weak detection (spec §2.7): go on, tell the model; a strong one of the same loop cuts."""
        en, zh = _CHANNEL_NAMES[channel]
        reason = messages.render(
            "text_loop_notice",
            self._language(channel),
            channel=en,
            channel_zh=zh,
            kind=detection.kind,
            position=detection.position,
            cut=detection.cut,
        )
        logger.info(
            "session %r: possible text loop (%s, weak) on %s at %d (turn %d, attempt %d)",
            self._label,
            detection.kind,
            channel,
            detection.position,
            self._turn.number,
            self._attempt.number,
        )
        evidence = {"channel": channel, "position": detection.position, "cut": detection.cut}
        verdict = Verdict(
            "notice", "text_loop", reason, detection, evidence={**evidence, "strength": detection.strength}
        )
        events.text_verdict(self._sid, verdict, channel, "text_loop")
        if self._dump is not None:
            self._sample(verdict, "text_loop", channel)
        return verdict

    def _stop(self, detection: Detection | None, lane: _Lane, channel: str) -> Verdict:
        """The attempt's stop verdict (``cut``, or ``cancel`` when its strike completes the strikes).

        The other channel's pending deltas came before the stop: they are fed first (a stopped
        attempt records later deltas directly, after them)."""
        self._flush_all()
        en, zh = _CHANNEL_NAMES[channel]
        position = detection.position if detection is not None else lane.detector.length(channel)
        cut = detection.cut if detection is not None else position
        kind = detection.kind if detection is not None else "text"
        reason = messages.render(
            "text_loop", self._language(channel), channel=en, channel_zh=zh, kind=kind, position=position, cut=cut
        )
        evidence: dict[str, Any] = {"channel": channel, "position": position, "cut": cut}
        logger.info(
            "session %r: text loop (%s) on %s at %d, cut at %d (turn %d, attempt %d)",
            self._label,
            detection.kind if detection is not None else "?",
            channel,
            position,
            cut,
            self._turn.number,
            self._attempt.number,
        )
        verdict = Verdict("cut", "text_loop", reason, detection, evidence=evidence)
        if self.config.text_strikes:
            strike = self._guard.strike_unlogged(self._sid, "text_loop")  # recorded with this stop
            if strike is not None and strike.action == "cancel":
                merged = {**evidence, **strike.evidence}
                verdict = Verdict(
                    "cancel", strike.kind, reason + "\n" + strike.text, detection, (strike,), evidence=merged
                )
        self._attempt.stopped = verdict
        if self._state is _ATTEMPT:
            self._move(_STOPPED)
        # a live stream records what it does with the stop (it may resume instead of cancelling)
        events.text_verdict(self._sid, verdict, channel, "text_loop", to_log=self._live is None)
        if self._dump is not None:
            self._sample(verdict, "text_loop", channel)
        return verdict

    def _sample(self, verdict: Verdict, event: str, channel: str = "tool") -> None:
        """Offer an evidence sample of ``verdict`` (``Session(dump_dir=...)``): a text loop's with
        the channel's text, a tool decision's with its name, rule and numbers only.  Never raises:
        a failure is logged by type and counted as a failed sample."""
        try:
            said: Any = None
            if channel == "tool":
                said = verdict.decision or (verdict.interventions[0] if verdict.interventions else None)
            detection = verdict.detection
            evidence = dict(verdict.evidence)
            text: str | None = None
            chars = 0
            kind = verdict.kind or ""
            if channel != "tool":
                if detection is not None:
                    kind = str(detection.kind)
                    evidence.update(position=detection.position, cut=detection.cut, strength=detection.strength)
                text = self._attempt.record.text(channel)
                lane = self._attempt.lanes.get(channel)
                chars = lane.detector.length(channel) if lane is not None else len(text)
            fields = obs_log.decision_fields(
                event,
                "text" if channel != "tool" else "tool_guard",
                verdict.action,
                self._sid,
                rule=said.rule if said is not None else ("strikes" if verdict.kind == "strikes" else event),
                kind=kind,
                tool=said.tool if said is not None else "",
                channel=channel,
                call_index=said.call_index if said is not None else -1,
                evidence=evidence,
            )
            self._dump.offer(fields, self._turn.number, self._attempt.number, text, chars)
        except Exception as exc:
            from .observe import samples

            samples.failed(exc)

    def end_attempt(self) -> Verdict:
        """The model request ended: run the detectors' last checkpoint and record
        the attempt for the replay rule.

        Returns
        -------
        Verdict
            The attempt's stop verdict (``cut``/``cancel``, from :meth:`feed`
            or from the final checkpoint, which counts like a checkpoint in
            :meth:`feed`); else ``notice`` with ``kind="stall_nudge"`` (see
            :class:`SessionConfig`); else ``allow`` with ``kind="replay"`` when this
            attempt switched on replay mode (its signature equals the
            previous attempt's: the ``repeat`` limit is now 1); else ``allow``.
            ``allow`` when no attempt is open.

        An attempt whose text exceeded :data:`MAX_ATTEMPT_CHARS` or whose calls
        exceeded :data:`MAX_ATTEMPT_CALLS` is never treated as a replay.  A
        progress event.  Moves ``ATTEMPT`` / ``STOPPED`` to ``TURN``.

        Raises
        ------
        RuntimeError
            after :meth:`dispose`.
        """
        self._alive()
        if self._state is not _ATTEMPT and self._state is not _STOPPED:
            return _ALLOW
        self._flush_all()
        attempt = self._attempt
        self._finish_detectors(attempt)
        self._move(_TURN)
        self._turn.add(attempt.record)
        replay = self._observe(attempt.record)
        nudge = self._stall_nudge(attempt.record)
        attempt.record = AttemptRecorder(MAX_ATTEMPT_CHARS, MAX_ATTEMPT_CALLS)
        self._guard.note_progress(self._sid)
        if attempt.stopped is not None:
            return attempt.stopped
        if nudge is not None:
            return nudge
        if replay:
            logger.info("session %r: replay mode (turn %d, attempt %d)", self._label, self._turn.number, attempt.number)
            return Verdict("allow", "replay", evidence={"replay": True})
        return _ALLOW

    def _finish_detectors(self, attempt: _Attempt) -> None:
        """The detectors' last checkpoint; it can still stop the attempt."""
        for channel, lane in attempt.lanes.items():
            found = lane.detector.finish()
            if found:
                attempt.detections += found
            if attempt.stopped is None:
                verdict = self._judge(lane, channel, found)
                if verdict.stop:
                    attempt.stopped = verdict

    def _observe(self, record: AttemptRecorder) -> bool:
        """Hand the attempt to :meth:`ToolGuard.observe_attempt` (the replay rule)."""
        if record.overflowed:
            unique = f"\x00loopguard: unbounded attempt {next(_SERIAL)}"
            return self._guard.observe_attempt(self._sid, reasoning=unique)
        return self._guard.observe_attempt(
            self._sid, reasoning=record.text("reasoning"), text=record.text("text"), tool_calls=record.calls
        )

    def _stall_nudge(self, record: AttemptRecorder) -> Verdict | None:
        """The stall nudge, judged at the end of an attempt."""
        cfg, tally = self.config, self._tally
        if cfg.stall_calls == 0:
            return None
        if record.wrote_text or record.call_count or record.reasoning_chars < cfg.stall_min_reasoning_chars:
            tally.stall_streak = 0
            return None
        tally.stall_streak += 1
        if tally.stall_streak != cfg.stall_calls:
            return None  # one nudge per run of reasoning-only attempts
        if tally.nudges >= cfg.stall_nudge_max:
            logger.warning(
                "session %r: %d reasoning-only attempts in a row; nudge cap %d reached",
                self._label,
                tally.stall_streak,
                cfg.stall_nudge_max,
            )
            return None
        tally.nudges += 1
        logger.info(
            "session %r: %d reasoning-only attempts in a row: nudge %d of %d",
            self._label,
            tally.stall_streak,
            tally.nudges,
            cfg.stall_nudge_max,
        )
        verdict = Verdict(
            "notice",
            "stall_nudge",
            messages.render("stall_nudge", self._language("reasoning"), count=tally.stall_streak),
            evidence={
                "attempts": tally.stall_streak,
                "nudges": tally.nudges,
                "reasoning_chars": record.reasoning_chars,
            },
        )
        events.text_verdict(self._sid, verdict, "reasoning", "stall_nudge")
        return verdict

    # ---------------------------------------------------------- rescue state

    @property
    def consecutive_rescues(self) -> int:
        """Rescues in a row (``max_consecutive_rescues`` counts these); a normal completion resets it.

        With a :class:`~loopguard.RedisStore` the count is the shared one (every replica of the
        conversation counts into it); this object's own count when the store is unavailable."""
        shared = self._rescues("get")
        return self._tally.rescues if shared is None else shared

    def _rescues(self, op: str) -> int | None:
        """The rescue count in the guard's shared store after ``op`` (``"get"``, ``"incr"``,
        ``"zero"``: :meth:`loopguard.RedisStore.counter`); ``None`` in memory or without the store."""
        store = self._guard._remote
        if store is None:
            return None
        try:
            return store.counter(session_key(self._sid), "r", op)
        except StoreUnavailable:
            return None

    @property
    def retry_requests_left(self) -> int:
        """Requests that still use the retry settings after a rescue (``retry_requests``)."""
        return self._tally.retry_left

    def record_rescue(self, retry_requests: int) -> None:
        """A stream of this session was cut and will be resumed: one more rescue in a row, and
        the next ``retry_requests`` requests use the retry settings (:meth:`take_retry`)."""
        self._tally.rescues += 1
        self._tally.retry_left = retry_requests
        shared = self._rescues("incr")  # HINCRBY: two replicas rescuing at once count two
        if shared is not None:
            self._tally.rescues = shared

    def record_completion(self) -> None:
        """A stream of this session completed normally: the rescues in a row start again at 0
        (in the shared store too)."""
        self._tally.rescues = 0
        self._rescues("zero")

    def take_retry(self) -> bool:
        """Whether the next request uses the retry settings; counts it (one of
        :attr:`retry_requests_left`).  ``False`` when none is left."""
        if self._tally.retry_left > 0:
            self._tally.retry_left -= 1
            return True
        return False

    # ---------------------------------------------------------------- tools

    def note_tool_call(self, tool: str, args: Any) -> None:
        """A tool call the model *streamed* in the open attempt (complete, not yet run).

        It becomes part of the attempt's replay signature and counts as a call
        for the stall nudge; the guard decides about it when the host is about
        to run it (:meth:`tool_call`).  Does nothing when no attempt is open.

        Raises
        ------
        RuntimeError
            after :meth:`dispose`.
        """
        self._alive()
        if self._state is not _ATTEMPT and self._state is not _STOPPED:
            return
        if not self._attempt.record.add_call((tool, args)):
            self._overflowed("tool calls")

    def tool_call(self, tool: str, args: Any, *, call_id: Hashable | None = None) -> Verdict:
        """A tool call requested by the model, before it runs (:meth:`ToolGuard.before_call`).

        Parameters
        ----------
        tool : str
            The tool name.
        args : Any
            JSON-like arguments or a JSON string.
        call_id : hashable, optional
            The host's call id (a call seen twice with one id is decided once).

        Returns
        -------
        Verdict
            The decision's action (``allow`` | ``notice`` | ``deny`` |
            ``cancel``), kind and reason, with ``decision`` attached.

        Raises
        ------
        TypeError
            when ``tool`` is not a non-empty ``str`` (nothing is recorded).
        RuntimeError
            after :meth:`dispose`.

        Tools usually run after the model's request ended: the call belongs to
        the last attempt and does not start a new one.  While an attempt is
        open the call is part of its replay signature (unless the stream already
        reported it with :meth:`note_tool_call`), whatever the decision.  A
        progress event.
        """
        self._check_call(tool)
        return self._called(tool, args, self._guard.before_call(self._sid, tool, args, call_id=call_id))

    async def atool_call(self, tool: str, args: Any, *, call_id: Hashable | None = None) -> Verdict:
        """:meth:`tool_call` awaited (:meth:`ToolGuard.abefore_call`: ``redis.asyncio`` with a
        shared store, the event loop not blocked).  Same parameters, returns and errors."""
        self._check_call(tool)
        return self._called(tool, args, await self._guard.abefore_call(self._sid, tool, args, call_id=call_id))

    def _check_call(self, tool: Any) -> None:
        self._alive()
        if not isinstance(tool, str) or not tool:
            raise TypeError(f"tool must be a non-empty str, not {type(tool).__name__}")

    def _called(self, tool: str, args: Any, decision: Decision) -> Verdict:
        """The call recorded in the open attempt (once), and the decision as a verdict."""
        if (self._state is _ATTEMPT or self._state is _STOPPED) and (tool, args) not in self._attempt.record.calls:
            self.note_tool_call(tool, args)
        verdict = Verdict(
            decision.action, decision.kind, decision.reason, decision=decision, evidence=dict(decision.evidence)
        )
        if self._dump is not None and decision.action != "allow":
            self._sample(verdict, "tool_call")
        return verdict

    def _sampled(self, verdict: Verdict, event: str) -> Verdict:
        """``verdict``, sampled first when it is not ``allow`` and samples are on."""
        if self._dump is not None and verdict.action != "allow":
            self._sample(verdict, event)
        return verdict

    def tool_result(
        self, tool: str, args: Any, result: Any, *, error: bool = False, call_id: Hashable | None = None
    ) -> Verdict:
        """A tool's result (:meth:`ToolGuard.after_call`).

        Parameters
        ----------
        tool, args, call_id
            As for :meth:`tool_call`.
        result : str | bytes | JSON-like
            The tool's result.
        error : bool
            The tool failed.

        Returns
        -------
        Verdict
            ``cancel`` when an intervention cancels (``circuit_breaker``, ``strikes``),
            ``notice`` when there are interventions, else ``allow``; ``kind`` of the first
            cancelling (else the first) intervention, ``reason`` = their texts
            joined by newlines, ``interventions`` attached.

        Raises
        ------
        TypeError
            for a bad ``tool`` or a non-bool ``error``.
        RuntimeError
            after :meth:`dispose`.

        Does not start an attempt.  A progress event.
        """
        self._alive()
        found = self._guard.after_call(self._sid, tool, args, result, error=error, call_id=call_id)
        return self._sampled(_verdict(found), "tool_result")

    async def atool_result(
        self, tool: str, args: Any, result: Any, *, error: bool = False, call_id: Hashable | None = None
    ) -> Verdict:
        """:meth:`tool_result` awaited (:meth:`ToolGuard.aafter_call`).  Same parameters, returns
        and errors."""
        self._alive()
        found = await self._guard.aafter_call(self._sid, tool, args, result, error=error, call_id=call_id)
        return self._sampled(_verdict(found), "tool_result")

    # ------------------------------------------------------ stall, empty turns

    def check_stall(self) -> Verdict:
        """The ``stalled`` rule on the guard's clock (:meth:`ToolGuard.check_stall`).

        Returns
        -------
        Verdict
            ``notice`` with ``kind="stalled"`` after ``stall_minutes`` without a
            progress event (``stall_minutes_with_tool`` while a tool call is
            pending), once per stall; ``cancel`` when that strike completes
            ``strikes_before_cancel``; else ``allow``.  Call it from a timer.

        Raises
        ------
        RuntimeError
            after :meth:`dispose`.
        """
        self._alive()
        return self._sampled(_verdict(self._guard.check_stall(self._sid)), "stall")

    async def acheck_stall(self) -> Verdict:
        """:meth:`check_stall` awaited (:meth:`ToolGuard.acheck_stall`).  Same returns and errors."""
        self._alive()
        return self._sampled(_verdict(await self._guard.acheck_stall(self._sid)), "stall")

    def end_turn(self) -> Verdict:
        """The turn ended with the agent's final answer: the ``empty_turn`` rule (spec §3).

        The turn is empty when its attempts streamed reasoning (at least one
        code point) and no answer text with a non-whitespace character; tool
        calls do not matter (judged by structure only, no text is kept).
        ``empty_turn_limit`` consecutive empty turns (a normal turn resets the
        count) make a detection on this and every following empty turn.

        Returns
        -------
        Verdict
            On a detection, ``kind="empty_turn"`` and evidence ``count`` (the
            consecutive empty turns) and ``steers`` (used so far): with
            ``empty_turn_action="steer"``, ``notice`` with
            ``messages.render("empty_turn", lang, count=count)`` until
            ``empty_turn_steer_max`` steers were given in this session, then
            ``allow``; with ``"log"``, ``allow``.  ``allow`` (kind ``None``)
            otherwise, and when no turn is open (after :meth:`cancel` or a
            second :meth:`end_turn`).

        An open attempt is ended first (as :meth:`end_attempt`).  Moves to ``IDLE``.

        Raises
        ------
        RuntimeError
            after :meth:`dispose`.
        """
        self._alive()
        if self._state is _ATTEMPT or self._state is _STOPPED:
            self._implicit_end("end_turn")
        if self._state is not _TURN:
            return _ALLOW
        self._move(_IDLE)
        if self._hints is not None:
            self._hint_turn_end()
        if not self.config.empty_turn_detect:
            return _ALLOW
        tally = self._tally
        if self._turn.wrote_text or self._turn.reasoning == 0:
            tally.empty_streak = 0
            return _ALLOW
        tally.empty_streak += 1
        if tally.empty_streak < self.config.empty_turn_limit:
            logger.info(
                "session %r: empty turn %d (%d in a row, limit %d)",
                self._label,
                self._turn.number,
                tally.empty_streak,
                self.config.empty_turn_limit,
            )
            return _ALLOW
        return self._empty_turn(tally.empty_streak)

    def _empty_turn(self, count: int) -> Verdict:
        """The verdict of an ``empty_turn`` detection: a steer while any is left, else logged."""
        cfg, tally, turn = self.config, self._tally, self._turn.number
        if cfg.empty_turn_action == "steer" and tally.steers < cfg.empty_turn_steer_max:
            tally.steers += 1
            logger.info(
                "session %r: empty turn %d (%d in a row): steer %d of %d",
                self._label,
                turn,
                count,
                tally.steers,
                cfg.empty_turn_steer_max,
            )
            verdict = Verdict(
                "notice",
                "empty_turn",
                messages.render("empty_turn", self._language("reasoning"), count=count),
                evidence={"count": count, "steers": tally.steers},
            )
            events.text_verdict(self._sid, verdict, "reasoning", "empty_turn")
            return verdict
        if cfg.empty_turn_action == "steer":
            logger.warning(
                "session %r: empty turn %d (%d in a row): steer cap %d reached, logged only",
                self._label,
                turn,
                count,
                cfg.empty_turn_steer_max,
            )
        else:
            logger.warning("session %r: empty turn %d (%d in a row)", self._label, turn, count)
        verdict = Verdict("allow", "empty_turn", evidence={"count": count, "steers": tally.steers})
        events.text_verdict(self._sid, verdict, "reasoning", "empty_turn")
        return verdict

    def cancel(self, reason: str = "") -> None:
        """The host cancelled the turn (its own decision or a ``cut``/``cancel`` verdict).

        The open attempt is dropped (not recorded for the replay rule), and the turn ends
        without an ``empty_turn`` judgement (the empty-turn count is left as it was).
        ``reason`` goes to the log only.  Moves to ``IDLE``.

        Raises
        ------
        TypeError
            when ``reason`` is not a ``str``.
        RuntimeError
            after :meth:`dispose`.
        """
        self._alive()
        if not isinstance(reason, str):
            raise TypeError(f"reason must be a str, not {type(reason).__name__}")
        logger.info(
            "session %r: turn %d cancelled by the host%s",
            self._label,
            self._turn.number,
            f": {shown_name(reason, 200)}" if reason else "",  # redacted before its cut, one line
        )
        self._guard.cancel_pending(self._sid)  # pending calls will never report: stalled uses stall_minutes again
        attempt = self._attempt
        attempt.lanes = {}
        attempt.stopped = None
        attempt.record = AttemptRecorder(MAX_ATTEMPT_CHARS, MAX_ATTEMPT_CALLS)
        self._move(_IDLE)

    # ---------------------------------------------------------------- reset

    def reset(self) -> None:
        """Forget this session: its guard state (``guard.reset(session_id)``, other
        sessions of a shared guard are untouched), detectors, turn/attempt
        counters, the empty-turn count and steers, the rescue count.  Moves to ``IDLE``.

        Raises
        ------
        RuntimeError
            after :meth:`dispose`.
        """
        self._alive()
        self._guard.reset(self._sid)
        self._rescues("zero")
        self._forget()
        self._move(_IDLE)

    def dispose(self) -> None:
        """:meth:`reset`, then make every further call raise
        ``RuntimeError("session disposed")``.  Calling it twice is harmless."""
        if self._state is _DISPOSED:
            return
        self.reset()
        self._move(_DISPOSED)


def _text_config(value: TextConfig | str | None) -> TextConfig:
    if value is None:
        return TextConfig()
    if isinstance(value, str):
        return TextConfig(value)
    if not isinstance(value, TextConfig):
        raise TypeError(f"text_config must be a TextConfig, a profile name or None, not {type(value).__name__}")
    return value


def _session_config(value: SessionConfig | None) -> SessionConfig:
    if value is None:
        return SessionConfig()
    if not isinstance(value, SessionConfig):
        raise TypeError(f"config must be a SessionConfig or None, not {type(value).__name__}")
    return value


def _verdict(found: Sequence[Intervention] | Intervention | None) -> Verdict:
    """Interventions as a verdict: ``cancel`` when one cancels (``circuit_breaker``, ``strikes``),
    ``notice`` when there are any (kind of the first cancelling, else the first; their texts
    joined by newlines), else ``allow``."""
    out = (found,) if isinstance(found, Intervention) else tuple(found or ())
    if not out:
        return _ALLOW
    cancels = [i for i in out if i.action == "cancel"]
    action: Action = "cancel" if cancels else "notice"
    head = cancels[0] if cancels else out[0]
    return Verdict(action, head.kind, "\n".join(i.text for i in out), interventions=out, evidence=dict(head.evidence))


def _tool_guard(
    guard: ToolGuard | None,
    guard_config: ToolGuardConfig | Mapping[str, Any] | None,
    clock: Callable[[], float] | None,
    store: MemoryStore | RedisStore | None = None,
    on_store_error: str = "open",
) -> ToolGuard:
    if guard is None:
        if guard_config is not None and not isinstance(guard_config, (ToolGuardConfig, Mapping)):
            raise TypeError(
                f"guard_config must be a ToolGuardConfig, a mapping or None, not {type(guard_config).__name__}"
            )
        return ToolGuard(guard_config, clock=clock, store=store, on_store_error=on_store_error)
    if not isinstance(guard, ToolGuard):
        raise TypeError(f"guard must be a ToolGuard or None, not {type(guard).__name__}")
    if guard_config is not None or clock is not None or store is not None:
        raise ValueError("pass either guard or guard_config/clock/store, not both")
    return guard
