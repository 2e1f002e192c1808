"""``loopguard eval`` on labelled JSON Lines text records (spec §9 last paragraph; issue 14 item 4).

Record loading and skipping, the Wilson interval against hand-computed
numbers, the Session replay rule (first cut/cancel = the stop at ``i + delta``,
first notice), the summary on a hand-built set, the CLI (text, JSON, mixed
with a case folder, exit 2), and agreement with ``shared/tools/cutbench.py``
on the real bench.  No count of today's detectors is hard-coded: expected
stops are computed here from a ``Session``.
"""

from __future__ import annotations

import doctest
import gzip
import json
import sys
from itertools import islice
from pathlib import Path
from typing import Any

import pytest

import loopguard
import loopguard.evaluate_records as er
import loopguard.session
from conftest import CASES, DATA, shared_data
from loopguard.cli import main
from loopguard.errors import InputError
from loopguard.evaluate_records import (
    SKIP_BAD_LABEL,
    SKIP_NOT_TEXT,
    Hit,
    TextRecord,
    evaluate_records,
    load_records,
    percentile,
    replay_records,
    replay_text,
    summarize_records,
    wilson,
    worst_records,
)

BENCH = DATA / "real" / "bench"
TOOLS = DATA.parent / "tools"

# A verbatim loop: 542 code points of distinct "Step" sentences, then one 51-code-point sentence 30 times.
INTRO = "".join(f"Step {i}: the value is {i * i + 7} after pass {i}. " for i in range(14))
UNIT = "The cache is stale, so I flush it and check again. "
LOOP_TEXT = INTRO + UNIT * 30
LOOP_START = len(INTRO)  # 542
SHORT_CLEAN = "The answer is 42, because six times seven is forty-two. We are done."  # far below 600 chars


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def session_stop(text: str, profile: str = "default", delta: int = 16) -> tuple[int | None, Any]:
    """The stop position (end of the delta) and the verdict, by driving a Session by hand."""
    s = loopguard.Session("test", text_config=profile)
    s.start_turn()
    s.start_attempt()
    for i in range(0, len(text), delta):
        v = s.feed(text[i : i + delta], "reasoning")
        if v.action in ("cut", "cancel"):
            return i + delta, v
    return None, None


def write_jsonl(path: Path, rows: list[Any], *, gz: bool = False) -> Path:
    data = "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows).encode("utf-8")
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


# --------------------------------------------------------------------------- statistics


def test_wilson_hand_computed() -> None:
    # z = 1.959964, z² = 3.841459.
    # 0/10: 1 + z²/n = 1.3841459; centre = (z²/20) / 1.3841459 = 0.1920729 / 1.3841459 = 0.1387664;
    #       half = z · sqrt(z²/400) / 1.3841459 = 1.959964 · 0.0979982 / 1.3841459 = 0.1387664.
    lo, hi = wilson(0, 10)
    assert lo == 0.0 and hi == pytest.approx(0.2775328, abs=1e-7)
    # 5/10: centre 0.5; half = z · sqrt(0.25/10 + 0.0096036) / 1.3841459 = 1.959964 · 0.1860206 / 1.3841459
    #       = 0.2634069.
    lo, hi = wilson(5, 10)
    assert lo == pytest.approx(0.2365931, abs=1e-7) and hi == pytest.approx(0.7634069, abs=1e-7)
    # 148/6007: p = 0.0246379, 1 + z²/n = 1.0006395; centre = (0.0246379 + 0.0003197) / 1.0006395 = 0.0249416;
    #       half = z · sqrt(p(1-p)/n + z²/(4n²)) / 1.0006395 = 1.959964 · 0.0020094 / 1.0006395 = 0.0039356.
    lo, hi = wilson(148, 6007)
    assert lo == pytest.approx(0.0210111, abs=1e-6) and hi == pytest.approx(0.0288724, abs=1e-6)
    assert wilson(10, 10) == (pytest.approx(0.7224672, abs=1e-7), 1.0)
    assert wilson(0, 0) == (0.0, 1.0)
    for k, n in ((-1, 3), (4, 3), (0, -1)):
        with pytest.raises(ValueError):
            wilson(k, n)


