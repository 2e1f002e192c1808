"""ToolGuard on hostile input and the loop shapes a fresh review found (spec §5.2, §7)."""

from __future__ import annotations

import json
import logging
import threading
from typing import Any

import pytest

from loopguard import ConfigError, Session, ToolGuard, ToolGuardConfig
from loopguard.results import result_digest


def deep(n: int, leaf: Any = "x") -> Any:
    for _ in range(n):
        leaf = [leaf]
    return leaf


def test_deep_and_circular_arguments_and_results_are_hashed_not_raised() -> None:
    guard = ToolGuard()
    for depth in (480, 1000, 20_000):
        assert guard.before_call("s", "t", deep(depth)).action == "allow"
        assert guard.after_call("s", "t", deep(depth), deep(depth)) == []
    loop: list[Any] = []
    loop.append(loop)
    guard = ToolGuard()
    assert [guard.before_call("c", "t", loop).action for _ in range(1)] == ["allow"]
    guard.after_call("c", "t", loop, loop)
    guard.before_call("c", "t", loop)
    assert [i.kind for i in guard.after_call("c", "t", loop, loop)] == ["repeat"]  # still one key, one result
    assert guard.before_call("c", "t", loop).action == "deny"


def test_other_odd_arguments() -> None:
    guard = ToolGuard()

    class Odd:
        def __repr__(self) -> str:
            raise RuntimeError("no")

    for args in ({1: "a", "b": 2}, {"s": {1, 2}}, b"\xff\xfe raw", {"x": float("nan")}, Odd()):
        assert guard.before_call("s", "t", args).action == "allow"
        guard.after_call("s", "t", args, "ok")
    # an integer of more digits than Python prints (sys.get_int_max_str_digits, 4300): hashed by
    # its hexadecimal text, so it is a call like any other (it raised ValueError from repr before)
    huge = {"q": 10**5000}
    actions = []
    for _ in range(3):
        actions.append(guard.before_call("s", "fetch", huge).action)
        guard.after_call("s", "fetch", huge, "same")
    assert actions == ["allow", "allow", "deny"]
    assert guard.before_call("s", "fetch", {"q": 10**5000 + 1}).action == "allow"  # another number


def test_a_secret_after_an_escaped_newline_stays_out_of_the_deny_reason() -> None:
    """The deny reason quotes the arguments as JSON; a key after ``\\n`` is still redacted."""
    guard = ToolGuard()
    args = {"body": "line one\nsk-SECRET12345abcdefSECRET", "note": "tab\tghp_0123456789abcdefghijABCDEFGHIJ"}
    reasons = []
    for _ in range(3):
        decision = guard.before_call("s", "post", args)
        reasons.append(decision.reason or "")
        guard.after_call("s", "post", args, "same")
    assert reasons[:2] == ["", ""] and "Duplicate tool call blocked" in reasons[2]
    assert "[REDACTED]" in reasons[2]
    assert "SECRET" not in reasons[2] and "ghp_" not in reasons[2]


def test_clear_errors_for_bad_arguments_to_the_api() -> None:
    guard = ToolGuard()
    with pytest.raises(TypeError, match="tool must be a non-empty str, got ''"):
        guard.before_call("s", "", {})
    with pytest.raises(TypeError, match="call_id must be hashable"):
        guard.before_call("s", "t", {}, call_id=["x"])
    with pytest.raises(TypeError, match="clock must return seconds"):
        ToolGuard(clock=lambda: None)  # type: ignore[arg-type,return-value]
    with pytest.raises(TypeError, match="from_mapping needs a mapping"):
        ToolGuardConfig.from_mapping([("repeat_limit", 2)])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="guard_config must be a ToolGuardConfig"):
        Session(guard_config=5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="reason must be a str"):
        Session().cancel(reason=5)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("make", "key"),
    [
        (lambda: ToolGuardConfig(scope_fields=[]), "scope_fields"),
        (lambda: ToolGuardConfig(include={"read": 1}), "include"),  # a dict is not a list
        (lambda: ToolGuardConfig().replace(bogus=1), "bogus"),
        (lambda: ToolGuardConfig.from_mapping({"repeat_limit": 3, "repeatLimit": 4}), "repeatLimit"),
    ],
)
def test_config_errors(make: Any, key: str) -> None:
    with pytest.raises(ConfigError) as info:
        make()
    assert info.value.key == key
    assert ToolGuardConfig(scope_fields=[], unscoped_search="allow").scope_fields == ()


