"""``loopguard clean``: prune / drop / flag stored loops, with backup, --dry-run, --undo (issue 20, item 2)."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from loopguard import clean
from loopguard.cli import main, scan_file, scan_message
from loopguard.config import TextConfig
from loopguard.logs import Message
from loopguard.session import Session
from loopguard.stream import StreamGuard

sys.path.insert(0, str(Path(__file__).parent))
from conftest import DATA, shared_data

REAL = DATA / "real"
BENCH_LINES = 150  # the first lines of each bench file: each holds loops, and the test stays fast
LOOP = "Let me think about the plan first. " + "I need to check the value again and recompute the total sum now. " * 40
OLD = time.time() - 3600


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _age(root: Path) -> None:
    for path in root.rglob("*"):
        if path.is_file():
            os.utime(path, (OLD, OLD))


def _hashes(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): _sha(p) for p in sorted(root.rglob("*")) if p.is_file()}


def _text_loops(path: Path) -> int:
    return scan_file(str(path), TextConfig()).counts()["text loops"]


@pytest.fixture
def real_copies(tmp_path: Path) -> Path:
    """Copies of every format of ``real/``: bench (first lines), reasoning, claude-code, swe-agent, agentbench."""
    root = tmp_path / "real"
    for folder, pattern in (("reasoning", "*.jsonl"), ("claude-code", "*.jsonl"), ("swe-agent", "*.traj")):
        (root / folder).mkdir(parents=True)
        for path in sorted((REAL / folder).glob(pattern)):
            shutil.copyfile(path, root / folder / path.name)
    (root / "bench").mkdir()
    for path in sorted((REAL / "bench").glob("*.jsonl")):
        with open(path, "rb") as src, open(root / "bench" / path.name, "wb") as dst:
            for _ in range(BENCH_LINES):
                dst.write(src.readline())
    (root / "agentbench").mkdir()
    shutil.copyfile(REAL / "agentbench" / "tau2_openai-gpt-4.x.jsonl.gz", root / "agentbench" / "tau2.jsonl.gz")
    with gzip.open(REAL / "agentbench" / "tau2_openai-gpt-4.x.jsonl.gz", "rb") as src:  # recorded runs, plain
        (root / "agentbench" / "tau2.jsonl").write_bytes(src.read())
    _age(root)
    return root


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    code = main(["clean", "--json", *argv])
    return code, json.loads(capsys.readouterr().out)


def _by_name(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {Path(item["path"]).name: item for item in report["files"]}


# --------------------------------------------------------------------------- the real formats


@shared_data
def test_dry_run_changes_nothing(real_copies: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = _hashes(real_copies)
    code, report = _run(capsys, "--dry-run", str(real_copies))
    assert code == 1  # something to clean, as scan's "loops found"
    assert _hashes(real_copies) == before
    assert not list(real_copies.rglob(clean.BACKUP_FOLDER))
    files = _by_name(report)
    for name in [p.name for p in (real_copies / "bench").glob("*.jsonl")] + [
        p.name for p in (real_copies / "reasoning").glob("*.jsonl")
    ]:
        assert files[name]["status"] == "would clean" and files[name]["pruned"] > 0
        assert files[name]["removed_code_points"] > 0
    assert files["eps.traj"]["status"] == "not cleanable"
    assert files["eps.traj"]["not_cleanable"] == {"tool-call loops": 1}
    assert files["tau2.jsonl.gz"]["status"] == "not cleanable"
    runs = scan_file(str(real_copies / "agentbench" / "tau2.jsonl"), TextConfig()).tool_runs
    assert files["tau2.jsonl"]["format"] == "tool-call-records" and files["tau2.jsonl"]["status"] == "not cleanable"
    assert files["tau2.jsonl"]["not_cleanable"] == {"tool-call loops": sum(run.loop for run in runs)}
    for path in (real_copies / "claude-code").glob("*.jsonl"):  # no text loop in these sessions
        assert files[path.name]["status"] == "clean"


@shared_data
def test_clean_then_scan_then_undo(real_copies: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = _hashes(real_copies)
    originals = {p: p.read_bytes() for p in real_copies.rglob("*") if p.is_file()}
    loop_lines = {}
    for path in originals:
        if path.suffix == ".jsonl":
            report = scan_file(str(path), TextConfig())
            loop_lines[path] = {f.where["line"] for f in report.loops}
    code, report = _run(capsys, str(real_copies))
    assert code == 0
    files = _by_name(report)
    cleaned = [p for p in originals if files[p.name]["status"] == "cleaned"]
    assert {p.parent.name for p in cleaned} == {"bench", "reasoning"}
    assert sum(files[p.name]["pruned"] for p in cleaned) == sum(len(loop_lines[p]) for p in cleaned)
    for path, data in originals.items():
        if path not in cleaned:
            assert path.read_bytes() == data  # never touched
            continue
        assert _text_loops(path) == 0  # the product's own scan finds no text loop left
        old, new = data.split(b"\n"), path.read_bytes().split(b"\n")
        assert len(old) == len(new)
        for number, (a, b) in enumerate(zip(old, new), 1):
            if number not in loop_lines[path]:
                assert a == b  # byte-identical
            else:
                assert a != b
                assert list(json.loads(a)) == list(json.loads(b))  # key order kept
    manifests = sorted(real_copies.rglob(clean.MANIFEST))
    assert len(manifests) == 2  # one backup folder per folder of cleaned files
    manifest = json.loads(manifests[0].read_text(encoding="utf-8"))
    assert manifest["loopguard_version"] and manifest["options"]["action"] == "prune"
    entry = manifest["files"][0]
    assert entry["sha256_before"] == before[str(Path(entry["path"]).relative_to(real_copies))]
    assert entry["sha256_after"] == _sha(Path(entry["path"]))
    assert main(["clean", "--undo", *map(str, (m.parent for m in manifests))]) == 0
    capsys.readouterr()
    after = {k: v for k, v in _hashes(real_copies).items() if clean.BACKUP_FOLDER not in k}
    assert after == before  # byte-identical again


@shared_data
def test_marker_is_the_live_guards(real_copies: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = real_copies / "reasoning" / "cot-loop_qwen3-1.7b_gpqa.jsonl"
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    code, report = _run(capsys, str(path))
    assert code == 0 and report["files"][0]["pruned"] > 0
    cleaned = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    checked = 0
    for record, after in zip(records, cleaned):
        field = "text" if "text" in record else next(k for k in ("output", "response", "completion") if k in record)
        found = scan_message(Message(0, {}, reasoning=record[field]), TextConfig())
        if not found:
            assert after == record
            continue
        guard = StreamGuard(Session())  # the live guard's own prune of the same text
        _, removed, marker, kept = guard._prune(record[field], found[0].detection)
        guard.finish()
        assert removed > 0 and marker.strip().startswith("〔") and str(removed) in marker
        assert after[field] == kept
        assert after[field].endswith(marker)
        checked += 1
    assert checked == report["files"][0]["pruned"]


@shared_data
def test_appended_during_the_run_is_refused(
    real_copies: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = real_copies / "reasoning" / "zeroeval_gemma-2-2b-it_math-l5.jsonl"
    line = b'{"id": "late", "text": "written by the host while clean ran"}\n'

    def append(name: str) -> None:
        with open(name, "ab") as fh:
            fh.write(line)

    original = path.read_bytes()
    monkeypatch.setattr(clean, "_before_replace", append)
    code, report = _run(capsys, str(path))
    assert code == 2
    assert report["files"][0]["status"] == "refused" and "changed while" in report["files"][0]["reason"]
    assert path.read_bytes() == original + line  # the host's write is kept, nothing replaced
    os.utime(path, (time.time() - 3600, time.time() - 3600))
    code, report = _run(capsys, "--force", str(path))  # --force never loses what the host wrote
    assert code == 2 and "changed while" in report["files"][0]["reason"]
    assert path.read_bytes() == original + line + line
    assert not [p for p in real_copies.rglob("*") if p.is_file() and clean.BACKUP_FOLDER in str(p)]
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".loopguard-tmp")]
    assert not (path.parent / clean.BACKUP_FOLDER).exists()  # no empty backup folder left either


@shared_data
def test_touched_during_the_run_is_refused_unless_forced(
    real_copies: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the mtime changed between the read and the replace (the content is the same): refused,
    and cleaned with --force."""
    path = real_copies / "reasoning" / "zeroeval_gemma-2-2b-it_math-l5.jsonl"
    original = path.read_bytes()
    monkeypatch.setattr(clean, "_before_replace", lambda name: os.utime(name, (1.0, 1.0)))
    code, report = _run(capsys, str(path))
    assert code == 2 and "touched while" in report["files"][0]["reason"] and "--force" in report["files"][0]["reason"]
    assert path.read_bytes() == original
    code, report = _run(capsys, "--force", str(path))
    assert code == 0 and report["files"][0]["status"] == "cleaned" and report["files"][0]["pruned"] > 0
    assert path.read_bytes() != original


