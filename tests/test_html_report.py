"""``loopguard scan --html``: the page parses, references nothing outside itself, shows each loop's
kept and pruned text as the detection says (redacted), marks the guard's decisions on the calls,
survives hostile text, and stays bounded for 10,000 findings."""

from __future__ import annotations

import json
import re
import time
import tracemalloc
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

html5lib = pytest.importorskip("html5lib")

from loopguard.cli import CONTEXT_CHARS, main, scan_file, text_loops  # noqa: E402
from loopguard.config import TextConfig  # noqa: E402
from loopguard.redact import redact_excerpt  # noqa: E402
from loopguard.terminal import printable  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
from conftest import DATA, shared_data  # noqa: E402

REAL = DATA / "real"
EXAMPLE = ROOT / "examples" / "agent-loop.jsonl"
NS = "{http://www.w3.org/1999/xhtml}"
SCHEME = re.compile(r"^\s*[a-zA-Z][a-zA-Z0-9+.-]*:")


def write_report(capsys: pytest.CaptureFixture[str], out: Path, *paths: Path | str, extra: tuple[str, ...] = ()) -> str:
    code = main(["scan", "--no-progress", *extra, "--html", str(out), *map(str, paths)])
    capsys.readouterr()
    assert code in (0, 1)
    return out.read_text(encoding="utf-8")


def parse(page: str, *, strict: bool = True) -> ElementTree.Element:
    """The page's tree; no parse error reported (and, with ``strict``, none raised by a strict parser)."""
    parser = html5lib.HTMLParser(tree=html5lib.getTreeBuilder("etree"), strict=False)
    tree = parser.parse(page)
    assert parser.errors == []
    if strict:
        html5lib.HTMLParser(strict=True).parse(page)  # raises on the first parse error
    return tree  # type: ignore[no-any-return]


def assert_self_contained(root: ElementTree.Element, page: str) -> None:
    """No element refers to anything outside the page: no scheme but ``data:``, hrefs are anchors,
    no ``url(`` or ``@import`` in style."""
    for element in root.iter():
        for name, value in element.attrib.items():
            if name in ("src", "href", "action", "formaction", "poster", "srcset", "data", "background"):
                assert value.startswith("#") or value.startswith("data:"), (element.tag, name, value)
            if SCHEME.match(value) and not value.startswith("data:"):
                raise AssertionError((element.tag, name, value))
            if name == "style":
                assert "url(" not in value and "@import" not in value
        if element.tag in (NS + "style",):
            css = "".join(element.itertext())
            assert "@import" not in css
            assert all(m.startswith("data:") for m in re.findall(r"url\(\s*['\"]?([^)'\"]*)", css))
        assert element.tag not in (NS + "script", NS + "iframe", NS + "link", NS + "img", NS + "object")
    assert "http://" not in page and "https://" not in page


def by_id(root: ElementTree.Element, ident: str) -> ElementTree.Element:
    found = [e for e in root.iter() if e.get("id") == ident]
    assert len(found) == 1, ident
    return found[0]


def marked(details: ElementTree.Element, cls: str) -> str:
    parts = [e for e in details.iter() if e.get("class") == cls]
    assert len(parts) == 1, cls
    return "".join(parts[0].itertext())


def shown(text: str) -> str:
    """What the page shows of a text: lines kept, each made printable, noncharacters escaped."""
    lines = "\n".join(printable(line) for line in text.split("\n"))
    return re.sub("[\ufdd0-\ufdef\ufffe\uffff]", lambda m: f"\\u{ord(m.group()):04x}", lines)


def expected_parts(text: str, cut: int) -> tuple[str, str]:
    """kept = the tail of ``text[:cut]``, pruned = the head of ``text[cut:]``, redacted before the cut."""
    kept = redact_excerpt(text, max(0, cut - CONTEXT_CHARS), cut)
    pruned = redact_excerpt(text, cut, cut + CONTEXT_CHARS)
    return shown(kept), shown(pruned)


