"""``loopguard eval DIR`` (spec §9): case loading, outcome rules, replay, report, exit codes, seed numbers."""

from __future__ import annotations

import doctest
import json
from pathlib import Path
from typing import Any

import pytest

import loopguard
import loopguard.evaluate
from conftest import CASES, shared_data
from loopguard import TextConfig
from loopguard.cli import main
from loopguard.errors import InputError
from loopguard.evaluate import (
    Case,
    Event,
    ToolCall,
    classify_text,
    classify_tool,
    evaluate,
    evaluate_text_case,
    evaluate_tool_case,
    format_summary,
    load_cases,
)

# A hand-built text loop: 542 code points of distinct "Step" sentences, then a
# 51-code-point sentence 30 times.  The cycle detector (C: >= 600 chars of
# verbatim cycle, >= 3 copies) sees the cycle from 540 (the intro's final ". "
# matches the unit's) and first holds at the first checkpoint (multiple of
# 200) >= 540 + 600, i.e. 1200.
INTRO = "".join(f"Step {i}: the value is {i * i + 7} after pass {i}. " for i in range(14))
UNIT = "The cache is stale, so I flush it and check again. "
LOOP_TEXT = INTRO + UNIT * 30
L = len(INTRO)  # 542
FIRST_REPEAT = L + len(UNIT)  # 593
CYCLE_AT = 1200


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def text_entry(file: str, verdict: str = "loop", **truth: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"file": file, "kind": "text", "verdict": verdict, "channel": "reasoning"}
    if verdict == "loop":
        entry.update({"loop_start": L, "first_repeat": FIRST_REPEAT, "loop_end": None})
    entry.update(truth)
    return entry


def make_dir(root: Path, index: Any, files: dict[str, str | bytes]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "index.json").write_text(index if isinstance(index, str) else json.dumps(index), encoding="utf-8")
    for name, content in files.items():
        if isinstance(content, bytes):
            (root / name).write_bytes(content)
        else:
            (root / name).write_text(content, encoding="utf-8", newline="")
    return root


@pytest.fixture
def text_dir(tmp_path: Path) -> Path:
    index = [
        text_entry("a_caught.txt"),
        text_entry("b_early.txt", loop_start=1300, first_repeat=1351),  # mislabelled: the loop "starts" later
        text_entry("c_bounded.txt", loop_end=900),  # 1200 > 900 + 200: fired after the loop ended
        text_entry("d_clean.txt", "not-loop"),
        text_entry("e_fp.txt", "not-loop"),
    ]
    files = {
        "a_caught.txt": LOOP_TEXT,
        "b_early.txt": LOOP_TEXT,
        "c_bounded.txt": LOOP_TEXT,
        "d_clean.txt": INTRO,
        "e_fp.txt": LOOP_TEXT,
    }
    return make_dir(tmp_path / "cases", {"cases": index}, files)


# --------------------------------------------------------------------------- outcome rules


@pytest.mark.parametrize(
    ("position", "loop_end", "outcome"),
    [
        (None, None, "missed"),
        (99, None, "early"),  # before loop_start
        (100, None, "missed"),  # inside the first copy: not a catch
        (149, None, "missed"),
        (150, None, "caught"),  # at first_repeat
        (5000, None, "caught"),  # unbounded loop: any later position
        (700, 500, "caught"),  # loop_end + check_every, inclusive
        (701, 500, "missed"),  # after the loop ended
        (99, 500, "early"),
    ],
)
def test_classify_text_loop(position: int | None, loop_end: int | None, outcome: str) -> None:
    got = classify_text("loop", position, loop_start=100, first_repeat=150, loop_end=loop_end, check_every=200)
    assert got == outcome


def test_classify_text_not_loop() -> None:
    assert classify_text("not-loop", None) == "clean"
    assert classify_text("not-loop", 0) == "false_positive"
    assert classify_text("not-loop", 4000) == "false_positive"


