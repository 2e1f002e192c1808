"""The no-I/O guarantee of seed 000 ("it opens no socket, reads no file, spawns no process --
asserted by the test suite, not promised"), for a whole guarded session (issue 21).

An audit hook (:func:`sys.addaudithook`, PEP 578) records every file, socket and process event
the interpreter raises while :data:`RECORDER` is switched on.  Audit hooks cannot be removed, so
one recorder is installed once per process and switched on only around the guarded part; the
scenario runs once before (a warm-up: lazy imports, compiled regexes and caches happen there) and
is recorded the second time.  The asyncio event loop is made outside the recorded part (its
self-pipe is a socket pair).
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from loopguard import (
    LoopBrake,
    LoopBrakeError,
    Session,
    ToolGuard,
    ToolGuardConfig,
    decorate_tool,
    wrap_execute,
    wrap_tool,
)
from loopguard.integrations.openai import aguard_stream, guard_stream

#: event names (exact) and prefixes that are file, socket or process I/O
IO_EVENTS = frozenset({"open", "subprocess.Popen", "pty.spawn", "glob.glob", "mmap.__new__", "ctypes.dlopen"})
IO_PREFIXES = ("os.", "socket.", "shutil.", "tempfile.", "urllib.", "http.", "ftplib.", "smtplib.", "fcntl.")


class Recorder:
    """The process's one audit hook: records I/O events while ``on``."""

    def __init__(self) -> None:
        self.on = False
        self.events: list[tuple[str, int]] = []  # (event name, thread id): never its arguments
        sys.addaudithook(self)

    def __call__(self, event: str, args: tuple[Any, ...]) -> None:
        if self.on and (event in IO_EVENTS or event.startswith(IO_PREFIXES)):
            self.events.append((event, threading.get_ident()))


RECORDER = Recorder()

LOOP = "The cache is stale, so I flush it and check again. "
CLEAN = "The meeting is at ten, in room four. Bring the slides and the budget sheet, please. "


