"""Canary secrets (issue 21): secrets of every shape the redactor knows, placed in tool-call
arguments, tool results and model text, reach no deny reason, notice, error message, log
record, ``loopguard scan`` output (text and ``--json``), pickle or repr of a public object.

Every canary carries a marker (``Cny``/``CNY``/``cny``) that appears nowhere else, so
``_leaks`` finds any piece of one that got through, also a tail cut off a redacted head.
"""

from __future__ import annotations

import json
import logging
import pickle
import re
from pathlib import Path
from typing import Any

import pytest

from loopguard import Session, StreamConfig, StreamGuard, ToolGuard, ToolGuardConfig, scan_text
from loopguard.cli import main
from loopguard.messages import arguments_preview
from loopguard.results import summarize_result

PEM_BODY = "MIIEowIBAAKCAQEAcnyPemBody" + "Q" * 60
#: (name, text): each canary in the form a shell command, a header or a config file has it
TEXT_CANARIES = [
    ("password quoted", 'mysql --password "CnyPwQuoted01" db'),
    ("password =", "psql --password=CnyPwEquals02 db"),
    ("password blank", "tool --password CnyPwBlank03 --verbose"),
    ("token single-quoted", "gh --token 'CnyTokSingle04' repo"),
    ("mysql -p", "mysql -uroot -pCnyShortP05 db"),
    ("env assignment", "AWS_SECRET_ACCESS_KEY=CnyAwsEnv06 aws s3 ls"),
    ("bearer header", 'curl -H "Authorization: Bearer CnyBearer07xyz" https://api.example.com'),
    ("basic header", 'curl -H "Authorization: Basic Q255QmFzaWMwOA==" https://api.example.com'),
    ("digest header", "Authorization: Digest username=bob, response=CnyDigest09"),
    ("url credentials", "git clone https://bob:CnyUrlPw10@example.com/r.git"),
    ("quoted with escape", 'tool --password "CnyEsc11\\"tailCny11" x'),
    ("pem with end", f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----\nok"),
    ("pem without end", f"key:\n-----BEGIN PRIVATE KEY-----\n{PEM_BODY}\nAAAA cnyPemTail"),
    ("sk key", "export OPENAI=sk-proj-CnySkKey14abcdefghijkl"),
    ("github token", "ghp_Cny15abcdefghijklmnopqrstuvwx"),
    ("aws key id", "id AKIACNYAKIDKEY161616 done"),
    ("json password", '{"password": "CnyJson17", "user": "bob"}'),
    # red-team round 2 (issue 21): more names, shell forms and structures
    ("curl -u", "curl -u admin:CnyCurlUser31 https://api.example.com"),
    ("cookie header", "curl -H 'Cookie: sid=CnyCookie32; theme=dark' https://x"),
    ("set-cookie", "Set-Cookie: session=CnySetCookie33; Path=/; HttpOnly"),
    ("curl -b", "curl -b 'sid=CnyCurlB34' https://x"),
    ("--pass", "tool --pass CnyPass35 --verbose"),
    ("DB_PASS", "DB_PASS=CnyDbPass36 ./run"),
    ("php array", "$cfg = array('password' => 'CnyPhp37');"),
    ("netrc", "machine example.com login bob password CnyNetrc38"),
    ("xml", "<password>CnyXml39</password>"),
    ("sql", "CREATE USER 'bob'@'%' IDENTIFIED BY 'CnySql40';"),
    ("escaped spaces", "password=a\\ b\\ CnyEscSpace41 next"),
    ("comma", "password=a,CnyComma42 next"),
    ("dash value", "tool --password -CnyDash43 --verbose"),
    ("yaml block", "db:\n  password: |\n    CnyYaml44\n  user: bob"),
    ("docker login", "docker login -u me -p CnyDocker45 registry.example.com"),
    ("sshpass", "sshpass -p CnySshpass46 ssh -p 22 host"),
    ("escaped key", '{"\\u0070assword": "CnyEscKey47"}'),
]
#: Base64 of "CnyBasic08": the canary of the Basic header, which has no readable marker
BASIC = "Q255QmFzaWMwOA=="
#: (name, arguments): structured values whose secret-named keys hold non-strings
STRUCTURED_CANARIES: list[tuple[str, Any]] = [
    ("password list", {"q": "x", "password": ["CnyList20"]}),
    ("secret mapping", {"q": "x", "secret": {"v": "CnyNested21"}}),
    ("bytes key", {"q": "x", b"password": "CnyBytesKey22"}),
    ("deep number", {"q": "x", "cfg": {"db": [{"DB_PASSWORD": 987650123}]}}),
    ("apiKey", {"q": "x", "apiKey": "CnyApiKey24"}),
    ("tuple of pairs", {"q": "x", "auth": ({"token": ("CnyTuple25",)},)}),
]
_MARK = re.compile(r"(?i)cny|987650123|" + re.escape(BASIC) + "|" + "Q" * 20)


def _leaks(text: str) -> list[str]:
    return _MARK.findall(text)


def _ok(*texts: Any) -> None:
    for text in texts:
        assert _leaks(str(text)) == [], str(text)[:2000]


def _pickled(value: Any) -> str:
    return pickle.dumps(value).decode("latin-1")


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG)  # every logger, every level
    return caplog


