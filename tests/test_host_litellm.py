"""LiteLLM proxy guardrail (issue 19 item 1): ``loopguard.integrations.litellm.LoopGuardrail``.

End to end: a real ``litellm`` proxy process (``litellm --config``, a free port, the README's
one-line shim beside a ``config.yaml`` in ``tmp_path``) in front of a stdlib
``ThreadingHTTPServer`` speaking the OpenAI Chat Completions API (SSE streams: one looping, one
clean; every request body recorded), driven by the real ``openai`` client.  The expected values
come from loopguard run alone on the same input: ``wrap_tool`` over a bare ``ToolGuard`` for the
tool calls, ``guard_stream`` over the same chunks for the stream.

In process, with LiteLLM's own chunk types: the dispatch facts (the iterator hook in the class's
own ``__dict__``, an async generator), the reject mode, the session key, fail-open and the
canary (tool arguments never in a log or an error).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from host_support import require_host

# LiteLLM fetches its model cost map from the network at import unless told to use its own copy
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
host = require_host("litellm", "litellm")

from loopguard import ToolGuard, wrap_tool  # noqa: E402
from loopguard.integrations import litellm as lg  # noqa: E402
from loopguard.integrations.openai import guard_stream  # noqa: E402

openai = pytest.importorskip("openai")

pytestmark = [
    pytest.mark.hosts,
    # LiteLLM's own types warn when pydantic builds them (not loopguard's)
    pytest.mark.filterwarnings("ignore:.*ReadOnly.*:UserWarning"),
]

ROOT = Path(__file__).resolve().parents[1]
CANARY = "sk-canary-7f3a9c2e1b4d8f6a0c5e"
GREP = {"pattern": "TODO", "path": "src"}
GREP_RESULT = "src/app.py:12:    # TODO: handle the empty cart"
LOOP_DELTA = "Wait, let me recheck the sum of the cart. "
# the loop in two alternating pieces: LiteLLM itself fails a stream whose chunks are all identical
LOOP_PIECES = ("Wait, let me recheck ", "the sum of the cart. ")
CLEAN = [
    f"Step {i}: item {i * 7 % 13} costs {i * 3 + 1} euros, so the running total is {i * (i + 5)}. " for i in range(30)
]
LOOP_CHUNKS = 400


def _texts(kind: str) -> list[str]:
    return [LOOP_PIECES[i % 2] for i in range(LOOP_CHUNKS)] if kind == "loop" else CLEAN


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "fake",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _stream_chunks(kind: str) -> list[dict[str, Any]]:
    """The upstream's chunks: a role chunk, the text deltas, the finish chunk."""
    texts = _texts(kind)
    return (
        [_chunk({"role": "assistant", "content": ""})] + [_chunk({"content": t}) for t in texts] + [_chunk({}, "stop")]
    )


def _response_events(kind: str) -> list[dict[str, Any]]:
    """The upstream's OpenAI Responses stream: one message item, one ``output_text`` part, the
    text deltas, the ``…done`` events, ``response.completed``."""
    texts, mid = _texts(kind), "msg_fake"
    base = {"id": "resp_fake", "object": "response", "created_at": 1_700_000_000, "model": "fake", "output": [],
            "status": "in_progress"}  # fmt: skip
    at = {"item_id": mid, "output_index": 0, "content_index": 0}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": base},
        {"type": "response.in_progress", "response": base},
        {"type": "response.output_item.added", "output_index": 0,
         "item": {"id": mid, "type": "message", "role": "assistant", "status": "in_progress", "content": []}},
        {"type": "response.content_part.added", **at, "part": {"type": "output_text", "text": "", "annotations": []}},
    ]  # fmt: skip
    events += [{"type": "response.output_text.delta", **at, "delta": t} for t in texts]
    part = {"type": "output_text", "text": "".join(texts), "annotations": []}
    item = {"id": mid, "type": "message", "role": "assistant", "status": "completed", "content": [part]}
    usage = {"input_tokens": 5, "output_tokens": len(texts), "total_tokens": 5 + len(texts)}
    events += [
        {"type": "response.output_text.done", **at, "text": part["text"]},
        {"type": "response.content_part.done", **at, "part": part},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": {**base, "status": "completed", "output": [item], "usage": usage}},
    ]
    return [{**e, "sequence_number": i} for i, e in enumerate(events)]


# ------------------------------------------------------------------ the fake upstream


@dataclass
class Upstream:
    url: str
    bodies: list[dict[str, Any]] = field(default_factory=list)
    sent: dict[str, int] = field(default_factory=dict)  # stream kind -> chunks written before the end
    broken: dict[str, bool] = field(default_factory=dict)  # stream kind -> the proxy closed it early


