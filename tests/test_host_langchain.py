"""LoopGuardMiddleware against the real LangChain v1 ``create_agent`` (issue 19, item 2): a fake chat
model that loops is stopped at the call index a bare ``ToolGuard`` stops the same calls at, a clean
agent's messages are those of the run without the middleware, sync (``invoke``) and async
(``ainvoke``); a looping answer ends the run; arguments reach no log; a guard error never breaks a run."""

from __future__ import annotations

import asyncio
import itertools
import logging
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import pytest

from host_support import require_host
from loopguard import ToolGuard, scan_text

host = require_host("langchain", "langchain")

from langchain.agents import create_agent  # noqa: E402
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: E402
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage  # noqa: E402
from langchain_core.tools import InjectedToolCallId, tool  # noqa: E402
from langgraph.types import Command  # noqa: E402

from loopguard.integrations.langchain import STOPPED_TEXT, LoopGuardMiddleware  # noqa: E402

pytestmark = pytest.mark.hosts

GREP = {"pattern": "TODO", "path": "src"}
RESULT = "src/app.py:12: # TODO: handle the refresh token"
NOT_RUN = "[loopguard] Not run: the agent run was stopped by loopguard."
MODES = ["invoke", "ainvoke"]


class ScriptedModel(GenericFakeChatModel):
    """``GenericFakeChatModel`` that accepts tools (``create_agent`` binds them) and counts its calls."""

    calls: int = 0

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedModel:
        return self

    def _generate(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return super()._generate(*args, **kwargs)


def call(i: int, name: str = "grep", args: dict[str, Any] | None = None, text: str = "") -> AIMessage:
    return AIMessage(content=text, tool_calls=[{"name": name, "args": dict(args or GREP), "id": f"call_{i}"}])


def looping() -> Iterator[AIMessage]:
    """The same grep again and again, forever."""
    for i in itertools.count():
        yield call(i)


class Tools:
    """A grep that always finds the same line and a read that returns the file's name; each run counted."""

    def __init__(self) -> None:
        self.runs: list[tuple[str, dict[str, Any]]] = []

        @tool
        def grep(pattern: str, path: str, token: str = "") -> str:
            """Search files under path for pattern."""
            self.runs.append(("grep", {"pattern": pattern, "path": path}))
            return RESULT if pattern == "TODO" else f"{path}/x.py:1: {pattern}"

        @tool
        def read(path: str) -> str:
            """Read a file."""
            self.runs.append(("read", {"path": path}))
            return f"contents of {path}"

        self.all = [grep, read]


def run(mode: str, model: ScriptedModel, tools: Tools, middleware: list[Any], thread: str | None = "t1") -> list[Any]:
    agent = create_agent(model, tools=tools.all, middleware=middleware)
    inputs = {"messages": [{"role": "user", "content": "Find the TODOs and fix them."}]}
    config: Any = {"configurable": {"thread_id": thread}} if thread is not None else None
    if mode == "invoke":
        out = agent.invoke(inputs, config)
    else:
        out = asyncio.run(agent.ainvoke(inputs, config))
    return list(out["messages"])


def shape(message: BaseMessage) -> tuple[Any, ...]:
    """A message without its id (ids are fresh uuids every run)."""
    calls = tuple((c["name"], str(c["args"]), c["id"]) for c in getattr(message, "tool_calls", []))
    return (
        type(message).__name__,
        message.content,
        getattr(message, "status", None),
        getattr(message, "tool_call_id", None),
        getattr(message, "name", None),
        calls,
    )


def bare_guard_transcript(
    args: dict[str, Any], result: str = RESULT, error: bool = False
) -> tuple[list[tuple[str, str]], int]:
    """The identical calls fed to a bare ToolGuard until it cancels: per call ``(status, content)``
    (a run's result with its reminders appended as wrap_tool appends them; a deny's or a cancel's
    reason), and the number of runs."""
    guard = ToolGuard()
    out: list[tuple[str, str]] = []
    runs = 0
    for i in itertools.count():
        decision = guard.before_call("bare", "grep", args, call_id=f"call_{i}")
        if not decision.allowed:
            out.append(("error", decision.reason))
            if decision.action == "cancel":
                return out, runs
            continue
        runs += 1
        notes = guard.after_call("bare", "grep", args, result, error=error, call_id=f"call_{i}")
        texts = ([decision.reason] if decision.action == "notice" and decision.reason else []) + [n.text for n in notes]
        out.append(("error" if error else "success", result + "".join("\n\n" + t for t in texts)))
    raise AssertionError("unreachable")


def untagged(text: str) -> str:
    return text.removeprefix("[loopguard]").lstrip()


@pytest.mark.parametrize("thread", ["t1", None])
@pytest.mark.parametrize("mode", MODES)
def test_a_looping_agent_stops_where_the_bare_guard_stops(mode: str, thread: str | None) -> None:
    """Thread or not (the session is then the conversation's first message), the same stop."""
    expected, runs = bare_guard_transcript(GREP)
    stop = len(expected) - 1  # the call the bare guard cancels
    assert (runs, stop, [s for s, _ in expected]) == (3, 5, ["success"] * 2 + ["error", "success", "error", "error"])
    model, tools = ScriptedModel(messages=looping()), Tools()
    messages = run(mode, model, tools, [LoopGuardMiddleware(ToolGuard())], thread)

    assert len(tools.runs) == runs  # the tool ran exactly as often as the bare guard lets it
    answers = [m for m in messages if isinstance(m, ToolMessage)]
    got = [(m.status, m.content) for m in answers[: stop + 1]]
    assert got == expected  # every call's answer, the denials' and the cancel's reasons at their index
    assert [m.tool_call_id for m in answers] == [f"call_{i}" for i in range(stop + 2)]
    assert all(m.name == "grep" for m in answers)
    # the model read the cancel, asked for the same call again: not run, and the run ended
    assert (answers[-1].status, answers[-1].content) == ("error", NOT_RUN)
    assert model.calls == stop + 2
    final = messages[-1]
    assert isinstance(final, AIMessage) and not final.tool_calls
    assert final.content == f"{STOPPED_TEXT} {untagged(expected[stop][1])}"
    assert final.content.startswith("[loopguard] The agent run was stopped: `grep` was requested 6 times in a row")


@pytest.mark.parametrize("mode", MODES)
def test_a_cancel_leaves_the_model_its_report(mode: str) -> None:
    expected, _ = bare_guard_transcript(GREP)
    report = AIMessage(content="I kept finding the same TODO; how should I proceed?")
    script = [call(i) for i in range(len(expected))] + [report]
    model, tools = ScriptedModel(messages=iter(script)), Tools()
    messages = run(mode, model, tools, [LoopGuardMiddleware()])
    assert [(m.status, m.content) for m in messages if isinstance(m, ToolMessage)] == expected
    assert shape(messages[-1]) == shape(report)  # the model's own last word, nothing appended
    assert not any(STOPPED_TEXT in str(m.content) for m in messages)


class FailingTools(Tools):
    """A grep that always fails the same way."""

    def __init__(self) -> None:
        super().__init__()

        @tool
        def grep(pattern: str, path: str) -> str:
            """Search files under path for pattern."""
            self.runs.append(("grep", {"pattern": pattern, "path": path}))
            raise FileNotFoundError(f"no such directory: {path}")

        self.all = [grep]


@pytest.mark.parametrize("mode", MODES)
def test_a_failing_tool_in_a_loop_stops_where_the_bare_guard_stops(mode: str) -> None:
    """LangChain's ToolErrorMiddleware (inside ours) turns the failure into an error ToolMessage:
    the guard sees it as a failed result (``error=True``), as a bare guard fed the same failures."""
    from langchain.agents.middleware import ToolErrorMiddleware

    failure = "FileNotFoundError: no such directory: src"
    expected, runs = bare_guard_transcript(GREP, failure, error=True)
    model, tools = ScriptedModel(messages=looping()), FailingTools()
    on_error = ToolErrorMiddleware(lambda exc, request: f"{type(exc).__name__}: {exc}")
    messages = run(mode, model, tools, [LoopGuardMiddleware(), on_error])
    assert len(tools.runs) == runs
    answers = [(m.status, m.content) for m in messages if isinstance(m, ToolMessage)]
    assert answers[: len(expected)] == expected
    assert answers[len(expected)] == ("error", NOT_RUN)
    assert messages[-1].content == f"{STOPPED_TEXT} {untagged(expected[-1][1])}"


@pytest.mark.parametrize("mode", MODES)
def test_a_tool_exception_passes_unchanged_and_is_seen(mode: str) -> None:
    """Without an error handler the tool's exception ends the run as it does without loopguard;
    the guard saw the failure (nothing is left pending)."""
    middleware = LoopGuardMiddleware()
    with pytest.raises(FileNotFoundError, match="^no such directory: src"):
        run(mode, ScriptedModel(messages=looping()), FailingTools(), [middleware])
    assert middleware.guard.pending_tools("t1") == 0
    assert middleware.guard.before_call("t2", "grep", GREP).action == "allow"
    assert middleware.guard.pending_tools("t2") == 1  # what a call never seen would leave


@pytest.mark.parametrize("mode", MODES)
def test_a_tool_returning_a_command_is_guarded_the_same(mode: str) -> None:
    """A tool that answers with a ``Command(update={"messages": [ToolMessage]})``: the guard reads
    that ToolMessage, and the reminders go into it."""
    expected, runs = bare_guard_transcript(GREP)
    counted: list[int] = []

    @tool
    def grep(pattern: str, path: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
        """Search files under path for pattern."""
        counted.append(1)
        return Command(update={"messages": [ToolMessage(content=RESULT, tool_call_id=tool_call_id)]})

    tools = Tools()
    tools.all = [grep]
    messages = run(mode, ScriptedModel(messages=looping()), tools, [LoopGuardMiddleware()])
    assert len(counted) == runs
    answers = [(m.status, m.content) for m in messages if isinstance(m, ToolMessage)]
    assert answers[: len(expected)] == expected
    assert messages[-1].content == f"{STOPPED_TEXT} {untagged(expected[-1][1])}"


@pytest.mark.parametrize("mode", MODES)
def test_content_block_results_get_the_reminders_as_a_text_block(mode: str) -> None:
    blocks = [{"type": "text", "text": RESULT}]
    guard = ToolGuard()
    guard.before_call("bare", "grep", GREP, call_id="call_0")
    guard.after_call("bare", "grep", GREP, blocks, call_id="call_0")
    guard.before_call("bare", "grep", GREP, call_id="call_1")
    (note,) = guard.after_call("bare", "grep", GREP, blocks, call_id="call_1")
    third = guard.before_call("bare", "grep", GREP, call_id="call_2")

    @tool
    def grep(pattern: str, path: str) -> list[dict[str, str]]:
        """Search files under path for pattern."""
        return [dict(b) for b in blocks]

    tools = Tools()
    tools.all = [grep]
    script = [call(0), call(1), call(2), AIMessage(content="done")]
    messages = run(mode, ScriptedModel(messages=iter(script)), tools, [LoopGuardMiddleware()])
    answers = [m for m in messages if isinstance(m, ToolMessage)]
    assert answers[0].content == blocks
    assert answers[1].content == [*blocks, {"type": "text", "text": note.text}]
    assert (answers[2].status, answers[2].content) == ("error", third.reason) and third.action == "deny"


CLEAN_SCRIPT = [
    call(0, "grep", {"pattern": "TODO", "path": "src"}),
    call(1, "read", {"path": "src/app.py"}),
    call(2, "grep", {"pattern": "refresh_token", "path": "src"}),
    call(3, "read", {"path": "src/auth.py"}),
    call(4, "grep", {"pattern": "TODO", "path": "tests"}),
    AIMessage(content="Fixed the TODO in src/app.py by refreshing the token in src/auth.py."),
]


@pytest.mark.parametrize("mode", MODES)
def test_a_clean_agent_runs_untouched(mode: str) -> None:
    bare_tools, guarded_tools = Tools(), Tools()
    bare = run(mode, ScriptedModel(messages=iter(CLEAN_SCRIPT)), bare_tools, [])
    guarded = run(mode, ScriptedModel(messages=iter(CLEAN_SCRIPT)), guarded_tools, [LoopGuardMiddleware()])
    assert [shape(m) for m in guarded] == [shape(m) for m in bare]
    assert guarded_tools.runs == bare_tools.runs and len(bare_tools.runs) == 5
    assert sum(isinstance(m, ToolMessage) for m in guarded) == 5


LOOPING_TEXT = "Let me add the numbers. " + "Wait, let me recheck the sum. " * 40


@pytest.mark.parametrize("mode", MODES)
def test_a_looping_answer_ends_the_run(mode: str) -> None:
    detection = next(d for d in scan_text(LOOPING_TEXT) if d.strength == "strong")
    looping_message = call(0, text=LOOPING_TEXT)
    model, tools = ScriptedModel(messages=iter([looping_message, AIMessage(content="never read")])), Tools()
    messages = run(mode, model, tools, [LoopGuardMiddleware()])
    assert tools.runs == [] and model.calls == 1
    human, pruned, not_run, final = messages
    assert isinstance(pruned, AIMessage) and pruned.content == LOOPING_TEXT[: detection.cut]
    assert 0 < detection.cut < len(LOOPING_TEXT)
    assert [c["id"] for c in pruned.tool_calls] == ["call_0"]
    assert (not_run.status, not_run.content, not_run.tool_call_id) == ("error", NOT_RUN, "call_0")
    assert final.content == (
        f"{STOPPED_TEXT} The answer started repeating itself ({detection.kind} at {detection.position}); "
        f"it was cut at {detection.cut}."
    )


@pytest.mark.parametrize("mode", MODES)
def test_looping_reasoning_ends_the_run_without_a_cut(mode: str) -> None:
    """Reasoning in ``additional_kwargs["reasoning_content"]`` (DeepSeek-style): read through
    ``content_blocks``; the message is kept as it is (only a ``str`` answer is cut)."""
    detection = next(d for d in scan_text(LOOPING_TEXT, "reasoning") if d.strength == "strong")
    thinking = AIMessage(content="Here is the sum.", additional_kwargs={"reasoning_content": LOOPING_TEXT})
    model = ScriptedModel(messages=iter([thinking, AIMessage(content="never read")]))
    messages = run(mode, model, Tools(), [LoopGuardMiddleware()])
    human, kept, final = messages
    assert (kept.content, kept.additional_kwargs["reasoning_content"]) == ("Here is the sum.", LOOPING_TEXT)
    assert final.content == (
        f"{STOPPED_TEXT} The model's reasoning started repeating itself ({detection.kind} at {detection.position})."
    )
    quiet = run(mode, ScriptedModel(messages=iter([thinking])), Tools(), [LoopGuardMiddleware(check_text=False)])
    assert len(quiet) == 2


def test_the_constructor_checks_its_arguments() -> None:
    from loopguard import ConfigError, TextConfig

    with pytest.raises(TypeError, match="guard must be a ToolGuard, not dict"):
        LoopGuardMiddleware({})  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        LoopGuardMiddleware(text_config="nope")
    assert LoopGuardMiddleware(text_config="rescue").text_config == TextConfig("rescue")
    assert LoopGuardMiddleware().text_config == TextConfig()


def test_sessions_are_threads_and_threadless_runs_share_nothing() -> None:
    middleware = LoopGuardMiddleware()
    ids = itertools.count()

    def twice(thread: str | None) -> list[tuple[str, str]]:
        script = [call(next(ids)), call(next(ids)), AIMessage(content="done")]
        messages = run("invoke", ScriptedModel(messages=iter(script)), Tools(), [middleware], thread)
        return [(m.status, m.content[:40]) for m in messages if isinstance(m, ToolMessage)]

    first = twice("a")
    assert [s for s, _ in first] == ["success", "success"]
    again = twice("a")  # the thread's third identical call: denied, as a bare guard denies it
    assert again[0] == ("error", "[loopguard] Duplicate tool call blocked:")
    assert [s for s, _ in twice("b")] == ["success", "success"]
    assert [s for s, _ in twice(None)] == ["success", "success"]
    assert [s for s, _ in twice(None)] == ["success", "success"]  # a new conversation, a new session
    # the session is the thread id itself: a bare call on "a" continues that thread's chain
    assert middleware.guard.before_call("a", "grep", GREP).action == "deny"
    assert middleware.guard.before_call("c", "grep", GREP).action == "allow"
    fixed = LoopGuardMiddleware(session_id="user-7")
    assert fixed.session_of({}, None) == "user-7"
    assert LoopGuardMiddleware(session_id=lambda state, runtime: state["who"]).session_of({"who": 3}, None) == 3


CANARY_SECRET = "CnyLangchainToken7f3a9c"
CANARY_PLAIN = "CnyLangchainPattern55"


def test_arguments_never_reach_logs_or_loopguard_messages(caplog: pytest.LogCaptureFixture) -> None:
    args = {"pattern": CANARY_PLAIN, "path": "src", "token": CANARY_SECRET}

    def loop() -> Iterator[AIMessage]:
        for i in itertools.count():
            yield call(i, args=args)

    middleware = LoopGuardMiddleware()
    with caplog.at_level(logging.DEBUG):
        messages = run("invoke", ScriptedModel(messages=loop()), Tools(), [middleware])
    ours = [r for r in caplog.records if r.name.startswith("loopguard")]
    assert ours, "the deny and cancel records"
    for record in ours:
        text = record.getMessage() + repr(getattr(record, "loopguard", ""))
        assert CANARY_PLAIN not in text and CANARY_SECRET not in text
    made = [m for m in messages if str(m.content).startswith("[loopguard]") or "\n\n[loopguard]" in str(m.content)]
    assert len(made) >= 4
    assert not any(CANARY_SECRET in str(m.content) for m in made)
    assert CANARY_PLAIN not in repr(middleware) and CANARY_SECRET not in repr(middleware._stops)


class QuotingGuard(ToolGuard):
    """A guard whose bug quotes the arguments in its error message."""

    def before_call(self, session_id: Any, tool: str, args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"bad arguments {args!r}")


@pytest.mark.parametrize("mode", MODES)
def test_a_guard_error_quoting_the_arguments_is_logged_without_them(
    mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    args = {"pattern": CANARY_PLAIN, "path": "src", "token": CANARY_SECRET}
    tools = Tools()
    script = [call(0, args=args), AIMessage(content="done")]
    with caplog.at_level(logging.DEBUG, logger="loopguard"):
        run(mode, ScriptedModel(messages=iter(script)), tools, [LoopGuardMiddleware(QuotingGuard())])
    assert len(tools.runs) == 1  # failed open: the call ran
    errors = [r for r in caplog.records if r.name == "loopguard.integrations" and r.levelno == logging.ERROR]
    assert len(errors) == 1 and "RuntimeError" in errors[0].getMessage()
    for record in caplog.records:
        text = record.getMessage() + (record.exc_text or "")
        assert CANARY_PLAIN not in text and CANARY_SECRET not in text


class BrokenGuard(ToolGuard):
    """A guard with a bug in one seam."""

    def __init__(self, broken: str) -> None:
        super().__init__()
        self.broken = broken

    def _maybe(self, seam: str) -> None:
        if seam == self.broken:
            raise RuntimeError("a bug inside loopguard")

    def before_call(self, *args: Any, **kwargs: Any) -> Any:
        self._maybe("before")
        return super().before_call(*args, **kwargs)

    def after_call(self, *args: Any, **kwargs: Any) -> Any:
        self._maybe("after")
        return super().after_call(*args, **kwargs)

    def strike(self, *args: Any, **kwargs: Any) -> Any:
        self._maybe("strike")
        return super().strike(*args, **kwargs)

    async def astrike(self, *args: Any, **kwargs: Any) -> Any:
        self._maybe("strike")
        return await super().astrike(*args, **kwargs)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("broken", ["before", "after", "strike", "session"])
def test_a_guard_error_never_breaks_the_run(mode: str, broken: str, caplog: pytest.LogCaptureFixture) -> None:
    """Each seam broken in turn: the error is logged and the run is the run without the middleware
    (identical calls that a working guard would deny, a looping answer it would stop)."""
    looping_answer = AIMessage(content=LOOPING_TEXT)
    if broken == "strike":  # the tool guard works (clean calls); the text loop's strike raises
        script = [*CLEAN_SCRIPT[:-1], looping_answer]
    else:
        script = [*(call(i) for i in range(4)), looping_answer if broken == "session" else AIMessage(content="done")]
    bare_tools, guarded_tools = Tools(), Tools()
    bare = run(mode, ScriptedModel(messages=iter(script)), bare_tools, [])
    if broken == "session":
        middleware = LoopGuardMiddleware(session_id=lambda state, runtime: 1 / 0)
    else:
        middleware = LoopGuardMiddleware(BrokenGuard(broken))
    with caplog.at_level(logging.INFO, logger="loopguard"):
        guarded = run(mode, ScriptedModel(messages=iter(script)), guarded_tools, [middleware])
    errors = [r for r in caplog.records if r.name == "loopguard.integrations" and r.levelno >= logging.ERROR]
    assert errors, "the guard's error is logged"
    assert [shape(m) for m in guarded] == [shape(m) for m in bare]
    assert guarded_tools.runs == bare_tools.runs and len(bare_tools.runs) in (4, 5)


def test_importing_without_langchain_names_the_extra() -> None:
    code = (
        "import sys\n"
        "sys.modules['langchain'] = None\n"
        "try:\n"
        "    import loopguard.integrations.langchain\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert 'pip install "loopguard[langchain]"' in out


def test_the_readme_langchain_example_runs() -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme.split("### LangChain", 1)[1]
    block = re.search(r"```python\n(.*?)```", section, flags=re.S)
    assert block is not None
    code = block.group(1)
    assert '"openai:gpt-5-mini"' in code
    model = ScriptedModel(messages=(call(i, args={"pattern": "TODO", "path": "src"}) for i in itertools.count()))
    scope: dict[str, Any] = {"MODEL": model}
    exec(code.replace('"openai:gpt-5-mini"', "MODEL"), scope)
    final = scope["result"]["messages"][-1]
    assert final.content.startswith(STOPPED_TEXT)
    assert model.calls == 7
