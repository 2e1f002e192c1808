"""Evaluate the tool guard on labelled agent trajectories: ``loopguard eval FILE.jsonl|DIR`` (issue 15).

A **trajectory record** (a *run*) is one JSON object per line (``.jsonl`` or
``.jsonl.gz``) with a list ``calls`` of ``{"tool", "args", "result", "error"}``
and a ``label``: ``"clean"`` (the run succeeded), ``"loop"`` (the run holds a
tool-call loop) or ``"null"`` (neither: reported, not in the rates) -- the
layout of ``shared/data/real/agentbench`` (see its README).  ``id``,
``agent``, ``model`` and ``task`` are kept when present; a loop's first call
and deadline (0-based call indices) come from ``loop_start`` /
``loop_deadline`` fields or from the ``note`` (``loop_start=11;
loop_deadline=17``).  Without a deadline a loop is caught by an action at most
3 calls after its start (its 4th call); without a start, by any action.

Each run is replayed as a host drives the guard: a fresh :class:`~loopguard.ToolGuard`
(default configuration unless one is given), ``before_call`` for every call,
then -- unless it was denied or cancelled -- ``after_call`` with the recorded
result (``""`` for none) and error flag (what ``shared/tools/agentbench.py``
does, whose counts these reproduce).

Counted: clean runs with any deny or cancel and with any notice (rates with a
Wilson 95 % interval), the rule of each clean run's first deny/cancel, the
kinds of notices; loop runs caught -- a notice or stronger at or after the
loop's start and at or before its deadline (recall, Wilson interval) -- and
the median number of loop calls to the guard's first action there; null runs
with any deny/cancel or any action.  The worst false positives name the run,
the call index, the rule and the tool, never an argument or a result.

A call whose ``tool`` is not a non-empty string is replayed as tool ``"?"``
(as ``agentbench.py`` does); objects that are not trajectory records are
skipped by the text-record reader.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .evaluate_records import rate_text, wilson
from .guard import ToolGuard, ToolGuardConfig
from .terminal import printable as one_line

__all__ = [
    "RUN_GROUP_KEYS",
    "RUN_LABELS",
    "RunCollector",
    "RunRecord",
    "RunResult",
    "RunsReport",
    "format_runs",
    "parse_run",
    "replay_run",
    "summarize_runs",
]

#: The labels of a trajectory record.
RUN_LABELS = ("clean", "loop", "null")
#: The record fields ``--by`` can group runs on.
RUN_GROUP_KEYS = ("agent", "model", "task")
#: A loop without a deadline is caught by its (0-based) call ``start + DEFAULT_DEADLINE``: its 4th.
DEFAULT_DEADLINE = 3
_STRONG = ("deny", "cancel")
_NOTE_INT = re.compile(r"(?:^|;)\s*(loop_start|loop_deadline)\s*=\s*(\d{1,18})\s*(?=;|$)")


@dataclass(frozen=True)
class RunRecord:
    """One labelled trajectory.

    Attributes
    ----------
    calls : tuple[Mapping, ...]
        The calls in order (``tool``, ``args``, ``result``, ``error``).
    label : str
        ``"clean"``, ``"loop"`` or ``"null"`` (a JSON ``null`` reads as ``"null"``).
    loop_start, loop_deadline : int | None
        0-based call indices of the loop's first call and of the call by which
        it must be caught (``None`` when absent).
    id, agent, model, task : str | None
        As in the record.
    file : str
        The file it came from.
    line : int
        Its 1-based line there.
    """

    calls: tuple[Mapping[str, Any], ...]
    label: str
    loop_start: int | None = None
    loop_deadline: int | None = None
    id: str | None = None
    agent: str | None = None
    model: str | None = None
    task: str | None = None
    file: str = ""
    line: int = 0

    @property
    def name(self) -> str:
        """``id`` when the record has one, else ``file:line``."""
        return self.id if self.id is not None else f"{self.file}:{self.line}"

    def group(self, key: str) -> str:
        """The run's ``agent``, ``model`` or ``task`` (``"(none)"`` when absent)."""
        value = getattr(self, key) if key in RUN_GROUP_KEYS else None
        return "(none)" if value is None else str(value)


