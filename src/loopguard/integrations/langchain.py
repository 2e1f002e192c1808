"""LangChain v1 agents: :class:`LoopGuardMiddleware`, an ``AgentMiddleware`` for ``create_agent``
(issue 19, item 2; ``docs/spec.md`` §5.2; the host's hooks: ``shared/research/ecosystem.md`` §3).

- ``wrap_tool_call`` / ``awrap_tool_call``: :meth:`~loopguard.ToolGuard.before_call` (async:
  ``abefore_call``) before the tool runs.  A ``deny`` or ``cancel`` answers the call with a
  ``ToolMessage(status="error")`` whose content is the reason, and the tool does not run; an
  allowed call runs, then :meth:`~loopguard.ToolGuard.after_call` sees its result, and the
  reminders are appended to the ``ToolMessage``'s content as :func:`loopguard.wrap_tool` appends
  them to a ``str`` result.
- ``after_model`` / ``aafter_model`` (``can_jump_to=["end"]``): after a cancel (``circuit_breaker``,
  ``repeat_streak``, ``strikes``) the model has had one call to read the reason and report; if it
  asks for tools again, or if its message repeats itself (:func:`loopguard.scan_text`, a strong
  detection in the answer or the reasoning), the run jumps to its end with a short ``AIMessage``
  saying why (every tool call of the model's last message answered with an error
  ``ToolMessage``, so the history stays valid for the thread's next turn).

LangChain is imported here, never by ``import loopguard``: ``pip install "loopguard[langchain]"``.
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

# Imported by name so that ``mypy --strict`` reads this module the same with or without the
# host installed (the host's types are ``Any`` here; the hosts tests run it against the real package).
try:
    _lc = importlib.import_module("langchain.agents.middleware")
    _lc_messages = importlib.import_module("langchain_core.messages")
    _lg_types = importlib.import_module("langgraph.types")
except ImportError as exc:  # pragma: no cover - exercised by the import test in a plain venv
    raise ImportError(
        f'loopguard.integrations.langchain needs LangChain v1: pip install "loopguard[langchain]" ({exc})'
    ) from exc

from .. import messages
from ..config import TextConfig
from ..guard.core import ToolGuard
from ..guard.decisions import Decision, Intervention
from ..terminal import shown_name
from ..text import Detection
from ._hosts import CHANNEL_NAMES, first_strong_loop, log_failed_open, text_loop_reason

__all__ = ["LoopGuardMiddleware", "STOPPED_TEXT"]

logger = logging.getLogger("loopguard.integrations")

#: The start of the ``AIMessage`` that ends a run stopped by the middleware.
STOPPED_TEXT = "[loopguard] The agent run was stopped:"
_NOT_RUN = "[loopguard] Not run: the agent run was stopped by loopguard."
_MAX_STOPS = 4096  # sessions with a cancel waiting for the next model call (oldest dropped)

AgentMiddleware: Any = _lc.AgentMiddleware
AIMessage: Any = _lc_messages.AIMessage
ToolMessage: Any = _lc_messages.ToolMessage
Command: Any = _lg_types.Command
ToolResult = Any  # a ToolMessage or a langgraph Command
F = TypeVar("F", bound=Callable[..., Any])


def _may_end(hook: F) -> F:
    """``@_may_end``: the hook may return ``{"jump_to": "end"}``."""
    _lc.hook_config(can_jump_to=["end"])(hook)
    return hook


class LoopGuardMiddleware(AgentMiddleware):  # type: ignore[misc]  # the host's class, Any to mypy
    """Guard a LangChain v1 agent's tool calls and model messages (``create_agent(...,
    middleware=[LoopGuardMiddleware()])``; issue 19, item 2).

    Parameters
    ----------
    guard : ToolGuard | None
        The tool guard (``None``: a new ``ToolGuard()``); share one between agents, or give it a
        :class:`~loopguard.RedisStore` to share it between replicas.
    session_id : Any | callable, optional
        The guard's session.  A callable is called as ``session_id(state, runtime)`` (the graph
        state and the LangGraph ``Runtime`` / ``ToolRuntime``).  ``None`` (the default): the
        thread id itself, ``config["configurable"]["thread_id"]`` (``runtime.execution_info.thread_id``),
        since a LangGraph thread is a conversation; else ``"run:<run_id>"`` for a run id given in
        the config; else ``"conversation:<id>"``, the id of the conversation's first message
        (``add_messages`` gives every input message an id, and a history passed back in keeps
        it), so runs without a thread never share a session; ``"default"`` when none exists.
    text_config : TextConfig | str | None
        The text detectors' config or profile name for the model's messages (``None``: the
        ``"default"`` profile).
    check_text : bool
        Scan each model message for a text loop (default ``True``).

    Every hook fails open: an error inside loopguard is logged (on ``loopguard.integrations``,
    without arguments or results) and the agent goes on as if the middleware were not there.
    Sync runs (``invoke``, ``stream``) use the sync hooks and the guard's sync methods; async runs
    the async hooks and ``abefore_call`` / ``aafter_call``.

    A cancel waiting for the next model call is held in this process (at most 4096 sessions), so
    with several replicas the model call after a cancel must reach the same one to be ended; the
    guard's own state follows its store.

    Raises
    ------
    TypeError
        ``guard`` is not a :class:`~loopguard.ToolGuard`.
    ConfigError
        ``text_config`` names no profile.
    """

    def __init__(
        self,
        guard: ToolGuard | None = None,
        *,
        session_id: Any = None,
        text_config: TextConfig | str | None = None,
        check_text: bool = True,
    ) -> None:
        super().__init__()
        if guard is None:
            guard = ToolGuard()
        if not isinstance(guard, ToolGuard):
            raise TypeError(f"guard must be a ToolGuard, not {type(guard).__name__}")
        self.guard = guard
        self.session_id = session_id
        # built once (scan_text would build a default config on every model message)
        self.text_config = text_config if isinstance(text_config, TextConfig) else TextConfig(text_config or "default")
        self.check_text = check_text
        self._stops: OrderedDict[Any, tuple[str, str]] = OrderedDict()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"LoopGuardMiddleware({self.guard!r}, stops_waiting={len(self._stops)})"

    # ------------------------------------------------------------------ sessions

    def session_of(self, state: Any, runtime: Any) -> Any:
        """The guard's session for a hook's ``state`` and ``runtime`` (see ``session_id``)."""
        given = self.session_id
        if given is not None:
            return given(state, runtime) if callable(given) else given
        info = getattr(runtime, "execution_info", None)
        thread = getattr(info, "thread_id", None)
        if thread is None:
            config = getattr(runtime, "config", None)
            configurable = config.get("configurable") if isinstance(config, Mapping) else None
            if isinstance(configurable, Mapping):
                thread = configurable.get("thread_id")
        if thread is not None:
            return thread
        run = getattr(info, "run_id", None)
        if run is not None:
            return f"run:{run}"
        first = _first_message_id(state)
        return f"conversation:{first}" if first is not None else "default"

    def _stop_later(self, sid: Any, rule: str, text: str) -> None:
        with self._lock:
            self._stops[sid] = (rule, text)
            self._stops.move_to_end(sid)
            while len(self._stops) > _MAX_STOPS:
                self._stops.popitem(last=False)

    def _take_stop(self, sid: Any) -> tuple[str, str] | None:
        with self._lock:
            return self._stops.pop(sid, None)

    # ---------------------------------------------------------------- tool calls

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], ToolResult]) -> ToolResult:
        """Decide before the tool runs; a denied or cancelled call gets an error ``ToolMessage``
        with the reason (the tool does not run); an allowed one runs, then its result is seen."""
        call = _Call.of(self, request)
        if call is None:
            return handler(request)
        decision: Decision | None = None
        try:
            decision = self.guard.before_call(call.sid, call.tool, call.args, call_id=call.cid)
        except Exception as exc:
            _failed_open(exc, f"before a {shown_name(call.tool)} call")
        if decision is None:
            return handler(request)
        if not decision.allowed:
            return call.refused(self, decision)
        try:
            result = handler(request)
        except Exception as exc:
            call.failed(self.guard, exc)
            raise
        try:
            seen = _observed(result, call.cid)
            if seen is None:
                return result
            notes = self.guard.after_call(call.sid, call.tool, call.args, seen[0], error=seen[1], call_id=call.cid)
            return call.delivered(self, decision, notes, result)
        except Exception as exc:
            _failed_open(exc, f"after a {shown_name(call.tool)} call")
            return result

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[ToolResult]]) -> ToolResult:
        """:meth:`wrap_tool_call` for async runs: ``abefore_call`` / ``aafter_call`` (Redis through
        ``redis.asyncio`` with a shared store), the same decisions and messages."""
        call = _Call.of(self, request)
        if call is None:
            return await handler(request)
        decision: Decision | None = None
        try:
            decision = await self.guard.abefore_call(call.sid, call.tool, call.args, call_id=call.cid)
        except Exception as exc:
            _failed_open(exc, f"before a {shown_name(call.tool)} call")
        if decision is None:
            return await handler(request)
        if not decision.allowed:
            return call.refused(self, decision)
        try:
            result = await handler(request)
        except Exception as exc:
            await call.afailed(self.guard, exc)
            raise
        try:
            seen = _observed(result, call.cid)
            if seen is None:
                return result
            notes = await self.guard.aafter_call(
                call.sid, call.tool, call.args, seen[0], error=seen[1], call_id=call.cid
            )
            return call.delivered(self, decision, notes, result)
        except Exception as exc:
            _failed_open(exc, f"after a {shown_name(call.tool)} call")
            return result

    # --------------------------------------------------------------- model turns

    @_may_end
    def after_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """End the run (``{"jump_to": "end", "messages": [...]}``) when a cancel is waiting and
        the model asks for tools again, or when the model's message repeats itself; else ``None``.

        A looping answer (``str`` content) is replaced by its part before the loop (same message
        id); every tool call of the message is answered with an error ``ToolMessage`` (not run);
        then an ``AIMessage`` starting with :data:`STOPPED_TEXT` says why."""
        try:
            sid = self.session_of(state, runtime)
            found = self._detect(state)
            strike = None if found is None else self.guard.strike(sid, "text_loop")
            return self._after_model(state, self._take_stop(sid), found, strike)
        except Exception as exc:
            _hook_failed(exc)
            return None

    @_may_end
    async def aafter_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """:meth:`after_model` for async runs (a text loop's strike through ``astrike``)."""
        try:
            sid = self.session_of(state, runtime)
            found = self._detect(state)
            strike = None if found is None else await self.guard.astrike(sid, "text_loop")
            return self._after_model(state, self._take_stop(sid), found, strike)
        except Exception as exc:
            _hook_failed(exc)
            return None

    def _after_model(
        self,
        state: Any,
        stop: tuple[str, str] | None,
        found: tuple[str, Detection] | None,
        strike: Intervention | None,
    ) -> dict[str, Any] | None:
        last = _last_ai(state)
        if last is None:
            return None
        calls = list(last.tool_calls)
        if found is None and (stop is None or not calls):
            return None  # nothing to stop, or the model answered the cancel with its report
        out: list[Any] = []
        if found is not None:
            pruned = _pruned(last, *found)
            out += [] if pruned is None else [pruned]
            rule, reason = _loop_reason(*found, pruned is not None, strike)
        else:
            assert stop is not None
            rule, reason = stop
        logger.info("loopguard ends the agent run (%s)", rule)
        out += [
            ToolMessage(content=_NOT_RUN, tool_call_id=c["id"], name=c["name"], status="error")
            for c in calls
            if c.get("id")
        ]
        out.append(AIMessage(content=f"{STOPPED_TEXT} {reason.removeprefix(messages.SOURCE_TAG).lstrip()}"))
        return {"jump_to": "end", "messages": out}

    def _detect(self, state: Any) -> tuple[str, Detection] | None:
        """The first strong text loop in the last model message (answer, then reasoning)."""
        if not self.check_text:
            return None
        last = _last_ai(state)
        return None if last is None else first_strong_loop(_channels(last), self.text_config)


class _Call:
    """One tool call as the guard sees it: session, tool name, arguments, call id."""

    __slots__ = ("sid", "tool", "args", "cid")

    def __init__(self, sid: Any, tool: str, args: Any, cid: Any) -> None:
        self.sid, self.tool, self.args, self.cid = sid, tool, args, cid

    @classmethod
    def of(cls, middleware: LoopGuardMiddleware, request: Any) -> _Call | None:
        """The call, or ``None`` (logged) when it cannot be read: the call then runs unguarded."""
        try:
            call = request.tool_call
            sid = middleware.session_of(request.state, request.runtime)
            return cls(sid, call["name"], call.get("args", {}), call.get("id"))
        except Exception as exc:
            _failed_open(exc, "reading a tool call request")
            return None

    def failed(self, guard: ToolGuard, exc: BaseException) -> None:
        """Record a tool that raised; the tool's exception always wins over the guard."""
        try:
            guard.after_call(self.sid, self.tool, self.args, _error_text(exc), error=True, call_id=self.cid)
        except Exception:
            logger.info("guard signal after a failed %s call dropped", shown_name(self.tool))

    async def afailed(self, guard: ToolGuard, exc: BaseException) -> None:
        """:meth:`failed` awaited."""
        try:
            await guard.aafter_call(self.sid, self.tool, self.args, _error_text(exc), error=True, call_id=self.cid)
        except Exception:
            logger.info("guard signal after a failed %s call dropped", shown_name(self.tool))

    def refused(self, middleware: LoopGuardMiddleware, decision: Decision) -> Any:
        """The error ``ToolMessage`` of a denied or cancelled call (a cancel also waits for the
        next model call: :meth:`LoopGuardMiddleware.after_model`)."""
        if decision.action == "cancel":
            middleware._stop_later(self.sid, decision.rule, decision.reason)
        return ToolMessage(content=decision.reason, tool_call_id=self.cid or "", name=self.tool, status="error")

    def delivered(
        self, middleware: LoopGuardMiddleware, decision: Decision, notes: list[Intervention], result: ToolResult
    ) -> ToolResult:
        """The result with the reminders appended (and a cancel held for the next model call)."""
        if decision.action == "notice" and decision.reason:
            first = Intervention(
                "notice", str(decision.kind), decision.rule, decision.reason, self.tool, decision.call_index
            )
            notes = [first, *notes]
        stop = next((n for n in notes if n.action == "cancel"), None)
        if stop is not None:
            middleware._stop_later(self.sid, stop.rule, stop.text)
        if not notes:
            return result
        return _appended(result, self.cid, "".join("\n\n" + n.text for n in notes), self.tool)


def _failed_open(exc: BaseException, what: str) -> None:
    log_failed_open(exc, what, "the call goes on unguarded")


def _hook_failed(exc: BaseException) -> None:
    log_failed_open(exc, "in the after_model check", "the run goes on")


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _tool_message(result: ToolResult, cid: Any) -> ToolMessage | None:
    """The ``ToolMessage`` answering call ``cid``: the result itself, or the one in a ``Command``'s
    ``update["messages"]``; ``None`` when there is none."""
    if isinstance(result, ToolMessage):
        return result
    update = getattr(result, "update", None)
    found = update.get("messages") if isinstance(update, Mapping) else None
    if isinstance(found, Sequence):
        for message in found:
            if isinstance(message, ToolMessage) and message.tool_call_id == cid:
                return message
    return None


def _observed(result: ToolResult, cid: Any) -> tuple[Any, bool] | None:
    """``(result, error)`` for ``after_call``: the ``ToolMessage``'s content and whether its status
    is ``"error"``; ``None`` for a ``Command`` without a ``ToolMessage`` for this call."""
    message = _tool_message(result, cid)
    if message is None:
        logger.debug("a tool result without a ToolMessage is not observed")
        return None
    return message.content, message.status == "error"


def _appended(result: ToolResult, cid: Any, text: str, tool: str) -> ToolResult:
    """``result`` with ``text`` appended to its ``ToolMessage``'s content (a ``str``, or a list of
    content blocks: then as a text block); other results are returned as they are (logged)."""
    message = _tool_message(result, cid)
    if message is None or not isinstance(message.content, (str, list)):
        logger.info("loopguard interventions for %s not delivered (no ToolMessage content)", shown_name(tool))
        return result
    content: Any = (
        message.content + text
        if isinstance(message.content, str)
        else [*message.content, {"type": "text", "text": text.lstrip("\n")}]
    )
    changed = message.model_copy(update={"content": content})
    if result is message:
        return changed
    assert isinstance(result, Command) and isinstance(result.update, Mapping)
    swapped = [changed if m is message else m for m in result.update["messages"]]
    return Command(
        graph=result.graph, update={**result.update, "messages": swapped}, resume=result.resume, goto=result.goto
    )


def _first_message_id(state: Any) -> Any:
    """The id of the state's first message (``None`` without one)."""
    found = state.get("messages") if isinstance(state, Mapping) else getattr(state, "messages", None)
    if isinstance(found, Sequence) and found:
        return getattr(found[0], "id", None)
    return None


def _last_ai(state: Any) -> Any:
    """The state's last message when it is the model's (``None`` otherwise)."""
    found = state.get("messages") if isinstance(state, Mapping) else None
    if isinstance(found, Sequence) and found and isinstance(found[-1], AIMessage):
        return found[-1]
    return None


def _channels(message: Any) -> list[tuple[str, str]]:
    """``[("text", answer), ("reasoning", reasoning)]`` of a model message: its text blocks, and its
    reasoning blocks (``content_blocks`` reads ``additional_kwargs["reasoning_content"]`` too)."""
    text: list[str] = []
    reasoning: list[str] = []
    for block in message.content_blocks:
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            text.append(block["text"])
        elif kind == "reasoning" and isinstance(block.get("reasoning"), str):
            reasoning.append(block["reasoning"])
    return [("text", "".join(text)), ("reasoning", "".join(reasoning))]


def _pruned(message: Any, channel: str, found: Detection) -> Any:
    """The looping answer cut before its loop, with the message's id (``add_messages`` replaces
    the message); ``None`` for reasoning, content blocks, or a message without an id."""
    if channel != "text" or not isinstance(message.content, str) or not message.id:
        return None
    return message.model_copy(update={"content": message.content[: found.cut]})


def _loop_reason(channel: str, found: Detection, cut: bool, strike: Intervention | None) -> tuple[str, str]:
    """``(rule, text)`` of a text-loop stop (``strikes`` and its text too when the strike cancelled)."""
    if cut:
        en, zh = CHANNEL_NAMES[channel]
        fields = {"kind": found.kind, "position": found.position, "cut": found.cut}
        reason = messages.render("text_loop", "en", channel=en, channel_zh=zh, **fields)
        logger.info("loopguard: text loop (%s) in the model's %s at %d", found.kind, channel, found.position)
    else:
        reason = text_loop_reason(channel, found)
    if strike is None:
        return "text_loop", reason
    return strike.rule, reason + "\n" + strike.text
