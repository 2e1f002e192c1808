"""The ``stall`` rule and the progress clock (spec §5.2; ``docs/rules.md``).

Every request and every result is a progress event (so are :meth:`loopguard.ToolGuard.note_progress`
calls: step starts and ends, model output).  ``stall``: no progress event for ``stall_minutes``
(10; ``stall_minutes_with_tool``, 45, while a tool call is pending) → a ``stalled`` intervention,
once per stall, recorded as a ``strikes`` strike (and ``cancel`` when that strike completes
``strikes_before_cancel``).  Time comes from the guard's injectable clock (seconds).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .. import messages
from .decisions import Intervention, logger
from .strikes import strike

if TYPE_CHECKING:
    from .config import ToolGuardConfig
    from .state import SessionState

__all__ = ["RULE", "check_stall", "progressed", "progressed_at", "request", "result"]

RULE = "stall"


def progressed(s: SessionState, now: float) -> None:
    """A progress event at ``now``."""
    s.last_progress = now
    s.stalled = False


def progressed_at(s: SessionState, now: float) -> None:
    """A progress event at ``now`` that may arrive after later ones (a note written by a task,
    :meth:`loopguard.ToolGuard.note_progress`): it never moves the progress back."""
    if now >= s.last_progress:
        progressed(s, now)


def request(s: SessionState, now: float) -> int:
    """A request: a progress event; its 0-based call index in the session."""
    index = s.calls
    s.calls += 1
    progressed(s, now)
    return index


def result(s: SessionState, now: float) -> None:
    """A result: a progress event; one pending call fewer."""
    progressed(s, now)
    s.pending = max(0, s.pending - 1)


def check_stall(cfg: ToolGuardConfig, s: SessionState, clock: Callable[[], float]) -> Intervention | None:
    """The ``stalled`` intervention when the session has made no progress for too long (once per stall)."""
    if s.stalled:
        return None
    minutes = cfg.stall_minutes_with_tool if s.pending > 0 else cfg.stall_minutes
    idle = clock() - s.last_progress
    if idle < minutes * 60:
        return None
    s.stalled = True
    lang = s.lang
    pending = messages.render("stalled_pending", lang) if s.pending else ""
    text = messages.render("stalled", lang, minutes=minutes, pending=pending)
    strikes = strike(cfg, s, "stalled", clock)
    count = len(s.strikes) if strikes is None else int(strikes.evidence["strikes"])
    evidence = {"idle_seconds": round(idle, 3), "pending_tools": s.pending, "strikes": count}
    logger.info("stalled: no progress for %.1f minutes", idle / 60)
    if strikes is not None:
        return Intervention(strikes.action, "stalled", RULE, text + "\n" + strikes.text, evidence=evidence)
    return Intervention("notice", "stalled", RULE, text, evidence=evidence)
