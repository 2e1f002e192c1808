"""What ``guard_stream`` adds per chunk over the host's own loop (spec §3; issue 17's adapter target).

Run: ``pytest benchmarks/test_bench_adapters.py --benchmark-only -p no:cacheprovider``, or
``python benchmarks/test_bench_adapters.py`` for a quick table (interleaved rounds, the minimum
of each).  Group ``adapters``; one round is one whole stream of 5,000 Chat Completions chunks,
each carrying 4 code points of clean English prose (the seeded ``en`` corpus) in
``choices[0].delta.content``, so nothing ever fires.  Two chunk shapes:

- ``dict``: plain dicts shaped like OpenAI chat chunks (what LiteLLM and raw SSE readers yield);
- ``sdk``: the ``openai`` SDK's ``ChatCompletionChunk`` models, validated once up front (skipped
  when ``openai`` is not installed).

and three loops over the same chunks:

- ``bare``: the host's loop with no guard: it iterates the chunks and reads the delta text
  (``chunk["choices"][0]["delta"]["content"]`` / ``chunk.choices[0].delta.content``);
- ``guard``: the same loop over ``guard_stream(iter(chunks))`` (default ``rescue`` mode, the
  ``default`` text profile, a new ``Session`` and ``StreamGuard`` per round as a host gets per
  request);
- ``detector``: the text detector alone over the same deltas (``TextLoopDetector.feed``), the
  floor under any adapter.

On a shared machine pass ``--benchmark-timer time.thread_time`` (CPU time of the thread: time
spent descheduled is not counted); ``main()`` uses it.  Each ``guard`` benchmark also times the
``bare`` loop with the same timer in the same process right after its own rounds and stores ``bare_ns``, ``guard_ns`` and ``overhead_ns`` (per chunk, minimum round) in
``extra_info``; the targets are an overhead of at most 1,000 ns per dict chunk and 2,000 ns per
SDK chunk.
"""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import corpus
from loopguard import TextLoopDetector
from loopguard.integrations.openai import guard_stream

N_CHUNKS = 5_000
DELTA = 4
TARGET_NS = {"dict": 1_000, "sdk": 2_000}


def deltas() -> list[str]:
    text = corpus.english(N_CHUNKS * DELTA)
    out = corpus.fixed_deltas(text, DELTA)
    assert len(out) == N_CHUNKS
    return out


def dict_chunks() -> list[dict[str, Any]]:
    return [
        {
            "id": "chatcmpl-bench",
            "object": "chat.completion.chunk",
            "created": 1767225600,
            "model": "m",
            "system_fingerprint": "fp_bench",
            "choices": [{"index": 0, "delta": {"content": d}, "logprobs": None, "finish_reason": None}],
        }
        for d in deltas()
    ]


def sdk_chunks() -> list[Any]:
    """``openai.types.chat.ChatCompletionChunk`` models (raises ``ImportError`` without ``openai``)."""
    from openai.types.chat import ChatCompletionChunk

    return [ChatCompletionChunk.model_validate(c) for c in dict_chunks()]


def chunks(shape: str) -> list[Any]:
    if shape == "sdk":
        pytest.importorskip("openai")
        return sdk_chunks()
    return dict_chunks()


def bare_dict(chunks: list[Any]) -> int:
    n = 0
    for chunk in iter(chunks):
        n += len(chunk["choices"][0]["delta"]["content"])
    return n


def bare_sdk(chunks: list[Any]) -> int:
    n = 0
    for chunk in iter(chunks):
        n += len(chunk.choices[0].delta.content)
    return n


def guard_dict(chunks: list[Any]) -> int:
    n = 0
    stream = guard_stream(iter(chunks))
    for chunk in stream:
        n += len(chunk["choices"][0]["delta"]["content"])
    assert not stream.outcome.stopped and stream.outcome.guard_error is None
    return n


