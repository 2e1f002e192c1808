"""Metrics and span events (issue 18), with the real ``prometheus_client`` and OpenTelemetry SDK:
exact values for scripted sequences, bounded labels, no canary secret anywhere (log records of
every logger, the JSON Lines output, the scraped registry, span event attributes)."""

from __future__ import annotations

import io
import json
import logging
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import prometheus_client  # the test extra installs both: no skip
import pytest
from opentelemetry.sdk import trace as sdk_trace
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from loopguard import LoopBrake, LoopBrakeError, Session, StreamConfig, StreamGuard, ToolGuard
from loopguard.observe import (
    configure_decision_log,
    disable_metrics,
    enable_metrics,
    enable_tracing,
    fail_open,
    reset,
    store_error,
)
from loopguard.results import result_digest
from test_canaries import STRUCTURED_CANARIES, TEXT_CANARIES, _leaks

GREP = {"pattern": "needle", "path": "src"}
GREP_RESULT = "src/a.py:1550: needle here\nsrc/a.py:1755: needle again"
LOOP = "Wait, let me recheck the sum. "


@pytest.fixture
def registry() -> Iterator[Any]:
    reg = prometheus_client.CollectorRegistry()
    enable_metrics(reg)
    yield reg
    reset()


def value(reg: Any, name: str, **labels: str) -> float:
    got = reg.get_sample_value(name, labels)
    return 0.0 if got is None else float(got)


def three_greps(guard: ToolGuard) -> None:
    for _ in range(2):
        guard.before_call("s1", "grep", GREP)
        guard.after_call("s1", "grep", GREP, GREP_RESULT)
    assert guard.before_call("s1", "grep", GREP).action == "deny"


def test_scripted_tool_sequence_exact_values(registry: Any) -> None:
    three_greps(ToolGuard())
    assert value(registry, "loopguard_actions_total", rule="none", action="allow") == 2
    assert value(registry, "loopguard_actions_total", rule="repeat", action="notice") == 1
    assert value(registry, "loopguard_actions_total", rule="repeat", action="deny") == 1
    assert value(registry, "loopguard_detections_total", kind="repeat", channel="tool") == 2
    # 3 before_call + 2 after_call decisions timed
    assert value(registry, "loopguard_decision_seconds_count", surface="tool_guard") == 5
    assert 0 < value(registry, "loopguard_decision_seconds_sum", surface="tool_guard") < 5.0
    assert value(registry, "loopguard_decision_seconds_count", surface="brake") == 0


def test_brake_and_store_counters(registry: Any) -> None:
    brake = LoopBrake(max_repeats=2)
    brake.check("search", {"q": "x"}, session_id="b")
    with pytest.raises(LoopBrakeError):
        brake.check("search", {"q": "x"}, session_id="b")
    assert value(registry, "loopguard_actions_total", rule="none", action="allow") == 1
    assert value(registry, "loopguard_actions_total", rule="brake", action="deny") == 1
    assert value(registry, "loopguard_detections_total", kind="brake", channel="tool") == 1
    assert value(registry, "loopguard_decision_seconds_count", surface="brake") == 2
    store_error("get")
    store_error("get")
    store_error("update")
    fail_open()
    assert value(registry, "loopguard_store_errors_total", operation="get") == 2
    assert value(registry, "loopguard_store_errors_total", operation="update") == 1
    assert value(registry, "loopguard_fail_open_total") == 1
    disable_metrics()
    store_error("get")  # metrics off: a no-op
    fail_open()
    brake.check("other", {}, session_id="b")
    assert value(registry, "loopguard_store_errors_total", operation="get") == 2
    assert value(registry, "loopguard_fail_open_total") == 1
    assert value(registry, "loopguard_actions_total", rule="none", action="allow") == 1


def test_text_and_stream_counts(registry: Any) -> None:
    s = Session("t1")
    s.start_attempt()
    verdicts = [s.feed((LOOP * 40)[i : i + 30], "text") for i in range(0, 1200, 30)]
    cut = next(v for v in verdicts if v.stop)
    kind = cut.detection.kind
    s.end_attempt()
    assert value(registry, "loopguard_detections_total", kind=kind, channel="text") == 1
    assert value(registry, "loopguard_actions_total", rule="text_loop", action="cut") == 1
    assert value(registry, "loopguard_decision_seconds_count", surface="text") >= 1
    # through a stream in rescue mode: the session counts the detection, the stream the action
    sg = StreamGuard(Session("t2"), StreamConfig(mode="rescue"))
    for i in range(0, 1200, 30):
        sg.reasoning((LOOP * 40)[i : i + 30])
        if sg.stopped:
            break
    outcome = sg.finish("stop")
    assert outcome.should_resume
    assert value(registry, "loopguard_detections_total", kind=kind, channel="reasoning") == 1
    assert value(registry, "loopguard_actions_total", rule="text_loop", action="cut") == 2
    assert value(registry, "loopguard_actions_total", rule="strikes", action="cancel") == 0


