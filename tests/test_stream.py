"""StreamGuard and the Chat Completions adapter over recorded-shape chunk streams (spec §2.6, §3; seed 003).

The fixtures are the dev text cases of ``shared/data/cases`` replayed as the chunks an
OpenAI-compatible server sends (research/ecosystem.md §1.1, §1.2): reasoning cases as
DeepSeek-style ``delta.reasoning_content`` chunks (``content: null``), answer cases as
``delta.content`` chunks, split into deltas of 1, 7 and 64 code points, as plain dicts, as
``SimpleNamespace`` objects and as the ``openai`` SDK's own ``ChatCompletionChunk`` models.

Every expected value is computed independently of the stream layer: a fresh
:class:`loopguard.TextLoopDetector` is fed the case one code point at a time and the first
point at which :meth:`~loopguard.TextLoopDetector.action_required` turns true is the
**acting checkpoint** (spec §2.6: C/P/N at their first hit, E/L/S at the
``fuse_hits_before_action``-th checkpoint at which one of them holds).  The acting detection
is the one the session names for that checkpoint (text.py / session.py): a C/P/N detection
reported there, else the last one reported there, else (a fuse family acting on its second
hit, which reports nothing new) the first C/P/N or else the last detection reported so far.
For C/P/N, ``detection.position`` is the acting checkpoint; for E/L/S it is the checkpoint
of the episode's first hit.  Cases are replayed under the ``default`` profile unless
``CASE_CONFIGS`` names another text config (the session's and the bare detector's alike).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from types import SimpleNamespace
from typing import Any

import pytest

import loopguard.session as session_module
from conftest import CASES, SHARED_AVAILABLE, shared_data
from loopguard import Session, SessionConfig, TextConfig, TextLoopDetector
from loopguard.errors import ConfigError
from loopguard.integrations.openai import (
    acreate_with_rescue,
    aguard_stream,
    apply_chat_chunk,
    create_with_rescue,
    guard_stream,
    resume_messages,
)
from loopguard.messages import pick_language, render
from loopguard.stream import (
    Action,
    LoopGuardCancelled,
    StreamConfig,
    StreamGuard,
    StreamOutcome,
    StreamToolCall,
)
from loopguard.text import Detection

RESCUE_KINDS = frozenset({"cycle", "pool", "near_cycle"})  # session.py _RESCUE_KINDS
SIZES = (1, 7, 64)
SHAPES = ("dict", "namespace", "openai")

# loop cases: C on zh reasoning, N on the answer, on reasoning and on an answer with a fenced
# code block whose positions map back through the mask; and, under the default profile before N
# (L, S, C, P: its premises reproduced), P on reasoning and L acting on its second hit with a
# cut at offset 0 (nothing kept but the marker)
LOOP_CASES = ("001", "007", "010", "014", "015", "016")
CLEAN_CASES = ("018", "026")
BEFORE_N = TextConfig("default", enabled=["lowdiv_tail", "lowdiv_sliding", "cycle", "pool"])
CASE_CONFIGS = {"007": BEFORE_N, "016": BEFORE_N}  # premises reproduced: the default's N acts first on both now


# ------------------------------------------------------------------ fixtures


@dataclass(frozen=True)
class Case:
    name: str
    text: str
    channel: str  # "reasoning" | "text"
    verdict: str


@cache
def load_case(prefix: str) -> Case:
    index = json.loads((CASES / "index.json").read_text("utf-8"))
    entry = next(e for e in index if e["file"].startswith(prefix + "_"))
    text = (CASES / entry["file"]).read_text("utf-8")
    channel = "reasoning" if entry["channel"] == "reasoning" else "text"
    return Case(entry["file"], text, channel, entry["verdict"])


@dataclass(frozen=True)
class Acting:
    checkpoint: int  # code points fed when action_required() first turned true
    detection: Detection


def acting(text: str, channel: str, config: TextConfig | None = None) -> Acting | None:
    """The acting checkpoint and detection, from a bare detector fed one code point at a time."""
    det = TextLoopDetector(config or TextConfig())
    seen: list[Detection] = []

    def pick(found: list[Detection]) -> Detection:
        candidates = found or seen
        return next((d for d in candidates if d.kind in RESCUE_KINDS), candidates[-1])

    for i, char in enumerate(text):
        found = det.feed(char, channel)
        seen += found
        if det.action_required(channel):
            return Acting(i + 1, pick(found))
    found = det.finish()
    seen += found
    if det.action_required(channel):
        return Acting(len(text), pick(found))
    return None


@cache
def case_acting(prefix: str) -> Acting | None:
    case = load_case(prefix)
    return acting(case.text, case.channel, CASE_CONFIGS.get(prefix))


def case_session(prefix: str) -> Session:
    """A new session with the text config the case is replayed under."""
    return Session(text_config=CASE_CONFIGS.get(prefix, TextConfig()))


def split(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def chat_chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    """One ``chat.completion.chunk`` as an OpenAI-compatible server sends it."""
    return {
        "id": "chatcmpl-7f3a",
        "object": "chat.completion.chunk",
        "created": 1767225600,
        "model": "deepseek-reasoner",
        "system_fingerprint": "fp_3a5770e1b4",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
    }


def usage_chunk() -> dict[str, Any]:
    return {
        "id": "chatcmpl-7f3a",
        "object": "chat.completion.chunk",
        "created": 1767225600,
        "model": "deepseek-reasoner",
        "choices": [],
        "usage": {"prompt_tokens": 31, "completion_tokens": 900, "total_tokens": 931},
    }


def delta_for(channel: str, piece: str) -> dict[str, Any]:
    if channel == "reasoning":
        return {"content": None, "reasoning_content": piece}  # DeepSeek: content is null while thinking
    return {"content": piece}


@dataclass(frozen=True)
class Recorded:
    """A recorded stream: ``chunks[HEAD + i]`` carries ``pieces[i]``."""

    chunks: list[Any]
    pieces: list[str]

    HEAD = 1  # the role chunk


def recorded_dicts(text: str, channel: str, size: int) -> Recorded:
    pieces = split(text, size)
    head = (
        {"role": "assistant", "content": None, "reasoning_content": ""}
        if channel == "reasoning"
        else {"role": "assistant", "content": "", "refusal": None}
    )
    chunks: list[Any] = [chat_chunk(head)]
    chunks += [chat_chunk(delta_for(channel, p)) for p in pieces]
    chunks += [chat_chunk({}, "stop"), usage_chunk()]
    return Recorded(chunks, pieces)


def to_namespace(value: Any) -> Any:
    if isinstance(value, dict):
        return SimpleNamespace(**{k: to_namespace(v) for k, v in value.items()})
    if isinstance(value, list):
        return [to_namespace(v) for v in value]
    return value


def to_openai(value: dict[str, Any]) -> Any:
    openai_chat = pytest.importorskip("openai.types.chat")
    return openai_chat.ChatCompletionChunk.model_validate(value)


def convert(chunks: list[Any], shape: str) -> list[Any]:
    if shape == "dict":
        return chunks
    if shape == "namespace":
        return [to_namespace(c) for c in chunks]
    return [to_openai(c) for c in chunks]


def recorded(prefix: str, size: int, shape: str = "dict") -> Recorded:
    case = load_case(prefix)
    rec = recorded_dicts(case.text, case.channel, size)
    return Recorded(convert(rec.chunks, shape), rec.pieces)


def run(chunks: Iterable[Any], **kwargs: Any) -> tuple[list[Any], StreamOutcome]:
    stream = guard_stream(iter(chunks), **kwargs)
    passed = list(stream)
    return passed, stream.outcome


async def _agen(chunks: Iterable[Any]) -> AsyncIterator[Any]:
    for chunk in chunks:
        await asyncio.sleep(0)
        yield chunk


def arun(chunks: Iterable[Any], **kwargs: Any) -> tuple[list[Any], StreamOutcome]:
    async def main() -> tuple[list[Any], StreamOutcome]:
        stream = aguard_stream(_agen(chunks), **kwargs)
        passed = [c async for c in stream]
        return passed, stream.outcome

    return asyncio.run(main())


def marker_text(channel: str, removed: int, lang: str) -> str:
    if lang == "zh":
        return f"〔已删除 {removed} 字符的重复{'推理' if channel == 'reasoning' else '正文'}〕"
    return f"〔{removed} chars of repeated {'reasoning' if channel == 'reasoning' else 'text'} removed〕"


def expected_kept(original: str, cut: int, channel: str, *, marker: bool = True, language: str = "auto") -> str:
    """spec §3: ``original[:cut]`` plus, with ``marker``, one marker line (``N = len(original) - cut``)."""
    kept = original[:cut]
    if not marker or len(original) == cut:
        return kept
    lang = pick_language(language, kept or original)
    sep = "\n" if kept and not kept.endswith("\n") else ""  # one line of its own
    return kept + sep + marker_text(channel, len(original) - cut, lang)


def stop_index(checkpoint: int, size: int) -> int:
    """Index (into the pieces) of the delta that reaches ``checkpoint``: the chunk that is dropped."""
    return -(-checkpoint // size) - 1


# ------------------------------------------------------------------ (a) (b) where the stream stops, what is kept


@shared_data
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("prefix", LOOP_CASES)
def test_stops_at_the_acting_checkpoint_and_prunes(prefix: str, size: int, shape: str) -> None:
    case = load_case(prefix)
    act = case_acting(prefix)
    assert act is not None, f"{case.name} must call for action under its profile"
    rec = recorded(prefix, size, shape)
    passed, outcome = run(rec.chunks, session=case_session(prefix))

    j = stop_index(act.checkpoint, size)
    # everything before the acting chunk is passed through, unchanged and in order; the acting chunk is dropped
    assert len(passed) == Recorded.HEAD + j
    assert all(a is b for a, b in zip(passed, rec.chunks))
    consumed = "".join(rec.pieces[: j + 1])  # passed + dropped
    boundary = min(-(-act.checkpoint // size) * size, len(case.text))
    assert consumed == case.text[:boundary]  # the first delta boundary >= the acting checkpoint
    if act.detection.kind in RESCUE_KINDS:
        assert act.detection.position == act.checkpoint

    assert outcome.detection == act.detection
    assert outcome.stopped and outcome.should_resume and not outcome.cancelled
    assert outcome.channel == case.channel == act.detection.channel
    assert outcome.cut == act.detection.cut
    assert outcome.removed == boundary - act.detection.cut
    assert outcome.verdict is not None and outcome.verdict.action == "cut"
    assert outcome.tool_calls == ()
    assert outcome.upstream_error is None and outcome.guard_error is None and outcome.mode == "rescue"

    kept = expected_kept(consumed, act.detection.cut, case.channel)
    other = ""  # the other channel is kept as streamed: nothing was streamed on it
    if case.channel == "reasoning":
        assert (outcome.kept_reasoning, outcome.kept_text) == (kept, other)
    else:
        assert (outcome.kept_text, outcome.kept_reasoning) == (kept, other)
    assert kept == consumed[: act.detection.cut] + outcome.marker
    assert outcome.marker.lstrip("\n") == marker_text(
        case.channel, outcome.removed, pick_language("auto", consumed[: act.detection.cut] or consumed)
    )


@shared_data
def test_fixture_facts() -> None:
    """The fixtures cover what they claim: C, N (strong), P and L acting, zh, a fenced answer, a cut at 0."""
    kinds = {p: a.detection.kind for p in LOOP_CASES if (a := case_acting(p)) is not None}
    assert kinds == {
        "001": "cycle",
        "007": "pool",
        "010": "cycle",
        "014": "near_cycle",
        "015": "near_cycle",
        "016": "lowdiv_tail",
    }  # 007, 016 under BEFORE_N (the tuned pool on 007)
    assert {"lowdiv_tail", "pool"} <= BEFORE_N.enabled and "lowdiv_tail" not in TextConfig().enabled
    a016 = case_acting("016")
    assert a016 is not None and a016.detection.position < a016.checkpoint  # L acted on its second hit
    a010 = case_acting("010")
    assert a010 is not None and pick_language("auto", load_case("010").text[: a010.detection.cut]) == "zh"
    a014 = case_acting("014")
    assert a014 is not None and "```" in load_case("014").text[: a014.detection.cut]  # the fence is kept
    a016 = case_acting("016")
    assert a016 is not None and a016.detection.cut == 0


@shared_data
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("prefix", ("001", "007", "010"))
def test_async_stream_stops_at_the_same_chunk(prefix: str, size: int) -> None:
    rec = recorded(prefix, size)
    sync_passed, sync_outcome = run(rec.chunks)
    async_passed, async_outcome = arun(rec.chunks)
    assert len(async_passed) == len(sync_passed)
    assert all(a is b for a, b in zip(async_passed, rec.chunks))
    assert async_outcome.detection == sync_outcome.detection
    assert (async_outcome.kept_reasoning, async_outcome.kept_text) == (
        sync_outcome.kept_reasoning,
        sync_outcome.kept_text,
    )


@shared_data
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("prefix", CLEAN_CASES)
def test_clean_case_passes_through_whole(prefix: str, shape: str) -> None:
    case = load_case(prefix)
    assert case.verdict == "not-loop" and case_acting(prefix) is None
    rec = recorded(prefix, 7, shape)
    passed, outcome = run(rec.chunks)
    assert len(passed) == len(rec.chunks) and all(a is b for a, b in zip(passed, rec.chunks))
    assert not outcome.stopped and not outcome.should_resume and outcome.detection is None
    assert outcome.cut is None and outcome.removed == 0 and outcome.marker == ""
    kept = outcome.kept_reasoning if case.channel == "reasoning" else outcome.kept_text
    assert kept == case.text


@shared_data
@pytest.mark.parametrize("prefix", ("001", "010", "016"))
def test_marker_false_keeps_exactly_the_prefix(prefix: str) -> None:
    case = load_case(prefix)
    act = case_acting(prefix)
    assert act is not None
    rec = recorded(prefix, 7)
    _, outcome = run(rec.chunks, config={"marker": False}, session=case_session(prefix))
    consumed = "".join(rec.pieces[: stop_index(act.checkpoint, 7) + 1])
    kept = outcome.kept_reasoning if case.channel == "reasoning" else outcome.kept_text
    assert kept == consumed[: act.detection.cut]
    assert outcome.marker == "" and outcome.removed == len(consumed) - act.detection.cut


@shared_data
@pytest.mark.parametrize(("prefix", "language"), [("001", "zh"), ("010", "en"), ("010", "zh"), ("001", "en")])
def test_marker_language_forced(prefix: str, language: str) -> None:
    case = load_case(prefix)
    act = case_acting(prefix)
    assert act is not None
    rec = recorded(prefix, 64)
    _, outcome = run(rec.chunks, config=StreamConfig(language=language))  # type: ignore[arg-type]
    consumed = "".join(rec.pieces[: stop_index(act.checkpoint, 64) + 1])
    kept = outcome.kept_reasoning if case.channel == "reasoning" else outcome.kept_text
    assert kept == expected_kept(consumed, act.detection.cut, case.channel, language=language)
    assert kept.endswith(marker_text(case.channel, outcome.removed, language))


@shared_data
@pytest.mark.parametrize("size", SIZES)
def test_loop_seen_only_at_the_final_checkpoint(size: int) -> None:
    """716 code points: the cycle holds at the end of the stream, not at checkpoint 600: every
    chunk has gone out already and the stream ended by itself: the outcome prunes what is stored,
    but the attempt was not stopped and is not resumed (its answer is complete)."""
    text = load_case("025").text[:100] + "Let me check the sum again. " * 22
    act = acting(text, "reasoning")
    assert act is not None and act.checkpoint == len(text) == act.detection.position
    rec = recorded_dicts(text, "reasoning", size)
    session = Session()
    assert run(loop_chunks(), session=session)[1].should_resume  # a rescue in a row before it
    assert session.consecutive_rescues == 1
    passed, outcome = run(rec.chunks, session=session)
    assert len(passed) == len(rec.chunks)
    assert not outcome.stopped and not outcome.should_resume and not outcome.cancelled
    assert outcome.detection == act.detection and outcome.channel == "reasoning"
    assert outcome.cut == act.detection.cut and outcome.removed == len(text) - act.detection.cut
    assert outcome.kept_reasoning == expected_kept(text, act.detection.cut, "reasoning")
    assert outcome.finish_reason == "stop" and outcome.tool_calls == ()
    # a completed attempt: the rescues in a row start again
    assert session.consecutive_rescues == 0 and outcome.rescues == 0


@shared_data
def test_cut_mode_stops_without_resume() -> None:
    act = case_acting("010")
    assert act is not None
    passed, outcome = run(recorded("010", 7).chunks, config={"mode": "cut"})
    assert len(passed) == Recorded.HEAD + stop_index(act.checkpoint, 7)
    assert outcome.stopped and not outcome.should_resume and not outcome.cancelled and outcome.mode == "cut"
    assert outcome.detection == act.detection


# ------------------------------------------------------------------ (c) an open tool call defers the cut


ARGS = json.dumps(
    {
        "query": "postgres composite index not used when the leading column is missing",
        "filters": {"site": "docs.example.org", "lang": ["en", "de"]},
        "limit": 10,
    }
)


def tool_delta(
    index: int, fragment: str, *, first: bool = False, name: str = "search_docs", call_id: str = "call_0"
) -> dict[str, Any]:
    call: dict[str, Any] = {"index": index, "function": {"arguments": fragment}}
    if first:
        call["id"] = call_id
        call["type"] = "function"
        call["function"]["name"] = name
    return call


@dataclass(frozen=True)
class ToolStream:
    chunks: list[Any]
    acting_chunk: int  # index into chunks of the chunk whose content reaches the acting checkpoint
    consumed: str  # answer text fed up to and including that chunk


def tool_stream(*, after: str, size: int = 7, args_fragment: int = 3) -> ToolStream:
    """Case 001 as ``delta.content``; the same chunks carry ``tool_calls`` fragments of call 0
    (started in the first content chunk); content stops at the acting chunk; then ``after``:

    * ``"finish"``: the rest of the arguments, then ``finish_reason="tool_calls"``;
    * ``"second_call"``: the rest of the arguments, then a chunk starting call 1, its arguments, finish;
    * ``"more_text"``: the answer text goes on (with argument fragments);
    * ``"end"``: the rest of the arguments, then the upstream just ends.
    """
    case = load_case("001")
    act = case_acting("001")
    assert act is not None
    pieces = split(case.text, size)
    j = stop_index(act.checkpoint, size)
    frags = split(ARGS, args_fragment)
    in_content = min(len(frags) - 4, j)  # fragments riding on content chunks; 4+ are left for later
    frags_with_content = frags[:in_content]
    rest = frags[in_content:]
    chunks: list[Any] = [chat_chunk({"role": "assistant", "content": ""})]
    for i in range(j + 1):
        delta: dict[str, Any] = {"content": pieces[i]}
        # argument fragments arrive with the last ``in_content`` content chunks up to the acting one
        k = i - (j + 1 - in_content)
        if k == 0:
            delta["tool_calls"] = [tool_delta(0, frags_with_content[0], first=True)]
        elif k > 0:
            delta["tool_calls"] = [tool_delta(0, frags_with_content[k])]
        chunks.append(chat_chunk(delta))
    acting_chunk = len(chunks) - 1
    if after == "more_text":
        for i, frag in enumerate(rest):
            chunks.append(chat_chunk({"content": pieces[j + 1 + i], "tool_calls": [tool_delta(0, frag)]}))
        chunks.append(chat_chunk({}, "tool_calls"))
    else:
        chunks += [chat_chunk({"tool_calls": [tool_delta(0, frag)]}) for frag in rest]
        if after == "second_call":
            chunks.append(
                chat_chunk({"tool_calls": [tool_delta(1, "", first=True, name="read_file", call_id="call_1")]})
            )
            chunks.append(chat_chunk({"tool_calls": [tool_delta(1, '{"path": "schema.sql"}')]}))
            chunks.append(chat_chunk({}, "tool_calls"))
        elif after == "finish":
            chunks.append(chat_chunk({}, "tool_calls"))
        else:
            assert after == "end"
    return ToolStream(chunks, acting_chunk, "".join(pieces[: j + 1]))


CALL_0 = StreamToolCall(0, "call_0", "search_docs", ARGS)


@shared_data
@pytest.mark.parametrize("shape", SHAPES)
def test_open_tool_call_defers_the_cut_to_its_end(shape: str) -> None:
    ts = tool_stream(after="finish")
    chunks = convert(ts.chunks, shape)
    act = case_acting("001")
    assert act is not None
    passed, outcome = run(chunks)
    # nothing is dropped: the finishing chunk is passed on (STOP_AFTER) and the stream stops there
    assert len(passed) == len(chunks) and all(a is b for a, b in zip(passed, chunks))
    # stopped, but a completed call is progress: the host runs it instead of resuming
    assert outcome.stopped and not outcome.should_resume and not outcome.cancelled
    assert outcome.rescues == 0 and outcome.finish_reason == "tool_calls"
    assert outcome.tool_calls == (CALL_0,)
    assert json.loads(outcome.tool_calls[0].arguments) == json.loads(ARGS)
    assert outcome.detection == act.detection
    assert outcome.cut == act.detection.cut and outcome.removed == len(ts.consumed) - act.detection.cut
    assert outcome.kept_text == expected_kept(ts.consumed, act.detection.cut, "text")


@shared_data
@pytest.mark.parametrize("after", ("finish", "second_call", "more_text"))
def test_deferred_cut_action_sequence(after: str) -> None:
    """The adapter's actions, chunk by chunk: CONTINUE while a call is open (Chat Completions
    calls close only at ``finish_reason``), STOP_AFTER on the finish."""
    ts = tool_stream(after=after)
    guard = StreamGuard()
    actions = [apply_chat_chunk(c, guard) for c in ts.chunks]
    assert actions[:-1] == [Action.CONTINUE] * (len(ts.chunks) - 1)
    assert actions[-1] is Action.STOP_AFTER
    assert guard.stopped


CALL_1 = StreamToolCall(1, "call_1", "read_file", '{"path": "schema.sql"}')


@shared_data
@pytest.mark.parametrize("shape", SHAPES)
def test_a_call_that_starts_while_the_cut_waits_is_included(shape: str) -> None:
    """Call 0 is still open (Chat Completions closes calls only at ``finish_reason``) when call 1
    starts: call 1 is passed on and assembled, and the stream stops after the finish chunk."""
    ts = tool_stream(after="second_call")
    chunks = convert(ts.chunks, shape)
    act = case_acting("001")
    assert act is not None
    passed, outcome = run(chunks)
    assert len(passed) == len(chunks) and all(a is b for a, b in zip(passed, chunks))
    assert outcome.stopped and not outcome.should_resume and not outcome.cancelled
    assert outcome.tool_calls == (CALL_0, CALL_1)
    assert outcome.detection == act.detection and outcome.finish_reason == "tool_calls"
    assert outcome.kept_text == expected_kept(ts.consumed, act.detection.cut, "text")


def _content(chunks: list[Any]) -> str:
    return "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])


def _spy_feed(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Record every delta (or held deltas joined) the stream layer feeds to a session's detectors."""
    fed: list[tuple[str, str]] = []
    original = session_module.Session.feed

    def feed(self: Session, delta: str, channel: str = "text") -> Any:
        fed.append((channel, delta))
        return original(self, delta, channel)

    def feed_held(self: Session, text: str, channel: str = "text") -> Any:
        fed.append((channel, text))
        return held(self, text, channel)

    held = session_module.Session.feed_held
    monkeypatch.setattr(session_module.Session, "feed", feed)
    monkeypatch.setattr(session_module.Session, "feed_held", feed_held)
    return fed