def _handler(state: Upstream) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.bodies.append(body)
            if self.path.endswith("/responses"):  # LiteLLM's route for openai/ models on /v1/messages and /v1/responses
                kind = "loop" if "loop" in json.dumps(body.get("input")) else "clean"
                frames = [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in _response_events(kind)]
                self._stream("responses:" + kind, frames)
                return
            last = next((m for m in reversed(body["messages"]) if m["role"] == "user"), {"content": ""})
            kind = "loop" if "loop" in str(last["content"]) else "clean"
            if body.get("stream"):
                self._stream(kind, [f"data: {json.dumps(c)}\n\n" for c in _stream_chunks(kind)] + ["data: [DONE]\n\n"])
            else:
                self._json({"id": "c", "object": "chat.completion", "created": 1, "model": "fake",
                            "choices": [{"index": 0, "finish_reason": "stop",
                                         "message": {"role": "assistant", "content": "ok"}}],
                            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})  # fmt: skip

        def _json(self, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _stream(self, kind: str, frames: list[str]) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            state.sent[kind], state.broken[kind] = 0, False
            try:
                for frame in frames:
                    self.wfile.write(frame.encode())
                    self.wfile.flush()
                    state.sent[kind] += 1
                    time.sleep(0.01)
            except (BrokenPipeError, ConnectionResetError):
                state.broken[kind] = True
            self.close_connection = True

    return Handler


@pytest.fixture(scope="module")
def upstream() -> Iterator[Upstream]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    state = Upstream(f"http://127.0.0.1:{server.server_address[1]}/v1")
    server.RequestHandlerClass = _handler(state)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state
    server.shutdown()
    server.server_close()


# ------------------------------------------------------------------------ the proxy

FAULTS = '''\
"""Test only: loopguard's readers raise while the flag file exists (a guard bug inside the proxy);
loopguard's log (INFO and up) goes to the proxy's stderr, as an operator would configure it."""
import logging
import os

from litellm.integrations.custom_logger import CustomLogger

from loopguard.integrations import litellm as lg

FLAG = os.environ["LOOPGUARD_TEST_FAULT_FLAG"]
_chat, _replay = lg.apply_litellm_chunk, lg.replay_tool_calls


def _fault(real):
    def call(*args, **kwargs):
        if os.path.exists(FLAG):
            raise RuntimeError("injected loopguard fault")
        return real(*args, **kwargs)
    return call


lg.apply_litellm_chunk, lg.replay_tool_calls = _fault(_chat), _fault(_replay)
_log = logging.getLogger("loopguard")
_log.setLevel(logging.INFO)
_log.addHandler(logging.StreamHandler())
handler = CustomLogger()
'''


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def readme_section() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return readme.split("### LiteLLM proxy", 1)[1].split("\n#", 1)[0]


@dataclass
class Proxy:
    url: str
    log: Path
    flag: Path
    key: str


def start_proxy(
    tmp: Path,
    upstream_url: str,
    *,
    faults: bool = True,
    options: dict[str, str] | None = None,
    guard: bool = True,
    chat_bridge: bool = False,
) -> tuple[Any, Proxy]:
    """``litellm --config`` in ``tmp`` (the README's shim and config, pointed at ``upstream_url``;
    ``guard=False``: without the ``guardrails`` block; ``chat_bridge=True``: ``/v1/messages`` and
    ``/v1/responses`` reach the upstream's ``/chat/completions``, LiteLLM translating); returns the process and where it listens,
    once it answers ``/health/liveliness``."""
    section = readme_section()
    shim = re.search(r"`(from loopguard\.integrations\.litellm import LoopGuardrail[^`]*)`", section)
    config = re.search(r"```yaml\n(.*?)```", section, flags=re.S)
    assert shim is not None and config is not None
    (tmp / "loopguard_litellm.py").write_text(shim.group(1) + "\n")
    text = config.group(1).replace("http://localhost:8000/v1", upstream_url)
    if not guard:
        text = text.split("guardrails:", 1)[0]
    if chat_bridge:
        text = text.replace("api_key: sk-upstream}", "api_key: sk-upstream, use_chat_completions_api: true}")
        assert "use_chat_completions_api" in text
    for key, value in (options or {}).items():  # the README's keys, set to other values
        text, n = re.subn(rf"(\n\s+{key}:) \w+", rf"\1 {value}", text)
        assert n == 1, key
    if faults:
        (tmp / "loopguard_faults.py").write_text(FAULTS)
        text += "litellm_settings:\n  callbacks: loopguard_faults.handler\n"
    (tmp / "config.yaml").write_text(text)
    port, key = _free_port(), "sk-test-" + "0123456789abcdef" * 2
    log = tmp / "proxy.log"
    env = dict(
        os.environ,
        LITELLM_MASTER_KEY=key,
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        LOOPGUARD_TEST_FAULT_FLAG=str(tmp / "fault"),
    )
    env.pop("LOOPGUARD_REQUIRE_HOSTS", None)
    if chat_bridge:
        env["LITELLM_USE_CHAT_COMPLETIONS_URL_FOR_ANTHROPIC_MESSAGES"] = "1"
    litellm_cli = Path(sys.executable).parent / "litellm"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(litellm_cli), "--config", str(tmp / "config.yaml"), "--host", "127.0.0.1", "--port", str(port)],
            cwd=tmp, env=env, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError("the litellm proxy exited:\n" + log.read_text(errors="replace")[-4000:])
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            break
        time.sleep(0.5)
    else:
        proc.kill()
        raise AssertionError("the litellm proxy did not start:\n" + log.read_text(errors="replace")[-4000:])
    return proc, Proxy(url, log, tmp / "fault", key)