def check_loops(root: ElementTree.Element, file_no: int, path: Path, texts: dict[str, str]) -> int:
    """Every text loop scan lists is on the page with its kept and pruned text; ``texts`` maps
    ``repr(where) + channel`` to the channel's original text. Returns the number checked."""
    report = scan_file(str(path), TextConfig())
    loops = text_loops(report)
    for n, (finding, kinds, _) in enumerate(loops, 1):
        d = finding.detection
        details = by_id(root, f"f{file_no}-{n}")
        text = texts[repr(finding.where) + d.channel]
        kept, pruned = expected_parts(text, d.cut)
        assert marked(details, "kept") == kept
        pruned_element = [e for e in details.iter() if e.get("class") == "pruned"]
        assert pruned_element[0].tag == NS + "del"
        assert marked(details, "pruned") == pruned
        facts = {
            "".join(row[0].itertext()): "".join(row[1].itertext()) for row in details.iter(NS + "tr") if len(row) == 2
        }
        assert facts["kind"] == kinds
        assert facts["cut"] == str(d.cut)
        assert facts["start"] == str(d.start)
        assert facts["position"] == str(d.position)
        period = d.evidence.get("period")
        assert facts["period"] == (str(period) if period is not None else "—")
        left_before = max(0, d.cut - CONTEXT_CHARS)
        if left_before:
            assert f"[… {left_before} code points before not shown]" in "".join(details.itertext())
    return len(loops)


