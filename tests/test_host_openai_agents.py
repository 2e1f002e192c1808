"""OpenAI Agents SDK integration (issue 19 item 3): the real SDK's ``Runner`` with a scripted fake
``Model`` (no network): tool guardrails deny and cancel where a bare ``ToolGuard`` does, a clean
agent is untouched, a looping streamed run is cancelled, guard errors fail open, arguments never leak."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from host_support import require_host

host = require_host("agents", "openai-agents")

from agents import (  # noqa: E402
    Agent,
    AgentHooks,
    Model,
    ModelResponse,
    Runner,
    ToolInputGuardrailTripwireTriggered,
    ToolOutputGuardrailTripwireTriggered,
    Usage,
    function_tool,
)
from agents.testing.model import assistant_message, function_call  # noqa: E402
from openai.types.responses import (  # noqa: E402
    Response,
    ResponseCompletedEvent,
    ResponseCreatedEvent,
    ResponseTextDeltaEvent,
)

from loopguard import Session, StreamConfig, StreamGuard, ToolGuard  # noqa: E402
from loopguard.integrations.openai_agents import AgentLoopGuard, AgentLoopStopped, guard_agent  # noqa: E402

pytestmark = pytest.mark.hosts

ARGS = {"pattern": "TODO", "path": "src"}
RESULT = "src/a.py:3: TODO fix"
LOOP_TEXT = "Let me check the sum again. "


class ScriptedModel(Model):
    """The SDK's ``Model`` interface: each request returns the next scripted output (a list of
    output items; a list of strings inside it is an assistant message streamed as those deltas)."""

    def __init__(self, steps: list[list[Any]]) -> None:
        self.steps, self.inputs = list(steps), list[Any]()

    def _next(self, input: Any) -> list[Any]:
        self.inputs.append(input)
        return self.steps.pop(0) if self.steps else [assistant_message("done")]

    @staticmethod
    def _items(step: list[Any]) -> list[Any]:
        return [assistant_message("".join(i)) if isinstance(i, list) else i for i in step]

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        return ModelResponse(
            output=self._items(self._next(kwargs["input"] if "input" in kwargs else args[1])),
            usage=Usage(),
            response_id=None,
        )

    async def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:  # type: ignore[override]
        step = self._next(kwargs["input"] if "input" in kwargs else args[1])
        resp = Response(
            id="r", created_at=0, model="fake", object="response", output=[], tool_choice="auto", tools=[],
            parallel_tool_calls=False,
        )  # fmt: skip
        yield ResponseCreatedEvent(type="response.created", response=resp, sequence_number=0)
        n = 1
        for deltas in (i for i in step if isinstance(i, list)):
            for d in deltas:
                yield ResponseTextDeltaEvent(
                    type="response.output_text.delta", item_id="m", output_index=0, content_index=0, delta=d,
                    logprobs=[], sequence_number=n,
                )  # fmt: skip
                n += 1
        done = resp.model_copy(update={"output": self._items(step)})
        yield ResponseCompletedEvent(type="response.completed", response=done, sequence_number=n)


def tool_outputs(model: ScriptedModel) -> list[str]:
    """Every tool output the model was sent, in order (each request's last function_call_output)."""
    seen: dict[str, str] = {}
    for items in model.inputs:
        for item in items if isinstance(items, list) else ():
            if isinstance(item, dict) and item.get("type") == "function_call_output":
                seen.setdefault(item["call_id"], item["output"])
    return list(seen.values())


def make_grep(ran: list[dict[str, str]], result: Any = RESULT) -> Any:
    @function_tool
    def grep(pattern: str, path: str) -> str:
        """Search files."""
        ran.append({"pattern": pattern, "path": path})
        return result(pattern, path) if callable(result) else str(result)

    return grep


def looping_steps(n: int, args: dict[str, str] = ARGS) -> list[list[Any]]:
    return [[function_call("grep", args, call_id=f"c{i}")] for i in range(n)] + [[assistant_message("done")]]


def bare_guard_run(
    n: int, args: dict[str, str] = ARGS, *, tool: str = "grep", vary: bool = False, result: str = RESULT
) -> tuple[list[str], int, tuple[int, str]]:
    """The same calls fed to a bare ToolGuard: (the outputs the model would read, how many bodies
    ran, (index, kind) of the cancel: before the call, or ``"after"`` it ran)."""
    guard, outputs, ran = ToolGuard(), list[str](), 0
    for i in range(n):
        call = {k: f"{v}{i}" for k, v in args.items()} if vary else args
        d = guard.before_call("conv", tool, call, call_id=f"c{i}")
        if d.action == "cancel":
            return outputs, ran, (i, str(d.kind))
        if not d.allowed:
            outputs.append(d.reason)
            continue
        ran += 1
        notes = guard.after_call("conv", tool, call, result, call_id=f"c{i}")
        if any(x.action == "cancel" for x in notes):
            return outputs, ran, (i, "after")
        texts = [d.reason] if d.action == "notice" and d.reason else []
        outputs.append(result + "".join("\n\n" + t for t in [*texts, *(x.text for x in notes)]))
    raise AssertionError("the bare guard never cancelled")


def test_a_looping_agent_is_stopped_at_the_bare_guards_call_index() -> None:
    n = 12
    expected, expected_runs, (cancel_at, kind) = bare_guard_run(n)
    assert (expected_runs, cancel_at, kind) == (3, 5, "repeat_streak")  # by hand: 2 runs, deny, escape run, deny, stop
    ran: list[dict[str, str]] = []
    model = ScriptedModel(looping_steps(n))
    agent = guard_agent(Agent(name="a", tools=[make_grep(ran)], model=model), Session("conv"))
    with pytest.raises(ToolInputGuardrailTripwireTriggered) as err:
        asyncio.run(Runner.run(agent, "find the TODOs", max_turns=50))
    assert len(ran) == expected_runs  # the tool body ran exactly as often as the bare guard allowed
    assert tool_outputs(model) == expected  # every result / deny reason the model read, in order
    assert len(model.inputs) == cancel_at + 1  # the model was asked once per call up to the cancel
    info = err.value.output.output_info
    assert info == {"loopguard": "cancel", "kind": "repeat_streak", "rule": "repeat_streak", "call_index": cancel_at}


def test_the_sync_runner_stops_the_same_loop_at_the_same_index() -> None:
    n = 12
    expected, expected_runs, _ = bare_guard_run(n)
    ran: list[dict[str, str]] = []
    model = ScriptedModel(looping_steps(n))
    agent = guard_agent(Agent(name="a", tools=[make_grep(ran)], model=model), Session("conv"))
    try:
        with pytest.raises(ToolInputGuardrailTripwireTriggered):
            Runner.run_sync(agent, "find the TODOs", max_turns=50)
    finally:  # run_sync leaves the thread's default event loop open (the SDK's choice): close it
        policy = asyncio.get_event_loop_policy()
        policy.get_event_loop().close()
        policy.set_event_loop(None)
    assert (len(ran), tool_outputs(model)) == (expected_runs, expected)


def test_a_circuit_breaker_after_a_call_stops_the_run_where_the_bare_guard_does() -> None:
    """Eight URLs answering with the same blocked page (docs/tools.md): the breaker cancels after
    the 8th call ran; the output guardrail raises the SDK's tripwire there."""
    page = "Access denied. You have been blocked by the site's security service. Ray ID 8f2."
    expected, expected_runs, (cancel_at, kind) = bare_guard_run(
        12, {"url": "https://example.com/p"}, tool="fetch", vary=True, result=page
    )
    assert (expected_runs, cancel_at, kind) == (8, 7, "after")
    fetched: list[str] = []

    @function_tool
    def fetch(url: str) -> str:
        """Fetch a page."""
        fetched.append(url)
        return page

    steps = [[function_call("fetch", {"url": f"https://example.com/p{i}"}, call_id=f"c{i}")] for i in range(12)]
    model = ScriptedModel(steps)
    agent = guard_agent(Agent(name="a", tools=[fetch], model=model), Session("conv"))
    with pytest.raises(ToolOutputGuardrailTripwireTriggered) as err:
        asyncio.run(Runner.run(agent, "read them", max_turns=50))
    assert len(fetched) == expected_runs and tool_outputs(model) == expected  # notices appended as the guard wrote them
    info = err.value.output.output_info
    assert info == {
        "loopguard": "cancel",
        "kind": "circuit_breaker",
        "rule": "circuit_breaker",
        "call_index": cancel_at,
    }


def clean_run(guarded: bool) -> tuple[list[str], list[dict[str, str]], Any]:
    ran: list[dict[str, str]] = []
    steps = [[function_call("grep", {"pattern": f"p{i}", "path": "src"}, call_id=f"c{i}")] for i in range(6)]
    model = ScriptedModel([*steps, [assistant_message("Found six patterns.")]])
    agent = Agent(name="a", tools=[make_grep(ran, lambda p, _: f"src/{p}.py:1: {p}")], model=model)
    if guarded:
        agent = guard_agent(agent, Session("clean"))
    result = asyncio.run(Runner.run(agent, "find", max_turns=50))
    return tool_outputs(model), ran, result.final_output


def test_a_clean_agent_runs_untouched() -> None:
    plain, guarded = clean_run(False), clean_run(True)
    assert guarded == plain
    assert plain[0] == [f"src/p{i}.py:1: p{i}" for i in range(6)] and plain[2] == "Found six patterns."


def bare_stream_stop(deltas: list[str]) -> int:
    """How many deltas a bare StreamGuard takes before it says stop."""
    guard = StreamGuard(Session("bare"), StreamConfig(mode="cut"))
    return next(i for i, d in enumerate(deltas) if guard.text(d).stop)


def test_a_streamed_run_with_a_looping_text_is_cancelled() -> None:
    deltas = [LOOP_TEXT] * 80
    stop_at = bare_stream_stop(deltas)
    assert 0 < stop_at < 79
    model = ScriptedModel([[deltas]])
    loop_guard = AgentLoopGuard(Session("stream"))
    agent = guard_agent(Agent(name="a", model=model), loop_guard)

    async def run() -> tuple[list[Any], Any, Any]:
        result = Runner.run_streamed(agent, "sum it", max_turns=5)
        stream = loop_guard.stream_events(result)
        events = [e async for e in stream]
        return events, stream, result

    events, stream, result = asyncio.run(run())
    texts = [e.data.delta for e in events if e.type == "raw_response_event" and e.data.type.endswith("text.delta")]
    assert len(texts) == stop_at + 1  # cut right after the delta the bare guard stops on
    assert stream.cancelled and stream.outcome.stopped and stream.outcome.detection.kind == "cycle"
    assert result.is_complete and result.final_output is None


def test_a_clean_streamed_run_passes_every_event() -> None:
    answer = ["The sum ", "is 42, ", "checked once."]

    async def run(guarded: bool) -> list[Any]:
        agent: Agent[Any] = Agent(name="a", model=ScriptedModel([[answer]]))
        session = Session("s")
        loop_guard = AgentLoopGuard(session)
        if guarded:
            agent = guard_agent(agent, loop_guard)
        result = Runner.run_streamed(agent, "sum it")
        source = loop_guard.stream_events(result) if guarded else result.stream_events()
        events = [(e.type, getattr(getattr(e, "data", None), "delta", None)) async for e in source]
        if guarded:  # one model response, one attempt: the hooks left the text to the stream guard
            assert (session.attempt, session.turn, session.state.value) == (1, 1, "idle")
        return [*events, result.final_output]

    plain = asyncio.run(run(False))
    assert asyncio.run(run(True)) == plain and plain[-1] == "The sum is 42, checked once."


def test_a_looping_text_in_a_plain_run_stops_it() -> None:
    model = ScriptedModel([[[LOOP_TEXT * 80]]])
    agent = guard_agent(Agent(name="a", model=model), Session("text"))
    with pytest.raises(AgentLoopStopped) as err:
        asyncio.run(Runner.run(agent, "sum it"))
    assert (err.value.action, err.value.kind) == ("cut", "text_loop")
    assert err.value.reason.startswith("[loopguard]")


def test_a_guard_error_never_breaks_the_run(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    async def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("bug")

    def sync_boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("bug")

    for name in ("atool_call", "atool_result"):
        monkeypatch.setattr(Session, name, boom)
    for name in ("start_attempt", "end_attempt", "end_turn"):
        monkeypatch.setattr(Session, name, sync_boom)
    ran: list[dict[str, str]] = []
    model = ScriptedModel(looping_steps(8))
    agent = guard_agent(Agent(name="a", tools=[make_grep(ran)], model=model), Session("conv"))
    with caplog.at_level(logging.WARNING, logger="loopguard"):
        result = asyncio.run(Runner.run(agent, "find", max_turns=50))
    assert (len(ran), tool_outputs(model), result.final_output) == (8, [RESULT] * 8, "done")  # as without a guard
    assert sum("loopguard error" in r.getMessage() for r in caplog.records) >= 16


def test_tool_arguments_never_leak(caplog: pytest.LogCaptureFixture) -> None:
    canary = {"pattern": "psql --password=CnyPwEquals02 db", "path": "src"}
    ran: list[dict[str, str]] = []
    model = ScriptedModel(looping_steps(12, canary))
    agent = guard_agent(Agent(name="a", tools=[make_grep(ran)], model=model), Session("conv"))
    with caplog.at_level(logging.DEBUG), pytest.raises(ToolInputGuardrailTripwireTriggered) as err:
        asyncio.run(Runner.run(agent, "find", max_turns=50))
    assert ran[0] == canary  # the tool itself got its arguments
    texts = [r.getMessage() for r in caplog.records] + [str(err.value), json.dumps(err.value.output.output_info)]
    texts += [o for o in tool_outputs(model) if o.startswith("[loopguard]")]  # the deny reasons
    assert texts and not [t for t in texts if "Cny" in t]


def test_a_session_function_keys_conversations_by_the_run_context() -> None:
    sessions: dict[str, Session] = {}

    def session_for(context: dict[str, str]) -> Session:
        return sessions.setdefault(context["conversation_id"], Session(context["conversation_id"]))

    ran: list[dict[str, str]] = []
    counts = []
    for conv in ("a", "b"):
        model = ScriptedModel(looping_steps(3))
        agent = guard_agent(Agent(name="x", tools=[make_grep(ran)], model=model), session_for)
        asyncio.run(Runner.run(agent, "find", context={"conversation_id": conv}, max_turns=50))
        counts.append(sum(o.startswith("[loopguard] Duplicate") for o in tool_outputs(model)))
    assert counts == [1, 1] and sorted(sessions) == ["a", "b"]  # each conversation its own count


def test_the_agents_own_hooks_still_run() -> None:
    seen: list[str] = []

    class Mine(AgentHooks[Any]):
        async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
            seen.append("llm_end")

        async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: Any) -> None:
            seen.append(f"tool_end:{result}")

        async def on_end(self, context: Any, agent: Any, output: Any) -> None:
            seen.append(f"end:{output}")

    model = ScriptedModel(looping_steps(1))
    agent = guard_agent(Agent(name="a", tools=[make_grep([])], model=model, hooks=Mine()), Session("own"))
    asyncio.run(Runner.run(agent, "find"))
    assert seen == ["llm_end", f"tool_end:{RESULT}", "llm_end", "end:done"]


def test_without_the_sdk_the_import_names_the_extra() -> None:
    code = "import sys; sys.modules['agents'] = None; import loopguard.integrations.openai_agents"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 1 and 'pip install "loopguard[openai-agents]"' in out.stderr


def test_guard_agent_leaves_the_original_agent_alone() -> None:
    tool = make_grep([])
    agent: Agent[Any] = Agent(name="a", tools=[tool])
    guarded = guard_agent(agent)
    assert tool.tool_input_guardrails in (None, []) and agent.hooks is None and agent.tools == [tool]
    assert [g.get_name() for g in guarded.tools[0].tool_input_guardrails] == ["loopguard"]  # type: ignore[union-attr]


def test_guard_agent_names_a_wrong_agent() -> None:
    with pytest.raises(TypeError, match="agent must be an agents.Agent, not str"):
        guard_agent("notanagent")


def test_the_readme_openai_agents_example_runs() -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme.split("### OpenAI Agents SDK", 1)[1]
    block = re.search(r"```python\n(.*?)```", section, flags=re.S)
    assert block is not None
    scope: dict[str, Any] = {"model": ScriptedModel(looping_steps(12))}
    code = block.group(1).replace('model = "gpt-4.1"\n', "")  # the scripted model instead of the network
    assert code != block.group(1)
    exec(code, scope)
    assert scope["stopped"] is True and scope["runs"] == 3