def test_percentile_nearest_rank_like_realbench() -> None:
    values = list(range(10, 110, 10))  # 10..100: round(0.9 * 9) = 8 -> 90; round(0.5 * 9) = 4 (banker's) -> 50
    assert percentile(values, 0.9) == 90 and percentile(values, 0.5) == 50
    assert percentile([7], 0.9) == 7 and percentile([], 0.9) is None


def test_module_doctests() -> None:
    result = doctest.testmod(er, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted >= 4


# --------------------------------------------------------------------------- loading


def test_load_jsonl_and_gz_folder_sorted_with_skips(tmp_path: Path) -> None:
    folder = tmp_path / "recs"
    (folder / "sub").mkdir(parents=True)
    write_jsonl(
        folder / "b.jsonl",
        [
            {"id": "b1", "text": "hello", "looping": False, "model": "m1", "task": "t1", "extra": 1},
            "",  # a blank line is ignored
            {"calls": [{"tool": "ls", "args": {}}], "label": "loop"},  # a trajectory record
            [1, 2, 3],  # JSON, but not an object
            {"id": "b4", "text": "x", "looping": "yes"},  # a text record with an invalid label
            {"id": "b5", "text": "y", "looping": True, "loop_start": -3},
            {"text": "no id", "looping": None},
        ],
    )
    zipped = {"id": "a1", "text": "zipped", "looping": True, "loop_start": 2}
    write_jsonl(folder / "sub" / "a.jsonl.gz", [zipped], gz=True)
    (folder / "README.md").write_text("not read", encoding="utf-8")
    got = load_records([str(folder)])
    assert got.files == [str(folder / "b.jsonl"), str(folder / "sub" / "a.jsonl.gz")]  # full paths sorted
    assert [r.label for r in got.records] == ["b1", f"{folder / 'b.jsonl'}:7", "a1"]
    b1, anon, a1 = got.records
    assert (b1.text, b1.looping, b1.loop_start, b1.model, b1.task, b1.line) == ("hello", False, None, "m1", "t1", 1)
    assert (anon.looping, anon.id, anon.model) == (None, None, None)
    assert (a1.text, a1.looping, a1.loop_start) == ("zipped", True, 2)
    assert dict(got.skipped) == {SKIP_NOT_TEXT: 2, SKIP_BAD_LABEL: 2}
    # a file named on its own (and named twice) is read once
    again = load_records([str(folder / "sub" / "a.jsonl.gz"), str(folder / "sub")])
    assert [r.id for r in again.records] == ["a1"] and len(again.files) == 1


@pytest.mark.parametrize(
    ("content", "line", "message"),
    [
        (b'{"text": "a", "looping": false}\n\n{"text": "b", "looping": tr\n', 3, "invalid JSON"),
        (b'{"text": "a", "looping": false}\n{"text": "\xff"}\n', 2, "not UTF-8"),
    ],
)
def test_unreadable_line_exits_2_naming_file_and_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: bytes, line: int, message: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(content)
    code, out, err = run(capsys, "eval", path)
    assert code == 2 and out == ""
    assert err.startswith("loopguard: error: ") and f"{path}:{line}: {message}" in err
    with pytest.raises(InputError) as info:
        load_records([str(path)])
    assert (info.value.path, info.value.line) == (str(path), line)


def test_bad_gzip_and_missing_path_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    broken = tmp_path / "broken.jsonl.gz"
    broken.write_bytes(gzip.compress(b'{"text": "a", "looping": false}\n' * 50)[:40])
    code, out, err = run(capsys, "eval", broken)
    assert code == 2 and out == "" and str(broken) in err and "gzip" in err
    code, out, err = run(capsys, "eval", tmp_path / "nope.jsonl")
    assert code == 2 and out == "" and "nope.jsonl" in err


def test_only_non_text_records_is_not_an_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "other.jsonl", [{"prompt": "x", "label": "clean"}] * 3)
    code, out, err = run(capsys, "eval", path)
    assert code == 0 and err == ""
    assert "0 text records from 1 file" in out and f"skipped: 3 {SKIP_NOT_TEXT}" in out
    code, out, _ = run(capsys, "eval", path, "--json")
    assert json.loads(out)["records"]["skipped"] == {SKIP_NOT_TEXT: 3}


