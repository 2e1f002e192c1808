"""``loopguard scan`` at scale (issue 20, item 1): streaming reads, bad lines, stdin, output options, memory."""

from __future__ import annotations

import gzip
import json
import os
import resource
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest
import zstandard

import loopguard
from loopguard.cli import FindingSpool, format_report, main, scan_file, scan_log
from loopguard.config import TextConfig
from loopguard.errors import InputError
from loopguard.logs import read_log
from loopguard.terminal import printable

ROOT = Path(__file__).resolve().parents[1]
from conftest import DATA, shared_data  # noqa: E402

REAL = DATA / "real"
EXAMPLE = ROOT / "examples" / "agent-loop.jsonl"
LOOPING = "Let me recheck the sum of the first two terms. " * 40  # a cycle of period 47 from 0


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def scan_json(capsys: pytest.CaptureFixture[str], path: Path) -> tuple[int, dict[str, Any], str]:
    code, out, err = run(capsys, "scan", "--json", path)
    (obj,) = [json.loads(line) for line in out.splitlines()]
    del obj["path"]
    return code, obj, err


# --------------------------------------------------------------------------- compressed = plain


@shared_data
@pytest.mark.parametrize(
    "source",
    [
        "bench/zeroeval_crux.jsonl",  # dataset: read record by record
        "claude-code/citation-check-229ca9.jsonl",
        "reasoning/cot-loop_qwen3-1.7b_gpqa.jsonl",
    ],
)
def test_gzip_and_zstd_give_the_findings_of_the_plain_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], source: str
) -> None:
    data = (REAL / source).read_bytes()
    (tmp_path / "a.jsonl.gz").write_bytes(gzip.compress(data))
    (tmp_path / "b.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(data))
    code, plain, err = scan_json(capsys, REAL / source)
    assert err == ""
    assert plain["loops"] or plain["tool_findings"] or plain["guard_findings"]  # something to compare
    for name in ("a.jsonl.gz", "b.jsonl.zst"):
        assert scan_json(capsys, tmp_path / name) == (code, plain, "")


# --------------------------------------------------------------------------- bad lines


@shared_data
@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (b"{oops", "invalid JSON: Expecting property name enclosed in double quotes (column 2)"),
        (b"[1, 2]", "expected a JSON object on each line, got an array"),
        (b'{"text": "caf\xe9"}', "not UTF-8 text (byte 0xe9)"),
        (b'{"text": 5}', "field 'text' must be a string, not int"),  # a record the reader rejects
    ],
)
def test_a_bad_line_in_the_middle_is_reported_and_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: bytes, message: str
) -> None:
    lines = (REAL / "bench" / "zeroeval_crux.jsonl").read_bytes().splitlines(keepends=True)
    middle = len(lines) // 2
    blank = tmp_path / "blank.jsonl"  # the file without the bad line, line numbers unchanged
    blank.write_bytes(b"".join(lines[:middle] + [b"\n"] + lines[middle + 1 :]))
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(b"".join(lines[:middle] + [bad + b"\n"] + lines[middle + 1 :]))
    code, expected, err = scan_json(capsys, blank)
    assert (code, err) == (1, "")
    code, got, err = scan_json(capsys, broken)
    assert code == 2  # 2 wins over 1, at the end: the rest of the file was scanned
    line = middle + 1
    assert err == f"loopguard: error: {broken}:{line}: {message} (line skipped)\n"
    assert got.pop("bad_lines") == [{"line": line, "error": f"{broken}:{line}: {message}"}]
    assert got == expected
    code, out, _ = run(capsys, "scan", "--summary", broken)
    assert out.splitlines()[-1] == "scanned 1 file: 1 with loops, 0 without, 0 unreadable, 1 bad line skipped"
    assert out.splitlines()[0].endswith(", 1 bad line skipped")


# --------------------------------------------------------------------------- recorded runs (calls per line)


