"""Evaluate on labelled JSON Lines text records: ``loopguard eval FILE.jsonl|DIR`` (spec §9, last paragraph).

A **text record** is one JSON object per line (``.jsonl``, or gzip-compressed
``.jsonl.gz``) with a string ``text`` and its label ``looping``: ``true`` (the
text ends in a loop; ``loop_start`` is the first code point of the loop),
``false`` (clean) or ``null`` (neither: reported, excluded from the rates).
``id``, ``model`` and ``task`` are kept when present (the layout of
``shared/data/real/bench``, see its README).

Each record is replayed as a host would drive a :class:`~loopguard.Session`:
a fresh session with the profile as ``text_config``, ``start_turn()``,
``start_attempt()``, then the text on the ``"reasoning"`` channel in deltas of
``delta`` code points (default 16).  The first verdict whose action is
``cut`` or ``cancel`` is the record's **stop** and feeding ends there; the
first ``notice`` is recorded the same way.  A verdict's position is
``i + delta`` for the delta ``text[i:i + delta]`` that produced it -- the end
of a full delta; on a short last delta it may exceed ``len(text)`` by up to
``delta - 1`` (exactly as ``shared/tools/cutbench.py`` computes it, whose
counts these reproduce).

Counted per profile: clean records cut and noticed (rates with a Wilson 95 %
interval), loop records cut (recall, Wilson interval), latency (stop position
- ``loop_start``, over cut loops that have a ``loop_start``; an early stop
gives a negative latency) as p50 / p90, and early stops (before
``loop_start``).  Null records: how many were cut or noticed, nothing more.

Objects that are not text records (no string ``text``, e.g. the trajectory
records of ``shared/data/real/agentbench`` with ``calls`` / ``label``) are
skipped and counted under :data:`SKIP_NOT_TEXT`; text records whose label is
not valid are skipped under :data:`SKIP_BAD_LABEL`.  A line that is not JSON,
a file that is not UTF-8 or not valid gzip, and a missing path are
:class:`~loopguard.errors.InputError` s naming the file (and line).
"""

from __future__ import annotations

import gzip
import json
import math
import os
import stat
import statistics
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .config import TextConfig
from .errors import InputError, os_error_reason
from .redact import redact_excerpt, redact_secrets
from .terminal import printable

__all__ = [
    "rate_text",
    "ALL_PROFILES",
    "CHUNKSIZE",
    "CONTEXT_CHARS",
    "DEFAULT_JOBS",
    "DELTA_CHARS",
    "GROUP_KEYS",
    "RECORD_CHANNEL",
    "RESULT_FIELDS",
    "SKIP_BAD_LABEL",
    "SKIP_NOT_TEXT",
    "Hit",
    "RecordResult",
    "RecordSet",
    "RecordsReport",
    "TextRecord",
    "evaluate_records",
    "format_records",
    "load_records",
    "percentile",
    "record_files",
    "replay_records",
    "replay_text",
    "summarize_records",
    "wilson",
    "worst_records",
]

#: Code points per delta fed to the session (``--delta``).
DELTA_CHARS = 16
#: Worker processes (``--jobs``); 1 replays in this process.
DEFAULT_JOBS = 2
#: Records per task handed to a worker process at a time.
CHUNKSIZE = 16
#: The channel every record is fed to (the text holds reasoning and answer together).
RECORD_CHANNEL = "reasoning"
#: What ``--profile all`` stands for.
ALL_PROFILES = ("default", "fuse", "rescue")
#: The record fields ``--by`` can group on.
GROUP_KEYS = ("task", "model")
#: Code points of context shown around a worst record's cut (half before, half after).
CONTEXT_CHARS = 150
#: Skip reason: a JSON value without a string ``text`` (e.g. a trajectory record).
SKIP_NOT_TEXT = "not a text record"
#: Skip reason: ``looping`` not true/false/null, or ``loop_start`` not an integer >= 0 or null.
SKIP_BAD_LABEL = "invalid label"
#: The columns of each row of ``results`` in :meth:`RecordsReport.to_dict`.
RESULT_FIELDS = ("id", "looping", "loop_start", "length", "stop", "stop_kind", "stop_cut", "notice", "notice_kind")

