"""pydantic-ai integration (issue 19 item 4): the real ``Agent`` with the package's own
``FunctionModel`` / ``TestModel`` (no network): ``LoopGuardCapability`` skips a denied tool and
stops a looping run where a bare ``ToolGuard`` does, leaves a clean agent untouched, fails open,
and never leaks tool arguments."""

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

host = require_host("pydantic_ai", "pydantic-ai")

from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.messages import (  # noqa: E402
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402
from pydantic_ai.models.test import TestModel  # noqa: E402

from loopguard import ToolGuard  # noqa: E402
from loopguard.integrations.pydantic_ai import LoopGuardCapability, LoopGuardStopped  # noqa: E402

pytestmark = pytest.mark.hosts

ARGS = {"pattern": "TODO", "path": "src"}
RESULT = "src/a.py:3: TODO fix"
LOOP_TEXT = "Let me check the sum again. "


class Scripted:
    """A ``FunctionModel`` function: each model request returns the next scripted step (a list of
    parts), then ``"done"``; every request's messages are kept."""

    def __init__(self, steps: list[list[Any]]) -> None:
        self.steps, self.requests = list(steps), list[list[ModelMessage]]()

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.requests.append(list(messages))
        return ModelResponse(parts=self.steps.pop(0) if self.steps else [TextPart("done")])

    def model(self) -> FunctionModel:
        return FunctionModel(self)

    def tool_outputs(self) -> list[str]:
        """Every tool result the model was sent, in order (one per tool call id)."""
        seen: dict[str, str] = {}
        for messages in self.requests:
            for message in messages:
                for part in message.parts if isinstance(message, ModelRequest) else ():
                    if isinstance(part, (ToolReturnPart, RetryPromptPart)) and part.tool_call_id:
                        seen.setdefault(part.tool_call_id, str(part.content))
        return list(seen.values())


def grep_agent(model: Any, ran: list[dict[str, str]], *capabilities: Any, result: Any = RESULT) -> Agent[None, str]:
    agent: Agent[None, str] = Agent(model, capabilities=list(capabilities))

    @agent.tool_plain
    def grep(pattern: str, path: str) -> str:
        """Search files."""
        ran.append({"pattern": pattern, "path": path})
        return result(pattern, path) if callable(result) else str(result)

    return agent


def looping_steps(n: int, args: dict[str, str] = ARGS, tool: str = "grep") -> list[list[Any]]:
    return [[ToolCallPart(tool, dict(args), tool_call_id=f"c{i}")] for i in range(n)]


def bare_guard_run(
    n: int, args: dict[str, str] = ARGS, *, tool: str = "grep", vary: bool = False, result: str = RESULT
) -> tuple[list[str], int, tuple[int, str, str]]:
    """The same calls fed to a bare ToolGuard: (the outputs the model would read, how many bodies
    ran, (index, rule, when) of the cancel: ``"before"`` the call, or ``"after"`` it ran)."""
    guard, outputs, ran = ToolGuard(), list[str](), 0
    for i in range(n):
        call = {k: f"{v}{i}" for k, v in args.items()} if vary else args
        d = guard.before_call("run", tool, call, call_id=f"c{i}")
        if d.action == "cancel":
            return outputs, ran, (i, d.rule, "before")
        if not d.allowed:
            outputs.append(d.reason)
            continue
        ran += 1
        notes = guard.after_call("run", tool, call, result, call_id=f"c{i}")
        stop = next((x for x in notes if x.action == "cancel"), None)
        if stop is not None:
            return outputs, ran, (stop.call_index, stop.rule, "after")
        texts = [d.reason] if d.action == "notice" and d.reason else []
        outputs.append(result + "".join("\n\n" + t for t in [*texts, *(x.text for x in notes)]))
    raise AssertionError("the bare guard never cancelled")


@pytest.fixture(autouse=True)
def _close_the_sync_loop() -> Any:
    """``agent.run_sync`` runs on the thread's default event loop and leaves it open (the
    package's choice, so that sync runs can share one loop): close it after each test."""
    yield
    policy = asyncio.get_event_loop_policy()
    loop = policy._local._loop  # type: ignore[attr-defined]  # without creating one
    if loop is not None and not loop.is_closed():
        loop.close()
    policy.set_event_loop(None)


def run(agent: Agent[None, str], how: str, prompt: str = "find the TODOs") -> Any:
    if how == "sync":
        return agent.run_sync(prompt)
    return asyncio.run(agent.run(prompt))


@pytest.mark.parametrize("how", ["async", "sync"])
def test_a_looping_agent_is_stopped_at_the_bare_guards_call_index(how: str) -> None:
    n = 12
    expected, expected_runs, (cancel_at, rule, when) = bare_guard_run(n)
    assert (expected_runs, cancel_at, rule, when) == (3, 5, "repeat_streak", "before")  # 2 runs, deny, run, deny, stop
    ran: list[dict[str, str]] = []
    script = Scripted(looping_steps(n))
    agent = grep_agent(script.model(), ran, LoopGuardCapability(ToolGuard()))
    with pytest.raises(LoopGuardStopped) as err:
        run(agent, how)
    assert len(ran) == expected_runs  # the tool body ran exactly as often as the bare guard allowed
    assert script.tool_outputs() == expected  # every result / deny reason the model read, in order
    assert len(script.requests) == cancel_at + 1  # one model request per call, up to the cancel
    stop = err.value
    assert (stop.action, stop.kind, stop.rule, stop.call_index) == ("cancel", "repeat_streak", "repeat_streak", 5)
    assert stop.reason.startswith("[loopguard]") and str(stop) == stop.reason


def test_a_denied_call_does_not_run_and_the_model_reads_the_reason() -> None:
    ran: list[dict[str, str]] = []
    script = Scripted(looping_steps(3))
    guard = ToolGuard()
    agent = grep_agent(script.model(), ran, LoopGuardCapability(guard))
    result = agent.run_sync("find")
    assert len(ran) == 2  # the third identical call was skipped
    outputs = script.tool_outputs()
    bare = ToolGuard()
    for i in range(2):
        bare.before_call("s", "grep", ARGS, call_id=f"c{i}")
        bare.after_call("s", "grep", ARGS, RESULT, call_id=f"c{i}")
    deny = bare.before_call("s", "grep", ARGS, call_id="c2")
    assert deny.action == "deny" and outputs[2] == deny.reason and outputs[2].startswith("[loopguard] Duplicate")
    assert result.output == "done"
    # the skipped call's result reached the model as the tool's return, not as a retry prompt
    returns = [p for m in script.requests[-1] if isinstance(m, ModelRequest) for p in m.parts]
    skipped = [p for p in returns if getattr(p, "tool_call_id", None) == "c2"]
    assert [type(p) for p in skipped] == [ToolReturnPart] and skipped[0].content == deny.reason


def test_a_circuit_breaker_after_a_call_stops_the_run_where_the_bare_guard_does() -> None:
    """Eight URLs answering with the same blocked page: the breaker cancels after the 8th call ran."""
    page = "Access denied. You have been blocked by the site's security service. Ray ID 8f2."
    expected, expected_runs, (cancel_at, rule, when) = bare_guard_run(
        12, {"url": "https://example.com/p"}, tool="fetch", vary=True, result=page
    )
    assert (expected_runs, cancel_at, rule, when) == (8, 7, "circuit_breaker", "after")
    fetched: list[str] = []
    steps = [[ToolCallPart("fetch", {"url": f"https://example.com/p{i}"}, tool_call_id=f"c{i}")] for i in range(12)]
    script = Scripted(steps)
    agent: Agent[None, str] = Agent(script.model(), capabilities=[LoopGuardCapability()])

    @agent.tool_plain
    def fetch(url: str) -> str:
        """Fetch a page."""
        fetched.append(url)
        return page

    with pytest.raises(LoopGuardStopped) as err:
        asyncio.run(agent.run("read them"))
    assert len(fetched) == expected_runs
    assert script.tool_outputs() == expected  # notices appended as the guard wrote them
    assert (err.value.action, err.value.kind, err.value.rule, err.value.call_index) == (
        "cancel",
        "circuit_breaker",
        "circuit_breaker",
        cancel_at,
    )


def clean_run(guarded: bool, how: str) -> tuple[list[str], list[dict[str, str]], Any]:
    ran: list[dict[str, str]] = []
    steps = [[ToolCallPart("grep", {"pattern": f"p{i}", "path": "src"}, tool_call_id=f"c{i}")] for i in range(6)]
    script = Scripted([*steps, [TextPart("Found six patterns.")]])
    caps = [LoopGuardCapability()] if guarded else []
    agent = grep_agent(script.model(), ran, *caps, result=lambda p, _: f"src/{p}.py:1: {p}")
    result = run(agent, how)
    return script.tool_outputs(), ran, result.output


@pytest.mark.parametrize("how", ["async", "sync"])
def test_a_clean_agent_runs_untouched(how: str) -> None:
    plain, guarded = clean_run(False, how), clean_run(True, how)
    assert guarded == plain
    assert plain[0] == [f"src/p{i}.py:1: p{i}" for i in range(6)] and plain[2] == "Found six patterns."
    assert plain[1] == [{"pattern": f"p{i}", "path": "src"} for i in range(6)]


def test_a_clean_agent_on_the_test_model_runs_untouched() -> None:
    """``TestModel`` calls every tool once with generated arguments, then answers with their results."""

    def messages_of(guarded: bool) -> tuple[list[Any], str, list[dict[str, str]]]:
        ran: list[dict[str, str]] = []
        caps = [LoopGuardCapability()] if guarded else []
        result = grep_agent(TestModel(seed=3), ran, *caps).run_sync("find")
        parts = [
            (type(p).__name__, getattr(p, "tool_name", None), getattr(p, "args", None), getattr(p, "content", None))
            for m in result.all_messages()
            for p in m.parts
            if not isinstance(p, ThinkingPart)
        ]
        return parts, result.output, ran

    plain, guarded = messages_of(False), messages_of(True)
    assert guarded == plain
    assert len(plain[2]) == 1 and ("ToolReturnPart", "grep", None, RESULT) in plain[0]
    assert plain[1] == '{"grep":"' + RESULT + '"}'


def test_a_looping_text_stops_the_run() -> None:
    script = Scripted([[TextPart(LOOP_TEXT * 80)]])
    agent = grep_agent(script.model(), [], LoopGuardCapability())
    with pytest.raises(LoopGuardStopped) as err:
        agent.run_sync("sum it")
    assert (err.value.action, err.value.kind, err.value.call_index) == ("cut", "text_loop", -1)
    assert err.value.reason.startswith("[loopguard] The model's answer started repeating itself (cycle at")


def test_a_looping_thinking_stops_the_run_and_check_text_off_lets_it_through() -> None:
    steps = [[ThinkingPart(LOOP_TEXT * 80), TextPart("42")]]
    with pytest.raises(LoopGuardStopped) as err:
        grep_agent(Scripted(steps).model(), [], LoopGuardCapability()).run_sync("sum it")
    assert err.value.kind == "text_loop" and "model's reasoning" in err.value.reason
    result = grep_agent(Scripted(steps).model(), [], LoopGuardCapability(check_text=False)).run_sync("sum it")
    assert result.output == "42"


def test_a_failing_tool_is_recorded_and_its_error_goes_on() -> None:
    def outcome(guarded: bool) -> tuple[str, int]:
        calls = [0]
        script = Scripted(looping_steps(1))
        agent: Agent[None, str] = Agent(script.model(), capabilities=[LoopGuardCapability(guard)] if guarded else [])

        @agent.tool_plain
        def grep(pattern: str, path: str) -> str:
            """Search files."""
            calls[0] += 1
            raise OSError("disk gone")

        with pytest.raises(OSError) as err:
            agent.run_sync("find")
        return str(err.value), calls[0]

    guard = ToolGuard()
    assert outcome(True) == outcome(False) == ("disk gone", 1)
    assert guard.pending_tools() == 0 and len(guard) == 1  # the error closed the guard's call


def test_a_guard_error_never_breaks_the_run(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    async def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("bug")

    for name in ("abefore_call", "aafter_call", "astrike"):
        monkeypatch.setattr(ToolGuard, name, boom)
    ran: list[dict[str, str]] = []
    script = Scripted([*looping_steps(8), [TextPart(LOOP_TEXT * 80)]])
    agent = grep_agent(script.model(), ran, LoopGuardCapability())
    with caplog.at_level(logging.WARNING, logger="loopguard"):
        result = agent.run_sync("find")
    assert (len(ran), script.tool_outputs(), result.output) == (8, [RESULT] * 8, LOOP_TEXT * 80)  # as without a guard
    failed = [r.getMessage() for r in caplog.records if "loopguard failed" in r.getMessage()]
    assert len(failed) == 17  # 8 before, 8 after, 1 model response check


def test_a_session_key_that_raises_fails_open() -> None:
    def key(ctx: Any) -> str:
        raise KeyError("no user")

    ran: list[dict[str, str]] = []
    script = Scripted(looping_steps(4))
    result = grep_agent(script.model(), ran, LoopGuardCapability(session_key=key)).run_sync("find")
    assert (len(ran), script.tool_outputs(), result.output) == (4, [RESULT] * 4, "done")


def test_tool_arguments_never_leak(caplog: pytest.LogCaptureFixture) -> None:
    canary = {"pattern": "psql --password=CnyPwEquals02 db", "path": "src"}
    ran: list[dict[str, str]] = []
    script = Scripted(looping_steps(12, canary))
    capability = LoopGuardCapability()
    agent = grep_agent(script.model(), ran, capability)
    with caplog.at_level(logging.DEBUG), pytest.raises(LoopGuardStopped) as err:
        agent.run_sync("find")
    assert ran[0] == canary  # the tool itself got its arguments
    texts = [r.getMessage() for r in caplog.records] + [str(err.value), err.value.reason, repr(vars(err.value))]
    texts += [o for o in script.tool_outputs() if o.startswith("[loopguard]")]  # the deny reasons
    texts += [repr(capability), repr(capability._notices)]
    assert len(texts) >= 4 and not [t for t in texts if "Cny" in t]


def test_each_run_is_its_own_session_unless_session_key_says_otherwise() -> None:
    def denials(capability: LoopGuardCapability, run_no: int) -> int:
        steps = [[ToolCallPart("grep", dict(ARGS), tool_call_id=f"r{run_no}c{i}")] for i in range(3)]
        script = Scripted(steps)
        grep_agent(script.model(), [], capability).run_sync("find")
        return sum(o.startswith("[loopguard] Duplicate") for o in script.tool_outputs())

    fresh = LoopGuardCapability()
    assert [denials(fresh, 0), denials(fresh, 1)] == [1, 1]  # a fresh session per run: the same count each time
    assert len(fresh.guard) == 2
    _, _, (cancel_at, rule, _) = bare_guard_run(12)  # the six calls in one bare session
    shared = ToolGuard()
    keys: list[Any] = []

    def key(ctx: Any) -> str:
        keys.append(ctx.run_id)
        return "conversation-1"

    keyed = LoopGuardCapability(shared, session_key=key)
    assert denials(keyed, 0) == 1
    with pytest.raises(LoopGuardStopped) as err:  # the second run goes on where the first stopped
        denials(keyed, 1)
    assert (err.value.call_index, err.value.rule) == (cancel_at, rule) == (5, "repeat_streak")
    assert len(set(keys)) == 2 and len(shared) == 1


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(TypeError, match="guard must be a ToolGuard"):
        LoopGuardCapability(object())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="session_key must be callable"):
        LoopGuardCapability(session_key="run")  # type: ignore[arg-type]


def test_without_pydantic_ai_the_import_names_the_extra() -> None:
    code = "import sys; sys.modules['pydantic_ai'] = None; import loopguard.integrations.pydantic_ai"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 1 and 'pip install "loopguard[pydantic-ai]"' in out.stderr


def test_the_readme_pydantic_ai_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme.split("### pydantic-ai", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```python\n(.*?)```", section, flags=re.S)
    assert block is not None
    scope: dict[str, Any] = {"model": Scripted(looping_steps(12)).model()}
    code = block.group(1).replace('model = "openai:gpt-5-mini"\n', "")  # the scripted model instead of the network
    assert code != block.group(1)
    exec(code, scope)
    assert (scope["runs"], scope["stopped"]) == (3, "repeat_streak")
    assert capsys.readouterr().out == "3 repeat_streak\n"


def test_a_streamed_run_is_checked_when_its_response_is_complete() -> None:
    """``agent.run_stream``: ``after_model_request`` sees the whole streamed response; a looping
    one ends the run with ``LoopGuardStopped``, a clean one streams exactly as without the guard."""

    def streamer(chunks: list[str]) -> FunctionModel:
        async def stream(messages: list[ModelMessage], info: AgentInfo) -> Any:
            for chunk in chunks:
                yield chunk

        return FunctionModel(stream_function=stream)

    async def streamed(chunks: list[str], guarded: bool) -> list[str]:
        agent: Agent[None, str] = Agent(streamer(chunks), capabilities=[LoopGuardCapability()] if guarded else [])
        async with agent.run_stream("sum it") as result:
            return [t async for t in result.stream_text(delta=True)]

    with pytest.raises(LoopGuardStopped) as err:
        asyncio.run(streamed([LOOP_TEXT] * 80, True))
    assert (err.value.action, err.value.kind) == ("cut", "text_loop")
    clean = ["The sum ", "is 42, ", "checked once."]
    plain = asyncio.run(streamed(clean, False))
    assert asyncio.run(streamed(clean, True)) == plain and "".join(plain) == "The sum is 42, checked once."