def test_trajectory_records_are_runs_not_text(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "traj.jsonl", [{"calls": [], "label": "clean"}] * 3)
    code, out, err = run(capsys, "eval", path)
    assert code == 0 and err == ""
    assert out.splitlines()[0] == "runs: 3 trajectories (0 calls) from 1 file (3 clean, 0 loop, 0 null; skipped: none)"
    assert "text records" not in out
    code, out, _ = run(capsys, "eval", path, "--json")
    got = json.loads(out)
    assert "records" not in got and got["runs"]["runs"] == 3 and got["runs"]["summary"]["clean"]["n"] == 3


# --------------------------------------------------------------------------- replay and summary


def hand_set(tmp_path: Path) -> Path:
    """Five records; "early" is the loop labelled to start 100 code points after the session stops it."""
    stop, _ = session_stop(LOOP_TEXT)
    assert stop is not None
    rows = [
        {"id": "loop", "text": LOOP_TEXT, "looping": True, "loop_start": LOOP_START, "model": "m", "task": "t1"},
        {"id": "clean", "text": SHORT_CLEAN, "looping": False, "model": "m", "task": "t1"},
        {"id": "mislabelled", "text": LOOP_TEXT, "looping": False, "model": "m", "task": "t2"},
        {"id": "null", "text": LOOP_TEXT, "looping": None, "task": "t2"},
        {"id": "early", "text": LOOP_TEXT, "looping": True, "loop_start": stop + 100, "task": "t2"},
    ]
    return write_jsonl(tmp_path / "hand.jsonl", rows)


def test_hand_built_set_exact_counts(tmp_path: Path) -> None:
    stop, verdict = session_stop(LOOP_TEXT)
    assert stop is not None and LOOP_START < stop < len(LOOP_TEXT) and stop % 16 == 0
    assert session_stop(SHORT_CLEAN) == (None, None)
    records = load_records([str(hand_set(tmp_path))])
    report = evaluate_records(records, ["default"], jobs=1)
    by_id = {r.record.id: r for r in report.results["default"]}
    got = by_id["loop"].stop
    assert got is not None and got.at == stop and got.action == verdict.action
    assert (got.kind, got.position, got.cut) == (
        verdict.detection.kind,
        verdict.detection.position,
        verdict.detection.cut,
    )
    assert got.evidence == verdict.detection.to_dict()["evidence"]
    assert by_id["clean"].stop is None and by_id["clean"].notice is None
    s = summarize_records(report.results["default"])
    assert s["records"] == 5
    assert s["clean"] | {"cut_ci": None, "notice_ci": None} == {
        "n": 2,
        "cut": 1,
        "cut_rate": 0.5,
        "cut_ci": None,
        "notice": 0,
        "notice_rate": 0.0,
        "notice_ci": None,
        "cut_kinds": {verdict.detection.kind: 1},
    }
    assert s["clean"]["cut_ci"] == [pytest.approx(x) for x in wilson(1, 2)]
    # both loops are cut: latencies stop - 542 and -100 (early)
    lat = sorted([stop - LOOP_START, -100])
    assert s["loop"] == {
        "n": 2,
        "cut": 2,
        "recall": 1.0,
        "recall_ci": [pytest.approx(x) for x in wilson(2, 2)],
        "latency_n": 2,
        "latency_p50": (lat[0] + lat[1]) / 2,
        "latency_p90": lat[1],
        "early": 1,
    }
    assert s["null"] == {"n": 1, "cut": 1, "notice": 0}
    groups = report.groups("default", "task")
    assert list(groups) == ["t1", "t2"]
    assert (groups["t1"]["clean"]["n"], groups["t1"]["clean"]["cut"], groups["t1"]["loop"]["cut"]) == (1, 0, 1)
    assert (groups["t2"]["clean"]["cut"], groups["t2"]["loop"]["early"], groups["t2"]["null"]["cut"]) == (1, 1, 1)
    assert list(report.groups("default", "model")) == ["(none)", "m"]
    # the worst list: the one clean record that was cut, with the context around its cut
    (worst,) = worst_records(report.results["default"])
    cut = verdict.detection.cut
    assert (worst["id"], worst["action"], worst["at"], worst["cut"]) == ("mislabelled", verdict.action, stop, cut)
    assert worst["dropped"] == len(LOOP_TEXT) - cut and worst["context_start"] == cut - 75
    assert worst["context"] == LOOP_TEXT[cut - 75 : cut + 75]


