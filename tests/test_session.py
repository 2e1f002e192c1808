"""loopguard.session: the state machine hosts drive (spec §0, §2.6, §3, §5.2; seeds 001, 002)."""

from __future__ import annotations

import doctest
import json
import logging
import random

import pytest

import loopguard.session as session_module
from conftest import CASES, shared_data
from loopguard import ConfigError, TextConfig, scan_text
from loopguard.guard import ToolGuard, ToolGuardConfig
from loopguard.messages import render
from loopguard.results import result_digest
from loopguard.session import (
    LANG_SAMPLE_CHARS,
    MAX_ATTEMPT_CHARS,
    Session,
    SessionConfig,
    Verdict,
)

GREP = {"pattern": "TODO", "path": "src"}
GREP_RESULT = "src/a.py:3: TODO fix the cache\nsrc/b.py:9: TODO later"
LOOP = "Wait, let me recheck the sum. "  # 30 chars; x40 is a verbatim cycle (spec §2.4)


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def case_text(name_prefix: str) -> tuple[str, str]:
    index = json.loads((CASES / "index.json").read_text(encoding="utf-8"))
    case = next(c for c in index if c["file"].startswith(name_prefix))
    text = (CASES / case["file"]).read_text(encoding="utf-8")
    return text, "reasoning" if case["channel"] == "reasoning" else "text"


def feed_all(s: Session, text: str, channel: str, size: int) -> list[tuple[int, Verdict]]:
    """Feed ``text`` in ``size``-char deltas; (characters fed after the delta, verdict) per delta."""
    out = []
    for i in range(0, len(text), size):
        out.append((min(i + size, len(text)), s.feed(text[i : i + size], channel)))
    return out


def first(verdicts: list[tuple[int, Verdict]], action: str) -> tuple[int, Verdict]:
    return next((n, v) for n, v in verdicts if v.action == action)


def noise(n: int, seed: int) -> str:
    """Text no detector fires on: random picks from 64 symbols."""
    rng = random.Random(seed)
    return "".join(rng.choices("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ,", k=n))


# ------------------------------------------------------------------ config
@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("empty_turn_limit", 0),
        ("empty_turn_limit", True),
        ("empty_turn_limit", 1.5),
        ("empty_turn_action", "shout"),
        ("empty_turn_steer_max", -1),
        ("empty_turn_steer_max", "3"),
        ("empty_turn_detect", 1),
        ("text_strikes", None),
        ("text_notice_checkpoints", 0),
        ("text_notice_checkpoints", True),
    ],
)
def test_session_config_validation(key: str, value: object) -> None:
    with pytest.raises(ConfigError) as info:
        SessionConfig(**{key: value})  # type: ignore[arg-type]
    assert info.value.key == key and info.value.value == value
    assert str(info.value).startswith(f"SessionConfig: {key}=")


def test_session_config_defaults_are_the_seed_numbers() -> None:
    cfg = SessionConfig()
    assert (cfg.empty_turn_limit, cfg.empty_turn_action, cfg.empty_turn_steer_max) == (1, "log", 3)
    assert cfg.empty_turn_detect is True and cfg.text_strikes is True
    assert SessionConfig(empty_turn_steer_max=0).empty_turn_steer_max == 0


def test_constructor_errors() -> None:
    with pytest.raises(ValueError, match="either guard"):
        Session(guard=ToolGuard(), guard_config=ToolGuardConfig())
    with pytest.raises(ValueError, match="either guard"):
        Session(guard=ToolGuard(), clock=FakeClock())
    with pytest.raises(TypeError):
        Session(text_config=5)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Session(config={"empty_turn_limit": 2})  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        Session(guard_config={"repeatLimit": 0})
    assert Session(guard_config={"repeatLimit": 5}).guard.config.repeat_limit == 5
    assert Session(text_config="fuse").text_config.profile == "fuse"


def test_verdict_stop_and_to_dict() -> None:
    assert [Verdict(a).stop for a in ("allow", "notice", "deny", "cut", "cancel")] == [
        False, False, False, True, True]  # fmt: skip
    assert Verdict("notice", "x", "why").to_dict() == {
        "action": "notice",
        "kind": "x",
        "reason": "why",
        "detection": None,
        "interventions": [],
        "decision": None,
        "evidence": {},
    }


