"""``loopguard scan --html REPORT.html``: one self-contained HTML page of the findings.

The page has inline CSS only (no script, no external asset, no URL): a summary table
(one row per file, with in-page anchors), then per file its format and counts, each text
loop in a collapsed ``<details>`` (where, kind, period, positions, and the text either side
of the cut with the kept part and the pruned part marked, secrets redacted), and each
conversation's tool calls as a timeline (runs of identical calls grouped, the guard's
decisions marked on the calls they hit).

The page is written as the scan goes: each conversation's findings go to a temporary file
as :class:`HtmlReport`'s sink gets them, each file's section is appended to the body (a
temporary file) when the file ends, and the page is assembled at the end by copying: memory
holds one conversation's findings, not the report.
"""

from __future__ import annotations

import html
import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from typing import IO, Any

from .cli import FileReport, FindingSpool, TextFinding, _status, text_loops, where_label
from .errors import InputError
from .terminal import printable, shown_name
from .toolruns import GuardFinding, hash_prefix

__all__ = ["MAX_TIMELINE_GROUPS", "HtmlReport", "check_output", "safe_text"]

#: Findings shown open (not collapsed) at the top of the page: the first loop and timeline of
#: each file, up to this many in all.
OPEN_FINDINGS = 12

#: Groups of identical calls shown per conversation in a timeline (the rest are counted).
MAX_TIMELINE_GROUPS = 300

# noncharacters (U+FDD0–U+FDEF, U+xFFFE, U+xFFFF): a parse error in HTML, never in a model's text
_NONCHARACTER = re.compile(
    "[\ufdd0-\ufdef\ufffe\uffff" + "".join(f"\\U{p:04x}fffe\\U{p:04x}ffff" for p in range(1, 17)) + "]"
)


def safe_text(text: str) -> str:
    """``text`` ready for HTML: line breaks kept, every other control, bidi, invisible or
    surrogate code point made a visible escape (:func:`loopguard.terminal.printable`), HTML
    noncharacters as ``\\uFFFE``, then :func:`html.escape` (quotes too)."""
    lines = (printable(line) for line in text.split("\n"))
    shown = "\n".join(lines)
    shown = _NONCHARACTER.sub(lambda m: f"\\u{ord(m.group()):04x}", shown)
    return html.escape(shown, quote=True)


def _e(text: Any) -> str:
    """One field from a log (a path, a name, a label): one line, escaped."""
    return safe_text(printable(str(text)))