@contextlib.contextmanager
def running_proxy(tmp: Path, upstream_url: str, **kwargs: Any) -> Iterator[Proxy]:
    proc, where = start_proxy(tmp, upstream_url, **kwargs)
    client = openai.OpenAI(base_url=where.url + "/v1", api_key=where.key, max_retries=0, timeout=60)
    for _ in range(60):  # the port opens before the app is ready
        try:
            client.models.list()
            break
        except openai.APIConnectionError:
            time.sleep(0.5)
    try:
        yield where
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="module")
def proxy(upstream: Upstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    with running_proxy(tmp_path_factory.mktemp("litellm"), upstream.url) as where:
        yield where


@pytest.fixture(scope="module")
def bridge_proxy(upstream: Upstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    """The guarded proxy with LiteLLM's chat bridge: ``/v1/messages`` and ``/v1/responses`` go to
    the upstream's ``/chat/completions``."""
    with running_proxy(tmp_path_factory.mktemp("litellm-bridge"), upstream.url, chat_bridge=True) as where:
        yield where


@pytest.fixture(params=["responses", "chat"])
def routed(request: pytest.FixtureRequest) -> tuple[Proxy, str, int | None]:
    """A guarded proxy and what its ``/v1/messages`` / ``/v1/responses`` reach upstream: the
    Responses API (LiteLLM 1.108's default for ``openai/`` models) or, through LiteLLM's chat
    bridge, ``/chat/completions``; with the upstream stream's key and length.  The length is
    ``None`` on the bridge: there LiteLLM 1.108 cannot close the upstream (its bridge iterators,
    ``LiteLLMCompletionStreamingIterator`` and the Anthropic adapter's ``AnthropicStreamWrapper``,
    have no ``aclose``, and the router's fallback wrapper closes a source only when it has one),
    so the cut ends the client's stream while LiteLLM drains the upstream."""
    if request.param == "responses":
        return request.getfixturevalue("proxy"), "responses:loop", len(_response_events("loop"))
    return request.getfixturevalue("bridge_proxy"), "loop", None


@pytest.fixture(scope="module")
def bare_proxy(upstream: Upstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    """The same proxy without the guardrail: what a clean stream must look like."""
    with running_proxy(tmp_path_factory.mktemp("litellm-bare"), upstream.url, faults=False, guard=False) as where:
        yield where


def _client(proxy: Proxy) -> Any:
    return openai.OpenAI(base_url=proxy.url + "/v1", api_key=proxy.key, max_retries=0, timeout=60)


def _collect(proxy: Proxy, prompt: str) -> list[Any]:
    stream = _client(proxy).chat.completions.create(
        model="fake", stream=True, messages=[{"role": "user", "content": prompt}]
    )
    return list(stream)


def _contents(chunks: list[Any]) -> list[str]:
    return [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]


def _bare_stream(kind: str) -> tuple[list[str], Any]:
    """loopguard alone on the same chunks: the contents it passes and its outcome."""
    stream = guard_stream(iter(_stream_chunks(kind)))
    passed = [c["choices"][0]["delta"].get("content") for c in stream]
    return [p for p in passed if p], stream.outcome


# ------------------------------------------------------------------- end to end


def test_a_looping_stream_is_cut_where_the_bare_guard_cuts_it(proxy: Proxy, upstream: Upstream) -> None:
    chunks = _collect(proxy, "loop please")
    expected, outcome = _bare_stream("loop")
    assert outcome.stopped and outcome.channel == "text"
    *body, tail = chunks
    assert _contents(body) == expected  # the same chunks passed as loopguard alone passes
    assert len(expected) < LOOP_CHUNKS
    assert tail.choices[0].finish_reason == "stop"  # documented: "stop" unless calls completed
    assert tail.choices[0].delta.content == "\n" + outcome.marker
    info = tail.model_extra["loopguard"]
    assert info["stopped"] is True and info["kind"] == outcome.detection.kind and info["channel"] == "text"
    assert info["kept_text"] == outcome.kept_text and info["removed"] == outcome.removed
    assert info["should_resume"] is True and info["action"] == "cut"
    assert tail.id == body[-1].id
    # the upstream was closed: it could not write its whole stream
    deadline = time.monotonic() + 10
    while not upstream.broken.get("loop") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert upstream.broken["loop"] is True
    assert upstream.sent["loop"] < len(_stream_chunks("loop"))


def test_a_clean_stream_passes_unchanged(proxy: Proxy) -> None:
    chunks = _collect(proxy, "clean please")
    expected, outcome = _bare_stream("clean")
    assert not outcome.stopped
    assert _contents(chunks) == CLEAN == expected
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == ["stop"]
    assert all("loopguard" not in (c.model_extra or {}) for c in chunks)


# ------------------------------------------------- /v1/messages and /v1/responses


def _messages_stream(proxy: Proxy, prompt: str) -> list[tuple[str | None, Any]]:
    """``POST /v1/messages`` (stream) with plain httpx: the SSE frames as ``(event, data)``."""
    import httpx

    body = {"model": "fake", "max_tokens": 1000, "stream": True, "messages": [{"role": "user", "content": prompt}]}
    headers = {"x-api-key": proxy.key, "anthropic-version": "2023-06-01"}
    with httpx.stream("POST", proxy.url + "/v1/messages", json=body, headers=headers, timeout=60) as reply:
        assert reply.status_code == 200, reply.read()
        raw = "".join(reply.iter_text())
    frames = []
    for block in re.split(r"\r\n\r\n|\n\n", raw):
        lines = block.splitlines()
        event = next((x[6:].strip() for x in lines if x.startswith("event:")), None)
        data = "\n".join(x[5:].strip() for x in lines if x.startswith("data:"))
        if data:
            frames.append((event, json.loads(data)))
    return frames


def _anthropic_texts(frames: list[tuple[str | None, Any]]) -> list[str]:
    return [d["delta"]["text"] for _, d in frames if d.get("type") == "content_block_delta"]


def _anthropic_events(texts: list[str]) -> list[dict[str, Any]]:
    """The Anthropic events LiteLLM makes of the upstream's text, for the bare guard."""
    start = {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
    deltas = [{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}} for t in texts]
    return [{"type": "message_start", "message": {}}, start, *deltas, {"type": "content_block_stop", "index": 0},
            {"type": "message_delta", "delta": {"stop_reason": "end_turn"}}, {"type": "message_stop"}]  # fmt: skip


def _bare(kind: str, route: str) -> tuple[list[str], Any]:
    """loopguard alone over the same text, in the route's event shape: the text it passes and its outcome."""
    from loopguard.integrations import anthropic, responses

    if route == "messages":
        stream = anthropic.guard_stream(iter(_anthropic_events(_texts(kind))))
        passed = [e["delta"]["text"] for e in stream if e["type"] == "content_block_delta"]
    else:
        stream = responses.guard_response_stream(iter(_response_events(kind)))
        passed = [e["delta"] for e in stream if e["type"] == "response.output_text.delta"]
    return passed, stream.outcome


def _upstream_closed(upstream: Upstream, kind: str, total: int) -> None:
    deadline = time.monotonic() + 10
    while not upstream.broken.get(kind) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert upstream.broken[kind] is True
    assert upstream.sent[kind] < total


def test_messages_a_looping_stream_is_cut_where_the_bare_guard_cuts_it(
    routed: tuple[Proxy, str, int | None], upstream: Upstream
) -> None:
    proxy, key, total = routed
    frames = _messages_stream(proxy, "loop please")
    expected, outcome = _bare("loop", "messages")
    assert outcome.stopped and outcome.channel == "text" and len(expected) < LOOP_CHUNKS
    types = [d["type"] for _, d in frames]
    assert all(event == d["type"] for event, d in frames)  # every frame has its event: line
    # the text deltas passed, then the ending: the marker line, the block closed, message_delta, message_stop
    *texts, marker = _anthropic_texts(frames)
    assert texts == expected
    assert marker == "\n" + outcome.marker
    assert types[:2] == ["message_start", "content_block_start"]
    assert types[-4:] == ["content_block_delta", "content_block_stop", "message_delta", "message_stop"]
    assert types.count("message_delta") == types.count("message_stop") == types.count("content_block_stop") == 1
    delta = frames[-2][1]
    assert delta["delta"]["stop_reason"] == "end_turn"
    info = delta["loopguard"]
    assert info["stopped"] is True and info["kind"] == outcome.detection.kind and info["channel"] == "text"
    assert info["kept_text"] == outcome.kept_text and info["removed"] == outcome.removed
    if total is not None:
        _upstream_closed(upstream, key, total)


def _without_ids(frames: list[tuple[str | None, Any]]) -> list[tuple[str | None, Any]]:
    """The frames with the message id (a fresh uuid per request) blanked."""
    out = []
    for event, data in frames:
        if data.get("type") == "message_start":
            data = {**data, "message": {**data["message"], "id": "msg"}}
        out.append((event, data))
    return out


def test_messages_a_clean_stream_passes_unchanged(proxy: Proxy, bare_proxy: Proxy) -> None:
    """Every frame (its ``event:`` line and its ``data:`` JSON) is the one the proxy without the
    guardrail sends, the message id (a fresh uuid per request) aside."""
    frames = _messages_stream(proxy, "clean please")
    expected, outcome = _bare("clean", "messages")
    assert not outcome.stopped
    assert _anthropic_texts(frames) == CLEAN == expected
    assert _without_ids(frames) == _without_ids(_messages_stream(bare_proxy, "clean please"))
    assert "loopguard" not in json.dumps([d for _, d in frames])


def _responses_stream(proxy: Proxy, prompt: str) -> list[Any]:
    return list(_client(proxy).responses.create(model="fake", input=prompt, stream=True))


def test_responses_a_looping_stream_is_cut_where_the_bare_guard_cuts_it(
    routed: tuple[Proxy, str, int | None], upstream: Upstream
) -> None:
    proxy, key, total = routed
    events = _responses_stream(proxy, "loop please")
    expected, outcome = _bare("loop", "responses")
    assert outcome.stopped and outcome.channel == "text" and len(expected) < LOOP_CHUNKS
    *texts, marker = [e.delta for e in events if e.type == "response.output_text.delta"]
    assert texts == expected
    assert marker == "\n" + outcome.marker
    types = [e.type for e in events]
    assert types[-5:] == ["response.output_text.delta", "response.output_text.done", "response.content_part.done",
                          "response.output_item.done", "response.completed"]  # fmt: skip
    numbers = [e.sequence_number for e in events]
    assert numbers == sorted(set(numbers))
    text = "".join(expected) + "\n" + outcome.marker
    assert events[-4].text == text and events[-3].part.text == text
    done = events[-1]
    assert done.response.status == "completed" and done.response.output_text == text
    assert done.response.id == events[0].response.id
    info = done.model_extra["loopguard"]
    assert info["stopped"] is True and info["kind"] == outcome.detection.kind
    assert info["kept_text"] == outcome.kept_text and info["removed"] == outcome.removed
    if total is not None:
        _upstream_closed(upstream, key, total)


def test_responses_a_clean_stream_passes_unchanged(proxy: Proxy, bare_proxy: Proxy) -> None:
    """Every event (``model_dump()``) is the one the proxy without the guardrail sends, the
    response id (LiteLLM encodes a fresh one per request) aside."""

    def dumps(events: list[Any]) -> list[Any]:
        out = json.loads(json.dumps([e.model_dump() for e in events], default=str))
        for e in out:
            if isinstance(e.get("response"), dict):
                e["response"]["id"] = "resp"
        return out

    events = _responses_stream(proxy, "clean please")
    expected, outcome = _bare("clean", "responses")
    assert not outcome.stopped
    assert [e.delta for e in events if e.type == "response.output_text.delta"] == CLEAN == expected
    assert dumps(events) == dumps(_responses_stream(bare_proxy, "clean please"))
    assert "loopguard" not in json.dumps(dumps(events))


def _history(rounds: int, args: dict[str, Any]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Find the TODOs and fix them"}]
    for i in range(rounds):
        call = {"id": f"call_{i}", "type": "function", "function": {"name": "grep", "arguments": json.dumps(args)}}
        messages.append({"role": "assistant", "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"call_{i}", "content": GREP_RESULT})
    return messages


def _bare_results(rounds: int, args: dict[str, Any]) -> list[str]:
    """What an agent with ``wrap_tool`` over a bare ``ToolGuard`` gets back for each call."""
    grep = wrap_tool(lambda a: GREP_RESULT, ToolGuard(), tool="grep")
    return [grep(json.dumps(args)) for _ in range(rounds)]


def test_pre_call_rewrites_the_result_the_bare_guard_denies(proxy: Proxy, upstream: Upstream) -> None:
    rounds = 5
    args = {**GREP, "api_key": CANARY}
    bare = _bare_results(rounds, args)
    denied = [i for i, r in enumerate(bare) if r.startswith("[loopguard] Duplicate tool call blocked")]
    assert denied == [2, 4]  # two identical results, then the deny; the escape hatch at 3
    before = len(upstream.bodies)
    reply = _client(proxy).chat.completions.create(model="fake", messages=_history(rounds, args))
    assert reply.choices[0].message.content == "ok"
    sent = upstream.bodies[before]["messages"]
    results = [m["content"] for m in sent if m["role"] == "tool"]
    assert results == bare  # denied calls carry the deny reason; reminders appended as wrap_tool does
    assert CANARY not in json.dumps(results)  # the reason shows the arguments redacted
    assert CANARY not in proxy.log.read_text(errors="replace")


def test_pre_call_leaves_a_clean_history_alone(proxy: Proxy, upstream: Upstream) -> None:
    messages = _history(1, GREP)
    messages += [{"role": "assistant", "tool_calls": [
        {"id": "call_x", "type": "function", "function": {"name": "read", "arguments": '{"path": "src/app.py"}'}}]},
        {"role": "tool", "tool_call_id": "call_x", "content": "def checkout(cart): ..."}]  # fmt: skip
    before = len(upstream.bodies)
    _client(proxy).chat.completions.create(model="fake", messages=messages)
    assert upstream.bodies[before]["messages"] == messages


def test_a_guard_fault_inside_the_proxy_never_breaks_the_stream(proxy: Proxy, upstream: Upstream) -> None:
    proxy.flag.write_text("on")
    try:
        chunks = _collect(proxy, "loop please")  # every chunk's reader raises: the stream passes whole
        before = len(upstream.bodies)
        reply = _client(proxy).chat.completions.create(model="fake", messages=_history(4, {**GREP, "k": CANARY}))
    finally:
        proxy.flag.unlink()
    assert _contents(chunks) == [LOOP_PIECES[i % 2] for i in range(LOOP_CHUNKS)]
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == ["stop"]
    assert reply.choices[0].message.content == "ok"
    assert [m["content"] for m in upstream.bodies[before]["messages"] if m["role"] == "tool"] == [GREP_RESULT] * 4
    log = proxy.log.read_text(errors="replace")
    assert log.count("loopguard could not read a stream chunk (RuntimeError); the rest passes unguarded") == 1
    assert "loopguard could not replay the request's tool calls (RuntimeError)" in log
    assert CANARY not in log


def test_the_config_keys_reach_the_guardrail_error_and_reject(upstream: Upstream, tmp_path: Path) -> None:
    """``on_cut: error`` and ``on_deny: reject`` in ``config.yaml``: the looping stream ends with
    LiteLLM's in-band error frame (the ``openai`` client raises ``APIError`` with the guard's
    reason after the chunks the bare guard passes); a history whose latest call the bare guard
    denies is refused with HTTP 400, the upstream never asked.  On ``/v1/messages`` the error is
    LiteLLM's Anthropic ``event: error`` frame, on ``/v1/responses`` its ``response.failed``
    event, each with the guard's reason, after the text the bare guard passes."""
    expected, outcome = _bare_stream("loop")
    options = {"on_deny": "reject", "on_cut": "error"}
    with running_proxy(tmp_path, upstream.url, faults=False, options=options) as where, _client(where) as client:
        seen: list[Any] = []
        messages = [{"role": "user", "content": "loop"}]
        with client.chat.completions.create(model="fake", stream=True, messages=messages) as stream:
            with pytest.raises(openai.APIError) as err:
                for c in stream:
                    seen.append(c)
        assert _contents(seen) == expected
        assert outcome.verdict is not None and outcome.verdict.reason in str(err.value.message)
        before = len(upstream.bodies)
        with pytest.raises(openai.BadRequestError) as refused:
            client.chat.completions.create(model="fake", messages=_history(3, GREP))
        assert len(upstream.bodies) == before
        assert refused.value.status_code == 400
        assert refused.value.message.startswith("Error code: 400 - [loopguard] Duplicate tool call blocked: `grep`")
        assert "loopguard_repeat" in json.dumps(refused.value.body), refused.value.body
        # /v1/messages: the text the bare guard passes, then LiteLLM's Anthropic error frame
        frames = _messages_stream(where, "loop please")
        expected, outcome = _bare("loop", "messages")
        assert _anthropic_texts(frames) == expected
        assert frames[-1][0] == "error" and frames[-1][1]["type"] == "error"
        assert frames[-1][1]["error"]["message"] == outcome.verdict.reason
        assert [d["type"] for _, d in frames[:-1]][-1] == "content_block_delta"  # nothing added before the error
        # /v1/responses: the text the bare guard passes, then LiteLLM's response.failed event
        events = _responses_stream(where, "loop please")
        expected, outcome = _bare("loop", "responses")
        assert [e.delta for e in events if e.type == "response.output_text.delta"] == expected
        assert events[-1].type == "response.failed" and events[-1].response.status == "failed"
        assert events[-1].response.error.message == outcome.verdict.reason
        assert events[-2].type == "response.output_text.delta"
    assert "unknown config keys" not in where.log.read_text(encoding="utf-8")  # every key LiteLLM passes is known


# ------------------------------------------------------------------- in process


def test_the_iterator_hook_is_on_the_class_itself_and_an_async_generator() -> None:
    import inspect

    assert "async_post_call_streaming_iterator_hook" in lg.LoopGuardrail.__dict__
    assert inspect.isasyncgenfunction(lg.LoopGuardrail.async_post_call_streaming_iterator_hook)
    assert "apply_guardrail" not in lg.LoopGuardrail.__dict__  # else LiteLLM's unified bridge buffers the stream
    guardrail = lg.LoopGuardrail()
    assert guardrail.guardrail_name == "loopguard" and guardrail.default_on is True
    with pytest.raises(ValueError, match="on_deny"):
        lg.LoopGuardrail(on_deny="drop")


def test_reject_mode_refuses_only_a_refused_latest_call(caplog: pytest.LogCaptureFixture) -> None:
    from fastapi import HTTPException

    guardrail = lg.LoopGuardrail(on_deny="reject")
    args = {**GREP, "api_key": CANARY}
    caplog.set_level(logging.DEBUG)
    with pytest.raises(HTTPException) as err:
        asyncio.run(guardrail.async_pre_call_hook(None, None, {"messages": _history(3, args)}, "completion"))
    assert err.value.status_code == 400
    error = err.value.detail["error"]
    assert error["message"] == _bare_results(3, args)[2] and error["code"] == "loopguard_repeat"
    assert CANARY not in str(err.value.detail) and CANARY not in caplog.text
    # call 2 denied but an allowed call came after it: rewritten, not rejected
    messages = _history(3, args) + _history(1, {"pattern": "FIXME", "path": "src"})[1:]
    data = asyncio.run(guardrail.async_pre_call_hook(None, None, {"messages": messages}, "completion"))
    assert [m["content"] for m in data["messages"] if m["role"] == "tool"][2] == _bare_results(3, args)[2]


def test_session_key_order() -> None:
    class Key:
        api_key = "hashed-key"

    headers = {"proxy_server_request": {"headers": {"X-Session-Id": "from-header"}}}
    assert lg.session_key({"litellm_session_id": "s1", **headers}, Key()) == "s1"
    assert lg.session_key({"metadata": {"litellm_session_id": "s2"}, **headers}, Key()) == "s2"
    assert lg.session_key(headers, Key()) == "from-header"
    assert lg.session_key({}, Key()) == "key:hashed-key"
    assert lg.session_key({}, None) == "default"
    assert lg.session_key({"metadata": 3}, None) == "default"


def _model_chunks(kind: str) -> list[Any]:
    from litellm.types.utils import ModelResponseStream

    return [ModelResponseStream(**c) for c in _stream_chunks(kind)]


class _Upstream:
    """An async chunk iterator that records whether it was closed."""

    def __init__(self, chunks: list[Any]) -> None:
        self.chunks, self.closed = chunks, False

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._gen()

    async def _gen(self) -> AsyncIterator[Any]:
        for c in self.chunks:
            yield c

    async def aclose(self) -> None:
        self.closed = True


async def _drain(guardrail: Any, upstream: Any, request: dict[str, Any] | None = None) -> list[Any]:
    hook = guardrail.async_post_call_streaming_iterator_hook(
        user_api_key_dict=None, response=upstream, request_data=request or {}
    )
    return [c async for c in hook]


def test_on_cut_error_raises_the_in_band_error() -> None:
    guardrail = lg.LoopGuardrail(on_cut="error")
    upstream = _Upstream(_model_chunks("loop"))
    with pytest.raises(lg.LoopGuardStreamStopped) as err:
        asyncio.run(_drain(guardrail, upstream))
    _, outcome = _bare_stream("loop")
    assert upstream.closed
    assert err.value.status_code == 400 and err.value.type == "loopguard_stream_stopped"
    assert err.value.message == outcome.verdict.reason and err.value.outcome.kept_text == outcome.kept_text


def test_tool_calls_completed_before_a_cut_finish_with_tool_calls() -> None:
    call = _chunk({"tool_calls": [{"index": 0, "id": "c1", "type": "function",
                                   "function": {"name": "grep", "arguments": json.dumps(GREP)}}]})  # fmt: skip
    chunks = [_chunk({"content": "Let me look. "}), call, _chunk({}, "tool_calls")]
    chunks += [_chunk({"content": LOOP_DELTA})] * 200
    out = asyncio.run(_drain(lg.LoopGuardrail(), _Upstream(chunks)))
    assert out[-1]["choices"][0]["finish_reason"] == "tool_calls" and out[-1]["loopguard"]["stopped"] is True


def test_fail_open_when_the_guard_cannot_start(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("no session")

    monkeypatch.setattr(lg, "Session", broken)
    chunks = _model_chunks("loop")
    out = asyncio.run(_drain(lg.LoopGuardrail(), _Upstream(chunks)))
    assert out == chunks


def test_unknown_chunk_shapes_pass_through() -> None:
    chunks = [b"event: message_start\ndata: {}\n\n", {"other": 1}, "data: x"]
    out = asyncio.run(_drain(lg.LoopGuardrail(), _Upstream(chunks)))
    assert out == chunks


def test_the_readme_litellm_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    block = re.search(r"```python\n(.*?)```", readme_section(), flags=re.S)
    assert block is not None
    exec(block.group(1), {})
    out = capsys.readouterr().out
    assert out.startswith("[loopguard] Duplicate tool call blocked: `grep`")


def test_without_litellm_the_import_error_names_the_extra() -> None:
    code = (
        "import sys; sys.modules['litellm'] = None\n"
        "try:\n    import loopguard.integrations.litellm\n"
        "except ImportError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert 'pip install "loopguard[litellm]"' in out


def test_the_litellm_fast_path_reads_as_the_chat_reader_does() -> None:
    from litellm.types.utils import ModelResponseStream

    from loopguard import StreamGuard
    from loopguard.integrations.openai import apply_chat_chunk

    call = {"index": 0, "id": "c1", "type": "function", "function": {"name": "grep", "arguments": json.dumps(GREP)}}
    shapes = [
        _chunk({"role": "assistant", "content": ""}),
        _chunk({"content": "Let me look. "}),
        _chunk({"reasoning_content": "Checking the cart. "}),
        _chunk({"reasoning": "Checking the cart again. "}),
        _chunk({"content": "Both ", "reasoning_content": "at once. "}),
        _chunk({"tool_calls": [call]}),
        _chunk({}, "tool_calls"),
        {
            **_chunk({"content": "other choice"}),
            "choices": [{"index": 1, "delta": {"content": "x"}, "finish_reason": None}],
        },
    ]
    rng = __import__("random").Random(3)
    for trial in range(30):
        dicts = [rng.choice(shapes) for _ in range(40)] + [_chunk({"content": LOOP_DELTA})] * rng.randint(0, 80)
        results = []
        for reader in (apply_chat_chunk, lg.apply_litellm_chunk):
            guard = StreamGuard(config={"mode": "cut"})
            actions = [reader(ModelResponseStream(**json.loads(json.dumps(d))), guard) for d in dicts]
            results.append((actions, guard.finish().to_dict()))
        assert results[0] == results[1], trial


def _sse_bytes(events: list[dict[str, Any]]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def test_messages_sse_frames_split_across_chunks_are_read_whole_and_passed_byte_for_byte() -> None:
    """Raw SSE chunks cut anywhere (inside a frame, several frames in one): the bytes passed
    are the upstream's own, up to the end of the frame the bare guard stops after (or before),
    then the ending frames; a clean stream passes byte for byte."""
    from loopguard.integrations import anthropic

    for kind in ("loop", "clean"):
        events = _anthropic_events(_texts(kind))
        raw = _sse_bytes(events)
        for size in (7, 64, 1000):
            chunks = [raw[i : i + size] for i in range(0, len(raw), size)]
            upstream = _Upstream(chunks)
            out = asyncio.run(_drain(lg.LoopGuardrail(), upstream))
            joined = b"".join(out)
            bare = anthropic.guard_stream(iter(events))
            passed = list(bare)
            if kind == "clean":
                assert joined == raw and not bare.outcome.stopped
                continue
            assert upstream.closed
            prefix = _sse_bytes(passed)
            assert joined.startswith(prefix)
            ending = [json.loads(f.split(b"data: ", 1)[1]) for f in joined[len(prefix) :].split(b"\n\n") if f]
            assert [e["type"] for e in ending] == ["content_block_delta", "content_block_stop", "message_delta",
                                                   "message_stop"]  # fmt: skip
            assert ending[0]["delta"]["text"] == "\n" + bare.outcome.marker
            assert ending[2]["loopguard"]["kept_text"] == bare.outcome.kept_text


def test_messages_a_guard_fault_lets_the_rest_pass(monkeypatch: pytest.MonkeyPatch, caplog: Any) -> None:
    def broken(event: Any, guard: Any) -> Any:
        raise RuntimeError("injected")

    monkeypatch.setattr(lg, "apply_anthropic_event", broken)
    raw = _sse_bytes(_anthropic_events(_texts("loop")))
    with caplog.at_level(logging.ERROR, logger="loopguard.integrations"):
        out = asyncio.run(_drain(lg.LoopGuardrail(), _Upstream([raw[i : i + 50] for i in range(0, len(raw), 50)])))
    assert b"".join(out) == raw
    assert caplog.text.count("could not read a stream chunk (RuntimeError)") == 1


# ------------------------------------------------ a fresh user's trial (issue 19): findings fixed


def test_a_whole_loop_in_one_chunk_ends_with_the_kept_text_and_the_marker() -> None:
    """An upstream that sends the looping answer in one chunk (LiteLLM's fake streaming of a
    non-streaming provider): the chunk is withheld, and the final chunk carries the kept text the
    client has not seen, then the marker, so the client's text is the outcome's ``kept_text``."""
    from litellm.types.utils import ModelResponseStream

    whole = "".join(_texts("loop"))
    for head in ([], ["Intro. "]):  # the loop alone, and after a short first chunk
        dicts = [_chunk({"content": t}) for t in [*head, whole]] + [_chunk({}, "stop")]
        bare = guard_stream(iter(json.loads(json.dumps(dicts))))
        assert len(list(bare)) == len(head)  # the looping chunk is withheld
        out = asyncio.run(_drain(lg.LoopGuardrail(), _Upstream([ModelResponseStream(**d) for d in dicts])))
        assert len(out) == len(head) + 1
        final = out[-1]
        assert final.choices[0].finish_reason == "stop"
        text = "".join(c.choices[0].delta.content or "" for c in out)
        assert text == bare.outcome.kept_text  # e.g. "Wait, let me recheck the sum of the cart. \n〔…〕"
        assert text.startswith("".join(head) + LOOP_DELTA[:-2]) and text.endswith(bare.outcome.marker)
        assert final.loopguard["kept_text"] == bare.outcome.kept_text


def test_messages_a_whole_loop_in_one_delta_ends_with_the_kept_text() -> None:
    """The same on ``/v1/messages``: one ``text_delta`` holding the whole loop is withheld and the
    ending's delta carries the unseen kept text and the marker."""
    from loopguard.integrations import anthropic

    events = _anthropic_events(["".join(_texts("loop"))])
    bare = anthropic.guard_stream(iter(events))
    passed = list(bare)
    out = asyncio.run(_drain(lg.LoopGuardrail(), _Upstream([_sse_bytes([e]) for e in events])))
    frames = [json.loads(f.split(b"data: ", 1)[1]) for f in b"".join(out).split(b"\n\n") if f]
    assert [f["type"] for f in frames] == [e["type"] for e in passed] + [
        "content_block_delta", "content_block_stop", "message_delta", "message_stop"]  # fmt: skip
    texts = [f["delta"]["text"] for f in frames if f["type"] == "content_block_delta"]
    assert "".join(texts) == bare.outcome.kept_text and texts[0].startswith(LOOP_DELTA[:-2])


def test_replay_never_rewrites_a_search_by_its_scope() -> None:
    """A history's calls have run: a first ``grep`` without ``path`` keeps its result (the
    ``unscoped_search`` rule decides before a call runs; the live guard would deny it), while the
    same unscoped grep repeated with the same result is still denied as a duplicate."""
    unscoped = {"pattern": "TODO"}
    assert ToolGuard().before_call("s", "grep", unscoped).rule == "unscoped_search"  # live: denied
    calls = lg.replay_tool_calls(_history(1, unscoped))
    assert [(c.action, c.rule) for c in calls] == [("allow", "")]
    data = asyncio.run(lg.LoopGuardrail().async_pre_call_hook(None, None, {"messages": _history(1, unscoped)}, "x"))
    assert data is None  # the request goes on unchanged: the real result stays
    calls = lg.replay_tool_calls(_history(3, unscoped))
    assert [c.action for c in calls] == ["allow", "notice", "deny"] and calls[2].rule == "repeat"
    # the user's own guard configuration is kept otherwise
    calls = lg.replay_tool_calls(_history(3, unscoped), config={"repeat_limit": 3})
    assert [c.action for c in calls] == ["allow", "allow", "notice"]  # the reminder before the 4th would be denied


def test_reject_mode_refuses_only_the_round_the_request_answers() -> None:
    """``on_deny: reject`` refuses a request whose trailing tool results hold a refused call;
    once the model answered in text and the user wrote again, the refused call is an earlier
    round: rewritten, and the request goes through."""
    from fastapi import HTTPException

    guardrail = lg.LoopGuardrail(on_deny="reject")
    with pytest.raises(HTTPException):
        asyncio.run(guardrail.async_pre_call_hook(None, None, {"messages": _history(3, GREP)}, "completion"))
    later = [
        *_history(3, GREP),
        {"role": "assistant", "content": "I will read the file instead."},
        {"role": "user", "content": "Go on."},
    ]
    calls = lg.replay_tool_calls(later)
    assert [(c.action, c.latest) for c in calls] == [("allow", False), ("notice", False), ("deny", False)]
    data = asyncio.run(guardrail.async_pre_call_hook(None, None, {"messages": later}, "completion"))
    assert data["messages"][6]["content"] == _bare_results(3, GREP)[2]  # rewritten to the deny reason
    assert data["messages"][-1] == {"role": "user", "content": "Go on."}


def test_an_unknown_text_profile_is_refused_at_construction() -> None:
    from loopguard.errors import ConfigError

    with pytest.raises(ConfigError, match="profile='nope'"):
        lg.LoopGuardrail(text_config="nope")
    assert lg.LoopGuardrail(text_config="fuse").text_config.profile == "fuse"


def test_an_unknown_config_key_is_named_in_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    """``CustomGuardrail`` swallows any keyword: a typo (``on_denny``) would silently leave the
    default in place, so its name (never its value) is logged."""
    with caplog.at_level(logging.WARNING, logger="loopguard.integrations"):
        guardrail = lg.LoopGuardrail(on_denny="reject", api_key=CANARY, guardrail_name="g", default_on=True)
    assert guardrail.on_deny == "rewrite"
    assert "unknown config keys ignored: on_denny" in caplog.text
    assert "api_key" not in caplog.text and CANARY not in caplog.text
