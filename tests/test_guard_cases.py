"""ToolGuard on the shared labelled tool cases and the real agent logs (issue 4 must-shows).

Truth comes from ``../shared/data/cases/index.json`` (``fire_by_call``,
``verdict``) and from the logs themselves (the SWE-agent ``eps.traj`` run
submits four times in a row with identical results).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import CASES, DATA, shared_data, shared_json
from loopguard.guard import ToolGuard
from loopguard.logs import read_log

pytestmark = shared_data

INDEX = shared_json("cases/index.json", [])
ENTRIES = INDEX if isinstance(INDEX, list) else INDEX["cases"]
TOOL_CASES = [e for e in ENTRIES if e["kind"] == "tool_calls"]


def replay(calls: list[dict[str, Any]]) -> list[tuple[int, str, str]]:
    """(call index, action, kind) of every non-allow decision and every intervention (spec §9)."""
    guard = ToolGuard()
    events: list[tuple[int, str, str]] = []
    for i, call in enumerate(calls):
        decision = guard.before_call("case", call["tool"], call["args"])
        if decision.action != "allow":
            assert decision.kind is not None
            events.append((i, decision.action, decision.kind))
        if decision.action in ("deny", "cancel"):
            continue
        for iv in guard.after_call("case", call["tool"], call["args"], call["result"], error=call.get("error", False)):
            events.append((i, iv.action, iv.kind))
    return events


def test_the_index_has_the_tool_cases_it_describes() -> None:
    assert len(TOOL_CASES) == 15
    assert sum(e["verdict"] == "loop" for e in TOOL_CASES) == 7


@pytest.mark.parametrize("entry", [e for e in TOOL_CASES if e["verdict"] == "loop"], ids=lambda e: e["file"][:3])
def test_loop_case_caught_by_fire_by_call(entry: dict[str, Any]) -> None:
    calls = json.loads((CASES / entry["file"]).read_text(encoding="utf-8"))
    events = replay(calls)
    assert events, "nothing fired"
    first = events[0][0]
    assert entry["loop_start_call"] <= first <= entry["fire_by_call"]
    # nothing stronger than a notice before the loop starts
    assert all(a == "notice" for i, a, _ in events if i < entry["loop_start_call"])


@pytest.mark.parametrize("entry", [e for e in TOOL_CASES if e["verdict"] == "not-loop"], ids=lambda e: e["file"][:3])
def test_not_loop_case_never_denied_or_cancelled(entry: dict[str, Any]) -> None:
    calls = json.loads((CASES / entry["file"]).read_text(encoding="utf-8"))
    assert [e for e in replay(calls) if e[1] in ("deny", "cancel")] == []


def test_exact_first_events_on_the_loop_cases() -> None:
    """First event per loop case, worked out from the rules (see loopguard.guard's docstring)."""
    expected = {
        # 2nd identical failing build (calls 2, 3) -> reminder; call 4 denied
        "035": [(3, "notice", "repeat"), (4, "deny", "repeat")],
        # first A/B reads are new information, so the chains start at calls 3/4 -> reminder at 4 and 5
        "036": [(4, "notice", "repeat"), (5, "notice", "repeat"), (6, "deny", "repeat")],
        "037": [(2, "notice", "repeat"), (3, "deny", "repeat")],
        # request_id/timestamp stripped: calls 1 and 2 are the same result
        "040": [(2, "notice", "repeat"), (3, "deny", "repeat")],
        # every reworded search after the first returns the same 5 lines: the first near-copy
        # (call 1) is no new information, the second one right after it is the notice (`drift` confirmed)
        "041": [(2, "notice", "drift"), (3, "notice", "drift")],
    }
    for entry in TOOL_CASES:
        prefix = entry["file"][:3]
        if prefix in expected:
            calls = json.loads((CASES / entry["file"]).read_text(encoding="utf-8"))
            got = replay(calls)[: len(expected[prefix])]
            assert got == expected[prefix], prefix


def _log_events(path: Path) -> list[tuple[int, str, str, str]]:
    out = []
    for conversation in read_log(path).conversations:
        guard = ToolGuard()
        for i, call in enumerate(conversation.tool_calls()):
            decision = guard.before_call("log", call.name, call.args)
            if decision.action != "allow":
                out.append((i, decision.action, str(decision.kind), call.name))
            if decision.action in ("deny", "cancel"):
                continue
            result = "" if call.result is None else call.result
            for iv in guard.after_call("log", call.name, call.args, result, error=bool(call.error)):
                out.append((i, iv.action, iv.kind, call.name))
    return out


def test_eps_traj_third_identical_submit_is_denied() -> None:
    events = _log_events(DATA / "real" / "swe-agent" / "eps.traj")
    denies = [e for e in events if e[1] in ("deny", "cancel")]
    # submits at calls 9-12 with identical results: reminder at 10, deny at 11, the escape run at 12 locks
    assert (10, "notice", "repeat", "submit") in events
    assert denies == [(11, "deny", "repeat", "submit")]
    assert (12, "notice", "locked", "submit") in events


@pytest.mark.parametrize(
    "path",
    [
        p
        for p in sorted((DATA / "real").glob("*/*"))
        if p.suffix in (".traj", ".jsonl") and p.name != "eps.traj" and p.parent.name != "reasoning"
    ],
    ids=lambda p: p.name[:24],
)
def test_other_real_logs_get_no_deny(path: Path) -> None:
    assert [e for e in _log_events(path) if e[1] in ("deny", "cancel")] == []
