"""ToolGuard (spec §5.2, §7; the rules of docs/rules.md: seed 001's, seed 002's, loopguard's cycles).

Every test replays a hand-built call sequence and asserts the exact outcome:
actions, kinds, rules, call indices, evidence numbers and hash prefixes
(computed here with :func:`loopguard.results.result_digest`).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from typing import Any

import pytest

from loopguard.errors import ConfigError
from loopguard.guard import GUARD_KINDS, GUARD_RULES, Decision, Intervention, ToolGuard, ToolGuardConfig
from loopguard.identity import action_fingerprint, call_hash, canonical_json
from loopguard.results import DEFAULT_VOLATILE_FIELDS, normalize_result, result_digest

ESCAPE = (
    "If you have concrete evidence that the world changed since the last run, repeat the exact "
    "call one more time and it will be executed exactly once."
)
NO_ESCAPE = "The escape run has been used and returned the same result: this call stays blocked in this session."
CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")

GREP = {"pattern": "needle", "path": "src"}
GREP_RESULT = "src/a.py:1550: needle here\nsrc/a.py:1755: needle again"
FIVE = "alpha\nbeta\ngamma\ndelta\nepsilon"


def h16(result: Any, *, error: bool = False) -> str:
    """The 16-hex hash prefix the guard quotes for ``result`` (default volatile fields)."""
    return result_digest(result, error=error)[:16]


def check_decision(d: Decision) -> Decision:
    """Invariants of every decision: known action, rule matches kind, text tagged."""
    assert d.action in ("allow", "notice", "deny", "cancel")
    if d.kind is None:
        assert (d.action, d.reason, d.rule) == ("allow", "", "")
    else:
        assert d.rule == GUARD_KINDS[d.kind] and d.rule in GUARD_RULES
    if d.action != "allow":
        assert d.reason.startswith("[loopguard]")
    assert d.allowed == (d.action in ("allow", "notice"))
    json.dumps(d.to_dict())  # JSON-ready
    return d


def check_interventions(ivs: list[Intervention]) -> list[Intervention]:
    for i in ivs:
        assert i.action in ("notice", "cancel")
        assert i.rule == GUARD_KINDS[i.kind] and i.rule in GUARD_RULES
        assert i.source == "loopguard"
        assert i.text.startswith("[loopguard]")
        json.dumps(i.to_dict())
    return ivs


class Harness:
    """Feeds calls through a guard like a host: before_call, then after_call unless not allowed."""

    def __init__(self, guard: ToolGuard | None = None, sid: Any = "s", **config: Any) -> None:
        self.guard = guard if guard is not None else ToolGuard(ToolGuardConfig(**config))
        self.sid = sid
        self.decisions: list[Decision] = []
        self.interventions: list[list[Intervention]] = []

    def call(
        self, tool: str, args: Any, result: Any = "ok", *, error: bool = False, sid: Any = None
    ) -> tuple[Decision, list[Intervention]]:
        """One call; the interventions are ``[]`` when the call was not allowed to run."""
        sid = self.sid if sid is None else sid
        d = check_decision(self.guard.before_call(sid, tool, args))
        ivs: list[Intervention] = []
        if d.allowed:
            ivs = check_interventions(self.guard.after_call(sid, tool, args, result, error=error))
        self.decisions.append(d)
        self.interventions.append(ivs)
        return d, ivs

    def request(self, tool: str, args: Any, *, sid: Any = None) -> Decision:
        """before_call only."""
        d = check_decision(self.guard.before_call(self.sid if sid is None else sid, tool, args))
        self.decisions.append(d)
        self.interventions.append([])
        return d


def summary(ivs: list[Intervention]) -> list[tuple[str, str, str, int]]:
    return [(i.action, i.kind, i.rule, i.call_index) for i in ivs]


def relaxed(**more: Any) -> dict[str, Any]:
    """The ``repeat`` rule relaxed so other rules can be seen (progress_resets_repeats stays default)."""
    return {"repeat_limit": 100, **more}


# =========================================================================== public surface


def test_rules_are_names_and_every_rule_produced_is_one() -> None:
    """``Decision.rule`` / ``Intervention.rule`` are rule names (``GUARD_RULES``), never seed codes."""
    import loopguard

    assert loopguard.GUARD_RULES is GUARD_RULES and "GUARD_RULES" in loopguard.__all__
    assert set(GUARD_KINDS.values()) == set(GUARD_RULES) and len(set(GUARD_RULES)) == len(GUARD_RULES)
    assert all(re.fullmatch(r"[a-z]+(_[a-z]+)*", rule) for rule in GUARD_RULES)
    now = [0.0]
    guard = ToolGuard(ToolGuardConfig(circuit_break_after=3, repeat_call_limit=4), clock=lambda: now[0])
    t = Harness(guard)
    t.call("grep", {"pattern": "x"})  # unscoped_search
    for _ in range(4):
        t.call("read", {"path": "a"}, "same")  # repeat, then repeat_streak
    for i in range(8):  # drift / no_progress / cycle / circuit_breaker on an A-B-A-B loop
        t.call("probe", {"n": i % 2}, FIVE)
    t.call("run", {"cmd": "x"}, "Traceback: boom in x.py", error=True)
    for i in range(3):
        t.call(f"other{i}", {}, f"r{i}")  # error_avoidance
    now[0] += 3600
    stall = guard.check_stall("s")
    strikes = [guard.strike("s", "text_loop") for _ in range(2)]
    produced = {d.rule for d in t.decisions if d.kind} | {i.rule for ivs in t.interventions for i in ivs}
    produced |= {iv.rule for iv in (stall, *strikes) if iv is not None}
    assert produced == set(GUARD_RULES)


def test_spec_public_surface_exports_toolguard() -> None:
    """spec §8: ``loopguard.ToolGuard(config)`` is public surface."""
    import loopguard

    assert loopguard.ToolGuard is ToolGuard
    assert "ToolGuard" in loopguard.__all__


def test_config_defaults_are_the_seed_table() -> None:
    c = ToolGuardConfig()
    assert (c.repeat_limit, c.escape_runs, c.notice_only, c.include) == (2, 1, False, ())
    assert c.exclude == ("job_output", "job_kill", "job_list", "ask_user_question", "schedule_*", "todo_write")
    assert c.search_tools == ("grep", "search", "search_file_content")
    assert c.scope_fields == ("path", "include")
    assert (c.unscoped_search, c.arguments_preview_chars, c.overlap_threshold, c.overlap_window) == (
        "deny",
        300,
        0.9,
        10,
    )
    assert (c.error_watch_steps, c.remedial_tools, c.anchor_window) == (3, ("read",), 5)
    assert (c.replay_detection, c.min_replay_chars, c.circuit_break_after) == (True, 100, 6)
    assert (c.repeat_call_limit, c.repeat_call_exempt) == (6, ("job_output", "job_list"))
    assert (c.stall_minutes, c.stall_minutes_with_tool, c.strikes_before_cancel, c.strike_window_minutes) == (
        10,
        45,
        2,
        120,
    )


# =========================================================================== `repeat`


def test_d1_second_identical_result_is_an_i1_notice_third_request_denied() -> None:
    t = Harness()
    d0, i0 = t.call("grep", GREP, GREP_RESULT)
    assert (d0.action, d0.kind, d0.call_index, i0) == ("allow", None, 0, [])
    d1, i1 = t.call("grep", GREP, GREP_RESULT)
    assert (d1.action, d1.call_index) == ("allow", 1)
    assert summary(i1) == [("notice", "repeat", "repeat", 1)]
    assert i1[0].evidence == {"count": 2, "hash": h16(GREP_RESULT)}
    assert i1[0].tool == "grep"
    assert i1[0].text == (
        f"[loopguard] `grep` with identical arguments has now returned byte-identical results 2 times "
        f"(hash {h16(GREP_RESULT)}). Running it again cannot bring new information; the next identical "
        f"call will be blocked. Use the result you already have and take a different step."
    )
    d2 = t.request("grep", GREP)
    assert (d2.action, d2.kind, d2.rule, d2.call_index, d2.tool) == ("deny", "repeat", "repeat", 2, "grep")
    assert d2.evidence == {"count": 2, "limit": 2, "hash": h16(GREP_RESULT), "replay": False}
    assert re.search(r"\(hash [0-9a-f]{16}\)", d2.reason)
    assert d2.reason == (
        "[loopguard] Duplicate tool call blocked: `grep` with identical arguments has already executed 2 "
        f"times and returned byte-identical results (hash {h16(GREP_RESULT)}). No new information can come "
        'from running it again. Arguments: {"path":"src","pattern":"needle"}\n'
        "Previous result (preserved in the conversation above): src/a.py:1550: needle here | "
        "src/a.py:1755: needle again\n"
        "Do NOT call `grep` with these arguments again. Take ONE different action that moves the task "
        "forward: call `read` on src/a.py (offset 1530) instead of searching again.\n" + ESCAPE
    )


def test_d1_alternative_without_a_match_line_is_generic_and_for_errors_names_the_error() -> None:
    t = Harness()
    t.call("bash", {"command": "make"}, "nothing to do")
    t.call("bash", {"command": "make"}, "nothing to do")
    assert (
        "read or edit a file, run a different command, use another tool, or ask the user."
        in t.request("bash", {"command": "make"}).reason
    )
    t.call("bash", {"command": "make test"}, "boom", error=True)
    t.call("bash", {"command": "make test"}, "boom", error=True)
    d = t.request("bash", {"command": "make test"})
    assert d.evidence["hash"] == h16("boom", error=True) != h16("boom")
    assert "read the file or output the error names and fix its cause before running this again." in d.reason


def test_d1_escape_run_same_result_locks_the_key() -> None:
    t = Harness(circuit_break_after=1000, repeat_call_limit=1000)
    t.call("grep", GREP, GREP_RESULT)
    t.call("grep", GREP, GREP_RESULT)
    assert t.request("grep", GREP).action == "deny"
    d3, i3 = t.call("grep", GREP, GREP_RESULT)  # insisting right after the deny
    assert (d3.action, d3.kind, d3.rule, d3.call_index, d3.reason) == ("allow", "repeat", "repeat", 3, "")
    assert d3.evidence == {"escape_run": True, "count": 2, "hash": h16(GREP_RESULT)}
    assert summary(i3) == [("notice", "locked", "repeat", 3)]
    assert i3[0].evidence == {"count": 3, "hash": h16(GREP_RESULT)}
    assert h16(GREP_RESULT) in i3[0].text and "blocked for the rest of this session" in i3[0].text
    for index in range(4, 14):
        d = t.request("grep", GREP)
        assert (d.action, d.kind, d.rule, d.call_index) == ("deny", "locked", "repeat", index)
        assert d.evidence == {"count": 3, "hash": h16(GREP_RESULT), "locked": True}
        assert NO_ESCAPE in d.reason and ESCAPE not in d.reason
        assert "Arguments:" not in d.reason


def test_d1_escape_run_with_a_different_result_resets_the_chain() -> None:
    r2 = "src/a.py:1551: needle moved"
    t = Harness()
    t.call("grep", GREP, GREP_RESULT)
    t.call("grep", GREP, GREP_RESULT)
    assert t.request("grep", GREP).action == "deny"
    d3, i3 = t.call("grep", GREP, r2)
    assert (d3.action, d3.evidence["escape_run"], i3) == ("allow", True, [])
    # the chain starts again at 1 with r2; the key's result has changed, so polling_grace (1) applies:
    d4, i4 = t.call("grep", GREP, r2)  # count 2
    assert (d4.action, d4.kind, i4) == ("allow", None, [])
    d5, i5 = t.call("grep", GREP, r2)  # count 3 = repeat_limit + grace
    assert d5.action == "allow" and summary(i5) == [("notice", "repeat", "repeat", 5)]
    assert i5[0].evidence == {"count": 3, "hash": h16(r2)}
    d6 = t.request("grep", GREP)
    assert (d6.action, d6.kind, d6.evidence) == (
        "deny",
        "repeat",
        {"count": 3, "limit": 3, "hash": h16(r2), "replay": False},
    )
    assert ESCAPE in d6.reason  # a new chain has a new escape run


def test_d1_escape_run_different_result_with_polling_grace_zero_counts_from_one() -> None:
    r2 = "other result"
    t = Harness(polling_grace=0)
    t.call("grep", GREP, GREP_RESULT)
    t.call("grep", GREP, GREP_RESULT)
    t.request("grep", GREP)
    t.call("grep", GREP, r2)  # escape run, new chain: count 1
    d4, i4 = t.call("grep", GREP, r2)  # count 2
    assert summary(i4) == [("notice", "repeat", "repeat", 4)] and i4[0].evidence["count"] == 2
    assert t.request("grep", GREP).action == "deny"


def test_d1_escape_runs_zero_never_lets_the_call_through() -> None:
    t = Harness(escape_runs=0, circuit_break_after=1000, repeat_call_limit=1000)
    t.call("grep", GREP, GREP_RESULT)
    t.call("grep", GREP, GREP_RESULT)
    for index in (2, 3, 4):
        d = t.request("grep", GREP)
        assert (d.action, d.kind, d.call_index) == ("deny", "repeat", index)
        assert NO_ESCAPE in d.reason and ESCAPE not in d.reason


def test_d1_polling_with_a_changing_result_is_never_denied() -> None:
    t = Harness()
    for i in range(50):
        d, ivs = t.call("job_status", {"id": 7}, f"{i} of 50 replicas ready")
        assert (d.action, d.kind, d.call_index, ivs) == ("allow", None, i, [])


def test_d1_polling_grace_gives_a_changed_key_one_more_identical_result() -> None:
    t = Harness()
    args = {"id": 7}
    assert t.call("rollout_status", args, "1 of 6 ready")[1] == []
    assert t.call("rollout_status", args, "2 of 6 ready")[1] == []
    d2, i2 = t.call("rollout_status", args, "2 of 6 ready")  # count 2 < 2 + grace
    assert (d2.action, i2) == ("allow", [])
    d3, i3 = t.call("rollout_status", args, "2 of 6 ready")  # allowed: the grace call
    assert d3.action == "allow" and summary(i3) == [("notice", "repeat", "repeat", 3)]
    assert i3[0].evidence == {"count": 3, "hash": h16("2 of 6 ready")}
    d4 = t.request("rollout_status", args)
    assert (d4.action, d4.kind, d4.evidence["limit"], d4.evidence["count"]) == ("deny", "repeat", 3, 3)


def test_d1_polling_grace_zero_is_the_seed_rule() -> None:
    t = Harness(polling_grace=0)
    args = {"id": 7}
    t.call("rollout_status", args, "1 of 6 ready")
    t.call("rollout_status", args, "2 of 6 ready")
    d2, i2 = t.call("rollout_status", args, "2 of 6 ready")
    assert summary(i2) == [("notice", "repeat", "repeat", 2)]
    d3 = t.request("rollout_status", args)
    assert (d3.action, d3.evidence["limit"], d3.evidence["count"]) == ("deny", 2, 2)


def test_d1_progress_resets_repeats_after_an_edit_rerunning_the_test_is_allowed() -> None:
    test, fail = {"command": "pytest -q"}, "FAILED tests/test_x.py::test_a"
    t = Harness()
    t.call("bash", test, fail)
    t.call("edit", {"path": "a.py", "old": "x", "new": "y"}, "edited a.py")
    d2, i2 = t.call("bash", test, fail)  # same result, but the world changed in between
    assert (d2.action, i2) == ("allow", [])
    t.call("edit", {"path": "a.py", "old": "y", "new": "z"}, "edited a.py (2)")
    d4, i4 = t.call("bash", test, fail)
    assert (d4.action, i4) == ("allow", [])
    d5, i5 = t.call("bash", test, fail)  # now two identical results in a row with nothing in between
    assert d5.action == "allow" and summary(i5) == [("notice", "repeat", "repeat", 5)]
    assert t.request("bash", test).action == "deny"


def test_d1_progress_resets_repeats_false_is_the_seed_rule() -> None:
    test, fail = {"command": "pytest -q"}, "FAILED tests/test_x.py::test_a"
    t = Harness(progress_resets_repeats=False)
    t.call("bash", test, fail)
    t.call("edit", {"path": "a.py", "old": "x", "new": "y"}, "edited a.py")
    d2, i2 = t.call("bash", test, fail)
    assert summary(i2) == [("notice", "repeat", "repeat", 2)]
    d3 = t.request("bash", test)
    assert (d3.action, d3.kind, d3.call_index) == ("deny", "repeat", 3)


def test_d1_progress_elsewhere_unlocks_a_locked_key_unless_seed_rule() -> None:
    for resets, expected in ((True, ("allow", None)), (False, ("deny", "locked"))):
        t = Harness(progress_resets_repeats=resets, circuit_break_after=1000, repeat_call_limit=1000)
        for _ in range(2):
            t.call("grep", GREP, GREP_RESULT)
        t.request("grep", GREP)
        t.call("grep", GREP, GREP_RESULT)  # escape run, same result: locked
        assert t.request("grep", GREP).kind == "locked"
        t.call("edit", {"path": "src/a.py", "old": "a", "new": "b"}, "edited")  # new information
        d = t.request("grep", GREP)
        assert (d.action, d.kind) == expected, resets


def test_d1_notice_only_turns_every_deny_into_a_notice() -> None:
    t = Harness(notice_only=True, circuit_break_after=1000, repeat_call_limit=1000)
    t.call("grep", GREP, GREP_RESULT)
    t.call("grep", GREP, GREP_RESULT)
    for index in range(2, 8):
        d, _ = t.call("grep", GREP, GREP_RESULT)
        assert (d.action, d.kind, d.rule, d.call_index) == ("notice", "repeat", "repeat", index)
        assert d.allowed
        assert d.reason.startswith("[loopguard] Duplicate tool call blocked: `grep`")
        assert d.evidence["count"] == index  # every run counts
    assert all(d.action != "deny" for d in t.decisions)


def test_d1_repeat_limit_3() -> None:
    t = Harness(repeat_limit=3)
    assert t.call("grep", GREP, GREP_RESULT)[1] == []
    assert t.call("grep", GREP, GREP_RESULT)[1] == []
    d2, i2 = t.call("grep", GREP, GREP_RESULT)
    assert summary(i2) == [("notice", "repeat", "repeat", 2)] and i2[0].evidence["count"] == 3
    d3 = t.request("grep", GREP)
    assert (d3.action, d3.call_index, d3.evidence) == (
        "deny",
        3,
        {"count": 3, "limit": 3, "hash": h16(GREP_RESULT), "replay": False},
    )
    assert "already executed 3 times" in d3.reason


def test_d1_arguments_as_json_string_and_reordered_dict_are_one_key() -> None:
    t = Harness()
    t.call("grep", '{"pattern": "needle", "path": "src"}', GREP_RESULT)
    d1, i1 = t.call("grep", {"path": "src", "pattern": "needle"}, GREP_RESULT)
    assert summary(i1) == [("notice", "repeat", "repeat", 1)]
    d2 = t.request("grep", '{"path":"src","pattern":"needle"}')
    assert (d2.action, d2.kind) == ("deny", "repeat")
    assert call_hash("grep", '{"pattern": "needle", "path": "src"}') == call_hash(
        "grep", {"path": "src", "pattern": "needle"}
    )


def test_d1_other_arguments_are_another_key() -> None:
    t = Harness()
    t.call("grep", GREP, GREP_RESULT)
    d, ivs = t.call("grep", {**GREP, "path": "lib"}, GREP_RESULT)
    assert (d.action, ivs) == ("allow", [])


# =========================================================================== result normalisation


def test_results_differing_only_in_request_id_and_timestamp_are_the_same() -> None:
    a = '{"ok": false, "error": "quota", "request_id": "req_1", "timestamp": "2025-06-03T14:12:05Z"}'
    b = '{"ok": false, "error": "quota", "request_id": "req_2", "timestamp": "2025-06-03T14:12:09Z"}'
    assert result_digest(a) == result_digest(b)
    da = {"ok": False, "error": {"code": 429, "requestId": "r1"}, "timestamp": 1717423925}
    db = {"ok": False, "error": {"code": 429, "requestId": "r2"}, "timestamp": 1717423999}
    assert result_digest(da) == result_digest(db)
    t = Harness()
    t.call("http_get", {"url": "https://api.example.com/x"}, a)
    assert summary(t.call("http_get", {"url": "https://api.example.com/x"}, b)[1]) == [
        ("notice", "repeat", "repeat", 1)
    ]
    t.call("api", {"op": 1}, da)
    _, ivs = t.call("api", {"op": 1}, db)
    assert summary(ivs) == [("notice", "repeat", "repeat", 3)]
    assert ivs[0].evidence["hash"] == h16(da) == h16(db)


def test_results_2_of_6_and_3_of_6_are_different() -> None:
    assert result_digest("2 of 6 replicas ready (took 1.5s)") != result_digest("3 of 6 replicas ready (took 1.5s)")
    assert result_digest("2 of 6 replicas ready (took 1.5s)") == result_digest("2 of 6 replicas ready (took 2.7s)")
    t = Harness()
    t.call("status", {}, "2 of 6 replicas ready")
    assert t.call("status", {}, "3 of 6 replicas ready")[1] == []


def test_volatile_result_fields_by_tool_replaces_the_default_for_matching_tools() -> None:
    cfg = ToolGuardConfig(volatile_result_fields_by_tool={"http_*": ["nonce"]})
    assert cfg.volatile_fields_for("http_get") == ("nonce",)
    assert cfg.volatile_fields_for("bash") == tuple(DEFAULT_VOLATILE_FIELDS)
    t = Harness(ToolGuard(cfg))
    t.call("http_get", {"u": 1}, {"body": "x", "nonce": "n1"})
    assert summary(t.call("http_get", {"u": 1}, {"body": "x", "nonce": "n2"})[1]) == [("notice", "repeat", "repeat", 1)]
    # request_id is no longer volatile for http_*:
    t.call("http_get", {"u": 2}, {"body": "x", "request_id": "r1"})
    assert t.call("http_get", {"u": 2}, {"body": "x", "request_id": "r2"})[1] == []
    # other tools keep the default list: nonce matters, request_id does not
    t.call("fetch", {"u": 1}, {"body": "x", "nonce": "n1"})
    assert t.call("fetch", {"u": 1}, {"body": "x", "nonce": "n2"})[1] == []
    t.call("fetch", {"u": 2}, {"body": "x", "request_id": "r1"})
    assert summary(t.call("fetch", {"u": 2}, {"body": "x", "request_id": "r2"})[1]) == [
        ("notice", "repeat", "repeat", 7)
    ]


def test_normalize_results_false_makes_request_id_matter() -> None:
    t = Harness(normalize_results=False)
    t.call("api", {"op": 1}, {"error": "quota", "request_id": "r1"})
    assert t.call("api", {"op": 1}, {"error": "quota", "request_id": "r2"})[1] == []
    t.call("api", {"op": 2}, {"error": "quota", "request_id": "r3"})
    _, ivs = t.call("api", {"op": 2}, {"error": "quota", "request_id": "r3"})
    raw = result_digest({"error": "quota", "request_id": "r3"}, volatile_fields=None)
    assert raw != result_digest({"error": "quota", "request_id": "r3"})
    assert summary(ivs) == [("notice", "repeat", "repeat", 3)] and ivs[0].evidence["hash"] == raw[:16]


def test_bytes_results_utf8_and_not_utf8() -> None:
    assert result_digest("données\n".encode()) == result_digest("données\n")
    t = Harness()
    t.call("cat", {"path": "a"}, "données\n".encode())
    _, ivs = t.call("cat", {"path": "a"}, "données\n")
    assert summary(ivs) == [("notice", "repeat", "repeat", 1)]
    blob = b"\xff\xfe\x00binary\x80"
    assert result_digest(blob) == result_digest(bytearray(blob)) != result_digest(blob + b"!")
    t.call("cat", {"path": "b"}, blob)
    _, ivs = t.call("cat", {"path": "b"}, blob)
    assert summary(ivs) == [("notice", "repeat", "repeat", 3)] and ivs[0].evidence["hash"] == h16(blob)
    t.call("cat", {"path": "c"}, blob)
    assert t.call("cat", {"path": "c"}, blob + b"!")[1] == []


# =========================================================================== replay mode

LONG_REASONING = "I am stuck on the same grep again, I should switch to read and move forward. " * 2


def test_d1_prime_replay_lowers_the_deny_threshold_to_1() -> None:
    g = ToolGuard()
    t = Harness(g)
    for expected in (False, True):
        assert (
            g.observe_attempt("s", reasoning=LONG_REASONING, text="Searching.", tool_calls=[("grep", GREP)]) is expected
        )
    assert g.replay_mode("s") is True
    d0, i0 = t.call("grep", GREP, GREP_RESULT)
    assert (d0.action, i0) == ("allow", [])
    d1 = t.request("grep", GREP)
    assert (d1.action, d1.kind, d1.rule, d1.call_index) == ("deny", "repeat", "repeat", 1)
    assert d1.evidence == {"count": 1, "limit": 1, "hash": h16(GREP_RESULT), "replay": True}
    assert "Your last two steps were replayed verbatim (reasoning, text and calls), so the limit is 1." in d1.reason
    assert "already executed 1 times" in d1.reason and ESCAPE in d1.reason


def test_d1_prime_min_replay_chars_boundary() -> None:
    g = ToolGuard()
    assert g.observe_attempt("a", reasoning="r" * 60, text="t" * 40) is False
    assert g.observe_attempt("a", reasoning="r" * 60, text="t" * 40) is True  # exactly 100
    assert g.observe_attempt("b", reasoning="r" * 59, text="t" * 40) is False
    assert g.observe_attempt("b", reasoning="r" * 59, text="t" * 40) is False  # 99: never
    assert g.observe_attempt("b", reasoning="r" * 59, text="t" * 40) is False
    assert g.replay_mode("b") is False


def test_d1_prime_a_differing_attempt_turns_replay_off() -> None:
    g = ToolGuard()
    t = Harness(g)
    g.observe_attempt("s", reasoning=LONG_REASONING)
    assert g.observe_attempt("s", reasoning=LONG_REASONING) is True
    assert g.observe_attempt("s", reasoning=LONG_REASONING + " Now read.") is False
    assert g.replay_mode("s") is False
    t.call("grep", GREP, GREP_RESULT)
    d, ivs = t.call("grep", GREP, GREP_RESULT)  # limit back to 2
    assert d.action == "allow" and summary(ivs) == [("notice", "repeat", "repeat", 1)]
    # a different tool call with the same text also differs
    g.observe_attempt("s", reasoning=LONG_REASONING, tool_calls=[("grep", GREP)])
    assert g.observe_attempt("s", reasoning=LONG_REASONING, tool_calls=[("grep", {**GREP, "path": "lib"})]) is False


def test_d1_prime_replay_detection_false() -> None:
    g = ToolGuard(ToolGuardConfig(replay_detection=False))
    for _ in range(3):
        assert g.observe_attempt("s", reasoning=LONG_REASONING, tool_calls=[("grep", GREP)]) is False
    assert g.replay_mode("s") is False
    t = Harness(g)
    t.call("grep", GREP, GREP_RESULT)
    assert t.request("grep", GREP).action == "allow"


# =========================================================================== `drift`


def test_d2_two_keys_same_five_line_result_is_drift() -> None:
    t = Harness(drift_confirm=False)  # seed 001: every near-copy
    assert t.call("lookup", {"q": "a"}, FIVE)[1] == []
    _, ivs = t.call("lookup", {"q": "b"}, FIVE)
    assert summary(ivs) == [("notice", "drift", "drift", 1)]
    assert ivs[0].evidence == {"overlap": 1.0, "lines": 5}
    assert ivs[0].text == (
        "[loopguard] `lookup` returned the same lines as an earlier `lookup` call (100% line overlap, "
        "5 lines): rewording the call does not bring new information. Work with the result you already "
        "have, or change what you ask for."
    )


def test_d2_results_with_fewer_than_3_lines_never_drift() -> None:
    t = Harness()
    t.call("lookup", {"q": "a"}, "alpha\nbeta")
    assert t.call("lookup", {"q": "b"}, "alpha\nbeta")[1] == []
    assert t.call("lookup", {"q": "c"}, "alpha\n\n  \nbeta\n")[1] == []  # blank lines do not count


def lines(n: int, prefix: str = "line") -> str:
    return "\n".join(f"{prefix} {i}" for i in range(1, n + 1))


def test_d2_jaccard_exactly_at_threshold_fires() -> None:
    # A = 10 lines, B = its first 9: |A ∩ B| = 9, |A ∪ B| = 10 → 0.9
    t = Harness(drift_confirm=False)
    t.call("lookup", {"q": "a"}, lines(10))
    _, ivs = t.call("lookup", {"q": "b"}, lines(9))
    assert summary(ivs) == [("notice", "drift", "drift", 1)]
    assert ivs[0].evidence == {"overlap": 0.9, "lines": 9}


def test_d2_jaccard_below_threshold_does_not_fire() -> None:
    # A = 10 lines, B = its first 8: |A ∩ B| = 8, |A ∪ B| = 10 → 0.8 < 0.9
    t = Harness(drift_confirm=False)
    t.call("lookup", {"q": "a"}, lines(10))
    assert t.call("lookup", {"q": "b"}, lines(8))[1] == []
    # …but it does with overlap_threshold=0.8
    t = Harness(overlap_threshold=0.8, drift_confirm=False)
    t.call("lookup", {"q": "a"}, lines(10))
    _, ivs = t.call("lookup", {"q": "b"}, lines(8))
    assert summary(ivs) == [("notice", "drift", "drift", 1)] and ivs[0].evidence == {"overlap": 0.8, "lines": 8}


def test_d2_only_within_overlap_window() -> None:
    for fillers, expected in ((9, [("notice", "drift", "drift", 10)]), (10, [])):
        t = Harness(drift_confirm=False)
        t.call("lookup", {"q": "a"}, FIVE)
        for i in range(fillers):
            t.call("other", {"i": i}, f"filler {i}")
        _, ivs = t.call("lookup", {"q": "b"}, FIVE)
        assert summary(ivs) == [(a, k, r, fillers + 1) for a, k, r, _ in expected], fillers


def test_d2_overlap_window_config() -> None:
    t = Harness(overlap_window=2)
    t.call("lookup", {"q": "a"}, FIVE)
    t.call("other", {"i": 1}, "x")
    t.call("other", {"i": 2}, "y")
    assert t.call("lookup", {"q": "b"}, FIVE)[1] == []


def test_d2_a_result_adding_a_new_line_is_not_drift() -> None:
    """loopguard refinement (loopguard.guard's docstring): Jaccard 10/11 ≥ 0.9, but the result brings a new line."""
    t = Harness()
    t.call("read", {"path": "a.py"}, lines(10))
    _, ivs = t.call("edit", {"path": "a.py", "old": "x", "new": "y"}, lines(10) + "\nline NEW")
    assert ivs == []


def test_d2_same_key_is_d1s_business_not_drift() -> None:
    t = Harness()
    t.call("lookup", {"q": "a"}, FIVE)
    _, ivs = t.call("lookup", {"q": "a"}, FIVE)
    assert [i.kind for i in ivs] == ["repeat"]


# =========================================================================== `error_avoidance`

EDIT_A = {"path": "a.py", "old": "x", "new": "y"}


def test_d3_failure_then_three_non_remedial_calls() -> None:
    t = Harness()
    assert t.call("edit", EDIT_A, "file has not been read", error=True)[1] == []
    assert t.call("grep", {"pattern": "foo", "path": "src"}, "src/b.py:3: foo")[1] == []
    assert t.call("grep", {"pattern": "bar", "path": "src"}, "src/b.py:9: bar")[1] == []
    _, ivs = t.call("bash", {"command": "ls"}, "a.py b.py")
    assert summary(ivs) == [("notice", "error_avoidance", "error_avoidance", 3)]
    assert ivs[0].evidence == {"steps": 3} and ivs[0].tool == "bash"
    assert ivs[0].text.startswith(
        "[loopguard] `edit` failed 3 calls ago and nothing since has addressed the error (no `read`"
    )
    assert t.call("bash", {"command": "pwd"}, "/w")[1] == []  # the watch is over


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("read", {"path": "b.py"}),  # a remedial tool (any path)
        ("bash", {"command": "cat a.py"}),  # shares the path a.py with the failed call
        ("view", {"file": "a.py", "lines": "1-40"}),
        ("edit", {"path": "b.py", "old": "1", "new": "2"}),  # a successful call of the failed tool
    ],
)
def test_d3_remedial_action_clears_the_watch(tool: str, args: dict[str, Any]) -> None:
    t = Harness()
    t.call("edit", EDIT_A, "file has not been read", error=True)
    t.call("grep", {"pattern": "foo", "path": "src"}, "src/b.py:3: foo")
    assert t.call(tool, args, "remedy output")[1] == []
    assert t.call("bash", {"command": "ls"}, "a.py b.py")[1] == []
    assert t.call("bash", {"command": "pwd"}, "/w")[1] == []
    assert all(i.kind != "error_avoidance" for ivs in t.interventions for i in ivs)


