"""``loopguard stats LOG...``: what the guard did, read back from its decision logs.

Reads JSON Lines decision logs (:func:`loopguard.observe.configure_decision_log`; plain or
``.gz``; other lines, such as records of other loggers, are counted and left out) and prints,
per action and rule, the records and the distinct sessions, then the stop hints (seed 002,
line ①c; :mod:`loopguard.hints`): hints given, hints a cap refused, and the distribution of the
observations' outcomes.  Below :data:`MIN_OBSERVATIONS` concluded observations (``effective``,
``ineffective``, ``undetermined``; ``interrupted`` ones are listed apart) it says "not enough
data" instead of percentages: a handful of hints that "worked" is no evidence.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import re
import sys
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from .hints import OUTCOMES
from .terminal import printable

__all__ = ["MIN_OBSERVATIONS", "LogStats", "read_stats", "register"]

#: concluded observations needed before the outcome distribution is given as percentages
MIN_OBSERVATIONS = 5
_CONCLUDED = ("effective", "ineffective", "undetermined")
_SESSIONS_CAP = 1_000_000  # distinct sessions remembered per row (a count past it is a floor)
_NAME = re.compile(r"[a-z][a-z_]{0,39}")  # the actions, rules and events loopguard writes


class LogStats:
    """Counts over decision records (fed with :meth:`add`)."""

    def __init__(self) -> None:
        self.records = 0
        self.other_lines = 0
        self.bad_lines: list[str] = []  # "FILE:LINE", the first 20
        self.bad_count = 0
        self.files = 0
        self.rows: collections.Counter[tuple[str, str]] = collections.Counter()
        self.sessions: dict[tuple[str, str], set[str]] = collections.defaultdict(set)
        self.outcomes: collections.Counter[str] = collections.Counter()
        self.hints = 0
        self.refused = 0

    def add(self, record: dict[str, Any]) -> None:
        """Count one decision record (a dict with ``event``, ``action`` and ``rule``; one whose
        action, rule or event is not a name loopguard writes counts as another line)."""
        action, rule, event = record["action"], record.get("rule") or "none", record["event"]
        if not all(isinstance(x, str) and _NAME.fullmatch(x) for x in (action, rule, event)):
            self.other_lines += 1
            return
        self.records += 1
        key = (action, rule)
        self.rows[key] += 1
        sessions = self.sessions[key]
        if len(sessions) < _SESSIONS_CAP:
            sessions.add(str(record.get("session", "")))
        if event == "hint":
            self.hints += 1
        elif event == "hint_quota":
            self.refused += 1
        elif event == "hint_observation" and record.get("kind") in OUTCOMES:
            self.outcomes[str(record["kind"])] += 1

    def bad(self, where: str, why: str = "not a JSON line, skipped") -> None:
        """Count a line that is not a record (``where``: ``FILE:LINE``); the first 20 are named."""
        self.bad_count += 1
        if len(self.bad_lines) < 20:
            self.bad_lines.append(f"{where}: {why}")

    def hint_summary(self) -> dict[str, Any]:
        """``given``, ``refused``, ``observations`` (concluded), ``interrupted``, ``outcomes``
        (counts) and ``shares`` (fractions of the concluded; ``None`` below the minimum)."""
        concluded = sum(self.outcomes[o] for o in _CONCLUDED)
        shares = None
        if concluded >= MIN_OBSERVATIONS:
            shares = {o: self.outcomes[o] / concluded for o in _CONCLUDED}
        return {
            "given": self.hints,
            "refused": self.refused,
            "observations": concluded,
            "interrupted": self.outcomes["interrupted"],
            "outcomes": {o: self.outcomes[o] for o in OUTCOMES},
            "shares": shares,
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "records": self.records,
            "other_lines": self.other_lines,
            "bad_lines": self.bad_count,
            "by_action_rule": [
                {"action": a, "rule": r, "records": n, "sessions": len(self.sessions[(a, r)])}
                for (a, r), n in sorted(self.rows.items())
            ],
            "hints": self.hint_summary(),
        }

    def lines(self) -> list[str]:
        """The report as text lines."""
        out = [f"{self.files} file(s), {self.records:,} decision records, {self.other_lines:,} other lines"]
        if self.rows:
            out.append(f"{'action':8} {'rule':22} {'records':>9} {'sessions':>9}")
            for (action, rule), n in sorted(self.rows.items(), key=lambda kv: (-kv[1], kv[0])):
                out.append(f"{action:8} {rule[:22]:22} {n:>9,} {len(self.sessions[(action, rule)]):>9,}")
        hints = self.hint_summary()
        if hints["given"] or hints["refused"] or hints["observations"] or hints["interrupted"]:
            out.append(f"stop hints: {hints['given']:,} given, {hints['refused']:,} refused by a cap")
            n = hints["observations"]
            out.append(f"  observations concluded: {n:,} (interrupted: {hints['interrupted']:,}, not counted)")
            if hints["shares"] is None:
                out.append(f"  not enough data: {n} observation(s), at least {MIN_OBSERVATIONS} needed")
            else:
                for outcome in _CONCLUDED:
                    count = hints["outcomes"][outcome]
                    out.append(f"  {outcome:13} {count:>7,} {hints['shares'][outcome]:7.1%}")
        return out


def _open(path: Path) -> IO[str]:
    if path.name.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8", errors="replace")
    return path.open("r", encoding="utf-8", errors="replace")


def _records(stats: LogStats, path: Path) -> Iterator[dict[str, Any]]:
    """The decision records of ``path``; a bad line is counted and named, a corrupt archive
    stops the file at the line it broke in (the records before it count)."""
    number = 0
    with _open(path) as handle:
        lines = iter(handle)
        while True:
            try:
                line = next(lines)
            except StopIteration:
                return
            except (OSError, EOFError, zlib.error) as exc:  # a corrupt or truncated .gz
                stats.bad(f"{path}:{number + 1}", f"corrupt data ({type(exc).__name__}): the rest is unreadable")
                return
            number += 1
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except (ValueError, RecursionError):  # RecursionError: nested too deeply
                stats.bad(f"{path}:{number}")
                continue
            if isinstance(value, dict) and "event" in value and "action" in value:
                yield value
            else:
                stats.other_lines += 1


def read_stats(paths: Iterable[str | Path]) -> LogStats:
    """Count the decision records of every file in ``paths`` (a folder: its ``*.jsonl``,
    ``*.log`` and ``*.gz`` files, sorted).

    Raises
    ------
    OSError
        for a path that cannot be read (``FileNotFoundError``, ``PermissionError``, …).
    """
    stats = LogStats()
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in (".jsonl", ".log", ".gz"))
        else:
            files = [path]
        for file in files:
            stats.files += 1
            try:
                for record in _records(stats, file):
                    stats.add(record)
            except OSError as exc:
                raise _Unreadable(file, type(exc).__name__) from exc
    return stats


class _Unreadable(OSError):
    """A log that could not be opened or read (its path and the error's type)."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path, self.reason = path, reason


def _run(args: argparse.Namespace) -> int:
    try:
        stats = read_stats(args.paths)
    except _Unreadable as exc:
        print(f"loopguard stats: cannot read {printable(str(exc.path))}: {exc.reason}", file=sys.stderr)
        return 2
    for where in stats.bad_lines:
        print(printable(where), file=sys.stderr)
    if args.json:
        sys.stdout.write(json.dumps(stats.to_dict(), ensure_ascii=True) + "\n")
    else:
        for line in stats.lines():
            sys.stdout.write(printable(line) + "\n")
    return 2 if stats.bad_count else 0


_DESCRIPTION = (
    "Reads JSON Lines decision logs (configure_decision_log; plain or .gz; lines of other loggers are "
    "counted and left out) and prints, per action and rule, the records and the distinct sessions, then "
    "the stop hints (SessionConfig(hint=...)): hints given, hints a cap refused, and the outcomes of their "
    f"observations ('not enough data' below {MIN_OBSERVATIONS} concluded ones). Exit 0, or 2 when a line or "
    "a file could not be read."
)


def register(commands: Any) -> None:
    """Add the ``stats`` command to the ``loopguard`` parser's subcommands."""
    stats = commands.add_parser(
        "stats",
        help="what the guard did, from its JSON Lines decision logs (counts per action and rule, stop-hint outcomes)",
        description=_DESCRIPTION,
    )
    stats.add_argument("paths", nargs="+", metavar="LOG", help="decision log files (.jsonl, .log, .gz) or folders")
    stats.add_argument("--json", action="store_true", help="print one JSON object")
    stats.set_defaults(run=_run)
