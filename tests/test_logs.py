"""Log readers, format sniffing, compression and tool-call runs."""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import zstandard

from conftest import DATA, shared_data
from loopguard import InputError
from loopguard.logs import ToolCall, expand_paths, open_maybe_compressed, read_log
from loopguard.toolruns import call_hash, find_runs, hash_prefix

REAL = DATA / "real"
CASES = DATA / "cases"


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# --------------------------------------------------------------------------- call_hash


def test_call_hash_is_sha256_of_tool_newline_sorted_compact_json() -> None:
    expected = sha('grep\n{"path":"src/","pattern":"TODO"}')
    assert call_hash("grep", {"pattern": "TODO", "path": "src/"}) == expected
    assert call_hash("grep", '{"pattern": "TODO", "path": "src/"}') == expected  # JSON string parsed first
    assert call_hash("grep", '{"path":"src/","pattern":"TODO"}') == expected


def test_call_hash_of_non_json_string_hashes_the_string_value() -> None:
    assert call_hash("submit", "submit flag{x}\n") == sha('submit\n"submit flag{x}\\n"')
    assert call_hash("t", {"k": "é"}) == sha('t\n{"k":"é"}')  # ensure_ascii=False
    assert call_hash("t", None) == sha("t\nnull")
    assert hash_prefix(call_hash("t", None)) == sha("t\nnull")[:12]


def test_call_hash_separates_tools_and_nested_key_order() -> None:
    assert call_hash("a", {"x": {"b": 1, "a": [1, {"d": 2, "c": 3}]}}) == sha('a\n{"x":{"a":[1,{"c":3,"d":2}],"b":1}}')
    assert call_hash("read", {"p": 1}) != call_hash("grep", {"p": 1})


# --------------------------------------------------------------------------- find_runs


def test_find_runs_reports_runs_of_two_or_more_with_loop_flag_and_results() -> None:
    calls = [
        ToolCall("ls", {"d": "/"}, "a", where={"call": 0}),
        ToolCall("ls", '{"d": "/"}', "a", where={"call": 1}),  # same call, args as a JSON string
        ToolCall("ls", {"d": "/"}, "a", where={"call": 2}),
        ToolCall("cat", {"f": "x"}, "1", where={"call": 3}),
        ToolCall("cat", {"f": "x"}, "2", where={"call": 4}),
        ToolCall("cat", {"f": "y"}, "2", where={"call": 5}),
        ToolCall("rm", {}, None, where={"call": 6}),
        ToolCall("rm", {}, "ok", where={"call": 7}),
        ToolCall("rm", {}, "ok", True, where={"call": 8}),
    ]
    runs = find_runs(calls)
    assert [(r.tool, r.calls, r.count, r.results_identical, r.loop) for r in runs] == [
        ("ls", (0, 1, 2), 3, True, True),
        ("cat", (3, 4), 2, False, False),
        ("rm", (6, 7, 8), 3, None, True),  # one result missing -> unknown
    ]
    assert runs[0].to_dict() == {
        "tool": "ls",
        "count": 3,
        "calls": [0, 1, 2],
        "where": [{"call": 0}, {"call": 1}, {"call": 2}],
        "hash_prefix": call_hash("ls", {"d": "/"})[:12],
        "results_identical": True,
        "loop": True,
    }
    # same result text but a different error flag is a different result
    assert find_runs(calls[7:9])[0].results_identical is False
    assert find_runs(calls, min_count=3, max_repeats=4)[0].loop is False
    # three identical calls whose results change (polling with progress) are not a loop
    polling = [ToolCall("status", {}, f"{i}/3 ready", where={"call": i}) for i in range(3)]
    assert [(r.count, r.results_identical, r.loop) for r in find_runs(polling)] == [(3, False, False)]
    assert find_runs([]) == []


TOOL_CASE_RUNS = {  # file -> [(tool, first call, last call, results identical)]
    "035_tool-same-failing-build-5x.json": [("shell", 2, 6, True)],
    "037_tool-poll-unchanged-10x.json": [("get_deployment_status", 1, 10, True)],
    "040_tool-failing-request-volatile-ids.json": [("http_request", 1, 6, False)],
    "045_tool-rollout-poll-with-progress.json": [("shell", 1, 7, False)],
    "048_tool-two-identical-failures-then-fix.json": [("shell", 0, 1, True)],
}