_Z95 = 1.959963984540054  # the 97.5 % standard normal quantile
_STOPS = ("cut", "cancel")


# --------------------------------------------------------------------------- statistics


def wilson(k: int, n: int, z: float = _Z95) -> tuple[float, float]:
    """The Wilson score interval of a proportion ``k / n``.

    Parameters
    ----------
    k : int
        Successes, ``0 <= k <= n``.
    n : int
        Trials, ``>= 0``.
    z : float
        The normal quantile (default 1.95996..., a two-sided 95 % interval).

    Returns
    -------
    tuple[float, float]
        ``(low, high)`` as fractions in ``[0, 1]``: ``(c - h, c + h)`` with
        ``c = (p + z²/2n) / (1 + z²/n)`` and ``h = z·sqrt(p(1-p)/n + z²/4n²) /
        (1 + z²/n)``, ``p = k/n``; ``low`` is exactly 0 when ``k == 0`` and
        ``high`` exactly 1 when ``k == n``.  ``n == 0`` gives ``(0.0, 1.0)``
        (no information).

    Raises
    ------
    ValueError
        when ``n < 0`` or ``k`` is outside ``[0, n]``.

    Examples
    --------
    0/10: z² = 3.8415, 1 + z²/n = 1.38415, c = 0.19207 / 1.38415 = 0.13877 and
    h = 1.96 · sqrt(3.8415/400) / 1.38415 = 0.13877, so (0, 0.27753).
    5/10: c = 0.5, h = 1.96 · sqrt(0.025 + 0.0096037) / 1.38415 = 0.26341.

    >>> [round(x, 5) for x in wilson(0, 10)]
    [0.0, 0.27753]
    >>> [round(x, 5) for x in wilson(5, 10)]
    [0.23659, 0.76341]
    >>> [round(100 * x, 2) for x in wilson(148, 6007)]
    [2.1, 2.89]
    >>> wilson(10, 10)[1], wilson(0, 0)
    (1.0, (0.0, 1.0))
    """
    if n < 0 or not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n, not k={k}, n={n}")
    if n == 0:
        return 0.0, 1.0
    p = k / n
    z2 = z * z
    denom = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    low = 0.0 if k == 0 else max(0.0, centre - half)
    high = 1.0 if k == n else min(1.0, centre + half)
    return low, high


def percentile(values: Sequence[float], q: float) -> float | None:
    """The nearest-rank ``q`` quantile: ``sorted(values)[round(q · (len - 1))]``.

    The rule of ``shared/tools/realbench.py`` (so p90 matches it); ``None``
    for no values.  ``q`` in ``[0, 1]``.

    >>> percentile([5, 1, 4, 2, 3], 0.9), percentile([], 0.5)
    (5, None)
    """
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else float(value)


# --------------------------------------------------------------------------- loading


@dataclass(frozen=True)
class TextRecord:
    """One labelled text record.

    Attributes
    ----------
    text : str
        The model output (reasoning and answer together).
    looping : bool | None
        ``True`` loop, ``False`` clean, ``None`` neither.
    loop_start : int | None
        First code point of the loop (loop records; ``None`` when absent).
    id, model, task : str | None
        As in the record (``None`` when absent; non-strings as ``str()``).
    file : str
        The file it came from.
    line : int
        Its 1-based line in that file.
    """

    text: str
    looping: bool | None
    loop_start: int | None = None
    id: str | None = None
    model: str | None = None
    task: str | None = None
    file: str = ""
    line: int = 0

    @property
    def label(self) -> str:
        """``id`` when the record has one, else ``file:line``."""
        return self.id if self.id is not None else f"{self.file}:{self.line}"

    def group(self, key: str) -> str:
        """The record's ``task`` or ``model`` (``"(none)"`` when absent)."""
        value = getattr(self, key) if key in GROUP_KEYS else None
        return "(none)" if value is None else str(value)


@dataclass
class RecordSet:
    """The text records read from JSON Lines files.

    Attributes
    ----------
    records : list[TextRecord]
        In file order, then line order.
    files : list[str]
        Every file read (each once).
    skipped : Counter[str]
        Non-empty lines that were not used, by reason
        (:data:`SKIP_NOT_TEXT`, :data:`SKIP_BAD_LABEL`).
    """

    records: list[TextRecord] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)


