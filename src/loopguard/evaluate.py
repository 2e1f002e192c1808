"""Evaluate the detectors against labelled cases: ``loopguard eval DIR`` (spec §9).

``DIR/index.json`` lists the cases with their truth (schema in
``shared/data/cases/README.md``): text cases (a streamed model text) and
tool-call cases (a JSON list of ``{"tool", "args", "result", "error"}``).

- A **text** case is replayed as a stream, 16 code points per delta (results
  do not depend on the chunking), through a fresh
  :class:`~loopguard.TextLoopDetector` with the chosen profile, on the
  ``reasoning`` channel when the case's ``channel`` is ``"reasoning"`` and on
  the ``text`` channel (fenced code masked) otherwise.  The first detection
  (lowest ``position``, in code points) decides, see :func:`classify_text`.
- A **tool-call** case is replayed through a fresh ``ToolGuard`` with the
  default config (:mod:`loopguard.guard`), session id = the case's file name:
  each call goes through ``before_call``, then, unless it was denied or
  cancelled, ``after_call`` with the recorded result.  The call index of each
  notice-or-stronger event decides, see :func:`classify_tool`.

Outcomes are ``caught``, ``missed``, ``early`` (a loop case fired before its
loop), ``false_positive`` (a not-loop case fired) and ``clean``.  The text
profile does not apply to tool cases.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from .config import TextConfig
from .errors import InputError
from .terminal import printable
from .text import TextLoopDetector

__all__ = [
    "CHUNK_CHARS",
    "KINDS",
    "OUTCOMES",
    "Case",
    "CaseResult",
    "EvalReport",
    "Event",
    "ToolCall",
    "ToolGuardLike",
    "classify_text",
    "classify_tool",
    "evaluate",
    "evaluate_case",
    "evaluate_text_case",
    "evaluate_tool_case",
    "format_summary",
    "format_table",
    "load_cases",
    "render_rich_table",
    "summarize",
    "table_rows",
]

#: Code points per delta when a text case is replayed as a stream.
CHUNK_CHARS = 16
#: The case kinds of ``index.json``.
KINDS = ("text", "tool_calls")
#: Every outcome a case can have.
OUTCOMES = ("caught", "missed", "early", "false_positive", "clean")
_VERDICTS = ("loop", "not-loop")
_STRONG = ("deny", "cancel")
_EVENT_ACTIONS = ("notice", "deny", "cancel")


# --------------------------------------------------------------------------- cases


@dataclass(frozen=True)
class ToolCall:
    """One recorded tool call of a tool-call case.

    Attributes
    ----------
    tool : str
        The tool name.
    args : Any
        The arguments (a JSON value, normally an object).
    result : Any
        What the tool returned (normally a string).
    error : bool
        Whether the call failed (``False`` when the file omits it).
    """

    tool: str
    args: Any
    result: Any
    error: bool = False


@dataclass(frozen=True)
class Case:
    """A labelled case from ``index.json``, with its content loaded.

    Attributes
    ----------
    file : str
        The file name as written in the index (relative to the case folder).
    path : Path
        Where the file is.
    kind : str
        ``"text"`` or ``"tool_calls"``.
    verdict : str
        ``"loop"`` or ``"not-loop"``.
    text : str | None
        A text case's content (the file's UTF-8 text as written, no newline
        translation); ``None`` for tool cases.
    calls : tuple[ToolCall, ...]
        A tool case's calls; empty for text cases.
    channel : str
        The detector channel a text case is fed to: ``"reasoning"`` when the
        index says ``channel: "reasoning"``, else ``"text"``.
    loop_start, first_repeat, loop_end : int | None
        Text loop truth in code points (``None`` for not-loops; ``loop_end``
        ``None`` when the loop runs to the end of the file).
    loop_start_call, fire_by_call : int | None
        Tool loop truth, 0-based call indices (``None`` for not-loops).
    entry : Mapping[str, Any]
        The whole index entry (``source``, ``shape``, ``notes``, ...).
    """

    file: str
    path: Path
    kind: str
    verdict: str
    text: str | None = None
    calls: tuple[ToolCall, ...] = ()
    channel: str = "text"
    loop_start: int | None = None
    first_repeat: int | None = None
    loop_end: int | None = None
    loop_start_call: int | None = None
    fire_by_call: int | None = None
    entry: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)


def _read_json(path: Path) -> Any:
    text = _load_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg}", path=str(path), line=exc.lineno) from None
    except RecursionError:
        raise InputError("invalid JSON: nested too deeply", path=str(path)) from None


def _index_entries(data: Any, index: Path) -> list[Any]:
    if isinstance(data, list):
        return data
    if isinstance(data, dict):
        if isinstance(data.get("cases"), list):
            return list(data["cases"])
        lists = [value for value in data.values() if isinstance(value, list)]
        if len(lists) == 1:
            return list(lists[0])
    raise InputError('expected a list of cases (or an object with a "cases" list)', path=str(index))


def _int_field(entry: Mapping[str, Any], key: str, where: str, *, optional: bool = False) -> int | None:
    value = entry.get(key)
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(f"{where}: {key!r} must be an integer >= 0, not {value!r}")
    return value


def _load_calls(path: Path) -> tuple[ToolCall, ...]:
    data = _read_json(path)
    if not isinstance(data, list):
        raise InputError("a tool-call case must be a JSON list of calls", path=str(path))
    calls = []
    for i, item in enumerate(data):
        if not isinstance(item, dict) or not isinstance(item.get("tool"), str):
            raise InputError(f'call {i}: expected an object with a string "tool"', path=str(path))
        error = item.get("error", False)
        if not isinstance(error, bool):
            raise InputError(f'call {i}: "error" must be true or false', path=str(path))
        calls.append(ToolCall(item["tool"], item.get("args", {}), item.get("result", ""), error))
    return tuple(calls)


def _load_text(path: Path) -> str:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or type(exc).__name__}", path=str(path)) from None
    try:
        return raw.decode("utf-8")  # offsets are code points into the file as written
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 (byte {exc.start})", path=str(path)) from None


def load_cases(directory: str | Path) -> list[Case]:
    """Read ``DIR/index.json`` and every case file it lists (spec §9).

    Parameters
    ----------
    directory : str | Path
        The case folder.  ``index.json`` is a JSON list of case entries, or
        an object holding that list (under ``"cases"``, or its only list).
        Each entry needs ``file``, ``kind`` (``text`` | ``tool_calls``) and
        ``verdict`` (``loop`` | ``not-loop``); a text loop needs
        ``loop_start`` and ``first_repeat`` (``loop_end`` optional), a tool
        loop ``loop_start_call`` and ``fire_by_call``.  Files in the folder
        that the index does not list are ignored.

    Returns
    -------
    list[Case]
        In index order, content loaded (text decoded as UTF-8 without newline
        translation; tool calls parsed).

    Raises
    ------
    InputError
        naming the file (``index.json`` or the case file) when it is missing,
        unreadable, not UTF-8 or invalid JSON, or when an index entry or a
        tool call does not fit the schema.
    """
    folder = Path(directory)
    index = folder / "index.json"
    entries = _index_entries(_read_json(index), index)
    cases = []
    for i, entry in enumerate(entries):
        where = f"{index}: case {i}"
        if not isinstance(entry, dict) or not isinstance(entry.get("file"), str) or not entry["file"]:
            raise InputError(f'{where}: expected an object with a "file" name')
        where = f"{index}: {entry['file']}"
        kind, verdict = entry.get("kind"), entry.get("verdict")
        if kind not in KINDS:
            raise InputError(f"{where}: 'kind' must be one of {', '.join(KINDS)}, not {kind!r}")
        if verdict not in _VERDICTS:
            raise InputError(f"{where}: 'verdict' must be one of {', '.join(_VERDICTS)}, not {verdict!r}")
        path = folder / entry["file"]
        loop = verdict == "loop"
        if kind == "text":
            cases.append(
                Case(
                    entry["file"],
                    path,
                    kind,
                    verdict,
                    text=_load_text(path),
                    channel="reasoning" if entry.get("channel") == "reasoning" else "text",
                    loop_start=_int_field(entry, "loop_start", where) if loop else None,
                    first_repeat=_int_field(entry, "first_repeat", where) if loop else None,
                    loop_end=_int_field(entry, "loop_end", where, optional=True) if loop else None,
                    entry=entry,
                )
            )
        else:
            cases.append(
                Case(
                    entry["file"],
                    path,
                    kind,
                    verdict,
                    calls=_load_calls(path),
                    loop_start_call=_int_field(entry, "loop_start_call", where) if loop else None,
                    fire_by_call=_int_field(entry, "fire_by_call", where) if loop else None,
                    entry=entry,
                )
            )
    return cases


# --------------------------------------------------------------------------- outcomes


def classify_text(
    verdict: str,
    position: int | None,
    *,
    loop_start: int | None = None,
    first_repeat: int | None = None,
    loop_end: int | None = None,
    check_every: int = 200,
) -> str:
    """The outcome of a text case from its first detection (spec §9).

    Parameters
    ----------
    verdict : str
        ``"loop"`` or ``"not-loop"``.
    position : int | None
        The first detection's position (code points), ``None`` if nothing fired.
    loop_start, first_repeat, loop_end : int | None
        The case's truth (code points; needed for a loop).
    check_every : int
        The detectors' checkpoint spacing (code points, default 200): a
        bounded loop is still caught up to ``loop_end + check_every``.

    Returns
    -------
    str
        Not-loop: ``"false_positive"`` if anything fired, else ``"clean"``.
        Loop: ``"missed"`` if nothing fired; ``"early"`` if ``position <
        loop_start``; ``"caught"`` if ``position >= first_repeat`` and
        (``loop_end`` is ``None`` or ``position <= loop_end + check_every``);
        otherwise ``"missed"`` -- a first detection inside the first copy
        (``[loop_start, first_repeat)``) or after the loop has ended is not a
        catch (our choice; the spec names neither case).

    Examples
    --------
    >>> classify_text("loop", 1400, loop_start=884, first_repeat=1263)
    'caught'
    >>> classify_text("loop", 1000, loop_start=884, first_repeat=1263)
    'missed'
    >>> classify_text("loop", 600, loop_start=884, first_repeat=1263)
    'early'
    >>> classify_text("not-loop", None)
    'clean'
    """
    if verdict != "loop":
        return "clean" if position is None else "false_positive"
    if position is None:
        return "missed"
    if loop_start is None or first_repeat is None:
        raise ValueError("a loop case needs loop_start and first_repeat")
    if position < loop_start:
        return "early"
    if position >= first_repeat and (loop_end is None or position <= loop_end + check_every):
        return "caught"
    return "missed"


@dataclass(frozen=True)
class Event:
    """Something a detector or guard did during a replay.

    Attributes
    ----------
    at : int
        Text: the detection's position (code points). Tool: the 0-based call
        index.
    action : str
        Text: ``"detect"``. Tool: ``"notice"``, ``"deny"`` or ``"cancel"``
        (a ``before_call`` decision other than ``allow``, or an
        ``after_call`` intervention).
    detector : str
        Text: the detection kind (``exact_tail``, ``cycle``...). Tool: the
        event's ``rule`` (e.g. ``"repeat"``), else its ``kind``, else ``""``.
    """

    at: int
    action: str
    detector: str


def classify_tool(
    verdict: str,
    events: Sequence[Event],
    *,
    loop_start_call: int | None = None,
    fire_by_call: int | None = None,
) -> tuple[str, Event | None]:
    """The outcome of a tool-call case from its guard events (spec §9).

    Parameters
    ----------
    verdict : str
        ``"loop"`` or ``"not-loop"``.
    events : Sequence[Event]
        Every notice-or-stronger event of the replay, in call order.
    loop_start_call, fire_by_call : int | None
        The case's truth (0-based call indices; needed for a loop).

    Returns
    -------
    tuple[str, Event | None]
        The outcome and the event that decided it (``None`` when none did).
        Not-loop: ``"false_positive"`` at the first deny or cancel, else
        ``"clean"`` (notices are allowed). Loop: a deny or cancel before
        ``loop_start_call`` is ``"early"``; notices before
        ``loop_start_call`` are ignored (our choice: a reminder about earlier
        calls neither harms nor catches the loop); then the first event at
        or after ``loop_start_call`` is ``"caught"`` if its index is
        ``<= fire_by_call``, else ``"missed"``; no such event: ``"missed"``.

    Examples
    --------
    >>> classify_tool("loop", [Event(3, "deny", "repeat")], loop_start_call=1, fire_by_call=3)
    ('caught', Event(at=3, action='deny', detector='repeat'))
    >>> classify_tool("not-loop", [Event(2, "notice", "repeat")])
    ('clean', None)
    """
    if verdict != "loop":
        strong = next((e for e in events if e.action in _STRONG), None)
        return ("clean", None) if strong is None else ("false_positive", strong)
    if loop_start_call is None or fire_by_call is None:
        raise ValueError("a loop case needs loop_start_call and fire_by_call")
    for event in events:
        if event.at < loop_start_call:
            if event.action in _STRONG:
                return "early", event
            continue
        return ("caught" if event.at <= fire_by_call else "missed"), event
    return "missed", None


# --------------------------------------------------------------------------- replay


@dataclass(frozen=True)
class CaseResult:
    """How one case went.

    Attributes
    ----------
    case : Case
        The case.
    outcome : str
        One of :data:`OUTCOMES`.
    at : int | None
        The deciding event's position (text, code points) or call index
        (tool); ``None`` when nothing decided (nothing fired, or only
        notices on a tool case).
    latency : int | None
        For a caught case: ``at - first_repeat`` (code points) or ``at -
        loop_start_call`` (calls); ``None`` otherwise.
    detector : str | None
        The deciding event's detector (a text detection kind, or a tool rule
        such as ``"repeat"``).
    events : tuple[Event, ...]
        Everything that fired during the replay, in order.
    """

    case: Case
    outcome: str
    at: int | None
    latency: int | None
    detector: str | None
    events: tuple[Event, ...] = ()

    @property
    def notices(self) -> int:
        """How many notices the replay produced (tool cases; 0 for text)."""
        return sum(1 for e in self.events if e.action == "notice")

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` row: ``file``, ``kind``, ``verdict``, ``outcome``, ``at``,
        ``latency``, ``detector`` (+ ``notices`` for tool cases)."""
        row: dict[str, Any] = {
            "file": self.case.file,
            "kind": self.case.kind,
            "verdict": self.case.verdict,
            "outcome": self.outcome,
            "at": self.at,
            "latency": self.latency,
            "detector": self.detector,
        }
        if self.case.kind == "tool_calls":
            row["notices"] = self.notices
        return row


