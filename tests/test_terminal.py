"""Terminal safety: every line ``loopguard`` prints is free of control, bidi and line-breaking
code points, whatever a log puts in tool names, record ids, file names or text (issue 21, item 3)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import loopcore
import loopguard
from loopguard.cli import main
from loopguard.terminal import UNSAFE, printable

# ESC sequences (retitle, clear screen), BEL, C1 CSI, RLO, a forged report line, CR, backspace
BAD = "\x1b]0;pwned\x07\x1b[2J\x9b31m\u202eevil\n  LOOP    tool run: fake ×9\r\x08\u2066\u200f\x7f"
BAD_SHOWN = "\\x1b]0;pwned\\x07\\x1b[2J\\x9b31m\\u202eevil\\n  LOOP    tool run: fake ×9\\r\\x08\\u2066\\u200f\\x7f"


def raw_unsafe(text: str) -> list[str]:
    """The unsafe code points in ``text`` other than the newlines that end lines."""
    return sorted({f"U+{ord(ch):04X}" for ch in text.replace("\n", "") if ord(ch) in UNSAFE})


def write_logs(tmp_path: Path) -> tuple[Path, Path]:
    chat = tmp_path / "chat.jsonl"
    messages = []
    for i in range(5):
        call = {"id": f"c{i}{BAD}", "type": "function", "function": {"name": "grep" + BAD, "arguments": "{}"}}
        messages.append({"role": "assistant", "id": f"m{i}{BAD}", "content": "", "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}{BAD}", "content": "same"})
    chat.write_text("".join(json.dumps(m) + "\n" for m in messages), encoding="utf-8")
    dataset = tmp_path / "data.jsonl"
    record = {"id": "rec" + BAD, "output": ("Let me check again." + BAD + " ") * 40}
    dataset.write_text(json.dumps(record) + "\n", encoding="utf-8")
    return chat, dataset


# --------------------------------------------------------------------------- the sanitiser


def test_printable_escapes_every_unsafe_code_point_and_nothing_else() -> None:
    assert printable(BAD) == BAD_SHOWN
    assert printable("\x00\x1f\x80\x9f\u061c\u200e\u202a\u2069\u2028\u2029\ud800") == (
        "\\x00\\x1f\\x80\\x9f\\u061c\\u200e\\u202a\\u2069\\u2028\\u2029\\ud800"
    )
    # the unsafe set, exactly: 32 C0 + DEL + 32 C1 + 3 bidi marks + 5 embeddings/overrides
    # + 4 isolates + 2 separators + 2048 surrogates + the 170 format characters of Unicode 15.1
    # (category Cf) but ZWNJ and ZWJ and those already counted (U+061C, U+200E/F, U+202A-E,
    # U+2066-9: 12) + the combining grapheme joiner and 4 Hangul fillers
    assert len(UNSAFE) == 32 + 1 + 32 + 3 + 5 + 4 + 2 + 2048 + (170 - 2 - 12) + 5
    import unicodedata

    format_chars = {c for c in range(0x110000) if unicodedata.category(chr(c)) == "Cf"}
    assert format_chars - {0x200C, 0x200D} <= UNSAFE  # whatever Unicode version this Python has
    assert printable("rm\u200b \ufeffx\u00ad\U000e0041\u3164") == "rm\\u200b \\ufeffx\\xad\\U000e0041\\u3164"
    safe = "plain ascii \\x1b, ünïcödé 中文 🙂 \u00a0 \u200d \\"  # NBSP, ZWJ and backslashes stay
    assert printable(safe) == safe
    every = "".join(map(chr, range(0x3000)))
    shown = printable(every)
    assert raw_unsafe(shown) == [] and "\n" not in shown
    assert printable(shown) == shown  # idempotent
    with pytest.raises(TypeError, match="needs a str, not bytes"):
        printable(b"x")  # type: ignore[arg-type]


def test_printable_escapes_a_megabyte_of_controls() -> None:
    text = "\x1b\u202e" * 500_000  # 1 M code points, every one escaped
    shown = printable(text)
    assert shown == "\\x1b\\u202e" * 500_000  # 4 + 6 characters per pair


# --------------------------------------------------------------------------- scan


SCAN_PREFIXES = (
    "  LOOP    ",
    "  notice  ",
    "  DENY    ",
    "          repeats: ",
    "          would cut at ",
    "scanned 2 files: ",
)


def check_scan_output(out: str, chat: Path, dataset: Path) -> None:
    assert raw_unsafe(out) == []
    lines = out.splitlines()
    # chat: header, the tool run, 4 guard lines; dataset: header + 3 lines of its loop; summary
    assert len(lines) == 11, lines
    headers = [f"{chat} [chat]: loops found", f"{dataset} [dataset]: loops found"]
    assert [lines[0], lines[6]] == headers
    for line in lines[1:6] + lines[7:]:
        assert line.startswith(SCAN_PREFIXES), line
    assert sum(line.startswith("  LOOP") for line in lines) == 2  # the run and the text loop: no forged one
    assert lines[1].startswith(f"  LOOP    tool run: grep{BAD_SHOWN} ×5 · calls 0–4 · ")
    assert lines[2].startswith(f"  notice  tool call 1: grep{BAD_SHOWN} · repeat · message 2, line 3, call 0 · ")
    assert lines[7].startswith("  LOOP    line 1, id " + printable(json.dumps("rec" + BAD, ensure_ascii=False)) + " · ")
    assert lines[8] == f"          repeats: “Let me check again.{BAD_SHOWN} ”"
    assert lines[10] == "scanned 2 files: 2 with loops, 0 without, 0 unreadable"


def test_scan_prints_no_control_or_bidi_code_point(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    chat, dataset = write_logs(tmp_path)
    code = main(["scan", str(chat), str(dataset)])
    out, err = capsys.readouterr()
    assert (code, err) == (1, "")
    check_scan_output(out, chat, dataset)


def test_scan_through_the_real_command(tmp_path: Path) -> None:
    chat, dataset = write_logs(tmp_path)
    # the child imports the loopguard and loopcore this process runs (an installed copy, or the
    # checkout's src/), whatever another test put on sys.path
    homes = [str(Path(m.__file__).resolve().parent.parent) for m in (loopguard, loopcore)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(dict.fromkeys([*homes, *sys.path]))}
    done = subprocess.run(
        [sys.executable, "-m", "loopguard", "scan", str(chat), str(dataset)],
        capture_output=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stderr) == (1, b"")
    check_scan_output(done.stdout.decode("utf-8"), chat, dataset)


def test_scan_json_is_ascii_and_keeps_the_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    chat, dataset = write_logs(tmp_path)
    code = main(["scan", "--json", str(chat), str(dataset)])
    out, err = capsys.readouterr()
    assert (code, err) == (1, "")
    assert out.isascii()  # ensure_ascii: U+202E and U+009B are \u escapes, controls too
    lines = out.splitlines()
    assert len(lines) == 2
    first, second = (json.loads(line) for line in lines)
    assert {f["tool"] for f in first["tool_findings"]} == {"grep" + BAD}  # a JSON reader gets the name back
    assert second["loops"][0]["where"] == {"line": 1, "id": "rec" + BAD}


def test_errors_on_stderr_are_escaped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / ("gone" + BAD)
    code = main(["scan", str(missing)])
    out, err = capsys.readouterr()
    assert code == 2
    assert raw_unsafe(err) == [] and raw_unsafe(out) == []
    assert err == f"loopguard: error: {printable(str(missing))}: no such file or directory\n"
    assert out == "scanned 1 file: 0 with loops, 0 without, 1 unreadable\n"


# --------------------------------------------------------------------------- eval


def test_eval_prints_no_control_or_bidi_code_point(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    unit = "Let me check the cache again." + BAD + " "
    text_record = {"text": unit * 60, "looping": False, "id": "rec" + BAD, "model": "m" + BAD, "task": "t" + BAD}
    call = {"tool": "grep" + BAD, "args": {"q": "x"}, "result": "same", "error": False}
    run_record = {"calls": [call] * 6, "label": "clean", "id": "run" + BAD, "agent": "a" + BAD, "model": "m" + BAD}
    path = tmp_path / "eval.jsonl"
    path.write_text(json.dumps(text_record) + "\n" + json.dumps(run_record) + "\n", encoding="utf-8")
    code = main(["eval", "--jobs", "1", "--by", "model", "--by", "agent", str(path)])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    assert raw_unsafe(out) == []
    lines = out.splitlines()
    assert f"    m{BAD_SHOWN} (1): clean cut 1/1 = 100.00% [20.65, 100.00], notice 0/1" in lines  # records by model
    assert f"    a{BAD_SHOWN} (1): clean deny/cancel 1/1, notice 1/1" in lines  # runs by agent
    worst_record = [line for line in lines if line.startswith("    1. rec")]
    assert len(worst_record) == 1 and worst_record[0].startswith(f"    1. rec{BAD_SHOWN} · cut · ")
    worst_run = [line for line in lines if line.startswith("    1. run")]
    assert worst_run == [
        f"    1. run{BAD_SHOWN} · 6 calls · first deny at call 2 (repeat, tool grep{BAD_SHOWN}) · 3 deny/cancel "
        "(locked, repeat, repeat_streak)"
    ]
    assert not any("LOOP" in line and not line.startswith("    ") for line in lines)  # no forged report line
    assert main(["eval", "--json", "--jobs", "1", str(path)]) == 0
    out, _ = capsys.readouterr()
    assert out.isascii() and len(out.splitlines()) == 1


def test_eval_case_table_escapes_file_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import io

    from rich.console import Console

    from loopguard.evaluate import evaluate, load_cases, render_rich_table

    name = "case[bold red]" + BAD + "[link=x].txt"  # rich markup and unsafe characters (not NUL or /)
    (tmp_path / name).write_text("A short answer that does not loop.\n", encoding="utf-8")
    (tmp_path / "index.json").write_text(
        json.dumps([{"file": name, "kind": "text", "verdict": "not-loop"}]), encoding="utf-8"
    )
    assert main(["eval", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert err == "" and raw_unsafe(out) == []
    table = out.splitlines()
    assert table[0].split() == ["file", "kind", "verdict", "outcome", "at", "latency", "detector"]
    assert table[1].startswith(printable(name) + "  ")  # the one case row, its name escaped
    assert table[1].split()[-5:] == ["not-loop", "clean", "-", "-", "-"]
    # the rich table a terminal gets: cells are escaped and never read as markup
    buffer = io.StringIO()
    Console(file=buffer, width=400, force_terminal=False, color_system=None).print(
        render_rich_table(evaluate(load_cases(tmp_path), "default"))
    )
    shown = buffer.getvalue()
    assert raw_unsafe(shown) == []
    assert printable(name) in shown


# --------------------------------------------------------------------------- log records and errors


def test_log_records_and_brake_errors_escape_tool_names(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from loopguard import LoopBrake, LoopBrakeError, ToolGuard, ToolLoopCancelled, wrap_tool

    tool = "grep" + BAD
    caplog.set_level(logging.DEBUG, logger="loopguard")
    guard = ToolGuard()

    def body(q: str) -> str:
        return "same"

    wrapped = wrap_tool(body, guard=guard, tool=tool)
    with pytest.raises(ToolLoopCancelled):
        for _ in range(10):
            wrapped(q="x")
    brake = LoopBrake(2)
    brake.check(tool, {}, session_id="s" + BAD)
    with pytest.raises(LoopBrakeError) as info:
        brake.check(tool, {}, session_id="s" + BAD)
    messages = [record.getMessage() for record in caplog.records]
    assert len(messages) >= 5
    assert [m for m in messages if raw_unsafe(m)] == []
    assert f"deny repeat: {BAD_SHOWN.join(['grep', ''])} (call 2)" in messages  # ToolGuard's deny
    assert any(m.startswith(f"repeat streak: grep{BAD_SHOWN} requested ") for m in messages)
    assert f"loop brake denied tool grep{BAD_SHOWN}: call " in messages[-1]
    quoted = f'"grep{BAD_SHOWN}"'
    assert raw_unsafe(str(info.value)) == [] and str(info.value).startswith(f"loop brake: tool {quoted} called 2 times")
    assert info.value.tool_name == tool  # the attribute keeps the name as given