def record_files(path: str) -> list[str]:
    """The JSON Lines files a path stands for.

    Parameters
    ----------
    path : str
        A file (read as JSON Lines whatever its name) or a folder (walked
        recursively; every ``*.jsonl`` / ``*.jsonl.gz``, full paths sorted,
        the order of ``cutbench.py``).

    Returns
    -------
    list[str]
        The files; empty for a folder without any.

    Raises
    ------
    InputError
        when the path does not exist (or is a symbolic link loop), or a folder
        in it cannot be listed (e.g. permission denied).
    """
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise InputError(os_error_reason(path, exc), path=path) from None
    if stat.S_ISREG(mode):
        return [path]
    if not stat.S_ISDIR(mode):
        raise InputError("not a regular file or directory", path=path)

    def unlisted(exc: OSError) -> None:
        directory = str(exc.filename) if exc.filename is not None else path
        raise InputError(f"cannot list this directory: {os_error_reason(directory, exc)}", path=directory)

    return sorted(
        os.path.join(root, name)
        for root, _dirs, names in os.walk(path, onerror=unlisted)
        for name in names
        if name.endswith((".jsonl", ".jsonl.gz"))
    )


def _open_lines(path: str) -> Iterator[tuple[int, str]]:
    try:
        with open(path, "rb") as probe:
            gzipped = probe.read(2) == b"\x1f\x8b"
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or type(exc).__name__}", path=path) from None
    number = 0
    try:
        with gzip.open(path, "rb") if gzipped else open(path, "rb") as fh:
            for number, raw in enumerate(fh, 1):
                try:
                    yield number, raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise InputError(f"not UTF-8 (byte {exc.start} of the line)", path=path, line=number) from None
    except (OSError, EOFError, zlib.error) as exc:  # gzip.BadGzipFile is an OSError
        raise InputError(f"cannot read gzip data ({type(exc).__name__})", path=path, line=number + 1) from None


def _optional_str(value: Any) -> str | None:
    return None if value is None else value if isinstance(value, str) else str(value)


def _parse(obj: Any, path: str, line: int) -> TextRecord | str:
    """A record, or the reason it is skipped."""
    if not isinstance(obj, dict) or not isinstance(obj.get("text"), str):
        return SKIP_NOT_TEXT
    looping = obj.get("looping")
    loop_start = obj.get("loop_start")
    if looping is not None and not isinstance(looping, bool):
        return SKIP_BAD_LABEL
    if loop_start is not None and (isinstance(loop_start, bool) or not isinstance(loop_start, int) or loop_start < 0):
        return SKIP_BAD_LABEL
    return TextRecord(
        obj["text"],
        looping,
        loop_start,
        _optional_str(obj.get("id")),
        _optional_str(obj.get("model")),
        _optional_str(obj.get("task")),
        path,
        line,
    )


def load_records(paths: Iterable[str], on_run: Callable[[Any, str, int], bool] | None = None) -> RecordSet:
    """Read the text records of JSON Lines files and folders.

    Parameters
    ----------
    paths : Iterable[str]
        Files and folders (see :func:`record_files`); a file named twice is
        read once.  Gzip is recognised by its magic bytes.  Blank lines are
        ignored.
    on_run : callable, optional
        Called with ``(object, file, line)`` for every parsed line before it
        is read as a text record; when it returns ``True`` the object was
        taken (a trajectory record: :class:`loopguard.evaluate_runs.RunCollector`)
        and is neither a record nor skipped.

    Returns
    -------
    RecordSet
        The records, files and skip counts.

    Raises
    ------
    InputError
        naming the file and 1-based line for a line that is not JSON or not
        UTF-8, or unreadable gzip data; naming the path when it does not
        exist.
    """
    out = RecordSet()
    seen: set[str] = set()
    for path in paths:
        for name in record_files(path):
            if name in seen:
                continue
            seen.add(name)
            out.files.append(name)
            for line, raw in _open_lines(name):
                if not raw.strip():
                    continue
                try:
                    obj = json.loads(raw)
                except json.JSONDecodeError as exc:
                    raise InputError(f"invalid JSON: {exc.msg} (column {exc.colno})", path=name, line=line) from None
                except RecursionError:
                    raise InputError("invalid JSON: nested too deeply", path=name, line=line) from None
                except ValueError as exc:  # an integer of more than 4,300 digits (sys.get_int_max_str_digits)
                    raise InputError(f"invalid JSON: {exc}", path=name, line=line) from None
                if on_run is not None and on_run(obj, name, line):
                    continue
                parsed = _parse(obj, name, line)
                if isinstance(parsed, str):
                    out.skipped[parsed] += 1
                else:
                    out.records.append(parsed)
    return out


