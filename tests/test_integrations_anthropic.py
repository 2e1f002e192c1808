"""The Anthropic Messages adapter: events in recorded shapes, exact cuts, resume (spec §2.6, §3; ecosystem.md §1.4)."""

from __future__ import annotations

import asyncio
import copy
import doctest
import json
from collections.abc import AsyncIterator, Iterator, Mapping
from types import SimpleNamespace
from typing import Any

import pytest

import loopguard.integrations.anthropic as anthropic_module
from conftest import shared_data
from loopguard import Detection, Session, StreamConfig, StreamGuard, TextConfig
from loopguard.integrations.anthropic import (
    ResumeRequest,
    aguard_stream,
    apply_anthropic_event,
    guard_stream,
    resume_messages,
)
from loopguard.integrations.openai import resume_messages as openai_resume_messages
from loopguard.messages import pick_language, render
from loopguard.stream import Action, StreamOutcome, StreamToolCall
from stream_fixtures import (
    EN_ANSWER,
    ZH_REASONING,
    AsyncUpstream,
    Upstream,
    acting,
    boundary,
    case,
    expected_kept,
    ns,
    split,
)

ARGS = '{"query": "missing index", "limit": 5}'


# ----------------------------------------------------------------- helpers


def message_start() -> dict[str, Any]:
    return {
        "type": "message_start",
        "message": {
            "id": "msg_01",
            "type": "message",
            "role": "assistant",
            "model": "claude-x",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 25, "output_tokens": 1},
        },
    }


def block(index: int, channel: str, deltas: list[str]) -> list[dict[str, Any]]:
    """One text or thinking block, as the API streams it (thinking ends with a signature)."""
    if channel == "reasoning":
        start = {"type": "thinking", "thinking": "", "signature": ""}
        body = [
            {"type": "content_block_delta", "index": index, "delta": {"type": "thinking_delta", "thinking": d}}
            for d in deltas
        ]
        body.append(
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "signature_delta", "signature": "EqQBCgIYAh..."},
            }
        )
    else:
        start = {"type": "text", "text": ""}
        body = [
            {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": d}} for d in deltas
        ]
    return [
        {"type": "content_block_start", "index": index, "content_block": start},
        *body,
        {"type": "content_block_stop", "index": index},
    ]


def tool_block(
    index: int,
    pieces: tuple[str, ...] = ('{"query": ', '"missing index", ', '"limit": 5}'),
    tool_type: str = "tool_use",
    tool_id: str = "toolu_01",
    name: str = "search",
) -> list[dict[str, Any]]:
    return [
        {
            "type": "content_block_start",
            "index": index,
            "content_block": {"type": tool_type, "id": tool_id, "name": name, "input": {}},
        },
        *[
            {"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": p}}
            for p in pieces
        ],
        {"type": "content_block_stop", "index": index},
    ]


def message_end(stop_reason: str = "end_turn") -> list[dict[str, Any]]:
    return [
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": 900},
        },
        {"type": "message_stop"},
    ]


def loop_events(
    name: str, channel: str, sizes: tuple[int, ...] = (7,)
) -> tuple[list[dict[str, Any]], str, int, int, Detection]:
    """(events, text, index of the trigger event, consumed code points, acting detection)."""
    text = case(name)
    position, detection = acting(text, channel)
    deltas = split(text, sizes)
    trigger, consumed = boundary(deltas, position)
    events = [message_start(), {"type": "ping"}, *block(0, channel, deltas), *message_end()]
    return events, text, 3 + trigger, consumed, detection


def alternates(messages: list[Any]) -> bool:
    roles = [m["role"] for m in messages]
    return (
        roles[0] == "user"
        and roles[-1] == "user"
        and all(a != b for a, b in zip(roles, roles[1:]))
        and all(m["content"] for m in messages)
    )


# ------------------------------------------------------------- exact cuts