def test_a_failing_call_alternating_with_a_changing_probe_is_caught() -> None:
    """The same failing health check between `docker ps` calls whose uptime changes:
    the probe's new output is a repeated call's, not a new action's, so it does not
    restart the health check's chain."""
    guard = ToolGuard()
    events = []
    for i in range(4):
        for tool, args, result in (
            ("shell", {"cmd": "docker ps"}, f"api Up {i + 1} minutes"),
            ("shell", {"cmd": "curl -s localhost:8080/health"}, "HTTP/1.1 500 Internal Server Error"),
        ):
            d = guard.before_call("s", tool, args)
            if d.action != "allow":
                events.append((i, d.action, d.kind))
            if d.allowed:
                events += [(i, n.action, n.kind) for n in guard.after_call("s", tool, args, result)]
    assert events[:2] == [(1, "notice", "repeat"), (2, "deny", "repeat")]


def test_a_new_action_in_between_still_restarts_the_chain() -> None:
    guard = ToolGuard()
    test = {"command": "pytest -q"}
    for edit in ("a", "b", "c"):
        assert guard.before_call("s", "run", test).action == "allow"
        assert guard.after_call("s", "run", test, "1 failed") == []
        guard.before_call("s", "edit", {"path": "x.py", "new": edit})
        guard.after_call("s", "edit", {"path": "x.py", "new": edit}, "Applied 1 edit")


def test_the_result_of_a_denied_request_reported_by_the_host_is_ignored() -> None:
    guard = ToolGuard()
    args = {"pattern": "x", "path": "src"}
    decisions = []
    for _ in range(5):
        d = guard.before_call("s", "grep", args)
        decisions.append((d.action, d.kind))
        result = "a.py:1: x" if d.allowed else d.reason  # a host that pipes denials back as results
        guard.after_call("s", "grep", args, result)
    # allow, allow (reminder), deny, escape run (same result -> locked), deny: the reason never counts as a result
    assert decisions == [("allow", None), ("allow", None), ("deny", "repeat"), ("allow", "repeat"), ("deny", "locked")]


SECRET_ARGS = {"command": 'mysql -u root --password="hunter2" -e "select 1"', "token": "ghp_" + "a" * 36}


def test_secrets_in_arguments_and_results_never_reach_texts_or_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="loopguard")
    guard = ToolGuard()
    result = "Authorization: Bearer sk-proj-" + "Z" * 30 + "\npassword=hunter2"
    texts = []
    for _ in range(4):
        d = guard.before_call("s", "shell", json.dumps(SECRET_ARGS))
        texts += [d.reason, json.dumps(d.to_dict())]
        if d.allowed:
            texts += [json.dumps(i.to_dict()) for i in guard.after_call("s", "shell", SECRET_ARGS, result)]
    texts += [r.getMessage() for r in caplog.records]
    blob = "\n".join(texts)
    assert "Duplicate tool call blocked" in blob
    for secret in ("hunter2", "a" * 36, "Z" * 30):
        assert secret not in blob


def test_memory_per_session_is_bounded_by_counts() -> None:
    guard = ToolGuard(ToolGuardConfig(max_keys_per_session=50, max_sessions=3))
    big = "\n".join(f"line {i}" for i in range(20_000))
    for i in range(300):
        guard.before_call(f"s{i % 5}", "read", {"path": f"f{i}"})
        guard.after_call(f"s{i % 5}", "read", {"path": f"f{i}"}, big if i % 50 == 0 else f"r{i}")
    assert len(guard) == 3
    for state in guard._sessions.values():
        assert len(state.keys) <= 50
        assert all(len(lines) <= 512 for _, _, lines, _ in state.recent)
        assert state.recent_bytes == sum(size for *_, size in state.recent) <= 1 << 20
        assert len(state.seen) <= 4096


def test_threads_share_one_guard() -> None:
    guard = ToolGuard()
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(500):
                args = {"i": i % 7, "n": n}
                if guard.before_call(f"s{n % 2}", "t", args).allowed:
                    guard.after_call(f"s{n % 2}", "t", args, f"r{i}")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert guard.pending_tools("s0") == 0 and guard.pending_tools("s1") == 0


def test_a_huge_tool_name_is_cut_in_texts() -> None:
    guard = ToolGuard()
    name = "t" * 100_000
    for _ in range(2):
        guard.before_call("s", name, {})
        guard.after_call("s", name, {}, "same")
    reason = guard.before_call("s", name, {}).reason
    assert len(reason) < 2000 and ("t" * 100 + "…") in reason
    assert result_digest("x")  # (the digest itself is unaffected by names)
