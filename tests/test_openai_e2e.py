"""End to end: the real ``openai`` client against a local OpenAI-compatible server (spec §3; seed 003).

A stdlib ``ThreadingHTTPServer`` on ``127.0.0.1`` (port 0) serves
``POST /v1/chat/completions`` with ``stream=true`` as Server-Sent Events, one chunk per
``data:`` line, flushed, with a short sleep between chunks:

* a request without a ``[loopguard]`` user message streams a dev case's looping reasoning
  (``choices[0].delta.reasoning_content``, DeepSeek style) and records how many chunks it
  managed to send before the client went away (``BrokenPipeError`` / ``ConnectionResetError``);
* a request with one (the resume: after a reasoning loop the corrective note is added to the last
  user message, so roles keep alternating) is checked inside the server — no 40-code-point window
  of the case's looping part in any message, the question then the note in the last message —
  and answers "The meeting is at 10:00." with ``finish_reason="stop"`` and ``data: [DONE]``;
* with ``reject_reasoning_effort`` set, a request carrying ``reasoning_effort`` is refused with
  HTTP 400, as servers whose model takes no such parameter do.

The client is ``openai.OpenAI`` / ``openai.AsyncOpenAI`` with ``base_url`` pointing at it
(research/ecosystem.md §1.1, §1.5: ``Stream.close()`` closing the HTTP response is the only
signal a server gets to stop generating).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from loopguard import Session, TextLoopDetector
from loopguard.integrations.openai import acreate_with_rescue, aguard_stream, create_with_rescue, guard_stream
from loopguard.messages import render

openai = pytest.importorskip("openai")

from conftest import CASES, shared_data  # noqa: E402

pytestmark = shared_data

DELTA = 8  # code points per streamed chunk
DELAY = 0.002  # seconds between chunks: the client has time to cut mid-stream
ANSWER = "The meeting is at 10:00."
QUESTION = [
    {"role": "system", "content": "You schedule meetings."},
    {"role": "user", "content": "Li can only do afternoons; Wang only mornings. When is the meeting?"},
]


@dataclass(frozen=True)
class Case:
    text: str
    loop_start: int


def load_case(prefix: str) -> Case:
    index = json.loads((CASES / "index.json").read_text("utf-8"))
    entry = next(e for e in index if e["file"].startswith(prefix + "_"))
    return Case((CASES / entry["file"]).read_text("utf-8"), int(entry["loop_start"]))


def windows(text: str, width: int) -> set[str]:
    return {text[i : i + width] for i in range(max(0, len(text) - width + 1))}


@dataclass
class Record:
    """What the server saw of one request."""

    body: dict[str, Any]
    resume: bool
    status: int = 200
    total: int = 0  # chunks it meant to send
    sent: int = 0  # chunks written before the end or the disconnect
    disconnected: bool = False
    disconnected_at: float | None = None
    problems: list[str] = field(default_factory=list)  # the resume checks that failed
    done: threading.Event = field(default_factory=threading.Event)


def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-e2e",
        "object": "chat.completion.chunk",
        "created": 1767225600,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
    }


class LoopServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, case: Case) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.case = case
        self.loop_windows = windows(case.text[case.loop_start :], 40)
        self.records: list[Record] = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.reject_reasoning_effort = False

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def loop_chunks(self) -> list[dict[str, Any]]:
        text = self.case.text
        out = [chunk({"role": "assistant", "content": None, "reasoning_content": ""})]
        out += [chunk({"content": None, "reasoning_content": text[i : i + DELTA]}) for i in range(0, len(text), DELTA)]
        out.append(chunk({"content": "", "reasoning_content": None}, "stop"))
        return out

    @staticmethod
    def answer_chunks() -> list[dict[str, Any]]:
        out = [
            chunk({"role": "assistant", "content": None, "reasoning_content": "Afternoon fails for Wang."}),
            chunk({"content": None, "reasoning_content": " Morning then."}),
        ]
        out += [chunk({"content": part}) for part in ("The meeting", " is at", " 10:00.")]
        out.append(chunk({}, "stop"))
        return out

    def check_resume(self, body: dict[str, Any]) -> list[str]:
        problems = []
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return ["no messages"]
        for i, message in enumerate(messages):
            content = message.get("content")
            text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
            if any(w in text for w in self.loop_windows):
                problems.append(f"message {i} ({message.get('role')}) carries loop text")
            if "reasoning_content" in message:
                problems.append(f"message {i} replays reasoning")
        if json.dumps(messages, ensure_ascii=False).count("[loopguard]") != 1:
            problems.append("not exactly one corrective note")
        last = messages[-1]
        question = QUESTION[-1]["content"] + "\n\n[loopguard] "
        if last.get("role") != "user" or not str(last.get("content", "")).startswith(question):
            problems.append("the corrective note is not added to the last user message")
        if messages[:-1] != QUESTION[:-1] or len(messages) != len(QUESTION):
            problems.append("the original messages were not kept")
        roles = [m.get("role") for m in messages]
        if any(a == b for a, b in zip(roles, roles[1:])):
            problems.append("roles do not alternate")
        return problems


class Handler(BaseHTTPRequestHandler):
    server: LoopServer

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        if self.path != "/v1/chat/completions" or body.get("stream") is not True:
            payload = b'{"error": {"message": "not found", "type": "invalid_request_error"}}'
            self.send_response(404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            return
        messages = body.get("messages") or []
        resume = any(isinstance(m, dict) and "[loopguard]" in str(m.get("content", "")) for m in messages)
        record = Record(body, resume)
        with self.server.lock:
            self.server.records.append(record)
        if self.server.reject_reasoning_effort and "reasoning_effort" in body:
            record.status = 400
            record.problems = self.server.check_resume(body) if resume else ["refused a first request"]
            payload = json.dumps(
                {
                    "error": {
                        "message": "Unrecognized request argument supplied: reasoning_effort",
                        "type": "invalid_request_error",
                        "param": "reasoning_effort",
                        "code": None,
                    }
                }
            ).encode()
            self.send_response(400)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            record.done.set()
            return
        try:
            if resume:
                record.problems = self.server.check_resume(body)
                try:
                    assert not record.problems, record.problems  # the server's own verdict
                except AssertionError:
                    pass  # recorded; the test asserts on record.problems
                self._stream(record, self.server.answer_chunks())
            else:
                self._stream(record, self.server.loop_chunks())
        finally:
            record.done.set()

    def _stream(self, record: Record, chunks: list[dict[str, Any]]) -> None:
        record.total = len(chunks)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        try:
            for item in chunks:
                if self.server.stopping.is_set():
                    return
                self.wfile.write(b"data: " + json.dumps(item, ensure_ascii=False).encode() + b"\n\n")
                self.wfile.flush()
                record.sent += 1
                time.sleep(DELAY)
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            record.disconnected = True
            record.disconnected_at = time.monotonic()
            self.close_connection = True


@pytest.fixture
def server() -> Iterator[LoopServer]:
    srv = LoopServer(load_case("010"))
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.stopping.set()
        srv.shutdown()
        srv.server_close()
        thread.join(5)


def client_kwargs(srv: LoopServer) -> dict[str, Any]:
    return {"base_url": f"http://127.0.0.1:{srv.port}/v1", "api_key": "test", "max_retries": 0, "timeout": 10.0}


def expected_cut(srv: LoopServer) -> tuple[int, int, str]:
    """(acting checkpoint, cut, kept reasoning) of case 010, from a bare detector: a C loop acts at its first hit."""
    detection = TextLoopDetector().feed(srv.case.text, "reasoning")[0]
    assert detection.kind == "cycle"
    checkpoint, cut = detection.position, detection.cut
    assert checkpoint % DELTA == 0  # the acting chunk ends exactly at the checkpoint
    removed = checkpoint - cut
    kept = srv.case.text[:cut] + "\n" + f"〔已删除 {removed} 字符的重复推理〕"
    return checkpoint, cut, kept


def assert_cut_upstream(srv: LoopServer, record: Record, cut_at: float, checkpoint: int) -> None:
    assert record.done.wait(5), "the server never noticed the client going away"
    assert record.disconnected and not record.resume
    assert record.sent < record.total  # it could not send the whole loop
    assert record.sent >= 1 + checkpoint // DELTA  # it did send up to the acting chunk
    assert record.disconnected_at is not None and record.disconnected_at - cut_at < 2.0


# ------------------------------------------------------------------ (a) guard_stream cuts the HTTP stream


def test_guard_stream_cuts_the_http_stream(server: LoopServer) -> None:
    checkpoint, cut, kept = expected_cut(server)
    with openai.OpenAI(**client_kwargs(server)) as client:
        stream = guard_stream(client.chat.completions.create(model="m", messages=QUESTION, stream=True))
        received = [c for c in stream]
        cut_at = time.monotonic()
    outcome = stream.outcome
    assert outcome.stopped and outcome.should_resume and outcome.channel == "reasoning"
    assert outcome.detection is not None and outcome.detection.kind == "cycle" and outcome.cut == cut
    assert outcome.kept_reasoning == kept and outcome.kept_text == ""
    assert len(received) == checkpoint // DELTA  # the role chunk + every delta before the acting one
    assert all(isinstance(c, openai.types.chat.ChatCompletionChunk) for c in received)
    assert_cut_upstream(server, server.records[0], cut_at, checkpoint)
    assert len(server.records) == 1


def test_aguard_stream_cuts_the_http_stream(server: LoopServer) -> None:
    checkpoint, _, kept = expected_cut(server)

    async def main() -> tuple[Any, int, float]:
        async with openai.AsyncOpenAI(**client_kwargs(server)) as client:
            upstream = await client.chat.completions.create(model="m", messages=QUESTION, stream=True)
            stream = aguard_stream(upstream)
            n = 0
            async for _ in stream:
                n += 1
            return stream.outcome, n, time.monotonic()

    outcome, n, cut_at = asyncio.run(main())
    assert outcome.stopped and outcome.kept_reasoning == kept and n == checkpoint // DELTA
    assert_cut_upstream(server, server.records[0], cut_at, checkpoint)


# ------------------------------------------------------------------ (b) create_with_rescue: cut, prune, resume


def resumed_messages(srv: LoopServer) -> list[dict[str, Any]]:
    """The resume request's messages: the question with the Chinese corrective note added."""
    checkpoint, cut, _ = expected_cut(srv)
    note = render("resume", "zh", channel="reasoning", channel_zh="推理", count=checkpoint - cut)
    return [QUESTION[0], {"role": "user", "content": QUESTION[1]["content"] + "\n\n" + note}]