@shared_data
@pytest.mark.parametrize("wrap", [lambda e: e, ns], ids=["dicts", "objects"])
@pytest.mark.parametrize("sizes", [(7,), (2, 13, 6, 17)], ids=["7", "varying"])
@pytest.mark.parametrize(("name", "channel"), [(ZH_REASONING, "reasoning"), (EN_ANSWER, "text")])
def test_cut_at_the_first_checkpoint_with_the_exact_prune(
    name: str, channel: str, sizes: tuple[int, ...], wrap: Any
) -> None:
    raw, text, trigger, consumed, detection = loop_events(name, channel, sizes)
    events = [wrap(e) for e in raw]
    upstream = Upstream(events)
    stream = guard_stream(upstream, config={"mode": "cut"})
    passed = run(stream)
    outcome = stream.outcome
    assert len(passed) == trigger and all(a is b for a, b in zip(passed, events))
    assert upstream.pulled == trigger + 1 and upstream.closes == 1
    field = "thinking" if channel == "reasoning" else "text"
    through = "".join(e["delta"][field] for e in raw[: trigger + 1] if e["type"] == "content_block_delta")
    assert len(through) == consumed  # passed on + the dropped delta
    assert outcome.detection == detection
    assert outcome.stopped and outcome.channel == channel and not outcome.should_resume
    assert outcome.cut == detection.cut and outcome.removed == consumed - detection.cut
    kept, other = (
        (outcome.kept_reasoning, outcome.kept_text)
        if channel == "reasoning"
        else (outcome.kept_text, outcome.kept_reasoning)
    )
    assert kept == expected_kept(text[:consumed], detection.cut, channel)
    assert other == ""
    assert pick_language("auto", text[: detection.cut]) == ("zh" if name == ZH_REASONING else "en")


def run(stream: Any) -> list[Any]:
    return list(stream)


@shared_data
def test_the_numbers_the_cases_give() -> None:
    raw, text, trigger, consumed, detection = loop_events(ZH_REASONING, "reasoning")
    assert (consumed, detection.kind, detection.position, detection.cut) == (1001, "cycle", 1000, 333)
    stream = guard_stream(iter(raw))
    run(stream)
    assert stream.outcome.kept_reasoning == text[:333] + "\n〔已删除 668 字符的重复推理〕"
    assert stream.outcome.should_resume
    raw, text, trigger, consumed, detection = loop_events(EN_ANSWER, "text")
    stream = guard_stream(iter(raw))
    run(stream)
    assert stream.outcome.kept_text == text[:1260] + "\n〔945 chars of repeated text removed〕"


@shared_data
@pytest.mark.parametrize("mode", ["cut", "rescue"])
def test_thinking_then_tool_use_then_text_loop(mode: str) -> None:
    """Sequential blocks: the tool call is complete before the answer loops; it stays in the
    outcome, and the stop is not resumed (a completed call is progress: the host runs it)."""
    answer = case(EN_ANSWER)
    position, detection = acting(answer, "text")
    deltas = split(answer)
    trigger, consumed = boundary(deltas, position)
    thinking = ["The user asks why ", "the query is slow. ", "Search first."]
    raw = [
        message_start(),
        *block(0, "reasoning", thinking),
        *tool_block(1),
        *tool_block(2, tool_type="server_tool_use", tool_id="srvtoolu_1", name="web_search", pieces=('{"q": "x"}',)),
        *block(3, "text", deltas),
        *message_end(),
    ]
    events = [ns(e) for e in raw]
    stream = guard_stream(iter(events), config={"mode": mode})
    passed = run(stream)
    first_text = raw.index(next(e for e in raw if e["type"] == "content_block_start" and e["index"] == 3))
    assert len(passed) == first_text + 1 + trigger
    outcome = stream.outcome
    assert outcome.stopped and not outcome.should_resume and not outcome.cancelled
    assert outcome.tool_calls == (StreamToolCall(1, "toolu_01", "search", ARGS),)  # server_tool_use not a call
    assert outcome.kept_reasoning == "".join(thinking)
    assert outcome.detection == detection
    assert outcome.kept_text == expected_kept(answer[:consumed], detection.cut, "text")