@shared_data
def test_text_while_the_cut_waits_is_passed_on_and_recorded_not_detected(monkeypatch: pytest.MonkeyPatch) -> None:
    """Answer text goes on while call 0 is open: every chunk is passed on until the finish chunk;
    the text is recorded (the answer is the looping channel, so it goes with the loop after the
    cut) but never fed to the detectors."""
    fed = _spy_feed(monkeypatch)
    ts = tool_stream(after="more_text")
    act = case_acting("001")
    assert act is not None
    passed, outcome = run(ts.chunks)
    assert len(passed) == len(ts.chunks) and all(a is b for a, b in zip(passed, ts.chunks))
    assert outcome.stopped and not outcome.should_resume and outcome.tool_calls == (CALL_0,)
    seen = _content(ts.chunks)
    assert len(seen) > len(ts.consumed) and seen == load_case("001").text[: len(seen)]
    assert "".join(d for _, d in fed) == ts.consumed  # nothing after the acting chunk was fed
    assert outcome.detection == act.detection and outcome.cut == act.detection.cut
    assert outcome.removed == len(seen) - act.detection.cut
    assert outcome.kept_text == expected_kept(seen, act.detection.cut, "text")


@shared_data
def test_other_channel_while_the_cut_waits_is_kept_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """A reasoning loop found while a call streams: answer deltas that arrive before the finish
    are passed on and kept as streamed (not fed to the detectors); the reasoning is pruned."""
    fed = _spy_feed(monkeypatch)
    act = case_acting("010")
    assert act is not None
    pieces = split(load_case("010").text, 7)
    j = stop_index(act.checkpoint, 7)
    consumed = "".join(pieces[: j + 1])
    chunks = [chat_chunk({"role": "assistant", "content": None, "reasoning_content": ""})]
    chunks += [chat_chunk({"content": None, "reasoning_content": p}) for p in pieces[: j - 1]]
    chunks.append(chat_chunk({"tool_calls": [tool_delta(0, '{"query": ', first=True)]}))
    chunks += [chat_chunk({"content": None, "reasoning_content": p}) for p in pieces[j - 1 : j + 1]]
    answer = ["The meeting ", "is at 10:00."]
    chunks += [chat_chunk({"content": a}) for a in answer]
    chunks.append(chat_chunk({"tool_calls": [tool_delta(0, '"rooms"}')]}))
    chunks.append(chat_chunk({}, "tool_calls"))
    chunks.append(usage_chunk())
    passed, outcome = run(chunks)
    assert len(passed) == len(chunks) - 1 and all(a is b for a, b in zip(passed, chunks))  # usage not read
    assert "".join(d for _, d in fed) == consumed
    assert outcome.stopped and not outcome.should_resume
    assert outcome.tool_calls == (StreamToolCall(0, "call_0", "search_docs", '{"query": "rooms"}'),)
    assert outcome.kept_text == "The meeting is at 10:00."
    assert outcome.kept_reasoning == expected_kept(consumed, act.detection.cut, "reasoning")
    assert outcome.detection == act.detection and outcome.channel == "reasoning"


