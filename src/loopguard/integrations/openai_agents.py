"""OpenAI Agents SDK (``openai-agents``): tool guardrails, agent hooks and a guarded streamed run
(issue 19, item 3; ``shared/research/ecosystem.md`` §4.1-4.2).

One :class:`AgentLoopGuard` serves one conversation, a :class:`loopguard.Session` (or a function
that picks the session from the run's context object, for an agent shared by conversations):

* **tool input guardrail** (:attr:`AgentLoopGuard.input_guardrail`): :meth:`Session.atool_call
  <loopguard.Session.atool_call>` (``ToolGuard.abefore_call``) with the tool name, the raw JSON
  arguments and the tool call id.  A deny is ``ToolGuardrailFunctionOutput.reject_content(reason)``:
  the tool does not run and the model reads the reason as its result.  A cancel is
  ``raise_exception``: ``Runner.run`` raises ``ToolInputGuardrailTripwireTriggered``;
* **tool output guardrail** (:attr:`AgentLoopGuard.output_guardrail`): :meth:`Session.atool_result
  <loopguard.Session.atool_result>` with the result.  Notices (the input's notice and the
  guard's interventions) are appended to a ``str`` result (one blank line before each) through
  ``reject_content`` (the SDK's only way to change an output), logged for other results; a cancel
  (``circuit_breaker``, ``strikes``) is ``raise_exception``: ``ToolOutputGuardrailTripwireTriggered``;
* **agent hooks** (:attr:`AgentLoopGuard.hooks`, ``Agent(hooks=...)``): every model response's
  reasoning and answer text is fed to the session (``on_llm_start``: a new attempt;
  ``on_llm_end``: the text, the tool calls for the replay rule, the end of the attempt); a
  ``cut``/``cancel`` verdict raises :class:`AgentLoopStopped` out of ``Runner.run``; ``on_end``
  ends the turn;
* **streamed runs** (:meth:`AgentLoopGuard.stream_events`): the raw Responses events of
  ``Runner.run_streamed`` go through a :class:`~loopguard.stream.StreamGuard` (one per model
  response); when it says stop, ``result.cancel()`` ends the run at once.

:func:`guard_agent` attaches all of it to an ``Agent`` in one call.  Nothing here ever raises into
the run because of a loopguard bug or bad input: such errors are logged and the call goes through
(fail open).  Tool arguments never reach a log line, an exception or ``output_info``.
"""

from __future__ import annotations

import copy
import importlib
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from ..session import Session, Verdict
from ..stream import StreamConfig, StreamGuard, StreamOutcome
from ..terminal import shown_name
from ._base import field
from .responses import apply_response_event

# imported by name, so that ``mypy --strict`` passes with or without the extra installed (the
# host's types are ``Any`` here; the hosts tests run this module against the real SDK)
try:
    _agents: Any = importlib.import_module("agents")
except ImportError as exc:  # pragma: no cover - exercised by the import test without the SDK
    raise ImportError(
        'loopguard.integrations.openai_agents needs the OpenAI Agents SDK: pip install "loopguard[openai-agents]"'
    ) from exc

Agent: Any = _agents.Agent
AgentHooks: Any = _agents.AgentHooks
FunctionTool: Any = _agents.FunctionTool
ToolGuardrailFunctionOutput: Any = _agents.ToolGuardrailFunctionOutput
ToolInputGuardrail: Any = _agents.ToolInputGuardrail
ToolOutputGuardrail: Any = _agents.ToolOutputGuardrail

__all__ = ["AgentLoopGuard", "AgentLoopStopped", "GuardedRunStream", "LoopGuardHooks", "guard_agent"]

logger = logging.getLogger("loopguard.integrations.openai_agents")

SessionSource = Session | Callable[[Any], Session]
_MAX_PENDING = 4096  # notices waiting for their tool's output (a call whose output never comes is dropped)


class AgentLoopStopped(RuntimeError):
    """A model response's text looped: raised by :attr:`AgentLoopGuard.hooks` out of ``Runner.run``.

    Attributes
    ----------
    action : str
        ``"cut"`` or ``"cancel"`` (:class:`loopguard.Verdict`).
    kind : str | None
        ``"text_loop"``, ``"strikes"``, …
    reason : str
        The text meant for the model (``[loopguard] …``); ``str(error)`` is it too.

    Holds no argument and no model text.
    """

    def __init__(self, action: str, kind: str | None, reason: str) -> None:
        super().__init__(reason or f"loopguard stopped the run ({kind})")
        self.action, self.kind, self.reason = action, kind, reason