def _index(obj: Mapping[str, Any], key: str, note: str) -> int | None:
    value = obj.get(key)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    for name, number in _NOTE_INT.findall(note):
        if name == key:
            return int(number)
    return None


def parse_run(obj: Any, path: str = "", line: int = 0) -> RunRecord | str | None:
    """A trajectory record, the reason it is skipped (a bad label), or ``None``
    when ``obj`` is not a trajectory at all (no list ``calls``)."""
    if not isinstance(obj, dict) or not isinstance(obj.get("calls"), list):
        return None
    label = obj.get("label")
    if label is None:
        label = "null"  # a JSON null label is "neither"
    if label not in RUN_LABELS:
        return "invalid run label"
    raw_note = obj.get("note")
    note: str = raw_note if isinstance(raw_note, str) else ""

    def text(key: str) -> str | None:
        value = obj.get(key)
        return None if value is None else value if isinstance(value, str) else str(value)

    calls = tuple(c if isinstance(c, Mapping) else {} for c in obj["calls"])
    return RunRecord(
        calls,
        label,
        _index(obj, "loop_start", note),
        _index(obj, "loop_deadline", note),
        text("id"),
        text("agent"),
        text("model"),
        text("task"),
        path,
        line,
    )


@dataclass(frozen=True)
class RunResult:
    """What the guard did on one run.

    Attributes
    ----------
    record : RunRecord
        The run (its calls dropped once replayed: only the counts stay).
    calls : int
        Its number of calls.
    events : tuple[tuple[int, str, str, str], ...]
        ``(call index, action, kind, tool)`` of every decision or intervention
        that was not a plain allow, in order.
    """

    record: RunRecord
    calls: int
    events: tuple[tuple[int, str, str, str], ...]

    @property
    def strong(self) -> list[tuple[int, str, str, str]]:
        """The deny and cancel events."""
        return [e for e in self.events if e[1] in _STRONG]

    @property
    def notices(self) -> list[tuple[int, str, str, str]]:
        """The notice events."""
        return [e for e in self.events if e[1] == "notice"]

    def in_loop(self) -> list[tuple[int, str, str, str]]:
        """Events at or after the loop's start."""
        start = self.record.loop_start
        return [e for e in self.events if start is None or e[0] >= start]

    @property
    def caught(self) -> bool:
        """A loop run with a notice or stronger between its start and its deadline."""
        start, deadline = self.record.loop_start, self.record.loop_deadline
        if deadline is None and start is not None:
            deadline = start + DEFAULT_DEADLINE
        return any(deadline is None or e[0] <= deadline for e in self.in_loop())


def replay_run(record: RunRecord, config: ToolGuardConfig | None = None) -> RunResult:
    """Replay one run through a fresh guard (see the module docstring)."""
    guard = ToolGuard(config)
    events: list[tuple[int, str, str, str]] = []
    for index, call in enumerate(record.calls):
        tool = call.get("tool")
        if not isinstance(tool, str) or not tool:
            tool = "?"
        args = call.get("args")
        decision = guard.before_call("run", tool, args)
        if decision.action != "allow":
            events.append((index, decision.action, decision.kind or "?", tool))
        if decision.action in _STRONG:
            continue
        result = call.get("result")
        for note in guard.after_call(
            "run", tool, args, "" if result is None else result, error=bool(call.get("error", False))
        ):
            events.append((index, note.action, note.kind, tool))
    slim = RunRecord(
        (),
        record.label,
        record.loop_start,
        record.loop_deadline,
        record.id,
        record.agent,
        record.model,
        record.task,
        record.file,
        record.line,
    )
    return RunResult(slim, len(record.calls), tuple(events))


def _rate(k: int, n: int) -> dict[str, Any]:
    low, high = wilson(k, n)
    return {"k": k, "n": n, "rate": k / n if n else 0.0, "wilson95": [low, high]}