def evaluate_text_case(case: Case, config: TextConfig | str = "default", *, chunk: int = CHUNK_CHARS) -> CaseResult:
    """Replay a text case through a fresh detector and classify it.

    Parameters
    ----------
    case : Case
        A ``text`` case.
    config : TextConfig | str
        The detector config or profile name (default ``"default"``).
    chunk : int
        Code points per delta (default 16; results do not depend on it).

    Returns
    -------
    CaseResult
        Outcome per :func:`classify_text` with the config's ``check_every``.
    """
    if case.text is None:
        raise ValueError(f"{case.file} is not a text case")
    config = TextConfig(config) if isinstance(config, str) else config
    detector = TextLoopDetector(config)
    text = case.text
    found = []
    for i in range(0, len(text), max(1, chunk)):
        found += detector.feed(text[i : i + chunk], case.channel)
    found += detector.finish()
    events = tuple(sorted((Event(d.position, "detect", d.kind) for d in found), key=lambda e: e.at))
    first = events[0] if events else None
    outcome = classify_text(
        case.verdict,
        None if first is None else first.at,
        loop_start=case.loop_start,
        first_repeat=case.first_repeat,
        loop_end=case.loop_end,
        check_every=config.check_every,
    )
    latency = first.at - case.first_repeat if first and outcome == "caught" and case.first_repeat is not None else None
    if first is None:
        return CaseResult(case, outcome, None, None, None, events)
    return CaseResult(case, outcome, first.at, latency, first.detector, events)