def _log_text(caplog: pytest.LogCaptureFixture) -> str:
    return "\n".join(f"{r.getMessage()} {r.exc_text or ''}" for r in caplog.records)


def _all_arguments() -> list[tuple[str, Any]]:
    args: list[tuple[str, Any]] = [(name, {"command": text}) for name, text in TEXT_CANARIES]
    args += [(name + " (JSON string)", json.dumps({"command": text})) for name, text in TEXT_CANARIES]
    return args + STRUCTURED_CANARIES


@pytest.mark.parametrize(("name", "args"), _all_arguments(), ids=[n for n, _ in _all_arguments()])
def test_repeat_deny_hides_arguments_and_previous_result(name: str, args: Any, logs: pytest.LogCaptureFixture) -> None:
    guard = ToolGuard(ToolGuardConfig(arguments_preview_chars=2000, result_summary_chars=2000))
    result = "line one\n" + (args["command"] if isinstance(args, dict) and "command" in args else str(args))
    notes = []
    for _ in range(2):
        assert guard.before_call("s", "bash", args).allowed
        notes += guard.after_call("s", "bash", args, result)
    deny = guard.before_call("s", "bash", args)
    assert (deny.action, deny.kind) == ("deny", "repeat")
    assert (
        "Arguments: " in deny.reason
        and "Previous result (preserved in the conversation above): line one" in deny.reason
    )
    assert [n.kind for n in notes] == ["repeat"]
    _ok(deny.reason, repr(deny), _pickled(deny), deny.evidence, *(n.text for n in notes), *(repr(n) for n in notes))
    _ok(*(_pickled(n) for n in notes), _log_text(logs))


def _search_arguments() -> list[tuple[str, Any]]:
    args: list[tuple[str, Any]] = [(name, {"pattern": text}) for name, text in TEXT_CANARIES]
    args += [(name + " (JSON string)", {"pattern": json.dumps({"command": text})}) for name, text in TEXT_CANARIES]
    args += [(name, {"pattern": "TODO", **value}) for name, value in STRUCTURED_CANARIES]
    return [*args, ("shell grep", {"command": "grep -r 'password=CnyShell30' /"})]


@pytest.mark.parametrize(("name", "args"), _search_arguments(), ids=[n for n, _ in _search_arguments()])
def test_unscoped_search_deny_hides_arguments(name: str, args: Any, logs: pytest.LogCaptureFixture) -> None:
    guard = ToolGuard(ToolGuardConfig(arguments_preview_chars=2000))
    deny = guard.before_call("s", "grep", args)
    assert (deny.action, deny.kind) == ("deny", "unscoped_search")
    assert "Arguments: {" in deny.reason
    _ok(deny.reason, repr(deny), _pickled(deny), _log_text(logs))


def test_the_issue_repros_by_hand() -> None:
    """Item 2 of issue 21, each leak as reported, with the preview computed by hand."""
    assert arguments_preview({"command": 'x --password "Hunter2CanaryPw"'}, 300) == (
        '{"command":"x --password \\"[REDACTED]\\""}'
    )
    assert arguments_preview({"command": "x --token 'CanaryBearerTok9876'"}, 300) == (
        '{"command":"x --token \'[REDACTED]\'"}'
    )
    assert arguments_preview({"password": ["x"]}, 300) == '{"password":"[REDACTED]"}'
    assert arguments_preview({"secret": {"v": "x"}}, 300) == '{"secret":"[REDACTED]"}'
    assert "xyzzy" not in arguments_preview({b"password": "xyzzy"}, 300)
    assert arguments_preview({"command": 'login --password "Hunt\\"er2tail"'}, 300) == (
        '{"command":"login --password \\"[REDACTED]\\""}'
    )
    pem = f"-----BEGIN PRIVATE KEY-----\n{PEM_BODY}\n" * 2  # returned twice, no END in the summary's reach
    assert summarize_result(pem, max_chars=240) == "-----BEGIN PRIVATE KEY-----[REDACTED]" * 2


