"""Added latency of ``guard_stream`` (spec §3; seed 003) per Chat Completions chunk.

Run: ``pytest benchmarks/test_bench_stream.py --benchmark-only``.  Group ``stream``; one
round is one whole stream of 5,000 chunks, each carrying ~4 code points of normal English
prose (the ``en`` corpus) in ``choices[0].delta.content``, so nothing ever fires:

- ``plain_*``: the host's own loop over the chunks, no guard (the baseline);
- ``guard_*``: the same loop over ``guard_stream(iter(chunks))`` in the default ``rescue``
  mode with the ``default`` text profile (a new ``Session`` and ``StreamGuard`` per round,
  as a host gets per request);

for plain dicts (what LiteLLM and raw SSE readers yield), ``SimpleNamespace`` objects, and
the ``openai`` SDK's ``ChatCompletionChunk`` models (attribute access, ``reasoning_content``
looked up in ``model_extra``).  ``calls_per_round`` is the chunk count, so
``benchmarks/report.py`` prints µs per chunk; the guard's added latency per chunk is
``guard_X − plain_X``.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from conftest import stream as corpus_stream
from loopguard.integrations.openai import guard_stream

N_CHUNKS = 5_000
DELTA = 4


def _dict_chunks() -> list[Any]:
    text = corpus_stream("en", N_CHUNKS * DELTA)
    chunks: list[Any] = [
        {
            "id": "chatcmpl-bench",
            "object": "chat.completion.chunk",
            "created": 1767225600,
            "model": "m",
            "choices": [
                {"index": 0, "delta": {"content": text[i : i + DELTA]}, "logprobs": None, "finish_reason": None}
            ],
        }
        for i in range(0, len(text), DELTA)
    ]
    assert len(chunks) == N_CHUNKS
    return chunks


def _namespace(value: Any) -> Any:
    if isinstance(value, dict):
        return SimpleNamespace(**{k: _namespace(v) for k, v in value.items()})
    if isinstance(value, list):
        return [_namespace(v) for v in value]
    return value


def _chunks(shape: str) -> list[Any]:
    chunks = _dict_chunks()
    if shape == "namespace":
        return [_namespace(c) for c in chunks]
    if shape == "openai":
        openai_chat = pytest.importorskip("openai.types.chat")
        return [openai_chat.ChatCompletionChunk.model_validate(c) for c in chunks]
    return chunks


def _plain(chunks: list[Any]) -> int:
    n = 0
    for _ in iter(chunks):
        n += 1
    return n


def _guarded(chunks: list[Any]) -> int:
    n = 0
    stream = guard_stream(iter(chunks))
    for _ in stream:
        n += 1
    assert not stream.outcome.stopped and stream.outcome.guard_error is None
    return n


SHAPES = ["dict", "namespace", "openai"]


@pytest.mark.benchmark(group="stream")
@pytest.mark.parametrize("shape", SHAPES)
def test_plain(benchmark: Any, shape: str) -> None:
    chunks = _chunks(shape)
    benchmark.extra_info.update(calls_per_round=N_CHUNKS, chunk_chars=DELTA, shape=shape, mode="none")
    assert benchmark(_plain, chunks) == N_CHUNKS


@pytest.mark.benchmark(group="stream")
@pytest.mark.parametrize("shape", SHAPES)
def test_guard(benchmark: Any, shape: str) -> None:
    chunks = _chunks(shape)
    benchmark.extra_info.update(
        calls_per_round=N_CHUNKS, chunk_chars=DELTA, shape=shape, mode="rescue", profile="default"
    )
    assert benchmark(_guarded, chunks) == N_CHUNKS
