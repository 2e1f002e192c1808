"""Per-chunk overhead of ``LoopGuardrail`` in a real LiteLLM proxy (issue 19 item 1).

Two ``litellm`` proxy processes in front of one local OpenAI-compatible upstream (a stdlib
HTTP server streaming ``--chunks`` chunks of varied text as fast as it can): one with the
guardrail in its ``config.yaml`` (the README's one-line shim), one without.  The ``openai`` client
streams ``--requests`` completions through each, alternating, and the median wall time per
stream, divided by the chunks, gives the cost per chunk with and without the guard.  In process,
the hook itself is timed over LiteLLM's own chunk objects against a bare pass-through generator.

    pip install -e ".[litellm]"
    python benchmarks/litellm_overhead.py [--chunks 2000] [--requests 15]

Needs the ``litellm`` and ``openai`` packages; prints one table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network fetch at import of litellm

SHIM = "from loopguard.integrations.litellm import LoopGuardrail  # noqa: F401\n"
NOOP = """\
from litellm.integrations.custom_guardrail import CustomGuardrail


class NoopGuardrail(CustomGuardrail):
    \"\"\"A guardrail that passes everything: LiteLLM's own cost of running a guardrail.\"\"\"

    async def async_pre_call_hook(self, user_api_key_dict, cache, data, call_type):
        return None

    async def async_post_call_streaming_iterator_hook(self, user_api_key_dict, response, request_data):
        async for chunk in response:
            yield chunk
"""
CONFIG = """\
model_list:
  - model_name: fake
    litellm_params: {{model: openai/fake, api_base: "{upstream}", api_key: sk-upstream}}
"""
GUARDRAIL = """\
guardrails:
  - guardrail_name: {name}
    litellm_params:
      guardrail: {path}
      mode: [pre_call, post_call]
      default_on: true
"""
SETUPS = {
    "plain": "",
    "noop": GUARDRAIL.format(name="noop", path="noop_guardrail.NoopGuardrail"),
    "loopguard": GUARDRAIL.format(name="loopguard", path="loopguard_litellm.LoopGuardrail"),
}


def texts(n: int) -> list[str]:
    """``n`` deltas of varied words (no loop for the detectors)."""
    rng = random.Random(7)
    vocab = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9))) for _ in range(4000)]
    return [" " + rng.choice(vocab) for _ in range(n)]


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": "chatcmpl-b", "object": "chat.completion.chunk", "created": 1, "model": "fake",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}  # fmt: skip


def serve(n: int) -> str:
    frames = b"".join(f"data: {json.dumps(chunk({'content': t}))}\n\n".encode() for t in texts(n))
    head = f"data: {json.dumps(chunk({'role': 'assistant', 'content': ''}))}\n\n".encode()
    tail = f"data: {json.dumps(chunk({}, 'stop'))}\n\ndata: [DONE]\n\n".encode()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(head + frames + tail)
            self.close_connection = True

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/v1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(folder: Path, upstream: str, setup: str) -> tuple[subprocess.Popen[bytes], str, str]:
    folder.mkdir()
    (folder / "loopguard_litellm.py").write_text(SHIM)
    (folder / "noop_guardrail.py").write_text(NOOP)
    (folder / "config.yaml").write_text(CONFIG.format(upstream=upstream) + SETUPS[setup])
    port, key = free_port(), "sk-bench-" + "0123456789abcdef" * 2
    env = dict(os.environ, LITELLM_MASTER_KEY=key, LITELLM_LOCAL_MODEL_COST_MAP="True")
    cli = Path(sys.executable).parent / "litellm"
    log = (folder / "proxy.log").open("wb")
    proc = subprocess.Popen(
        [str(cli), "--config", str(folder / "config.yaml"), "--host", "127.0.0.1", "--port", str(port)],
        cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    return proc, f"http://127.0.0.1:{port}/v1", key


def ready(client: Any) -> None:
    import openai

    for _ in range(240):
        try:
            client.models.list()
            return
        except openai.APIConnectionError:
            time.sleep(0.5)
    raise RuntimeError("proxy did not start")


def one_stream(client: Any) -> tuple[float, int]:
    started = time.perf_counter()
    n = sum(1 for c in client.chat.completions.create(model="fake", stream=True, messages=[{"role": "user", "content": "go"}]) if c.choices and c.choices[0].delta.content)  # fmt: skip
    return time.perf_counter() - started, n


def in_process(n: int, rounds: int = 7) -> tuple[float, float]:
    """µs per chunk: the guardrail's iterator hook, and a bare pass-through async generator."""
    from litellm.types.utils import ModelResponseStream

    from loopguard.integrations.litellm import LoopGuardrail

    chunks = [ModelResponseStream(**chunk({"content": t})) for t in texts(n)]

    async def upstream() -> Any:
        for c in chunks:
            yield c

    async def plain(response: Any) -> Any:
        async for c in response:
            yield c

    guardrail = LoopGuardrail()

    async def run(hooked: bool) -> float:
        started = time.perf_counter()
        it = guardrail.async_post_call_streaming_iterator_hook(None, upstream(), {}) if hooked else plain(upstream())
        async for _ in it:
            pass
        return time.perf_counter() - started

    best = {True: float("inf"), False: float("inf")}
    for _ in range(rounds):
        for hooked in (False, True):
            best[hooked] = min(best[hooked], asyncio.run(run(hooked)))
    return best[True] / n * 1e6, best[False] / n * 1e6


def main() -> None:
    import openai

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=2000)
    parser.add_argument("--requests", type=int, default=15)
    args = parser.parse_args()
    upstream = serve(args.chunks)
    with tempfile.TemporaryDirectory() as tmp:
        procs = {g: start(Path(tmp) / g, upstream, g) for g in SETUPS}
        try:
            clients = {g: openai.OpenAI(base_url=url, api_key=key, max_retries=0, timeout=120) for g, (_, url, key) in procs.items()}  # fmt: skip
            for client in clients.values():
                ready(client)
                one_stream(client)  # warm up
            times: dict[str, list[float]] = {g: [] for g in SETUPS}
            for _ in range(args.requests):
                for g, client in clients.items():
                    seconds, n = one_stream(client)
                    assert n == args.chunks, (g, n)
                    times[g].append(seconds)
        finally:
            for proc, _, _ in procs.values():
                proc.terminate()
                proc.wait(timeout=30)
    per = {g: statistics.median(t) / args.chunks * 1e6 for g, t in times.items()}
    hook, bare = in_process(args.chunks)
    print(f"chunks per stream: {args.chunks}, streams per proxy: {args.requests} (median)")
    print(f"through the proxy, no guardrail:           {per['plain']:8.1f} µs/chunk")
    print(f"through the proxy, a pass-through guardrail: {per['noop']:8.1f} µs/chunk (LiteLLM's guardrail path)")
    print(f"through the proxy, LoopGuardrail:          {per['loopguard']:8.1f} µs/chunk")
    print(f"LoopGuardrail vs no guardrail:             {per['loopguard'] - per['plain']:8.1f} µs/chunk")
    print(f"LoopGuardrail vs the pass-through one:     {per['loopguard'] - per['noop']:8.1f} µs/chunk")
    print(f"in process, the hook vs a bare generator: {hook:8.2f} vs {bare:.2f} µs/chunk ({hook - bare:.2f} added)")


if __name__ == "__main__":
    main()