@shared_data
def test_runs_in_every_tool_call_case() -> None:
    files = sorted(CASES.glob("*_tool-*.json"))
    assert len(files) == 15
    for path in files:
        log = read_log(path)
        assert log.format == "tool-calls"
        calls = log.conversations[0].tool_calls()
        assert len(calls) == len(json.loads(path.read_text(encoding="utf-8")))
        runs = [(r.tool, r.calls[0], r.calls[-1], r.results_identical) for r in find_runs(calls)]
        assert runs == TOOL_CASE_RUNS.get(path.name, []), path.name


# --------------------------------------------------------------------------- SWE-agent


@shared_data
def test_swe_agent_eps_steps_and_actions() -> None:
    log = read_log(REAL / "swe-agent" / "eps.traj")
    doc = json.loads((REAL / "swe-agent" / "eps.traj").read_text(encoding="utf-8"))
    assert log.format == "swe-agent"
    (conversation,) = log.conversations
    assert [m.where for m in conversation.messages] == [{"step": k} for k in range(14)]
    assert [m.text for m in conversation.messages] == [s["thought"] for s in doc["trajectory"]]
    calls = conversation.tool_calls()
    assert [c.where["step"] for c in calls] == list(range(14))
    assert [c.name for c in calls[8:14]] == ["submit"] * 6
    assert [c.result for c in calls[9:13]] == ["Wrong flag!"] * 4
    (run,) = find_runs(calls)
    assert (run.tool, run.calls, run.results_identical, run.loop) == ("submit", (9, 10, 11, 12), True, True)
    assert run.where == ({"step": 9}, {"step": 10}, {"step": 11}, {"step": 12})


@shared_data
@pytest.mark.parametrize(
    ("name", "steps", "runs"),
    [
        ("pydicom__pydicom-1458.traj", 12, [("edit", (6, 7), True)]),
        ("marshmallow-code__marshmallow-1867.traj", 11, []),
        ("BabyEncryption.traj", 16, []),
    ],
)
def test_swe_agent_other_trajectories(name: str, steps: int, runs: list[tuple[str, tuple[int, ...], bool]]) -> None:
    log = read_log(REAL / "swe-agent" / name)
    (conversation,) = log.conversations
    assert len(conversation.messages) == steps
    found = find_runs(conversation.tool_calls())
    assert [(r.tool, r.calls, r.results_identical) for r in found] == runs
    assert not any(r.loop for r in found)


# --------------------------------------------------------------------------- Claude Code

CLAUDE_STATS = {  # from data/real/claude-code/README.md: message ids, tool_use, is_error, text chars
    "citation-check-229ca9.jsonl": (
        16,
        37,
        4,
        3309,
        {"WebFetch": 31, "TodoWrite": 3, "Read": 1, "Skill": 1, "Write": 1},
    ),
    "azure-bgp-oscillation-route-le-15be2a.jsonl": (7, 10, 0, 2485, {"TodoWrite": 4, "Read": 4, "Bash": 1, "Write": 1}),
    "econ-detrending-correlation-10b28d.jsonl": (15, 14, 1, 2381, {"Bash": 11, "TodoWrite": 2, "Skill": 1}),
    "dapt-intrusion-detection-b9ccb2.jsonl": (10, 9, 2, 2294, {"Bash": 5, "Skill": 2, "Read": 2}),
}