def test_classify_text_uses_check_every() -> None:
    assert classify_text("loop", 650, loop_start=0, first_repeat=10, loop_end=500, check_every=200) == "caught"
    assert classify_text("loop", 650, loop_start=0, first_repeat=10, loop_end=500, check_every=100) == "missed"


def test_classify_tool_loop() -> None:
    truth = {"loop_start_call": 2, "fire_by_call": 5}
    assert classify_tool("loop", [], **truth) == ("missed", None)
    assert classify_tool("loop", [Event(4, "notice", "repeat")], **truth) == ("caught", Event(4, "notice", "repeat"))
    assert classify_tool("loop", [Event(5, "deny", "repeat")], **truth)[0] == "caught"  # fire_by_call inclusive
    assert classify_tool("loop", [Event(6, "deny", "repeat")], **truth) == ("missed", Event(6, "deny", "repeat"))
    # a notice before the loop is ignored, the next event decides
    assert classify_tool("loop", [Event(0, "notice", "error_avoidance"), Event(3, "deny", "repeat")], **truth) == (
        "caught",
        Event(3, "deny", "repeat"),
    )
    assert classify_tool("loop", [Event(1, "notice", "error_avoidance")], **truth) == ("missed", None)
    # a deny or cancel before the loop is early
    assert classify_tool("loop", [Event(1, "deny", "unscoped_search"), Event(3, "deny", "repeat")], **truth) == (
        "early",
        Event(1, "deny", "unscoped_search"),
    )
    assert classify_tool("loop", [Event(0, "cancel", "circuit_breaker")], **truth)[0] == "early"


def test_classify_tool_not_loop() -> None:
    assert classify_tool("not-loop", []) == ("clean", None)
    assert classify_tool("not-loop", [Event(1, "notice", "repeat"), Event(2, "notice", "no_progress")]) == (
        "clean",
        None,
    )
    assert classify_tool("not-loop", [Event(1, "notice", "repeat"), Event(3, "deny", "repeat")]) == (
        "false_positive",
        Event(3, "deny", "repeat"),
    )
    assert classify_tool("not-loop", [Event(2, "cancel", "circuit_breaker")])[0] == "false_positive"


# --------------------------------------------------------------------------- text replay


def test_hand_built_loop_detected_where_computed() -> None:
    assert L == 542
    found = loopguard.scan_text(LOOP_TEXT, "reasoning", "rescue")
    assert [(d.kind, d.position, d.start) for d in found] == [("cycle", CYCLE_AT, L - 2)]
    assert loopguard.scan_text(INTRO, "reasoning", "default") == []


def test_load_cases_reads_text_and_truth(text_dir: Path) -> None:
    cases = load_cases(text_dir)
    assert [c.file for c in cases] == ["a_caught.txt", "b_early.txt", "c_bounded.txt", "d_clean.txt", "e_fp.txt"]
    a = cases[0]
    assert (a.kind, a.verdict, a.channel, a.loop_start, a.first_repeat, a.loop_end) == (
        "text",
        "loop",
        "reasoning",
        L,
        FIRST_REPEAT,
        None,
    )
    assert a.text == LOOP_TEXT
    assert cases[3].loop_start is None and cases[3].text == INTRO