STRUCTURED_RESULTS: list[tuple[Any, str]] = [
    ({"data": {"credentials": "CnyCred50"}}, '{"data":{"credentials":"[REDACTED]"}}'),
    ({"data": {"cookie": "CnyCookie51"}}, '{"data":{"cookie":"[REDACTED]"}}'),
    ({"data": {"set-cookie": "CnySetCookie52"}}, '{"data":{"set-cookie":"[REDACTED]"}}'),
    ({"data": {"Pass_Word": "CnyPassWord53"}}, '{"data":{"Pass_Word":"[REDACTED]"}}'),
    ({"data": {"pass-word": "CnyPassWord54"}}, '{"data":{"pass-word":"[REDACTED]"}}'),
    ({"data": {"API KEY": "CnyApiKey55"}}, '{"data":{"API KEY":"[REDACTED]"}}'),
    ({b"password": "CnyBytesKey56", "n": 1}, 'stable:{"b\'password\'":"[REDACTED]","n":1}'),
    ({"key": "password", "value": "CnyPair57"}, '{"key":"password","value":"[REDACTED]"}'),
    ([{"name": "DB_PASSWORD", "value": "CnyPair58"}], '[{"name":"DB_PASSWORD","value":"[REDACTED]"}]'),
    ([["PASSWORD", "CnyEnv59"]], '[["PASSWORD","[REDACTED]"]]'),
    (("Authorization", "CnyHeader60"), '["Authorization","[REDACTED]"]'),
    ([["X-Api-Key", "CnyHeader61"]], '[["X-Api-Key","[REDACTED]"]]'),
]


@pytest.mark.parametrize(("result", "summary"), STRUCTURED_RESULTS, ids=[s for _, s in STRUCTURED_RESULTS])
def test_structured_result_summary_goes_through_redact_value(result: Any, summary: str) -> None:
    """A structured result returned twice: the deny reason's "Previous result" summary hides
    what a secret-named key or name/value pair holds (red-team round 2, item C)."""
    assert summarize_result(result, max_chars=2000) == summary
    guard = ToolGuard(ToolGuardConfig(result_summary_chars=2000))
    for _ in range(2):
        assert guard.before_call("s", "read", {"path": "a"}).allowed
        guard.after_call("s", "read", {"path": "a"}, result)
    deny = guard.before_call("s", "read", {"path": "a"})
    assert deny.kind == "repeat"
    assert f"Previous result (preserved in the conversation above): {summary}" in deny.reason
    _ok(deny.reason, repr(deny), _pickled(deny))


def test_a_secret_cut_by_the_kept_result_head_is_not_shown() -> None:
    """The guard keeps the start of a result for the summary; an AWS key straddling that cut
    (blank lines first, so the summary reaches it) shows none of its characters."""
    guard = ToolGuard(ToolGuardConfig(result_summary_chars=16))
    size = 16 * 2 + 256
    result = "ok\n" + "\n" * (size - 3 - 10) + "AKIACNYAKIDKEY161616 rest"  # the cut falls 10 chars into the key
    for _ in range(2):
        assert guard.before_call("s", "read", {"path": "a"}).allowed
        guard.after_call("s", "read", {"path": "a"}, result)
    deny = guard.before_call("s", "read", {"path": "a"})
    assert deny.kind == "repeat"
    assert "Previous result (preserved in the conversation above): ok | …" in deny.reason
    _ok(deny.reason)