def summarize_runs(results: Sequence[RunResult]) -> dict[str, Any]:
    """The counts of a set of runs (see the module docstring).

    Returns
    -------
    dict
        ``{"runs", "calls", "clean": {"n", "strong": rate, "notice": rate,
        "first_strong_rule": {kind: n}, "notice_kinds": {kind: runs}},
        "loop": {"n", "caught": rate, "any_action", "median_calls_to_action"},
        "null": {"n", "strong", "any"}}``; a rate is ``{"k", "n", "rate",
        "wilson95": [low, high]}``.
    """
    clean = [r for r in results if r.record.label == "clean"]
    loops = [r for r in results if r.record.label == "loop"]
    null = [r for r in results if r.record.label == "null"]
    first_rule: Counter[str] = Counter(r.strong[0][2] for r in clean if r.strong)
    notice_kinds: Counter[str] = Counter(kind for r in clean for kind in sorted({e[2] for e in r.notices}))
    latency = []
    for r in loops:
        inside = r.in_loop()
        if inside:
            latency.append(inside[0][0] - (r.record.loop_start or 0) + 1)
    return {
        "runs": len(results),
        "calls": sum(r.calls for r in results),
        "clean": {
            "n": len(clean),
            "strong": _rate(sum(1 for r in clean if r.strong), len(clean)),
            "notice": _rate(sum(1 for r in clean if r.notices), len(clean)),
            "first_strong_rule": dict(first_rule.most_common()),
            "notice_kinds": dict(notice_kinds.most_common()),
        },
        "loop": {
            "n": len(loops),
            "caught": _rate(sum(1 for r in loops if r.caught), len(loops)),
            "any_action": len(latency),
            "median_calls_to_action": statistics.median(latency) if latency else None,
        },
        "null": {"n": len(null), "strong": sum(1 for r in null if r.strong), "any": sum(1 for r in null if r.events)},
    }


def worst_runs(results: Sequence[RunResult], k: int | None = 10) -> list[dict[str, Any]]:
    """Clean runs with a deny or cancel, most of them first (then the earliest):
    ``{"id", "agent", "model", "calls", "strong", "first": {"call", "action", "kind",
    "tool"}, "kinds"}`` -- never an argument or a result."""
    flagged = sorted(
        (r for r in results if r.record.label == "clean" and r.strong),
        key=lambda r: (-len(r.strong), r.strong[0][0], r.record.name),
    )
    out = []
    for r in flagged[:k] if k is not None else flagged:
        first = r.strong[0]
        out.append(
            {
                "id": r.record.name,
                "agent": r.record.agent,
                "model": r.record.model,
                "calls": r.calls,
                "strong": len(r.strong),
                "first": {"call": first[0], "action": first[1], "kind": first[2], "tool": first[3]},
                "kinds": sorted({e[2] for e in r.strong}),
            }
        )
    return out


@dataclass
class RunsReport:
    """The results of a trajectory evaluation: every run's :class:`RunResult`,
    the files read and the runs skipped (by reason)."""

    results: list[RunResult] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)

    def groups(self, key: str) -> dict[str, dict[str, Any]]:
        """:func:`summarize_runs` per value of ``key`` (``agent`` | ``model`` | ``task``), values sorted."""
        by: dict[str, list[RunResult]] = {}
        for r in self.results:
            by.setdefault(r.record.group(key), []).append(r)
        return {name: summarize_runs(by[name]) for name in sorted(by)}

    def to_dict(self, *, by: Sequence[str] = (), worst: int | None = None) -> dict[str, Any]:
        """The ``"runs"`` section of ``loopguard eval --json``: ``{"files", "runs",
        "skipped", "summary", "groups": {key: {value: summary}}, "worst"}``."""
        return {
            "files": list(self.files),
            "runs": len(self.results),
            "skipped": dict(sorted(self.skipped.items())),
            "summary": summarize_runs(self.results),
            "groups": {key: self.groups(key) for key in by if key in RUN_GROUP_KEYS},
            "worst": worst_runs(self.results, worst),
        }