@shared_data
@pytest.mark.parametrize("name", sorted(CLAUDE_STATS))
def test_claude_code_groups_blocks_by_message_id(name: str) -> None:
    messages, tool_uses, errors, text_chars, names = CLAUDE_STATS[name]
    log = read_log(REAL / "claude-code" / name)
    assert log.format == "claude-code"
    (conversation,) = log.conversations
    assert len(conversation.messages) == messages
    assert [m.index for m in conversation.messages] == list(range(messages))
    assert len({m.where["message_id"] for m in conversation.messages}) == messages
    calls = conversation.tool_calls()
    assert len(calls) == tool_uses
    assert all(c.result is not None for c in calls)  # every tool_use has its tool_result
    assert sum(c.error for c in calls) == errors
    assert sum(len(m.text) for m in conversation.messages) == text_chars
    assert sum(len(m.reasoning) for m in conversation.messages) == 0  # no thinking blocks
    counted: dict[str, int] = {}
    for call in calls:
        counted[call.name] = counted.get(call.name, 0) + 1
    assert counted == names
    assert find_runs(calls) == []  # longest identical run is 1


@shared_data
def test_claude_code_log_saved_as_txt_is_detected_from_content(tmp_path: Path) -> None:
    copy = tmp_path / "claude-code.txt"  # the name the logs had upstream
    shutil.copyfile(REAL / "claude-code" / "azure-bgp-oscillation-route-le-15be2a.jsonl", copy)
    log = read_log(copy)
    assert log.format == "claude-code"
    assert len(log.conversations[0].messages) == 7


def test_claude_code_thinking_text_tool_use_and_subagents(tmp_path: Path) -> None:
    lines = [
        {"type": "system", "subtype": "init", "session_id": "s"},
        {
            "type": "assistant",
            "message": {"id": "m1", "content": [{"type": "thinking", "thinking": "Hmm. "}]},
            "parent_tool_use_id": None,
        },
        {
            "type": "assistant",
            "message": {"id": "m1", "content": [{"type": "text", "text": "A"}]},
            "parent_tool_use_id": None,
        },
        {
            "type": "assistant",
            "message": {"id": "m1", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"c": 1}}]},
            "parent_tool_use_id": None,
        },
        {
            "type": "assistant",
            "message": {"id": "m1", "content": [{"type": "text", "text": "B"}]},
            "parent_tool_use_id": None,
        },
        {
            "type": "assistant",
            "message": {"id": "s1", "content": [{"type": "tool_use", "id": "t2", "name": "Grep", "input": {}}]},
            "parent_tool_use_id": "t1",
        },
        {
            "type": "user",
            "message": {
                "content": [{"type": "tool_result", "tool_use_id": "t2", "content": [{"type": "text", "text": "x"}]}]
            },
        },
        {
            "type": "user",
            "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "content": "out", "is_error": True}]},
        },
        {"type": "result", "subtype": "success", "result": "AB"},
    ]
    log = read_log(write_jsonl(tmp_path / "s.jsonl", lines))
    main, sub = log.conversations
    (m,) = main.messages
    assert (m.reasoning, m.text, m.where) == ("Hmm. ", "AB", {"message": 0, "line": 2, "message_id": "m1"})
    assert m.tool_calls == [ToolCall("Bash", {"c": 1}, "out", True, {"message": 0, "line": 4, "call": 0})]
    assert sub.where == {"parent_tool_use_id": "t1"}
    assert sub.messages[0].tool_calls[0].result == [{"type": "text", "text": "x"}]


# --------------------------------------------------------------------------- chat