def test_a_tool_use_block_is_complete_at_content_block_stop() -> None:
    guard = StreamGuard()
    events = tool_block(1)
    for event in events[:-1]:
        assert apply_anthropic_event(event, guard) is Action.CONTINUE
    before = guard.outcome
    assert before.tool_calls == ()
    assert apply_anthropic_event(events[-1], guard) is Action.CONTINUE
    assert guard.outcome.tool_calls == (StreamToolCall(1, "toolu_01", "search", ARGS),)
    assert guard.finish().tool_calls == (StreamToolCall(1, "toolu_01", "search", ARGS),)


@pytest.mark.parametrize("end", ["message_delta", "message_stop"])
def test_message_end_closes_a_tool_use_block_left_open(end: str) -> None:
    guard = StreamGuard()
    for event in tool_block(0)[:-1]:
        apply_anthropic_event(event, guard)
    assert apply_anthropic_event({"type": end, "delta": {"stop_reason": "tool_use"}}, guard) is Action.CONTINUE
    assert guard.finish().tool_calls == (StreamToolCall(0, "toolu_01", "search", ARGS),)


@shared_data
@pytest.mark.parametrize("mode", ["cut", "rescue"])
def test_a_loop_while_a_tool_block_is_open_waits_for_its_content_block_stop(mode: str) -> None:
    """A text block interleaved with an unclosed tool_use block: the cut waits for the call; the
    next text delta is passed on and recorded (the answer looped, so it goes with the loop after
    the cut), and the stream stops right after the tool block's ``content_block_stop``."""
    text = case(EN_ANSWER)
    position, detection = acting(text, "text")
    deltas = split(text)
    trigger, consumed = boundary(deltas, position)
    tool = tool_block(0)
    text_events = block(1, "text", deltas)
    raw = [message_start(), *tool[:2], *text_events[: trigger + 3], *tool[2:], *text_events[trigger + 3 :]]
    upstream = Upstream(raw)
    stream = guard_stream(upstream, config={"mode": mode})
    passed = run(stream)
    stop = raw.index(tool[-1])
    assert len(passed) == stop + 1 and all(a is b for a, b in zip(passed, raw))  # the stop event passed on
    assert upstream.pulled == stop + 1 and upstream.closes == 1
    outcome = stream.outcome
    assert outcome.tool_calls == (StreamToolCall(0, "toolu_01", "search", ARGS),)
    assert outcome.stopped and not outcome.should_resume and not outcome.cancelled
    seen = consumed + len(deltas[trigger + 1])  # the delta after the trigger was recorded too
    assert seen == 2205 + 7 and outcome.cut == 1260 and outcome.removed == seen - 1260  # 315 deltas of 7, one more
    assert outcome.kept_text == expected_kept(text[:seen], detection.cut, "text")


@shared_data
def test_thinking_while_the_cut_waits_is_kept_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """The answer loops while a tool_use block is open; a thinking delta before the block stops is
    passed on and kept as streamed, never fed to the detectors."""
    text = case(EN_ANSWER)
    position, detection = acting(text, "text")
    deltas = split(text)
    trigger, consumed = boundary(deltas, position)
    tool = tool_block(0)
    text_events = block(1, "text", deltas)
    late = {"type": "content_block_delta", "index": 2, "delta": {"type": "thinking_delta", "thinking": "Hmm."}}
    raw = [message_start(), *tool[:2], *text_events[: trigger + 2], late, *tool[2:], *text_events[trigger + 2 :]]
    fed: list[str] = []
    original = Session.feed

    def feed(self: Session, delta: str, channel: str = "text") -> Any:
        fed.append(channel)
        return original(self, delta, channel)

    def feed_held(self: Session, text: str, channel: str = "text") -> Any:
        fed.append(channel)
        return held(self, text, channel)

    held = Session.feed_held
    monkeypatch.setattr(Session, "feed", feed)
    monkeypatch.setattr(Session, "feed_held", feed_held)
    stream = guard_stream(iter(raw))
    passed = run(stream)
    assert passed == raw[: raw.index(tool[-1]) + 1]
    assert "reasoning" not in fed
    assert stream.outcome.kept_reasoning == "Hmm."
    assert stream.outcome.kept_text == expected_kept(text[:consumed], detection.cut, "text")