# --------------------------------------------------------------------------- replay


@dataclass(frozen=True)
class Hit:
    """A verdict that counted: the first stop or the first notice of a record.

    Attributes
    ----------
    at : int
        ``i + delta`` for the delta ``text[i:i + delta]`` that produced the
        verdict (code points; see the module docstring).
    action : str
        ``"cut"``, ``"cancel"`` or ``"notice"``.
    kind : str | None
        The acting detection's kind (``verdict.detection``), ``None`` when the
        verdict carries none.
    position, cut : int | None
        That detection's position and cut (keep ``text[:cut]``), code points.
    evidence : dict
        That detection's evidence (``Detection.to_dict()["evidence"]``).
    """

    at: int
    action: str
    kind: str | None = None
    position: int | None = None
    cut: int | None = None
    evidence: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """``{"at", "action", "kind", "position", "cut", "evidence"}``."""
        return {
            "at": self.at,
            "action": self.action,
            "kind": self.kind,
            "position": self.position,
            "cut": self.cut,
            "evidence": dict(self.evidence),
        }


def _hit(at: int, verdict: Any) -> Hit:
    detection = getattr(verdict, "detection", None)
    if detection is None:
        return Hit(at, str(verdict.action))
    return Hit(
        at, str(verdict.action), detection.kind, detection.position, detection.cut, detection.to_dict()["evidence"]
    )


def replay_text(
    text: str, config: TextConfig | str = "default", delta: int = DELTA_CHARS
) -> tuple[Hit | None, Hit | None]:
    """Stream one text through a fresh :class:`~loopguard.Session` as a host would.

    Parameters
    ----------
    text : str
        The record's text.
    config : TextConfig | str
        The session's ``text_config`` (a profile name or a config; default
        ``"default"``).
    delta : int
        Code points per :meth:`~loopguard.Session.feed` (default 16, ``>= 1``),
        all on the ``"reasoning"`` channel.

    Returns
    -------
    tuple[Hit | None, Hit | None]
        ``(stop, notice)``: the first ``cut``/``cancel`` verdict (feeding
        stops there) and the first ``notice`` verdict before it; ``None``
        when there was none.

    Raises
    ------
    ValueError
        when ``delta < 1``.
    """
    from .session import Session  # the session pulls in the guard: only load it to replay

    if delta < 1:
        raise ValueError(f"delta must be >= 1, not {delta}")
    session = Session("eval", text_config=config)
    session.start_turn()
    session.start_attempt()
    stop = notice = None
    for i in range(0, len(text), delta):
        verdict = session.feed(text[i : i + delta], RECORD_CHANNEL)
        action = verdict.action
        if action == "notice" and notice is None:
            notice = _hit(i + delta, verdict)
        if action in _STOPS:
            stop = _hit(i + delta, verdict)
            break
    return stop, notice


_WORKER: dict[str, Any] = {}


def _init_worker(profiles: tuple[str, ...], delta: int) -> None:
    _WORKER["configs"] = tuple(TextConfig(p) for p in profiles)
    _WORKER["delta"] = delta


def _replay_all(text: str) -> tuple[tuple[Hit | None, Hit | None], ...]:
    return tuple(replay_text(text, config, _WORKER["delta"]) for config in _WORKER["configs"])