def test_chat_one_message_per_line(tmp_path: Path) -> None:
    lines = [
        {"session": "meta line, no role"},
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "reasoning_content": "think",
            "content": [{"type": "text", "text": "he"}, {"type": "image_url"}, {"type": "text", "text": "llo"}],
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "grep", "arguments": '{"p": 1}'}},
                {"id": "c2", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "c2", "content": "files"},
        {"role": "tool", "tool_call_id": "c1", "content": "match"},
        {
            "role": "assistant",
            "reasoning": "again",
            "content": None,
            "tool_calls": [{"id": "c1", "function": {"name": "grep", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "second"},  # a reused id answers the open call
        {"role": "assistant", "content": "bye", "function_call": {"name": "legacy", "arguments": "{}"}},
        {"role": "function", "name": "legacy", "content": "done"},
    ]
    log = read_log(write_jsonl(tmp_path / "chat.jsonl", lines))
    assert log.format == "chat"
    (conversation,) = log.conversations
    first, second, third = conversation.messages
    assert (first.index, first.where, first.reasoning, first.text) == (1, {"message": 1, "line": 3}, "think", "hello")
    assert [(c.name, c.args, c.result, c.where) for c in first.tool_calls] == [
        ("grep", '{"p": 1}', "match", {"message": 1, "line": 3, "call": 0}),
        ("ls", "{}", "files", {"message": 1, "line": 3, "call": 1}),
    ]
    assert (second.where, second.reasoning, second.text) == ({"message": 4, "line": 6}, "again", "")
    assert second.tool_calls[0].result == "second"
    assert (third.text, third.tool_calls[0].name, third.tool_calls[0].result) == ("bye", "legacy", "done")


def test_chat_content_parts_with_thinking_go_to_reasoning(tmp_path: Path) -> None:
    content = [{"type": "thinking", "thinking": "plan. "}, {"type": "text", "text": "answer"}]
    path = write_jsonl(tmp_path / "c.jsonl", [{"role": "assistant", "reasoning_content": "rc. ", "content": content}])
    (message,) = read_log(path).conversations[0].messages
    assert (message.reasoning, message.text) == ("rc. plan. ", "answer")
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"role": "assistant", "content": 42}])
    with pytest.raises(InputError, match="content must be a string or a list of parts, not int") as info:
        read_log(bad)
    assert info.value.line == 1


def test_chat_records_with_messages(tmp_path: Path) -> None:
    rec = {
        "id": "r1",
        "messages": [
            {"role": "user", "content": "q"},
            {
                "role": "assistant",
                "content": "a",
                "tool_calls": [{"id": "x", "function": {"name": "t", "arguments": "{}"}}],
            },
        ],
    }
    log = read_log(
        write_jsonl(tmp_path / "records.jsonl", [rec, {"messages": [{"role": "assistant", "content": "b"}]}])
    )
    assert log.format == "chat-records"
    one, two = log.conversations
    assert one.where == {"line": 1, "id": "r1"}
    assert one.messages[0].where == {"line": 1, "id": "r1", "message": 1}
    assert one.messages[0].tool_calls[0].result is None  # never answered
    assert (two.where, two.messages[0].text) == ({"line": 2}, "b")


def test_recorded_runs_one_conversation_per_record(tmp_path: Path) -> None:
    grep = {"tool": "grep", "args": {"pattern": "TODO"}, "result": "a.py:3"}
    records = [
        {"id": "run-1", "label": "loop", "calls": [grep, {**grep, "error": True}]},
        {"id": "run-2", "calls": None},  # no calls: skipped, as a dataset record without its field
        {"calls": [{"tool": "ls", "args": "src"}]},
    ]
    log = read_log(write_jsonl(tmp_path / "runs.jsonl", records))
    assert log.format == "tool-call-records"
    one, three = log.conversations
    assert (one.where, three.where) == ({"line": 1, "id": "run-1"}, {"line": 3})
    assert [m.where for m in one.messages] == [{"line": 1, "id": "run-1"}]
    assert one.tool_calls() == [
        ToolCall("grep", {"pattern": "TODO"}, "a.py:3", False, {"line": 1, "id": "run-1", "call": 0}),
        ToolCall("grep", {"pattern": "TODO"}, "a.py:3", True, {"line": 1, "id": "run-1", "call": 1}),
    ]
    assert three.tool_calls() == [ToolCall("ls", "src", None, False, {"line": 3, "call": 0})]


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"calls": "grep"}, "'calls' must be a list, not str"),
        ({"calls": [["grep"]]}, "entry 0 of the tool-call list is not an object"),
        ({"calls": [{"tool": "ls"}, {"args": "x"}]}, "entry 1: 'tool' must be a string, not NoneType"),
        ({"calls": [{"tool": ""}]}, "entry 0: 'tool' must be a non-empty string"),
    ],
)
def test_a_bad_recorded_run_names_its_line(tmp_path: Path, record: dict[str, Any], message: str) -> None:
    path = write_jsonl(tmp_path / "runs.jsonl", [{"calls": []}, record])
    with pytest.raises(InputError, match=message) as info:
        read_log(path)
    assert info.value.line == 2


