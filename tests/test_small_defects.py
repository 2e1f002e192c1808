"""Issue 21, item 6: the smaller defects, each with a regression test asserting the right value."""

from __future__ import annotations

import copy
import errno
import gzip
import hashlib
import json
import os
import pickle
import zlib
from pathlib import Path
from typing import Any

import pytest
import zstandard

import loopguard
from loopguard import (
    ConfigError,
    InputError,
    InvalidMaxRepeatsError,
    LoopBrake,
    LoopBrakeError,
    LoopBrakeStoreError,
    LoopGuardCancelled,
    StoreUnavailable,
    StreamOutcome,
    TextConfig,
    ToolCallDenied,
    ToolGuard,
    ToolLoopCancelled,
    scan_text,
    wrap_tool,
)
from loopguard.brake import ENV_MAX_REPEATS
from loopguard.cli import main
from loopguard.logs import expand_paths, read_log
from loopguard.logs.sniff import _READ
from loopguard.stream import StreamToolCall

CANARY = "CanaryPw-7f3e91"


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# --------------------------------------------------------------------------- unreadable directories


def refuse_listing(monkeypatch: pytest.MonkeyPatch, refused: Path) -> None:
    """``os.scandir`` of ``refused`` raises PermissionError, as chmod 000 does for a non-root user
    (root reads through chmod 000, so the test does not depend on it)."""
    real = os.scandir

    def scandir(path: Any = ".") -> Any:
        if os.fspath(path) == str(refused):
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)