@shared_data
def test_upstream_ending_with_a_deferred_cut_completes_the_call() -> None:
    """The stream ends by itself while the cut waits: the call is complete, the loop pruned, but
    the attempt was not stopped and is not resumed (a completed attempt)."""
    ts = tool_stream(after="end")
    act = case_acting("001")
    assert act is not None
    session = Session()
    assert run(loop_chunks(), session=session)[1].should_resume
    passed, outcome = run(ts.chunks, session=session)
    assert len(passed) == len(ts.chunks) and all(a is b for a, b in zip(passed, ts.chunks))
    assert not outcome.stopped and not outcome.should_resume and not outcome.cancelled
    assert outcome.tool_calls == (CALL_0,) and outcome.finish_reason is None
    assert outcome.detection == act.detection and outcome.channel == "text"
    removed = len(ts.consumed) - act.detection.cut
    assert outcome.cut == act.detection.cut and outcome.removed == removed
    assert outcome.kept_text == expected_kept(ts.consumed, act.detection.cut, "text")
    assert outcome.marker == "\n" + marker_text("text", removed, "en")
    assert session.consecutive_rescues == 0 and outcome.rescues == 0


PARALLEL_B = '{"path": "schema.sql", "lines": [1, 40]}'


def parallel_chunks(reasoning: list[str] | None = None) -> list[Any]:
    """Two calls whose fragments interleave (0, 1, 0, 1, ...), as parallel-call servers send them;
    ``reasoning`` deltas first, the calls starting 3 deltas before the last one."""
    a, b = split(ARGS, 9), split(PARALLEL_B, 4)
    calls: list[dict[str, Any]] = []
    for i in range(max(len(a), len(b))):
        if i < len(a):
            calls.append(tool_delta(0, a[i], first=i == 0))
        if i < len(b):
            calls.append(tool_delta(1, b[i], first=i == 0, name="read_file", call_id="call_1"))
    chunks = [chat_chunk({"role": "assistant", "content": None})]
    reasoning = reasoning or []
    head, tail = reasoning[:-3], reasoning[-3:]
    chunks += [chat_chunk({"reasoning_content": r}) for r in head]
    for k, call in enumerate(calls):
        delta: dict[str, Any] = {"tool_calls": [call]}
        if k < len(tail):
            delta["reasoning_content"] = tail[k]
        chunks.append(chat_chunk(delta))
    chunks.append(chat_chunk({}, "tool_calls"))
    return chunks


def test_interleaved_parallel_calls_are_assembled() -> None:
    chunks = parallel_chunks()
    guard = StreamGuard()
    actions = [apply_chat_chunk(c, guard) for c in chunks[:-1]]
    assert actions == [Action.CONTINUE] * (len(chunks) - 1)
    assert guard.outcome.tool_calls == ()  # neither is complete before finish_reason
    assert apply_chat_chunk(chunks[-1], guard) is Action.CONTINUE
    outcome = guard.finish()
    assert outcome.tool_calls == (CALL_0, StreamToolCall(1, "call_1", "read_file", PARALLEL_B))
    assert not outcome.stopped and outcome.finish_reason == "tool_calls"