def test_session_text_tools_and_cancel(logs: pytest.LogCaptureFixture) -> None:
    session = Session("canary")
    session.start_turn()
    session.start_attempt()
    verdicts = []
    text = " ".join(t for _, t in TEXT_CANARIES)
    for _ in range(40):
        verdicts.append(session.feed(f"Checking again: {text}\n", "text"))
        if verdicts[-1].stop:
            break
    assert verdicts[-1].stop and verdicts[-1].kind == "text_loop"
    verdicts.append(session.end_attempt())
    for name, args in STRUCTURED_CANARIES + [("cmd", {"command": TEXT_CANARIES[0][1]})]:
        for _ in range(3):
            verdict = session.tool_call("bash", args)
            verdicts.append(verdict)
            if verdict.action in ("allow", "notice"):
                verdicts.append(session.tool_result("bash", args, f"out {name}\n{args}"))
    assert any(v.action == "deny" for v in verdicts)
    session.cancel(f"user pressed stop; {text}")
    reprs = [repr(v.decision) for v in verdicts] + [repr(i) for v in verdicts for i in v.interventions]
    _ok(*(v.reason for v in verdicts), *reprs, repr(session), _log_text(logs))
    _ok(*(_pickled(v.decision) for v in verdicts), *(i.text for v in verdicts for i in v.interventions))


def test_stream_guard_notices_and_verdict(logs: pytest.LogCaptureFixture) -> None:
    guard = StreamGuard(config=StreamConfig(mode="cut"))
    line = "Retrying: " + " ".join(t for _, t in TEXT_CANARIES[:11]) + "\n"
    for _ in range(40):
        guard.text(line)
    outcome = guard.finish()
    assert outcome.stopped and outcome.verdict is not None
    _ok(outcome.verdict.reason, outcome.marker, repr(outcome.verdict.decision), _log_text(logs))
    assert "CnyPwQuoted01" in outcome.kept_text  # the caller's own text is never dropped


def test_stream_outcome_repr_hides_the_kept_text() -> None:
    guard = StreamGuard(config=StreamConfig(mode="cut"))
    guard.tool_args(0, '{"password": "CnyStreamRepr02"}', id="c0", name="login")
    guard.close_open_calls()
    for _ in range(40):
        guard.text("Retrying with password=CnyStreamRepr01 now.\n")
    outcome = guard.finish()
    assert outcome.tool_calls[0].arguments == '{"password": "CnyStreamRepr02"}'  # the caller's own data
    assert "CnyStreamRepr01" in outcome.kept_text
    _ok(repr(outcome))
    assert "CnyStreamRepr02" not in repr(outcome)


def _scan_inputs(tmp_path: Path) -> list[Path]:
    calls = [{"tool": "bash", "args": args, "result": f"echo {args}"} for _ in range(3) for _, args in _all_arguments()]
    calls = [c for c in calls if not any(isinstance(k, bytes) for k in c["args"]) if isinstance(c["args"], (dict, str))]
    tool_log = tmp_path / "calls.json"
    tool_log.write_text(json.dumps(calls), encoding="utf-8")
    paths = [tool_log]
    for index, (_, text) in enumerate(TEXT_CANARIES):  # a looping answer with a rotating pool of phrases
        unit = f"Trying {text},\nso I flush it and check again. "
        path = tmp_path / f"answer{index:02}.md"
        path.write_text("Intro line.\n" + unit * 30, encoding="utf-8")
        paths.append(path)
    return paths


def test_scan_output_text_and_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], logs: pytest.LogCaptureFixture
) -> None:
    paths = _scan_inputs(tmp_path)
    for argv in (
        ["scan"],
        ["scan", "--json"],
        ["scan", "--all"],
        ["scan", "--profile", "rescue"],
        ["scan", "--json", "--profile", "rescue"],
    ):
        code = main([*argv, *map(str, paths)])
        out, err = capsys.readouterr()
        assert code == 1  # loops were found: the output is about them
        assert "LOOP" in out or '"loops": [{' in out
        _ok(out, err)
    _ok(_log_text(logs))


def test_scan_json_phrases_are_redacted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "answer.md"
    path.write_text(
        "Intro line.\n" + "Use password=CnyPhrase01 here,\nso I flush it and check again. " * 30, encoding="utf-8"
    )
    main(["scan", "--json", "--profile", "rescue", str(path)])
    report = json.loads(capsys.readouterr().out)
    pools = [loop["evidence"]["phrases"] for loop in report["loops"] if loop["kind"] == "pool"]
    assert [sorted(pool) for pool in pools] == [["Use password=[REDACTED] here,", "so I flush it and check again."]]


