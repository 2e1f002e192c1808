"""Stop hints with a pre-registered observation (issue 20 item 5; seed 002 line ①c) and
``loopguard stats``."""

from __future__ import annotations

import io
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from loopguard import ConfigError, Session, SessionConfig, StreamConfig
from loopguard.cli import main
from loopguard.hints import max_ngram_repeat
from loopguard.integrations.openai import guard_stream
from loopguard.observe import configure_decision_log, reset

LOOP = "Wait, let me recheck the sum of the first column. "  # 50 code points
WORDS = "alpha beta gamma delta column total carry digit sum check value result answer add".split()
HINT = SessionConfig(hint=True)


def naive_max_repeat(text: str, n: int = 24) -> int:
    """The repeat statistic written independently: occurrences counted with str.find."""
    best = 0
    for i in range(len(text) - n + 1):
        gram, count, at = text[i : i + n], 0, text.find(text[i : i + n])
        while at != -1:
            count += 1
            at = text.find(gram, at + 1)
        best = max(best, count)
    return best


def clean_text(seed: int, n: int) -> str:
    rng = random.Random(seed)
    out = []
    while sum(map(len, out)) < n:
        out.append(" ".join(rng.choice(WORDS) for _ in range(8)) + f" {len(out)}. ")
    return "".join(out)


@pytest.fixture
def log() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    configure_decision_log(stream, replica_id="r1")
    yield stream
    reset()


def records(stream: io.StringIO, rule: str = "hint") -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in stream.getvalue().splitlines()]
    return [r for r in rows if r.get("rule") == rule]


def loop_attempt(session: Session, unit: str = LOOP, channel: str = "reasoning") -> tuple[list[Any], str]:
    """Feed ``unit`` until the attempt stops; the verdicts that were not allow, and the text fed."""
    session.start_attempt()
    said, fed = [], []
    for _ in range(400):
        verdict = session.feed(unit, channel)
        fed.append(unit)
        if verdict.action != "allow":
            said.append(verdict)
        if verdict.stop:
            break
    session.end_attempt()
    return said, "".join(fed)


def feed_attempt(session: Session, text: str, channel: str = "reasoning", step: int = 40) -> list[Any]:
    session.start_attempt()
    said = [session.feed(text[i : i + step], channel) for i in range(0, len(text), step)]
    session.end_attempt()
    return [v for v in said if v.action != "allow"]


def test_max_ngram_repeat_matches_a_naive_count() -> None:
    rng = random.Random(7)
    for _ in range(50):
        text = "".join(rng.choice("ab ") for _ in range(rng.randrange(0, 120)))
        for n in (1, 3, 24):
            assert max_ngram_repeat(text, n) == naive_max_repeat(text, n)


def test_the_hint_comes_first_then_the_cut_of_the_same_attempt() -> None:
    session = Session("h", config=HINT)
    session.start_turn()
    said, _ = loop_attempt(session)
    assert [(v.action, v.kind) for v in said] == [("notice", "hint"), ("cut", "text_loop")]
    hint = said[0]
    assert hint.reason.startswith("[loopguard] Your reasoning is repeating itself. Stop repeating")
    assert hint.detection is not None and hint.evidence["observe_chars"] == 2000
    assert (hint.evidence["episode_hints"], hint.evidence["session_hints"]) == (1, 1)


def test_a_model_that_stops_looping_after_the_hint_is_effective(log: io.StringIO) -> None:
    session = Session("h", config=HINT)
    session.start_turn()
    said, fed = loop_attempt(session)
    hint = said[0]
    before = fed[: hint.evidence["position"]]  # the text up to the hint's checkpoint
    after = clean_text(1, 3000)
    assert feed_attempt(session, after) == []
    (result,) = session.hint_observations
    window = min(2000, len(before))
    assert result["outcome"] == "effective"
    assert result["window_chars"] == window == result["observed_chars"]
    assert result["before_max_repeat"] == naive_max_repeat(before[-window:])
    assert result["after_max_repeat"] == naive_max_repeat(after[:window])
    assert result["before_max_repeat"] >= 10 and result["after_max_repeat"] <= 2
    assert result["blind_chars"] == len(fed) - len(before)  # the rest of the hint's own request
    assert result["fired"] is False and result["attempts_spanned"] == 1
    # the decision log: the hint (a notice) and the observation with its settings
    hint_rec, observed = records(log)
    assert (hint_rec["event"], hint_rec["action"], hint_rec["level"]) == ("hint", "notice", "INFO")
    assert (observed["event"], observed["action"], observed["kind"]) == ("hint_observation", "observe", "effective")
    assert observed["evidence"]["success_drop"] == 0.5 and observed["evidence"]["observe_chars"] == 2000
    assert observed["evidence"]["ngram"] == 24 and observed["channel"] == "reasoning"