@shared_data
def test_a_loop_while_parallel_calls_interleave_waits_for_the_finish() -> None:
    act = case_acting("010")
    assert act is not None
    pieces = split(load_case("010").text, 7)
    j = stop_index(act.checkpoint, 7)
    consumed = "".join(pieces[: j + 1])
    chunks = parallel_chunks(pieces[: j + 1]) + [usage_chunk()]
    guard = StreamGuard()
    actions = [apply_chat_chunk(c, guard) for c in chunks[:-1]]
    assert actions == [Action.CONTINUE] * (len(chunks) - 2) + [Action.STOP_AFTER]
    passed, outcome = run(chunks)
    assert len(passed) == len(chunks) - 1 and all(a is b for a, b in zip(passed, chunks))
    assert outcome.stopped and not outcome.should_resume
    assert outcome.tool_calls == (CALL_0, StreamToolCall(1, "call_1", "read_file", PARALLEL_B))
    assert outcome.detection == act.detection
    assert outcome.kept_reasoning == expected_kept(consumed, act.detection.cut, "reasoning")


@shared_data
def test_a_call_completed_before_the_loop_means_no_resume() -> None:
    """A stop after a completed call: stopped, not resumed (the host runs the call)."""
    act = case_acting("010")
    assert act is not None
    session = Session()
    guard = StreamGuard(session)
    assert guard.tool_start("t1", id="call_9", name="ls") is Action.CONTINUE
    assert guard.tool_args("t1", '{"path": "."}') is Action.CONTINUE
    assert guard.tool_end("t1") is Action.CONTINUE
    pieces = split(load_case("010").text, 7)
    actions = [guard.reasoning(p) for p in pieces]
    j = stop_index(act.checkpoint, 7)
    assert actions[j] is Action.STOP_BEFORE and actions[:j] == [Action.CONTINUE] * j
    outcome = guard.finish()
    assert outcome.stopped and not outcome.should_resume and not outcome.cancelled
    assert outcome.tool_calls == (StreamToolCall("t1", "call_9", "ls", '{"path": "."}'),)
    assert outcome.kept_reasoning == expected_kept("".join(pieces[: j + 1]), act.detection.cut, "reasoning")
    assert session.consecutive_rescues == 0 and session.retry_requests_left == 0  # no rescue recorded


def test_tool_calls_without_a_loop_are_assembled() -> None:
    chunks = [chat_chunk({"role": "assistant", "content": None})]
    chunks += [chat_chunk({"tool_calls": [tool_delta(0, f, first=i == 0)]}) for i, f in enumerate(split(ARGS, 5))]
    chunks += [
        chat_chunk({"tool_calls": [tool_delta(1, f, first=i == 0, name="read_file", call_id="call_1")]})
        for i, f in enumerate(split('{"path": "a.sql"}', 4))
    ]
    chunks.append(chat_chunk({}, "tool_calls"))
    passed, outcome = run(chunks)
    assert len(passed) == len(chunks) and not outcome.stopped
    assert outcome.tool_calls == (CALL_0, StreamToolCall(1, "call_1", "read_file", '{"path": "a.sql"}'))


# ------------------------------------------------------------------ (d) observe, (e) watch


@shared_data
@pytest.mark.parametrize("shape", ("dict", "namespace"))
@pytest.mark.parametrize("prefix", LOOP_CASES)
def test_observe_never_alters_or_drops(prefix: str, shape: str) -> None:
    case = load_case(prefix)
    act = case_acting(prefix)
    assert act is not None
    rec = recorded(prefix, 7, shape)
    snapshot = [to_namespace(c) if shape == "dict" else c for c in rec.chunks]  # deep copy of dicts
    passed, outcome = run(rec.chunks, config={"mode": "observe"}, session=case_session(prefix))
    assert len(passed) == len(rec.chunks) and all(a is b for a, b in zip(passed, rec.chunks))
    if shape == "dict":
        assert [to_namespace(c) for c in rec.chunks] == snapshot  # not mutated either
    assert not outcome.stopped and not outcome.should_resume and not outcome.cancelled
    assert outcome.detection == act.detection and outcome.mode == "observe"
    assert outcome.cut is None and outcome.marker == "" and outcome.removed == 0
    kept = outcome.kept_reasoning if case.channel == "reasoning" else outcome.kept_text
    assert kept == case.text


@shared_data
def test_watch_text_ignores_a_reasoning_loop() -> None:
    session = Session(text_config=TextConfig("default", watch="text"))
    rec = recorded("010", 7)
    passed, outcome = run(rec.chunks, session=session)
    assert len(passed) == len(rec.chunks)
    assert not outcome.stopped and outcome.detection is None
    assert outcome.kept_reasoning == load_case("010").text
    # ... but still cuts an answer loop
    act = case_acting("001")
    assert act is not None
    passed, outcome = run(recorded("001", 7).chunks, session=session)
    assert outcome.stopped and outcome.detection == act.detection


@shared_data
def test_watch_reasoning_ignores_an_answer_loop() -> None:
    session = Session(text_config=TextConfig("default", watch="reasoning"))
    rec = recorded("001", 64)
    passed, outcome = run(rec.chunks, session=session)
    assert len(passed) == len(rec.chunks) and not outcome.stopped and outcome.detection is None


# ------------------------------------------------------------------ (f) rescue counting


def loop_chunks() -> list[Any]:
    return recorded("010", 64).chunks


def normal_chunks() -> list[Any]:
    return [
        chat_chunk({"role": "assistant", "content": ""}),
        chat_chunk({"content": "The meeting is at 10:00."}),
        chat_chunk({}, "stop"),
    ]


@shared_data
def test_rescue_cap_cancels_the_fourth_loop_in_a_row() -> None:
    session = Session()
    results = []
    for _ in range(4):
        _, outcome = run(loop_chunks(), session=session)
        results.append((outcome.stopped, outcome.should_resume, outcome.cancelled, outcome.rescues))
    assert results == [(True, True, False, 1), (True, True, False, 2), (True, True, False, 3), (True, False, True, 3)]
    assert session.consecutive_rescues == 3


@shared_data
def test_rescue_cap_raise() -> None:
    session = Session()
    config = StreamConfig(on_rescue_cap="raise")
    for _ in range(3):
        _, outcome = run(loop_chunks(), session=session, config=config)
        assert outcome.should_resume
    stream = guard_stream(iter(loop_chunks()), session=session, config=config)
    with pytest.raises(LoopGuardCancelled) as info:
        for _ in stream:
            pass
    assert info.value.outcome is stream.outcome
    assert info.value.outcome.cancelled and info.value.outcome.stopped and not info.value.outcome.should_resume
    assert info.value.outcome.kept_reasoning.endswith("重复推理〕")


@shared_data
def test_rescue_cap_raise_async() -> None:
    session = Session()
    config = StreamConfig(on_rescue_cap="raise", max_consecutive_rescues=1)
    _, outcome = arun(loop_chunks(), session=session, config=config)
    assert outcome.should_resume
    with pytest.raises(LoopGuardCancelled) as info:
        arun(loop_chunks(), session=session, config=config)
    assert info.value.outcome.cancelled


@shared_data
def test_max_consecutive_rescues_zero_never_resumes() -> None:
    _, outcome = run(loop_chunks(), config={"max_consecutive_rescues": 0})
    assert outcome.stopped and outcome.cancelled and not outcome.should_resume


@shared_data
def test_a_normal_stream_resets_the_count() -> None:
    session = Session()
    for _ in range(2):
        assert run(loop_chunks(), session=session)[1].should_resume
    _, outcome = run(normal_chunks(), session=session)
    assert not outcome.stopped and outcome.rescues == 0 and session.consecutive_rescues == 0
    assert [run(loop_chunks(), session=session)[1].should_resume for _ in range(4)] == [True, True, True, False]
    run(normal_chunks(), session=session)
    assert run(loop_chunks(), session=session)[1].should_resume  # reset again after a cancel


@shared_data
@pytest.mark.parametrize("retry_requests", (0, 1, 2))
def test_the_stream_guard_does_not_take_from_the_retry_budget(retry_requests: int) -> None:
    """A rescue sets the budget; streams never consume it (the request sender does, with
    ``session.take_retry()``, once per request that carries the retry settings)."""
    config = StreamConfig(retry_requests=retry_requests)
    session = Session()
    first = StreamGuard(session, config)
    for chunk in loop_chunks():
        if apply_chat_chunk(chunk, first).stop:
            break
    assert first.finish().should_resume
    assert session.retry_requests_left == retry_requests
    for _ in range(retry_requests + 2):
        guard = StreamGuard(session, config)
        for chunk in normal_chunks():
            apply_chat_chunk(chunk, guard)
        assert not guard.finish().stopped
        assert session.retry_requests_left == retry_requests
    flags = [session.take_retry() for _ in range(retry_requests + 2)]
    assert flags == [True] * retry_requests + [False, False]
    assert session.retry_requests_left == 0


class FakeStream:
    """A sync upstream with ``close()`` (records it)."""

    def __init__(self, chunks: list[Any]) -> None:
        self._it = iter(chunks)
        self.closed = False

    def __iter__(self) -> FakeStream:
        return self

    def __next__(self) -> Any:
        return next(self._it)

    def close(self) -> None:
        self.closed = True


class FakeClient:
    """``client.chat.completions.create(**kwargs)`` returning scripted streams; records every request."""

    def __init__(self, script: list[list[Any]]) -> None:
        self.script = list(script)
        self.requests: list[dict[str, Any]] = []
        self.streams: list[FakeStream] = []
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self.create))

    def create(self, **kwargs: Any) -> FakeStream:
        self.requests.append(kwargs)
        stream = FakeStream(self.script.pop(0))
        self.streams.append(stream)
        return stream


class StatusError(Exception):
    """What an SDK raises for an HTTP error status (``openai.APIStatusError`` has ``status_code``)."""

    def __init__(self, status_code: int) -> None:
        super().__init__(f"Error code: {status_code}")
        self.status_code = status_code


class RefusingClient(FakeClient):
    """Refuses (raises ``StatusError(status)``) every request that carries ``reasoning_effort``
    (or, with ``after_first``, every request after the first), like a server whose model takes
    no such parameter."""

    def __init__(self, script: list[list[Any]], status: int = 400, *, after_first: bool = False) -> None:
        super().__init__(script)
        self.status = status
        self.after_first = after_first
        self.refused: list[dict[str, Any]] = []

    def create(self, **kwargs: Any) -> FakeStream:
        if self.requests if self.after_first else "reasoning_effort" in kwargs:
            self.requests.append(kwargs)
            self.refused.append(kwargs)
            raise StatusError(self.status)
        return super().create(**kwargs)