def test_recorded_runs_are_scanned_per_record(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    grep = {"tool": "grep", "args": {"pattern": "SESSION_TIMEOUT", "path": "src"}, "result": "no matches"}
    runs = [
        {"id": "run-1", "calls": [grep] * 4},
        {"id": "run-2", "calls": "grep"},  # a bad record: reported, skipped, the rest scanned
        {"id": "run-3", "calls": [{"tool": "ls", "args": {}, "result": "a.py"}, {**grep, "result": "a.py:3"}]},
    ]
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in runs), encoding="utf-8")
    code, got, err = scan_json(capsys, path)
    assert code == 2
    assert err == f"loopguard: error: {path}:2: 'calls' must be a list, not str (line skipped)\n"
    assert got["format"] == "tool-call-records" and got["loops"] == []
    at = [{"line": 1, "id": "run-1", "call": i} for i in range(4)]
    (run_finding,) = got["tool_findings"]  # run-3's two grep calls are not neighbours
    assert (run_finding["tool"], run_finding["calls"], run_finding["where"]) == ("grep", [0, 1, 2, 3], at)
    assert (run_finding["loop"], run_finding["results_identical"]) == (True, True)
    # SPEC D1 with its defaults: the 2nd identical call is noticed, the 3rd denied, the 4th
    # (the model insisting once) runs with a notice that the call is locked
    decisions = [(f["call"], f["action"], f["kind"], f["rule"], f["where"]) for f in got["guard_findings"]]
    assert decisions == [
        (1, "notice", "repeat", "repeat", at[1]),
        (2, "deny", "repeat", "repeat", at[2]),
        (3, "notice", "locked", "repeat", at[3]),
    ]
    good = tmp_path / "good.jsonl"  # without the bad record, read whole: the same findings
    good.write_text("".join(json.dumps(r) + "\n" if i != 1 else "\n" for i, r in enumerate(runs)), encoding="utf-8")
    streamed = _streamed(path)
    assert [b["line"] for b in streamed.pop("bad_lines")] == [2]
    assert _whole(good) == _streamed(good) == {**streamed, "path": str(good)}