def test_example_report(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    page = write_report(capsys, out, EXAMPLE)
    root = parse(page)
    assert_self_contained(root, page)
    lines = [json.loads(line) for line in EXAMPLE.read_text().splitlines()]
    texts = {}
    for i, record in enumerate(lines):
        if record.get("role") == "assistant":
            where = {"message": i, "line": i + 1}
            texts[repr(where) + "reasoning"] = record.get("reasoning_content", "")
            texts[repr(where) + "text"] = record.get("content") or ""
    assert check_loops(root, 1, EXAMPLE, texts) == 1
    details = by_id(root, "f1-1")
    assert "message 1, line 2 · reasoning · cycle + near_cycle" in "".join(details[0].itertext())
    # the timeline: four identical grep calls grouped, the guard's notice, deny, notice on them
    timeline = by_id(root, "t1-1")
    items = list(timeline.iter(NS + "li"))
    text = "".join(items[0].itertext())
    assert text.startswith("calls 0–3: grep ×4")
    assert [e.get("class") for e in items[0].iter(NS + "span") if "act" in (e.get("class") or "")] == [
        "act notice",
        "act deny",
        "act notice",
    ]
    assert "NOTICE repeat @1" in text and "DENY repeat @2" in text and "NOTICE locked (repeat) @3" in text
    # the summary table links to the file's section
    rows = list(by_id(root, "file1").iter())
    assert rows
    links = [a.get("href") for a in root.iter(NS + "a")]
    assert links == ["#file1"]
    cells = ["".join(td.itertext()) for td in by_id(root, "summary").iter(NS + "td")]
    assert cells == [str(EXAMPLE), "chat", "1", "1", "3", "loops found"]
    assert "grep" in page and '"pattern"' not in page  # the name, never the arguments
    assert oct(out.stat().st_mode & 0o777) != oct(0o600)


def _dataset_texts(path: Path) -> dict[str, str]:
    texts = {}
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        record = json.loads(line)
        field = next(k for k in ("text", "output", "response", "completion") if isinstance(record.get(k), str))
        where: dict[str, Any] = {"line": i + 1}
        if "id" in record:
            where["id"] = record["id"]
        texts[repr(where) + "reasoning"] = record[field]
    return texts


@shared_data
def test_real_files(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    claude = REAL / "claude-code" / "citation-check-229ca9.jsonl"
    reasoning = REAL / "reasoning" / "cot-loop_qwen3-1.7b_gpqa.jsonl"
    traj = REAL / "swe-agent" / "eps.traj"
    out = tmp_path / "real.html"
    page = write_report(capsys, out, claude, reasoning, traj)
    root = parse(page)
    assert_self_contained(root, page)
    # the reasoning file: its 12 loops, each with the kept and pruned text scan's detection gives
    texts = _dataset_texts(reasoning)
    report = scan_file(str(reasoning), TextConfig())
    wheres = {repr(f.where) for f in report.loops}
    assert wheres <= {key[: -len("reasoning")] for key in texts}
    assert check_loops(root, 2, reasoning, texts) == 12
    # the Claude Code log: its guard decision on the call it hit, in the timeline
    claude_report = scan_file(str(claude), TextConfig())
    (finding,) = claude_report.guard_findings
    hit = [
        li
        for li in root.iter(NS + "li")
        if any((e.get("class") or "").startswith("act ") for e in li.iter(NS + "span"))
        and f"@{finding.call}" in "".join(li.itertext())
    ]
    assert hit
    rule = finding.kind if finding.kind == finding.rule else f"{finding.kind} ({finding.rule})"
    assert f"{finding.action.upper()} {rule} @{finding.call}" in "".join(hit[0].itertext())
    # the .traj: steps 9-12 grouped as one run of four submits, with three decisions
    eps = [li for li in root.iter(NS + "li") if "".join(li.itertext()).startswith("calls 9–12: submit ×4")]
    assert len(eps) == 1 and eps[0].get("class") == "loop"
    assert len([e for e in eps[0].iter(NS + "span") if (e.get("class") or "").startswith("act ")]) == 3
    assert "flag{" not in page  # the submit's argument is never shown


CANARY_KEY = "sk-proj-" + "Zq7xR2mN9vB4kL1pT8wY3cF6hJ0dS5gA"
CANARY_PASSWORD = "hunter2-Canary-" + "Xy91Qw"


def test_canary_secret_never_shown(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    unit = f"I will retry the call with api_key {CANARY_KEY} and password={CANARY_PASSWORD} now.\n"
    record = {"role": "assistant", "content": "Let me check the config first.\n" + unit * 40}
    log = tmp_path / "chat.jsonl"
    log.write_text(json.dumps({"role": "user", "content": "go"}) + "\n" + json.dumps(record) + "\n")
    out = tmp_path / "secret.html"
    page = write_report(capsys, out, log)
    root = parse(page)
    texts = {repr({"message": 1, "line": 2}) + "text": record["content"]}
    assert check_loops(root, 1, log, texts) >= 1
    assert "[REDACTED]" in page
    for secret in (CANARY_KEY, CANARY_PASSWORD):
        for i in range(0, len(secret) - 6):  # no head, tail or middle of a secret
            assert secret[i : i + 7] not in page, secret[i : i + 7]


HOSTILE = "</script><script>alert(1)</script> <!-- x --> \x00 \x1b[2J \u202e\u2066 \ufffe \x85 \ud800 ]]> & \" '"


def test_hostile_text_and_names(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    unit = f"Again the same step {HOSTILE} and once more.\n"
    lines = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": "Start.\n" + unit * 30,
            "tool_calls": [
                {"id": f"c{i}", "type": "function", "function": {"name": f"x{HOSTILE}", "arguments": "{}"}}
                for i in range(4)
            ],
        },
    ]
    log = tmp_path / ("bad<name>\u202e" + ".jsonl")
    log.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    out = tmp_path / "hostile.html"
    page = write_report(capsys, out, log)
    root = parse(page)
    assert_self_contained(root, page)
    for raw in ("<script", "<!--", "\x00", "\x1b", "\u202e", "\u2066", "\ufffe", "\x85", "]]>"):
        assert raw not in page
    assert list(root.iter(NS + "script")) == []
    texts = {repr({"message": 1, "line": 2}) + "text": lines[1]["content"]}
    assert check_loops(root, 1, log, texts) >= 1
    assert "&lt;/script&gt;" in page and "\\u202e" in page and "\\x00" in page and "\\ud800" in page
    timeline = [li for li in root.iter(NS + "li") if "×4" in "".join(li.itertext())]
    assert len(timeline) == 1


def _looping_dataset(path: Path, records: int) -> None:
    with path.open("w", encoding="utf-8") as out:
        for i in range(records):
            unit = f"Step {i % 7}: compute the sum of the values again and check it. "
            text = f"Record {i}. Let me think about this problem carefully.\n" + unit * 12
            out.write(json.dumps({"id": f"r{i}", "text": text}) + "\n")


def test_ten_thousand_findings(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    data = tmp_path / "loops.jsonl"
    _looping_dataset(data, 10_000)
    out = tmp_path / "big.html"
    tracemalloc.start()
    began = time.perf_counter()
    try:
        code = main(["scan", "--no-progress", "--summary", "--html", str(out), str(data)])
        seconds = time.perf_counter() - began
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    summary, _ = capsys.readouterr()
    assert code == 1
    assert "loops found: 10000 text loops" in summary
    size = out.stat().st_size
    with capsys.disabled():
        print(
            f"\n10,000-finding HTML report: {size:,} bytes, {seconds:.1f} s (under tracemalloc), "
            f"peak traced memory {peak / 2**20:.1f} MiB, input {data.stat().st_size:,} bytes"
        )
    # bounded: far below the page (holding every finding's HTML would exceed it)
    assert peak < 8 * 2**20
    assert peak < size / 2
    page = out.read_text(encoding="utf-8")
    root = parse(page, strict=False)  # no parse error reported (a second, strict parse would take as long)
    assert_self_contained(root, page)
    details = [e for e in root.iter(NS + "details") if (e.get("id") or "").startswith("f1-")]
    assert len(details) == 10_000
    assert len([e for e in details if e.get("open") is not None]) == 1  # collapsed but the first
    assert size < 10_000 * 8_000  # bounded per finding
    cells = ["".join(td.itertext()) for td in by_id(root, "summary").iter(NS + "td")]
    assert cells[2:5] == ["10000", "0", "0"]


def test_other_outputs_unchanged(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """--html beside the normal output, --json or --summary: that output is as without it, the page the same."""
    pages = []
    for extra in ((), ("--json",), ("--summary",)):
        plain = main(["scan", "--no-progress", *extra, str(EXAMPLE)]), capsys.readouterr()
        out = tmp_path / f"{len(pages)}.html"
        with_html = main(["scan", "--no-progress", *extra, "--html", str(out), str(EXAMPLE)]), capsys.readouterr()
        assert with_html == plain
        pages.append(out.read_bytes())
    assert pages[0] == pages[1] == pages[2]
    assert not list(tmp_path.glob(".loopguard-*"))  # the temporary page was renamed


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ("{input}", "is one of the files to scan: the HTML report would replace it"),
        ("{link}", "is one of the files to scan: the HTML report would replace it"),
        ("{tmp}/missing/report.html", "the HTML report's folder does not exist"),
        ("{tmp}", "is a folder: give the HTML report a file path"),
        ("-", "the HTML report cannot go to standard output: give a file path"),
    ],
)
def test_bad_report_path_refused_before_the_scan(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, where: str, message: str
) -> None:
    """A report path that cannot be written, or would replace an input, is refused with one line and
    exit 2 before anything is scanned; the input is untouched and no file is written."""
    log = tmp_path / "in.jsonl"
    log.write_bytes(EXAMPLE.read_bytes())
    (tmp_path / "link.jsonl").symlink_to(log)
    out = where.format(input=log, link=tmp_path / "link.jsonl", tmp=tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    code = main(["scan", "--no-progress", "--html", out, str(log)])
    captured = capsys.readouterr()
    assert (code, captured.out, captured.err) == (2, "", f"loopguard: error: {out}: {message}\n")
    assert log.read_bytes() == EXAMPLE.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_report_in_a_scanned_folder_is_not_scanned(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Scanning a folder twice with the page inside it: the second run does not read the first page
    as a log (same findings, same page)."""
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "agent-loop.jsonl").write_bytes(EXAMPLE.read_bytes())
    out = folder / "report.html"
    runs = []
    for _ in range(2):
        code = main(["scan", "--no-progress", "--html", str(out), str(folder)])
        runs.append((code, capsys.readouterr().out, out.read_bytes()))
    assert runs[0] == runs[1]
    assert runs[0][0] == 1 and "scanned 1 file: 1 with loops" in runs[0][1]


def test_report_write_failure_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the page cannot be written at the end (the disk filled), the scan's own output stands,
    the error is one line naming the path and the exit status is 2."""
    from loopguard import html_report

    def full(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(html_report.os, "replace", full)
    out = tmp_path / "r.html"
    plain = main(["scan", "--no-progress", str(EXAMPLE)]), capsys.readouterr().out
    code = main(["scan", "--no-progress", "--html", str(out), str(EXAMPLE)])
    captured = capsys.readouterr()
    assert (code, captured.out) == (2, plain[1])
    assert captured.err == f"loopguard: error: {out}: the HTML report was not written: No space left on device\n"
    assert sorted(tmp_path.iterdir()) == []