def _info(verdict: Verdict) -> dict[str, Any]:
    """The ``output_info`` of a guardrail output: what decided (the decision, else the first
    cancelling, else the first intervention), never arguments or results."""
    by: Any = verdict.decision
    if by is None and verdict.interventions:
        by = next((i for i in verdict.interventions if i.action == "cancel"), verdict.interventions[0])
    return {
        "loopguard": verdict.action,
        "kind": verdict.kind,
        "rule": by.rule if by is not None else None,
        "call_index": by.call_index if by is not None else None,
    }


class AgentLoopGuard:
    """loopguard for the OpenAI Agents SDK: one conversation's guardrails, hooks and stream cut.

    Parameters
    ----------
    session : Session | callable | None
        The conversation: a :class:`loopguard.Session` (``None``: a new ``Session()``), or a
        function ``(context) -> Session`` given the run's context object (``Runner.run(...,
        context=...)``, ``RunContextWrapper.context``) that returns the conversation's session
        (keep one per conversation id; share one :class:`~loopguard.ToolGuard` between them
        with ``Session(conversation_id, guard=tool_guard)``).
    stream_config : StreamConfig | Mapping | None
        The policy of :meth:`stream_events` (default ``mode="cut"``).

    Raises
    ------
    TypeError
        for a ``session`` that is neither a :class:`Session` nor callable.

    Source: issue 19 item 3; ``ecosystem.md`` §4.1-4.2.
    """

    def __init__(
        self,
        session: SessionSource | None = None,
        *,
        stream_config: StreamConfig | Mapping[str, Any] | None = None,
    ) -> None:
        if session is None:
            session = Session()
        if not isinstance(session, Session) and not callable(session):
            raise TypeError(f"session must be a Session or a callable, not {type(session).__name__}")
        self._source = session
        self.stream_config = StreamConfig.coerce(stream_config if stream_config is not None else {"mode": "cut"})
        self._notices: dict[str, str] = {}
        self._streaming: set[int] = set()  # id() of the sessions a stream_events() feeds
        self.input_guardrail: Any = ToolInputGuardrail(self._check_input, name="loopguard")
        self.output_guardrail: Any = ToolOutputGuardrail(self._check_output, name="loopguard")
        self.hooks: LoopGuardHooks = LoopGuardHooks(self)

    def session_for(self, context: Any) -> Session:
        """The session of a run whose context object is ``context``."""
        source = self._source
        return source if isinstance(source, Session) else source(context)

    async def _check_input(self, data: Any) -> Any:
        ctx = data.context
        tool = ctx.tool_name
        try:
            verdict = await self.session_for(ctx.context).atool_call(tool, ctx.tool_arguments, call_id=ctx.tool_call_id)
        except Exception as exc:
            logger.warning(
                "loopguard error before %s (%s); the call goes through", shown_name(tool), type(exc).__name__
            )
            return ToolGuardrailFunctionOutput.allow()
        if verdict.action == "cancel":
            logger.info("cancel before %s: %s", shown_name(tool), verdict.kind)
            return ToolGuardrailFunctionOutput.raise_exception(output_info=_info(verdict))
        if verdict.action == "deny":
            return ToolGuardrailFunctionOutput.reject_content(verdict.reason, output_info=_info(verdict))
        if verdict.action == "notice" and verdict.reason:
            if len(self._notices) >= _MAX_PENDING:
                self._notices.pop(next(iter(self._notices)))
            self._notices[ctx.tool_call_id] = verdict.reason
        return ToolGuardrailFunctionOutput.allow(output_info=_info(verdict) if verdict.kind else None)

    async def _check_output(self, data: Any) -> Any:
        ctx = data.context
        tool, result = ctx.tool_name, data.output
        notice = self._notices.pop(ctx.tool_call_id, None)
        try:
            session = self.session_for(ctx.context)
            verdict = await session.atool_result(tool, ctx.tool_arguments, result, call_id=ctx.tool_call_id)
        except Exception as exc:
            logger.warning(
                "loopguard error after %s (%s); the result goes through", shown_name(tool), type(exc).__name__
            )
            verdict = Verdict("allow")
        if verdict.action == "cancel":
            logger.info("cancel after %s: %s", shown_name(tool), verdict.kind)
            return ToolGuardrailFunctionOutput.raise_exception(output_info=_info(verdict))
        texts = [t for t in (notice, *(i.text for i in verdict.interventions)) if t]
        if not texts:
            return ToolGuardrailFunctionOutput.allow()
        if isinstance(result, str):
            return ToolGuardrailFunctionOutput.reject_content(
                result + "".join("\n\n" + t for t in texts), output_info=_info(verdict)
            )
        logger.info("%d notice(s) for %s not delivered (result is not a str)", len(texts), shown_name(tool))
        return ToolGuardrailFunctionOutput.allow(output_info=_info(verdict))

    def streaming(self, session: Session) -> bool:
        """Whether :meth:`stream_events` feeds ``session`` now (the hooks then leave its text alone)."""
        return id(session) in self._streaming

    def stream_events(self, result: Any, context: Any = None) -> GuardedRunStream:
        """Guard ``result = Runner.run_streamed(...)``: iterate ``async for event in
        guard.stream_events(result)`` instead of ``result.stream_events()``.

        ``context`` is the run's context object (only for a ``session`` function).  The events
        pass unchanged; when the stream guard stops a model response (a text loop), the run is
        cancelled with ``result.cancel()`` and iteration ends after the event that tripped it.
        ``.outcome`` is then the :class:`~loopguard.stream.StreamOutcome` of that response.
        Call it right after ``Runner.run_streamed`` and iterate it to the end (or break out of
        it): from the call until then the hooks leave the session's text to the stream guard.
        """
        return GuardedRunStream(self, result, self.session_for(context))