def test_d3_error_watch_steps_config_and_a_later_failure_starts_a_new_watch() -> None:
    t = Harness(error_watch_steps=2)
    t.call("edit", EDIT_A, "file has not been read", error=True)
    t.call("bash", {"command": "ls"}, "x")
    t.call("fetch", {"url": "https://example.com/doc"}, "y", error=True)  # new watch
    assert t.call("bash", {"command": "pwd"}, "/w")[1] == []
    _, ivs = t.call("bash", {"command": "whoami"}, "me")
    assert summary(ivs) == [("notice", "error_avoidance", "error_avoidance", 4)] and ivs[0].evidence == {"steps": 2}
    assert "`fetch` failed 2 calls ago" in ivs[0].text


# =========================================================================== `no_progress`


def test_d4_anchor_after_five_calls_without_new_information_and_a_new_result_resets() -> None:
    t = Harness(**relaxed(repeat_call_limit=1000))
    args = {"id": 1}
    assert t.call("status", args, "same")[1] == []  # new information
    for i in range(1, 5):
        assert t.call("status", args, "same")[1] == [], i
    _, ivs = t.call("status", args, "same")  # 5th call without new information
    assert summary(ivs) == [("notice", "no_progress", "no_progress", 5)]
    assert ivs[0].evidence == {"window": 5}
    text = ivs[0].text
    assert text.startswith("[loopguard] The last 5 tool calls brought no new information.")
    assert "- Goal:" in text and "- Done:" in text and "- Next:" in text
    for i in range(6, 9):
        assert t.call("status", args, "same")[1] == [], i
    assert t.call("status", args, "changed")[1] == []  # call 9: new information resets the count
    for i in range(10, 14):
        assert t.call("status", args, "same")[1] == [], i
    _, ivs = t.call("status", args, "same")
    assert summary(ivs) == [("notice", "no_progress", "no_progress", 14)]