@shared_data
@pytest.mark.parametrize(
    "name",
    ["tau2_openai-gpt-4.x.jsonl.gz", "tau-bench_gpt-4o_airline.jsonl.gz", "mini-swe-agent_gemini-3-pro.jsonl.gz"],
)
def test_scan_of_recorded_runs_agrees_with_eval(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The guard findings ``scan`` lists per run equal ``loopguard eval``'s replay of the same runs
    (independent code: :mod:`loopguard.evaluate_records`), counted by the runs' labels."""
    path = REAL / "agentbench" / name
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        labels = {line: json.loads(text)["label"] for line, text in enumerate(fh, 1)}
    code, got, _ = scan_json(capsys, path)
    assert (code, got["format"]) == (1, "tool-call-records")
    strong = {f["where"]["line"] for f in got["guard_findings"] if f["action"] in ("deny", "cancel")}
    acted = {f["where"]["line"] for f in got["guard_findings"]}
    code, out, _ = run(capsys, "eval", "--json", path)
    summary = json.loads(out)["runs"]["summary"]
    assert summary["runs"] == len(labels)

    def runs(lines: set[int], label: str) -> int:
        return sum(labels[line] == label for line in lines)

    assert runs(strong, "clean") == summary["clean"]["strong"]["k"]
    assert runs(acted, "clean") == summary["clean"]["notice"]["k"]
    assert (runs(strong, "null"), runs(acted, "null")) == (summary["null"]["strong"], summary["null"]["any"])


def test_a_log_cut_mid_line_scans_up_to_the_cut(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    records = [{"id": i, "text": LOOPING if i % 2 else "fine"} for i in range(6)]
    text = "".join(json.dumps(r) + "\n" for r in records)
    path = tmp_path / "being-written.jsonl"
    path.write_text(text + '{"id": 6, "text": "half a rec', encoding="utf-8")
    code, out, err = run(capsys, "scan", "--summary", path)
    assert code == 2
    assert err.startswith(f"loopguard: error: {path}:7: invalid JSON: Unterminated string")
    assert out.splitlines() == [
        f"{path} [dataset]: loops found: 3 text loops, 0 tool runs, 0 guard findings, 1 bad line skipped",
        "totals: 3 text loops, 0 tool runs, 0 guard findings, 0 calls after a cancel",
        "scanned 1 file: 1 with loops, 0 without, 0 unreadable, 1 bad line skipped",
    ]


# --------------------------------------------------------------------------- stdin


@pytest.mark.parametrize("compress", [None, "gzip", "zstd"])
def test_stdin_gives_the_findings_of_the_file(tmp_path: Path, compress: str | None) -> None:
    data = EXAMPLE.read_bytes()
    blob = {None: data, "gzip": gzip.compress(data), "zstd": zstandard.ZstdCompressor().compress(data)}[compress]
    command = [sys.executable, "-m", "loopguard", "scan", "--json"]
    from_file = subprocess.run([*command, str(EXAMPLE)], capture_output=True, text=True, check=False)
    from_stdin = subprocess.run([*command, "-"], input=blob, capture_output=True, check=False)
    assert (from_stdin.returncode, from_stdin.stderr) == (from_file.returncode, b"") == (1, b"")
    got, expected = json.loads(from_stdin.stdout), json.loads(from_file.stdout)
    assert got.pop("path") == "-"
    expected.pop("path")
    assert got == expected


# --------------------------------------------------------------------------- output at scale


def twelve_identical_calls(tmp_path: Path) -> Path:
    path = tmp_path / "calls.json"
    path.write_text(json.dumps([{"tool": "ls", "args": {"path": "."}, "result": "a.txt"}] * 12), encoding="utf-8")
    return path


def test_findings_after_the_cancel_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = twelve_identical_calls(tmp_path)
    code, out, err = run(capsys, "scan", path)
    assert (code, err) == (1, "")
    head = "  LOOP    tool run: ls ×12 · calls 0–11 · hash {h} · results identical"
    lines = out.splitlines()
    digest = lines[1].split("hash ")[1].split(" ")[0]
    # the guard: notice, deny (repeat), notice, deny (locked), cancel at call 5 (repeat_streak);
    # calls 6-11 (6 calls) come after the cancel, each with a finding of its own before this change
    assert lines == [
        f"{path} [tool-calls]: loops found",
        head.format(h=digest),
        f"  notice  tool call 1: ls · repeat · call 1 · hash {digest}",
        f"  DENY    tool call 2: ls · repeat · call 2 · hash {digest}",
        f"  notice  tool call 3: ls · locked (repeat) · call 3 · hash {digest}",
        f"  DENY    tool call 4: ls · locked (repeat) · call 4 · hash {digest}",
        f"  CANCEL  tool call 5: ls · repeat_streak · call 5 · hash {digest}",
        "  …       6 more calls after the cancel (6 guard findings not listed)",
        "scanned 1 file: 1 with loops, 0 without, 0 unreadable",
    ]
    code, out, _ = run(capsys, "scan", "--json", path)
    obj = json.loads(out)
    assert [f["call"] for f in obj["guard_findings"]] == [1, 2, 3, 4, 5]
    assert obj["after_cancel"] == [{"finding": 4, "calls": 6, "findings": 6}]


def test_max_findings_says_how_many_were_left_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = twelve_identical_calls(tmp_path)
    _, full, _ = run(capsys, "scan", path)
    code, out, _ = run(capsys, "scan", "--max-findings", "2", path)
    assert code == 1
    full_lines = full.splitlines()
    # 7 findings: the run, 5 guard decisions, the after-cancel line
    assert out.splitlines() == [*full_lines[:3], "  … 5 more findings not shown (--max-findings 2)", full_lines[-1]]
    _, out, _ = run(capsys, "scan", "--max-findings", "7", path)
    assert out == full
    code, out, _ = run(capsys, "scan", "--max-findings", "0", path)
    assert out.splitlines()[1] == "  … 7 more findings not shown (--max-findings 0)"


def test_summary_is_one_line_per_file_then_totals(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    calls = twelve_identical_calls(tmp_path)
    clean = tmp_path / "clean.jsonl"
    clean.write_text(json.dumps({"role": "assistant", "content": "Done."}) + "\n", encoding="utf-8")
    missing = tmp_path / "missing.jsonl"
    code, out, err = run(capsys, "scan", "--summary", calls, EXAMPLE, clean, missing)
    assert code == 2
    assert err == f"loopguard: error: {missing}: no such file or directory\n"
    assert out.splitlines() == [
        f"{calls} [tool-calls]: loops found: 0 text loops, 1 tool run, 5 guard findings, 6 calls after a cancel",
        f"{EXAMPLE} [chat]: loops found: 1 text loop, 1 tool run, 3 guard findings",
        f"{clean} [chat]: clean: 0 text loops, 0 tool runs, 0 guard findings",
        f"{missing}: unreadable",
        "totals: 1 text loop, 2 tool runs, 8 guard findings, 6 calls after a cancel",
        "scanned 4 files: 2 with loops, 1 without, 1 unreadable",
    ]


def test_no_progress_bar_in_captured_output(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "scan", EXAMPLE, EXAMPLE)  # 2+ files, but stderr is not a terminal
    assert err == "" and "\x1b" not in out
    assert run(capsys, "scan", "--no-progress", EXAMPLE, EXAMPLE) == (code, out, err)


# --------------------------------------------------------------------------- memory


def write_big_dataset(path: Path, size: int, *, loop_every: int = 1000) -> int:
    """A dataset JSON Lines file of about ``size`` bytes: filler records without the text field
    (2 KiB each) and every ``loop_every``-th record a looping text.  Returns the looping records."""
    filler = "x" * 2000
    loops = 0
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(json.dumps({"id": 0, "text": "The answer is 4."}) + "\n")
        i = 1
        written = 0
        while written < size:
            if i % loop_every == 0:
                line = json.dumps({"id": i, "text": LOOPING}) + "\n"
                loops += 1
            else:
                line = json.dumps({"id": i, "meta": filler}) + "\n"
            fh.write(line)
            written += len(line)
            i += 1
    return loops


def write_big_claude_code(path: Path, size: int, *, loop_every: int = 1000) -> int:
    """A Claude Code session log of about ``size`` bytes: user lines of 2 KiB (not scanned, but
    kept by main's reader to the end of the file) and every ``loop_every``-th line an assistant
    message (an id of its own) with a looping text.  Returns the looping messages."""
    filler = json.dumps({"type": "user", "message": {"role": "user", "content": "x" * 2000}}) + "\n"
    loops = 0
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(json.dumps({"type": "system", "subtype": "init", "session_id": "s"}) + "\n")
        i = 1
        written = 0
        while written < size:
            if i % loop_every == 0:
                content = [{"type": "text", "text": LOOPING}]
                line = json.dumps({"type": "assistant", "message": {"id": f"msg_{i}", "content": content}}) + "\n"
                loops += 1
            else:
                line = filler
            fh.write(line)
            written += len(line)
            i += 1
    return loops


def write_big_chat(path: Path, size: int, *, loop_every: int = 1000) -> int:
    """A chat log (one message per line) of about ``size`` bytes: user messages of 2 KiB and every
    ``loop_every``-th line an assistant message with a looping text.  Returns the looping messages."""
    filler = json.dumps({"role": "user", "content": "x" * 2000}) + "\n"
    loops = 0
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(json.dumps({"role": "system", "content": "You are a helpful assistant."}) + "\n")
        i = 1
        written = 0
        while written < size:
            if i % loop_every == 0:
                line = json.dumps({"role": "assistant", "content": LOOPING}) + "\n"
                loops += 1
            else:
                line = filler
            fh.write(line)
            written += len(line)
            i += 1
    return loops


@pytest.mark.parametrize(
    ("kind", "write"),
    [("dataset", write_big_dataset), ("claude-code", write_big_claude_code), ("chat", write_big_chat)],
)
def test_a_file_larger_than_the_memory_limit_scans(tmp_path: Path, kind: str, write: Any) -> None:
    limit = 192 << 20  # address space: the interpreter and loopguard need about 110 MiB of it
    path = tmp_path / "big.jsonl"
    loops = write(path, 240 << 20)
    assert path.stat().st_size > limit

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    # CI's debug step preloads AddressSanitizer, whose shadow memory alone reserves terabytes of
    # address space (and whose allocator keeps hundreds of MiB resident): no address-space or RSS
    # bound means anything there.  That step still scans the whole file with the ASan core and
    # checks the counts; the bound itself is asserted by every run without ASan (CI's step 1).
    under_asan = "libasan" in os.environ.get("LD_PRELOAD", "")
    done = subprocess.run(
        [sys.executable, "-m", "loopguard", "scan", "--summary", str(path)],
        capture_output=True,
        text=True,
        preexec_fn=None if under_asan else limited,
        check=False,
    )
    assert (done.returncode, done.stderr) == (1, "")
    assert done.stdout.splitlines()[0] == (
        f"{path} [{kind}]: loops found: {loops} text loops, 0 tool runs, 0 guard findings"
    )


# --------------------------------------------------------------------------- streamed = read whole


def _real_files() -> list[Any]:
    files = sorted(p for p in REAL.rglob("*") if p.is_file() and p.suffix not in (".md", "") and p.name != "LICENSE")
    # the two biggest (a 19 MiB dataset, the 17.6 MiB gzip of recorded runs) take 12 s or more each
    return [pytest.param(p, marks=[pytest.mark.slow] if p.stat().st_size > (4 << 20) else [], id=p.name) for p in files]


def _whole(path: Path) -> dict[str, Any]:
    """main's reading: the whole file parsed (read_log), then scanned conversation by conversation."""
    try:
        return scan_log(read_log(path), TextConfig()).to_dict()
    except InputError as exc:
        return {"error": str(exc)}


def _streamed(path: Path) -> dict[str, Any]:
    report = scan_file(str(path), TextConfig())
    return {"error": str(report.error)} if report.error is not None else report.to_dict()


@shared_data
@pytest.mark.parametrize("path", _real_files() if REAL.is_dir() else [])
def test_streamed_findings_are_those_of_the_whole_file(path: Path) -> None:
    assert _streamed(path) == _whole(path)


def claude_code_with_sub_agents(path: Path) -> None:
    """A Claude Code log whose two sub-agents write between the main agent's lines, with repeated
    calls (runs, guard findings, a cancel), a looping text, blocks of one message on several lines
    and a call answered by an error."""
    lines: list[dict[str, Any]] = [{"type": "system", "subtype": "init", "session_id": "s"}]

    def assistant(mid: str, blocks: list[dict[str, Any]], parent: str | None = None) -> None:
        lines.append({"type": "assistant", "parent_tool_use_id": parent, "message": {"id": mid, "content": blocks}})

    def result(call_id: str, content: Any, error: bool = False) -> None:
        block = {"type": "tool_result", "tool_use_id": call_id, "content": content, "is_error": error}
        lines.append({"type": "user", "message": {"role": "user", "content": [block]}})

    assistant("m0", [{"type": "thinking", "thinking": LOOPING}])
    assistant("m0", [{"type": "tool_use", "id": "task1", "name": "Task", "input": {"prompt": "a"}}])
    assistant("m0", [{"type": "tool_use", "id": "task2", "name": "Task", "input": {"prompt": "b"}}])
    for i in range(12):
        for parent in ("task1", "task2"):
            call = f"{parent}-{i}"
            assistant(f"{parent}-m{i}", [{"type": "text", "text": f"step {i}"}], parent)
            assistant(f"{parent}-m{i}", [{"type": "tool_use", "id": call, "name": "ls", "input": {"p": "."}}], parent)
            result(call, "a.txt" if parent == "task1" else f"{i} files", error=i == 3)
    result("task1", "done")
    result("task2", "done")
    for i in range(8):
        assistant(f"m{i + 1}", [{"type": "tool_use", "id": f"g{i}", "name": "grep", "input": {"q": "x"}}])
        result(f"g{i}", [{"type": "text", "text": "no match"}])
    assistant("m9", [{"type": "text", "text": LOOPING}])
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


def chat_with_tool_calls(path: Path) -> None:
    """A chat log (one message per line): repeated calls answered by tool messages, a legacy
    function call, a looping reasoning, a call never answered."""
    lines: list[dict[str, Any]] = [{"role": "system", "content": "s"}, {"role": "user", "content": "go"}]
    for i in range(9):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "read", "arguments": '{"f": "a"}'}}
        lines.append({"role": "assistant", "content": None, "tool_calls": [call]})
        if i != 4:
            lines.append({"role": "tool", "tool_call_id": f"c{i}", "content": "same"})
    lines.append({"role": "assistant", "content": "", "function_call": {"name": "old", "arguments": "{}"}})
    lines.append({"role": "function", "name": "old", "content": "ok"})
    lines.append({"role": "assistant", "content": "Answer.", "reasoning_content": LOOPING})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


@pytest.mark.parametrize(
    ("write", "kind"), [(claude_code_with_sub_agents, "claude-code"), (chat_with_tool_calls, "chat")]
)
def test_streamed_findings_are_those_of_the_whole_file_with_sub_agents_and_tool_calls(
    tmp_path: Path, write: Any, kind: str
) -> None:
    path = tmp_path / "log.jsonl"
    write(path)
    got = _streamed(path)
    assert got["format"] == kind
    assert got["loops"] and got["tool_findings"] and got["guard_findings"]  # something to compare
    assert got == _whole(path)


# --------------------------------------------------------------------------- a bad first line


@shared_data
@pytest.mark.parametrize("source", ["bench/zeroeval_crux.jsonl", "claude-code/citation-check-229ca9.jsonl"])
@pytest.mark.parametrize(
    ("name", "bad", "message"),
    [
        ("a.jsonl", b"{oops", "invalid JSON: Expecting property name enclosed in double quotes (column 2)"),
        ("a.jsonl", b"[1, 2]", "expected a JSON object on each line, got an array"),
        ("a.jsonl", b'{"text": "caf\xe9"}', "not UTF-8 text (byte 0xe9)"),
        ("a.jsonl", b'{"te\x00', "binary data (NUL byte), not a JSON object"),
        ("a.log", b'ext": "the tail of a record whose head was cut"}', "invalid JSON: Expecting value (column 1)"),
        (
            "a.txt",
            b'\xef\xbb\xbf{"id": 1, "te',
            "invalid JSON: Invalid control character at (column 14)",  # the newline, after the BOM
        ),
    ],
)
def test_a_bad_first_line_is_reported_and_the_rest_streamed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], source: str, name: str, bad: bytes, message: str
) -> None:
    lines = (REAL / source).read_bytes().splitlines(keepends=True)
    blank = tmp_path / ("blank-" + name)  # the file without its first line, line numbers unchanged
    blank.write_bytes(b"\n" + b"".join(lines[1:]))
    broken = tmp_path / name
    broken.write_bytes(bad + b"\n" + b"".join(lines[1:]))
    code, expected, err = scan_json(capsys, blank)
    assert (code, err) == ((1, "") if source.startswith("bench") else (0, ""))
    assert expected["format"] == ("dataset" if source.startswith("bench") else "claude-code")
    assert expected["loops"] or expected["guard_findings"]  # something to compare
    code, got, err = scan_json(capsys, broken)
    assert code == 2
    assert err == f"loopguard: error: {broken}:1: {message} (line skipped)\n"
    assert got.pop("bad_lines") == [{"line": 1, "error": f"{broken}:1: {message}"}]
    assert got == expected


