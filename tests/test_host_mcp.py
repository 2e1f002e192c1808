"""MCP (issue 19, item 5): the fastmcp middleware and the guarding proxy, end to end with real
in-process fastmcp servers and clients (fastmcp's in-memory transport)."""

from __future__ import annotations

import asyncio
import logging
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from host_support import require_host

host = require_host("fastmcp", "mcp")
pytestmark = pytest.mark.hosts

from fastmcp import Client, FastMCP  # noqa: E402
from fastmcp.server import create_proxy  # noqa: E402

from loopguard import ToolGuard  # noqa: E402
from loopguard.integrations.mcp import DEFAULT_SESSION, LoopGuardMiddleware, guard_proxy  # noqa: E402

GREP = {"pattern": "TODO", "path": "src"}
GREP_OUT = "src/a.py:3: # TODO: retry\nsrc/b.py:9: # TODO: log"
CANARY = "CnyMcpArg42"


def make_server(runs: dict[str, int], middleware: LoopGuardMiddleware | None = None) -> FastMCP[Any]:
    """A server with a read-only ``grep`` (a fixed answer), a ``read`` (one answer per path) and a
    ``fail`` tool; ``runs`` counts each body's runs."""
    server: FastMCP[Any] = FastMCP("files")

    @server.tool
    def grep(pattern: str, path: str, token: str = "") -> str:
        runs["grep"] = runs.get("grep", 0) + 1
        return GREP_OUT

    @server.tool
    def read(path: str) -> str:
        runs["read"] = runs.get("read", 0) + 1
        return f"contents of {path}\nline 2 of {path}"

    @server.tool
    def fail(path: str) -> str:
        runs["fail"] = runs.get("fail", 0) + 1
        raise ValueError(f"no such file: {path}")

    if middleware is not None:
        server.add_middleware(middleware)
    return server


async def call_all(target: Any, calls: list[tuple[str, dict[str, Any]]], **client: Any) -> list[Any]:
    """Each call through one in-memory client, as the protocol's ``CallToolResult``."""
    async with Client(target, **client) as c:
        return [await c.call_tool_mcp(name, args) for name, args in calls]


def bare(calls: list[tuple[str, dict[str, Any]]], results: dict[str, str]) -> list[tuple[bool, list[str]]]:
    """What a bare ToolGuard does with the same calls: per call (allowed, the texts the client
    should get: the deny reason, or the result then each notice)."""
    guard, out = ToolGuard(), []
    for name, args in calls:
        decision = guard.before_call("bare", name, args)
        if not decision.allowed:
            out.append((False, [decision.reason]))
            continue
        result = results[name]
        notes = [decision.reason] if decision.action == "notice" and decision.reason else []
        notes += [n.text for n in guard.after_call("bare", name, args, result)]
        out.append((True, [result, *notes]))
    return out


def texts(result: Any) -> list[str]:
    return [block.text for block in result.content]


def dumped(results: list[Any]) -> list[dict[str, Any]]:
    return [r.model_dump(mode="json") for r in results]


def test_a_looping_client_is_stopped_at_the_call_a_bare_guard_denies() -> None:
    calls = [("grep", GREP)] * 10
    expected = bare(calls, {"grep": GREP_OUT})
    runs: dict[str, int] = {}
    got = asyncio.run(call_all(make_server(runs, LoopGuardMiddleware(ToolGuard())), calls))
    assert [(not r.is_error, texts(r)) for r in got] == expected
    first_deny = next(i for i, (allowed, _) in enumerate(expected) if not allowed)
    assert first_deny == 2  # by hand: two identical results, then the same request is denied (seed 001)
    assert [r.is_error for r in got][:3] == [False, False, True]
    assert texts(got[2])[0].startswith("[loopguard] Duplicate tool call blocked: `grep`")
    assert runs["grep"] == sum(allowed for allowed, _ in expected) == 3  # the tool body ran only when allowed
    assert all(r.structured_content is None for r in got if r.is_error)


def test_a_clean_client_gets_exactly_what_the_server_without_the_guard_gives() -> None:
    calls = [("grep", GREP), ("read", {"path": "src/a.py"}), ("grep", {"pattern": "retry", "path": "src"})]
    calls += [("read", {"path": f"src/{n}.py"}) for n in "bcdefg"] + [("read", {"path": "src/a.py"})]
    plain_runs: dict[str, int] = {}
    guarded_runs: dict[str, int] = {}
    plain = asyncio.run(call_all(make_server(plain_runs), calls))
    guarded = asyncio.run(call_all(make_server(guarded_runs, LoopGuardMiddleware()), calls))
    assert dumped(guarded) == dumped(plain)
    assert not any(r.is_error for r in guarded)
    assert guarded_runs == plain_runs == {"grep": 2, "read": 8}