class ToolGuardLike(Protocol):
    """What the replay needs of ``loopguard.guard.ToolGuard`` (spec §8)."""

    def before_call(self, session_id: str, tool: str, args: Any) -> Any:
        """A decision with ``action`` in ``allow|notice|deny|cancel``."""

    def after_call(self, session_id: str, tool: str, args: Any, result: Any, *, error: bool = False) -> Any:
        """A list of interventions, each with ``action`` in ``notice|cancel``."""


def _default_guard() -> ToolGuardLike:
    from .guard import ToolGuard, ToolGuardConfig  # imported on first use: text-only runs never load it

    return ToolGuard(ToolGuardConfig())


def _event(at: int, obj: Any) -> Event:
    detector = getattr(obj, "rule", None) or getattr(obj, "kind", None) or ""
    return Event(at, str(obj.action), str(detector))


def evaluate_tool_case(case: Case, guard: ToolGuardLike | None = None) -> CaseResult:
    """Replay a tool-call case through a ToolGuard and classify it.

    Each call ``i``: ``before_call(session, tool, args)``; a decision other
    than ``allow`` is an event at ``i``; unless it is ``deny`` or ``cancel``,
    ``after_call(session, tool, args, result, error=error)`` follows and each
    returned intervention is an event at ``i``.  The replay goes on to the
    last call (a denied call is skipped, not the rest of the case).

    Parameters
    ----------
    case : Case
        A ``tool_calls`` case.
    guard : ToolGuardLike | None
        The guard; ``None`` = a fresh ``ToolGuard(ToolGuardConfig())``.  The
        session id is the case's file name.

    Returns
    -------
    CaseResult
        Outcome per :func:`classify_tool`; latency in calls.
    """
    if case.kind != "tool_calls":
        raise ValueError(f"{case.file} is not a tool-call case")
    guard = _default_guard() if guard is None else guard
    session = case.file
    events: list[Event] = []
    for i, call in enumerate(case.calls):
        decision = guard.before_call(session, call.tool, call.args)
        action = str(decision.action)
        if action != "allow":
            events.append(_event(i, decision))
        if action in _STRONG:
            continue
        for intervention in guard.after_call(session, call.tool, call.args, call.result, error=call.error):
            if str(intervention.action) in _EVENT_ACTIONS:
                events.append(_event(i, intervention))
    outcome, decided = classify_tool(
        case.verdict, events, loop_start_call=case.loop_start_call, fire_by_call=case.fire_by_call
    )
    at = None if decided is None else decided.at
    latency = None
    if at is not None and outcome == "caught" and case.loop_start_call is not None:
        latency = at - case.loop_start_call
    return CaseResult(case, outcome, at, latency, None if decided is None else decided.detector, tuple(events))