@pytest.mark.parametrize(
    ("name", "text", "kind"),
    [
        # plain text whose second line is a JSON object: still plain text
        ("notes.txt", 'Notes from the run:\n{"role": "assistant", "content": "hi"}\n', "plain"),
        # a JSON document written over several lines: still read whole
        (
            "calls.json",
            json.dumps([{"tool": "ls", "args": {}, "result": "a"}], indent=None).replace("[", "[\n", 1),
            "tool-calls",
        ),
        (
            "calls2.json",
            '[{"tool": "ls", "args": {}, "result": "a"},\n{"tool": "ls", "args": {}, "result": "a"}]\n',
            "tool-calls",
        ),
        ("traj.json", '{"trajectory": [\n{"action": "ls", "observation": "a"}\n]}\n', "swe-agent"),
    ],
)
def test_a_first_line_that_is_not_a_bad_json_lines_line_keeps_the_whole_file_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str, kind: str
) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    code, got, err = scan_json(capsys, path)
    assert (code, err, got["format"]) == (0, "", kind)
    assert "bad_lines" not in got


# --------------------------------------------------------------------------- corrupt compressed data


def _gzip(data: bytes) -> bytes:
    return gzip.compress(data, mtime=0)  # a 10-byte header, then the deflate stream


def _zstd(data: bytes) -> bytes:
    return zstandard.ZstdCompressor().compress(data)