def test_d4_anchor_window_config() -> None:
    t = Harness(**relaxed(anchor_window=2))
    t.call("status", {}, "same")
    assert t.call("status", {}, "same")[1] == []
    assert summary(t.call("status", {}, "same")[1]) == [("notice", "no_progress", "no_progress", 2)]


# =========================================================================== `unscoped_search`


def test_d5_grep_without_scope_is_denied() -> None:
    t = Harness(circuit_break_after=1000)
    d = t.request("grep", {"pattern": "TODO"})
    assert (d.action, d.kind, d.rule, d.call_index) == ("deny", "unscoped_search", "unscoped_search", 0)
    assert d.evidence == {"scope_fields": ["path", "include"]}
    assert d.reason == (
        "[loopguard] Unscoped search blocked: `grep` without `path` / `include` would search everything "
        "(dependencies and build output included) and flood the context. Arguments: "
        '{"pattern":"TODO"} Repeat the search with a `path` that names the directory or files you mean.'
    )
    for args in ({"pattern": "TODO", "path": ""}, {"pattern": "TODO", "include": None}, "TODO"):
        assert t.request("grep", args).kind == "unscoped_search"
    for tool in ("search", "search_file_content"):
        assert t.request(tool, {"query": "x"}).kind == "unscoped_search"