def evaluate_case(case: Case, config: TextConfig | str = "default") -> CaseResult:
    """:func:`evaluate_text_case` or :func:`evaluate_tool_case` (fresh default guard) by ``case.kind``."""
    return evaluate_text_case(case, config) if case.kind == "text" else evaluate_tool_case(case)


# --------------------------------------------------------------------------- report


def _number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else float(value)


def summarize(results: Iterable[CaseResult], kind: str) -> dict[str, Any]:
    """The spec §9 summary of one kind's results.

    Parameters
    ----------
    results : Iterable[CaseResult]
        Results of any kinds; only ``kind``'s count.
    kind : str
        ``"text"`` or ``"tool_calls"``.

    Returns
    -------
    dict
        ``loops`` (loop cases), ``caught``, ``missed`` and ``early`` (loop cases
        not caught, by outcome), ``not_loops`` (not-loop cases),
        ``false_positives`` (not-loop cases that fired *plus* loop cases
        that fired ``early``, before their loop: spec §9 counts those as
        false positives), ``median_latency`` and ``max_latency`` over caught
        cases (code points for text, calls for tool cases; ``None`` when
        nothing was caught; the median may be a half-integer).
    """
    mine = [r for r in results if r.case.kind == kind]
    latencies = [r.latency for r in mine if r.outcome == "caught" and r.latency is not None]
    return {
        "loops": sum(1 for r in mine if r.case.verdict == "loop"),
        "caught": sum(1 for r in mine if r.outcome == "caught"),
        "missed": sum(1 for r in mine if r.outcome == "missed"),
        "early": sum(1 for r in mine if r.outcome == "early"),
        "not_loops": sum(1 for r in mine if r.case.verdict != "loop"),
        "false_positives": sum(1 for r in mine if r.outcome in ("false_positive", "early")),
        "median_latency": _number(statistics.median(latencies)) if latencies else None,
        "max_latency": max(latencies) if latencies else None,
    }


