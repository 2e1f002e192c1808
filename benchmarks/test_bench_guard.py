"""Cost of the ToolGuard (spec §5.2) per tool call, against the exact loop brake in the same run.

Run: ``pytest benchmarks/test_bench_guard.py --benchmark-only``.  Group ``guard``;
each round is one healthy agent step pair (two different calls, each
``before_call`` + ``after_call`` with a result), so the guard never denies:

- ``guard_small``: small arguments and a 3-line result;
- ``guard_10k_result``: small arguments and a 10 KB, 200-line result (a file
  read), where result normalisation, hashing and D2's line sets dominate;
- ``guard_json_result``: a JSON-like (dict) result with volatile fields;
- ``brake_small``: ``LoopBrake.check`` on the same calls (arguments only).
- ``guard_1000_sessions``: the small step spread over 1000 sessions (LRU).
"""

from __future__ import annotations

from typing import Any

import pytest

from loopguard.brake import LoopBrake
from loopguard.guard import ToolGuard

A: dict[str, Any] = {"pattern": "def handler", "path": "src/"}
B: dict[str, Any] = {"pattern": "class Handler", "path": "src/"}
SMALL_RESULT = "src/app.py:12: def handler(event):\nsrc/api.py:40: def handler(req):\nsrc/x.py:3: def handler():"
BIG_RESULT = "".join(f"{i:4d}  line {i} of the file being read, with some ordinary code on it\n" for i in range(200))
JSON_RESULT: dict[str, Any] = {
    "items": [{"id": i, "title": f"ticket {i}", "state": "open"} for i in range(20)],
    "request_id": "req_a1b2c3",
    "timestamp": "2026-11-29T12:00:00Z",
}


class _Step:
    """Two alternating calls whose results change each round, so nothing fires."""

    def __init__(self, guard: ToolGuard, result: str, sessions: int = 1) -> None:
        self.guard, self.result, self.sessions, self.n = guard, result, sessions, 0

    def __call__(self) -> int:
        self.n += 1
        sid = self.n % self.sessions
        fired = 0
        for args in (A, B):
            fired += self.guard.before_call(sid, "grep", args).action != "allow"
            result = f"{args['pattern']}\n{self.result}\nround {self.n}"  # each call's own, changing result
            fired += len(self.guard.after_call(sid, "grep", args, result))
        return fired


def _bench(benchmark: Any, result: str, sessions: int = 1) -> None:
    step = _Step(ToolGuard(), result, sessions)
    benchmark.extra_info.update(calls_per_round=2)
    assert benchmark(step) == 0  # a healthy agent: no notice, no deny


@pytest.mark.benchmark(group="guard")
def test_guard_small(benchmark: Any) -> None:
    _bench(benchmark, SMALL_RESULT)


@pytest.mark.benchmark(group="guard")
def test_guard_10k_result(benchmark: Any) -> None:
    _bench(benchmark, BIG_RESULT)


@pytest.mark.benchmark(group="guard")
def test_guard_1000_sessions(benchmark: Any) -> None:
    _bench(benchmark, SMALL_RESULT, sessions=1000)


@pytest.mark.benchmark(group="guard")
def test_guard_json_result(benchmark: Any) -> None:
    guard = ToolGuard()
    n = [0]

    def step() -> int:
        n[0] += 1
        fired = 0
        for args in (A, B):
            fired += guard.before_call("s", "search_tickets", args).action != "allow"
            result = {**JSON_RESULT, "query": args["pattern"], "page": n[0]}
            fired += len(guard.after_call("s", "search_tickets", args, result))
        return fired

    benchmark.extra_info.update(calls_per_round=2)
    assert benchmark(step) == 0


@pytest.mark.benchmark(group="guard")
def test_brake_small(benchmark: Any) -> None:
    brake = LoopBrake(3)

    def step() -> int:
        return brake.check("grep", A, session_id="s") + brake.check("grep", B, session_id="s")

    benchmark.extra_info.update(calls_per_round=2)
    assert benchmark(step) == 2
