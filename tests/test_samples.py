"""Evidence samples (issue 20 item 4; seed 002 line ④): ``Session(dump_dir=...)``."""

from __future__ import annotations

import json
import logging
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from loopguard import Session
from loopguard.observe import samples
from loopguard.redact import redact_secrets

LOOP = "Wait, let me recheck the sum password=Hunter2Canary. "  # 53 code points
ARGS = {"pattern": "CanaryArgValue", "path": "src"}


def read_samples(folder: Path) -> list[dict[str, Any]]:
    assert samples.flush(10.0)
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.json"))]


def loop_until_cut(session: Session, channel: str = "reasoning", unit: str = LOOP) -> Any:
    """Feed ``unit`` until the session stops; the stopping verdict (with ``.fed``: units fed)."""
    for n in range(1, 201):
        verdict = session.feed(unit, channel)
        if verdict.stop:
            loop_until_cut.fed = n  # type: ignore[attr-defined]
            return verdict
    raise AssertionError("no cut")


def test_a_text_loop_cut_writes_one_redacted_sample_with_its_cut(tmp_path: Path) -> None:
    session = Session("conv-1", dump_dir=tmp_path)
    session.start_turn()
    verdict = loop_until_cut(session)
    fed = loop_until_cut.fed  # type: ignore[attr-defined]
    for _ in range(5):  # more of the loop in the same attempt: the stop is not sampled again
        session.feed(LOOP, "reasoning")
    (sample,) = read_samples(tmp_path)
    assert sample["format"] == 1
    assert (sample["event"], sample["action"], sample["rule"], sample["channel"]) == (
        "text_loop",
        "cut",
        "text_loop",
        "reasoning",
    )
    assert sample["kind"] == verdict.detection.kind
    assert sample["evidence"]["cut"] == verdict.detection.cut
    assert sample["evidence"]["position"] == verdict.detection.position
    assert (sample["session"], sample["turn"], sample["attempt"]) == ("conv-1", 1, 1)
    # the channel's whole text up to the stop (under 8,000 code points), redacted: the password
    # never reaches the disk
    assert (sample["text_start"], sample["text_chars"]) == (0, fed * len(LOOP))
    assert sample["text"] == redact_secrets(LOOP * fed)
    assert sample["text"].startswith("Wait, let me recheck the sum password=[REDACTED]")
    assert "Hunter2Canary" not in json.dumps(sample)


