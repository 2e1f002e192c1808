"""StreamGuard: cut, prune and rescue one model stream (docs/spec.md §2.6, §3).

A :class:`StreamGuard` watches one attempt (one model request) of a
:class:`~loopguard.Session`.  Host adapters (:mod:`loopguard.integrations`)
turn whatever their SDK streams into these normalised events and ask the
guard what to do after each chunk:

* :meth:`StreamGuard.reasoning` / :meth:`StreamGuard.text` — a delta of a
  channel; fed to the session's text detectors;
* :meth:`StreamGuard.tool_start` / :meth:`StreamGuard.tool_args` /
  :meth:`StreamGuard.tool_end` — a tool call streamed in pieces, keyed by
  whatever the format uses (an index, an item id); :meth:`StreamGuard.close_open_calls`
  when the format says every call is complete; :meth:`StreamGuard.has_tool_call` tells
  whether a key started one;
* :meth:`StreamGuard.note_finish_reason` — the upstream's own finish reason;
* :meth:`StreamGuard.finish` — the stream ended (or :meth:`StreamGuard.fail`
  when the upstream raised).

Each event returns an :class:`Action`: ``CONTINUE``, ``STOP_BEFORE`` (do not
pass the current chunk on; stop) or ``STOP_AFTER`` (pass it on, then stop).

Policy (``StreamConfig``; ``docs/rules.md`` maps these rules to the seed documents):

* ``mode="observe"`` — detections are recorded, nothing is ever stopped or
  altered; ``mode="cut"`` — the stream is stopped at the checkpoint that
  calls for action (spec §2.6: ``cycle``, ``pool`` and ``salad`` at their first
  hit, ``near_cycle`` at its first strong detection, the fuse kinds
  ``exact_tail``, ``lowdiv_tail``, ``lowdiv_sliding`` at their
  ``fuse_hits_before_action``-th hit) and the loop pruned from the outcome;
  ``mode="rescue"`` (default) — the same, and the outcome says the host
  should resume (:func:`loopguard.integrations.openai.resume_messages`).
* **Open tool call** (spec §2.6): while a tool call is open the cut is deferred
  until every open call closes (``STOP_AFTER``: the closing chunk is passed
  on and the calls are whole); text and calls that arrive meanwhile are
  passed on and recorded (not analysed).  A stream that ends first is pruned
  without resume.  A half call is never in the outcome.
* **Prune**: the cut channel keeps ``original[:cut]`` (``cut`` from the
  detection, code points) plus, with ``marker=True``, one line
  ``〔N chars of repeated reasoning removed〕`` (``text`` for the answer;
  Chinese forms when ``language`` picks zh), ``N = len(original) - cut``
  where ``original`` is everything the guard saw of that channel.  The other
  channel is kept as streamed.
* **Rescue cap**: ``max_consecutive_rescues`` (3) rescues in a row; a normal
  completion resets the count; past the cap the stream is cut without
  resume and ``outcome.cancelled`` is set (adapters raise
  :class:`LoopGuardCancelled` with ``on_rescue_cap="raise"``).  In rescue
  mode this cap, not the ``strikes`` rule, decides when to give up on a
  looping stream (each text loop is still a strike for the guard); in cut
  mode a strikes ``cancel`` sets ``outcome.cancelled``.

Lifecycle (:class:`StreamState`, :attr:`StreamGuard.state`)::

    WATCHING --stop verdict, no call open--> STOPPED
    WATCHING --stop verdict, a call open--> DEFERRED --last open call closes--> STOPPED
    WATCHING --another stream on the session, or an internal error--> PASSTHROUGH
    any --finish() / fail()--> FINISHED

The guard never raises from its own logic into the host's stream: an
internal error is logged and the guard turns itself into a pass-through for
the rest of the stream (``outcome.guard_error`` names it).
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal

from . import messages
from .attempts import JOIN_EVERY, AttemptRecorder
from .errors import ConfigError, reduce_cancelled
from .observe import events
from .session import _ALLOW, Session, Verdict
from .text import Detection

__all__ = [
    "Action",
    "LoopGuardCancelled",
    "StreamConfig",
    "StreamGuard",
    "StreamOutcome",
    "StreamState",
    "StreamToolCall",
    "MODES",
]

logger = logging.getLogger("loopguard.stream")

MODES = ("observe", "cut", "rescue")


class Action(enum.Enum):
    """What an adapter does with the chunk that carried an event."""

    CONTINUE = "continue"
    STOP_BEFORE = "stop_before"  # drop this chunk, stop
    STOP_AFTER = "stop_after"  # pass this chunk on, then stop

    @property
    def stop(self) -> bool:
        return self is not Action.CONTINUE


@dataclass(frozen=True)
class StreamConfig:
    """Stream policy keys (spec §3), validated at construction.

    Parameters
    ----------
    mode : str
        ``"observe"`` | ``"cut"`` | ``"rescue"`` (default).
    marker : bool
        Leave one marker line where the loop was pruned (default True).
    language : str
        ``"auto"`` (zh when most of the kept text is CJK) | ``"en"`` | ``"zh"``.
    max_consecutive_rescues : int
        Rescues in a row before the stream is cut without resume (default 3, >= 0).
    on_rescue_cap : str
        ``"return"`` (default: ``outcome.cancelled``) or ``"raise"``
        (:class:`LoopGuardCancelled` from the adapter).
    retry_temperature : float | None
        Temperature for the resume request(s) (default 1.0; ``None`` = unchanged).
    retry_reasoning_effort : str | None
        ``reasoning_effort`` for the resume request(s) (default ``"low"``; ``None`` = unchanged).
    retry_requests : int
        How many requests after a rescue use the two settings above (default 1, >= 0).

    Raises
    ------
    ConfigError
        naming the key, the value and the rule.

    Examples
    --------
    >>> StreamConfig().mode, StreamConfig(mode="cut").mode
    ('rescue', 'cut')
    >>> StreamConfig(mode="stop")
    Traceback (most recent call last):
    ...
    loopguard.errors.ConfigError: StreamConfig: mode='stop' is invalid: must be one of observe, cut, rescue
    """

    mode: Literal["observe", "cut", "rescue"] = "rescue"
    marker: bool = True
    language: Literal["auto", "en", "zh"] = "auto"
    max_consecutive_rescues: int = 3
    on_rescue_cap: Literal["return", "raise"] = "return"
    retry_temperature: float | None = 1.0
    retry_reasoning_effort: str | None = "low"
    retry_requests: int = 1

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ConfigError("mode", self.mode, "one of " + ", ".join(MODES), owner="StreamConfig")
        if not isinstance(self.marker, bool):
            raise ConfigError("marker", self.marker, "True or False", owner="StreamConfig")
        if self.language not in messages.LANGUAGES:
            raise ConfigError("language", self.language, "'auto', 'en' or 'zh'", owner="StreamConfig")
        for key in ("max_consecutive_rescues", "retry_requests"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 1_000_000:
                raise ConfigError(key, value, "an integer from 0 to 1000000", owner="StreamConfig")
        if self.on_rescue_cap not in ("return", "raise"):
            raise ConfigError("on_rescue_cap", self.on_rescue_cap, "'return' or 'raise'", owner="StreamConfig")
        t = self.retry_temperature
        if t is not None and (isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 <= t <= 2):
            raise ConfigError("retry_temperature", t, "None or a number from 0 to 2", owner="StreamConfig")
        effort = self.retry_reasoning_effort
        if effort is not None and (not isinstance(effort, str) or not effort.strip() or effort != effort.strip()):
            raise ConfigError("retry_reasoning_effort", effort, "None or a word such as 'low'", owner="StreamConfig")

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> StreamConfig:
        """Build from a mapping; unknown keys → ``ConfigError``; the seed documents'
        camelCase keys (``maxConsecutiveRescues``) are accepted."""
        import re

        if not isinstance(data, Mapping):
            raise TypeError(f"StreamConfig.from_mapping needs a mapping, not {type(data).__name__}")
        known = {f.name for f in fields(cls)}
        values: dict[str, Any] = {}
        for key, value in data.items():
            name = re.sub(r"(?<!^)(?=[A-Z])", "_", str(key)).lower()
            if name not in known:
                raise ConfigError(str(key), value, "a known key (see StreamConfig's docstring)", owner="StreamConfig")
            if name in values:
                raise ConfigError(
                    str(key), value, "given once (it is given twice, in two spellings)", owner="StreamConfig"
                )
            values[name] = value
        return cls(**values)

    @classmethod
    def coerce(cls, config: StreamConfig | Mapping[str, Any] | None) -> StreamConfig:
        """``config`` as a :class:`StreamConfig`: ``None`` → the defaults, a mapping →
        :meth:`from_mapping`, a :class:`StreamConfig` as is.

        Raises
        ------
        TypeError
            for anything else.
        ConfigError
            for an invalid mapping.
        """
        if config is None:
            return cls()
        if isinstance(config, StreamConfig):
            return config
        if isinstance(config, Mapping):
            return cls.from_mapping(config)
        raise TypeError(f"config must be a StreamConfig, a mapping or None, not {type(config).__name__}")

    def replace(self, **changes: Any) -> StreamConfig:
        """A copy with ``changes`` applied (validated)."""
        return replace(self, **changes)

    def retry_settings(self) -> dict[str, Any]:
        """``{"temperature": …, "reasoning_effort": …}`` without the ``None`` ones."""
        out: dict[str, Any] = {}
        if self.retry_temperature is not None:
            out["temperature"] = self.retry_temperature
        if self.retry_reasoning_effort is not None:
            out["reasoning_effort"] = self.retry_reasoning_effort
        return out


@dataclass(frozen=True)
class StreamToolCall:
    """A tool call the model streamed, complete.

    Attributes
    ----------
    key : str | int
        The format's own key (a Chat Completions ``index``, a Responses
        ``item_id``, an Anthropic block ``index``).
    id : str | None
        The call id when the stream gave one.
    name : str
        The tool name (``""`` if the stream never named it).
    arguments : str
        The argument text as streamed (usually JSON).
    """

    key: Any
    id: str | None
    name: str
    arguments: str = field(repr=False)  # arguments carry secrets: never in a repr (issue 21)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the arguments included: this is the caller's own data)."""
        return {"key": self.key, "id": self.id, "name": self.name, "arguments": self.arguments}