@shared_data
def test_a_stream_that_ends_while_the_cut_waits_is_pruned_not_stopped() -> None:
    text = case(EN_ANSWER)
    position, detection = acting(text, "text")
    deltas = split(text)
    trigger, consumed = boundary(deltas, position)
    tool = tool_block(0)
    text_events = block(1, "text", deltas)
    raw = [message_start(), *tool[:2], *text_events[: trigger + 2], *tool[2:-1]]  # no stop, no message end
    stream = guard_stream(iter(raw))
    assert run(stream) == raw
    outcome = stream.outcome
    assert not outcome.stopped and not outcome.should_resume and not outcome.cancelled
    assert outcome.tool_calls == (StreamToolCall(0, "toolu_01", "search", ARGS),)
    assert consumed == 2205 and outcome.cut == 1260 and outcome.removed == 945  # 315 deltas of 7
    assert outcome.kept_text == expected_kept(text[:consumed], detection.cut, "text")


@shared_data
def test_the_message_stream_helpers_derived_events_are_not_counted_twice() -> None:
    """``client.messages.stream()`` yields each raw delta and then a derived ``text`` /
    ``thinking`` / ``input_json`` event with a snapshot; only the raw one is read."""
    raw, text, trigger, consumed, detection = loop_events(ZH_REASONING, "reasoning")
    events: list[Any] = []
    snapshot = ""
    for event in raw:
        events.append(event)
        if event["type"] == "content_block_delta" and event["delta"]["type"] == "thinking_delta":
            snapshot += event["delta"]["thinking"]
            events.append({"type": "thinking", "thinking": event["delta"]["thinking"], "snapshot": snapshot})
    stream = guard_stream(iter(events), config={"mode": "cut"})
    passed = run(stream)
    assert len(passed) == 3 + 2 * (trigger - 3)
    assert stream.outcome.kept_reasoning == expected_kept(text[:consumed], detection.cut, "reasoning")
    guard = StreamGuard()
    for event in (
        {"type": "text", "text": "hi", "snapshot": "hi"},
        {"type": "input_json", "partial_json": "{}", "snapshot": {}},
        {"type": "citation", "citation": {}, "snapshot": []},
        {"type": "signature", "signature": "x"},
    ):
        assert apply_anthropic_event(event, guard) is Action.CONTINUE
    assert guard.finish().kept_text == ""


def test_initial_block_text_is_fed() -> None:
    guard = StreamGuard()
    apply_anthropic_event(
        {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "Hmm. "}}, guard
    )
    apply_anthropic_event(
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": "Answer: "}}, guard
    )
    apply_anthropic_event(
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "42"}}, guard
    )
    outcome = guard.finish()
    assert (outcome.kept_reasoning, outcome.kept_text) == ("Hmm. ", "Answer: 42")


# ------------------------------------------------------- modes and watch


@shared_data
def test_observe_passes_every_event_unchanged_and_records_the_detection() -> None:
    raw, text, trigger, consumed, detection = loop_events(ZH_REASONING, "reasoning")
    events = [ns(e) for e in raw]
    upstream = Upstream(events)
    stream = guard_stream(upstream, config={"mode": "observe"})
    passed = run(stream)
    assert len(passed) == len(events) and all(a is b for a, b in zip(passed, events))
    assert upstream.closes == 0
    outcome = stream.outcome
    assert not outcome.stopped and outcome.cut is None and not outcome.should_resume
    assert outcome.detection == detection
    assert outcome.kept_reasoning == text


