"""The OpenAI Responses API adapter: events in recorded shapes, exact cuts (spec §2.6, §3; ecosystem.md §1.3)."""

from __future__ import annotations

import asyncio
import doctest
from collections.abc import AsyncIterator, Iterator
from types import SimpleNamespace
from typing import Any

import pytest

import loopguard.integrations.responses as responses_module
from conftest import shared_data
from loopguard import Detection, LoopGuardCancelled, Session, StreamConfig, StreamGuard, TextConfig
from loopguard.integrations.responses import aguard_response_stream, apply_response_event, guard_response_stream
from loopguard.messages import pick_language
from loopguard.stream import Action, StreamToolCall
from stream_fixtures import (
    EN_ANSWER,
    ZH_REASONING,
    AsyncUpstream,
    Upstream,
    acting,
    boundary,
    case,
    expected_kept,
    marker,
    ns,
    split,
)

ARGS = '{"city": "Paris", "unit": "celsius"}'


# ----------------------------------------------------------------- helpers


DELTA_TYPES = {
    "reasoning": ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"),
    "text": ("response.output_text.delta",),
}


def head(channel: str) -> list[dict[str, Any]]:
    item = (
        {"type": "reasoning", "id": "rs_1", "summary": []}
        if channel == "reasoning"
        else {"type": "message", "id": "msg_1", "role": "assistant", "content": [], "status": "in_progress"}
    )
    return [
        {"type": "response.created", "sequence_number": 0, "response": {"id": "resp_1", "status": "in_progress"}},
        {"type": "response.in_progress", "sequence_number": 1, "response": {"id": "resp_1"}},
        {"type": "response.output_item.added", "sequence_number": 2, "output_index": 0, "item": item},
    ]


def deltas_events(deltas: list[str], kind: str, item_id: str = "rs_1", start: int = 3) -> list[dict[str, Any]]:
    out = []
    for i, d in enumerate(deltas):
        event: dict[str, Any] = {
            "type": kind,
            "sequence_number": start + i,
            "item_id": item_id,
            "output_index": 0,
            "delta": d,
        }
        event["summary_index" if "summary" in kind else "content_index"] = 0
        if kind == "response.output_text.delta":
            event["logprobs"] = []
        out.append(event)
    return out


def tail(channel: str, text: str) -> list[dict[str, Any]]:
    return [
        {"type": "response.completed", "sequence_number": 10_000, "response": {"id": "resp_1", "status": "completed"}}
    ]


def function_call_events(
    item_id: str = "fc_1",
    call_id: str = "call_1",
    name: str = "get_weather",
    output_index: int = 1,
    pieces: tuple[str, ...] = ('{"city": ', '"Paris", ', '"unit": "celsius"}'),
) -> dict[str, Any]:
    added = {
        "type": "response.output_item.added",
        "sequence_number": 500,
        "output_index": output_index,
        "item": {
            "type": "function_call",
            "id": item_id,
            "call_id": call_id,
            "name": name,
            "arguments": "",
            "status": "in_progress",
        },
    }
    args = [
        {
            "type": "response.function_call_arguments.delta",
            "sequence_number": 501 + i,
            "item_id": item_id,
            "output_index": output_index,
            "delta": p,
        }
        for i, p in enumerate(pieces)
    ]
    done = {
        "type": "response.function_call_arguments.done",
        "sequence_number": 600,
        "item_id": item_id,
        "output_index": output_index,
        "arguments": "".join(pieces),
        "name": name,
    }
    item_done = {
        "type": "response.output_item.done",
        "sequence_number": 601,
        "output_index": output_index,
        "item": {
            "type": "function_call",
            "id": item_id,
            "call_id": call_id,
            "name": name,
            "arguments": "".join(pieces),
            "status": "completed",
        },
    }
    return {"added": added, "args": args, "done": done, "item_done": item_done}


def run(stream: Any) -> list[Any]:
    return list(stream)