@shared_data
@pytest.mark.parametrize(
    ("name", "broken_tail", "message"),
    [
        # the second half, a gzip member of its own: cut after its header, or its first deflate
        # byte made an invalid block type (0xff: BFINAL=1, BTYPE=11)
        ("cut.jsonl.gz", lambda b: _gzip(b)[:10], "Compressed file ended before the end-of-stream marker was reached"),
        (
            "bad.jsonl.gz",
            lambda b: _gzip(b)[:10] + b"\xff" + _gzip(b)[11:],
            "Error -3 while decompressing data: invalid block type",
        ),
        # a zstd frame of its own: cut in its header, or its frame header overwritten
        ("cut.jsonl.zst", lambda b: _zstd(b)[:6], "truncated zstd data: the last frame is incomplete"),
        (
            "bad.jsonl.zst",
            lambda b: _zstd(b)[:4] + b"\xff" * 8 + _zstd(b)[12:],
            "zstd decompressor error: Unsupported frame parameter",
        ),
    ],
)
def test_corrupt_compressed_data_partway_keeps_the_findings_before_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, broken_tail: Any, message: str
) -> None:
    lines = (REAL / "bench" / "zeroeval_crux.jsonl").read_bytes().splitlines(keepends=True)
    half = len(lines) // 2
    first, second = b"".join(lines[:half]), b"".join(lines[half:])
    plain = tmp_path / "first-half.jsonl"
    plain.write_bytes(first)
    code, expected, err = scan_json(capsys, plain)
    assert (code, err) == (1, "") and expected["loops"]
    path = tmp_path / name
    path.write_bytes((_gzip if name.endswith(".gz") else _zstd)(first) + broken_tail(second))
    code, got, err = scan_json(capsys, path)
    line = half + 1  # the first line of the broken part
    kind = "gzip" if name.endswith(".gz") else "zstd"
    error = f"{path}:{line}: corrupt {kind} data: {message}"
    assert code == 2
    assert err == f"loopguard: error: {error} (the rest of the file is unreadable)\n"
    assert got.pop("stopped") == {"line": line, "error": error}
    assert got == expected
    code, out, _ = run(capsys, "scan", "--summary", path)
    assert code == 2
    assert out.splitlines()[0].endswith(f", corrupt data from line {line}")
    assert out.splitlines()[-1] == "scanned 1 file: 1 with loops, 0 without, 0 unreadable, 1 cut short by corrupt data"