@pytest.mark.parametrize("args", [{"pattern": "TODO", "path": "src"}, {"pattern": "TODO", "include": "*.py"}])
def test_d5_scoped_search_is_allowed(args: dict[str, Any]) -> None:
    d, ivs = Harness().call("grep", args, "src/x.py:1: TODO")
    assert (d.action, d.kind, ivs) == ("allow", None, [])


def test_d5_unscoped_search_allow() -> None:
    d, _ = Harness(unscoped_search="allow").call("grep", {"pattern": "TODO"}, "x")
    assert (d.action, d.kind) == ("allow", None)


def test_d5_search_tool_globs_are_case_sensitive_Grep_is_not_grep() -> None:
    d, _ = Harness().call("Grep", {"pattern": "TODO"}, "x")
    assert (d.action, d.kind) == ("allow", None)


def test_d5_custom_search_tools_and_scope_fields() -> None:
    t = Harness(search_tools=["rg*"], scope_fields=["glob"])
    assert t.request("rg_search", {"pattern": "x", "path": "src"}).kind == "unscoped_search"
    assert t.request("rg_search", {"pattern": "x", "glob": "*.py"}).action == "allow"
    assert t.request("grep", {"pattern": "x"}).action == "allow"
    assert "without `glob`" in t.decisions[0].reason


# =========================================================================== `circuit_breaker`


def test_i5_consecutive_denies_without_progress_cancel() -> None:
    t = Harness()
    for index in range(5):
        d = t.request("grep", {"pattern": f"p{index}"})
        assert (d.action, d.kind) == ("deny", "unscoped_search")
    d = t.request("grep", {"pattern": "p5"})
    assert (d.action, d.kind, d.rule, d.call_index) == ("cancel", "circuit_breaker", "circuit_breaker", 5)
    assert d.evidence == {"scope_fields": ["path", "include"], "interventions": 6}
    assert d.reason.startswith("[loopguard] Unscoped search blocked")
    assert d.reason.endswith(
        "\n[loopguard] Circuit breaker: 6 interventions in a row without any progress. Stop calling tools "
        "now. Tell the user what you were trying to do, what you found, and where you are stuck, and ask "
        "how to proceed."
    )
    assert not d.allowed
    # the count starts again after the breaker
    assert [t.request("grep", {"pattern": "q"}).action for _ in range(5)] == ["deny"] * 5
    assert t.request("grep", {"pattern": "q"}).action == "cancel"