def make_tree(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "logs"
    for name in ("ok/a.txt", "sub/b.txt"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("A short answer.\n", encoding="utf-8")
    return root, root / "sub"


def test_unreadable_directory_is_an_error_with_its_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, sub = make_tree(tmp_path)
    refuse_listing(monkeypatch, sub)
    found = expand_paths([root])
    assert [(path, None if error is None else str(error)) for path, error in found] == [
        (str(root / "ok" / "a.txt"), None),
        (str(sub), f"{sub}: cannot list this directory: permission denied"),
    ]
    code, out, err = run(capsys, "scan", root)
    assert code == 2  # was 0, with "scanned 1 file" and nothing on stderr
    assert err == f"loopguard: error: {sub}: cannot list this directory: permission denied\n"
    assert out == "scanned 2 files: 0 with loops, 1 without, 1 unreadable\n"
    # the refused directory given itself
    code, out, err = run(capsys, "scan", sub)
    assert (code, err) == (2, f"loopguard: error: {sub}: cannot list this directory: permission denied\n")


def test_unreadable_directory_in_eval_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "records"
    (root / "sub").mkdir(parents=True)
    (root / "a.jsonl").write_text(json.dumps({"text": "fine", "looping": False}) + "\n", encoding="utf-8")
    refuse_listing(monkeypatch, root / "sub")
    code, out, err = run(capsys, "eval", "--jobs", "1", root)
    assert (code, out) == (2, "")
    assert err == f"loopguard: error: {root / 'sub'}: cannot list this directory: permission denied\n"


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX permissions")
def test_chmod_000_directory_when_it_really_cannot_be_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root, sub = make_tree(tmp_path)
    sub.chmod(0)
    try:
        readable = os.access(sub, os.R_OK)  # root (and CAP_DAC_OVERRIDE) reads it anyway
        code, out, err = run(capsys, "scan", root)
    finally:
        sub.chmod(0o755)
    if readable:
        assert (code, err) == (0, "") and out == "scanned 2 files: 0 with loops, 2 without, 0 unreadable\n"
    else:
        assert (code, err) == (2, f"loopguard: error: {sub}: cannot list this directory: permission denied\n")


# --------------------------------------------------------------------------- symbolic link loops


def test_self_referencing_symlink_is_a_symlink_loop(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    loop = tmp_path / "loop"
    loop.symlink_to("loop")  # ln -s loop loop
    (tmp_path / "dangling").symlink_to("nowhere")
    (tmp_path / "good.txt").write_text("A short answer.\n", encoding="utf-8")
    why = "a symbolic link loop (too many levels of symbolic links)"
    code, out, err = run(capsys, "scan", loop)
    assert (code, err) == (2, f"loopguard: error: {loop}: {why}\n")  # was "no such file or directory"
    assert out == "scanned 1 file: 0 with loops, 0 without, 1 unreadable\n"
    # met inside a walked directory (was skipped silently, exit 0)
    code, out, err = run(capsys, "scan", tmp_path)
    assert code == 2
    assert err.splitlines() == [
        f"loopguard: error: {tmp_path / 'dangling'}: a broken symbolic link",
        f"loopguard: error: {loop}: {why}",
    ]
    assert out == "scanned 3 files: 0 with loops, 1 without, 2 unreadable\n"
    code, out, err = run(capsys, "eval", loop)
    assert (code, err) == (2, f"loopguard: error: {loop}: {why}\n")
    assert (
        run(capsys, "scan", tmp_path / "missing")[2]
        == f"loopguard: error: {tmp_path / 'missing'}: no such file or directory\n"
    )


# --------------------------------------------------------------------------- pickling exceptions


def denied_and_cancelled() -> tuple[ToolCallDenied, ToolLoopCancelled]:
    guard = ToolGuard()

    def shell(command: str, password: str) -> str:
        return "same"

    wrapped = wrap_tool(shell, guard=guard, tool="shell", on_deny="raise")
    denied = cancelled = None
    for _ in range(8):
        try:
            wrapped(command="ls", password=CANARY)
        except ToolCallDenied as exc:
            denied = denied or exc
        except ToolLoopCancelled as exc:
            cancelled = exc
            break
    assert denied is not None and cancelled is not None
    return denied, cancelled


def cancelled_stream() -> tuple[LoopGuardCancelled, StreamOutcome]:
    detection = scan_text("The cache is stale, so I flush it. " * 40, "text", "rescue")[0]
    call = StreamToolCall(key=0, id="call_1", name="shell", arguments=json.dumps({"password": CANARY}))
    outcome = StreamOutcome(
        detection=detection, cut=35, channel="text", kept_text="The cache is stale, so I flush it. ", tool_calls=(call,)
    )
    outcome = StreamOutcome(**{**vars(outcome), "stopped": True, "cancelled": True, "rescues": 3})
    return LoopGuardCancelled(outcome), outcome


def attributes(error: BaseException) -> dict[str, Any]:
    return {"type": type(error), "args": error.args, "str": str(error), **vars(error)}


def test_every_public_exception_round_trips_through_pickle_and_copy() -> None:
    brake = LoopBrake(2)
    brake.check("search", {"q": CANARY})
    with pytest.raises(LoopBrakeError) as brake_info:
        brake.check("search", {"q": CANARY})
    denied, cancelled = denied_and_cancelled()
    errors: list[BaseException] = [
        ConfigError("window", 0, "an integer >= 1"),
        ConfigError("max_calls", -1, "an integer >= 1", owner="ToolGuardConfig"),
        InputError("invalid JSON: oops (column 3)", path="log.jsonl", line=7),
        InvalidMaxRepeatsError(0),
        InvalidMaxRepeatsError("3x", source=ENV_MAX_REPEATS),
        brake_info.value,
        LoopBrakeStoreError(
            tool_name="search", count=0, max_repeats=2, hash_prefix=brake_info.value.hash_prefix, session_id="s"
        ),
        denied,
        cancelled,
        ToolLoopCancelled("circuit_breaker", "circuit_breaker", "stop now", "shell", result={"out": 1}),
        StoreUnavailable("ConnectionError: Error 111 connecting to localhost:6391. Connection refused."),
    ]
    public = {obj for name in loopguard.__all__ if isinstance(obj := getattr(loopguard, name), type)}
    exceptions = {cls for cls in public if issubclass(cls, BaseException)}
    assert exceptions == {type(e) for e in errors} | {LoopGuardCancelled}  # LoopGuardCancelled: below
    for error in errors:
        for clone in (pickle.loads(pickle.dumps(error)), copy.copy(error), copy.deepcopy(error)):
            assert attributes(clone) == attributes(error), type(error)
    # the values that were garbled or failed before
    assert str(pickle.loads(pickle.dumps(InvalidMaxRepeatsError(0)))) == (
        "LoopBrake: max_repeats=0 is invalid: must be an integer >= 1"
    )
    assert pickle.loads(pickle.dumps(denied)).decision == denied.decision
    assert denied.decision.action == "deny" and "[REDACTED]" in str(denied)
    for error in (brake_info.value, denied, cancelled):
        assert CANARY.encode() not in pickle.dumps(error)  # no argument value in the pickle


def test_loop_guard_cancelled_pickles_without_tool_call_arguments() -> None:
    error, outcome = cancelled_stream()
    blob = pickle.dumps(error)
    assert CANARY.encode() not in blob
    clone = pickle.loads(blob)
    assert type(clone) is LoopGuardCancelled
    assert (clone.args, str(clone)) == (error.args, str(error))
    assert str(clone) == (
        "loopguard: the stream looped again after 3 rescue(s) in a row; cut without resume (max_consecutive_rescues)"
    )
    # the outcome comes back whole but for the arguments' text
    stripped = StreamToolCall(key=0, id="call_1", name="shell", arguments="")
    assert clone.outcome == StreamOutcome(**{**vars(outcome), "tool_calls": (stripped,)})
    assert error.outcome is outcome and outcome.tool_calls[0].arguments == json.dumps({"password": CANARY})
    assert copy.copy(error).outcome.tool_calls == (stripped,)


# --------------------------------------------------------------------------- TextConfig


@pytest.mark.parametrize(
    "config",
    [
        TextConfig(),
        TextConfig("fuse", window=500),
        TextConfig("rescue", enabled=["cycle"]),
        TextConfig(watch="text", skip_code_blocks=False),
    ],
    ids=repr,
)
def test_text_config_copies_and_pickles(config: TextConfig) -> None:
    assert copy.copy(config) is config  # immutable: the copy is the config itself
    assert copy.deepcopy(config) is config
    assert copy.deepcopy({"c": config})["c"] is config
    clone = pickle.loads(pickle.dumps(config))
    assert clone == config and clone is not config
    assert (clone.to_dict(), repr(clone), hash(clone)) == (config.to_dict(), repr(config), hash(config))
    with pytest.raises(AttributeError, match="immutable"):
        clone.window = 1  # type: ignore[misc]


# --------------------------------------------------------------------------- LoopBrake call ids


def test_unhashable_call_id_is_rejected_before_counting() -> None:
    brake = LoopBrake(3)
    assert brake.check("search", {"q": 1}, session_id="s", call_id="c1") == 1
    assert brake.check("search", {"q": 1}, session_id="s", call_id="c2") == 2
    for bad in ([1], {"id": 1}, {1}):
        with pytest.raises(
            TypeError, match=rf"^LoopBrake.check: call_id must be hashable .*, not {type(bad).__name__}$"
        ):
            brake.check("search", {"q": 1}, session_id="s", call_id=bad)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="call_id must be hashable"):
            brake.check("search", {"q": 1}, session_id="new", call_id=bad)  # type: ignore[arg-type]
    assert (brake.streak("s"), brake.streak("new"), len(brake)) == (2, 0, 1)  # nothing counted, no session made
    with pytest.raises(LoopBrakeError):  # the third identical call is still the third
        brake.check("search", {"q": 1}, session_id="s", call_id="c3")


# --------------------------------------------------------------------------- truncated archives


def prefix_decodable(blob: bytes, kind: str) -> bytes:
    if kind == "gz":
        return zlib.decompressobj(wbits=31).decompress(blob)
    return zstandard.ZstdDecompressor().decompressobj().decompress(blob)


@pytest.mark.parametrize("kind", ["zst", "gz"])
def test_truncated_archive_reports_the_line_it_broke_in(tmp_path: Path, kind: str) -> None:
    # hex digests hardly compress: many zstd blocks and gzip windows, each decodable on its own
    data = "".join(json.dumps({"text": hashlib.sha256(b"%d" % i).hexdigest()}) + "\n" for i in range(20000)).encode()
    whole = zstandard.ZstdCompressor().compress(data) if kind == "zst" else gzip.compress(data)
    lines = []
    for fraction in (0.25, 0.5, 0.9):
        cut = whole[: int(len(whole) * fraction)]
        path = tmp_path / f"cut-{fraction}.jsonl.{kind}"
        path.write_bytes(cut)
        with pytest.raises(InputError, match=r"corrupt (gzip|zstd) data") as info:
            read_log(path)
        readable = prefix_decodable(cut, kind)  # what any decoder gets out of the cut file
        assert data.startswith(readable) and len(readable) > 2 * _READ
        # the line it broke in, exactly (was: line 1, or up to a read of 8 KiB too early)
        assert info.value.line == readable.count(b"\n") + 1
        assert str(info.value).endswith(f" (after {len(readable)} bytes of decompressed data)")
        lines.append(info.value.line)
    assert 1 < lines[0] < lines[1] < lines[2] <= 20000
    # a file shorter than one zstd block has nothing decodable once cut: line 1, 0 bytes
    small = zstandard.ZstdCompressor().compress(data[:1000])
    (tmp_path / "small.jsonl.zst").write_bytes(small[:-3])
    with pytest.raises(InputError, match=r"\(after 0 bytes of decompressed data\)$") as info:
        read_log(tmp_path / "small.jsonl.zst")
    assert info.value.line == 1


def test_an_empty_tool_name_is_named_as_the_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A tool-call list entry or a chat tool call with ``""`` as its name: the error names the field
    (it was ``cannot read this log (TypeError); please report it``)."""
    calls = tmp_path / "calls.json"
    calls.write_text(json.dumps([{"tool": "", "args": {"a": 1}, "result": "x"}] * 3), encoding="utf-8")
    chat = tmp_path / "chat.jsonl"
    call = {"id": "c1", "type": "function", "function": {"name": "", "arguments": "{}"}}
    chat.write_text(json.dumps({"role": "assistant", "content": "", "tool_calls": [call]}) + "\n", encoding="utf-8")
    assert main(["scan", str(calls), str(chat)]) == 2
    err = capsys.readouterr().err
    assert f"{calls}: entry 0: 'tool' must be a non-empty string" in err
    assert f"{chat}:1: tool_calls[0].function.name must be a non-empty string" in err