@dataclass(frozen=True)
class StreamOutcome:
    """What happened to one stream, and what to store.

    Attributes
    ----------
    detection : Detection | None
        The detection that acted (or, in ``observe`` mode, the first that
        would have), else ``None``.
    cut : int | None
        Offset (code points) in ``channel``'s original text where it was
        pruned; ``None`` when nothing was pruned.  A stream that ended by
        itself before the guard could stop it (the loop confirmed only at the
        final checkpoint, or a cut deferred for a tool call that the end of
        the stream completed) is pruned with ``stopped=False``.
    channel : str | None
        ``"reasoning"`` or ``"text"``: the channel that was cut.
    kept_reasoning, kept_text : str
        What to store: the pruned channel is ``original[:cut]`` plus the
        marker line; the other as streamed.
    tool_calls : tuple[StreamToolCall, ...]
        Tool calls completed before the stream stopped or ended.
    stopped : bool
        The guard cut this attempt.
    should_resume : bool
        ``mode="rescue"``, stopped, no tool call completed (a completed call is
        progress: run it instead), and under ``max_consecutive_rescues``.
    cancelled : bool
        Stopped past the rescue cap: the host should not resume.
    removed : int
        ``N``: code points pruned from ``channel``.
    marker : str
        The marker line appended (``""`` when none).
    finish_reason : str | None
        The upstream's own finish reason, when it ended by itself.
    verdict : Verdict | None
        The session's verdict that acted (``cut`` or ``cancel``).
    upstream_error : BaseException | None
        The exception the upstream raised (re-raised to the host unchanged).
    guard_error : str | None
        Set when the guard's own logic failed and it became a pass-through
        (text and tool calls are still recorded whole).
    notice : Verdict | None
        The session's verdict at the end of the attempt when it has a kind:
        ``stall_nudge`` (``notice``: add ``notice.reason`` to the
        conversation before the next request), ``replay`` (informational:
        the ``repeat`` rule's replay mode is on); else, when nothing stopped the stream, the
        first ``text_loop`` notice (a weak detection, spec §2.7: the text may
        be starting to repeat; nothing was cut).
    hint : Verdict | None
        The stop hint given in this attempt (``SessionConfig(hint=...)``, ``kind="hint"``): add
        ``hint.reason`` to the conversation before the next request.
    mode : str
        The mode the stream ran in.
    """

    detection: Detection | None = None
    cut: int | None = None
    channel: str | None = None
    kept_reasoning: str = field(default="", repr=False)  # the caller's text: never in a repr
    kept_text: str = field(default="", repr=False)
    tool_calls: tuple[StreamToolCall, ...] = ()
    stopped: bool = False
    should_resume: bool = False
    cancelled: bool = False
    removed: int = 0
    marker: str = ""
    finish_reason: str | None = None
    verdict: Verdict | None = None
    upstream_error: BaseException | None = None
    guard_error: str | None = None
    mode: str = "rescue"
    rescues: int = field(default=0)
    notice: Verdict | None = None
    hint: Verdict | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (kept texts and tool calls included: the caller's own data)."""
        return {
            "detection": self.detection.to_dict() if self.detection is not None else None,
            "cut": self.cut,
            "channel": self.channel,
            "kept_reasoning": self.kept_reasoning,
            "kept_text": self.kept_text,
            "tool_calls": [c.to_dict() for c in self.tool_calls],
            "stopped": self.stopped,
            "should_resume": self.should_resume,
            "cancelled": self.cancelled,
            "removed": self.removed,
            "marker": self.marker,
            "finish_reason": self.finish_reason,
            "upstream_error": type(self.upstream_error).__name__ if self.upstream_error else None,
            "guard_error": self.guard_error,
            "mode": self.mode,
            "rescues": self.rescues,
            "notice": self.notice.to_dict() if self.notice is not None else None,
            "hint": self.hint.to_dict() if self.hint is not None else None,
        }


class LoopGuardCancelled(RuntimeError):
    """A looping stream was cut past ``max_consecutive_rescues`` (``on_rescue_cap="raise"``).

    Attributes
    ----------
    outcome : StreamOutcome
        The last stream's outcome (kept texts included).
    """

    def __init__(self, outcome: StreamOutcome) -> None:
        super().__init__(
            f"loopguard: the stream looped again after {outcome.rescues} rescue(s) in a row; "
            "cut without resume (max_consecutive_rescues)"
        )
        self.outcome = outcome

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickles and copies keep the message and the outcome, without the tool calls'
        argument text (:func:`loopguard.errors.reduce_cancelled`)."""
        return reduce_cancelled(self)


class StreamState(enum.Enum):
    """Where a :class:`StreamGuard` is in its stream (:attr:`StreamGuard.state`; spec §2.6, §3).

    ``WATCHING``: deltas go to the session's detectors.  ``PASSTHROUGH``: deltas and calls
    are recorded but not analysed (another stream took over the session, or the guard's own
    logic failed: ``outcome.guard_error``); nothing is stopped.  ``DEFERRED``: a cut is
    decided but waits until every open tool call closes; text and calls that arrive meanwhile
    are passed on and recorded.  ``STOPPED``: the guard stopped the stream; every further
    event is ``STOP_BEFORE``.  ``FINISHED``: :meth:`~StreamGuard.finish` or
    :meth:`~StreamGuard.fail` built the outcome; later events are ignored (``STOP_BEFORE``
    when the stream was stopped, else ``CONTINUE``).
    """

    WATCHING = "watching"
    PASSTHROUGH = "passthrough"
    DEFERRED = "deferred"
    STOPPED = "stopped"
    FINISHED = "finished"


_WATCHING, _PASSTHROUGH, _DEFERRED, _STOPPED, _FINISHED = StreamState
_MOVES: dict[StreamState, frozenset[StreamState]] = {
    _WATCHING: frozenset({_PASSTHROUGH, _DEFERRED, _STOPPED, _FINISHED}),
    _PASSTHROUGH: frozenset({_FINISHED}),
    _DEFERRED: frozenset({_STOPPED, _FINISHED}),
    _STOPPED: frozenset({_FINISHED}),
    _FINISHED: frozenset(),
}
_CONTINUE, _STOP_BEFORE, _STOP_AFTER = Action.CONTINUE, Action.STOP_BEFORE, Action.STOP_AFTER


class _Call:
    __slots__ = ("key", "id", "name", "parts", "open")

    def __init__(self, key: Any) -> None:
        self.key = key
        self.id: str | None = None
        self.name = ""
        self.parts: list[str] = []
        self.open = True

    def update(self, id: Any, name: Any) -> None:
        """The first non-empty ``str`` id and name the stream gives are kept."""
        if isinstance(id, str) and id and self.id is None:
            self.id = id
        if isinstance(name, str) and name and not self.name:
            self.name = name


class StreamGuard:
    """One attempt's stream under a :class:`Session` (spec §2.6, §3).

    Parameters
    ----------
    session : Session | None
        The conversation (``None``: a new ``Session()``).  Its text config
        (``watch``, profile) decides what is detected; its rescue count
        spans attempts.
    config : StreamConfig | Mapping | None
        The stream policy.

    Raises
    ------
    TypeError
        for a ``session`` that is not a :class:`Session`, or a config of the wrong type.
    ConfigError
        for an invalid config mapping.

    Creating the guard starts a new attempt of the session and attaches the guard to it
    (:meth:`Session.attach_stream`: an older live stream of the session becomes a
    pass-through).  :attr:`state` is the lifecycle (:class:`StreamState`).  Not
    thread-safe; one guard per stream.  While :meth:`Session.feed_window
    <loopguard.session.Session.feed_window>` is open the guard holds a channel's deltas and
    feeds the session them joined when it closes, before any other event and at the end (same
    verdicts, detections and progress notes as feeding each delta): while a stream is live,
    read its text from :attr:`outcome`, not from the session, and feed the session through
    the guard only.

    Examples
    --------
    >>> guard = StreamGuard(config=StreamConfig(mode="cut"))
    >>> actions = [guard.reasoning("Let me check the sum again. ") for _ in range(60)]
    >>> Action.STOP_BEFORE in actions, guard.state
    (True, <StreamState.STOPPED: 'stopped'>)
    >>> outcome = guard.finish()
    >>> outcome.stopped, outcome.channel, outcome.detection.kind, outcome.kept_reasoning
    (True, 'reasoning', 'cycle', 'Let me check the sum again. \\n〔588 chars of repeated reasoning removed〕')
    """

    __slots__ = (
        "_batch",
        "_batch_from",
        "_budget",
        "_calls",
        "_clock",
        "_error",
        "_feed",
        "_noted",
        "_finish_reason",
        "_orphan",
        "_outcome",
        "_reasoning_parts",
        "_record",
        "_segments",
        "_state",
        "_text_notice",
        "_hint",
        "_text_parts",
        "_verdict",
        "config",
        "session",
    )

    def __init__(self, session: Session | None = None, config: StreamConfig | Mapping[str, Any] | None = None) -> None:
        if session is None:
            session = Session()
        elif not isinstance(session, Session):
            raise TypeError(f"session must be a Session or None, not {type(session).__name__}")
        self.config: StreamConfig = StreamConfig.coerce(config)
        self.session: Session = session
        self._state = _WATCHING
        self._record = AttemptRecorder()  # every call, to build the outcome
        self._reasoning_parts: list[str] = []  # the latest deltas of each channel, whole
        self._text_parts: list[str] = []
        self._segments: dict[str, list[str]] = {"reasoning": [], "text": []}  # the earlier ones, joined
        self._calls: dict[Any, _Call] = {}  # by the format's key (the recorder keeps the order)
        self._verdict: Verdict | None = None  # the stop verdict (acting or, in observe, first)
        self._text_notice: Verdict | None = None  # the first weak text-loop detection's notice
        self._hint: Verdict | None = None  # the stop hint (SessionConfig(hint=...)) given in this attempt
        self._outcome: StreamOutcome | None = None
        self._error: str | None = None  # outcome.guard_error
        self._orphan = False  # another stream started on the session: record only
        self._finish_reason: str | None = None
        self._feed = session.feed
        self._clock = session.guard.clock
        # the held deltas (Session.feed_window): the parts list of the channel being held, from
        # index _batch_from on; _budget code points and the clock until 1.0 past _noted remain
        self._batch: list[str] | None = None
        self._batch_from = 0
        self._budget = 0
        self._noted = 0.0
        previous = session.attach_stream(self)
        if isinstance(previous, StreamGuard) and previous is not self and previous._state is not _FINISHED:
            logger.warning(
                "a new stream started on session %r while another is live: the older one is no "
                "longer watched (use one Session per concurrent stream)",
                session.session_id,
            )
            previous._orphaned()
        try:
            session.start_attempt()
        except Exception as exc:
            self._break(exc, "loopguard could not start the attempt; this stream is not watched")

    # ------------------------------------------------------------- state

    @property
    def state(self) -> StreamState:
        """The lifecycle state (:class:`StreamState`)."""
        return self._state

    def _move(self, to: StreamState) -> None:
        """The one place the state changes; refuses a move :data:`_MOVES` does not allow."""
        if to not in _MOVES[self._state]:
            raise RuntimeError(f"stream guard: no move from {self._state.value} to {to.value}")
        self._state = to

    def _watched(self) -> bool:
        """The session is fed (not orphaned, no internal error)."""
        return self._error is None and not self._orphan

    def _orphaned(self) -> None:
        try:
            self._release()  # the held deltas belong to the attempt that is ending
        except Exception as exc:
            self._break(exc)
        self._orphan = True
        if self._state is _WATCHING:
            self._move(_PASSTHROUGH)

    def _break(self, exc: BaseException, message: str = "") -> Action:
        """An internal error: record it; the guard becomes a pass-through (text and tool calls
        are still recorded, nothing is detected or stopped)."""
        self._error = f"{type(exc).__name__}: {exc}"[:200]
        self._batch = None  # the session is not fed any more (the deltas stay recorded)
        if message:
            logger.error(message, exc_info=True)
        else:
            logger.error(
                "loopguard stream guard disabled for the rest of this stream: %s", type(exc).__name__, exc_info=True
            )
        if self._state is _WATCHING:
            self._move(_PASSTHROUGH)
        return _CONTINUE

    def _cut_due(self) -> bool:
        """The stop condition of a deferred cut: decided, and no tool call is open any more
        (``DEFERRED`` → ``STOPPED``)."""
        if self._state is _DEFERRED and not self._open_calls():
            self._move(_STOPPED)
            return True
        return False

    def _event(self, fn: Any, *args: Any) -> Action:
        """Run the guard's own logic for one event; an internal error turns the guard into a
        pass-through."""
        state = self._state
        if state is _STOPPED:
            return _STOP_BEFORE
        if state is _FINISHED:
            return _STOP_BEFORE if self._outcome is not None and self._outcome.stopped else _CONTINUE
        try:
            if self._batch is not None:
                released = self._release()
                if released is not _CONTINUE:
                    return released
            action: Action = fn(*args)
            return action
        except Exception as exc:
            return self._break(exc)

    def _open_calls(self) -> bool:
        return any(c.open for c in self._calls.values())

    def _on_verdict(self, verdict: Verdict) -> Action:
        if not verdict.stop:
            if verdict.kind == "hint":
                self._hint = verdict  # the host adds its reason to the conversation
            elif verdict.action == "notice" and self._text_notice is None:
                self._text_notice = verdict  # a weak text-loop detection: the stream goes on
            return _CONTINUE
        if self._verdict is None:
            self._verdict = verdict
        if self.config.mode == "observe":
            return _CONTINUE
        if self._open_calls():
            logger.info("cut deferred: a tool call is open")
            self._move(_DEFERRED)
            return _CONTINUE
        self._move(_STOPPED)
        return _STOP_BEFORE

    # -------------------------------------------------------------- events

    def reasoning(self, delta: str) -> Action:
        """A reasoning delta (``str``; anything else is ignored and logged)."""
        if self._state is _WATCHING and delta.__class__ is str and delta:  # the common case
            try:
                parts = self._reasoning_parts
                parts.append(delta)  # recorded first: the caller's text is kept whatever happens next
                if parts is self._batch:  # held: the session could not do more than hold it
                    budget = self._budget = self._budget - len(delta)
                    if budget > 0 and self._clock() - self._noted < 1.0:
                        return _CONTINUE
                return self._watched_delta(parts, "reasoning")
            except Exception as exc:
                return self._break(exc)
        return self._event(self._delta, delta, "reasoning")

    def text(self, delta: str) -> Action:
        """An answer-text delta (``str``; anything else is ignored and logged)."""
        if self._state is _WATCHING and delta.__class__ is str and delta:  # the common case
            try:
                parts = self._text_parts
                parts.append(delta)  # recorded first: the caller's text is kept whatever happens next
                if parts is self._batch:  # held: the session could not do more than hold it
                    budget = self._budget = self._budget - len(delta)
                    if budget > 0 and self._clock() - self._noted < 1.0:
                        return _CONTINUE
                return self._watched_delta(parts, "text")
            except Exception as exc:
                return self._break(exc)
        return self._event(self._delta, delta, "text")

    def _watched_delta(self, parts: list[str], channel: str) -> Action:
        """The delta just recorded at the end of ``parts`` when it closes the held window, or
        is the first of its channel since the session was last fed: the session gets every
        delta not fed yet (the other channel's held ones first, in order), then ``channel``'s
        next deltas are held while :meth:`Session.feed_window
        <loopguard.session.Session.feed_window>` allows."""
        if self._batch is not parts:
            action = self._release()
            if action is not _CONTINUE:
                return action
            self._batch, self._batch_from = parts, len(parts) - 1
        verdict = self._hand_over()
        action = _CONTINUE if verdict is _ALLOW else self._on_verdict(verdict)
        if self._state is _WATCHING:
            self._batch, self._batch_from = parts, len(parts)
            self._budget, self._noted = self.session.feed_window(channel)
        return action

    def _hand_over(self, late: bool = False) -> Verdict:
        """Feed the held deltas to the session as one string (``late``: before another event or
        at the end, not at a delta of theirs: :meth:`Session.feed_held
        <loopguard.session.Session.feed_held>`); nothing is held after."""
        parts = self._batch
        self._batch = None
        if parts is None or self._batch_from >= len(parts):
            return _ALLOW
        channel = "text" if parts is self._text_parts else "reasoning"
        start = self._batch_from
        text = parts[start] if start == len(parts) - 1 else "".join(parts[start:])
        verdict = self.session.feed_held(text, channel) if late else self._feed(text, channel)
        if len(parts) >= JOIN_EVERY:
            self._join(parts, channel)
        return verdict

    def _release(self) -> Action:
        """Before any other event reaches the session: feed it the held deltas (their window
        was open, so this is ``allow``; a stop is still obeyed)."""
        if self._batch is None:
            return _CONTINUE
        verdict = self._hand_over(late=True)
        return _CONTINUE if verdict is _ALLOW else self._on_verdict(verdict)

    def _delta(self, delta: Any, channel: str) -> Action:
        if not isinstance(delta, str):
            logger.debug("non-str %s delta ignored (%s)", channel, type(delta).__name__)
            return _CONTINUE
        if not delta:
            return _CONTINUE
        if self._cut_due():  # after a deferred cut: never stream on
            return _STOP_BEFORE
        self._keep(channel, delta)
        if self._state is not _WATCHING:
            return _CONTINUE
        return self._on_verdict(self._feed(delta, channel))

    def _keep(self, channel: str, delta: str) -> None:
        """Record a delta of ``channel`` (the whole text builds the outcome)."""
        parts = self._reasoning_parts if channel == "reasoning" else self._text_parts
        parts.append(delta)
        if len(parts) >= JOIN_EVERY:
            self._join(parts, channel)

    def _join(self, parts: list[str], channel: str) -> None:
        """Move ``parts`` into one joined segment of ``channel`` (memory near one byte per
        character; each code point is copied once)."""
        self._segments[channel].append("".join(parts))
        parts.clear()

    def _kept(self, channel: str) -> str:
        """The whole text of ``channel`` recorded so far."""
        parts = self._reasoning_parts if channel == "reasoning" else self._text_parts
        return "".join(self._segments[channel] + parts)

    def has_tool_call(self, key: Any) -> bool:
        """Whether a tool call with this key (a Chat Completions ``index``, a Responses item id,
        an Anthropic block ``index``) has started in this stream, open or complete."""
        try:
            return key in self._calls
        except TypeError:  # an unhashable key is no call's key
            return False

    def _call(self, key: Any) -> _Call | None:
        """The call of ``key``, a new one when it is new; ``None`` when a deferred cut is due
        instead (a new call must not start after it)."""
        call = self._calls.get(key)
        if call is None:
            if self._cut_due():
                return None
            call = self._calls[key] = _Call(key)
            self._record.add_call(call)
        return call

    def tool_start(self, key: Any, *, id: Any = None, name: Any = None) -> Action:
        """A tool call starts (its first fragment)."""
        return self._event(self._tool_args, key, None, id, name)

    def tool_args(self, key: Any, fragment: Any, *, id: Any = None, name: Any = None) -> Action:
        """A fragment of a tool call's argument text (starts the call if it is new)."""
        return self._event(self._tool_args, key, fragment, id, name)

    def _tool_args(self, key: Any, fragment: Any, id: Any, name: Any) -> Action:
        call = self._call(key)
        if call is None:
            return _STOP_BEFORE
        call.update(id, name)
        if isinstance(fragment, str) and fragment:
            call.parts.append(fragment)
        return _CONTINUE

    def tool_end(self, key: Any, *, arguments: Any = None, name: Any = None) -> Action:
        """A tool call is complete (``arguments``: the full text when the format
        repeats it at the end, as Responses' ``function_call_arguments.done`` does)."""
        return self._event(self._tool_end, key, arguments, name)

    def _tool_end(self, key: Any, arguments: Any, name: Any) -> Action:
        call = self._call(key)
        if call is None:
            return _STOP_BEFORE
        if isinstance(arguments, str):
            call.parts = [arguments]
        if isinstance(name, str) and name:
            call.name = name
        if call.open:
            call.open = False
            if self._watched():
                self.session.note_tool_call(call.name or "?", "".join(call.parts))
        return _STOP_AFTER if self._cut_due() else _CONTINUE

    def close_open_calls(self) -> Action:
        """Every open call is complete (Chat Completions says so only with
        ``finish_reason`` or the end of the stream)."""
        action = _CONTINUE
        for call in list(self._record.calls):
            if call.open:
                step = self.tool_end(call.key)
                action = step if step.stop else action
        return action

    # ---------------------------------------------------------------- end

    def note_finish_reason(self, reason: Any) -> None:
        """The upstream's own finish reason (``"stop"``, ``"tool_calls"``, ``"end_turn"`` …),
        reported by adapters when a chunk carries it; kept in ``outcome.finish_reason``."""
        if isinstance(reason, str) and reason:
            self._finish_reason = reason

    @property
    def stopped(self) -> bool:
        """The guard has stopped the stream."""
        if self._state is _FINISHED:
            return self._outcome is not None and self._outcome.stopped
        return self._state is _STOPPED

    def finish(self, finish_reason: Any = None) -> StreamOutcome:
        """The stream ended (by itself or because the guard stopped it): the outcome.

        Idempotent: a second call returns the same outcome.
        """
        if self._outcome is None:
            self.note_finish_reason(finish_reason)
            self._outcome = self._build(self._finish_reason, None)
        return self._outcome

    def fail(self, error: BaseException) -> StreamOutcome:
        """The upstream raised ``error`` (the adapter re-raises it): the outcome of what came before."""
        if self._outcome is None:
            self._outcome = self._build(None, error)
        return self._outcome

    @property
    def outcome(self) -> StreamOutcome:
        """The outcome so far (final after :meth:`finish` / :meth:`fail`)."""
        return self._outcome if self._outcome is not None else self._snapshot()

    def _snapshot(self) -> StreamOutcome:
        verdict = self._verdict
        return StreamOutcome(
            kept_reasoning=self._kept("reasoning"),
            kept_text=self._kept("text"),
            tool_calls=self._complete_calls(),
            mode=self.config.mode,
            verdict=verdict,
            detection=verdict.detection if verdict is not None else None,
            finish_reason=self._finish_reason,
            guard_error=self._error,
        )

    def _complete_calls(self) -> tuple[StreamToolCall, ...]:
        return tuple(
            StreamToolCall(c.key, c.id, c.name, "".join(c.parts))
            for c in self._record.calls
            if not c.open and (c.name or c.parts or c.id)  # a fragment that named nothing is no call
        )

    def _build(self, finish_reason: str | None, error: BaseException | None) -> StreamOutcome:
        try:
            outcome = self._build_unsafe(finish_reason, error)
        except Exception as exc:
            logger.error("loopguard could not build the stream outcome: %s", type(exc).__name__, exc_info=True)
            base = self._snapshot()
            outcome = replace(base, guard_error=f"{type(exc).__name__}: {exc}"[:200], upstream_error=error)
        if self._state is not _FINISHED:
            self._move(_FINISHED)
        return outcome

    def _settle(self, error: BaseException | None, watched: bool) -> tuple[bool, bool, Verdict | None]:
        """End the attempt: ``(stopped, prune, end)``.

        ``stopped``: the guard cut the stream (it may be resumed).  ``prune``: the loop goes out
        of what is stored; a stream that ended by itself first (the loop confirmed only at the
        final checkpoint, or a deferred cut still waiting for its tool call) is pruned, never
        resumed: its answer and calls are complete.  ``end``: the session's verdict at the end
        of the attempt (``None`` when the session was not fed).
        """
        stopped = prune = self._state is _STOPPED
        if self._state is _DEFERRED:
            self.close_open_calls()
            prune = True
        end = self.session.end_attempt() if watched else None
        if self._verdict is None and end is not None and end.stop and error is None:
            self._verdict = end  # the detectors' last checkpoint called for action
            prune = self.config.mode != "observe"
        self.session.detach_stream(self)
        return stopped, prune, end

    def _build_unsafe(self, finish_reason: str | None, error: BaseException | None) -> StreamOutcome:
        if self._batch is not None:  # the held deltas reach the attempt before it ends
            try:
                self._release()
            except Exception as exc:
                self._break(exc)
        session, watched = self.session, self._watched()
        stopped, prune, end = self._settle(error, watched)
        verdict = self._verdict
        detection = verdict.detection if verdict is not None else None
        notice = end if end is not None and not end.stop and end.kind is not None else None
        if notice is None and verdict is None:
            notice = self._text_notice
        calls = self._complete_calls()
        base: dict[str, Any] = dict(
            tool_calls=calls,
            finish_reason=finish_reason,
            upstream_error=error,
            guard_error=self._error,
            mode=self.config.mode,
            verdict=verdict,
            detection=detection,
            notice=notice,
            hint=self._hint,
        )
        reasoning, text = self._kept("reasoning"), self._kept("text")
        if not prune or verdict is None or detection is None:
            if error is None and watched and not stopped:
                session.record_completion()
            if verdict is not None:
                events.stream_stop(session.session_id, verdict, "cut" if stopped else "observe", {"resume": False})
            return StreamOutcome(kept_reasoning=reasoning, kept_text=text, rescues=session.consecutive_rescues, **base)
        cut, removed, marker, kept = self._prune(reasoning if detection.channel == "reasoning" else text, detection)
        if detection.channel == "reasoning":
            reasoning = kept
        else:
            text = kept
        resume, cancelled = self._rescue(stopped, bool(calls), verdict, error is None and watched)
        numbers = {"position": detection.position, "cut": cut, "removed": removed, "resume": resume}
        events.stream_stop(session.session_id, verdict, "cancel" if cancelled else "cut", numbers, session)
        logger.info(
            "stream cut: %s loop on %s at %d, %d chars pruned%s",
            detection.kind,
            detection.channel,
            detection.position,
            removed,
            " (resume)" if resume else "",
        )
        return StreamOutcome(
            cut=cut,
            channel=detection.channel,
            kept_reasoning=reasoning,
            kept_text=text,
            stopped=stopped,
            should_resume=resume,
            cancelled=cancelled,
            removed=removed,
            marker=marker,
            rescues=session.consecutive_rescues,
            **base,
        )

    def _prune(self, original: str, detection: Detection) -> tuple[int, int, str, str]:
        """``(cut, removed, marker, kept)`` for the cut channel (:func:`messages.prune_text`)."""
        cfg = self.config
        return messages.prune_text(original, detection.cut, detection.channel, cfg.language, marker=cfg.marker)

    def _rescue(self, stopped: bool, called: bool, verdict: Verdict, clean: bool) -> tuple[bool, bool]:
        """``(should_resume, cancelled)`` of a pruned stream, and the session's rescue count.

        In rescue mode the rescue cap decides when to give up on a looping stream (a
        ``strikes`` cancel from the text loop is still counted by the guard, but does not
        pre-empt the cap); completed tool calls are progress: the host runs them instead of
        resuming.  ``clean``: no upstream error and the session was fed.
        """
        cfg, session = self.config, self.session
        resume = cfg.mode == "rescue" and stopped and not called
        cancelled = stopped and cfg.mode != "rescue" and verdict.action == "cancel"
        if resume and session.consecutive_rescues >= cfg.max_consecutive_rescues:
            resume, cancelled = False, True
            logger.info("loop again after %d rescue(s) in a row: cut without resume", session.consecutive_rescues)
        if resume:
            session.record_rescue(cfg.retry_requests)
        elif not stopped and clean:
            session.record_completion()
        return resume, cancelled