def test_i5_new_information_resets_the_count() -> None:
    t = Harness()
    for i in range(5):
        t.request("grep", {"pattern": f"p{i}"})
    t.call("grep", {"pattern": "p", "path": "src"}, "src/a.py:1: p")  # progress
    assert [t.request("grep", {"pattern": f"q{i}"}).action for i in range(5)] == ["deny"] * 5
    d = t.request("grep", {"pattern": "q5"})
    assert (d.kind, d.call_index, d.evidence["interventions"]) == ("circuit_breaker", 11, 6)


def test_i5_breaker_as_an_intervention_after_a_call() -> None:
    t = Harness(drift_confirm=False)
    t.call("lookup", {"q": 0}, FIVE)
    for i in range(1, 5):
        assert summary(t.call("lookup", {"q": i}, FIVE)[1]) == [("notice", "drift", "drift", i)]
    assert summary(t.call("lookup", {"q": 5}, FIVE)[1]) == [
        ("notice", "drift", "drift", 5),
        ("notice", "no_progress", "no_progress", 5),
    ]
    d, ivs = t.call("lookup", {"q": 6}, FIVE)
    assert d.action == "allow"
    assert summary(ivs) == [("notice", "drift", "drift", 6), ("cancel", "circuit_breaker", "circuit_breaker", 6)]
    assert ivs[1].evidence == {"interventions": 6} and ivs[1].tool == "lookup"


def test_i5_d1_lock_sequence_breaker() -> None:
    t = Harness(repeat_call_limit=1000)
    t.call("grep", GREP, GREP_RESULT)
    t.call("grep", GREP, GREP_RESULT)  # notice       (1)
    t.request("grep", GREP)  # deny                     (2)
    t.call("grep", GREP, GREP_RESULT)  # escape → locked (3)
    assert t.request("grep", GREP).kind == "locked"  # (4)
    assert t.request("grep", GREP).kind == "locked"  # (5)
    d = t.request("grep", GREP)  # (6)
    assert (d.action, d.kind, d.rule, d.call_index) == ("cancel", "circuit_breaker", "circuit_breaker", 6)
    assert d.evidence == {"count": 3, "hash": h16(GREP_RESULT), "locked": True, "interventions": 6}
    assert d.reason.startswith("[loopguard] Duplicate tool call blocked") and "Circuit breaker: 6" in d.reason


def test_d1_default_sequence_the_sixth_identical_request_is_a_repeat_streak_cancel() -> None:
    """Denied requests are requests too: `repeat_streak` cancels the 6th identical one before `circuit_breaker` (which needs 6 interventions)."""
    t = Harness()
    t.call("grep", GREP, GREP_RESULT)
    t.call("grep", GREP, GREP_RESULT)
    t.request("grep", GREP)
    t.call("grep", GREP, GREP_RESULT)
    t.request("grep", GREP)
    d = t.request("grep", GREP)
    assert [(x.action, x.kind) for x in t.decisions] == [
        ("allow", None),
        ("allow", None),
        ("deny", "repeat"),
        ("allow", "repeat"),
        ("deny", "locked"),
        ("cancel", "repeat_streak"),
    ]
    assert d.evidence["count"] == 6


def test_d1_a_cancelled_request_does_not_use_up_the_escape_run() -> None:
    """Docstring: "The next request of a denied key runs once (escape_runs)". Here the request after the
    deny is cancelled by `repeat_streak` (it never runs); the escape run must still be available afterwards, and the
    deny text must not claim that "the escape run has been used and returned the same result"."""
    t = Harness(repeat_limit=4)
    t.call("read", {"path": "a.py"}, "A")
    for _ in range(4):
        t.call("grep", GREP, GREP_RESULT)  # notice at the 4th
    assert t.request("grep", GREP).kind == "repeat"  # deny (call 5)
    assert t.request("grep", GREP).kind == "repeat_streak"  # cancel (call 6): not run
    t.call("read", {"path": "a.py"}, "A")  # nothing new; breaks the `repeat_streak`
    d = t.request("grep", GREP)
    assert (d.action, d.kind, d.evidence.get("escape_run")) == ("allow", "repeat", True)


def test_i5_circuit_break_after_config() -> None:
    t = Harness(circuit_break_after=2)
    assert t.request("grep", {"pattern": "a"}).action == "deny"
    assert t.request("grep", {"pattern": "a"}).kind == "circuit_breaker"


# =========================================================================== cycles

A = ("read", {"path": "a.py"}, "content of a")
B = ("bash", {"command": "ls"}, "a.py b.py")
C = ("lookup", {"q": "x"}, "found x")


def test_cycle_with_default_config_d1_fires_first() -> None:
    t = Harness()
    out = [t.call(*(A, B)[i % 2]) for i in range(5)]
    assert [summary(ivs) for _, ivs in out] == [
        [],
        [],
        [],
        [("notice", "repeat", "repeat", 3)],
        [("notice", "repeat", "repeat", 4)],
    ]
    d = t.request(*B[:2])
    assert (d.action, d.kind, d.call_index) == ("deny", "repeat", 5)


def test_cycle_period_2_notice_after_3_periods_and_deny_after_5() -> None:
    t = Harness(**relaxed())
    got = []
    for i in range(10):
        d, ivs = t.call(*(A, B)[i % 2])
        assert d.action == "allow", i
        got += summary(ivs)
    # 6 executions = 3 full periods → notice at call 5; the anchor (`no_progress`) at call 6
    assert got == [("notice", "cycle", "cycle", 5), ("notice", "no_progress", "no_progress", 6)]
    cyc = t.interventions[5][0]
    assert cyc.evidence == {"period": 2, "periods": 3}
    assert cyc.text == (
        "[loopguard] The same 2 calls (`read` → `bash`) have now repeated 3 times in a row with identical "
        "results. This cycle brings no new information; break it with a different action."
    )
    # 10 executions = 5 full periods: the call continuing it is denied
    d = t.request(*A[:2])
    assert (d.action, d.kind, d.rule, d.call_index) == ("deny", "cycle", "cycle", 10)
    assert d.evidence == {"period": 2, "periods": 5}
    assert d.reason == (
        "[loopguard] Call blocked: it continues a cycle of 2 calls (`read` → `bash`) that has already "
        "repeated 5 times with identical results. Take a different action."
    )


def test_cycle_deny_periods_and_notice_only() -> None:
    t = Harness(**relaxed(cycle_deny_periods=4))
    for i in range(8):
        assert t.call(*(A, B)[i % 2])[0].action == "allow"
    d = t.request(*A[:2])
    assert (d.action, d.kind, d.evidence) == ("deny", "cycle", {"period": 2, "periods": 4})
    t = Harness(**relaxed(notice_only=True))
    for i in range(10):
        t.call(*(A, B)[i % 2])
    d, _ = t.call(*A)
    assert (d.action, d.kind, d.call_index) == ("notice", "cycle", 10)


def test_cycle_with_changing_results_never_fires() -> None:
    t = Harness()
    for i in range(24):
        tool, args, _ = (A, B)[i % 2]
        d, ivs = t.call(tool, args, f"result {i}")
        assert (d.action, ivs) == ("allow", []), i


def test_cycle_period_3() -> None:
    t = Harness(**relaxed())
    got = []
    for i in range(15):
        d, ivs = t.call(*(A, B, C)[i % 3])
        assert d.action == "allow", i
        got += summary(ivs)
    assert got == [
        ("notice", "no_progress", "no_progress", 7),
        ("notice", "cycle", "cycle", 8),
        ("notice", "no_progress", "no_progress", 12),
    ]
    assert t.interventions[8][0].evidence == {"period": 3, "periods": 3}
    assert "(`read` → `bash` → `lookup`)" in t.interventions[8][0].text
    d = t.request(*A[:2])
    assert (d.action, d.kind, d.call_index, d.evidence) == ("deny", "cycle", 15, {"period": 3, "periods": 5})


def test_cycle_deny_only_for_the_call_continuing_it() -> None:
    t = Harness(**relaxed())
    for i in range(10):
        t.call(*(A, B)[i % 2])
    d, _ = t.call(*C)  # a different call breaks the cycle
    assert (d.action, d.kind) == ("allow", None)


# =========================================================================== `repeat_streak`


def bash_described(i: int) -> dict[str, Any]:
    return {"command": "ls -la", "description": f"attempt {i}: list the files"}


def test_repeat_streak_six_identical_fingerprints_cancel() -> None:
    t = Harness(**relaxed())
    for i in range(5):
        d, ivs = t.call("bash", bash_described(i), "total 0")
        assert (d.action, ivs) == ("allow", []), i
    d = t.request("bash", bash_described(5))
    assert (d.action, d.kind, d.rule, d.call_index) == ("cancel", "repeat_streak", "repeat_streak", 5)
    assert d.evidence == {"count": 6, "limit": 6, "fingerprint": action_fingerprint("bash", bash_described(5))[:12]}
    assert action_fingerprint("bash", bash_described(0)) == action_fingerprint("bash", bash_described(5))
    assert d.reason == (
        "[loopguard] `bash` was requested 6 times in a row with the same action and no change in its "
        "result. The turn should be cancelled; report to the user instead of retrying."
    )
    assert t.guard.strikes("s") == 1  # a strong signal (`strikes`)


def test_repeat_streak_with_default_config_too() -> None:
    # the description makes every call key different, so `repeat` never sees a repeat
    t = Harness()
    for i in range(5):
        assert t.call("bash", bash_described(i), "total 0")[0].action == "allow"
    assert t.request("bash", bash_described(5)).kind == "repeat_streak"