@shared_data
@pytest.mark.parametrize("kind", ["gzip", "zstd"])
def test_a_compressed_log_cut_anywhere_scans_what_decompresses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    data = (REAL / "bench" / "zeroeval_crux.jsonl").read_bytes()
    blob = _gzip(data) if kind == "gzip" else _zstd(data)
    cut = blob[: len(blob) * 3 // 5]
    # what a decompressor gives from the cut stream: its complete lines are scanned
    decoded = (
        zlib.decompressobj(31).decompress(cut)
        if kind == "gzip"
        else zstandard.ZstdDecompressor().decompressobj().decompress(cut)
    )
    complete = decoded[: decoded.rindex(b"\n") + 1]
    plain = tmp_path / "complete.jsonl"
    plain.write_bytes(complete)
    _, expected, _ = scan_json(capsys, plain)
    path = tmp_path / ("log.jsonl.gz" if kind == "gzip" else "log.jsonl.zst")
    path.write_bytes(cut)
    code, got, err = scan_json(capsys, path)
    line = complete.count(b"\n") + 1
    assert code == 2
    assert err.startswith(f"loopguard: error: {path}:{line}: corrupt {kind} data: ")
    assert got.pop("stopped")["line"] == line
    assert got == expected


# --------------------------------------------------------------------------- one loop, one entry

# a record of benchmarks/scan_scale.py's generated file (id 24669): 60 random words, then one
# sentence 32 times; the lead ends in ". " as the sentence does, so the cycle starts 2 characters
# before the first "Wait" (at 350), and near_cycle's first (weak) report 3 characters earlier still
BENCH_LEAD = (
    "boundary must empty means ends its loop the or boundary consider the checks checks must a and is "
    "depends then before model the means neighbour is consider negative before and where be depends every "
    "element is series against the the the boundary element be boundary early the input series terms first "
    "negative the first the element the list series and. "
)
BENCH_SENTENCE = "Wait, let me recheck the sum of the first two terms. "


def test_a_loop_reported_by_cycle_and_near_cycle_is_listed_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = BENCH_LEAD + BENCH_SENTENCE * 32
    assert len(BENCH_LEAD) == 352 and len(text) == 2048
    found = [(d.kind, d.strong, d.start, d.cut, d.position) for d in loopguard.scan_text(text, "reasoning")]
    assert found == [
        ("cycle", True, 350, 403, 1000),
        ("near_cycle", False, 347, 400, 1000),  # "and. Wait" is near enough "rms. Wait"
        ("near_cycle", True, 350, 403, 1200),  # confirms the episode, at the loop's start
    ]
    path = tmp_path / "bench.jsonl"
    path.write_text(json.dumps({"id": 24669, "text": text}) + "\n", encoding="utf-8")
    code, out, err = run(capsys, "scan", path)
    assert (code, err) == (1, "")
    assert [line for line in out.splitlines() if "LOOP" in line] == [
        "  LOOP    line 1, id 24669 · reasoning · cycle + near_cycle · position 1000 · start 350 · cut 403"
    ]
    code, out, err = run(capsys, "scan", "--summary", path)
    assert out.splitlines()[0] == f"{path} [dataset]: loops found: 1 text loop, 0 tool runs, 0 guard findings"


# --------------------------------------------------------------------------- output spooled


def _outputs(tmp_path: Path) -> list[Path]:
    calls = twelve_identical_calls(tmp_path)
    claude = tmp_path / "claude.jsonl"
    claude_code_with_sub_agents(claude)
    chat = tmp_path / "chat.jsonl"
    chat_with_tool_calls(chat)
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"id": 1, "text": "' + LOOPING + '"}\n{oops\n{"id": 2, "text": "fine"}\n', encoding="utf-8")
    files = [calls, claude, chat, broken, EXAMPLE]
    if REAL.is_dir():
        files += [REAL / "bench" / "zeroeval_crux.jsonl", REAL / "swe-agent" / "eps.traj"]
        files += sorted((REAL / "claude-code").glob("*.jsonl"))
    return files


@pytest.mark.parametrize("options", [[], ["--all"], ["--max-findings", "3"], ["--max-findings", "0"], ["--json"]])
def test_spooled_output_is_the_output_of_the_findings_in_memory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], options: list[str]
) -> None:
    """The command writes each conversation's findings to a spool (disk) as it ends; what it prints
    is what format_report / FileReport.to_dict give for the findings kept in memory."""
    listed = 0
    for path in _outputs(tmp_path):
        report = scan_file(str(path), TextConfig())
        listed += bool(report.loops or report.tool_runs or report.guard_findings)
        code, out, _ = run(capsys, "scan", *options, path)
        if options == ["--json"]:
            assert out == printable(json.dumps(report.to_dict())) + "\n"
            continue
        show_clean = options == ["--all"]
        limit = int(options[1]) if options[:1] == ["--max-findings"] else None
        expected = [printable(line) for line in format_report(report, show_clean=show_clean, max_findings=limit)]
        assert out.splitlines()[:-1] == expected
        assert out.splitlines()[-1].startswith("scanned 1 file: ")
    assert listed >= 5  # files with findings to compare


def test_a_spooled_report_keeps_counts_not_findings(tmp_path: Path) -> None:
    path = twelve_identical_calls(tmp_path)
    in_memory = scan_file(str(path), TextConfig())
    sink = FindingSpool(json_output=False)
    try:
        spooled = scan_file(str(path), TextConfig(), sink=sink)
        assert (spooled.loops, spooled.tool_runs, spooled.guard_findings, spooled.after_cancel) == ([], [], [], {})
        assert (
            spooled.counts()
            == in_memory.counts()
            == {
                "text loops": 0,
                "tool runs": 1,
                "guard findings": 5,
                "after cancel": 6,
                "text findings": 0,
            }
        )
        assert spooled.has_loop and list(sink.human_lines(spooled)) == format_report(in_memory)
    finally:
        sink.close()
