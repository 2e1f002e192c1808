"""The structured decision log (issue 18): one record per decision, each cut/deny/cancel exactly
once at WARNING (across every ``loopguard`` logger), exact fields, JSON Lines, hashed session ids."""

from __future__ import annotations

import hashlib
import io
import json
import logging
import re
from collections.abc import Iterator
from typing import Any

import pytest

from loopguard import LoopBrake, LoopBrakeError, Session, StreamConfig, StreamGuard, ToolGuard, ToolGuardConfig
from loopguard.observe import DECISION_LOGGER, JsonLinesFormatter, configure_decision_log, reset
from loopguard.results import result_digest

GREP = {"pattern": "needle", "path": "src"}
GREP_RESULT = "src/a.py:1550: needle here\nsrc/a.py:1755: needle again"
LOOP = "Wait, let me recheck the sum. "  # 30 chars; x40 is a verbatim cycle (spec §2.4)
TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


@pytest.fixture
def out() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    configure_decision_log(stream, replica_id="r1")
    yield stream
    reset()


@pytest.fixture
def every(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    caplog.set_level(logging.DEBUG)  # every logger, every level
    yield caplog
    reset()


def fields(caplog: pytest.LogCaptureFixture, level: int = logging.DEBUG) -> list[dict[str, Any]]:
    """The decision records' fields (``time`` checked and dropped), in order."""
    found = []
    for r in caplog.records:
        if r.name == DECISION_LOGGER and r.levelno >= level:
            f = dict(r.loopguard)
            assert TIME.match(f.pop("time"))
            found.append(f)
    return found


def warnings(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """Every WARNING-or-worse record of any ``loopguard`` logger."""
    return [r for r in caplog.records if r.name.startswith("loopguard") and r.levelno >= logging.WARNING]


def rec(event: str, action: str, **more: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "event": event,
        "surface": "tool_guard",
        "action": action,
        "rule": "",
        "kind": "",
        "session": "s1",
        "tool": "grep",
        "channel": "tool",
        "call_index": -1,
        "hash": "",
        "evidence": {},
        "replica": "r1",
    }
    base.update(more)
    return base


def three_greps(guard: ToolGuard, sid: str = "s1") -> None:
    for _ in range(2):
        assert guard.before_call(sid, "grep", GREP).action == "allow"
        guard.after_call(sid, "grep", GREP, GREP_RESULT)
    assert guard.before_call(sid, "grep", GREP).action == "deny"


# ------------------------------------------------------------------ exact records


def test_three_identical_calls_give_a_notice_then_the_deny_at_call_2(out: io.StringIO, every: Any) -> None:
    three_greps(ToolGuard())
    digest = result_digest(GREP_RESULT)[:12]  # the result hash both records quote (test_guard: h16)
    notice = rec("tool_result", "notice", rule="repeat", kind="repeat", call_index=1, hash=digest)
    notice["evidence"] = {"count": 2}
    deny = rec("tool_call", "deny", rule="repeat", kind="repeat", call_index=2, hash=digest)
    deny["evidence"] = {"count": 2, "limit": 2, "replay": False}
    assert fields(every) == [notice, deny]  # the logger's level is INFO: no allow
    levels = [r.levelno for r in every.records if r.name == DECISION_LOGGER]
    assert levels == [logging.INFO, logging.WARNING]
    # the JSON Lines handler (level INFO): the notice and the deny, one ASCII object per line
    text = out.getvalue()
    assert text.isascii() and text.endswith("\n")
    lines = [json.loads(line) for line in text.splitlines()]
    assert [line.pop("level") for line in lines] == ["INFO", "WARNING"]
    assert all(line.pop("logger") == DECISION_LOGGER and TIME.match(line.pop("time")) for line in lines)
    assert lines[1].pop("message") == f"deny repeat: tool grep call 2 hash {digest} session s1 (tool_call)"
    lines[0].pop("message")
    assert lines == [notice, deny]
    assert len(warnings(every)) == 1


def test_debug_level_adds_the_allows_to_the_file(tmp_path: Any) -> None:
    path = tmp_path / "decisions.jsonl"
    configure_decision_log(str(path), replica_id="r2", level=logging.DEBUG)
    try:
        three_greps(ToolGuard())
    finally:
        reset()
    lines = [json.loads(line) for line in path.read_text("ascii").splitlines()]
    assert [(x["action"], x["call_index"], x["replica"]) for x in lines] == [
        ("allow", 0, "r2"),
        ("allow", 1, "r2"),
        ("notice", 1, "r2"),
        ("deny", 2, "r2"),
    ]


def test_session_ids_hashed_with_a_shared_key(every: Any) -> None:
    stream = io.StringIO()
    configure_decision_log(stream, replica_id="r1", hash_session_ids=True, session_hash_key="k3y")
    three_greps(ToolGuard(), sid="user-42")
    key = hashlib.sha256(b"k3y").digest()
    expected = "h:" + hashlib.blake2b(b"user-42", key=key, digest_size=8).hexdigest()
    assert [f["session"] for f in fields(every)] == [expected] * 2  # the notice and the deny
    assert "user-42" not in stream.getvalue() and "user-42" not in every.text.split("loopguard.guard")[0]
    reset()
    configure_decision_log(io.StringIO(), hash_session_ids=True, session_hash_key="other")
    every.clear()
    three_greps(ToolGuard(), sid="user-42")
    assert {f["session"] for f in fields(every)} != {expected}  # another key, another hash


def test_default_replica_id_is_host_and_pid(every: Any) -> None:
    import os
    import socket

    three_greps(ToolGuard())
    assert {f["replica"] for f in fields(every)} == {f"{socket.gethostname()}-{os.getpid()}"}  # platform.node()


def test_bad_arguments_are_named() -> None:
    with pytest.raises(TypeError, match="target must be a path or a text stream, not int"):
        configure_decision_log(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="replica_id must be a str, not int"):
        configure_decision_log(io.StringIO(), replica_id=7)  # type: ignore[arg-type]
    reset()


def test_formatter_other_records_keep_message_and_exception_class_only() -> None:
    try:
        raise ValueError("secret-ish text")
    except ValueError:
        import sys

        record = logging.LogRecord("loopguard.stream", logging.ERROR, __file__, 1, "broke: %s", ("x",), sys.exc_info())
    line = json.loads(JsonLinesFormatter().format(record))
    assert (line["level"], line["logger"], line["message"], line["exception"]) == (
        "ERROR",
        "loopguard.stream",
        "broke: x",
        "ValueError",
    )
    assert "secret-ish" not in JsonLinesFormatter().format(record)


# ------------------------------------------------------------------ exactly once


def test_tool_guard_every_deny_and_cancel_once_at_warning(every: Any) -> None:
    guard = ToolGuard(ToolGuardConfig(escape_runs=0))
    stops = 0
    for _ in range(8):  # the repeat deny from call 2 on, the repeat_streak cancel from call 5 (6 in a row)
        d = guard.before_call("s1", "grep", GREP)
        stops += d.action in ("deny", "cancel")
        if d.allowed:
            stops += sum(i.action == "cancel" for i in guard.after_call("s1", "grep", GREP, GREP_RESULT))
    got = warnings(every)
    assert len(got) == stops == 6  # calls 2..7: the deny at 2-4, the cancel at 5-7
    assert {r.name for r in got} == {DECISION_LOGGER}
    assert [(f["call_index"], f["action"], f["rule"]) for f in fields(every, logging.WARNING)] == [
        (2, "deny", "repeat"),
        (3, "deny", "repeat"),
        (4, "deny", "repeat"),
        (5, "cancel", "repeat_streak"),
        (6, "cancel", "repeat_streak"),
        (7, "cancel", "repeat_streak"),
    ]


def test_a_call_id_seen_twice_is_recorded_once(every: Any) -> None:
    guard = ToolGuard(ToolGuardConfig(escape_runs=0))
    three_greps(guard)
    every.clear()
    assert guard.before_call("s1", "grep", GREP, call_id="c9").action == "deny"
    assert guard.before_call("s1", "grep", GREP, call_id="c9").action == "deny"  # the same call, again
    assert len(warnings(every)) == 1


def test_stall_and_strike_records() -> None:
    now = [0.0]
    guard = ToolGuard(clock=lambda: now[0])
    caplog_handler = _Collect()
    logging.getLogger("loopguard").addHandler(caplog_handler)
    logging.getLogger(DECISION_LOGGER).setLevel(logging.INFO)
    try:
        guard.note_progress("s1")
        now[0] = 601.0  # stall_minutes 10
        stalled = guard.check_stall("s1")
        assert stalled is not None and stalled.action == "notice"
        assert guard.check_stall("s1") is None  # once per stall
        struck = guard.strike("s1", "text_loop")  # the second strike within the window: cancel
        assert struck is not None and struck.action == "cancel"
    finally:
        logging.getLogger("loopguard").removeHandler(caplog_handler)
        reset()
    got = [
        (r.levelno, r.loopguard["event"], r.loopguard["action"], r.loopguard["rule"]) for r in caplog_handler.records
    ]
    assert got == [(logging.INFO, "stall", "notice", "stall"), (logging.WARNING, "strike", "cancel", "strikes")]
    assert got[0] and caplog_handler.records[0].loopguard["evidence"] == {
        "idle_seconds": 601.0,
        "pending_tools": 0,
        "strikes": 1,
    }


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.INFO and hasattr(record, "loopguard"):
            self.records.append(record)


def feed_loop(s: Session, channel: str = "text") -> Any:
    verdict = None
    for i in range(0, len(LOOP) * 40, 30):
        verdict = s.feed((LOOP * 40)[i : i + 30], channel)
    return verdict


def test_session_text_loop_cut_then_strikes_cancel_each_once(every: Any) -> None:
    s = Session("s7")
    s.start_attempt()
    cut = feed_loop(s)
    assert cut.action == "cut"
    s.end_attempt()
    s.start_attempt()
    cancel = feed_loop(s)
    assert cancel.action == "cancel"
    s.end_attempt()
    got = warnings(every)
    assert len(got) == 2 and {r.name for r in got} == {DECISION_LOGGER}
    records = fields(every, logging.WARNING)
    assert [(f["event"], f["surface"], f["action"], f["rule"], f["channel"], f["session"]) for f in records] == [
        ("text_loop", "text", "cut", "text_loop", "text", "s7"),
        ("text_loop", "text", "cancel", "strikes", "text", "s7"),
    ]
    # numbers only: the channel name and the strength (strings) stay out of the evidence
    assert records[0]["evidence"] == {"position": cut.evidence["position"], "cut": cut.evidence["cut"]}
    assert (
        records[0]["kind"] == cut.detection.kind and records[0]["evidence"]["cut"] < records[0]["evidence"]["position"]
    )
    assert records[1]["evidence"] == {
        "position": cancel.evidence["position"],
        "cut": cancel.evidence["cut"],
        "strikes": 2,
    }


def stream_loop(session: Session, mode: str) -> Any:
    sg = StreamGuard(session, StreamConfig(mode=mode))  # type: ignore[arg-type]
    text = LOOP * 40
    for i in range(0, len(text), 30):
        sg.reasoning(text[i : i + 30])
        if sg.stopped:
            break
    return sg.finish("stop")


def test_stream_cut_mode_cut_then_cancel_each_once(every: Any) -> None:
    session = Session("s8")
    first, second = stream_loop(session, "cut"), stream_loop(session, "cut")
    assert (first.stopped, first.cancelled, second.stopped, second.cancelled) == (True, False, True, True)
    got = warnings(every)
    assert len(got) == 2 and {r.name for r in got} == {DECISION_LOGGER}
    records = fields(every, logging.WARNING)
    assert [(f["event"], f["surface"], f["action"], f["rule"], f["channel"]) for f in records] == [
        ("stream_cut", "stream", "cut", "text_loop", "reasoning"),
        ("stream_cut", "stream", "cancel", "strikes", "reasoning"),
    ]
    assert [f["evidence"]["resume"] for f in records] == [False, False]
    assert records[0]["evidence"]["removed"] == first.removed


def test_stream_rescue_mode_resumed_logs_no_cancel(every: Any) -> None:
    session = Session("s9")
    outcomes = [stream_loop(session, "rescue") for _ in range(2)]  # the 2nd text loop fills the strikes
    assert [(o.stopped, o.should_resume, o.cancelled) for o in outcomes] == [(True, True, False)] * 2
    records = fields(every)
    assert [(f["event"], f["action"], f["evidence"]["resume"]) for f in records if f["action"] != "allow"] == [
        ("stream_cut", "cut", True),
        ("stream_cut", "cut", True),
    ]
    assert [f["evidence"]["rescues"] for f in records if f["event"] == "stream_cut"] == [1, 2]  # outcome.rescues
    assert len(warnings(every)) == 2
    assert not any("cancel" in r.getMessage() for r in every.records if r.name.startswith("loopguard"))


def test_loop_brake_deny_once(every: Any) -> None:
    brake = LoopBrake(max_repeats=2)
    assert brake.check("search", {"q": "x"}, session_id="b1") == 1
    with pytest.raises(LoopBrakeError):
        brake.check("search", {"q": "x"}, session_id="b1")
    got = warnings(every)
    assert len(got) == 1 and got[0].name == DECISION_LOGGER
    from loopguard import call_hash

    assert fields(every, logging.WARNING) == [
        {
            **rec("brake", "deny", rule="brake", kind="brake", session="b1", tool="search"),
            "surface": "brake",
            "hash": call_hash("search", {"q": "x"})[:12],
            "evidence": {"count": 2, "limit": 2},
            "replica": fields(every)[0]["replica"],
        }
    ]


def test_allows_only_when_debug_was_configured_or_refreshed(every: Any) -> None:
    three_greps(ToolGuard())  # nothing configured: the notice and the deny, no allow
    assert [f["action"] for f in fields(every)] == ["notice", "deny"]
    every.clear()
    logging.getLogger(DECISION_LOGGER).setLevel(logging.DEBUG)
    from loopguard.observe import refresh

    refresh()  # the level was set by hand: allows are recorded from now on
    three_greps(ToolGuard())
    assert [f["action"] for f in fields(every)] == ["allow", "allow", "notice", "deny"]


def test_a_second_handler_keeps_the_hashing_and_the_replica_of_the_first(every: Any) -> None:
    first, second = io.StringIO(), io.StringIO()
    configure_decision_log(first, replica_id="gw-1", hash_session_ids=True, session_hash_key="k3y")
    configure_decision_log(second)  # e.g. a stderr handler added later: it changes nothing
    three_greps(ToolGuard(), sid="alice-secret-conv")
    key = hashlib.sha256(b"k3y").digest()
    expected = "h:" + hashlib.blake2b(b"alice-secret-conv", key=key, digest_size=8).hexdigest()
    for stream in (first, second):
        lines = [json.loads(x) for x in stream.getvalue().splitlines()]
        assert [(x["session"], x["replica"]) for x in lines] == [(expected, "gw-1")] * 2
    configure_decision_log(io.StringIO(), hash_session_ids=False)  # an explicit False turns it off
    every.clear()
    three_greps(ToolGuard(), sid="bob")
    assert {f["session"] for f in fields(every)} == {"bob"}


def test_hashed_session_ids_reach_no_loopguard_log_line(every: Any) -> None:
    """With hashing on, the session id appears in no record of any ``loopguard`` logger: not in
    the decision records, nor in the session's and the brake's own lines (DEBUG and up)."""
    configure_decision_log(io.StringIO(), hash_session_ids=True, session_hash_key="k3y")
    sid = "user-alice@example.com-conv-7"
    session = Session(sid)
    session.start_attempt()
    for _ in range(40):
        session.feed(LOOP)
    session.end_attempt()
    brake = LoopBrake(max_repeats=2)
    brake.check("search", {"q": "x"}, session_id=sid)
    with pytest.raises(LoopBrakeError):
        brake.check("search", {"q": "x"}, session_id=sid)
    three_greps(ToolGuard(), sid=sid)
    mine = [r for r in every.records if r.name.startswith("loopguard")]
    assert {r.name for r in mine} >= {"loopguard.session", "loopguard.brake", DECISION_LOGGER}
    assert not [r.getMessage() for r in mine if sid in r.getMessage() or sid in str(getattr(r, "loopguard", ""))]


def test_loop_brake_fail_closed_deny_is_recorded_once(every: Any, tmp_path: Any) -> None:
    from loopguard import LoopBrakeStoreError, RedisStore, call_hash
    from redis_server import RedisServer, require_redis

    require_redis()
    store = RedisStore(RedisServer(tmp_path).url, retry_interval=100)  # nothing listens there
    brake = LoopBrake(store=store, on_store_error="closed")
    with pytest.raises(LoopBrakeStoreError):
        brake.check("read_file", {"p": 1}, session_id="s")
    denies = [f for f in fields(every) if f["action"] == "deny"]
    assert denies == [
        {
            **rec("brake", "deny", rule="store_unavailable", kind="store_unavailable", session="s", tool="read_file"),
            "surface": "brake",
            "hash": call_hash("read_file", {"p": 1})[:12],
            "evidence": {"count": 0, "limit": 3},
            "replica": denies[0]["replica"],
        }
    ]
    assert [r.name for r in warnings(every) if r.name == DECISION_LOGGER] == [DECISION_LOGGER]
    store.close()
