"""Token-id mode: ``ChannelStream.feed_tokens`` against feeding the same symbols as a ``str``
and against vLLM's ``repetition_detection`` rule ported over the same ids, in one run.

Run: ``pytest benchmarks/test_bench_tokens.py --benchmark-only``; group ``tokens``.  The
stream is 100,000 token ids of healthy text (a pseudo-tokenized synthetic English corpus,
no loop) fed at once (``bulk``) or 16 ids at a time as an engine emits them (``step16``);
vLLM's rule runs after every token (its scheduler's ``check_stop``) on the first 20,000
ids, going on past the points where it would stop -- ``extra_info["tokens"]`` gives each
round's size, divide for ns per token.  What
each catches on real generations: ``python benchmarks/tokens.py``.
"""

from __future__ import annotations

import array
import re
from functools import cache
from typing import Any

import numpy as np
import pytest

import loopcore
from conftest import stream
from loopcore._tokens import token_symbols
from loopguard import TextConfig
from tokens import vllm_fires, vllm_stop

IMPLS = sorted(loopcore.implementations())
PIECE = re.compile(r" ?[A-Za-z]+| ?\d{1,3}| ?[^\sA-Za-z\d]+|\s+")


@cache
def ids(n: int) -> array.array:
    vocab: dict[str, int] = {}
    out = array.array("i", [vocab.setdefault(p, len(vocab)) for p in PIECE.findall(stream("en", 6 * n))])
    assert len(out) >= n
    return out[:n]


def _stream(impl: str = "cython") -> Any:
    return loopcore.implementation(impl).ChannelStream(**TextConfig("tokens").stream_params("text"))


@pytest.mark.benchmark(group="tokens")
def test_feed_tokens_bulk(benchmark: Any) -> None:
    data = np.frombuffer(ids(100_000), dtype=np.int32)
    benchmark.extra_info["tokens"] = len(data)
    assert benchmark(lambda: len(_stream().feed_tokens(data) + [])) == 0


@pytest.mark.benchmark(group="tokens")
def test_feed_symbols_bulk(benchmark: Any) -> None:
    text = token_symbols(memoryview(ids(100_000)))
    benchmark.extra_info["tokens"] = len(text)
    assert benchmark(lambda: len(_stream().feed(text))) == 0


@pytest.mark.benchmark(group="tokens")
def test_feed_tokens_step16(benchmark: Any) -> None:
    data = ids(100_000)
    steps = [data[i : i + 16] for i in range(0, len(data), 16)]
    benchmark.extra_info["tokens"] = len(data)

    def run() -> int:
        s = _stream()
        feed = s.feed_tokens
        return sum(len(feed(step)) for step in steps)

    assert benchmark(run) == 0


@pytest.mark.benchmark(group="tokens")
def test_vllm_rule_per_token(benchmark: Any) -> None:
    data = list(ids(20_000))
    benchmark.extra_info["tokens"] = len(data)
    fires = benchmark.pedantic(lambda: vllm_fires(data, 1, 64, 3), rounds=1, iterations=1)
    # the rule would have stopped this healthy stream (three equal tokens in a row, ...) -- the
    # timing covers every token, as if it went on
    assert fires[0] == vllm_stop(data, 1, 64, 3)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.benchmark(group="tokens-impl")
def test_feed_tokens_implementations(benchmark: Any, impl: str) -> None:
    data = ids(20_000)
    benchmark.extra_info["tokens"] = len(data)
    assert benchmark.pedantic(lambda: len(_stream(impl).feed_tokens(data)), rounds=1, iterations=1) == 0