def _outcome_of(case: Case, events: Sequence[Event], check_every: int) -> tuple[str, Event | None]:
    """The outcome of ``case`` if only ``events`` had happened."""
    if case.kind == "text":
        first = events[0] if events else None
        outcome = classify_text(
            case.verdict,
            None if first is None else first.at,
            loop_start=case.loop_start,
            first_repeat=case.first_repeat,
            loop_end=case.loop_end,
            check_every=check_every,
        )
        return outcome, first
    return classify_tool(case.verdict, events, loop_start_call=case.loop_start_call, fire_by_call=case.fire_by_call)


def by_detector(results: Iterable[CaseResult], kind: str, *, check_every: int = 200) -> dict[str, dict[str, Any]]:
    """Each detector on its own, as it fired in this run (issue: detection quality).

    For every detector that fired on a ``kind`` case, the case is classified
    again from that detector's events only (:func:`classify_text` /
    :func:`classify_tool`): what it would have caught alone, where it alone
    would have fired on a legitimate case, and how fast.

    Returns
    -------
    dict
        ``{detector: {"caught", "false_positives", "median_latency"}}``,
        detectors sorted by name; latency in code points (text) or calls
        (tool) after ``first_repeat`` / ``loop_start_call``.
    """
    stats: dict[str, dict[str, Any]] = {}
    latencies: dict[str, list[int]] = {}
    for r in results:
        if r.case.kind != kind:
            continue
        for name in sorted({e.detector for e in r.events if e.detector}):
            mine = [e for e in r.events if e.detector == name]
            outcome, event = _outcome_of(r.case, mine, check_every)
            entry = stats.setdefault(name, {"caught": 0, "false_positives": 0, "median_latency": None})
            if outcome == "caught" and event is not None:
                entry["caught"] += 1
                base = r.case.first_repeat if kind == "text" else r.case.loop_start_call
                if base is not None:
                    latencies.setdefault(name, []).append(event.at - base)
            elif outcome in ("false_positive", "early"):
                entry["false_positives"] += 1
    for name, values in latencies.items():
        stats[name]["median_latency"] = _number(statistics.median(values))
    return dict(sorted(stats.items()))


