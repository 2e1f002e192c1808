"""The ``loopguard`` command line: ``loopguard scan PATH...`` (spec §6, §8).

The scanner is observe-only: it reads logs, never writes them.  Each file is
read by :func:`loopguard.logs.read_log` into conversations of assistant
messages; every message is scanned with a fresh
:class:`~loopguard.TextLoopDetector` (one message = one attempt), and every
conversation's tool calls are searched for runs of identical calls
(:func:`loopguard.toolruns.find_runs`) and replayed through a fresh
:class:`~loopguard.ToolGuard` with its default config
(:func:`loopguard.toolruns.guard_conversation`).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import __version__
from . import clean as clean_command
from . import stats as stats_command
from .config import PROFILES, TextConfig
from .errors import InputError
from .evaluate_records import ALL_PROFILES, DEFAULT_JOBS, DELTA_CHARS, GROUP_KEYS
from .evaluate_runs import RUN_GROUP_KEYS
from .logs import DATASET_FIELDS, Conversation, LogFile, Message, expand_paths
from .logs.stream import LogStream
from .redact import redact_excerpt, redact_secrets
from .terminal import printable, shown_name
from .text import CHANNELS, Detection, TextLoopDetector
from .toolruns import (
    DEFAULT_MAX_REPEATS,
    ConversationGuard,
    GuardFinding,
    RunFinder,
    ToolRun,
    call_hash,
    find_runs,
    guard_conversation,
)

if TYPE_CHECKING:
    from .evaluate import Case
    from .evaluate_records import RecordSet

__all__ = ["FileReport", "FindingSpool", "TextFinding", "build_parser", "main", "scan_file", "scan_log"]

EXCERPT_CHARS = 80
#: Code points of the text shown before and after a loop's cut in the HTML report.
CONTEXT_CHARS = 1500

_SCAN_DESCRIPTION = f"""\
Scan stored agent logs for loops and report where each one is and where it
would be cut. Observe-only: files are never modified.

Formats are told from the content (any file may be gzip or zstd compressed):
  plain text / Markdown  the whole file is one "text" channel
  chat                   OpenAI-style JSON Lines, one message per line or a
                         record per line with "messages": [...]; assistant
                         "reasoning_content"/"reasoning" -> reasoning channel,
                         "content" -> text channel, "tool_calls" -> tool calls
  claude-code            Claude Code stream-json; blocks of one message id form
                         one message (thinking -> reasoning, text -> text)
  swe-agent              .traj: each trajectory step is a message (thought ->
                         text channel, action -> tool call); steps are 0-based
  tool-calls             a JSON list of {{"tool", "args", "result", "error"}}
  tool-call-records      JSON Lines of recorded runs, one per line with those
                         calls in "calls" (e.g. an agent benchmark's runs);
                         reported per record by line and id
  dataset                JSON Lines records whose model output is a string
                         field ({", ".join(DATASET_FIELDS)}, or --field NAME);
                         reported per record by line and id. The field holds
                         reasoning and answer together, so it is scanned as the
                         "reasoning" channel (fenced code is not masked).

Each assistant message is scanned with a fresh detector per channel (one
message = one attempt); positions are code points into that channel's text.
Runs of 2+ consecutive identical tool calls are reported (tool name, count,
call indices, 12-hex hash prefix, whether the results were identical too);
tool arguments and results are never printed. A run of {DEFAULT_MAX_REPEATS}+ counts as a loop
unless its results change (polling that makes progress is not a loop).
Each conversation's calls are also replayed through the ToolGuard (default
config): every notice, DENY and CANCEL it would have given is listed with its
0-based call index and kind (with its rule when the names differ; see docs/rules.md).

JSON Lines files are read line by line (dataset and chat-record files one
record at a time: memory is bounded by the largest record). A bad line (not
JSON, not an object, not UTF-8, or a record its reader rejects) is named on
stderr with file and line and skipped; the rest of the file is scanned.
PATH "-" reads standard input. For big inputs: --summary (one line per file,
then totals), --max-findings N; a conversation's guard findings after its
first cancel are one line ("N more calls after the cancel"). A progress bar
is shown on stderr only on a terminal (--no-progress turns it off).