def test_docstring_examples() -> None:
    result = doctest.testmod(session_module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted >= 5


# ------------------------------------------------------------------ input
def test_non_str_delta_raises_type_error_and_records_nothing() -> None:
    s = Session()
    for bad in (b"abc", None, 3, ["a"]):
        with pytest.raises(TypeError):
            s.feed(bad)  # type: ignore[arg-type]
    assert (s.turn, s.attempt, s.retained_chars, s.detections) == (0, 0, 0, [])


def test_unknown_channel_raises_value_error_naming_it() -> None:
    s = Session()
    with pytest.raises(ValueError, match="'answer'"):
        s.feed("hello", "answer")
    assert (s.turn, s.attempt, s.retained_chars) == (0, 0, 0)


def test_feed_starts_turn_and_attempt_implicitly_and_tool_calls_belong_to_the_last_attempt() -> None:
    s = Session()
    assert s.feed("hi", "reasoning").action == "allow"
    assert (s.turn, s.attempt) == (1, 1)
    s.end_attempt()
    assert s.tool_call("read", {"path": "a.py"}).action == "allow"  # runs after the request ended
    assert (s.turn, s.attempt) == (1, 1)
    s.start_attempt()
    s.start_attempt()  # ends attempt 2 implicitly
    assert (s.turn, s.attempt) == (1, 3)
    s.start_turn()
    assert (s.turn, s.attempt) == (2, 0)
    assert s.end_attempt() == Verdict("allow")  # nothing open


# --------------------------------------------------------------- text loops
@shared_data
def test_cut_at_the_position_scan_text_reports_rescue_family() -> None:
    text, channel = case_text("001_")
    found = scan_text(text, channel)  # default profile: N weak at 2,000, then C (and N confirmed) at 2,200
    assert [(d.kind, d.position, d.strength) for d in found] == [
        ("near_cycle", 2000, "weak"),
        ("cycle", 2200, "strong"),
        ("near_cycle", 2200, "strong"),
    ]
    expected = found[1]  # the first strong detection acts
    s = Session()
    s.start_turn()
    s.start_attempt()
    verdicts = feed_all(s, text, channel, 7)
    at, verdict = next((n, v) for n, v in verdicts if v.stop)
    assert verdict.action == "cut" and verdict.kind == "text_loop"
    assert verdict.detection == expected
    assert at - 7 < expected.position <= at  # the delta that crossed the checkpoint
    assert f"at {expected.position}" in verdict.reason and f"cut at {expected.cut}" in verdict.reason
    assert verdict.reason.startswith("[loopguard] The answer started repeating itself (cycle")
    # sticky: every further delta of the attempt gets the same stop verdict, one strike only
    assert all(v is verdict for n, v in verdicts if n >= at)
    assert s.guard.strikes("default") == 1
    assert s.end_attempt() is verdict
    assert s.detections == found[:3]
    # the weak N episode at 2,000 held two checkpoints before the cut: under the 3 a notice waits for
    assert SessionConfig().text_notice_checkpoints == 3
    assert not any(v.action == "notice" for n, v in verdicts)
    s = Session(config=SessionConfig(text_notice_checkpoints=1))  # a notice at the weak detection itself
    s.start_turn()
    s.start_attempt()
    verdicts = feed_all(s, text, channel, 7)
    notice = next(v for n, v in verdicts if v.action == "notice")
    assert notice.detection == found[0] and notice.kind == "text_loop" and not notice.stop
    assert next(n for n, v in verdicts if v.action == "notice") == 2002  # the delta that crossed 2,000


@shared_data
def test_fuse_profile_acts_at_the_second_hit() -> None:
    text, channel = case_text("001_")
    expected = scan_text(text, channel, "fuse")[0]
    assert (expected.kind, expected.position) == ("exact_tail", 3000)
    s = Session(text_config="fuse")
    head = feed_all(s, text[:3000], channel, 10)
    assert all(v == Verdict("allow") for _, v in head[:-1])
    noticed = head[-1][1]  # the delta reaching 3000: first hit, pending (spec §2.6)
    assert noticed == Verdict("allow", "text_loop", detection=expected)
    assert s.guard.strikes("default") == 0
    verdicts = [(n + 3000, v) for n, v in feed_all(s, text[3000:], channel, 10)]
    at, cut = first(verdicts, "cut")
    assert at == expected.position + 200  # the next checkpoint (check_every=200) is the second hit
    assert cut.detection == expected
    assert s.guard.strikes("default") == 1
    # fuse_hits_before_action=1: the first hit acts
    s1 = Session(text_config=TextConfig("fuse", fuse_hits_before_action=1))
    at, cut = first(feed_all(s1, text, channel, 10), "cut")
    assert at == 3000 and cut.detection == expected


def test_detection_at_finish_counts_like_in_feed() -> None:
    # 690 chars with check_every=1000: the only checkpoint is finish() at 690 (spec §2), where
    # C holds: 23 copies of a 30-char period, L = 690 >= 600 (spec §2.4)
    s = Session(text_config=TextConfig(check_every=1000))
    text = LOOP * 23  # 690 chars
    assert all(v.action == "allow" for _, v in feed_all(s, text, "reasoning", 50))
    verdict = s.end_attempt()
    assert verdict.action == "cut" and verdict.detection is not None
    assert (verdict.detection.kind, verdict.detection.position, verdict.detection.start, verdict.detection.cut) == (
        "cycle",
        690,
        0,
        30,
    )
    assert s.guard.strikes("default") == 1


def test_text_strikes_off() -> None:
    s = Session(config=SessionConfig(text_strikes=False))
    for _ in range(3):  # three cut attempts, none is a strike
        s.start_attempt()
        assert [v.action for _, v in feed_all(s, LOOP * 40, "reasoning", 30)][-1] == "cut"
    assert s.guard.strikes("default") == 0


def test_second_text_loop_in_the_window_cancels() -> None:
    s = Session()
    s.start_attempt()
    assert feed_all(s, LOOP * 40, "text", 30)[-1][1].action == "cut"
    s.start_attempt()
    verdict = feed_all(s, LOOP * 40, "text", 30)[-1][1]
    assert verdict.action == "cancel" and verdict.stop and verdict.kind == "strikes"
    assert [i.kind for i in verdict.interventions] == ["strikes"]
    assert verdict.detection is not None and verdict.detection.kind == "cycle"
    assert verdict.evidence["strikes"] == 2 and verdict.evidence["kinds"] == ["text_loop", "text_loop"]
    assert s.guard.strikes("default") == 0  # cleared by the cancel


# --------------------------------------------------------------- tool calls
def test_d1_third_identical_grep_is_denied_with_hash_evidence() -> None:
    s = Session("s1")
    s.start_turn()
    digest16 = result_digest(GREP_RESULT)[:16]
    assert s.tool_call("grep", GREP).action == "allow"
    assert s.tool_result("grep", GREP, GREP_RESULT) == Verdict("allow")
    assert s.tool_call("grep", GREP).action == "allow"
    second = s.tool_result("grep", GREP, GREP_RESULT)
    assert second.action == "notice" and second.kind == "repeat"
    assert [i.kind for i in second.interventions] == ["repeat"] and digest16 in second.reason
    third = s.tool_call("grep", GREP)
    assert third.action == "deny" and third.kind == "repeat"
    assert third.decision is not None and third.decision.action == "deny"
    assert digest16 in third.reason and third.evidence["hash"] == digest16
    assert third.evidence["count"] == 2 and third.evidence["limit"] == 2


def test_tool_result_cancel_when_an_intervention_cancels() -> None:
    s = Session(guard_config=ToolGuardConfig(circuit_break_after=1))
    for _ in range(2):
        s.tool_call("grep", GREP)
        verdict = s.tool_result("grep", GREP, GREP_RESULT)
    assert verdict.action == "cancel" and verdict.kind == "circuit_breaker"
    assert [(i.action, i.kind) for i in verdict.interventions] == [("notice", "repeat"), ("cancel", "circuit_breaker")]
    assert verdict.reason == "\n".join(i.text for i in verdict.interventions)


def run_attempt(s: Session, reasoning: str, *, result: str | None = None) -> Verdict:
    s.start_attempt()
    for i in range(0, len(reasoning), 16):
        s.feed(reasoning[i : i + 16], "reasoning")
    verdict = s.tool_call("grep", GREP)
    assert verdict.action == "allow"
    end = s.end_attempt()
    if result is not None:
        s.tool_result("grep", GREP, result)
    return end


def test_d1_prime_replay_lowers_the_limit_to_one() -> None:
    reasoning = noise(200, 1)
    s = Session()
    s.start_turn()
    assert run_attempt(s, reasoning) == Verdict("allow")  # a retry: the call never ran
    replay = run_attempt(s, reasoning, result=GREP_RESULT)  # verbatim again, then it runs once
    assert replay.action == "allow" and replay.kind == "replay"
    assert s.guard.replay_mode("default")
    s.start_attempt()
    third = s.tool_call("grep", GREP)  # after only 1 identical result
    assert third.action == "deny" and third.kind == "repeat"
    assert third.evidence["limit"] == 1 and third.evidence["replay"] is True and third.evidence["count"] == 1
    assert result_digest(GREP_RESULT)[:16] in third.reason


def test_d1_prime_needs_identical_attempts() -> None:
    s = Session()
    run_attempt(s, noise(200, 1))
    assert run_attempt(s, noise(200, 2), result=GREP_RESULT) == Verdict("allow")
    assert s.tool_call("grep", GREP).action == "allow"  # 1 result < repeat_limit 2


def test_d1_prime_short_attempts_do_not_count() -> None:
    s = Session()  # signature = 40 reasoning chars + the call, below min_replay_chars=100
    run_attempt(s, "x" * 40)
    assert run_attempt(s, "x" * 40) == Verdict("allow")
    assert not s.guard.replay_mode("default")


def test_implicit_attempt_ends_are_observed_for_d1_prime() -> None:
    s = Session()
    for _ in range(2):
        s.start_attempt()  # the second call ends the first attempt implicitly
        s.feed(noise(150, 3), "text")
    s.start_attempt()
    assert s.guard.replay_mode("default")


# --------------------------------------------------------------- ③ strikes
def streak(s: Session, n: int) -> list[Verdict]:
    out = []
    for _ in range(n):
        out.append(s.tool_call("grep", GREP))
        if out[-1].action in ("allow", "notice"):
            s.tool_result("grep", GREP, GREP_RESULT)
    return out


STREAK_CONFIG = ToolGuardConfig(repeat_limit=100, circuit_break_after=100)


def test_repeat_streak_then_text_loop_cancels() -> None:
    s = Session(guard_config=STREAK_CONFIG)
    verdicts = streak(s, 6)
    assert [v.action for v in verdicts] == ["allow"] * 5 + ["cancel"]
    assert verdicts[-1].kind == "repeat_streak" and verdicts[-1].evidence["count"] == 6
    assert s.guard.strikes("default") == 1
    s.start_attempt()
    verdict = feed_all(s, LOOP * 40, "reasoning", 30)[-1][1]
    assert verdict.action == "cancel" and verdict.kind == "strikes"
    assert verdict.interventions[0].evidence["kinds"] == ["repeat_streak", "text_loop"]


def test_text_loop_then_repeat_streak_fills_the_strikes() -> None:
    s = Session(guard_config=STREAK_CONFIG)
    assert feed_all(s, LOOP * 40, "reasoning", 30)[-1][1].action == "cut"
    s.end_attempt()
    assert streak(s, 6)[-1].kind == "repeat_streak"
    assert s.guard.strikes("default") == 0  # two strikes -> cancel -> cleared
    control = Session(guard_config=STREAK_CONFIG)
    assert streak(control, 6)[-1].kind == "repeat_streak"
    assert control.guard.strikes("default") == 1


# ------------------------------------------------------------------ ② stall
def test_stall_after_ten_minutes() -> None:
    clock = FakeClock()
    s = Session(clock=clock)
    s.start_attempt()  # progress at t=0
    clock.now = 10 * 60 - 0.1
    assert s.check_stall() == Verdict("allow")
    clock.now = 10 * 60
    verdict = s.check_stall()
    assert verdict.action == "notice" and verdict.kind == "stalled"
    assert verdict.reason == "[loopguard] No progress for 10 minutes. The turn looks stalled."
    assert verdict.evidence["pending_tools"] == 0 and verdict.interventions[0].rule == "stall"
    assert s.check_stall() == Verdict("allow")  # once per stall
    s.feed("progress", "text")  # at 10 min
    clock.now = 20 * 60
    second = s.check_stall()  # the second strike within 120 minutes
    assert second.action == "cancel" and second.kind == "stalled" and second.stop


def test_stall_with_a_pending_tool_waits_45_minutes() -> None:
    clock = FakeClock()
    s = Session(clock=clock)
    assert s.tool_call("run_tests", {"cmd": "pytest"}).action == "allow"
    assert s.guard.pending_tools("default") == 1
    clock.now = 45 * 60 - 0.1
    assert s.check_stall().action == "allow"
    clock.now = 45 * 60
    verdict = s.check_stall()
    assert verdict.action == "notice" and verdict.kind == "stalled"
    assert verdict.evidence["pending_tools"] == 1 and "while a tool call is pending" in verdict.reason


# --------------------------------------------------------------- ⑤ empty turn
def turn(s: Session, reasoning: str, text: str = "") -> Verdict:
    s.start_turn()
    s.start_attempt()
    if reasoning:
        s.feed(reasoning, "reasoning")
    if text:
        s.feed(text, "text")
    s.end_attempt()
    return s.end_turn()


def test_empty_turn_log(caplog: pytest.LogCaptureFixture) -> None:
    s = Session()
    with caplog.at_level(logging.INFO, logger="loopguard.session"):
        verdict = turn(s, "thinking about it")
    assert verdict == Verdict("allow", "empty_turn", evidence={"count": 1, "steers": 0})
    assert "empty turn 1 (1 in a row)" in caplog.text
    assert turn(s, "thinking", "The answer is 4.") == Verdict("allow")
    assert turn(s, "", "") == Verdict("allow")  # no reasoning: not an empty turn
    assert turn(s, "hm", " \n\t ").kind == "empty_turn"  # whitespace is no answer text
    assert s.end_turn() == Verdict("allow")  # no turn open


def test_empty_turn_steer_and_its_cap(caplog: pytest.LogCaptureFixture) -> None:
    s = Session(config=SessionConfig(empty_turn_action="steer", empty_turn_steer_max=3))
    verdicts = [turn(s, "thinking") for _ in range(5)]
    assert [v.action for v in verdicts] == ["notice"] * 3 + ["allow"] * 2
    assert all(v.kind == "empty_turn" for v in verdicts)
    assert [v.reason for v in verdicts[:3]] == [render("empty_turn", "en", count=n) for n in (1, 2, 3)]
    assert verdicts[3].reason == "" and verdicts[3].evidence == {"count": 4, "steers": 3}
    assert turn(s, "thinking", "done") == Verdict("allow")  # resets the count, not the steers
    with caplog.at_level(logging.WARNING, logger="loopguard.session"):
        capped = turn(s, "thinking")
    assert capped.action == "allow" and capped.evidence == {"count": 1, "steers": 3}
    assert "steer cap 3 reached" in caplog.text


def test_empty_turn_limit_counts_consecutive_turns() -> None:
    s = Session(config=SessionConfig(empty_turn_limit=2, empty_turn_action="steer"))
    assert turn(s, "a") == Verdict("allow")
    assert turn(s, "a", "answer") == Verdict("allow")  # a normal turn resets
    assert turn(s, "a") == Verdict("allow")
    second = turn(s, "a")
    assert second.action == "notice" and second.evidence["count"] == 2
    assert second.reason == render("empty_turn", "en", count=2)
    assert turn(s, "a").evidence["count"] == 3


def test_empty_turn_steer_speaks_the_reasoning_language() -> None:
    s = Session(config=SessionConfig(empty_turn_action="steer"))
    assert turn(s, "我们先看一下这个折扣计算的问题").reason == render("empty_turn", "zh", count=1)


def test_empty_turn_detect_off_and_cancelled_turns() -> None:
    assert turn(Session(config=SessionConfig(empty_turn_detect=False)), "a") == Verdict("allow")
    s = Session(config=SessionConfig(empty_turn_limit=2))
    assert turn(s, "a") == Verdict("allow")
    s.start_turn()
    s.feed("b", "reasoning")
    s.cancel("user pressed stop")
    assert s.end_turn() == Verdict("allow")  # a cancelled turn is not judged ...
    assert turn(s, "c").evidence["count"] == 2  # ... and does not reset the count


# ------------------------------------------------------- sessions and state
def test_guard_state_survives_new_user_messages() -> None:
    s = Session()
    s.start_turn()
    for _ in range(2):
        s.tool_call("grep", GREP)
        s.tool_result("grep", GREP, GREP_RESULT)
    s.end_turn()
    s.start_turn()
    assert (s.turn, s.attempt) == (2, 0)
    assert s.tool_call("grep", GREP).action == "deny"


def test_reset_forgets_and_shared_guard_keeps_other_sessions() -> None:
    guard = ToolGuard()
    a, b = Session("a", guard=guard), Session("b", guard=guard)
    for s in (a, b):
        for _ in range(2):
            s.tool_call("grep", GREP)
            s.tool_result("grep", GREP, GREP_RESULT)
    feed_all(a, LOOP * 40, "text", 30)
    assert guard.strikes("a") == 1
    a.reset()
    assert (a.turn, a.attempt, a.detections, a.retained_chars, guard.strikes("a")) == (0, 0, [], 0, 0)
    assert a.tool_call("grep", GREP).action == "allow"
    assert b.tool_call("grep", GREP).action == "deny"  # untouched


def test_sessions_do_not_share_counts() -> None:
    guard = ToolGuard()
    a, b = Session("a", guard=guard), Session("b", guard=guard)
    for _ in range(2):
        a.tool_call("grep", GREP)
        a.tool_result("grep", GREP, GREP_RESULT)
    assert b.tool_call("grep", GREP).action == "allow"
    assert a.tool_call("grep", GREP).action == "deny"


def test_dispose_makes_every_call_raise() -> None:
    s = Session()
    s.tool_call("grep", GREP)
    s.dispose()
    s.dispose()  # harmless
    calls = [
        s.start_turn,
        s.start_attempt,
        lambda: s.feed("x"),
        lambda: s.tool_call("grep", GREP),
        lambda: s.tool_result("grep", GREP, "r"),
        s.end_attempt,
        s.end_turn,
        s.check_stall,
        s.cancel,
        s.reset,
    ]
    for call in calls:
        with pytest.raises(RuntimeError, match="session disposed"):
            call()
    assert len(s.guard) == 0


def test_logs_never_carry_arguments_results_or_text(caplog: pytest.LogCaptureFixture) -> None:
    secret_args = {"pattern": "ARGSECRET", "path": "src"}
    s = Session(config=SessionConfig(empty_turn_action="steer"))
    with caplog.at_level(logging.DEBUG):
        s.start_turn()
        s.feed("TEXTSECRET " + LOOP * 40, "reasoning")
        for _ in range(4):
            s.tool_call("grep", secret_args)
            s.tool_result("grep", secret_args, "RESULTSECRET a.py:1: x")
        s.end_turn()
        s.cancel("why")
    assert caplog.records  # something was logged
    for word in ("ARGSECRET", "RESULTSECRET", "TEXTSECRET"):
        assert word not in caplog.text


# ----------------------------------------------------------------- memory
def test_retained_text_is_bounded() -> None:
    s = Session()
    chunk = 10_000
    peak = 0
    for attempt in range(2):  # 2 x 1.5 M code points = 3 MB of ASCII
        s.start_attempt()
        text = noise(1_500_000, attempt)
        for i in range(0, len(text), chunk):
            s.feed(text[i : i + chunk], "reasoning")
            peak = max(peak, s.retained_chars)
            if i + chunk <= MAX_ATTEMPT_CHARS:  # everything fed so far is kept (plus the language sample)
                assert s.retained_chars == i + chunk + LANG_SAMPLE_CHARS
            else:  # past the bound nothing is kept
                assert s.retained_chars == LANG_SAMPLE_CHARS
        assert s.end_attempt() == Verdict("allow")
        assert s.retained_chars == LANG_SAMPLE_CHARS
    assert peak == MAX_ATTEMPT_CHARS + LANG_SAMPLE_CHARS
    assert not s.guard.replay_mode("default")


def test_attempts_past_the_bound_are_never_replays() -> None:
    text = noise(MAX_ATTEMPT_CHARS + 1, 7)
    s = Session()
    for _ in range(2):
        s.start_attempt()
        s.feed(text, "reasoning")
        s.tool_call("read", {"path": "a.py"})
        assert s.end_attempt() == Verdict("allow")
    assert not s.guard.replay_mode("default")
    # at exactly the bound the text is kept and an identical attempt is a replay
    s.start_attempt()
    s.feed(text[:-1], "reasoning")
    s.end_attempt()
    s.start_attempt()
    s.feed(text[:-1], "reasoning")
    assert s.end_attempt().kind == "replay"


def test_start_turn_resets_the_rescue_budget() -> None:
    """Seed 003's rescue cap counts rescues in a row within a turn; a new user message starts again."""
    s = Session()
    for _ in range(3):
        s.record_rescue(retry_requests=2)
    assert (s.consecutive_rescues, s.retry_requests_left) == (3, 2)
    assert s.take_retry() and s.retry_requests_left == 1
    s.start_turn()
    assert (s.consecutive_rescues, s.retry_requests_left) == (0, 0)
    assert not s.take_retry()