class AsyncFakeClient:
    """``await client.chat.completions.create(**kwargs)`` returning scripted async streams."""

    def __init__(self, inner: FakeClient) -> None:
        self.inner = inner
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self.create))

    async def create(self, **kwargs: Any) -> AsyncIterator[Any]:
        return _agen(self.inner.create(**kwargs))


RETRY = {"temperature": 1.0, "reasoning_effort": "low"}


def loop_removed() -> int:
    """Code points pruned from case 010 in deltas of 64 (``loop_chunks``): the consumed text ends
    at the first delta boundary at or past the acting checkpoint."""
    act = case_acting("010")
    assert act is not None
    consumed = "".join(recorded("010", 64).pieces[: stop_index(act.checkpoint, 64) + 1])
    return len(consumed) - act.detection.cut


def zh_note(removed: int) -> str:
    return render("resume", "zh", channel="reasoning", channel_zh="推理", count=removed)


def _settings(request: dict[str, Any]) -> dict[str, Any]:
    return {k: request[k] for k in RETRY if k in request}


@shared_data
def test_create_with_rescue_sends_retry_settings_only_after_a_rescue() -> None:
    client = FakeClient([loop_chunks(), loop_chunks(), normal_chunks()])
    messages = [{"role": "user", "content": "When is the meeting?"}]
    result = create_with_rescue(client, model="m", messages=messages, temperature=0.2)
    assert result.text == "The meeting is at 10:00." and result.rescues == 2 and not result.cancelled
    assert [r["temperature"] for r in client.requests] == [0.2, 1.0, 1.0]  # retry settings win on resumes
    assert [r.get("reasoning_effort") for r in client.requests] == [None, "low", "low"]
    assert all(r["stream"] is True and r["model"] == "m" for r in client.requests)
    assert [s.closed for s in client.streams] == [True, True, False]  # cut streams are closed (a finished one ended)
    assert messages == [{"role": "user", "content": "When is the meeting?"}]  # the caller's list untouched
    assert loop_removed() == 16 * 64 - 333 == 691  # cycle at 1000, cut 333: consumed to 1024
    # a reasoning loop keeps no assistant message: the note goes into the user turn, and the
    # second rescue's note replaces the first
    resumed = [{"role": "user", "content": "When is the meeting?\n\n" + zh_note(691)}]
    assert client.requests[1]["messages"] == resumed and client.requests[2]["messages"] == resumed
    assert result.messages == resumed


@shared_data
@pytest.mark.parametrize("content", ("string", "list"))
def test_three_rescues_in_a_row_keep_one_note(content: str) -> None:
    question: Any = "When is the meeting?" if content == "string" else [{"type": "text", "text": "When is it?"}]
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": question}]
    before = json.loads(json.dumps(messages))
    client = FakeClient([loop_chunks(), loop_chunks(), loop_chunks(), normal_chunks()])
    result = create_with_rescue(client, model="m", messages=messages)
    assert result.rescues == 3 and not result.cancelled and result.text == "The meeting is at 10:00."
    assert messages == before and messages[1]["content"] is question  # the caller's list and dicts unchanged
    note = zh_note(loop_removed())
    if content == "string":
        user: Any = "When is the meeting?\n\n" + note
    else:
        user = [{"type": "text", "text": "When is it?"}, {"type": "text", "text": note}]
    for request in client.requests[1:]:
        assert request["messages"] == [messages[0], {"role": "user", "content": user}]
        assert json.dumps(request["messages"], ensure_ascii=False).count("[loopguard]") == 1


@shared_data
@pytest.mark.parametrize("status", (400, 422))
def test_create_with_rescue_resends_without_refused_retry_settings(
    status: int, caplog: pytest.LogCaptureFixture
) -> None:
    client = RefusingClient([loop_chunks(), normal_chunks()], status=status)
    with caplog.at_level(logging.WARNING, logger="loopguard.integrations"):
        result = create_with_rescue(client, model="m", messages=[{"role": "user", "content": "q"}])
    assert result.text == "The meeting is at 10:00." and result.rescues == 1 and not result.cancelled
    assert [_settings(r) for r in client.requests] == [{}, RETRY, {}]
    assert client.refused == [client.requests[1]]
    assert client.requests[1]["messages"] == client.requests[2]["messages"] == result.messages
    assert client.requests[2] == {"model": "m", "stream": True, "messages": result.messages}
    assert any("sent again without them" in r.getMessage() for r in caplog.records)


@shared_data
def test_the_resend_keeps_the_callers_own_settings() -> None:
    client = RefusingClient([loop_chunks(), normal_chunks()], after_first=True)
    with pytest.raises(StatusError):  # the resend is refused too: that error propagates
        create_with_rescue(client, model="m", messages=[{"role": "user", "content": "q"}], temperature=0.2)
    assert [(r["temperature"], r.get("reasoning_effort")) for r in client.requests] == [
        (0.2, None),
        (1.0, "low"),
        (0.2, None),
    ]
    assert client.refused == client.requests[1:]


@shared_data
def test_acreate_with_rescue_resends_without_refused_retry_settings() -> None:
    inner = RefusingClient([loop_chunks(), normal_chunks()])
    session = Session()
    result = asyncio.run(
        acreate_with_rescue(
            AsyncFakeClient(inner), model="m", session=session, messages=[{"role": "user", "content": "q"}]
        )
    )
    assert result.text == "The meeting is at 10:00." and result.rescues == 1
    assert [_settings(r) for r in inner.requests] == [{}, RETRY, {}]
    assert inner.refused == [inner.requests[1]]
    assert session.retry_requests_left == 0  # the refused request used the budget


@shared_data
@pytest.mark.parametrize("status", (401, 404, 429, 500))
def test_create_with_rescue_other_errors_propagate(status: int) -> None:
    client = RefusingClient([loop_chunks(), normal_chunks()], status=status)
    with pytest.raises(StatusError) as info:
        create_with_rescue(client, model="m", messages=[{"role": "user", "content": "q"}])
    assert info.value.status_code == status and len(client.requests) == 2


def test_a_refusal_without_retry_settings_propagates() -> None:
    """Only a request that carried the retry settings is sent again."""
    client = RefusingClient([normal_chunks()])
    with pytest.raises(StatusError):
        create_with_rescue(client, model="m", messages=[{"role": "user", "content": "q"}], reasoning_effort="high")
    assert [r["reasoning_effort"] for r in client.requests] == ["high"]


@shared_data
def test_start_turn_resets_the_rescue_count_and_the_retry_budget() -> None:
    session = Session()
    config = StreamConfig(retry_requests=2)
    assert [run(loop_chunks(), session=session, config=config)[1].should_resume for _ in range(4)] == [
        True,
        True,
        True,
        False,
    ]
    assert session.consecutive_rescues == 3 and session.retry_requests_left == 2
    session.start_turn()  # a new user message
    assert session.consecutive_rescues == 0 and session.retry_requests_left == 0
    _, outcome = run(loop_chunks(), session=session, config=config)
    assert outcome.should_resume and outcome.rescues == 1
    session.start_turn()
    client = FakeClient([normal_chunks()])
    create_with_rescue(client, model="m", messages=[{"role": "user", "content": "q"}], session=session, config=config)
    assert [_settings(r) for r in client.requests] == [{}]  # the budget of the old turn is gone


@shared_data
def test_create_with_rescue_retry_requests_span_calls_on_one_session() -> None:
    session = Session()
    config = StreamConfig(retry_requests=2)
    client = FakeClient([loop_chunks(), normal_chunks(), normal_chunks(), normal_chunks()])
    msgs = [{"role": "user", "content": "q"}]
    create_with_rescue(client, model="m", messages=msgs, session=session, config=config)
    create_with_rescue(client, model="m", messages=msgs, session=session, config=config)
    create_with_rescue(client, model="m", messages=msgs, session=session, config=config)
    assert [_settings(r) for r in client.requests] == [{}, RETRY, RETRY, {}]


@shared_data
def test_create_with_rescue_past_the_cap() -> None:
    client = FakeClient([loop_chunks() for _ in range(6)])
    result = create_with_rescue(client, model="m", messages=[{"role": "user", "content": "q"}])
    assert len(client.requests) == 4 and result.rescues == 3 and result.cancelled
    assert [o.should_resume for o in result.outcomes] == [True, True, True, False]
    client = FakeClient([loop_chunks() for _ in range(6)])
    with pytest.raises(LoopGuardCancelled):
        create_with_rescue(
            client, model="m", messages=[{"role": "user", "content": "q"}], config={"on_rescue_cap": "raise"}
        )
    assert len(client.requests) == 4


# ------------------------------------------------------------------ (g) resume_messages


def windows(text: str, width: int) -> set[str]:
    return {text[i : i + width] for i in range(max(0, len(text) - width + 1))}


@shared_data
@pytest.mark.parametrize(("prefix", "lang"), [("010", "zh"), ("015", "en"), ("007", "en"), ("001", "en")])
def test_resume_messages(prefix: str, lang: str) -> None:
    case = load_case(prefix)
    act = case_acting(prefix)
    assert act is not None
    rec = recorded(prefix, 7)
    _, outcome = run(rec.chunks, session=case_session(prefix))
    consumed = "".join(rec.pieces[: stop_index(act.checkpoint, 7) + 1])
    history = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Answer, please."}]
    before = json.loads(json.dumps(history))
    request = resume_messages(history, outcome)
    assert history == before  # input not modified
    out = request.messages
    assert out[0] == history[0] and out[0] is not history[0] and out[1] is not history[1]  # copies
    channel = "reasoning" if case.channel == "reasoning" else "answer"
    note = render(
        "resume",
        lang,
        channel=channel,
        channel_zh="推理" if channel == "reasoning" else "回答",
        count=len(consumed) - act.detection.cut,
    )
    assert note.startswith("[loopguard]")
    if case.channel == "text":  # the pruned answer is kept: an assistant turn, then the note as a user turn
        assert outcome.kept_text.strip()
        assert out[1:] == [
            history[1],
            {"role": "assistant", "content": outcome.kept_text},
            {"role": "user", "content": note},
        ]
    else:  # no assistant turn to add: the note goes into the user turn (roles alternate)
        assert outcome.kept_text == ""
        assert out[1:] == [{"role": "user", "content": "Answer, please.\n\n" + note}]
    assert request.settings == RETRY
    assert request.kwargs() == {"messages": out, **RETRY}
    # the loop never goes back: no 30-code-point window of the removed part that is not also in the
    # kept part (a C cut keeps the first copy) appears in any message
    kept = consumed[: act.detection.cut]
    loop_only = windows(consumed[act.detection.cut :], 30) - windows(kept, 30)
    for message in out:
        content = message["content"]
        assert not any(w in content for w in loop_only)
    if case.channel == "reasoning":  # the reasoning is not replayed at all by default
        body = "".join(m["content"] for m in out)
        assert not any(w in body for w in windows(consumed[act.detection.cut :], 30))