def test_scan_excerpt_redacts_a_key_straddling_the_cut(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The 80-character excerpt used to be cut before redaction: an AWS key across the cut kept
    18 of its 20 characters.  The unit is 81 characters; the key starts at 62."""
    unit = "We check the bucket again with the old credentials from the vault: id AKIACNYAKIDKEY161616 ok. "
    text = unit * 12
    [cycle] = [d for d in scan_text(text, "text", "default") if d.kind == "cycle"]
    key = text.index("AKIA", cycle.start)
    assert key < cycle.start + 80 < key + 20  # the key straddles the excerpt's end
    path = tmp_path / "answer.md"
    path.write_text(text, encoding="utf-8")
    main(["scan", str(path)])
    out = capsys.readouterr().out
    shown = text[cycle.start : key].replace("\n", "⏎")
    assert f"repeats: “{shown}[REDACTED]…”" in out
    _ok(out)


@pytest.mark.parametrize("limit", range(24, 48))
def test_a_preview_cut_inside_a_secret_leaves_the_guidance_whole(limit: int) -> None:
    """The preview is cut after redaction, maybe inside ``\\"[REDACTED]\\"``; the deny text is
    rendered field by field, so the open quote does not swallow the sentence after it."""
    guard = ToolGuard(ToolGuardConfig(arguments_preview_chars=limit))
    deny = guard.before_call("s", "grep", {"pattern": 'x --password "CnyCutPreview01xx" more'})
    assert deny.reason.endswith(" Repeat the search with a `path` that names the directory or files you mean.")
    _ok(deny.reason)


def test_session_cancel_reads_only_the_head_of_its_reason(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The cancel reason goes to the log redacted before its 200-code-point cut, and only its head
    is redacted: the work does not grow with the reason (issue 21, item 5)."""
    from loopguard import redact

    seen: list[int] = []
    original = redact.redact_secrets

    def counting(text: str) -> str:
        seen.append(len(text))
        return original(text)

    monkeypatch.setattr(redact, "redact_secrets", counting)
    session = Session()
    session.start_turn()
    with caplog.at_level(logging.INFO, logger="loopguard"):
        session.cancel("password=CnyCancelHead01 " + "_a" * 2_500_000)
    assert seen == [200 + redact.SECRET_MARGIN]
    line = next(r.getMessage() for r in caplog.records if "cancelled by the host" in r.getMessage())
    assert "password=[REDACTED]" in line and line.endswith("…") and "CnyCancelHead01" not in line


# ------------------------------------------------ names taken from input (tool names, reasons)


def test_tool_names_are_redacted_in_scan_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """SWE-agent names a tool after the action's first word: ``PGPASSWORD=… psql`` is a tool name.
    ``scan`` shows it redacted in its text and ``--json`` output (the red-team review of issue 21)."""
    path = tmp_path / "t.traj"
    step = {"action": "PGPASSWORD=CnyToolName31 psql -h db -c 'select 1'", "observation": "connection refused"}
    path.write_text(json.dumps({"trajectory": [step] * 4}), encoding="utf-8")
    assert main(["scan", str(path)]) == 1
    text = capsys.readouterr().out
    assert "tool run: PGPASSWORD=[REDACTED] ×4" in text and "PGPASSWORD=[REDACTED] · repeat" in text
    assert main(["scan", "--json", str(path)]) == 1
    report = json.loads(capsys.readouterr().out)
    assert {f["tool"] for f in report["tool_findings"] + report["guard_findings"]} == {"PGPASSWORD=[REDACTED]"}
    _ok(text, json.dumps(report))


def test_tool_names_are_redacted_before_their_cut(caplog: pytest.LogCaptureFixture) -> None:
    """A 100-code-point cut of a tool name used to fall inside a key, leaving 13 of its 20
    characters unrecognisable to the redactor; reasons and log records now redact first."""
    for tool in ("t" * 86 + " AKIACNYTOOLCUT323232", "t" * 85 + " sk-proj-CnyToolCut33abcdefghij"):
        guard = ToolGuard()
        with caplog.at_level(logging.DEBUG, logger="loopguard"):
            decisions = []
            for _ in range(4):
                decisions.append(guard.before_call("s", tool, {"q": "x"}))
                guard.after_call("s", tool, {"q": "x"}, "same")
        deny = next(d for d in decisions if d.action == "deny")
        assert deny.reason.count("t" * 85) >= 1 and "[REDACTED]" in deny.reason
        _ok(*(d.reason for d in decisions), *(r.getMessage() for r in caplog.records))
        caplog.clear()


def test_session_cancel_reason_is_one_safe_line(caplog: pytest.LogCaptureFixture) -> None:
    session = Session()
    session.start_turn()
    with caplog.at_level(logging.INFO, logger="loopguard"):
        session.cancel("user abort\n2026-01-01 CRITICAL fake line \x1b[2J password=CnyCancel34 \u202eevil")
    line = next(r.getMessage() for r in caplog.records if "cancelled by the host" in r.getMessage())
    assert line.endswith(": user abort\\n2026-01-01 CRITICAL fake line \\x1b[2J password=[REDACTED] \\u202eevil"), line
    _ok(line)


# A reviewer's second pass (issue 21 follow-up): shapes that got through, each with its canary,
# and look-alikes that must stay readable.
MORE_LEAKS = [
    ("redis-cli -h db -a CanaryRedisPw1 ping", "redis-cli -h db -a [REDACTED] ping"),
    ("twine upload -u __token__ -p CanaryTwine1 dist/*", "twine upload -u __token__ -p [REDACTED] dist/*"),
    ("SSHPASS=CanarySshpassEnv1 sshpass -e ssh host", "SSHPASS=[REDACTED] sshpass -e ssh host"),
    (
        "git clone https://CanaryGhTok0123456789abcdef@github.com/o/r.git",
        "git clone https://[REDACTED]@github.com/o/r.git",
    ),
    (
        "DefaultEndpointsProtocol=https;AccountKey=CanaryAzureKey1==;x=y",
        "DefaultEndpointsProtocol=https;AccountKey=[REDACTED];x=y",
    ),
    ("SharedAccessKey=CanarySasKey1;EntityPath=q", "SharedAccessKey=[REDACTED];EntityPath=q"),
    ("?X-Amz-Date=1&X-Amz-Signature=CanaryAmzSig1&b=2", "?X-Amz-Date=1&X-Amz-Signature=[REDACTED]&b=2"),
    ("key SG.CanarySendGrid12345.abcdefghijklmnopqrstu ok", "key [REDACTED] ok"),
    ("secret whsec_CanaryWebhook1234567 ok", "secret [REDACTED] ok"),
    ("encryption_key: CanaryEnc1", "encryption_key: [REDACTED]"),
    ("MASTER_KEY=CanaryMaster1", "MASTER_KEY=[REDACTED]"),
    ("signing-key=CanarySign1", "signing-key=[REDACTED]"),
    ("passcode=CanaryCode1", "passcode=[REDACTED]"),
    # look-alikes
    ("function signature: foo(a, b)", "function signature: foo(a, b)"),
    ("bypass the cache", "bypass the cache"),
    ("ls -a /tmp && ssh -p 22 host", "ls -a /tmp && ssh -p 22 host"),
    ("ssh://git@github.com/o/r.git", "ssh://git@github.com/o/r.git"),
    ("https://docs.example.com@mirror/x", "https://docs.example.com@mirror/x"),
]


@pytest.mark.parametrize(("text", "shown"), MORE_LEAKS)
def test_more_secret_shapes_are_redacted_and_look_alikes_kept(text: str, shown: str) -> None:
    from loopguard.redact import redact_secrets

    assert redact_secrets(text) == shown


@pytest.mark.parametrize(
    "key",
    [
        "encryption_key",
        "master_key",
        "signing_key",
        "ssh_key",
        "private_key_id",
        "AccountKey",
        "passcode",
        "jwt",
        "mnemonic",
        "seed_phrase",
    ],
)
def test_more_secret_named_keys_hide_their_values(key: str) -> None:
    from loopguard.messages import arguments_preview

    assert "CanaryStructured1" not in arguments_preview({key: "CanaryStructured1", "n": 1}, 300)


def test_a_deny_reason_hides_the_new_shapes() -> None:
    guard = ToolGuard(ToolGuardConfig(arguments_preview_chars=2000))
    command = "redis-cli -a CanaryRedisPw2 ping; SSHPASS=CanarySshpass2 sshpass -e ssh h"
    for _ in range(2):
        guard.before_call("s", "bash", {"command": command})
        guard.after_call("s", "bash", {"command": command}, "ok")
    reason = guard.before_call("s", "bash", {"command": command}).reason
    assert "Arguments:" in reason and "Canary" not in reason