def test_enabling_twice_reuses_the_metrics_and_names_are_documented() -> None:
    reg = prometheus_client.CollectorRegistry()
    try:
        enable_metrics(reg)
        enable_metrics(reg)  # no "Duplicated timeseries"
        three_greps(ToolGuard())
        assert value(reg, "loopguard_actions_total", rule="repeat", action="deny") == 1
    finally:
        reset()
    names = {m.name for m in reg.collect()}
    assert names == {
        "loopguard_detections",
        "loopguard_actions",
        "loopguard_decision_seconds",
        "loopguard_store_errors",
        "loopguard_fail_open",
        "loopguard_samples",
    }
    from pathlib import Path

    doc = (Path(__file__).parent.parent / "docs" / "metrics.md").read_text("utf-8")
    for name in names:
        assert name in doc


def test_span_events_on_the_current_span(registry: Any) -> None:
    exporter = InMemorySpanExporter()
    provider = sdk_trace.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    enable_tracing()
    with provider.get_tracer("test").start_as_current_span("request"):
        three_greps(ToolGuard())
    (span,) = exporter.get_finished_spans()
    events = [(e.name, dict(e.attributes or {})) for e in span.events]
    assert [name for name, _ in events] == ["loopguard.decision"] * 4  # allow, allow, notice, deny
    assert [(a["event"], a["action"], a["call_index"]) for _, a in events] == [
        ("tool_call", "allow", 0),
        ("tool_call", "allow", 1),
        ("tool_result", "notice", 1),
        ("tool_call", "deny", 2),
    ]
    deny = events[3][1]
    deny.pop("time")
    assert deny == {
        "event": "tool_call",
        "surface": "tool_guard",
        "action": "deny",
        "rule": "repeat",
        "kind": "repeat",
        "session": "s1",
        "tool": "grep",
        "channel": "tool",
        "call_index": 2,
        "hash": result_digest(GREP_RESULT)[:12],
        "evidence.count": 2,
        "evidence.limit": 2,
        "evidence.replay": False,
        "replica": deny["replica"],
    }


def test_nothing_is_imported_when_off() -> None:
    code = (
        "import sys, loopguard\n"
        "from loopguard.observe import log\n"
        "built = []\n"
        "real = log.decision_fields\n"
        "log.decision_fields = lambda *a, **k: built.append(1) or real(*a, **k)\n"
        "g = loopguard.ToolGuard()\n"
        "actions = []\n"
        "for _ in range(3):\n"
        "    actions.append(g.before_call('s', 'grep', {'q': 1, 'path': 'a'}).action)\n"
        "    g.after_call('s', 'grep', {'q': 1, 'path': 'a'}, 'r')\n"
        "loopguard.observe.store_error('get'); loopguard.observe.fail_open()\n"
        "print(actions, len(built))\n"
        "print(sorted(m for m in sys.modules if m.startswith(('prometheus_client', 'opentelemetry'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    # no handler configured: the deny and the notice build no record; nothing optional is imported
    assert out.stdout.splitlines() == ["['allow', 'allow', 'deny'] 0", "[]"]
    assert "deny" not in out.stderr  # no "last resort" output either


# ------------------------------------------------------------------ canaries


def test_canaries_reach_no_record_metric_or_span_event(registry: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)  # every logger, every level
    lines = io.StringIO()
    configure_decision_log(lines, level=logging.DEBUG)
    exporter = InMemorySpanExporter()
    # the SDK keeps 128 events per span by default: room for every canary's
    provider = sdk_trace.TracerProvider(span_limits=sdk_trace.SpanLimits(max_events=10_000))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    enable_tracing()
    canaries = [text for _, text in TEXT_CANARIES] + [args for _, args in STRUCTURED_CANARIES]
    stops = 0
    with provider.get_tracer("test").start_as_current_span("request"):
        for n, canary in enumerate(canaries):
            guard, sid = ToolGuard(), f"s{n}"
            args = canary if isinstance(canary, dict) else {"cmd": canary}
            result = canary if isinstance(canary, str) else json.dumps(str(canary))
            for _ in range(3):  # the third request is denied
                d = guard.before_call(sid, "shell", args)
                stops += not d.allowed
                if d.allowed:
                    guard.after_call(sid, "shell", args, result)
            brake = LoopBrake(max_repeats=2)
            try:
                brake.check("shell", args, session_id=sid)
            except (TypeError, ValueError):
                continue  # arguments the brake cannot hash (a bytes key): refused, nothing counted
            with pytest.raises(LoopBrakeError):
                brake.check("shell", args, session_id=sid)
        for n, (_, text) in enumerate(TEXT_CANARIES):  # model text: a loop made of a canary line
            sg = StreamGuard(Session(f"t{n}"), StreamConfig(mode="cut"))
            line = f"Let me run {text} again and check the sum.\n"
            for _ in range(40):
                sg.text(line)
                if sg.stopped:
                    break
            assert sg.finish("stop").stopped
    assert stops == len(canaries)
    records = [r for r in caplog.records if r.name.startswith("loopguard")]
    assert sum(r.name == "loopguard.decisions" for r in records) > 4 * len(canaries)
    for r in records:
        assert _leaks(r.getMessage()) == [], r.getMessage()
        assert _leaks(repr(r.__dict__)) == [], r.name
    assert lines.getvalue().isascii() and _leaks(lines.getvalue()) == []
    scraped = prometheus_client.generate_latest(registry).decode("utf-8")
    assert "loopguard_actions_total" in scraped and _leaks(scraped) == []
    (span,) = exporter.get_finished_spans()
    assert len(span.events) > 4 * len(canaries)
    for event in span.events:
        assert _leaks(repr(dict(event.attributes or {}))) == []
