"""Checked by mypy --strict in test_typing.py: the stubs and annotations users rely on."""

from __future__ import annotations

from typing import Any

import loopcore
from loopguard import Detection, TextConfig, TextLoopDetector, scan_text

stream = loopcore.ChannelStream(**TextConfig().stream_params("text"))
raw: list[tuple[str, int, int, int, dict[str, Any]]] = stream.feed("abc") + stream.finish()
length: int = stream.length + stream.masked_length + stream.memory_bytes
hits: dict[str, int] = stream.hits
implementation: str = loopcore.IMPLEMENTATION

detector = TextLoopDetector("rescue", implementation="cython")
found: list[Detection] = detector.feed("hello", "reasoning") + detector.finish()
positions: list[int] = [d.position for d in found] + [d.cut for d in scan_text("a" * 10)]
as_dicts: list[dict[str, Any]] = [d.to_dict() for d in found]

# ToolGuard and Session (spec §5.2, §8)
from loopguard import Decision, Intervention, Session, SessionConfig, ToolGuard, ToolGuardConfig, Verdict  # noqa: E402

guard = ToolGuard(ToolGuardConfig(repeat_limit=3, exclude=["job_*"]), clock=lambda: 0.0)
decision: Decision = guard.before_call("s", "grep", {"pattern": "x", "path": "src"}, call_id="c1")
allowed: bool = decision.allowed
action: str = decision.action
interventions: list[Intervention] = guard.after_call("s", "grep", {"pattern": "x", "path": "src"}, "a.py:1: x")
texts: list[str] = [i.text for i in interventions if i.action == "notice"]
replay: bool = guard.observe_attempt("s", reasoning="…", text="", tool_calls=[("grep", {"pattern": "x"})])
session = Session("chat-1", guard=guard, config=SessionConfig(empty_turn_action="steer"))
verdict: Verdict = session.feed("delta", "reasoning")
stop: bool = verdict.stop or session.tool_call("ls", {}).stop