def test_the_proxy_in_front_of_a_second_server_stops_the_same_loop() -> None:
    calls = [("grep", GREP)] * 8
    expected = bare(calls, {"grep": GREP_OUT})
    runs: dict[str, int] = {}
    proxy = guard_proxy(make_server(runs), ToolGuard(), name="guarded")
    got = asyncio.run(call_all(proxy, calls))
    assert [(not r.is_error, texts(r)) for r in got] == expected
    assert runs["grep"] == sum(allowed for allowed, _ in expected) == 3  # the upstream ran only allowed calls


def test_the_proxy_passes_a_clean_client_through_untouched() -> None:
    calls = [("grep", GREP), ("read", {"path": "a"}), ("read", {"path": "b"}), ("grep", {"pattern": "x", "path": "b"})]
    plain = asyncio.run(call_all(create_proxy(make_server({}), name="p"), calls))
    guarded = asyncio.run(call_all(guard_proxy(make_server({}), name="p"), calls))
    assert dumped(guarded) == dumped(plain)
    assert [texts(r)[0] for r in guarded][1] == "contents of a\nline 2 of a"


def test_a_failing_tool_loop_stops_where_a_bare_guard_fed_the_failures_stops() -> None:
    calls = [("fail", {"path": "missing.txt"})] * 5
    error = "ToolError: Error calling tool 'fail': no such file: missing.txt"  # what fastmcp raises through us
    guard, expected_allowed = ToolGuard(), []
    for name, args in calls:
        decision = guard.before_call("bare", name, args)
        expected_allowed.append(decision.allowed)
        if decision.allowed:
            guard.after_call("bare", name, args, error, error=True)
    runs: dict[str, int] = {}
    got = asyncio.run(call_all(make_server(runs, LoopGuardMiddleware(ToolGuard())), calls))
    assert all(r.is_error for r in got)
    denied = [texts(r)[0].startswith("[loopguard]") for r in got]
    assert denied == [not a for a in expected_allowed]
    assert True in denied
    assert runs["fail"] == sum(expected_allowed)
    assert texts(got[0]) == ["Error calling tool 'fail': no such file: missing.txt"]  # the tool's error unchanged


def test_legacy_connections_are_sessions_of_their_own() -> None:
    """Handshake-era clients: each connection's MCP session id is its session, so one client's
    loop does not deny another client's first call."""
    server = make_server({}, LoopGuardMiddleware())

    async def run() -> tuple[list[Any], Any]:
        async with Client(server, mode="legacy") as a, Client(server, mode="legacy") as b:
            looped = [await a.call_tool_mcp("grep", GREP) for _ in range(3)]
            return looped, await b.call_tool_mcp("grep", GREP)

    looped, other = asyncio.run(run())
    assert [r.is_error for r in looped] == [False, False, True]
    assert not other.is_error and texts(other) == [GREP_OUT]


def test_the_session_key_and_the_default_session() -> None:
    """2026-07-28 connections have no session: ``session_key`` decides, else ``default_session``."""
    seen: list[Any] = []

    class Recording(ToolGuard):
        async def abefore_call(self, session_id: Any, tool: str, args: Any, **kw: Any) -> Any:
            seen.append(session_id)
            return await super().abefore_call(session_id, tool, args, **kw)

    asyncio.run(call_all(make_server({}, LoopGuardMiddleware(Recording())), [("grep", GREP)] * 2))
    asyncio.run(call_all(make_server({}, LoopGuardMiddleware(Recording(), default_session="t1")), [("grep", GREP)]))
    keyed = LoopGuardMiddleware(Recording(), session_key=lambda ctx: f"tool:{ctx.message.name}")
    asyncio.run(call_all(make_server({}, keyed), [("read", {"path": "a"})]))
    assert seen == [DEFAULT_SESSION, DEFAULT_SESSION, "t1", "tool:read"]
    with pytest.raises(TypeError):
        LoopGuardMiddleware(object())  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        LoopGuardMiddleware(session_key="header")  # type: ignore[arg-type]