def assert_rescued(server: LoopServer, result: Any) -> None:
    assert result.text == ANSWER
    assert result.reasoning == "Afternoon fails for Wang. Morning then."
    assert result.rescues == 1 and not result.cancelled and len(result.outcomes) == 2
    assert result.outcomes[0].stopped and not result.outcomes[1].stopped
    assert len(server.records) == 2
    first, second = server.records
    assert not first.resume and second.resume
    assert first.done.wait(5) and first.disconnected and first.sent < first.total
    assert second.done.wait(5) and not second.disconnected and second.sent == second.total
    assert second.problems == []  # the server's own check: no loop text, the corrective message last
    assert "temperature" not in first.body and "reasoning_effort" not in first.body
    assert second.body["temperature"] == 1.0 and second.body["reasoning_effort"] == "low"
    assert first.body["model"] == second.body["model"] == "m"
    assert first.body["messages"] == QUESTION
    assert second.body["messages"] == result.messages == resumed_messages(server)
    assert "重复" in result.messages[-1]["content"]  # the kept reasoning is Chinese: so is the note


def test_create_with_rescue(server: LoopServer) -> None:
    session = Session("e2e")
    with openai.OpenAI(**client_kwargs(server)) as client:
        result = create_with_rescue(client, model="m", messages=list(QUESTION), session=session)
    assert_rescued(server, result)
    assert session.consecutive_rescues == 0  # the resume completed normally
    assert session.retry_requests_left == 0


