"""MCP: a ``fastmcp`` middleware that puts every ``tools/call`` behind a :class:`~loopguard.ToolGuard`,
and a guarding proxy in front of any MCP server (issue 19, item 5; ``shared/research/ecosystem.md`` §4.3).

:class:`LoopGuardMiddleware` (``server.add_middleware(LoopGuardMiddleware(guard))``) asks
:meth:`ToolGuard.abefore_call` before the tool runs and :meth:`ToolGuard.aafter_call` after it.  A
denied or cancelled call is not run: the client gets a tool result with ``isError: true`` whose text
is the guard's reason (the MCP spec's channel for tool failures the model should see and correct),
never a protocol error.  :func:`guard_proxy` builds a ``fastmcp`` proxy server for any MCP target (a
URL, a server script, an MCP config, a ``FastMCP`` server, a client) with the middleware attached;
``python -m loopguard.integrations.mcp TARGET`` serves one over stdio.

Needs the ``mcp`` extra (``pip install "loopguard[mcp]"``: ``fastmcp`` 4.2, ``mcp`` 2.3);
``import loopguard`` never imports it.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import logging
from collections.abc import Awaitable, Callable, Hashable, Sequence
from pathlib import Path
from typing import Any

from ..guard.core import ToolGuard
from ..guard.decisions import Decision, Intervention
from ..terminal import shown_name

# imported by name, so that ``mypy --strict`` passes with or without the extra installed (the
# host's types are ``Any`` here; the hosts tests run this module against the real packages)
try:
    mt: Any = importlib.import_module("mcp_types")
    _server: Any = importlib.import_module("fastmcp.server")
    _middleware: Any = importlib.import_module("fastmcp.server.middleware")
    _tools: Any = importlib.import_module("fastmcp.tools.base")
    _version: Any = importlib.import_module("mcp_types.version")
    _sessions: Any = importlib.import_module("fastmcp.server.sessions")
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError(
        f'loopguard.integrations.mcp needs fastmcp and mcp: pip install "loopguard[mcp]" ({exc})'
    ) from exc

create_proxy: Any = _server.create_proxy
Middleware: Any = _middleware.Middleware
ToolResult: Any = _tools.ToolResult
MODERN_PROTOCOL_VERSIONS: Any = _version.MODERN_PROTOCOL_VERSIONS
Result = Any  # a fastmcp ToolResult
Context = Any  # a fastmcp MiddlewareContext[CallToolRequestParams]


__all__ = ["DEFAULT_SESSION", "LoopGuardMiddleware", "guard_proxy", "main", "mcp_principal_key", "mcp_session_id"]

logger = logging.getLogger("loopguard.integrations.mcp")

DEFAULT_SESSION = "mcp"
"""The session key of calls on a stdio or in-memory server that carry no MCP session and no
authenticated user (see :func:`mcp_session_id`, :func:`mcp_principal_key`)."""

SessionKey = Callable[[Context], Hashable | None]
Interventions = Callable[[list[Intervention]], None]


def mcp_session_id(context: Context) -> str | None:
    """The MCP session of a request: the id ``fastmcp`` gives a handshake-era connection (the
    negotiated ``Mcp-Session-Id`` over Streamable HTTP, an id generated once per connection on
    stdio, SSE and in-memory transports), stable across that client's calls.

    ``None`` on a 2026-07-28 connection (``fastmcp``'s default since 4.x): that protocol has no
    session, every request is a connection of its own and its ``session_id`` is new each time, so
    it cannot tie one call to the next.  ``None`` too outside a request (no ``fastmcp`` context).
    """
    ctx = context.fastmcp_context
    request = ctx.request_context if ctx is not None else None
    if ctx is None or request is None or request.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return None
    sid = ctx.session_id
    return None if sid is None else str(sid)


HTTP_TRANSPORTS = frozenset({"sse", "streamable-http"})
"""Transports serving many clients: a call there without a session or a user is not tied to any."""


def mcp_principal_key(context: Context) -> str | None:
    """``"user:<16 hex>"``, a hash of the authenticated principal of a 2026-07-28 request (the
    ``(client_id, issuer, subject)`` of its access token, as ``fastmcp``'s own session state keys
    on it); ``None`` without auth, on a handshake-era connection, or outside a request."""
    ctx = context.fastmcp_context
    request = ctx.request_context if ctx is not None else None
    if request is None or request.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return None
    principal = _sessions.current_principal()
    if not isinstance(principal, str):
        return None
    return "user:" + hashlib.sha256(principal.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _serves_many(context: Context) -> bool:
    """The server runs on an HTTP transport (many clients), as far as ``fastmcp`` tells."""
    ctx = context.fastmcp_context
    return ctx is not None and ctx.transport in HTTP_TRANSPORTS


def _error_result(text: str) -> Result:
    """The ``isError`` tool result carrying ``text`` (the guard's reason) as its only content."""
    return ToolResult(content=[mt.TextContent(type="text", text=text)], is_error=True)


def _observed(result: Result) -> Any:
    """What the guard hashes of a tool result: its text when every block is text (so the line
    rules see lines), else the blocks and structured content as JSON-like data."""
    blocks = result.content
    if all(isinstance(b, mt.TextContent) for b in blocks):
        return "\n".join(b.text for b in blocks if isinstance(b, mt.TextContent))
    dumped = [b.model_dump(mode="json", exclude_none=True) for b in blocks]
    return {"content": dumped, "structured": result.structured_content}


def _with_notes(result: Result, notes: list[Intervention]) -> Result:
    """``result`` with one text block per intervention appended (``isError`` for a cancel)."""
    extra = [mt.TextContent(type="text", text=n.text) for n in notes]
    stop = any(n.action == "cancel" for n in notes)
    return ToolResult(
        content=[*result.content, *extra],
        structured_content=None if stop else result.structured_content,
        meta=result.meta,
        is_error=result.is_error or stop,
    )


class LoopGuardMiddleware(Middleware):  # type: ignore[misc]  # the host's class, Any to mypy
    """A ``fastmcp`` middleware (``on_call_tool``) that runs every tool call through a :class:`ToolGuard`.

    Per call: :meth:`ToolGuard.abefore_call` with the tool's name and arguments.  ``deny`` or
    ``cancel``: the tool is not run and the client gets ``CallToolResult(isError=True)`` whose one
    text block is ``decision.reason`` (``fastmcp``'s ``Client.call_tool`` raises it as a
    ``ToolError``; ``call_tool_mcp`` and other clients see the result).  Otherwise the tool runs and
    :meth:`ToolGuard.aafter_call` sees its result (the text of its blocks; ``error=True`` for an
    ``isError`` result or an exception, which then propagates unchanged).  Interventions
    (a ``notice`` decision's reason, then the reminders of ``aafter_call``) go to
    ``on_intervention(list)`` when given, else are appended to the result as text blocks; a
    ``cancel`` intervention (the circuit breaker) marks the result ``isError`` (structured content
    dropped) with its text appended, with ``on_intervention`` too, so the agent stops and the model
    reads why.  A result with no intervention is returned untouched.

    Parameters
    ----------
    guard : ToolGuard | None
        The guard (``None``: a new ``ToolGuard()`` with the default configuration).
    session_key : callable, optional
        ``session_key(context) -> hashable | None``: the session of a call, tried first (e.g. a
        header, the authenticated principal, a tenant).  ``None`` falls through.
    default_session : Hashable
        The session of calls that nothing else ties to a client on a stdio or in-memory server (one
        client): when ``session_key`` gives ``None``, the request has no MCP session
        (:func:`mcp_session_id`: a 2026-07-28 connection) and no authenticated user
        (:func:`mcp_principal_key`).  Default :data:`DEFAULT_SESSION` (``"mcp"``).  On an HTTP
        transport such a call could be any client's, so it is not guarded (one warning per
        middleware: a shared session would let one agent's calls deny another's); pass
        ``session_key`` (a header, a tenant) to guard them.
    on_intervention : callable, optional
        Receives the interventions instead of the client.

    The session key is resolved in that order: ``session_key(context)``, the MCP session id, the
    authenticated user, then ``default_session`` (stdio, in-memory) or none (HTTP: unguarded).  A
    guard error (a bug, a bad input) never fails the call: it is logged (its type only: the
    message may quote arguments) and the call goes through unguarded.
    Arguments never reach a log.

    Raises
    ------
    TypeError
        ``guard`` is not a :class:`ToolGuard`, or ``session_key`` / ``on_intervention`` is not callable.
    """

    def __init__(
        self,
        guard: ToolGuard | None = None,
        *,
        session_key: SessionKey | None = None,
        default_session: Hashable = DEFAULT_SESSION,
        on_intervention: Interventions | None = None,
    ) -> None:
        if guard is None:
            guard = ToolGuard()
        if not isinstance(guard, ToolGuard):
            raise TypeError(f"guard must be a ToolGuard, not {type(guard).__name__}")
        for name, fn in (("session_key", session_key), ("on_intervention", on_intervention)):
            if fn is not None and not callable(fn):
                raise TypeError(f"{name} must be callable, not {type(fn).__name__}")
        self.guard, self.session_key, self.default_session = guard, session_key, default_session
        self.on_intervention = on_intervention
        self._warned_unkeyed = False

    def session_of(self, context: Context) -> Hashable | None:
        """The session key of a call: ``session_key(context)``, the MCP session id, the
        authenticated user (:func:`mcp_principal_key`), then ``default_session`` -- or ``None``
        (the call is not guarded) on an HTTP transport, where it could be any client's."""
        if self.session_key is not None:
            key = self.session_key(context)
            if key is not None:
                return key
        sid = mcp_session_id(context) or mcp_principal_key(context)
        if sid is not None:
            return sid
        return None if _serves_many(context) else self.default_session

    async def on_call_tool(
        self,
        context: Context,
        call_next: Callable[[Context], Awaitable[Result]],
    ) -> Result:
        """Guard one ``tools/call``: deny or cancel → an ``isError`` result (the tool not run)."""
        tool, args = context.message.name, context.message.arguments or {}
        try:
            sid = self.session_of(context)
            decision = None if sid is None else await self.guard.abefore_call(sid, tool, args)
        except Exception as exc:
            _fail_open("before", tool, exc)
            return await call_next(context)
        if sid is None or decision is None:
            self._unkeyed()
            return await call_next(context)
        if not decision.allowed:
            return _error_result(decision.reason)
        try:
            result = await call_next(context)
        except Exception as exc:
            await self._failed(sid, tool, args, exc)
            raise
        return await self._after(sid, tool, args, decision, result)

    def _unkeyed(self) -> None:
        if not self._warned_unkeyed:
            self._warned_unkeyed = True
            logger.warning(
                "loopguard: MCP tool calls over HTTP without a session or an authenticated user are"
                " not guarded (they could be any client's); pass session_key= to LoopGuardMiddleware"
            )

    async def _after(self, sid: Hashable, tool: str, args: Any, decision: Decision, result: Result) -> Result:
        """The result, the guard told of it and its interventions delivered (fail open)."""
        try:
            notes = await self.guard.aafter_call(sid, tool, args, _observed(result), error=bool(result.is_error))
            if decision.action == "notice" and decision.reason:
                kind, rule, index = str(decision.kind), decision.rule, decision.call_index
                first = Intervention("notice", kind, rule, decision.reason, tool, index, decision.evidence)
                notes = [first, *notes]
            if not notes:
                return result
            if self.on_intervention is not None:
                self.on_intervention(notes)
                stop = [n for n in notes if n.action == "cancel"]
                return _with_notes(result, stop) if stop else result
            return _with_notes(result, notes)
        except Exception as exc:
            _fail_open("after", tool, exc)
            return result

    async def _failed(self, sid: Hashable, tool: str, args: Any, exc: BaseException) -> None:
        """Tell the guard of a tool that raised; the tool's exception always wins."""
        try:
            await self.guard.aafter_call(sid, tool, args, f"{type(exc).__name__}: {exc}", error=True)
        except Exception as err:
            _fail_open("after", tool, err)


def _fail_open(seam: str, tool: str, exc: BaseException) -> None:
    """Log a guard error by its type only (its message may quote arguments); the call goes on."""
    logger.warning(
        "loopguard %s_call failed for MCP tool %s (%s); the call goes through unguarded",
        seam,
        shown_name(tool),
        type(exc).__name__,
    )


def guard_proxy(
    target: Any,
    guard: ToolGuard | None = None,
    *,
    session_key: SessionKey | None = None,
    default_session: Hashable = DEFAULT_SESSION,
    on_intervention: Interventions | None = None,
    mode: str | None = None,
    **settings: Any,
) -> Any:
    """A ``fastmcp`` proxy server in front of ``target`` with a :class:`LoopGuardMiddleware` attached.

    ``target`` is anything ``fastmcp.server.create_proxy`` takes: a URL (``"http://host/mcp"``), a
    server script path, an MCP config dict, a ``FastMCP`` server, a ``fastmcp.Client`` or a
    transport.  Every ``tools/call`` through the proxy is guarded; lists, resources and prompts
    pass through.  ``mode`` and ``settings`` (``name=``, ...) go to ``create_proxy`` (``mode=None``:
    the backend speaks the front connection's protocol era).  ``guard``, ``session_key``,
    ``default_session`` and ``on_intervention`` are the middleware's.  Run it like any server
    (``proxy.run()`` serves stdio; ``proxy.run(transport="http", port=...)``).

    Raises
    ------
    TypeError
        as :class:`LoopGuardMiddleware`; ``create_proxy``'s errors for a target it cannot use.
    """
    middleware = LoopGuardMiddleware(
        guard, session_key=session_key, default_session=default_session, on_intervention=on_intervention
    )
    proxy = create_proxy(target, mode=mode, **settings)
    proxy.add_middleware(middleware)
    return proxy


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m loopguard.integrations.mcp TARGET [--transport stdio|http] [--port N]``: serve a
    guarding proxy (default guard configuration) in front of ``TARGET`` (a URL or a server script)."""
    parser = argparse.ArgumentParser(prog="python -m loopguard.integrations.mcp", description=main.__doc__)
    parser.add_argument("target", help="the MCP server to guard: a URL or a server script path")
    parser.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    parser.add_argument("--port", type=int, default=8000, help="the port with --transport http")
    parser.add_argument("--session", default=DEFAULT_SESSION, help="the session of calls without an MCP session")
    ns = parser.parse_args(argv)
    target: str | Path = ns.target if "://" in ns.target else Path(ns.target)  # a script: stdio
    proxy = guard_proxy(target, default_session=ns.session, name="loopguard")
    if ns.transport == "http":
        proxy.run(transport="http", port=ns.port, show_banner=False)
    else:
        proxy.run(show_banner=False)


if __name__ == "__main__":  # pragma: no cover - the command line
    main()