def test_a_model_that_keeps_looping_is_ineffective() -> None:
    session = Session("h", config=HINT)
    session.start_turn()
    loop_attempt(session)
    said, _ = loop_attempt(session)  # the next request loops the same way
    (result,) = session.hint_observations[:1]
    assert result["outcome"] == "ineffective" and result["fired"] is True
    assert result["after_max_repeat"] >= result["before_max_repeat"] * 0.5
    # the second request gets its own hint (the episode allows 2), then its stop
    assert [(v.action, v.kind) for v in said][0] == ("notice", "hint")
    assert said[-1].stop


def test_no_drop_and_no_detection_is_undetermined() -> None:
    config = SessionConfig(hint=True, hint_success_drop=0.99)  # asks for a drop no text gives
    session = Session("h", config=config)
    session.start_turn()
    loop_attempt(session)
    feed_attempt(session, clean_text(2, 3000))
    assert [r["outcome"] for r in session.hint_observations] == ["undetermined"]


def test_a_turn_that_ends_early_interrupts_and_an_empty_one_carries_over_once() -> None:
    session = Session("h", config=HINT)
    session.start_turn()
    loop_attempt(session)
    session.end_turn()  # nothing of a later request yet: carried into the next turn
    assert session.hint_observations == []
    session.start_turn()
    feed_attempt(session, clean_text(3, 200)[:200])  # some, not the whole window
    session.end_turn()
    (result,) = session.hint_observations
    assert (result["outcome"], result["observed_chars"], result["turns_spanned"]) == ("interrupted", 200, 1)


def test_a_carried_observation_concludes_in_the_next_turn() -> None:
    session = Session("h", config=HINT)
    session.start_turn()
    loop_attempt(session)
    session.start_turn()  # no end_turn: the next user turn opens the same way
    feed_attempt(session, clean_text(4, 3000))
    (result,) = session.hint_observations
    assert (result["outcome"], result["turns_spanned"]) == ("effective", 1)


def test_caps_per_episode_and_session_then_a_new_episode(log: io.StringIO) -> None:
    now = [0.0]
    config = SessionConfig(hint=True, hint_max_per_episode=2, hint_max_per_session=3, hint_episode_minutes=10)
    session = Session("h", config=config, clock=lambda: now[0])
    session.start_turn()
    kinds = []
    for minute in (0, 1, 2, 3, 14, 30):
        now[0] = minute * 60.0
        said, _ = loop_attempt(session)
        kinds.append(said[0].kind)
    # two hints in the first episode, then stops; 14 min after the last hint a new episode, whose
    # hint is the session's third and last; at 30 min another episode, but the session cap holds
    assert [k == "hint" for k in kinds] == [True, True, False, False, True, False]
    quota = [r for r in records(log) if r["event"] == "hint_quota"]
    # one record per episode refused (minutes 2 and 3 share one)
    assert [(r["evidence"]["episode_hints"], r["evidence"]["session_hints"]) for r in quota] == [(2, 2), (0, 3)]


def test_the_hint_speaks_the_streams_language_or_the_given_text() -> None:
    zh = "等一下，让我再检查一遍第一列的和。"
    session = Session("h", config=HINT)
    session.start_turn()
    said, _ = loop_attempt(session, zh * 1)
    assert (
        said[0].reason
        == "[loopguard] 你的推理在原地重复。停止重复：不要再复述已经写过的内容，现在给出结论，或换一种做法。"
    )
    custom = Session("c", config=SessionConfig(hint="Please stop and answer."))
    custom.start_turn()
    said, _ = loop_attempt(custom)
    assert said[0].reason == "Please stop and answer."


def test_hints_are_off_by_default() -> None:
    assert SessionConfig().hint is False
    session = Session("h")
    session.start_turn()
    said, _ = loop_attempt(session)
    assert [v.kind for v in said] == ["text_loop"] and session.hint_observations == []