def test_text_outcomes_and_json(capsys: pytest.CaptureFixture[str], text_dir: Path) -> None:
    code, out, err = run(capsys, "eval", text_dir, "--json", "--profile", "rescue")
    assert code == 0 and err == ""
    assert len(out.splitlines()) == 1
    report = json.loads(out)
    assert report["profile"] == "rescue"
    rows = [(c["file"], c["outcome"], c["at"], c["latency"], c["detector"]) for c in report["cases"]]
    assert rows == [
        ("a_caught.txt", "caught", CYCLE_AT, CYCLE_AT - FIRST_REPEAT, "cycle"),
        ("b_early.txt", "early", CYCLE_AT, None, "cycle"),
        ("c_bounded.txt", "missed", CYCLE_AT, None, "cycle"),
        ("d_clean.txt", "clean", None, None, None),
        ("e_fp.txt", "false_positive", CYCLE_AT, None, "cycle"),
    ]
    assert all(set(c) >= {"file", "kind", "verdict", "outcome", "at", "latency"} for c in report["cases"])
    assert report["summary"] == {
        "text": {
            "loops": 3,
            "caught": 1,
            "missed": 1,  # c_bounded
            "early": 1,  # b_early
            "not_loops": 2,
            "false_positives": 2,  # e_fp, and b_early (fired before loop_start)
            "median_latency": 607,
            "max_latency": 607,
        },
        "tool_calls": {
            "loops": 0,
            "caught": 0,
            "missed": 0,
            "early": 0,
            "not_loops": 0,
            "false_positives": 0,
            "median_latency": None,
            "max_latency": None,
        },
    }


def test_text_channel_masks_fences(tmp_path: Path) -> None:
    # inside a fence on the "text" channel the loop is masked; "reasoning" sees it
    text = "Here:\n```\n" + UNIT * 30 + "```\nDone.\n"
    index = [
        {
            "file": "t.txt",
            "kind": "text",
            "verdict": "loop",
            "channel": "answer",
            "loop_start": 10,
            "first_repeat": 61,
            "loop_end": None,
        },
        {
            "file": "r.txt",
            "kind": "text",
            "verdict": "loop",
            "channel": "reasoning",
            "loop_start": 10,
            "first_repeat": 61,
            "loop_end": None,
        },
    ]
    cases = load_cases(make_dir(tmp_path, index, {"t.txt": text, "r.txt": text}))
    assert [c.channel for c in cases] == ["text", "reasoning"]
    report = evaluate(cases, "rescue")
    assert [r.outcome for r in report.results] == ["missed", "caught"]


@pytest.mark.parametrize("chunk", [1, 7, 16, 200, 100_000])
def test_text_result_does_not_depend_on_chunking(text_dir: Path, chunk: int) -> None:
    case = load_cases(text_dir)[0]
    seed_numbers = TextConfig(
        "fuse", enabled=["exact_tail", "lowdiv_tail", "lowdiv_sliding", "cycle", "pool"]
    )  # all five at the seeds' numbers
    result = evaluate_text_case(case, seed_numbers, chunk=chunk)
    assert (result.outcome, result.at, result.latency, result.detector) == (
        "caught",
        CYCLE_AT,
        CYCLE_AT - FIRST_REPEAT,
        "cycle",
    )
    assert [(e.at, e.detector) for e in result.events] == [
        (1200, "cycle"),
        (2000, "lowdiv_tail"),
        (2000, "lowdiv_sliding"),
    ]


def test_human_output_is_plain_in_a_pipe(capsys: pytest.CaptureFixture[str], text_dir: Path) -> None:
    code, out, err = run(capsys, "eval", text_dir, "--profile", "rescue")
    assert code == 0 and err == ""
    assert "\x1b" not in out
    lines = out.splitlines()
    assert lines[0].split() == ["file", "kind", "verdict", "outcome", "at", "latency", "detector"]
    assert lines[1].split() == ["a_caught.txt", "text", "loop", "caught", "1200", "607", "cycle"]
    assert lines[4].split() == ["d_clean.txt", "text", "not-loop", "clean", "-", "-", "-"]
    assert lines[6] == ""
    assert lines[7:] == [
        "text (profile rescue): 5 cases",
        "  recall 1/3 = 33.3% (1 missed, 1 early)",
        "  false positives 1/2 = 50.0%",
        "  latency median 607, max 607 code points",
        "  first detector: cycle 4",
        # cycle alone: the one caught case (latency 607), the early one and the false positive
        "  each detector alone: caught / false positives / median latency",
        "    cycle  1 / 2 / 607",
        "tool calls (default ToolGuard): no cases",
    ]