def test_jobs_2_equals_jobs_1(tmp_path: Path) -> None:
    records = load_records([str(hand_set(tmp_path))]).records * 3
    profiles = ("default", "fuse", "rescue")
    ticks: list[int] = []
    pooled = replay_records(records, profiles, jobs=2, chunksize=2, on_record=lambda: ticks.append(1))
    inline = replay_records(records, profiles, jobs=1)
    assert pooled == inline and len(ticks) == len(records)
    for p in profiles:
        assert [r.stop.at if r.stop else None for r in pooled[p]] == [session_stop(r.text, p)[0] for r in records]


class ScriptedSession:
    """Stands in for loopguard.Session: a notice after 40 code points, a cut once 100 have arrived."""

    def __init__(self, session_id: Any, *, text_config: Any = None) -> None:
        self.seen = 0

    def start_turn(self) -> None:
        pass

    def start_attempt(self) -> None:
        pass

    def feed(self, delta: str, channel: str) -> Any:
        assert channel == "reasoning"
        self.seen += len(delta)
        action = "cut" if self.seen >= 100 else "notice" if self.seen >= 40 else "allow"
        return loopguard.Verdict(action)  # type: ignore[arg-type]


def test_first_notice_and_stop_at_end_of_delta(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loopguard.session, "Session", ScriptedSession)
    stop, notice = replay_text("x" * 1000, "default", delta=30)
    # deltas end at 30, 60, 90, 120: the first notice at 60, the cut at 120 (feeding stops there)
    assert notice == Hit(60, "notice") and stop == Hit(120, "cut")
    # a short text: the last delta is short, its position is still i + delta (as cutbench computes it)
    stop, notice = replay_text("x" * 110, "default", delta=45)  # deltas [0, 45), [45, 90), [90, 110)
    assert notice == Hit(45, "notice") and stop == Hit(135, "cut")
    assert replay_text("x" * 39, "default", delta=16) == (None, None)
    rec = TextRecord("x" * 1000, False, id="n")
    s = summarize_records(replay_records([rec], jobs=1)["default"])
    assert (s["clean"]["cut"], s["clean"]["notice"]) == (1, 1)
    with pytest.raises(ValueError):
        replay_text("abc", delta=0)


# --------------------------------------------------------------------------- command line