@shared_data
def test_resume_messages_settings_and_reasoning() -> None:
    _, outcome = run(recorded("010", 64).chunks)
    assert resume_messages([], outcome, config={"retry_requests": 0}).settings == {}
    assert resume_messages([], outcome, config={"retry_temperature": None}).settings == {"reasoning_effort": "low"}
    with_reasoning = resume_messages([], outcome, include_reasoning=True).messages
    assert with_reasoning[0] == {"role": "assistant", "content": "", "reasoning_content": outcome.kept_reasoning}
    with pytest.raises(TypeError):
        resume_messages("not messages", outcome)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        resume_messages([], "not an outcome")  # type: ignore[arg-type]


# ------------------------------------------------------------------ (h) bad input


class Exploding:
    """A chunk whose every attribute access raises."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"no {name}")


JUNK: list[Any] = [
    None,
    0,
    42,
    3.5,
    "data: {}",
    b"\x00",
    [],
    Exploding(),
    {},
    {"choices": None},
    {"choices": "abc"},
    {"choices": [None, 1, "x"]},
    {"choices": {"0": {}}},
    {"choices": [{"index": 0}]},
    {"choices": [{"index": 0, "delta": None}]},
    {"choices": [{"index": 0, "delta": "content"}]},
    {"choices": [{"index": 0, "delta": {"content": 5}}]},
    {"choices": [{"index": 0, "delta": {"content": ["a", "b"]}}]},
    {"choices": [{"index": 0, "delta": {"content": None, "reasoning_content": {"text": "x"}}}]},
    {"choices": [{"index": 0, "delta": {"reasoning": 7, "reasoning_content": b"bytes"}}]},
    {"choices": [{"index": 0, "delta": {"tool_calls": "call"}}]},
    {"choices": [{"index": 0, "delta": {"tool_calls": {"index": 0}}}]},
    {"choices": [{"index": 0, "delta": {"tool_calls": [None, 5, "x", {"function": None}]}}]},
    {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": True, "function": {"arguments": "{"}}]}}]},
    {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": "0", "function": {"arguments": "{"}}]}}]},
    {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 1.0, "function": {"arguments": "{"}}]}}]},
    {"choices": [{"index": 0, "delta": {}, "finish_reason": 5}]},
    {"choices": [{"index": 1, "delta": {"content": "choice one is not guarded " * 20}}]},
    SimpleNamespace(choices=[SimpleNamespace(index=0, delta=SimpleNamespace(content=12))]),
    SimpleNamespace(choices=[SimpleNamespace(index=0, delta=Exploding())]),
]


@shared_data
@pytest.mark.parametrize("prefix", ("001", "010"))
def test_junk_chunks_pass_through_and_change_nothing(prefix: str) -> None:
    rec = recorded(prefix, 7)
    clean_passed, clean = run(rec.chunks)
    mixed: list[Any] = []
    for i, chunk in enumerate(rec.chunks):
        mixed.append(chunk)
        if i % 5 == 0:
            mixed.extend(JUNK)
    passed, outcome = run(mixed)
    # passed through, in order, unchanged, up to the same stop
    assert all(a is b for a, b in zip(passed, mixed))
    assert [c for c in passed if any(c is r for r in rec.chunks)] == clean_passed
    assert mixed[len(passed)] is rec.chunks[len(clean_passed)]  # the dropped chunk is the same
    assert outcome.detection == clean.detection and outcome.cut == clean.cut
    assert (outcome.kept_reasoning, outcome.kept_text) == (clean.kept_reasoning, clean.kept_text)
    assert outcome.guard_error is None and outcome.tool_calls == ()


def test_only_junk() -> None:
    passed, outcome = run(JUNK)
    assert len(passed) == len(JUNK) and all(a is b for a, b in zip(passed, JUNK))
    assert not outcome.stopped and outcome.kept_text == "" and outcome.kept_reasoning == ""
    passed, outcome = arun(JUNK)
    assert len(passed) == len(JUNK)


def test_non_str_deltas_to_the_guard_are_ignored() -> None:
    guard = StreamGuard()
    for bad in (None, 5, b"x", ["a"], {"a": 1}):
        assert guard.reasoning(bad) is Action.CONTINUE  # type: ignore[arg-type]
        assert guard.text(bad) is Action.CONTINUE  # type: ignore[arg-type]
    assert guard.tool_args(0, 12) is Action.CONTINUE
    assert guard.tool_end(0, arguments=None, name=3) is Action.CONTINUE
    assert guard.text("lone \ud800 surrogate, still text") is Action.CONTINUE
    outcome = guard.finish()
    assert outcome.guard_error is None and outcome.kept_text == "lone \ud800 surrogate, still text"
    assert outcome.tool_calls == ()  # a call that named nothing (no name, arguments or id) is no call
    assert guard.finish() is outcome  # idempotent


class Boom(Exception):
    pass


@shared_data
@pytest.mark.parametrize("is_async", (False, True))
def test_upstream_error_propagates_unchanged(is_async: bool) -> None:
    rec = recorded("010", 7)
    error = Boom("connection reset by peer")
    sent = 50

    def upstream() -> Iterator[Any]:
        yield from rec.chunks[:sent]
        raise error

    async def aupstream() -> AsyncIterator[Any]:
        for chunk in rec.chunks[:sent]:
            yield chunk
        raise error

    seen: list[Any] = []
    if is_async:

        async def main() -> StreamOutcome:
            stream = aguard_stream(aupstream())
            with pytest.raises(Boom) as info:
                async for chunk in stream:
                    seen.append(chunk)
            assert info.value is error
            return stream.outcome

        outcome = asyncio.run(main())
    else:
        stream = guard_stream(upstream())
        with pytest.raises(Boom) as info:
            for chunk in stream:
                seen.append(chunk)
        assert info.value is error
        outcome = stream.outcome
    assert len(seen) == sent
    assert outcome.upstream_error is error and not outcome.stopped
    assert outcome.kept_reasoning == "".join(rec.pieces[: sent - Recorded.HEAD])


class CloseRaises(FakeStream):
    def close(self) -> None:
        self.closed = True
        raise OSError("close failed")


@shared_data
def test_upstream_close_raising_is_ignored(caplog: pytest.LogCaptureFixture) -> None:
    act = case_acting("010")
    assert act is not None
    upstream = CloseRaises(recorded("010", 7).chunks)
    with caplog.at_level(logging.INFO, logger="loopguard"):
        stream = guard_stream(upstream)
        passed = list(stream)
    assert upstream.closed and len(passed) == Recorded.HEAD + stop_index(act.checkpoint, 7)
    assert stream.outcome.stopped and stream.outcome.detection == act.detection
    # a normal stream closed by the context manager
    upstream = CloseRaises(normal_chunks())
    with guard_stream(upstream) as stream:
        assert len(list(stream)) == 3
    stream.close()  # idempotent
    assert not stream.outcome.stopped


@shared_data
def test_async_upstream_close_raising_is_ignored() -> None:
    class AUpstream:
        def __init__(self) -> None:
            self.closed = False
            self._chunks = iter(loop_chunks())

        def __aiter__(self) -> AUpstream:
            return self

        async def __anext__(self) -> Any:
            try:
                return next(self._chunks)
            except StopIteration:
                raise StopAsyncIteration from None

        async def close(self) -> None:
            self.closed = True
            raise OSError("close failed")

    async def main() -> tuple[AUpstream, StreamOutcome]:
        upstream = AUpstream()
        stream = aguard_stream(upstream)
        async for _ in stream:
            pass
        return upstream, stream.outcome

    upstream, outcome = asyncio.run(main())
    assert upstream.closed and outcome.stopped


# ------------------------------------------------------------------ (i) stall nudge


def _attempt(session: Session, *, reasoning: str = "", text: str = "", tool: bool = False) -> Any:
    session.start_attempt()
    if reasoning:
        session.feed(reasoning, "reasoning")
    if text:
        session.feed(text, "text")
    if tool:
        session.note_tool_call("search_docs", ARGS)
    return session.end_attempt()


LONG_REASONING = load_case("026").text if SHARED_AVAILABLE else ""  # 1408 code points of normal (zh) reasoning
_serial = iter(range(1_000_000))


def long_reasoning() -> str:
    """Normal reasoning, different every attempt (identical attempts would be a D1' replay)."""
    return f"第 {next(_serial)} 次。" + LONG_REASONING


@shared_data
def test_stall_nudge_on_the_third_reasoning_only_attempt() -> None:
    assert len(LONG_REASONING) >= 1024
    session = Session()
    texts = [long_reasoning() for _ in range(4)]
    verdicts = [_attempt(session, reasoning=t) for t in texts]
    assert [(v.action, v.kind) for v in verdicts] == [
        ("allow", None),
        ("allow", None),
        ("notice", "stall_nudge"),
        ("allow", None),
    ]
    assert verdicts[2].reason == render("stall_nudge", "zh", count=3)
    assert verdicts[2].reason.startswith("[loopguard]")
    assert verdicts[2].evidence == {"attempts": 3, "nudges": 1, "reasoning_chars": len(texts[2])}


@shared_data
def test_stall_nudge_english_and_threshold() -> None:
    base = load_case("025").text  # 13k code points of normal English reasoning

    def text(i: int, n: int) -> str:
        return base[i * 1100 : i * 1100 + n]

    session = Session()
    verdicts = [_attempt(session, reasoning=text(i, 1024)) for i in range(3)]
    assert [v.kind for v in verdicts] == [None, None, "stall_nudge"]
    assert verdicts[2].reason == render("stall_nudge", "en", count=3)
    session = Session()
    assert [_attempt(session, reasoning=text(i, 1023)).kind for i in range(5)] == [None] * 5


@shared_data
@pytest.mark.parametrize("reset", ("text", "tool", "short"))
def test_a_normal_attempt_resets_the_stall_count(reset: str) -> None:
    session = Session()
    kinds = [_attempt(session, reasoning=long_reasoning()).kind for _ in range(2)]
    if reset == "text":
        kinds.append(_attempt(session, reasoning=long_reasoning(), text="会议在 10:00。").kind)
    elif reset == "tool":
        kinds.append(_attempt(session, reasoning=long_reasoning(), tool=True).kind)
    else:
        kinds.append(_attempt(session, reasoning="短").kind)
    kinds += [_attempt(session, reasoning=long_reasoning()).kind for _ in range(3)]
    assert kinds == [None, None, None, None, None, "stall_nudge"]


@shared_data
@pytest.mark.parametrize("cap", (0, 1, 3))
def test_stall_nudge_capped_by_stall_nudge_max(cap: int) -> None:
    session = Session(config=SessionConfig(stall_nudge_max=cap))
    nudges = 0
    for _ in range(5):  # five runs of three reasoning-only attempts, each followed by a normal one
        kinds = [_attempt(session, reasoning=long_reasoning()).kind for _ in range(3)]
        nudges += kinds.count("stall_nudge")
        _attempt(session, text="done")
    assert nudges == cap


def test_stall_nudge_off() -> None:
    session = Session(config=SessionConfig(stall_calls=0))
    assert all(_attempt(session, reasoning=long_reasoning()).action == "allow" for _ in range(6))


# ------------------------------------------------------------------ (j) the guard's own errors


def _raise(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("detector exploded")


@shared_data
@pytest.mark.parametrize("is_async", (False, True))
def test_guard_internal_error_turns_into_pass_through(
    monkeypatch: pytest.MonkeyPatch, is_async: bool, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(session_module.Session, "feed", _raise)
    rec = recorded("010", 7)
    with caplog.at_level(logging.ERROR, logger="loopguard"):
        passed, outcome = (arun if is_async else run)(rec.chunks)
    assert len(passed) == len(rec.chunks) and all(a is b for a, b in zip(passed, rec.chunks))
    assert not outcome.stopped and not outcome.should_resume and outcome.detection is None
    assert outcome.guard_error is not None and "RuntimeError" in outcome.guard_error
    assert "detector exploded" in outcome.guard_error
    assert any("disabled" in r.getMessage() for r in caplog.records)


def test_guard_internal_error_in_apply_is_contained(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(StreamGuard, "close_open_calls", _raise)
    chunks = [
        chat_chunk({"content": "Hello. "}),
        chat_chunk({"tool_calls": [tool_delta(0, "{}", first=True)]}),
        chat_chunk({"tool_calls": [tool_delta(1, "{}", first=True)]}),
        chat_chunk({}, "tool_calls"),
    ]
    passed, outcome = run(chunks)
    assert len(passed) == len(chunks) and not outcome.stopped


def test_guard_internal_error_keeps_the_callers_text(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session_module.Session, "feed", _raise)
    _, outcome = run(normal_chunks() + [chat_chunk({"content": " Bring the slides."})])
    assert outcome.kept_text == "The meeting is at 10:00. Bring the slides."


def test_outcome_finish_reason() -> None:
    _, outcome = run(normal_chunks())
    assert outcome.finish_reason == "stop"


def test_stall_nudge_reaches_the_stream_outcome() -> None:
    """Three reasoning-only streams on one session: the third outcome carries the nudge (seed 003)."""
    session = Session()
    notices = []
    for i in range(3):
        reasoning = "".join(f"step {i}-{k}: the value {k * 7 + i} is checked against the table. " for k in range(25))
        assert len(reasoning) >= 1024
        chunks = [chat_chunk({"reasoning_content": reasoning[j : j + 64]}) for j in range(0, len(reasoning), 64)]
        stream = guard_stream(iter(chunks), session=session)
        for _ in stream:
            pass
        notices.append(stream.outcome.notice)
    assert notices[:2] == [None, None]
    assert notices[2] is not None and (notices[2].action, notices[2].kind) == ("notice", "stall_nudge")
    assert notices[2].reason == render("stall_nudge", "en", count=3)


def test_resume_omits_an_assistant_message_that_would_hold_only_the_marker() -> None:
    outcome = StreamOutcome(
        cut=0,
        channel="text",
        kept_text="〔90 chars of repeated text removed〕",
        marker="〔90 chars of repeated text removed〕",
        removed=90,
        stopped=True,
        should_resume=True,
    )
    request = resume_messages([{"role": "user", "content": "q"}], outcome)
    note = render("resume", "en", channel="answer", channel_zh="回答", count=90)
    assert request.messages == [{"role": "user", "content": "q\n\n" + note}]


# ------------------------------------------------------------------ (k) resume note placement


def reasoning_cut_outcome() -> StreamOutcome:
    _, outcome = run(loop_chunks())
    assert outcome.should_resume and outcome.kept_text == "" and outcome.removed == loop_removed()
    return outcome


@shared_data
def test_resume_note_replaces_an_earlier_note_in_the_user_turn() -> None:
    outcome = reasoning_cut_outcome()
    note = zh_note(loop_removed())
    messages = [{"role": "user", "content": "When is the meeting?"}]
    first = resume_messages(messages, outcome).messages
    assert first == [{"role": "user", "content": "When is the meeting?\n\n" + note}]
    again = resume_messages(first, outcome, config={"language": "en"}).messages
    en_note = render("resume", "en", channel="reasoning", channel_zh="推理", count=loop_removed())
    assert again == [{"role": "user", "content": "When is the meeting?\n\n" + en_note}]  # replaced, not stacked
    assert first == [{"role": "user", "content": "When is the meeting?\n\n" + note}]  # not modified
    assert resume_messages([{"role": "user", "content": ""}], outcome).messages == [{"role": "user", "content": note}]


@shared_data
def test_resume_note_in_list_content_is_a_text_part() -> None:
    outcome = reasoning_cut_outcome()
    note = zh_note(loop_removed())
    image = {"type": "image_url", "image_url": {"url": "https://example.org/room.png"}}
    parts = [{"type": "text", "text": "Which room is this?"}, image]
    messages = [{"role": "user", "content": parts}]
    before = json.loads(json.dumps(messages))
    out = resume_messages(messages, outcome).messages
    assert out == [{"role": "user", "content": [*before[0]["content"], {"type": "text", "text": note}]}]
    assert messages == before and messages[0]["content"] is parts and len(parts) == 2
    twice = resume_messages(out, outcome).messages
    assert twice == out and twice[0]["content"] is not out[0]["content"]


@shared_data
@pytest.mark.parametrize("last", ("tool", "assistant", "none"))
def test_resume_note_is_a_new_user_message_after_a_non_user_turn(last: str) -> None:
    outcome = reasoning_cut_outcome()
    note = zh_note(loop_removed())
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Find the room."}]
    if last == "tool":
        messages += [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "rooms", "arguments": "{}"}}],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "A-101"},
        ]
    elif last == "assistant":
        messages.append({"role": "assistant", "content": "The room is"})
    else:
        messages = []
    before = json.loads(json.dumps(messages))
    out = resume_messages(messages, outcome).messages
    assert out == [*before, {"role": "user", "content": note}]
    assert messages == before