def test_profile_applies_to_text(capsys: pytest.CaptureFixture[str], text_dir: Path) -> None:
    code, out, _ = run(capsys, "eval", text_dir, "--json", "--profile", "fuse")
    assert code == 0
    first = json.loads(out)["cases"][0]
    assert (first["outcome"], first["at"], first["detector"]) == ("caught", 2000, "lowdiv_tail")


# --------------------------------------------------------------------------- bad input: exit 2


def test_missing_case_file_exits_2_naming_it(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    root = make_dir(tmp_path, [text_entry("here.txt"), text_entry("gone.txt")], {"here.txt": LOOP_TEXT})
    code, out, err = run(capsys, "eval", root)
    assert code == 2 and out == ""
    assert "gone.txt" in err and err.startswith("loopguard: error: ")
    with pytest.raises(InputError, match="gone.txt"):
        load_cases(root)


def test_invalid_json_index_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    root = make_dir(tmp_path, '[{"file": "a.txt",', {})
    code, out, err = run(capsys, "eval", root, "--json")
    assert code == 2 and out == ""
    assert "index.json" in err and "invalid JSON" in err


def test_missing_index_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = run(capsys, "eval", tmp_path)
    assert code == 2 and out == ""
    assert str(tmp_path / "index.json") in err


@pytest.mark.parametrize(
    ("index", "files", "named"),
    [
        ({"not": "a list"}, {}, "index.json"),
        ([{"file": "a.txt", "kind": "video", "verdict": "loop"}], {"a.txt": "x"}, "a.txt"),
        ([{"file": "a.txt", "kind": "text", "verdict": "maybe"}], {"a.txt": "x"}, "a.txt"),
        ([text_entry("a.txt", first_repeat="600")], {"a.txt": "x"}, "first_repeat"),
        ([text_entry("a.txt")], {"a.txt": b"\xff\xfe bad"}, "a.txt"),
        ([{"file": "t.json", "kind": "tool_calls", "verdict": "not-loop"}], {"t.json": "{}"}, "t.json"),
        ([{"file": "t.json", "kind": "tool_calls", "verdict": "not-loop"}], {"t.json": '[{"args": {}}]'}, "t.json"),
    ],
)
def test_invalid_input_exits_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, index: Any, files: dict[str, str | bytes], named: str
) -> None:
    code, out, err = run(capsys, "eval", make_dir(tmp_path, index, files))
    assert code == 2 and out == ""
    assert named in err


# --------------------------------------------------------------------------- tool-call replay


class FakeGuard:
    """Denies a call whose (tool, args) returned the same result twice; a notice on the second."""

    def __init__(self) -> None:
        self.seen: dict[str, tuple[Any, int]] = {}
        self.log: list[tuple[str, ...]] = []

    class Obj:
        def __init__(self, action: str, kind: str = "", rule: str = "") -> None:
            self.action, self.kind, self.rule = action, kind, rule

    def before_call(self, session_id: str, tool: str, args: Any) -> Any:
        self.log.append(("before", session_id, tool))
        _, n = self.seen.get(tool + json.dumps(args), (None, 0))
        return self.Obj("deny", kind="locked") if n >= 2 else self.Obj("allow")

    def after_call(self, session_id: str, tool: str, args: Any, result: Any, *, error: bool = False) -> list[Any]:
        self.log.append(("after", session_id, tool, str(error)))
        key = tool + json.dumps(args)
        last, n = self.seen.get(key, (None, 0))
        n = n + 1 if last == (result, error) else 1
        self.seen[key] = ((result, error), n)
        return [self.Obj("notice", kind="reminder", rule="repeat")] if n == 2 else []


def tool_case(verdict: str, calls: list[ToolCall], **truth: int) -> Case:
    return Case("t.json", Path("t.json"), "tool_calls", verdict, calls=tuple(calls), **truth)