def test_a_guarded_stream_reports_the_hint_and_still_cuts() -> None:
    chunks = [{"choices": [{"index": 0, "delta": {"content": LOOP}, "finish_reason": None}]} for _ in range(60)]
    session = Session("s", config=HINT)
    stream = guard_stream(iter(chunks), config=StreamConfig(mode="cut"), session=session)
    list(stream)
    outcome = stream.outcome
    assert outcome.stopped and outcome.hint is not None and outcome.hint.kind == "hint"
    assert outcome.hint.reason.startswith("[loopguard] Your answer is repeating itself.")
    assert outcome.to_dict()["hint"]["kind"] == "hint"


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("hint", ""),
        ("hint", "  "),
        ("hint", 1),
        ("hint_success_drop", 0),
        ("hint_success_drop", 1.5),
        ("hint_observe_chars", 10),
        ("hint_max_per_episode", 0),
        ("hint_episode_minutes", -1),
    ],
)
def test_bad_hint_settings_are_named(key: str, value: Any) -> None:
    with pytest.raises(ConfigError, match=f"SessionConfig: {key}="):
        SessionConfig(**{key: value})


def _write_log(path: Path, outcomes: list[str]) -> None:
    handler = configure_decision_log(path, replica_id="r1")
    try:
        for i, outcome in enumerate(outcomes):
            session = Session(f"s{i}", config=HINT)
            session.start_turn()
            loop_attempt(session)
            if outcome == "effective":
                feed_attempt(session, clean_text(i, 3000))
            elif outcome == "ineffective":
                loop_attempt(session)
            else:
                session.end_turn()
                session.start_turn()
                feed_attempt(session, clean_text(i, 100))
                session.end_turn()
    finally:
        reset()
        handler.close()


def test_stats_counts_actions_rules_and_hint_outcomes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log_file = tmp_path / "decisions.jsonl"
    _write_log(log_file, ["effective"] * 4 + ["ineffective"] * 2 + ["interrupted"])
    with log_file.open("a", encoding="utf-8") as handle:
        handle.write("not json\n")
    assert main(["stats", str(log_file)]) == 2  # the bad line is reported and skipped
    out, err = capsys.readouterr()
    assert f"{log_file}:" in err and "not a JSON line" in err
    lines = out.splitlines()
    assert "stop hints: 9 given, 0 refused by a cap" in lines  # the ineffective runs were hinted twice
    assert "  observations concluded: 6 (interrupted: 1, not counted)" in lines
    assert "  effective           4   66.7%" in lines
    assert "  ineffective         2   33.3%" in lines
    assert main(["stats", "--json", str(tmp_path)]) == 2
    data = json.loads(capsys.readouterr().out)
    assert data["hints"]["outcomes"] == {"effective": 4, "ineffective": 2, "undetermined": 0, "interrupted": 1}
    cut = next(r for r in data["by_action_rule"] if (r["action"], r["rule"]) == ("cut", "text_loop"))
    assert cut["sessions"] == 7


def test_stats_says_not_enough_data_below_five(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log_file = tmp_path / "decisions.jsonl"
    _write_log(log_file, ["effective"] * 3)
    assert main(["stats", str(log_file)]) == 0
    out = capsys.readouterr().out
    assert "  not enough data: 3 observation(s), at least 5 needed" in out.splitlines()
    assert "%" not in out


def test_stats_names_a_log_it_cannot_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.jsonl"
    assert main(["stats", str(missing)]) == 2
    err = capsys.readouterr().err
    assert err == f"loopguard stats: cannot read {missing}: FileNotFoundError\n"


def test_stats_survives_hostile_logs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A fresh reviewer's attacks: a deeply nested line, a forged record, a gzip cut in half."""
    import gzip

    good = {"event": "tool_call", "action": "deny", "rule": "repeat", "session": "s1"}
    lines = [json.dumps(good), "[" * 200_000 + "]" * 200_000]
    lines.append(json.dumps({**good, "action": "deny\x1b[31m redis-cli -a CanaryStatsPw1", "rule": "password=Canary"}))
    plain = tmp_path / "a.jsonl"
    plain.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["stats", str(plain)]) == 2
    out, err = capsys.readouterr()
    assert err == f"{plain}:2: not a JSON line, skipped\n"  # nested too deeply: a bad line, no traceback
    assert "Canary" not in out and "\x1b" not in out
    assert "1 file(s), 1 decision records, 1 other lines" in out
    archive = tmp_path / "b.jsonl.gz"
    whole = gzip.compress(("\n".join([json.dumps(good)] * 2000) + "\n").encode())
    archive.write_bytes(whole[: len(whole) // 2])
    assert main(["stats", "--json", str(archive)]) == 2
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert 0 < data["records"] < 2000 and data["bad_lines"] == 1
    assert err.startswith(f"{archive}:{data['records'] + 1}: corrupt data (")
