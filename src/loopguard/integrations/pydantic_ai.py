"""pydantic-ai: :class:`LoopGuardCapability`, a capability for ``Agent(..., capabilities=[...])``
(issue 19, item 4; the host's hooks: ``shared/research/ecosystem.md`` §5.1).

- ``before_tool_execute``: :meth:`~loopguard.ToolGuard.abefore_call` with the tool name, the
  model's arguments and the tool call id.  A ``deny`` raises ``SkipToolExecution(reason)``: the
  tool function does not run and the model reads the reason as the tool's result.  A ``cancel``
  (``repeat_streak``, ``strikes``, ``stop``) raises :class:`LoopGuardStopped` out of
  ``agent.run`` / ``agent.run_sync`` (the tool does not run).
- ``after_tool_execute``: :meth:`~loopguard.ToolGuard.aafter_call` with the result (progress,
  identical results, the circuit breaker).  The reminders (the ``notice`` of ``before_call`` and
  the guard's interventions) are appended to a ``str`` result, one blank line before each, as
  :func:`loopguard.wrap_tool` appends them; other results are returned as they are (logged).  A
  cancel after the call ran (``circuit_breaker``) raises :class:`LoopGuardStopped`.
- ``on_tool_execute_error``: a tool that raised is fed as an error result; its exception goes on
  as it would without the capability.
- ``after_model_request``: each model response's text and thinking parts go through
  :func:`loopguard.scan_text`; a strong detection (a text loop) counts a strike and raises
  :class:`LoopGuardStopped` (``action="cut"``, ``kind="text_loop"``).  A streamed response is
  checked once it is complete (the capability does not override ``wrap_run_event_stream``, which
  would turn every ``agent.run`` into a streamed one).

Every hook is async (pydantic-ai calls them inside ``agent.run_sync`` too) and fails open: an error
inside loopguard is logged on ``loopguard.integrations`` (its type and frames, never arguments or
results) and the agent goes on as if the capability were not there.  ``LoopGuardStopped`` is the
documented way out of a run: pydantic-ai lets an exception raised by a capability hook propagate
out of ``agent.run`` unchanged.

pydantic-ai is imported here, never by ``import loopguard``: ``pip install "loopguard[pydantic-ai]"``.
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

# Imported by name so that ``mypy --strict`` reads this module the same with or without the
# host installed (the host's types are ``Any`` here; the hosts tests run it against the real package).
try:
    _capabilities = importlib.import_module("pydantic_ai.capabilities")
    _exceptions = importlib.import_module("pydantic_ai.exceptions")
    _messages = importlib.import_module("pydantic_ai.messages")
except ImportError as exc:  # pragma: no cover - exercised by the import test in a plain venv
    raise ImportError(
        f'loopguard.integrations.pydantic_ai needs pydantic-ai: pip install "loopguard[pydantic-ai]" ({exc})'
    ) from exc

from ..config import TextConfig
from ..guard.core import ToolGuard
from ..guard.decisions import Decision, Intervention
from ..terminal import shown_name
from ..text import Detection
from ._hosts import first_strong_loop, log_failed_open, text_loop_reason

__all__ = ["LoopGuardCapability", "LoopGuardStopped"]

logger = logging.getLogger("loopguard.integrations")

AbstractCapability: Any = _capabilities.AbstractCapability
SkipToolExecution: Any = _exceptions.SkipToolExecution
TextPart: Any = _messages.TextPart
ThinkingPart: Any = _messages.ThinkingPart
SessionKey = Callable[[Any], Hashable]
_MAX_PENDING = 4096  # notices waiting for their tool's result (a call whose result never comes is dropped)


class LoopGuardStopped(RuntimeError):
    """loopguard ended the agent run: raised out of ``agent.run`` / ``agent.run_sync`` /
    ``agent.run_stream`` by :class:`LoopGuardCapability`.

    Attributes
    ----------
    action : str
        ``"cancel"`` (the tool guard cancelled the turn) or ``"cut"`` (the model's text looped).
    kind : str | None
        ``"repeat_streak"``, ``"circuit_breaker"``, ``"strikes"``, ``"text_loop"``, …
    rule : str
        The rule that decided.
    call_index : int
        The 0-based index of the tool call in the session (``-1`` for a text loop).
    reason : str
        The text meant for the model (``[loopguard] …``); ``str(error)`` is it too.

    Holds no argument, no result and no model text.
    """

    def __init__(self, action: str, kind: str | None, rule: str, call_index: int, reason: str) -> None:
        super().__init__(reason or f"loopguard stopped the run ({kind})")
        self.action, self.kind, self.rule, self.call_index, self.reason = action, kind, rule, call_index, reason


class LoopGuardCapability(AbstractCapability):  # type: ignore[misc]  # the host's class, Any to mypy
    """Guard a pydantic-ai agent's tool calls and model responses (``Agent(model,
    capabilities=[LoopGuardCapability()])``; issue 19, item 4).

    Parameters
    ----------
    guard : ToolGuard | None
        The tool guard (``None``: a new ``ToolGuard()``); share one between agents, or give it a
        :class:`~loopguard.RedisStore` to share it between replicas.
    session_key : callable, optional
        ``session_key(ctx) -> hashable``: the guard's session for a hook's ``RunContext`` (e.g.
        ``lambda ctx: ctx.conversation_id`` to carry one session over the runs of a
        conversation, or ``lambda ctx: ctx.deps.user_id``).  ``None`` (the default): one session
        per agent run, ``"run:<ctx.run_id>"``.
    text_config : TextConfig | str | None
        The text detectors' config or profile name for the model's responses (``None``: the
        ``"default"`` profile).
    check_text : bool
        Scan each model response for a text loop (default ``True``).

    One instance serves every run of the agent (pydantic-ai's default ``for_run`` returns it);
    its own state is the reminders of calls between ``before_call`` and their result (at most
    4096).  Tool arguments are handed to the guard only (which keeps hashes of them), never
    logged, raised or stored here.

    Raises
    ------
    TypeError
        ``guard`` is not a :class:`~loopguard.ToolGuard`, or ``session_key`` is not callable.
    ConfigError
        ``text_config`` names no profile.
    """

    def __init__(
        self,
        guard: ToolGuard | None = None,
        *,
        session_key: SessionKey | None = None,
        text_config: TextConfig | str | None = None,
        check_text: bool = True,
    ) -> None:
        super().__init__()
        if guard is None:
            guard = ToolGuard()
        if not isinstance(guard, ToolGuard):
            raise TypeError(f"guard must be a ToolGuard, not {type(guard).__name__}")
        if session_key is not None and not callable(session_key):
            raise TypeError(f"session_key must be callable, not {type(session_key).__name__}")
        self.guard = guard
        self.session_key = session_key
        # built once (scan_text would build a default config on every model response)
        self.text_config = text_config if isinstance(text_config, TextConfig) else TextConfig(text_config or "default")
        self.check_text = check_text
        self._notices: OrderedDict[tuple[Hashable, Any], Decision] = OrderedDict()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"LoopGuardCapability({self.guard!r}, notices_waiting={len(self._notices)})"

    def session_of(self, ctx: Any) -> Hashable:
        """The guard's session for a hook's ``RunContext`` (see ``session_key``)."""
        if self.session_key is not None:
            return self.session_key(ctx)
        return f"run:{ctx.run_id}"

    # ---------------------------------------------------------------- tool calls

    async def before_tool_execute(self, ctx: Any, *, call: Any, tool_def: Any, args: Any) -> Any:
        """Decide before the tool runs: a deny skips it (``SkipToolExecution`` with the reason),
        a cancel raises :class:`LoopGuardStopped`; anything else lets it run with ``args``."""
        tool = getattr(call, "tool_name", "?")
        try:
            sid = self.session_of(ctx)
            decision = await self.guard.abefore_call(sid, tool, _arguments(call, args), call_id=call.tool_call_id)
        except Exception as exc:
            _failed_open(exc, f"before a {shown_name(tool)} call")
            return args
        if decision.action == "cancel":
            logger.info("loopguard ends the agent run before %s (%s)", shown_name(tool), decision.rule)
            raise LoopGuardStopped("cancel", decision.kind, decision.rule, decision.call_index, decision.reason)
        if decision.action == "deny":
            raise SkipToolExecution(decision.reason)
        if decision.action == "notice" and decision.reason:
            with self._lock:
                self._notices[(sid, call.tool_call_id)] = decision
                while len(self._notices) > _MAX_PENDING:
                    self._notices.popitem(last=False)
        return args

    async def after_tool_execute(self, ctx: Any, *, call: Any, tool_def: Any, args: Any, result: Any) -> Any:
        """The result seen by the guard; reminders appended to a ``str`` result; a cancel
        (``circuit_breaker``) raises :class:`LoopGuardStopped`."""
        tool = getattr(call, "tool_name", "?")
        try:
            sid = self.session_of(ctx)
            notice = self._take_notice(sid, call.tool_call_id)
            notes = await self.guard.aafter_call(sid, tool, _arguments(call, args), result, call_id=call.tool_call_id)
        except Exception as exc:
            _failed_open(exc, f"after a {shown_name(tool)} call")
            return result
        if notice is not None:
            first = Intervention("notice", str(notice.kind), notice.rule, notice.reason, tool, notice.call_index)
            notes = [first, *notes]
        stop = next((n for n in notes if n.action == "cancel"), None)
        if stop is not None:
            logger.info("loopguard ends the agent run after %s (%s)", shown_name(tool), stop.rule)
            raise LoopGuardStopped("cancel", stop.kind, stop.rule, stop.call_index, stop.text)
        if not notes:
            return result
        if isinstance(result, str):
            return result + "".join("\n\n" + n.text for n in notes)
        logger.info("%d loopguard reminder(s) for %s not delivered (result is not a str)", len(notes), shown_name(tool))
        return result

    async def on_tool_execute_error(self, ctx: Any, *, call: Any, tool_def: Any, args: Any, error: Exception) -> Any:
        """A tool that raised, recorded as an error result; the tool's exception goes on."""
        tool = getattr(call, "tool_name", "?")
        try:
            sid = self.session_of(ctx)
            self._take_notice(sid, call.tool_call_id)
            text = f"{type(error).__name__}: {error}"
            await self.guard.aafter_call(sid, tool, _arguments(call, args), text, error=True, call_id=call.tool_call_id)
        except Exception:
            logger.info("guard signal after a failed %s call dropped", shown_name(tool))
        try:
            raise error
        finally:  # as the base hook does: the raised error's traceback holds this frame (and ctx)
            del error

    def _take_notice(self, sid: Hashable, call_id: Any) -> Decision | None:
        with self._lock:
            return self._notices.pop((sid, call_id), None)

    # --------------------------------------------------------------- model turns

    async def after_model_request(self, ctx: Any, *, request_context: Any, response: Any) -> Any:
        """A model response whose text or thinking repeats itself (a strong detection) ends the
        run with :class:`LoopGuardStopped` (``"cut"``, ``"text_loop"``; a strike is counted);
        any other response is returned as it is."""
        if not self.check_text:
            return response
        try:
            found = self._detect(response)
            if found is None:
                return response
            strike = await self.guard.astrike(self.session_of(ctx), "text_loop")
            reason = _loop_reason(*found, strike)
        except Exception as exc:
            _failed_open(exc, "checking a model response")
            return response
        raise LoopGuardStopped("cut", "text_loop", strike.rule if strike else "text_loop", -1, reason)

    def _detect(self, response: Any) -> tuple[str, Detection] | None:
        """The first strong text loop in a model response (answer, then thinking)."""
        text: list[str] = []
        thinking: list[str] = []
        for part in response.parts:
            if isinstance(part, TextPart) and isinstance(part.content, str):
                text.append(part.content)
            elif isinstance(part, ThinkingPart) and isinstance(part.content, str):
                thinking.append(part.content)
        return first_strong_loop((("text", "".join(text)), ("reasoning", "".join(thinking))), self.text_config)


def _arguments(call: Any, args: Any) -> Any:
    """The call's arguments as the model sent them (a dict), else the validated ``args``."""
    try:
        return call.args_as_dict()
    except Exception:
        return args


def _failed_open(exc: BaseException, what: str) -> None:
    log_failed_open(exc, what, "the agent goes on unguarded")


def _loop_reason(channel: str, found: Detection, strike: Intervention | None) -> str:
    """The reason of a text-loop stop (and the strike's text when the strike cancelled)."""
    reason = text_loop_reason(channel, found)
    return reason if strike is None else reason + "\n" + strike.text