def test_tool_replay_protocol_with_a_fake_guard() -> None:
    build = ToolCall("bash", {"cmd": "npm run build"}, "TS2307", True)
    calls = [ToolCall("bash", {"cmd": "npm ci"}, "ok"), build, build, build, build]
    guard = FakeGuard()
    result = evaluate_tool_case(tool_case("loop", calls, loop_start_call=1, fire_by_call=3), guard)
    # call 2 returns the same result again: notice (rule repeat) at 2; call 3 is denied before it runs
    assert [(e.at, e.action, e.detector) for e in result.events] == [
        (2, "notice", "repeat"),
        (3, "deny", "locked"),
        (4, "deny", "locked"),
    ]
    assert (result.outcome, result.at, result.latency, result.detector, result.notices) == ("caught", 2, 1, "repeat", 1)
    steps = [entry[0] for entry in guard.log]
    assert steps == ["before", "after", "before", "after", "before", "after", "before", "before"]
    assert {entry[1] for entry in guard.log} == {"t.json"}
    assert guard.log[3] == ("after", "t.json", "bash", "True")  # the error flag is passed on
    assert result.to_dict() == {
        "file": "t.json",
        "kind": "tool_calls",
        "verdict": "loop",
        "outcome": "caught",
        "at": 2,
        "latency": 1,
        "detector": "repeat",
        "notices": 1,
    }


def test_tool_not_loop_with_notices_is_clean_and_deny_is_false_positive() -> None:
    same = ToolCall("read_file", {"path": "a"}, "same")
    clean = evaluate_tool_case(tool_case("not-loop", [same, same]), FakeGuard())
    assert (clean.outcome, clean.at, clean.notices) == ("clean", None, 1)
    fp = evaluate_tool_case(tool_case("not-loop", [same, same, same]), FakeGuard())
    assert (fp.outcome, fp.at, fp.latency, fp.detector) == ("false_positive", 2, None, "locked")


def test_tool_loop_fired_too_late_is_missed() -> None:
    same = ToolCall("read_file", {"path": "a"}, "same")
    result = evaluate_tool_case(tool_case("loop", [same] * 4, loop_start_call=0, fire_by_call=0), FakeGuard())
    assert (result.outcome, result.at, result.latency) == ("missed", 1, None)


def test_load_tool_case(tmp_path: Path) -> None:
    calls = [
        {"tool": "grep", "args": {"pattern": "x", "path": "src"}, "result": "none"},
        {"tool": "bash", "args": {"cmd": "false"}, "result": "exit 1", "error": True},
    ]
    index = [
        {"file": "t.json", "kind": "tool_calls", "verdict": "loop", "calls": 2, "loop_start_call": 0, "fire_by_call": 1}
    ]
    [case] = load_cases(make_dir(tmp_path, index, {"t.json": json.dumps(calls)}))
    assert case.calls == (
        ToolCall("grep", {"pattern": "x", "path": "src"}, "none", False),
        ToolCall("bash", {"cmd": "false"}, "exit 1", True),
    )
    assert (case.loop_start_call, case.fire_by_call, case.text) == (0, 1, None)


