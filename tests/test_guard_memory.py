"""The tool guard's per-session memory is bounded by bytes, not by counts (issue 21, item 5).

``drift`` remembers the content lines of a session's recent results as hashes, at most
``DRIFT_BYTES`` of them; the ``error_avoidance`` watch holds hashes of the failed call's paths.
"""

from __future__ import annotations

import gc
import tracemalloc
from typing import Any

import pytest

from loopguard import ToolGuard, ToolGuardConfig
from loopguard.guard import drift
from loopguard.guard.state import DRIFT_BYTES

MB = 1 << 20


def _call(guard: ToolGuard, tool: str, args: Any, result: Any, error: bool = False) -> list[Any]:
    assert guard.before_call("s", tool, args).allowed
    return guard.after_call("s", tool, args, result, error=error)


def _state(guard: ToolGuard) -> Any:
    return guard._sessions["s"]


def test_twelve_one_line_10mb_results_hold_under_1mb() -> None:
    """Before: each 10 MB line was kept whole for drift (12 results: 95 MB held by one session)."""
    guard = ToolGuard()
    _call(guard, "warmup", {"i": -1}, "warm\nup\nlines")  # the session and its tables exist
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(12):
            result = chr(ord("a") + i) * (10 * MB)  # one line of 10 MB, a different one each time
            assert _call(guard, "fetch", {"page": i}, result) == []
            del result
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held < 1 * MB, held
    s = _state(guard)
    assert len(s.recent) == 10  # overlap_window results, as before: hashes of one line each
    assert all(len(entry[2]) == 1 and isinstance(next(iter(entry[2])), int) for entry in s.recent)
    assert s.recent_bytes == sum(entry[3] for entry in s.recent) <= DRIFT_BYTES


FIVE = "alpha\nbravo\ncharlie\ndelta\necho"


def test_drift_decisions_are_those_of_the_line_sets() -> None:
    """A hand-computed sequence (drift_confirm on): A's 5 lines; B (other key) returns them again
    -- a near-copy, first: no notice; C returns 4 of them -- Jaccard 4/5 = 0.8 < 0.9: nothing;
    D returns the 5 lines again within 3 executions of B -- a notice with overlap 1.0, 5 lines;
    E returns the 5 and a new line -- Jaccard 5/6, and a new line: nothing."""
    guard = ToolGuard()
    assert _call(guard, "lookup", {"q": "a"}, FIVE) == []
    assert _call(guard, "lookup", {"q": "b"}, FIVE) == []
    assert _call(guard, "lookup", {"q": "c"}, "alpha\nbravo\ncharlie\ndelta") == []
    (note,) = _call(guard, "query", {"q": "d"}, "echo\ndelta\ncharlie\nbravo\nalpha")
    assert (note.action, note.kind, note.rule, note.call_index) == ("notice", "drift", "drift", 3)
    assert note.evidence == {"overlap": 1.0, "lines": 5}
    assert _call(guard, "lookup", {"q": "e"}, FIVE + "\nfoxtrot") == []
    s = _state(guard)
    assert [entry[1] for entry in s.recent] == ["lookup", "lookup", "lookup", "query", "lookup"]
    assert s.recent[0][2] == frozenset(hash(x) for x in FIVE.split("\n"))  # hashes, not lines


def test_drift_memory_cap_forgets_the_oldest_and_skips_a_result_too_large(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a cap of 3 five-line results: the 4th pushes the 1st out (so its near-copy is no
    longer seen); a result whose hashes alone pass the cap is compared but not remembered."""
    five = drift.held_bytes(drift.hashed_lines(frozenset(FIVE.split("\n"))))
    monkeypatch.setattr(drift, "DRIFT_BYTES", 3 * five)
    guard = ToolGuard(ToolGuardConfig(drift_confirm=False))
    _call(guard, "lookup", {"q": "a"}, FIVE)
    for i in range(3):
        _call(guard, "other", {"i": i}, "\n".join(f"{w} {i}" for w in ("one", "two", "three", "four", "five")))
    s = _state(guard)
    assert [entry[1] for entry in s.recent] == ["other"] * 3 and s.recent_bytes == 3 * five
    assert _call(guard, "lookup", {"q": "b"}, FIVE) == []  # A's lines were forgotten: not a near-copy
    big = "\n".join(f"row {i}" for i in range(1000))
    before = list(s.recent)
    assert _call(guard, "dump", {}, big) == []
    assert list(s.recent) == before  # compared, not remembered
    # without the cap, the same sequence is drift at the 5th call (index 4)
    guard = ToolGuard(ToolGuardConfig(drift_confirm=False, overlap_window=10))
    monkeypatch.setattr(drift, "DRIFT_BYTES", DRIFT_BYTES)
    _call(guard, "lookup", {"q": "a"}, FIVE)
    for i in range(3):
        _call(guard, "other", {"i": i}, "\n".join(f"{w} {i}" for w in ("one", "two", "three", "four", "five")))
    (note,) = _call(guard, "lookup", {"q": "b"}, FIVE)
    assert (note.rule, note.call_index, note.evidence) == ("drift", 4, {"overlap": 1.0, "lines": 5})


def test_error_watch_holds_path_hashes_not_paths() -> None:
    """The error_avoidance watch keeps hashes of the failed call's paths; a call on the same path
    still counts as a remedy (no reminder), other calls still count as steps."""
    guard = ToolGuard(ToolGuardConfig(error_watch_steps=2))
    path = "/srv/app/" + "x" * 100_000 + ".py"
    _call(guard, "read_file", {"path": path}, "Error: permission denied", error=True)
    watch = _state(guard).watch
    assert watch is not None and hash(path) in watch[2] and all(isinstance(h, int) for h in watch[2])
    assert _call(guard, "write_file", {"path": path, "text": "y"}, "ok") == []  # same path: remedied
    assert _state(guard).watch is None
    _call(guard, "read_file", {"path": path}, "Error: permission denied", error=True)
    assert _call(guard, "list", {"dir": "/tmp"}, "a\nb") == []
    (note,) = _call(guard, "ping", {"q": "z"}, "c\nd")
    assert (note.rule, note.evidence) == ("error_avoidance", {"steps": 2})