@shared_data
def test_recently_modified_file_is_refused(real_copies: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = real_copies / "reasoning" / "cot-loop_qwen3-1.7b_gpqa.jsonl"
    original = path.read_bytes()
    os.utime(path)  # modified now: maybe still being written
    code, report = _run(capsys, str(path))
    assert code == 2 and report["files"][0]["status"] == "refused" and "--force" in report["files"][0]["reason"]
    assert path.read_bytes() == original
    code, report = _run(capsys, "--force", str(path))
    assert code == 0 and report["files"][0]["status"] == "cleaned"


# --------------------------------------------------------------------------- synthetic formats


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    os.utime(path, (OLD, OLD))
    return path


def test_chat_lines_prune_keeps_tool_pairs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = [
        json.dumps({"role": "user", "content": "hi"}),
        json.dumps(
            {
                "role": "assistant",
                "content": LOOP,
                "tool_calls": [{"id": "c1", "function": {"name": "ls", "arguments": "{}"}}],
            }
        ),
        json.dumps({"role": "tool", "tool_call_id": "c1", "content": "a.txt"}),
        json.dumps(
            {
                "role": "assistant",
                "content": [{"type": "text", "text": LOOP[:200]}, {"type": "text", "text": LOOP[200:]}],
            }
        ),
    ]
    path = _write(tmp_path / "chat.jsonl", lines)
    code, report = _run(capsys, str(path))
    assert code == 0 and report["files"][0]["format"] == "chat" and report["files"][0]["pruned"] == 2
    new = path.read_text(encoding="utf-8").splitlines()
    assert new[0] == lines[0] and new[2] == lines[2]
    assert json.loads(new[1])["tool_calls"] == json.loads(lines[1])["tool_calls"]  # the pair stays
    assert len(json.loads(new[3])["content"]) == 1  # the later part of the channel went
    assert _text_loops(path) == 0
    # drop: the message with a tool call cannot go without orphaning its answer
    path = _write(tmp_path / "chat2.jsonl", lines)
    code, report = _run(capsys, "--action", "drop", str(path))
    assert code == 0 and report["files"][0]["dropped"] == 1
    assert report["files"][0]["not_cleanable"] == {"text loops": 1}
    assert path.read_text(encoding="utf-8").splitlines() == lines[:3]


def test_chat_records_and_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    record = {"id": 7, "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": LOOP}]}
    quiet = {"id": 8, "messages": [{"role": "assistant", "content": "fine"}]}
    lines = [json.dumps(record, ensure_ascii=True, separators=(",", ":")), json.dumps(quiet)]
    path = _write(tmp_path / "records.jsonl", lines)
    code, report = _run(capsys, "--action", "flag", str(path))
    assert code == 0 and report["files"][0]["flagged"] == 1
    new = path.read_text(encoding="utf-8").splitlines()
    flagged = json.loads(new[0])
    assert flagged["loopguard"]["loop"] is True and flagged["loopguard"]["channel"] == "text"
    assert list(flagged) == ["id", "messages", "loopguard"] and new[1] == lines[1]
    assert new[0] == json.dumps(flagged, ensure_ascii=True, separators=(",", ":"))  # the line's own style
    path = _write(tmp_path / "records2.jsonl", lines)
    assert main(["clean", str(path), "--action", "drop"]) == 0
    assert path.read_text(encoding="utf-8").splitlines() == [lines[1]]