@shared_data
def test_watch_text_ignores_a_thinking_loop() -> None:
    session = Session(text_config=TextConfig("default", watch="text"))
    raw, text, *_ = loop_events(ZH_REASONING, "reasoning")
    stream = guard_stream(iter(raw), session=session)
    assert run(stream) == raw
    assert stream.outcome.detection is None and not stream.outcome.stopped
    assert stream.outcome.kept_reasoning == text


# ------------------------------------------------------------- bad input


class Hostile:
    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(name)


BAD_EVENTS: list[Any] = [
    None,
    0,
    3,
    False,
    "content_block_delta",
    b"\x00",
    2.5,
    [],
    ["content_block_delta"],
    {},
    {"type": None},
    {"type": 1},
    {"type": "content_block_delta"},
    {"type": "content_block_delta", "delta": None},
    {"type": "content_block_delta", "delta": "text_delta"},
    {"type": "content_block_delta", "delta": {}},
    {"type": "content_block_delta", "delta": {"type": "text_delta"}},
    {"type": "content_block_delta", "delta": {"type": "text_delta", "text": 5}},
    {"type": "content_block_delta", "delta": {"type": "thinking_delta", "thinking": ["x"]}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{"}},
    {"type": "content_block_delta", "index": "0", "delta": {"type": "input_json_delta", "partial_json": "{"}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "sig"}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "citations_delta", "citation": {}}},
    {"type": "content_block_start"},
    {"type": "content_block_start", "content_block": "tool_use"},
    {"type": "content_block_start", "content_block": {"type": "tool_use", "id": "t", "name": "n"}},
    {"type": "content_block_start", "index": True, "content_block": {"type": "tool_use"}},
    {"type": "content_block_start", "index": 9, "content_block": {"type": "text", "text": 7}},
    {"type": "content_block_start", "index": 9, "content_block": {"type": "redacted_thinking", "data": "xx"}},
    {"type": "content_block_stop"},
    {"type": "content_block_stop", "index": None},
    {"type": "content_block_stop", "index": 42},
    {"type": "message_delta", "delta": None},
    {"type": "ping"},
    {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    SimpleNamespace(type="content_block_delta", delta=SimpleNamespace(type="text_delta", text=b"x")),
    SimpleNamespace(),
    Hostile(),
    SimpleNamespace(type="content_block_delta", delta=Hostile()),
    SimpleNamespace(type="content_block_start", index=3, content_block=Hostile()),
]


def test_events_of_unexpected_shape_pass_through_and_never_raise() -> None:
    upstream = Upstream(BAD_EVENTS)
    stream = guard_stream(upstream)
    passed = run(stream)
    assert len(passed) == len(BAD_EVENTS) and all(a is b for a, b in zip(passed, BAD_EVENTS))
    outcome = stream.outcome
    assert not outcome.stopped and outcome.guard_error is None
    assert outcome.kept_text == outcome.kept_reasoning == ""
    guard = StreamGuard()
    for event in BAD_EVENTS:
        assert apply_anthropic_event(event, guard) is Action.CONTINUE


@shared_data
def test_bad_events_interleaved_do_not_change_the_cut() -> None:
    raw, text, trigger, consumed, detection = loop_events(ZH_REASONING, "reasoning")
    events: list[Any] = []
    for i, event in enumerate(raw):
        events += [BAD_EVENTS[i % len(BAD_EVENTS)], event]
    stream = guard_stream(iter(events), config={"mode": "cut"})
    passed = run(stream)
    assert len(passed) == 2 * trigger + 1
    assert stream.outcome.detection == detection
    assert stream.outcome.kept_reasoning == expected_kept(text[:consumed], detection.cut, "reasoning")


def test_an_upstream_error_propagates_unchanged_with_the_text_seen_before() -> None:
    error = TimeoutError("read timed out")
    events = [
        message_start(),
        *block(0, "reasoning", ["Check ", "the plan."]),
        *block(1, "text", ["Here is ", "the answer"])[:-1],
    ]

    def upstream() -> Iterator[Any]:
        yield from events
        raise error

    stream = guard_stream(upstream())
    seen = []
    with pytest.raises(TimeoutError) as info:
        for event in stream:
            seen.append(event)
    assert info.value is error and seen == events
    outcome = stream.outcome
    assert outcome.upstream_error is error and not outcome.stopped
    assert (outcome.kept_reasoning, outcome.kept_text) == ("Check the plan.", "Here is the answer")


@shared_data
def test_close_is_called_once_with_a_context_manager() -> None:
    raw, *_ = loop_events(EN_ANSWER, "text")
    upstream = Upstream(raw)
    with guard_stream(upstream) as stream:
        run(stream)
    stream.close()
    assert upstream.closes == 1 and stream.outcome.stopped


# ------------------------------------------------------------------ async


@shared_data
def test_async_generator_upstream_gives_the_same_cut_and_is_closed_once() -> None:
    raw, text, trigger, consumed, detection = loop_events(ZH_REASONING, "reasoning", (4, 10))
    events = [ns(e) for e in raw]
    finals: list[str] = []

    async def upstream() -> AsyncIterator[Any]:
        try:
            for event in events:
                await asyncio.sleep(0)
                yield event
        finally:
            finals.append("closed")

    async def main() -> tuple[list[Any], Any]:
        stream = aguard_stream(upstream(), config={"mode": "cut"})
        passed = [event async for event in stream]
        await stream.close()
        return passed, stream.outcome

    passed, outcome = asyncio.run(main())
    assert len(passed) == trigger and all(a is b for a, b in zip(passed, events))
    assert finals == ["closed"]
    assert outcome.detection == detection
    assert outcome.kept_reasoning == expected_kept(text[:consumed], detection.cut, "reasoning")


@shared_data
def test_async_stream_with_async_close() -> None:
    raw, text, trigger, consumed, detection = loop_events(EN_ANSWER, "text")
    upstream = AsyncUpstream(raw)

    async def main() -> tuple[list[Any], Any]:
        async with aguard_stream(upstream) as stream:
            passed = [event async for event in stream]
        await stream.close()
        return passed, stream.outcome

    passed, outcome = asyncio.run(main())
    assert passed == raw[:trigger]
    assert upstream.closes == 1
    assert outcome.should_resume
    assert outcome.kept_text == expected_kept(text[:consumed], detection.cut, "text")


def test_async_stream_needs_an_async_iterable() -> None:
    session = Session()
    upstreams: list[Any] = [[message_start()], iter([]), Upstream([])]
    for upstream in upstreams:
        with pytest.raises(TypeError, match="async iterable"):
            aguard_stream(upstream, session=session)
    assert session.attempt == 0


def test_async_upstream_error_propagates_unchanged() -> None:
    error = OSError("connection reset")

    async def upstream() -> AsyncIterator[Any]:
        yield {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Half"}}
        raise error

    async def main() -> Any:
        stream = aguard_stream(upstream())
        with pytest.raises(OSError) as info:
            async for _ in stream:
                pass
        assert info.value is error
        return stream.outcome

    outcome = asyncio.run(main())
    assert outcome.kept_text == "Half" and outcome.upstream_error is error


# ------------------------------------------------------------------ resume


def cut_outcome(name: str, channel: str) -> tuple[StreamOutcome, str]:
    raw, text, *_ = loop_events(name, channel)
    stream = guard_stream(iter(raw))
    run(stream)
    assert stream.outcome.should_resume
    return stream.outcome, text


@shared_data
def test_resume_after_a_thinking_loop_appends_the_note_to_the_user_turn() -> None:
    outcome, text = cut_outcome(ZH_REASONING, "reasoning")
    messages = [{"role": "user", "content": "安排一下周三的会议。"}]
    before = copy.deepcopy(messages)
    request = resume_messages(messages, outcome)
    assert isinstance(request, ResumeRequest)
    assert messages == before
    assert alternates(request.messages) and len(request.messages) == 1
    note = render("resume", "zh", channel="reasoning", channel_zh="推理", count=1001 - 333)
    assert note.startswith("[loopguard] 你上一次的推理开始重复自身") and "668" in note
    assert request.messages == [{"role": "user", "content": "安排一下周三的会议。\n\n" + note}]
    assert openai_resume_messages(messages, outcome).messages == request.messages  # the same note placement
    assert text[333:1001] not in json.dumps(request.messages, ensure_ascii=False)
    assert request.settings == {"temperature": 1.0}
    assert request.kwargs() == {"messages": request.messages, "temperature": 1.0}


@shared_data
def test_resume_after_an_answer_loop_keeps_the_pruned_answer_as_the_assistant_turn() -> None:
    outcome, text = cut_outcome(EN_ANSWER, "text")
    messages = [{"role": "user", "content": "Why is my query slow?"}]
    request = resume_messages(messages, outcome, config={"retry_temperature": 0.7})
    assert alternates(request.messages)
    assert [m["role"] for m in request.messages] == ["user", "assistant", "user"]
    assistant = request.messages[1]["content"]
    assert assistant == text[:1260] + "\n〔945 chars of repeated text removed〕" == outcome.kept_text
    paragraph = text[884:1250]  # the repeated unit (index.json: loop_start 884, period 379), less its end
    assert text.count(paragraph) == 20 and assistant.count(paragraph) == 1  # once, never its repeats
    assert request.messages[2]["content"].startswith("[loopguard] Your previous answer started repeating itself")
    assert request.settings == {"temperature": 0.7}


@shared_data
def test_resume_after_tool_results_adds_a_text_block_to_the_tool_result_turn() -> None:
    outcome, _ = cut_outcome(ZH_REASONING, "reasoning")
    results = [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "3 rows"}]
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Find the slow query."},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01", "name": "search", "input": {}}]},
        {"role": "user", "content": results},
    ]
    before = copy.deepcopy(messages)
    request = resume_messages(messages, outcome, config={"language": "en"})
    assert messages == before and messages[2]["content"] is results
    assert alternates(request.messages) and len(request.messages) == 3
    content = request.messages[2]["content"]
    assert content[:1] == results and content[1]["type"] == "text"
    assert content[1]["text"].startswith("[loopguard] Your previous reasoning started repeating itself")
    assert request.messages[:2] == messages[:2]


