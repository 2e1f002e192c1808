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