def guard_sdk(chunks: list[Any]) -> int:
    n = 0
    stream = guard_stream(iter(chunks))
    for chunk in stream:
        n += len(chunk.choices[0].delta.content)
    assert not stream.outcome.stopped and stream.outcome.guard_error is None
    return n


def detector_only(parts: list[str]) -> int:
    detector = TextLoopDetector()
    feed = detector.feed
    n = 0
    for part in parts:
        n += len(feed(part, "text"))
    return n


BARE: dict[str, Callable[[list[Any]], int]] = {"dict": bare_dict, "sdk": bare_sdk}
GUARD: dict[str, Callable[[list[Any]], int]] = {"dict": guard_dict, "sdk": guard_sdk}


def best_ns(fn: Callable[[Any], int], arg: Any, rounds: int, timer: Callable[[], float] = time.perf_counter) -> float:
    """The fastest of ``rounds`` runs, in ns per chunk (gc off while timing)."""
    best = float("inf")
    enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(rounds):
            t0 = timer()
            fn(arg)
            best = min(best, (timer() - t0) * 1e9)
    finally:
        if enabled:
            gc.enable()
    return best / N_CHUNKS


@pytest.mark.benchmark(group="adapters")
@pytest.mark.parametrize("shape", ["dict", "sdk"])
def test_bare(benchmark: Any, shape: str) -> None:
    data = chunks(shape)
    benchmark.extra_info.update(calls_per_round=N_CHUNKS, chunk_chars=DELTA, shape=shape, loop="bare")
    assert benchmark(BARE[shape], data) == N_CHUNKS * DELTA


@pytest.mark.benchmark(group="adapters")
@pytest.mark.parametrize("shape", ["dict", "sdk"])
def test_guard(benchmark: Any, shape: str, request: pytest.FixtureRequest) -> None:
    data = chunks(shape)
    benchmark.extra_info.update(calls_per_round=N_CHUNKS, chunk_chars=DELTA, shape=shape, loop="guard")
    assert benchmark(GUARD[shape], data) == N_CHUNKS * DELTA
    if benchmark.stats is None:  # --benchmark-disable
        return
    guard_ns = benchmark.stats.stats.min / N_CHUNKS * 1e9
    timer = getattr(request.config.getoption("benchmark_timer", None), "target", time.perf_counter)
    bare_ns = best_ns(BARE[shape], data, 20, timer)
    benchmark.extra_info.update(
        bare_ns=round(bare_ns),
        guard_ns=round(guard_ns),
        overhead_ns=round(guard_ns - bare_ns),
        target_ns=TARGET_NS[shape],
    )


@pytest.mark.benchmark(group="adapters")
def test_detector(benchmark: Any) -> None:
    parts = deltas()
    benchmark.extra_info.update(calls_per_round=N_CHUNKS, chunk_chars=DELTA, loop="detector")
    assert benchmark(detector_only, parts) == 0


def main(rounds: int = 30) -> None:
    """Interleaved rounds of each loop (thread CPU time); prints ns per chunk (minimum) and the overhead."""
    try:
        shapes = {"dict": dict_chunks(), "sdk": sdk_chunks()}
    except ImportError:
        shapes = {"dict": dict_chunks()}
    parts = deltas()
    best: dict[str, float] = {}
    for _ in range(rounds):
        for shape, data in shapes.items():
            for name, fn in ((f"bare_{shape}", BARE[shape]), (f"guard_{shape}", GUARD[shape])):
                best[name] = min(best.get(name, float("inf")), best_ns(fn, data, 1, time.thread_time))
        best["detector"] = min(best.get("detector", float("inf")), best_ns(detector_only, parts, 1, time.thread_time))
    print(f"detector alone: {best['detector']:.0f} ns per 4-char delta")
    for shape in shapes:
        bare, guard = best[f"bare_{shape}"], best[f"guard_{shape}"]
        print(
            f"{shape:5s} bare {bare:6.0f} ns  guard {guard:6.0f} ns  overhead {guard - bare:6.0f} ns "
            f"per chunk (target <= {TARGET_NS[shape]})"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 30)