def test_repeat_streak_exempt_tools_never_count() -> None:
    t = Harness()
    for i in range(12):
        d, ivs = t.call("job_output", {"id": 3}, "still running")
        assert (d.action, d.kind, ivs) == ("allow", None, []), i


def test_repeat_streak_a_changing_result_restarts_it() -> None:
    t = Harness()
    for i in range(12):
        d, ivs = t.call("bash", bash_described(i), f"{i} lines")
        assert (d.action, ivs) == ("allow", []), i


def test_repeat_streak_seed_rule_ignores_results() -> None:
    t = Harness(repeat_call_needs_same_result=False)
    for i in range(5):
        assert t.call("bash", bash_described(i), f"{i} lines")[0].action == "allow"
    d = t.request("bash", bash_described(5))
    assert (d.action, d.kind, d.call_index, d.evidence["count"]) == ("cancel", "repeat_streak", 5, 6)


def test_repeat_streak_another_call_in_between_restarts_it() -> None:
    t = Harness()
    for i in range(4):
        t.call("bash", bash_described(i), "total 0")
    t.call("read", {"path": "a.py"}, "x")
    for i in range(5):
        assert t.call("bash", bash_described(10 + i), "total 0")[0].action == "allow"
    assert t.request("bash", bash_described(20)).kind == "repeat_streak"


# =========================================================================== `stall`, `strikes`


def fake_clock(start: float = 0.0) -> tuple[list[float], Callable[[], float]]:
    now = [start]
    return now, lambda: now[0]


def test_stall_notice_once_then_note_progress_resets() -> None:
    now, clock = fake_clock()
    g = ToolGuard(clock=clock)
    assert g.check_stall("s") is None
    now[0] = 599.0
    assert g.check_stall("s") is None
    now[0] = 600.0
    iv = g.check_stall("s")
    assert iv is not None
    assert (iv.action, iv.kind, iv.rule, iv.tool, iv.call_index) == ("notice", "stalled", "stall", "", -1)
    assert iv.evidence == {"idle_seconds": 600.0, "pending_tools": 0, "strikes": 1}
    assert iv.text == "[loopguard] No progress for 10 minutes. The turn looks stalled."
    now[0] = 900.0
    assert g.check_stall("s") is None  # once per stall
    g.note_progress("s")
    now[0] = 1499.0
    assert g.check_stall("s") is None
    now[0] = 1500.0
    again = g.check_stall("s")  # second stall: the second strike within 120 minutes
    assert again is not None
    assert (again.action, again.kind) == ("cancel", "stalled")
    assert "2 strong loop signals (stalled, stalled) within 120 minutes: the turn is cancelled." in again.text


def test_stall_with_a_pending_tool_uses_stall_minutes_with_tool() -> None:
    now, clock = fake_clock(1000.0)
    g = ToolGuard(clock=clock)
    assert g.before_call("s", "bash", {"command": "make"}).action == "allow"
    assert g.pending_tools("s") == 1
    now[0] = 1000.0 + 600
    assert g.check_stall("s") is None
    now[0] = 1000.0 + 45 * 60 - 1
    assert g.check_stall("s") is None
    now[0] = 1000.0 + 45 * 60
    iv = g.check_stall("s")
    assert iv is not None and iv.evidence == {"idle_seconds": 2700.0, "pending_tools": 1, "strikes": 1}
    assert iv.text == "[loopguard] No progress for 45 minutes while a tool call is pending. The turn looks stalled."
    g.after_call("s", "bash", {"command": "make"}, "done")
    assert g.pending_tools("s") == 0


def test_stall_minutes_config_fractional() -> None:
    now, clock = fake_clock()
    g = ToolGuard(ToolGuardConfig(stall_minutes=0.5), clock=clock)
    g.note_progress("s")
    now[0] = 29.9
    assert g.check_stall("s") is None
    now[0] = 30.0
    assert g.check_stall("s").kind == "stalled"  # type: ignore[union-attr]


def test_strikes_twice_within_the_window_cancel() -> None:
    now, clock = fake_clock()
    g = ToolGuard(clock=clock)
    assert g.strike("s", "text_loop") is None
    assert g.strikes("s") == 1
    now[0] = 120 * 60.0  # exactly at the window's edge: still within
    iv = g.strike("s", "repeat_streak")
    assert iv is not None
    assert (iv.action, iv.kind, iv.rule) == ("cancel", "strikes", "strikes")
    assert iv.evidence == {"strikes": 2, "kinds": ["text_loop", "repeat_streak"]}
    assert iv.text == (
        "[loopguard] 2 strong loop signals (text_loop, repeat_streak) within 120 minutes: the turn is cancelled."
    )
    assert g.strikes("s") == 0  # cleared


def test_strikes_121_minutes_apart_do_not_cancel() -> None:
    now, clock = fake_clock()
    g = ToolGuard(clock=clock)
    assert g.strike("s", "text_loop") is None
    now[0] = 121 * 60.0
    assert g.strike("s", "text_loop") is None
    assert g.strikes("s") == 1
    with pytest.raises(TypeError):
        g.strike("s", "")


def test_repeat_streak_counts_as_a_strike() -> None:
    now, clock = fake_clock()
    g = ToolGuard(clock=clock)
    t = Harness(g)
    for i in range(6):
        t.call("bash", bash_described(i), "total 0")
    assert t.decisions[-1].kind == "repeat_streak"
    now[0] = 60.0
    iv = g.strike("s", "text_loop")
    assert iv is not None and iv.evidence == {"strikes": 2, "kinds": ["repeat_streak", "text_loop"]}


# =========================================================================== include / exclude


@pytest.mark.parametrize("tool", ["job_output", "job_kill", "job_list", "ask_user_question", "todo_write"])
def test_excluded_tools_pass_through(tool: str) -> None:
    t = Harness(repeat_call_limit=1000)
    for i in range(10):
        d, ivs = t.call(tool, {"id": 1}, FIVE)
        assert (d.action, d.kind, ivs) == ("allow", None, []), i


def test_excluded_glob_schedule_star_but_repeat_streak_still_applies() -> None:
    """Exclusion removes the rules, cycles and `circuit_breaker` (docstring); `repeat_streak` only spares ``repeat_call_exempt``."""
    t = Harness()
    for i in range(5):
        d, ivs = t.call("schedule_create", {"at": "9:00"}, "scheduled")
        assert (d.action, d.kind, ivs) == ("allow", None, []), i
    d = t.request("schedule_create", {"at": "9:00"})
    assert (d.action, d.kind, d.call_index) == ("cancel", "repeat_streak", 5)


def test_include_restricts_tracking_to_matching_tools() -> None:
    t = Harness(include=["read*"])
    assert t.request("grep", {"pattern": "x"}).action == "allow"  # `unscoped_search` does not apply: untracked
    for _ in range(4):
        assert t.call("bash", {"command": "ls"}, "same")[0].action == "allow"
    t.call("read_file", {"path": "a.py"}, "x")
    t.call("read_file", {"path": "a.py"}, "x")
    assert t.request("read_file", {"path": "a.py"}).kind == "repeat"


def test_exclude_empty_tracks_job_output() -> None:
    t = Harness(exclude=[])
    t.call("job_output", {"id": 1}, "same")
    t.call("job_output", {"id": 1}, "same")
    assert t.request("job_output", {"id": 1}).kind == "repeat"


# =========================================================================== sessions


def test_sessions_never_share_state() -> None:
    t = Harness()
    t.call("grep", GREP, GREP_RESULT, sid="s1")
    assert summary(t.call("grep", GREP, GREP_RESULT, sid="s1")[1]) == [("notice", "repeat", "repeat", 1)]
    d, ivs = t.call("grep", GREP, GREP_RESULT, sid="s2")
    assert (d.call_index, ivs) == (0, [])
    assert t.request("grep", GREP, sid="s1").action == "deny"
    d, ivs = t.call("grep", GREP, GREP_RESULT, sid="s2")
    assert (d.action, summary(ivs)) == ("allow", [("notice", "repeat", "repeat", 1)])
    assert len(t.guard) == 2


def test_none_and_empty_session_ids_are_default() -> None:
    g = ToolGuard()
    for sid in (None, ""):
        assert g.before_call(sid, "grep", GREP).allowed
        g.after_call(sid, "grep", GREP, GREP_RESULT)
    assert g.before_call("default", "grep", GREP).action == "deny"
    assert len(g) == 1


def test_reset_and_dispose_forget() -> None:
    g = ToolGuard()
    t = Harness(g)
    for sid in ("s1", "s2"):
        t.call("grep", GREP, GREP_RESULT, sid=sid)
        t.call("grep", GREP, GREP_RESULT, sid=sid)
    g.reset("s1")
    assert len(g) == 1
    d = g.before_call("s1", "grep", GREP)
    assert (d.action, d.call_index) == ("allow", 0)
    assert g.before_call("s2", "grep", GREP).action == "deny"
    g.dispose()
    assert len(g) == 0
    assert g.before_call("s2", "grep", GREP).action == "allow"
    g.reset()
    assert len(g) == 0


def test_max_sessions_lru_eviction() -> None:
    g = ToolGuard(ToolGuardConfig(max_sessions=2))
    t = Harness(g)
    for sid in ("a", "b"):
        t.call("grep", GREP, GREP_RESULT, sid=sid)
        t.call("grep", GREP, GREP_RESULT, sid=sid)
    g.note_progress("a")  # a is now the most recently used
    g.note_progress("c")  # a third session evicts the least recently used: b
    assert len(g) == 2
    assert g.before_call("a", "grep", GREP).action == "deny"  # a kept its chain
    d = g.before_call("b", "grep", GREP)  # b was forgotten
    assert (d.action, d.call_index) == ("allow", 0)
    assert len(g) == 2


