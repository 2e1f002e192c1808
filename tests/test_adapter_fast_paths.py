"""The adapters' fast paths report exactly what reading the chunk field by field reports (docs/spec.md §3).

``apply_chat_chunk`` reads the common Chat Completions chunk (one choice 0, no finish reason, a
delta without tool calls) without ``field()``; every chunk, common or not, must give the guard the
same events, in the same order, as ``_apply_fields`` (the field-by-field reader), for plain dicts
and for the ``openai`` SDK's pydantic objects.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loopguard import AttemptRecorder, Session, SessionState, StreamGuard, StreamState, TextConfig
from loopguard.integrations import openai as adapter
from loopguard.integrations._base import field, is_mapping
from loopguard.stream import Action


class Recorder:
    """A stand-in guard that records the events it gets."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []

    def text(self, delta: Any) -> Action:
        self.events.append(("text", delta))
        return Action.CONTINUE

    def reasoning(self, delta: Any) -> Action:
        self.events.append(("reasoning", delta))
        return Action.CONTINUE

    def tool_args(self, key: Any, fragment: Any, *, id: Any = None, name: Any = None) -> Action:
        self.events.append(("tool_args", key, fragment, id, name))
        return Action.CONTINUE

    def note_finish_reason(self, reason: Any) -> None:
        self.events.append(("finish", reason))

    def close_open_calls(self) -> Action:
        self.events.append(("close",))
        return Action.CONTINUE


values = st.one_of(st.none(), st.just(""), st.text(max_size=5), st.integers(-1, 2), st.just(["x"]))
deltas = st.dictionaries(
    st.sampled_from(["content", "reasoning_content", "reasoning", "tool_calls", "role"]),
    st.one_of(values, st.just([{"index": 0, "function": {"name": "ls", "arguments": "{}"}}])),
    max_size=4,
)
choices = st.fixed_dictionaries(
    {},
    optional={
        "index": st.one_of(st.none(), st.integers(0, 2), st.just(False)),
        "finish_reason": st.one_of(st.none(), st.just(""), st.just("stop")),
        "delta": st.one_of(deltas, st.none(), st.just("x")),
    },
)
chunks = st.one_of(
    st.fixed_dictionaries({"choices": st.lists(choices, max_size=2)}),
    st.fixed_dictionaries({"choices": st.one_of(st.none(), st.just("x"), st.tuples(choices))}),
    st.just({}),
)


def _events(apply: Any, chunk: Any) -> list[tuple[Any, ...]]:
    guard = Recorder()
    apply(chunk, guard)
    return guard.events


@given(chunks)
def test_dict_fast_path_reports_what_the_fields_report(chunk: dict[str, Any]) -> None:
    assert _events(adapter.apply_chat_chunk, chunk) == _events(adapter._apply_fields, chunk)