def test_acreate_with_rescue(server: LoopServer) -> None:
    async def main() -> Any:
        async with openai.AsyncOpenAI(**client_kwargs(server)) as client:
            return await acreate_with_rescue(client, model="m", messages=list(QUESTION))

    assert_rescued(server, asyncio.run(main()))


# ------------------------------------------------------------------ (c) retry settings the server refuses


@pytest.mark.parametrize("is_async", (False, True), ids=("sync", "async"))
def test_retry_settings_refused_with_400_are_dropped(server: LoopServer, is_async: bool) -> None:
    """The server refuses ``reasoning_effort`` with HTTP 400 (``openai.BadRequestError``): the
    resume request is sent once more without the retry settings and the rescue completes."""
    server.reject_reasoning_effort = True
    session = Session("e2e-400")

    async def amain() -> Any:
        async with openai.AsyncOpenAI(**client_kwargs(server)) as client:
            return await acreate_with_rescue(client, model="m", messages=list(QUESTION), session=session)

    if is_async:
        result = asyncio.run(amain())
    else:
        with openai.OpenAI(**client_kwargs(server)) as client:
            result = create_with_rescue(client, model="m", messages=list(QUESTION), session=session)
    assert result.text == ANSWER and result.reasoning == "Afternoon fails for Wang. Morning then."
    assert result.rescues == 1 and not result.cancelled and len(result.outcomes) == 2
    assert len(server.records) == 3
    first, refused, resent = server.records
    assert [r.status for r in server.records] == [200, 400, 200]
    assert first.done.wait(5) and first.disconnected and not first.resume
    assert refused.resume and refused.body["reasoning_effort"] == "low" and refused.body["temperature"] == 1.0
    assert resent.done.wait(5) and resent.resume and not resent.disconnected and resent.sent == resent.total
    assert "reasoning_effort" not in resent.body and "temperature" not in resent.body
    assert refused.body["messages"] == resent.body["messages"] == result.messages == resumed_messages(server)
    assert refused.problems == [] and resent.problems == []
    assert session.retry_requests_left == 0 and session.consecutive_rescues == 0
