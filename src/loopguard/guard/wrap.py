"""Putting a tool body behind a guard: :func:`wrap_tool` (the :class:`~loopguard.ToolGuard`) and
the call plumbing it shares with :func:`loopguard.wrap_execute` (the :class:`~loopguard.LoopBrake`):
which argument is the tool's, which keywords are the guard's, sync or async."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, Literal

from ..errors import reduce_error
from ..terminal import shown_name
from .core import ToolGuard, _check_tool
from .decisions import Decision, Intervention, logger

__all__ = ["ToolCallDenied", "ToolLoopCancelled", "accepts_keyword", "is_async", "split_call", "wrap_tool"]


def accepts_keyword(fn: Callable[..., Any], name: str) -> bool:
    """Whether ``fn`` takes a keyword ``name`` (a parameter of that name or ``**kwargs``)."""
    try:
        # not through __wrapped__: a wrapper (ours included) takes **kwargs and must get them
        params = inspect.signature(fn, follow_wrapped=False).parameters
    except (TypeError, ValueError):
        return False
    for p in params.values():
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            return True
        if p.name == name and p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY):
            return True
    return False


def is_async(fn: Callable[..., Any]) -> bool:
    """Whether calling ``fn`` returns a coroutine (an ``async def``, or an object whose ``__call__`` is one)."""
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(type(fn), "__call__", None)  # noqa: B004 - the class attribute, not callable()
    return call is not None and not inspect.isfunction(fn) and inspect.iscoroutinefunction(call)


def split_call(
    args: tuple[Any, ...], kwargs: dict[str, Any], default_session: Any, passes: tuple[bool, bool]
) -> tuple[Any, Any, Any]:
    """``(session id, call id, tool arguments)`` of a wrapped call.

    The tool arguments are the first positional argument, else the keyword arguments (as a
    dict).  The ``session_id`` and ``call_id`` keywords are the wrapper's: taken out of
    ``kwargs`` (``None`` keeps ``default_session``), and put back only when the body takes
    them (``passes``: it takes ``session_id``, it takes ``call_id``).
    """
    has_sid, has_cid = "session_id" in kwargs, "call_id" in kwargs
    given_sid = kwargs.pop("session_id", None)
    cid = kwargs.pop("call_id", None)
    sid = default_session if given_sid is None else given_sid
    payload: Any = args[0] if args else dict(kwargs)
    if has_sid and passes[0]:
        kwargs["session_id"] = given_sid
    if has_cid and passes[1]:
        kwargs["call_id"] = cid
    return sid, cid, payload


class ToolLoopCancelled(RuntimeError):
    """The guard says the turn must stop (``circuit_breaker``, ``repeat_streak``, ``strikes``).

    Raised by :func:`wrap_tool` wrappers.  The message is the text meant for
    the model (redacted; arguments capped at ``arguments_preview_chars``).

    Attributes
    ----------
    kind : str
        ``circuit_breaker``, ``repeat_streak``, ``strikes``, …
    rule : str
        The rule (one of :data:`loopguard.GUARD_RULES`).
    tool : str
        The tool name.
    result : Any
        The tool's result when the tool had already run (the breaker fired
        after it), else ``None``.

    Pickles (and copies) with its message and attributes; it holds no argument.
    """

    def __init__(self, kind: str, rule: str, text: str, tool: str, result: Any = None) -> None:
        super().__init__(text)
        self.kind, self.rule, self.tool, self.result = kind, rule, tool, result

    def __reduce__(self) -> tuple[Any, ...]:
        return reduce_error(self)


class ToolCallDenied(RuntimeError):
    """A call denied before it ran (``on_deny="raise"`` in :func:`wrap_tool`).

    Attributes
    ----------
    decision : Decision
        The guard's decision; ``str(error)`` is its reason.

    Pickles (and copies) with its message and decision; the decision holds no argument
    (its reason shows the redacted, capped preview the model was given).
    """

    def __init__(self, decision: Decision) -> None:
        super().__init__(decision.reason)
        self.decision = decision

    def __reduce__(self) -> tuple[Any, ...]:
        return reduce_error(self)


class _Guarded:
    """One :func:`wrap_tool` wrapper's body, guard and settings."""

    def __init__(
        self,
        fn: Callable[..., Any],
        guard: ToolGuard,
        tool: str,
        session_id: Any,
        on_deny: Literal["return", "raise"],
        on_intervention: Callable[[list[Intervention]], None] | None,
    ) -> None:
        self.fn, self.guard, self.tool, self.session_id = fn, guard, tool, session_id
        self.on_deny, self.on_intervention = on_deny, on_intervention
        self.passes = (accepts_keyword(fn, "session_id"), accepts_keyword(fn, "call_id"))

    def before(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any, Any, Decision]:
        sid, cid, payload = split_call(args, kwargs, self.session_id, self.passes)
        decision = self.guard.before_call(sid, self.tool, payload, call_id=cid)
        if decision.action == "cancel":
            raise ToolLoopCancelled(str(decision.kind), decision.rule, decision.reason, self.tool)
        return sid, cid, payload, decision

    def denied(self, decision: Decision) -> Any:
        if self.on_deny == "raise":
            raise ToolCallDenied(decision)
        return decision.reason

    def after(self, sid: Any, cid: Any, payload: Any, decision: Decision, result: Any, error: bool) -> Any:
        notes = self.guard.after_call(sid, self.tool, payload, result, error=error, call_id=cid)
        return self.delivered(decision, notes, result, error)

    def delivered(self, decision: Decision, notes: list[Intervention], result: Any, error: bool) -> Any:
        """The result with the interventions delivered; raises on a cancel."""
        tool = self.tool
        if decision.action == "notice" and decision.reason:
            first = Intervention(
                "notice",
                str(decision.kind),
                decision.rule,
                decision.reason,
                tool,
                decision.call_index,
                decision.evidence,
            )
            notes = [first, *notes]
        if notes:
            if self.on_intervention is not None:
                self.on_intervention(notes)
            elif isinstance(result, str) and not error:
                result = result + "".join("\n\n" + n.text for n in notes)
            else:
                logger.info(
                    "%d intervention(s) for %s not delivered (result is not a str)", len(notes), shown_name(tool)
                )
        stop = next((n for n in notes if n.action == "cancel"), None)
        if stop is not None:
            raise ToolLoopCancelled(stop.kind, stop.rule, stop.text, tool, result)
        return result

    def failed(self, sid: Any, cid: Any, payload: Any, decision: Decision, exc: BaseException) -> None:
        """Record a failed body; the host's exception always wins over anything the guard says."""
        try:
            self.after(sid, cid, payload, decision, f"{type(exc).__name__}: {exc}", True)
        except Exception:
            logger.info(
                "guard signal after a failed %s call dropped: the tool's exception propagates", shown_name(self.tool)
            )

    def call(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        sid, cid, payload, decision = self.before(args, kwargs)
        if not decision.allowed:
            return self.denied(decision)
        try:
            result = self.fn(*args, **kwargs)
        except Exception as exc:
            self.failed(sid, cid, payload, decision, exc)
            raise
        return self.after(sid, cid, payload, decision, result, False)

    def wrapper(self) -> Callable[..., Any]:
        """The wrapper function: ``async def`` for an async body."""
        if is_async(self.fn):

            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                return await self.acall(args, kwargs)

            return functools.wraps(self.fn)(async_wrapper)

        def sync_wrapper(*args: Any, **kwargs: Any) -> Any:
            return self.call(args, kwargs)

        return functools.wraps(self.fn)(sync_wrapper)

    async def acall(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """:meth:`call` for an async body: the guard's async twins (``redis.asyncio`` with a
        shared store), the same decisions."""
        sid, cid, payload = split_call(args, kwargs, self.session_id, self.passes)
        decision = await self.guard.abefore_call(sid, self.tool, payload, call_id=cid)
        if decision.action == "cancel":
            raise ToolLoopCancelled(str(decision.kind), decision.rule, decision.reason, self.tool)
        if not decision.allowed:
            return self.denied(decision)
        try:
            result = await self.fn(*args, **kwargs)
        except Exception as exc:
            await self.afailed(sid, cid, payload, decision, exc)
            raise
        notes = await self.guard.aafter_call(sid, self.tool, payload, result, error=False, call_id=cid)
        return self.delivered(decision, notes, result, False)

    async def afailed(self, sid: Any, cid: Any, payload: Any, decision: Decision, exc: BaseException) -> None:
        """:meth:`failed` for an async body."""
        text = f"{type(exc).__name__}: {exc}"
        try:
            notes = await self.guard.aafter_call(sid, self.tool, payload, text, error=True, call_id=cid)
            self.delivered(decision, notes, text, True)
        except Exception:
            logger.info(
                "guard signal after a failed %s call dropped: the tool's exception propagates", shown_name(self.tool)
            )


def wrap_tool(
    fn: Callable[..., Any],
    guard: ToolGuard,
    *,
    tool: str,
    session_id: Any = None,
    on_deny: Literal["return", "raise"] = "return",
    on_intervention: Callable[[list[Intervention]], None] | None = None,
) -> Callable[..., Any]:
    """Put a tool body behind a :class:`ToolGuard` (sync or ``async def``; spec §5.2, seed 001 seams).

    Before the body: :meth:`ToolGuard.before_call`.  A denied call does not
    run: the wrapper returns ``decision.reason`` as the tool's result (the
    seed's ``tools/pre-execute`` deny: the reason is what the model reads),
    or raises :class:`ToolCallDenied` with ``on_deny="raise"``.  A cancel
    raises :class:`ToolLoopCancelled`.

    After the body: :meth:`ToolGuard.after_call` with the result (a body that
    raises is recorded as ``error=True`` with ``"ExceptionType: message"`` as
    its result, and the exception propagates unchanged).  Interventions go to
    ``on_intervention(list)`` when given; otherwise, for a ``str`` result,
    their texts are appended to it (one blank line before each), and for
    other results they are only logged.  A ``cancel`` intervention raises
    :class:`ToolLoopCancelled` carrying the result.

    Arguments are taken as in :func:`loopguard.wrap_execute` (:func:`split_call`): the first
    positional argument, else the keyword arguments; ``session_id=`` and
    ``call_id=`` keywords of a call are the guard's (passed on only if the
    body accepts them).

    Raises
    ------
    TypeError
        ``tool`` is not a non-empty ``str``.
    ValueError
        ``on_deny`` is not ``"return"`` or ``"raise"``.

    Examples
    --------
    >>> guard = ToolGuard()
    >>> def grep(args):
    ...     return "a.py:3: needle"
    >>> grep = wrap_tool(grep, guard, tool="grep")
    >>> grep({"pattern": "needle", "path": "."})
    'a.py:3: needle'
    >>> print(grep({"pattern": "needle", "path": "."}).splitlines()[2][:60])
    [loopguard] `grep` with identical arguments has now returned
    >>> grep({"pattern": "needle", "path": "."}).startswith("[loopguard] Duplicate tool call blocked")
    True
    """
    tool = _check_tool(tool)
    if on_deny not in ("return", "raise"):
        raise ValueError(f"on_deny must be 'return' or 'raise', not {on_deny!r}")
    return _Guarded(fn, guard, tool, session_id, on_deny, on_intervention).wrapper()
