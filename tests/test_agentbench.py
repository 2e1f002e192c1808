"""The real agent trajectories as a regression gate (issue 15): every run of
``../shared/data/real/agentbench`` replayed through a default ``ToolGuard`` by ``loopguard eval``'s
trajectory reader (:mod:`loopguard.evaluate_runs`), checked against the independent evaluator
``../shared/tools/agentbench.py`` on the smaller files and against the issue's numbers on all.

Today's numbers are the ceilings (false denies and notices can only fall) and the floor (loops
caught can only rise):

* clean runs denied or cancelled: 4 of 1,096.  The issue asks for at most 2; the 4 left are all
  seed 001's zero-information proof (two identical results, then the same request again), listed
  in docs/tools.md; ``success_grace=1`` turns the two that repeat a successful lookup into
  notices (2 of 1,096);
* clean runs with a notice: 51 (4.65 %, the issue's bound is 5 %);
* loops caught by the 4th repeated call: 425 of 428 (the issue's bound is 424).
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import DATA, shared_data
from loopguard import ToolGuardConfig
from loopguard.cli import main
from loopguard.evaluate_runs import RunCollector, parse_run, replay_run, summarize_runs

AGENTBENCH = DATA / "real" / "agentbench"
TOOL = DATA.parent / "tools" / "agentbench.py"


def _collect(paths: list[Path], config: ToolGuardConfig | None = None) -> RunCollector:
    collector = RunCollector(config)
    for path in paths:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            for line, raw in enumerate(fh, 1):
                assert collector(json.loads(raw), str(path), line)
    return collector


@pytest.fixture(scope="module")
def full() -> dict[str, Any]:
    collector = _collect(sorted(AGENTBENCH.glob("*.jsonl.gz")))
    return collector.report.to_dict(by=["agent"], worst=None)


@shared_data
@pytest.mark.slow
def test_agentbench_counts(full: dict[str, Any]) -> None:
    s = full["summary"]
    assert (full["runs"], s["calls"]) == (4592, 123946)
    assert (s["clean"]["n"], s["loop"]["n"], s["null"]["n"]) == (1096, 428, 3068)


@shared_data
@pytest.mark.slow
def test_clean_runs_denied_or_cancelled(full: dict[str, Any]) -> None:
    clean = full["summary"]["clean"]
    assert clean["strong"]["k"] <= 4, full["worst"]
    assert clean["first_strong_rule"] == {"repeat": clean["strong"]["k"]}
    # the worst list names runs, call indices, rules and tools -- never an argument or a result
    assert {w["id"].split("/")[0] for w in full["worst"]} <= {"tau2", "nebius-swe-agent"}
    assert all(set(w) == {"id", "agent", "model", "calls", "strong", "first", "kinds"} for w in full["worst"])


@shared_data
@pytest.mark.slow
def test_notices_on_clean_runs(full: dict[str, Any]) -> None:
    notice = full["summary"]["clean"]["notice"]
    assert notice["k"] <= 51 and notice["k"] / notice["n"] <= 0.05, full["summary"]["clean"]["notice_kinds"]


@shared_data
@pytest.mark.slow
def test_loops_caught_by_their_deadline(full: dict[str, Any]) -> None:
    loop = full["summary"]["loop"]
    assert loop["caught"]["k"] >= 425
    assert loop["median_calls_to_action"] == 2


@shared_data
def test_success_grace_is_the_opt_in_for_successful_repeats() -> None:
    tau2 = _collect([AGENTBENCH / "tau2_openai-gpt-4.x.jsonl.gz"], ToolGuardConfig(success_grace=1))
    s = summarize_runs(tau2.report.results)
    # the two telecom runs that look up the same line three times in a row are no longer denied;
    # the retail run that alternates two lookups nine times still is
    assert (s["clean"]["n"], s["clean"]["strong"]["k"]) == (330, 1)


def _agentbench_tool() -> Any:
    spec = importlib.util.spec_from_file_location("agentbench_tool", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["agentbench_tool"] = module
    spec.loader.exec_module(module)
    return module


@shared_data
@pytest.mark.slow
@pytest.mark.parametrize("name", ["tau2_openai-gpt-4.x.jsonl.gz", "mini-swe-agent_gemini-3-pro.jsonl.gz"])
def test_eval_agrees_with_the_independent_evaluator(name: str) -> None:
    tool = _agentbench_tool()
    theirs = tool.evaluate([str(AGENTBENCH / name)], worst=0)
    ours = summarize_runs(_collect([AGENTBENCH / name]).report.results)
    assert ours["clean"]["strong"]["k"] == theirs["clean_any_strong"]
    assert ours["clean"]["notice"]["k"] == theirs["clean_any_notice"]
    assert ours["clean"]["first_strong_rule"] == theirs["clean_first_strong_rule"]
    assert ours["loop"]["caught"]["k"] == theirs["loops_caught"]
    assert ours["null"]["strong"] == theirs["null_strong"] and ours["null"]["any"] == theirs["null_any"]


@shared_data
def test_eval_command_prints_runs(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["eval", str(AGENTBENCH / "tau-bench_gpt-4o_airline.jsonl.gz"), "--by", "model", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and "records" not in out
    runs = out["runs"]
    assert runs["runs"] == 182 and runs["summary"]["clean"]["n"] == 80
    assert list(runs["groups"]["model"]) == ["gpt-4o"]


# --------------------------------------------------------------------------- hand-built runs


def test_parse_run_labels_and_loop_positions() -> None:
    assert parse_run({"text": "x"}) is None
    assert parse_run({"calls": [], "label": "maybe"}) == "invalid run label"
    r = parse_run({"calls": [{"tool": "a"}], "label": "loop", "note": "rule=L2; loop_start=11; loop_deadline=17"})
    assert not isinstance(r, (str, type(None)))
    assert (r.loop_start, r.loop_deadline, r.label, r.name) == (11, 17, "loop", ":0")
    r2 = parse_run({"calls": [], "label": "loop", "loop_start": 2, "note": "loop_start=9"}, "f.jsonl", 3)
    assert not isinstance(r2, (str, type(None)))
    assert (r2.loop_start, r2.loop_deadline, r2.name) == (2, None, "f.jsonl:3")


def test_replay_run_caught_by_the_deadline() -> None:
    same = {"tool": "grep", "args": {"pattern": "x", "path": "src"}, "result": "src/a.py:1: x", "error": False}
    other = {"tool": "read", "args": {"path": "a.py"}, "result": "text", "error": False}
    # calls 0 and 1 are new information; 2 is the grep's 2nd identical result (reminder), 3 is denied
    run = parse_run({"calls": [other, same, same, same], "label": "loop", "loop_start": 1, "loop_deadline": 3})
    assert not isinstance(run, (str, type(None)))
    result = replay_run(run)
    assert result.events == ((2, "notice", "repeat", "grep"), (3, "deny", "repeat", "grep"))
    assert result.caught and result.record.calls == () and result.calls == 4  # calls dropped once replayed
    late = parse_run({"calls": [other, same, same, same], "label": "loop", "loop_start": 1, "loop_deadline": 1})
    assert not isinstance(late, (str, type(None))) and not replay_run(late).caught
    # no deadline: the 4th call of the loop (start + 3); no start: any action
    for fields, caught in (
        ({"loop_start": 0}, True),
        ({}, True),
        ({"loop_start": 3}, True),
        ({"loop_start": 4}, False),
    ):
        r = parse_run({"calls": [other, same, same, same], "label": "loop", **fields})
        assert not isinstance(r, (str, type(None))) and replay_run(r).caught is caught, fields
    # a bad tool name is replayed as "?"
    odd = parse_run({"calls": [{"tool": 7, "args": {}, "result": None}], "label": "clean"})
    assert not isinstance(odd, (str, type(None))) and replay_run(odd).events == ()


def test_bad_trajectory_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    big = tmp_path / "big.jsonl"
    big.write_text('{"label": "clean", "calls": [{"tool": "ls", "args": {"n": 1' + "0" * 5000 + "}}]}\n")
    code = main(["eval", str(big)])
    err = capsys.readouterr().err
    assert code == 2 and f"{big}:1" in err and "invalid JSON" in err and "Traceback" not in err
    # a number too long for an index in the note is not an index; a JSON null label is "null"
    r = parse_run({"calls": [], "label": "loop", "note": "loop_start=" + "9" * 5000})
    assert not isinstance(r, (str, type(None))) and r.loop_start is None
    n = parse_run({"calls": [], "label": None})
    assert not isinstance(n, (str, type(None))) and n.label == "null"