class Broken(ToolGuard):
    """A guard with a bug whose message quotes the arguments."""

    def __init__(self, where: str) -> None:
        super().__init__()
        self.where = where

    async def abefore_call(self, session_id: Any, tool: str, args: Any, **kw: Any) -> Any:
        if self.where == "before":
            raise RuntimeError(f"bug with {args}")
        return await super().abefore_call(session_id, tool, args, **kw)

    async def aafter_call(self, session_id: Any, tool: str, args: Any, result: Any, **kw: Any) -> Any:
        raise RuntimeError(f"bug with {args}")


def broken_key(context: Any) -> str:
    raise RuntimeError(f"bug with {context.message.arguments}")


@pytest.mark.parametrize("where", ["before", "after", "session_key"])
def test_a_guard_error_lets_the_call_through_and_logs_no_argument(where: str, caplog: pytest.LogCaptureFixture) -> None:
    calls = [("grep", {"pattern": CANARY, "path": "src"})] * 4
    runs: dict[str, int] = {}
    plain = asyncio.run(call_all(make_server({}), calls))
    if where == "session_key":
        middleware = LoopGuardMiddleware(ToolGuard(), session_key=broken_key)
    else:
        middleware = LoopGuardMiddleware(Broken(where))
    with caplog.at_level(logging.DEBUG):
        got = asyncio.run(call_all(make_server(runs, middleware), calls))
    assert dumped(got) == dumped(plain)  # fail open: the guard's bug never reaches the client
    assert runs["grep"] == 4
    ours = [r for r in caplog.records if r.name == "loopguard.integrations.mcp"]
    assert len(ours) == 4 and all("RuntimeError" in r.getMessage() for r in ours)
    assert CANARY not in caplog.text


def test_arguments_never_reach_the_logs(caplog: pytest.LogCaptureFixture) -> None:
    secret = f"sk-{CANARY}abcdefghijklmnopqrstuvwxyz0123"
    calls = [("grep", {"pattern": "TODO", "path": "src", "token": secret})] * 6
    with caplog.at_level(logging.DEBUG):
        got = asyncio.run(call_all(make_server({}, LoopGuardMiddleware()), calls))
    assert any(r.is_error for r in got)
    assert any(r.name.startswith("loopguard") for r in caplog.records)  # the denials were logged
    assert CANARY not in caplog.text
    assert not any(CANARY in t for r in got if r.is_error for t in texts(r))  # the reason shows it redacted


def test_on_intervention_takes_the_notes_and_leaves_the_result_alone() -> None:
    notes: list[Any] = []
    got = asyncio.run(
        call_all(make_server({}, LoopGuardMiddleware(on_intervention=notes.extend)), [("grep", GREP)] * 2)
    )
    assert [texts(r) for r in got] == [[GREP_OUT], [GREP_OUT]]
    assert [(n.action, n.kind, n.call_index) for n in notes] == [("notice", "repeat", 1)]