@shared_data
def test_resume_after_an_answer_loop_adds_an_assistant_turn_then_the_note() -> None:
    act = case_acting("001")
    assert act is not None
    _, outcome = run(recorded("001", 7).chunks)
    messages = [{"role": "user", "content": "Explain the index."}]
    out = resume_messages(messages, outcome).messages
    removed = len("".join(recorded("001", 7).pieces[: stop_index(act.checkpoint, 7) + 1])) - act.detection.cut
    note = render("resume", "en", channel="answer", channel_zh="回答", count=removed)
    assert out == [messages[0], {"role": "assistant", "content": outcome.kept_text}, {"role": "user", "content": note}]
    assert [m["role"] for m in out] == ["user", "assistant", "user"]


# ------------------------------------------------------------------ (l) marker language


def _counts(text: str) -> tuple[int, int, int]:
    """(Han, ASCII letters, kana + hangul) counted by Unicode names, independently of messages.py."""
    import unicodedata

    han = latin = other = 0
    for ch in text:
        name = unicodedata.name(ch, "")
        if name.startswith("CJK UNIFIED IDEOGRAPH") or name.startswith("CJK COMPATIBILITY IDEOGRAPH"):
            han += 1
        elif ch.isascii() and ch.isalpha():
            latin += 1
        elif name.startswith(("HIRAGANA", "KATAKANA", "HANGUL")):
            other += 1
    return han, latin, other


@pytest.mark.parametrize(
    ("sample", "expected"),
    [
        ("找到 3 处匹配", "zh"),
        ("3 matches", "en"),
        ("", "en"),
        ("漢字かな", "en"),  # Han 2 = kana 2: Han must outnumber them
        ("漢字漢かな", "zh"),
        ("ab漢字", "en"),  # Han 2 = letters 2
        ("a漢字", "zh"),
        ("会議は水曜日の午後にしましょう。", "en"),  # Japanese: Han 7, kana 8
        ("会議は水曜日の午後です。", "zh"),  # Han 7 > kana 4: the rule counts characters, not languages
        ("회의는 수요일 오후입니다.", "en"),  # Korean
        ("大韓民國 헌법", "zh"),  # Han 4 > hangul 2
    ],
)
def test_pick_language_auto(sample: str, expected: str) -> None:
    han, latin, other = _counts(sample)
    assert (han > latin and han > other) == (expected == "zh")
    assert pick_language("auto", sample) == expected
    assert pick_language("zh", sample) == "zh" and pick_language("en", sample) == "en"