exit status: 0 clean, 1 loops found (any text detection, a run of
{DEFAULT_MAX_REPEATS}+ identical tool calls with unchanged results, or a call the
ToolGuard denies or cancels), 2 unreadable input or a bad line skipped (named
on stderr with file and line; the other files and the rest of the file are
still scanned; 2 wins over 1).
"""


# --------------------------------------------------------------------------- scanning


@dataclass(frozen=True)
class TextFinding:
    """A text detection with where it is in the file.

    Attributes
    ----------
    detection : Detection
        The detection (positions in the channel's text).
    where : dict
        The message's location (message index / step / line / id).
    excerpt : str
        Up to 80 characters of the repeated unit, from ``start``, secrets redacted
        (:func:`loopguard.redact.redact_excerpt`).
    length : int
        Length of the channel text (code points).
    kept : str
        Up to :data:`CONTEXT_CHARS` code points of the text before the cut (the end of what
        is kept), secrets redacted; for ``loopguard scan --html``.
    pruned : str
        Up to :data:`CONTEXT_CHARS` code points from the cut (the start of what would be
        pruned), secrets redacted.
    """

    detection: Detection
    where: dict[str, Any]
    excerpt: str
    length: int
    kept: str = ""
    pruned: str = ""

    def to_dict(self) -> dict[str, Any]:
        """``Detection.to_dict()`` plus ``where``; the evidence's ``phrases`` redacted."""
        out = self.detection.to_dict()
        evidence = out["evidence"]
        if isinstance(evidence.get("phrases"), list):
            evidence["phrases"] = [redact_secrets(p) if isinstance(p, str) else p for p in evidence["phrases"]]
        return {**out, "where": dict(self.where)}


@dataclass
class FileReport:
    """What the scanner found in one file.

    Attributes
    ----------
    path : str
        The file.
    format : str | None
        Its format (``None`` when it could not be read).
    loops : list[TextFinding]
        Text detections, in message order.
    tool_runs : list[ToolRun]
        Runs of 2+ identical consecutive tool calls.
    guard_findings : list[GuardFinding]
        What the full :class:`loopguard.ToolGuard` (default config) decided
        about the logged calls: notices, denials, cancels, with call indices.
    error : InputError | None
        Why the file could not be read.
    bad_lines : list[InputError]
        Lines skipped as unreadable (invalid JSON, not an object, not UTF-8,
        a record its reader rejects), each naming the file and line; the
        rest of the file was scanned.
    stopped : InputError | None
        Where corrupt or truncated compressed data ended the file early (the
        1-based line it broke in); the findings are those of the lines before.
    after_cancel : dict[int, tuple[int, int]]
        Per cancel (its index in ``guard_findings``, the first cancel of its
        conversation): the conversation's calls after it and the guard
        findings about them, which are not kept (the session was already
        cancelled; a log that went on shows one finding per call).
    counts_only : bool
        Keep only the counts of the findings (``--summary``), in ``counted``.
    counted : dict[str, int]
        The counts of the findings not kept (see :meth:`counts`), and ``"loop"``: 1
        when one of them is a loop.
    sink : FindingSpool | None
        Where the findings went instead of the lists above (the normal output and
        ``--json`` of ``loopguard scan``); the report keeps their counts.
    calls : list[tuple[str, str]]
        On the report of one conversation a sink gets: its tool calls in order, as
        ``(name, call hash)`` (never the arguments), for the HTML report's timeline.
    """

    path: str
    format: str | None
    loops: list[TextFinding] = field(default_factory=list)
    tool_runs: list[ToolRun] = field(default_factory=list)
    guard_findings: list[GuardFinding] = field(default_factory=list)
    error: InputError | None = None
    bad_lines: list[InputError] = field(default_factory=list)
    stopped: InputError | None = None
    after_cancel: dict[int, tuple[int, int]] = field(default_factory=dict)
    counts_only: bool = False
    counted: dict[str, int] = field(default_factory=dict)
    sink: FindingSpool | None = None
    calls: list[tuple[str, str]] = field(default_factory=list)

    @property
    def has_loop(self) -> bool:
        """A strong text detection (a weak one is a possible loop: a Session's
        notice), a tool run long enough to be a loop, or a call the ToolGuard
        would have denied or cancelled."""
        return (
            bool(self.counted.get("loop"))
            or any(f.detection.strong for f in self.loops)
            or any(run.loop for run in self.tool_runs)
            or any(f.stops for f in self.guard_findings)
        )

    def counts(self) -> dict[str, int]:
        """The ``--summary`` counts: ``text loops`` (as listed), ``tool runs``, ``guard findings``,
        ``after cancel`` (calls after a cancel) and ``text findings`` (detections); with
        ``counts_only`` (set by :func:`scan_file` for ``--summary``) or a ``sink`` the findings
        themselves are not kept in the report, only these counts."""
        out = {
            "text loops": len(_text_entries(self)),
            "tool runs": len(self.tool_runs),
            "guard findings": len(self.guard_findings),
            "after cancel": sum(calls for calls, _ in self.after_cancel.values()),
            "text findings": len(self.loops),
        }
        return {key: value + self.counted.get(key, 0) for key, value in out.items()}

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` object: ``path``, ``format``, ``loops``, ``tool_findings``, ``guard_findings``
        (+ ``error`` and ``line`` for an unreadable file; ``bad_lines``, ``stopped``, ``after_cancel``
        when there are some)."""
        out: dict[str, Any] = {
            "path": self.path,
            "format": self.format,
            "loops": [finding.to_dict() for finding in self.loops],
            "tool_findings": [run.to_dict() for run in self.tool_runs],
            "guard_findings": [finding.to_dict() for finding in self.guard_findings],
        }
        if self.error is not None:
            out["error"] = str(self.error)
            out["line"] = self.error.line
        if self.bad_lines:
            out["bad_lines"] = [{"line": bad.line, "error": str(bad)} for bad in self.bad_lines]
        if self.stopped is not None:
            out["stopped"] = {"line": self.stopped.line, "error": str(self.stopped)}
        if self.after_cancel:
            out["after_cancel"] = [
                {"finding": index, "calls": calls, "findings": findings}
                for index, (calls, findings) in self.after_cancel.items()
            ]
        return out


def _excerpt(text: str, detection: Detection) -> str:
    """Up to :data:`EXCERPT_CHARS` code points from the detection's start, redacted before the
    cut: a secret crossing either edge of the excerpt is hidden whole."""
    start = detection.start
    end = detection.cut if detection.cut > start else start + EXCERPT_CHARS
    return redact_excerpt(text, start, min(end, start + EXCERPT_CHARS))


#: What :func:`scan_message` works out for each finding beyond its detection: nothing
#: (``"none"``: ``--summary`` counts, ``loopguard clean``), the redacted excerpt (``"excerpt"``:
#: the listing and ``--json``), or the excerpt and the redacted text either side of the cut
#: (``"context"``: ``--html``).  Redaction is most of a finding's cost.
DETAILS = ("none", "excerpt", "context")


def scan_message(message: Message, config: TextConfig, *, detail: str = "excerpt") -> list[TextFinding]:
    """Scan one assistant message's channels with a fresh detector.

    Parameters
    ----------
    message : Message
        The message (reasoning fed to ``"reasoning"``, text to ``"text"``).
    config : TextConfig
        The detector config.
    detail : str
        One of :data:`DETAILS` (default ``"excerpt"``): with ``"none"`` the findings' ``excerpt``
        is empty, and ``kept`` / ``pruned`` are filled only with ``"context"`` (the evidence's
        phrases are redacted at every level).

    Raises
    ------
    ValueError
        for a ``detail`` not in :data:`DETAILS`.

    Returns
    -------
    list[TextFinding]
        Reasoning detections first, then text, each in detection order.
    """
    if detail not in DETAILS:
        raise ValueError(f"detail must be one of {', '.join(map(repr, DETAILS))}, not {detail!r}")
    texts = {"reasoning": message.reasoning, "text": message.text}
    detector = TextLoopDetector(config)
    found: list[Detection] = []
    for channel in CHANNELS:
        if texts[channel]:
            found += detector.feed(texts[channel], channel)
    found += detector.finish()
    found.sort(key=lambda d: CHANNELS.index(d.channel))  # stable: detection order within a channel
    found = [_redacted_phrases(texts[d.channel], d) for d in found]
    if detail == "none":
        return [TextFinding(d, message.where, "", len(texts[d.channel])) for d in found]
    return [_finding(texts[d.channel], d, message.where, detail == "context") for d in found]


def _finding(text: str, detection: Detection, where: dict[str, Any], context: bool) -> TextFinding:
    """The finding with its excerpt, and with ``context`` the text either side of the cut
    (redacted before it is cut)."""
    if not context:
        return TextFinding(detection, where, _excerpt(text, detection), len(text))
    cut = min(max(detection.cut, 0), len(text))
    kept = redact_excerpt(text, max(0, cut - CONTEXT_CHARS), cut)
    pruned = redact_excerpt(text, cut, cut + CONTEXT_CHARS)
    return TextFinding(detection, where, _excerpt(text, detection), len(text), kept, pruned)


def _detail(report: FileReport) -> str:
    """What the findings of ``report`` need (:data:`DETAILS`): the context for a sink that
    shows it (the HTML report), nothing for counts only, else the excerpt."""
    if report.sink is not None and report.sink.context:
        return "context"
    return "none" if report.counts_only else "excerpt"


def _redacted_phrases(text: str, detection: Detection) -> Detection:
    """The detection with its evidence's ``phrases`` redacted where they stand in ``text``
    (a line of a PEM key body is a secret only beside its BEGIN line)."""
    phrases = detection.evidence.get("phrases")
    if not isinstance(phrases, tuple):
        return detection
    shown = []
    for phrase in phrases:
        at = text.find(phrase) if isinstance(phrase, str) else -1
        shown.append(redact_excerpt(text, at, at + len(phrase)) if at >= 0 else redact_secrets(str(phrase)))
    return dataclasses.replace(detection, evidence={**detection.evidence, "phrases": tuple(shown)})


def scan_log(log: LogFile, config: TextConfig) -> FileReport:
    """Scan a parsed log: text loops per message; per conversation, tool-call
    runs and the ToolGuard's findings (:func:`loopguard.toolruns.guard_conversation`).

    Parameters
    ----------
    log : LogFile
        From :func:`loopguard.logs.read_log`.
    config : TextConfig
        The detector config.

    Returns
    -------
    FileReport
        The findings.
    """
    report = FileReport(log.path, log.format)
    for conversation in log.conversations:
        scan_conversation(conversation, config, report)
    return report


def scan_file(
    path: str,
    config: TextConfig,
    *,
    field: str | None = None,
    on_progress: Callable[[int, int | None], None] | None = None,
    counts_only: bool = False,
    sink: FindingSpool | None = None,
) -> FileReport:
    """Read and scan one file as a stream; an unreadable file gives a report with ``error`` set.

    JSON Lines files are read line by line (:class:`loopguard.logs.stream.LogStream`):
    a line that cannot be read is skipped and listed in ``bad_lines``, and the
    rest of the file is scanned; compressed data that breaks partway ends the
    file (``stopped``), keeping the findings made before.

    Parameters
    ----------
    path : str
        The file.
    config : TextConfig
        The detector config.
    field : str | None
        The dataset output field (``--field``).
    on_progress : Callable[[int, int | None], None] | None
        Called after each conversation with the bytes read so far and the
        file's size (``None`` for standard input).
    counts_only : bool
        Keep only the counts of the findings (``--summary``; see :meth:`FileReport.counts`).
    sink : FindingSpool | None
        Hand each conversation's findings to this spool (on disk) as soon as
        the conversation is scanned; the report keeps only their counts.

    Returns
    -------
    FileReport
        The findings, or the error (with the findings made before it).
    """
    report = FileReport(path, None, counts_only=counts_only, sink=sink)
    try:
        with LogStream(path, field=field) as stream:
            report.format = stream.format
            report.bad_lines = stream.bad_lines
            if stream.streams_messages:
                _scan_messages(stream, config, report, on_progress)
            else:
                for conversation in stream.conversations():
                    scan_conversation(conversation, config, report)
                    if on_progress is not None:
                        on_progress(stream.position(), stream.total)
            report.stopped = stream.stopped
        return report
    except InputError as exc:
        return FileReport(path, None, error=exc)
    except RecursionError:
        return FileReport(path, None, error=InputError("nested too deeply to read", path=path))
    except Exception as exc:
        # the exception's text may quote the log (arguments, secrets): name its type only
        return FileReport(
            path, None, error=InputError(f"cannot read this log ({type(exc).__name__}); please report it", path=path)
        )


def _scan_messages(
    stream: LogStream,
    config: TextConfig,
    report: FileReport,
    on_progress: Callable[[int, int | None], None] | None,
) -> None:
    """Scan a chat or Claude Code file message by message (:meth:`LogStream.messages`): each
    message is scanned as soon as it ends, so memory is the findings, not the file.  The
    findings are added conversation by conversation, main agent first, as :func:`scan_log` adds
    them."""
    scans: dict[Any, _ConversationScan] = {}
    detail = _detail(report)
    for group, message in stream.messages():
        scan = scans.get(group)
        if scan is None:
            scan = scans[group] = _ConversationScan(config, detail)
        scan.add(message)
        if on_progress is not None:
            on_progress(stream.position(), stream.total)
    for group in stream.groups:
        one = scans[group].finish() if group in scans else FileReport(report.path, report.format)
        _merge(report, one)


class _ConversationScan:
    """One conversation scanned a message at a time: what :func:`scan_conversation` finds."""

    def __init__(self, config: TextConfig, detail: str = "excerpt") -> None:
        self.config = config
        self.detail = detail
        self.report = FileReport("", None)
        self.runs = RunFinder()
        self.guard = ConversationGuard()
        self.cancel: tuple[int, int] | None = None  # (its index in guard_findings, its call)
        self.after = 0  # guard findings after the cancel (not kept)

    def add(self, message: Message) -> None:
        report = self.report
        report.loops += scan_message(message, self.config, detail=self.detail)
        for call in message.tool_calls:
            report.calls.append((call.name, call_hash(call.name, call.args)))
            run = self.runs.add(call)
            if run is not None:
                report.tool_runs.append(run)
        for finding in self.guard.message(message):
            if self.cancel is not None:
                self.after += 1
                continue
            report.guard_findings.append(finding)
            if finding.action == "cancel":
                self.cancel = (len(report.guard_findings) - 1, finding.call)

    def finish(self) -> FileReport:
        report = self.report
        run = self.runs.finish()
        if run is not None:
            report.tool_runs.append(run)
        if self.cancel is not None:
            index, call = self.cancel
            report.after_cancel[index] = (self.runs.calls - call - 1, self.after)
        return report


def _merge(report: FileReport, one: FileReport) -> None:
    """Add one conversation's findings to ``report`` (only their counts with ``counts_only``
    or a ``sink``, which gets the findings)."""
    if report.counts_only or report.sink is not None:
        _absorb(report, one)
        return
    offset = len(report.guard_findings)
    report.loops += one.loops
    report.tool_runs += one.tool_runs
    report.guard_findings += one.guard_findings
    for index, after in one.after_cancel.items():
        report.after_cancel[offset + index] = after


def _absorb(report: FileReport, one: FileReport) -> None:
    """Count one conversation's findings in ``report`` and give them to its sink, if any."""
    for key, value in one.counts().items():
        report.counted[key] = report.counted.get(key, 0) + value
    if one.has_loop:
        report.counted["loop"] = 1
    if report.sink is not None:
        report.sink.add(one)


class _Spool:
    """Lines of text kept in a temporary file (in memory up to 1 MiB), not in a list."""

    def __init__(self) -> None:
        self._file = tempfile.SpooledTemporaryFile(max_size=1 << 20, mode="w+", encoding="utf-8", newline="\n")
        self.count = 0

    def add(self, line: str) -> None:
        self._file.write(line + "\n")  # callers give one line: JSON or made printable, no newline
        self.count += 1

    def lines(self) -> Iterator[str]:
        self._file.seek(0)
        for line in self._file:
            yield line[:-1]

    def close(self) -> None:
        self._file.close()


class FindingSpool:
    """One file's findings written out conversation by conversation (to temporary files, not
    memory), then read back in the order the output lists them.

    The normal output and ``--json`` group a file's findings by kind (text loops, tool runs,
    guard findings) and start with the file's status, which is known only at its end, so the
    findings are not printed as each conversation ends; memory is bounded by the largest
    conversation's findings instead of the file's.

    Parameters
    ----------
    json_output : bool
        Spool the ``--json`` objects (else the human-readable entries).
    """

    #: The findings given to :meth:`add` carry the text either side of the cut (``kept``,
    #: ``pruned``): only a sink that shows it asks for it (its cost is redaction).
    context = False

    def __init__(self, *, json_output: bool) -> None:
        self.json_output = json_output
        self._kinds = (_Spool(), _Spool(), _Spool())  # text loops, tool runs, guard findings
        self._after = _Spool()  # --json: after_cancel entries
        self._guards = 0  # guard findings so far (after_cancel's indices)

    def add(self, one: FileReport) -> None:
        """Spool one conversation's findings (``one`` as :func:`scan_conversation` fills it)."""
        text, runs, guards = self._kinds
        if self.json_output:
            for loop in one.loops:
                text.add(json.dumps(loop.to_dict()))
            for run in one.tool_runs:
                runs.add(json.dumps(run.to_dict()))
            for finding in one.guard_findings:
                guards.add(json.dumps(finding.to_dict()))
            for index, (calls, findings) in one.after_cancel.items():
                item = {"finding": self._guards + index, "calls": calls, "findings": findings}
                self._after.add(json.dumps(item))
            self._guards += len(one.guard_findings)
            return
        for entry in _text_entries(one):
            text.add(json.dumps(entry))
        for run in one.tool_runs:
            runs.add(json.dumps([_run_line(run)]))
        for entry in _guard_entries(one):
            guards.add(json.dumps(entry))

    def human_lines(
        self, report: FileReport, *, show_clean: bool = False, max_findings: int | None = None
    ) -> Iterator[str]:
        """The lines :func:`format_report` gives for the file, read back from the spool."""
        if report.error is not None:
            return
        status = _status(report)
        if status == "clean":
            if show_clean:
                yield f"{_show(report.path)} [{report.format}]: clean"
            return
        yield f"{_show(report.path)} [{report.format}]: {status}"
        total = sum(spool.count for spool in self._kinds)
        left = max_findings if max_findings is not None else total
        for spool in self._kinds:
            for entry in spool.lines():
                if left <= 0:
                    break
                left -= 1
                yield from json.loads(entry)
        shown = total if max_findings is None else min(total, max_findings)
        if total > shown:
            n = total - shown
            yield f"  … {n} more finding{'s' if n != 1 else ''} not shown (--max-findings {max_findings})"

    def json_text(self, report: FileReport) -> Iterator[str]:
        """The ``--json`` line for the file (:meth:`FileReport.to_dict` as ``json.dumps`` writes it),
        in pieces."""
        yield json.dumps({"path": report.path, "format": report.format})[:-1]
        for key, spool in zip(("loops", "tool_findings", "guard_findings"), self._kinds):
            yield f", {json.dumps(key)}: ["
            for i, item in enumerate(spool.lines()):
                yield (", " if i else "") + item
            yield "]"
        tail = report.to_dict()
        for key in ("path", "format", "loops", "tool_findings", "guard_findings", "after_cancel"):
            tail.pop(key, None)
        for key, value in tail.items():
            yield f", {json.dumps(key)}: {json.dumps(value)}"
        if self._after.count:
            yield ', "after_cancel": ['
            for i, item in enumerate(self._after.lines()):
                yield (", " if i else "") + item
            yield "]"
        yield "}"

    def close(self) -> None:
        """Remove the temporary files."""
        for spool in (*self._kinds, self._after):
            spool.close()


def scan_conversation(
    conversation: Conversation, config: TextConfig, report: FileReport, *, detail: str | None = None
) -> None:
    """Add one conversation's findings to ``report`` (see :func:`scan_log`); with
    ``report.counts_only``, only their counts (memory stays flat however many there are); with
    ``report.sink``, the counts, and the findings go to the sink.  ``detail``: what each text
    finding carries (:data:`DETAILS`; default: what ``report`` needs)."""
    detail = detail if detail is not None else _detail(report)
    if report.counts_only or report.sink is not None:
        one = FileReport(report.path, report.format)
        scan_conversation(conversation, config, one, detail=detail)
        one.calls = [(call.name, call_hash(call.name, call.args)) for call in conversation.tool_calls()]
        _absorb(report, one)
        return
    for message in conversation.messages:
        report.loops += scan_message(message, config, detail=detail)
    calls = conversation.tool_calls()
    report.tool_runs += find_runs(calls)
    found = guard_conversation(conversation)
    cancel = next((i for i, finding in enumerate(found) if finding.action == "cancel"), None)
    if cancel is None:
        report.guard_findings += found
        return
    # a cancelled call is not run (no after_call): every later finding is about a later call
    report.guard_findings += found[: cancel + 1]
    report.after_cancel[len(report.guard_findings) - 1] = (len(calls) - found[cancel].call - 1, len(found) - cancel - 1)


# --------------------------------------------------------------------------- human output


def _show(text: str) -> str:
    """Make a field taken from a log one safe line (:func:`loopguard.terminal.printable`)."""
    return printable(text)


def _value(value: Any) -> str:
    return _show(json.dumps(value, ensure_ascii=False) if isinstance(value, str) else str(value))


def where_label(where: dict[str, Any]) -> str:
    """``"message 3, line 12"``, ``"step 9"``, ``"line 4, id \\"x\\""``: a location for humans."""
    parts = []
    for key, value in where.items():
        if key == "message_id":
            continue
        name = "sub-agent" if key == "parent_tool_use_id" else key
        parts.append(f"{name} {_value(value)}")
    return ", ".join(parts)


def span_label(wheres: Sequence[dict[str, Any]]) -> str:
    """Where a run of calls sits: ``"steps 9–12"``, ``"messages 1–7, lines 2–8"``."""
    keys = [k for k in wheres[0] if k != "message_id"]
    if "call" in keys and ("message" in keys or "step" in keys):
        keys.remove("call")  # the index within one message; "calls" below is the global one
    parts = []
    for key in keys:
        values = [w.get(key) for w in wheres]
        name = "sub-agent" if key == "parent_tool_use_id" else key
        if all(v == values[0] for v in values):
            parts.append(f"{name} {_value(values[0])}")
        else:
            parts.append(f"{name}s {_value(values[0])}–{_value(values[-1])}")
    return ", ".join(parts)


def _loop_lines(finding: TextFinding, kinds: str = "", strong: bool = True) -> list[str]:
    d = finding.detection
    where = where_label(finding.where)
    head = " · ".join(
        part
        for part in (where, d.channel, kinds or d.kind, f"position {d.position}", f"start {d.start}", f"cut {d.cut}")
        if part
    )
    more = "…" if finding.excerpt and d.start + EXCERPT_CHARS < min(d.cut, finding.length) else ""
    return [
        f"  {'LOOP ' if strong else 'maybe'}   {head}",
        f"          {'repeats' if d.cut > d.start else 'from start'}: “{_show(redact_secrets(finding.excerpt))}{more}”",
        f"          would cut at {d.cut}: keep {d.cut} of {finding.length} chars, drop {finding.length - d.cut}",
    ]


def _run_line(run: ToolRun) -> str:
    label = "LOOP  " if run.loop else "repeat"
    results = {True: "results identical", False: "results differ", None: "results not logged"}[run.results_identical]
    calls = f"calls {run.calls[0]}–{run.calls[-1]}"
    span = span_label(run.where)
    parts = [f"tool run: {shown_name(run.tool)} ×{run.count}", calls]
    if span and span != calls:  # a tool-call list's own "calls" span says it already
        parts.append(span)
    parts += [f"hash {run.hash_prefix}", results]
    return f"  {label}  " + " · ".join(parts)


def _guard_line(finding: GuardFinding) -> str:
    label = {"notice": "notice", "deny": "DENY  ", "cancel": "CANCEL"}.get(finding.action, finding.action)
    rule = finding.kind if finding.kind == finding.rule else f"{finding.kind} ({finding.rule})"
    parts = [f"tool call {finding.call}: {shown_name(finding.tool)}", rule]
    span = where_label(finding.where)
    if span:
        parts.append(span)
    parts.append(f"hash {finding.hash_prefix}")
    return f"  {label}  " + " · ".join(parts)


def _status(report: FileReport) -> str:
    counts = report.counts()
    if not counts["text findings"] and not counts["tool runs"] and not counts["guard findings"]:
        return "clean"
    return "loops found" if report.has_loop else ("possible loop" if counts["text findings"] else "no loop")


def format_report(report: FileReport, *, show_clean: bool = False, max_findings: int | None = None) -> list[str]:
    """The human-readable lines for one file (none for a clean file unless ``show_clean``).

    Parameters
    ----------
    report : FileReport
        The file's findings (errors go to stderr, not here).
    show_clean : bool
        List a file without findings as ``clean`` (``--all``).
    max_findings : int | None
        List at most this many findings (a text loop, a tool run, a guard
        decision, or the line for the calls after a cancel); one more line
        says how many were left out.

    Returns
    -------
    list[str]
        Lines without newlines.
    """
    if report.error is not None:
        return []
    status = _status(report)
    if status == "clean":
        return [f"{_show(report.path)} [{report.format}]: clean"] if show_clean else []
    entries = _entries(report)
    shown = entries if max_findings is None else entries[:max_findings]
    lines = [f"{_show(report.path)} [{report.format}]: {status}"]
    for entry in shown:
        lines += entry
    left = len(entries) - len(shown)
    if left:
        lines.append(f"  … {left} more finding{'s' if left != 1 else ''} not shown (--max-findings {max_findings})")
    return lines


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def format_summary(report: FileReport) -> str:
    """The ``--summary`` line for one file: its status and counts of findings."""
    if report.error is not None:
        return f"{_show(report.path)}: unreadable"
    total = report.counts()
    counts = [
        _plural(total["text loops"], "text loop"),
        _plural(total["tool runs"], "tool run"),
        _plural(total["guard findings"], "guard finding"),
    ]
    after = total["after cancel"]
    if after:
        counts.append(f"{after} call{'s' if after != 1 else ''} after a cancel")
    if report.bad_lines:
        n = len(report.bad_lines)
        counts.append(f"{n} bad line{'s' if n != 1 else ''} skipped")
    if report.stopped is not None:
        counts.append(f"corrupt data from line {report.stopped.line}")
    return f"{_show(report.path)} [{report.format}]: {_status(report)}: " + ", ".join(counts)


def _entries(report: FileReport) -> list[list[str]]:
    """The findings as listed: text loops, tool runs, guard decisions (with the after-cancel line)."""
    entries = _text_entries(report)
    entries += [[_run_line(run)] for run in report.tool_runs]
    return entries + _guard_entries(report)


def _guard_entries(report: FileReport) -> list[list[str]]:
    entries = []
    for index, finding in enumerate(report.guard_findings):
        entries.append([_guard_line(finding)])
        if index in report.after_cancel:
            calls, findings = report.after_cancel[index]
            if calls:
                entries.append(
                    [
                        f"  …       {calls} more call{'s' if calls != 1 else ''} after the cancel"
                        f" ({findings} guard finding{'s' if findings != 1 else ''} not listed)"
                    ]
                )
    return entries


def _text_entries(report: FileReport) -> list[list[str]]:
    return [_loop_lines(finding, kinds, strong) for finding, kinds, strong in text_loops(report)]


def text_loops(report: FileReport) -> list[tuple[TextFinding, str, bool]]:
    """The text loops as scan lists them: ``(finding, kinds, strong)``, one per loop (see below)."""
    entries: list[tuple[TextFinding, str, bool]] = []
    # a strong near_cycle report confirms the weak report of its episode (the one before it):
    # the episode is listed once, in the place of its first report, as a loop, and
    # at the confirming report's start and cut when another detector reports the loop there (a
    # near_cycle's first, weak report may start a few characters earlier than the loop does: listed
    # at its own start and cut, the loop would be listed twice)
    loops: list[TextFinding] = []
    strong: list[bool] = []
    last: dict[tuple[str, str, str], int] = {}  # (kind, channel, where) -> its latest entry in loops
    spans = Counter((repr(f.where), f.detection.channel, f.detection.start, f.detection.cut) for f in report.loops)
    for finding in report.loops:
        d = finding.detection
        episode = (d.kind, d.channel, repr(finding.where))
        first = last.get(episode)
        if d.kind == "near_cycle" and d.strong and first is not None and not loops[first].detection.strong:
            strong[first] = True
            if spans[(repr(finding.where), d.channel, d.start, d.cut)] > 1:
                loops[first] = finding
            continue
        last[episode] = len(loops)
        loops.append(finding)
        strong.append(d.strong)
    # one loop that several detectors report with the same start and cut: one entry
    shown: dict[tuple[Any, ...], list[str]] = {}
    acted: dict[tuple[Any, ...], bool] = {}
    for finding, acts in zip(loops, strong):
        d = finding.detection
        key = (repr(finding.where), d.channel, d.start, d.cut)
        shown.setdefault(key, []).append(d.kind)
        acted[key] = acted.get(key, False) or acts
    for finding in loops:
        d = finding.detection
        key = (repr(finding.where), d.channel, d.start, d.cut)
        kinds = shown.pop(key, None)
        if kinds is not None:
            entries.append((finding, " + ".join(kinds), acted[key]))
    return entries


# --------------------------------------------------------------------------- command


def build_parser() -> argparse.ArgumentParser:
    """The ``loopguard`` argument parser."""
    parser = argparse.ArgumentParser(prog="loopguard", description="Detect LLM agents stuck in loops.")
    parser.add_argument("--version", action="version", version=f"loopguard {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    scan = commands.add_parser(
        "scan",
        help="scan stored logs for loops (observe-only)",
        description=_SCAN_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    scan.add_argument("paths", nargs="+", metavar="PATH", help="files or directories (walked recursively, sorted)")
    scan.add_argument("--json", action="store_true", help="one JSON object per input file per line")
    scan.add_argument("--all", action="store_true", help="also list files without findings")
    scan.add_argument(
        "--profile", default="default", choices=sorted(PROFILES), help="text detector profile (default: %(default)s)"
    )
    scan.add_argument(
        "--field",
        metavar="NAME",
        help="dataset JSON Lines: the string field holding the model output "
        f"(default: first of {', '.join(DATASET_FIELDS)})",
    )
    scan.add_argument(
        "--summary",
        action="store_true",
        help="one line per file (status and counts of findings), then the totals",
    )
    scan.add_argument(
        "--max-findings",
        type=_count,
        default=None,
        metavar="N",
        help="list at most N findings per file and say how many were left out (not with --json)",
    )
    scan.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bar (it is shown only on a terminal, for 2+ files or a file of 16 MiB or more)",
    )
    scan.add_argument(
        "--html",
        metavar="PATH",
        help="also write one self-contained HTML page of the findings (no script, no external asset)",
    )
    scan.set_defaults(run=_scan_command)
    evaluate = commands.add_parser(
        "eval",
        help="measure the detectors against labelled cases (DIR/index.json), text records or trajectories (.jsonl)",
        description=_EVAL_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    evaluate.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="a case folder (holding index.json), a .jsonl / .jsonl.gz file of text records or "
        "trajectory records, or a folder of such files (walked recursively, sorted)",
    )
    evaluate.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object: profile, cases, summary, by_detector (case folder); records (text "
        "records); runs (trajectories)",
    )
    evaluate.add_argument(
        "--profile",
        action="append",
        choices=[*sorted(PROFILES), "all"],
        help="text detector profile; repeat for several, 'all' = default, fuse, rescue (default: default)",
    )
    evaluate.add_argument(
        "--by",
        action="append",
        choices=sorted({*GROUP_KEYS, *RUN_GROUP_KEYS}),
        help="records: also report per task or model; trajectories: per agent, model or task (repeatable)",
    )
    evaluate.add_argument(
        "--worst",
        type=_count,
        default=None,
        metavar="K",
        help="records: list the K clean records cut or noticed that lose the most text "
        "(default: 10 in text output, all with --json)",
    )
    evaluate.add_argument(
        "--delta",
        type=_positive,
        default=DELTA_CHARS,
        metavar="N",
        help="records: code points per Session.feed delta (default: %(default)s)",
    )
    evaluate.add_argument(
        "--jobs",
        type=_positive,
        default=DEFAULT_JOBS,
        metavar="N",
        help="records: worker processes (default: %(default)s; 1 = in this process)",
    )
    evaluate.set_defaults(run=_eval_command)
    stats_command.register(commands)
    clean_command.register(commands)
    return parser


@contextlib.contextmanager
def _progress(total: int) -> Iterator[tuple[Callable[[], None], bool]]:
    """A transient rich progress bar on stderr (only for 2+ files on a terminal)."""
    if total < 2 or not sys.stderr.isatty():
        yield (lambda: None), False
        return
    from rich.console import Console
    from rich.progress import Progress

    progress = Progress(console=Console(stderr=True), transient=True, redirect_stdout=False, redirect_stderr=True)
    with progress:
        task = progress.add_task("scanning", total=total)
        yield (lambda: progress.advance(task)), True


#: Files at least this big (bytes on disk) get a progress bar of their own.
PROGRESS_BYTES = 16 << 20


class _ScanProgress:
    """Transient rich progress bars on stderr: files (2+), and bytes for each big file.

    Shown only on a terminal (never in a pipe or captured output) and not with
    ``--no-progress``.
    """

    def __init__(self, files: int, enabled: bool) -> None:
        self.active = enabled and sys.stderr.isatty()
        self._progress: Any = None
        self._files: Any = None
        self._bytes: Any = None
        if not self.active:
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            TaskProgressColumn,
            TextColumn,
            TimeRemainingColumn,
            TransferSpeedColumn,
        )

        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TaskProgressColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=True,
            redirect_stdout=False,
            redirect_stderr=True,
        )
        self._progress.start()
        if files >= 2:
            self._files = self._progress.add_task("files", total=files)

    def on_bytes(self, path: str) -> Callable[[int, int | None], None] | None:
        """The callback for :func:`scan_file` for ``path`` (``None`` when no bar is shown)."""
        if not self.active:
            return None

        def update(done: int, total: int | None) -> None:
            if total is None or total < PROGRESS_BYTES:
                return
            if self._bytes is None:
                self._bytes = self._progress.add_task(printable(os.path.basename(path))[:40], total=total)
            self._progress.update(self._bytes, completed=done)

        return update

    def file_done(self) -> None:
        if not self.active:
            return
        if self._bytes is not None:
            self._progress.remove_task(self._bytes)
            self._bytes = None
        if self._files is not None:
            self._progress.advance(self._files)

    def stop(self) -> None:
        if self.active:
            self._progress.stop()


def _scan_command(args: argparse.Namespace) -> int:
    config = TextConfig(args.profile)
    targets = expand_paths(args.paths)
    html = None
    if args.html:
        from .html_report import HtmlReport, check_output

        try:
            targets = check_output(args.html, args.paths, targets)
        except InputError as exc:
            print(f"loopguard: error: {_show(str(exc))}", file=sys.stderr)
            return 2
        html = HtmlReport(args.html)
    status = 0
    counts = {"loops": 0, "clean": 0, "unreadable": 0, "bad lines": 0, "cut short": 0}
    totals = {"text loops": 0, "tool runs": 0, "guard findings": 0, "after cancel": 0}
    deferred: list[str] = []
    progress = _ScanProgress(len(targets), not args.no_progress)
    defer = progress.active and sys.stdout.isatty()  # keep the bar from tearing terminal output
    try:
        for path, error in targets:
            sink = None if args.summary and not args.json else FindingSpool(json_output=args.json)
            if html is not None:
                sink = html.sink(sink)
            if error:
                report = FileReport(path, None, error=error)
            else:
                report = scan_file(
                    path,
                    config,
                    field=args.field,
                    on_progress=progress.on_bytes(path),
                    counts_only=args.summary and not args.json,
                    sink=sink,
                )
            for bad in report.bad_lines:
                print(f"loopguard: error: {_show(str(bad))} (line skipped)", file=sys.stderr)
            if report.bad_lines:
                status = 2
                counts["bad lines"] += len(report.bad_lines)
            if report.stopped is not None:
                print(
                    f"loopguard: error: {_show(str(report.stopped))} (the rest of the file is unreadable)",
                    file=sys.stderr,
                )
                status = 2
                counts["cut short"] += 1
            if report.error is not None:
                print(f"loopguard: error: {_show(str(report.error))}", file=sys.stderr)
                status = 2
                counts["unreadable"] += 1
            elif report.has_loop:
                status = max(status, 1)
                counts["loops"] += 1
            else:
                counts["clean"] += 1
            lines: Iterable[str]
            if report.sink is not None and args.json:
                if defer:
                    lines = ["".join(report.sink.json_text(report))]
                else:  # written piece by piece: the line is never whole in memory
                    _write_pieces(report.sink.json_text(report))
                    lines = []
            elif report.sink is not None and not args.summary:
                lines = report.sink.human_lines(report, show_clean=args.all, max_findings=args.max_findings)
            elif args.json:
                lines = [json.dumps(report.to_dict())]
            elif args.summary:
                lines = [format_summary(report)]
                for key, value in report.counts().items():
                    if key in totals:
                        totals[key] += value
            else:
                lines = format_report(report, show_clean=args.all, max_findings=args.max_findings)
            if defer:
                deferred += lines
            else:
                _write(lines)
            if html is not None:
                html.add_file(report)
            if sink is not None:
                sink.close()
            progress.file_done()
        if html is not None:
            try:
                html.finish()
            except OSError as exc:  # the disk filled, the folder went away: the scan's output stands
                print(
                    f"loopguard: error: {_show(args.html)}: the HTML report was not written: {exc.strerror or exc}",
                    file=sys.stderr,
                )
                status = 2
    finally:
        progress.stop()
        if html is not None:
            html.close()
    _write(deferred)
    if args.summary and not args.json:
        _write(
            [
                "totals: "
                + ", ".join(
                    _plural(totals[key], word)
                    for key, word in (
                        ("text loops", "text loop"),
                        ("tool runs", "tool run"),
                        ("guard findings", "guard finding"),
                        ("after cancel", "call"),
                    )
                )
                + " after a cancel"
            ]
        )
    if not args.json:
        n = len(targets)
        skipped = counts["bad lines"]
        short = counts["cut short"]
        _write(
            [
                f"scanned {n} file{'s' if n != 1 else ''}: {counts['loops']} with loops, "
                f"{counts['clean']} without, {counts['unreadable']} unreadable"
                + (f", {skipped} bad line{'s' if skipped != 1 else ''} skipped" if skipped else "")
                + (f", {short} cut short by corrupt data" if short else "")
            ]
        )
    return status


_EVAL_DESCRIPTION = """\
Measure the detectors against labelled data (spec section 9). Each PATH is
a case folder (DIR/index.json) or labelled JSON Lines records -- text
records or agent trajectories (a .jsonl / .jsonl.gz file, or a folder walked
for them); all may be mixed.

Case folder (schema: shared/data/cases/README.md): every case is replayed
and reported. Text cases are streamed through a fresh detector with the
profile (channel "reasoning" when the case says so, else "text"); the first
detection decides: caught (at or after first_repeat, and by loop_end +
check_every when the loop is bounded), early (before loop_start), missed
(nothing, inside the first copy, or after the loop ended), false_positive (a
not-loop fired), clean. Tool-call cases go through ToolGuard with its default
config: a loop is caught by a notice or stronger at a call index <=
fire_by_call; a not-loop is a false positive only when a call is denied or
cancelled. Positions and text latencies are Unicode code points; tool
latencies calls.

Text records ({"text", "looping": true|false|null, "loop_start", "id",
"model", "task"}; e.g. shared/data/real/bench): each goes through a fresh
Session with the profile as text_config, as one attempt fed on the
"reasoning" channel in --delta code-point deltas; the first cut/cancel
verdict stops it, the first notice is noted. Printed per profile: clean
records cut and noticed, with Wilson 95% intervals; loops cut (recall, Wilson
interval), latency p50/p90 (stop - loop_start, code points) and early stops
(before loop_start); null records cut/noticed (not in the rates); --by
groups; the --worst clean records cut or noticed, with evidence and context
around the cut.

Trajectory records ({"calls": [{"tool", "args", "result", "error"}],
"label": "clean"|"loop"|"null", "id", "agent", "model", "task", "note" with
loop_start/loop_deadline; e.g. shared/data/real/agentbench) in the same
files or folders: each run goes through a fresh ToolGuard (default config),
before_call then after_call with the recorded result. Printed: clean runs
denied or cancelled and noticed (Wilson 95% intervals) with the rules, loops
caught by their deadline (the 4th repeated call), the median loop calls to
the first action, null runs; --by agent|model|task groups; the --worst clean
runs denied or cancelled (call index, rule, tool; never an argument).
Other lines are skipped and counted.

exit status: 0 (whatever the results), 2 unreadable input: a missing path,
an invalid index or case file, a line that is not JSON (named on stderr with
file and line).
"""


def _at_least(minimum: int) -> Callable[[str], int]:
    """An argparse type: an integer ``>= minimum``."""

    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            number = minimum - 1
        if number < minimum:
            raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, not {value!r}")
        return number

    return parse


_positive = _at_least(1)
_count = _at_least(0)


def _eval_profiles(asked: Sequence[str] | None) -> list[str]:
    """``--profile`` values in order, ``all`` expanded, each once (default: ``["default"]``)."""
    out: list[str] = []
    for name in asked or ["default"]:
        for profile in ALL_PROFILES if name == "all" else (name,):
            if profile not in out:
                out.append(profile)
    return out


@contextlib.contextmanager
def _lazy_progress(total: int | None, label: str) -> Iterator[Callable[[], None]]:
    """A transient rich progress bar on stderr, started on the first advance
    (``total=None``: a counter of items whose number is not known).

    Starting late lets worker processes be forked before rich's refresh
    thread exists.  Only on a terminal and for 2+ items.
    """
    if (total is not None and total < 2) or not sys.stderr.isatty():
        yield lambda: None
        return
    from rich.console import Console
    from rich.progress import Progress

    progress = Progress(console=Console(stderr=True), transient=True, redirect_stdout=False, redirect_stderr=True)
    tasks: list[Any] = []

    def advance() -> None:
        if not tasks:
            progress.start()
            tasks.append(progress.add_task(label, total=total))
        progress.advance(tasks[0])

    try:
        yield advance
    finally:
        if tasks:
            progress.stop()


def _load_eval_inputs(
    paths: Sequence[str], on_run: Callable[[Any, str, int], bool] | None = None
) -> tuple[list[tuple[str, list[Case]]], RecordSet | None]:
    """Case folders (in order) and the text records of every other path
    (trajectory records go to ``on_run``, replayed as they are read).

    Raises
    ------
    InputError
        the first unreadable input: a folder with neither index.json nor
        JSON Lines files reports its missing index.json, as before.
    """
    from .evaluate import load_cases
    from .evaluate_records import load_records, record_files

    folders: list[tuple[str, list[Case]]] = []
    record_paths: list[str] = []
    for path in paths:
        if os.path.isdir(path) and os.path.isfile(os.path.join(path, "index.json")):
            folders.append((path, load_cases(path)))
        elif os.path.isdir(path) and not record_files(path):
            load_cases(path)  # raises: names DIR/index.json
            raise InputError("no index.json and no .jsonl / .jsonl.gz files", path=path)  # pragma: no cover
        else:
            record_paths.append(path)
    return folders, load_records(record_paths, on_run) if record_paths else None


def _eval_command(args: argparse.Namespace) -> int:
    from .evaluate import evaluate, format_summary, format_table, render_rich_table
    from .evaluate_records import evaluate_records, format_records
    from .evaluate_runs import RunCollector, format_runs

    profiles = _eval_profiles(args.profile)
    by = list(dict.fromkeys(args.by or []))
    try:
        with _lazy_progress(None, "replaying trajectories") as advance_run:
            collector = RunCollector(on_run=advance_run)
            folders, records = _load_eval_inputs(args.paths, collector)
    except InputError as exc:
        print(f"loopguard: error: {_show(str(exc))}", file=sys.stderr)
        return 2
    runs_report = collector.report if collector.report.results or collector.report.skipped else None
    if records is not None and not records.records and not records.skipped and runs_report is not None:
        records = None  # only trajectories
    runs = []
    for directory, cases in folders:
        for profile in profiles:
            with _progress(len(cases)) as (advance, _active):
                runs.append((directory, evaluate(cases, profile, on_case=advance)))
    records_report = None
    if records is not None:
        with _lazy_progress(len(records.records), "replaying records") as advance_record:
            records_report = evaluate_records(
                records, profiles, delta=args.delta, jobs=args.jobs, on_record=advance_record
            )
    if args.json:
        out: dict[str, Any] = dict(runs[0][1].to_dict()) if runs else {}
        if len(runs) > 1:
            out["case_runs"] = [{"dir": directory, **report.to_dict()} for directory, report in runs]
        if records_report is not None:
            out["records"] = records_report.to_dict(by=by, worst=args.worst)
        if runs_report is not None:
            out["runs"] = runs_report.to_dict(by=by, worst=args.worst)
        _write([json.dumps(out)])
        return 0
    for n, (directory, report) in enumerate(runs):
        if len(runs) > 1:
            _write(([""] if n else []) + [f"== {_show(directory)} (profile {report.profile}) =="])
        if sys.stdout.isatty():
            from rich.console import Console

            Console().print(render_rich_table(report))
            _write(["", *format_summary(report)])
        else:
            _write([*format_table(report), "", *format_summary(report)])
    worst = 10 if args.worst is None else args.worst
    if records_report is not None:
        _write(([""] if runs else []) + format_records(records_report, by=by, worst=worst))
    if runs_report is not None:
        _write(([""] if runs or records_report is not None else []) + format_runs(runs_report, by=by, worst=worst))
    return 0


def _write_pieces(pieces: Iterable[str]) -> None:
    """Print one line given in pieces, each made safe (:func:`loopguard.terminal.printable`)."""
    for piece in pieces:
        sys.stdout.write(printable(piece))
    sys.stdout.write("\n")
    sys.stdout.flush()


def _write(lines: Iterable[str]) -> None:
    """Print ``lines``, each made safe again as a whole (fields were made safe one by one)."""
    for line in lines:
        sys.stdout.write(printable(line) + "\n")
    sys.stdout.flush()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``loopguard`` command.

    Parameters
    ----------
    argv : Sequence[str] | None
        The arguments (without the program name); ``None`` = ``sys.argv[1:]``.

    Returns
    -------
    int
        The exit status: 0 clean, 1 loops found, 2 bad input or usage.
    """
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, ValueError):
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, usage errors
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.run(args))
    except BrokenPipeError:  # e.g. `loopguard scan DIR | head`: stop quietly
        with contextlib.suppress(OSError, ValueError, AttributeError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