@given(chunks)
def test_sdk_fast_path_reports_what_the_fields_report(chunk: dict[str, Any]) -> None:
    chat = pytest.importorskip("openai.types.chat")
    try:
        model = chat.ChatCompletionChunk.model_validate(
            {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", **chunk}
        )
    except Exception:  # not a valid SDK chunk: nothing to compare
        return
    assert _events(adapter.apply_chat_chunk, model) == _events(adapter._apply_fields, model)


def test_sdk_chunk_built_without_fields_is_read_field_by_field() -> None:
    chat = pytest.importorskip("openai.types.chat")
    bare = chat.ChatCompletionChunk.model_construct()  # no choices at all
    assert _events(adapter.apply_chat_chunk, bare) == []
    delta = chat.chat_completion_chunk.ChoiceDelta.model_construct(reasoning_content="think")
    choice = chat.chat_completion_chunk.Choice.model_construct(index=0, delta=delta, finish_reason=None)
    chunk = chat.ChatCompletionChunk.model_construct(choices=[choice])
    assert _events(adapter.apply_chat_chunk, chunk) == _events(adapter._apply_fields, chunk) == [("reasoning", "think")]


def test_field_and_is_mapping_on_mappings_and_objects() -> None:
    from types import MappingProxyType, SimpleNamespace

    proxy = MappingProxyType({"a": 1})
    assert is_mapping(proxy) and is_mapping({}) and not is_mapping(SimpleNamespace())
    assert field(proxy, "a") == 1 and field(SimpleNamespace(a=2), "a") == 2 and field(None, "a") is None


# ------------------------------------------------------------------- the public seams


def test_stream_guard_public_seams() -> None:
    session = Session()
    guard = StreamGuard(session)
    assert session.live_stream is guard and guard.state is StreamState.WATCHING
    assert session.state is SessionState.ATTEMPT
    assert not guard.has_tool_call(0) and not guard.has_tool_call([])  # an unhashable key is no call's key
    guard.tool_args(0, "{}", name="ls")
    assert guard.has_tool_call(0)
    guard.finish()
    assert session.live_stream is None and guard.state is StreamState.FINISHED
    assert session.state is SessionState.TURN


def test_session_retry_and_rescue_seams() -> None:
    session = Session()
    assert not session.take_retry()
    session.record_rescue(2)
    assert session.consecutive_rescues == 1 and session.retry_requests_left == 2
    assert session.take_retry() and session.take_retry() and not session.take_retry()
    session.record_completion()
    assert session.consecutive_rescues == 0
    other = StreamGuard(Session())
    assert session.attach_stream(other) is None and session.attach_stream(other) is other
    session.detach_stream(StreamGuard(Session()))  # not the attached one: nothing happens
    assert session.live_stream is other
    session.detach_stream(other)
    assert session.live_stream is None


def test_attempt_recorder_bounds() -> None:
    rec = AttemptRecorder(max_chars=5, max_calls=1)
    assert rec.add("text", "  ") and not rec.wrote_text
    assert rec.add("reasoning", "abc") and rec.text("reasoning") == "abc" and rec.kept == 5
    assert rec.add_call(("ls", "{}")) and rec.calls == [("ls", "{}")]
    assert not rec.add("text", "x")  # 6 > 5: overflow, once
    assert rec.add("text", "yz") and rec.overflowed and rec.kept == 0 and rec.calls == []
    assert rec.text("text") == "" and rec.wrote_text and rec.reasoning_chars == 3
    assert rec.add_call(("ls", "{}")) and rec.call_count == 2
    many = AttemptRecorder()
    for _ in range(2000):
        many.add("text", "ab")
    assert many.text("text") == "ab" * 2000 and len(many.parts["text"]) < 600


# ---------------------------------------------- Session.feed judges at checkpoints only

units = st.sampled_from(
    [
        "Wait, let me recheck the sum. ",
        "Now. OK. Wait. ",
        "The cache is stale, so I flush it and check again. ",
        "```\nprint('x')\n```\n",
        "我们再检查一遍这个和。",
        "ha ",
        "- item\n",
    ]
)
pieces = st.lists(st.tuples(units, st.integers(1, 12), st.text(max_size=8)), min_size=1, max_size=12)


def _verdicts(text: str, size: int, profile: str, channel: str) -> list[tuple[Any, ...]]:
    session = Session(text_config=profile, clock=lambda: 0.0)
    out = []
    for i in range(0, len(text), size):
        v = session.feed(text[i : i + size], channel)
        out.append((v.action, v.kind, v.detection, v.reason))
    v = session.end_attempt()
    out.append((v.action, v.kind, v.detection, v.reason))
    return out


@given(
    pieces, st.integers(1, 40), st.sampled_from(["default", "fuse", "rescue"]), st.sampled_from(["reasoning", "text"])
)
def test_judging_only_at_checkpoints_changes_no_verdict(
    parts: list[tuple[str, int, str]], size: int, profile: str, channel: str
) -> None:
    """``Session.feed`` asks the detectors for a verdict only when a delta revealed a detection or
    passed a checkpoint; asking on every delta (as before) gives the same verdicts."""
    from loopguard import session as session_module

    text = "".join(unit * times + noise for unit, times, noise in parts)
    fast = _verdicts(text, size, profile, channel)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(session_module._Lane, "checkpoint", lambda self: True)  # judge every delta
        every = _verdicts(text, size, profile, channel)
    assert fast == every


def test_a_new_text_config_mid_session_keeps_its_own_checkpoints() -> None:
    session = Session(text_config="rescue", clock=lambda: 0.0)
    session.feed("clean start. ", "reasoning")
    session.end_attempt()
    session.text_config = TextConfig("rescue", check_every=160)
    verdicts = [session.feed("Wait, let me recheck the sum. ", "reasoning") for _ in range(25)]
    first = next(i for i, v in enumerate(verdicts) if v.stop)
    assert verdicts[first].detection.position == 640  # the first multiple of 160 with 600 code points


# ------------------------------- Session.feed: pending deltas go to the detector at checkpoints


def _steps(text: str, size: int, profile: str, channel: str) -> list[tuple[Any, ...]]:
    """Each delta's verdict and the session's retained_chars after it, the end verdict and the
    attempt's detections."""
    session = Session(text_config=profile, clock=lambda: 0.0)
    out: list[tuple[Any, ...]] = []
    for i in range(0, len(text), size):
        v = session.feed(text[i : i + size], channel)
        out.append((v.action, v.kind, v.detection, v.reason, session.retained_chars, session.state))
    v = session.end_attempt()
    out.append((v.action, v.kind, v.detection, v.reason, session.retained_chars, session.detections))
    return out


@given(
    pieces, st.integers(1, 40), st.sampled_from(["default", "fuse", "rescue"]), st.sampled_from(["reasoning", "text"])
)
def test_pending_deltas_change_no_verdict(
    parts: list[tuple[str, int, str]], size: int, profile: str, channel: str
) -> None:
    """Deltas wait until the next checkpoint can fall, then go to the recorder, the sample and the
    detector as one string, and a lane in which no detector ever held is not judged; feeding
    every delta at once and judging every checkpoint (as before) gives the same verdicts, the
    same detections and the same ``retained_chars`` after every delta."""

    text = "".join(unit * times + noise for unit, times, noise in parts)
    assert _steps(text, size, profile, channel) == _eager_steps(text, size, profile, channel)


def _eager_steps(text: str, size: int, profile: str, channel: str) -> list[tuple[Any, ...]]:
    """:func:`_steps` with every delta fed at once and every checkpoint judged (as before)."""
    from loopguard import session as session_module

    init = session_module._Lane.__init__

    def eager(self: Any, *args: Any) -> None:
        init(self, *args)
        self.quiet = False  # judge every checkpoint

    with pytest.MonkeyPatch.context() as m:
        m.setattr(session_module, "_PENDING_CHARS", 0)  # feed every delta at once
        m.setattr(session_module._Lane, "__init__", eager)
        return _steps(text, size, profile, channel)


@pytest.mark.parametrize("profile", ["default", "fuse", "rescue"])
@pytest.mark.parametrize("unit", ["Now. OK. Wait. ", "- item\n", "Wait, let me recheck the sum. ", "ha "])
@pytest.mark.parametrize("size", [1, 7, 200, 450])
@pytest.mark.parametrize("prefix", ["", "Some clean prose first, to start the stream. " * 5])
def test_pending_deltas_change_no_verdict_of_long_loops(profile: str, unit: str, size: int, prefix: str) -> None:
    """Loops long enough for every rule (the fuse kinds act at their second hit, a checkpoint
    that reports nothing)."""
    text = prefix + unit * (3000 // len(unit))
    assert _steps(text, size, profile, "reasoning") == _eager_steps(text, size, profile, "reasoning")


def test_pending_deltas_are_kept_for_replay_and_samples() -> None:
    session = Session(clock=lambda: 0.0)
    session.start_turn()
    session.feed("ab", "reasoning")  # below the first checkpoint: pending
    session.feed("cd", "text")
    assert session.retained_chars == 2 * 4  # the attempt's 4 code points and the samples' 4
    assert session.end_attempt().action == "allow" and session.retained_chars == 4  # samples only
    unwatched = Session(text_config=TextConfig(watch="text"), clock=lambda: 0.0)
    for _ in range(3000):  # a channel the detectors do not watch: pending stays bounded
        assert unwatched.feed("abcd", "reasoning").action == "allow"
    lane = unwatched._attempt.lanes["reasoning"]
    assert sum(map(len, lane.pending)) <= 1024 and lane.fed == 12000
    assert unwatched.retained_chars == 12000 + 2000


# ------------------------------------------------ StreamGuard's text and GuardedStream's iteration


@given(st.lists(st.tuples(st.sampled_from(["reasoning", "text"]), st.text(min_size=1, max_size=3)), max_size=1500))
def test_stream_guard_keeps_every_delta_in_order(events: list[tuple[str, str]]) -> None:
    guard = StreamGuard(Session(clock=lambda: 0.0), {"mode": "observe"})
    for channel, delta in events:
        getattr(guard, channel)(delta)
    want = {c: "".join(d for ch, d in events if ch == c) for c in ("reasoning", "text")}
    snapshot = guard.outcome
    assert (snapshot.kept_reasoning, snapshot.kept_text) == (want["reasoning"], want["text"])
    outcome = guard.finish()
    assert (outcome.kept_reasoning, outcome.kept_text) == (want["reasoning"], want["text"])


def _chunk(text: str) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}


def test_guarded_stream_next_and_for_share_one_iteration() -> None:
    chunks = [_chunk(f"{i} ") for i in range(6)]
    stream = adapter.guard_stream(iter(chunks))
    assert next(stream) is chunks[0]
    rest = []
    for chunk in stream:
        rest.append(chunk)
        if len(rest) == 2:
            break
    assert rest == chunks[1:3] and next(stream) is chunks[3]
    stream.close()  # mid-iteration: the iteration ends, the outcome is final
    assert list(stream) == [] and stream.outcome.kept_text == "0 1 2 3 "
    with pytest.raises(StopIteration):
        next(stream)


def test_guarded_stream_closed_before_iteration_yields_nothing() -> None:
    closed: list[bool] = []

    class Upstream:
        def __iter__(self) -> Any:
            return iter([_chunk("x")])

        def close(self) -> None:
            closed.append(True)

    stream = adapter.guard_stream(Upstream())
    stream.close()
    assert list(stream) == [] and closed == [True] and stream.outcome.kept_text == ""


def _channel_steps(events: list[tuple[str, str]], profile: str) -> list[Any]:
    """Each delta's verdict and retained_chars, then what the attempt handed to the replay rule
    and the turn's language samples."""
    session = Session(text_config=profile, clock=lambda: 0.0)
    seen: list[dict[str, Any]] = []
    observe = session.guard.observe_attempt

    def spy(sid: Any, **attempt: Any) -> bool:
        seen.append(attempt)
        return observe(sid, **attempt)

    session.guard.observe_attempt = spy  # type: ignore[method-assign]
    out: list[Any] = []
    for channel, delta in events:
        v = session.feed(delta, channel)
        out.append((v.action, v.kind, v.detection, v.reason, session.retained_chars, session.state))
    v = session.end_attempt()
    out += [(v.action, v.kind, v.detection, v.reason), session.detections, seen, session._turn.samples]
    return out


@pytest.mark.parametrize("profile", ["default", "fuse"])
@pytest.mark.parametrize("size", [3, 40])
def test_pending_deltas_of_two_channels_keep_their_order_across_a_stop(profile: str, size: int) -> None:
    """A loop in the answer stops the attempt while reasoning deltas are pending: they are
    recorded, sampled and fed before the reasoning that comes after the stop."""
    loop = "Now. OK. Wait. " * 200
    events: list[tuple[str, str]] = []
    for i in range(0, len(loop), size):
        events.append(("text", loop[i : i + size]))
        events.append(("reasoning", f"r{i} "))
    fast = _channel_steps(events, profile)
    assert any(step[0] == "cut" for step in fast[: len(events)])
    from loopguard import session as session_module

    init = session_module._Lane.__init__

    def eager(self: Any, *args: Any) -> None:
        init(self, *args)
        self.quiet = False

    with pytest.MonkeyPatch.context() as m:
        m.setattr(session_module, "_PENDING_CHARS", 0)
        m.setattr(session_module._Lane, "__init__", eager)
        assert fast == _channel_steps(events, profile)


# ------------------------------- StreamGuard holds deltas while Session.feed_window is open


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _guarded_steps(events: list[tuple[Any, ...]], profile: str, mode: str) -> list[Any]:
    """Each event's action and the guard's state after it, then every progress note's time, the
    outcome's fields and the session's detections."""
    clock = _Clock()
    session = Session(text_config=profile, clock=clock)
    notes: list[float] = []
    note = session.guard.note_progress

    def spy(sid: Any = None) -> None:
        notes.append(clock.now)
        note(sid)

    session.guard.note_progress = spy  # type: ignore[method-assign]
    guard = StreamGuard(session, {"mode": mode})
    out: list[Any] = []
    for event in events:
        if event[0] == "tick":
            clock.now += event[1]
            continue
        if event[0] == "call":
            action = guard.tool_args(event[1], '{"q": 1}', id=f"c{event[1]}", name="grep")
            action = guard.close_open_calls() if not action.stop else action
        else:
            action = getattr(guard, event[0])(event[1])
        out.append((action, guard.state))
    outcome = guard.finish()
    out += [notes, outcome.verdict, outcome.notice, outcome.kept_reasoning, outcome.kept_text, outcome.stopped]
    out += [outcome.tool_calls, session.detections, session.state, session.retained_chars]
    return out


def _stream_events(parts: list[tuple[str, int, str]], size: int, switches: list[int]) -> list[tuple[Any, ...]]:
    text = "".join(unit * times + noise for unit, times, noise in parts)
    events: list[tuple[Any, ...]] = []
    for n, i in enumerate(range(0, len(text), size)):
        switch = switches[n % len(switches)]
        channel = "reasoning" if switch % 5 else "text"
        events.append((channel, text[i : i + size]))
        if switch == 7:
            events.append(("tick", 0.6))  # two ticks pass the 1-second progress note
        elif switch == 11:
            events.append(("call", n))
    return events


@given(
    pieces,
    st.integers(1, 40),
    st.lists(st.integers(0, 12), min_size=1, max_size=20),
    st.sampled_from(["default", "fuse", "rescue"]),
    st.sampled_from(["observe", "cut", "rescue"]),
)
def test_held_deltas_change_nothing(
    parts: list[tuple[str, int, str]], size: int, switches: list[int], profile: str, mode: str
) -> None:
    """``StreamGuard`` holds a channel's deltas while ``Session.feed_window`` is open and feeds
    them joined: every action, state, progress note (time), outcome and detection is what
    feeding the session every delta at once gives."""
    from loopguard import session as session_module

    events = _stream_events(parts, size, switches)
    held = _guarded_steps(events, profile, mode)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(session_module.Session, "feed_window", lambda self, channel: (0, float("-inf")))
        assert held == _guarded_steps(events, profile, mode)


def test_held_deltas_reach_the_session_before_a_new_stream_and_at_the_end() -> None:
    clock = _Clock()
    session = Session(clock=clock)
    first = StreamGuard(session)
    for _ in range(5):
        first.text("ab ")  # the first is fed at once, the rest held
    assert session.feed_window("text")[0] == 200 - 15 + 12  # the window counts the held ones as not yet fed
    second = StreamGuard(session)  # the first stream's attempt ends with all 15 code points
    assert first.state is StreamState.PASSTHROUGH and session.attempt == 2
    assert session.retained_chars == 15  # the turn's language sample: all 15 reached the old attempt
    second.text("xy")
    second.text("z")
    outcome = second.finish()
    assert outcome.kept_text == "xyz" and session.state is SessionState.TURN


@pytest.mark.parametrize("profile", ["default", "fuse", "rescue"])
@pytest.mark.parametrize("unit", ["Now. OK. Wait. ", "Wait, let me recheck the sum. "])
@pytest.mark.parametrize("size", [1, 4, 7, 200])
@pytest.mark.parametrize("switches", [[1], [1, 1, 1, 0, 7], [2, 11, 3]])
def test_held_deltas_change_nothing_in_long_loops(profile: str, unit: str, size: int, switches: list[int]) -> None:
    """Loops long enough to be cut (at a checkpoint reached exactly by a delta's last code point,
    with size 1 and 4), on one channel and with the channel switching, ticks and tool calls."""
    from loopguard import session as session_module

    events = _stream_events([("Some clean prose first. ", 3, ""), (unit, 3000 // len(unit), "")], size, switches)
    held = _guarded_steps(events, profile, "cut")
    assert any(action is Action.STOP_BEFORE for action, _ in held[: len(held) - 10])
    with pytest.MonkeyPatch.context() as m:
        m.setattr(session_module.Session, "feed_window", lambda self, channel: (0, float("-inf")))
        assert held == _guarded_steps(events, profile, "cut")


def test_attempt_recorder_joins_each_code_point_once() -> None:
    """Every 512 deltas become one segment that is never joined again (issue 21: the whole text
    was re-joined every 512 deltas, quadratic in the attempt's length)."""
    rec = AttemptRecorder()
    for _ in range(512 * 3 + 5):
        rec.add("text", "abcd")
    parts = rec.parts["text"]
    assert [len(p) for p in parts] == [2048, 2048, 2048] + [4] * 5
    assert rec.text("text") == "abcd" * (512 * 3 + 5)