@dataclass(frozen=True)
class RecordResult:
    """What one profile's session did with one record.

    Attributes
    ----------
    record : TextRecord
        The record.
    stop : Hit | None
        The first ``cut`` / ``cancel`` verdict.
    notice : Hit | None
        The first ``notice`` verdict.
    """

    record: TextRecord
    stop: Hit | None
    notice: Hit | None

    @property
    def early(self) -> bool:
        """A loop record stopped before its ``loop_start``."""
        r = self.record
        return r.looping is True and self.stop is not None and r.loop_start is not None and self.stop.at < r.loop_start

    def row(self) -> list[Any]:
        """The compact JSON row, in :data:`RESULT_FIELDS` order."""
        s, n, r = self.stop, self.notice, self.record
        return [
            r.label,
            r.looping,
            r.loop_start,
            len(r.text),
            s and s.at,
            s and s.kind,
            s and s.cut,
            n and n.at,
            n and n.kind,
        ]


def replay_records(
    records: Sequence[TextRecord],
    profiles: Sequence[str] = ("default",),
    *,
    delta: int = DELTA_CHARS,
    jobs: int = DEFAULT_JOBS,
    chunksize: int = CHUNKSIZE,
    on_record: Callable[[], None] | None = None,
) -> dict[str, list[RecordResult]]:
    """Replay every record through a fresh session per profile (:func:`replay_text`).

    Parameters
    ----------
    records : Sequence[TextRecord]
        The records.
    profiles : Sequence[str]
        Profile names (default ``("default",)``); each record is sent to a
        worker once and replayed for every profile there.
    delta : int
        Code points per delta (default 16).
    jobs : int
        Worker processes (``multiprocessing.Pool``, default 2); ``<= 1`` (or
        a single record) replays in this process.
    chunksize : int
        Records per worker task (default 16).
    on_record : Callable[[], None] | None
        Called after each record (progress), in this process.

    Returns
    -------
    dict[str, list[RecordResult]]
        Per profile, one result per record in record order.

    Raises
    ------
    ConfigError
        for an unknown profile (before any work).
    ValueError
        when ``delta < 1``.
    """
    profiles = tuple(profiles)
    for p in profiles:
        TextConfig(p)  # an unknown profile fails here, not in a worker
    if delta < 1:
        raise ValueError(f"delta must be >= 1, not {delta}")
    texts = (r.text for r in records)
    outcomes: list[tuple[tuple[Hit | None, Hit | None], ...]] = []
    if jobs <= 1 or len(records) < 2:
        _init_worker(profiles, delta)
        for text in texts:
            outcomes.append(_replay_all(text))
            if on_record is not None:
                on_record()
    else:
        from multiprocessing import Pool

        with Pool(jobs, initializer=_init_worker, initargs=(profiles, delta)) as pool:
            for outcome in pool.imap(_replay_all, texts, chunksize=max(1, chunksize)):
                outcomes.append(outcome)
                if on_record is not None:
                    on_record()
    return {p: [RecordResult(r, *outcome[j]) for r, outcome in zip(records, outcomes)] for j, p in enumerate(profiles)}


# --------------------------------------------------------------------------- summary


def _rate(k: int, n: int) -> dict[str, Any]:
    return {"rate": k / n if n else None, "ci": list(wilson(k, n)) if n else None}