def test_cli_text_output(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = hand_set(tmp_path)
    stop, verdict = session_stop(LOOP_TEXT)
    assert stop is not None
    code, out, err = run(capsys, "eval", path, "--by", "task", "--jobs", "1")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == "records: 5 text records from 1 file (2 clean, 2 loop, 1 null; skipped: none)"
    assert "profile default:" in lines
    assert "  clean 2: cut 1/2 = 50.00% [9.45, 90.55], notice 0/2 = 0.00% [0.00, 65.76]" in lines
    assert any(
        line.startswith("  loops 2: cut 2/2 = 100.0% [34.2, 100.0], latency p50 ") and "1 early" in line
        for line in lines
    )
    assert "  null 1: cut 1, notice 0 (not in the rates)" in lines
    assert "  by task:" in lines and any(line.startswith("    t2 (3): clean cut 1/1") for line in lines)
    assert any(line.startswith(f"    1. mislabelled · {verdict.action} · {verdict.detection.kind}") for line in lines)
    assert any("⟦✂⟧" in line for line in lines)
    code, out, _ = run(capsys, "eval", path, "--worst", "0", "--jobs", "1")
    assert "worst" not in out


@shared_data
def test_cli_json_profiles_and_mixed_with_case_folder(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = hand_set(tmp_path)
    code, out, _ = run(capsys, "eval", CASES, "--json")
    plain = json.loads(out)
    assert set(plain) == {"profile", "cases", "summary", "by_detector"}  # unchanged for a case folder
    code, out, err = run(capsys, "eval", CASES, path, "--json", "--profile", "all", "--by", "model")
    assert code == 0 and err == ""
    mixed = json.loads(out)
    assert {k: mixed[k] for k in plain} == plain  # the first case run is the default profile, as before
    assert [(run["dir"], run["profile"]) for run in mixed["case_runs"]] == [
        (str(CASES), "default"),
        (str(CASES), "fuse"),
        (str(CASES), "rescue"),
    ]
    rec = mixed["records"]
    assert (rec["files"], rec["records"], rec["skipped"], rec["delta"]) == ([str(path)], 5, {}, 16)
    assert list(rec["profiles"]) == ["default", "fuse", "rescue"]
    default = rec["profiles"]["default"]
    assert default["summary"]["clean"]["n"] == 2 and default["summary"]["loop"]["n"] == 2
    assert list(default["groups"]["model"]) == ["(none)", "m"]
    rows = [dict(zip(rec["result_fields"], row)) for row in default["results"]]
    assert [r["id"] for r in rows] == ["loop", "clean", "mislabelled", "null", "early"]
    stop, _ = session_stop(LOOP_TEXT)
    assert rows[0]["stop"] == stop and rows[1]["stop"] is None and rows[0]["length"] == len(LOOP_TEXT)
    assert [w["id"] for w in default["worst"]] == ["mislabelled"]
    # repeated --profile: each once, in order
    code, out, _ = run(
        capsys,
        "eval",
        path,
        "--json",
        "--profile",
        "rescue",
        "--profile",
        "rescue",
        "--profile",
        "default",
        "--jobs",
        "1",
    )
    assert list(json.loads(out)["records"]["profiles"]) == ["rescue", "default"]


@shared_data
def test_cli_mixed_text_output_keeps_case_table(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = hand_set(tmp_path)
    code, alone, _ = run(capsys, "eval", CASES)
    code, out, _ = run(capsys, "eval", CASES, path, "--jobs", "1")
    assert code == 0 and out.startswith(alone) and "\nrecords: 5 text records" in out


# --------------------------------------------------------------------------- agreement with cutbench.py


@shared_data
def test_agrees_with_cutbench_on_the_bench() -> None:
    sys.path.insert(0, str(TOOLS))
    try:
        import cutbench
    finally:
        sys.path.remove(str(TOOLS))
    files = sorted(BENCH.glob("*.jsonl"))
    assert len(files) == 3
    rows = []
    for f in files:
        with open(f, encoding="utf-8") as fh:
            rows += [json.loads(line) for line in islice(fh, 300)]
    records = [TextRecord(r["text"], r["looping"], r.get("loop_start"), r.get("id")) for r in rows]
    ours = replay_records(records, ["default"], jobs=2)["default"]
    cutbench._init(16)
    theirs = [
        cutbench.work(dict(text=r["text"], looping=r.get("looping"), loop_start=r.get("loop_start"))) for r in rows
    ]
    got = [(r.record.looping, r.record.loop_start, r.stop and r.stop.at, r.notice and r.notice.at) for r in ours]
    assert got == [tuple(t) for t in theirs]
    assert any(t[2] is not None for t in theirs) and any(t[2] is None for t in theirs)  # both kinds present