def test_recorded_runs_flag_or_drop_a_looping_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    grep = {"tool": "grep", "args": {"pattern": "TODO"}, "result": "no matches"}
    lines = [
        json.dumps({"id": "run-1", "label": "loop", "calls": [grep] * 4}),  # a loop: 4 identical calls
        json.dumps({"id": "run-2", "calls": [grep, {**grep, "args": {"pattern": "FIXME"}}]}),
    ]
    path = _write(tmp_path / "runs.jsonl", lines)
    code, report = _run(capsys, str(path))  # prune: a call and its result stay paired
    assert code == 0 and path.read_text(encoding="utf-8").splitlines() == lines
    assert report["files"][0]["not_cleanable"] == {"tool-call loops": 1}
    code, report = _run(capsys, "--action", "flag", str(path))
    assert code == 0 and report["files"][0]["flagged"] == 1
    first, second = path.read_text(encoding="utf-8").splitlines()
    assert json.loads(first) == {**json.loads(lines[0]), "loopguard": {"loop": True, "kind": "tool_run", "calls": 4}}
    assert second == lines[1]  # byte-identical
    (tmp_path / "drop").mkdir()
    path = _write(tmp_path / "drop" / "runs.jsonl", lines)
    code, report = _run(capsys, "--action", "drop", str(path))
    assert code == 0 and report["files"][0]["dropped"] == 1
    assert path.read_text(encoding="utf-8").splitlines() == [lines[1]]
    (manifest,) = (tmp_path / "drop").rglob(clean.MANIFEST)
    assert main(["clean", "--undo", str(manifest)]) == 0
    assert path.read_text(encoding="utf-8").splitlines() == lines