def summarize_records(results: Iterable[RecordResult]) -> dict[str, Any]:
    """The summary numbers of one profile's results.

    Parameters
    ----------
    results : Iterable[RecordResult]
        Any results (all of a profile, or one group's).

    Returns
    -------
    dict
        ``records`` (count) and::

            "clean": {"n", "cut", "cut_rate", "cut_ci", "notice", "notice_rate",
                      "notice_ci", "cut_kinds": {kind: count}},
            "loop":  {"n", "cut", "recall", "recall_ci", "latency_n",
                      "latency_p50", "latency_p90", "early"},
            "null":  {"n", "cut", "notice"}

        Rates are fractions (``None`` when ``n == 0``), intervals
        ``[low, high]`` fractions (:func:`wilson`).  A clean record is cut by
        a ``cut``/``cancel`` stop and noticed by a ``notice`` (both may
        happen).  Latency = stop ``at`` - ``loop_start`` in code points over
        cut loops with a ``loop_start`` (``latency_n`` of them; early stops
        negative); p50 is the median (may be a half-integer), p90 the
        nearest rank (:func:`percentile`); ``None`` without any.  ``early`` =
        loops stopped before ``loop_start``.
    """
    clean: list[RecordResult] = []
    loop: list[RecordResult] = []
    null: list[RecordResult] = []
    for r in results:
        (clean if r.record.looping is False else loop if r.record.looping is True else null).append(r)
    c_cut = sum(r.stop is not None for r in clean)
    c_note = sum(r.notice is not None for r in clean)
    l_cut = [r for r in loop if r.stop is not None]
    latency = [r.stop.at - r.record.loop_start for r in l_cut if r.stop is not None and r.record.loop_start is not None]
    kinds = Counter(str(r.stop.kind) for r in clean if r.stop is not None)
    cut_rate, note_rate, recall = _rate(c_cut, len(clean)), _rate(c_note, len(clean)), _rate(len(l_cut), len(loop))
    p90 = percentile(latency, 0.9)
    return {
        "records": len(clean) + len(loop) + len(null),
        "clean": {
            "n": len(clean),
            "cut": c_cut,
            "cut_rate": cut_rate["rate"],
            "cut_ci": cut_rate["ci"],
            "notice": c_note,
            "notice_rate": note_rate["rate"],
            "notice_ci": note_rate["ci"],
            "cut_kinds": dict(sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))),
        },
        "loop": {
            "n": len(loop),
            "cut": len(l_cut),
            "recall": recall["rate"],
            "recall_ci": recall["ci"],
            "latency_n": len(latency),
            "latency_p50": _number(statistics.median(latency)) if latency else None,
            "latency_p90": None if p90 is None else _number(p90),
            "early": sum(r.early for r in loop),
        },
        "null": {
            "n": len(null),
            "cut": sum(r.stop is not None for r in null),
            "notice": sum(r.notice is not None for r in null),
        },
    }


def _dropped(result: RecordResult, hit: Hit) -> int:
    end = hit.cut if hit.cut is not None else hit.at
    return max(0, len(result.record.text) - end)


def _redacted_evidence(evidence: Any) -> dict[str, Any]:
    """A detection's evidence with its ``phrases`` (text of the record) redacted."""
    out = dict(evidence)
    phrases = out.get("phrases")
    if isinstance(phrases, (list, tuple)):
        out["phrases"] = [redact_secrets(p) if isinstance(p, str) else p for p in phrases]
    return out