@dataclass(frozen=True)
class EvalReport:
    """The results of one evaluation run.

    Attributes
    ----------
    profile : str
        The text profile (``default`` | ``fuse`` | ``rescue``).
    results : tuple[CaseResult, ...]
        One per case, in index order.
    """

    profile: str
    results: tuple[CaseResult, ...]

    def summary(self) -> dict[str, dict[str, Any]]:
        """``{"text": summarize(..., "text"), "tool_calls": summarize(..., "tool_calls")}``."""
        return {kind: summarize(self.results, kind) for kind in KINDS}

    def by_detector(self) -> dict[str, dict[str, dict[str, Any]]]:
        """``{"text": by_detector(..., "text"), "tool_calls": by_detector(..., "tool_calls")}``."""
        return {kind: by_detector(self.results, kind) for kind in KINDS}

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` object: ``{"profile", "cases": [...], "summary": {"text", "tool_calls"},
        "by_detector": {"text": {...}, "tool_calls": {...}}}`` (the last beyond spec §9)."""
        return {
            "profile": self.profile,
            "cases": [r.to_dict() for r in self.results],
            "summary": self.summary(),
            "by_detector": self.by_detector(),
        }


def evaluate(
    cases: Iterable[Case],
    profile: str = "default",
    *,
    on_case: Callable[[], None] | None = None,
) -> EvalReport:
    """Evaluate every case (spec §9).

    Parameters
    ----------
    cases : Iterable[Case]
        From :func:`load_cases`.
    profile : str
        Text detector profile (default ``"default"``); tool cases always use
        ``ToolGuardConfig()``.
    on_case : Callable[[], None] | None
        Called after each case (progress).

    Returns
    -------
    EvalReport
        The results.

    Raises
    ------
    ConfigError
        for an unknown profile.
    """
    config = TextConfig(profile)
    results = []
    for case in cases:
        results.append(evaluate_case(case, config))
        if on_case is not None:
            on_case()
    return EvalReport(profile, tuple(results))


# --------------------------------------------------------------------------- human output

_COLUMNS = ("file", "kind", "verdict", "outcome", "at", "latency", "detector")


def _cell(value: Any) -> str:
    return "-" if value is None else printable(str(value))  # a case file name is read from the index


def table_rows(report: EvalReport) -> list[list[str]]:
    """The table's cells, one row per case, in :data:`_COLUMNS` order (``-`` for ``None``;
    made terminal-safe by :func:`loopguard.terminal.printable`)."""
    return [[_cell(r.to_dict()[c]) for c in _COLUMNS] for r in report.results]


def format_table(report: EvalReport) -> list[str]:
    """The per-case table as plain text lines (header first, columns space-aligned)."""
    rows = [list(_COLUMNS), *table_rows(report)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(_COLUMNS))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "n/a"


def format_summary(report: EvalReport) -> list[str]:
    """The summary lines per kind: recall, false positives, latency, first detectors.

    Recall = caught / loop cases; the false-positive rate = not-loop cases
    that fired / not-loop cases (loop cases that fired early are counted
    beside recall).  Latency is over caught cases.  For the shared cases
    with ``--profile fuse`` the text part reads::

        text (profile fuse): 34 cases
          recall 13/17 = 76.5% (4 missed, 0 early)
          false positives 1/17 = 5.9%
          latency median 1737, max 1931 code points
          first detector: lowdiv_tail 7, exact_tail 5, lowdiv_sliding 2
          each detector alone: caught / false positives / median latency
            exact_tail      8 / 0 / 1898.5
            lowdiv_sliding  5 / 1 / 1524
            lowdiv_tail     10 / 1 / 1717.5

    Tool cases add ``notices on not-loop cases: N`` (notices are allowed
    there); a kind without cases is one line ``... : no cases``.
    """
    lines = []
    for kind, unit, label in (
        ("text", "code points", f"text (profile {report.profile})"),
        ("tool_calls", "calls", "tool calls (default ToolGuard)"),
    ):
        mine = [r for r in report.results if r.case.kind == kind]
        if not mine:
            lines.append(f"{label}: no cases")
            continue
        s = summarize(mine, kind)
        outcomes = Counter(r.outcome for r in mine)
        fired = outcomes["false_positive"]
        lines += [
            f"{label}: {len(mine)} cases",
            f"  recall {s['caught']}/{s['loops']} = {_percent(s['caught'], s['loops'])} "
            f"({outcomes['missed']} missed, {outcomes['early']} early)",
            f"  false positives {fired}/{s['not_loops']} = {_percent(fired, s['not_loops'])}",
            f"  latency median {s['median_latency']}, max {s['max_latency']} {unit}"
            if s["median_latency"] is not None
            else "  latency n/a (nothing caught)",
        ]
        firsts = Counter(r.detector for r in mine if r.detector and r.outcome != "clean")
        if firsts:
            shown = ", ".join(f"{name} {n}" for name, n in sorted(firsts.items(), key=lambda kv: (-kv[1], kv[0])))
            lines.append(f"  first detector: {shown}")
        if kind == "tool_calls":
            notices = sum(r.notices for r in mine if r.case.verdict != "loop")
            lines.append(f"  notices on not-loop cases: {notices}")
        alone = by_detector(mine, kind)
        if alone:
            lines.append("  each detector alone: caught / false positives / median latency")
            width = max(len(name) for name in alone)
            lines += [
                f"    {name.ljust(width)}  {d['caught']} / {d['false_positives']} / {_cell(d['median_latency'])}"
                for name, d in alone.items()
            ]
    return lines


def render_rich_table(report: EvalReport) -> Any:
    """The per-case table as a ``rich.table.Table`` (outcomes coloured), for a terminal."""
    from rich.table import Table
    from rich.text import Text

    styles = {"caught": "green", "clean": "green", "missed": "yellow", "early": "red", "false_positive": "red"}
    table = Table(show_edge=False, pad_edge=False)
    for name in _COLUMNS:
        if name == "file":  # a long name folds onto a second line rather than losing its end
            table.add_column(name, overflow="fold", ratio=1)
        else:
            table.add_column(name, justify="right" if name in ("at", "latency") else "left", no_wrap=True)
    for result, row in zip(report.results, table_rows(report)):
        style = styles.get(result.outcome, "")
        cells = [Text(cell) for cell in row]  # Text: a file name is never read as markup
        cells[3] = Text(row[3], style=style)
        table.add_row(*cells)
    return table