def test_the_text_is_the_tail_capped_at_dump_max_chars(tmp_path: Path) -> None:
    unit = "Now I will check the file again and again. "  # 43 code points, no secret
    session = Session("s", dump_dir=tmp_path, dump_max_chars=100)
    session.start_turn()
    loop_until_cut(session, "text", unit)
    (sample,) = read_samples(tmp_path)
    assert len(sample["text"]) == 100
    assert sample["text_start"] == sample["text_chars"] - 100
    whole = unit * (sample["text_chars"] // len(unit) + 1)
    assert sample["text"] == whole[sample["text_start"] : sample["text_chars"]]


def test_tool_samples_carry_names_and_numbers_never_arguments(tmp_path: Path) -> None:
    session = Session("conv-2", dump_dir=tmp_path)
    actions = []
    for _ in range(4):
        actions.append(session.tool_call("grep", ARGS).action)
        session.tool_result("grep", ARGS, "no matches for CanaryResultText")
    assert actions == ["allow", "allow", "deny", "allow"]
    got = read_samples(tmp_path)
    # call 2's result: a notice (repeat); call 3's deny is of the same kind in the same turn: not
    # sampled again; call 4's result: a notice of another kind (locked)
    assert [(s["event"], s["action"], s["kind"], s["call_index"]) for s in got] == [
        ("tool_result", "notice", "repeat", 1),
        ("tool_result", "notice", "locked", 3),
    ]
    text = "".join(p.read_text(encoding="utf-8") for p in tmp_path.glob("*.json"))
    assert "CanaryArgValue" not in text and "CanaryResultText" not in text
    assert all(s["tool"] == "grep" and s["channel"] == "tool" and "text" not in s and "reason" not in s for s in got)
    assert all(len(s["hash"]) == 12 for s in got)


def test_one_sample_per_turn_and_kind(tmp_path: Path) -> None:
    session = Session("s", dump_dir=tmp_path)
    actions = []
    for _turn in range(2):
        session.start_turn()
        for _attempt in range(3):  # retries loop the same way; every 2nd strike cancels
            session.start_attempt()
            actions.append(loop_until_cut(session).action)
            session.end_attempt()
    assert actions == ["cut", "cancel", "cut", "cancel", "cut", "cancel"]
    got = read_samples(tmp_path)
    # the first stop of each turn only (its kind, cycle, is the same in every attempt)
    assert [(s["turn"], s["attempt"], s["action"], s["kind"]) for s in got] == [
        (1, 1, "cut", "cycle"),
        (2, 1, "cancel", "cycle"),
    ]


def test_the_folder_keeps_the_newest_samples_and_nothing_else_is_touched(tmp_path: Path) -> None:
    foreign = tmp_path / "notes.json"
    foreign.write_text("{}", encoding="utf-8")
    for i in range(6):
        session = Session(f"s{i}", dump_dir=tmp_path, dump_keep=3)
        session.start_turn()
        loop_until_cut(session)
        assert samples.flush(10.0)  # one after another: the modification times are in order
    got = read_samples(tmp_path)
    assert sorted(s["session"] for s in got if "format" in s) == ["s3", "s4", "s5"]
    assert foreign.read_text(encoding="utf-8") == "{}"


def test_a_failed_write_is_logged_and_counted_and_the_stream_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x", encoding="utf-8")
    before = samples.counts()
    samples._WARNED[0] = float("-inf")  # the warning is rate-limited per process
    with caplog.at_level(logging.WARNING, logger="loopguard.samples"):
        plain = Session("s")
        dumped = Session("s", dump_dir=blocker / "samples")  # a folder under a file: cannot be made
        for s in (plain, dumped):
            s.start_turn()
        verdicts = [(plain.feed(LOOP, "reasoning").action, dumped.feed(LOOP, "reasoning").action) for _ in range(40)]
        assert samples.flush(10.0)
    assert all(a == b for a, b in verdicts) and ("cut", "cut") in verdicts
    after = samples.counts()
    assert after["failed"] == before["failed"] + 1 and after["written"] == before["written"]
    (record,) = [r for r in caplog.records if r.name == "loopguard.samples"]
    assert record.levelno == logging.WARNING
    assert "NotADirectoryError" in record.getMessage() or "FileExistsError" in record.getMessage()
    assert "Hunter2Canary" not in record.getMessage()


def test_a_full_queue_drops_the_sample_and_counts_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stalled: queue.Queue[Any] = queue.Queue(1)
    stalled.put(None)  # full, and no writer takes from it
    monkeypatch.setattr(samples, "_QUEUE", stalled)
    alive = threading.Thread(target=lambda: None)
    monkeypatch.setattr(alive, "is_alive", lambda: True)
    monkeypatch.setattr(samples, "_WRITER", [alive])
    before = samples.counts()["dropped"]
    session = Session("s", dump_dir=tmp_path)
    session.start_turn()
    assert loop_until_cut(session).action == "cut"
    assert samples.counts()["dropped"] == before + 1
    assert list(tmp_path.iterdir()) == []


def test_the_metric_counts_written_samples(tmp_path: Path) -> None:
    prometheus_client = pytest.importorskip("prometheus_client")
    from loopguard.observe import disable_metrics, enable_metrics

    registry = prometheus_client.CollectorRegistry()
    enable_metrics(registry)
    try:
        session = Session("s", dump_dir=tmp_path)
        session.start_turn()
        loop_until_cut(session)
        assert samples.flush(10.0)
    finally:
        disable_metrics()
    assert registry.get_sample_value("loopguard_samples_total", {"outcome": "written"}) == 1.0


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"dump_dir": 3}, TypeError, "dump_dir must be a path"),
        ({"dump_dir": ""}, ValueError, "dump_dir must not be empty"),
        ({"dump_dir": "x", "dump_keep": 0}, ValueError, "dump_keep must be at least 1, got 0"),
        ({"dump_dir": "x", "dump_max_chars": 1.5}, TypeError, "dump_max_chars must be an int, not float"),
    ],
)
def test_bad_dump_arguments_are_named(kwargs: dict[str, Any], error: type[Exception], words: str) -> None:
    with pytest.raises(error, match=words):
        Session("s", **kwargs)


def test_without_dump_dir_the_sample_writer_is_never_imported() -> None:
    code = (
        "import sys\n"
        "from loopguard import Session\n"
        "s = Session('s'); s.start_turn()\n"
        f"v = [s.feed({LOOP!r}, 'reasoning') for _ in range(40)]\n"
        "assert any(x.stop for x in v)\n"
        "print('loopguard.observe.samples' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