def worst_records(results: Sequence[RecordResult], k: int | None = 10) -> list[dict[str, Any]]:
    """The clean records that were cut, then those only noticed, most text cut off first.

    Parameters
    ----------
    results : Sequence[RecordResult]
        One profile's results.
    k : int | None
        At most this many (default 10); ``None`` = all.

    Returns
    -------
    list[dict]
        ``{"id", "file", "line", "model", "task", "length", "action", "at",
        "kind", "position", "cut", "dropped", "evidence", "context_start",
        "context"}``: ``action``/``at``/``kind``/``position``/``cut``/``evidence``
        of the stop (or of the notice for a record only noticed); ``dropped``
        = ``length - cut`` (``at`` when the verdict has no detection), the
        sort key, descending (record order breaks ties); ``context`` the
        :data:`CONTEXT_CHARS` code points around that cut, secrets redacted,
        starting at ``context_start``.
    """
    cut = [(r, r.stop) for r in results if r.record.looping is False and r.stop is not None]
    noticed = [(r, r.notice) for r in results if r.record.looping is False and r.stop is None and r.notice is not None]
    ranked: list[tuple[RecordResult, Hit]] = []
    for group in (cut, noticed):
        ranked += sorted(((r, h) for r, h in group if h is not None), key=lambda rh: -_dropped(*rh))
    out = []
    for r, hit in ranked[: None if k is None else max(0, k)]:
        rec = r.record
        at = hit.cut if hit.cut is not None else min(hit.at, len(rec.text))
        start = max(0, at - CONTEXT_CHARS // 2)
        out.append(
            {
                "id": rec.label,
                "file": rec.file,
                "line": rec.line,
                "model": rec.model,
                "task": rec.task,
                "length": len(rec.text),
                "action": hit.action,
                "at": hit.at,
                "kind": hit.kind,
                "position": hit.position,
                "cut": hit.cut,
                "dropped": _dropped(r, hit),
                "evidence": _redacted_evidence(hit.evidence),
                "context_start": start,
                "context": redact_excerpt(rec.text, start, at + CONTEXT_CHARS // 2),  # redacted, then cut
            }
        )
    return out


@dataclass(frozen=True)
class RecordsReport:
    """The results of a records evaluation.

    Attributes
    ----------
    records : RecordSet
        What was read (records, files, skip counts).
    results : Mapping[str, list[RecordResult]]
        Per profile, in the order asked, one result per record.
    delta : int
        Code points per delta.
    """

    records: RecordSet
    results: Mapping[str, list[RecordResult]]
    delta: int = DELTA_CHARS

    @property
    def profiles(self) -> tuple[str, ...]:
        """The profiles, in the order asked."""
        return tuple(self.results)

    def groups(self, profile: str, key: str) -> dict[str, dict[str, Any]]:
        """:func:`summarize_records` per value of ``key`` (``task`` | ``model``), values sorted."""
        by: dict[str, list[RecordResult]] = {}
        for r in self.results[profile]:
            by.setdefault(r.record.group(key), []).append(r)
        return {name: summarize_records(by[name]) for name in sorted(by)}

    def to_dict(self, *, by: Sequence[str] = (), worst: int | None = None) -> dict[str, Any]:
        """The ``"records"`` section of ``loopguard eval --json``.

        Returns
        -------
        dict
            ``{"files", "records", "skipped": {reason: n}, "delta", "channel",
            "result_fields": RESULT_FIELDS, "profiles": {profile: {"summary",
            "groups": {key: {value: summary}}, "worst": [...], "results":
            [row, ...]}}}``; summaries from :func:`summarize_records`, worst
            from :func:`worst_records` (``worst`` = at most that many,
            ``None`` = all), rows from :meth:`RecordResult.row`.
        """
        return {
            "files": list(self.records.files),
            "records": len(self.records.records),
            "skipped": dict(sorted(self.records.skipped.items())),
            "delta": self.delta,
            "channel": RECORD_CHANNEL,
            "result_fields": list(RESULT_FIELDS),
            "profiles": {
                p: {
                    "summary": summarize_records(rs),
                    "groups": {key: self.groups(p, key) for key in by},
                    "worst": worst_records(rs, worst),
                    "results": [r.row() for r in rs],
                }
                for p, rs in self.results.items()
            },
        }


def evaluate_records(
    records: RecordSet,
    profiles: Sequence[str] = ("default",),
    *,
    delta: int = DELTA_CHARS,
    jobs: int = DEFAULT_JOBS,
    chunksize: int = CHUNKSIZE,
    on_record: Callable[[], None] | None = None,
) -> RecordsReport:
    """Replay a record set (:func:`replay_records`) and wrap the results in a report.

    Parameters and errors as :func:`replay_records`; ``records`` from
    :func:`load_records`.
    """
    results = replay_records(
        records.records, profiles, delta=delta, jobs=jobs, chunksize=chunksize, on_record=on_record
    )
    return RecordsReport(records, results, delta)


# --------------------------------------------------------------------------- human output


_one_line = printable  # control, bidi and line-breaking characters as visible escapes


def rate_text(k: int, n: int, digits: int = 2) -> str:
    """``"k/n = p% [low, high]"``: a rate with its 95% Wilson interval, in percent (``"k/0"``
    when ``n`` is 0)."""
    if not n:
        return f"{k}/0"
    low, high = wilson(k, n)
    return f"{k}/{n} = {100 * k / n:.{digits}f}% [{100 * low:.{digits}f}, {100 * high:.{digits}f}]"


def _summary_lines(s: Mapping[str, Any], indent: str) -> list[str]:
    c, lo, nu = s["clean"], s["loop"], s["null"]
    lines = [f"{indent}clean {c['n']}: cut {rate_text(c['cut'], c['n'])}, notice {rate_text(c['notice'], c['n'])}"]
    if c["cut_kinds"]:
        lines.append(f"{indent}  cut by: " + ", ".join(f"{k} {v}" for k, v in c["cut_kinds"].items()))
    if lo["latency_n"]:
        latency = (
            f"latency p50 {lo['latency_p50']}, p90 {lo['latency_p90']} code points after loop_start "
            f"(over {lo['latency_n']})"
        )
    else:
        latency = "latency n/a"
    lines.append(
        f"{indent}loops {lo['n']}: cut {rate_text(lo['cut'], lo['n'], 1)}, {latency}, "
        f"{lo['early']} early (stopped before loop_start)"
    )
    lines.append(f"{indent}null {nu['n']}: cut {nu['cut']}, notice {nu['notice']} (not in the rates)")
    return lines


def _group_line(name: str, s: Mapping[str, Any]) -> str:
    c, lo, nu = s["clean"], s["loop"], s["null"]
    parts = [f"clean cut {rate_text(c['cut'], c['n'])}, notice {c['notice']}/{c['n']}"]
    if lo["n"]:
        lat = f", p50 {lo['latency_p50']}, p90 {lo['latency_p90']}" if lo["latency_n"] else ""
        parts.append(f"loops cut {lo['cut']}/{lo['n']}{lat}, {lo['early']} early")
    if nu["n"]:
        parts.append(f"null cut {nu['cut']}/{nu['n']}")
    return f"    {_one_line(name)} ({s['records']}): " + "; ".join(parts)


def _worst_lines(entries: Sequence[Mapping[str, Any]]) -> list[str]:
    lines = []
    for i, w in enumerate(entries, 1):
        head = " · ".join(
            str(x)
            for x in (
                w["id"],
                w["action"],
                w["kind"] or "-",
                f"position {w['position']}",
                f"cut {w['cut']}",
                f"drops {w['dropped']} of {w['length']}"
                if w["action"] in _STOPS
                else f"{w['dropped']} of {w['length']} after the cut",
            )
            if x
        )
        evidence = json.dumps(w["evidence"], ensure_ascii=False, sort_keys=True)
        if len(evidence) > 200:
            evidence = evidence[:199] + "…"
        at = w["cut"] if w["cut"] is not None else min(w["at"], w["length"])
        split = at - w["context_start"]
        context = w["context"]
        before = ("…" if w["context_start"] > 0 else "") + _one_line(context[:split])
        after = _one_line(context[split:]) + ("…" if w["context_start"] + len(context) < w["length"] else "")
        lines += [
            f"    {i}. {_one_line(head)}",
            f"       evidence {_one_line(evidence)}",
            f"       context “{before}⟦✂⟧{after}”",
        ]
    return lines


def format_records(report: RecordsReport, *, by: Sequence[str] = (), worst: int = 10) -> list[str]:
    """The text-mode report of a records evaluation, as lines without newlines.

    One header (records, files, skipped lines, delta), then per profile: the
    clean / loop / null lines (rates with Wilson
    95 % intervals in percent), the ``--by`` group lines, and the ``worst``
    (default 10) clean records cut or noticed (:func:`worst_records`) with
    their evidence and the context around the cut (``⟦✂⟧`` marks it).
    """
    rs = report.records
    kinds = Counter("clean" if r.looping is False else "loop" if r.looping is True else "null" for r in rs.records)
    skipped = ", ".join(f"{n} {reason}" for reason, n in sorted(rs.skipped.items())) or "none"
    n_files = len(rs.files)
    lines = [
        f"records: {len(rs.records)} text records from {n_files} file{'s' if n_files != 1 else ''} "
        f"({kinds['clean']} clean, {kinds['loop']} loop, {kinds['null']} null; skipped: {skipped})",
        f"replay: a fresh Session per record, {report.delta}-code-point deltas on the {RECORD_CHANNEL} channel; "
        "the first cut/cancel stops it",
    ]
    for profile, results in report.results.items():
        lines += ["", f"profile {profile}:", *_summary_lines(summarize_records(results), "  ")]
        for key in by:
            lines.append(f"  by {key}:")
            lines += [_group_line(name, s) for name, s in report.groups(profile, key).items()]
        entries = worst_records(results, worst)
        if entries:
            n_flagged = sum(1 for r in results if r.record.looping is False and (r.stop or r.notice))
            lines.append(
                f"  worst {len(entries)} of {n_flagged} clean records cut or noticed (most text cut off first):"
            )
            lines += _worst_lines(entries)
    return lines
