"""Cost of the exact loop brake (spec §5.1): ``LoopBrake.check`` per call and ``call_hash`` alone.

Run: ``pytest benchmarks/test_bench_brake.py --benchmark-only``.  Group ``brake``:

- ``check_small``: one ``check()`` of a small argument object, alternating two
  calls so the brake never denies (the steady state of a healthy agent);
- ``check_100k``: the same with a ~100 KB argument payload (a file body), where
  hashing dominates;
- ``call_hash_small`` / ``call_hash_100k``: the identity hash alone, for comparison.
"""

from __future__ import annotations

from typing import Any

import pytest

from loopguard.brake import LoopBrake
from loopguard.identity import call_hash

SMALL_A: dict[str, Any] = {"q": "weather in Paris", "limit": 10, "opts": {"lang": "en", "safe": True}}
SMALL_B: dict[str, Any] = {"q": "weather in Lyon", "limit": 10, "opts": {"lang": "en", "safe": True}}


def _payload(tag: str) -> dict[str, Any]:
    line = "def handler(event, context):  # a line of a source file being written\n"
    body = (line * (100_000 // len(line) + 1))[:100_000]
    return {"path": f"src/{tag}.py", "content": body, "mode": "overwrite"}


BIG_A = _payload("a")
BIG_B = _payload("b")


def _alternate(brake: LoopBrake, tool: str, a: Any, b: Any) -> int:
    return brake.check(tool, a, session_id="bench") + brake.check(tool, b, session_id="bench")


@pytest.mark.benchmark(group="brake")
def test_check_small(benchmark: Any) -> None:
    brake = LoopBrake(3)
    benchmark.extra_info.update(calls_per_round=2, arg_chars=len(str(SMALL_A)))
    assert benchmark(_alternate, brake, "search", SMALL_A, SMALL_B) == 2


@pytest.mark.benchmark(group="brake")
def test_check_100k(benchmark: Any) -> None:
    brake = LoopBrake(3)
    benchmark.extra_info.update(calls_per_round=2, arg_chars=len(BIG_A["content"]))
    assert benchmark(_alternate, brake, "write_file", BIG_A, BIG_B) == 2


@pytest.mark.benchmark(group="brake")
def test_call_hash_small(benchmark: Any) -> None:
    benchmark.extra_info.update(calls_per_round=1)
    assert len(benchmark(call_hash, "search", SMALL_A)) == 64


@pytest.mark.benchmark(group="brake")
def test_call_hash_100k(benchmark: Any) -> None:
    benchmark.extra_info.update(calls_per_round=1)
    assert len(benchmark(call_hash, "write_file", BIG_A)) == 64