_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:1.5em;color:#1b1b1b;background:#fff}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:2em;border-bottom:1px solid #ccc}
h3{font-size:1em}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}
td.n{text-align:right}.loops{color:#a00;font-weight:bold}.clean{color:#070}
details{margin:.4em 0;border:1px solid #ddd;border-radius:4px;padding:.3em .6em}
summary{cursor:pointer}.meta{color:#555}
pre.text{white-space:pre-wrap;word-break:break-all;background:#fafafa;border:1px solid #eee;
padding:.5em;max-height:40em;overflow:auto;font:12px/1.4 ui-monospace,monospace}
.kept{background:#e3f4e3}.pruned{background:#fde2e2;color:#800;text-decoration:line-through}
.cut{background:#000;color:#fff;font-weight:bold;padding:0 3px}.gap{color:#888;font-style:italic}
ol.timeline{list-style:none;padding-left:0;font:12px/1.5 ui-monospace,monospace}
ol.timeline li{border-left:3px solid #bbb;padding-left:.6em;margin:1px 0}
ol.timeline li.run{border-left-color:#e0a000}ol.timeline li.loop{border-left-color:#c00}
.act{display:inline-block;padding:0 4px;margin-left:4px;border-radius:3px;font-weight:bold}
.notice{background:#fff2b3}.deny{background:#f8b4b4}.cancel{background:#a00;color:#fff}
"""


def _n(count: int, word: str) -> str:
    return f"{count} {word}{'s' if count != 1 else ''}"


def _rule(finding: GuardFinding) -> str:
    """The rule as scan prints it: ``repeat``, ``locked (repeat)``."""
    return finding.kind if finding.kind == finding.rule else f"{finding.kind} ({finding.rule})"


class _Sink(FindingSpool):
    """The sink :func:`loopguard.cli.scan_file` gives each conversation's findings to: the
    HTML report gets them, and so does the spool of the normal output or ``--json``, if any."""

    context = True  # the page shows the kept and pruned text

    def __init__(self, report: HtmlReport, inner: FindingSpool | None) -> None:
        super().__init__(json_output=inner.json_output if inner is not None else False)
        self._report = report
        self._inner = inner

    def add(self, one: FileReport) -> None:
        if self._inner is not None:
            self._inner.add(one)
        self._report.conversation(one)

    def human_lines(
        self, report: FileReport, *, show_clean: bool = False, max_findings: int | None = None
    ) -> Iterator[str]:
        if self._inner is None:
            return iter(())
        return self._inner.human_lines(report, show_clean=show_clean, max_findings=max_findings)

    def json_text(self, report: FileReport) -> Iterator[str]:
        if self._inner is None:
            return iter(())
        return self._inner.json_text(report)

    def close(self) -> None:
        if self._inner is not None:
            self._inner.close()
        super().close()


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def check_output(
    path: str, named: Sequence[str], targets: list[tuple[str, InputError | None]]
) -> list[tuple[str, InputError | None]]:
    """Check ``--html PATH`` before anything is scanned; ``targets`` (the expanded inputs) without
    the report itself when a folder walk found an earlier copy of it.

    Parameters
    ----------
    path : str
        The report's path.
    named : Sequence[str]
        The inputs as given on the command line (files, folders, ``-``).
    targets : list[tuple[str, InputError | None]]
        :func:`loopguard.logs.expand_paths` of ``named``.

    Raises
    ------
    InputError
        naming ``path`` when it is ``-``, a folder, in a folder that does not exist or cannot be
        written, or one of the files named to scan (the page would replace it).
    """
    if path == "-":
        raise InputError("the HTML report cannot go to standard output: give a file path", path=path)
    if os.path.isdir(path):
        raise InputError("is a folder: give the HTML report a file path", path=path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise InputError("the HTML report's folder does not exist", path=path)
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError("the HTML report's folder is not writable", path=path)
    if not os.path.exists(path):
        return targets
    for given in named:
        if given != "-" and _same_file(given, path):
            raise InputError("is one of the files to scan: the HTML report would replace it", path=path)
    return [(p, e) for p, e in targets if p == "-" or e is not None or not _same_file(p, path)]


class HtmlReport:
    """The HTML report of one ``loopguard scan`` run, written incrementally.

    Use :meth:`sink` for each file's :func:`~loopguard.cli.scan_file` (it gets the findings
    conversation by conversation), :meth:`add_file` when the file's report is complete, and
    :meth:`finish` to write the page to ``path`` (:meth:`close` removes the temporary files).

    Parameters
    ----------
    path : str
        Where the page goes (written at :meth:`finish`, through a temporary file beside it).
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._body = self._temp()
        self._rows = self._temp()
        self._file: IO[str] = self._temp()  # the current file's findings
        self._files = 0
        self._conversations = 0  # of the current file
        self._finding = 0  # of the current file
        self._opened = 0  # details shown open
        self._timelines = 0  # of the current file
        self.totals = {"files": 0, "text loops": 0, "tool runs": 0, "guard findings": 0}

    @staticmethod
    def _temp() -> IO[str]:
        return tempfile.TemporaryFile(mode="w+", encoding="utf-8", newline="\n")

    def sink(self, inner: FindingSpool | None) -> FindingSpool:
        """The sink for the next file (wrapping the output's own spool, ``None`` with ``--summary``)."""
        return _Sink(self, inner)

    # ------------------------------------------------------------------ per conversation

    def conversation(self, one: FileReport) -> None:
        """Write one conversation's findings (its text loops and its timeline) for the current file."""
        self._conversations += 1
        loops = text_loops(one)
        if not loops and not one.calls and not one.tool_runs and not one.guard_findings:
            return
        out = self._file
        for finding, kinds, strong in loops:
            self._finding += 1
            out.write(self._loop(finding, kinds, strong))
        if one.calls or one.guard_findings:
            out.write(self._timeline(one))

    def _loop(self, finding: TextFinding, kinds: str, strong: bool) -> str:
        d = finding.detection
        anchor = f"f{self._files + 1}-{self._finding}"
        period = d.evidence.get("period")
        where = where_label(finding.where)
        label = "LOOP" if strong else "maybe"
        title = " · ".join(p for p in (where, d.channel, kinds) if p)
        before = max(0, min(d.cut, finding.length) - 1500)
        after = max(0, finding.length - max(d.cut, 0) - 1500)
        facts = [
            ("where", where or "—"),
            ("channel", d.channel),
            ("kind", kinds),
            ("strength", d.strength),
            ("period", str(period) if period is not None else "—"),
            ("start", str(d.start)),
            ("cut", str(d.cut)),
            ("position", str(d.position)),
            ("length", str(finding.length)),
            ("keep / prune", f"{max(0, min(d.cut, finding.length))} / {max(0, finding.length - d.cut)} code points"),
        ]
        rows = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in facts)
        text = ""
        if before:
            text += f'<span class="gap">[… {before} code points before not shown]</span>\n'
        text += f'<span class="kept">{safe_text(finding.kept)}</span>'
        text += '<span class="cut" title="cut">✂</span>'
        text += f'<del class="pruned">{safe_text(finding.pruned)}</del>'
        if after:
            text += f'\n<span class="gap">[… {after} code points after not shown]</span>'
        return (
            f'<details id="{anchor}"{self._open(self._finding == 1)}><summary><b class="{"loops" if strong else "meta"}">{label}</b> '
            f"{_e(title)} · cut {d.cut}</summary>\n"
            f'<table class="facts">{rows}</table>\n<pre class="text">{text}</pre></details>\n'
        )

    def _open(self, first: bool) -> str:
        """`` open`` for the first finding of its kind in a file, while fewer than :data:`OPEN_FINDINGS` are."""
        if not first or self._opened >= OPEN_FINDINGS:
            return ""
        self._opened += 1
        return " open"

    def _timeline(self, one: FileReport) -> str:
        self._timelines += 1
        hits: dict[int, list[GuardFinding]] = {}
        for finding in one.guard_findings:
            hits.setdefault(finding.call, []).append(finding)
        loops = {call for run in one.tool_runs if run.loop for call in run.calls}
        groups: list[tuple[int, int]] = []  # (first call, count): identical consecutive calls
        for index, (_, digest) in enumerate(one.calls):
            if groups and one.calls[groups[-1][0]][1] == digest:
                first, count = groups[-1]
                groups[-1] = (first, count + 1)
            else:
                groups.append((index, 1))
        items = []
        for first, count in groups[:MAX_TIMELINE_GROUPS]:
            name, digest = one.calls[first]
            span = f"call {first}" if count == 1 else f"calls {first}–{first + count - 1}"
            marks = "".join(
                f'<span class="act {_e(f.action)}">{_e(f.action.upper())} {_e(_rule(f))} @{f.call}</span>'
                for call in range(first, first + count)
                for f in hits.get(call, ())
            )
            cls = ' class="loop"' if first in loops else (' class="run"' if count > 1 else "")
            times = f" ×{count}" if count > 1 else ""
            items.append(
                f"<li{cls}>{span}: <b>{_e(shown_name(name))}</b>{times} "
                f'<span class="meta">{hash_prefix(digest)}</span>{marks}</li>'
            )
        left = len(groups) - MAX_TIMELINE_GROUPS
        if left > 0:
            rest = sum(count for _, count in groups[MAX_TIMELINE_GROUPS:])
            later = [f for f in one.guard_findings if f.call >= groups[MAX_TIMELINE_GROUPS][0]]
            items.append(
                f'<li class="gap">… {rest} more calls in {left} groups not shown'
                f" ({len(later)} guard decisions among them)</li>"
            )
        for index, (calls, findings) in one.after_cancel.items():
            if calls:
                cancel = one.guard_findings[index].call
                items.append(
                    f'<li class="gap">the guard cancelled at call {cancel}: {calls} more calls after it'
                    f" ({findings} guard findings not listed)</li>"
                )
        n = len(one.calls)
        decisions = len(one.guard_findings)
        return (
            f'<details id="t{self._files + 1}-{self._conversations}"{self._open(self._timelines == 1)}>'
            f"<summary>tool calls, conversation {self._conversations}: {n} call{'s' if n != 1 else ''}, "
            f"{decisions} guard decision{'s' if decisions != 1 else ''}</summary>\n"
            f'<ol class="timeline">{"".join(items)}</ol></details>\n'
        )

    # ------------------------------------------------------------------ per file

    def add_file(self, report: FileReport) -> None:
        """The file's report is complete: append its section (header, then its findings) to the body."""
        self._files += 1
        anchor = f"file{self._files}"
        counts = report.counts() if report.error is None else {}
        loops = counts.get("text loops", 0)
        runs = counts.get("tool runs", 0)
        guards = counts.get("guard findings", 0)
        stops = loops + runs + guards
        status = "unreadable" if report.error is not None else _status(report)
        self.totals["files"] += 1
        self.totals["text loops"] += loops
        self.totals["tool runs"] += runs
        self.totals["guard findings"] += guards
        cls = "loops" if report.error is None and report.has_loop else ("clean" if not stops else "meta")
        self._rows.write(
            f'<tr><td><a href="#{anchor}">{_e(report.path)}</a></td><td>{_e(report.format or "—")}</td>'
            f'<td class="n">{loops}</td><td class="n">{runs}</td><td class="n">{guards}</td>'
            f'<td class="{cls}">{_e(status)}</td></tr>\n'
        )
        body = self._body
        body.write(
            f'<section><h2 id="{anchor}">{_e(report.path)}</h2>\n<p class="meta">format {_e(report.format or "—")}'
        )
        counted = f"{_n(loops, 'text loop')}, {_n(runs, 'tool run')}, {_n(guards, 'guard decision')}"
        body.write(f" · {_e(status)} · {counted}</p>\n")
        if report.error is not None:
            body.write(f"<p>unreadable: {_e(str(report.error))}</p>\n")
        for bad in report.bad_lines[:100]:
            body.write(f'<p class="meta">line skipped: {_e(str(bad))}</p>\n')
        if len(report.bad_lines) > 100:
            body.write(f'<p class="meta">… {len(report.bad_lines) - 100} more bad lines</p>\n')
        if report.stopped is not None:
            body.write(f'<p class="meta">cut short: {_e(str(report.stopped))}</p>\n')
        self._file.seek(0)
        shutil.copyfileobj(self._file, body)
        body.write("</section>\n")
        self._file.close()
        self._file = self._temp()
        self._conversations = 0
        self._finding = 0
        self._timelines = 0

    # ------------------------------------------------------------------ the page

    def finish(self) -> None:
        """Write the page: header, summary table, the files' sections (copied, not read whole)."""
        folder = os.path.dirname(os.path.abspath(self.path))
        fd, temp = tempfile.mkstemp(prefix=".loopguard-", suffix=".html", dir=folder)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
                t = self.totals
                out.write(
                    '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
                    "<title>loopguard scan report</title>\n"
                    f"<style>{_CSS}</style></head><body>\n<h1>loopguard scan report</h1>\n"
                    f'<p class="meta">{_n(t["files"], "file")} · {_n(t["text loops"], "text loop")}'
                    f" · {_n(t['tool runs'], 'tool run')} · {_n(t['guard findings'], 'guard decision')}. In each loop's text the "
                    '<span class="kept">kept</span> part ends at the cut <span class="cut">✂</span>, '
                    'the <del class="pruned">pruned</del> part follows; secrets are redacted.</p>\n'
                    '<table id="summary"><thead><tr><th>file</th><th>format</th><th>text loops</th><th>tool runs</th>'
                    "<th>guard actions</th><th>status</th></tr></thead><tbody>\n"
                )
                self._rows.seek(0)
                shutil.copyfileobj(self._rows, out)
                out.write("</tbody></table>\n")
                self._body.seek(0)
                shutil.copyfileobj(self._body, out)
                out.write("</body></html>\n")
            umask = os.umask(0o022)
            os.umask(umask)
            os.chmod(temp, 0o666 & ~umask)  # as open() would have made it (mkstemp gives 0600)
            os.replace(temp, self.path)
        except BaseException:
            os.unlink(temp)
            raise

    def close(self) -> None:
        """Remove the temporary files."""
        for temp in (self._body, self._rows, self._file):
            temp.close()
