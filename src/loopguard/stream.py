"""StreamGuard: cut, prune and rescue one model stream (spec §2.6, §3; seed 003).

A :class:`StreamGuard` watches one attempt (one model request) of a
:class:`~loopguard.Session`.  Host adapters (:mod:`loopguard.integrations`)
turn whatever their SDK streams into five normalised events and ask the
guard what to do after each chunk:

* :meth:`StreamGuard.reasoning` / :meth:`StreamGuard.text` — a delta of a
  channel; fed to the session's text detectors;
* :meth:`StreamGuard.tool_start` / :meth:`StreamGuard.tool_args` /
  :meth:`StreamGuard.tool_end` — a tool call streamed in pieces, keyed by
  whatever the format uses (an index, an item id);
* :meth:`StreamGuard.finish` — the stream ended (or :meth:`StreamGuard.fail`
  when the upstream raised).

Each event returns an :class:`Action`: ``CONTINUE``, ``STOP_BEFORE`` (do not
pass the current chunk on; stop) or ``STOP_AFTER`` (pass it on, then stop).

Policy (``StreamConfig``; seed 003 keys):

* ``mode="observe"`` — detections are recorded, nothing is ever stopped or
  altered; ``mode="cut"`` — the stream is stopped at the checkpoint that
  calls for action (spec §2.6: C/P at their first hit, E/L/S at the
  ``fuse_hits_before_action``-th) and the loop pruned from the outcome;
  ``mode="rescue"`` (default) — the same, and the outcome says the host
  should resume (:func:`loopguard.integrations.openai.resume_messages`).
* **Open tool call** (003): while a tool call is open the cut is deferred
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
  mode this cap, not seed 002's ③ strikes, decides when to give up on a
  looping stream (each text loop is still a strike for the guard); in cut
  mode a strikes ``cancel`` sets ``outcome.cancelled``.

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
from .errors import ConfigError
from .session import Session, Verdict
from .text import Detection

__all__ = [
    "Action",
    "LoopGuardCancelled",
    "StreamConfig",
    "StreamGuard",
    "StreamOutcome",
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
    """Stream policy keys of seed 003 (spec §3), validated at construction.

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
        """Build from a mapping; unknown keys → ``ConfigError``; the seed's
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


def _stream_config(config: StreamConfig | Mapping[str, Any] | None) -> StreamConfig:
    if config is None:
        return StreamConfig()
    if isinstance(config, StreamConfig):
        return config
    if isinstance(config, Mapping):
        return StreamConfig.from_mapping(config)
    raise TypeError(f"config must be a StreamConfig, a mapping or None, not {type(config).__name__}")


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
    arguments: str

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
        D1' replay mode is on); else, when nothing stopped the stream, the
        first ``text_loop`` notice (a weak detection, spec §2.7: the text may
        be starting to repeat; nothing was cut).
    mode : str
        The mode the stream ran in.
    """

    detection: Detection | None = None
    cut: int | None = None
    channel: str | None = None
    kept_reasoning: str = ""
    kept_text: str = ""
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


class _Call:
    __slots__ = ("key", "id", "name", "parts", "open")

    def __init__(self, key: Any) -> None:
        self.key = key
        self.id: str | None = None
        self.name = ""
        self.parts: list[str] = []
        self.open = True


