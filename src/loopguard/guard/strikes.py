"""The ``strikes`` rule (spec §5.2; ``docs/rules.md``): strong signals (a text loop that stopped
an attempt, a ``stall``, a ``repeat_streak``) recorded with the clock's time; when
``strikes_before_cancel`` (2) of them fall within ``strike_window_minutes`` (120) a cancel
intervention (``notice`` under ``notice_only``), and the strikes are cleared."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .. import messages
from .decisions import Intervention, logger, stop_action

if TYPE_CHECKING:
    from .config import ToolGuardConfig
    from .state import SessionState

__all__ = ["RULE", "expire", "strike"]

RULE = "strikes"


def expire(cfg: ToolGuardConfig, s: SessionState, clock: Callable[[], float]) -> None:
    """Drop the strikes older than the window."""
    horizon = clock() - cfg.strike_window_minutes * 60
    while s.strikes and s.strikes[0][0] < horizon:
        s.strikes.popleft()


def strike(cfg: ToolGuardConfig, s: SessionState, kind: str, clock: Callable[[], float]) -> Intervention | None:
    """Record one strike of ``kind``; the cancel intervention when the window holds enough."""
    expire(cfg, s, clock)
    s.strikes.append((clock(), kind))
    if len(s.strikes) < cfg.strikes_before_cancel:
        return None
    kinds = ", ".join(k for _, k in s.strikes)
    count = len(s.strikes)
    s.strikes.clear()
    text = messages.render("strikes", s.lang, count=count, kinds=kinds, minutes=cfg.strike_window_minutes)
    logger.info("strikes: %d strong signals within the window", count)  # the decision log records what happened
    evidence = {"strikes": count, "kinds": kinds.split(", ")}
    return Intervention(stop_action(cfg), "strikes", RULE, text, evidence=evidence)