def test_claude_code_prune_across_blocks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def assistant(content: list[dict[str, Any]], uuid: str) -> str:
        message = {"id": "m1", "role": "assistant", "content": content}
        return json.dumps({"type": "assistant", "uuid": uuid, "message": message}, ensure_ascii=False)

    lines = [
        json.dumps({"type": "system", "subtype": "init"}),
        assistant([{"type": "text", "text": LOOP[:300]}], "u1"),
        assistant([{"type": "text", "text": LOOP[300:]}], "u2"),
        assistant([{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}], "u3"),
        json.dumps(
            {
                "type": "user",
                "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]},
            }
        ),
    ]
    path = _write(tmp_path / "session.jsonl", lines)
    code, report = _run(capsys, str(path))
    assert code == 0 and report["files"][0]["format"] == "claude-code" and report["files"][0]["pruned"] == 1
    new = path.read_text(encoding="utf-8").splitlines()
    assert len(new) == len(lines) and new[3:] == lines[3:] and new[0] == lines[0]
    assert _text_loops(path) == 0
    code, report = _run(capsys, "--action", "drop", str(_write(tmp_path / "s2.jsonl", lines)))
    assert report["files"][0]["not_cleanable"] == {"text loops": 1} and report["files"][0]["dropped"] == 0


def test_bad_line_is_never_touched(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path / "bad.jsonl", [json.dumps({"text": LOOP}), "{not json"])
    original = path.read_bytes()
    code, report = _run(capsys, str(path))
    assert code == 2 and report["files"][0]["status"] == "unreadable" and "bad.jsonl:2" in report["files"][0]["reason"]
    assert path.read_bytes() == original and not (tmp_path / clean.BACKUP_FOLDER).exists()


def test_undo_refuses_a_file_changed_since(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path / "data.jsonl", [json.dumps({"text": LOOP}), json.dumps({"text": "ok"})])
    original = path.read_bytes()
    backups = tmp_path / "backups"
    assert main(["clean", "--backup-dir", str(backups), str(path)]) == 0
    assert (backups / clean.MANIFEST).is_file()
    with open(path, "ab") as fh:
        fh.write(b'{"text": "new"}\n')
    changed = path.read_bytes()
    capsys.readouterr()
    assert main(["clean", "--undo", str(backups)]) == 2
    assert "changed since the clean" in capsys.readouterr().err and path.read_bytes() == changed
    assert main(["clean", "--undo", "--force", str(backups / clean.MANIFEST)]) == 0
    assert path.read_bytes() == original


def test_undo_of_what_is_no_manifest_says_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--undo of a JSON file that is no manifest, or of a folder without one: one line each on
    standard error with the reason, nothing on standard output, exit 2, nothing written."""
    other = tmp_path / "other.json"
    other.write_text('{"files": 3}')
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["clean", "--undo", str(other), str(empty)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [
        f"loopguard: error: {other}: unreadable: not a loopguard manifest: 'int' object is not iterable",
        f"loopguard: error: {empty}: unreadable: no backup manifest here (give a manifest.json or its backup folder)",
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty", "other.json"] and not list(empty.iterdir())


def test_compressed_and_unknown_are_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gz = tmp_path / "d.jsonl.gz"
    gz.write_bytes(gzip.compress((json.dumps({"text": LOOP}) + "\n").encode()))
    os.utime(gz, (OLD, OLD))
    code, report = _run(capsys, str(gz))
    assert code == 0 and report["files"][0]["status"] == "not cleanable"
    code, report = _run(capsys, str(tmp_path / "missing.jsonl"))
    assert code == 2 and report["files"][0]["status"] == "unreadable"


def test_output_is_printable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path / "evil\x1b[31m.jsonl", [json.dumps({"text": LOOP})])
    assert main(["clean", "--dry-run", str(path)]) == 1
    out = capsys.readouterr().out
    assert "\x1b" not in out and "would clean" in out


def test_symbolic_link_target_is_cleaned(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = _write(tmp_path / "data.jsonl", [json.dumps({"text": LOOP})])
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    code, report = _run(capsys, "--backup-dir", str(tmp_path / "b"), str(link))
    assert code == 0 and report["files"][0]["status"] == "cleaned" and report["files"][0]["path"] == str(link)
    assert link.is_symlink() and _text_loops(target) == 0
    assert main(["clean", "--undo", str(tmp_path / "b")]) == 0
    assert json.loads(target.read_text(encoding="utf-8")) == {"text": LOOP}