@shared_data
def test_resume_after_a_prefill_continues_the_assistant_turn() -> None:
    outcome, text = cut_outcome(EN_ANSWER, "text")
    messages = [{"role": "user", "content": "Why is my query slow?"}, {"role": "assistant", "content": "Short answer:"}]
    request = resume_messages(messages, outcome)
    assert alternates(request.messages) and len(request.messages) == 3
    assert request.messages[1] == {"role": "assistant", "content": "Short answer:" + outcome.kept_text}
    prefill_only = resume_messages(messages, cut_outcome(ZH_REASONING, "reasoning")[0])
    assert [m["role"] for m in prefill_only.messages] == ["user", "assistant", "user"]
    assert prefill_only.messages[1] == messages[1]


@shared_data
def test_resume_settings_and_errors() -> None:
    outcome, _ = cut_outcome(ZH_REASONING, "reasoning")
    assert (
        resume_messages(
            [{"role": "user", "content": "x"}], outcome, config=StreamConfig(retry_temperature=None)
        ).settings
        == {}
    )
    assert resume_messages([{"role": "user", "content": "x"}], outcome, config={"retry_requests": 0}).settings == {}
    with pytest.raises(TypeError, match="outcome must be a StreamOutcome"):
        resume_messages([], "outcome")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="messages must be a sequence"):
        resume_messages("hello", outcome)  # type: ignore[arg-type]


@shared_data
def test_resume_messages_are_json_and_mappings() -> None:
    outcome, _ = cut_outcome(EN_ANSWER, "text")
    request = resume_messages([{"role": "user", "content": "q"}], outcome)
    assert all(isinstance(m, Mapping) for m in request.messages)
    json.dumps(request.messages)


# ----------------------------------------------------------------- docs


def test_module_doctest() -> None:
    result = doctest.testmod(anthropic_module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0