@shared_data
@pytest.mark.parametrize("prefix", ("005", "006", "030", "031"))
def test_japanese_and_korean_cases_are_not_chinese(prefix: str) -> None:
    text = load_case(prefix).text
    han, latin, other = _counts(text[:2000])
    assert not (han > latin and han > other)
    assert pick_language("auto", text) == "en"


@shared_data
@pytest.mark.parametrize("prefix", ("005", "006"))
def test_japanese_and_korean_loops_get_english_markers_and_notes(prefix: str) -> None:
    case = load_case(prefix)
    act = case_acting(prefix)
    assert act is not None  # 006 loops from its first character
    rec = recorded(prefix, 7)
    _, outcome = run(rec.chunks)
    consumed = "".join(rec.pieces[: stop_index(act.checkpoint, 7) + 1])
    removed = len(consumed) - act.detection.cut
    kept = consumed[: act.detection.cut]
    expected = kept + ("\n" if kept and not kept.endswith("\n") else "") + marker_text(case.channel, removed, "en")
    assert (outcome.kept_reasoning if case.channel == "reasoning" else outcome.kept_text) == expected
    channel = "reasoning" if case.channel == "reasoning" else "answer"
    note = render("resume", "en", channel=channel, channel_zh="", count=removed)
    assert note.startswith("[loopguard] Your previous " + channel)
    assert resume_messages([{"role": "user", "content": "q"}], outcome).messages[-1]["content"].endswith(note)


# ------------------------------------------------------------------ (m) calls that named nothing


def test_a_call_fragment_that_names_nothing_is_no_call() -> None:
    chunks = [
        chat_chunk({"role": "assistant", "content": None}),
        chat_chunk({"tool_calls": [{"index": 0, "function": None}]}),
        chat_chunk({"tool_calls": [{"index": 1, "id": "call_x", "function": None}]}),
        chat_chunk({"tool_calls": [{"index": 2, "function": {"name": "ls"}}]}),
        chat_chunk({"tool_calls": [{"index": 3, "function": {"arguments": "{}"}}]}),
        chat_chunk({"tool_calls": [{"index": 4, "type": "function", "function": {"arguments": ""}}]}),
        chat_chunk({}, "tool_calls"),
    ]
    passed, outcome = run(chunks)
    assert len(passed) == len(chunks)
    assert outcome.tool_calls == (
        StreamToolCall(1, "call_x", "", ""),
        StreamToolCall(2, None, "ls", ""),
        StreamToolCall(3, None, "", "{}"),
    )


# ------------------------------------------------------------------ (n) two streams on one session


@shared_data
def test_a_second_stream_on_the_session_orphans_the_first(caplog: pytest.LogCaptureFixture) -> None:
    act = case_acting("010")
    assert act is not None
    session = Session("shared")
    older = StreamGuard(session)
    with caplog.at_level(logging.WARNING, logger="loopguard.stream"):
        newer = StreamGuard(session)
    assert any("another is live" in r.getMessage() for r in caplog.records)
    pieces = split(load_case("010").text, 7)
    # the older one keeps recording, but is not watched: the loop never stops it
    assert [older.reasoning(p) for p in pieces] == [Action.CONTINUE] * len(pieces)
    older.tool_args(0, "{}", id="call_0", name="ls")
    assert older.close_open_calls() is Action.CONTINUE
    old = older.finish()
    assert not old.stopped and not old.should_resume and old.detection is None and old.cut is None
    assert old.kept_reasoning == load_case("010").text
    assert old.tool_calls == (StreamToolCall(0, "call_0", "ls", "{}"),)
    # ... and its end did not end the newer one's attempt: the newer one cuts at the same point
    actions = [newer.reasoning(p) for p in pieces]
    j = stop_index(act.checkpoint, 7)
    assert actions[: j + 1] == [Action.CONTINUE] * j + [Action.STOP_BEFORE]
    new = newer.finish()
    assert new.stopped and new.should_resume and new.detection == act.detection
    assert new.kept_reasoning == expected_kept("".join(pieces[: j + 1]), act.detection.cut, "reasoning")
    assert session.consecutive_rescues == 1


@shared_data
def test_concurrent_streams_on_one_session_keep_the_clean_text_intact() -> None:
    """``asyncio.gather`` of a clean stream and a looping one on one Session: the clean one (started
    first, so orphaned) passes and keeps its text whole and ends first without ending the looping
    one's attempt, which is still cut at its own acting chunk."""
    act = case_acting("010")
    assert act is not None
    clean_text = load_case("026").text[:300]
    clean = [chat_chunk({"reasoning_content": p}) for p in split(clean_text, 7)] + [chat_chunk({}, "stop")]
    looping = recorded("010", 7)
    session = Session()
    order: list[str] = []

    async def consume(chunks: list[Any], name: str) -> tuple[list[Any], StreamOutcome]:
        stream = aguard_stream(_agen(chunks), session=session)
        passed = [c async for c in stream]
        order.append(name)
        return passed, stream.outcome

    async def main() -> list[tuple[list[Any], StreamOutcome]]:
        return list(await asyncio.gather(consume(clean, "clean"), consume(looping.chunks, "loop")))

    (clean_passed, clean_outcome), (loop_passed, loop_outcome) = asyncio.run(main())
    assert order == ["clean", "loop"]
    assert len(clean_passed) == len(clean) and all(a is b for a, b in zip(clean_passed, clean))
    assert clean_outcome.kept_reasoning == clean_text and clean_outcome.kept_text == ""
    assert not clean_outcome.stopped and clean_outcome.detection is None and clean_outcome.finish_reason == "stop"
    j = stop_index(act.checkpoint, 7)
    assert len(loop_passed) == Recorded.HEAD + j
    assert loop_outcome.stopped and loop_outcome.detection == act.detection
    assert loop_outcome.kept_reasoning == expected_kept(
        "".join(looping.pieces[: j + 1]), act.detection.cut, "reasoning"
    )


# ------------------------------------------------------------------ (o) construction and context managers


def test_aguard_stream_needs_an_async_iterable() -> None:
    session = Session()
    upstreams: list[Any] = [[chat_chunk({"content": "x"})], iter([]), FakeStream([]), None]
    for upstream in upstreams:
        with pytest.raises(TypeError, match="async iterable"):
            aguard_stream(upstream, session=session)
    assert session.attempt == 0  # raised before any attempt started


class HostError(Exception):
    pass


def _cancel_at_stop_after(mode_session: Session) -> tuple[ToolStream, dict[str, Any]]:
    """A session whose next loop is its ③ second strike (``cancel``), in cut mode with
    ``on_rescue_cap="raise"``, and a stream whose cut waits for a call (STOP_AFTER on the finish)."""
    config = {"mode": "cut", "on_rescue_cap": "raise"}
    _, first = run(loop_chunks(), session=mode_session, config={"mode": "cut"})
    assert first.stopped and not first.cancelled
    return tool_stream(after="finish"), config


@shared_data
def test_the_hosts_exception_in_a_with_block_is_never_replaced() -> None:
    session = Session()
    ts, config = _cancel_at_stop_after(session)
    with pytest.raises(HostError):
        with guard_stream(iter(ts.chunks), session=session, config=config) as stream:
            for chunk in stream:
                if chunk is ts.chunks[-1]:  # the chunk the guard stops after
                    raise HostError("the host failed on this chunk")
    assert stream.outcome.stopped and stream.outcome.cancelled
    # control: without the host's error the same close raises LoopGuardCancelled
    session = Session()
    ts, config = _cancel_at_stop_after(session)
    with pytest.raises(LoopGuardCancelled):
        with guard_stream(iter(ts.chunks), session=session, config=config) as stream:
            for chunk in stream:
                if chunk is ts.chunks[-1]:
                    break


@shared_data
def test_the_hosts_exception_in_an_async_with_block_is_never_replaced() -> None:
    async def main(fail: bool) -> StreamOutcome:
        session = Session()
        ts, config = _cancel_at_stop_after(session)
        async with aguard_stream(_agen(ts.chunks), session=session, config=config) as stream:
            async for chunk in stream:
                if chunk is ts.chunks[-1]:
                    if fail:
                        raise HostError("the host failed on this chunk")
                    break
        return stream.outcome

    with pytest.raises(HostError):
        asyncio.run(main(True))
    with pytest.raises(LoopGuardCancelled) as info:
        asyncio.run(main(False))
    assert info.value.outcome.cancelled and info.value.outcome.stopped


def test_host_exceptions_pass_a_with_block_unchanged_without_a_cancel() -> None:
    error = HostError("boom")
    with pytest.raises(HostError) as info:
        with guard_stream(iter(normal_chunks())) as stream:
            for _ in stream:
                raise error
    assert info.value is error and not stream.outcome.stopped


# ------------------------------------------------------------------ (p) StreamConfig


def test_stream_config_key_in_two_spellings_is_an_error() -> None:
    with pytest.raises(ConfigError) as info:
        StreamConfig.from_mapping({"retryTemperature": 0.5, "retry_temperature": 0.5})
    assert info.value.key == "retry_temperature"
    with pytest.raises(ConfigError):
        StreamConfig.from_mapping({"max_consecutive_rescues": 2, "maxConsecutiveRescues": 3})
    assert StreamConfig.from_mapping({"retryTemperature": 0.5, "maxConsecutiveRescues": 2}) == StreamConfig(
        retry_temperature=0.5, max_consecutive_rescues=2
    )


@pytest.mark.parametrize("effort", ("  ", " low", "low ", "", "\tlow", 5))
def test_stream_config_retry_reasoning_effort_must_be_a_word(effort: Any) -> None:
    with pytest.raises(ConfigError) as info:
        StreamConfig(retry_reasoning_effort=effort)
    assert info.value.key == "retry_reasoning_effort"
    with pytest.raises(ConfigError):
        StreamConfig.from_mapping({"retryReasoningEffort": effort})


@pytest.mark.parametrize("effort", ("low", "medium", "high", None))
def test_stream_config_retry_reasoning_effort_accepted(effort: str | None) -> None:
    assert StreamConfig(retry_reasoning_effort=effort).retry_settings() == (
        {"temperature": 1.0, "reasoning_effort": effort} if effort else {"temperature": 1.0}
    )
