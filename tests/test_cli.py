"""``loopguard scan``: output, JSON, exit codes, bad input, the example, the console script."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import zstandard

import loopguard
from loopguard.cli import main
from loopguard.results import result_digest
from loopguard.toolruns import call_hash

ROOT = Path(__file__).resolve().parents[1]
from conftest import DATA, shared_data  # noqa: E402

REAL = DATA / "real"
EXAMPLE = ROOT / "examples" / "agent-loop.jsonl"

EPS_ACTION = "submit flag{People always make the best exploits.}\n"
CLAUDE_LOGS = [
    "azure-bgp-oscillation-route-le-15be2a.jsonl",
    "citation-check-229ca9.jsonl",
    "dapt-intrusion-detection-b9ccb2.jsonl",
    "econ-detrending-correlation-10b28d.jsonl",
]


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, list[dict[str, Any]], str]:
    code, out, err = run(capsys, "scan", "--json", *argv)
    return code, [json.loads(line) for line in out.splitlines()], err


# --------------------------------------------------------------------------- SWE-agent


@shared_data
def test_eps_traj_reports_four_identical_submits(capsys: pytest.CaptureFixture[str]) -> None:
    path = REAL / "swe-agent" / "eps.traj"
    code, out, err = run(capsys, "scan", path)
    prefix = call_hash("submit", EPS_ACTION)[:12]
    assert code == 1
    assert err == ""
    assert out.splitlines() == [
        f"{path} [swe-agent]: loops found",
        f"  LOOP    tool run: submit ×4 · calls 9–12 · steps 9–12 · hash {prefix} · results identical",
        # the ToolGuard: reminder at the 2nd identical result, the 3rd request denied, the insisted run locks
        f"  notice  tool call 10: submit · repeat · step 10 · hash {prefix}",
        f"  DENY    tool call 11: submit · repeat · step 11 · hash {prefix}",
        f"  notice  tool call 12: submit · locked (repeat) · step 12 · hash {prefix}",
        "scanned 1 file: 1 with loops, 0 without, 0 unreadable",
    ]
    assert "flag{" not in out  # the action (tool arguments) is never printed


@shared_data
def test_eps_traj_json(capsys: pytest.CaptureFixture[str]) -> None:
    path = REAL / "swe-agent" / "eps.traj"
    observation = json.loads(path.read_text(encoding="utf-8"))["trajectory"][9]["observation"]
    result16 = result_digest(observation)[:16]  # the submit result, as the guard hashes it
    code, objects, _ = run_json(capsys, path)
    assert code == 1
    assert objects == [
        {
            "path": str(path),
            "format": "swe-agent",
            "loops": [],
            "tool_findings": [
                {
                    "tool": "submit",
                    "count": 4,
                    "calls": [9, 10, 11, 12],
                    "where": [{"step": 9}, {"step": 10}, {"step": 11}, {"step": 12}],
                    "hash_prefix": call_hash("submit", EPS_ACTION)[:12],
                    "results_identical": True,
                    "loop": True,
                }
            ],
            "guard_findings": [
                {
                    "call": call,
                    "tool": "submit",
                    "action": action,
                    "kind": kind,
                    "rule": "repeat",
                    "hash_prefix": call_hash("submit", EPS_ACTION)[:12],
                    "where": {"step": call},
                    "evidence": evidence,
                }
                for call, action, kind, evidence in [
                    (10, "notice", "repeat", {"count": 2, "hash": result16}),
                    (11, "deny", "repeat", {"count": 2, "limit": 2, "hash": result16, "replay": False}),
                    (12, "notice", "locked", {"count": 3, "hash": result16}),
                ]
            ],
        }
    ]
    # the steps are 0-based indices into the file's own "trajectory" list
    steps = json.loads(path.read_text(encoding="utf-8"))["trajectory"]
    assert [s["action"] for s in steps[9:13]] == [EPS_ACTION] * 4
    assert steps[8]["action"] != EPS_ACTION and steps[13]["action"] != EPS_ACTION


@shared_data
def test_other_trajectories_are_clean(capsys: pytest.CaptureFixture[str]) -> None:
    names = ["BabyEncryption.traj", "marshmallow-code__marshmallow-1867.traj", "pydicom__pydicom-1458.traj"]
    code, objects, err = run_json(capsys, *(REAL / "swe-agent" / n for n in names))
    assert (code, err) == (0, "")
    assert [o["loops"] for o in objects] == [[], [], []]
    assert [o["tool_findings"] for o in objects[:2]] == [[], []]
    (edit,) = objects[2]["tool_findings"]  # pydicom: one edit retried once, a finding but not a loop
    assert (edit["tool"], edit["calls"], edit["results_identical"], edit["loop"]) == ("edit", [6, 7], True, False)


@shared_data
def test_claude_code_logs_are_clean(capsys: pytest.CaptureFixture[str]) -> None:
    paths = [REAL / "claude-code" / n for n in CLAUDE_LOGS]
    code, objects, err = run_json(capsys, *paths)
    assert (code, err) == (0, "")
    assert [{**o, "guard_findings": []} for o in objects] == [
        {"path": str(p), "format": "claude-code", "loops": [], "tool_findings": [], "guard_findings": []} for p in paths
    ]
    # one `error_avoidance` notice, never a deny: citation-check's last WebFetch fails (504) and the three calls after it
    # (TodoWrite, Write, TodoWrite) do not touch it
    findings = {
        Path(o["path"]).name: [(f["call"], f["action"], f["rule"]) for f in o["guard_findings"]] for o in objects
    }
    assert findings == {
        name: ([(36, "notice", "error_avoidance")] if name.startswith("citation") else []) for name in CLAUDE_LOGS
    }
    code, out, _ = run(capsys, "scan", *paths)
    assert code == 0
    assert out.splitlines()[-1] == "scanned 4 files: 0 with loops, 4 without, 0 unreadable"


# --------------------------------------------------------------------------- datasets

REASONING = REAL / "reasoning"
# data/real/reasoning/README.md: the exact loop start of every record with an exact periodic
# tail of period >= 16 (the rescue profile's cycle_min_period): file -> {line: start}
EXACT_LOOP_STARTS = {
    "cot-loop_qwen3-1.7b_gpqa.jsonl": {1: 7348, 2: 7680, 3: 15529, 4: 4626},
    "thinking-llms-interp_r1-distill-qwen-1.5b_gsm8k.jsonl": {1: 3973, 2: 1588, 3: 2890},
    "zeroeval_gemma-2-2b-it_math-l5.jsonl": {1: 518, 3: 14515, 4: 1429},
}


@shared_data
def test_reasoning_dir_json_per_record(capsys: pytest.CaptureFixture[str]) -> None:
    code, objects, err = run_json(capsys, REASONING)
    assert code == 1 and err == ""
    assert [Path(o["path"]).name for o in objects] == ["README.md", *sorted(EXACT_LOOP_STARTS)]
    assert objects[0]["format"] == "plain"
    records_seen = 0
    for obj in objects[1:]:
        assert obj["format"] == "dataset" and obj["tool_findings"] == []
        expected = []
        lines = Path(obj["path"]).read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines, 1):
            record = json.loads(line)
            records_seen += 1
            for d in loopguard.scan_text(record["text"], "reasoning", "default"):
                expected.append({**d.to_dict(), "where": {"line": number, "id": record["id"]}})
        assert obj["loops"] == expected
    assert records_seen == 28


@shared_data
def test_reasoning_dir_rescue_profile_finds_every_exact_loop_start(capsys: pytest.CaptureFixture[str]) -> None:
    code, objects, _ = run_json(capsys, "--profile", "rescue", REASONING)
    assert code == 1
    for obj in objects[1:]:
        name = Path(obj["path"]).name
        lines = Path(obj["path"]).read_text(encoding="utf-8").splitlines()
        records = {number: json.loads(line) for number, line in enumerate(lines, 1)}
        cycles = {(x["where"]["line"], x["start"]) for x in obj["loops"] if x["kind"] == "cycle"}
        for line, start in EXACT_LOOP_STARTS[name].items():
            assert (line, start) in cycles, (name, line)
        assert all(x["where"]["id"] == records[x["where"]["line"]]["id"] for x in obj["loops"])
        flagged = {x["where"]["line"] for x in obj["loops"]}
        assert not any(records[line]["looping"] is False for line in flagged), name  # no negative control fires


def test_dataset_field_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    looping = "Wait, let me recheck the sum. " * 40
    path = tmp_path / "gen.jsonl"
    path.write_text(
        json.dumps({"id": "a", "answer": "fine", "generation": looping})
        + "\n"
        + json.dumps({"id": "b", "answer": looping, "generation": "fine"})
        + "\n",
        encoding="utf-8",
    )
    for field, line, id_ in (("generation", 1, "a"), ("answer", 2, "b")):
        code, objects, _ = run_json(capsys, "--profile", "rescue", "--field", field, path)
        expected = [
            {**d.to_dict(), "where": {"line": line, "id": id_}}
            for d in loopguard.scan_text(looping, "reasoning", "rescue")
        ]
        assert (code, objects[0]["format"], objects[0]["loops"]) == (1, "dataset", expected)
        assert len(expected) == 1


# --------------------------------------------------------------------------- the example


def test_example_transcript(capsys: pytest.CaptureFixture[str]) -> None:
    messages = [json.loads(line) for line in EXAMPLE.read_text(encoding="utf-8").splitlines()]
    reasoning = messages[1]["reasoning_content"]
    assert len(reasoning) >= 2500
    for profile in ("default", "rescue"):
        code, objects, _ = run_json(capsys, "--profile", profile, EXAMPLE)
        (obj,) = objects
        expected = [
            {**d.to_dict(), "where": {"message": 1, "line": 2}}
            for d in loopguard.scan_text(reasoning, "reasoning", profile)
        ]
        assert code == 1 and obj["format"] == "chat"
        assert obj["loops"] == expected and len(expected) >= 1
        assert all(x["channel"] == "reasoning" for x in obj["loops"])
        assert obj["tool_findings"] == [
            {
                "tool": "grep",
                "count": 4,
                "calls": [0, 1, 2, 3],
                "where": [{"message": m, "line": m + 1, "call": 0} for m in (1, 3, 5, 7)],
                "hash_prefix": call_hash("grep", {"path": "src/", "pattern": "SESSION_TIMEOUT"})[:12],
                "results_identical": True,
                "loop": True,
            }
        ]
    code, out, _ = run(capsys, "scan", EXAMPLE)
    lines = out.splitlines()
    assert code == 1
    assert lines[0] == f"{EXAMPLE} [chat]: loops found"
    # C and N report the same loop (same start and cut): one entry naming both
    assert [line for line in lines if line.startswith("  LOOP    message 1")] == [
        "  LOOP    message 1, line 2 · reasoning · cycle + near_cycle · position 800 · start 126 · cut 276"
    ]
    assert any("would cut at" in line for line in lines)
    prefix = call_hash("grep", {"path": "src/", "pattern": "SESSION_TIMEOUT"})[:12]
    assert (
        f"  LOOP    tool run: grep ×4 · calls 0–3 · messages 1–7, lines 2–8 · hash {prefix} · results identical"
        in lines
    )


def test_human_output_shows_kind_offsets_excerpt_and_cut(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    unit = "The cache is stale,\nso I flush it and check again. "
    text = "Intro line.\n" + unit * 30
    path = tmp_path / "answer.md"
    path.write_text(text, encoding="utf-8")
    found = loopguard.scan_text(text, "text", "rescue")
    assert [d.kind for d in found] == ["cycle", "pool"]
    code, out, _ = run(capsys, "scan", "--profile", "rescue", path)
    expected = [f"{path} [plain]: loops found"]
    for d in found:
        end = d.cut if d.cut > d.start else d.start + 80  # pool: cut == start, show 80 chars from start
        excerpt = text[d.start : min(end, d.start + 80)].replace("\n", "\\n")
        expected += [
            f"  LOOP    text · {d.kind} · position {d.position} · start {d.start} · cut {d.cut}",
            f"          {'repeats' if d.cut > d.start else 'from start'}: “{excerpt}”",
            f"          would cut at {d.cut}: keep {d.cut} of {len(text)} chars, drop {len(text) - d.cut}",
        ]
    assert code == 1
    assert out.splitlines() == [*expected, "scanned 1 file: 1 with loops, 0 without, 0 unreadable"]
    # the 51-char unit, its newline shown as a visible escape
    assert expected[2] == "          repeats: “The cache is stale,\\nso I flush it and check again. ”"


def test_tool_arguments_and_results_never_printed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    secret = "sk-test-0123456789abcdefSECRET"
    calls = [{"tool": "http", "args": {"token": secret}, "result": f"echo {secret}"} for _ in range(3)]
    path = tmp_path / "calls.json"
    path.write_text(json.dumps(calls), encoding="utf-8")
    for argv in (["scan", path], ["scan", "--json", path], ["scan", "--all", path]):
        code, out, err = run(capsys, *argv)
        assert code == 1
        assert secret not in out and secret not in err
    code, out, _ = run(capsys, "scan", path)
    prefix = call_hash("http", {"token": secret})[:12]
    assert f"  LOOP    tool run: http ×3 · calls 0–2 · hash {prefix} · results identical" in out


# --------------------------------------------------------------------------- clean files, --all, exit codes


def test_all_lists_clean_files_and_empty_files_are_clean(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty.jsonl").write_bytes(b"")
    (tmp_path / "note.txt").write_text("A short, ordinary note.\n", encoding="utf-8")
    code, out, _ = run(capsys, "scan", tmp_path)
    assert (code, out) == (0, "scanned 2 files: 0 with loops, 2 without, 0 unreadable\n")
    code, out, _ = run(capsys, "scan", "--all", tmp_path)
    assert code == 0
    assert out.splitlines() == [
        f"{tmp_path / 'empty.jsonl'} [empty]: clean",
        f"{tmp_path / 'note.txt'} [plain]: clean",
        "scanned 2 files: 0 with loops, 2 without, 0 unreadable",
    ]


def test_two_identical_calls_are_a_finding_but_exit_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "calls.json"
    path.write_text(
        json.dumps([{"tool": "ls", "args": {}, "result": "a"}, {"tool": "ls", "args": {}, "result": "b"}]),
        encoding="utf-8",
    )
    code, objects, _ = run_json(capsys, path)
    assert code == 0
    assert [(f["count"], f["results_identical"], f["loop"]) for f in objects[0]["tool_findings"]] == [(2, False, False)]
    code, out, _ = run(capsys, "scan", path)
    assert out.splitlines()[:2] == [
        f"{path} [tool-calls]: no loop",
        f"  repeat  tool run: ls ×2 · calls 0–1 · hash {call_hash('ls', {})[:12]} · results differ",
    ]


@shared_data
@pytest.mark.parametrize(
    ("case", "code", "run"),
    [
        ("035_tool-same-failing-build-5x.json", 1, (5, True, True)),
        ("045_tool-rollout-poll-with-progress.json", 0, (7, False, False)),  # progress: no loop
        # ids differ, so the run is not a loop, but the ToolGuard strips them and denies: exit 1
        ("040_tool-failing-request-volatile-ids.json", 1, (6, False, False)),
    ],
)
def test_identical_calls_are_a_loop_only_while_results_repeat(
    capsys: pytest.CaptureFixture[str], case: str, code: int, run: tuple[int, bool, bool]
) -> None:
    got, objects, _ = run_json(capsys, DATA / "cases" / case)
    assert got == code
    assert [(f["count"], f["results_identical"], f["loop"]) for f in objects[0]["tool_findings"]] == [run]


def bad_files(tmp_path: Path) -> dict[str, tuple[bytes, int]]:
    """name -> (content, line the error must name)."""
    data = "".join(json.dumps({"text": f"record {i}"}) + "\n" for i in range(3)).encode()
    z = zstandard.ZstdCompressor().compress(data)
    return {
        "truncated.jsonl.zst": (z[: len(z) - 3], 1),
        "corrupt.jsonl.gz": (gzip.compress(data)[:10] + b"\xff" * 30, 1),
        "image.png": (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", 1),
        "nul.log": (b"fine\nalso fine\n\x00\x00\x00", 3),
    }


def test_bad_input_exit_2_names_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name, (blob, line) in bad_files(tmp_path).items():
        path = tmp_path / name
        path.write_bytes(blob)
        code, out, err = run(capsys, "scan", path)
        assert code == 2, name
        assert err.startswith(f"loopguard: error: {path}:{line}: "), (name, err)
        assert out == "scanned 1 file: 0 with loops, 0 without, 1 unreadable\n"
        code, objects, err = run_json(capsys, path)
        assert code == 2 and err.startswith(f"loopguard: error: {path}:{line}: ")
        assert objects == [
            {
                "path": str(path),
                "format": None,
                "loops": [],
                "tool_findings": [],
                "guard_findings": [],
                "error": err.strip()[len("loopguard: error: ") :],
                "line": line,
            }
        ]
        path.unlink()


def test_missing_path_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "scan", tmp_path / "nope.jsonl")
    assert code == 2
    assert err == f"loopguard: error: {tmp_path / 'nope.jsonl'}: no such file or directory\n"


def test_directory_with_one_bad_line_and_one_good_looping_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copyfile(EXAMPLE, tmp_path / "a-good.jsonl")
    (tmp_path / "b-bad.jsonl").write_text('{"role": "user", "content": "x"}\n{broken\n', encoding="utf-8")
    code, out, err = run(capsys, "scan", tmp_path)
    assert code == 2  # 2 wins over 1
    bad = tmp_path / "b-bad.jsonl"
    message = f"{bad}:2: invalid JSON: Expecting property name enclosed in double quotes (column 2)"
    assert err == f"loopguard: error: {message} (line skipped)\n"
    assert out.splitlines()[0] == f"{tmp_path / 'a-good.jsonl'} [chat]: loops found"
    assert "tool run: grep ×4" in out
    # the bad line is skipped: the rest of b-bad.jsonl (a user message) is read, and is clean
    assert out.splitlines()[-1] == "scanned 2 files: 1 with loops, 1 without, 0 unreadable, 1 bad line skipped"
    code, objects, _ = run_json(capsys, tmp_path)
    assert code == 2
    assert [(Path(o["path"]).name, o["format"], len(o["tool_findings"]), "error" in o) for o in objects] == [
        ("a-good.jsonl", "chat", 1, False),
        ("b-bad.jsonl", "chat", 0, False),
    ]
    assert objects[1]["bad_lines"] == [{"line": 2, "error": message}]


def test_compressed_logs_scan_like_the_plain_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = EXAMPLE.read_bytes()
    (tmp_path / "a.jsonl.gz").write_bytes(gzip.compress(data))
    (tmp_path / "b.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(data))
    (tmp_path / "c.log").write_bytes(zstandard.ZstdCompressor().compress(data))  # told by magic bytes
    _, plain, _ = run_json(capsys, EXAMPLE)
    code, objects, _ = run_json(capsys, tmp_path)
    assert code == 1
    strip = [{k: v for k, v in o.items() if k != "path"} for o in objects]
    assert strip == [{k: v for k, v in plain[0].items() if k != "path"}] * 3


# --------------------------------------------------------------------------- CLI plumbing


def test_version_and_usage(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--version")
    assert (code, out) == (0, f"loopguard {loopguard.__version__}\n")
    code, _, err = run(capsys)
    assert code == 2 and "usage: loopguard" in err
    code, _, err = run(capsys, "scan", "--profile", "nope", EXAMPLE)
    assert code == 2 and "invalid choice: 'nope'" in err
    code, out, _ = run(capsys, "scan", "--help")
    assert code == 0 and "scanned as the\n" in out and '"reasoning" channel (fenced code is not masked)' in out


def test_console_script_subprocess(tmp_path: Path) -> None:
    script = shutil.which("loopguard")
    cmd = [script] if script else [sys.executable, "-m", "loopguard.cli"]
    env = dict(os.environ)
    if not script:  # the loopguard this test imported: src/ (an in-place build) or an installed one
        where = str(Path(loopguard.__file__).resolve().parents[1])
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [where, env.get("PYTHONPATH")]))
    done = subprocess.run(
        [*cmd, "scan", "--json", str(EXAMPLE)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120
    )
    assert done.returncode == 1, done.stderr
    (obj,) = [json.loads(line) for line in done.stdout.splitlines()]
    assert (obj["format"], [f["count"] for f in obj["tool_findings"]]) == ("chat", [4])
    assert obj["loops"] and done.stderr == ""
    done = subprocess.run([*cmd, "scan", str(tmp_path)], capture_output=True, text=True, env=env, timeout=120)
    assert (done.returncode, done.stdout) == (0, "scanned 0 files: 0 with loops, 0 without, 0 unreadable\n")


def test_malformed_logs_exit_2_and_the_scan_goes_on(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    init = json.dumps({"type": "system", "subtype": "init", "session_id": "s"})
    bad = {
        "bigint.jsonl": ('{"role": "assistant", "content": "hi", "n": ' + "1" * 5000 + "}\n", 1),
        "cc-list-id.jsonl": (
            init + "\n" + json.dumps({"type": "assistant", "message": {"id": ["x"], "content": []}}) + "\n",
            2,
        ),
        "cc-dict-parent.jsonl": (
            init
            + "\n"
            + json.dumps({"type": "assistant", "parent_tool_use_id": {"a": 1}, "message": {"id": "m", "content": []}})
            + "\n",
            2,
        ),
    }
    for name, (content, line) in bad.items():
        path = tmp_path / name
        path.write_text(content, encoding="utf-8")
        code, out, err = run(capsys, "scan", path, EXAMPLE)
        assert code == 2, name
        assert f"{path}:{line}: " in err
        assert "grep ×4" in out  # the good file after it was still scanned


def test_control_characters_in_file_names_are_not_sent_to_the_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "evil\x1b[31mRED\nname.txt"
    path.write_text("hello\n", encoding="utf-8")
    code, out, _ = run(capsys, "scan", "--all", path)
    assert code == 0
    assert "\x1b" not in out
    assert out.splitlines()[0] == f"{tmp_path}/evil\\x1b[31mRED\\nname.txt [plain]: clean"


# --------------------------------------------------------------------------- work per finding

_SECRET_LOOP = "Let me check the config again: password=hunter2-CANARY is set. " * 30


def test_scan_message_detail_levels() -> None:
    """``detail``: "none" builds no excerpt, "excerpt" the excerpt only, "context" also the text
    either side of the cut; the detections are the same at every level, secrets redacted."""
    from loopguard import cli
    from loopguard.config import TextConfig
    from loopguard.logs import Message

    message = Message(0, {"message": 0}, text="Intro. " + _SECRET_LOOP)
    config = TextConfig("default")
    found = {detail: cli.scan_message(message, config, detail=detail) for detail in cli.DETAILS}
    detections = [f.detection for f in found["excerpt"]]
    assert detections and all([f.detection for f in found[d]] == detections for d in cli.DETAILS)
    assert all((f.excerpt, f.kept, f.pruned) == ("", "", "") for f in found["none"])
    assert all(f.excerpt and (f.kept, f.pruned) == ("", "") for f in found["excerpt"])
    assert [f.excerpt for f in found["context"]] == [f.excerpt for f in found["excerpt"]]
    for f in found["context"]:
        cut = f.detection.cut
        assert len(f.kept) <= cli.CONTEXT_CHARS + len("[REDACTED]") and f.pruned.startswith(message.text[cut : cut + 5])
        assert "hunter2" not in f.kept + f.pruned + f.excerpt and "[REDACTED]" in f.kept + f.pruned
    with pytest.raises(ValueError, match="detail must be one of 'none', 'excerpt', 'context', not 'all'"):
        cli.scan_message(message, config, detail="all")


def test_summary_redacts_nothing_listing_one_excerpt_per_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Redaction is most of a finding's cost: --summary (counts) redacts no text, the listing one
    excerpt per finding, --html also the kept and pruned text (3 per finding)."""
    from loopguard import cli

    path = tmp_path / "d.jsonl"
    path.write_text("".join(json.dumps({"id": i, "text": f"Record {i}. " + _SECRET_LOOP}) + "\n" for i in range(4)))
    from loopguard.config import TextConfig
    from loopguard.logs import Message

    one = Message(0, {}, reasoning="Record 0. " + _SECRET_LOOP)
    per_record = cli.scan_message(one, TextConfig("default"), detail="none")
    assert len(per_record) == 3 and not any("phrases" in f.detection.evidence for f in per_record)
    calls = []
    real = cli.redact_excerpt
    monkeypatch.setattr(cli, "redact_excerpt", lambda *a, **k: calls.append(1) or real(*a, **k))
    counted = []
    for extra in (["--summary"], [], ["--html", str(tmp_path / "r.html")]):
        calls.clear()
        assert main(["scan", "--no-progress", *extra, str(path)]) == 1
        out = capsys.readouterr().out
        counted.append(len(calls))
        assert "hunter2" not in out
    findings = 4 * len(per_record)  # what the detectors report (the listing merges an episode's)
    assert counted == [0, findings, 3 * findings]
