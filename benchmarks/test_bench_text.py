"""Throughput of the text detectors: compiled core vs the literal reference.

Run: ``pytest benchmarks --benchmark-only --benchmark-disable-gc --benchmark-json=bench.json``
then ``python benchmarks/report.py bench.json``.  Every stream is fed to a new
detector with the profile under test; detectors keep running after a detection
(sustained cost).  Groups: ``bulk`` (one ``feed`` of the whole stream),
``delta4`` (4-character deltas), ``flat`` (the compiled core's cost per code point from 10k to
10M code points).  Streams: ``en``, ``zh``, ``late`` (seeded, ``corpus.py``) and
``real`` (real model output: the clean records of ``../shared/data/real/bench``, joined;
skipped when that checkout is missing).  ``python benchmarks/compare.py`` measures the same
figures for two commits in one run.
"""

from __future__ import annotations

from functools import lru_cache

import pytest

import corpus
import loopcore
from conftest import pieces, stream
from loopguard import TextConfig

COMPILED = "cython" in loopcore.implementations()
needs_core = pytest.mark.skipif(not COMPILED, reason="the compiled core is not built")


def _run_bulk(impl: str, profile: str, text: str) -> int:
    s = loopcore.implementation(impl).ChannelStream(**TextConfig(profile).stream_params("reasoning"))
    found = s.feed(text) + s.finish()
    return len(found)


def _run_deltas(impl: str, profile: str, parts: tuple[str, ...]) -> int:
    s = loopcore.implementation(impl).ChannelStream(**TextConfig(profile).stream_params("reasoning"))
    feed = s.feed
    n = 0
    for part in parts:
        n += len(feed(part))
    return n + len(s.finish())


def _measure(benchmark, impl: str, run, *args) -> None:
    """The reference is slow: time it once; the compiled core gets pytest-benchmark's rounds."""
    if impl == "python":
        benchmark.pedantic(run, args=args, rounds=1, iterations=1)
    else:
        benchmark(run, *args)


@needs_core
@pytest.mark.benchmark(group="bulk")
@pytest.mark.parametrize("name", ["en", "zh", "late", "real"])
@pytest.mark.parametrize("impl", ["cython", "python"])
def test_bulk_100k(benchmark, impl: str, name: str) -> None:
    text = stream(name, 100_000)
    benchmark.extra_info.update(chars=len(text), impl=impl, stream=name, profile="default")
    _measure(benchmark, impl, _run_bulk, impl, "default", text)


@needs_core
@pytest.mark.benchmark(group="delta4")
@pytest.mark.parametrize("name", ["en", "zh"])
@pytest.mark.parametrize("impl", ["cython", "python"])
def test_delta4_100k(benchmark, impl: str, name: str) -> None:
    parts = pieces(name, 100_000, 4)
    benchmark.extra_info.update(chars=100_000, deltas=len(parts), impl=impl, stream=name, profile="default")
    _measure(benchmark, impl, _run_deltas, impl, "default", parts)


FLAT_SIZES = [10_000, 100_000, 1_000_000, 10_000_000]


@needs_core
@pytest.mark.benchmark(group="flat")
@pytest.mark.parametrize("size", FLAT_SIZES)
@pytest.mark.parametrize("name", ["en", "zh", "real"])
def test_flat_cost_per_char(benchmark, name: str, size: int) -> None:
    """``default``, one bulk ``feed``: the ns per code point (``report.py``'s ``ns/char``) should
    not grow with the stream from 10k to 10M code points.  ``real`` is the clean bench records
    joined (12.7M code points: 10M fit without repeating; were the corpus shorter,
    ``corpus.real_stream`` would repeat it, so the tail would re-feed text the stream saw
    millions of code points earlier -- far beyond every look-back window)."""
    text = stream(name, size)
    benchmark.extra_info.update(chars=size, impl="cython", stream=name, profile="default")
    benchmark(_run_bulk, "cython", "default", text)


@needs_core
@pytest.mark.benchmark(group="flat")
@pytest.mark.parametrize("size", [100_000, 1_000_000])
def test_flat_cost_per_char_late(benchmark, size: int) -> None:
    """The same with a verbatim loop over the last 20 % (the detectors keep running)."""
    name = "late"
    text = stream(name, size)
    benchmark.extra_info.update(chars=size, impl="cython", stream=name, profile="default")
    benchmark(_run_bulk, "cython", "default", text)


@needs_core
@pytest.mark.benchmark(group="profiles")
@pytest.mark.parametrize("profile", ["fuse", "rescue", "default"])
def test_profiles_en_1m(benchmark, profile: str) -> None:
    text = stream("en", 1_000_000)
    benchmark.extra_info.update(chars=len(text), impl="cython", stream="en", profile=profile)
    benchmark(_run_bulk, "cython", profile, text)


needs_real = pytest.mark.skipif(not corpus.real_available(), reason=corpus.real_missing_reason())


@lru_cache(maxsize=1)
def real_clean_records(total: int = 1_000_000) -> tuple[str, ...]:
    """The first clean records of ``../shared/data/real/bench`` (``corpus.real_texts``: files in
    name order) until ``total`` code points: real text, one generation per stream (issue 14's
    cost on real text)."""
    out: list[str] = []
    n = 0
    for text in corpus.real_texts():
        if n >= total:
            break
        out.append(text)
        n += len(text)
    return tuple(out)


def _run_records(profile: str, texts: tuple[str, ...]) -> int:
    params = TextConfig(profile).stream_params("reasoning")
    cls = loopcore.implementation("cython").ChannelStream
    n = 0
    for text in texts:
        s = cls(**params)
        n += len(s.feed(text)) + len(s.finish())
    return n


@needs_core
@needs_real
@pytest.mark.benchmark(group="profiles-real")
@pytest.mark.parametrize("profile", ["rescue", "default"])
def test_profiles_real_1m(benchmark, profile: str) -> None:
    """1M code points of clean bench records, a new stream per record (the target: ``default``
    within 1.5x ``rescue``; ``python benchmarks/report.py`` prints the ratio)."""
    texts = real_clean_records()
    benchmark.extra_info.update(chars=sum(map(len, texts)), impl="cython", stream="real", profile=profile)
    benchmark(_run_records, profile, texts)


@needs_core
@needs_real
@pytest.mark.benchmark(group="profiles-real-stream")
@pytest.mark.parametrize("profile", ["rescue", "default"])
def test_profiles_real_1m_one_stream(benchmark, profile: str) -> None:
    """The same records joined by blank lines into one stream of 1M code points (no per-stream
    setup: the detectors' own cost, and N's long lags across records)."""
    text = "\n\n".join(real_clean_records())
    benchmark.extra_info.update(chars=len(text), impl="cython", stream="real-joined", profile=profile)
    benchmark(_run_bulk, "cython", profile, text)


def _run_api(parts: tuple[str, ...]) -> int:
    from loopguard import TextLoopDetector

    det = TextLoopDetector("default")
    feed = det.feed
    n = 0
    for part in parts:
        n += len(feed(part, "reasoning"))
    return n + len(det.finish())


@needs_core
@pytest.mark.benchmark(group="api-delta4")
@pytest.mark.parametrize("name", ["en", "zh"])
def test_api_delta4_100k(benchmark, name: str) -> None:
    """``TextLoopDetector.feed`` (the public API) with 4-character deltas."""
    parts = pieces(name, 100_000, 4)
    benchmark.extra_info.update(chars=100_000, deltas=len(parts), impl="cython", stream=name, profile="default")
    benchmark(_run_api, parts)