class StreamGuard:
    """One attempt's stream under a :class:`Session` (spec §2.6, §3; seed 003).

    Parameters
    ----------
    session : Session | None
        The conversation (``None``: a new ``Session()``).  Its text config
        (``watch``, profile) decides what is detected; its rescue count
        spans attempts.
    config : StreamConfig | Mapping | None
        The stream policy.

    Creating the guard starts a new attempt of the session.  Not
    thread-safe; one guard per stream.

    Examples
    --------
    >>> guard = StreamGuard(config=StreamConfig(mode="cut"))
    >>> actions = [guard.reasoning("Let me check the sum again. ") for _ in range(60)]
    >>> Action.STOP_BEFORE in actions
    True
    >>> outcome = guard.finish()
    >>> outcome.stopped, outcome.channel, outcome.detection.kind, outcome.kept_reasoning
    (True, 'reasoning', 'cycle', 'Let me check the sum again. \\n〔588 chars of repeated reasoning removed〕')
    """

    def __init__(self, session: Session | None = None, config: StreamConfig | Mapping[str, Any] | None = None) -> None:
        if session is None:
            session = Session()
        elif not isinstance(session, Session):
            raise TypeError(f"session must be a Session or None, not {type(session).__name__}")
        self.config: StreamConfig = _stream_config(config)
        self.session: Session = session
        self._texts: dict[str, list[str]] = {"reasoning": [], "text": []}
        self._calls: dict[Any, _Call] = {}
        self._order: list[Any] = []
        self._verdict: Verdict | None = None  # the stop verdict (acting or, in observe, first)
        self._text_notice: Verdict | None = None  # the first weak text-loop detection's notice
        self._pending = False  # a cut waits for an open tool call
        self._stopped = False
        self._outcome: StreamOutcome | None = None
        self._broken: str | None = None
        self._finish_reason: str | None = None
        self._orphan = False  # another stream started on the session: record only
        previous = session._live_stream
        if previous is not None and previous._outcome is None:
            logger.warning(
                "a new stream started on session %r while another is live: the older one is no "
                "longer watched (use one Session per concurrent stream)",
                session.session_id,
            )
            previous._orphan = True
        session._live_stream = self
        try:
            session.start_attempt()
        except Exception as exc:
            self._broken = f"{type(exc).__name__}: {exc}"[:200]
            logger.error("loopguard could not start the attempt; this stream is not watched", exc_info=True)

    # ------------------------------------------------------------- helpers

    def _safe(self, fn: Any, *args: Any) -> Action:
        """Run the guard's own logic; an internal error turns the guard into a pass-through
        (text and tool calls are still recorded, nothing is detected or stopped)."""
        if self._stopped:
            return Action.STOP_BEFORE
        try:
            action: Action = fn(*args)
            return action
        except Exception as exc:
            self._broken = f"{type(exc).__name__}: {exc}"[:200]
            logger.error(
                "loopguard stream guard disabled for the rest of this stream: %s", type(exc).__name__, exc_info=True
            )
            return Action.CONTINUE

    def _open_calls(self) -> bool:
        return any(c.open for c in self._calls.values())

    def _on_verdict(self, verdict: Verdict) -> Action:
        if not verdict.stop:
            if verdict.action == "notice" and self._text_notice is None:
                self._text_notice = verdict  # a weak text-loop detection: the stream goes on
            return Action.CONTINUE
        if self._verdict is None:
            self._verdict = verdict
        if self.config.mode == "observe":
            return Action.CONTINUE
        if self._open_calls():
            if not self._pending:
                logger.info("cut deferred: a tool call is open")
            self._pending = True
            return Action.CONTINUE
        self._stopped = True
        return Action.STOP_BEFORE

    # -------------------------------------------------------------- events

    def reasoning(self, delta: str) -> Action:
        """A reasoning delta (``str``; anything else is ignored and logged)."""
        return self._safe(self._delta, delta, "reasoning")

    def text(self, delta: str) -> Action:
        """An answer-text delta."""
        return self._safe(self._delta, delta, "text")

    def _delta(self, delta: Any, channel: str) -> Action:
        if not isinstance(delta, str):
            logger.debug("non-str %s delta ignored (%s)", channel, type(delta).__name__)
            return Action.CONTINUE
        if not delta:
            return Action.CONTINUE
        if self._pending and not self._open_calls():  # after a deferred cut: never stream on
            self._stopped = True
            return Action.STOP_BEFORE
        parts = self._texts[channel]
        parts.append(delta)
        if len(parts) >= 512:  # one string per 512 deltas: ~1 byte per character, not ~16
            parts[:] = ["".join(parts)]
        if self._broken is not None or self._orphan or self._pending:
            return Action.CONTINUE
        return self._on_verdict(self.session.feed(delta, channel))

    def tool_start(self, key: Any, *, id: Any = None, name: Any = None) -> Action:
        """A tool call starts (its first fragment)."""
        return self._safe(self._tool_start, key, id, name)

    def _tool_start(self, key: Any, id: Any, name: Any) -> Action:
        if key in self._calls:
            return self._tool_update(key, id, name)
        if self._pending and not self._open_calls():  # a new call after the deferred cut happened
            self._stopped = True
            return Action.STOP_BEFORE
        call = self._calls[key] = _Call(key)
        self._order.append(key)
        return self._tool_update(key, id, name, call)

    def _tool_update(self, key: Any, id: Any, name: Any, call: _Call | None = None) -> Action:
        call = call or self._calls[key]
        if isinstance(id, str) and id and call.id is None:
            call.id = id
        if isinstance(name, str) and name and not call.name:
            call.name = name
        return Action.CONTINUE

    def tool_args(self, key: Any, fragment: Any, *, id: Any = None, name: Any = None) -> Action:
        """A fragment of a tool call's argument text (starts the call if it is new)."""
        return self._safe(self._tool_args, key, fragment, id, name)

    def _tool_args(self, key: Any, fragment: Any, id: Any, name: Any) -> Action:
        if key not in self._calls:
            action = self._tool_start(key, id, name)
            if action.stop:
                return action
        else:
            self._tool_update(key, id, name)
        if isinstance(fragment, str) and fragment:
            self._calls[key].parts.append(fragment)
        return Action.CONTINUE

    def tool_end(self, key: Any, *, arguments: Any = None, name: Any = None) -> Action:
        """A tool call is complete (``arguments``: the full text when the format
        repeats it at the end, as Responses' ``function_call_arguments.done`` does)."""
        return self._safe(self._tool_end, key, arguments, name)

    def _tool_end(self, key: Any, arguments: Any, name: Any) -> Action:
        call = self._calls.get(key)
        if call is None:
            if self._pending and not self._open_calls():  # the deferred cut has happened already
                self._stopped = True
                return Action.STOP_BEFORE
            call = self._calls[key] = _Call(key)
            self._order.append(key)
        if isinstance(arguments, str):
            call.parts = [arguments]
        if isinstance(name, str) and name:
            call.name = name
        if call.open:
            call.open = False
            if self._broken is None and not self._orphan:
                self.session.note_tool_call(call.name or "?", "".join(call.parts))
        if self._pending and not self._open_calls():
            self._stopped = True
            return Action.STOP_AFTER
        return Action.CONTINUE

    def close_open_calls(self) -> Action:
        """Every open call is complete (Chat Completions says so only with
        ``finish_reason`` or the end of the stream)."""
        action = Action.CONTINUE
        for key in list(self._order):
            if self._calls[key].open:
                step = self.tool_end(key)
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
        return self._stopped

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
            kept_reasoning="".join(self._texts["reasoning"]),
            kept_text="".join(self._texts["text"]),
            tool_calls=self._complete_calls(),
            mode=self.config.mode,
            verdict=verdict,
            detection=verdict.detection if verdict is not None else None,
            finish_reason=self._finish_reason,
            guard_error=self._broken,
        )

    def _complete_calls(self) -> tuple[StreamToolCall, ...]:
        return tuple(
            StreamToolCall(c.key, c.id, c.name, "".join(c.parts))
            for c in (self._calls[k] for k in self._order)
            if not c.open and (c.name or c.parts or c.id)  # a fragment that named nothing is no call
        )

    def _build(self, finish_reason: str | None, error: BaseException | None) -> StreamOutcome:
        try:
            return self._build_unsafe(finish_reason, error)
        except Exception as exc:
            logger.error("loopguard could not build the stream outcome: %s", type(exc).__name__, exc_info=True)
            base = self._snapshot()
            return replace(base, guard_error=f"{type(exc).__name__}: {exc}"[:200], upstream_error=error)

    def _build_unsafe(self, finish_reason: str | None, error: BaseException | None) -> StreamOutcome:
        session, cfg = self.session, self.config
        watched = self._broken is None and not self._orphan
        # ``prune``: the loop goes out of what is stored.  A stream the guard stopped (``stopped``)
        # may be resumed; one that ended by itself first (the loop confirmed only at the final
        # checkpoint, or a deferred cut still waiting for its tool call) is pruned, never resumed:
        # its answer and calls are complete.
        prune = self._stopped
        if self._pending and not self._stopped:
            self.close_open_calls()
            self._stopped = False
            prune = True
        end = session.end_attempt() if watched else None
        if self._verdict is None and end is not None and end.stop and error is None:
            self._verdict = end  # the detectors' last checkpoint called for action
            prune = cfg.mode != "observe"
        if session._live_stream is self:
            session._live_stream = None
        texts = {ch: "".join(parts) for ch, parts in self._texts.items()}
        verdict = self._verdict
        detection = verdict.detection if verdict is not None else None
        notice = end if end is not None and not end.stop and end.kind is not None else None
        if notice is None and verdict is None:
            notice = self._text_notice
        calls = self._complete_calls()
        base = dict(
            tool_calls=calls,
            finish_reason=finish_reason,
            upstream_error=error,
            guard_error=self._broken,
            mode=cfg.mode,
            verdict=verdict,
            detection=detection,
            notice=notice,
        )
        if not prune or verdict is None or detection is None:
            if error is None and watched and not self._stopped:
                session._record_completion()
            return StreamOutcome(
                kept_reasoning=texts["reasoning"],
                kept_text=texts["text"],
                rescues=session.consecutive_rescues,
                **base,  # type: ignore[arg-type]
            )
        channel = detection.channel
        original = texts[channel]
        cut = max(0, min(detection.cut, len(original)))
        removed = len(original) - cut
        kept = original[:cut]
        marker = ""
        if cfg.marker and removed:
            lang = messages.pick_language(cfg.language, kept or original)
            marker = messages.render(
                "marker_reasoning" if channel == "reasoning" else "marker_text", lang, count=removed
            )
            if kept and not kept.endswith("\n"):
                marker = "\n" + marker
        texts[channel] = kept + marker
        # in rescue mode the rescue cap decides when to give up on a looping stream (a ③ strikes
        # cancel from the text loop is still counted by the guard, but does not pre-empt the cap);
        # completed tool calls are progress: the host runs them instead of resuming
        stopped = self._stopped
        resume = cfg.mode == "rescue" and stopped and not calls
        cancelled = stopped and cfg.mode != "rescue" and verdict.action == "cancel"
        if resume and session.consecutive_rescues >= cfg.max_consecutive_rescues:
            resume, cancelled = False, True
            logger.warning("loop again after %d rescue(s) in a row: cut without resume", session.consecutive_rescues)
        if resume:
            session._record_rescue(cfg.retry_requests)
        elif not stopped and error is None and watched:
            session._record_completion()
        logger.warning(
            "stream cut: %s loop on %s at %d, %d chars pruned%s",
            detection.kind,
            channel,
            detection.position,
            removed,
            " (resume)" if resume else "",
        )
        return StreamOutcome(
            cut=cut,
            channel=channel,
            kept_reasoning=texts["reasoning"],
            kept_text=texts["text"],
            stopped=stopped,
            should_resume=resume,
            cancelled=cancelled,
            removed=removed,
            marker=marker,
            rescues=session.consecutive_rescues,
            **base,  # type: ignore[arg-type]
        )