class RunCollector:
    """Replays trajectory records as a reader meets them (they are never all held:
    a run's calls are dropped once replayed), for :func:`loopguard.evaluate_records.load_records`'s
    ``on_run`` hook.

    Parameters
    ----------
    config : ToolGuardConfig | None
        The guard's configuration (``None``: defaults).
    on_run : callable, optional
        Called after each replayed run (progress).
    """

    def __init__(self, config: ToolGuardConfig | None = None, on_run: Callable[[], None] | None = None) -> None:
        self.config = config
        self.report = RunsReport()
        self._on_run = on_run

    def __call__(self, obj: Any, path: str, line: int) -> bool:
        """Replay ``obj`` when it is a trajectory record; ``False`` when it is not one."""
        parsed = parse_run(obj, path, line)
        if parsed is None:
            return False
        if path not in self.report.files:
            self.report.files.append(path)
        if isinstance(parsed, str):
            self.report.skipped[parsed] += 1
        else:
            self.report.results.append(replay_run(parsed, self.config))
        if self._on_run is not None:
            self._on_run()
        return True


def _frac(rate: Mapping[str, Any], digits: int = 2) -> str:
    return rate_text(rate["k"], rate["n"], digits)


def _summary_lines(s: Mapping[str, Any], indent: str) -> list[str]:
    c, lo, nu = s["clean"], s["loop"], s["null"]
    lines = [f"{indent}clean {c['n']}: deny/cancel {_frac(c['strong'])}, notice {_frac(c['notice'])}"]
    if c["first_strong_rule"]:
        lines.append(
            f"{indent}  first deny/cancel by rule: " + ", ".join(f"{k} {v}" for k, v in c["first_strong_rule"].items())
        )
    if c["notice_kinds"]:
        lines.append(
            f"{indent}  runs with a notice of kind: " + ", ".join(f"{k} {v}" for k, v in c["notice_kinds"].items())
        )
    median = lo["median_calls_to_action"]
    lines.append(
        f"{indent}loops {lo['n']}: caught by the deadline (4th repeated call) {_frac(lo['caught'], 1)}; "
        f"median loop calls to the first action {'n/a' if median is None else f'{median:g}'} "
        f"(over {lo['any_action']})"
    )
    lines.append(f"{indent}null {nu['n']}: deny/cancel {nu['strong']}, any action {nu['any']} (not in the rates)")
    return lines


def format_runs(report: RunsReport, *, by: Sequence[str] = (), worst: int = 10) -> list[str]:
    """The text-mode report of a trajectory evaluation, as lines without newlines."""
    s = summarize_runs(report.results)
    skipped = ", ".join(f"{n} {reason}" for reason, n in sorted(report.skipped.items())) or "none"
    n_files = len(report.files)
    lines = [
        f"runs: {s['runs']} trajectories ({s['calls']} calls) from {n_files} file{'s' if n_files != 1 else ''} "
        f"({s['clean']['n']} clean, {s['loop']['n']} loop, {s['null']['n']} null; skipped: {skipped})",
        "replay: a fresh ToolGuard per run, before_call then after_call with the recorded result",
        "",
        "tool guard (default configuration):",
        *_summary_lines(s, "  "),
    ]
    for key in by:
        if key not in RUN_GROUP_KEYS:
            continue
        lines.append(f"  by {key}:")
        for name, g in report.groups(key).items():
            c, lo = g["clean"], g["loop"]
            part = f"clean deny/cancel {c['strong']['k']}/{c['n']}, notice {c['notice']['k']}/{c['n']}"
            if lo["n"]:
                part += f"; loops caught {lo['caught']['k']}/{lo['n']}"
            lines.append(f"    {one_line(name)} ({g['runs']}): {part}")
    entries = worst_runs(report.results, worst)
    if entries:
        total = sum(1 for r in report.results if r.record.label == "clean" and r.strong)
        lines.append(f"  worst {len(entries)} of {total} clean runs denied or cancelled:")
        for i, w in enumerate(entries, 1):
            f = w["first"]
            lines.append(
                f"    {i}. {one_line(w['id'])} · {w['calls']} calls · first {f['action']} at call {f['call']} "
                f"({f['kind']}, tool {one_line(f['tool'])}) · {w['strong']} deny/cancel "
                f"({', '.join(w['kinds'])})"
            )
    return lines
