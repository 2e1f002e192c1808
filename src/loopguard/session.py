"""The session state machine hosts drive: one :class:`Session` per agent conversation (spec §0, §3, §5.2, §8).

A host reports what happens in a conversation and gets a :class:`Verdict`
back at every step::

    session = Session("chat-42")
    session.start_turn()                      # a user message arrived
    session.start_attempt()                   # a model request (step or retry)
    for channel, delta in stream:             # "reasoning" / "text" deltas
        verdict = session.feed(delta, channel)
        if verdict.stop:                      # "cut" or "cancel": stop the stream
            break
    session.end_attempt()                     # D1' replay bookkeeping
    verdict = session.tool_call(tool, args)   # before the tool runs
    if verdict.action in ("allow", "notice"):
        result = run(tool, args)
        verdict = session.tool_result(tool, args, result)
    ...
    verdict = session.end_turn()              # ⑤ empty turn

What each call does and which rule owns it:

* **Text loops** (spec §2, seeds 002 ①, 003): every attempt gets fresh
  :class:`~loopguard.text.TextLoopDetector` s, one per channel, created on
  the first delta of that channel.  :meth:`Session.feed` returns ``cut``
  once :meth:`~loopguard.text.TextLoopDetector.action_required` says so (C/P
  at their first hit, E/L/S at their ``fuse_hits_before_action``-th hit in
  the attempt, spec §2.6).  That stop is recorded once per attempt as a ③
  strike (``ToolGuard.strike(session_id, "text_loop")``, unless
  ``SessionConfig.text_strikes`` is off); when the strike completes
  ``strikes_before_cancel`` the verdict is ``cancel`` instead.  Once an
  attempt is stopped every further :meth:`Session.feed` of it returns the
  same stop verdict.
* **Tool calls** (spec §5.2, seed 001 D1–D5, I1–I5, seed 002 ②b):
  :meth:`Session.tool_call` / :meth:`Session.tool_result` wrap
  :meth:`ToolGuard.before_call` / :meth:`ToolGuard.after_call`.
* **D1' replay** (seed 001, ``agent/assistant-stream``):
  :meth:`Session.end_attempt` hands the attempt's reasoning, answer text and
  tool calls to :meth:`ToolGuard.observe_attempt`, which owns the rule.  To
  bound memory, the session keeps an attempt's text only while reasoning +
  text stay within :data:`MAX_ATTEMPT_CHARS` (1_000_000 code points) and
  its tool calls within :data:`MAX_ATTEMPT_CALLS` (1024); a longer attempt
  is **never treated as a replay** (it is reported to the guard as a
  unique attempt, which also ends any replay streak).
* **Stall nudge** (seed 003): :meth:`Session.end_attempt` returns ``notice``
  (``kind="stall_nudge"``) after ``stall_calls`` reasoning-only attempts in
  a row, at most ``stall_nudge_max`` times per session.
* **② stall** and **③ strikes** (seed 002): :meth:`Session.check_stall`;
  progress events are :meth:`start_attempt`, every :meth:`feed`,
  :meth:`end_attempt`, :meth:`tool_call` and :meth:`tool_result`.
* **⑤ empty turn** (seed 002, spec §3): :meth:`Session.end_turn` judges the
  turn by structure only: reasoning was streamed and the answer text has no
  non-whitespace character.
* Tool-guard state (D1 counts, strikes, …) belongs to the session and
  survives :meth:`start_turn` (seed 001: counts are not cleared by new user
  messages); :meth:`Session.reset` forgets it.

Implicit steps: :meth:`feed` and :meth:`start_attempt` start a turn when
none is open; :meth:`feed` starts an attempt when none is open (a tool call
runs after its request ended and belongs to the last attempt); :meth:`start_attempt` and :meth:`end_turn` end an
open attempt first (as :meth:`end_attempt`, its verdict is then only
logged: call :meth:`end_attempt` yourself to see it).

Not thread-safe: a session serves one conversation, driven by one task at a
time.  Several sessions may share one (thread-safe) :class:`ToolGuard`.
Positions are Unicode code points (Python ``str`` indices) into the
channel text of one attempt.  Logging goes to the ``"loopguard.session"``
logger; arguments, results and model text are never logged.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from . import messages
from .config import TextConfig
from .errors import ConfigError
from .guard import Decision, Intervention, ToolGuard, ToolGuardConfig
from .redact import redact_secrets
from .text import CHANNELS, Detection, TextLoopDetector

__all__ = [
    "MAX_ATTEMPT_CALLS",
    "MAX_ATTEMPT_CHARS",
    "VERDICT_ACTIONS",
    "Session",
    "SessionConfig",
    "Verdict",
]

logger = logging.getLogger("loopguard.session")

#: The actions a :class:`Verdict` can carry, from mildest to strongest.
VERDICT_ACTIONS = ("allow", "notice", "deny", "cut", "cancel")

#: An attempt whose reasoning + text exceed this many code points is not kept
#: for the D1' signature (and is never treated as a replay).
MAX_ATTEMPT_CHARS = 1_000_000

#: An attempt with more tool calls than this is not kept for the D1'
#: signature (and is never treated as a replay).
MAX_ATTEMPT_CALLS = 1024

#: Code points per channel kept from the start of a turn to pick the language
#: of the session's own messages (``language="auto"``).
LANG_SAMPLE_CHARS = 2000

_BIG = 1_000_000
_RESCUE_KINDS = frozenset({"cycle", "pool", "near_cycle", "salad"})
_CHANNEL_NAMES = {"reasoning": ("reasoning", "推理"), "text": ("answer", "正文")}
_SERIAL = itertools.count(1)

Action = Literal["allow", "notice", "deny", "cut", "cancel"]


@dataclass(frozen=True)
class SessionConfig:
    """Keys of the session state machine (spec §3; seed 002 ③ and ⑤).

    Parameters
    ----------
    empty_turn_limit : int
        ⑤: this many consecutive empty turns (reasoning, zero answer text)
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
        ⑤ on/off (default True).
    text_strikes : bool
        A text loop that stops an attempt counts as a ③ strike
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

    def __post_init__(self) -> None:
        for key, lo in (
            ("empty_turn_limit", 1),
            ("empty_turn_steer_max", 0),
            ("stall_calls", 0),
            ("stall_min_reasoning_chars", 0),
            ("stall_nudge_max", 0),
            ("text_notice_checkpoints", 1),
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
        (D1' replay mode switched on, with ``allow``) or ``"empty_turn"``;
        ``None`` when nothing happened.  An ``allow`` with a kind is
        informational (logged, nothing to do).
    reason : str
        The text for the model (``[loopguard] …``) for ``notice``, ``deny``,
        ``cut`` and ``cancel``; ``""`` for ``allow``.
    detection : Detection | None
        The text detection behind a ``text_loop`` verdict (positions in code
        points of that channel's text in this attempt).
    interventions : tuple[Intervention, ...]
        The guard's interventions (after a tool result, a ③ strike, a ②
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


class Session:
    """The state machine of one agent conversation (spec §0; seeds 001, 002, 003).

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
        Time source of the new guard (② stall, ③ strike window); default
        ``time.monotonic``.  Only without ``guard``.

    Raises
    ------
    TypeError
        for a config of the wrong type.
    ValueError
        when ``guard`` is given together with ``guard_config`` or ``clock``.
    ConfigError
        for an invalid ``guard_config`` mapping.

    Notes
    -----
    Not thread-safe (one session per conversation).  Memory per session:
    the current attempt's detectors (bounded by the text config), at most
    :data:`MAX_ATTEMPT_CHARS` code points of the attempt's text and
    :data:`MAX_ATTEMPT_CALLS` tool-call references for D1', and
    :data:`LANG_SAMPLE_CHARS` per channel of the turn's start for language
    picking; see :attr:`retained_chars`.

    Examples
    --------
    >>> s = Session("demo")
    >>> s.start_turn()
    >>> verdicts = [s.feed("Wait, let me recheck the sum. ", "reasoning") for _ in range(40)]
    >>> next(v for v in verdicts if v.stop).action, verdicts[-1].detection.kind
    ('cut', 'cycle')
    >>> s.end_attempt().action
    'cut'
    >>> s.tool_call("grep", {"pattern": "x", "path": "src"}).action
    'allow'
    """

    def __init__(
        self,
        session_id: Any = "default",
        *,
        text_config: TextConfig | str | None = None,
        guard: ToolGuard | None = None,
        guard_config: ToolGuardConfig | Mapping[str, Any] | None = None,
        config: SessionConfig | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        if text_config is None:
            text_config = TextConfig()
        elif isinstance(text_config, str):
            text_config = TextConfig(text_config)
        elif not isinstance(text_config, TextConfig):
            raise TypeError(
                f"text_config must be a TextConfig, a profile name or None, not {type(text_config).__name__}"
            )
        if config is None:
            config = SessionConfig()
        elif not isinstance(config, SessionConfig):
            raise TypeError(f"config must be a SessionConfig or None, not {type(config).__name__}")
        if guard is None:
            if guard_config is not None and not isinstance(guard_config, (ToolGuardConfig, Mapping)):
                raise TypeError(
                    f"guard_config must be a ToolGuardConfig, a mapping or None, not {type(guard_config).__name__}"
                )
            guard = ToolGuard(guard_config, clock=time.monotonic if clock is None else clock)
        elif not isinstance(guard, ToolGuard):
            raise TypeError(f"guard must be a ToolGuard or None, not {type(guard).__name__}")
        elif guard_config is not None or clock is not None:
            raise ValueError("pass either guard or guard_config/clock, not both")
        self._sid = session_id
        self._guard = guard
        self.text_config: TextConfig = text_config
        self.config: SessionConfig = config
        self._disposed = False
        self._forget()

    def __repr__(self) -> str:
        return f"Session({self._sid!r}, turn={self._turn}, attempt={self._attempt})"

    # ---------------------------------------------------------------- state

    def _forget(self) -> None:
        """Reset every counter and buffer of this session (not the guard)."""
        self._turn = 0
        self._attempt = 0
        self._turn_open = False
        self._empty_streak = 0
        self._steers = 0
        self._turn_reasoning = 0
        self._turn_text = False
        self._samples: dict[str, str] = {}
        self._stall_streak = 0  # seed 003: reasoning-only attempts in a row
        self._nudges = 0
        self._live_stream: Any = None  # the StreamGuard feeding this session (loopguard.stream)
        self._rescues = 0  # seed 003: consecutive rescues (loopguard.stream)
        self._progress_noted = float("-inf")  # the guard's clock at the last progress note from feed()
        self._retry_left = 0  # requests that still use the retry settings
        self._attempt_open = False
        self._detectors: dict[str, TextLoopDetector] = {}
        self._detections: list[Detection] = []
        self._noticed: dict[str, Detection] = {}  # per channel: the weak episode last noticed
        self._stopped: Verdict | None = None
        self._clear_buffers()

    def _clear_buffers(self) -> None:
        self._attempt_reasoning = 0  # code points of reasoning in the open attempt
        self._attempt_text = False  # the open attempt wrote answer text
        self._attempt_calls = 0
        self._chunks: dict[str, list[str]] = {"reasoning": [], "text": []}
        self._kept = 0  # code points in _chunks
        self._calls: list[tuple[str, Any]] = []
        self._overflow = False

    def _alive(self) -> None:
        if self._disposed:
            raise RuntimeError("session disposed")

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
        return list(self._detections)

    @property
    def turn(self) -> int:
        """Turns started in this session (explicitly or implicitly); 0 before the first."""
        return self._turn

    @property
    def attempt(self) -> int:
        """Attempts started in the current turn; 0 before the first."""
        return self._attempt

    @property
    def retained_chars(self) -> int:
        """Code points of caller text this session holds: the current attempt's
        text kept for D1' (``<= MAX_ATTEMPT_CHARS``, 0 once the attempt ended or
        overflowed) plus the language samples (``<= LANG_SAMPLE_CHARS`` per
        channel).  The detectors' own windows are bounded by the text config
        and not counted here."""
        return self._kept + sum(len(s) for s in self._samples.values())

    # ---------------------------------------------------------------- turns

    def start_turn(self) -> None:
        """A new user message: a new turn (spec §0).

        An open attempt is ended first (as :meth:`end_attempt`); an open turn
        is abandoned without a ⑤ judgement.  The guard's state (D1 counts,
        locks, strikes, replay mode) is kept: seed 001 does not clear counts on
        new user messages.

        Raises
        ------
        RuntimeError
            after :meth:`dispose`.
        """
        self._alive()
        if self._attempt_open:
            self._implicit_end("start_turn")
        self._turn += 1
        self._turn_open = True
        self._attempt = 0
        self._rescues = self._retry_left = 0  # a new user message: the rescue budget starts again
        self._turn_reasoning = 0
        self._turn_text = False
        self._samples = {}

    def start_attempt(self) -> None:
        """A new model request (a step or a retry) of the current turn.

        Starts a turn if none is open, ends an open attempt first (as
        :meth:`end_attempt`), then gives the attempt fresh text detectors and
        empty D1' buffers.  A progress event (② stall).

        Raises
        ------
        RuntimeError
            after :meth:`dispose`.
        """
        self._alive()
        if self._attempt_open:
            self._implicit_end("start_attempt")
        if not self._turn_open:
            self.start_turn()
        self._attempt += 1
        self._attempt_open = True
        self._detectors = {}
        self._detections = []
        self._noticed = {}
        self._stopped = None
        self._clear_buffers()
        self._guard.note_progress(self._sid)

    def _implicit_end(self, by: str) -> None:
        verdict = self.end_attempt()
        if verdict.kind is not None:
            logger.info(
                "session %r: %s ended the open attempt implicitly: %s %s", self._sid, by, verdict.action, verdict.kind
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
            ``cut`` (kind ``"text_loop"``, with the acting
            :class:`~loopguard.Detection`) when the attempt's detectors call
            for action; ``cancel`` (kind ``"strikes"``) when that text loop's
            ③ strike completes ``strikes_before_cancel``; once stopped, the
            attempt's stop verdict again on every further delta.  Otherwise
            ``allow`` (kind ``"text_loop"`` and the detection when a detector
            reported without calling for action yet, e.g. a first E/L/S hit).

        Raises
        ------
        TypeError
            when ``delta`` is not a ``str`` (nothing is recorded).
        ValueError
            for a channel other than ``"reasoning"`` / ``"text"`` (nothing is
            recorded).
        RuntimeError
            after :meth:`dispose`.

        Starts an attempt (and a turn) if none is open.  A progress event.
        """
        self._alive()
        if not isinstance(delta, str):
            raise TypeError(f"delta must be str, not {type(delta).__name__}")
        channel = _check_channel(channel)
        if not self._attempt_open:
            self.start_attempt()
        now = self._guard.clock()
        if now - self._progress_noted >= 1.0:  # ② counts minutes: one note a second is plenty
            self._progress_noted = now
            self._guard.note_progress(self._sid)
        self._record_text(delta, channel)
        if self._stopped is not None:
            return self._stopped
        detector = self._detectors.get(channel)
        if detector is None:
            detector = self._detectors[channel] = TextLoopDetector(self.text_config)
        found = detector.feed(delta, channel)
        if found:
            self._detections += found
        return self._judge(detector, channel, found)

    def _record_text(self, delta: str, channel: str) -> None:
        n = len(delta)
        if channel == "reasoning":
            self._turn_reasoning += n
            self._attempt_reasoning += n
        elif n and not self._attempt_text and not delta.isspace():
            self._turn_text = self._attempt_text = True
        sample = self._samples.get(channel, "")
        if len(sample) < LANG_SAMPLE_CHARS and n:
            self._samples[channel] = sample + delta[: LANG_SAMPLE_CHARS - len(sample)]
        if self._overflow or not n:
            return
        if self._kept + n > MAX_ATTEMPT_CHARS:
            self._overflow_now("text")
            return
        parts = self._chunks[channel]
        parts.append(delta)
        if len(parts) >= 512:  # one string per 512 deltas keeps memory near 1 byte per character
            parts[:] = ["".join(parts)]
        self._kept += n

    def _overflow_now(self, what: str) -> None:
        logger.info(
            "session %r: attempt %d/%d exceeds the D1' bound (%s); not a replay candidate",
            self._sid,
            self._turn,
            self._attempt,
            what,
        )
        self._chunks = {"reasoning": [], "text": []}
        self._calls = []
        self._kept = 0
        self._overflow = True

    def _judge(self, detector: TextLoopDetector, channel: str, found: list[Detection]) -> Verdict:
        if not detector.action_required(channel):
            weak = detector.weak_episode(channel)
            if (
                weak is not None
                and weak is not self._noticed.get(channel)
                and detector.weak_checkpoints(channel) >= self.config.text_notice_checkpoints
            ):
                self._noticed[channel] = weak  # one notice per weak episode
                return self._notice(weak, channel)
            if not found:
                return _ALLOW
            return Verdict("allow", "text_loop", detection=found[-1])
        candidates = [d for d in found if d.channel == channel] or [d for d in self._detections if d.channel == channel]
        acting = next(
            (d for d in candidates if d.kind in _RESCUE_KINDS and d.strong), candidates[-1] if candidates else None
        )
        return self._stop(acting, channel)

    def _notice(self, detection: Detection, channel: str) -> Verdict:
        """A weak detection (spec §2.7): go on, tell the model; a strong one of the same loop cuts."""
        lang = messages.pick_language(self._guard.config.language, self._samples.get(channel, ""))
        en, zh = _CHANNEL_NAMES[channel]
        reason = messages.render(
            "text_loop_notice",
            lang,
            channel=en,
            channel_zh=zh,
            kind=detection.kind,
            position=detection.position,
            cut=detection.cut,
        )
        logger.info(
            "session %r: possible text loop (%s, weak) on %s at %d (turn %d, attempt %d)",
            self._sid,
            detection.kind,
            channel,
            detection.position,
            self._turn,
            self._attempt,
        )
        return Verdict(
            "notice",
            "text_loop",
            reason,
            detection,
            evidence={
                "channel": channel,
                "position": detection.position,
                "cut": detection.cut,
                "strength": detection.strength,
            },
        )

    def _stop(self, detection: Detection | None, channel: str) -> Verdict:
        lang = messages.pick_language(self._guard.config.language, self._samples.get(channel, ""))
        en, zh = _CHANNEL_NAMES[channel]
        position = detection.position if detection is not None else self._detectors[channel].length(channel)
        cut = detection.cut if detection is not None else position
        reason = messages.render(
            "text_loop",
            lang,
            channel=en,
            channel_zh=zh,
            kind=detection.kind if detection is not None else "text",
            position=position,
            cut=cut,
        )
        evidence: dict[str, Any] = {"channel": channel, "position": position, "cut": cut}
        logger.warning(
            "session %r: text loop (%s) on %s at %d, cut at %d (turn %d, attempt %d)",
            self._sid,
            detection.kind if detection is not None else "?",
            channel,
            position,
            cut,
            self._turn,
            self._attempt,
        )
        verdict = Verdict("cut", "text_loop", reason, detection, evidence=evidence)
        if self.config.text_strikes:
            strike = self._guard.strike(self._sid, "text_loop")
            if strike is not None and strike.action == "cancel":
                verdict = Verdict(
                    "cancel",
                    strike.kind,
                    reason + "\n" + strike.text,
                    detection,
                    (strike,),
                    evidence={**evidence, **strike.evidence},
                )
        self._stopped = verdict
        return verdict

    def end_attempt(self) -> Verdict:
        """The model request ended: run the detectors' last checkpoint and record
        the attempt for D1' (seed 001 ``agent/assistant-stream``).

        Returns
        -------
        Verdict
            The attempt's stop verdict (``cut``/``cancel``, from :meth:`feed`
            or from the final checkpoint, which counts like a checkpoint in
            :meth:`feed`); else ``allow`` with ``kind="replay"`` when this
            attempt switched on D1' replay mode (its signature equals the
            previous attempt's: the D1 limit is now 1); else ``allow``.
            ``allow`` when no attempt is open.

        An attempt whose text exceeded :data:`MAX_ATTEMPT_CHARS` or whose calls
        exceeded :data:`MAX_ATTEMPT_CALLS` is never treated as a replay.  A
        progress event.

        Raises
        ------
        RuntimeError
            after :meth:`dispose`.
        """
        self._alive()
        if not self._attempt_open:
            return _ALLOW
        self._attempt_open = False
        for channel, detector in self._detectors.items():
            found = detector.finish()
            if found:
                self._detections += found
            if self._stopped is None:
                verdict = self._judge(detector, channel, found)
                if verdict.stop:
                    self._stopped = verdict
        if self._overflow:
            replay = self._guard.observe_attempt(
                self._sid, reasoning=f"\x00loopguard: unbounded attempt {next(_SERIAL)}"
            )
        else:
            replay = self._guard.observe_attempt(
                self._sid,
                reasoning="".join(self._chunks["reasoning"]),
                text="".join(self._chunks["text"]),
                tool_calls=self._calls,
            )
        nudge = self._stall_nudge()
        self._clear_buffers()
        self._guard.note_progress(self._sid)
        if self._stopped is not None:
            return self._stopped
        if nudge is not None:
            return nudge
        if replay:
            logger.info("session %r: D1' replay mode (turn %d, attempt %d)", self._sid, self._turn, self._attempt)
            return Verdict("allow", "replay", evidence={"replay": True})
        return _ALLOW

    def _stall_nudge(self) -> Verdict | None:
        """Seed 003 stall nudge, judged at the end of an attempt."""
        cfg = self.config
        if cfg.stall_calls == 0:
            return None
        if self._attempt_text or self._attempt_calls or self._attempt_reasoning < cfg.stall_min_reasoning_chars:
            self._stall_streak = 0
            return None
        self._stall_streak += 1
        if self._stall_streak != cfg.stall_calls:
            return None  # one nudge per run of reasoning-only attempts
        if self._nudges >= cfg.stall_nudge_max:
            logger.warning(
                "session %r: %d reasoning-only attempts in a row; nudge cap %d reached",
                self._sid,
                self._stall_streak,
                cfg.stall_nudge_max,
            )
            return None
        self._nudges += 1
        lang = messages.pick_language(self._guard.config.language, self._samples.get("reasoning", ""))
        logger.warning(
            "session %r: %d reasoning-only attempts in a row: nudge %d of %d",
            self._sid,
            self._stall_streak,
            self._nudges,
            cfg.stall_nudge_max,
        )
        return Verdict(
            "notice",
            "stall_nudge",
            messages.render("stall_nudge", lang, count=self._stall_streak),
            evidence={
                "attempts": self._stall_streak,
                "nudges": self._nudges,
                "reasoning_chars": self._attempt_reasoning,
            },
        )

    # ---------------------------------------------------------- rescue state

    @property
    def consecutive_rescues(self) -> int:
        """Rescues in a row (seed 003 ``maxConsecutiveRescues``); a normal completion resets it."""
        return self._rescues

    @property
    def retry_requests_left(self) -> int:
        """Requests that still use the retry settings after a rescue (seed 003 ``retryRequests``)."""
        return self._retry_left

    def _record_rescue(self, retry_requests: int) -> None:
        self._rescues += 1
        self._retry_left = retry_requests

    def _record_completion(self) -> None:
        self._rescues = 0

    def _take_retry(self) -> bool:
        """Whether the next request uses the retry settings (counts it)."""
        if self._retry_left > 0:
            self._retry_left -= 1
            return True
        return False

    # ---------------------------------------------------------------- tools

    def note_tool_call(self, tool: str, args: Any) -> None:
        """A tool call the model *streamed* in the open attempt (complete, not yet run).

        It becomes part of the attempt's D1' signature and counts as a call
        for the stall nudge; the guard decides about it when the host is about
        to run it (:meth:`tool_call`).  Does nothing when no attempt is open.
        """
        self._alive()
        if not self._attempt_open:
            return
        self._attempt_calls += 1
        if not self._overflow:
            if len(self._calls) >= MAX_ATTEMPT_CALLS:
                self._overflow_now("tool calls")
            else:
                self._calls.append((tool, args))

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
        open the call is part of its D1' signature (unless the stream already
        reported it with :meth:`note_tool_call`), whatever the decision.  A
        progress event.
        """
        self._alive()
        if not isinstance(tool, str) or not tool:
            raise TypeError(f"tool must be a non-empty str, not {type(tool).__name__}")
        decision = self._guard.before_call(self._sid, tool, args, call_id=call_id)
        if self._attempt_open and (tool, args) not in self._calls:
            self.note_tool_call(tool, args)
        return Verdict(
            decision.action, decision.kind, decision.reason, decision=decision, evidence=dict(decision.evidence)
        )

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
            ``cancel`` when an intervention cancels (I5, ③), ``notice`` when
            there are interventions, else ``allow``; ``kind`` of the first
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
        out = tuple(self._guard.after_call(self._sid, tool, args, result, error=error, call_id=call_id))
        if not out:
            return _ALLOW
        cancels = [i for i in out if i.action == "cancel"]
        action: Action = "cancel" if cancels else "notice"
        head = cancels[0] if cancels else out[0]
        return Verdict(
            action, head.kind, "\n".join(i.text for i in out), interventions=out, evidence=dict(head.evidence)
        )

    # ------------------------------------------------------ ② stall, ⑤ turns

    def check_stall(self) -> Verdict:
        """② stall on the guard's clock (:meth:`ToolGuard.check_stall`; seed 002).

        Returns
        -------
        Verdict
            ``notice`` with ``kind="stalled"`` after ``stall_minutes`` without a
            progress event (``stall_minutes_with_tool`` while a tool call is
            pending), once per stall; ``cancel`` when that ③ strike completes
            ``strikes_before_cancel``; else ``allow``.  Call it from a timer.

        Raises
        ------
        RuntimeError
            after :meth:`dispose`.
        """
        self._alive()
        found = self._guard.check_stall(self._sid)
        if found is None:
            return _ALLOW
        return Verdict(found.action, found.kind, found.text, interventions=(found,), evidence=dict(found.evidence))

    def end_turn(self) -> Verdict:
        """The turn ended with the agent's final answer: ⑤ empty turn (seed 002, spec §3).

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

        An open attempt is ended first (as :meth:`end_attempt`).

        Raises
        ------
        RuntimeError
            after :meth:`dispose`.
        """
        self._alive()
        if self._attempt_open:
            self._implicit_end("end_turn")
        if not self._turn_open:
            return _ALLOW
        self._turn_open = False
        if not self.config.empty_turn_detect:
            return _ALLOW
        if self._turn_text or self._turn_reasoning == 0:
            self._empty_streak = 0
            return _ALLOW
        self._empty_streak += 1
        count = self._empty_streak
        if count < self.config.empty_turn_limit:
            logger.info(
                "session %r: empty turn %d (%d in a row, limit %d)",
                self._sid,
                self._turn,
                count,
                self.config.empty_turn_limit,
            )
            return _ALLOW
        cfg = self.config
        if cfg.empty_turn_action == "steer" and self._steers < cfg.empty_turn_steer_max:
            self._steers += 1
            lang = messages.pick_language(self._guard.config.language, self._samples.get("reasoning", ""))
            logger.warning(
                "session %r: empty turn %d (%d in a row): steer %d of %d",
                self._sid,
                self._turn,
                count,
                self._steers,
                cfg.empty_turn_steer_max,
            )
            return Verdict(
                "notice",
                "empty_turn",
                messages.render("empty_turn", lang, count=count),
                evidence={"count": count, "steers": self._steers},
            )
        if cfg.empty_turn_action == "steer":
            logger.warning(
                "session %r: empty turn %d (%d in a row): steer cap %d reached, logged only",
                self._sid,
                self._turn,
                count,
                cfg.empty_turn_steer_max,
            )
        else:
            logger.warning("session %r: empty turn %d (%d in a row)", self._sid, self._turn, count)
        return Verdict("allow", "empty_turn", evidence={"count": count, "steers": self._steers})

    def cancel(self, reason: str = "") -> None:
        """The host cancelled the turn (its own decision or a ``cut``/``cancel`` verdict).

        The open attempt is dropped (not recorded for D1'), and the turn ends
        without a ⑤ judgement (the empty-turn count is left as it was).
        ``reason`` goes to the log only.

        Raises
        ------
        RuntimeError
            after :meth:`dispose`.
        """
        self._alive()
        if not isinstance(reason, str):
            raise TypeError(f"reason must be a str, not {type(reason).__name__}")
        logger.info(
            "session %r: turn %d cancelled by the host%s",
            self._sid,
            self._turn,
            f": {redact_secrets(reason)[:200]}" if reason else "",
        )
        self._guard.cancel_pending(self._sid)  # pending calls will never report: ② uses stall_minutes again
        self._attempt_open = False
        self._detectors = {}
        self._stopped = None
        self._clear_buffers()
        self._turn_open = False

    # ---------------------------------------------------------------- reset

    def reset(self) -> None:
        """Forget this session: its guard state (``guard.reset(session_id)``, other
        sessions of a shared guard are untouched), detectors, turn/attempt
        counters, the ⑤ count and steers.

        Raises
        ------
        RuntimeError
            after :meth:`dispose`.
        """
        self._alive()
        self._guard.reset(self._sid)
        self._forget()

    def dispose(self) -> None:
        """:meth:`reset`, then make every further call raise
        ``RuntimeError("session disposed")``.  Calling it twice is harmless."""
        if self._disposed:
            return
        self.reset()
        self._disposed = True