class GuardedRunStream:
    """The events of a streamed run under a stream guard (:meth:`AgentLoopGuard.stream_events`).

    Attributes
    ----------
    outcome : StreamOutcome | None
        The outcome of the last model response the guard watched (``.stopped`` after a cut).
    cancelled : bool
        Whether the guard cancelled the run.
    """

    def __init__(self, owner: AgentLoopGuard, result: Any, session: Session) -> None:
        self._owner, self._result, self._session = owner, result, session
        self.outcome: StreamOutcome | None = None
        self.cancelled = False
        self._guard: StreamGuard | None = None
        self._broken = False
        owner._streaming.add(id(session))  # now: the run's task starts (and calls the hooks) at the first await

    async def __aiter__(self) -> AsyncIterator[Any]:
        owner, key = self._owner, id(self._session)
        try:
            async for event in self._result.stream_events():
                yield event
                if event.type == "raw_response_event" and self._watch(event.data):
                    self.cancelled = True
                    self._result.cancel()
                    break
        finally:
            owner._streaming.discard(key)
            if self._guard is not None and self.outcome is None:
                self.outcome = self._finish()

    def _watch(self, data: Any) -> bool:
        """Report one raw Responses event; ``True`` when the run must stop (fails open)."""
        if self._broken:
            return False
        try:
            kind = field(data, "type")
            if self._guard is None or kind == "response.created":
                if self._guard is not None:
                    self._finish()
                self._guard = StreamGuard(self._session, self._owner.stream_config)
                self.outcome = None
            action = apply_response_event(data, self._guard)
            if action.stop:
                self.outcome = self._finish()
                return True
            if kind in ("response.completed", "response.incomplete", "response.failed"):
                self.outcome = self._finish()
        except Exception as exc:
            logger.warning("loopguard error in a streamed run (%s); the stream goes on unwatched", type(exc).__name__)
            self._broken = True
        return False

    def _finish(self) -> StreamOutcome | None:
        guard, self._guard = self._guard, None
        return guard.finish() if guard is not None else None