def test_call_id_dedupe_decides_once_and_counts_once() -> None:
    g = ToolGuard()
    for n in range(2):
        cid = f"call-{n}"
        first = g.before_call("s", "grep", GREP, call_id=cid)
        assert g.before_call("s", "grep", GREP, call_id=cid) == first
        assert first.call_index == n
        ivs = g.after_call("s", "grep", GREP, GREP_RESULT, call_id=cid)
        assert g.after_call("s", "grep", GREP, GREP_RESULT, call_id=cid) == []
        assert summary(ivs) == ([] if n == 0 else [("notice", "repeat", "repeat", 1)])
    d = g.before_call("s", "grep", GREP, call_id="call-2")
    assert (d.action, d.call_index, d.evidence["count"]) == ("deny", 2, 2)
    assert g.pending_tools("s") == 0


def test_call_id_reused_with_other_arguments_is_a_new_call() -> None:
    g = ToolGuard()
    d0 = g.before_call("s", "grep", GREP, call_id="x")
    d1 = g.before_call("s", "grep", {**GREP, "path": "lib"}, call_id="x")
    assert (d0.call_index, d1.call_index) == (0, 1)


def test_call_id_attributes_interleaved_results_to_their_request() -> None:
    g = ToolGuard()
    g.before_call("s", "grep", GREP, call_id="a0")
    g.after_call("s", "grep", GREP, GREP_RESULT, call_id="a0")
    g.before_call("s", "grep", GREP, call_id="a1")  # index 1
    g.before_call("s", "read", {"path": "b.py"}, call_id="b")  # index 2, in parallel
    ivs = g.after_call("s", "grep", GREP, GREP_RESULT, call_id="a1")
    assert summary(ivs) == [("notice", "repeat", "repeat", 1)]


# =========================================================================== language


def test_language_zh_texts() -> None:
    t = Harness(language="zh")
    t.call("grep", GREP, GREP_RESULT)
    _, ivs = t.call("grep", GREP, GREP_RESULT)
    d = t.request("grep", GREP)
    u = t.request("grep", {"pattern": "x"})
    texts = [ivs[0].text, d.reason, u.reason]
    for text in texts:
        assert text.startswith("[loopguard]") and CJK.search(text), text
    assert ivs[0].text == (
        f"[loopguard] `grep` 以相同参数已连续 2 次返回逐字节相同的结果（哈希 {h16(GREP_RESULT)}）。"
        "再执行一次不会带来任何新信息，下一次相同调用将被拦截。请直接使用已有结果，换一个动作推进。"
    )
    assert "如果你有确凿证据表明上次执行之后情况已经改变" in d.reason


def test_language_auto_picks_zh_on_a_cjk_result_and_en_otherwise() -> None:
    t = Harness()
    zh = "找到 3 处匹配：\n第一处在文件开头\n第二处在函数内部"
    t.call("lookup", {"q": "中文"}, zh)
    _, ivs = t.call("lookup", {"q": "中文"}, zh)
    assert ivs[0].text.startswith("[loopguard]") and CJK.search(ivs[0].text)
    assert "逐字节相同" in ivs[0].text
    d = t.request("lookup", {"q": "中文"})
    assert CJK.search(d.reason.split("\n")[-1])  # the escape sentence is Chinese too
    t.call("lookup", {"q": "en"}, "3 matches")
    _, ivs = t.call("lookup", {"q": "en"}, "3 matches")
    assert not CJK.search(ivs[0].text)


def test_language_en_forced_on_cjk_result() -> None:
    t = Harness(language="en")
    zh = "找到 3 处匹配"
    t.call("lookup", {"q": 1}, zh)
    _, ivs = t.call("lookup", {"q": 1}, zh)
    assert ivs[0].text.startswith("[loopguard] `lookup` with identical arguments")


# =========================================================================== secrets and previews

SECRET_ARGS = {
    "url": "https://api.example.com/v1/run",
    "key": "sk-proj-AbCdEfGh0123456789IjKlMnOp",
    "headers": {"Authorization": "Bearer tok_live_9f8e7d6c5b4a3928"},
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "cmd": "login --user bob password=hunter2xyz",
    "password": "correct-horse-battery",
}
SECRET_FRAGMENTS = [
    "sk-proj-AbCdEfGh0123456789IjKlMnOp",
    "AbCdEfGh0123456789",
    "tok_live_9f8e7d6c5b4a3928",
    "9f8e7d6c5b4a3928",
    "eyJhbGciOiJIUzI1NiJ9",
    "dozjgNryP4J3jVmNHl0w5N",
    "hunter2xyz",
    "correct-horse-battery",
]


def all_texts(t: Harness) -> list[str]:
    out = [d.reason for d in t.decisions]
    for ivs in t.interventions:
        out += [i.text for i in ivs]
    return out


def test_secrets_never_appear_in_reasons_texts_or_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="loopguard")
    t = Harness(circuit_break_after=1000)
    result = "ok\nsession token=tok_live_9f8e7d6c5b4a3928\nuser bob"
    t.call("http", SECRET_ARGS, result)
    t.call("http", SECRET_ARGS, result)
    deny = t.request("http", SECRET_ARGS)
    t.call("http", SECRET_ARGS, result)  # escape → locked
    t.request("http", SECRET_ARGS)
    t.request("grep", {"pattern": "x", **SECRET_ARGS})  # `unscoped_search` with the preview
    assert deny.action == "deny" and "Arguments: " in deny.reason and "[REDACTED]" in deny.reason
    texts = all_texts(t) + [r.getMessage() for r in caplog.records]
    assert len([x for x in texts if x]) >= 5
    for text in texts:
        for secret in SECRET_FRAGMENTS:
            assert secret not in text, (secret, text)


def test_arguments_preview_chars_caps_the_preview() -> None:
    args = {"command": "echo hello world and a lot more words"}
    t = Harness(arguments_preview_chars=20)
    t.call("bash", args, "hello")
    t.call("bash", args, "hello")
    d = t.request("bash", args)
    preview = re.search(r" Arguments: ([^\n]*)\n", d.reason).group(1)  # type: ignore[union-attr]
    assert preview == canonical_json(args)[:20] + "…"
    assert len(preview) == 21
    u = t.request("grep", {"pattern": "a very long pattern to search for"})
    preview = re.search(r" Arguments: (.*) Repeat the search", u.reason).group(1)  # type: ignore[union-attr]
    assert preview == '{"pattern":"a very l…'


def test_arguments_preview_chars_zero_shows_no_arguments() -> None:
    t = Harness(arguments_preview_chars=0)
    t.call("bash", {"command": "ls"}, "x")
    t.call("bash", {"command": "ls"}, "x")
    assert "Arguments" not in t.request("bash", {"command": "ls"}).reason
    assert "Arguments" not in t.request("grep", {"pattern": "x"}).reason


def test_no_argument_or_result_values_in_evidence() -> None:
    marker, rmarker = "ARGMARKER_7731", "RESMARKER_9902"
    t = Harness(**relaxed(circuit_break_after=3, drift_confirm=False))
    t.call("lookup", {"q": marker}, f"{rmarker}\nb\nc\nd")
    t.call("lookup", {"q": marker + "2"}, f"{rmarker}\nb\nc\nd")  # drift
    t.request("grep", {"pattern": marker})
    t.call("edit", {"path": marker}, rmarker, error=True)
    for i in range(7):
        t.call("bash", {"command": marker, "description": str(i)}, rmarker)
    for i in range(12):
        t.call(*((("read", {"path": marker}, rmarker), ("view", {"command": marker}, rmarker))[i % 2]))
    g = ToolGuard(ToolGuardConfig(circuit_break_after=1000))
    t2 = Harness(g)
    for _ in range(4):
        t2.call("grep", {"pattern": marker, "path": "src"}, rmarker)
    t2.request("grep", {"pattern": marker, "path": "src"})
    kinds: set[str | None] = set()
    for h in (t, t2):
        for d in h.decisions:
            assert marker not in json.dumps(d.evidence) and rmarker not in json.dumps(d.evidence)
            kinds.add(d.kind)
        for ivs in h.interventions:
            for iv in ivs:
                assert marker not in json.dumps(iv.evidence) and rmarker not in json.dumps(iv.evidence)
                kinds.add(iv.kind)
    assert {
        "drift",
        "error_avoidance",
        "cycle",
        "unscoped_search",
        "repeat_streak",
        "circuit_breaker",
        "repeat",
        "locked",
        "no_progress",
    } <= kinds


# =========================================================================== config validation


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("repeat_limit", 0),
        ("repeat_limit", True),
        ("repeat_limit", "2"),
        ("repeat_limit", 2.0),
        ("escape_runs", -1),
        ("overlap_threshold", 1.5),
        ("overlap_threshold", 0),
        ("overlap_threshold", True),
        ("unscoped_search", "block"),
        ("language", "fr"),
        ("include", "grep"),
        ("exclude", ["job_output", ""]),
        ("search_tools", [1]),
        ("notice_only", "yes"),
        ("replay_detection", 1),
        ("stall_minutes", 0),
        ("strike_window_minutes", -5),
        ("cycle_max_period", 1),
        ("cycle_deny_periods", 2),  # < cycle_notice_periods (3)
        ("volatile_result_fields_by_tool", ["x"]),
        ("volatile_result_fields_by_tool", {"": ["x"]}),
        ("max_sessions", 0),
    ],
)
def test_config_errors_name_the_key(key: str, value: Any) -> None:
    with pytest.raises(ConfigError) as info:
        ToolGuardConfig(**{key: value})
    assert info.value.key == key
    assert key in str(info.value) and isinstance(info.value, ValueError)
    assert info.value.value == value or info.value.value is value