def test_the_readme_mcp_example_runs() -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme.split("### MCP", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```python\n(.*?)```", section, flags=re.S)
    assert block is not None
    scope: dict[str, Any] = {}
    exec(block.group(1), scope)
    results = scope["results"]
    assert [r.is_error for r in results] == [False, False, True, False]
    assert texts(results[2])[0].startswith("[loopguard] Duplicate tool call blocked: `grep`")


def test_without_fastmcp_the_import_names_the_extra() -> None:
    code = (
        "import sys; sys.modules['fastmcp'] = None\n"
        "try:\n    import loopguard.integrations.mcp\n"
        "except ImportError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert 'pip install "loopguard[mcp]"' in out


UPSTREAM = """
from fastmcp import FastMCP

server = FastMCP("files")


@server.tool
def grep(pattern: str, path: str) -> str:
    return "src/a.py:3: # TODO"


if __name__ == "__main__":
    server.run(show_banner=False)
"""


def test_the_command_line_proxy_guards_a_server_script(tmp_path: Path) -> None:
    """``python -m loopguard.integrations.mcp SCRIPT`` over stdio, in front of a server script over stdio."""
    from fastmcp.client.transports import StdioTransport

    script = tmp_path / "upstream.py"
    script.write_text(UPSTREAM, encoding="utf-8")
    transport = StdioTransport(command=sys.executable, args=["-m", "loopguard.integrations.mcp", str(script)])
    got = asyncio.run(call_all(transport, [("grep", GREP)] * 4))
    expected = bare([("grep", GREP)] * 4, {"grep": "src/a.py:3: # TODO"})
    assert [(not r.is_error, texts(r)) for r in got] == expected
    assert [r.is_error for r in got] == [False, False, True, False]


def test_fastmcp_clients_raise_the_deny_reason_as_a_tool_error() -> None:
    from fastmcp.exceptions import ToolError

    async def run() -> str:
        async with Client(make_server({}, LoopGuardMiddleware())) as client:
            for _ in range(2):
                assert (await client.call_tool("grep", GREP)).data == GREP_OUT
            with pytest.raises(ToolError) as raised:
                await client.call_tool("grep", GREP)
            return str(raised.value)

    assert asyncio.run(run()).startswith("[loopguard] Duplicate tool call blocked: `grep`")


def test_a_cancel_after_the_tool_ran_marks_its_result_an_error() -> None:
    """The circuit breaker fires in ``after_call``: the tool has run; its result goes back with
    the stop text after it, ``isError`` set and the structured content dropped (with
    ``on_intervention`` too: the client must see why it has to stop)."""
    from loopguard import Intervention

    stop = Intervention("cancel", "circuit_breaker", "circuit_breaker", "[loopguard] Stop and report.", "grep", 0)

    class Breaking(ToolGuard):
        async def aafter_call(self, session_id: Any, tool: str, args: Any, result: Any, **kw: Any) -> Any:
            await super().aafter_call(session_id, tool, args, result, **kw)
            return [stop]

    runs: dict[str, int] = {}
    (got,) = asyncio.run(call_all(make_server(runs, LoopGuardMiddleware(Breaking())), [("grep", GREP)]))
    assert (got.is_error, texts(got), got.structured_content) == (True, [GREP_OUT, stop.text], None)
    assert runs == {"grep": 1}
    seen: list[Any] = []
    quiet = LoopGuardMiddleware(Breaking(), on_intervention=seen.extend)
    (got,) = asyncio.run(call_all(make_server({}, quiet), [("grep", GREP)]))
    assert (got.is_error, texts(got), seen) == (True, [GREP_OUT, stop.text], [stop])  # a stop is always shown


# -------------------------------------- HTTP: several clients, with and without authentication


def _over_http(server: FastMCP[Any], clients: list[str | None], calls: int) -> list[list[bool]]:
    """``calls`` identical greps from each client in turn (a bearer token or none) against
    ``server``'s real Streamable HTTP app (fastmcp's in-process ASGI server: its HTTP stack, auth
    and transport, no socket); per client, whether each call was refused."""
    from fastmcp.utilities.tests import asgi_server

    async def go() -> list[list[bool]]:
        async with asgi_server(server) as app:
            out = []
            for token in clients:
                async with app.client(auth=token) as c:
                    out.append([(await c.call_tool_mcp("grep", GREP)).is_error for _ in range(calls)])
            return out

    return asyncio.run(go())


def test_over_http_without_a_session_or_user_calls_are_not_guarded(caplog: pytest.LogCaptureFixture) -> None:
    """A stateless HTTP request names no client: sharing one session would let one agent's calls
    deny another's, so such calls pass unguarded, with one warning; ``session_key`` guards them."""
    runs: dict[str, int] = {}
    with caplog.at_level(logging.WARNING, logger="loopguard.integrations.mcp"):
        refused = _over_http(make_server(runs, LoopGuardMiddleware(ToolGuard())), [None, None], 3)
    assert refused == [[False] * 3, [False] * 3] and runs["grep"] == 6
    assert caplog.text.count("not guarded") == 1
    keyed = LoopGuardMiddleware(ToolGuard(), session_key=lambda context: "tenant-a")
    assert _over_http(make_server({}, keyed), [None], 3) == [[False, False, True]]


def test_over_http_each_authenticated_user_is_a_session_of_its_own() -> None:
    """With auth, the session is the access token's principal: two users' identical calls never
    count together, and each user's third identical call is denied as a bare guard denies it."""
    from fastmcp.server.auth.providers.jwt import StaticTokenVerifier

    verifier = StaticTokenVerifier(
        {"tok-a": {"client_id": "agent-a", "scopes": []}, "tok-b": {"client_id": "agent-b", "scopes": []}}
    )
    server = make_server({}, LoopGuardMiddleware(ToolGuard()))
    server.auth = verifier
    expected = [allowed is False for allowed, _ in bare([("grep", GREP)] * 6, {"grep": GREP_OUT})]
    assert expected == [False, False, True, False, True, True]  # denied, insisting runs, locked, cancelled
    assert _over_http(server, ["tok-a", "tok-b", "tok-a"], 3) == [expected[:3], expected[:3], expected[3:]]
