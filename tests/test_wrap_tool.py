"""wrap_tool: a tool body behind a ToolGuard, sync and async (spec §5.2; seed 001's pre/post-execute seams)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from loopguard import ToolCallDenied, ToolGuard, ToolGuardConfig, ToolLoopCancelled, wrap_tool
from loopguard.results import result_digest

ARGS = {"pattern": "needle", "path": "src"}


def test_sync_chain_allow_notice_deny_escape_lock() -> None:
    calls: list[Any] = []

    def grep(args: dict[str, Any]) -> str:
        calls.append(args)
        return "src/a.py:3: needle"

    guarded = wrap_tool(grep, ToolGuard(), tool="grep")
    assert guarded(ARGS) == "src/a.py:3: needle"
    second = guarded(ARGS)
    digest = result_digest("src/a.py:3: needle")[:16]
    assert second.startswith("src/a.py:3: needle\n\n[loopguard] `grep` with identical arguments has now returned")
    assert f"(hash {digest})" in second
    third = guarded(ARGS)  # denied: the body does not run, the reason is the result
    assert len(calls) == 2
    assert third.startswith("[loopguard] Duplicate tool call blocked: `grep`")
    assert "Previous result (preserved in the conversation above): src/a.py:3: needle" in third
    assert "call `read` on src/a.py (offset 1)" in third
    fourth = guarded(ARGS)  # insisting: the escape run executes once, same result -> locked
    assert len(calls) == 3
    assert "It is now blocked for the rest of this session" in fourth
    assert guarded(ARGS).startswith("[loopguard] Duplicate tool call blocked")
    assert len(calls) == 3


def test_on_deny_raise_and_on_intervention_callback() -> None:
    seen: list[list[str]] = []
    guarded = wrap_tool(
        lambda args: "same",
        ToolGuard(),
        tool="ls",
        on_deny="raise",
        on_intervention=lambda notes: seen.append([n.kind for n in notes]),
    )
    assert guarded({"path": "."}) == "same"
    assert guarded({"path": "."}) == "same"  # the callback gets the reminder, the result stays clean
    assert seen == [["repeat"]]
    with pytest.raises(ToolCallDenied) as err:
        guarded({"path": "."})
    assert err.value.decision.action == "deny" and err.value.decision.kind == "repeat"
    assert str(err.value) == err.value.decision.reason
    with pytest.raises(ValueError, match="on_deny must be 'return' or 'raise'"):
        wrap_tool(lambda a: a, ToolGuard(), tool="ls", on_deny="ignore")  # type: ignore[arg-type]


def test_cancel_raises_before_the_body_runs() -> None:
    runs = [0]

    def poll(args: dict[str, Any]) -> str:
        runs[0] += 1
        return f"tick {runs[0]}"  # changes every time: `repeat` never fires

    guard = ToolGuard(ToolGuardConfig(repeat_call_limit=3, repeat_call_needs_same_result=False))
    guarded = wrap_tool(poll, guard, tool="poll")
    assert [guarded({"id": 1}) for _ in range(2)] == ["tick 1", "tick 2"]
    with pytest.raises(ToolLoopCancelled) as err:
        guarded({"id": 1})
    assert (err.value.kind, err.value.rule, err.value.tool, err.value.result) == (
        "repeat_streak",
        "repeat_streak",
        "poll",
        None,
    )
    assert runs[0] == 2


def test_the_hosts_exception_propagates_unchanged_and_is_recorded_as_an_error() -> None:
    class Boom(Exception):
        pass

    def build(args: dict[str, Any]) -> str:
        raise Boom("TS2307 cannot find module")

    guarded = wrap_tool(build, ToolGuard(), tool="shell")
    for _ in range(2):
        with pytest.raises(Boom, match="TS2307"):
            guarded({"command": "npm run build"})
    denied = guarded({"command": "npm run build"})  # two identical failures: the 3rd is denied
    assert denied.startswith("[loopguard] Duplicate tool call blocked: `shell`")
    assert "Previous result (preserved in the conversation above): Boom: TS2307 cannot find module" in denied

    # with circuit_break_after=1 the 2nd failure's reminder trips the breaker, a cancel: it is
    # dropped so that the host's Boom propagates; the next request is then cancelled
    guarded = wrap_tool(build, ToolGuard(ToolGuardConfig(circuit_break_after=1)), tool="shell")
    for _ in range(2):
        with pytest.raises(Boom, match="TS2307"):
            guarded({"command": "npm run build"})
    with pytest.raises(ToolLoopCancelled) as err:
        guarded({"command": "npm run build"})
    assert err.value.kind == "circuit_breaker" and "Duplicate tool call blocked" in str(err.value)


def test_session_and_call_id_keywords() -> None:
    got: list[tuple[Any, Any]] = []

    def fetch(args: dict[str, Any], *, session_id: Any = None, call_id: Any = None) -> str:
        got.append((session_id, call_id))
        return "ok"

    guard = ToolGuard()
    guarded = wrap_tool(fetch, guard, tool="fetch", session_id="default-s")
    guarded({"u": 1}, session_id="s1", call_id="c1")
    guarded({"u": 1}, session_id="s2", call_id="c2")  # another session: no repeat
    assert got == [("s1", "c1"), ("s2", "c2")]
    assert guard.before_call("s1", "fetch", {"u": 1}).action == "allow"  # s1 saw it once


def test_keyword_arguments_form_the_arguments_object() -> None:
    guard = ToolGuard()
    guarded = wrap_tool(lambda *, q: f"r:{q}", guard, tool="lookup")
    guarded(q="x")
    guarded(q="x")
    assert guarded(q="x").startswith("[loopguard] Duplicate tool call blocked")


def test_async_tools() -> None:
    async def read(args: dict[str, Any]) -> str:
        await asyncio.sleep(0)
        return "body"

    guarded = wrap_tool(read, ToolGuard(), tool="read_file")
    assert asyncio.iscoroutinefunction(guarded)

    async def main() -> list[str]:
        return [await guarded({"path": "a"}) for _ in range(3)]

    first, second, third = asyncio.run(main())
    assert first == "body" and "[loopguard]" in second and third.startswith("[loopguard] Duplicate tool call")


def test_non_str_results_are_not_touched() -> None:
    guarded = wrap_tool(lambda a: {"rows": [1, 2]}, ToolGuard(), tool="query")
    assert guarded({"sql": "select 1"}) == {"rows": [1, 2]}
    assert guarded({"sql": "select 1"}) == {"rows": [1, 2]}  # the reminder is only logged