def test_json_array_of_chat_messages(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    path.write_text(
        json.dumps([{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]), encoding="utf-8"
    )
    log = read_log(path)
    assert (log.format, log.conversations[0].messages[0].where) == ("chat", {"message": 1})


# --------------------------------------------------------------------------- datasets

REASONING_FILES = {
    "cot-loop_qwen3-1.7b_gpqa.jsonl": 9,
    "thinking-llms-interp_r1-distill-qwen-1.5b_gsm8k.jsonl": 10,
    "zeroeval_gemma-2-2b-it_math-l5.jsonl": 9,
}


@shared_data
@pytest.mark.parametrize("name", sorted(REASONING_FILES))
def test_dataset_records_by_line_and_id(name: str) -> None:
    path = REAL / "reasoning" / name
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    log = read_log(path)
    assert log.format == "dataset"
    assert len(log.conversations) == REASONING_FILES[name] == len(records)
    for number, (conversation, record) in enumerate(zip(log.conversations, records, strict=True), 1):
        assert conversation.where == {"line": number, "id": record["id"]}
        (message,) = conversation.messages
        assert (message.reasoning, message.text, message.tool_calls) == (record["text"], "", [])


def test_dataset_field_choice_and_errors(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "d.jsonl", [{"answer": "x", "output": "o1"}, {"output": None}, {"answer": "y", "output": "o3"}]
    )
    log = read_log(path)
    assert log.format == "dataset"
    assert [(c.where, c.messages[0].reasoning) for c in log.conversations] == [({"line": 1}, "o1"), ({"line": 3}, "o3")]
    log = read_log(path, field="answer")
    assert [c.messages[0].reasoning for c in log.conversations] == ["x", "y"]
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"text": "a"}, {"text": ["not", "a", "string"]}])
    with pytest.raises(InputError, match="field 'text' must be a string") as info:
        read_log(bad)
    assert info.value.line == 2
    with pytest.raises(InputError, match="unknown JSON format") as info:
        read_log(path, field="missing")
    assert info.value.line == 1


# --------------------------------------------------------------------------- sniffing and bad input


def test_plain_markdown_and_empty(tmp_path: Path) -> None:
    md = tmp_path / "notes.md"
    md.write_text("[link](x) is not JSON\n{also not}\n", encoding="utf-8")
    log = read_log(md)
    assert (log.format, log.conversations[0].messages[0].text) == ("plain", "[link](x) is not JSON\n{also not}\n")
    (tmp_path / "empty.txt").write_bytes(b"")
    (tmp_path / "blank.jsonl").write_bytes(b"\n \n")
    assert read_log(tmp_path / "empty.txt").format == "empty"
    assert read_log(tmp_path / "blank.jsonl").format == "empty"
    (tmp_path / "bom.txt").write_bytes("\ufeffhello".encode())
    assert read_log(tmp_path / "bom.txt").conversations[0].messages[0].text == "hello"