def test_tool_cases_through_the_real_guard(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    failing = {
        "tool": "bash",
        "args": {"cmd": "npm run build"},
        "result": "error TS2307: Cannot find module",
        "error": True,
    }
    loop = [{"tool": "bash", "args": {"cmd": "npm ci"}, "result": "added 812 packages"}] + [failing] * 5
    varied = [
        {"tool": "read_file", "args": {"path": "a.py"}, "result": "import os\n"},
        {"tool": "edit", "args": {"path": "a.py", "old": "os", "new": "sys"}, "result": "ok"},
        {"tool": "bash", "args": {"cmd": "pytest -q"}, "result": "1 passed"},
    ]
    index = [
        {
            "file": "loop.json",
            "kind": "tool_calls",
            "verdict": "loop",
            "calls": 6,
            "loop_start_call": 1,
            "fire_by_call": 3,
        },
        {"file": "fine.json", "kind": "tool_calls", "verdict": "not-loop", "calls": 3},
    ]
    root = make_dir(tmp_path, index, {"loop.json": json.dumps(loop), "fine.json": json.dumps(varied)})
    code, out, err = run(capsys, "eval", root, "--json")
    assert code == 0
    report = json.loads(out)
    loop_row, fine_row = report["cases"]
    assert loop_row["outcome"] == "caught" and 1 <= loop_row["at"] <= 3
    assert loop_row["latency"] == loop_row["at"] - 1
    assert (fine_row["outcome"], fine_row["at"]) == ("clean", None)
    assert report["summary"]["tool_calls"]["loops"] == 1
    assert report["summary"]["tool_calls"]["caught"] == 1
    assert report["summary"]["tool_calls"]["false_positives"] == 0


# --------------------------------------------------------------------------- the shared cases (seed numbers)

SEED = {
    # profile: (caught of 17 text loops, missed files, not-loop files that fire)
    "fuse": (13, {"006", "008", "009", "011"}, {"033"}),
    "rescue": (10, {"004", "008", "009", "011", "012", "014", "016"}, set()),
    # default (C, P, N, T): every loop, the emoji/kaomoji salad 008 by T; the hex dump 033 is
    # record lines (offset-led), which N holds back on
    "default": (17, set(), set()),
}


@shared_data
@pytest.mark.parametrize("profile", sorted(SEED))
def test_shared_text_cases_seed_numbers(profile: str) -> None:
    cases = [c for c in load_cases(CASES) if c.kind == "text"]
    report = evaluate(cases, profile)
    summary = report.summary()["text"]
    caught, missed, fires = SEED[profile]
    assert (summary["loops"], summary["not_loops"]) == (17, 17)
    assert summary["caught"] == caught
    assert summary["false_positives"] == len(fires)
    outcomes = {r.case.file[:3]: r.outcome for r in report.results}
    assert {f for f, o in outcomes.items() if o == "false_positive"} == fires
    assert "early" not in outcomes.values()
    if missed is not None:
        assert {f for f, o in outcomes.items() if o == "missed"} == missed
    assert all(r.latency is not None and r.latency >= 0 for r in report.results if r.outcome == "caught")
    assert summary["max_latency"] == max(r.latency for r in report.results if r.latency is not None)


@shared_data
def test_shared_text_summary_lines_fuse() -> None:
    cases = [c for c in load_cases(CASES) if c.kind == "text"]
    calls: list[int] = []
    report = evaluate(cases, "fuse", on_case=lambda: calls.append(1))
    assert len(calls) == len(cases) == 34
    assert format_summary(report) == [
        "text (profile fuse): 34 cases",
        "  recall 13/17 = 76.5% (4 missed, 0 early)",
        "  false positives 1/17 = 5.9%",
        "  latency median 1737, max 1931 code points",
        "  first detector: lowdiv_tail 7, exact_tail 5, lowdiv_sliding 2",
        "  each detector alone: caught / false positives / median latency",
        "    exact_tail      8 / 0 / 1898.5",
        "    lowdiv_sliding  5 / 1 / 1524",
        "    lowdiv_tail     10 / 1 / 1717.5",
        "tool calls (default ToolGuard): no cases",
    ]


def test_docstring_examples() -> None:
    result = doctest.testmod(loopguard.evaluate, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


@shared_data
def test_cli_on_shared_cases(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "eval", CASES, "--json", "--profile", "fuse")
    assert code == 0
    report = json.loads(out)
    assert report["profile"] == "fuse"
    assert len(report["cases"]) == 49
    text = report["summary"]["text"]
    assert (text["loops"], text["caught"], text["not_loops"], text["false_positives"]) == (17, 13, 17, 1)
    fp = [c["file"] for c in report["cases"] if c["kind"] == "text" and c["outcome"] == "false_positive"]
    assert fp == ["033_en-hexdump-zero-region.txt"]
    tools = report["summary"]["tool_calls"]
    assert (tools["loops"], tools["not_loops"]) == (7, 8)
