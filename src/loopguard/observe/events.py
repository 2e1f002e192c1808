"""The hooks the guards call at their decision points (internal; see :mod:`loopguard.observe`).

Each builds a record only when someone listens: the decision logger is enabled for the
action's level, or metrics or tracing are on (:data:`loopguard.observe.log.ON`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from . import log, metrics

if TYPE_CHECKING:
    from ..guard.decisions import Decision, Intervention
    from ..session import Verdict
    from ..text import Detection

__all__ = [
    "brake",
    "emit",
    "log",
    "metrics",
    "start",
    "stream_stop",
    "text_verdict",
    "tool_decision",
    "tool_interventions",
]


def start() -> float:
    """``time.perf_counter()`` when metrics or tracing are on, else 0.0 (no clock read)."""
    return time.perf_counter() if log.ON else 0.0


def wanted(action: str) -> bool:
    """Someone listens for a record of ``action``: metrics or tracing are on, or a handler
    other than a ``NullHandler`` would receive it (the library's own ``NullHandler`` on
    ``loopguard`` does not count: with no handler configured no record is built)."""
    return log.ON or _handled(log.LEVELS[action])


def _handled(level: int) -> bool:
    logger: logging.Logger | None = log.logger
    if not log.logger.isEnabledFor(level):
        return False
    while logger is not None:
        for handler in logger.handlers:
            if level >= handler.level and not isinstance(handler, logging.NullHandler):
                return True
        if not logger.propagate:
            return False
        logger = logger.parent
    return False


def emit(fields: dict[str, Any], *, detection: bool = True, to_log: bool = True) -> None:
    """Log the record (when enabled for its level), count it and add its span event."""
    if to_log:
        level = log.LEVELS[fields["action"]]
        if log.logger.isEnabledFor(level):
            extra = {"loopguard": fields}
            record = log.logger.makeRecord(
                log.DECISION_LOGGER, level, __file__, 0, log.message(fields), (), None, extra=extra
            )
            log.logger.handle(record)  # no caller lookup: the record names its own event
    if log.ON:
        metrics.observe(fields, detection=detection, act=to_log)


def tool_decision(session_id: Any, decision: Decision, started: float) -> None:
    """The record of a ``before_call`` decision (event ``tool_call``)."""
    _tool_record("tool_call", session_id, decision)
    metrics.seconds("tool_guard", started)


def tool_interventions(session_id: Any, out: Iterable[Intervention], event: str, started: float = 0.0) -> None:
    """One record per intervention (events ``tool_result``, ``stall``, ``strike``)."""
    for found in out:
        _tool_record(event, session_id, found)
    metrics.seconds("tool_guard", started)


def _tool_record(event: str, session_id: Any, said: Decision | Intervention) -> None:
    """The record of one tool guard decision or intervention, when someone listens."""
    if wanted(said.action):
        fields = log.decision_fields(
            event,
            "tool_guard",
            said.action,
            session_id,
            rule=said.rule,
            kind=said.kind,
            tool=said.tool,
            call_index=said.call_index,
            evidence=said.evidence,
        )
        emit(fields)


def text_verdict(session_id: Any, verdict: Verdict, channel: str, event: str, *, to_log: bool = True) -> None:
    """The record of a session's verdict (``text_loop``, ``stall_nudge``, ``empty_turn``);
    ``to_log=False`` (a stream will record the stop) counts the detection only."""
    if wanted(verdict.action) and (to_log or log.ON):
        detection: Detection | None = verdict.detection
        rule = "strikes" if verdict.kind == "strikes" else (verdict.kind or "")
        evidence = dict(verdict.evidence)
        if detection is not None:
            evidence["strength"] = detection.strength
        _verdict_record(event, "text", verdict.action, session_id, verdict, rule, channel, evidence, to_log=to_log)


def stream_stop(session_id: Any, verdict: Verdict, action: str, evidence: dict[str, Any], session: Any = None) -> None:
    """The record of a stream's stop (event ``stream_cut``; the session counted the detection);
    ``evidence.rescues`` from ``session`` when given."""
    if wanted(action):
        if session is not None:
            evidence = {**evidence, "rescues": session.consecutive_rescues}
        rule = "strikes" if verdict.kind == "strikes" and action == "cancel" else "text_loop"
        detection = verdict.detection
        channel = detection.channel if detection is not None else "text"
        _verdict_record("stream_cut", "stream", action, session_id, verdict, rule, channel, evidence, detection=False)


def _verdict_record(
    event: str,
    surface: str,
    action: str,
    session_id: Any,
    verdict: Verdict,
    rule: str,
    channel: str,
    evidence: dict[str, Any],
    *,
    detection: bool = True,
    to_log: bool = True,
) -> None:
    """Emit the record of a text verdict (``detection``, ``to_log``: as :func:`emit`); its kind
    is the detection's for a loop or strikes, else the verdict's."""
    kind = verdict.kind or ""
    if verdict.detection is not None and verdict.kind in ("text_loop", "strikes"):
        kind = str(verdict.detection.kind)
    fields = log.decision_fields(
        event, surface, action, session_id, rule=rule, kind=kind, channel=channel, evidence=evidence
    )
    emit(fields, detection=detection, to_log=to_log)


def brake(
    session_key: str, tool: str, digest: str, count: int, limit: int, denied: bool, started: float, rule: str = "brake"
) -> None:
    """The record of a :meth:`LoopBrake.check <loopguard.LoopBrake.check>` (event ``brake``); a
    deny's ``rule`` is ``"brake"`` (the streak reached the limit) or ``"store_unavailable"``
    (``on_store_error="closed"`` without the shared store)."""
    action = "deny" if denied else "allow"
    if wanted(action):
        fields = log.decision_fields(
            "brake",
            "brake",
            action,
            session_key,
            rule=rule if denied else "",
            kind=rule if denied else "",
            tool=tool,
            evidence={"count": count, "limit": limit},
            hash_prefix=digest[:12],
        )
        emit(fields)
    metrics.seconds("brake", started)