def test_invalid_json_line_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    path.write_text('{"role": "user", "content": "a"}\n\n{"role": "assistant", "content": \n', encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_log(path)
    assert (info.value.path, info.value.line) == (str(path), 3)
    assert str(info.value).startswith(f"{path}:3: invalid JSON")


def test_invalid_json_document_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.traj"
    path.write_text('{\n  "trajectory": [\n    {"action": "ls",,}\n  ]\n}\n', encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_log(path)
    assert info.value.line == 3


def test_non_object_lines_and_unknown_structures(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text('{"role": "user"}\n[1, 2]\n', encoding="utf-8")
    with pytest.raises(InputError, match="expected a JSON object on each line, got an array") as info:
        read_log(tmp_path / "a.jsonl")
    assert info.value.line == 2
    (tmp_path / "b.json").write_text("[1, 2, 3]", encoding="utf-8")
    with pytest.raises(InputError, match="unknown JSON format") as info:
        read_log(tmp_path / "b.json")
    assert info.value.line == 1
    (tmp_path / "c.jsonl").write_text('\n{"a": 1}\n{"b": 2}\n', encoding="utf-8")
    with pytest.raises(InputError, match="unknown JSON format") as info:
        read_log(tmp_path / "c.jsonl")
    assert info.value.line == 2


def test_binary_files_are_unknown_format(tmp_path: Path) -> None:
    png = tmp_path / "image.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    with pytest.raises(InputError, match="unknown format: not UTF-8") as info:
        read_log(png)
    assert info.value.line == 1
    nul = tmp_path / "data.txt"
    nul.write_bytes(b"one\ntwo\nthr\x00ee\n")
    with pytest.raises(InputError, match="NUL byte") as info:
        read_log(nul)
    assert info.value.line == 3
    latin = tmp_path / "latin1.txt"
    latin.write_bytes("ok\ncaf\xe9\n".encode("latin-1"))
    with pytest.raises(InputError) as info:
        read_log(latin)
    assert info.value.line == 2


# --------------------------------------------------------------------------- compression


@shared_data
def test_gzip_and_zstd_read_like_the_plain_file(tmp_path: Path) -> None:
    source = REAL / "swe-agent" / "eps.traj"
    data = source.read_bytes()
    (tmp_path / "eps.traj.gz").write_bytes(gzip.compress(data))
    (tmp_path / "eps.traj.zst").write_bytes(zstandard.ZstdCompressor().compress(data))
    (tmp_path / "eps-no-suffix").write_bytes(zstandard.ZstdCompressor().compress(data))  # magic bytes, no suffix
    half = len(data) // 2  # two zstd frames back to back
    (tmp_path / "two-frames.zst").write_bytes(
        zstandard.ZstdCompressor().compress(data[:half]) + zstandard.ZstdCompressor().compress(data[half:])
    )
    expected = read_log(source).conversations
    for name in ("eps.traj.gz", "eps.traj.zst", "eps-no-suffix", "two-frames.zst"):
        log = read_log(tmp_path / name)
        assert (log.format, log.conversations) == ("swe-agent", expected), name
    with open_maybe_compressed(tmp_path / "eps.traj.zst") as fh:
        assert fh.read() == data


def test_corrupt_and_truncated_archives(tmp_path: Path) -> None:
    data = "".join(json.dumps({"text": f"record {i}"}) + "\n" for i in range(20000)).encode()
    z = zstandard.ZstdCompressor().compress(data)
    g = gzip.compress(data)
    cases = {
        "truncated.jsonl.zst": z[: len(z) // 2],
        "truncated.jsonl.gz": g[: len(g) // 2],
        "corrupt.zst": z[:6] + b"\xff" * 40 + z[46:],
        "corrupt.gz": g[:10] + b"\x00" * 40 + g[50:],
        "fake.gz": b"plain text named .gz\n",
        "fake.zst": b"not zstd\n",
    }
    for name, blob in cases.items():
        (tmp_path / name).write_bytes(blob)
        with pytest.raises(InputError, match=r"corrupt (gzip|zstd) data") as info:
            read_log(tmp_path / name)
        assert info.value.path == str(tmp_path / name), name
        assert isinstance(info.value.line, int) and info.value.line >= 1, name
    # a truncated stream is reported at the line it broke off in, not line 1
    with pytest.raises(InputError) as info:
        read_log(tmp_path / "truncated.jsonl.gz")
    assert 1 < info.value.line <= 20000
    (tmp_path / "empty.jsonl.zst").write_bytes(b"")  # an empty file is empty, whatever its name
    assert read_log(tmp_path / "empty.jsonl.zst").format == "empty"


# --------------------------------------------------------------------------- paths


def test_expand_paths_sorted_recursive_deterministic(tmp_path: Path) -> None:
    for name in ("b/z.txt", "b/a.txt", "a.txt", "B.txt", ".hidden/x.txt", "c/.dot.txt"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x", encoding="utf-8")
    found = expand_paths([tmp_path, tmp_path / "a.txt", tmp_path / "missing"])
    names = [Path(p).relative_to(tmp_path).as_posix() if p.startswith(str(tmp_path) + "/") else p for p, _ in found]
    assert names == ["B.txt", "a.txt", "b/a.txt", "b/z.txt", "missing"]
    assert [e is None for _, e in found] == [True, True, True, True, False]
    assert "no such file or directory" in str(found[-1][1])