def test_from_mapping_unknown_key() -> None:
    with pytest.raises(ConfigError) as info:
        ToolGuardConfig.from_mapping({"repeat_limt": 2})
    assert info.value.key == "repeat_limt" and "repeat_limt" in str(info.value)
    with pytest.raises(ConfigError) as info:
        ToolGuard({"repeatLimitt": 2})
    assert info.value.key == "repeatLimitt"


def test_from_mapping_accepts_the_seed_camel_case_table() -> None:
    seed = {
        "repeatLimit": 3,
        "escapeRuns": 2,
        "noticeOnly": True,
        "include": [],
        "exclude": ["job_output"],
        "searchTools": ["grep"],
        "scopeFields": ["path"],
        "unscopedSearch": "allow",
        "argumentsPreviewChars": 50,
        "overlapThreshold": 0.8,
        "overlapWindow": 4,
        "errorWatchSteps": 2,
        "remedialTools": ["read", "view"],
        "anchorWindow": 7,
        "replayDetection": False,
        "minReplayChars": 10,
        "circuitBreakAfter": 9,
    }
    c = ToolGuardConfig.from_mapping(seed)
    assert (c.repeat_limit, c.escape_runs, c.notice_only, c.exclude, c.search_tools) == (
        3,
        2,
        True,
        ("job_output",),
        ("grep",),
    )
    assert (c.unscoped_search, c.arguments_preview_chars, c.overlap_threshold, c.overlap_window) == (
        "allow",
        50,
        0.8,
        4,
    )
    assert (c.error_watch_steps, c.remedial_tools, c.anchor_window, c.replay_detection) == (
        2,
        ("read", "view"),
        7,
        False,
    )
    assert (c.min_replay_chars, c.circuit_break_after) == (10, 9)
    assert ToolGuard(seed).config == c
    assert ToolGuardConfig.from_mapping({"repeat_limit": 3}).repeat_limit == 3


@pytest.mark.parametrize(
    ("data", "key"),
    [
        ({"repeatLimit": 0}, "repeatLimit"),
        ({"overlapThreshold": 1.5}, "overlapThreshold"),
        ({"unscopedSearch": "block"}, "unscopedSearch"),
        ({"include": "grep"}, "include"),
    ],
)
def test_from_mapping_bad_camel_case_values_name_the_key(data: dict[str, Any], key: str) -> None:
    """The error names the key as the user wrote it."""
    with pytest.raises(ConfigError) as info:
        ToolGuardConfig.from_mapping(data)
    assert info.value.key == key


def test_config_replace_validates() -> None:
    c = ToolGuardConfig()
    assert c.replace(repeat_limit=4).repeat_limit == 4
    with pytest.raises(ConfigError):
        c.replace(repeat_limit=0)


def test_bad_guard_construction() -> None:
    with pytest.raises(TypeError):
        ToolGuard("defaults")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ToolGuard(clock=5)  # type: ignore[arg-type]


# =========================================================================== bad input


@pytest.mark.parametrize("tool", ["", None, 3, b"grep"])
def test_bad_tool_is_a_type_error_and_records_nothing(tool: Any) -> None:
    g = ToolGuard()
    with pytest.raises(TypeError):
        g.before_call("s", tool, {})
    with pytest.raises(TypeError):
        g.after_call("s", tool, {}, "x")
    assert len(g) == 0


@pytest.mark.parametrize("error", ["yes", 1, None])
def test_bad_error_flag_is_a_type_error(error: Any) -> None:
    with pytest.raises(TypeError):
        ToolGuard().after_call("s", "bash", {}, "x", error=error)


def test_non_json_string_args_work() -> None:
    t = Harness()
    args = "ls -la && echo {not json"
    t.call("bash", args, "total 0")
    _, ivs = t.call("bash", args, "total 0")
    assert summary(ivs) == [("notice", "repeat", "repeat", 1)]
    d = t.request("bash", args)
    assert d.action == "deny" and 'Arguments: "ls -la && echo {not json"' in d.reason


def test_huge_result_works() -> None:
    big = "".join(f"line {i:07d} of a large tool output, nothing to see\n" for i in range(100_000))
    assert len(big) >= 5_000_000
    t = Harness()
    t.call("bash", {"command": "cat big.log"}, big)
    _, ivs = t.call("bash", {"command": "cat big.log"}, big)
    assert summary(ivs) == [("notice", "repeat", "repeat", 1)] and ivs[0].evidence["hash"] == h16(big)
    d = t.request("bash", {"command": "cat big.log"})
    shown = re.search(r"Previous result \(preserved in the conversation above\): ([^\n]*)\n", d.reason).group(1)  # type: ignore[union-attr]
    assert shown.startswith("line 0000000 of a large tool output") and len(shown) <= 241


def test_nan_and_non_json_results_work() -> None:
    class Thing:
        def __repr__(self) -> str:
            return "Thing(1)"

    nan = float("nan")
    t = Harness()
    t.call("calc", {"x": 1}, {"value": nan})
    assert summary(t.call("calc", {"x": 1}, {"value": nan})[1]) == [("notice", "repeat", "repeat", 1)]
    t.call("obj", {"x": 1}, {"value": Thing(), "s": {1, 2}})
    assert summary(t.call("obj", {"x": 1}, {"value": Thing(), "s": {1, 2}})[1]) == [("notice", "repeat", "repeat", 3)]
    d, ivs = t.call("calc", {"x": nan, "o": Thing()}, [nan, float("inf")])
    assert (d.action, ivs) == ("allow", [])
    assert result_digest({"value": nan}) != result_digest({"value": None})


def test_normalize_result_examples() -> None:
    assert normalize_result({"ok": False, "request_id": "req_1", "error": {"trace-id": "t"}}) == {
        "ok": False,
        "error": {},
    }
    assert normalize_result("2 of 6 replicas ready (took 1.5s)") == "2 of 6 replicas ready (took <duration>)"


# =========================================================================== more edges


def test_d1_escape_runs_2_allows_two_escape_runs_before_locking() -> None:
    """spec §5.2: "Insisting … is allowed ``escape_runs`` times; if that run returns the same hash the key
    is locked". With ``escape_runs=2`` the second insisting run must still be possible."""
    t = Harness(escape_runs=2, repeat_call_limit=1000, circuit_break_after=1000)
    t.call("grep", GREP, GREP_RESULT)
    t.call("grep", GREP, GREP_RESULT)
    assert t.request("grep", GREP).kind == "repeat"  # deny (2)
    d3, _ = t.call("grep", GREP, GREP_RESULT)  # escape run 1 (3)
    assert d3.evidence.get("escape_run") is True
    d4 = t.request("grep", GREP)  # (4) denied again, but one escape run is left
    assert (d4.action, d4.kind) == ("deny", "repeat") and ESCAPE in d4.reason
    d5, i5 = t.call("grep", GREP, GREP_RESULT)  # escape run 2 (5)
    assert d5.evidence.get("escape_run") is True and [i.kind for i in i5 or []] == ["locked"]
    assert t.request("grep", GREP).kind == "locked"


def test_d1_error_flag_is_part_of_the_result() -> None:
    t = Harness()
    t.call("bash", {"command": "make"}, "exit 2")
    assert t.call("bash", {"command": "make"}, "exit 2", error=True)[1] == []


def test_d5_notice_only_runs_the_search_with_a_notice() -> None:
    d, ivs = Harness(notice_only=True).call("grep", {"pattern": "x"}, "a.py:1: x")
    assert (d.action, d.kind, d.rule, ivs) == ("notice", "unscoped_search", "unscoped_search", [])
    assert Harness().request("grep", '{"pattern": "x", "path": "src"}').action == "allow"  # JSON-string args


def test_i5_counts_interventions_since_the_last_progress() -> None:
    """spec/seed: "consecutive interventions without progress": a call with neither an intervention nor
    new information does not restart the count."""
    t = Harness(repeat_limit=3)
    t.call("bash", {"command": "ls"}, "a.py")  # new
    for i in range(5):
        t.request("grep", {"pattern": f"p{i}"})  # 5 interventions
    d, ivs = t.call("bash", {"command": "ls"}, "a.py")  # nothing new, no intervention (count 2 < 3)
    assert (d.action, ivs) == ("allow", [])
    d = t.request("grep", {"pattern": "p5"})
    assert (d.kind, d.call_index, d.evidence["interventions"]) == ("circuit_breaker", 7, 6)


def test_max_keys_per_session_lru() -> None:
    for keys, expected in ((3, "deny"), (2, "allow")):
        t = Harness(max_keys_per_session=keys, progress_resets_repeats=False)
        t.call("grep", GREP, GREP_RESULT)
        t.call("grep", GREP, GREP_RESULT)
        t.call("read", {"path": "b.py"}, "b")
        t.call("read", {"path": "c.py"}, "c")  # with 2 keys, the grep key is evicted
        assert t.request("grep", GREP).action == expected, keys


def test_after_call_without_before_call() -> None:
    g = ToolGuard()
    assert g.after_call("s", "grep", GREP, GREP_RESULT) == []
    ivs = g.after_call("s", "grep", GREP, GREP_RESULT)
    assert [(i.kind, i.call_index) for i in ivs] == [("repeat", 0)]
    assert g.before_call("s", "grep", GREP).action == "deny"


def test_threads_keep_sessions_apart() -> None:
    import threading

    g = ToolGuard()
    results: dict[int, list[str]] = {}  # actions

    def worker(n: int) -> None:
        sid = f"t{n}"
        out: list[str] = []
        for _ in range(3):
            d = g.before_call(sid, "grep", GREP)
            out.append(str(d.action))
            if d.allowed:
                g.after_call(sid, "grep", GREP, GREP_RESULT)
        results[n] = out

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(16)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert results == {n: ["allow", "allow", "deny"] for n in range(16)}
    assert len(g) == 16
