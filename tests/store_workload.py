"""Tool-call sequences for the state-store tests and the load test: per session a seeded mix of
distinct calls, runs of identical calls with identical results (the ``repeat`` rule denies
them), A-B-A-B cycles, failures walked around, reworded searches and near-copy results, with a
canary secret in some arguments and results (it must never reach the store)."""

from __future__ import annotations

import random
from typing import Any

__all__ = ["CANARY", "Call", "decide", "repeated", "session_calls"]

CANARY = "sk-CANARY-7f3a9c1e5b2d4086"

# (tool, args, result, error)
Call = tuple[str, dict[str, Any], str, bool]

_WORDS = "alpha beta gamma delta parser config token cache router handler index schema queue".split()


def _lines(rng: random.Random, n: int, tag: str) -> str:
    return "\n".join(
        f"src/{rng.choice(_WORDS)}/{tag}_{i}.py:{rng.randint(1, 400)}: {rng.choice(_WORDS)}" for i in range(n)
    )


def _distinct(rng: random.Random, i: int) -> Call:
    kind = rng.randrange(4)
    if kind == 0:
        return (
            "grep",
            {"pattern": f"{rng.choice(_WORDS)}{i}", "path": "src"},
            _lines(rng, rng.randint(1, 6), f"g{i}"),
            False,
        )
    if kind == 1:
        return (
            "read_file",
            {"path": f"src/{rng.choice(_WORDS)}_{i}.py"},
            _lines(rng, rng.randint(3, 12), f"r{i}"),
            False,
        )
    if kind == 2:
        return (
            "search",
            {"query": f"{rng.choice(_WORDS)} {rng.choice(_WORDS)} {i}", "token": CANARY},
            f"{i} hits",
            False,
        )
    return ("list_dir", {"path": f"src/{i}"}, _lines(rng, 4, f"l{i}"), False)


def repeated(n: int) -> list[Call]:
    """``n`` times the same call with the same result (denied from the third on)."""
    return [("grep", {"pattern": "again", "path": "src"}, "src/a.py:1: again", False)] * n


def session_calls(seed: int, n: int = 50) -> list[Call]:
    """``n`` tool calls of one session (the same for the same ``seed``; a negative seed:
    :func:`repeated`)."""
    if seed < 0:
        return repeated(n)
    rng = random.Random(seed)
    calls: list[Call] = []
    i = 0
    while len(calls) < n:
        i += 1
        r = rng.random()
        if r < 0.3:  # the same call, the same result, 2 to 6 times
            calls += [_distinct(rng, i)] * rng.randint(2, 6)
        elif r < 0.42:  # A-B-A-B
            a, b = _distinct(rng, i), _distinct(rng, i + 1000)
            calls += [a, b] * rng.randint(2, 4)
        elif r < 0.52:  # a failure, then steps that do not remedy it
            err = f"Error: cannot open config {CANARY} (permission denied)"
            calls.append(("run_tests", {"target": f"t{i}", "env": CANARY}, err, True))
            calls += [_distinct(rng, i + 2000 + j) for j in range(rng.randint(2, 5))]
        elif r < 0.62:  # reworded searches with the same short answer
            base = [rng.choice(_WORDS) for _ in range(4)]
            for j in range(rng.randint(2, 4)):
                calls.append(("search", {"query": " ".join([*base, f"v{j}"])}, "no results", False))
        elif r < 0.72:  # near-copies: other keys, one multi-line result
            text = _lines(rng, 8, f"n{i}")
            calls += [("read_file", {"path": f"src/copy_{i}_{j}.py"}, text, False) for j in range(rng.randint(2, 4))]
        else:
            calls.append(_distinct(rng, i))
    return calls[:n]


def decide(guard: Any, session: str, index: int, call: Call) -> tuple[Any, ...]:
    """One call through ``guard`` (``before_call``, then ``after_call`` when allowed): a record of
    the decision and the interventions (actions, kinds and rules; never texts)."""
    tool, args, result, error = call
    d = guard.before_call(session, tool, args)
    out: list[tuple[str, str, str]] = []
    if d.allowed:
        out = [(x.action, x.kind, x.rule) for x in guard.after_call(session, tool, args, result, error=error)]
    return (index, d.action, d.kind, d.rule, d.call_index, tuple(out))