def spy_feed(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Record every delta (or held deltas joined) the stream layer feeds to a session's detectors."""
    fed: list[tuple[str, str]] = []
    original = Session.feed

    def feed(self: Session, delta: str, channel: str = "text") -> Any:
        fed.append((channel, delta))
        return original(self, delta, channel)

    def feed_held(self: Session, text: str, channel: str = "text") -> Any:
        fed.append((channel, text))
        return held(self, text, channel)

    held = Session.feed_held
    monkeypatch.setattr(Session, "feed", feed)
    monkeypatch.setattr(Session, "feed_held", feed_held)
    return fed


# ------------------------------------------------------------- exact cuts


@shared_data
@pytest.mark.parametrize("wrap", [lambda e: e, ns], ids=["dicts", "objects"])
@pytest.mark.parametrize("sizes", [(7,), (3, 11, 5, 19, 1)], ids=["7", "varying"])
@pytest.mark.parametrize(
    ("name", "channel", "kind"),
    [
        (ZH_REASONING, "reasoning", "response.reasoning_summary_text.delta"),
        (ZH_REASONING, "reasoning", "response.reasoning_text.delta"),
        (EN_ANSWER, "text", "response.output_text.delta"),
    ],
)
def test_cut_at_the_first_checkpoint_with_the_exact_prune(
    name: str, channel: str, kind: str, sizes: tuple[int, ...], wrap: Any
) -> None:
    text = case(name)
    position, detection = acting(text, channel)
    deltas = split(text, sizes)
    trigger, consumed = boundary(deltas, position)
    events = [wrap(e) for e in head(channel) + deltas_events(deltas, kind) + tail(channel, text)]
    upstream = Upstream(events)
    stream = guard_response_stream(upstream, config={"mode": "cut"})
    passed = run(stream)
    outcome = stream.outcome

    dropped = 3 + trigger
    assert len(passed) == dropped and all(a is b for a, b in zip(passed, events))
    assert upstream.pulled == dropped + 1  # the dropped event was read, not passed on
    assert sum(len(d) for d in deltas[:trigger]) + len(deltas[trigger]) == consumed
    assert upstream.closes == 1
    assert outcome.detection == detection
    assert outcome.stopped and not outcome.should_resume and outcome.channel == channel
    assert outcome.cut == detection.cut and outcome.removed == consumed - detection.cut
    kept = outcome.kept_reasoning if channel == "reasoning" else outcome.kept_text
    other = outcome.kept_text if channel == "reasoning" else outcome.kept_reasoning
    assert kept == expected_kept(text[:consumed], detection.cut, channel)
    assert other == ""
    assert pick_language("auto", text[: detection.cut]) == ("zh" if name == ZH_REASONING else "en")
    assert outcome.marker == "\n" + marker(channel, consumed - detection.cut, text[: detection.cut])
    assert outcome.tool_calls == ()


@shared_data
def test_the_numbers_the_cases_give() -> None:
    """The independent reference itself, pinned (so a regression in both cannot hide)."""
    zh = case(ZH_REASONING)
    position, detection = acting(zh, "reasoning")
    assert (position, detection.kind, detection.position, detection.cut) == (1000, "cycle", 1000, 333)
    stream = guard_response_stream(
        iter(deltas_events(split(zh), "response.reasoning_text.delta")), config={"mode": "rescue"}
    )
    run(stream)
    assert stream.outcome.removed == 1001 - 333 and stream.outcome.should_resume
    assert stream.outcome.kept_reasoning == zh[:333] + "\n〔已删除 668 字符的重复推理〕"
    en = case(EN_ANSWER)
    position, detection = acting(en, "text")
    assert (position, detection.kind, detection.cut) == (2200, "cycle", 1260)  # N weak at 2,000: a notice
    stream = guard_response_stream(iter(deltas_events(split(en), "response.output_text.delta")))
    run(stream)
    assert stream.outcome.kept_text == en[:1260] + "\n〔945 chars of repeated text removed〕"


@shared_data
def test_real_openai_sdk_event_objects() -> None:
    responses = pytest.importorskip("openai.types.responses")
    text = case(ZH_REASONING)
    position, detection = acting(text, "reasoning")
    deltas = split(text, (7,))
    trigger, consumed = boundary(deltas, position)
    fc = responses.ResponseFunctionToolCall(
        type="function_call", id="fc_1", call_id="call_1", name="get_weather", arguments="", status="in_progress"
    )
    events: list[Any] = [
        responses.ResponseOutputItemAddedEvent(
            type="response.output_item.added", sequence_number=0, output_index=0, item=fc
        ),
        *[
            responses.ResponseFunctionCallArgumentsDeltaEvent(
                type="response.function_call_arguments.delta",
                sequence_number=1 + i,
                item_id="fc_1",
                output_index=0,
                delta=p,
            )
            for i, p in enumerate(('{"city": ', '"Paris", ', '"unit": "celsius"}'))
        ],
        responses.ResponseFunctionCallArgumentsDoneEvent(
            type="response.function_call_arguments.done",
            sequence_number=4,
            item_id="fc_1",
            output_index=0,
            arguments=ARGS,
        ),
        *[
            responses.ResponseReasoningSummaryTextDeltaEvent(
                type="response.reasoning_summary_text.delta",
                sequence_number=10 + i,
                item_id="rs_1",
                output_index=1,
                summary_index=0,
                delta=d,
            )
            for i, d in enumerate(deltas)
        ],
    ]
    stream = guard_response_stream(iter(events), config={"mode": "cut"})
    passed = run(stream)
    assert len(passed) == 5 + trigger
    outcome = stream.outcome
    assert outcome.detection == detection
    assert outcome.kept_reasoning == expected_kept(text[:consumed], detection.cut, "reasoning")
    assert outcome.tool_calls == (StreamToolCall("fc_1", "call_1", "get_weather", ARGS),)


# ---------------------------------------------------------- open tool call


def interleaved(text: str, after_trigger: str) -> tuple[list[dict[str, Any]], dict[str, Any], int, int, Detection]:
    """Reasoning deltas (7) with a function call opened 3 deltas before the acting checkpoint;
    ``after_trigger`` says what follows the trigger: ``"call"`` (the rest of the call) or
    ``"reasoning"`` (another reasoning delta while the call is open)."""
    position, detection = acting(text, "reasoning")
    deltas = split(text, (7,))
    trigger, consumed = boundary(deltas, position)
    rs = deltas_events(deltas, "response.reasoning_summary_text.delta")
    fc = function_call_events()
    events = [
        *rs[: trigger - 3],
        fc["added"],
        rs[trigger - 3],
        fc["args"][0],
        rs[trigger - 2],
        rs[trigger - 1],
        fc["args"][1],
        rs[trigger],
    ]
    if after_trigger == "call":
        events += [fc["args"][2], fc["done"], fc["item_done"], *rs[trigger + 1 :]]
    else:
        events += [*rs[trigger + 1 :], fc["args"][2], fc["done"], fc["item_done"]]
    return events, fc, trigger, consumed, detection


@shared_data
@pytest.mark.parametrize("wrap", [lambda e: e, ns], ids=["dicts", "objects"])
def test_a_cut_waits_for_the_open_call_and_passes_it_whole(wrap: Any) -> None:
    text = case(ZH_REASONING)
    raw, fc, trigger, consumed, detection = interleaved(text, "call")
    events = [wrap(e) for e in raw]
    upstream = Upstream(events)
    stream = guard_response_stream(upstream, config={"mode": "rescue"})
    passed = run(stream)
    outcome = stream.outcome
    last = raw.index(fc["done"])
    assert len(passed) == last + 1 and all(a is b for a, b in zip(passed, events))  # the closing event passed on
    assert upstream.pulled == last + 1  # stopped right after it: output_item.done never read
    assert upstream.closes == 1
    assert outcome.tool_calls == (StreamToolCall("fc_1", "call_1", "get_weather", ARGS),)
    # stopped after the call, not resumed: a completed call is progress (the host runs it)
    assert outcome.detection == detection and outcome.stopped and not outcome.should_resume
    assert not outcome.cancelled and outcome.rescues == 0
    assert outcome.kept_reasoning == expected_kept(text[:consumed], detection.cut, "reasoning")


@shared_data
def test_without_done_event_the_output_item_done_closes_the_call() -> None:
    text = case(ZH_REASONING)
    raw, fc, trigger, consumed, detection = interleaved(text, "call")
    raw.remove(fc["done"])
    stream = guard_response_stream(iter(raw), config={"mode": "cut"})
    passed = run(stream)
    assert passed[-1] is fc["item_done"]
    assert stream.outcome.tool_calls == (StreamToolCall("fc_1", "call_1", "get_weather", ARGS),)
    assert stream.outcome.kept_reasoning == expected_kept(text[:consumed], detection.cut, "reasoning")


@shared_data
@pytest.mark.parametrize("mode", ["cut", "rescue"])
def test_reasoning_while_the_cut_waits_passes_until_the_call_ends(mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Reasoning deltas after the trigger, while the call is open: passed on and recorded (not
    fed to the detectors) until ``function_call_arguments.done`` ends the call; the reasoning
    channel, which looped, is pruned at the detection's cut (all it streamed counts as removed)."""
    fed = spy_feed(monkeypatch)
    text = case(ZH_REASONING)
    raw, fc, trigger, consumed, detection = interleaved(text, "reasoning")
    upstream = Upstream(raw)
    stream = guard_response_stream(upstream, config={"mode": mode})
    passed = run(stream)
    outcome = stream.outcome
    last = raw.index(fc["done"])
    assert len(passed) == last + 1 and all(a is b for a, b in zip(passed, raw))
    assert upstream.pulled == last + 1 and upstream.closes == 1  # output_item.done never read
    assert "".join(d for ch, d in fed if ch == "reasoning") == text[:consumed]
    assert outcome.tool_calls == (StreamToolCall("fc_1", "call_1", "get_weather", ARGS),)
    assert outcome.stopped and not outcome.should_resume and not outcome.cancelled
    assert outcome.detection == detection and outcome.cut == detection.cut == 333
    assert outcome.removed == len(text) - 333
    assert outcome.kept_reasoning == expected_kept(text, detection.cut, "reasoning")


@shared_data
def test_answer_text_while_the_cut_waits_is_kept_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    fed = spy_feed(monkeypatch)
    text = case(ZH_REASONING)
    raw, fc, trigger, consumed, detection = interleaved(text, "call")
    answer = deltas_events(["The weather ", "call comes ", "first."], "response.output_text.delta", item_id="msg_1")
    at = raw.index(fc["args"][2])
    raw[at:at] = answer
    stream = guard_response_stream(iter(raw))
    passed = run(stream)
    assert passed == raw[: raw.index(fc["done"]) + 1]
    assert "".join(d for _, d in fed) == text[:consumed]  # the answer deltas were not fed
    outcome = stream.outcome
    assert outcome.kept_text == "The weather call comes first."
    assert outcome.kept_reasoning == expected_kept(text[:consumed], detection.cut, "reasoning")
    assert outcome.stopped and not outcome.should_resume


@shared_data
def test_a_stream_that_ends_while_the_cut_waits_is_pruned_not_stopped() -> None:
    """No event closes the call: the end of the stream completes it; the loop is pruned, but the
    attempt ended by itself (not stopped, not resumed) and counts as completed."""
    text = case(ZH_REASONING)
    raw, fc, trigger, consumed, detection = interleaved(text, "call")
    raw = raw[: raw.index(fc["done"])]
    session = Session()
    run(guard_response_stream(iter(deltas_events(split(text), "response.reasoning_text.delta")), session=session))
    assert session.consecutive_rescues == 1
    stream = guard_response_stream(iter(raw), session=session)
    assert run(stream) == raw
    outcome = stream.outcome
    assert not outcome.stopped and not outcome.should_resume and not outcome.cancelled
    assert outcome.tool_calls == (StreamToolCall("fc_1", "call_1", "get_weather", ARGS),)
    assert consumed == 1001  # 143 deltas of 7: the first boundary past the checkpoint at 1000
    assert outcome.detection == detection and outcome.cut == 333 and outcome.removed == 1001 - 333
    assert outcome.kept_reasoning == expected_kept(text[:consumed], detection.cut, "reasoning")
    assert session.consecutive_rescues == 0


@shared_data
def test_a_completed_call_before_the_loop_means_no_resume() -> None:
    text = case(ZH_REASONING)
    position, detection = acting(text, "reasoning")
    deltas = split(text)
    trigger, consumed = boundary(deltas, position)
    fc = function_call_events(output_index=0)
    events = [
        fc["added"],
        *fc["args"],
        fc["done"],
        fc["item_done"],
        *deltas_events(deltas, "response.reasoning_summary_text.delta", start=700),
    ]
    stream = guard_response_stream(iter(events))
    passed = run(stream)
    assert len(passed) == 6 + trigger
    outcome = stream.outcome
    assert outcome.stopped and not outcome.should_resume and not outcome.cancelled
    assert outcome.tool_calls == (StreamToolCall("fc_1", "call_1", "get_weather", ARGS),)
    assert outcome.kept_reasoning == expected_kept(text[:consumed], detection.cut, "reasoning")


def test_completed_closes_calls_and_a_call_without_item_id_is_keyed_by_output_index() -> None:
    events = [
        {
            "type": "response.output_item.added",
            "output_index": 4,
            "item": {"type": "function_call", "call_id": "call_9", "name": "ls", "arguments": ""},
        },
        {"type": "response.function_call_arguments.delta", "output_index": 4, "delta": '{"path": '},
        {"type": "response.function_call_arguments.delta", "output_index": 4, "delta": '"."}'},
        {"type": "response.completed", "response": {}},
    ]
    stream = guard_response_stream(iter(events))
    assert run(stream) == events
    assert stream.outcome.tool_calls == (StreamToolCall(4, "call_9", "ls", '{"path": "."}'),)
    assert not stream.outcome.stopped


@pytest.mark.parametrize("end", ["response.completed", "response.incomplete", "response.failed"])
def test_end_events_close_open_calls(end: str) -> None:
    guard = StreamGuard()
    fc = function_call_events()
    for event in [fc["added"], *fc["args"]]:
        assert apply_response_event(event, guard) is Action.CONTINUE
    assert guard.outcome.tool_calls == ()
    assert apply_response_event({"type": end}, guard) is Action.CONTINUE
    assert guard.finish().tool_calls == (StreamToolCall("fc_1", "call_1", "get_weather", ARGS),)


# ------------------------------------------------------- modes and watch


@shared_data
def test_observe_passes_every_event_unchanged_and_records_the_detection() -> None:
    text = case(ZH_REASONING)
    _, detection = acting(text, "reasoning")
    raw, fc, *_ = interleaved(text, "reasoning")
    events = [ns(e) for e in head("reasoning")] + [ns(e) for e in raw] + [ns(e) for e in tail("reasoning", text)]
    upstream = Upstream(events)
    stream = guard_response_stream(upstream, config={"mode": "observe"})
    passed = run(stream)
    assert len(passed) == len(events) and all(a is b for a, b in zip(passed, events))
    assert upstream.closes == 0
    outcome = stream.outcome
    assert not outcome.stopped and not outcome.should_resume and outcome.cut is None
    assert outcome.detection == detection
    assert outcome.kept_reasoning == text
    assert outcome.tool_calls == (StreamToolCall("fc_1", "call_1", "get_weather", ARGS),)


@shared_data
def test_watch_text_ignores_a_reasoning_loop_but_not_an_answer_loop() -> None:
    session = Session(text_config=TextConfig("default", watch="text"))
    text = case(ZH_REASONING)
    events = deltas_events(split(text), "response.reasoning_summary_text.delta")
    stream = guard_response_stream(iter(events), session=session)
    assert run(stream) == events
    assert stream.outcome.detection is None and not stream.outcome.stopped
    assert stream.outcome.kept_reasoning == text
    answer = case(EN_ANSWER)
    stream = guard_response_stream(iter(deltas_events(split(answer), "response.output_text.delta")), session=session)
    run(stream)
    assert stream.outcome.stopped and stream.outcome.channel == "text"


@shared_data
def test_rescue_cap_cancels_and_raises_when_asked() -> None:
    text = case(ZH_REASONING)
    events = deltas_events(split(text), "response.reasoning_text.delta")
    session = Session()
    results = []
    for _ in range(4):
        stream = guard_response_stream(iter(events), session=session, config={"max_consecutive_rescues": 3})
        run(stream)
        results.append((stream.outcome.should_resume, stream.outcome.cancelled))
    assert results == [(True, False)] * 3 + [(False, True)]
    session = Session()
    for _ in range(1):
        run(guard_response_stream(iter(events), session=session, config={"max_consecutive_rescues": 1}))
    with pytest.raises(LoopGuardCancelled) as info:
        run(
            guard_response_stream(
                iter(events), session=session, config={"max_consecutive_rescues": 1, "on_rescue_cap": "raise"}
            )
        )
    assert info.value.outcome.cancelled


# ------------------------------------------------------------- bad input


class Hostile:
    """Every attribute read raises."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(name)


BAD_EVENTS: list[Any] = [
    None,
    0,
    7,
    True,
    "response.output_text.delta",
    b"x",
    1.5,
    [],
    [{"type": "response.output_text.delta"}],
    {},
    {"type": None},
    {"type": 5},
    {"type": ["response.output_text.delta"]},
    {"type": "response.output_text.delta"},
    {"type": "response.output_text.delta", "delta": 5},
    {"type": "response.output_text.delta", "delta": None},
    {"type": "response.output_text.delta", "delta": ""},
    {"type": "response.reasoning_text.delta", "delta": {"text": "x"}},
    {"type": "response.output_item.added"},
    {"type": "response.output_item.added", "item": "function_call"},
    {"type": "response.output_item.added", "item": {"type": "function_call"}},
    {"type": "response.output_item.added", "item": {"type": "function_call", "id": ["x"], "output_index": None}},
    {"type": "response.output_item.added", "output_index": True, "item": {"type": "function_call", "id": 3}},
    {"type": "response.output_item.done", "item": {"type": "function_call", "id": None}},
    {"type": "response.function_call_arguments.delta", "delta": "x"},
    {"type": "response.function_call_arguments.delta", "item_id": None, "output_index": "1", "delta": "x"},
    {"type": "response.function_call_arguments.delta", "item_id": "fc_bad", "delta": 5},
    {"type": "response.function_call_arguments.done", "item_id": "fc_bad", "arguments": 5, "name": 7},
    {"type": "response.completed", "response": None},
    {"type": "error", "message": "x"},
    {"type": "response.refusal.delta", "delta": "no"},
    {"type": "response.unknown", "delta": "x"},
    SimpleNamespace(type="response.output_text.delta", delta=b"bytes"),
    SimpleNamespace(),
    Hostile(),
    SimpleNamespace(type="response.output_item.added", item=Hostile()),
]


def test_events_of_unexpected_shape_pass_through_and_never_raise() -> None:
    upstream = Upstream(BAD_EVENTS)
    stream = guard_response_stream(upstream)
    passed = run(stream)
    assert len(passed) == len(BAD_EVENTS) and all(a is b for a, b in zip(passed, BAD_EVENTS))
    outcome = stream.outcome
    assert not outcome.stopped and outcome.guard_error is None and outcome.kept_text == ""
    guard = StreamGuard()
    for event in BAD_EVENTS:
        assert apply_response_event(event, guard) is Action.CONTINUE


@shared_data
def test_bad_events_interleaved_do_not_change_the_cut() -> None:
    text = case(EN_ANSWER)
    position, detection = acting(text, "text")
    deltas = split(text, (7,))
    trigger, consumed = boundary(deltas, position)
    good = deltas_events(deltas, "response.output_text.delta")
    events: list[Any] = []
    for i, event in enumerate(good):
        events += [BAD_EVENTS[i % len(BAD_EVENTS)], event]
    stream = guard_response_stream(iter(events), config={"mode": "cut"})
    passed = run(stream)
    assert len(passed) == 2 * trigger + 1
    assert stream.outcome.detection == detection
    assert stream.outcome.kept_text == expected_kept(text[:consumed], detection.cut, "text")


def test_an_upstream_error_propagates_unchanged_with_the_text_seen_before() -> None:
    error = ConnectionResetError("peer went away")
    events = deltas_events(["Let me ", "look at ", "the schema."], "response.reasoning_text.delta")
    events += deltas_events(["The index ", "is missing."], "response.output_text.delta")

    def upstream() -> Iterator[Any]:
        yield from events
        raise error

    stream = guard_response_stream(upstream())
    seen = []
    with pytest.raises(ConnectionResetError) as info:
        for event in stream:
            seen.append(event)
    assert info.value is error
    assert seen == events
    outcome = stream.outcome
    assert outcome.upstream_error is error and not outcome.stopped
    assert outcome.kept_reasoning == "Let me look at the schema." and outcome.kept_text == "The index is missing."
    with pytest.raises(StopIteration):
        next(stream)


@shared_data
def test_close_is_called_once_with_a_context_manager_and_a_second_close() -> None:
    text = case(ZH_REASONING)
    upstream = Upstream(deltas_events(split(text), "response.reasoning_summary_text.delta"))
    with guard_response_stream(upstream) as stream:
        run(stream)
        stream.close()
    assert upstream.closes == 1 and stream.outcome.stopped


# ------------------------------------------------------------------ async


@shared_data
def test_async_generator_upstream_gives_the_same_cut_and_is_closed_once() -> None:
    text = case(EN_ANSWER)
    position, detection = acting(text, "text")
    deltas = split(text, (5, 9))
    trigger, consumed = boundary(deltas, position)
    events = [ns(e) for e in head("text") + deltas_events(deltas, "response.output_text.delta")]
    finals: list[str] = []

    async def upstream() -> AsyncIterator[Any]:
        try:
            for event in events:
                await asyncio.sleep(0)
                yield event
        finally:
            finals.append("closed")

    async def main() -> tuple[list[Any], Any]:
        stream = aguard_response_stream(upstream(), config={"mode": "cut"})
        passed = [event async for event in stream]
        await stream.close()
        return passed, stream.outcome

    passed, outcome = asyncio.run(main())
    assert len(passed) == 3 + trigger and all(a is b for a, b in zip(passed, events))
    assert finals == ["closed"]
    assert outcome.detection == detection
    assert outcome.kept_text == expected_kept(text[:consumed], detection.cut, "text")


@shared_data
def test_async_stream_with_async_close_and_deferred_cut() -> None:
    text = case(ZH_REASONING)
    raw, fc, trigger, consumed, detection = interleaved(text, "call")
    upstream = AsyncUpstream(raw)

    async def main() -> tuple[list[Any], Any]:
        async with aguard_response_stream(upstream) as stream:
            passed = [event async for event in stream]
        return passed, stream.outcome

    passed, outcome = asyncio.run(main())
    assert passed == raw[: raw.index(fc["done"]) + 1]
    assert upstream.closes == 1
    assert outcome.tool_calls == (StreamToolCall("fc_1", "call_1", "get_weather", ARGS),)
    assert outcome.kept_reasoning == expected_kept(text[:consumed], detection.cut, "reasoning")


def test_async_stream_needs_an_async_iterable() -> None:
    session = Session()
    upstreams: list[Any] = [[{"type": "response.output_text.delta", "delta": "x"}], iter([]), Upstream([])]
    for upstream in upstreams:
        with pytest.raises(TypeError, match="async iterable"):
            aguard_response_stream(upstream, session=session)
    assert session.attempt == 0


def test_async_upstream_error_propagates_unchanged() -> None:
    error = ValueError("bad SSE frame")

    async def upstream() -> AsyncIterator[Any]:
        yield {"type": "response.output_text.delta", "delta": "Partial answer"}
        raise error

    async def main() -> Any:
        stream = aguard_response_stream(upstream())
        with pytest.raises(ValueError) as info:
            async for _ in stream:
                pass
        assert info.value is error
        return stream.outcome

    outcome = asyncio.run(main())
    assert outcome.kept_text == "Partial answer" and outcome.upstream_error is error


# ----------------------------------------------------------------- docs


def test_module_doctest() -> None:
    result = doctest.testmod(responses_module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


def test_stream_config_object_and_default_mode() -> None:
    stream = guard_response_stream(iter([]), config=StreamConfig(mode="observe"))
    assert run(stream) == [] and stream.outcome.mode == "observe"
    assert guard_response_stream(iter([])).guard.config.mode == "rescue"