def chunks(text: str, size: int = 8) -> list[dict[str, Any]]:
    """Chat Completions stream chunks (dicts) of ``text``, ``size`` code points each, then a stop."""
    out: list[dict[str, Any]] = [
        {
            "id": "c1",
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {"content": text[i : i + size]}}],
        }
        for i in range(0, len(text), size)
    ]
    out.append(
        {"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    )
    return out


class Upstream:
    """A sync upstream with ``close()`` (what the guard calls when it cuts)."""

    def __init__(self, items: list[dict[str, Any]]) -> None:
        self._it: Iterator[dict[str, Any]] = iter(items)
        self.closed = False

    def __iter__(self) -> Upstream:
        return self

    def __next__(self) -> dict[str, Any]:
        return next(self._it)

    def close(self) -> None:
        self.closed = True


class AsyncUpstream:
    def __init__(self, items: list[dict[str, Any]]) -> None:
        self._items = items
        self.closed = False

    def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        return self._gen()

    async def _gen(self) -> AsyncIterator[dict[str, Any]]:
        for item in self._items:
            await asyncio.sleep(0)
            yield item

    async def close(self) -> None:
        self.closed = True


def scenario(loop: asyncio.AbstractEventLoop) -> dict[str, Any]:
    """A whole guarded session; what each part decided (asserted below: the parts really ran)."""
    seen: dict[str, Any] = {}
    # text deltas through a Session, then tool calls through the same Session
    session = Session("no-io", text_config="rescue")
    session.start_turn()
    verdicts = [session.feed(LOOP, "reasoning") for _ in range(40)]
    seen["session_cut"] = next(v.action for v in verdicts if v.stop)
    seen["session_end"] = session.end_attempt().action
    seen["session_tools"] = [session.tool_call("grep", {"pattern": "x", "path": "src"}).action for _ in range(4)]
    # the ToolGuard's two seams directly: the same call and result until it is denied
    guard = ToolGuard(ToolGuardConfig())
    actions = []
    for _ in range(5):
        decision = guard.before_call("g", "read_file", {"path": "a.py", "token": "CanarySecret123"})
        actions.append(decision.action)
        if decision.allowed:
            guard.after_call("g", "read_file", {"path": "a.py", "token": "CanarySecret123"}, "x = 1\ny = 2\n")
    seen["guard"] = actions
    # wrap_tool, sync and async
    tool = wrap_tool(lambda args: "same answer", ToolGuard(), tool="lookup", session_id="w")
    seen["wrap_tool"] = ["ran" if tool({"q": "a"}).startswith("same answer") else "denied" for _ in range(5)]

    async def body(args: dict[str, Any]) -> str:
        return "async answer"

    atool = wrap_tool(body, ToolGuard(), tool="alookup", session_id="w")
    seen["wrap_tool_async"] = loop.run_until_complete(atool({"q": "b"}))
    # LoopBrake: check, wrap_execute, decorate_tool
    brake = LoopBrake(max_repeats=3)
    counts = [brake.check("search", {"q": "weather"}, session_id="b") for _ in range(2)]
    try:
        brake.check("search", {"q": "weather"}, session_id="b")
    except LoopBrakeError as exc:
        counts.append(exc.count)
    seen["brake"] = counts
    braked = wrap_execute(lambda args: "ran", LoopBrake(max_repeats=2), tool="t", session_id="b")
    ran = [braked({"x": 1})]
    try:
        braked({"x": 1})
    except LoopBrakeError:
        ran.append("denied")
    seen["wrap_execute"] = ran
    definition = decorate_tool({"name": "t2", "execute": lambda args: "ok"}, LoopBrake())
    seen["decorate_tool"] = definition["execute"]({"y": 2})
    # the stream adapters over dict chunks: a looping stream (cut) and a clean one, sync and async
    for name, text in (("loop", LOOP * 40), ("clean", CLEAN * 3)):
        upstream = Upstream(chunks(text))
        stream = guard_stream(upstream)
        passed = list(stream)
        seen[f"sync_{name}"] = (stream.outcome.stopped, upstream.closed, len(passed) > 0)

        async def consume(items: list[dict[str, Any]]) -> tuple[bool, bool, bool]:
            up = AsyncUpstream(items)
            guarded = aguard_stream(up)
            got = [c async for c in guarded]
            return guarded.outcome.stopped, up.closed, len(got) > 0

        seen[f"async_{name}"] = loop.run_until_complete(consume(chunks(text)))
    return seen


EXPECTED = {
    "session_cut": "cut",
    "session_end": "cut",
    "session_tools": ["allow", "allow", "allow", "allow"],
    "guard": ["allow", "allow", "deny", "allow", "deny"],  # repeat: denied, one escape run, locked
    "wrap_tool": ["ran", "ran", "denied", "ran", "denied"],
    "wrap_tool_async": "async answer",
    "brake": [1, 2, 3],
    "wrap_execute": ["ran", "denied"],
    "decorate_tool": "ok",
    "sync_loop": (True, True, True),
    "async_loop": (True, True, True),
    "sync_clean": (False, False, True),
    "async_clean": (False, False, True),
}


def test_a_whole_guarded_session_does_no_io() -> None:
    loop = asyncio.new_event_loop()  # (its self-pipe is a socket pair: made before recording)
    try:
        assert scenario(loop) == EXPECTED  # warm-up: lazy imports and caches happen here
        RECORDER.events.clear()
        RECORDER.on = True
        try:
            seen = scenario(loop)
            during = list(RECORDER.events)
            with open(os.devnull, "rb"):  # the control: the recorder does see I/O
                pass
            control = RECORDER.events[len(during) :]
        finally:
            RECORDER.on = False
    finally:
        loop.close()
    assert seen == EXPECTED
    assert during == []
    assert [name for name, _ in control] == ["open"]


@pytest.mark.parametrize("event", ["open", "os.listdir", "socket.connect", "subprocess.Popen", "os.system", "os.exec"])
def test_the_recorder_catches_each_kind_of_event(event: str) -> None:
    """The hook's filter: each I/O event name is recorded while on, and nothing while off."""
    RECORDER.events.clear()
    sys.audit(event, "x")
    assert RECORDER.events == []
    RECORDER.on = True
    try:
        sys.audit(event, "x")
        sys.audit("object.__getattr__", "x")  # not I/O
    finally:
        RECORDER.on = False
    assert [name for name, _ in RECORDER.events] == [event]
    RECORDER.events.clear()