class LoopGuardHooks(AgentHooks):  # type: ignore[misc]  # the host's class, Any to mypy
    """``Agent(hooks=...)`` feeding a :class:`AgentLoopGuard`'s session with every model response.

    ``inner``: the agent's own hooks, called after ours (``None``: none).
    Raises :class:`AgentLoopStopped` from ``on_llm_end`` on a ``cut``/``cancel`` verdict.
    """

    def __init__(self, owner: AgentLoopGuard, inner: Any = None) -> None:
        self._owner, self.inner = owner, inner

    def _session(self, context: Any, text: bool = True) -> Session | None:
        """The run's session; ``None`` on an error, or for ``text`` while a stream guard feeds it."""
        try:
            session = self._owner.session_for(context.context)
        except Exception as exc:
            logger.warning("loopguard error finding the session (%s); the run goes on unwatched", type(exc).__name__)
            return None
        return None if text and self._owner.streaming(session) else session

    async def on_llm_start(self, context: Any, agent: Any, system_prompt: str | None, input_items: list[Any]) -> None:
        """A model request: a new attempt of the session."""
        session = self._session(context)
        if session is not None:
            try:
                session.start_attempt()
            except Exception as exc:
                logger.warning("loopguard error at on_llm_start (%s); ignored", type(exc).__name__)
        if self.inner is not None:
            await self.inner.on_llm_start(context, agent, system_prompt, input_items)

    async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
        """The response's reasoning and text fed, its tool calls noted, the attempt ended."""
        session = self._session(context)
        verdict = _fed(session, response) if session is not None else None
        if verdict is not None and verdict.stop:
            logger.info("model output stopped: %s %s", verdict.action, verdict.kind)
            raise AgentLoopStopped(verdict.action, verdict.kind, verdict.reason)
        if self.inner is not None:
            await self.inner.on_llm_end(context, agent, response)

    async def on_end(self, context: Any, agent: Any, output: Any) -> None:
        """The agent's final output: the end of the session's turn (``empty_turn``)."""
        session = self._session(context, text=False)
        if session is not None:
            try:
                verdict = session.end_turn()
                if verdict.kind is not None:
                    logger.info("end of turn: %s %s", verdict.action, verdict.kind)
            except Exception as exc:
                logger.warning("loopguard error at on_end (%s); ignored", type(exc).__name__)
        if self.inner is not None:
            await self.inner.on_end(context, agent, output)

    async def on_start(self, context: Any, agent: Any) -> None:
        if self.inner is not None:
            await self.inner.on_start(context, agent)

    async def on_handoff(self, context: Any, agent: Any, source: Any) -> None:
        if self.inner is not None:
            await self.inner.on_handoff(context, agent, source)

    async def on_tool_start(self, context: Any, agent: Any, tool: Any) -> None:
        if self.inner is not None:
            await self.inner.on_tool_start(context, agent, tool)

    async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: Any) -> None:
        if self.inner is not None:
            await self.inner.on_tool_end(context, agent, tool, result)


def _fed(session: Session, response: Any) -> Verdict | None:
    """Feed one model response to ``session`` and end the attempt; ``None`` on a guard error."""
    try:
        for item in field(response, "output") or ():
            kind = field(item, "type")
            if kind == "message":
                for part in field(item, "content") or ():
                    text = field(part, "text")
                    if field(part, "type") == "output_text" and isinstance(text, str) and text:
                        session.feed(text, "text")
            elif kind == "reasoning":
                for part in [*(field(item, "summary") or ()), *(field(item, "content") or ())]:
                    text = field(part, "text")
                    if isinstance(text, str) and text:
                        session.feed(text, "reasoning")
            elif kind == "function_call":
                name = field(item, "name")
                if isinstance(name, str) and name:
                    session.note_tool_call(name, field(item, "arguments"))
        return session.end_attempt()
    except Exception as exc:
        logger.warning("loopguard error at on_llm_end (%s); the run goes on", type(exc).__name__)
        return None


def guard_agent(
    agent: Any,
    session: SessionSource | AgentLoopGuard | None = None,
    *,
    stream_config: StreamConfig | Mapping[str, Any] | None = None,
) -> Any:
    """A copy of ``agent`` with loopguard attached: the input and output guardrails on every
    ``FunctionTool`` (copies; the originals are untouched, their own guardrails run first) and
    :class:`LoopGuardHooks` (chaining the agent's own hooks).

    Parameters
    ----------
    agent : agents.Agent
    session : Session | callable | AgentLoopGuard | None
        As for :class:`AgentLoopGuard` (or one ready-made; then ``stream_config`` is unused).
    stream_config : StreamConfig | Mapping | None
        As for :class:`AgentLoopGuard`.

    Returns
    -------
    agents.Agent
        ``agent.clone(tools=..., hooks=...)``.  To watch a streamed run, make the
        :class:`AgentLoopGuard` first and pass it here and to :meth:`AgentLoopGuard.stream_events`.

    Raises ``TypeError`` when ``agent`` is not an ``agents.Agent`` (and as :class:`AgentLoopGuard`
    for ``session``).

    Other tool kinds (hosted, MCP servers' tools) have no tool guardrails in the SDK: they are
    left as they are.  Handoff targets are not guarded: call ``guard_agent`` on each, with the
    same :class:`AgentLoopGuard`.
    """
    if not isinstance(agent, Agent):
        raise TypeError(f"agent must be an agents.Agent, not {type(agent).__name__}")
    owner = session if isinstance(session, AgentLoopGuard) else AgentLoopGuard(session, stream_config=stream_config)
    tools: list[Any] = []
    for tool in agent.tools:
        if isinstance(tool, FunctionTool):
            tool = copy.copy(tool)
            tool.tool_input_guardrails = [*(tool.tool_input_guardrails or ()), owner.input_guardrail]
            tool.tool_output_guardrails = [*(tool.tool_output_guardrails or ()), owner.output_guardrail]
        tools.append(tool)
    hooks = LoopGuardHooks(owner, agent.hooks)
    return agent.clone(tools=tools, hooks=hooks)
